/* The engine: per rank a host thread walking ops in program order, device
 * streams running their ops in issue order, collectives that start when all
 * members arrived. plan/prog.h states the rules, eng.h the contract.
 *
 * State changes only at events: a host finishes issuing a device op
 * (EV_ISSUE), an op ends (EV_END), or a host starts (EV_KICK, once per rank
 * at t = 0). Each op counts what it still waits for (op_st.cnt): its
 * unfinished deps, plus one until the host issued it, plus one until the
 * op before it on its stream ended. The events that lower a count are the
 * only places an op can become ready, so an event touches just the ops it
 * releases (the ended op's stream successor and its waiters, from a CSR
 * list built once), never a whole rank. Everything that becomes ready at t
 * starts at t, so start = max(issue, previous op on the stream ended, deps
 * ended) falls out of event order. Total O(ops + deps + group sizes) work
 * plus the queue (eq.h: O(1) per event that shares its instant, O(log
 * instants) else).
 *
 * Order within one event is part of the output (trace seqs, push order):
 * ops released by one event start in stream order (compute, unshard,
 * reduce, copy), then the host takes its next op, as if every stream head
 * and the host were retried in that order (what releasing computes, in
 * O(released) instead of O(streams)).
 *
 * seq: one counter, incremented at every issue and end recorded in the
 * trace, in processing order, so same-instant records are totally ordered
 * (the memory replay sorts by (t, seq)); a run whose counter passed the
 * record's 32 bits is refused after the loop.
 *
 * Memory: per op one 16-byte op_st and 4 bytes per dep, per rank one
 * rank_st, per collective call one member slot and per instance one count,
 * all allocated by setup; the loop allocates only when the event queue or
 * the network's wake list doubles. */
#include "eng.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/vec.h"
#include "eq.h"

/* eq_ev.kind; a = rank, b = op, except EV_NET: a = instance, b = generation,
 * and EV_CEND (the end of the op running on the rank's compute stream under
 * interference): a = rank, b = generation */
enum { EV_KICK, EV_ISSUE, EV_END, EV_NET, EV_CEND };

#define NONE UINT32_MAX
#define ENDED UINT32_MAX /* op_st.cnt once the op ended */

/* Per op state. The hot loop reads this, not the op's 64-byte prog_op,
 * for an op it releases, starts or ends (hence the stream and the COLL
 * flag in aux); a device op's prog_op is read once, when the host takes
 * it. Until a COMPUTE op starts, its trace record's `end` holds its
 * device time: starting it writes that record anyway, and the record is
 * the engine's until eng_run returns. */
typedef struct op_st {
    uint32_t cnt;  /* what it waits for (see top); 0: running or holding its
                      stream; ENDED after its end */
    uint32_t succ; /* device op: the next op of its stream, or NONE */
    uint32_t w0;   /* its waiters: eng.wait[w0 .. this[1].w0) */
    uint32_t aux;  /* stream | AUX_COLL | instance in its group << AUX_INST */
} op_st;

enum { AUX_STREAM = 7, AUX_COLL = 8, AUX_INST = 4 };
_Static_assert(PROG_NSTREAMS <= AUX_STREAM + 1, "a stream id fits in aux");
#define INST_MAX (UINT32_MAX >> AUX_INST)

static unsigned stream_of(const op_st *os) { return os->aux & AUX_STREAM; }
static uint32_t inst_of(const op_st *os) { return os->aux >> AUX_INST; }

typedef struct rank_st {
    const prog_op *ops;
    trc_op *rec;    /* the trace's records of this rank */
    op_st *st;      /* [nops + 1], inside eng.st */
    uint32_t nops;
    uint32_t hpos;  /* next op the host looks at */
    bool host_busy; /* issuing a device op or running a HOST op */
    /* Interference (eng_net.overlap_slowdown > 0): collectives running,
     * the op on the compute stream (NONE), the work it has left at full
     * speed as of cur_t, and the generation of its pending EV_CEND. */
    uint32_t ncoll, cur, cgen;
    ss_ns cur_t, cur_left;
    ss_ns cend_t; /* when the pending EV_CEND of generation cgen pops */
} rank_st;

