#include "sched.h"

#include <stdlib.h>

extern const sched_ops sched_ddp, sched_zero1, sched_fsdp1_full_shard,
    sched_fsdp1_shard_grad_op, sched_fsdp1_no_shard, sched_fsdp1_hybrid_shard,
    sched_fsdp1_hybrid_shard_zero2, sched_fsdp2, sched_deepspeed;

static const sched_ops *const registry[] = {
    &sched_ddp, &sched_zero1, &sched_fsdp1_shard_grad_op,
    &sched_fsdp1_full_shard, &sched_fsdp1_no_shard, &sched_fsdp1_hybrid_shard,
    &sched_fsdp1_hybrid_shard_zero2, &sched_fsdp2, &sched_deepspeed,
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
    case SPEC_SHARD_GRAD_OP:
    case SPEC_HYBRID_SHARD_ZERO2: return ST_FSDP_SHARD_GRAD_OP;
    case SPEC_FULL_SHARD:
    case SPEC_HYBRID_SHARD: return ST_FSDP_FULL_SHARD;
    case SPEC_DEEPSPEED: return ST_DS_ZERO2; /* the stage is the scenario's: ds_states */
    case SPEC_FSDP2: return ST_FSDP2;
    default: return ST_FSDP_NO_SHARD;
    }
}

