/* Layout search: enumeration and the Pareto front. search.h states the
 * contract. */
#include "search.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/par.h"
#include "../io/scenario.h"
#include "../plan/plan.h"
#include "../sched/sched.h"
#include "bound.h"
#include "least.h"
#include "vary.h"

const char *const search_keys[SEARCH_NKEYS] = {
    "parallel.tp", "parallel.cp", "parallel.pp", "parallel.ep", "parallel.dp",
    "parallel.sequence_parallel", "training.grad_accum", "sharding.strategy",
    "training.recompute"};

/* ---- defaults ---- */

static void pow2_upto(search_list *l, uint64_t cap)
{
    if (l->n) return;
    for (uint64_t v = 1; v <= cap && l->n < SEARCH_MAX_VALUES; v *= 2) l->v[l->n++] = (uint32_t)v;
}

static void one_value(search_list *l, uint32_t v)
{
    if (!l->n) l->v[l->n++] = v;
}

void search_defaults(search_space *sp, const spec_scenario *s)
{
    uint32_t gpn = spec_topo_rpn(&s->topo); /* the ranks one node holds */
    if (!sp->world) sp->world = s->topo.nodes * gpn;
    pow2_upto(&sp->tp, sp->world < gpn ? sp->world : gpn);
    pow2_upto(&sp->cp, sp->world);
    pow2_upto(&sp->pp, sp->world);
    uint64_t experts = s->model.is_arch ? s->model.arch.experts : 0;
    pow2_upto(&sp->ep, experts < sp->world ? (experts ? experts : 1) : sp->world);
    one_value(&sp->strategy, (uint32_t)s->shard.strategy);
    one_value(&sp->recompute, (uint32_t)s->recompute);
    if (!sp->micro_batch) sp->micro_batch = s->micro_batch;
    if (!sp->global_batch) sp->global_batch = s->micro_batch * s->dp * s->grad_accum;
    if (!sp->max_points) sp->max_points = 2000;
}

/* ---- enumeration ---- */

/* 1: tp x cp x pp is a layout of the world (dp and grad_accum set); 0: it
 * does not divide the world; -1: its dp does not split the global batch. */
static int layout_fit(const search_space *sp, search_point *p)
{
    uint64_t model = (uint64_t)p->tp * p->cp * p->pp;
    if (!model || sp->world % model) return 0;
    p->dp = (uint32_t)(sp->world / model);
    uint64_t per_micro = sp->micro_batch * p->dp; /* samples one micro-batch step takes */
    if (!per_micro || !sp->global_batch || sp->global_batch % per_micro ||
        sp->global_batch / per_micro > UINT32_MAX)
        return -1;
    p->grad_accum = (uint32_t)(sp->global_batch / per_micro);
    return 1;
}

/* Append layout p's points (every ep, strategy and recompute) at out[n]. */
static size_t fill(const search_space *sp, search_point p, search_point *out, size_t n)
{
    for (size_t e = 0; e < sp->ep.n; e++)
        for (size_t s = 0; s < sp->strategy.n; s++)
            for (size_t r = 0; r < sp->recompute.n; r++) {
                p.ep = sp->ep.v[e];
                p.strategy = (spec_strategy)sp->strategy.v[s];
                p.recompute = (spec_recompute)sp->recompute.v[r];
                out[n++] = p;
            }
    return n;
}

/* Count the points (out NULL) or write them: one walk for both, so the
 * count cannot drift from the list. */
static size_t walk(const search_space *sp, search_point *out, size_t *skipped)
{
    size_t n = 0, per = sp->ep.n * sp->strategy.n * sp->recompute.n;
    *skipped = 0;
    for (size_t a = 0; a < sp->tp.n; a++)
        for (size_t b = 0; b < sp->cp.n; b++)
            for (size_t c = 0; c < sp->pp.n; c++) {
                search_point p = {.tp = sp->tp.v[a], .cp = sp->cp.v[b], .pp = sp->pp.v[c]};
                int fit = layout_fit(sp, &p);
                *skipped += fit < 0;
                if (fit > 0) n = out ? fill(sp, p, out, n) : n + per;
            }
    return n;
}