typedef struct grp_st {
    prog_group pg;
    prog_group net;      /* the members the network costs (prog_group_net) */
    uint32_t base;       /* global instance id of instance 0 (dynamic networks) */
    uint32_t ninst;      /* most calls any member makes */
    uint32_t *member_op; /* [inst * size + member]: op id, NONE if never called */
    uint32_t *arrived;   /* [inst]: members whose op arrived */
    uint32_t cap;        /* instances the two arrays have room for */
    uint32_t mark, calls, member; /* setup: last rank + 1 that called it, its calls
                                     so far, its index in pg.ranks */
} grp_st;

/* Wake requests collected during one network call. */
struct eng_wakes {
    struct wake { uint32_t id; ss_ns t; } *w;
    uint32_t n, cap;
    bool settle;      /* a settle was asked for at settle_t */
    ss_ns settle_t;
    bool pending;     /* a settle is due at pending_t (push_settle) */
    ss_ns pending_t;
};

typedef struct eng {
    const prog *p;
    const eng_net *net;
    ss_err *err;
    uint32_t nr, ng;
    rank_st *r;
    grp_st *g;
    op_st *st;      /* [ops of all ranks + 1], rank by rank; the last holds w0 only */
    uint32_t *wait; /* [deps of all ranks]: waiters, grouped by the op they wait for */
    uint32_t nwait, wait_cap;
    eq q;
    trc *t;
    uint64_t seq;
    ss_ns step_ns;    /* latest end so far */
    uint32_t ninst;   /* instances over all groups */
    uint32_t *gen;    /* [ninst]: generation of the pending wake */
    uint32_t *inst_g; /* [ninst]: group of the instance */
    eng_wakes wakes;
    double slow;      /* eng_net.overlap_slowdown */
    size_t bytes;     /* the engine's own arrays, for eng_stats */
} eng;

/* Ops that one event released, at most one per device stream (an op is
 * ready only once the op before it on its stream ended). */
typedef struct ready {
    uint32_t op[PROG_NSTREAMS];
    unsigned mask; /* bit s: op[s] is set */
} ready;

static int nomem(eng *e)
{
    return ss_fail(e->err, SS_E_NOMEM, NULL, "out of memory in the engine");
}

/* calloc that never returns NULL for an empty array, and counts bytes.
 * Nothing is freed before the run ends, so the count is also the peak. */
static void *zalloc(eng *e, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p) e->bytes += (n ? n : 1) * size;
    ss_prefer_huge(p, (n ? n : 1) * size);
    return p;
}

static const char *op_name(const eng *e, uint32_t r, uint32_t i)
{
    return prog_str_get(e->p, e->r[r].ops[i].name);
}

/* ---- setup ---- */

/* Room for instance k of group g: member slots (NONE: never called) and an
 * arrival count, grown by doubling while the ranks are scanned. */
static int group_reserve(eng *e, grp_st *g, uint32_t k)
{
    if (k < g->cap) return SS_OK;
    uint64_t cap = g->cap ? (uint64_t)g->cap * 2 : 4, size = g->pg.size;
    while (cap <= k) cap *= 2;
    if (cap >= UINT32_MAX || cap * size > SIZE_MAX / sizeof *g->member_op)
        return ss_fail(e->err, SS_E_INPUT, NULL, "too many calls of group %u",
                       (unsigned)(g - e->g));
    uint32_t *mop = realloc(g->member_op, (size_t)(cap * size) * sizeof *mop);
    if (mop) g->member_op = mop;
    uint32_t *arr = mop ? realloc(g->arrived, (size_t)cap * sizeof *arr) : NULL;
    if (!arr) return nomem(e);
    g->arrived = arr;
    for (uint64_t j = g->cap * size; j < cap * size; j++) mop[j] = NONE;
    for (uint64_t j = g->cap; j < cap; j++) arr[j] = 0;
    e->bytes += (size_t)((cap - g->cap) * (size + 1) * sizeof *mop);
    g->cap = (uint32_t)cap;
    return SS_OK;
}

/* Collective op i of rank r: the k-th call naming group g on this rank is
 * instance k of g. Ranks are scanned in ascending order, so when a new
 * rank touches a group its count restarts (mark) and its place in the
 * group's ascending rank list is found by moving a cursor forward (member):
 * O(calls + size) per group in all. prog_op_add (prog_rank_share) checked membership. */
