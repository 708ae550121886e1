#include "sched.h"

#include <stdlib.h>

extern const sched_ops sched_ddp, sched_zero1, sched_fsdp1_full_shard,
    sched_fsdp1_shard_grad_op, sched_fsdp1_no_shard;

static const sched_ops *const registry[] = {
    &sched_ddp, &sched_zero1, &sched_fsdp1_shard_grad_op,
    &sched_fsdp1_full_shard, &sched_fsdp1_no_shard,
};

const sched_ops *sched_find(spec_strategy s)
{
    for (size_t i = 0; i < SS_ARRAY_LEN(registry); i++)
        if (registry[i]->strategy == s) return registry[i];
    return NULL;
}

st_kind sched_state_kind(spec_strategy s)
{
    switch (s) {
    case SPEC_DDP: return ST_ZERO0;
    case SPEC_ZERO1: return ST_ZERO1_ZRO;
    case SPEC_SHARD_GRAD_OP: return ST_FSDP_SHARD_GRAD_OP;
    case SPEC_FULL_SHARD: return ST_FSDP_FULL_SHARD;
    default: return ST_FSDP_NO_SHARD;
    }
}

int sched_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err)
{
    st_kind kind = sched_state_kind(pl->s->shard.strategy);
    bool fsdp = kind == ST_FSDP_FULL_SHARD || kind == ST_FSDP_SHARD_GRAD_OP ||
                kind == ST_FSDP_NO_SHARD;
    uint32_t count = fsdp ? pl->nunits : pl->nparams;
    uint64_t *numels = malloc((count ? count : 1) * sizeof *numels);
    if (!numels) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < count; i++)
        numels[i] = fsdp ? pl->units[i].numel : pl->params[i].numel;
    st_input in = {kind, pl->n, rank, numels, count, pl->s->prec, pl->s->opt,
                   pl->s->shard.use_orig_params};
    int rc = st_compute(&in, out, err);
    free(numels);
    return rc;
}

int sched_build(const plan *pl, prog **out, ss_err *err)
{
    const sched_ops *ops = sched_find(pl->s->shard.strategy);
    if (!ops)
        return ss_fail(err, SS_E_INTERNAL, NULL, "no scheduler for strategy %d",
                       (int)pl->s->shard.strategy);
    prog *p = NULL;
    int rc = prog_new(&p, pl->n, err);
    if (rc) return rc;
    uint32_t *ranks = malloc((size_t)pl->n * sizeof *ranks);
    if (!ranks) {
        prog_free(p);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (uint32_t r = 0; r < pl->n; r++) ranks[r] = r;
    uint32_t gid;
    rc = prog_group_add(p, ranks, pl->n, &gid, err);
    free(ranks);
    for (uint32_t r = 0; r < pl->n && !rc; r++) rc = ops->emit_rank(pl, p, r, err);
    if (rc) {
        prog_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}
