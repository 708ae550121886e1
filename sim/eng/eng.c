/* The engine: per rank a host thread walking ops in program order, device
 * streams running their ops in issue order, collectives that start when all
 * members arrived. plan/prog.h states the rules, eng.h the contract.
 *
 * State changes only at events: a host finishes issuing a device op
 * (EV_ISSUE), an op ends (EV_END), or a host starts (EV_KICK, once per rank
 * at t = 0). Deps are same-rank, so after an event of rank r only rank r's
 * host and the heads of its four device streams can have become runnable;
 * retrying those five is O(1). Each op counts its unfinished deps, and each
 * op lists the ops waiting on it (built once, CSR), so deps cost O(1) each
 * in all. Everything that becomes runnable at t starts at t, so start =
 * max(issue, previous op on the stream ended, deps ended) falls out of event
 * order. Total O((ops + deps) log ops) for the queue, plus O(ops log size)
 * to find each rank's place in its groups.
 *
 * seq: one counter, incremented at every issue, start and end recorded in
 * the trace, in processing order, so same-instant records are totally
 * ordered (the memory replay sorts by (t, seq)). */
#include "eng.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/vec.h"
#include "eq.h"

/* eq_ev.kind; a = rank, b = op, except EV_NET: a = instance, b = generation */
enum { EV_KICK, EV_ISSUE, EV_END, EV_NET };

#define NONE UINT32_MAX

typedef struct op_st {
    uint32_t pending; /* deps that have not ended yet */
    uint32_t inst;    /* COLL: instance number within its group */
    uint8_t issued;   /* device op: the host finished issuing it */
    uint8_t arrived;  /* COLL: ready and holding its stream, peers awaited */
    uint8_t done;
} op_st;

/* A device stream: its ops in program order, which is issue order. */
typedef struct strm {
    uint32_t off, len; /* rank_st.sorder[off .. off+len) */
    uint32_t head;     /* index of the next op to run, in [0, len] */
    bool busy;         /* running its head, or holding a waiting collective */
} strm;

typedef struct rank_st {
    const prog_op *ops;
    uint32_t nops;
    uint32_t hpos;    /* next op the host looks at */
    bool host_busy;   /* issuing a device op or running a HOST op */
    op_st *st;        /* [nops] */
    uint32_t *sorder; /* [nops] device op ids grouped by stream */
    uint32_t *w0;     /* [nops + 1] waiters of op i: wait[w0[i] .. w0[i+1]) */
    uint32_t *wait;   /* [ndeps] */
    strm s[PROG_NSTREAMS];
} rank_st;

typedef struct grp_st {
    prog_group pg;
    uint32_t base;       /* global instance id of instance 0 (dynamic networks) */
    uint32_t ninst;      /* most calls any member makes */
    uint32_t *member_op; /* [inst * size + member]: op id, NONE if never called */
    uint32_t *arrived;   /* [inst]: members whose op arrived */
} grp_st;

/* Wake requests collected during one network call. */
struct eng_wakes {
    struct wake { uint32_t id; ss_ns t; } *w;
    uint32_t n, cap;
};

typedef struct eng {
    const prog *p;
    const eng_net *net;
    ss_err *err;
    uint32_t nr, ng;
    rank_st *r;
    grp_st *g;
    eq q;
    trc *t;
    uint64_t seq;
    uint32_t ninst;   /* instances over all groups */
    uint32_t *gen;    /* [ninst]: generation of the pending wake */
    uint32_t *inst_g; /* [ninst]: group of the instance */
    eng_wakes wakes;
} eng;

static int nomem(eng *e)
{
    return ss_fail(e->err, SS_E_NOMEM, NULL, "out of memory in the engine");
}

/* calloc that never returns NULL for an empty array. */
static void *zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static const char *op_name(const eng *e, uint32_t r, uint32_t i)
{
    return prog_str_get(e->p, e->r[r].ops[i].name);
}

/* ---- setup ---- */

/* Reverse deps as CSR: count per target, prefix-sum, fill with a moving
 * cursor, then shift the cursors back into start offsets. Waiters come out
 * in program order. */