static int number_coll(eng *e, uint32_t r, uint32_t i)
{
    rank_st *rs = &e->r[r];
    grp_st *g = &e->g[prog_op_group(e->p, r, i)];
    if (g->mark != r + 1) {
        g->mark = r + 1;
        g->calls = 0;
        while (g->pg.ranks[g->member] < r) g->member++;
    }
    uint32_t k = g->calls++;
    if (k >= INST_MAX)
        return ss_fail(e->err, SS_E_INPUT, NULL, "rank %u calls group %u more than %u times", r,
                       (unsigned)(g - e->g), (unsigned)INST_MAX);
    int rc = group_reserve(e, g, k);
    if (rc) return rc;
    if (k + 1 > g->ninst) g->ninst = k + 1;
    rs->st[i].aux |= AUX_COLL | k << AUX_INST;
    g->member_op[(size_t)k * g->pg.size + g->member] = i;
    return SS_OK;
}

/* One pass over rank r's ops (its slice st of eng.st): counts and stream
 * successors (a device op waits for its issue and for the op before it on
 * its stream, if any), waiter counts per target in w0 (deps name earlier
 * ops, so a target's w0 is zeroed before it is counted), collective
 * instances. Sets *ndeps to the rank's deps. */
static int scan_rank(eng *e, uint32_t r, op_st *st, uint64_t *ndeps)
{
    rank_st *rs = &e->r[r];
    *rs = (rank_st){.ops = prog_ops(e->p, r), .rec = e->t->ops[r], .st = st,
                    .nops = prog_nops(e->p, r)};
    const uint32_t *deps = prog_deps(e->p, r);
    uint32_t last[PROG_NSTREAMS];
    for (int s = 0; s < PROG_NSTREAMS; s++) last[s] = NONE;
    *ndeps = 0;
    for (uint32_t i = 0; i < rs->nops; i++) {
        const prog_op *op = &rs->ops[i];
        st[i] = (op_st){.cnt = op->ndep, .succ = NONE, .w0 = 0, .aux = op->stream};
        *ndeps += op->ndep;
        for (uint32_t d = 0; d < op->ndep; d++) st[deps[op->dep0 + d]].w0++;
        if (op->kind == PROG_OP_HOST) continue;
        st[i].cnt++;
        int rc = op->kind == PROG_OP_COLL ? number_coll(e, r, i) : SS_OK;
        if (rc) return rc;
        if (op->stream == PROG_P2P) continue; /* unordered (prog.h) */
        if (last[op->stream] != NONE) {
            st[last[op->stream]].succ = i;
            st[i].cnt++;
        }
        last[op->stream] = i;
    }
    return SS_OK;
}

/* Op and dep ids index 32-bit arrays, and a count must stay below ENDED. */
static int too_big(eng *e, uint64_t nops, uint64_t ndeps)
{
    return ss_fail(e->err, SS_E_INPUT, NULL,
                   "%llu ops and %llu dependencies: the engine takes fewer than 2^32 - 3 of each",
                   (unsigned long long)nops, (unsigned long long)ndeps);
}

/* Rank r's waiter counts (in w0) to CSR, appended to eng.wait: inclusive
 * prefix sums make w0[i] the end of op i's list; filling in reverse program
 * order with a decrementing cursor leaves w0[i] at its start and every list
 * in program order. Right after scan_rank, so the rank's ops are still in
 * cache. The rank's end offset goes into the op after its last (the next
 * rank's first, which its own scan zeroes, or the sentinel). */
static int build_waiters(eng *e, uint32_t r, uint64_t ndeps)
{
    const rank_st *rs = &e->r[r];
    uint64_t need = (uint64_t)e->nwait + ndeps;
    if (need >= UINT32_MAX - 3) return too_big(e, 0, need);
    if (!ss_grow((void **)&e->wait, &e->wait_cap, (uint32_t)need, sizeof *e->wait))
        return nomem(e);
    uint32_t end = e->nwait;
    for (uint32_t i = 0; i < rs->nops; i++) {
        end += rs->st[i].w0;
        rs->st[i].w0 = end;
    }
    const uint32_t *deps = prog_deps(e->p, r);
    for (uint32_t i = rs->nops; i-- > 0;)
        for (uint32_t d = rs->ops[i].ndep; d-- > 0;)
            e->wait[--rs->st[deps[rs->ops[i].dep0 + d]].w0] = i;
    rs->st[rs->nops].w0 = end;
    e->nwait = end;
    return SS_OK;
}

