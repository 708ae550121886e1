#include "summary.h"

#include "span.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank 0's compute-stream time beyond its ops' own work: the slowdown
 * collectives running beside them cost (eng.h, overlap_slowdown). */
static ss_ns interference(const trc *t)
{
    const prog_op *ops = prog_ops(t->p, 0);
    ss_ns extra = 0;
    for (uint32_t i = 0; i < prog_nops(t->p, 0); i++) {
        const trc_op *o = &t->ops[0][i];
        if (ops[i].kind == PROG_OP_COMPUTE && ops[i].stream == PROG_COMPUTE &&
            o->end - o->start > ops[i].dev_ns)
            extra += o->end - o->start - ops[i].dev_ns;
    }
    return extra;
}

static int busy_times(const trc *t, sum_report *r, ss_err *err)
{
    uint32_t n = prog_nops(t->p, 0);
    span *c = malloc((n ? n : 1) * sizeof *c), *m = malloc((n ? n : 1) * sizeof *m);
    if (!c || !m) {
        free(c);
        free(m);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    size_t nc = span_rank(t, 0, SPAN_COMPUTE, c);
    size_t nm = span_rank(t, 0, SPAN_COMM, m);
    r->compute_ns = span_total(c, nc);
    r->comm_ns = span_total(m, nm);
    r->overlap_ns = span_overlap(c, nc, m, nm);
    r->exposed_comm_ns = r->comm_ns - r->overlap_ns;
    for (int k = 0; k < PROG_NSTREAMS; k++) {
        size_t ns = span_rank_stream(t, 0, (prog_stream)k, m);
        r->exposed_by_stream[k] = span_total(m, ns) - span_overlap(c, nc, m, ns);
    }
    size_t nh = span_rank(t, 0, SPAN_HOST, c);
    r->host_ns = span_total(c, nh);
    r->interference_ns = interference(t);
    free(c);
    free(m);
    return SS_OK;
}

/* Rank 0's issue time and the compute stream's waits for the host: an op
 * of that stream could run once the op before it on the stream and its
 * deps ended; what it waited past that for its issue is the host's. */
static void host_times(const trc *t, sum_report *r)
{
    const prog_op *ops = prog_ops(t->p, 0);
    const uint32_t *deps = prog_deps(t->p, 0);
    const trc_op *rec = t->ops[0];
    ss_ns prev_end = 0;
    for (uint32_t i = 0; i < prog_nops(t->p, 0); i++) {
        if (ops[i].kind == PROG_OP_HOST) continue;
        r->issue_ns += ops[i].host_ns;
        if (ops[i].stream != PROG_COMPUTE) continue;
        ss_ns ready = prev_end;
        for (uint32_t k = 0; k < ops[i].ndep; k++)
            if (rec[deps[ops[i].dep0 + k]].end > ready) ready = rec[deps[ops[i].dep0 + k]].end;
        if (rec[i].issue > ready) r->host_wait_ns += rec[i].issue - ready;
        prev_end = rec[i].end;
    }
}

static void count_colls(const trc *t, sum_report *r)
{
    const prog_op *ops = prog_ops(t->p, 0);
    for (uint32_t i = 0; i < prog_nops(t->p, 0); i++) {
        if (ops[i].kind != PROG_OP_COLL) continue;
        sum_coll *c = &r->coll[ops[i].coll];
        c->count++;
        c->bytes += ops[i].bytes;
        c->phase_count[ops[i].phase]++;
        c->phase_bytes[ops[i].phase] += ops[i].bytes;
    }
}

static void peak_op_name(const trc *t, uint32_t k, sum_rank *x)
{
    uint32_t po = x->mem.peak_op;
    snprintf(x->peak_op, sizeof x->peak_op, "%s",
             po == UINT32_MAX ? "(step start)" : prog_str_get(t->p, prog_ops(t->p, k)[po].name));
}

/* Program rank k's memory (the figures of rank k x stride), replayed
 * from the trace, or a copy of the figures of the rank whose program it
 * runs where the allocator sees the same events at the same times
 * (mem_view_same; that rank's view is kept in views[] when keep[] says
 * another rank runs its program). */
static int rank_mem(const spec_scenario *s, const trc *t, uint32_t k, uint32_t stride,
                    bool series_all, const bool *keep, mem_view **views, sum_report *r,
                    ss_err *err)
{
    sum_rank *x = &r->ranks[k * stride];
    /* the allocator runs out where cudaMalloc would refuse: at what the
     * process can use, where it frees its cached segments and retries */
    mem_cfg mc = {(mem_model)s->alloc_model, s->expandable_segments, sum_alloc_limit(s),
                  k == 0 || series_all, NULL};
    mem_view *v = NULL;
    int rc = mem_view_new(t, k, &v, err);
    uint32_t src = prog_rank_source(t->p, k);
    if (!rc && !mc.series && src != k && views[src] && mem_view_same(views[src], v)) {
        mem_view_free(v);
        rc = mem_rank_copy(&r->ranks[src * stride].mem, &x->mem, err);
        memcpy(x->peak_op, r->ranks[src * stride].peak_op, sizeof x->peak_op);
        return rc;
    }
    if (!rc) rc = mem_replay_view(v, &mc, &x->mem, err);
    if (!rc) peak_op_name(t, k, x);
    if (!rc && x->mem.start != x->mem.end)
        rc = ss_fail(err, SS_E_INTERNAL, NULL,
                     "rank %u: the step starts with %llu bytes allocated and ends "
                     "with %llu: the schedule is not a steady state", k * stride,
                     (unsigned long long)x->mem.start, (unsigned long long)x->mem.end);
    if (!rc && keep[k]) views[k] = v;
    else mem_view_free(v);
    return rc;
}

/* A rank folded away (the ranks between program ranks, stride apart) gets
 * the figures of the program rank before it, without its series and live
 * set, which only simulated ranks show. */
static void folded_mem(sum_report *r, uint32_t k, uint32_t stride)
{
    const sum_rank *from = &r->ranks[k / stride * stride];
    sum_rank *x = &r->ranks[k];
    x->mem = from->mem;
    x->mem.peak_live = NULL, x->mem.npeak_live = 0;
    x->mem.series = NULL, x->mem.nseries = 0;
    memcpy(x->peak_op, from->peak_op, sizeof x->peak_op);
}

/* nst state sets for t->nranks program ranks: program rank k is state set
 * k x stride (stride = nst / nranks: 1, a layout's tp cp, or nst for one
 * rank of DDP or FSDP). Views are kept only for ranks whose program a
 * later rank shares. */
static int ranks_mem(const spec_scenario *s, const trc *t, uint32_t nst, bool series_all,
                     sum_report *r, ss_err *err)
{
    uint32_t stride = nst / t->nranks;
    if (nst % t->nranks)
        return ss_fail(err, SS_E_INTERNAL, NULL, "%u state sets for %u ranks", nst, t->nranks);
    mem_view **views = calloc(t->nranks, sizeof *views);
    bool *keep = calloc(t->nranks, sizeof *keep);
    int rc = !views || !keep ? ss_fail(err, SS_E_NOMEM, NULL, "out of memory") : SS_OK;
    for (uint32_t k = 0; !rc && k < t->nranks; k++)
        if (prog_rank_source(t->p, k) != k) keep[prog_rank_source(t->p, k)] = true;
    for (uint32_t k = 0; k < t->nranks && !rc; k++)
        rc = rank_mem(s, t, k, stride, series_all, keep, views, r, err);
    for (uint32_t k = 0; k < nst && !rc; k++)
        if (k % stride) folded_mem(r, k, stride);
    for (uint32_t k = 0; views && k < t->nranks; k++) mem_view_free(views[k]);
    free(views);
    free(keep);
    return rc;
}

int sum_build(const spec_scenario *s, const trc *t, const st_bytes *st, uint32_t nst,
              bool series_all, sum_report *out, ss_err *err)
{
    if (nst < t->nranks) return ss_fail(err, SS_E_INTERNAL, NULL, "%u state sets for %u ranks", nst, t->nranks);
    sum_report r = {.s = s, .step_ns = t->step_ns, .nranks = nst, .nsim = t->nranks,
                    .nevents = t->nevents};
    r.ranks = calloc(nst, sizeof *r.ranks);
    if (!r.ranks) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    int rc = busy_times(t, &r, err);
    for (uint32_t k = 0; k < nst && !rc; k++) {
        r.ranks[k].st = st[k];
        if (k < t->nranks) r.nops += prog_nops(t->p, k);
    }
    if (!rc) rc = ranks_mem(s, t, nst, series_all, &r, err);
    if (rc) {
        sum_fini(&r);
        return rc;
    }
    count_colls(t, &r);
    host_times(t, &r);
    *out = r;
    return SS_OK;
}

void sum_fini(sum_report *r)
{
    if (!r) return;
    for (uint32_t k = 0; r->ranks && k < r->nranks; k++) mem_rank_fini(&r->ranks[k].mem);
    free(r->ranks);
    r->ranks = NULL;
    free(r->samples);
    r->samples = NULL;
}

static int cmp_ns(const void *a, const void *b)
{
    ss_ns x = *(const ss_ns *)a, y = *(const ss_ns *)b;
    return x < y ? -1 : x > y;
}

typedef struct dist {
    double mean, p50, p90, min, max;
} dist;

/* Nearest-rank percentiles of the samples. */
static dist distribution(const sum_report *r)
{
    dist d = {0};
    uint32_t n = r->nsamples;
    ss_ns *v = malloc(n * sizeof *v);
    if (!v || !n) {
        free(v);
        return d;
    }
    for (uint32_t i = 0; i < n; i++) {
        v[i] = r->samples[i];
        d.mean += (double)v[i] * 1e-9 / n;
    }
    qsort(v, n, sizeof *v, cmp_ns);
    d.min = (double)v[0] * 1e-9;
    d.max = (double)v[n - 1] * 1e-9;
    d.p50 = (double)v[(n * 50 + 99) / 100 - 1] * 1e-9;
    d.p90 = (double)v[(n * 90 + 99) / 100 - 1] * 1e-9;
    free(v);
    return d;
}

/* ---- JSON ---- */

static double secs(ss_ns t) { return (double)t * 1e-9; }

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
    cJSON_AddNumberToObject(o, k, (double)v);
}

