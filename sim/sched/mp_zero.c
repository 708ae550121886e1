/* Canonical ZeRO over a layout's data-parallel groups (the mp_rt of ddp,
 * zero1, shard_grad_op and full_shard inside a layout; mp.h):
 *   ddp, no_shard: all-reduce of each unit's gradients in the last micro-batch's
 *        backward;
 *   zero1 / shard_grad_op: reduce-scatter there, all-gather of the updated
 *        parameters after the optimizer, without overlap with the next step;
 *   full_shard: the same reduce-scatter, and an all-gather before each
 *        unit's forward and backward of every micro-batch, at most one unit
 *        ahead of the compute stream (FSDP's limit_all_gathers).
 * Gradients accumulate unsharded over the micro-batches and are reduced
 * once (the pipelines' no_sync). States follow canonical ZeRO (states.h)
 * over each group's flat buffer. */
#include "mp.h"

/* FSDP's NO_SHARD reduces as DDP does. */
static bool all_reduces(spec_strategy s) { return s == SPEC_DDP || s == SPEC_NO_SHARD; }

static st_kind zero_kind(const plan *pl)
{
    switch (pl->s->shard.strategy) {
    case SPEC_DDP:
    case SPEC_NO_SHARD: return ST_ZERO0;
    case SPEC_ZERO1: return ST_ZERO1;
    case SPEC_SHARD_GRAD_OP: return ST_ZERO2;
    default: return ST_ZERO3;
    }
}

static void zero_at_rest(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                         uint64_t *optim)
{
    spec_strategy s = pl->s->shard.strategy;
    uint64_t shard = ss_div_ceil(part, n);
    *param = s == SPEC_FULL_SHARD ? shard : part;
    *optim = all_reduces(s) ? part : shard;
}

/* FSDP's limit_all_gathers: the host at most two units ahead. */
static void unshard(mp *m, mp_unit *u, prog_phase ph)
{
    if (m->pl->s->shard.strategy == SPEC_FULL_SHARD)
        mp_gather_unit(m, u, ph, m->g[G_DP], MP_BOUND_HOST, "zero3");
}

static void unshard_fwd(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    unshard(m, u, PROG_PH_FORWARD);
}

static void unshard_bwd(mp *m, mp_unit *u, uint32_t mb)
{
    (void)mb;
    unshard(m, u, PROG_PH_BACKWARD);
}

/* The gathered parameters go after the unit's last block. */
static void release(mp *m, mp_unit *u, uint32_t i, bool fwd)
{
    uint32_t last = fwd ? u->b1 - 1 : u->b0;
    if (i == last && u->t_full != EM_NONE) {
        em_free_after_block(m->e, u->t_full, PROG_FREE_AT_END);
        u->t_full = EM_NONE;
    }
}

static void reduce(mp *m, mp_unit *u, uint32_t mb, uint32_t after)
{
    const plan *pl = m->pl;
    if (mb + 1 != pl->s->grad_accum) return;
    bool ddp = all_reduces(pl->s->shard.strategy);
    bool shards = pl->s->shard.strategy == SPEC_SHARD_GRAD_OP ||
                  pl->s->shard.strategy == SPEC_FULL_SHARD;
    if (shards)
        u->t_shard = em_tensor(m->e, PROG_MEM_GRAD_SHARD,
                               (ss_div_ceil(u->dense, pl->dense_dp) +
                                ss_div_ceil(u->expert, pl->expert_dp)) * pl->grad_elem,
                               false, "grad_shard.%s", pl->blocks[u->b0].group);
    uint32_t last = EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = m->g[k ? G_EDP : G_DP], size = m->gsize[k];
        if (!n || g == MP_NOGROUP) continue;
        em_begin(m->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "dp.%s.%s%s",
                 ddp ? "all_reduce" : "reduce_scatter", pl->blocks[u->b0].group,
                 k ? ".experts" : "");
        em_coll(m->e, ddp ? PROG_COLL_ALL_REDUCE : PROG_COLL_REDUCE_SCATTER,
                ddp ? n * pl->reduce_elem : mp_padded(n, size, pl->reduce_elem));
        em_group(m->e, g);
        em_dep(m->e, after);
        if (last == EM_NONE) em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
        last = em_end(m->e);
    }
    if (last == EM_NONE && u->t_shard != EM_NONE) { /* one rank: the shard is the gradient */
        em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "dp.grad_shard");
        em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
        em_dep(m->e, after);
        last = em_end(m->e);
    }
    /* ZeRO-2/3 keep the reduced shard only. */
    if (shards) {
        em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "dp.free_grad");
        em_dep(m->e, last);
        em_mem(m->e, u->t_grad, PROG_FREE_AT_END);
        em_end(m->e);
        u->t_grad = EM_NONE;
    }
}

static void gather_update(mp *m, uint32_t opt)
{
    spec_strategy s = m->pl->s->shard.strategy;
    if (s != SPEC_ZERO1 && s != SPEC_SHARD_GRAD_OP) return;
    for (int k = 0; k < 2; k++)
        mp_coll(m, PROG_UNSHARD, PROG_PH_OPTIMIZER, PROG_COLL_ALL_GATHER, m->g[k ? G_EDP : G_DP],
                mp_padded(m->part[k], m->gsize[k], m->pl->param_elem), opt,
                "dp.all_gather_params", k ? "experts" : "dense");
}

const mp_rt mp_rt_zero = {
    .strategy = SPEC_DDP, /* and zero1, shard_grad_op, full_shard: mp_rt_find */
    .state_kind = zero_kind,
    .at_rest = zero_at_rest,
    .pre_forward = unshard_fwd,
    .pre_backward = unshard_bwd,
    .before_block = release,
    .grads_ready = reduce,
    .after_step = gather_update,
};