static int build_waiters(eng *e, uint32_t r)
{
    rank_st *rs = &e->r[r];
    const uint32_t *deps = prog_deps(e->p, r);
    size_t ndeps = 0;
    for (uint32_t i = 0; i < rs->nops; i++) ndeps += rs->ops[i].ndep;
    rs->w0 = zalloc((size_t)rs->nops + 1, sizeof *rs->w0);
    rs->wait = zalloc(ndeps, sizeof *rs->wait);
    if (!rs->w0 || !rs->wait) return nomem(e);
    for (uint32_t i = 0; i < rs->nops; i++) {
        rs->st[i].pending = rs->ops[i].ndep;
        for (uint32_t d = 0; d < rs->ops[i].ndep; d++) rs->w0[deps[rs->ops[i].dep0 + d] + 1]++;
    }
    for (uint32_t i = 0; i < rs->nops; i++) rs->w0[i + 1] += rs->w0[i];
    for (uint32_t i = 0; i < rs->nops; i++)
        for (uint32_t d = 0; d < rs->ops[i].ndep; d++)
            rs->wait[rs->w0[deps[rs->ops[i].dep0 + d]]++] = i;
    for (uint32_t i = rs->nops; i > 0; i--) rs->w0[i] = rs->w0[i - 1];
    rs->w0[0] = 0;
    return SS_OK;
}

static void build_streams(rank_st *rs)
{
    uint32_t cnt[PROG_NSTREAMS] = {0}, off = 0;
    for (uint32_t i = 0; i < rs->nops; i++)
        if (rs->ops[i].kind != PROG_OP_HOST) cnt[rs->ops[i].stream]++;
    for (int s = 0; s < PROG_NSTREAMS; s++) {
        rs->s[s].off = off;
        off += cnt[s];
    }
    for (uint32_t i = 0; i < rs->nops; i++) {
        if (rs->ops[i].kind == PROG_OP_HOST) continue;
        strm *st = &rs->s[rs->ops[i].stream];
        rs->sorder[st->off + st->len++] = i;
    }
}

static int setup_rank(eng *e, uint32_t r)
{
    rank_st *rs = &e->r[r];
    rs->ops = prog_ops(e->p, r);
    rs->nops = prog_nops(e->p, r);
    rs->st = zalloc(rs->nops, sizeof *rs->st);
    rs->sorder = zalloc(rs->nops, sizeof *rs->sorder);
    if (!rs->st || !rs->sorder) return nomem(e);
    build_streams(rs);
    return build_waiters(e, r);
}

/* Position of `rank` in the group's ascending rank list. prog_op_add checked
 * that it is a member. */
static uint32_t member_index(prog_group g, uint32_t rank)
{
    uint32_t lo = 0, hi = g.size;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g.ranks[mid] <= rank) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Walk rank r's collectives in program order: the k-th call naming group g
 * is instance k of g. Pass 0 (fill = 0) only counts instances; pass 1
 * records them. count[] is all zero on entry and on return, and only the
 * entries this rank touched are reset, so a pass costs O(ops), not
 * O(ranks x groups). */
static void number_rank_colls(eng *e, uint32_t r, uint32_t *count, int fill)
{
    rank_st *rs = &e->r[r];
    for (uint32_t i = 0; i < rs->nops; i++) {
        if (rs->ops[i].kind != PROG_OP_COLL) continue;
        grp_st *g = &e->g[rs->ops[i].group];
        uint32_t k = count[rs->ops[i].group]++;
        if (!fill) {
            if (k + 1 > g->ninst) g->ninst = k + 1;
            continue;
        }
        rs->st[i].inst = k;
        g->member_op[(size_t)k * g->pg.size + member_index(g->pg, r)] = i;
    }
    for (uint32_t i = 0; i < rs->nops; i++)
        if (rs->ops[i].kind == PROG_OP_COLL) count[rs->ops[i].group] = 0;
}

static int alloc_group(eng *e, grp_st *g)
{
    size_t n = (size_t)g->ninst * g->pg.size;
    g->member_op = zalloc(n, sizeof *g->member_op);
    g->arrived = zalloc(g->ninst, sizeof *g->arrived);
    if (!g->member_op || !g->arrived) return nomem(e);
    for (size_t j = 0; j < n; j++) g->member_op[j] = NONE;
    return SS_OK;
}