static cJSON *json_coll(const sum_coll *c, bool split)
{
    cJSON *o = cJSON_CreateObject();
    add_u64(o, "count", c->count);
    add_u64(o, "bytes", c->bytes);
    if (!split) return o;
    static const prog_phase ph[] = {PROG_PH_FORWARD, PROG_PH_BACKWARD};
    for (size_t i = 0; i < 2; i++) {
        cJSON *p = cJSON_AddObjectToObject(o, prog_phase_name(ph[i]));
        add_u64(p, "count", c->phase_count[ph[i]]);
        add_u64(p, "bytes", c->phase_bytes[ph[i]]);
    }
    return o;
}

/* What a rank may reserve and still run: the allocator's capacity, or
 * less, the total CUDA reports for the device less the process's own CUDA
 * context and NCCL buffers, when the device file gives that total
 * (cuda_total_bytes; docs/MEMORY.md). */
static ss_bytes usable_bytes(const sum_report *r) { return sum_usable_of(r->s); }

ss_bytes sum_usable_of(const spec_scenario *s)
{
    const spec_device *d = &s->topo.device;
    ss_bytes cap = s->capacity_bytes ? s->capacity_bytes : UINT64_MAX;
    if (!d->cuda_total_bytes) return cap;
    ss_bytes cuda = d->cuda_total_bytes - d->process_reserve_bytes; /* machine.c: reserve < total */
    return cuda < cap ? cuda : cap;
}