static int setup_ops(eng *e)
{
    uint64_t n = 0, d = 0;
    for (uint32_t r = 0; r < e->nr; r++) n += prog_nops(e->p, r);
    if (n >= UINT32_MAX - 3) return too_big(e, n, 0);
    e->st = zalloc(e, (size_t)n + 1, sizeof *e->st);
    if (!e->st) return nomem(e);
    int rc = SS_OK;
    for (uint32_t r = 0, base = 0; r < e->nr && !rc; base += e->r[r].nops, r++) {
        rc = scan_rank(e, r, e->st + base, &d);
        if (!rc) rc = build_waiters(e, r, d);
    }
    /* Give back the doubling's slack; a failed shrink keeps the larger block. */
    uint32_t *w = e->nwait && e->nwait < e->wait_cap ? realloc(e->wait, e->nwait * sizeof *w) : NULL;
    if (w) {
        e->wait = w;
        e->wait_cap = e->nwait;
    }
    e->bytes += (size_t)e->wait_cap * sizeof *e->wait;
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
    e->gen = zalloc(e, n, sizeof *e->gen);
    e->inst_g = zalloc(e, n, sizeof *e->inst_g);
    if (!e->gen || !e->inst_g) return nomem(e);
    for (uint32_t gi = 0; gi < e->ng; gi++)
        for (uint32_t k = 0; k < e->g[gi].ninst; k++) e->inst_g[e->g[gi].base + k] = gi;
    return SS_OK;
}

static int eng_setup(eng *e)
{
    e->r = zalloc(e, e->nr, sizeof *e->r);
    e->g = zalloc(e, e->ng, sizeof *e->g);
    if (!e->r || !e->g) return nomem(e);
    for (uint32_t gi = 0; gi < e->ng; gi++) {
        e->g[gi].pg = prog_group_get(e->p, gi);
        e->g[gi].net = prog_group_net(e->p, gi);
    }
    int rc = setup_ops(e);
    if (!rc && e->net && e->net->start) rc = setup_instances(e);
    for (uint32_t r = 0; r < e->nr && !rc; r++) {
        e->r[r].cur = NONE;
        rc = eq_push(&e->q, 0, EQ_CLS_HOST, EV_KICK, r, NONE, e->err);
    }
    return rc;
}

