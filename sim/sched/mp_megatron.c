/* Megatron-core's DistributedDataParallel with the distributed optimizer
 * (strategy megatron; the mp_rt of mp.h). What it does, from megatron/core/
 * distributed/ (distributed_data_parallel.py, param_and_grad_buffer.py) and
 * optimizer/distrib_optimizer.py of NVIDIA/Megatron-LM (core 0.7-0.12):
 *
 * - Gradients accumulate into one persistent buffer per model chunk
 *   (main_grad, fp32 with grad_reduce_in_fp32), allocated when the model is
 *   wrapped and zeroed, never freed, between steps.
 * - The buffer is cut into buckets in backward order (parameters in
 *   reverse), closed at bucket_size parameters; bucket_size defaults to
 *   max(40M, 1M x dp) and is dropped (one bucket per chunk) without
 *   overlap_grad_reduce. Only the model's first chunk is bucketed: DDP
 *   turns bucketing off on every pipeline stage but the first ("data-
 *   parallel communication on these stages is not on the critical path")
 *   and training.py wraps every virtual chunk after a stage's first with
 *   disable_bucketing (model_chunk_idx > 0), so each of those chunks is
 *   one bucket.
 * - Gradients are reduced in the last micro-batch only (the pipeline
 *   schedules run the others under no_sync). With overlap_grad_reduce a
 *   bucket's collective starts as soon as its last gradient is computed,
 *   on its own stream; without it every bucket is reduced after the whole
 *   backward (finalize_model_grads).
 * - use_distributed_optimizer: reduce-scatter (each rank's shard of the
 *   bucket, in place in the buffer), fp32 master and Adam states of the
 *   shard only, then an all-gather of each bucket's updated bf16
 *   parameters. Without overlap_param_gather the gathers follow the step;
 *   with it the first bucket in forward order is dispatched by the
 *   optimizer's zero_grad at the start of the step (core 0.7-0.8,
 *   distrib_optimizer.py: "launch all-gather for first accessed bucket
 *   here before forward compute is initiated"), so a later pipeline stage
 *   gathers it while it waits for its first activation; each forward
 *   pre-hook then waits for its bucket and dispatches the next one in
 *   forward order, across chunks. Without the distributed optimizer:
 *   all-reduce, and every rank steps the whole chunk.
 * Expert parameters have their own buffers and groups (expert data
 * parallel); here a bucket carries the dense and the expert parameters of
 * its layers and reduces each over its own group.
 */
#include "mp.h"

#include <stdlib.h>

typedef struct mc {
    mp_bucket *b;
    uint32_t nb;
} mc;

static const struct spec_mcore *cfg(const mp *m) { return &m->pl->s->shard.mcore; }

static st_kind mc_kind(const plan *pl)
{
    return pl->s->shard.mcore.distributed_optimizer ? ST_ZERO1 : ST_ZERO0;
}

static void mc_at_rest(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                       uint64_t *optim)
{
    *param = part;
    *optim = pl->s->shard.mcore.distributed_optimizer ? ss_div_ceil(part, n) : part;
}

static uint32_t gather_bucket(mp *m, mp_bucket *b, prog_phase ph, uint32_t dep)
{
    uint32_t last = EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint32_t op = mp_coll(m, PROG_UNSHARD, ph, PROG_COLL_ALL_GATHER, m->g[k ? G_EDP : G_DP],
                              mp_padded(b->n[k], m->gsize[k], m->pl->param_elem), dep,
                              "dp.all_gather_params", k ? "bucket.experts" : "bucket");
        if (op != EM_NONE) last = op;
    }
    b->ag = last;
    return last;
}

/* Buckets of bucket_size parameters in the model's first chunk, one per
 * other chunk (one per chunk everywhere without overlap_grad_reduce; mp.h),
 * the persistent main_grad buffer, and under overlap_param_gather the
 * first bucket's gather, dispatched by zero_grad as the step begins. */
