#include "replay.h"

#include <stdlib.h>

ss_bytes mem_round(ss_bytes b)
{
    if (b == 0) return 0;
    return ss_div_ceil(b, MEM_ROUND) * MEM_ROUND;
}

typedef struct mev {
    ss_ns t;
    uint64_t seq;
    uint32_t sub; /* 0 alloc, 1 free at issue; then index for stability */
    uint32_t idx;
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

static mev *collect(const trc *t, uint32_t rank, size_t *n)
{
    const prog *p = t->p;
    const prog_op *ops = prog_ops(p, rank);
    const prog_mem *mems = prog_mems(p, rank);
    size_t total = 0;
    for (uint32_t i = 0; i < prog_nops(p, rank); i++) total += ops[i].nmem;
    mev *ev = malloc((total ? total : 1) * sizeof *ev);
    if (!ev) return NULL;
    size_t k = 0;
    for (uint32_t i = 0; i < prog_nops(p, rank); i++) {
        const trc_op *r = &t->ops[rank][i];
        for (uint32_t m = 0; m < ops[i].nmem; m++) {
            const prog_mem *pm = &mems[ops[i].mem0 + m];
            mev e = {r->issue, r->seq_issue, 0, (uint32_t)k, i, pm->tensor, 1};
            if (pm->act == PROG_FREE_AT_ISSUE) e.sub = 1, e.alloc = 0;
            if (pm->act == PROG_FREE_AT_END) e.t = r->end, e.seq = r->seq_end, e.alloc = 0;
            ev[k++] = e;
        }
    }
    qsort(ev, k, sizeof *ev, mev_cmp);
    *n = k;
    return ev;
}

static void snapshot(mem_rank *m, const prog_tensor *ts, const uint8_t *live,
                     uint32_t nt)
{
    for (int c = 0; c < PROG_NMEMCATS; c++) m->peak_by_cat[c] = 0;
    for (uint32_t i = 0; i < nt; i++)
        if (live[i]) m->peak_by_cat[ts[i].cat] += mem_round(ts[i].bytes);
}

static int apply(const trc *t, uint32_t rank, const mev *e, uint8_t *live,
                 ss_bytes *cur, ss_err *err)
{
    const prog_tensor *ts = prog_tensors(t->p, rank);
    const char *nm = prog_str_get(t->p, ts[e->tensor].name);
    if (e->alloc == live[e->tensor])
        return ss_fail(err, SS_E_INTERNAL, NULL, "rank %u: tensor %s %s twice", rank,
                       nm, e->alloc ? "allocated" : "freed");
    live[e->tensor] = (uint8_t)e->alloc;
    ss_bytes b = mem_round(ts[e->tensor].bytes);
    *cur = e->alloc ? *cur + b : *cur - b;
    return SS_OK;
}

int mem_replay(const trc *t, uint32_t rank, mem_rank *out, ss_err *err)
{
    const prog_tensor *ts = prog_tensors(t->p, rank);
    uint32_t nt = prog_ntensors(t->p, rank);
    size_t n = 0;
    uint8_t *live = calloc(nt ? nt : 1, 1);
    mev *ev = live ? collect(t, rank, &n) : NULL;
    if (!ev) {
        free(live);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory replaying memory");
    }
    mem_rank m = {0};
    m.peak_op = UINT32_MAX;
    for (uint32_t i = 0; i < nt; i++)
        if (ts[i].live_at_start) live[i] = 1, m.start += mem_round(ts[i].bytes);
    ss_bytes cur = m.start;
    m.peak = cur;
    snapshot(&m, ts, live, nt);
    int rc = SS_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = apply(t, rank, &ev[i], live, &cur, err);
        if (!rc && ev[i].alloc && cur > m.peak) {
            m.peak = cur;
            m.peak_t = ev[i].t;
            m.peak_op = ev[i].op;
            snapshot(&m, ts, live, nt);
        }
    }
    m.end = cur;
    free(ev);
    free(live);
    if (!rc) *out = m;
    return rc;
}