ss_bytes sum_alloc_limit(const spec_scenario *s)
{
    return s->capacity_bytes ? sum_usable_of(s) : 0;
}

static bool rank_fits(const sum_report *r, const sum_rank *sr)
{
    return sr->mem.ooms == 0 && sr->mem.peak_reserved <= usable_bytes(r);
}

static cJSON *json_rank(const sum_report *r, uint32_t k)
{
    const sum_rank *sr = &r->ranks[k];
    cJSON *o = cJSON_CreateObject();
    add_u64(o, "rank", k);
    add_u64(o, "param_bytes", sr->st.param.physical);
    add_u64(o, "param_logical_bytes", sr->st.param.logical);
    add_u64(o, "grad_bytes", sr->st.grad.physical);
    add_u64(o, "grad_logical_bytes", sr->st.grad.logical);
    add_u64(o, "master_bytes", sr->st.master.physical);
    add_u64(o, "optim_bytes", sr->st.optim.physical);
    add_u64(o, "optim_logical_bytes", sr->st.optim.logical);
    add_u64(o, "grad_fp32_bytes", sr->st.grad32.physical);
    add_u64(o, "host_bytes", sr->st.host);
    add_u64(o, "steady_bytes", sr->mem.end);
    add_u64(o, "peak_allocated_bytes", sr->mem.peak);
    add_u64(o, "peak_reserved_bytes", sr->mem.peak_reserved);
    add_u64(o, "ideal_peak_bytes", sr->mem.ideal_peak);
    add_u64(o, "init_peak_bytes", sr->init_peak);
    cJSON_AddBoolToObject(o, "fits", rank_fits(r, sr));
    add_u64(o, "alloc_retries", sr->mem.retries);
    cJSON_AddNumberToObject(o, "peak_time_s", secs(sr->mem.peak_t));
    cJSON_AddStringToObject(o, "peak_op", sr->peak_op);
    cJSON *b = cJSON_AddObjectToObject(o, "peak_breakdown");
    for (int c = 0; c < PROG_NMEMCATS; c++)
        add_u64(b, prog_memcat_name((prog_memcat)c), sr->mem.peak_by_cat[c]);
    add_u64(b, "allocator_slack", sr->mem.peak_slack);
    return o;
}

typedef enum { MAX_STEADY, MAX_PEAK, MAX_RESERVED, MAX_INIT, MAX_RETRIES } max_what;

static ss_bytes max_of(const sum_report *r, max_what w)
{
    ss_bytes m = 0;
    for (uint32_t k = 0; k < r->nranks; k++) {
        const mem_rank *x = &r->ranks[k].mem;
        ss_bytes v = w == MAX_STEADY     ? x->end
                     : w == MAX_PEAK     ? x->peak
                     : w == MAX_RESERVED ? x->peak_reserved
                     : w == MAX_RETRIES  ? x->retries
                                         : r->ranks[k].init_peak;
        if (v > m) m = v;
    }
    return m;
}