static int setup_groups(eng *e)
{
    uint32_t *count = zalloc(e->ng, sizeof *count);
    if (!count) return nomem(e);
    for (uint32_t gi = 0; gi < e->ng; gi++) e->g[gi].pg = prog_group_get(e->p, gi);
    for (uint32_t r = 0; r < e->nr; r++) number_rank_colls(e, r, count, 0);
    int rc = SS_OK;
    for (uint32_t gi = 0; gi < e->ng && !rc; gi++) rc = alloc_group(e, &e->g[gi]);
    for (uint32_t r = 0; r < e->nr && !rc; r++) number_rank_colls(e, r, count, 1);
    free(count);
    return rc;
}

/* Global instance ids for a dynamic network: groups' instances in group
 * order. */
static int setup_instances(eng *e)
{
    uint64_t n = 0;
    for (uint32_t gi = 0; gi < e->ng; gi++) {
        e->g[gi].base = (uint32_t)n;
        n += e->g[gi].ninst;
    }
    if (n >= UINT32_MAX)
        return ss_fail(e->err, SS_E_INPUT, NULL, "more than 2^32 collective instances");
    e->ninst = (uint32_t)n;
    e->gen = zalloc(n, sizeof *e->gen);
    e->inst_g = zalloc(n, sizeof *e->inst_g);
    if (!e->gen || !e->inst_g) return nomem(e);
    for (uint32_t gi = 0; gi < e->ng; gi++)
        for (uint32_t k = 0; k < e->g[gi].ninst; k++) e->inst_g[e->g[gi].base + k] = gi;
    return SS_OK;
}

static int eng_setup(eng *e)
{
    e->r = zalloc(e->nr, sizeof *e->r);
    e->g = zalloc(e->ng, sizeof *e->g);
    if (!e->r || !e->g) return nomem(e);
    int rc = SS_OK;
    for (uint32_t r = 0; r < e->nr && !rc; r++) rc = setup_rank(e, r);
    if (!rc) rc = setup_groups(e);
    if (!rc && e->net && e->net->start) rc = setup_instances(e);
    for (uint32_t r = 0; r < e->nr && !rc; r++)
        rc = eq_push(&e->q, 0, EQ_CLS_HOST, EV_KICK, r, NONE, e->err);
    return rc;
}

/* Safe on a partly built engine: every pointer is NULL or owned. */
static void eng_teardown(eng *e)
{
    for (uint32_t r = 0; e->r && r < e->nr; r++) {
        free(e->r[r].st);
        free(e->r[r].sorder);
        free(e->r[r].w0);
        free(e->r[r].wait);
    }
    for (uint32_t gi = 0; e->g && gi < e->ng; gi++) {
        free(e->g[gi].member_op);
        free(e->g[gi].arrived);
    }
    free(e->r);
    free(e->g);
    free(e->gen);
    free(e->inst_g);
    free(e->wakes.w);
    eq_fini(&e->q);
}

/* ---- execution ---- */

static int add_time(eng *e, uint32_t r, uint32_t i, ss_ns t, ss_ns d, ss_ns *out)
{
    if (ss_add_u64(t, d, out) == SS_OK) return SS_OK;
    return ss_fail(e->err, SS_E_OVERFLOW, NULL,
                   "rank %u op %u (%s): time %llu ns + %llu ns does not fit in 64 bits", r, i,
                   op_name(e, r, i), (unsigned long long)t, (unsigned long long)d);
}

static int start_op(eng *e, uint32_t r, uint32_t i, ss_ns t, ss_ns dur)
{
    trc_op *rec = &e->t->ops[r][i];
    ss_ns end = 0;
    int rc = add_time(e, r, i, t, dur, &end);
    if (rc) return rc;
    rec->start = t;
    rec->end = end;
    rec->seq_start = e->seq++;
    return eq_push(&e->q, end, EQ_CLS_END, EV_END, r, i, e->err);
}

int eng_wake_at(eng_wakes *w, uint32_t id, ss_ns t, ss_err *err)
{
    if (!ss_grow((void **)&w->w, &w->cap, w->n + 1, sizeof *w->w))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for network wake-ups");
    w->w[w->n++] = (struct wake){id, t};
    return SS_OK;
}

