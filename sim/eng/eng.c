/* The engine: per rank a host thread walking ops in program order, device
 * streams running their ops in issue order, collectives that start when all
 * members arrived. See plan/prog.h for the rules and eng.h for the contract.
 *
 * Deps are same-rank only, so whenever an op of rank r ends, retrying rank
 * r's host and its streams' heads is enough to find everything that may
 * start now (five streams and one host per rank: no waiter lists needed). */
#include "eng.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eq.h"

enum { EV_END, EV_ISSUE };

typedef struct op_st {
    uint8_t issued, started, done;
    uint32_t inst; /* COLL: instance index within its group */
} op_st;

typedef struct strm {
    uint32_t *q; /* issued op ids, FIFO */
    uint32_t head, len, cap;
    bool busy;   /* running an op, or holding a collective that waits */
} strm;

typedef struct rank_st {
    uint32_t hpos; /* next op the host will look at */
    bool host_busy;
    strm s[PROG_NSTREAMS];
    op_st *ops;
} rank_st;

typedef struct grp_st {
    uint32_t size, ninst;
    uint32_t *member_op; /* [inst * size + member] */
    uint32_t *arrived;   /* per inst */
    ss_ns *tmax;         /* per inst */
} grp_st;

typedef struct eng {
    const prog *p;
    const eng_net *net;
    trc *t;
    eq q;
    rank_st *r;
    grp_st *g;
    uint64_t seq; /* trace order of issue/start/end records */
    ss_err *err;
} eng;

static int nomem(eng *e) { return ss_fail(e->err, SS_E_NOMEM, NULL, "out of memory in the engine"); }

/* ---- setup ---- */

static uint32_t member_index(prog_group g, uint32_t rank)
{
    for (uint32_t i = 0; i < g.size; i++)
        if (g.ranks[i] == rank) return i;
    return UINT32_MAX;
}

/* Number every rank's collectives per group in program order: the k-th call
 * on each member is instance k. */
static int number_colls(eng *e)
{
    uint32_t ng = prog_ngroups(e->p), nr = prog_nranks(e->p);
    uint32_t *count = calloc(ng ? ng : 1, sizeof *count);
    if (!count) return nomem(e);
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t r = 0; r < nr; r++) {
            memset(count, 0, (ng ? ng : 1) * sizeof *count);
            const prog_op *ops = prog_ops(e->p, r);
            for (uint32_t i = 0; i < prog_nops(e->p, r); i++) {
                if (ops[i].kind != PROG_OP_COLL) continue;
                uint32_t k = count[ops[i].group]++;
                grp_st *g = &e->g[ops[i].group];
                if (pass == 0 && k + 1 > g->ninst) g->ninst = k + 1;
                if (pass == 1) {
                    e->r[r].ops[i].inst = k;
                    uint32_t m = member_index(prog_group_get(e->p, ops[i].group), r);
                    g->member_op[(size_t)k * g->size + m] = i;
                }
            }
        }
        for (uint32_t gi = 0; pass == 0 && gi < ng; gi++) {
            grp_st *g = &e->g[gi];
            size_t n = (size_t)g->ninst * g->size;
            g->member_op = malloc((n ? n : 1) * sizeof *g->member_op);
            g->arrived = calloc(g->ninst ? g->ninst : 1, sizeof *g->arrived);
            g->tmax = calloc(g->ninst ? g->ninst : 1, sizeof *g->tmax);
            if (!g->member_op || !g->arrived || !g->tmax) {
                free(count);
                return nomem(e);
            }
            for (size_t j = 0; j < n; j++) g->member_op[j] = UINT32_MAX;
        }
    }
    free(count);
    return SS_OK;
}

static int eng_setup(eng *e)
{
    uint32_t nr = prog_nranks(e->p), ng = prog_ngroups(e->p);
    e->r = calloc(nr, sizeof *e->r);
    e->g = calloc(ng ? ng : 1, sizeof *e->g);
    if (!e->r || !e->g) return nomem(e);
    for (uint32_t r = 0; r < nr; r++) {
        uint32_t n = prog_nops(e->p, r);
        e->r[r].ops = calloc(n ? n : 1, sizeof *e->r[r].ops);
        if (!e->r[r].ops) return nomem(e);
    }
    for (uint32_t gi = 0; gi < ng; gi++) e->g[gi].size = prog_group_get(e->p, gi).size;
    int rc = number_colls(e);
    if (rc) return rc;
    for (uint32_t r = 0; r < nr && !rc; r++)
        rc = eq_push(&e->q, 0, EQ_CLS_HOST, EV_ISSUE, r, UINT32_MAX, e->err);
    return rc;
}

