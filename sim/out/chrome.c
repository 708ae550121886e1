#include "chrome.h"

#include <stdlib.h>

#include "tef.h"

/* Counter events per rank at most (mem_series_thin keeps the peaks). */
#define CHROME_MAX_COUNTERS 4000

/* The members every event opens with; the caller adds its own and '}'.
 * Events after the first are preceded by a comma. */
typedef struct cw {
    FILE *f;
    bool first;
    tef_lanes lanes; /* of the rank being written */
} cw;

static void event(cw *w, const char *name, const char *ph, ss_ns ts, uint32_t pid, uint32_t tid)
{
    if (!w->first) fputc(',', w->f);
    w->first = false;
    tef_kv_str(w->f, '{', "name", name);
    tef_kv_str(w->f, ',', "ph", ph);
    tef_kv_us(w->f, ',', "ts", ts);
    tef_kv_num(w->f, ',', "pid", pid);
    tef_kv_num(w->f, ',', "tid", tid);
}

/* Lane k of stream s is thread k * PROG_NSTREAMS + s: lane 0 keeps the
 * stream's own id, and a stream whose ops never overlap has no other. */
static uint32_t lane_tid(uint32_t s, uint32_t k) { return k * PROG_NSTREAMS + s; }

static void meta_event(cw *w, const char *what, uint32_t r, uint32_t tid, const char *key,
                       const char *name, double v)
{
    event(w, what, "M", 0, r, tid);
    fputs(",\"args\":", w->f);
    if (name) tef_kv_str(w->f, '{', key, name);
    else tef_kv_num(w->f, '{', key, v);
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

/* Program rank r, named by its world rank. */
static void metadata(cw *w, uint32_t r, uint32_t world)
{
    char name[32];
    snprintf(name, sizeof name, "rank %u", world);
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
    tef_kv_num(f, '{', "op", i);
    tef_kv_str(f, ',', "phase", prog_phase_name((prog_phase)op->phase));
    tef_kv_us(f, ',', "issue_us", t->ops[r][i].issue);
    if (op->kind == PROG_OP_COLL) {
        tef_kv_str(f, ',', "collective", prog_coll_name((prog_coll)op->coll));
        tef_kv_num(f, ',', "bytes", (double)op->bytes);
        uint32_t g = prog_op_group(t->p, r, i);
        tef_kv_num(f, ',', "group", g);
        tef_kv_num(f, ',', "group_size", prog_group_get(t->p, g).size);
    }
    if (op->flops) tef_kv_num(f, ',', "flops", (double)op->flops);
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
    uint32_t tid = lane_tid(op->stream, w->lanes.lane[i]);
    bool instant = x->end == x->start;
    event(w, name, instant ? "i" : "B", x->start, r, tid);
    tef_kv_str(w->f, ',', "cat", category(op));
    if (instant) tef_kv_str(w->f, ',', "s", "t");
    op_args(w, t, r, i);
    if (instant) return;
    event(w, name, "E", x->end, r, tid);
    fputc('}', w->f);
}

/* A stream's ops in program order, each on its lane (tef.h); a lane's
 * thread is named where its first op appears. */
static void stream_events(cw *w, const trc *t, uint32_t r, uint32_t s)
{
    uint32_t named = 1; /* lane 0's name is in the rank's metadata */
    for (uint32_t i = 0; i < prog_nops(t->p, r); i++) {
        if (prog_ops(t->p, r)[i].stream != s) continue;
        if (w->lanes.lane[i] == named) lane_metadata(w, r, s, named++);
        op_event(w, t, r, i);
    }
}

static int op_events(cw *w, const trc *t, uint32_t r, ss_err *err)
{
    int rc = tef_lanes_rank(&w->lanes, t, r, err);
    for (uint32_t s = 0; s < PROG_NSTREAMS && !rc; s++) stream_events(w, t, r, s);
    return rc;
}

static void flow_end(cw *w, const char *ph, ss_ns t, uint32_t r, uint32_t tid, uint64_t id)
{
    event(w, "wait", ph, t, r, tid);
    tef_kv_str(w->f, ',', "cat", "dependency");
    tef_kv_num(w->f, ',', "id", (double)id);
    if (ph[0] == 'f') tef_kv_str(w->f, ',', "bp", "e");
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
            flow_end(w, "s", t->ops[r][j].start, r, lane_tid(ops[j].stream, w->lanes.lane[j]), id);
            flow_end(w, "f", t->ops[r][i].start, r, lane_tid(ops[i].stream, w->lanes.lane[i]), id);
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
    tef_kv_num(c->w->f, '{', "allocated_MiB", (double)p->allocated / (double)SS_MIB);
    tef_kv_num(c->w->f, ',', "reserved_MiB", (double)p->reserved / (double)SS_MIB);
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
        uint32_t world = prog_rank_world(t->p, k);
        metadata(&w, k, world);
        if ((rc = op_events(&w, t, k, err))) break;
        flow_events(&w, t, k, &flow_id);
        counter_ctx c = {&w, k};
        mem_series_thin(&r->ranks[world].mem, CHROME_MAX_COUNTERS, counter_event, &c);
    }
    tef_lanes_fini(&w.lanes);
    if (rc) return rc;
    fputc(']', f);
    tef_kv_str(f, ',', "displayTimeUnit", "ns");
    fputs(",\"otherData\":", f);
    tef_kv_str(f, '{', "scenario", r->s->name);
    tef_kv_str(f, ',', "shardsim_version", SHARDSIM_VERSION);
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
