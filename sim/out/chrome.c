#include "chrome.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "../core/vec.h"

/* Counter events per rank at most (mem_series_thin keeps the peaks). */
#define CHROME_MAX_COUNTERS 4000

static double us(ss_ns t) { return (double)t / 1000.0; }

/* A number as cJSON 1.7's printer writes it: an integer when the value
 * equals its int conversion (saturated at INT_MIN/INT_MAX), else the
 * shortest of %.15g and %.17g that reads back as the same double. */
static void num(FILE *f, double d)
{
    if (d == floor(d) && fabs(d) < 1e15) { /* both of cJSON's forms give the digits */
        fprintf(f, "%lld", (long long)d);
        return;
    }
    int vi = d >= (double)INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    if (isnan(d) || isinf(d)) {
        fputs("null", f);
    } else if (d == (double)vi) {
        fprintf(f, "%d", vi);
    } else {
        char buf[32];
        double back = 0;
        snprintf(buf, sizeof buf, "%1.15g", d);
        double m = fabs(d);
        if (sscanf(buf, "%lg", &back) != 1 || fabs(back - d) > (fabs(back) > m ? fabs(back) : m) * DBL_EPSILON)
            snprintf(buf, sizeof buf, "%1.17g", d);
        fputs(buf, f);
    }
}

/* us(t) as num() prints it, from the integer: the exact decimal t / 1000
 * has at most 15 significant digits below 10^15 ns, so it is what %.15g
 * prints of the double nearest to it (DBL_DIG), trailing zeros trimmed;
 * printing from the integer skips the float formatting, which was most of
 * the time of writing a large trace. */
static void num_us(FILE *f, ss_ns t)
{
    if (t >= 1000000000000000ull) {
        num(f, us(t));
        return;
    }
    char buf[32], *p = buf + sizeof buf;
    unsigned frac = (unsigned)(t % 1000), digits = 3;
    while (frac && frac % 10 == 0) frac /= 10, digits--;
    if (frac) {
        for (unsigned i = 0; i < digits; i++, frac /= 10) *--p = (char)('0' + frac % 10);
        *--p = '.';
    }
    uint64_t whole = t / 1000;
    do *--p = (char)('0' + whole % 10); while (whole /= 10);
    fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
}

/* A string as cJSON escapes it: quote, backslash and the named control
 * characters by name, other bytes below 32 as \u00XX, the rest as is. */
