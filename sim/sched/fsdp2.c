/* FSDP2 (torch.distributed.fsdp.fully_shard): per-parameter dim-0 shards.
 *
 * A unit is one fully_shard module (a wrap unit of the plan); each of its
 * parameters is padded on dim 0 to N * ceil(rows / N) rows (plan.h), so a
 * unit's all-gather moves the sum of its padded parameters and a rank
 * stores ceil(rows / N) rows of each. What a unit does, as FSDP2's
 * FSDPParamGroup issues it:
 *   unshard          copy-in on the copy-in stream (PROG_COPY): allocates
 *                    the all-gather output (N x shard, compute dtype) and
 *                    casts the shards into its own slice of it; then the
 *                    all-gather on the all-gather stream (PROG_UNSHARD).
 *                    Before copying in, the copy-in and all-gather streams
 *                    wait for the copy-out event they were last told to
 *                    wait on (_wait_all_gather_streams_on_event): these
 *                    waits, not a CPU rate limiter, bound the run-ahead.
 *   wait_for_unshard copy-out on the compute stream into freshly allocated
 *                    unsharded parameters (padded size). In forward the
 *                    all-gather output is kept until the next forward
 *                    wait_for_unshard (all_gather_state), which makes the
 *                    all-gather streams wait on its copy-out and frees it:
 *                    the last one of a forward lives through backward into
 *                    the next step. In backward it is freed after its own
 *                    copy-out. One rank defers nothing.
 *   post_forward     reshard_after_forward: the shard group (true) frees
 *                    the unsharded parameters; 1 (false) keeps them until
 *                    post_backward; k keeps a clone of 1/k of them and the
 *                    backward all-gather runs over k consecutive ranks.
 *                    The root is not resharded after forward.
 *   pre_backward     unshard + wait; then prefetch: the listed units
 *                    (modules_to_backward_prefetch) or, without a list,
 *                    the next unit in backward order (implicit prefetch).
 *   post_backward    reshard; with gradient sync, foreach_reduce: on the
 *                    compute stream (after waiting for the previous
 *                    reduce-scatter, whose input it then frees:
 *                    reduce_scatter_state) copy the unsharded gradients
 *                    into a padded reduce-scatter input in the reduce
 *                    dtype and free them; on the reduce stream the
 *                    reduce-scatter into a shard, HSDP's all-reduce of it
 *                    over the replicate group, and the cast to the
 *                    gradient dtype (or the add into the existing sharded
 *                    gradient) unless the output is the gradient itself.
 * Forward prefetch is explicit only (modules_to_forward_prefetch, after the
 * unit's own wait); otherwise the host issuing ahead of the GPU overlaps.
 * Gradient accumulation: with no_sync (set_requires_gradient_sync(False)
 * on all but the last micro-batch) the unsharded gradients accumulate and
 * the last micro-batch reduces once; without it every micro-batch reduces
 * into the sharded gradient. Tensors used by one stream only are freed at
 * host time (decision 25): FSDP2 frees without record_stream.
 * CPUOffloadPolicy (offload.params "cpu"): the sharded parameters and
 * gradients live on the host; copy-in first copies the shard to the device
 * (copy stream, pinned or pageable per offload.pin_memory), each reduced
 * gradient shard is copied to the host and dropped on the device, and the
 * optimizer steps on the CPU. Both device copies are dropped at host time,
 * as soon as the copy that uses them is issued (the stream orders the reuse):
 * offload then keeps no shard on the device between uses.
 */
#include "emit.h"
#include "sched.h"

#include <stdlib.h>

enum { F2_SHARDED, F2_GATHERING, F2_UNSHARDED };

typedef struct f2 {
    em *e;
    const plan *pl;
    bool hybrid;
    uint32_t g_shard, g_rep, g_post;
    uint32_t *t_full, *t_ago, *t_post, *t_grad, *t_gshard; /* per unit */
    uint32_t *ag, *ready, *post_op, *reduce;               /* per unit: ops */
    uint8_t *state;
    bool *have_grad, *have_gshard;
    bool sync;
    bool off;                       /* CPUOffloadPolicy */
    uint32_t ag_state, ag_state_ev; /* forward's kept all-gather output, its copy-out */
    uint32_t ag_wait;               /* copy-out the all-gather streams wait on */
    uint32_t rs_state, rs_prev;     /* previous reduce-scatter input, its reduce-scatter */
} f2;

