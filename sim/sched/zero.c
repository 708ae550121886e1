/* ZeRO-1 as PyTorch's ZeroRedundancyOptimizer over DDP: gradients are
 * all-reduced by DDP as usual; each rank's optimizer holds and updates only
 * the parameters it owns (largest first to the least loaded rank), then
 * every parameter is broadcast from its owner: one broadcast per parameter,
 * or one per rank with parameters_as_bucket_view. */
#include "emit.h"

#include <stdlib.h>

static uint64_t owned_numel(const plan *pl, const uint32_t *owner, uint32_t rank)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < pl->nparams; i++)
        if (owner[i] == rank) n += pl->params[i].numel;
    return n;
}

static void zro_broadcasts(em *e, const uint32_t *owner, uint32_t step)
{
    const plan *pl = e->pl;
    if (pl->s->shard.parameters_as_bucket_view) {
        for (uint32_t r = 0; r < pl->n; r++) {
            em_begin(e, PROG_OP_COLL, PROG_UNSHARD, PROG_PH_OPTIMIZER, "zero.broadcast.rank%u", r);
            em_coll(e, PROG_COLL_BROADCAST, owned_numel(pl, owner, r) * pl->param_elem);
            em_dep(e, step);
            em_end(e);
        }
        return;
    }
    for (uint32_t i = 0; i < pl->nparams; i++) {
        em_begin(e, PROG_OP_COLL, PROG_UNSHARD, PROG_PH_OPTIMIZER, "zero.broadcast.p%u", i);
        em_coll(e, PROG_COLL_BROADCAST, pl->params[i].numel * pl->param_elem);
        em_dep(e, step);
        em_end(e);
    }
}

static int zro_body(em *e, ddp_grads *g, const em_tensors *all, const uint32_t *owner)
{
    em_tensors mine;
    int rc = em_tensors_init(&mine, all->n, e->err);
    if (rc) return rc;
    for (uint32_t i = 0; i < all->n; i++)
        if (owner[i] == e->rank) em_tensors_add(&mine, all->numel[i], all->label[i]);
    em_states(e, all, &mine);
    ddp_body(e, g);
    uint32_t step = em_optim(e, &mine);
    zro_broadcasts(e, owner, step);
    ddp_zero_grad(e, g);
    em_tensors_fini(&mine);
    return em_done(e);
}

static int zro_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    em e;
    ddp_grads g = {0};
    em_tensors all = {0};
    uint32_t *owner = malloc((pl->nparams ? pl->nparams : 1) * sizeof *owner);
    if (!owner) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) {
        free(owner);
        return rc;
    }
    if (!(rc = ddp_grads_init(&g, pl, err)) && !(rc = em_tensors_all(pl, &all, err))) {
        rc = st_zro_owners(all.numel, all.n, pl->n, owner)
                 ? ss_fail(err, SS_E_NOMEM, NULL, "out of memory")
                 : zro_body(&e, &g, &all, owner);
    }
    em_tensors_fini(&all);
    ddp_grads_fini(&g);
    em_fini(&e);
    free(owner);
    return rc;
}

const sched_ops sched_zero1 = {"zero1", SPEC_ZERO1, zro_emit_rank};
