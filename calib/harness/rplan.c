#include "rplan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define RPLAN_NONE UINT32_MAX

static const char *const kind_names[RPLAN_NKINDS] = {
#define RPLAN_NAME_(id, name) name,
    RPLAN_KINDS(RPLAN_NAME_)
#undef RPLAN_NAME_
};

const char *rplan_kind_name(rplan_kind k)
{
    return (unsigned)k < RPLAN_NKINDS ? kind_names[k] : "?";
}

void rplan_free(rplan *rp)
{
    if (!rp) return;
    free(rp->steps);
    free(rp->gemms);
    free(rp->idx);
    free(rp->tensors);
    free(rp);
}

/* ---- plan blocks by name ---- */

typedef struct bname {
    const char *name;
    uint32_t block; /* RPLAN_NONE: two blocks share the name */
} bname;

static int bname_cmp(const void *a, const void *b)
{
    return strcmp(((const bname *)a)->name, ((const bname *)b)->name);
}

/* Blocks sorted by name; duplicated names map to RPLAN_NONE, so an op whose
 * name is ambiguous is never given another block's shapes. */
static bname *block_index(const plan *pl)
{
    bname *ix = malloc((pl->nblocks ? pl->nblocks : 1) * sizeof *ix);
    if (!ix) return NULL;
    for (uint32_t i = 0; i < pl->nblocks; i++) ix[i] = (bname){pl->blocks[i].name, i};
    qsort(ix, pl->nblocks, sizeof *ix, bname_cmp);
    for (uint32_t i = 1; i < pl->nblocks; i++)
        if (!strcmp(ix[i - 1].name, ix[i].name)) ix[i - 1].block = ix[i].block = RPLAN_NONE;
    return ix;
}

/* The block an op named "fwd.<block>" / "bwd.<block>" runs, with *bwd set;
 * RPLAN_NONE for any other name. */
static uint32_t block_of(const bname *ix, uint32_t n, const char *opname, bool *bwd)
{
    if (strncmp(opname, "fwd.", 4) != 0 && strncmp(opname, "bwd.", 4) != 0) return RPLAN_NONE;
    *bwd = opname[0] == 'b';
    bname key = {opname + 4, 0};
    const bname *hit = bsearch(&key, ix, n, sizeof *ix, bname_cmp);
    return hit ? hit->block : RPLAN_NONE;
}

/* ---- building ---- */

typedef struct rb {
    rplan *rp;
    const prog_op *ops;
    const uint32_t *deps;
    const prog_mem *mems;
    bname *ix;
    uint32_t capidx, capgemm;
    ss_err *err;
} rb;

static bool fits_int(uint64_t v) { return v > 0 && v <= INT_MAX; }

static void add_gemm(rb *b, rplan_step *st, uint64_t m, uint64_t n, uint64_t k)
{
    rplan *rp = b->rp;
    rp->gemms[rp->ngemms++] = (rplan_gemm){(uint32_t)m, (uint32_t)n, (uint32_t)k};
    st->ngemm++;
    if (m * k > rp->max_a) rp->max_a = m * k;
    if (k * n > rp->max_b) rp->max_b = k * n;
    if (m * n > rp->max_c) rp->max_c = m * n;
}

/* A linear block's GEMMs: forward Y = X W (t x in . in x out); backward the
 * input gradient dX = dY W^T (t x out . out x in) unless the block needs
 * none, and the weight gradient dW = dY^T X (out x t . t x in). Only linear
 * blocks carry their shapes in the plan; false for the others. */
static bool block_gemms(rb *b, rplan_step *st, const plan_block *blk, bool bwd)
{
    const spec_block *sb = blk->spec;
    uint64_t t = b->rp->pl->tokens;
    if (!sb || !fits_int(t) || !fits_int(sb->in) || !fits_int(sb->out)) return false;
    if (!fits_int(t * sb->in) || !fits_int(t * sb->out) || !fits_int(sb->in * sb->out))
        return false;
    st->gemm0 = b->rp->ngemms;
    if (!bwd) {
        add_gemm(b, st, t, sb->out, sb->in);
        return true;
    }
    if (blk->dgrad) add_gemm(b, st, t, sb->in, sb->out);
    add_gemm(b, st, sb->out, sb->in, t);
    return true;
}

