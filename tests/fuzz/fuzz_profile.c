/* libFuzzer target: the calibration profile loader (io/profile.h). Bad
 * input must give SS_E_INPUT with a message. A profile that loads must
 * render (prof_json: a non-finite required value would be SS_E_INTERNAL,
 * i.e. the loader let it through) and answer queries at the edges of its
 * curves. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../sim/io/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void probe(const prof_curve *c)
{
    if (!c->nreg) return;
    uint64_t at[] = {0, c->reg[0].min_bytes, c->reg[c->nreg - 1].max_bytes, UINT64_MAX};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        if (!(prof_time_us(c->reg, c->nreg, at[i]) >= 0)) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    prof p;
    ss_err err;
    ss_err_clear(&err);
    int rc = prof_load_text("fuzz.json", (const char *)data, size, &p, &err);
    if (rc != SS_OK) {
        if (rc != SS_E_INPUT || !err.msg[0]) __builtin_trap();
        return 0;
    }
    char *json = NULL;
    if (prof_json(&p, &json, &err) != SS_OK) __builtin_trap();
    free(json);
    for (uint32_t i = 0; i < p.ncoll; i++) {
        probe(&p.coll[i].c);
        if (prof_coll_find(&p, p.coll[i].op, p.coll[i].ranks, p.coll[i].nodes) == NULL)
            __builtin_trap();
    }
    for (int k = 0; k < PROF_NCOPY; k++) probe(&p.copy[k]);
    for (int k = 0; k < SPEC_NDT; k++)
        if (p.gemm[k].present && !(prof_gemm_eff(&p.gemm[k], 4096) >= 0)) __builtin_trap();
    prof_fini(&p);
    return 0;
}
