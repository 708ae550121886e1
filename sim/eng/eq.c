/* The future-event set: a binary min-heap of event values in one array.
 * (t, cls, seq) is a total order because seq is unique, so the heap's
 * output does not depend on how sift-up/sift-down break ties. */
#include "eq.h"

#include <stdlib.h>

enum { EQ_CAP0 = 64 };

static int ev_less(const eq_ev *x, const eq_ev *y)
{
    if (x->t != y->t) return x->t < y->t;
    if (x->cls != y->cls) return x->cls < y->cls;
    return x->seq < y->seq;
}

static int nomem(ss_err *err)
{
    return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the event queue");
}

int eq_init(eq *q, ss_err *err)
{
    *q = (eq){0};
    q->heap = malloc(EQ_CAP0 * sizeof *q->heap);
    if (!q->heap) return nomem(err);
    q->cap = EQ_CAP0;
    return SS_OK;
}

void eq_fini(eq *q)
{
    free(q->heap);
    *q = (eq){0};
}

/* Hole-moving sift: carry the event down the path instead of swapping. */
static void sift_up(eq_ev *h, size_t i)
{
    eq_ev e = h[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(&e, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static void sift_down(eq_ev *h, size_t n, size_t i)
{
    eq_ev e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ev_less(&h[c + 1], &h[c])) c++;
        if (!ev_less(&h[c], &e)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static int grow(eq *q, ss_err *err)
{
    size_t cap = q->cap ? q->cap * 2 : EQ_CAP0;
    if (cap > SIZE_MAX / sizeof *q->heap) return nomem(err);
    eq_ev *h = realloc(q->heap, cap * sizeof *h);
    if (!h) return nomem(err);
    q->heap = h;
    q->cap = cap;
    return SS_OK;
}

int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err)
{
    if (q->len == q->cap) {
        int rc = grow(q, err);
        if (rc) return rc;
    }
    q->heap[q->len] = (eq_ev){.t = t, .cls = cls, .seq = q->next_seq++, .kind = kind,
                              .a = a, .b = b};
    sift_up(q->heap, q->len++);
    return SS_OK;
}

int eq_pop(eq *q, eq_ev *out)
{
    if (q->len == 0) return 0;
    *out = q->heap[0];
    q->heap[0] = q->heap[--q->len];
    if (q->len) sift_down(q->heap, q->len, 0);
    return 1;
}

size_t eq_len(const eq *q) { return q->len; }

int eq_check(const eq *q)
{
    for (size_t i = 1; i < q->len; i++)
        if (ev_less(&q->heap[i], &q->heap[(i - 1) / 2])) return 0;
    return 1;
}
