/* rplan_report: measured times and memory back into the simulator's formats.
 *
 * The replayed rank's ops are copied into a program of one rank (same op,
 * tensor and group ids), a trace is filled with the measured times, and the
 * simulator's own summary and Chrome renderers run on it, so every key means
 * what it means in a predicted summary and `shardsim diff` lines them up.
 * Memory figures are then replaced by what the CUDA pool measured; the
 * figures only the model knows (breakdown at the peak, ideal bound, setup
 * peak) are left out of the JSON, so the diff shows "-" for them rather than
 * a model value dressed as a measurement. */
#include "rplan.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/out/chrome.h"
#include "../../sim/out/summary.h"
#include "../../sim/sched/sched.h"

static int nomem(ss_err *err) { return ss_fail(err, SS_E_NOMEM, NULL, "out of memory reporting the replay"); }

static int copy_groups(const prog *p, prog *q, ss_err *err)
{
    const uint32_t zero = 0;
    for (uint32_t g = 0; g < prog_ngroups(p); g++) {
        uint32_t gid = 0;
        int rc = prog_group_add(q, &zero, 1, &gid, err);
        if (rc) return rc;
        if (gid != g) return ss_fail(err, SS_E_INTERNAL, NULL, "group %u was copied as %u", g, gid);
    }
    return SS_OK;
}

static int copy_tensors(const prog *p, uint32_t rank, prog *q, ss_err *err)
{
    const prog_tensor *ts = prog_tensors(p, rank);
    for (uint32_t i = 0; i < prog_ntensors(p, rank); i++) {
        uint32_t tid = 0;
        int rc = prog_tensor_add(q, 0, prog_str_get(p, ts[i].name), (prog_memcat)ts[i].cat,
                                 ts[i].bytes, ts[i].live_at_start, &tid, err);
        if (rc) return rc;
        if (tid != i) return ss_fail(err, SS_E_INTERNAL, NULL, "tensor %u was copied as %u", i, tid);
    }
    return SS_OK;
}

static int copy_ops(const prog *p, uint32_t rank, prog *q, ss_err *err)
{
    const prog_op *ops = prog_ops(p, rank);
    const uint32_t *deps = prog_deps(p, rank);
    const prog_mem *mems = prog_mems(p, rank);
    for (uint32_t i = 0; i < prog_nops(p, rank); i++) {
        const prog_op *o = &ops[i];
        prog_op_spec s = {(prog_opkind)o->kind, (prog_stream)o->stream, (prog_phase)o->phase,
                          (prog_coll)o->coll, o->kind == PROG_OP_COLL ? prog_op_group(p, rank, i) : o->group,
                          prog_str_get(p, o->name), o->bytes,
                          o->flops, o->host_ns, o->dev_ns, deps + o->dep0, o->ndep,
                          mems + o->mem0, o->nmem};
        uint32_t id = 0;
        int rc = prog_op_add(q, 0, &s, &id, err);
        if (rc) return rc;
    }
    return SS_OK;
}

/* Rank `rank` of p as a program of one rank; every group becomes {0}, so
 * its collectives stay collectives of a group the rank belongs to. */
static int prog_one(const prog *p, uint32_t rank, prog **out, ss_err *err)
{
    prog *q = NULL;
    int rc = prog_new(&q, 1, err);
    if (!rc) rc = copy_groups(p, q, err);
    if (!rc) rc = copy_tensors(p, rank, q, err);
    if (!rc) rc = copy_ops(p, rank, q, err);
    if (rc) {
        prog_free(q);
        return rc;
    }
    *out = q;
    return SS_OK;
}

typedef struct tev {
    ss_ns t;
    uint32_t op;
    uint32_t sub; /* 0 issue, 1 end */
} tev;

static int tev_cmp(const void *a, const void *b)
{
    const tev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->op != y->op) return x->op < y->op ? -1 : 1;
    return x->sub < y->sub ? -1 : x->sub > y->sub;
}

/* Times with start >= issue and end >= start (host and device clocks are
 * aligned to a few microseconds, so a fast op can seem to start before the
 * host issued it); *clamped counts the ops moved. Sequence numbers of the
 * issues and ends follow (time, op, issue < end), the order the memory
 * replay needs. */
