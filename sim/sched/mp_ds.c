/* DeepSpeed ZeRO inside a layout (the mp_rt of strategy deepspeed with tp,
 * cp, pp or ep; mp.h): Megatron-DeepSpeed's ZeRO-1 with TP and PP, ZeRO-2
 * and ZeRO-3 with TP. What runs, from deepspeed/runtime/zero/
 * stage_1_and_2.py, stage3.py and runtime/pipe/engine.py:
 *
 * - Stages 1-2 keep whole bit16 parameters; the fp32 master weights and
 *   optimizer states are partitioned over the dense (and expert) data-
 *   parallel group. Gradients go through the ipg buckets
 *   (reduce_bucket_size elements), each reduce-scattered into the ranks'
 *   partitions as soon as it fills in backward, on the reduction stream
 *   under overlap_comm and on the compute stream's critical path without.
 * - Stage 1 keeps whole gradients and reduces them once, in the last
 *   micro-batch; the pipeline engine reduces after the whole schedule (its
 *   ReduceGrads instruction). Stage 2 reduces in every micro-batch and
 *   keeps only a bit16 gradient partition: each gradient is freed once its
 *   bucket is reduced.
 * - After the step stages 1-2 all-gather the updated parameters in
 *   allgather_bucket_size pieces.
 * - Stage 3 partitions the parameters too: each unit is gathered before
 *   its forward and its backward and released after them (the host at most
 *   two units ahead), gradients reduce-scattered per bucket every micro-
 *   batch into persistent partitions; no gather after the step.
 * The pipeline engine refuses stages 2 and 3 ("ZeRO-2 and ZeRO-3 are
 * incompatible with pipeline parallelism"), and so does the loader. Not
 * modelled inside a layout: offload, ZeRO++, stage 3's prefetch bucket, live
 * parameter and reuse-distance limits, persistence threshold and the fp32
 * gradient copy the step makes.
 */
#include "mp.h"

#include <stdlib.h>

typedef struct dsl {
    mp_bucket *b;
    uint32_t nb;
    uint32_t last; /* the last reduction, EM_NONE before the first */
} dsl;

static const spec_deepspeed *cfg(const mp *m) { return &m->pl->s->ds; }

static st_kind dsl_kind(const plan *pl)
{
    static const st_kind kinds[] = {ST_DS_ZERO1, ST_DS_ZERO1, ST_DS_ZERO2, ST_DS_ZERO3};
    return kinds[pl->s->ds.stage];
}

static void dsl_at_rest(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                        uint64_t *optim)
{
    *optim = ss_div_ceil(part, n);
    *param = pl->s->ds.stage == 3 ? *optim : part;
}

/* Buckets of reduce_bucket_size elements; stages 2-3 keep a persistent
 * gradient partition. */
static void dsl_setup(mp *m)
{
    dsl *d = calloc(1, sizeof *d);
    if (!d) {
        em_nomem(m->e);
        return;
    }
    d->last = EM_NONE;
    m->rt_state = d;
    mp_buckets(m, cfg(m)->reduce_bucket, false, &d->b, &d->nb);
    if (cfg(m)->stage < 2) return;
    ss_bytes part = (ss_div_ceil(m->part[0], m->gsize[0]) +
                     (m->part[1] ? ss_div_ceil(m->part[1], m->gsize[1]) : 0)) * m->pl->grad_elem;
    em_tensor(m->e, PROG_MEM_GRAD_SHARD, part, true, "ds.grad_partition");
}

/* Bucket b reduced after `after`: on its own stream under overlap_comm,
 * else with the compute stream waiting for it; all-reduced or
 * reduce-scattered, through a flattened copy (a cat and a pre-divide,
 * dropped once the reduction is issued), the compute stream first waiting
 * for the reductions before, as ds_reduction_of says. The pipeline
 * engine's BF16_Optimizer (ZeRO "stage 0" with bf16, modelled as stage 1)
 * all-reduces a flattened copy as stage 1 does by default
 * (_bf16_reduce_grads' buffered_allreduce_fallback,
 * deepspeed/runtime/pipe/engine.py at v0.7.0). Stages 2-3 then free the
 * gradients of its units. */
