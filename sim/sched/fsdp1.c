/* FSDP1 (FullyShardedDataParallel) FULL_SHARD, SHARD_GRAD_OP, NO_SHARD,
 * HYBRID_SHARD and _HYBRID_SHARD_ZERO2.
 *
 * Per wrap unit (one FlatParameter, padded to N * ceil(numel / N)):
 *   pre-forward   unshard: all-gather on the unshard stream into a freshly
 *                 allocated padded buffer; with forward_prefetch, also the
 *                 next unit's. limit_all_gathers: before an all-gather the
 *                 host waits for the oldest of two pending free events.
 *   post-forward  FULL_SHARD reshards (except the root); the free waits for
 *                 the compute stream (record_stream) and records the event
 *                 the rate limiter waits on.
 *   pre-backward  unshard if resharded; BACKWARD_PRE prefetches the next
 *                 unit in backward order before this unit's gradient kernels.
 *   post-backward reshard (not NO_SHARD); reduce-scatter the unsharded
 *                 gradient on the reduce stream into a new shard (NO_SHARD:
 *                 all-reduce in place); BACKWARD_POST prefetches now.
 * HYBRID_SHARD (HSDP): FULL_SHARD inside a shard group (a node by default),
 * replicated across groups: all-gathers and reduce-scatters run over the
 * shard group, and each reduced shard is then all-reduced in place over the
 * replicate group, on the reduce stream after its reduce-scatter (FSDP1's
 * _reduce_grad). _HYBRID_SHARD_ZERO2 is the same with SHARD_GRAD_OP inside.
 * MixedPrecision: unsharded parameters and gradients are in the compute
 * dtype (param_dtype), the shards in the parameter and gradient dtypes.
 * Gradient accumulation: under no_sync() the unsharded gradients stay and
 * accumulate until the last micro-batch reduces them (the memory FSDP1's
 * docs warn of); without it every micro-batch reduces into the same shard.
 * With use_orig_params the optimizer's zero_grad only drops the original
 * parameters' views: the flat gradient shards stay allocated until the root
 * pre-forward of the next step resets them (seeds/002's steady memory).
 * CPUOffload(offload_params=True) (offload.params "cpu"): the shards and
 * their gradients live on the host; each unshard first copies the shard to
 * the device (copy stream), each reduced gradient shard is copied back and
 * dropped on the device, and the optimizer steps on the CPU. */
#include "emit.h"
#include "sched.h"

#include <stdlib.h>

typedef struct fs {
    em *e;
    const plan *pl;
    spec_strategy strat;       /* the behaviour inside the shard group */
    bool hybrid;               /* shards also all-reduced across replicas */
    uint32_t g_shard, g_rep;   /* group ids (sched.h) */
    uint32_t *t_full, *t_grad, *t_old, *t_new; /* per unit */
    uint32_t *ag;                              /* per unit: its pending all-gather */
    bool *unsharded, *gdone, *have_shard;
    bool sync; /* this micro-batch reduces its gradients */
    bool off;  /* CPUOffload: shards on the host */
    em_pair freeq;            /* pending free events (rate limiter) */
    uint32_t *reduce;         /* per unit: its reduce op */
} fs;

static bool fs_live(const fs *f, uint32_t u) { return f->pl->units[u].numel > 0; }

static void fs_tensors(fs *f)
{
    const plan *pl = f->pl;
    bool linger = pl->s->shard.use_orig_params;
    bool noshard = f->strat == SPEC_NO_SHARD;
    for (uint32_t u = 0; u < pl->nunits; u++) {
        const plan_unit *pu = &pl->units[u];
        uint64_t gnum = noshard ? pu->numel : pu->shard;
        f->t_full[u] = f->t_grad[u] = f->t_old[u] = f->t_new[u] = EM_NONE;
        f->ag[u] = f->reduce[u] = EM_NONE;
        f->unsharded[u] = noshard;
        f->gdone[u] = f->have_shard[u] = false;
        if (!fs_live(f, u)) continue;
        prog_memcat gc = noshard ? PROG_MEM_GRAD : PROG_MEM_GRAD_SHARD;
        if (linger && !f->off) /* CPUOffload: the host keeps the gradient shards */
            f->t_old[u] = em_tensor(f->e, gc, gnum * pl->grad_elem, true,
                                    "fsdp.u%u[%s].grad_shard.prev", u, plan_unit_name(f->pl, u));
        if (!f->off)
            f->t_new[u] = em_tensor(f->e, gc, gnum * pl->grad_elem, false, "fsdp.u%u[%s].grad_shard",
                                    u, plan_unit_name(f->pl, u));
    }
}