static void compute_step(rb *b, uint32_t i, rplan_step *st)
{
    const prog_op *op = &b->ops[i];
    const plan *pl = b->rp->pl;
    const char *nm = prog_str_get(b->rp->p, op->name);
    spec_dtype cdt = pl->s->prec.compute;
    st->dtype = (uint8_t)(cdt == SPEC_DT_FP8 ? SPEC_DT_BF16 : cdt);
    bool bwd = false;
    uint32_t blk = block_of(b->ix, pl->nblocks, nm, &bwd);
    if (op->stream == PROG_COPY && op->bytes > 0) {
        st->kind = RPLAN_COPY;
        st->copy_dir = strstr(nm, "h2d") ? RPLAN_H2D : strstr(nm, "d2h") ? RPLAN_D2H : RPLAN_D2D;
        st->bytes = op->bytes;
        if (op->bytes > b->rp->max_copy_bytes) b->rp->max_copy_bytes = op->bytes;
    } else if (op->dev_ns == 0) {
        st->kind = RPLAN_MARKER;
    } else if (blk != RPLAN_NONE && block_gemms(b, st, &pl->blocks[blk], bwd)) {
        st->kind = RPLAN_GEMM;
        if (cdt == SPEC_DT_FP8) st->flags |= RPLAN_F_DTYPE;
    } else {
        st->kind = RPLAN_SPIN;
        st->flags |= RPLAN_F_PREDICTED;
    }
}

/* The dtype a collective moves: gradients travel in the reduce dtype,
 * gathered parameters in the compute dtype, broadcast parameters in theirs. */
static spec_dtype coll_dtype(const spec_precision *pr, prog_coll c)
{
    if (c == PROG_COLL_ALL_REDUCE || c == PROG_COLL_REDUCE_SCATTER) return pr->reduce;
    if (c == PROG_COLL_BROADCAST) return pr->param;
    return pr->compute;
}

static void coll_step(rb *b, uint32_t i, rplan_step *st)
{
    const prog_op *op = &b->ops[i];
    prog_group g = prog_group_get(b->rp->p, prog_op_group(b->rp->p, b->rp->rank, i));
    st->kind = RPLAN_COLL;
    st->coll = op->coll;
    st->bytes = op->bytes;
    st->group_size = g.size;
    st->dtype = (uint8_t)coll_dtype(&b->rp->pl->s->prec, (prog_coll)op->coll);
    if (g.size > 1) st->flags |= RPLAN_F_ONE_RANK;
    if (op->bytes > b->rp->max_coll_bytes) b->rp->max_coll_bytes = op->bytes;
}

static void push_idx(rb *b, uint32_t v) { b->rp->idx[b->rp->nidx++] = v; }

/* Waits (device op), syncs (HOST op) or nothing (implied), per dep. */
static int wire_deps(rb *b, uint32_t i, rplan_step *st)
{
    const prog_op *op = &b->ops[i];
    bool host = op->kind == PROG_OP_HOST;
    uint32_t *first = host ? &st->sync0 : &st->wait0, *n = host ? &st->nsync : &st->nwait;
    *first = b->rp->nidx;
    for (uint32_t k = 0; k < op->ndep; k++) {
        uint32_t d = b->deps[op->dep0 + k];
        if (d >= i)
            return ss_fail(b->err, SS_E_INTERNAL, NULL,
                           "rank %u op %u depends on op %u, which is not an earlier op",
                           b->rp->rank, i, d);
        const prog_op *dop = &b->ops[d];
        if (dop->kind == PROG_OP_HOST || (!host && dop->stream == op->stream)) {
            b->rp->implied++;
            continue;
        }
        push_idx(b, d);
        (*n)++;
        if (host) b->rp->syncs++;
        else b->rp->waits++;
    }
    return SS_OK;
}

/* One memory action list (act) of op i into [*first, *first + *n). */
static int wire_mem(rb *b, uint32_t i, prog_memact act, uint32_t *first, uint32_t *n)
{
    const prog_op *op = &b->ops[i];
    *first = b->rp->nidx;
    for (uint32_t k = 0; k < op->nmem; k++) {
        const prog_mem *m = &b->mems[op->mem0 + k];
        if (m->act != act) continue;
        if (m->tensor >= b->rp->ntensors)
            return ss_fail(b->err, SS_E_INTERNAL, NULL, "rank %u op %u names tensor %u of %u",
                           b->rp->rank, i, m->tensor, b->rp->ntensors);
        if (act == PROG_ALLOC_AT_ISSUE)
            b->rp->tensors[m->tensor].stream = (uint8_t)(op->kind == PROG_OP_HOST ? PROG_COMPUTE
                                                                                   : op->stream);
        push_idx(b, m->tensor);
        (*n)++;
    }
    return SS_OK;
}