/* The option to narrow first: the longest candidate list. */
static const char *widest(const search_space *sp, size_t *len)
{
    const search_list *l[] = {&sp->tp, &sp->cp, &sp->pp, &sp->ep, &sp->strategy, &sp->recompute};
    static const char *const names[] = {"--tp", "--cp", "--pp", "--ep", "--strategy",
                                        "--recompute"};
    size_t best = 0;
    for (size_t k = 1; k < 6; k++)
        if (l[k]->n > l[best]->n) best = k;
    *len = l[best]->n;
    return names[best];
}

int search_enumerate(const search_space *sp, search_point **out, size_t *n, size_t *skipped,
                     ss_err *err)
{
    *out = NULL;
    *n = walk(sp, NULL, skipped);
    typedef unsigned long long ull;
    if (!*n && *skipped)
        return ss_fail(err, SS_E_INPUT, NULL, "no layout over %u GPUs splits the global batch "
                       "of %llu samples into micro-batches of %llu per rank (set --global-batch)",
                       sp->world, (ull)sp->global_batch, (ull)sp->micro_batch);
    if (!*n)
        return ss_fail(err, SS_E_INPUT, NULL, "no tp x cp x pp of the candidates divides "
                       "the world of %u GPUs", sp->world);
    if (*n > sp->max_points) {
        size_t len;
        const char *opt = widest(sp, &len);
        return ss_fail(err, SS_E_INPUT, NULL, "%zu points are more than --max-points %zu: "
                       "narrow %s (%zu values) or raise --max-points", *n, sp->max_points, opt,
                       len);
    }
    if (!(*out = malloc(*n * sizeof **out))) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    walk(sp, *out, skipped);
    return SS_OK;
}

/* ---- the sweep's columns ---- */

void search_point_value(const search_point *p, size_t key, char *buf, size_t cap)
{
    const uint32_t nums[] = {p->tp, p->cp, p->pp, p->ep, p->dp, 0, p->grad_accum};
    if (key == 5) snprintf(buf, cap, "%s", p->tp > 1 ? "true" : "false"); /* SP with any TP */
    else if (key == 7) snprintf(buf, cap, "%s", spec_strategy_names[p->strategy]);
    else if (key == 8) snprintf(buf, cap, "%s", spec_recompute_names[p->recompute]);
    else snprintf(buf, cap, "%u", nums[key]);
}

size_t search_point_sets(const search_point *p, spec_strategy base,
                         char sets[SEARCH_NKEYS][SEARCH_SET_MAX])
{
    for (size_t k = 0; k < SEARCH_NKEYS; k++) {
        char buf[64];
        search_point_value(p, k, buf, sizeof buf);
        if (k == 7 && p->strategy != base)
            snprintf(sets[k], SEARCH_SET_MAX, "sharding={\"strategy\": \"%s\"}", buf);
        else snprintf(sets[k], SEARCH_SET_MAX, "%s=%s", search_keys[k], buf);
    }
    return SEARCH_NKEYS;
}

/* A point with another runtime than the scenario's gets that runtime's
 * defaults: its sharding section replaced whole (the scenario's knobs
 * belong to its own runtime, and some are errors with another). */
static int column(const search_point *pts, size_t n, size_t key, spec_strategy base,
                  sweep_vary *v)
{
    snprintf(v->key, sizeof v->key, "%s", search_keys[key]);
    if (!(v->values = calloc(n ? n : 1, sizeof *v->values))) return 0;
    if (key == 7 && !(v->sets = calloc(n ? n : 1, sizeof *v->sets))) return 0;
    for (; v->nvalues < n; v->nvalues++) {
        char buf[64], set[128];
        const search_point *p = &pts[v->nvalues];
        search_point_value(p, key, buf, sizeof buf);
        if (!(v->values[v->nvalues] = strdup(buf))) return 0;
        if (key != 7 || p->strategy == base) continue;
        snprintf(set, sizeof set, "sharding={\"strategy\": \"%s\"}", buf);
        if (!(v->sets[v->nvalues] = strdup(set))) return 0;
    }
    return 1;
}

