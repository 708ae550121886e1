/* Megatron-FSDP (strategy megatron with use_megatron_fsdp; the mp_rt of
 * mp.h): Megatron-core's own fully sharded data parallel, as Megatron-LM
 * core 0.12 (megatron/core/distributed/custom_fsdp/, the NeMo 25.04
 * container's, 3cdfd613) and core 0.14-0.15 (fsdp/src/megatron_fsdp/,
 * Megatron-Bridge 25.09 and 25.11) run it. Over the dense data-parallel
 * group (dp x cp ranks) and the expert one:
 *
 * - Units are the transformer layers (fsdp_unit_modules); the embedding
 *   and the output layer are buckets of their own. optim_grads_params
 *   gathers a layer's parameters before its forward and again before its
 *   backward and frees them after each (reshard after forward, always);
 *   the embedding and output buckets are gathered once a step (the
 *   embedding's by the previous step's start_param_sync, the output's as
 *   the embedding's prefetch) and kept until the gradients are final.
 * - Prefetch is one bucket ahead among the layers: a layer's pre-forward
 *   hook issues its own gather (if not yet) and the next layer's, then the
 *   compute stream waits for its own (Work.wait(), the host runs on). The
 *   prefetch limit (core 0.12: twice the mean unit; 0.14: the double
 *   buffer's two units) leaves one layer ahead, and the embedding's
 *   prefetch stops at the output bucket, so layer 0's gather is exposed in
 *   every micro-batch, and in backward the last layer's. A gather is
 *   issued from the compute stream: it waits on the device for the compute
 *   issued before it (mp.h's MP_BOUND_ISSUED).
 * - Gradients are reduce-scattered every micro-batch (no_sync does not
 *   stop it: the gradients are sharded): after a layer's backward its
 *   param.grad is copied into an unsharded bucket, reduce-scattered and
 *   added into the persistent sharded main_grad, all on a side stream.
 *   At most two layers' reductions are in flight: the compute stream waits
 *   for the oldest before a third is issued (core 0.12's queue of two
 *   units; 0.14's double-buffered gradient pool alike).
 * - At the end of backward (finish_grad_sync) the bf16 shard is copied to
 *   fp32 for the optimizer (update_main_grads, 4 bytes a parameter until
 *   the step is done) and the embedding and output buckets are freed. The
 *   distributed optimizer steps the fp32 shard; nothing is gathered after
 *   the step.
 *
 * optim_grads is the same without sharded parameters (no gathers). The
 * loader refuses no_shard and optim (Megatron's DDP runs those: strategy
 * megatron without use_megatron_fsdp) and the combined 1F1B schedule
 * (moe_a2a_overlap), where a layer's forward and backward of two
 * micro-batches interleave. CPU activation offloading runs beside it
 * (mp_offload.c). Not modelled: Transformer Engine's fp8 weight caches,
 * HSDP (num_distributed_optimizer_instances), the ~0.1% bucket padding.
 */
#include "mp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A reduction in flight: its last op and the unsharded bucket it reads. */
typedef struct mf_rs { uint32_t op, bucket; } mf_rs;

typedef struct mf {
    uint32_t *ag;  /* [unit]: its gather not yet waited for (EM_NONE: none) */
    mf_rs rs[2];   /* the reductions in flight, oldest first (op EM_NONE: none) */
    bool gathers;   /* sharded parameters, over a group of more than one */
    uint32_t fp32;  /* the gradient shard in fp32 for the step */
} mf;

static spec_mfsdp_shard how(const plan *pl) { return pl->s->shard.mcore.fsdp_shard; }

static bool params_sharded(const plan *pl) { return how(pl) == SPEC_MFSDP_OPTIM_GRADS_PARAMS; }

/* The elements of the rank's gradient shard: the stage's dense and expert
 * parts, each over its group. */
static uint64_t shard_numel(const mp *m)
{
    return ss_div_ceil(m->part[0], m->gsize[0]) + ss_div_ceil(m->part[1], m->gsize[1]);
}

static st_kind mf_kind(const plan *pl) { return params_sharded(pl) ? ST_ZERO3 : ST_ZERO2; }

static void mf_at_rest(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                       uint64_t *optim)
{
    *param = params_sharded(pl) ? ss_div_ceil(part, n) : part;
    *optim = ss_div_ceil(part, n);
}

/* Unit u's gather, unless it is gathered or on its way. */
static void gather(mp *m, mp_unit *u, prog_phase ph)
{
    mf *c = m->rt_state;
    if (u->t_full != EM_NONE) return;
    c->ag[u - m->u] = mp_gather_issue(m, u, ph, m->g[G_DP], MP_BOUND_ISSUED, "fsdp");
}