/* Host memory per node: the offloaded states of the node's ranks (ranks
 * fill nodes in order). */
static ss_bytes max_host_per_node(const sum_report *r)
{
    uint32_t g = spec_topo_rpn(&r->s->topo);
    if (!g) g = 1;
    ss_bytes m = 0, node = 0;
    for (uint32_t k = 0; k < r->nranks; k++) {
        node += r->ranks[k].st.host;
        if ((k + 1) % g == 0 || k + 1 == r->nranks) {
            if (node > m) m = node;
            node = 0;
        }
    }
    return m;
}

static bool host_fits(const sum_report *r)
{
    return !r->s->off.host_bytes || max_host_per_node(r) <= r->s->off.host_bytes;
}

bool sum_fits(const sum_report *r)
{
    for (uint32_t k = 0; k < r->nranks; k++)
        if (!rank_fits(r, &r->ranks[k])) return false;
    return true;
}

ss_bytes sum_usable(const sum_report *r) { return usable_bytes(r); }

ss_bytes sum_max_peak(const sum_report *r) { return max_of(r, MAX_PEAK); }

ss_bytes sum_max_peak_reserved(const sum_report *r) { return max_of(r, MAX_RESERVED); }
ss_bytes sum_max_init_peak(const sum_report *r) { return max_of(r, MAX_INIT); }

#define SUM_TIMELINE_POINTS 400

static void timeline_point(void *ctx, const mem_point *p)
{
    cJSON *pt = cJSON_CreateArray();
    cJSON_AddItemToArray(pt, cJSON_CreateNumber(secs(p->t)));
    cJSON_AddItemToArray(pt, cJSON_CreateNumber((double)p->allocated));
    cJSON_AddItemToArray(pt, cJSON_CreateNumber((double)p->reserved));
    cJSON_AddItemToArray(ctx, pt);
}

static void json_timeline(cJSON *mem, const mem_rank *m)
{
    cJSON *tl = cJSON_AddArrayToObject(mem, "timeline_rank0");
    mem_series_thin(m, SUM_TIMELINE_POINTS, timeline_point, tl);
}

/* Tokens per second per GPU and MFU with the FLOP count users' tools use
 * (torchtitan's get_num_flop_per_token: 6 x non-embedding parameters a
 * token uses + 12 L H Q T for attention). */
static void json_throughput(cJSON *root, const sum_report *r)
{
    cJSON *t = cJSON_AddObjectToObject(root, "throughput");
    double s = secs(r->step_ns), tps = s > 0 ? (double)r->tokens / s : 0;
    add_u64(t, "tokens_per_step_per_gpu", r->tokens);
    add_u64(t, "global_batch_samples",
            r->s->micro_batch * (uint64_t)r->s->dp * r->s->grad_accum); /* micro x dp x accum */
    cJSON_AddNumberToObject(t, "tokens_per_s_per_gpu", tps);
    cJSON_AddNumberToObject(t, "flops_per_token", r->flops_per_token);
    cJSON_AddNumberToObject(t, "mfu", r->peak_flops > 0 ? tps * r->flops_per_token / r->peak_flops : 0);
    cJSON_AddStringToObject(t, "flops_convention", "6N+12LHQT (torchtitan)");
}

/* The 1F1B bubble with no communication: (pp - 1) / (v m + pp - 1) of the
 * step (Narayanan et al. 2021); the simulated step has its sends too. */
double sum_bubble_fraction(const spec_parallel *p, uint32_t m)
{
    double v = p->virtual_stages ? p->virtual_stages : 1;
    return p->pp > 1 ? (p->pp - 1.0) / (v * m + p->pp - 1.0) : 0.0;
}

/* Parameters as the Hugging Face implementation counts them; MoE models
 * add those one token uses (embeddings included). */
static void json_model(cJSON *root, const sum_report *r)
{
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    add_u64(m, "parameters", r->parameters);
    if (r->moe) add_u64(m, "active_parameters", r->active_parameters);
}

static void json_layout(cJSON *root, const sum_report *r)
{
    const spec_parallel *p = &r->s->par;
    cJSON *l = cJSON_AddObjectToObject(root, "layout");
    add_u64(l, "tp", p->tp);
    add_u64(l, "cp", p->cp);
    add_u64(l, "pp", p->pp);
    add_u64(l, "ep", p->ep);
    add_u64(l, "etp", p->etp);
    add_u64(l, "dp", r->s->dp);
    add_u64(l, "world", (uint64_t)p->tp * p->cp * p->pp * r->s->dp);
    add_u64(l, "simulated_ranks", r->nsim);
    if (spec_topo_rpn(&r->s->topo) < r->s->topo.gpus_per_node) /* a placement, only where given */
        add_u64(l, "ranks_per_node", spec_topo_rpn(&r->s->topo));
    cJSON_AddBoolToObject(l, "sequence_parallel", p->sequence_parallel);
    cJSON_AddStringToObject(l, "pipeline_schedule", spec_pp_names[p->schedule]);
    add_u64(l, "virtual_stages", p->virtual_stages ? p->virtual_stages : 1);
    cJSON_AddNumberToObject(l, "bubble_fraction_analytic",
                            sum_bubble_fraction(p, r->s->grad_accum));
}

