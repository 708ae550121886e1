#include "trace.h"

#include <stdlib.h>

#include "../core/huge.h"

int trc_new(trc **out, const prog *p, ss_err *err)
{
    uint32_t n = prog_nranks(p);
    size_t total = 0;
    for (uint32_t r = 0; r < n; r++) total += prog_nops(p, r);
    trc *t = calloc(1, sizeof *t);
    if (!t) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the trace");
    t->p = p;
    t->nranks = n;
    t->ops = calloc(n ? n : 1, sizeof *t->ops);
    t->rec = calloc(total ? total : 1, sizeof *t->rec);
    if (!t->ops || !t->rec) {
        trc_free(t);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the trace");
    }
    ss_prefer_huge(t->rec, total * sizeof *t->rec);
    size_t at = 0;
    for (uint32_t r = 0; r < n; at += prog_nops(p, r), r++) t->ops[r] = t->rec + at;
    *out = t;
    return SS_OK;
}

void trc_free(trc *t)
{
    if (!t) return;
    free(t->rec);
    free(t->ops);
    free(t);
}