static void fs_rate_limit(fs *f)
{
    if (f->pl->s->shard.limit_all_gathers) em_pair_wait(f->e, &f->freeq, "fsdp.rate_limit");
}

static void fs_unshard(fs *f, uint32_t u, prog_phase ph)
{
    if (u >= f->pl->nunits || !fs_live(f, u) || f->unsharded[u]) return;
    const plan_unit *pu = &f->pl->units[u];
    fs_rate_limit(f);
    /* A fresh buffer each time: the previous one may still wait for the
     * compute stream before it is released. */
    f->t_full[u] = em_tensor(f->e, PROG_MEM_PARAM_UNSHARDED, pu->padded * f->pl->compute_elem,
                             false, "fsdp.u%u[%s].unsharded.%s", u, plan_unit_name(f->pl, u),
                             prog_phase_name(ph));
    /* CPUOffload: the host shard is copied in before it is gathered. */
    uint32_t dev = f->off ? em_tensor(f->e, PROG_MEM_PARAM, pu->shard * f->pl->param_elem, false,
                                      "fsdp.u%u[%s].shard.device", u, plan_unit_name(f->pl, u))
                          : EM_NONE;
    uint32_t h2d = f->off ? em_host_copy(f->e, ph, pu->shard * f->pl->param_elem,
                                         false, EM_NONE, dev, EM_NONE, "fsdp.shard_to_device")
                          : EM_NONE;
    em_begin(f->e, PROG_OP_COLL, PROG_UNSHARD, ph, "fsdp.all_gather.u%u", u);
    em_coll(f->e, PROG_COLL_ALL_GATHER, pu->padded * f->pl->compute_elem);
    em_group(f->e, f->g_shard);
    em_dep(f->e, h2d);
    em_mem(f->e, f->t_full[u], PROG_ALLOC_AT_ISSUE);
    em_mem(f->e, dev, PROG_FREE_AT_END);
    f->ag[u] = em_end(f->e);
    f->unsharded[u] = true;
}

/* Free the unsharded buffer once the compute stream is past its last use. */
static void fs_reshard(fs *f, uint32_t u, prog_phase ph)
{
    if (!fs_live(f, u) || !f->unsharded[u] || f->strat == SPEC_NO_SHARD) return;
    em_marker_begin(f->e, PROG_COMPUTE, ph, "fsdp.reshard");
    em_mem(f->e, f->t_full[u], PROG_FREE_AT_END);
    em_pair_push(&f->freeq, em_end(f->e));
    f->unsharded[u] = false;
    f->ag[u] = EM_NONE;
}

static void fs_hook(fs *f, prog_phase ph, const char *name)
{
    if (f->pl->s->hook_ns) em_host(f->e, ph, f->pl->s->hook_ns, name);
}