/* "exposed by       tp 12.000, reduce 3.000 ms": where the exposed
 * communication sits (unshard and reduce: the data-parallel runtime's
 * streams; tp: tensor, context and expert parallel; p2p: the pipeline). */
static void text_exposed_by_stream(FILE *f, const sum_report *r)
{
    if (!r->exposed_comm_ns) return;
    const char *sep = "";
    fprintf(f, "  exposed by       ");
    for (int k = 0; k < PROG_NSTREAMS; k++) {
        if (!r->exposed_by_stream[k]) continue;
        fprintf(f, "%s%s %.3f", sep, prog_stream_name((prog_stream)k),
                secs(r->exposed_by_stream[k]) * 1e3);
        sep = ", ";
    }
    fprintf(f, " ms\n");
}

static void json_time(cJSON *root, const sum_report *r)
{
    cJSON *t = cJSON_AddObjectToObject(root, "time");
    cJSON_AddNumberToObject(t, "compute_s", secs(r->compute_ns));
    cJSON_AddNumberToObject(t, "communication_s", secs(r->comm_ns));
    cJSON_AddNumberToObject(t, "overlap_s", secs(r->overlap_ns));
    cJSON_AddNumberToObject(t, "exposed_communication_s", secs(r->exposed_comm_ns));
    cJSON *by = cJSON_AddObjectToObject(t, "exposed_by_stream_s");
    for (int k = 0; k < PROG_NSTREAMS; k++)
        if (r->exposed_by_stream[k])
            cJSON_AddNumberToObject(by, prog_stream_name((prog_stream)k),
                                    secs(r->exposed_by_stream[k]));
    cJSON_AddNumberToObject(t, "host_s", secs(r->host_ns));
    cJSON_AddNumberToObject(t, "host_issue_s", secs(r->issue_ns));
    cJSON_AddNumberToObject(t, "host_wait_s", secs(r->host_wait_ns));
    cJSON_AddNumberToObject(t, "interference_s", secs(r->interference_ns));
    cJSON_AddStringToObject(t, "kernels", spec_kernels_names[r->s->kernels]);
}

/* DeepSpeed: the zero_optimization values that ran (after "auto" and the
 * defaults), so a summary says which config it is. */
static void json_deepspeed(cJSON *root, const sum_report *r)
{
    if (r->s->shard.strategy != SPEC_DEEPSPEED) return;
    const spec_deepspeed *d = &r->s->ds;
    cJSON *o = cJSON_AddObjectToObject(root, "deepspeed");
    add_u64(o, "stage", d->stage);
    cJSON_AddBoolToObject(o, "overlap_comm", d->overlap_comm);
    cJSON_AddBoolToObject(o, "contiguous_gradients", d->contiguous_gradients);
    cJSON_AddBoolToObject(o, "use_multi_rank_bucket_allreduce", d->multi_rank_allreduce);
    cJSON_AddBoolToObject(o, "reduce_scatter", d->reduce_scatter);
    add_u64(o, "reduce_bucket_size", d->reduce_bucket);
    add_u64(o, "allgather_bucket_size", d->allgather_bucket);
    add_u64(o, "stage3_prefetch_bucket_size", d->prefetch_bucket);
    add_u64(o, "stage3_max_live_parameters", d->max_live);
    add_u64(o, "stage3_max_reuse_distance", d->max_reuse);
    add_u64(o, "stage3_param_persistence_threshold", d->persistence_threshold);
    add_u64(o, "zero_hpz_partition_size", d->hpz);
    cJSON_AddBoolToObject(o, "zero_quantized_weights", d->quantized_weights);
    cJSON_AddBoolToObject(o, "zero_quantized_gradients", d->quantized_gradients);
    cJSON_AddStringToObject(o, "offload_optimizer", spec_offload_names[r->s->off.optimizer]);
    cJSON_AddStringToObject(o, "offload_param", spec_offload_names[r->s->off.params]);
}