/* Safe on a partly built engine: every pointer is NULL or owned. */
static void eng_teardown(eng *e)
{
    for (uint32_t gi = 0; e->g && gi < e->ng; gi++) {
        free(e->g[gi].member_op);
        free(e->g[gi].arrived);
    }
    free(e->r);
    free(e->g);
    free(e->st);
    free(e->wait);
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

/* An op's start in its trace record (not in the processing order: the
 * memory replay reads only issues and ends). */
static inline void mark_start(trc_op *rec, ss_ns t) { rec->start = t; }

/* The next place in the processing order. The trace keeps 32 bits; the
 * run is refused after the loop if the counter passed them (seq_fits), so
 * the event loop pays nothing for the check. */
static inline uint32_t next_seq(eng *e) { return (uint32_t)e->seq++; }

static int seq_fits(eng *e)
{
    if (e->seq <= (uint64_t)UINT32_MAX + 1) return SS_OK;
    return ss_fail(e->err, SS_E_OVERFLOW, NULL,
                   "%llu issues and ends in one step: the trace orders at most %llu",
                   (unsigned long long)e->seq, (unsigned long long)UINT32_MAX + 1);
}

static inline int start_op(eng *e, uint32_t r, uint32_t i, ss_ns t, ss_ns dur)
{
    trc_op *rec = &e->r[r].rec[i];
    ss_ns end = 0;
    int rc = add_time(e, r, i, t, dur, &end);
    if (rc) return rc;
    mark_start(rec, t);
    rec->end = end;
    return eq_push(&e->q, end, EQ_CLS_END, EV_END, r, i, e->err);
}

int eng_wake_at(eng_wakes *w, uint32_t id, ss_ns t, ss_err *err)
{
    if (!ss_grow((void **)&w->w, &w->cap, w->n + 1, sizeof *w->w))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for network wake-ups");
    w->w[w->n++] = (struct wake){id, t};
    return SS_OK;
}

static int push_wakes(eng *e);

void eng_settle_at(eng_wakes *w, ss_ns t)
{
    w->settle = true;
    w->settle_t = t;
}

/* One pending settle per instant: a request at the instant of the pending
 * one is already served, since that settle runs after it. The settle is
 * not queued: it is the last thing at its instant (EQ_CLS_SETTLE, the
 * highest class), so eng_loop runs it as soon as the least queued event
 * is later than it, which is when a queued one would have popped, without
 * a queue entry for every instant the network changes at. */
static int push_settle(eng *e)
{
    eng_wakes *w = &e->wakes;
    w->settle = false;
    if (w->pending && w->pending_t == w->settle_t) return SS_OK;
    if (!e->net->settle)
        return ss_fail(e->err, SS_E_INTERNAL, NULL, "the network asked to settle but has no settle");
    if (w->pending)
        return ss_fail(e->err, SS_E_INTERNAL, NULL, "a settle asked for at %llu ns while one "
                       "at %llu ns is pending", (unsigned long long)w->settle_t,
                       (unsigned long long)w->pending_t);
    w->pending = true;
    w->pending_t = w->settle_t;
    return SS_OK;
}

/* The pending settle is due: nothing queued comes before it. */
static bool settle_due(const eng *e)
{
    uint64_t t;
    return e->wakes.pending && (!eq_peek_t(&e->q, &t) || t > e->wakes.pending_t);
}

static int on_settle(eng *e, ss_ns t)
{
    e->wakes.pending = false;
    int rc = e->net->settle(e->net->ctx, t, &e->wakes, e->err);
    return rc ? rc : push_wakes(e);
}

/* Turn the network's wake requests into events; a new request for an
 * instance makes its older event stale (generation). */
static int push_wakes(eng *e)
{
    int rc = e->wakes.settle ? push_settle(e) : SS_OK;
    for (uint32_t i = 0; i < e->wakes.n && !rc; i++) {
        uint32_t id = e->wakes.w[i].id;
        if (id >= e->ninst)
            return ss_fail(e->err, SS_E_INTERNAL, NULL, "network woke unknown instance %u", id);
        rc = eq_push(&e->q, e->wakes.w[i].t, EQ_CLS_END, EV_NET, id, ++e->gen[id], e->err);
    }
    e->wakes.n = 0;
    return rc;
}

/* ---- interference (eng.h, overlap_slowdown) ----
 * A rank's compute-stream op keeps the work it has left at full speed; at
 * each change of the rank's running collectives between none and some,
 * the work done since the last change is taken off at the old rate and
 * the end is moved to match the new one. One EV_CEND is pending per rank:
 * an end that moved earlier gets a new one (the pending one goes stale by
 * generation); an end that moved later keeps it, and when it pops it
 * pushes another for the end as it then stands. A collective beside the
 * op moves its end later at its start and earlier (but still later than
 * the first end) at its own end, so that costs one event per overlap where
 * a push at each move cost two, and the queue holds fewer stale instants
 * (DECISIONS.md 167). */

/* Wall time of `work` ns at the rank's current rate (rounded to the ns). */
static ss_ns stretched(const eng *e, const rank_st *rs, ss_ns work)
{
    return rs->ncoll ? (ss_ns)((double)work * (1.0 + e->slow) + 0.5) : work;
}

/* Queue the rank's one valid EV_CEND at t (any older one goes stale). */
static int queue_cend(eng *e, uint32_t r, ss_ns t)
{
    rank_st *rs = &e->r[r];
    rs->cend_t = t;
    return eq_push(&e->q, t, EQ_CLS_END, EV_CEND, r, ++rs->cgen, e->err);
}

static int push_cend(eng *e, uint32_t r, ss_ns t, bool moved)
{
    rank_st *rs = &e->r[r];
    ss_ns end = 0;
    int rc = add_time(e, r, rs->cur, t, stretched(e, rs, rs->cur_left), &end);
    if (rc) return rc;
    rs->rec[rs->cur].end = end;
    /* an end that moved later leaves the pending event: it pops first and
     * pushes another for the end as it then stands (on_cend); only an end
     * that moved earlier needs one now, the pending one going stale */
    return moved && end >= rs->cend_t ? SS_OK : queue_cend(e, r, end);
}

static int start_slowed(eng *e, uint32_t r, uint32_t i, ss_ns t, ss_ns work)
{
    rank_st *rs = &e->r[r];
    mark_start(&rs->rec[i], t);
    rs->cur = i, rs->cur_t = t, rs->cur_left = work;
    return push_cend(e, r, t, false);
}

/* The rank's running collectives went from `before` to rs->ncoll at t
 * (interference on: coll_begins and coll_ends ask). */
static int rate_change(eng *e, uint32_t r, uint32_t before, ss_ns t)
{
    rank_st *rs = &e->r[r];
    if ((before == 0) == (rs->ncoll == 0) || rs->cur == NONE) return SS_OK;
    ss_ns el = t - rs->cur_t;
    ss_ns done = before ? (ss_ns)((double)el / (1.0 + e->slow) + 0.5) : el;
    rs->cur_left -= done < rs->cur_left ? done : rs->cur_left;
    rs->cur_t = t;
    return push_cend(e, r, t, true);
}

static int coll_begins(eng *e, uint32_t r, ss_ns t)
{
    if (e->slow <= 0) return SS_OK;
    e->r[r].ncoll++;
    return rate_change(e, r, e->r[r].ncoll - 1, t);
}

static int coll_ends(eng *e, uint32_t r, ss_ns t)
{
    if (e->slow <= 0) return SS_OK;
    e->r[r].ncoll--;
    return rate_change(e, r, e->r[r].ncoll + 1, t);
}

static int on_cend(eng *e, uint32_t r, uint32_t gen, ss_ns t);

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
        mark_start(&e->r[g->pg.ranks[m]].rec[mop[m]], t);
        int rc = coll_begins(e, g->pg.ranks[m], t);
        if (rc) return rc;
    }
    const prog_op *lead = lead_op(e, g, k);
    int rc = e->net->start(e->net->ctx, g->base + k, (prog_coll)lead->coll, g->net,
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
        e->r[g->pg.ranks[m]].rec[mop[m]].end = t;
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
    int rc = e->net->coll_ns(e->net->ctx, (prog_coll)lead->coll, g->net, lead->bytes, &dur,
                             e->err);
    for (uint32_t m = 0; m < g->pg.size && !rc; m++)
        if (!(rc = start_op(e, g->pg.ranks[m], mop[m], t, dur))) rc = coll_begins(e, g->pg.ranks[m], t);
    return rc;
}