/* Turn the network's wake requests into events; a new request for an
 * instance makes its older event stale (generation). */
static int push_wakes(eng *e)
{
    int rc = SS_OK;
    for (uint32_t i = 0; i < e->wakes.n && !rc; i++) {
        uint32_t id = e->wakes.w[i].id;
        if (id >= e->ninst)
            return ss_fail(e->err, SS_E_INTERNAL, NULL, "network woke unknown instance %u", id);
        rc = eq_push(&e->q, e->wakes.w[i].t, EQ_CLS_END, EV_NET, id, ++e->gen[id], e->err);
    }
    e->wakes.n = 0;
    return rc;
}

static const prog_op *lead_op(const eng *e, const grp_st *g, uint32_t k)
{
    return &e->r[g->pg.ranks[0]].ops[g->member_op[(size_t)k * g->pg.size]];
}

/* A dynamic network's instance starts: members hold their streams from t
 * until the network says the instance is done. */
static int coll_start_dynamic(eng *e, const grp_st *g, uint32_t k, ss_ns t)
{
    const uint32_t *mop = g->member_op + (size_t)k * g->pg.size;
    for (uint32_t m = 0; m < g->pg.size; m++) {
        trc_op *rec = &e->t->ops[g->pg.ranks[m]][mop[m]];
        rec->start = t;
        rec->seq_start = e->seq++;
    }
    const prog_op *lead = lead_op(e, g, k);
    int rc = e->net->start(e->net->ctx, g->base + k, (prog_coll)lead->coll, g->pg,
                           (uint32_t)(g - e->g), lead->bytes, t, &e->wakes, e->err);
    return rc ? rc : push_wakes(e);
}

static int on_net(eng *e, uint32_t id, uint32_t gen, ss_ns t)
{
    if (gen != e->gen[id]) return SS_OK; /* superseded */
    bool done = false;
    int rc = e->net->wake(e->net->ctx, id, t, &done, &e->wakes, e->err);
    if (!rc) rc = push_wakes(e);
    if (rc || !done) return rc;
    const grp_st *g = &e->g[e->inst_g[id]];
    const uint32_t *mop = g->member_op + (size_t)(id - g->base) * g->pg.size;
    for (uint32_t m = 0; m < g->pg.size && !rc; m++) {
        e->t->ops[g->pg.ranks[m]][mop[m]].end = t;
        rc = eq_push(&e->q, t, EQ_CLS_END, EV_END, g->pg.ranks[m], mop[m], e->err);
    }
    return rc;
}

/* All members arrived at or before t (events pop in time order), so t is
 * the max of their ready times. The network is asked once, with the lowest
 * member's op (ranks are ascending). */
static int coll_start(eng *e, const grp_st *g, uint32_t k, ss_ns t)
{
    if (e->net && e->net->start) return coll_start_dynamic(e, g, k, t);
    const uint32_t *mop = g->member_op + (size_t)k * g->pg.size;
    const prog_op *lead = lead_op(e, g, k);
    if (!e->net || !e->net->coll_ns)
        return ss_fail(e->err, SS_E_INTERNAL, NULL, "collective %s with no network model",
                       op_name(e, g->pg.ranks[0], mop[0]));
    ss_ns dur = 0;
    int rc = e->net->coll_ns(e->net->ctx, (prog_coll)lead->coll, g->pg, lead->bytes, &dur,
                             e->err);
    for (uint32_t m = 0; m < g->pg.size && !rc; m++)
        rc = start_op(e, g->pg.ranks[m], mop[m], t, dur);
    return rc;
}

static int coll_arrive(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    op_st *os = &e->r[r].st[i];
    grp_st *g = &e->g[e->r[r].ops[i].group];
    os->arrived = 1;
    if (++g->arrived[os->inst] < g->pg.size) return SS_OK;
    return coll_start(e, g, os->inst, t);
}

/* Start the stream's head if it was issued and its deps ended. A collective
 * takes the stream as soon as it is ready, even while it waits for peers:
 * later ops on the stream queue behind it, as behind an NCCL kernel. */