cJSON *sum_tree(const sum_report *r)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "shardsim_version", SHARDSIM_VERSION);
    cJSON_AddStringToObject(root, "scenario", r->s->name);
    cJSON_AddStringToObject(root, "strategy", spec_strategy_names[r->s->shard.strategy]);
    add_u64(root, "ranks", r->nranks);
    cJSON_AddNumberToObject(root, "step_time_s", secs(r->step_ns));
    if (r->nsamples) {
        dist d = distribution(r);
        cJSON *sd = cJSON_AddObjectToObject(root, "step_time_distribution");
        cJSON_AddNumberToObject(sd, "samples", r->nsamples);
        cJSON_AddNumberToObject(sd, "cv", r->s->jitter_cv);
        cJSON_AddNumberToObject(sd, "seed", (double)r->s->jitter_seed);
        cJSON_AddNumberToObject(sd, "mean_s", d.mean);
        cJSON_AddNumberToObject(sd, "p50_s", d.p50);
        cJSON_AddNumberToObject(sd, "p90_s", d.p90);
        cJSON_AddNumberToObject(sd, "min_s", d.min);
        cJSON_AddNumberToObject(sd, "max_s", d.max);
    }
    json_model(root, r);
    json_layout(root, r);
    json_deepspeed(root, r);
    json_time(root, r);
    json_throughput(root, r);
    cJSON *mem = cJSON_AddObjectToObject(root, "memory");
    cJSON_AddStringToObject(mem, "allocator", mem_model_names[r->s->alloc_model]);
    cJSON_AddBoolToObject(mem, "expandable_segments", r->s->expandable_segments);
    add_u64(mem, "capacity_bytes", r->s->capacity_bytes);
    add_u64(mem, "usable_bytes", usable_bytes(r));
    cJSON_AddBoolToObject(mem, "fits", sum_fits(r));
    add_u64(mem, "max_steady_bytes", max_of(r, MAX_STEADY));
    add_u64(mem, "max_peak_allocated_bytes", max_of(r, MAX_PEAK));
    add_u64(mem, "max_peak_reserved_bytes", max_of(r, MAX_RESERVED));
    cJSON_AddStringToObject(mem, "init_mode", spec_init_names[r->s->init_mode]);
    add_u64(mem, "max_init_peak_bytes", max_of(r, MAX_INIT));
    add_u64(mem, "max_alloc_retries", max_of(r, MAX_RETRIES));
    add_u64(mem, "max_host_bytes_per_node", max_host_per_node(r));
    add_u64(mem, "host_capacity_bytes", r->s->off.host_bytes);
    cJSON_AddBoolToObject(mem, "host_fits", host_fits(r));
    cJSON *pr = cJSON_AddArrayToObject(mem, "per_rank");
    for (uint32_t k = 0; k < r->nranks; k++) cJSON_AddItemToArray(pr, json_rank(r, k));
    cJSON_AddStringToObject(mem, "timeline_columns", "time_s, allocated_bytes, reserved_bytes");
    json_timeline(mem, &r->ranks[0].mem);
    cJSON *co = cJSON_AddObjectToObject(root, "collectives");
    for (int c = 0; c < PROG_NSTEP_COLLS; c++)
        cJSON_AddItemToObject(co, prog_coll_name((prog_coll)c),
                              json_coll(&r->coll[c], c == PROG_COLL_ALL_GATHER));
    cJSON *en = cJSON_AddObjectToObject(root, "engine");
    add_u64(en, "ops", r->nops);
    add_u64(en, "events", r->nevents);
    return root;
}

char *sum_json(const sum_report *r)
{
    cJSON *root = sum_tree(r);
    char *txt = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return txt;
}

/* ---- text ---- */

static double mib(ss_bytes b) { return (double)b / (double)SS_MIB; }

#define TEXT_RANKS 16 /* more ranks than this: the text shows a few */

static void text_rank(const sum_report *r, uint32_t k, FILE *f)
{
    const sum_rank *s = &r->ranks[k];
    fprintf(f, "  %-4u %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %11.3f  %s%s\n", k,
            mib(s->st.param.physical), mib(s->st.grad.physical),
            mib(s->st.optim.physical + s->st.master.physical), mib(s->mem.end), mib(s->mem.peak),
            mib(s->mem.peak_reserved), secs(s->mem.peak_t) * 1e3, s->peak_op,
            s->mem.ooms ? "  DOES NOT FIT" : "");
}