int search_sweep_lists(const search_point *pts, size_t n, spec_strategy base, sweep_cfg *c,
                       ss_err *err)
{
    c->zip = true;
    c->nvary = SEARCH_NKEYS;
    for (size_t k = 0; k < SEARCH_NKEYS; k++) {
        memset(&c->vary[k], 0, sizeof c->vary[k]);
        if (column(pts, n, k, base, &c->vary[k])) continue;
        for (size_t j = 0; j <= k; j++) sweep_vary_fini(&c->vary[j]);
        c->nvary = 0;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    return SS_OK;
}

/* ---- the front ---- */

typedef struct cand {
    double step_s;
    uint64_t reserved;
    size_t i;
} cand;

static int by_time(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    if (a->step_s != b->step_s) return a->step_s < b->step_s ? -1 : 1;
    if (a->reserved != b->reserved) return a->reserved < b->reserved ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* In step-time order a point is on the front exactly when it needs less
 * memory than every faster one (equal pairs: the first index stays). */
int search_front(const sweep_fig *figs, size_t n, size_t *front, size_t *nfront, ss_err *err)
{
    cand *c = malloc((n ? n : 1) * sizeof *c);
    size_t m = 0, k = 0;
    *nfront = 0;
    if (!c) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (figs[i].ok && figs[i].fits) c[m++] = (cand){figs[i].step_s, figs[i].peak_reserved, i};
    qsort(c, m, sizeof *c, by_time);
    for (size_t j = 0; j < m; j++)
        if (!k || c[j].reserved < figs[front[k - 1]].peak_reserved) front[k++] = c[j].i;
    free(c);
    *nfront = k;
    return SS_OK;
}

/* ---- the nearest miss ---- */

static uint64_t over(uint64_t bytes, uint64_t usable) { return bytes > usable ? bytes - usable : 0; }

bool search_nearest_miss(const sweep_fig *figs, const search_check *chk, size_t n,
                         uint64_t usable, search_miss *out)
{
    size_t sim = SIZE_MAX, rej = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (figs[i].ok && !figs[i].fits &&
            (sim == SIZE_MAX || over(figs[i].peak_reserved, usable) <
                                    over(figs[sim].peak_reserved, usable)))
            sim = i;
        if (!figs[i].ok && chk[i].checked && chk[i].rejected &&
            (rej == SIZE_MAX || chk[i].states < chk[rej].states))
            rej = i;
    }
    if (sim == SIZE_MAX && rej == SIZE_MAX) return false;
    *out = (search_miss){.doubt = SIZE_MAX};
    if (sim == SIZE_MAX) {
        out->point = rej;
        out->bytes = chk[rej].states;
    } else {
        out->point = sim, out->simulated = true;
        out->bytes = figs[sim].peak_reserved;
        if (rej != SIZE_MAX && over(chk[rej].states, usable) < over(out->bytes, usable))
            out->doubt = rej;
    }
    out->over = over(out->bytes, usable);
    return true;
}

/* ---- checks before simulating ---- */

/* The largest rank's state bytes on the device (offloaded parts excluded),
 * a floor under its peak: all four states are live together at the end of
 * backward. DeepSpeed's fp32 gradient partition is not with them: the step
 * builds it from the reduced gradients one group at a time (deepspeed.c),
 * so it is left out, or a step whose peak comes before the optimizer (a
 * small model under a vocab-parallel loss) would sit below its floor. */
static int device_states(const plan *pl, uint64_t *out, ss_err *err)
{
    *out = 0;
    for (uint32_t k = 0; k < pl->n; k++) {
        st_bytes st;
        int rc = sched_states(pl, k, &st, err);
        if (rc) return rc;
        uint64_t g32 = st.grad32.physical - st.grad32.host;
        uint64_t on = st.total_physical - st.host;
        uint64_t dev = on > g32 ? on - g32 : 0;
        if (dev > *out) *out = dev;
    }
    return SS_OK;
}

/* The program run_step would simulate (stragglers included: they only
 * stretch compute, but the bound should see what the engine sees). */
static int step_bound(const spec_scenario *s, const plan *pl, ss_ns *out, ss_err *err)
{
    prog *p = NULL;
    least *l = NULL;
    int rc = sched_build(pl, &p, err);
    if (!rc) {
        vary_stragglers(s, p);
        rc = least_new(s, p, &l, err);
    }
    if (!rc) {
        bound_net net = least_net(l);
        rc = bound_step(p, &net, out, err);
    }
    least_free(l);
    prog_free(p);
    return rc;
}

void search_check_point(const char *file, const char *const *sets, size_t nsets,
                        spec_strategy base, const search_point *p, search_check *out)
{
    char own[SEARCH_NKEYS][SEARCH_SET_MAX];
    const char *all[256 + SEARCH_NKEYS];
    size_t n = 0;
    for (size_t k = 0; k < nsets && n < 256; k++) all[n++] = sets[k];
    size_t m = search_point_sets(p, base, own);
    for (size_t k = 0; k < m; k++) all[n++] = own[k];
    *out = (search_check){0};
    ss_err err;
    ss_err_clear(&err);
    spec_scenario s;
    if (scn_load(file, all, n, &s, &err)) return;
    plan *pl = NULL;
    int rc = plan_new(&pl, &s, &err);
    if (!rc) rc = device_states(pl, &out->states, &err);
    out->capacity = s.capacity_bytes;
    out->rejected = !rc && s.capacity_bytes && out->states > s.capacity_bytes;
    if (!rc && !out->rejected) rc = step_bound(&s, pl, &out->bound_ns, &err);
    out->checked = !rc;
    plan_free(pl);
    spec_scenario_fini(&s);
}

typedef struct checks {
    const char *file;
    const char *const *sets;
    size_t nsets;
    spec_strategy base;
    const search_point *pts;
    search_check *chk;
    size_t n, next, done;
    pthread_mutex_t lock;
    void (*progress)(void *ctx, size_t done, size_t total);
    void *ctx;
} checks;

static void *check_worker(void *arg)
{
    checks *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        size_t i = c->next < c->n ? c->next++ : SIZE_MAX;
        pthread_mutex_unlock(&c->lock);
        if (i == SIZE_MAX) return NULL;
        search_check_point(c->file, c->sets, c->nsets, c->base, &c->pts[i], &c->chk[i]);
        pthread_mutex_lock(&c->lock);
        c->done++;
        if (c->progress) c->progress(c->ctx, c->done, c->n);
        pthread_mutex_unlock(&c->lock);
    }
}