static void eng_teardown(eng *e)
{
    for (uint32_t r = 0; e->r && r < prog_nranks(e->p); r++) {
        free(e->r[r].ops);
        for (int s = 0; s < PROG_NSTREAMS; s++) free(e->r[r].s[s].q);
    }
    for (uint32_t gi = 0; e->g && gi < prog_ngroups(e->p); gi++) {
        free(e->g[gi].member_op);
        free(e->g[gi].arrived);
        free(e->g[gi].tmax);
    }
    free(e->r);
    free(e->g);
    eq_fini(&e->q);
}

/* ---- execution ---- */

static bool deps_done(const eng *e, uint32_t r, const prog_op *op)
{
    const uint32_t *deps = prog_deps(e->p, r) + op->dep0;
    for (uint32_t i = 0; i < op->ndep; i++)
        if (!e->r[r].ops[deps[i]].done) return false;
    return true;
}

static int start_op(eng *e, uint32_t r, uint32_t i, ss_ns t, ss_ns dur)
{
    trc_op *rec = &e->t->ops[r][i];
    rec->start = t;
    rec->seq_start = e->seq++;
    rec->end = t + dur;
    e->r[r].ops[i].started = 1;
    return eq_push(&e->q, t + dur, EQ_CLS_END, EV_END, r, i, e->err);
}

static int coll_arrive(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    const prog_op *op = &prog_ops(e->p, r)[i];
    grp_st *g = &e->g[op->group];
    uint32_t k = e->r[r].ops[i].inst;
    if (t > g->tmax[k]) g->tmax[k] = t;
    if (++g->arrived[k] < g->size) return SS_OK;
    prog_group pg = prog_group_get(e->p, op->group);
    uint32_t lead = pg.ranks[0];
    const prog_op *lop = &prog_ops(e->p, lead)[g->member_op[(size_t)k * g->size]];
    ss_ns dur = 0;
    int rc = e->net->coll_ns(e->net->ctx, (prog_coll)lop->coll, pg, lop->bytes, &dur, e->err);
    for (uint32_t m = 0; m < g->size && !rc; m++)
        rc = start_op(e, pg.ranks[m], g->member_op[(size_t)k * g->size + m], g->tmax[k], dur);
    return rc;
}

static int try_stream(eng *e, uint32_t r, int s, ss_ns t)
{
    strm *st = &e->r[r].s[s];
    if (st->busy || st->head == st->len) return SS_OK;
    uint32_t i = st->q[st->head];
    const prog_op *op = &prog_ops(e->p, r)[i];
    if (!deps_done(e, r, op)) return SS_OK;
    st->busy = true;
    if (op->kind == PROG_OP_COLL) return coll_arrive(e, r, i, t);
    return start_op(e, r, i, t, op->dev_ns);
}

static int enqueue(eng *e, uint32_t r, uint32_t i)
{
    strm *st = &e->r[r].s[prog_ops(e->p, r)[i].stream];
    if (st->len == st->cap) {
        uint32_t cap = st->cap ? st->cap * 2 : 64;
        uint32_t *q = realloc(st->q, (size_t)cap * sizeof *q);
        if (!q) return nomem(e);
        st->q = q;
        st->cap = cap;
    }
    st->q[st->len++] = i;
    return SS_OK;
}

/* The host takes the next op in program order if it can. */
static int host_step(eng *e, uint32_t r, ss_ns t)
{
    rank_st *rs = &e->r[r];
    if (rs->host_busy || rs->hpos == prog_nops(e->p, r)) return SS_OK;
    uint32_t i = rs->hpos;
    const prog_op *op = &prog_ops(e->p, r)[i];
    if (op->kind == PROG_OP_HOST) {
        if (!deps_done(e, r, op)) return SS_OK; /* blocked; an END retries */
        rs->host_busy = true;
        rs->hpos++;
        e->t->ops[r][i].issue = t;
        e->t->ops[r][i].seq_issue = e->seq;
        return start_op(e, r, i, t, op->host_ns);
    }
    rs->host_busy = true;
    rs->hpos++;
    return eq_push(&e->q, t + op->host_ns, EQ_CLS_ISSUE, EV_ISSUE, r, i, e->err);
}