/* HSDP: the reduced shard, all-reduced in place across the replicas. */
static void fs_replicate(fs *f, uint32_t u)
{
    em_begin(f->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp.all_reduce.replicas.u%u", u);
    em_coll(f->e, PROG_COLL_ALL_REDUCE, f->pl->units[u].shard * f->pl->reduce_elem);
    em_group(f->e, f->g_rep);
    em_dep(f->e, f->reduce[u]);
    f->reduce[u] = em_end(f->e);
}

static void fs_reduce(fs *f, uint32_t u, uint32_t last_bwd)
{
    const plan_unit *pu = &f->pl->units[u];
    bool noshard = f->strat == SPEC_NO_SHARD;
    /* MixedPrecision with reduce_dtype: the gradient is cast on the reduce
     * stream before it is reduced; that stream is the copy's only user, so
     * the host drops it right after issuing the reduce-scatter and the
     * allocator may hand it to the next one at once (no record_stream). The
     * unsharded gradient came from the compute stream: record_stream keeps
     * it until the reduce-scatter ends. */
    uint32_t cast = !noshard && f->pl->reduce_elem != f->pl->compute_elem
                        ? em_tensor(f->e, PROG_MEM_COMM_BUFFER, pu->padded * f->pl->reduce_elem,
                                    false, "fsdp.u%u[%s].grad.reduce_dtype", u,
                                    plan_unit_name(f->pl, u))
                        : EM_NONE;
    em_begin(f->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD,
             noshard ? "fsdp.all_reduce.u%u" : "fsdp.reduce_scatter.u%u", u);
    em_coll(f->e, noshard ? PROG_COLL_ALL_REDUCE : PROG_COLL_REDUCE_SCATTER,
            (noshard ? pu->numel : pu->padded) * f->pl->reduce_elem);
    if (!noshard) em_group(f->e, f->g_shard);
    em_dep(f->e, last_bwd);
    if (!noshard) {
        /* Later reductions add into the shard the first one made; under
         * CPUOffload each reduction makes a device shard for its copy out. */
        if (f->off)
            f->t_new[u] = em_tensor(f->e, PROG_MEM_GRAD_SHARD, pu->shard * f->pl->grad_elem, false,
                                    "fsdp.u%u[%s].grad_shard.device", u, plan_unit_name(f->pl, u));
        if (!f->have_shard[u]) em_mem(f->e, f->t_new[u], PROG_ALLOC_AT_ISSUE);
        f->have_shard[u] = !f->off;
        f->gdone[u] = false;
        em_mem(f->e, cast, PROG_ALLOC_AT_ISSUE);
        em_mem(f->e, cast, PROG_FREE_AT_ISSUE);
        em_mem(f->e, f->t_grad[u], PROG_FREE_AT_END);
    }
    f->reduce[u] = em_end(f->e);
    if (f->hybrid && !noshard) fs_replicate(f, u);
    if (!f->off) return;
    f->reduce[u] = em_host_copy(f->e, PROG_PH_BACKWARD, pu->shard * f->pl->grad_elem, false,
                                f->reduce[u], EM_NONE, f->t_new[u], "fsdp.grad_shard_to_host");
    f->t_new[u] = EM_NONE;
}

static uint32_t fs_prev_unit(const fs *f, uint32_t u)
{
    /* Backward order is the reverse of forward order; units are stored in
     * forward order with the root first. */
    for (uint32_t k = u; k-- > 1;)
        if (fs_live(f, k)) return k;
    return f->pl->nunits;
}

static void fs_forward(fs *f, uint32_t m)
{
    const plan *pl = f->pl;
    em_begin(f->e, PROG_OP_HOST, PROG_HOST, PROG_PH_FORWARD, "fsdp.root_pre_forward");
    em_cost(f->e, pl->s->hook_ns, 0, 0);
    for (uint32_t u = 0; m == 0 && u < pl->nunits; u++) em_mem(f->e, f->t_old[u], PROG_FREE_AT_ISSUE);
    em_end(f->e);
    em_input(f->e);
    fs_unshard(f, 0, PROG_PH_FORWARD);
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        uint32_t u = pl->blocks[i].unit;
        bool first = u != 0 && pl->units[u].block0 == i;
        if (first) {
            fs_hook(f, PROG_PH_FORWARD, "fsdp.pre_forward");
            fs_unshard(f, u, PROG_PH_FORWARD);
            if (pl->s->shard.forward_prefetch) fs_unshard(f, u + 1, PROG_PH_FORWARD);
        }
        em_fwd_block(f->e, i, f->ag[u]);
        bool last = u != 0 && pl->units[u].block0 + pl->units[u].nblocks == i + 1;
        if (last && f->strat == SPEC_FULL_SHARD) fs_reshard(f, u, PROG_PH_FORWARD);
    }
}

static void fs_post_backward(fs *f, uint32_t u, uint32_t last_bwd)
{
    fs_hook(f, PROG_PH_BACKWARD, "fsdp.post_backward");
    fs_reshard(f, u, PROG_PH_BACKWARD);
    if (f->sync) fs_reduce(f, u, last_bwd);
    if (f->pl->s->shard.backward_prefetch == SPEC_BWD_POST)
        fs_unshard(f, fs_prev_unit(f, u), PROG_PH_BACKWARD);
}