void search_check_all(const char *file, const char *const *sets, size_t nsets,
                      spec_strategy base, const search_point *pts, size_t n, unsigned threads,
                      search_check *chk, void (*progress)(void *ctx, size_t done, size_t total),
                      void *ctx)
{
    checks c = {file, sets, nsets, base, pts, chk, n, 0, 0, PTHREAD_MUTEX_INITIALIZER,
                progress, ctx};
    par_run(threads, check_worker, &c);
    pthread_mutex_destroy(&c.lock);
}

/* ---- pruning ---- */

const char *const search_prune_names[3] = {"best", "front", "none"};

enum { V_OPEN, V_KEPT, V_PRUNED, V_REJECTED }; /* verdicts; V_OPEN until the frontier passes */

struct search_pruner {
    const search_check *chk;
    size_t n;
    search_prune mode;
    size_t *order, *pos; /* position -> point, point -> position */
    sweep_fig *fig;      /* of the points done */
    bool *done;
    unsigned char *verdict;
    size_t *by;          /* V_PRUNED: the point that prunes it */
    size_t frontier;     /* the points at positions < frontier have their verdict */
    size_t *kept, nkept; /* simulated fitting points with a verdict, the pruners */
};

/* Unchecked first (their errors come quickly), rejected last, the rest by
 * bound, then index. */