static int coll_arrive(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    grp_st *g = &e->g[prog_op_group(e->p, r, i)];
    uint32_t k = inst_of(&e->r[r].st[i]);
    if (++g->arrived[k] < g->pg.size) return SS_OK;
    return coll_start(e, g, k, t);
}

/* A device op became ready: it was issued, its deps and the op before it
 * on its stream ended. A collective takes the stream as soon as it is
 * ready, even while it waits for peers: later ops on the stream queue
 * behind it, as behind an NCCL kernel. A COMPUTE op's device time waits
 * in its trace record (op_st). */
static inline int start_dev(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    const rank_st *rs = &e->r[r];
    if (rs->st[i].aux & AUX_COLL) return coll_arrive(e, r, i, t);
    if (e->slow > 0 && stream_of(&rs->st[i]) == PROG_COMPUTE)
        return start_slowed(e, r, i, t, rs->rec[i].end);
    return start_op(e, r, i, t, rs->rec[i].end);
}

/* One thing op i waited for is over. A HOST op that becomes ready is the
 * host's business (host_step looks at it); a device op is ready to start. */
static void release(const rank_st *rs, uint32_t i, ready *x)
{
    if (--rs->st[i].cnt != 0) return;
    unsigned s = stream_of(&rs->st[i]);
    if (s == PROG_HOST) return;
    x->op[s] = i;
    x->mask |= 1u << s;
}

/* Start what one event released, in stream order (see top). */
static int start_ready(eng *e, uint32_t r, const ready *x, ss_ns t)
{
    int rc = SS_OK;
    for (unsigned m = x->mask; m && !rc; m &= m - 1)
        rc = start_dev(e, r, x->op[__builtin_ctz(m)], t);
    return rc;
}

