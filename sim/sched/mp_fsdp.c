/* FSDP inside a layout (the mp_rt of fsdp2, shard_grad_op, hybrid_shard and
 * hybrid_shard_zero2 with tp, cp, pp or ep; mp.h). full_shard stays the
 * canonical ZeRO-3 of mp_zero.c, which already runs FSDP1's FULL_SHARD
 * with limit_all_gathers.
 *
 * Over the dense data-parallel group (dp x cp ranks: torchtitan's
 * dp_shard_cp mesh dimension), each unit (a transformer layer, the
 * embedding, the output) is one FSDP unit:
 * - forward: all-gather the unit's parameters before its first block;
 *   resharded after its last block unless it is kept (FSDP1
 *   SHARD_GRAD_OP; FSDP2 reshard_after_forward false, or the root module,
 *   which FSDP2 never reshards after forward: here every unit that is not a
 *   transformer layer); FSDP skips the all-gather of an unsharded unit;
 * - backward: all-gather again unless kept, free after its first block,
 *   except where FSDP keeps it for the next micro-batch (FSDP1's
 *   SHARD_GRAD_OP under no_sync, FSDP2 under a pipeline schedule: see
 *   keep_after_backward), so that one gather serves the whole step;
 * - gradients accumulate unsharded over micro-batches (the pipeline
 *   schedules' no_sync / set_requires_gradient_sync(False)) and are
 *   reduce-scattered in the last one; HSDP then all-reduces the shard over
 *   the replicate group.
 * FSDP1 limits the host to two units unsharded (limit_all_gathers); FSDP2
 * bounds them without a host wait: an all-gather waits on the device for
 * the previous unit's compute to start, and a resharded unit's memory is
 * freed in issue order (the post-forward and post-backward hooks run on
 * the host right after the unit's kernels are issued; the caching
 * allocator reuses it on the same stream at once). Expert parameters shard over the expert data-parallel group,
 * without a replicate level. States at rest follow canonical ZeRO-3 over
 * the shard group (sharded parameters, gradients and optimizer: FSDP
 * reshards after backward), one flat buffer per group, without FSDP2's
 * per-parameter padding.
 */
#include "mp.h"

#include <string.h>

static bool fsdp2(const mp *m) { return m->pl->s->shard.strategy == SPEC_FSDP2; }

static st_kind fs_kind(const plan *pl)
{
    (void)pl;
    return ST_ZERO3;
}

static void fs_at_rest(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                       uint64_t *optim)
{
    (void)pl;
    *param = *optim = ss_div_ceil(part, n);
}

/* Is unit u kept unsharded between its forward and its backward? */
static bool kept(const mp *m, const mp_unit *u)
{
    const spec_sharding *sh = &m->pl->s->shard;
    const char *name = m->pl->blocks[u->b0].group;
    switch (sh->strategy) {
    case SPEC_SHARD_GRAD_OP:
    case SPEC_HYBRID_SHARD_ZERO2: return true;
    case SPEC_FSDP2:
        if (!mp_unit_is_layer(m, u)) return true; /* the root module */
        for (uint32_t i = 0; i < sh->nraf_units; i++)
            if (!strcmp(sh->raf_units[i].unit, name)) return !sh->raf_units[i].reshard;
        return sh->reshard_after_forward == 0;
    default: return false;
    }
}

static uint32_t dense_group(const mp *m)
{
    return m->g[G_SHARD] != MP_NOGROUP ? m->g[G_SHARD] : m->g[G_DP];
}

static void gather(mp *m, mp_unit *u, prog_phase ph)
{
    mp_gather_unit(m, u, ph, dense_group(m), fsdp2(m) ? MP_BOUND_DEVICE : MP_BOUND_HOST, "fsdp");
}

static void fs_pre_forward(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    if (u->t_full == EM_NONE) gather(m, u, PROG_PH_FORWARD);
}

static void fs_pre_backward(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    if (u->t_full == EM_NONE) gather(m, u, PROG_PH_BACKWARD);
}

