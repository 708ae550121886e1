/* The step with free communication. bound.h states the contract and why
 * it is a lower bound. */
#include "bound.h"

#include <stdlib.h>

#define NONE UINT32_MAX

typedef struct item {
    uint32_t r, op; /* rank, global op id */
} item;

typedef struct bd {
    const prog *p;
    uint32_t nr;       /* ranks evaluated: rk[0 .. nr) (bound.h: one per program) */
    uint32_t *rk, *ri; /* rk: evaluated -> program rank; ri: rank -> evaluated, NONE */
    uint64_t *base;    /* rank r's ops are global ids base[r] .. base[r + 1) */
    uint32_t *cnt;     /* inputs not yet known */
    ss_ns *ready;      /* max of the inputs known so far */
    ss_ns *end;
    uint32_t *succ;    /* next op on its stream (global), NONE */
    uint32_t *w0, *wait; /* waiters (ops naming it as a dep): wait[w0[g] .. w0[g + 1]) */
    uint32_t *inst;    /* collective: its instance; NONE for other ops */
    uint32_t *inext;   /* collective: the next member op that arrived at its instance */
    uint32_t *ihead, *iarrived, *isize;
    ss_ns *it;         /* instance: latest arrival */
    uint64_t *ibytes;  /* instance: the smallest payload of its members so far */
    const bound_net *net; /* each collective's least time; NULL: free communication */
    int rc;            /* the first error of net->coll_ns */
    ss_err *err;
    uint32_t *hpos;    /* per rank: the host's next op (local id) */
    ss_ns *hfree;      /* per rank: when the host is free */
    item *stack;
    size_t nstack;
    uint64_t finished, total;
    ss_ns step;
} bd;

static void push_end(bd *b, uint32_t r, uint32_t g, ss_ns t)
{
    b->end[g] = t;
    b->stack[b->nstack++] = (item){r, g};
}