static int fill_times(trc *t, const rplan_meas *m, uint32_t *clamped, ss_err *err)
{
    uint32_t n = prog_nops(t->p, 0);
    tev *ev = malloc((n ? 2 * (size_t)n : 1) * sizeof *ev);
    if (!ev) return nomem(err);
    *clamped = 0;
    for (uint32_t i = 0; i < n; i++) {
        trc_op *o = &t->ops[0][i];
        o->issue = m->issue[i];
        o->start = m->start[i] > o->issue ? m->start[i] : o->issue;
        o->end = m->end[i] > o->start ? m->end[i] : o->start;
        if (o->start != m->start[i] || o->end != m->end[i]) (*clamped)++;
        if (o->end > t->step_ns) t->step_ns = o->end;
        ev[2 * i] = (tev){o->issue, i, 0};
        ev[2 * i + 1] = (tev){o->end, i, 1};
    }
    qsort(ev, 2 * (size_t)n, sizeof *ev, tev_cmp);
    for (size_t k = 0; k < 2 * (size_t)n; k++) {
        trc_op *o = &t->ops[0][ev[k].op];
        *(ev[k].sub == 0 ? &o->seq_issue : &o->seq_end) = (uint32_t)k;
    }
    t->nevents = 3 * (uint64_t)n;
    free(ev);
    return SS_OK;
}

/* The pool's figures in place of the model's; the series becomes the
 * measured one (the trace's memory counters and the summary timeline). */
static int apply_memory(sum_report *r, const rplan *rp, const rplan_meas *m, ss_err *err)
{
    sum_rank *sr = &r->ranks[0];
    mem_rank *mr = &sr->mem;
    mem_point *series = malloc((m->nseries ? m->nseries : 1) * sizeof *series);
    if (!series) return nomem(err);
    if (m->nseries) memcpy(series, m->series, m->nseries * sizeof *series);
    mem_rank_fini(mr);
    *mr = (mem_rank){.start = m->start_used, .end = m->end_used, .peak = m->peak_used,
                     .peak_reserved = m->peak_reserved, .peak_t = m->peak_t,
                     .peak_op = m->peak_step, .oom_op = UINT32_MAX, .series = series,
                     .nseries = m->nseries};
    snprintf(sr->peak_op, sizeof sr->peak_op, "%s",
             m->peak_step < rp->nsteps
                 ? prog_str_get(rp->p, prog_ops(rp->p, rp->rank)[m->peak_step].name)
                 : "(step start)");
    return SS_OK;
}

/* ---- the JSON ---- */

static void drop(cJSON *o, const char *key) { cJSON_DeleteItemFromObjectCaseSensitive(o, key); }

static cJSON *obj(cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

static void set_num(cJSON *o, const char *key, double v)
{
    cJSON *x = obj(o, key);
    if (cJSON_IsNumber(x)) cJSON_SetNumberValue(x, v);
}

/* Figures only the model knows leave; the rank keeps its own number. */
static void strip_model(cJSON *root, const rplan *rp, const spec_scenario *s)
{
    cJSON *mem = obj(root, "memory");
    drop(mem, "max_init_peak_bytes");
    cJSON *alloc = obj(mem, "allocator");
    if (cJSON_IsString(alloc)) cJSON_SetValuestring(alloc, "cuda_mempool");
    cJSON *r0 = cJSON_GetArrayItem(obj(mem, "per_rank"), 0);
    set_num(r0, "rank", rp->rank);
    drop(r0, "ideal_peak_bytes");
    drop(r0, "init_peak_bytes");
    drop(r0, "peak_breakdown");
    drop(obj(root, "engine"), "events");
    set_num(obj(root, "throughput"), "global_batch_samples",
            (double)s->micro_batch * s->dp * s->grad_accum);
}

typedef struct flagcount {
    uint32_t spin, one_rank, host, dtype, group;
} flagcount;

static flagcount count_flags(const rplan *rp)
{
    flagcount f = {0};
    for (uint32_t i = 0; i < rp->nsteps; i++) {
        const rplan_step *st = &rp->steps[i];
        f.spin += (st->flags & RPLAN_F_PREDICTED) != 0;
        f.host += (st->flags & RPLAN_F_HOST_WAIT) != 0;
        f.dtype += (st->flags & RPLAN_F_DTYPE) != 0;
        if (st->flags & RPLAN_F_ONE_RANK) {
            f.one_rank++;
            if (st->group_size > f.group) f.group = st->group_size;
        }
    }
    return f;
}

static void add_line(cJSON *arr, const char *line)
{
    cJSON_AddItemToArray(arr, cJSON_CreateString(line));
}

/* One sentence per kind of approximation present in this replay. */
static void limitations(cJSON *arr, const rplan *rp, const rplan_meas *m)
{
    flagcount f = count_flags(rp);
    char l[512];
    if (f.spin) {
        snprintf(l, sizeof l, "%u compute ops ran as spin kernels of their predicted time (the "
                 "plan has no GEMM shapes for them): their times repeat the prediction", f.spin);
        add_line(arr, l);
    }
    if (f.one_rank) {
        snprintf(l, sizeof l, "%u collectives of groups of up to %u ranks ran on a 1-rank NCCL "
                 "communicator on one GPU: their times are NCCL's launch and local-copy floor, "
                 "not multi-rank communication", f.one_rank, f.group);
        add_line(arr, l);
    }
    if (f.host) {
        snprintf(l, sizeof l, m->host_wait
                 ? "%u host ops were busy waits of their predicted host time (the runtime's "
                   "hooks are Python there, not measured here)"
                 : "%u host ops were skipped (--no-host): host time is the harness's own issue "
                   "cost only", f.host);
        add_line(arr, l);
    }
    if (f.dtype) {
        snprintf(l, sizeof l, "%u fp8 GEMMs ran in bf16", f.dtype);
        add_line(arr, l);
    }
    snprintf(l, sizeof l, "memory: the CUDA stream-ordered pool's used and reserved bytes for the "
             "program's tensors, allocated and freed where the program does it; PyTorch's caching "
             "allocator rounds and caches differently; %llu MiB of harness buffers (GEMM "
             "operands, collective buffers, workspaces) are outside the pool",
             (unsigned long long)(m->scratch_bytes >> 20));
    add_line(arr, l);
}

static cJSON *measured_obj(const rplan *rp, const rplan_meas *m, uint32_t clamped)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", m->device ? m->device : "?");
    cJSON_AddNumberToObject(o, "rank", rp->rank);
    cJSON_AddNumberToObject(o, "ranks_in_program", prog_nranks(rp->p));
    cJSON_AddNumberToObject(o, "iterations", m->iters);
    cJSON_AddStringToObject(o, "reported_iteration", "median step time");
    cJSON *ms = cJSON_AddArrayToObject(o, "step_ms");
    for (uint32_t i = 0; i < m->iters && m->step_ms; i++)
        cJSON_AddItemToArray(ms, cJSON_CreateNumber(m->step_ms[i]));
    cJSON *steps = cJSON_AddObjectToObject(o, "steps");
    for (int k = 0; k < RPLAN_NKINDS; k++)
        cJSON_AddNumberToObject(steps, rplan_kind_name((rplan_kind)k), rp->count[k]);
    cJSON_AddNumberToObject(o, "flagged_steps", rp->flagged);
    cJSON_AddNumberToObject(o, "implied_deps", rp->implied);
    cJSON_AddNumberToObject(o, "clamped_ops", clamped);
    cJSON_AddNumberToObject(o, "start_used_bytes", (double)m->start_used);
    cJSON_AddNumberToObject(o, "scratch_bytes", (double)m->scratch_bytes);
    limitations(cJSON_AddArrayToObject(o, "limitations"), rp, m);
    return o;
}

