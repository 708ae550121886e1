#include "chrome.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

/* Counter events per rank at most (mem_series_thin keeps the peaks). */
#define CHROME_MAX_COUNTERS 4000

static double us(ss_ns t) { return (double)t / 1000.0; }

static cJSON *event(const char *name, const char *ph, double ts, uint32_t pid, uint32_t tid)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "ph", ph);
    cJSON_AddNumberToObject(e, "ts", ts);
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", tid);
    return e;
}

static void metadata(cJSON *evs, uint32_t r)
{
    char name[32];
    snprintf(name, sizeof name, "rank %u", r);
    cJSON *p = event("process_name", "M", 0, r, 0);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(p, "args"), "name", name);
    cJSON_AddItemToArray(evs, p);
    for (int s = 0; s < PROG_NSTREAMS; s++) {
        cJSON *th = event("thread_name", "M", 0, r, (uint32_t)s);
        cJSON *a = cJSON_AddObjectToObject(th, "args");
        cJSON_AddStringToObject(a, "name", prog_stream_name((prog_stream)s));
        cJSON_AddItemToArray(evs, th);
    }
}

static const char *category(const prog_op *op)
{
    if (op->kind == PROG_OP_COLL) return prog_coll_name((prog_coll)op->coll);
    if (op->kind == PROG_OP_HOST) return "host";
    return prog_phase_name((prog_phase)op->phase);
}

static cJSON *op_event(const trc *t, uint32_t r, uint32_t i)
{
    const prog_op *op = &prog_ops(t->p, r)[i];
    const trc_op *x = &t->ops[r][i];
    cJSON *e = event(prog_str_get(t->p, op->name), "X", us(x->start), r, op->stream);
    cJSON_AddStringToObject(e, "cat", category(op));
    cJSON_AddNumberToObject(e, "dur", us(x->end - x->start));
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "op", i);
    cJSON_AddStringToObject(a, "phase", prog_phase_name((prog_phase)op->phase));
    cJSON_AddNumberToObject(a, "issue_us", us(x->issue));
    if (op->kind == PROG_OP_COLL) {
        cJSON_AddStringToObject(a, "collective", prog_coll_name((prog_coll)op->coll));
        cJSON_AddNumberToObject(a, "bytes", (double)op->bytes);
        uint32_t g = prog_op_group(t->p, r, i);
        cJSON_AddNumberToObject(a, "group", g);
        cJSON_AddNumberToObject(a, "group_size", prog_group_get(t->p, g).size);
    }
    if (op->flops) cJSON_AddNumberToObject(a, "flops", (double)op->flops);
    return e;
}

/* Ops of one stream are in program order, which is their start order. */
static void op_events(cJSON *evs, const trc *t, uint32_t r)
{
    for (int s = 0; s < PROG_NSTREAMS; s++)
        for (uint32_t i = 0; i < prog_nops(t->p, r); i++)
            if (prog_ops(t->p, r)[i].stream == s) cJSON_AddItemToArray(evs, op_event(t, r, i));
}

/* An arrow from a collective to each op of another stream that waits on it. */
static void flow_events(cJSON *evs, const trc *t, uint32_t r, uint64_t *next_id)
{
    const prog_op *ops = prog_ops(t->p, r);
    const uint32_t *deps = prog_deps(t->p, r);
    for (uint32_t i = 0; i < prog_nops(t->p, r); i++)
        for (uint32_t d = 0; d < ops[i].ndep; d++) {
            uint32_t j = deps[ops[i].dep0 + d];
            if (ops[j].kind != PROG_OP_COLL || ops[j].stream == ops[i].stream) continue;
            uint64_t id = (*next_id)++;
            cJSON *s = event("wait", "s", us(t->ops[r][j].start), r, ops[j].stream);
            cJSON *f = event("wait", "f", us(t->ops[r][i].start), r, ops[i].stream);
            cJSON_AddStringToObject(s, "cat", "dependency");
            cJSON_AddStringToObject(f, "cat", "dependency");
            cJSON_AddNumberToObject(s, "id", (double)id);
            cJSON_AddNumberToObject(f, "id", (double)id);
            cJSON_AddStringToObject(f, "bp", "e");
            cJSON_AddItemToArray(evs, s);
            cJSON_AddItemToArray(evs, f);
        }
}

typedef struct counter_ctx {
    cJSON *evs;
    uint32_t rank;
} counter_ctx;

static void counter_event(void *ctx, const mem_point *p)
{
    counter_ctx *c = ctx;
    cJSON *e = event("memory", "C", us(p->t), c->rank, 0);
    cJSON *args = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(args, "allocated_MiB", (double)p->allocated / (double)SS_MIB);
    cJSON_AddNumberToObject(args, "reserved_MiB", (double)p->reserved / (double)SS_MIB);
    cJSON_AddItemToArray(c->evs, e);
}

static void counter_events(cJSON *evs, const mem_rank *m, uint32_t r)
{
    counter_ctx c = {evs, r};
    mem_series_thin(m, CHROME_MAX_COUNTERS, counter_event, &c);
}

char *chrome_json(const sum_report *r, const trc *t)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON *evs = cJSON_AddArrayToObject(root, "traceEvents");
    uint64_t flow_id = 1;
    for (uint32_t k = 0; k < t->nranks; k++) {
        metadata(evs, k);
        op_events(evs, t, k);
        flow_events(evs, t, k, &flow_id);
        counter_events(evs, &r->ranks[k].mem, k);
    }
    cJSON_AddStringToObject(root, "displayTimeUnit", "ns");
    cJSON *other = cJSON_AddObjectToObject(root, "otherData");
    cJSON_AddStringToObject(other, "scenario", r->s->name);
    cJSON_AddStringToObject(other, "shardsim_version", SHARDSIM_VERSION);
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return txt;
}