static void fs_backward_block(fs *f, uint32_t i)
{
    const plan *pl = f->pl;
    uint32_t u = pl->blocks[i].unit;
    const plan_unit *pu = &pl->units[u];
    bool entering = u != 0 && pu->block0 + pu->nblocks == i + 1;
    if (entering) {
        fs_hook(f, PROG_PH_BACKWARD, "fsdp.pre_backward");
        fs_unshard(f, u, PROG_PH_BACKWARD);
        if (pl->s->shard.backward_prefetch == SPEC_BWD_PRE)
            fs_unshard(f, fs_prev_unit(f, u), PROG_PH_BACKWARD);
    }
    /* The unit's first gradient kernel allocates its flat gradient (full
     * size; under NO_SHARD it is the gradient the optimizer keeps). */
    uint32_t grad = EM_NONE;
    if (!f->gdone[u] && fs_live(f, u)) {
        if (f->strat != SPEC_NO_SHARD)
            f->t_grad[u] = em_tensor(f->e, PROG_MEM_GRAD, pu->padded * pl->compute_elem, false,
                                     "fsdp.u%u[%s].grad", u, plan_unit_name(f->pl, u));
        grad = f->strat == SPEC_NO_SHARD ? f->t_new[u] : f->t_grad[u];
        f->gdone[u] = true;
    }
    uint32_t op = em_bwd_block(f->e, i, f->ag[u], &grad, grad == EM_NONE ? 0 : 1);
    if (u != 0 && pu->block0 == i) fs_post_backward(f, u, op);
}

static void fs_backward(fs *f, uint32_t m)
{
    const plan *pl = f->pl;
    f->sync = em_syncs(f->e, m);
    em_loss(f->e);
    uint32_t last = EM_NONE;
    for (uint32_t i = pl->nblocks; i-- > 0;) {
        fs_backward_block(f, i);
        last = f->e->last;
    }
    if (fs_live(f, 0)) fs_post_backward(f, 0, last);
    /* The root's final callback: compute waits for every reduction. */
    em_marker_begin(f->e, PROG_COMPUTE, PROG_PH_BACKWARD, "fsdp.wait_reduce");
    for (uint32_t u = 0; u < pl->nunits; u++) em_dep(f->e, f->reduce[u]);
    em_end(f->e);
}

static void fs_zero_grad(fs *f)
{
    em_begin(f->e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "zero_grad");
    em_cost(f->e, 0, 0, 0);
    if (!f->pl->s->shard.use_orig_params)
        for (uint32_t u = 0; u < f->pl->nunits; u++) em_mem(f->e, f->t_new[u], PROG_FREE_AT_ISSUE);
    em_mem(f->e, f->e->t_input, PROG_FREE_AT_ISSUE);
    em_end(f->e);
}

static int fs_alloc(fs *f, uint32_t n)
{
    f->t_full = malloc(n * sizeof *f->t_full);
    f->t_grad = malloc(n * sizeof *f->t_grad);
    f->t_old = malloc(n * sizeof *f->t_old);
    f->t_new = malloc(n * sizeof *f->t_new);
    f->ag = malloc(n * sizeof *f->ag);
    f->reduce = malloc(n * sizeof *f->reduce);
    f->unsharded = malloc(n * sizeof *f->unsharded);
    f->gdone = malloc(n * sizeof *f->gdone);
    f->have_shard = malloc(n * sizeof *f->have_shard);
    return f->t_full && f->t_grad && f->t_old && f->t_new && f->ag && f->reduce &&
           f->unsharded && f->gdone && f->have_shard;
}

static void fs_free(fs *f)
{
    free(f->t_full);
    free(f->t_grad);
    free(f->t_old);
    free(f->t_new);
    free(f->ag);
    free(f->reduce);
    free(f->unsharded);
    free(f->gdone);
    free(f->have_shard);
}

/* What the rank stores per unit (its padded shard; everything under
 * NO_SHARD) and what its optimizer steps: under use_orig_params the
 * original parameters' views, i.e. each parameter's overlap with the
 * rank's flat range; otherwise the padded flat shard. */
