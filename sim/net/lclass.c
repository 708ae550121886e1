/* Link classes. lclass.h states the contract. */
#include "lclass.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct sig {
    uint32_t link, shape, phase;
    double w;
} sig;

static int by_sig(const void *pa, const void *pb)
{
    const sig *a = pa, *b = pb;
    if (a->link != b->link) return a->link < b->link ? -1 : 1;
    if (a->shape != b->shape) return a->shape < b->shape ? -1 : 1;
    if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
    return a->w < b->w ? -1 : a->w > b->w;
}

/* A link's run of signatures [a, a + n) and its key. */
typedef struct lsig {
    uint32_t link, a, n;
    uint64_t hash;
    double cap;
    int kind;
} lsig;

static int by_key(const void *pa, const void *pb)
{
    const lsig *a = pa, *b = pb;
    if (a->cap != b->cap) return a->cap < b->cap ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    return a->link < b->link ? -1 : a->link > b->link;
}

static bool same_run(const sig *v, const lsig *x, const lsig *y)
{
    for (uint32_t i = 0; i < x->n; i++) {
        const sig *a = &v[x->a + i], *b = &v[y->a + i];
        if (a->shape != b->shape || a->phase != b->phase || a->w != b->w) return false;
    }
    return true;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Each link's run of entries, then links with equal keys compared run
 * against run: within a run of equal keys each link joins the first
 * earlier head it matches (hash collisions make a run hold several). */
static void join(const sig *v, lsig *ls, uint32_t nl, uint32_t *rep)
{
    for (uint32_t a = 0; a < nl;) {
        uint32_t b = a + 1;
        while (b < nl && ls[b].cap == ls[a].cap && ls[b].kind == ls[a].kind &&
               ls[b].hash == ls[a].hash && ls[b].n == ls[a].n)
            b++;
        for (uint32_t i = a + 1; i < b; i++)
            for (uint32_t j = a; j < i; j++)
                if (rep[ls[j].link] == ls[j].link && same_run(v, &ls[i], &ls[j])) {
                    rep[ls[i].link] = ls[j].link;
                    break;
                }
        a = b;
    }
}

int lclass_make(const topo *g, const algo_shape *const *sh, uint32_t n, uint32_t **rep_out,
                uint32_t *loaded, uint32_t *classes, ss_err *err)
{
    size_t nsig = 0;
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t k = 0; k < sh[s]->nphase; k++) nsig += sh[s]->nuse[k];
    uint32_t L = topo_nlinks(g);
    if (nsig > UINT32_MAX)
        return ss_fail(err, SS_E_OVERFLOW, NULL, "%zu link usage entries: more than the link "
                       "classes can count (%u)", nsig, UINT32_MAX);
    sig *v = malloc((nsig ? nsig : 1) * sizeof *v);
    lsig *ls = malloc((L ? L : 1) * sizeof *ls);
    uint32_t *rep = malloc((L ? L : 1) * sizeof *rep);
    if (!v || !ls || !rep) {
        free(v), free(ls), free(rep);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the link classes");
    }
    /* Sorted by link with a counting pass (rep as the counts): visited in
     * (shape, phase) order, each link's run comes out in by_sig's order,
     * a phase naming a link once; the insertion pass only makes sure. */
    memset(rep, 0, (size_t)L * sizeof *rep);
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t k = 0; k < sh[s]->nphase; k++)
            for (uint32_t i = 0; i < sh[s]->nuse[k]; i++) rep[sh[s]->use[k][i].link]++;
    uint32_t at = 0;
    for (uint32_t l = 0; l < L; l++) {
        uint32_t c = rep[l];
        rep[l] = at;
        at += c;
    }
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t k = 0; k < sh[s]->nphase; k++)
            for (uint32_t i = 0; i < sh[s]->nuse[k]; i++) {
                const flow_use *u = &sh[s]->use[k][i];
                v[rep[u->link]++] = (sig){u->link, s, k, u->w};
            }
    for (size_t i = 1; i < nsig; i++)
        for (size_t j = i; j > 0 && by_sig(&v[j - 1], &v[j]) > 0; j--) {
            sig t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    uint32_t nl = 0;
    for (size_t a = 0; a < nsig;) {
        size_t b = a;
        uint64_t h = 1469598103934665603ull;
        for (; b < nsig && v[b].link == v[a].link; b++) {
            h = fnv(h, &v[b].shape, sizeof v[b].shape);
            h = fnv(h, &v[b].phase, sizeof v[b].phase);
            h = fnv(h, &v[b].w, sizeof v[b].w);
        }
        uint32_t l = v[a].link;
        ls[nl++] = (lsig){l, (uint32_t)a, (uint32_t)(b - a), h, topo_link_Bps(g, l),
                          (int)topo_link_kind(g, l)};
        a = b;
    }
    qsort(ls, nl, sizeof *ls, by_key);
    for (uint32_t l = 0; l < L; l++) rep[l] = l;
    join(v, ls, nl, rep);
    *loaded = nl;
    *classes = 0;
    for (uint32_t i = 0; i < nl; i++) *classes += rep[ls[i].link] == ls[i].link;
    free(v);
    free(ls);
    *rep_out = rep;
    return SS_OK;
}
