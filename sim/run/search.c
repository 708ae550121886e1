/* Layout search: enumeration and the Pareto front. search.h states the
 * contract. */
#include "search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    uint32_t gpn = s->topo.gpus_per_node;
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

static void value_of(const search_point *p, size_t key, char *buf, size_t cap)
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
        value_of(p, k, buf, sizeof buf);
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
        value_of(p, key, buf, sizeof buf);
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
