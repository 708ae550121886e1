/* Max-min fair rates by progressive filling. flow.h states the contract. */
#include "flow.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/radix.h"
#include "../core/vec.h"

typedef struct fl {
    flow_use *u;
    uint32_t *pos; /* [n]: where the flow sits in its k-th link's list */
    uint32_t n, cap_u, cap_pos;
    double max_rate, rate;
    double cap; /* this solve: max_rate and its private links' cap / w, the least (INFINITY: none) */
    bool active, frozen;
} fl;

/* One entry of a link's list of flows: the flow and which of its links. */
typedef struct lent {
    uint32_t flow, k;
} lent;

typedef struct hent {
    double t;
    uint32_t key; /* link, or nlinks + flow for a cap */
    uint32_t ver;
} hent;

struct flow_sys {
    uint32_t nlinks;
    double *cap, *rem, *W; /* [nlinks]: capacity, left this solve, unfrozen weight */
    uint32_t *cnt;         /* [nlinks]: unfrozen flows on the link (W may keep rounding dust) */
    double *L0;            /* [nlinks]: level at which rem was last brought up to date */
    uint32_t *ver;         /* [nlinks]: bumped when the link's saturation level moves */
    uint32_t *stamp;       /* [nlinks]: the solve (mepoch) that last loaded the link */
    hent *heap;
    uint32_t nheap, cap_heap, left;
    uint32_t *dmark, *dirty, ndirty, batch; /* [nlinks]: links touched this batch */
    uint32_t *used, nused; /* links in use this solve, first-use order */
    fl *f;
    uint32_t nf, cap_f;
    uint32_t *free_ids, nfree, cap_free;
    uint32_t nactive, rounds;
    /* Components: the flows on each link (active ones, any order), the
     * links touched since the last solve, and the flows a solve re-solves
     * (those reachable from a touched link), ascending. */
    lent **on;                    /* [nlinks] */
    uint32_t *non, *cap_on;       /* [nlinks] */
    uint32_t *touched, ntouched, *tmark, tepoch; /* tmark [nlinks] */
    uint32_t *sub, nsub, cap_sub;
    uint32_t *fmark, cap_fmark, *lmark, mepoch; /* fmark [flow slots], lmark [nlinks] */
    uint32_t *queue, cap_queue;
    bool lone; /* a flow without links was added: the next solve takes it */
};

/* Few entries: insertion sort beats four counting passes. */
static void use_isort(flow_use *u, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        flow_use x = u[i];
        uint32_t j = i;
        for (; j > 0 && u[j - 1].link > x.link; j--) u[j] = u[j - 1];
        u[j] = x;
    }
}

static uint64_t use_key(const void *u) { return ((const flow_use *)u)->link; }

int flow_use_sort(flow_use *u, uint32_t n, ss_err *err)
{
    if (n > 32) return ss_radix_sort(u, n, sizeof *u, use_key, 4, err);
    use_isort(u, n);
    return SS_OK;
}

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
        s->L0 = calloc(n, sizeof *s->L0);
        s->ver = calloc(n, sizeof *s->ver);
        s->dmark = calloc(n, sizeof *s->dmark);
        s->dirty = calloc(n, sizeof *s->dirty);
        s->on = calloc(n, sizeof *s->on);
        s->non = calloc(n, sizeof *s->non);
        s->cap_on = calloc(n, sizeof *s->cap_on);
        s->touched = malloc(n * sizeof *s->touched);
        s->tmark = calloc(n, sizeof *s->tmark);
        s->lmark = calloc(n, sizeof *s->lmark);
    }
    if (!s || !s->cap || !s->rem || !s->W || !s->stamp || !s->used || !s->cnt || !s->L0 ||
        !s->ver || !s->dmark || !s->dirty || !s->on || !s->non || !s->cap_on ||
        !s->touched || !s->tmark || !s->lmark) {
        flow_sys_free(s);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for %u links", nlinks);
    }
    memcpy(s->cap, cap, nlinks * sizeof *cap);
    s->tepoch = s->mepoch = 1;
    *out = s;
    return SS_OK;
}

