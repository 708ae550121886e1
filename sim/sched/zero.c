/* ZeRO-1 as PyTorch's ZeroRedundancyOptimizer over DDP: gradients are
 * all-reduced by DDP as usual; each rank's optimizer holds and updates only
 * the parameters it owns (largest first to the least loaded rank), then
 * every parameter is broadcast from its owner: one broadcast per parameter,
 * or one per rank with parameters_as_bucket_view. */
#include "emit.h"

#include <stdlib.h>

typedef struct zro_owned {
    uint64_t numel, max;
    uint32_t count;
} zro_owned;

static zro_owned owned_by(const plan *pl, const uint32_t *owner, uint32_t rank)
{
    zro_owned o = {0, 0, 0};
    for (uint32_t i = 0; i < pl->nparams; i++) {
        if (owner[i] != rank) continue;
        o.numel += pl->params[i].numel;
        o.count++;
        if (pl->params[i].numel > o.max) o.max = pl->params[i].numel;
    }
    return o;
}

static void zro_broadcasts(em *e, const uint32_t *owner, uint32_t step)
{
    const plan *pl = e->pl;
    if (pl->s->shard.parameters_as_bucket_view) {
        for (uint32_t r = 0; r < pl->n; r++) {
            zro_owned o = owned_by(pl, owner, r);
            em_begin(e, PROG_OP_COLL, PROG_UNSHARD, PROG_PH_OPTIMIZER, "zero.broadcast.rank%u", r);
            em_coll(e, PROG_COLL_BROADCAST, o.numel * pl->param_elem);
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

static int zro_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    uint32_t *owner = malloc((pl->nparams ? pl->nparams : 1) * sizeof *owner);
    if (!owner) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    uint64_t *numels = malloc((pl->nparams ? pl->nparams : 1) * sizeof *numels);
    em e;
    ddp_grads g = {0};
    int rc = numels ? em_init(&e, pl, p, rank, err)
                    : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (rc) goto out_owner;
    if ((rc = ddp_grads_init(&g, pl, err))) goto out_em;
    for (uint32_t i = 0; i < pl->nparams; i++) numels[i] = pl->params[i].numel;
    st_zro_owners(numels, pl->nparams, pl->n, owner);
    zro_owned mine = owned_by(pl, owner, rank);
    em_states(&e);
    ddp_body(&e, &g);
    uint32_t step = em_optim(&e, mine.numel, mine.count, mine.max);
    zro_broadcasts(&e, owner, step);
    ddp_zero_grad(&e, &g);
    rc = em_done(&e);
    ddp_grads_fini(&g);
out_em:
    em_fini(&e);
out_owner:
    free(numels);
    free(owner);
    return rc;
}

const sched_ops sched_zero1 = {"zero1", SPEC_ZERO1, zro_emit_rank};
