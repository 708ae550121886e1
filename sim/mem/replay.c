#include "replay.h"

#include <stdlib.h>
#include <string.h>

#include "../core/radix.h"
#include "cache.h"

const char *const mem_model_names[MEM_NMODELS] = {"caching", "ideal"};

ss_bytes mem_round(ss_bytes b)
{
    if (b == 0) return 0;
    return ss_div_ceil(b, MEM_ROUND) * MEM_ROUND;
}

void mem_series_thin(const mem_rank *m, size_t max, void (*f)(void *ctx, const mem_point *p),
                     void *ctx)
{
    size_t n = m->nseries, win = n / (max ? max : 1) + 1;
    for (size_t a = 0; a < n; a += win) {
        size_t best = a;
        for (size_t i = a; i < a + win && i < n; i++)
            if (m->series[i].allocated > m->series[best].allocated) best = i;
        f(ctx, &m->series[best]);
    }
}

typedef struct mev {
    ss_ns t;      /* when the allocator sees it: the host's order */
    ss_ns shown;  /* when the step's timeline shows it: see shown_at */
    uint64_t seq;
    uint32_t sub; /* 0 alloc, 1 free at issue */
    uint32_t idx; /* collection order, for stability */
    uint32_t op, tensor;
    int alloc;
} mev;

static int mev_cmp(const void *a, const void *b)
{
    const mev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->sub != y->sub) return x->sub < y->sub ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* A rank's memory events as the replay applies them (replay.h). */
struct mem_view {
    const trc *t;
    uint32_t rank;
    mev *ev; /* the rank's memory events in the order the allocator sees them */
    size_t nev;
    uint32_t *stream; /* per tensor: the stream it is served on */
};

/* The state of one replay; its events and streams are a view's. */
typedef struct rp {
    const trc *t;
    uint32_t rank, nt;
    const prog_tensor *ts;
    const mem_cfg *cfg;
    const mev *ev;
    size_t nev;
    uint8_t *live;
    uint32_t *blk;    /* per tensor: its block in the caching model */
    const uint32_t *stream;
    mem_cache *c;
    ss_bytes ideal;
    ss_err *err;
    const mev *cur; /* the event being applied, for the tap */
    ss_ns shown;    /* its time on the step's time base */
    uint32_t *owner; /* per block id, its tensor: the tap's end state */
    uint32_t nowner;
} rp;

/* The radix key: the engine's order, then allocations before frees. */
static uint64_t engine_order(const void *e)
{
    const mev *x = e;
    return (uint64_t)x->seq << 1 | x->sub; /* seq: 32 bits */
}

/* Sorted as mev_cmp orders them. The engine's order (seq, 32 bits) runs
 * with time except where a network wakes in the past, so a stable radix
 * sort on (seq, sub) (collection order, idx, breaks the ties) is almost
 * always mev_cmp's order already; a pass checks it, and qsort sorts
 * whatever it is not. */
static int sort_events(mev *ev, size_t n, ss_err *err)
{
    int rc = ss_radix_sort(ev, n, sizeof *ev, engine_order, 5, err);
    for (size_t i = 1; !rc && i < n; i++)
        if (mev_cmp(&ev[i - 1], &ev[i]) > 0) {
            qsort(ev, n, sizeof *ev, mev_cmp);
            break;
        }
    return rc;
}

/* The events of v->rank, sorted: time, then engine order, an op's
 * allocations before its own issue-time frees. */
static int collect(mem_view *v, ss_err *err)
{
    const prog *p = v->t->p;
    const prog_op *ops = prog_ops(p, v->rank);
    const prog_mem *mems = prog_mems(p, v->rank);
    uint32_t nt = prog_ntensors(p, v->rank);
    size_t total = 0;
    for (uint32_t i = 0; i < prog_nops(p, v->rank); i++) total += ops[i].nmem;
    v->ev = malloc((total ? total : 1) * sizeof *v->ev);
    v->stream = malloc((nt ? nt : 1) * sizeof *v->stream);
    if (!v->ev || !v->stream) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory replaying memory");
    for (uint32_t i = 0; i < nt; i++) v->stream[i] = PROG_COMPUTE;
    for (uint32_t i = 0; i < prog_nops(p, v->rank); i++) {
        const trc_op *o = &v->t->ops[v->rank][i];
        for (uint32_t m = 0; m < ops[i].nmem; m++) {
            const prog_mem *pm = &mems[ops[i].mem0 + m];
            mev e = {o->issue, o->start, o->seq_issue, 0, (uint32_t)v->nev, i, pm->tensor, 1};
            if (pm->act == PROG_FREE_AT_ISSUE) e.sub = 1, e.alloc = 0;
            if (pm->act == PROG_FREE_AT_END)
                e.t = e.shown = o->end, e.seq = o->seq_end, e.alloc = 0;
            if (e.alloc && ops[i].stream != PROG_HOST) v->stream[pm->tensor] = ops[i].stream;
            v->ev[v->nev++] = e;
        }
    }
    return sort_events(v->ev, v->nev, err);
}