void flow_sys_free(flow_sys *s)
{
    if (!s) return;
    for (uint32_t i = 0; i < s->nf; i++) free(s->f[i].u), free(s->f[i].pos);
    free(s->f);
    free(s->free_ids);
    free(s->cap);
    free(s->rem);
    free(s->W);
    free(s->stamp);
    free(s->used);
    free(s->cnt);
    free(s->L0);
    free(s->ver);
    free(s->dmark);
    free(s->dirty);
    for (uint32_t l = 0; s->on && l < s->nlinks; l++) free(s->on[l]);
    free(s->on);
    free(s->non);
    free(s->cap_on);
    free(s->touched);
    free(s->tmark);
    free(s->lmark);
    free(s->sub);
    free(s->fmark);
    free(s->queue);
    free(s->heap);
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

static void touch(flow_sys *s, uint32_t l)
{
    if (s->tmark[l] == s->tepoch) return;
    s->tmark[l] = s->tepoch;
    s->touched[s->ntouched++] = l;
}

/* Put flow i on its links' lists; all or nothing. */
static int link_on(flow_sys *s, uint32_t i)
{
    fl *f = &s->f[i];
    for (uint32_t k = 0; k < f->n; k++) {
        uint32_t l = f->u[k].link;
        if (!ss_grow((void **)&s->on[l], &s->cap_on[l], s->non[l] + 1, sizeof *s->on[l])) {
            while (k-- > 0) s->non[f->u[k].link]--; /* each was appended last */
            return 0;
        }
        f->pos[k] = s->non[l];
        s->on[l][s->non[l]++] = (lent){i, k};
    }
    for (uint32_t k = 0; k < f->n; k++) touch(s, f->u[k].link);
    return 1;
}

/* Take flow i off its links' lists: the last entry of each list moves
 * into its place (the order the component search sees). */
static void link_off(flow_sys *s, uint32_t i)
{
    const fl *f = &s->f[i];
    for (uint32_t k = 0; k < f->n; k++) {
        uint32_t l = f->u[k].link, j = f->pos[k];
        lent last = s->on[l][--s->non[l]];
        s->on[l][j] = last;
        s->f[last.flow].pos[last.k] = j;
        touch(s, l);
    }
}

int flow_add(flow_sys *s, const flow_use *u, uint32_t n, double max_rate, uint32_t *id,
             ss_err *err)
{
    if (!ss_grow((void **)&s->free_ids, &s->cap_free, s->nf + 1, sizeof *s->free_ids))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow");
    uint32_t i;
    if (!take_slot(s, &i)) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow");
    fl *f = &s->f[i];
    if (!ss_grow((void **)&f->u, &f->cap_u, n, sizeof *f->u) ||
        !ss_grow((void **)&f->pos, &f->cap_pos, n, sizeof *f->pos) ||
        !ss_grow((void **)&s->fmark, &s->cap_fmark, s->nf, sizeof *s->fmark)) {
        s->free_ids[s->nfree++] = i;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow of %u links", n);
    }
    s->fmark[i] = 0;
    if (n) memcpy(f->u, u, n * sizeof *u);
    f->n = n;
    if (!link_on(s, i)) {
        s->free_ids[s->nfree++] = i;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a flow of %u links", n);
    }
    f->max_rate = max_rate;
    f->rate = 0.0;
    f->active = true;
    s->nactive++;
    if (n == 0) s->lone = true; /* reached from no link: solved by itself */
    *id = i;
    return SS_OK;
}

void flow_remove(flow_sys *s, uint32_t id)
{
    link_off(s, id);
    s->f[id].active = false;
    s->free_ids[s->nfree++] = id;
    s->nactive--;
}

/* ---- the solver ----
 * Progressive filling with an event heap: every unfrozen rate equals the
 * common level L. A link with weight W of unfrozen flows and rem bytes/s
 * left when the level was L0 saturates at level L0 + rem / W; a capped
 * flow stops at its cap. Pop the least such level, freeze the flows it
 * blocks, and update (rem, L0, W) of their links, pushing their new
 * levels; stale heap entries carry an old version and are skipped. Each
 * usage entry is touched once per solve: O(U log U). */

static bool hless(const hent *a, const hent *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

static int hpush(flow_sys *s, double t, uint32_t key, uint32_t ver)
{
    if (!ss_grow((void **)&s->heap, &s->cap_heap, s->nheap + 1, sizeof *s->heap)) return 0;
    uint32_t i = s->nheap++;
    hent e = {t, key, ver};
    while (i > 0 && hless(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
    return 1;
}

static hent hpop(flow_sys *s)
{
    hent top = s->heap[0], last = s->heap[--s->nheap];
    uint32_t i = 0, n = s->nheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hless(&s->heap[c + 1], &s->heap[c])) c++;
        if (!hless(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = last;
    return top;
}

/* A link only one flow uses caps it: saturated at cap / w from level 0. */
static double lone_cap(const flow_sys *s, const flow_use *u) { return s->cap[u->link] / u->w; }

double flow_alone_rate(const flow_sys *s, const flow_use *u, uint32_t n, double max_rate)
{
    double r = max_rate > 0.0 ? max_rate : INFINITY; /* as take() sets a flow's cap */
    for (uint32_t k = 0; k < n; k++)
        if (lone_cap(s, &u[k]) < r) r = lone_cap(s, &u[k]);
    return r;
}

/* Flow i joins this solve: its rate restarts, its weights load its links
 * (a link's state is reset the first time a solve reaches it). */
static int take(flow_sys *s, uint32_t i)
{
    if (!ss_grow((void **)&s->sub, &s->cap_sub, s->nsub + 1, sizeof *s->sub)) return 0;
    s->sub[s->nsub++] = i;
    s->fmark[i] = s->mepoch;
    fl *f = &s->f[i];
    f->frozen = false;
    f->rate = 0.0;
    f->cap = f->max_rate > 0.0 ? f->max_rate : INFINITY;
    for (uint32_t k = 0; k < f->n; k++) {
        uint32_t l = f->u[k].link;
        if (s->non[l] == 1) { /* only f uses it */
            double c = lone_cap(s, &f->u[k]);
            if (c < f->cap) f->cap = c;
            continue;
        }
        if (s->stamp[l] != s->mepoch) {
            s->stamp[l] = s->mepoch;
            s->used[s->nused++] = l;
            s->rem[l] = s->cap[l];
            s->L0[l] = 0.0;
            s->W[l] = 0.0;
            s->cnt[l] = 0;
            s->ver[l]++;
        }
        s->W[l] += f->u[k].w;
        s->cnt[l]++;
    }
    return 1;
}

/* The flows to re-solve: every active flow connected, through shared
 * links, to a link touched since the last solve (the max-min rates of the
 * other components cannot have moved). Breadth-first over the links' flow
 * lists from the touched links in touch order, so the order (and every
 * rounding) is a function of the calls alone; each flow taken loads its
 * links as it is reached. */
static int collect(flow_sys *s)
{
    if (++s->mepoch == 0) {
        memset(s->fmark, 0, s->cap_fmark * sizeof *s->fmark);
        memset(s->lmark, 0, s->nlinks * sizeof *s->lmark);
        memset(s->stamp, 0, s->nlinks * sizeof *s->stamp);
        s->mepoch = 1;
    }
    s->nsub = s->nused = 0;
    uint32_t head = 0, tail = 0;
    if (!ss_grow((void **)&s->queue, &s->cap_queue, s->ntouched ? s->ntouched : 1, sizeof *s->queue))
        return 0;
    for (uint32_t k = 0; k < s->ntouched; k++) {
        s->lmark[s->touched[k]] = s->mepoch;
        s->queue[tail++] = s->touched[k];
    }
    while (head < tail) {
        uint32_t l = s->queue[head++];
        for (uint32_t j = 0; j < s->non[l]; j++) {
            uint32_t i = s->on[l][j].flow;
            if (s->fmark[i] == s->mepoch) continue;
            if (!take(s, i)) return 0;
            const fl *f = &s->f[i];
            if (!ss_grow((void **)&s->queue, &s->cap_queue, tail + f->n, sizeof *s->queue)) return 0;
            for (uint32_t k = 0; k < f->n; k++)
                if (s->lmark[f->u[k].link] != s->mepoch) {
                    s->lmark[f->u[k].link] = s->mepoch;
                    s->queue[tail++] = f->u[k].link;
                }
        }
    }
    for (uint32_t i = 0; s->lone && i < s->nf; i++)
        if (s->f[i].active && s->f[i].n == 0 && !take(s, i)) return 0;
    s->lone = false;
    s->ntouched = 0;
    if (++s->tepoch == 0) {
        memset(s->tmark, 0, s->nlinks * sizeof *s->tmark);
        s->tepoch = 1;
    }
    return 1;
}

static int push_link(flow_sys *s, uint32_t l, double level)
{
    double t = s->L0[l] + s->rem[l] / s->W[l];
    return hpush(s, t > level ? t : level, l, s->ver[l]);
}

static int freeze_flow(flow_sys *s, uint32_t i, double level)
{
    fl *f = &s->f[i];
    f->frozen = true;
    f->rate = level;
    s->left--;
    for (uint32_t k = 0; k < f->n; k++) {
        uint32_t l = f->u[k].link;
        if (s->stamp[l] != s->mepoch) continue; /* private: not loaded */
        s->rem[l] -= s->W[l] * (level - s->L0[l]);
        s->L0[l] = level;
        s->W[l] -= f->u[k].w;
        s->ver[l]++;
        s->cnt[l]--;
        if (s->dmark[l] != s->batch) { /* its new level is pushed after the batch */
            s->dmark[l] = s->batch;
            s->dirty[s->ndirty++] = l;
        }
    }
    return 1;
}

/* The link saturates at `level`: freeze every flow on it not yet frozen
 * (all of them are being solved: a component is closed under shared links). */
static int saturate(flow_sys *s, uint32_t l, double level)
{
    for (uint32_t j = 0; j < s->non[l]; j++)
        if (!s->f[s->on[l][j].flow].frozen && !freeze_flow(s, s->on[l][j].flow, level)) return 0;
    return 1;
}

/* The level at which link l saturates, given what is known now. */
static double link_level(const flow_sys *s, uint32_t l)
{
    return s->L0[l] + s->rem[l] / s->W[l];
}

static bool live(const flow_sys *s, uint32_t l) { return s->cnt[l] && s->W[l] > 0.0; }

/* One round by scanning: the least saturation level over every live link
 * and cap, then freeze what it blocks. O(A + F) a round; returns 0 when no
 * constraint is left. */
static int scan_round(flow_sys *s, double *level)
{
    double d = INFINITY;
    for (uint32_t k = 0; k < s->nused; k++)
        if (live(s, s->used[k]) && link_level(s, s->used[k]) < d) d = link_level(s, s->used[k]);
    for (uint32_t q = 0; q < s->nsub; q++) {
        const fl *f = &s->f[s->sub[q]];
        if (!f->frozen && f->cap < d) d = f->cap;
    }
    if (isinf(d)) return 0;
    *level = d > *level ? d : *level;
    s->batch++;
    s->ndirty = 0;
    for (uint32_t k = 0; k < s->nused; k++) {
        uint32_t l = s->used[k];
        if (live(s, l) && link_level(s, l) <= *level && !saturate(s, l, *level)) return -1;
    }
    for (uint32_t q = 0; q < s->nsub; q++) {
        uint32_t i = s->sub[q];
        if (!s->f[i].frozen && s->f[i].cap <= *level &&
            !freeze_flow(s, i, *level))
            return -1;
    }
    s->rounds++;
    return 1;
}

/* The rest by heap, batch by batch: everything that saturates at one
 * level, then the new levels of the links it touched. */
static int heap_rounds(flow_sys *s, double level)
{
    s->nheap = 0;
    for (uint32_t k = 0; k < s->nused; k++)
        if (live(s, s->used[k]) && !push_link(s, s->used[k], level)) return 0;
    for (uint32_t q = 0; q < s->nsub; q++) {
        uint32_t i = s->sub[q];
        if (!s->f[i].frozen && !isinf(s->f[i].cap) && !hpush(s, s->f[i].cap, s->nlinks + i, 0))
            return 0;
    }
    while (s->left && s->nheap) {
        level = s->heap[0].t;
        uint32_t before = s->left;
        s->batch++;
        s->ndirty = 0;
        while (s->nheap && s->heap[0].t == level) {
            hent e = hpop(s);
            if (e.key >= s->nlinks) {
                uint32_t i = e.key - s->nlinks;
                if (!s->f[i].frozen && !freeze_flow(s, i, e.t)) return 0;
            } else if (e.ver == s->ver[e.key] && s->cnt[e.key]) {
                if (!saturate(s, e.key, e.t)) return 0;
            }
        }
        for (uint32_t k = 0; k < s->ndirty; k++)
            if (live(s, s->dirty[k]) && !push_link(s, s->dirty[k], level)) return 0;
        s->rounds += s->left != before;
    }
    return 1;
}

/* A training step's collectives are symmetric: a handful of levels, where
 * scanning beats a heap; past SCAN_ROUNDS the heap bounds the work. */
#define SCAN_ROUNDS 4

static int fill(flow_sys *s)
{
    double level = 0.0;
    int r = 1;
    for (int k = 0; k < SCAN_ROUNDS && s->left && r > 0; k++) r = scan_round(s, &level);
    if (r < 0) return 0;
    if (r > 0 && s->left && !heap_rounds(s, level)) return 0;
    for (uint32_t q = 0; q < s->nsub; q++) /* only unconstrained flows remain */
        if (!s->f[s->sub[q]].frozen) s->f[s->sub[q]].rate = INFINITY;
    return 1;
}

int flow_solve(flow_sys *s, ss_err *err)
{
    s->rounds = 0;
    if (!collect(s))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory solving %u flows", s->nactive);
    s->left = s->nsub;
    if (!fill(s))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory solving %u flows", s->nactive);
    return SS_OK;
}

double flow_rate(const flow_sys *s, uint32_t id) { return s->f[id].rate; }

uint32_t flow_last_solved(const flow_sys *s, const uint32_t **ids)
{
    *ids = s->sub;
    return s->nsub;
}
uint32_t flow_nactive(const flow_sys *s) { return s->nactive; }
uint32_t flow_last_rounds(const flow_sys *s) { return s->rounds; }
