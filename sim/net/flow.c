/* Max-min fair rates by progressive filling. flow.h states the contract. */
#include "flow.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/vec.h"

/* A link counts as saturated when less than this fraction of its capacity
 * is left: the filling arithmetic subtracts in floating point. */
#define SATURATED 1e-12

typedef struct fl {
    flow_use *u;
    uint32_t n, cap_u;
    double max_rate, rate;
    bool active, frozen;
} fl;

struct flow_sys {
    uint32_t nlinks;
    double *cap, *rem, *W; /* [nlinks]: capacity, left this solve, unfrozen weight */
    uint32_t *cnt;         /* [nlinks]: unfrozen flows on the link (W may keep rounding dust) */
    uint32_t *stamp, epoch;
    uint32_t *used, nused; /* links in use this solve, first-use order */
    fl *f;
    uint32_t nf, cap_f;
    uint32_t *free_ids, nfree, cap_free;
    uint32_t nactive, rounds;
};

int flow_sys_new(uint32_t nlinks, const double *cap, flow_sys **out, ss_err *err)
{
    flow_sys *s = calloc(1, sizeof *s);
    size_t n = nlinks ? nlinks : 1;
    if (s) {
        s->nlinks = nlinks;
        s->cap = malloc(n * sizeof *s->cap);
        s->rem = malloc(n * sizeof *s->rem);
        s->W = calloc(n, sizeof *s->W);
        s->stamp = calloc(n, sizeof *s->stamp);
        s->used = malloc(n * sizeof *s->used);
        s->cnt = calloc(n, sizeof *s->cnt);
    }
    if (!s || !s->cap || !s->rem || !s->W || !s->stamp || !s->used || !s->cnt) {
        flow_sys_free(s);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for %u links", nlinks);
    }
    memcpy(s->cap, cap, nlinks * sizeof *cap);
    *out = s;
    return SS_OK;
}

void flow_sys_free(flow_sys *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->nf; i++) free(s->f[i].u);
    free(s->f);
    free(s->free_ids);
    free(s->cap);
    free(s->rem);
    free(s->W);
    free(s->stamp);
    free(s->used);
    free(s->cnt);
    free(s);
}

static int take_slot(flow_sys *s, uint32_t *id)
{
    if (s->nfree) {
        *id = s->free_ids[--s->nfree];
        return 1;
    }
    if (!ss_grow((void **)&s->f, &s->cap_f, s->nf + 1, sizeof *s->f)) return 0;
    s->f[s->nf] = (fl){0};
    *id = s->nf++;
    return 1;
}

int flow_add(flow_sys *s, const flow_use *u, uint32_t n, double max_rate, uint32_t *id,
             ss_err *err)
{
    if (!ss_grow((void **)&s->free_ids, &s->cap_free, s->nf + 1, sizeof *s->free_ids))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow");
    uint32_t i;
    if (!take_slot(s, &i)) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow");
    fl *f = &s->f[i];
    if (!ss_grow((void **)&f->u, &f->cap_u, n, sizeof *f->u)) {
        s->free_ids[s->nfree++] = i;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow of %u links", n);
    }
    if (n) memcpy(f->u, u, n * sizeof *u);
    f->n = n;
    f->max_rate = max_rate;
    f->rate = 0.0;
    f->active = true;
    s->nactive++;
    *id = i;
    return SS_OK;
}

void flow_remove(flow_sys *s, uint32_t id)
{
    s->f[id].active = false;
    s->free_ids[s->nfree++] = id;
    s->nactive--;
}

/* Reset the links the active flows use and load their weights. */
static void solve_init(flow_sys *s)
{
    if (++s->epoch == 0) { /* wrapped: restart the stamps */
        memset(s->stamp, 0, s->nlinks * sizeof *s->stamp);
        s->epoch = 1;
    }
    s->nused = 0;
    for (uint32_t i = 0; i < s->nf; i++) {
        fl *f = &s->f[i];
        if (!f->active) continue;
        f->frozen = false;
        for (uint32_t k = 0; k < f->n; k++) {
            uint32_t l = f->u[k].link;
            if (s->stamp[l] != s->epoch) {
                s->stamp[l] = s->epoch;
                s->used[s->nused++] = l;
                s->rem[l] = s->cap[l];
                s->W[l] = 0.0;
                s->cnt[l] = 0;
            }
            s->W[l] += f->u[k].w;
            s->cnt[l]++;
        }
    }
}

/* The common increment every unfrozen rate can still take. */
static double next_step(const flow_sys *s, double level)
{
    double d = INFINITY;
    for (uint32_t k = 0; k < s->nused; k++) {
        uint32_t l = s->used[k];
        if (s->cnt[l] && s->W[l] > 0.0 && s->rem[l] / s->W[l] < d) d = s->rem[l] / s->W[l];
    }
    for (uint32_t i = 0; i < s->nf; i++) {
        const fl *f = &s->f[i];
        if (f->active && !f->frozen && f->max_rate > 0.0 && f->max_rate - level < d)
            d = f->max_rate - level;
    }
    return d < 0.0 ? 0.0 : d;
}

static bool blocked(const flow_sys *s, const fl *f, double level)
{
    if (f->max_rate > 0.0 && level >= f->max_rate * (1.0 - SATURATED)) return true;
    for (uint32_t k = 0; k < f->n; k++) {
        uint32_t l = f->u[k].link;
        if (s->rem[l] <= s->cap[l] * SATURATED) return true;
    }
    return false;
}

/* Freeze the flows a saturated link or their cap now blocks; returns how
 * many are left unfrozen. */
static uint32_t freeze(flow_sys *s, double level)
{
    uint32_t left = 0;
    for (uint32_t i = 0; i < s->nf; i++) {
        fl *f = &s->f[i];
        if (!f->active || f->frozen) continue;
        if (!blocked(s, f, level)) {
            left++;
            continue;
        }
        f->frozen = true;
        f->rate = level;
        for (uint32_t k = 0; k < f->n; k++) {
            s->W[f->u[k].link] -= f->u[k].w;
            s->cnt[f->u[k].link]--;
        }
    }
    return left;
}

void flow_solve(flow_sys *s)
{
    solve_init(s);
    double level = 0.0;
    uint32_t left = s->nactive;
    s->rounds = 0;
    while (left) {
        double d = next_step(s, level);
        if (isinf(d)) { /* only unconstrained flows remain */
            for (uint32_t i = 0; i < s->nf; i++)
                if (s->f[i].active && !s->f[i].frozen) s->f[i].rate = INFINITY;
            return;
        }
        level += d;
        for (uint32_t k = 0; k < s->nused; k++) {
            uint32_t l = s->used[k];
            if (s->cnt[l]) s->rem[l] -= d * s->W[l];
        }
        left = freeze(s, level);
        s->rounds++;
    }
}

double flow_rate(const flow_sys *s, uint32_t id) { return s->f[id].rate; }
uint32_t flow_nactive(const flow_sys *s) { return s->nactive; }
uint32_t flow_last_rounds(const flow_sys *s) { return s->rounds; }