int sched_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err)
{
    if (pl->layout) return mp_states(pl, rank, out, err);
    if (pl->s->shard.strategy == SPEC_DEEPSPEED) return ds_states(pl, rank, out, err);
    st_kind kind = sched_state_kind(pl->s->shard.strategy);
    bool fsdp = kind == ST_FSDP_FULL_SHARD || kind == ST_FSDP_SHARD_GRAD_OP ||
                kind == ST_FSDP_NO_SHARD;
    bool fsdp2 = kind == ST_FSDP2; /* per parameter, with its rows */
    uint32_t count = fsdp ? pl->nunits : pl->nparams;
    uint64_t *numels = malloc((count ? count : 1) * sizeof *numels);
    uint64_t *rows = fsdp2 ? malloc((count ? count : 1) * sizeof *rows) : NULL;
    if (!numels || (fsdp2 && !rows)) {
        free(numels);
        free(rows);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        numels[i] = fsdp ? pl->units[i].numel : pl->params[i].numel;
        if (rows) rows[i] = pl->params[i].rows;
    }
    /* HSDP ranks hold their shard group's shards: the state model sees the group. */
    bool grouped = (fsdp || fsdp2) && pl->shard_n != pl->n;
    st_input in = {.kind = kind, .n = grouped ? pl->shard_n : pl->n,
                   .rank = grouped ? rank % pl->shard_n : rank, .numels = numels,
                   .count = count, .prec = pl->s->prec, .opt = pl->s->opt,
                   .use_orig_params = pl->s->shard.use_orig_params, .rows = rows,
                   .off_params = pl->s->off.params != SPEC_OFF_NONE};
    int rc = st_compute(&in, out, err);
    free(numels);
    free(rows);
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
 * adds its padded flat copy (FSDP1; FSDP2 has none) and its shard. */
static ss_bytes fsdp_init_peak(const plan *pl, bool full)
{
    ss_bytes e = pl->param_elem, done = 0, peak = 0;
    ss_bytes rest = full ? pl->total_numel * e : 0;
    bool noshard = pl->s->shard.strategy == SPEC_NO_SHARD ||
                   (pl->shard_n == 1 && pl->s->shard.strategy != SPEC_FSDP2);
    /* Auto-wrapping wraps the children in model order, the root last. */
    for (uint32_t i = 1; i <= pl->nunits; i++) {
        const plan_unit *u = &pl->units[i % pl->nunits];
        if (!u->numel) continue;
        ss_bytes whole = full ? 0 : u->numel * e;
        ss_bytes shard = noshard ? u->numel * e : u->shard * e;
        /* fully_shard copies each parameter's own padded rows out of it: no
         * padded copy of the whole unit, as FSDP1's flatten makes. */
        ss_bytes flat = pl->s->shard.strategy == SPEC_FSDP2 ? 0 : u->padded * e;
        ss_bytes now = rest + done + whole + flat + (noshard ? 0 : shard);
        if (now > peak) peak = now;
        if (full) rest -= u->numel * e;
        done += shard;
    }
    return peak > done ? peak : done;
}

int sched_init_peak(const plan *pl, uint32_t rank, ss_bytes *out, ss_err *err)
{
    spec_strategy s = pl->s->shard.strategy;
    if (pl->layout) { /* built per stage on the meta device: the sharded parameters */
        st_bytes st;
        int rc = mp_states(pl, rank, &st, err);
        *out = st.param.physical;
        return rc;
    }
    if (s == SPEC_DEEPSPEED) return ds_init_peak(pl, rank, out, err);
    *out = s == SPEC_DDP || s == SPEC_ZERO1 ? ddp_init_peak(pl)
                                            : fsdp_init_peak(pl, pl->s->init_mode == SPEC_INIT_FULL);
    return SS_OK;
}

/* HSDP: shard groups of consecutive ranks (ids 1 .. R), then replicate
 * groups of the ranks with the same place in their shard group (R + 1 ..
 * R + S), the ids sched_gid_shard / sched_gid_replicate name. */
static int add_hybrid_groups(const plan *pl, prog *p, uint32_t *ranks, ss_err *err)
{
    uint32_t S = pl->shard_n, R = pl->n / S, gid;
    if (S == pl->n) return SS_OK;
    int rc = SS_OK;
    for (uint32_t g = 0; g < R && !rc; g++) {
        for (uint32_t i = 0; i < S; i++) ranks[i] = g * S + i;
        rc = prog_group_add(p, ranks, S, &gid, err);
    }
    for (uint32_t j = 0; j < S && !rc; j++) {
        for (uint32_t g = 0; g < R; g++) ranks[g] = g * S + j;
        rc = prog_group_add(p, ranks, R, &gid, err);
    }
    return rc;
}

static bool has_post_forward_groups(const plan *pl);

/* Rank 0's group of the first k ranks, the other groups of k consecutive
 * ranks its copies. */
static int add_folded_block(prog *p, uint32_t *ranks, uint32_t n, uint32_t k, ss_err *err)
{
    uint32_t zero = 0, gid;
    for (uint32_t r = 0; r < n; r++) ranks[r] = r;
    int rc = prog_group_add_net(p, &zero, 1, ranks, k, &gid, err);
    return rc || k == n ? rc : prog_group_set_copies(p, gid, ranks + k, n / k - 1, err);
}

/* Folded (one rank simulated): the world group; under HSDP rank 0's
 * shard group (id 1) and replicate group (id 2); then FSDP2's
 * post-forward group (sched_gid_post_forward): each with the other
 * groups of its kind as copies. ranks has room for n. */
static int add_folded_groups(const plan *pl, prog *p, uint32_t *ranks, ss_err *err)
{
    uint32_t S = pl->shard_n, R = pl->n / S, zero = 0, gid;
    int rc = add_folded_block(p, ranks, pl->n, pl->n, err);
    if (!rc && S < pl->n) {
        rc = add_folded_block(p, ranks, pl->n, S, err); /* groups 1 .. R-1 its copies */
        for (uint32_t j = 0, k = 0; j < S; j++) /* replicate groups, group 0 first */
            for (uint32_t g = 0; g < R; g++) ranks[k++] = g * S + j;
        if (!rc) rc = prog_group_add_net(p, &zero, 1, ranks, R, &gid, err);
        if (!rc) rc = prog_group_set_copies(p, gid, ranks + R, S - 1, err);
    }
    if (!rc && has_post_forward_groups(pl))
        rc = add_folded_block(p, ranks, pl->n, pl->s->shard.reshard_after_forward, err);
    return rc;
}

/* DeepSpeed ZeRO++ hpZ: groups of hpz consecutive ranks (ids 1 .. n / hpz),
 * the secondary partitions' all-gather groups. */
static int add_hpz_groups(const plan *pl, prog *p, uint32_t *ranks, ss_err *err)
{
    uint32_t k = pl->s->ds.hpz, gid;
    if (pl->s->shard.strategy != SPEC_DEEPSPEED || k <= 1) return SS_OK;
    int rc = SS_OK;
    for (uint32_t g = 0; g < pl->n / k && !rc; g++) {
        for (uint32_t i = 0; i < k; i++) ranks[i] = g * k + i;
        rc = prog_group_add(p, ranks, k, &gid, err);
    }
    return rc;
}

uint32_t sched_gid_shard(const plan *pl, uint32_t rank)
{
    if (pl->shard_n == pl->n) return 0;
    return pl->nsim < pl->n ? 1 : 1 + rank / pl->shard_n;
}

uint32_t sched_gid_replicate(const plan *pl, uint32_t rank)
{
    return pl->nsim < pl->n ? 2 : 1 + pl->n / pl->shard_n + rank % pl->shard_n;
}

/* FSDP2 reshard_after_forward = k, 1 < k < shard group: the backward
 * all-gather runs over k consecutive ranks. */
static bool has_post_forward_groups(const plan *pl)
{
    uint32_t k = pl->s->shard.reshard_after_forward;
    return pl->s->shard.strategy == SPEC_FSDP2 && !pl->layout && k > 1 && k < pl->shard_n;
}

uint32_t sched_gid_post_forward(const plan *pl, uint32_t rank)
{
    if (!has_post_forward_groups(pl)) return sched_gid_shard(pl, rank);
    if (pl->nsim < pl->n) return pl->shard_n == pl->n ? 1 : 3;
    uint32_t hybrid = pl->shard_n == pl->n ? 0 : pl->n / pl->shard_n + pl->shard_n;
    return 1 + hybrid + rank / pl->s->shard.reshard_after_forward;
}

/* After the HSDP groups: n / k groups of k consecutive ranks, ids as
 * sched_gid_post_forward names them (every rank simulated). */
static int add_post_forward_groups(const plan *pl, prog *p, uint32_t *ranks, ss_err *err)
{
    if (!has_post_forward_groups(pl)) return SS_OK;
    uint32_t k = pl->s->shard.reshard_after_forward, gid;
    int rc = SS_OK;
    for (uint32_t g = 0; g < pl->n / k && !rc; g++) {
        for (uint32_t i = 0; i < k; i++) ranks[i] = g * k + i;
        rc = prog_group_add(p, ranks, k, &gid, err);
    }
    return rc;
}

int sched_build(const plan *pl, prog **out, ss_err *err)
{
    const sched_ops *ops = sched_find(pl->s->shard.strategy);
    if (!ops && !pl->layout)
        return ss_fail(err, SS_E_INTERNAL, NULL, "no scheduler for strategy %d",
                       (int)pl->s->shard.strategy);
    prog *p = NULL;
    int rc = prog_new(&p, pl->nsim, err);
    if (rc) return rc;
    if (pl->layout) { /* the layout body, with the strategy's runtime hooks (mp.h) */
        if ((rc = mp_build(pl, p, err))) prog_free(p);
        else *out = p;
        return rc;
    }
    uint32_t *ranks = malloc((size_t)pl->n * sizeof *ranks);
    if (!ranks) {
        prog_free(p);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    uint32_t gid;
    if (pl->nsim < pl->n) {
        rc = add_folded_groups(pl, p, ranks, err);
    } else {
        for (uint32_t r = 0; r < pl->n; r++) ranks[r] = r;
        rc = prog_group_add(p, ranks, pl->n, &gid, err);
        if (!rc) rc = add_hybrid_groups(pl, p, ranks, err);
        if (!rc) rc = add_hpz_groups(pl, p, ranks, err);
        if (!rc) rc = add_post_forward_groups(pl, p, ranks, err);
    }
    free(ranks);
    for (uint32_t r = 0; r < pl->nsim && !rc; r++) rc = ops->emit_rank(pl, p, r, err);
    if (rc) {
        prog_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}