/* Does the unit stay unsharded after this backward? Gradients sync in the
 * last micro-batch only, and until then:
 * - FSDP1 frees in backward only under a strategy that reshards after
 *   forward (torch/distributed/fsdp/_runtime_utils.py,
 *   _should_free_in_backward: "state._sync_gradients or strategy in
 *   RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES", i.e. FULL_SHARD and
 *   HYBRID_SHARD), so SHARD_GRAD_OP and _HYBRID_SHARD_ZERO2 keep it;
 * - FSDP2 reshards after every backward, except under a pipeline schedule:
 *   PyTorch's PipelineStage.backward_maybe_with_nosync sets
 *   set_reshard_after_backward(False) with set_requires_gradient_sync(False)
 *   on every backward and runs the post-backward once after the last.
 * The next micro-batch's forward then finds the unit gathered. */
static bool keep_after_backward(const mp *m, const mp_unit *u)
{
    if (u->backwards >= m->pl->s->grad_accum) return false; /* the last */
    switch (m->pl->s->shard.strategy) {
    case SPEC_SHARD_GRAD_OP:
    case SPEC_HYBRID_SHARD_ZERO2: return true;
    case SPEC_FSDP2: return m->par->pp > 1;
    default: return false;
    }
}

/* Reshard after the unit's last block: after forward unless kept, after
 * backward unless keep_after_backward. */
static void fs_before_block(mp *m, mp_unit *u, uint32_t i, bool fwd)
{
    if (i != (fwd ? u->b1 - 1 : u->b0)) return;
    if (!fwd) u->backwards++;
    if (u->t_full == EM_NONE || (fwd ? kept(m, u) : keep_after_backward(m, u))) return;
    /* FSDP2 frees in issue order on the streams that reuse the memory (the
     * caching allocator's same-stream reuse: no host wait needed); FSDP1
     * frees when the block ends, its host held back by the rate limiter. */
    em_free_after_block(m->e, u->t_full, fsdp2(m) ? PROG_FREE_AT_ISSUE : PROG_FREE_AT_END);
    u->t_full = EM_NONE;
}

static void fs_reduce(mp *m, mp_unit *u, uint32_t mb, uint32_t after)
{
    const plan *pl = m->pl;
    if (mb + 1 != pl->s->grad_accum) return;
    ss_bytes shard[2] = {ss_div_ceil(u->dense, pl->shard_n) * pl->grad_elem,
                         ss_div_ceil(u->expert, pl->expert_dp) * pl->grad_elem};
    u->t_shard = em_tensor(m->e, PROG_MEM_GRAD_SHARD, shard[0] + shard[1], false,
                           "grad_shard.%s", pl->blocks[u->b0].group);
    uint32_t last = EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = k ? m->g[G_EDP] : dense_group(m), size = k ? pl->expert_dp : pl->shard_n;
        if (!n || g == MP_NOGROUP) continue;
        em_begin(m->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp.reduce_scatter.%s%s",
                 pl->blocks[u->b0].group, k ? ".experts" : "");
        em_coll(m->e, PROG_COLL_REDUCE_SCATTER, mp_padded(n, size, pl->reduce_elem));
        em_group(m->e, g);
        em_dep(m->e, after);
        if (last == EM_NONE) em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
        last = em_end(m->e);
        if (!k && m->g[G_REPL] != MP_NOGROUP) /* HSDP: the shard over the replicas */
            last = mp_coll(m, PROG_REDUCE, PROG_PH_BACKWARD, PROG_COLL_ALL_REDUCE, m->g[G_REPL],
                           ss_div_ceil(n, size) * pl->reduce_elem, last, "fsdp.all_reduce",
                           pl->blocks[u->b0].group);
    }
    em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp.free_grad");
    if (last == EM_NONE) em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
    em_dep(m->e, last == EM_NONE ? after : last);
    em_mem(m->e, u->t_grad, PROG_FREE_AT_END);
    em_end(m->e);
    u->t_grad = EM_NONE;
}

const mp_rt mp_rt_fsdp = {
    .strategy = SPEC_FSDP2, /* and shard_grad_op, hybrid_shard(_zero2): mp_rt_find */
    .state_kind = fs_kind,
    .at_rest = fs_at_rest,
    .recv_on_stream = true,
    .pre_forward = fs_pre_forward,
    .pre_backward = fs_pre_backward,
    .before_block = fs_before_block,
    .grads_ready = fs_reduce,
};