static void reduce(mp *m, const mp_bucket *b, uint32_t after)
{
    dsl *d = m->rt_state;
    const spec_deepspeed *c = cfg(m);
    ds_reduction how = ds_reduction_of(c);
    if (how.waits && d->last != EM_NONE) {
        em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_BACKWARD, "ds.wait_reduction_stream");
        em_dep(m->e, d->last);
        em_end(m->e);
    }
    /* the copy is made on the stream the runtime reduces on: the reduction
     * stream under overlap_comm, else the compute stream */
    prog_stream st = c->overlap_comm ? PROG_REDUCE : PROG_COMPUTE;
    uint32_t flat = EM_NONE;
    if (how.flat) {
        ss_bytes bytes = (b->n[0] + b->n[1]) * m->pl->reduce_elem;
        flat = em_tensor(m->e, PROG_MEM_COMM_BUFFER, bytes, false, "ds.bucket_flat");
        em_begin(m->e, PROG_OP_COMPUTE, st, PROG_PH_BACKWARD, "ds.flatten_bucket");
        em_cost(m->e, em_op_host_ns(m->e), plan_mem_ns(m->pl, 4 * bytes), 0);
        em_dep(m->e, after);
        em_mem(m->e, flat, PROG_ALLOC_AT_ISSUE);
        after = em_end(m->e);
    }
    uint32_t before = prog_nops(m->e->p, m->e->rank);
    mp_reduce_bucket(m, b, !how.all_reduce, after, "ds");
    uint32_t now = prog_nops(m->e->p, m->e->rank);
    uint32_t red = now > before ? now - 1 : after; /* one rank: nothing reduced */
    if (now > before) d->last = red;
    if (flat != EM_NONE) {
        em_marker_begin(m->e, st, PROG_PH_BACKWARD, "ds.drop_bucket_flat");
        em_dep(m->e, red);
        em_mem(m->e, flat, PROG_FREE_AT_ISSUE);
        em_end(m->e);
    }
    if (!cfg(m)->overlap_comm && now > before) {
        em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_BACKWARD, "ds.wait_bucket");
        em_dep(m->e, red);
        em_end(m->e);
    }
    if (cfg(m)->stage < 2) return;
    em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "ds.free_grads");
    em_dep(m->e, red);
    for (uint32_t k = b->u0; k < b->u1; k++) {
        em_mem(m->e, m->u[k].t_grad, PROG_FREE_AT_END);
        m->u[k].t_grad = EM_NONE;
    }
    em_end(m->e);
}

static bool pipeline(const mp *m) { return m->par->pp > 1; }

/* A micro-batch's backward ends by synchronizing the device (DeepSpeed's
 * epilogue does before it clears the reduced gradients; decision 47):
 * without it the host would allocate the next micro-batch's gradients
 * before the device has freed these. */
static void dsl_grads_ready(mp *m, mp_unit *u, uint32_t mb, uint32_t after)
{
    dsl *d = m->rt_state;
    bool last = mb + 1 == m->pl->s->grad_accum;
    if (!d) return;
    const mp_bucket *b = &d->b[u->bucket];
    bool reduces = cfg(m)->stage > 1 || (last && !pipeline(m));
    if (reduces && (uint32_t)(u - m->u) == b->u0) reduce(m, b, after);
    if (u != m->u || pipeline(m)) return; /* the pipeline's p2p syncs bound the host */
    em_begin(m->e, PROG_OP_HOST, PROG_HOST, PROG_PH_BACKWARD, "ds.synchronize");
    em_cost(m->e, 0, 0, 0);
    em_dep(m->e, prog_nops(m->e->p, m->e->rank) - 1);
    em_end(m->e);
}

/* The pipeline engine's ReduceGrads: stage 1 after the whole schedule. */
static void dsl_end_backward(mp *m)
{
    dsl *d = m->rt_state;
    if (!d || cfg(m)->stage != 1 || !pipeline(m)) return;
    uint32_t after = mp_last_compute(m);
    for (uint32_t i = 0; i < d->nb; i++) reduce(m, &d->b[i], after);
}

/* Stages 1-2: the updated parameters in allgather_bucket_size pieces of
 * each group's padded flat buffer. */
static void dsl_after_step(mp *m, uint32_t opt)
{
    if (cfg(m)->stage == 3) return;
    uint64_t chunk = cfg(m)->allgather_bucket;
    for (int k = 0; k < 2; k++) {
        uint64_t total = mp_padded(m->part[k], m->gsize[k], 1);
        for (uint64_t at = 0; at < total; at += chunk) {
            uint64_t n = total - at < chunk ? total - at : chunk;
            mp_coll(m, PROG_UNSHARD, PROG_PH_OPTIMIZER, PROG_COLL_ALL_GATHER,
                    m->g[k ? G_EDP : G_DP], n * m->pl->param_elem, opt, "ds.all_gather_params",
                    k ? "experts" : "dense");
        }
    }
}

/* Stage 3: a unit's partitions gathered before it runs, the host at most
 * two units ahead (the fetch waits for the previous unit's compute). */
static void gather(mp *m, mp_unit *u, prog_phase ph)
{
    if (cfg(m)->stage == 3) mp_gather_unit(m, u, ph, m->g[G_DP], MP_BOUND_HOST, "ds");
}

static void dsl_pre_forward(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    gather(m, u, PROG_PH_FORWARD);
}

static void dsl_pre_backward(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    gather(m, u, PROG_PH_BACKWARD);
}

static void dsl_before_block(mp *m, mp_unit *u, uint32_t i, bool fwd)
{
    if (i != (fwd ? u->b1 - 1 : u->b0) || u->t_full == EM_NONE) return;
    em_free_after_block(m->e, u->t_full, PROG_FREE_AT_END);
    u->t_full = EM_NONE;
}

static void dsl_fini(mp *m)
{
    dsl *d = m->rt_state;
    if (d) free(d->b);
    free(d);
    m->rt_state = NULL;
}

const mp_rt mp_rt_deepspeed = {
    .strategy = SPEC_DEEPSPEED,
    .state_kind = dsl_kind,
    .at_rest = dsl_at_rest,
    .setup = dsl_setup,
    .pre_forward = dsl_pre_forward,
    .pre_backward = dsl_pre_backward,
    .before_block = dsl_before_block,
    .grads_ready = dsl_grads_ready,
    .end_backward = dsl_end_backward,
    .after_step = dsl_after_step,
    .fini = dsl_fini,
};
