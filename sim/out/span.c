#include "span.h"

#include <stdlib.h>

static int span_cmp(const void *x, const void *y)
{
    const span *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

size_t span_merge(span *s, size_t n)
{
    if (n == 0) return 0;
    size_t i = 1;
    while (i < n && span_cmp(&s[i - 1], &s[i]) <= 0) i++;
    if (i < n) qsort(s, n, sizeof *s, span_cmp); /* one stream's spans come sorted */
    size_t k = 0;
    for (i = 1; i < n; i++) {
        if (s[i].a <= s[k].b) {
            if (s[i].b > s[k].b) s[k].b = s[i].b;
        } else {
            s[++k] = s[i];
        }
    }
    return k + 1;
}

ss_ns span_total(const span *s, size_t n)
{
    ss_ns t = 0;
    for (size_t i = 0; i < n; i++) t += s[i].b - s[i].a;
    return t;
}

ss_ns span_overlap(const span *x, size_t nx, const span *y, size_t ny)
{
    ss_ns t = 0;
    size_t i = 0, j = 0;
    while (i < nx && j < ny) {
        ss_ns a = x[i].a > y[j].a ? x[i].a : y[j].a;
        ss_ns b = x[i].b < y[j].b ? x[i].b : y[j].b;
        if (a < b) t += b - a;
        if (x[i].b < y[j].b) i++;
        else j++;
    }
    return t;
}

size_t span_minus(const span *m, size_t nm, const span *c, size_t nc, span *out)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < nm; i++) {
        ss_ns a = m[i].a;
        while (j < nc && c[j].b <= a) j++;
        for (size_t q = j; q < nc && c[q].a < m[i].b; q++) {
            if (c[q].a > a) out[k++] = (span){a, c[q].a};
            if (c[q].b > a) a = c[q].b;
        }
        if (a < m[i].b) out[k++] = (span){a, m[i].b};
    }
    return k;
}

/* Rank's ops of kind k as merged spans, on stream `only` alone when it is
 * a stream (PROG_NSTREAMS: any). */
static size_t rank_spans(const trc *t, uint32_t rank, span_kind k, prog_stream only, span *out)
{
    const prog_op *ops = prog_ops(t->p, rank);
    size_t n = 0;
    for (uint32_t i = 0; i < prog_nops(t->p, rank); i++) {
        bool want = k == SPAN_COMM ? ops[i].kind == PROG_OP_COLL
                    : k == SPAN_HOST ? ops[i].kind == PROG_OP_HOST
                                     : ops[i].stream == PROG_COMPUTE;
        const trc_op *x = &t->ops[rank][i];
        if (want && (only == PROG_NSTREAMS || ops[i].stream == only) && x->end > x->start)
            out[n++] = (span){x->start, x->end};
    }
    return span_merge(out, n);
}

size_t span_rank(const trc *t, uint32_t rank, span_kind k, span *out)
{
    return rank_spans(t, rank, k, PROG_NSTREAMS, out);
}

size_t span_rank_stream(const trc *t, uint32_t rank, prog_stream s, span *out)
{
    return rank_spans(t, rank, SPAN_COMM, s, out);
}