static int patch_json(char **json, const rplan *rp, const spec_scenario *s, const rplan_meas *m,
                      uint32_t clamped, ss_err *err)
{
    cJSON *root = cJSON_Parse(*json);
    if (!root) return nomem(err);
    strip_model(root, rp, s);
    cJSON *mo = measured_obj(rp, m, clamped);
    if (!mo || !cJSON_AddItemToObject(root, "measured", mo)) {
        cJSON_Delete(mo);
        cJSON_Delete(root);
        return nomem(err);
    }
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    if (!txt) return nomem(err);
    free(*json);
    *json = txt;
    return SS_OK;
}

/* ---- the report ---- */

typedef struct rr {
    prog *q;
    trc *t;
    st_bytes st;
    sum_report sum;
    bool have_sum;
} rr;

static void rr_fini(rr *x)
{
    if (x->have_sum) sum_fini(&x->sum);
    trc_free(x->t);
    prog_free(x->q);
}

static int build(rr *x, const rplan *rp, const spec_scenario *s, const rplan_meas *m,
                 uint32_t *clamped, ss_err *err)
{
    const plan *pl = rp->pl;
    int rc = prog_one(rp->p, rp->rank, &x->q, err);
    if (!rc) rc = trc_new(&x->t, x->q, err);
    if (!rc) rc = fill_times(x->t, m, clamped, err);
    if (!rc) rc = sched_states(pl, rp->rank, &x->st, err);
    if (!rc) rc = sum_build(s, x->t, &x->st, 1, false, &x->sum, err);
    if (rc) return rc;
    x->have_sum = true;
    x->sum.tokens = pl->tokens * s->grad_accum;
    x->sum.flops_per_token = pl->flops_per_token;
    x->sum.peak_flops = s->topo.device.peak_flops[s->prec.compute];
    return apply_memory(&x->sum, rp, m, err);
}

int rplan_report(const rplan *rp, const spec_scenario *s, const rplan_meas *m, char **summary,
                 char **trace, ss_err *err)
{
    rr x = {0};
    uint32_t clamped = 0;
    char *js = NULL, *tr = NULL;
    int rc = build(&x, rp, s, m, &clamped, err);
    if (!rc && (!(js = sum_json(&x.sum)) || !(tr = chrome_json(&x.sum, x.t)))) rc = nomem(err);
    if (!rc) rc = patch_json(&js, rp, s, m, clamped, err);
    rr_fini(&x);
    if (rc) {
        free(js);
        free(tr);
        return rc;
    }
    *summary = js;
    *trace = tr;
    return SS_OK;
}