static bool f2_live(const f2 *f, uint32_t u) { return u < f->pl->nunits && f->pl->units[u].numel; }

static void f2_hook(f2 *f, prog_phase ph, const char *name)
{
    if (f->pl->s->hook_ns) em_host(f->e, ph, f->pl->s->hook_ns, name);
}

/* Copy-in and all-gather. From the post-forward copy (reshard_after_forward
 * = k) the input is padded / k elements already in the compute dtype, and
 * the group is the k ranks that hold the other pieces. */
static void f2_unshard(f2 *f, uint32_t u, prog_phase ph)
{
    if (!f2_live(f, u) || f->state[u] != F2_SHARDED) return;
    const plan *pl = f->pl;
    const plan_unit *pu = &pl->units[u];
    bool post = f->t_post[u] != EM_NONE;
    ss_bytes out = pu->padded * pl->compute_elem;
    ss_bytes in_read = post ? out / pl->raf[u] : pu->shard * pl->param_elem;
    ss_bytes in_write = post ? out / pl->raf[u] : pu->shard * pl->compute_elem;
    /* CPUOffloadPolicy: the host shard comes to the device first. */
    bool h2d = f->off && !post;
    uint32_t t_dev = h2d ? em_tensor(f->e, PROG_MEM_PARAM, pu->shard * pl->param_elem, false,
                                     "fsdp2.u%u[%s].shard.device", u, plan_unit_name(f->pl, u))
                         : EM_NONE;
    uint32_t copy = h2d ? em_host_copy(f->e, ph, pu->shard * pl->param_elem, false, f->ag_wait,
                                       t_dev, EM_NONE, "fsdp2.shard_to_device")
                        : EM_NONE;
    f->t_ago[u] = em_tensor(f->e, PROG_MEM_COMM_BUFFER, out, false,
                            "fsdp2.u%u[%s].all_gather_output.%s", u, plan_unit_name(f->pl, u),
                            prog_phase_name(ph));
    em_begin(f->e, PROG_OP_COMPUTE, PROG_COPY, ph, "fsdp2.copy_in.u%u", u);
    em_cost(f->e, em_op_host_ns(f->e), plan_mem_ns(pl, in_read + in_write), 0);
    em_dep(f->e, f->ag_wait);
    em_dep(f->e, post ? f->post_op[u] : EM_NONE);
    em_dep(f->e, copy);
    em_mem(f->e, f->t_ago[u], PROG_ALLOC_AT_ISSUE);
    em_mem(f->e, t_dev, PROG_FREE_AT_ISSUE); /* CPUOffloadPolicy drops it once copied in */
    uint32_t cin = em_end(f->e);
    em_begin(f->e, PROG_OP_COLL, PROG_UNSHARD, ph, "fsdp2.all_gather.u%u", u);
    em_coll(f->e, PROG_COLL_ALL_GATHER, out);
    em_group(f->e, post ? f->g_post : f->g_shard);
    em_dep(f->e, cin);
    f->ag[u] = em_end(f->e);
    f->state[u] = F2_GATHERING;
}

/* Copy-out into the unsharded parameters; the all-gather output's free
 * follows FSDP2's all_gather_state (see the top of the file). */
static void f2_wait(f2 *f, uint32_t u, prog_phase ph)
{
    if (!f2_live(f, u) || f->state[u] != F2_GATHERING) return;
    const plan *pl = f->pl;
    ss_bytes full = pl->units[u].padded * pl->compute_elem;
    f->t_full[u] = em_tensor(f->e, PROG_MEM_PARAM_UNSHARDED, full, false,
                             "fsdp2.u%u[%s].unsharded.%s", u, plan_unit_name(f->pl, u),
                             prog_phase_name(ph));
    em_begin(f->e, PROG_OP_COMPUTE, PROG_COMPUTE, ph, "fsdp2.copy_out.u%u", u);
    em_cost(f->e, em_op_host_ns(f->e), plan_mem_ns(pl, 2 * full), 0);
    em_dep(f->e, f->ag[u]);
    em_mem(f->e, f->t_full[u], PROG_ALLOC_AT_ISSUE);
    /* FSDP2 frees at host time: the all-gather streams wait on a copy-out
     * before they touch the memory again (f->ag_wait). */
    em_mem(f->e, f->t_post[u], PROG_FREE_AT_ISSUE);
    bool defer = ph == PROG_PH_FORWARD && pl->shard_n > 1;
    if (ph == PROG_PH_FORWARD) { /* the previous forward unshard's output goes now */
        em_mem(f->e, f->ag_state, PROG_FREE_AT_ISSUE);
        if (f->ag_state_ev != EM_NONE) f->ag_wait = f->ag_state_ev;
        f->ag_state = f->ag_state_ev = EM_NONE;
    }
    if (!defer) em_mem(f->e, f->t_ago[u], PROG_FREE_AT_ISSUE);
    f->ready[u] = em_end(f->e);
    if (defer) {
        f->ag_state = f->t_ago[u];
        f->ag_state_ev = f->ready[u];
    } else {
        f->ag_wait = f->ready[u];
    }
    f->t_ago[u] = f->t_post[u] = EM_NONE;
    f->state[u] = F2_UNSHARDED;
}