static int try_stream(eng *e, uint32_t r, int s, ss_ns t)
{
    rank_st *rs = &e->r[r];
    strm *st = &rs->s[s];
    if (st->busy || st->head == st->len) return SS_OK;
    uint32_t i = rs->sorder[st->off + st->head];
    if (!rs->st[i].issued || rs->st[i].pending) return SS_OK;
    st->busy = true;
    if (rs->ops[i].kind == PROG_OP_COLL) return coll_arrive(e, r, i, t);
    return start_op(e, r, i, t, rs->ops[i].dev_ns);
}

/* The host takes its next op in program order if it is free. A HOST op
 * with unfinished deps blocks it (cudaEventSynchronize) until an END
 * retries; a device op occupies it for host_ns, then EV_ISSUE. */
static int host_step(eng *e, uint32_t r, ss_ns t)
{
    rank_st *rs = &e->r[r];
    if (rs->host_busy || rs->hpos == rs->nops) return SS_OK;
    uint32_t i = rs->hpos;
    const prog_op *op = &rs->ops[i];
    if (op->kind == PROG_OP_HOST && rs->st[i].pending) return SS_OK;
    rs->host_busy = true;
    rs->hpos++;
    if (op->kind != PROG_OP_HOST) {
        ss_ns at = 0;
        int rc = add_time(e, r, i, t, op->host_ns, &at);
        return rc ? rc : eq_push(&e->q, at, EQ_CLS_ISSUE, EV_ISSUE, r, i, e->err);
    }
    e->t->ops[r][i].issue = t;
    e->t->ops[r][i].seq_issue = e->seq++;
    return start_op(e, r, i, t, op->host_ns);
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
    e->t->ops[r][i].issue = t;
    e->t->ops[r][i].seq_issue = e->seq++;
    e->r[r].st[i].issued = 1;
    e->r[r].host_busy = false;
    return retry_rank(e, r, t);
}

static int on_end(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    rank_st *rs = &e->r[r];
    rs->st[i].done = 1;
    e->t->ops[r][i].seq_end = e->seq++;
    if (t > e->t->step_ns) e->t->step_ns = t;
    if (rs->ops[i].kind == PROG_OP_HOST) {
        rs->host_busy = false;
    } else {
        strm *st = &rs->s[rs->ops[i].stream];
        st->busy = false;
        st->head++;
    }
    for (uint32_t w = rs->w0[i]; w < rs->w0[i + 1]; w++) rs->st[rs->wait[w]].pending--;
    return retry_rank(e, r, t);
}

static int eng_loop(eng *e)
{
    eq_ev ev;
    int rc = SS_OK;
    while (!rc && eq_pop(&e->q, &ev)) {
        e->t->nevents++;
        if (ev.kind == EV_END) rc = on_end(e, ev.a, ev.b, ev.t);
        else if (ev.kind == EV_ISSUE) rc = on_issue(e, ev.a, ev.b, ev.t);
        else if (ev.kind == EV_NET) rc = on_net(e, ev.a, ev.b, ev.t);
        else rc = retry_rank(e, ev.a, ev.t);
    }
    return rc;
}

/* ---- deadlock report ----
 * The first op that never ends, in (rank, op id) order, is always a
 * collective holding its stream: anything else waits on an earlier op (a
 * dep, its stream's head, the host's position) that never ends either. So
 * the report names that collective, the peer it waits for, and why the
 * peer's call never got ready (a dep, its stream, its host). */

static uint32_t first_pending_dep(const eng *e, uint32_t r, uint32_t i)
{
    const rank_st *rs = &e->r[r];
    const uint32_t *deps = prog_deps(e->p, r) + rs->ops[i].dep0;
    for (uint32_t d = 0; d < rs->ops[i].ndep; d++)
        if (!rs->st[deps[d]].done) return deps[d];
    return NONE;
}

/* Why op i of rank r never got ready: 1 with buf filled, or 0 if it did
 * (a collective holding its stream while it waits for peers). */