static int plan_step(rb *b, uint32_t i)
{
    const prog_op *op = &b->ops[i];
    rplan *rp = b->rp;
    rplan_step *st = &rp->steps[i];
    *st = (rplan_step){.stream = op->stream, .ns = op->dev_ns};
    if (op->kind == PROG_OP_HOST) {
        st->kind = RPLAN_HOST;
        st->stream = PROG_HOST;
        st->ns = op->host_ns;
        if (op->host_ns) st->flags |= RPLAN_F_HOST_WAIT;
    } else if (op->kind == PROG_OP_COLL) {
        coll_step(b, i, st);
    } else {
        compute_step(b, i, st);
    }
    int rc = wire_deps(b, i, st);
    if (!rc) rc = wire_mem(b, i, PROG_ALLOC_AT_ISSUE, &st->alloc0, &st->nalloc);
    if (!rc) rc = wire_mem(b, i, PROG_FREE_AT_ISSUE, &st->freei0, &st->nfreei);
    if (!rc) rc = wire_mem(b, i, PROG_FREE_AT_END, &st->freee0, &st->nfreee);
    if (rc) return rc;
    rp->count[st->kind]++;
    if (st->flags) rp->flagged++;
    if (st->kind != RPLAN_HOST) rp->streams |= 1u << st->stream;
    return SS_OK;
}

/* Room for every array: idx holds at most one entry per dep and per memory
 * action; a step has at most two GEMMs. */
static int alloc_arrays(rb *b)
{
    rplan *rp = b->rp;
    uint32_t n = rp->nsteps;
    uint64_t nidx = 0;
    for (uint32_t i = 0; i < n; i++) nidx += (uint64_t)b->ops[i].ndep + b->ops[i].nmem;
    if (nidx > UINT32_MAX || 2ull * n > UINT32_MAX)
        return ss_fail(b->err, SS_E_OVERFLOW, NULL, "rank %u: too many deps to replay", rp->rank);
    rp->steps = calloc(n ? n : 1, sizeof *rp->steps);
    rp->gemms = calloc(n ? 2 * (size_t)n : 1, sizeof *rp->gemms);
    rp->idx = calloc(nidx ? nidx : 1, sizeof *rp->idx);
    rp->tensors = calloc(rp->ntensors ? rp->ntensors : 1, sizeof *rp->tensors);
    b->ix = block_index(rp->pl);
    if (!rp->steps || !rp->gemms || !rp->idx || !rp->tensors || !b->ix)
        return ss_fail(b->err, SS_E_NOMEM, NULL, "out of memory planning the replay");
    const prog_tensor *ts = prog_tensors(rp->p, rp->rank);
    for (uint32_t t = 0; t < rp->ntensors; t++)
        rp->tensors[t] = (rplan_tensor){ts[t].bytes, PROG_COMPUTE, ts[t].live_at_start != 0};
    return SS_OK;
}

int rplan_new(rplan **out, const plan *pl, const prog *p, uint32_t rank, ss_err *err)
{
    if (rank >= prog_nranks(p))
        return ss_fail(err, SS_E_INPUT, "--rank", "rank %u does not exist: the program has %u ranks",
                       rank, prog_nranks(p));
    rplan *rp = calloc(1, sizeof *rp);
    if (!rp) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory planning the replay");
    *rp = (rplan){.pl = pl, .p = p, .rank = rank, .nsteps = prog_nops(p, rank),
                  .ntensors = prog_ntensors(p, rank)};
    rb b = {rp, prog_ops(p, rank), prog_deps(p, rank), prog_mems(p, rank), NULL, 0, 0, err};
    int rc = alloc_arrays(&b);
    for (uint32_t i = 0; !rc && i < rp->nsteps; i++) rc = plan_step(&b, i);
    free(b.ix);
    if (rc) {
        rplan_free(rp);
        return rc;
    }
    *out = rp;
    return SS_OK;
}

static int gemm_cmp(const void *a, const void *b)
{
    const rplan_gemm *x = a, *y = b;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

int rplan_unique_gemms(const rplan *rp, rplan_gemm **out, uint32_t *n, ss_err *err)
{
    *out = NULL;
    *n = 0;
    if (!rp->ngemms) return SS_OK;
    rplan_gemm *g = malloc(rp->ngemms * sizeof *g);
    if (!g) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    memcpy(g, rp->gemms, rp->ngemms * sizeof *g);
    qsort(g, rp->ngemms, sizeof *g, gemm_cmp);
    uint32_t k = 0;
    for (uint32_t i = 0; i < rp->ngemms; i++)
        if (!k || gemm_cmp(&g[k - 1], &g[i])) g[k++] = g[i];
    *out = g;
    *n = k;
    return SS_OK;
}