static void f2_reshard(f2 *f, uint32_t u, prog_phase ph)
{
    if (!f2_live(f, u) || f->state[u] != F2_UNSHARDED) return;
    em_marker_begin(f->e, PROG_COMPUTE, ph, "fsdp2.reshard");
    em_mem(f->e, f->t_full[u], PROG_FREE_AT_ISSUE);
    em_end(f->e);
    f->t_full[u] = f->ready[u] = EM_NONE;
    f->state[u] = F2_SHARDED;
}

static void f2_post_forward(f2 *f, uint32_t u)
{
    const plan *pl = f->pl;
    uint32_t k = pl->raf[u];
    if (pl->units[u].is_root || k == 0 || !f2_live(f, u)) return;
    if (k < pl->shard_n) { /* keep this rank's 1/k of the gathered parameters */
        ss_bytes part = pl->units[u].padded * pl->compute_elem / k;
        f->t_post[u] = em_tensor(f->e, PROG_MEM_PARAM_UNSHARDED, part, false,
                                 "fsdp2.u%u[%s].post_forward_shard", u, plan_unit_name(f->pl, u));
        em_begin(f->e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_FORWARD,
                 "fsdp2.post_forward_copy.u%u", u);
        em_cost(f->e, em_op_host_ns(f->e), plan_mem_ns(pl, 2 * part), 0);
        em_mem(f->e, f->t_post[u], PROG_ALLOC_AT_ISSUE);
        f->post_op[u] = em_end(f->e);
    }
    f2_reshard(f, u, PROG_PH_FORWARD);
}

static void f2_prefetch_list(f2 *f, int pass, uint32_t u, prog_phase ph)
{
    const plan *pl = f->pl;
    for (uint32_t i = pl->pf0[pass][u]; i < pl->pf0[pass][u + 1]; i++) f2_unshard(f, pl->pf[pass][i], ph);
}

static void f2_pre_forward(f2 *f, uint32_t u)
{
    if (!f2_live(f, u)) return;
    f2_hook(f, PROG_PH_FORWARD, "fsdp2.pre_forward");
    f2_unshard(f, u, PROG_PH_FORWARD);
    f2_wait(f, u, PROG_PH_FORWARD);
    f2_prefetch_list(f, 0, u, PROG_PH_FORWARD);
}

static void f2_forward(f2 *f)
{
    const plan *pl = f->pl;
    em_host(f->e, PROG_PH_FORWARD, pl->s->hook_ns, "fsdp2.root_pre_forward");
    em_input(f->e);
    f2_pre_forward(f, 0);
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        uint32_t u = pl->blocks[i].unit;
        const plan_unit *pu = &pl->units[u];
        if (u != 0 && pu->block0 == i) f2_pre_forward(f, u);
        em_fwd_block(f->e, i, f->ready[u]);
        if (u != 0 && pu->block0 + pu->nblocks == i + 1) f2_post_forward(f, u);
    }
}

/* The next unit in backward order that has parameters (the root last). */
static uint32_t f2_next_bwd(const f2 *f, uint32_t u)
{
    for (uint32_t v = u; v-- > 0;)
        if (f2_live(f, v)) return v;
    return f->pl->nunits;
}