/* The host takes its next op in program order if it is free. A HOST op
 * with unfinished deps blocks it (cudaEventSynchronize) until an END
 * releases it; a device op occupies it for host_ns, then EV_ISSUE. The
 * test is split out so that events of an idle host cost no call. */
static int host_take(eng *e, uint32_t r, ss_ns t)
{
    rank_st *rs = &e->r[r];
    uint32_t i = rs->hpos;
    const prog_op *op = &rs->ops[i];
    if (op->kind == PROG_OP_HOST && rs->st[i].cnt) return SS_OK;
    rs->host_busy = true;
    rs->hpos++;
    if (op->kind == PROG_OP_COMPUTE) rs->rec[i].end = op->dev_ns; /* see op_st */
    if (op->kind != PROG_OP_HOST) {
        ss_ns at = 0;
        int rc = add_time(e, r, i, t, op->host_ns, &at);
        return rc ? rc : eq_push(&e->q, at, EQ_CLS_ISSUE, EV_ISSUE, r, i, e->err);
    }
    rs->rec[i].issue = t;
    rs->rec[i].seq_issue = next_seq(e);
    return start_op(e, r, i, t, op->host_ns);
}

static inline int host_step(eng *e, uint32_t r, ss_ns t)
{
    const rank_st *rs = &e->r[r];
    return rs->host_busy || rs->hpos == rs->nops ? SS_OK : host_take(e, r, t);
}

/* The issue releases only the op itself, so at most its stream starts. */
static int on_issue(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    rank_st *rs = &e->r[r];
    rs->rec[i].issue = t;
    rs->rec[i].seq_issue = next_seq(e);
    rs->host_busy = false;
    int rc = --rs->st[i].cnt ? SS_OK : start_dev(e, r, i, t);
    return rc ? rc : host_step(e, r, t);
}

static int on_end(eng *e, uint32_t r, uint32_t i, ss_ns t)
{
    rank_st *rs = &e->r[r];
    op_st *os = &rs->st[i];
    rs->rec[i].seq_end = next_seq(e);
    if (t > e->step_ns) e->step_ns = t; /* a network may wake in the past */
    os->cnt = ENDED;
    ready x;
    x.mask = 0;
    if (stream_of(os) == PROG_HOST) rs->host_busy = false;
    else if (os->succ != NONE) release(rs, os->succ, &x);
    int rc = os->aux & AUX_COLL ? coll_ends(e, r, t) : SS_OK;
    for (uint32_t w = os->w0; w < os[1].w0 && !rc; w++) {
        uint32_t k = e->wait[w];
        if (stream_of(&rs->st[k]) != PROG_P2P) release(rs, k, &x);
        else if (--rs->st[k].cnt == 0) rc = start_dev(e, r, k, t); /* no stream to queue on */
    }
    if (!rc && x.mask) rc = start_ready(e, r, &x, t);
    return rc ? rc : host_step(e, r, t);
}

static int on_cend(eng *e, uint32_t r, uint32_t gen, ss_ns t)
{
    rank_st *rs = &e->r[r];
    if (gen != rs->cgen || rs->cur == NONE) return SS_OK; /* superseded */
    uint32_t i = rs->cur;
    if (t < rs->rec[i].end) /* the end moved later since this was pushed */
        return queue_cend(e, r, rs->rec[i].end);
    rs->cur = NONE;
    return on_end(e, r, i, t);
}

static int eng_loop(eng *e)
{
    eq_ev ev;
    int rc = SS_OK;
    uint64_t n = 0;
    while (!rc) {
        if (settle_due(e)) {
            n++;
            rc = on_settle(e, e->wakes.pending_t);
            continue;
        }
        if (!eq_pop(&e->q, &ev)) break;
        n++;
        switch (ev.kind) {
        case EV_END: rc = on_end(e, ev.a, ev.b, ev.t); break;
        case EV_ISSUE: rc = on_issue(e, ev.a, ev.b, ev.t); break;
        case EV_NET: rc = on_net(e, ev.a, ev.b, ev.t); break;
        case EV_CEND: rc = on_cend(e, ev.a, ev.b, ev.t); break;
        default: rc = host_step(e, ev.a, ev.t); break; /* EV_KICK: nothing is issued yet */
        }
    }
    e->t->nevents = n;
    e->t->step_ns = e->step_ns;
    return rc;
}