typedef struct okey {
    int kind; /* 0 unchecked, 1 checked, 2 rejected */
    ss_ns bound;
    size_t i;
} okey;

static int by_bound(const void *pa, const void *pb)
{
    const okey *x = pa, *y = pb;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    if (x->bound != y->bound) return x->bound < y->bound ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static double gib(uint64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }
static double secs(ss_ns t) { return t * 1e-9; } /* as sweep_fig.step_s is made */

/* q (simulated, fitting) comes before c in the front's order (step, peak
 * reserved, index) whatever c's own figures turn out to be, given c's step
 * >= its bound and its peak >= its states; under SEARCH_PRUNE_FRONT q must
 * also need no more memory than c's states, which puts c off the front. */
static bool beats(const search_pruner *p, size_t q, size_t c)
{
    const sweep_fig *f = &p->fig[q];
    const search_check *k = &p->chk[c];
    double b = secs(k->bound_ns);
    bool before = f->step_s < b ||
                  (f->step_s == b && (f->peak_reserved < k->states ||
                                      (f->peak_reserved == k->states && q < c)));
    return before && (p->mode != SEARCH_PRUNE_FRONT || f->peak_reserved <= k->states);
}

/* The fastest kept point that beats c, SIZE_MAX if none. */
static size_t pruner_of(const search_pruner *p, size_t c)
{
    size_t best = SIZE_MAX;
    if (p->mode == SEARCH_PRUNE_NONE || !p->chk[c].checked) return best;
    for (size_t k = 0; k < p->nkept; k++) {
        size_t q = p->kept[k];
        if (beats(p, q, c) && (best == SIZE_MAX || p->fig[q].step_s < p->fig[best].step_s))
            best = q;
    }
    return best;
}

void search_pruner_free(search_pruner *p)
{
    if (!p) return;
    free(p->order), free(p->pos), free(p->fig), free(p->done), free(p->verdict);
    free(p->by), free(p->kept);
    free(p);
}

int search_pruner_new(search_pruner **out, const search_check *chk, size_t n,
                      search_prune mode, ss_err *err)
{
    search_pruner *p = calloc(1, sizeof *p);
    okey *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t m = n ? n : 1;
    if (p) {
        *p = (search_pruner){.chk = chk, .n = n, .mode = mode};
        p->order = malloc(m * sizeof *p->order), p->pos = malloc(m * sizeof *p->pos);
        p->fig = calloc(m, sizeof *p->fig), p->done = calloc(m, sizeof *p->done);
        p->verdict = calloc(m, 1), p->by = malloc(m * sizeof *p->by);
        p->kept = malloc(m * sizeof *p->kept);
    }
    if (!p || !keys || !p->order || !p->pos || !p->fig || !p->done || !p->verdict || !p->by ||
        !p->kept) {
        free(keys);
        search_pruner_free(p);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) /* --prune none: index order */
        keys[i] = mode == SEARCH_PRUNE_NONE
                      ? (okey){0, 0, i}
                      : (okey){!chk[i].checked ? 0 : chk[i].rejected ? 2 : 1, chk[i].bound_ns, i};
    qsort(keys, n, sizeof *keys, by_bound);
    for (size_t k = 0; k < n; k++) {
        p->order[k] = keys[k].i;
        p->pos[keys[k].i] = k;
    }
    free(keys);
    *out = p;
    return SS_OK;
}

const size_t *search_pruner_order(const search_pruner *p) { return p->order; }

/* The verdicts of the points whose predecessors in the order are all done,
 * each against the pruners before it only: the same on any thread count. */
static void advance(search_pruner *p)
{
    for (; p->frontier < p->n && p->done[p->order[p->frontier]]; p->frontier++) {
        size_t c = p->order[p->frontier];
        bool rejected = p->chk[c].rejected && p->mode != SEARCH_PRUNE_NONE;
        size_t q = rejected ? SIZE_MAX : pruner_of(p, c);
        p->by[c] = q;
        p->verdict[c] = rejected ? V_REJECTED : q != SIZE_MAX ? V_PRUNED : V_KEPT;
        if (p->verdict[c] == V_KEPT && p->fig[c].ok && p->fig[c].fits) p->kept[p->nkept++] = c;
    }
}

void search_pruner_done(search_pruner *p, size_t i, const sweep_fig *f)
{
    p->fig[i] = *f;
    p->done[i] = true;
    advance(p);
}

static void say_pruned(const search_pruner *p, size_t c, size_t q, sweep_skip *row)
{
    const search_check *k = &p->chk[c];
    snprintf(row->status, sizeof row->status, "pruned");
    if (p->mode == SEARCH_PRUNE_FRONT)
        snprintf(row->why, sizeof row->why, "pruned: bound %.6f s >= %.6f s of point %zu, "
                 "which needs %.2f GiB <= states %.2f GiB", secs(k->bound_ns),
                 p->fig[q].step_s, q, gib(p->fig[q].peak_reserved), gib(k->states));
    else
        snprintf(row->why, sizeof row->why, "pruned: bound %.6f s >= best %.6f s (point %zu)",
                 secs(k->bound_ns), p->fig[q].step_s, q);
}

int search_pruner_skip(search_pruner *p, size_t i, sweep_skip *row)
{
    const search_check *k = &p->chk[i];
    if (p->mode == SEARCH_PRUNE_NONE) return SWEEP_RUN;
    if (k->rejected) {
        snprintf(row->status, sizeof row->status, "rejected");
        snprintf(row->why, sizeof row->why, "rejected: states %.2f GiB > %.2f GiB",
                 gib(k->states), gib(k->capacity));
        return SWEEP_SKIP;
    }
    size_t q = p->pos[i] < p->frontier ? (p->verdict[i] == V_PRUNED ? p->by[i] : SIZE_MAX)
                                      : pruner_of(p, i);
    if (q == SIZE_MAX) return SWEEP_RUN;
    say_pruned(p, i, q, row);
    return SWEEP_SKIP;
}

bool search_pruner_doubt(const search_pruner *p, const sweep_fig *q)
{
    if (p->mode != SEARCH_PRUNE_BEST) return false;
    for (size_t i = 0; i < p->n; i++)
        if (p->verdict[i] == V_PRUNED && secs(p->chk[i].bound_ns) <= q->step_s &&
            p->chk[i].states <= q->peak_reserved)
            return true;
    return false;
}

size_t search_pruner_open(const search_pruner *p)
{
    size_t open = 0;
    for (size_t i = 0; p->mode == SEARCH_PRUNE_BEST && i < p->n; i++) {
        if (p->verdict[i] != V_PRUNED) continue;
        bool closed = false;
        for (size_t k = 0; k < p->nkept && !closed; k++) {
            const sweep_fig *f = &p->fig[p->kept[k]];
            closed = f->step_s <= secs(p->chk[i].bound_ns) && f->peak_reserved <= p->chk[i].states;
        }
        open += !closed;
    }
    return open;
}

void search_pruner_counts(const search_pruner *p, size_t *rejected, size_t *pruned)
{
    *rejected = *pruned = 0;
    for (size_t i = 0; i < p->n; i++) {
        *rejected += p->verdict[i] == V_REJECTED;
        *pruned += p->verdict[i] == V_PRUNED;
    }
}
