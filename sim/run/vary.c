/* Stragglers and jitter. vary.h states the contract. */
#include "vary.h"

#include <math.h>
#include <stdlib.h>

void vary_stragglers(const spec_scenario *s, prog *p)
{
    for (uint32_t k = 0; k < s->nstragglers; k++) {
        uint32_t r = s->stragglers[k].rank;
        const prog_op *ops = prog_ops(p, r);
        for (uint32_t i = 0; i < prog_nops(p, r); i++)
            if (ops[i].kind == PROG_OP_COMPUTE)
                prog_set_dev_ns(p, r, i, (ss_ns)llround((double)ops[i].dev_ns *
                                                        s->stragglers[k].factor));
    }
}

ss_ns *vary_save(const prog *p)
{
    size_t n = 0;
    for (uint32_t r = 0; r < prog_nranks(p); r++) n += prog_nops(p, r);
    ss_ns *base = malloc((n ? n : 1) * sizeof *base), *b = base;
    for (uint32_t r = 0; base && r < prog_nranks(p); r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) *b++ = prog_ops(p, r)[i].dev_ns;
    return base;
}

void vary_restore(prog *p, const ss_ns *base)
{
    for (uint32_t r = 0; r < prog_nranks(p); r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) prog_set_dev_ns(p, r, i, *base++);
}

static uint64_t next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

/* A uniform in (0, 1): 53 random bits, never 0. */
static double uniform(uint64_t *x) { return ((double)(next(x) >> 11) + 0.5) / 9007199254740992.0; }

static double normal(uint64_t *x)
{
    double u = uniform(x), v = uniform(x);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void vary_jitter(const spec_scenario *s, prog *p, const ss_ns *base, uint32_t sample)
{
    uint64_t x = s->jitter_seed * 0x9E3779B97F4A7C15ull + sample + 1;
    if (!x) x = 1;
    double cv = s->jitter_cv;
    for (uint32_t r = 0; r < prog_nranks(p); r++) {
        const prog_op *ops = prog_ops(p, r);
        for (uint32_t i = 0; i < prog_nops(p, r); i++, base++) {
            if (ops[i].kind != PROG_OP_COMPUTE) continue;
            double f = exp(cv * normal(&x) - 0.5 * cv * cv);
            prog_set_dev_ns(p, r, i, (ss_ns)llround((double)*base * f));
        }
    }
}