/* The rank whose ops hold global id g: base[r] <= g < base[r + 1]. */
static uint32_t rank_of(const bd *b, uint32_t g)
{
    uint32_t lo = 0, hi = b->nr; /* base[lo] <= g < base[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->base[mid] <= g) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Op g of rank r knows all its inputs: a compute op ends dev_ns later, a
 * collective arrives at its instance, which ends (at once) with its last
 * member's arrival. */
static void activate(bd *b, uint32_t r, uint32_t g, const prog_op *op)
{
    if (op->kind == PROG_OP_COMPUTE) {
        push_end(b, r, g, b->ready[g] + op->dev_ns);
        return;
    }
    uint32_t k = b->inst[g];
    if (b->ready[g] > b->it[k]) b->it[k] = b->ready[g];
    if (op->bytes < b->ibytes[k]) b->ibytes[k] = op->bytes; /* the least any member moves */
    b->inext[g] = b->ihead[k];
    b->ihead[k] = g;
    if (++b->iarrived[k] < b->isize[k]) return;
    uint32_t gid = prog_op_group(b->p, b->rk[r], (uint32_t)(g - b->base[r]));
    ss_ns d = 0;
    if (b->net && !b->rc)
        b->rc = b->net->coll_ns(b->net->ctx, (prog_coll)op->coll, gid,
                                prog_group_net(b->p, gid), b->ibytes[k], &d, b->err);
    for (uint32_t m = b->ihead[k]; m != NONE; m = b->inext[m])
        push_end(b, rank_of(b, m), m, b->it[k] + d);
}

static void feed(bd *b, uint32_t g, ss_ns t)
{
    if (t > b->ready[g]) b->ready[g] = t;
    b->cnt[g]--;
}

/* The host of rank r issues what it can: device ops at once (host_ns
 * each), a HOST op once its deps ended. */
static void host_advance(bd *b, uint32_t r)
{
    const prog_op *ops = prog_ops(b->p, b->rk[r]);
    uint32_t n = prog_nops(b->p, b->rk[r]);
    for (; b->hpos[r] < n; b->hpos[r]++) {
        uint32_t i = b->hpos[r];
        uint32_t g = (uint32_t)(b->base[r] + i);
        if (ops[i].kind == PROG_OP_HOST) {
            if (b->cnt[g]) return;
            ss_ns start = b->hfree[r] > b->ready[g] ? b->hfree[r] : b->ready[g];
            b->hfree[r] = start + ops[i].host_ns;
            push_end(b, r, g, b->hfree[r]);
            continue;
        }
        b->hfree[r] += ops[i].host_ns;
        feed(b, g, b->hfree[r]);
        if (!b->cnt[g]) activate(b, r, g, &ops[i]);
    }
}

/* Op g of rank r ended: its stream successor and its waiters learn it. */
static void finish(bd *b, uint32_t r, uint32_t g)
{
    ss_ns t = b->end[g];
    const prog_op *ops = prog_ops(b->p, b->rk[r]);
    uint64_t base = b->base[r];
    b->finished++;
    if (t > b->step) b->step = t;
    uint32_t s = b->succ[g];
    if (s != NONE) {
        feed(b, s, t);
        if (!b->cnt[s]) activate(b, r, s, &ops[s - base]);
    }
    for (uint32_t w = b->w0[g]; w < b->w0[g + 1]; w++) {
        uint32_t k = b->wait[w];
        feed(b, k, t);
        if (b->cnt[k]) continue;
        if (ops[k - base].kind != PROG_OP_HOST) activate(b, r, k, &ops[k - base]);
        else if (b->hpos[r] == k - base) host_advance(b, r);
    }
}

ss_ns bound_coll_ns(prog_coll coll, uint64_t bytes, uint32_t n, double link_Bps)
{
    if (link_Bps <= 0 || n < 2) return 0;
    double moved = (double)bytes; /* broadcast, send_recv, send_up, send_down */
    if (coll == PROG_COLL_ALL_GATHER || coll == PROG_COLL_REDUCE_SCATTER ||
        coll == PROG_COLL_ALL_REDUCE || coll == PROG_COLL_ALL_TO_ALL)
        moved = moved * (n - 1) / n;
    double ns = moved / link_Bps * 1e9;
    return ns >= 1.8e19 ? (ss_ns)1.8e19 : (ss_ns)ns; /* rounded down: a lower bound */
}

static int links_ns(void *ctx, prog_coll coll, uint32_t gid, prog_group g, uint64_t bytes,
                    ss_ns *out, ss_err *err)
{
    (void)gid, (void)err;
    *out = bound_coll_ns(coll, bytes, g.size, *(const double *)ctx);
    return SS_OK;
}

bound_net bound_links(const double *link_Bps)
{
    return (bound_net){.coll_ns = links_ns, .ctx = (void *)link_Bps};
}

/* The members of group g that are evaluated. */
static uint32_t evaluated(const bd *b, uint32_t g)
{
    prog_group pg = prog_group_get(b->p, g);
    uint32_t n = 0;
    for (uint32_t i = 0; i < pg.size; i++) n += b->ri[pg.ranks[i]] != NONE;
    return n;
}

/* Whether a member outside the evaluated ranks shares the program of an
 * evaluated member of the same group, for every group an evaluated rank
 * calls: then it reaches each call when that member does (bound.h). */
static bool symmetric(const bd *b)
{
    uint32_t ng = prog_ngroups(b->p);
    unsigned char *seen = calloc(ng ? ng : 1, 1);
    bool ok = seen != NULL;
    for (uint32_t r = 0; ok && r < b->nr; r++) {
        const prog_op *ops = prog_ops(b->p, b->rk[r]);
        for (uint32_t i = 0; ok && i < prog_nops(b->p, b->rk[r]); i++) {
            if (ops[i].kind != PROG_OP_COLL) continue;
            uint32_t g = prog_op_group(b->p, b->rk[r], i);
            if (seen[g]) continue;
            seen[g] = 1;
            prog_group pg = prog_group_get(b->p, g);
            for (uint32_t k = 0; ok && k < pg.size; k++) {
                uint32_t m = pg.ranks[k]; /* a source is always evaluated */
                ok = b->ri[m] != NONE || prog_group_has(b->p, g, prog_rank_source(b->p, m));
            }
        }
    }
    free(seen);
    return ok;
}

/* The ranks to evaluate: one per program (the ranks that share none)
 * where that is exact, else every rank. 0 when out of memory. */
static int pick_ranks(bd *b, bool every)
{
    uint32_t n = prog_nranks(b->p);
    b->rk = malloc((n ? n : 1) * sizeof *b->rk);
    b->ri = malloc((n ? n : 1) * sizeof *b->ri);
    if (!b->rk || !b->ri) return 0;
    for (int pass = every ? 1 : 0; pass < 2; pass++) {
        b->nr = 0;
        for (uint32_t r = 0; r < n; r++) {
            bool take = pass || !prog_rank_shared(b->p, r);
            b->ri[r] = take ? b->nr : NONE;
            if (take) b->rk[b->nr++] = r;
        }
        if (pass || b->nr == n || symmetric(b)) break;
    }
    return 1;
}

/* Collectives: the k-th call of rank r naming group gid is instance k of
 * gid (as the engine numbers them). Instances get dense ids, group by
 * group. */
static int number_insts(bd *b)
{
    uint32_t ng = prog_ngroups(b->p);
    uint32_t *calls = calloc(ng ? ng : 1, sizeof *calls), *mark = calloc(ng ? ng : 1, sizeof *mark);
    uint64_t *ibase = calloc((size_t)ng + 1, sizeof *ibase);
    int ok = calls && mark && ibase;
    for (int pass = 0; ok && pass < 2; pass++) {
        for (uint32_t g = 0; g < ng; g++) mark[g] = 0;
        for (uint32_t r = 0; r < b->nr; r++) {
            const prog_op *ops = prog_ops(b->p, b->rk[r]);
            for (uint32_t i = 0; i < prog_nops(b->p, b->rk[r]); i++) {
                if (ops[i].kind != PROG_OP_COLL) continue;
                uint32_t gid = prog_op_group(b->p, b->rk[r], i);
                if (mark[gid] != r + 1) mark[gid] = r + 1, calls[gid] = 0;
                uint32_t k = calls[gid]++;
                if (pass) b->inst[b->base[r] + i] = (uint32_t)(ibase[gid] + k);
                else if (k + 1 > ibase[gid + 1]) ibase[gid + 1] = k + 1; /* ninst, for now */
            }
        }
        if (pass) break;
        for (uint32_t g = 0; g < ng; g++) ibase[g + 1] += ibase[g];
        uint64_t ninst = ibase[ng];
        b->ihead = malloc((ninst ? ninst : 1) * sizeof *b->ihead);
        b->iarrived = calloc(ninst ? ninst : 1, sizeof *b->iarrived);
        b->isize = malloc((ninst ? ninst : 1) * sizeof *b->isize);
        b->it = calloc(ninst ? ninst : 1, sizeof *b->it);
        b->ibytes = malloc((ninst ? ninst : 1) * sizeof *b->ibytes);
        ok = b->ihead && b->iarrived && b->isize && b->it && b->ibytes;
        for (uint32_t g = 0; ok && g < ng; g++) {
            uint32_t members = ibase[g + 1] > ibase[g] ? evaluated(b, g) : 0;
            for (uint64_t k = ibase[g]; k < ibase[g + 1]; k++) {
                b->ihead[k] = NONE;
                b->ibytes[k] = UINT64_MAX;
                b->isize[k] = members;
            }
        }
    }
    free(calls);
    free(mark);
    free(ibase);
    return ok;
}

/* Inputs per op, stream successors and the waiter lists (CSR). */
static int scan(bd *b)
{
    uint32_t last[PROG_NSTREAMS];
    for (uint32_t r = 0; r < b->nr; r++) {
        const prog_op *ops = prog_ops(b->p, b->rk[r]);
        const uint32_t *deps = prog_deps(b->p, b->rk[r]);
        uint64_t base = b->base[r];
        for (int s = 0; s < PROG_NSTREAMS; s++) last[s] = NONE;
        for (uint32_t i = 0; i < prog_nops(b->p, b->rk[r]); i++) {
            uint32_t g = (uint32_t)(base + i);
            const prog_op *op = &ops[i];
            b->cnt[g] = op->ndep;
            b->succ[g] = b->inext[g] = NONE;
            if (op->kind != PROG_OP_COLL) b->inst[g] = NONE;
            for (uint32_t d = 0; d < op->ndep; d++) b->w0[base + deps[op->dep0 + d] + 1]++;
            if (op->kind == PROG_OP_HOST) continue;
            b->cnt[g]++; /* its issue */
            if (op->stream == PROG_P2P) continue; /* unordered (prog.h) */
            if (last[op->stream] != NONE) {
                b->succ[last[op->stream]] = g;
                b->cnt[g]++;
            }
            last[op->stream] = g;
        }
    }
    for (uint64_t g = 0; g < b->total; g++) b->w0[g + 1] += b->w0[g];
    uint32_t *fill = malloc((b->total ? b->total : 1) * sizeof *fill);
    if (!fill) return 0;
    for (uint64_t g = 0; g < b->total; g++) fill[g] = b->w0[g];
    for (uint32_t r = 0; r < b->nr; r++) {
        const prog_op *ops = prog_ops(b->p, b->rk[r]);
        const uint32_t *deps = prog_deps(b->p, b->rk[r]);
        for (uint32_t i = 0; i < prog_nops(b->p, b->rk[r]); i++)
            for (uint32_t d = 0; d < ops[i].ndep; d++) {
                uint64_t t = b->base[r] + deps[ops[i].dep0 + d];
                b->wait[fill[t]++] = (uint32_t)(b->base[r] + i);
            }
    }
    free(fill);
    return 1;
}

static void bd_fini(bd *b)
{
    free(b->base), free(b->cnt), free(b->ready), free(b->end), free(b->succ);
    free(b->w0), free(b->wait), free(b->inst), free(b->inext), free(b->ihead);
    free(b->iarrived), free(b->isize), free(b->it), free(b->ibytes), free(b->hpos), free(b->hfree);
    free(b->stack), free(b->rk), free(b->ri);
}

static int bd_init(bd *b, const prog *p, bool every, ss_err *err)
{
    *b = (bd){.p = p};
    uint64_t ndeps = 0;
    if (!pick_ranks(b, every)) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    b->base = calloc((size_t)b->nr + 1, sizeof *b->base);
    if (!b->base) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t r = 0; r < b->nr; r++) {
        uint32_t n = prog_nops(p, b->rk[r]);
        const prog_op *ops = prog_ops(p, b->rk[r]);
        b->base[r + 1] = b->base[r] + n;
        for (uint32_t i = 0; i < n; i++) ndeps += ops[i].ndep;
    }
    b->total = b->base[b->nr];
    if (b->total >= NONE || ndeps >= NONE)
        return ss_fail(err, SS_E_INPUT, NULL, "%llu ops and %llu dependencies: the bound takes "
                       "fewer than 2^32 - 1 of each", (unsigned long long)b->total,
                       (unsigned long long)ndeps);
    size_t n = b->total ? (size_t)b->total : 1;
    b->cnt = malloc(n * sizeof *b->cnt);
    b->ready = calloc(n, sizeof *b->ready);
    b->end = calloc(n, sizeof *b->end);
    b->succ = malloc(n * sizeof *b->succ);
    b->w0 = calloc(n + 1, sizeof *b->w0);
    b->wait = malloc((ndeps ? ndeps : 1) * sizeof *b->wait);
    b->inst = malloc(n * sizeof *b->inst);
    b->inext = malloc(n * sizeof *b->inext);
    b->stack = malloc(n * sizeof *b->stack);
    b->hpos = calloc(b->nr ? b->nr : 1, sizeof *b->hpos);
    b->hfree = calloc(b->nr ? b->nr : 1, sizeof *b->hfree);
    if (!b->cnt || !b->ready || !b->end || !b->succ || !b->w0 || !b->wait || !b->inst ||
        !b->inext || !b->stack || !b->hpos || !b->hfree || !scan(b) || !number_insts(b))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return SS_OK;
}

/* Each op is pushed once (when its end is known) and popped once, so the
 * stack never holds more than the ops. */
static int run(const prog *p, const bound_net *net, bool every, ss_ns *out, ss_err *err)
{
    bd b;
    int rc = bd_init(&b, p, every, err);
    b.net = net, b.err = err;
    for (uint32_t r = 0; !rc && r < b.nr; r++) {
        host_advance(&b, r);
        while (b.nstack && !b.rc) {
            item x = b.stack[--b.nstack];
            finish(&b, x.r, x.op);
        }
        rc = b.rc;
    }
    if (!rc && b.finished != b.total)
        rc = ss_fail(err, SS_E_DEADLOCK, NULL, "%llu of %llu ops can never run",
                     (unsigned long long)(b.total - b.finished), (unsigned long long)b.total);
    if (!rc) *out = b.step;
    bd_fini(&b);
    return rc;
}

int bound_step(const prog *p, const bound_net *net, ss_ns *out, ss_err *err)
{
    return run(p, net, false, out, err);
}

int bound_step_every_rank(const prog *p, const bound_net *net, ss_ns *out, ss_err *err)
{
    return run(p, net, true, out, err);
}