static void str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 32) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* ,"key":value  (sep is ',' or '{' for an object's first member) */
static void kv_str(FILE *f, char sep, const char *k, const char *v)
{
    fputc(sep, f);
    str(f, k);
    fputc(':', f);
    str(f, v);
}

static void kv_num(FILE *f, char sep, const char *k, double v)
{
    fputc(sep, f);
    str(f, k);
    fputc(':', f);
    num(f, v);
}

static void kv_us(FILE *f, char sep, const char *k, ss_ns t)
{
    fputc(sep, f);
    str(f, k);
    fputc(':', f);
    num_us(f, t);
}

/* The members every event opens with; the caller adds its own and '}'.
 * Events after the first are preceded by a comma. lane[i] is op i's lane
 * on its stream for the rank being written (lanes_assign). */
typedef struct cw {
    FILE *f;
    bool first;
    uint32_t *lane;  /* per op of the rank */
    uint32_t caplane;
    ss_ns *lane_end; /* per lane of the stream being assigned: its last end */
    uint32_t caplend;
} cw;

static void event(cw *w, const char *name, const char *ph, ss_ns ts, uint32_t pid, uint32_t tid)
{
    if (!w->first) fputc(',', w->f);
    w->first = false;
    kv_str(w->f, '{', "name", name);
    kv_str(w->f, ',', "ph", ph);
    kv_us(w->f, ',', "ts", ts);
    kv_num(w->f, ',', "pid", pid);
    kv_num(w->f, ',', "tid", tid);
}

/* Lane k of stream s is thread k * PROG_NSTREAMS + s: lane 0 keeps the
 * stream's own id, and a stream whose ops never overlap has no other. */
static uint32_t lane_tid(uint32_t s, uint32_t k) { return k * PROG_NSTREAMS + s; }

static void meta_event(cw *w, const char *what, uint32_t r, uint32_t tid, const char *key,
                       const char *name, double v)
{
    event(w, what, "M", 0, r, tid);
    fputs(",\"args\":", w->f);
    if (name) kv_str(w->f, '{', key, name);
    else kv_num(w->f, '{', key, v);
    fputs("}}", w->f);
}

/* A lane's name ("p2p", then "p2p 2", ...) and its place under its
 * stream's in the viewer's list. */
static void lane_metadata(cw *w, uint32_t r, uint32_t s, uint32_t k)
{
    char name[48];
    if (k) snprintf(name, sizeof name, "%s %u", prog_stream_name((prog_stream)s), k + 1);
    else snprintf(name, sizeof name, "%s", prog_stream_name((prog_stream)s));
    meta_event(w, "thread_name", r, lane_tid(s, k), "name", name, 0);
    meta_event(w, "thread_sort_index", r, lane_tid(s, k), "sort_index", NULL, s * 1000.0 + k);
}

static void metadata(cw *w, uint32_t r)
{
    char name[32];
    snprintf(name, sizeof name, "rank %u", r);
    meta_event(w, "process_name", r, 0, "name", name, 0);
    for (uint32_t s = 0; s < PROG_NSTREAMS; s++) lane_metadata(w, r, s, 0);
}

static const char *category(const prog_op *op)
{
    if (op->kind == PROG_OP_COLL) return prog_coll_name((prog_coll)op->coll);
    if (op->kind == PROG_OP_HOST) return "host";
    return prog_phase_name((prog_phase)op->phase);
}

static void op_args(cw *w, const trc *t, uint32_t r, uint32_t i)
{
    const prog_op *op = &prog_ops(t->p, r)[i];
    FILE *f = w->f;
    fputs(",\"args\":", f);
    kv_num(f, '{', "op", i);
    kv_str(f, ',', "phase", prog_phase_name((prog_phase)op->phase));
    kv_us(f, ',', "issue_us", t->ops[r][i].issue);
    if (op->kind == PROG_OP_COLL) {
        kv_str(f, ',', "collective", prog_coll_name((prog_coll)op->coll));
        kv_num(f, ',', "bytes", (double)op->bytes);
        uint32_t g = prog_op_group(t->p, r, i);
        kv_num(f, ',', "group", g);
        kv_num(f, ',', "group_size", prog_group_get(t->p, g).size);
    }
    if (op->flops) kv_num(f, ',', "flops", (double)op->flops);
    fputs("}}", f);
}

/* An op as a begin/end pair ("B" then "E") whose times are printed from
 * the same integers as its neighbours': an op that ends where the next one
 * begins has, in any viewer's doubles, exactly the next one's start. A
 * complete event ("X") would make the viewer add ts + dur in binary
 * floating point, which can end past the next start and nest it (DECISIONS
 * 81). An op of no duration is an instant ("i", thread scope), which
 * viewers draw as a mark rather than a step in the next op's stack. */
static void op_event(cw *w, const trc *t, uint32_t r, uint32_t i)
{
    const prog_op *op = &prog_ops(t->p, r)[i];
    const trc_op *x = &t->ops[r][i];
    const char *name = prog_str_get(t->p, op->name);
    uint32_t tid = lane_tid(op->stream, w->lane[i]);
    bool instant = x->end == x->start;
    event(w, name, instant ? "i" : "B", x->start, r, tid);
    kv_str(w->f, ',', "cat", category(op));
    if (instant) kv_str(w->f, ',', "s", "t");
    op_args(w, t, r, i);
    if (instant) return;
    event(w, name, "E", x->end, r, tid);
    fputc('}', w->f);
}

/* Ops of a stream in program order, each on the first lane whose last op
 * ended by its start (a new lane when none did), so that a lane's ops
 * never overlap and come in start order. Ordered streams run their ops one
 * after the other and keep one lane; the unordered p2p stream can run
 * several at once, and not in program order. A new lane's thread is named
 * where it first appears. */
static int stream_events(cw *w, const trc *t, uint32_t r, uint32_t s)
{
    uint32_t nlanes = 0;
    for (uint32_t i = 0; i < prog_nops(t->p, r); i++) {
        if (prog_ops(t->p, r)[i].stream != s) continue;
        const trc_op *x = &t->ops[r][i];
        uint32_t k = 0;
        while (k < nlanes && w->lane_end[k] > x->start) k++;
        if (k == nlanes) {
            if (!ss_grow((void **)&w->lane_end, &w->caplend, nlanes + 1, sizeof *w->lane_end))
                return SS_E_NOMEM;
            if (nlanes++) lane_metadata(w, r, s, k);
        }
        w->lane_end[k] = x->end;
        w->lane[i] = k;
        op_event(w, t, r, i);
    }
    return SS_OK;
}

static int op_events(cw *w, const trc *t, uint32_t r)
{
    if (!ss_grow((void **)&w->lane, &w->caplane, prog_nops(t->p, r), sizeof *w->lane))
        return SS_E_NOMEM;
    int rc = SS_OK;
    for (uint32_t s = 0; s < PROG_NSTREAMS && !rc; s++) rc = stream_events(w, t, r, s);
    return rc;
}

static void flow_end(cw *w, const char *ph, ss_ns t, uint32_t r, uint32_t tid, uint64_t id)
{
    event(w, "wait", ph, t, r, tid);
    kv_str(w->f, ',', "cat", "dependency");
    kv_num(w->f, ',', "id", (double)id);
    if (ph[0] == 'f') kv_str(w->f, ',', "bp", "e");
    fputc('}', w->f);
}

/* An arrow from a collective to each op of another stream that waits on it. */
static void flow_events(cw *w, const trc *t, uint32_t r, uint64_t *next_id)
{
    const prog_op *ops = prog_ops(t->p, r);
    const uint32_t *deps = prog_deps(t->p, r);
    for (uint32_t i = 0; i < prog_nops(t->p, r); i++)
        for (uint32_t d = 0; d < ops[i].ndep; d++) {
            uint32_t j = deps[ops[i].dep0 + d];
            if (ops[j].kind != PROG_OP_COLL || ops[j].stream == ops[i].stream) continue;
            uint64_t id = (*next_id)++;
            flow_end(w, "s", t->ops[r][j].start, r, lane_tid(ops[j].stream, w->lane[j]), id);
            flow_end(w, "f", t->ops[r][i].start, r, lane_tid(ops[i].stream, w->lane[i]), id);
        }
}

typedef struct counter_ctx {
    cw *w;
    uint32_t rank;
} counter_ctx;

static void counter_event(void *ctx, const mem_point *p)
{
    counter_ctx *c = ctx;
    event(c->w, "memory", "C", p->t, c->rank, 0);
    fputs(",\"args\":", c->w->f);
    kv_num(c->w->f, '{', "allocated_MiB", (double)p->allocated / (double)SS_MIB);
    kv_num(c->w->f, ',', "reserved_MiB", (double)p->reserved / (double)SS_MIB);
    fputs("}}", c->w->f);
}

int chrome_write(const sum_report *r, const trc *t, uint32_t rank_lo, uint32_t rank_hi, FILE *f,
                 ss_err *err)
{
    cw w = {.f = f, .first = true};
    uint64_t flow_id = 1;
    int rc = SS_OK;
    fputs("{\"traceEvents\":[", f);
    for (uint32_t k = rank_lo; k < t->nranks && k <= rank_hi && !ferror(f) && !rc; k++) {
        metadata(&w, k);
        if ((rc = op_events(&w, t, k))) break;
        flow_events(&w, t, k, &flow_id);
        counter_ctx c = {&w, k};
        mem_series_thin(&r->ranks[k].mem, CHROME_MAX_COUNTERS, counter_event, &c);
    }
    free(w.lane);
    free(w.lane_end);
    if (rc) return ss_fail(err, rc, NULL, "out of memory writing the trace");
    fputc(']', f);
    kv_str(f, ',', "displayTimeUnit", "ns");
    fputs(",\"otherData\":", f);
    kv_str(f, '{', "scenario", r->s->name);
    kv_str(f, ',', "shardsim_version", SHARDSIM_VERSION);
    fputs("}}", f);
    return ferror(f) ? ss_fail(err, SS_E_IO, NULL, "cannot write the trace") : SS_OK;
}

char *chrome_json(const sum_report *r, const trc *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    int rc = chrome_write(r, t, 0, UINT32_MAX, f, NULL);
    if (fclose(f) != 0 || rc) {
        free(text);
        return NULL;
    }
    return text;
}