int mem_view_new(const trc *t, uint32_t rank, mem_view **out, ss_err *err)
{
    mem_view *v = calloc(1, sizeof *v);
    if (!v) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory replaying memory");
    v->t = t;
    v->rank = rank;
    int rc = collect(v, err);
    if (rc) {
        mem_view_free(v);
        return rc;
    }
    *out = v;
    return SS_OK;
}

void mem_view_free(mem_view *v)
{
    if (!v) return;
    free(v->ev);
    free(v->stream);
    free(v);
}

/* The engine's sequence numbers only ordered the events; what the replay
 * reads of an event is the rest, so equal rests in equal order replay
 * alike. The program (tensors, ops, streams) must be one too. */
bool mem_view_same(const mem_view *a, const mem_view *b)
{
    if (a->t->p != b->t->p ||
        prog_rank_source(a->t->p, a->rank) != prog_rank_source(b->t->p, b->rank) ||
        a->nev != b->nev)
        return false;
    for (size_t i = 0; i < a->nev; i++) {
        const mev *x = &a->ev[i], *y = &b->ev[i];
        if (x->t != y->t || x->shown != y->shown || x->sub != y->sub || x->idx != y->idx ||
            x->op != y->op || x->tensor != y->tensor || x->alloc != y->alloc)
            return false;
    }
    return true;
}

static ss_bytes reported(const rp *r)
{
    return r->cfg->model == MEM_MODEL_IDEAL ? r->ideal : mem_cache_get_stats(r->c).allocated;
}

static ss_bytes reserved_now(const rp *r)
{
    return r->cfg->model == MEM_MODEL_IDEAL ? r->ideal : mem_cache_get_stats(r->c).reserved;
}

static int tensor_alloc(rp *r, uint32_t t, bool *oom)
{
    r->live[t] = 1;
    r->ideal += mem_round(r->ts[t].bytes);
    *oom = false;
    if (r->cfg->model == MEM_MODEL_IDEAL) return SS_OK;
    return mem_cache_alloc(r->c, r->ts[t].bytes, r->stream[t], &r->blk[t], oom, r->err);
}

static void tensor_free(rp *r, uint32_t t)
{
    r->live[t] = 0;
    r->ideal -= mem_round(r->ts[t].bytes);
    if (r->cfg->model != MEM_MODEL_IDEAL) mem_cache_release(r->c, r->blk[t]);
}

static int apply(rp *r, const mev *e, bool *oom)
{
    if (e->alloc == r->live[e->tensor]) {
        const char *nm = prog_str_get(r->t->p, r->ts[e->tensor].name);
        return ss_fail(r->err, SS_E_INTERNAL, NULL, "rank %u: tensor %s %s twice", r->rank, nm,
                       e->alloc ? "allocated" : "freed");
    }
    *oom = false;
    if (e->alloc) return tensor_alloc(r, e->tensor, oom);
    tensor_free(r, e->tensor);
    return SS_OK;
}

/* The start state: what the previous step left, allocated at setup. */
static int start_state(rp *r)
{
    bool oom;
    for (uint32_t i = 0; i < r->nt; i++) {
        if (!r->ts[i].live_at_start) continue;
        int rc = tensor_alloc(r, i, &oom);
        if (rc) return rc;
    }
    return SS_OK;
}

/* After a warm-up pass: tensors the step freed from its start state take
 * the blocks of the tensors it leaves behind, category and size matching. */