static int why_not_ready(const eng *e, uint32_t r, uint32_t i, char *buf, size_t n)
{
    const rank_st *rs = &e->r[r];
    const prog_op *op = &rs->ops[i];
    uint32_t d = first_pending_dep(e, r, i);
    if (d != NONE) {
        snprintf(buf, n, "it waits for its dependency op %u (%s, %s stream), which never ends", d,
                 op_name(e, r, d), prog_stream_name((prog_stream)rs->ops[d].stream));
        return 1;
    }
    if (op->kind == PROG_OP_HOST || !rs->st[i].issued) {
        uint32_t h = rs->hpos < rs->nops ? rs->hpos : i;
        snprintf(buf, n, "the host never issues it: it is stuck at op %u (%s)", h,
                 op_name(e, r, h));
        return 1;
    }
    const strm *st = &rs->s[op->stream];
    uint32_t h = rs->sorder[st->off + st->head];
    if (h == i) return 0;
    snprintf(buf, n, "it waits on its %s stream behind op %u (%s), which never ends",
             prog_stream_name((prog_stream)op->stream), h, op_name(e, r, h));
    return 1;
}

/* Advance *off past what snprintf wrote into buf[*off .. n), clamped. */
static void advance(size_t *off, int u, size_t n)
{
    if (u > 0) *off = (size_t)u < n - *off ? *off + (size_t)u : n - 1;
}

/* Op i of rank r is a collective holding its stream: name the first member
 * that never makes the matching call, or whose call never got ready. */
static void why_coll(const eng *e, uint32_t r, uint32_t i, char *buf, size_t n)
{
    const prog_op *op = &e->r[r].ops[i];
    const grp_st *g = &e->g[op->group];
    uint32_t k = e->r[r].st[i].inst;
    const uint32_t *mop = g->member_op + (size_t)k * g->pg.size;
    size_t off = 0;
    advance(&off, snprintf(buf, n, "%s call #%u of group %u has %u of %u members; ",
                           prog_coll_name((prog_coll)op->coll), k, op->group, g->arrived[k],
                           g->pg.size), n);
    for (uint32_t m = 0; m < g->pg.size; m++) {
        uint32_t pr = g->pg.ranks[m];
        if (mop[m] == NONE) {
            snprintf(buf + off, n - off, "it waits for rank %u, which never makes that call", pr);
            return;
        }
        if (e->r[pr].st[mop[m]].arrived) continue;
        advance(&off, snprintf(buf + off, n - off,
                               "it waits for rank %u, whose matching op %u (%s) never gets ready: ",
                               pr, mop[m], op_name(e, pr, mop[m])), n);
        if (!why_not_ready(e, pr, mop[m], buf + off, n - off))
            snprintf(buf + off, n - off, "(engine bug)");
        return;
    }
    snprintf(buf + off, n - off, "all members arrived (engine bug)");
}

static void why_stuck(const eng *e, uint32_t r, uint32_t i, char *buf, size_t n)
{
    if (why_not_ready(e, r, i, buf, n)) return;
    if (e->r[r].ops[i].kind == PROG_OP_COLL) why_coll(e, r, i, buf, n);
    else snprintf(buf, n, "it is ready but never started (engine bug)");
}

/* Report the first op, in (rank, op id) order, that never ended. */
static int check_all_done(eng *e)
{
    for (uint32_t r = 0; r < e->nr; r++)
        for (uint32_t i = 0; i < e->r[r].nops; i++) {
            if (e->r[r].st[i].done) continue;
            char why[448];
            why_stuck(e, r, i, why, sizeof why);
            return ss_fail(e->err, SS_E_DEADLOCK, NULL,
                           "the program cannot finish: rank %u op %u (%s) never ends: %s", r, i,
                           op_name(e, r, i), why);
        }
    return SS_OK;
}

int eng_run(const prog *p, const eng_net *net, trc **out, ss_err *err)
{
    eng e = {.p = p, .net = net, .err = err, .nr = prog_nranks(p), .ng = prog_ngroups(p)};
    int rc = eq_init(&e.q, err);
    if (!rc) rc = trc_new(&e.t, p, err);
    if (!rc) rc = eng_setup(&e);
    if (!rc) rc = eng_loop(&e);
    if (!rc) rc = check_all_done(&e);
    eng_teardown(&e);
    if (rc) {
        trc_free(e.t);
        return rc;
    }
    *out = e.t;
    return SS_OK;
}