/* The compute stream waits for unit u's gather, once. */
static void wait_gathered(mp *m, mp_unit *u, prog_phase ph)
{
    mf *c = m->rt_state;
    mp_gather_wait(m, c->ag[u - m->u], ph, "fsdp");
    c->ag[u - m->u] = EM_NONE;
}

/* The persistent sharded main_grad, and the first bucket's gather, which
 * the previous step's start_param_sync issued after its optimizer step. */
static void mf_setup(mp *m)
{
    mf *c = calloc(1, sizeof *c);
    uint32_t *ag = malloc((m->nu ? m->nu : 1) * sizeof *ag);
    if (!c || !ag) {
        free(c);
        free(ag);
        em_nomem(m->e);
        return;
    }
    for (uint32_t i = 0; i < m->nu; i++) ag[i] = EM_NONE;
    *c = (mf){.ag = ag, .rs = {{EM_NONE, EM_NONE}, {EM_NONE, EM_NONE}}, .fp32 = EM_NONE};
    c->gathers = params_sharded(m->pl) &&
                 (m->g[G_DP] != MP_NOGROUP || m->g[G_EDP] != MP_NOGROUP);
    m->rt_state = c;
    const plan *pl = m->pl;
    em_tensor(m->e, PROG_MEM_GRAD_SHARD, shard_numel(m) * pl->grad_elem, true, "main_grad.shard");
    if (c->gathers && m->nu && !mp_unit_is_layer(m, &m->u[0])) gather(m, &m->u[0], PROG_PH_FORWARD);
}

/* Gather the unit and prefetch the next bucket, then wait for the unit's:
 * in mb 0 the embedding's prefetch is the other non-layer buckets (the
 * output), a layer's the next layer. */
static void mf_pre_forward(mp *m, mp_unit *u, uint32_t mb)
{
    mf *c = m->rt_state;
    if (!c || !c->gathers) return;
    gather(m, u, PROG_PH_FORWARD);
    if (!mp_unit_is_layer(m, u)) {
        for (uint32_t i = 0; mb == 0 && i < m->nu; i++)
            if (!mp_unit_is_layer(m, &m->u[i])) gather(m, &m->u[i], PROG_PH_FORWARD);
    } else if (u + 1 < m->u + m->nu && mp_unit_is_layer(m, u + 1)) {
        gather(m, u + 1, PROG_PH_FORWARD);
    }
    wait_gathered(m, u, PROG_PH_FORWARD);
}

/* Backward runs the layers down: a layer gathers itself (if not yet) and
 * prefetches the one below. */
static void mf_pre_backward(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    mf *c = m->rt_state;
    if (!c || !c->gathers) return;
    gather(m, u, PROG_PH_BACKWARD);
    if (mp_unit_is_layer(m, u) && u > m->u && mp_unit_is_layer(m, u - 1)) gather(m, u - 1, PROG_PH_BACKWARD);
    wait_gathered(m, u, PROG_PH_BACKWARD);
}

/* A layer's parameters go after its forward and after its backward. */
static void mf_before_block(mp *m, mp_unit *u, uint32_t i, bool fwd)
{
    mf *c = m->rt_state;
    if (!c || !c->gathers || !mp_unit_is_layer(m, u) || u->t_full == EM_NONE) return;
    if (i != (fwd ? u->b1 - 1 : u->b0)) return;
    em_free_after_block(m->e, u->t_full, PROG_FREE_AT_ISSUE);
    u->t_full = EM_NONE;
}

/* An op on the reduce stream after dep, moving `bytes` through memory. */
static uint32_t side_copy(mp *m, ss_bytes bytes, uint32_t dep, const char *what,
                          const char *unit)
{
    em_begin(m->e, PROG_OP_COMPUTE, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp.%s.%s", what, unit);
    em_cost(m->e, em_op_host_ns(m->e), plan_mem_ns(m->pl, bytes), 0);
    em_dep(m->e, dep);
    return em_end(m->e);
}

/* The oldest reduction in flight done: the compute stream waits for it,
 * and the host, past the wait, drops its bucket (Megatron-FSDP frees on
 * the host, not when the side stream ends: what the allocator sees). */
static void pop_reduction(mp *m, const char *name)
{
    mf *c = m->rt_state;
    em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_BACKWARD, name);
    em_dep(m->e, c->rs[0].op);
    em_mem(m->e, c->rs[0].bucket, PROG_FREE_AT_ISSUE);
    em_end(m->e);
    c->rs[0] = c->rs[1];
    c->rs[1] = (mf_rs){EM_NONE, EM_NONE};
}