static void mc_setup(mp *m)
{
    mc *c = calloc(1, sizeof *c);
    if (!c) {
        em_nomem(m->e);
        return;
    }
    m->rt_state = c;
    mp_buckets(m, cfg(m)->overlap_grad_reduce ? cfg(m)->bucket_size : 0, true, &c->b, &c->nb);
    uint64_t grads = (m->part[0] + m->part[1]) * m->pl->grad_elem;
    em_tensor(m->e, PROG_MEM_GRAD, grads, true, "main_grad");
    if (c->nb && cfg(m)->distributed_optimizer && cfg(m)->overlap_param_gather)
        gather_bucket(m, &c->b[c->nb - 1], PROG_PH_FORWARD, EM_NONE);
}

static void reduce_bucket(mp *m, const mp_bucket *b, uint32_t after)
{
    mp_reduce_bucket(m, b, cfg(m)->distributed_optimizer, after, "dp");
}

static bool last_mb(const mp *m, uint32_t mb) { return mb + 1 == m->pl->s->grad_accum; }

/* overlap_grad_reduce: a bucket goes once its lowest unit's gradients are
 * done (backward runs down the units). */
static void mc_grads_ready(mp *m, mp_unit *u, uint32_t mb, uint32_t after)
{
    mc *c = m->rt_state;
    if (!c || !cfg(m)->overlap_grad_reduce || !last_mb(m, mb)) return;
    const mp_bucket *b = &c->b[u->bucket];
    if ((uint32_t)(u - m->u) == b->u0) reduce_bucket(m, b, after);
}

static void mc_end_backward(mp *m)
{
    mc *c = m->rt_state;
    if (!c || cfg(m)->overlap_grad_reduce) return;
    uint32_t after = mp_last_compute(m);
    for (uint32_t i = 0; i < c->nb; i++) reduce_bucket(m, &c->b[i], after);
}

/* overlap_param_gather: the next step's gathers, dispatched by the forward
 * pre-hooks of the first micro-batch: bucket b's (if not yet) and the next
 * one's in forward order, then the compute waits for b's. */
static void mc_pre_forward(mp *m, mp_unit *u, uint32_t mb)
{
    mc *c = m->rt_state;
    if (!c || !cfg(m)->distributed_optimizer || !cfg(m)->overlap_param_gather || mb) return;
    mp_bucket *b = &c->b[u->bucket];
    if ((uint32_t)(u - m->u) != b->u0) return;
    if (b->ag == EM_NONE) gather_bucket(m, b, PROG_PH_FORWARD, EM_NONE);
    /* Buckets were made in backward order: the next in forward is b - 1. */
    if (u->bucket > 0 && b[-1].ag == EM_NONE) gather_bucket(m, b - 1, PROG_PH_FORWARD, EM_NONE);
    if (b->ag == EM_NONE) return; /* one rank: nothing gathered */
    em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_FORWARD, "dp.wait_params");
    em_dep(m->e, b->ag);
    em_end(m->e);
}

/* Without overlap_param_gather, the updated parameters are gathered right
 * after the step, bucket by bucket. */
static void mc_after_step(mp *m, uint32_t opt)
{
    mc *c = m->rt_state;
    if (!c || !cfg(m)->distributed_optimizer || cfg(m)->overlap_param_gather) return;
    for (uint32_t i = 0; i < c->nb; i++) gather_bucket(m, &c->b[i], PROG_PH_OPTIMIZER, opt);
}

static void mc_fini(mp *m)
{
    mc *c = m->rt_state;
    if (c) free(c->b);
    free(c);
    m->rt_state = NULL;
}

const mp_rt mp_rt_megatron = {
    .strategy = SPEC_MEGATRON,
    .state_kind = mc_kind,
    .at_rest = mc_at_rest,
    .persistent_grads = true,
    .setup = mc_setup,
    .pre_forward = mc_pre_forward,
    .grads_ready = mc_grads_ready,
    .end_backward = mc_end_backward,
    .after_step = mc_after_step,
    .fini = mc_fini,
};