static void text_memory(const sum_report *r, FILE *f)
{
    fprintf(f, "\n  %-4s %9s %9s %9s %9s %9s %9s %11s  %s\n", "rank", "param", "grad",
            "optim", "steady", "peak", "reserved", "peak at ms", "peak op");
    /* Thousands of ranks do not make a readable table: the first ranks and
     * the one with the highest peak reserved; the JSON keeps every rank. */
    uint32_t shown = r->nranks > TEXT_RANKS ? TEXT_RANKS / 2 : r->nranks, worst = 0;
    for (uint32_t k = 1; k < r->nranks; k++)
        if (r->ranks[k].mem.peak_reserved > r->ranks[worst].mem.peak_reserved) worst = k;
    for (uint32_t k = 0; k < shown; k++) text_rank(r, k, f);
    if (shown < r->nranks) {
        if (worst >= shown) text_rank(r, worst, f);
        fprintf(f, "  ... %u more ranks in the JSON summary (memory.per_rank)\n",
                r->nranks - shown - (worst >= shown));
    }
    fprintf(f, "  (MiB; allocator model: %s; optim includes master weights)\n",
            mem_model_names[r->s->alloc_model]);
    fprintf(f, "  model setup (init.mode %s) peaks at %.2f MiB before the first step\n",
            spec_init_names[r->s->init_mode], mib(max_of(r, MAX_INIT)));
    uint64_t retries;
    if (!sum_fits(r))
        fprintf(f, "  out of memory: the peak reserved exceeds %.2f MiB on some rank\n",
                mib(usable_bytes(r)));
    else if ((retries = max_of(r, MAX_RETRIES)))
        fprintf(f, "  fits only by freeing cached blocks at the %.2f MiB limit: up to %llu "
                   "allocation %s a step (torch's num_alloc_retries; each frees the cache "
                   "and maps anew, and cudaFree waits for the device); expandable_segments or "
                   "a smaller peak avoid them\n",
                mib(usable_bytes(r)), (unsigned long long)retries, retries == 1 ? "retry" : "retries");
    if (max_host_per_node(r))
        fprintf(f, "  host memory: %.2f MiB per node of offloaded states (%s; the state columns "
                   "above count them too)%s\n",
                mib(max_host_per_node(r)), r->s->off.pin_memory ? "pinned" : "pageable",
                host_fits(r) ? "" : ", MORE THAN THE NODE HAS");
}

/* 8030261248 as "8,030,261,248". */
static const char *grouped(uint64_t v, char *buf, size_t len)
{
    char d[24];
    int n = snprintf(d, sizeof d, "%llu", (unsigned long long)v), o = 0;
    for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = '\0';
    return buf;
}

static void text_model(const sum_report *r, FILE *f)
{
    char all[32], active[32];
    fprintf(f, "  model            %s parameters", grouped(r->parameters, all, sizeof all));
    if (r->moe)
        fprintf(f, ", %s active per token",
                grouped(r->active_parameters, active, sizeof active));
    fputc('\n', f);
}

void sum_text(const sum_report *r, FILE *f)
{
    char stage[48] = "";
    if (r->s->shard.strategy == SPEC_DEEPSPEED) snprintf(stage, sizeof stage, " zero%u", r->s->ds.stage);
    if (r->s->shard.strategy == SPEC_MEGATRON && r->s->shard.mcore.fsdp)
        snprintf(stage, sizeof stage, " fsdp %s", spec_mfsdp_names[r->s->shard.mcore.fsdp_shard]);
    fprintf(f, "%s  [%s%s, %u ranks]\n", r->s->name, spec_strategy_names[r->s->shard.strategy],
            stage, r->nranks);
    fprintf(f, "  step time        %10.3f ms\n", secs(r->step_ns) * 1e3);
    if (r->nsamples) {
        dist d = distribution(r);
        fprintf(f, "  with jitter      p50 %.3f ms, p90 %.3f ms, max %.3f ms (%u samples, cv %.3g)\n",
                d.p50 * 1e3, d.p90 * 1e3, d.max * 1e3, r->nsamples, r->s->jitter_cv);
    }
    text_model(r, f);
    const spec_parallel *p = &r->s->par;
    if (spec_model_parallel(p)) {
        char etp[32] = "", per[64] = "";
        if (p->etp > 1) snprintf(etp, sizeof etp, " (etp %u)", p->etp);
        if (spec_topo_rpn(&r->s->topo) < r->s->topo.gpus_per_node)
            snprintf(per, sizeof per, " (%u of each node's %u)", spec_topo_rpn(&r->s->topo),
                     r->s->topo.gpus_per_node);
        fprintf(f, "  layout           tp %u%s, cp %u, pp %u, ep %u%s, dp %u: %llu GPUs%s, %u simulated\n",
                p->tp, p->sequence_parallel ? " + SP" : "", p->cp, p->pp, p->ep, etp, r->s->dp,
                (unsigned long long)p->tp * p->cp * p->pp * r->s->dp, per, r->nranks);
        if (p->pp > 1)
            fprintf(f, "  pipeline         %s, %u micro-batches: bubble %.1f%% without communication\n",
                    spec_pp_names[p->schedule], r->s->grad_accum,
                    100.0 * sum_bubble_fraction(p, r->s->grad_accum));
    }
    /* full recomputation says whether it stops early (DECISIONS 203) */
    const char *recomp = r->s->recompute != SPEC_RECOMP_FULL ? ""
                         : r->s->recompute_early_stop     ? ", full recompute stopping early"
                                                          : ", full recompute of whole layers";
    fprintf(f, "  compute busy     %10.3f ms  (%s kernels%s; slowed %.3f by collectives beside it)\n",
            secs(r->compute_ns) * 1e3, spec_kernels_names[r->s->kernels], recomp,
            secs(r->interference_ns) * 1e3);
    fprintf(f, "  comm busy        %10.3f ms  (overlapped %.3f, exposed %.3f)\n",
            secs(r->comm_ns) * 1e3, secs(r->overlap_ns) * 1e3, secs(r->exposed_comm_ns) * 1e3);
    text_exposed_by_stream(f, r);
    fprintf(f, "  host busy        %10.3f ms  (issuing device ops %.3f, host ops %.3f; compute idle "
            "%.3f waiting for an issue)\n", secs(r->issue_ns + r->host_ns) * 1e3,
            secs(r->issue_ns) * 1e3, secs(r->host_ns) * 1e3, secs(r->host_wait_ns) * 1e3);
    if (r->step_ns && r->peak_flops > 0) {
        double tps = (double)r->tokens / secs(r->step_ns);
        fprintf(f, "  throughput       %10.0f tokens/s/GPU, MFU %.1f%% (6N+12LHQT)\n", tps,
                100.0 * tps * r->flops_per_token / r->peak_flops);
    }
    fprintf(f, "\n  %-15s %6s %14s\n", "collective", "count", "MiB/rank/step");
    for (int c = 0; c < PROG_NCOLLS; c++) {
        const sum_coll *sc = &r->coll[c];
        if (!sc->count) continue;
        fprintf(f, "  %-15s %6llu %14.2f", prog_coll_name((prog_coll)c),
                (unsigned long long)sc->count, mib(sc->bytes));
        if (c == PROG_COLL_ALL_GATHER)
            fprintf(f, "   (forward %llu, backward %llu)",
                    (unsigned long long)sc->phase_count[PROG_PH_FORWARD],
                    (unsigned long long)sc->phase_count[PROG_PH_BACKWARD]);
        fputc('\n', f);
    }
    text_memory(r, f);
}