/* ---- deadlock report ----
 * The first op that never ends, in (rank, op id) order, is always a
 * collective holding its stream: anything else waits on an earlier op (a
 * dep, its stream's head, the host's position) that never ends either. So
 * the report names that collective, the peer it waits for, and why the
 * peer's call never got ready (a dep, its stream, its host). The queue is
 * empty by then, so a device op was issued iff the host moved past it, and
 * a collective arrived iff it waits for nothing (cnt 0) without having
 * ended. */

static uint32_t first_pending_dep(const eng *e, uint32_t r, uint32_t i)
{
    const rank_st *rs = &e->r[r];
    const uint32_t *deps = prog_deps(e->p, r) + rs->ops[i].dep0;
    for (uint32_t d = 0; d < rs->ops[i].ndep; d++)
        if (rs->st[deps[d]].cnt != ENDED) return deps[d];
    return NONE;
}

/* The op that holds stream s of rank r: its first op in program order that
 * never ended (a cold path, so a scan). */
static uint32_t stream_head(const rank_st *rs, unsigned s)
{
    for (uint32_t i = 0; i < rs->nops; i++)
        if (rs->ops[i].stream == s && rs->st[i].cnt != ENDED) return i;
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
    if (op->kind == PROG_OP_HOST || i >= rs->hpos) {
        uint32_t h = rs->hpos < rs->nops ? rs->hpos : i;
        snprintf(buf, n, "the host never issues it: it is stuck at op %u (%s)", h,
                 op_name(e, r, h));
        return 1;
    }
    uint32_t h = stream_head(rs, op->stream);
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
    uint32_t gid = prog_op_group(e->p, r, i);
    const grp_st *g = &e->g[gid];
    uint32_t k = inst_of(&e->r[r].st[i]);
    const uint32_t *mop = g->member_op + (size_t)k * g->pg.size;
    size_t off = 0;
    advance(&off, snprintf(buf, n, "%s call #%u of group %u has %u of %u members; ",
                           prog_coll_name((prog_coll)op->coll), k, gid, g->arrived[k],
                           g->pg.size), n);
    for (uint32_t m = 0; m < g->pg.size; m++) {
        uint32_t pr = g->pg.ranks[m];
        if (mop[m] == NONE) {
            snprintf(buf + off, n - off, "it waits for rank %u, which never makes that call", pr);
            return;
        }
        if (e->r[pr].st[mop[m]].cnt == 0) continue; /* arrived */
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
            if (e->r[r].st[i].cnt == ENDED) continue;
            char why[448];
            why_stuck(e, r, i, why, sizeof why);
            return ss_fail(e->err, SS_E_DEADLOCK, NULL,
                           "the program cannot finish: rank %u op %u (%s) never ends: %s", r, i,
                           op_name(e, r, i), why);
        }
    return SS_OK;
}

static void fill_stats(const eng *e, eng_stats *st)
{
    size_t wakes = (size_t)e->wakes.cap * sizeof *e->wakes.w;
    *st = (eng_stats){.events = e->t->nevents,
                      .peak_bytes = e->bytes + eq_bytes(&e->q) + wakes,
                      .queue_peak = eq_peak_len(&e->q)};
}

int eng_run_stats(const prog *p, const eng_net *net, trc **out, eng_stats *st, ss_err *err)
{
    eng e = {.p = p, .net = net, .err = err, .nr = prog_nranks(p), .ng = prog_ngroups(p),
             .slow = net && net->overlap_slowdown > 0 ? net->overlap_slowdown : 0};
    int rc = eq_init(&e.q, err);
    if (!rc) rc = trc_new(&e.t, p, err);
    if (!rc) rc = eng_setup(&e);
    if (!rc) rc = eng_loop(&e);
    if (!rc) rc = seq_fits(&e);
    if (!rc) rc = check_all_done(&e);
    if (!rc && st) fill_stats(&e, st);
    eng_teardown(&e);
    if (rc) {
        trc_free(e.t);
        return rc;
    }
    *out = e.t;
    return SS_OK;
}

int eng_run(const prog *p, const eng_net *net, trc **out, ss_err *err)
{
    return eng_run_stats(p, net, out, NULL, err);
}
