/* DDP: every rank holds everything; the reducer copies each gradient into
 * its bucket as autograd produces it (reverse registration order) and
 * all-reduces a bucket on the reduce stream once its last gradient arrived.
 * With gradient_as_bucket_view the grads are views of the buckets (the
 * fresh AccumulateGrad tensor is copied in and dropped); otherwise grads are
 * separate tensors, copied back from the buckets when backward finalizes. */
#include "emit.h"

#include <stdlib.h>

int ddp_grads_init(ddp_grads *g, const plan *pl, ss_err *err)
{
    size_t np = pl->nparams ? pl->nparams : 1, nb = pl->nbuckets ? pl->nbuckets : 1;
    g->t_grad = malloc(np * sizeof *g->t_grad);
    g->t_bucket = malloc(nb * sizeof *g->t_bucket);
    g->ar = malloc(nb * sizeof *g->ar);
    if (!g->t_grad || !g->t_bucket || !g->ar) {
        ddp_grads_fini(g);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    return SS_OK;
}

void ddp_grads_fini(ddp_grads *g)
{
    free(g->t_grad);
    free(g->t_bucket);
    free(g->ar);
    g->t_grad = g->t_bucket = g->ar = NULL;
}

static uint32_t bucket_of(const plan *pl, uint32_t param)
{
    for (uint32_t b = 0; b < pl->nbuckets; b++)
        if (param <= pl->buckets[b].first && param >= pl->buckets[b].last) return b;
    return 0;
}

static void ddp_tensors(em *e, ddp_grads *g)
{
    const plan *pl = e->pl;
    for (uint32_t b = 0; b < pl->nbuckets; b++)
        g->t_bucket[b] = em_tensor(e, PROG_MEM_COMM_BUFFER,
                                   pl->buckets[b].numel * pl->grad_elem, true,
                                   "ddp.bucket%u", b);
    for (uint32_t i = 0; i < pl->nparams; i++)
        g->t_grad[i] = em_tensor(e, PROG_MEM_GRAD, pl->params[i].numel * pl->grad_elem,
                                 false, "grad.p%u", i);
}

/* Reducer hook for one gradient: copy (and divide) into the bucket; launch
 * the bucket's all-reduce when it is complete. The reducer is C++: its host
 * cost is the launches, not a Python hook (runtime.hook_us is FSDP's). */
static void ddp_hook(em *e, ddp_grads *g, uint32_t param)
{
    const plan *pl = e->pl;
    ss_bytes bytes = pl->params[param].numel * pl->grad_elem;
    bool view = pl->s->shard.gradient_as_bucket_view;
    em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "ddp.copy_to_bucket.p%u", param);
    em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, 2 * bytes), 0);
    if (view) em_mem(e, g->t_grad[param], PROG_FREE_AT_ISSUE);
    uint32_t copy = em_end(e);
    if (view) g->t_grad[param] = EM_NONE; /* from now on a view of the bucket */
    uint32_t b = bucket_of(pl, param);
    if (param != pl->buckets[b].last) return;
    em_begin(e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "ddp.all_reduce.bucket%u", b);
    em_coll(e, PROG_COLL_ALL_REDUCE, pl->buckets[b].numel * pl->grad_elem);
    em_dep(e, copy);
    g->ar[b] = em_end(e);
}

static void ddp_finalize(em *e, ddp_grads *g)
{
    const plan *pl = e->pl;
    if (pl->s->shard.gradient_as_bucket_view) {
        em_marker_begin(e, PROG_COMPUTE, PROG_PH_BACKWARD, "ddp.wait_all_reduce");
        for (uint32_t b = 0; b < pl->nbuckets; b++) em_dep(e, g->ar[b]);
        em_end(e);
        for (uint32_t i = 0; i < pl->nparams; i++) g->t_grad[i] = EM_NONE;
        return;
    }
    for (uint32_t i = pl->nparams; i-- > 0;) {
        ss_bytes bytes = pl->params[i].numel * pl->grad_elem;
        em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_BACKWARD, "ddp.copy_from_bucket.p%u", i);
        em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, 2 * bytes), 0);
        em_dep(e, g->ar[bucket_of(pl, i)]);
        em_end(e);
    }
}

/* One micro-batch. The first allocates the gradients; later ones
 * accumulate into them. Under no_sync() the reducer stays silent until the
 * last micro-batch. */
static void ddp_micro(em *e, ddp_grads *g, uint32_t m)
{
    const plan *pl = e->pl;
    bool sync = em_syncs(e, m);
    em_input(e);
    for (uint32_t i = 0; i < pl->nblocks; i++) em_fwd_block(e, i, EM_NONE);
    em_loss(e);
    for (uint32_t i = pl->nblocks; i-- > 0;) {
        const plan_block *b = &pl->blocks[i];
        em_bwd_block(e, i, EM_NONE, &g->t_grad[b->param0], m == 0 ? b->nparam : 0);
        for (uint32_t k = b->nparam; sync && k-- > 0;) ddp_hook(e, g, b->param0 + k);
    }
    if (sync) ddp_finalize(e, g);
}

void ddp_body(em *e, ddp_grads *g)
{
    ddp_tensors(e, g);
    for (uint32_t m = 0; m < e->pl->s->grad_accum; m++) ddp_micro(e, g, m);
}

void ddp_zero_grad(em *e, const ddp_grads *g)
{
    em_begin(e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "zero_grad");
    em_cost(e, 0, 0, 0);
    for (uint32_t i = 0; i < e->pl->nparams; i++) em_mem(e, g->t_grad[i], PROG_FREE_AT_ISSUE);
    em_mem(e, e->t_input, PROG_FREE_AT_ISSUE);
    em_end(e);
}

static int ddp_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    em e;
    ddp_grads g = {0};
    em_tensors all = {0};
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    if (!(rc = ddp_grads_init(&g, pl, err)) && !(rc = em_tensors_all(pl, &all, err))) {
        em_states(&e, &all, &all);
        ddp_body(&e, &g);
        em_optim(&e, &all);
        ddp_zero_grad(&e, &g);
        rc = em_done(&e);
    }
    em_tensors_fini(&all);
    ddp_grads_fini(&g);
    em_fini(&e);
    return rc;
}

const sched_ops sched_ddp = {"ddp", SPEC_DDP, ddp_emit_rank};
