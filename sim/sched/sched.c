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

static ss_bytes ddp_init_peak(const plan *pl)
{
    ss_bytes p = pl->total_numel * pl->param_elem, coalesce = 250 * SS_MIB, buckets = 0;
    for (uint32_t b = 0; b < pl->nbuckets; b++) buckets += pl->buckets[b].numel * pl->grad_elem;
    ss_bytes extra = coalesce < p ? coalesce : p;
    return p + (extra > buckets ? extra : buckets);
}

/* Walk the units in wrap order: before unit u, the shards of the units
 * already wrapped and (full mode) the originals of the others exist; unit u
 * adds its padded flat copy and its shard. */
static ss_bytes fsdp_init_peak(const plan *pl, bool full)
{
    ss_bytes e = pl->param_elem, done = 0, peak = 0;
    ss_bytes rest = full ? pl->total_numel * e : 0;
    bool noshard = pl->s->shard.strategy == SPEC_NO_SHARD || pl->n == 1;
    /* Auto-wrapping wraps the children in model order, the root last. */
    for (uint32_t i = 1; i <= pl->nunits; i++) {
        const plan_unit *u = &pl->units[i % pl->nunits];
        if (!u->numel) continue;
        ss_bytes whole = full ? 0 : u->numel * e;
        ss_bytes shard = noshard ? u->numel * e : u->shard * e;
        ss_bytes now = rest + done + whole + u->padded * e + (noshard ? 0 : shard);
        if (now > peak) peak = now;
        if (full) rest -= u->numel * e;
        done += shard;
    }
    return peak > done ? peak : done;
}

int sched_init_peak(const plan *pl, uint32_t rank, ss_bytes *out, ss_err *err)
{
    (void)rank, (void)err;
    spec_strategy s = pl->s->shard.strategy;
    *out = s == SPEC_DDP || s == SPEC_ZERO1 ? ddp_init_peak(pl)
                                            : fsdp_init_peak(pl, pl->s->init_mode == SPEC_INIT_FULL);
    return SS_OK;
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
