/* libFuzzer target: the whole run path (load, plan, schedule, engine,
 * memory replay, summary, expectations, trace) on small scenarios. Inputs
 * whose step would be large are skipped so the fuzzer stays fast; every
 * other input must either run or fail with an input error. An internal
 * error (a broken invariant) is a finding. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "../../sim/io/scenario.h"
#include "../../sim/out/chrome.h"
#include "../../sim/out/expect.h"
#include "../../sim/run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int small(const spec_scenario *s)
{
    uint64_t elems = 0;
    for (uint32_t i = 0; i < s->model.nblocks; i++) elems += s->model.blocks[i].in;
    const spec_arch *a = &s->model.arch;
    if (s->model.is_arch && (a->layers > 8 || a->experts > 16 || s->seq_len > 4096)) return 0;
    return s->dp <= 8 && s->model.nblocks <= 32 && s->micro_batch <= 4096 && elems < (1u << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spec_scenario s;
    ss_err err;
    ss_err_clear(&err);
    if (scn_load_text("scenarios/fuzz/fuzz.json", (const char *)data, size, NULL, 0, &s, &err))
        return 0;
    run_result r;
    run_opts o = {1};
    int rc = small(&s) ? run_step(&s, &o, &r, &err) : SS_E_INPUT;
    if (rc == SS_OK) {
        cJSON *tree = sum_tree(&r.sum);
        char *json = tree ? cJSON_Print(tree) : NULL, *tr = chrome_json(&r.sum, r.t);
        exp_result *res = calloc(s.nexpects ? s.nexpects : 1, sizeof *res);
        uint32_t nf;
        if (tree && res) exp_check(&s, tree, res, &nf, NULL);
        free(res);
        free(json);
        cJSON_Delete(tree);
        free(tr);
        run_fini(&r);
    } else if (rc != SS_E_INPUT && rc != SS_E_OVERFLOW && rc != SS_E_IO) {
        __builtin_trap();
    }
    spec_scenario_fini(&s);
    return 0;
}