static int retry_rank(eng *e, uint32_t r, ss_ns t)
{
    int rc = SS_OK;
    for (int s = 0; s < PROG_NSTREAMS && !rc; s++)
        if (s != PROG_HOST) rc = try_stream(e, r, s, t);
    return rc ? rc : host_step(e, r, t);
}

static int on_issue(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    if (i != UINT32_MAX) {
        e->t->ops[r][i].issue = t;
        e->t->ops[r][i].seq_issue = e->seq++;
        e->r[r].ops[i].issued = 1;
        int rc = enqueue(e, r, i);
        if (rc) return rc;
        e->r[r].host_busy = false;
    }
    return retry_rank(e, r, t);
}

static int on_end(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    const prog_op *op = &prog_ops(e->p, r)[i];
    e->r[r].ops[i].done = 1;
    e->t->ops[r][i].seq_end = e->seq++;
    if (t > e->t->step_ns) e->t->step_ns = t;
    if (op->kind == PROG_OP_HOST) {
        e->r[r].host_busy = false;
    } else {
        strm *st = &e->r[r].s[op->stream];
        st->busy = false;
        st->head++;
    }
    return retry_rank(e, r, t);
}

/* ---- deadlock report ---- */

static const char *why_stuck(const eng *e, uint32_t r, uint32_t i, char *buf, size_t n)
{
    const prog_op *op = &prog_ops(e->p, r)[i];
    const op_st *os = &e->r[r].ops[i];
    const uint32_t *deps = prog_deps(e->p, r) + op->dep0;
    for (uint32_t d = 0; d < op->ndep; d++)
        if (!e->r[r].ops[deps[d]].done) {
            snprintf(buf, n, "it waits for op %u (%s), which never ends", deps[d],
                     prog_str_get(e->p, prog_ops(e->p, r)[deps[d]].name));
            return buf;
        }
    if (op->kind != PROG_OP_HOST && !os->issued)
        snprintf(buf, n, "the host never issued it (it is blocked at op %u)", e->r[r].hpos);
    else if (op->kind == PROG_OP_COLL && e->r[r].s[op->stream].q[e->r[r].s[op->stream].head] == i)
        snprintf(buf, n, "collective instance %u of group %u: only %u of %u members arrived",
                 os->inst, op->group, e->g[op->group].arrived[os->inst], e->g[op->group].size);
    else
        snprintf(buf, n, "an earlier op on its %s stream never ends",
                 prog_stream_name((prog_stream)op->stream));
    return buf;
}

static int check_all_done(eng *e)
{
    for (uint32_t r = 0; r < prog_nranks(e->p); r++)
        for (uint32_t i = 0; i < prog_nops(e->p, r); i++) {
            if (e->r[r].ops[i].done) continue;
            char why[256];
            return ss_fail(e->err, SS_E_DEADLOCK, NULL,
                           "the program cannot finish: rank %u op %u (%s) never runs: %s", r,
                           i, prog_str_get(e->p, prog_ops(e->p, r)[i].name),
                           why_stuck(e, r, i, why, sizeof why));
        }
    return SS_OK;
}

int eng_run(const prog *p, const eng_net *net, trc **out, ss_err *err)
{
    eng e = {.p = p, .net = net, .err = err};
    int rc = eq_init(&e.q, err);
    if (rc) return rc;
    if (!(rc = trc_new(&e.t, p, err))) rc = eng_setup(&e);
    eq_ev ev;
    while (!rc && eq_pop(&e.q, &ev)) {
        e.t->nevents++;
        rc = ev.kind == EV_END ? on_end(&e, ev.a, ev.b, ev.t) : on_issue(&e, ev.a, ev.b, ev.t);
    }
    if (!rc) rc = check_all_done(&e);
    eng_teardown(&e);
    if (rc) {
        trc_free(e.t);
        return rc;
    }
    *out = e.t;
    return SS_OK;
}
