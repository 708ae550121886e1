#include "eq.h"

#include <stdlib.h>

static int ev_less(const eq_ev *x, const eq_ev *y)
{
    if (x->t != y->t) return x->t < y->t;
    if (x->cls != y->cls) return x->cls < y->cls;
    return x->seq < y->seq;
}

int eq_init(eq *q, ss_err *err)
{
    q->cap = 64;
    q->len = 0;
    q->next_seq = 0;
    q->heap = malloc(q->cap * sizeof *q->heap);
    if (!q->heap) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the event queue");
    return SS_OK;
}

void eq_fini(eq *q)
{
    free(q->heap);
    q->heap = NULL;
    q->len = q->cap = 0;
}

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

int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err)
{
    if (q->len == q->cap) {
        size_t cap = q->cap * 2;
        eq_ev *h = realloc(q->heap, cap * sizeof *h);
        if (!h) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the event queue");
        q->heap = h;
        q->cap = cap;
    }
    q->heap[q->len] = (eq_ev){t, q->next_seq++, cls, kind, a, b};
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