/* Every micro-batch, after the unit's backward: at most two reductions in
 * flight (a third waits for the oldest), then param.grad copied into an
 * unsharded bucket (and dropped), reduce-scattered, and added into
 * main_grad, on the reduce stream. */
static void mf_grads_ready(mp *m, mp_unit *u, uint32_t mb, uint32_t after)
{
    (void)mb;
    mf *c = m->rt_state;
    const plan *pl = m->pl;
    if (!c) return;
    const char *unit = pl->blocks[u->b0].group;
    if (c->rs[1].op != EM_NONE) pop_reduction(m, "fsdp.wait_reduce");
    uint64_t numel = u->dense + u->expert;
    ss_bytes full = numel * pl->reduce_elem;
    uint32_t bucket = em_tensor(m->e, PROG_MEM_COMM_BUFFER, full, false, "fsdp.grad_bucket.%s",
                                unit);
    em_begin(m->e, PROG_OP_COMPUTE, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp.copy_grad.%s", unit);
    em_cost(m->e, em_op_host_ns(m->e), plan_mem_ns(pl, numel * pl->grad_elem + full), 0);
    em_dep(m->e, after);
    em_mem(m->e, bucket, PROG_ALLOC_AT_ISSUE);
    em_mem(m->e, u->t_grad, PROG_FREE_AT_ISSUE);
    uint32_t last = em_end(m->e);
    u->t_grad = EM_NONE;
    ss_bytes shard = 0;
    char experts[SPEC_NAME_MAX + 16];
    snprintf(experts, sizeof experts, "%s.experts", unit);
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = m->g[k ? G_EDP : G_DP], size = m->gsize[k];
        shard += ss_div_ceil(n, size) * pl->reduce_elem; /* a group of one: the whole part */
        last = mp_coll(m, PROG_REDUCE, PROG_PH_BACKWARD, PROG_COLL_REDUCE_SCATTER, g,
                       mp_padded(n, size, pl->reduce_elem), last, "fsdp.reduce_scatter",
                       k ? experts : unit);
    }
    last = side_copy(m, 3 * shard, last, "accumulate_grad", unit);
    c->rs[c->rs[0].op == EM_NONE ? 0 : 1] = (mf_rs){last, bucket};
}

/* finish_grad_sync: the reductions done, the gradient shard in fp32 for
 * the optimizer (bf16 reductions only), the kept buckets freed. */
static void mf_end_backward(mp *m)
{
    mf *c = m->rt_state;
    const plan *pl = m->pl;
    if (!c) return;
    while (c->rs[0].op != EM_NONE) pop_reduction(m, "fsdp.finish_grad_sync");
    em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_BACKWARD, "fsdp.free_kept");
    for (uint32_t i = 0; i < m->nu; i++) {
        em_mem(m->e, m->u[i].t_full, PROG_FREE_AT_ISSUE);
        m->u[i].t_full = EM_NONE;
    }
    em_end(m->e);
    if (pl->grad_elem >= 4) return;
    uint64_t n = shard_numel(m);
    c->fp32 = em_tensor(m->e, PROG_MEM_GRAD_SHARD, n * 4, false, "main_grad.fp32");
    em_begin(m->e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "fsdp.update_main_grads");
    em_cost(m->e, em_op_host_ns(m->e), plan_mem_ns(pl, n * (pl->grad_elem + 4)), 0);
    em_mem(m->e, c->fp32, PROG_ALLOC_AT_ISSUE);
    em_end(m->e);
}

static void mf_after_step(mp *m, uint32_t opt)
{
    mf *c = m->rt_state;
    if (!c || c->fp32 == EM_NONE) return;
    em_marker_begin(m->e, PROG_COMPUTE, PROG_PH_OPTIMIZER, "fsdp.free_fp32_grads");
    em_dep(m->e, opt);
    em_mem(m->e, c->fp32, PROG_FREE_AT_ISSUE);
    em_end(m->e);
}

static void mf_fini(mp *m)
{
    mf *c = m->rt_state;
    if (c) free(c->ag);
    free(c);
    m->rt_state = NULL;
}

const mp_rt mp_rt_mfsdp = {
    .strategy = SPEC_MEGATRON, /* with use_megatron_fsdp: mp_rt_find */
    .state_kind = mf_kind,
    .at_rest = mf_at_rest,
    .setup = mf_setup,
    .pre_forward = mf_pre_forward,
    .pre_backward = mf_pre_backward,
    .before_block = mf_before_block,
    .grads_ready = mf_grads_ready,
    .end_backward = mf_end_backward,
    .after_step = mf_after_step,
    .fini = mf_fini,
};