static int fs_local_tensors(const fs *f, em_tensors *params, em_tensors *optim)
{
    const plan *pl = f->pl;
    uint32_t r = f->e->rank % pl->shard_n; /* place in the shard group */
    bool noshard = f->strat == SPEC_NO_SHARD, views = pl->s->shard.use_orig_params;
    int rc = em_tensors_init(params, pl->nunits, f->e->err);
    if (!rc) rc = em_tensors_init(optim, pl->nparams + pl->nunits, f->e->err);
    for (uint32_t u = 0; !rc && u < pl->nunits; u++) {
        const plan_unit *pu = &pl->units[u];
        if (!fs_live(f, u)) continue;
        uint64_t lo = noshard ? 0 : (uint64_t)r * pu->shard, hi = noshard ? pu->numel : lo + pu->shard;
        em_tensors_add(params, hi - lo, plan_unit_name(pl, u));
        if (!views || noshard) {
            em_tensors_add(optim, hi - lo, plan_unit_name(pl, u));
            continue;
        }
        uint64_t off = 0; /* the unit's parameters, in flat order */
        for (uint32_t b = 0; b < pl->nblocks; b++) {
            if (pl->blocks[b].unit != u) continue;
            for (uint32_t k = 0; k < pl->blocks[b].nparam; k++) {
                uint64_t n = pl->params[pl->blocks[b].param0 + k].numel;
                uint64_t a = off > lo ? off : lo, z = off + n < hi ? off + n : hi;
                if (z > a) em_tensors_add(optim, z - a, pl->blocks[b].name);
                off += n;
            }
        }
    }
    return rc;
}

/* What a rank does inside its shard group. FSDP1 switches to NO_SHARD
 * when it shards over one rank (and then all-reduces over every rank). */
static spec_strategy fs_behaviour(const plan *pl)
{
    spec_strategy s = pl->s->shard.strategy;
    if (pl->shard_n == 1) return SPEC_NO_SHARD;
    if (s == SPEC_HYBRID_SHARD) return SPEC_FULL_SHARD;
    if (s == SPEC_HYBRID_SHARD_ZERO2) return SPEC_SHARD_GRAD_OP;
    return s;
}

static int fs_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    em e;
    fs f = {.e = &e, .pl = pl, .strat = fs_behaviour(pl), .hybrid = pl->shard_n != pl->n,
            .g_shard = sched_gid_shard(pl, rank), .off = pl->s->off.params != SPEC_OFF_NONE};
    if (f.hybrid) f.g_rep = sched_gid_replicate(pl, rank);
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    if (!fs_alloc(&f, pl->nunits)) {
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        goto out;
    }
    em_tensors params = {0}, optim = {0};
    if ((rc = fs_local_tensors(&f, &params, &optim))) goto out_t;
    em_states(&e, &params, &optim);
    fs_tensors(&f);
    for (uint32_t m = 0; m < pl->s->grad_accum; m++) {
        fs_forward(&f, m);
        fs_backward(&f, m);
    }
    em_step(&e, &optim, f.reduce, pl->nunits);
    fs_zero_grad(&f);
    rc = em_done(&e);
out_t:
    em_tensors_fini(&params);
    em_tensors_fini(&optim);
out:
    fs_free(&f);
    em_fini(&e);
    return rc;
}

const sched_ops sched_fsdp1_full_shard = {"full_shard", SPEC_FULL_SHARD, fs_emit_rank};
const sched_ops sched_fsdp1_shard_grad_op = {"shard_grad_op", SPEC_SHARD_GRAD_OP, fs_emit_rank};
const sched_ops sched_fsdp1_no_shard = {"no_shard", SPEC_NO_SHARD, fs_emit_rank};
const sched_ops sched_fsdp1_hybrid_shard = {"hybrid_shard", SPEC_HYBRID_SHARD, fs_emit_rank};
const sched_ops sched_fsdp1_hybrid_shard_zero2 = {"hybrid_shard_zero2", SPEC_HYBRID_SHARD_ZERO2,
                                                  fs_emit_rank};
