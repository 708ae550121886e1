#include "trace.h"

#include <stdlib.h>

int trc_new(trc **out, const prog *p, ss_err *err)
{
    uint32_t n = prog_nranks(p);
    trc *t = calloc(1, sizeof *t);
    if (!t) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the trace");
    t->p = p;
    t->nranks = n;
    t->ops = calloc(n ? n : 1, sizeof *t->ops);
    if (!t->ops) goto nomem;
    for (uint32_t r = 0; r < n; r++) {
        uint32_t k = prog_nops(p, r);
        t->ops[r] = calloc(k ? k : 1, sizeof **t->ops);
        if (!t->ops[r]) goto nomem;
    }
    *out = t;
    return SS_OK;
nomem:
    trc_free(t);
    return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the trace");
}

void trc_free(trc *t)
{
    if (!t) return;
    if (t->ops)
        for (uint32_t r = 0; r < t->nranks; r++) free(t->ops[r]);
    free(t->ops);
    free(t);
}