static int carry_over(rp *r)
{
    for (uint32_t s = 0; s < r->nt; s++) {
        if (!r->ts[s].live_at_start || r->live[s]) continue;
        uint32_t e = 0;
        for (; e < r->nt; e++)
            if (r->live[e] && !r->ts[e].live_at_start && r->ts[e].cat == r->ts[s].cat &&
                r->ts[e].bytes == r->ts[s].bytes)
                break;
        if (e == r->nt)
            return ss_fail(r->err, SS_E_INTERNAL, NULL,
                           "rank %u: tensor %s of the start state has no counterpart at the "
                           "end of the step", r->rank, prog_str_get(r->t->p, r->ts[s].name));
        r->blk[s] = r->blk[e];
        r->live[s] = 1;
        r->live[e] = 0;
    }
    return SS_OK;
}

/* One pass over the step; `m` collects peaks when non-NULL.
 *
 * The figures follow the allocator's order: a tensor is allocated and freed
 * at issue, on the host, as PyTorch's counters see it. The times reported
 * (the series, the peak's time) are on the step's time base instead: an
 * event is shown when its op starts on its stream (or ends, for a free at
 * the end), never before the event shown ahead of it. Without that, a host
 * that runs ahead of the device (FSDP2 issues a whole step in milliseconds)
 * would put the peak and the whole series at the start of the step. */
static int pass(rp *r, mem_rank *m, size_t *peak_ev)
{
    ss_ns shown = 0;
    for (size_t i = 0; i < r->nev; i++) {
        bool oom;
        r->cur = &r->ev[i];
        r->shown = r->ev[i].shown > shown ? r->ev[i].shown : shown;
        int rc = apply(r, &r->ev[i], &oom);
        if (rc) return rc;
        if (!m) continue;
        if (r->ev[i].shown > shown) shown = r->ev[i].shown;
        if (m->series) m->series[m->nseries++] = (mem_point){shown, reported(r), reserved_now(r)};
        if (r->ideal > m->ideal_peak) m->ideal_peak = r->ideal;
        /* A request is over capacity when it maps past the HBM, and also
         * when what is already reserved is: the warm-up pass may have left
         * enough cached blocks that nothing new is mapped. */
        bool over = r->ev[i].alloc && r->cfg->capacity && reserved_now(r) > r->cfg->capacity;
        if ((oom || over) && m->ooms++ == 0) m->oom_op = r->ev[i].op;
        if (r->ev[i].alloc && reported(r) > m->peak) {
            m->peak = reported(r);
            m->peak_t = shown;
            m->peak_op = r->ev[i].op;
            *peak_ev = i;
        }
    }
    return SS_OK;
}

/* The live set at the peak, recovered by replaying the flags up to it. */
static int peak_live(rp *r, mem_rank *m, size_t peak_ev)
{
    for (uint32_t i = 0; i < r->nt; i++) r->live[i] = r->ts[i].live_at_start;
    for (size_t i = 0; peak_ev != SIZE_MAX && i <= peak_ev; i++)
        r->live[r->ev[i].tensor] = (uint8_t)r->ev[i].alloc;
    m->peak_live = malloc((r->nt ? r->nt : 1) * sizeof *m->peak_live);
    if (!m->peak_live) return ss_fail(r->err, SS_E_NOMEM, NULL, "out of memory");
    ss_bytes sum = 0;
    memset(m->peak_by_cat, 0, sizeof m->peak_by_cat);
    for (uint32_t i = 0; i < r->nt; i++) {
        if (!r->live[i]) continue;
        m->peak_by_cat[r->ts[i].cat] += mem_round(r->ts[i].bytes);
        sum += mem_round(r->ts[i].bytes);
        m->peak_live[m->npeak_live++] = i;
    }
    m->peak_slack = m->peak - sum;
    return SS_OK;
}

static void tap_event(void *ctx, const mem_cache_ev *e)
{
    rp *r = ctx;
    bool blk = e->kind == MEM_EV_ALLOC || e->kind == MEM_EV_FREE;
    r->cfg->tap->event(r->cfg->tap->ctx, e, r->shown, blk ? r->cur->tensor : UINT32_MAX, r->cur->op);
}

static void tap_segment(void *ctx, const mem_cache_blk *b)
{
    rp *r = ctx;
    uint32_t t = !b->free && b->id < r->nowner ? r->owner[b->id] : UINT32_MAX;
    r->cfg->tap->segment(r->cfg->tap->ctx, b, t);
}

/* The allocator's state at the end of the step, block by block, each with
 * the tensor that holds it. */