static void f2_pre_backward(f2 *f, uint32_t u)
{
    f2_hook(f, PROG_PH_BACKWARD, "fsdp2.pre_backward");
    f2_unshard(f, u, PROG_PH_BACKWARD);
    f2_wait(f, u, PROG_PH_BACKWARD);
    if (f->pl->explicit_pf[1][u]) f2_prefetch_list(f, 1, u, PROG_PH_BACKWARD);
    else f2_unshard(f, f2_next_bwd(f, u), PROG_PH_BACKWARD);
}

/* HSDP: the reduced shard all-reduced over the replicate group. */
static void f2_replicate(f2 *f, uint32_t u, ss_bytes shard)
{
    if (!f->hybrid) return; /* FSDP2's all-reduce stream; here the reduce stream, right after */
    em_begin(f->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp2.all_reduce.replicas.u%u", u);
    em_coll(f->e, PROG_COLL_ALL_REDUCE, shard);
    em_group(f->e, f->g_rep);
    em_dep(f->e, f->reduce[u]);
    f->reduce[u] = em_end(f->e);
}

/* The reduce-scatter output cast to the gradient dtype, or added into the
 * sharded gradient of an earlier micro-batch. */
static void f2_cast(f2 *f, uint32_t u, uint32_t out, ss_bytes shard, ss_bytes gshard)
{
    const plan *pl = f->pl;
    bool add = f->have_gshard[u];
    em_begin(f->e, PROG_OP_COMPUTE, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp2.grad_%s.u%u",
             add ? "accumulate" : "cast", u);
    em_cost(f->e, em_op_host_ns(f->e), plan_mem_ns(pl, shard + gshard + (add ? gshard : 0)), 0);
    em_dep(f->e, f->reduce[u]);
    if (!add) em_mem(f->e, f->t_gshard[u], PROG_ALLOC_AT_ISSUE);
    em_mem(f->e, out, PROG_FREE_AT_ISSUE);
    f->reduce[u] = em_end(f->e);
    f->have_gshard[u] = true;
}

/* CPUOffloadPolicy: the gradient shard goes to the host (which accumulates
 * it) and is dropped on the device. */
static void f2_to_host(f2 *f, uint32_t u, ss_bytes gshard)
{
    f->reduce[u] = em_host_copy_drop(f->e, PROG_PH_BACKWARD, gshard, f->reduce[u], f->t_gshard[u],
                                     "fsdp2.grad_shard_to_host");
    f->t_gshard[u] = EM_NONE;
    f->have_gshard[u] = false;
}

/* foreach_reduce (see the top of the file). */
static void f2_reduce(f2 *f, uint32_t u, uint32_t last_bwd)
{
    const plan *pl = f->pl;
    const plan_unit *pu = &pl->units[u];
    ss_bytes in = pu->padded * pl->reduce_elem, shard = pu->shard * pl->reduce_elem;
    ss_bytes gshard = pu->shard * pl->grad_elem;
    uint32_t t_in = em_tensor(f->e, PROG_MEM_COMM_BUFFER, in, false,
                              "fsdp2.u%u[%s].reduce_scatter_input", u, plan_unit_name(f->pl, u));
    em_begin(f->e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "fsdp2.reduce_copy_in.u%u", u);
    em_cost(f->e, em_op_host_ns(f->e), plan_mem_ns(pl, pu->numel * pl->compute_elem + in), 0);
    em_dep(f->e, last_bwd);
    em_dep(f->e, f->rs_prev);
    em_mem(f->e, t_in, PROG_ALLOC_AT_ISSUE);
    em_mem(f->e, f->rs_state, PROG_FREE_AT_ISSUE);
    em_mem(f->e, f->t_grad[u], PROG_FREE_AT_ISSUE);
    uint32_t cin = em_end(f->e);
    f->have_grad[u] = false;
    /* The output is the sharded gradient itself when nothing is to be cast
     * or accumulated into; otherwise a temporary. */
    if (f->off) /* the device shard of this reduction, copied out below */
        f->t_gshard[u] = em_tensor(f->e, PROG_MEM_GRAD_SHARD, gshard, false,
                                   "fsdp2.u%u[%s].grad_shard.device", u, plan_unit_name(f->pl, u));
    bool direct = !f->have_gshard[u] && pl->grad_elem == pl->reduce_elem &&
                  pl->s->prec.grad == pl->s->prec.reduce;
    uint32_t out = direct ? f->t_gshard[u]
                          : em_tensor(f->e, PROG_MEM_COMM_BUFFER, shard, false,
                                      "fsdp2.u%u[%s].reduce_scatter_output", u,
                                      plan_unit_name(f->pl, u));
    em_begin(f->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "fsdp2.reduce_scatter.u%u", u);
    em_coll(f->e, PROG_COLL_REDUCE_SCATTER, in);
    em_group(f->e, f->g_shard);
    em_dep(f->e, cin);
    em_mem(f->e, out, PROG_ALLOC_AT_ISSUE);
    f->reduce[u] = f->rs_prev = em_end(f->e);
    f->rs_state = t_in;
    if (direct) f->have_gshard[u] = true;
    f2_replicate(f, u, shard);
    if (!direct) f2_cast(f, u, out, shard, gshard);
    if (f->off) f2_to_host(f, u, gshard);
}

static void f2_post_backward(f2 *f, uint32_t u, uint32_t last_bwd)
{
    if (!f2_live(f, u)) return;
    f2_hook(f, PROG_PH_BACKWARD, "fsdp2.post_backward");
    f2_reshard(f, u, PROG_PH_BACKWARD);
    if (f->sync) f2_reduce(f, u, last_bwd);
}

static void f2_backward_block(f2 *f, uint32_t i)
{
    const plan *pl = f->pl;
    uint32_t u = pl->blocks[i].unit;
    const plan_unit *pu = &pl->units[u];
    if (u != 0 && pu->block0 + pu->nblocks == i + 1) f2_pre_backward(f, u);
    /* The unit's first gradient kernel allocates its unsharded gradients
     * (autograd's .grad of the unpadded parameters, compute dtype); under
     * no_sync they stay and accumulate. */
    uint32_t grad = EM_NONE;
    if (!f->have_grad[u] && f2_live(f, u)) {
        f->t_grad[u] = grad = em_tensor(f->e, PROG_MEM_GRAD, pu->numel * pl->compute_elem, false,
                                        "fsdp2.u%u[%s].grad", u, plan_unit_name(f->pl, u));
        f->have_grad[u] = true;
    }
    uint32_t op = em_bwd_block(f->e, i, f->ready[u], &grad, grad == EM_NONE ? 0 : 1);
    if (u != 0 && pu->block0 == i) f2_post_backward(f, u, op);
}

static void f2_backward(f2 *f, uint32_t m)
{
    const plan *pl = f->pl;
    f->sync = em_syncs(f->e, m);
    em_loss(f->e);
    uint32_t last = EM_NONE;
    for (uint32_t i = pl->nblocks; i-- > 0;) {
        f2_backward_block(f, i);
        last = f->e->last;
    }
    f2_post_backward(f, 0, last);
    /* The root's final callback: compute waits for every reduction, and the
     * last reduce-scatter input is dropped. Forward's last all-gather output
     * stays in all_gather_state until the next forward's first copy-out. */
    em_marker_begin(f->e, PROG_COMPUTE, PROG_PH_BACKWARD, "fsdp2.finalize_backward");
    for (uint32_t u = 0; u < pl->nunits; u++) em_dep(f->e, f->reduce[u]);
    em_mem(f->e, f->rs_state, PROG_FREE_AT_ISSUE);
    em_end(f->e);
    f->rs_state = f->rs_prev = EM_NONE;
}

static void f2_zero_grad(f2 *f)
{
    em_begin(f->e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "zero_grad");
    em_cost(f->e, 0, 0, 0);
    for (uint32_t u = 0; u < f->pl->nunits; u++) em_mem(f->e, f->t_gshard[u], PROG_FREE_AT_ISSUE);
    em_mem(f->e, f->e->t_input, PROG_FREE_AT_ISSUE);
    em_end(f->e);
}

/* Per-unit arrays, one allocation each, freed by f2_free. */
static int f2_alloc(f2 *f, uint32_t n)
{
    uint32_t **ids[] = {&f->t_full, &f->t_ago, &f->t_post, &f->t_grad, &f->t_gshard,
                        &f->ag, &f->ready, &f->post_op, &f->reduce};
    bool ok = true;
    for (size_t i = 0; i < SS_ARRAY_LEN(ids); i++) {
        *ids[i] = malloc(n * sizeof **ids[i]);
        ok = ok && *ids[i];
        for (uint32_t u = 0; *ids[i] && u < n; u++) (*ids[i])[u] = EM_NONE;
    }
    f->state = calloc(n, sizeof *f->state);
    f->have_grad = calloc(n, sizeof *f->have_grad);
    f->have_gshard = calloc(n, sizeof *f->have_gshard);
    f->ag_state = f->ag_state_ev = f->ag_wait = f->rs_state = f->rs_prev = EM_NONE;
    return ok && f->state && f->have_grad && f->have_gshard;
}

static void f2_free(f2 *f)
{
    uint32_t *ids[] = {f->t_full, f->t_ago, f->t_post, f->t_grad, f->t_gshard,
                       f->ag, f->ready, f->post_op, f->reduce};
    for (size_t i = 0; i < SS_ARRAY_LEN(ids); i++) free(ids[i]);
    free(f->state);
    free(f->have_grad);
    free(f->have_gshard);
}

/* What the rank stores (each parameter's ceil(rows / N) rows, padding
 * included) and what its optimizer steps (the real rows: DTensor local
 * shards; a rank with no real rows of a parameter has no state for it). */
static int f2_local_tensors(const f2 *f, em_tensors *params, em_tensors *optim)
{
    const plan *pl = f->pl;
    uint32_t S = pl->shard_n, r = f->e->rank % S;
    int rc = em_tensors_init(params, pl->nparams, f->e->err);
    if (!rc) rc = em_tensors_init(optim, pl->nparams, f->e->err);
    for (uint32_t i = 0; !rc && i < pl->nparams; i++) {
        const plan_param *q = &pl->params[i];
        uint64_t rows = q->rows ? q->rows : 1, cols = q->numel / rows;
        em_tensors_add(params, ss_div_ceil(rows, S) * cols, em_param_module(pl, i));
        uint64_t real = st_shard_logical(rows, S, r) * cols;
        if (real) em_tensors_add(optim, real, em_param_module(pl, i));
    }
    return rc;
}

/* The sharded gradients, and the all-gather output the previous step's
 * last forward unshard left in all_gather_state (the last unit in forward
 * order with parameters; none on one rank, where FSDP2 does not defer). */
static void f2_tensors(f2 *f)
{
    const plan *pl = f->pl;
    uint32_t last = pl->nunits;
    for (uint32_t u = 0; u < pl->nunits; u++) {
        if (!f2_live(f, u)) continue;
        last = u;
        if (f->off) continue; /* made per reduction */
        f->t_gshard[u] = em_tensor(f->e, PROG_MEM_GRAD_SHARD, pl->units[u].shard * pl->grad_elem,
                                   false, "fsdp2.u%u[%s].grad_shard", u, plan_unit_name(f->pl, u));
    }
    if (last < pl->nunits && pl->shard_n > 1)
        f->ag_state = em_tensor(f->e, PROG_MEM_COMM_BUFFER, pl->units[last].padded * pl->compute_elem,
                                true, "fsdp2.u%u[%s].all_gather_output.previous_step", last,
                                plan_unit_name(f->pl, last));
}

static int f2_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    em e;
    f2 f = {.e = &e, .pl = pl,
            .hybrid = pl->shard_n != pl->n, .g_shard = sched_gid_shard(pl, rank),
            .g_post = sched_gid_post_forward(pl, rank), .off = pl->s->off.params != SPEC_OFF_NONE};
    if (f.hybrid) f.g_rep = sched_gid_replicate(pl, rank);
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    em_tensors params = {0}, optim = {0};
    if (!f2_alloc(&f, pl->nunits)) {
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rc = f2_local_tensors(&f, &params, &optim))) goto out;
    em_states(&e, &params, &optim);
    f2_tensors(&f);
    for (uint32_t m = 0; m < pl->s->grad_accum; m++) {
        f2_forward(&f);
        f2_backward(&f, m);
    }
    em_step(&e, &optim, f.reduce, pl->nunits);
    f2_zero_grad(&f);
    rc = em_done(&e);
out:
    em_tensors_fini(&params);
    em_tensors_fini(&optim);
    f2_free(&f);
    em_fini(&e);
    return rc;
}

const sched_ops sched_fsdp2 = {"fsdp2", SPEC_FSDP2, f2_emit_rank};