/* ---- the peak ledger ---- */

/* "250.50 MiB", "1.25 GiB", "2.0 KiB": a size a person reads at a glance. */
static const char *human(char *buf, size_t n, ss_bytes b)
{
    if (b >= SS_MIB * 1024) snprintf(buf, n, "%.2f GiB", (double)b / (double)(SS_MIB * 1024));
    else if (b >= SS_MIB) snprintf(buf, n, "%.2f MiB", mib(b));
    else snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
    return buf;
}

/* One category's tensors at the peak: the largest `top` (0: all), then the rest
 * as one line. order is scratch of npeak_live entries. */
static void ledger_cat(const sum_rank *sr, const prog *p, const prog_tensor *ts, int c, uint32_t top,
                       uint32_t *order, FILE *f)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < sr->mem.npeak_live; i++)
        if (ts[sr->mem.peak_live[i]].cat == c) {
            uint32_t j = n++; /* insertion by size, descending, stable */
            ss_bytes b = mem_round(ts[sr->mem.peak_live[i]].bytes);
            while (j > 0 && mem_round(ts[order[j - 1]].bytes) < b) order[j] = order[j - 1], j--;
            order[j] = sr->mem.peak_live[i];
        }
    uint32_t shown = top && top < n ? top : n;
    ss_bytes rest = 0;
    char buf[32];
    for (uint32_t k = 0; k < n; k++) {
        ss_bytes b = mem_round(ts[order[k]].bytes);
        if (k < shown) fprintf(f, "      %-44s %12s\n", prog_str_get(p, ts[order[k]].name), human(buf, sizeof buf, b));
        else rest += b;
    }
    if (shown < n) {
        char what[64];
        snprintf(what, sizeof what, "... %u more", n - shown);
        fprintf(f, "      %-44s %12s\n", what, human(buf, sizeof buf, rest));
    }
}

void sum_ledger(const sum_report *r, const trc *t, uint32_t rank, uint32_t top, FILE *f)
{
    const sum_rank *sr = &r->ranks[rank];
    const prog_tensor *ts = prog_tensors(t->p, rank);
    uint32_t *order = malloc((sr->mem.npeak_live ? sr->mem.npeak_live : 1) * sizeof *order);
    char buf[32];
    fprintf(f, "\nmemory at the peak of rank %u: %s allocated at %.3f ms, during %s\n", rank,
            human(buf, sizeof buf, sr->mem.peak), secs(sr->mem.peak_t) * 1e3, sr->peak_op);
    for (int c = 0; c < PROG_NMEMCATS; c++) {
        if (!sr->mem.peak_by_cat[c]) continue;
        fprintf(f, "  %-18s %12s\n", prog_memcat_name((prog_memcat)c),
                human(buf, sizeof buf, sr->mem.peak_by_cat[c]));
        if (order) ledger_cat(sr, t->p, ts, c, top, order, f);
    }
    fprintf(f, "  %-18s %12s  (blocks beyond the requests)\n", "allocator_slack",
            human(buf, sizeof buf, sr->mem.peak_slack));
    fprintf(f, "  %-18s %12s  (peak reserved)\n", "reserved", human(buf, sizeof buf, sr->mem.peak_reserved));
    if (!order) fprintf(f, "  (out of memory listing the tensors)\n");
    free(order);
}