static int tap_end(rp *r)
{
    uint32_t nb = 0;
    for (uint32_t i = 0; i < r->nt; i++)
        if (r->live[i] && r->blk[i] + 1 > nb) nb = r->blk[i] + 1;
    r->owner = malloc((nb ? nb : 1) * sizeof *r->owner);
    if (!r->owner) return ss_fail(r->err, SS_E_NOMEM, NULL, "out of memory");
    r->nowner = nb;
    for (uint32_t i = 0; i < nb; i++) r->owner[i] = UINT32_MAX;
    for (uint32_t i = 0; i < r->nt; i++)
        if (r->live[i]) r->owner[r->blk[i]] = i;
    return mem_cache_walk(r->c, tap_segment, r, r->err);
}

static int measure(rp *r, mem_rank *m)
{
    int rc = start_state(r);
    if (!rc && r->cfg->model != MEM_MODEL_IDEAL) {
        rc = pass(r, NULL, NULL); /* warm-up */
        if (!rc) rc = carry_over(r);
        if (!rc) mem_cache_reset_peaks(r->c);
    }
    if (rc) return rc;
    m->start = reported(r);
    m->peak = m->start;
    m->ideal_peak = r->ideal;
    size_t peak_ev = SIZE_MAX;
    if (r->cfg->series && !(m->series = malloc((r->nev ? r->nev : 1) * sizeof *m->series)))
        return ss_fail(r->err, SS_E_NOMEM, NULL, "out of memory");
    bool tap = r->cfg->tap && r->cfg->model != MEM_MODEL_IDEAL;
    if (tap && r->cfg->tap->event) mem_cache_set_hook(r->c, tap_event, r);
    if ((rc = pass(r, m, &peak_ev))) return rc;
    mem_cache_set_hook(r->c, NULL, NULL);
    if (tap && r->cfg->tap->segment && (rc = tap_end(r))) return rc;
    m->end = reported(r);
    if (r->cfg->model != MEM_MODEL_IDEAL) m->retries = mem_cache_get_stats(r->c).retries;
    m->peak_reserved = r->cfg->model == MEM_MODEL_IDEAL ? m->peak
                                                        : mem_cache_get_stats(r->c).peak_reserved;
    return peak_live(r, m, peak_ev);
}

int mem_replay_view(const mem_view *v, const mem_cfg *cfg, mem_rank *out, ss_err *err)
{
    rp r = {.t = v->t, .rank = v->rank, .cfg = cfg, .err = err, .ev = v->ev, .nev = v->nev,
            .stream = v->stream};
    r.ts = prog_tensors(v->t->p, v->rank);
    r.nt = prog_ntensors(v->t->p, v->rank);
    size_t n = r.nt ? r.nt : 1;
    r.live = calloc(n, 1);
    r.blk = calloc(n, sizeof *r.blk);
    mem_cache_cfg cc = {cfg->expandable_segments, cfg->capacity};
    mem_rank m = {.peak_op = UINT32_MAX, .oom_op = UINT32_MAX};
    int rc = !r.live || !r.blk ? ss_fail(err, SS_E_NOMEM, NULL, "out of memory")
                               : mem_cache_new(&r.c, &cc, err);
    if (!rc) rc = measure(&r, &m);
    free(r.live);
    free(r.blk);
    free(r.owner);
    mem_cache_free(r.c);
    if (rc) {
        mem_rank_fini(&m);
        return rc;
    }
    *out = m;
    return SS_OK;
}

int mem_replay(const trc *t, uint32_t rank, const mem_cfg *cfg, mem_rank *out, ss_err *err)
{
    mem_view *v = NULL;
    int rc = mem_view_new(t, rank, &v, err);
    if (!rc) rc = mem_replay_view(v, cfg, out, err);
    mem_view_free(v);
    return rc;
}

int mem_rank_copy(const mem_rank *from, mem_rank *to, ss_err *err)
{
    *to = *from;
    to->series = NULL, to->nseries = 0;
    to->peak_live = malloc((from->npeak_live ? from->npeak_live : 1) * sizeof *to->peak_live);
    if (!to->peak_live) {
        to->npeak_live = 0;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    if (from->npeak_live)
        memcpy(to->peak_live, from->peak_live, from->npeak_live * sizeof *to->peak_live);
    return SS_OK;
}

void mem_rank_fini(mem_rank *m)
{
    if (!m) return;
    free(m->peak_live);
    free(m->series);
    m->peak_live = NULL;
    m->series = NULL;
    m->npeak_live = 0;
    m->nseries = 0;
}
