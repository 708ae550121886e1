/* Transformer models: parameter counts against the published totals
 * (within 0.5%), the MFU FLOP convention, and activation memory under the
 * three recomputation modes. Published totals: Meta's HF configs (Llama 3
 * 8B 8,030,261,248; 70B 70,553,706,496; 3.1 405B 405,853,388,800), Brown et
 * al. 2020 (GPT-3 175B), Mistral AI (Mixtral 8x7B 46.7B), DeepSeek-V3
 * technical report (671B without the MTP module); the 5T MoE is this
 * project's design point of 5.0T. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"

static int load(const char *model, const char *extra, spec_scenario *s)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": \"%s/models/%s.json\","
             " \"topology\": \"%s/topologies/h100x8-hgx.json\", \"parallel\": {\"dp\": 8},"
             " \"training\": {\"micro_batch\": 1, \"seq_len\": 4096%s},"
             " \"precision\": {\"param\": \"bf16\", \"master\": \"fp32\"},"
             " \"optimizer\": {\"type\": \"adamw\"}, \"sharding\": {\"strategy\": \"full_shard\"}}",
             SS_SOURCE_DIR, model, SS_SOURCE_DIR, extra);
    ss_err err;
    ss_err_clear(&err);
    int rc = scn_load_text("t.json", text, strlen(text), NULL, 0, s, &err);
    if (rc) fail_msg("%s: %s: %s", model, err.where, err.msg);
    return rc;
}

static void test_parameter_counts(void **state)
{
    (void)state;
    struct { const char *m; double published; } rows[] = {
        {"llama3-8b", 8030261248.0},     {"llama3-70b", 70553706496.0},
        {"llama3-405b", 405853388800.0}, {"gpt3-175b", 175e9},
        {"mixtral-8x7b", 46.7e9},        {"deepseek-v3", 671e9},
        {"moe-5t", 5.0e12},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        spec_scenario s;
        load(rows[i].m, "", &s);
        plan *p;
        assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
        double n = (double)p->total_numel, err = (n - rows[i].published) / rows[i].published;
        print_message("  %-14s %18.0f params (%+.3f%% from published)\n", rows[i].m, n, 100 * err);
        if (err > 0.005 || err < -0.005) fail_msg("%s: %.0f vs %.0f", rows[i].m, n, rows[i].published);
        plan_free(p);
        spec_scenario_fini(&s);
    }
}

/* Llama 3 8B at 4096 tokens: 6 x (8,030,261,248 - 128256 x 4096 embedding)
 * + 12 x 32 layers x 32 heads x 128 x 4096 = 4.5028e10 + 1.6106e9. */
static void test_flops_per_token(void **state)
{
    (void)state;
    spec_scenario s;
    load("llama3-8b", "", &s);
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    double want = 6.0 * (8030261248.0 - 128256.0 * 4096) + 12.0 * 32 * 32 * 128 * 4096;
    assert_true(p->flops_per_token > want * 0.9999 && p->flops_per_token < want * 1.0001);
    assert_int_equal(p->tokens, 4096);
    /* 32 layers, each its own unit, plus embedding and output */
    assert_int_equal(p->nunits, 1 + 34);
    plan_free(p);
    spec_scenario_fini(&s);
}

/* Mixtral: a token uses 2 of its 8 experts, so the convention counts the
 * parameters less the embedding and 6 of 8 experts in each of 32 layers. */
static void test_moe_active(void **state)
{
    (void)state;
    spec_scenario s;
    load("mixtral-8x7b", "", &s);
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    double expert = 3.0 * 4096 * 14336;
    double active = (double)p->total_numel - 32000.0 * 4096 - 32 * 6 * expert;
    double want = 6.0 * active + 12.0 * 32 * 32 * 128 * 4096;
    assert_true(p->flops_per_token > want * 0.9999 && p->flops_per_token < want * 1.0001);
    plan_free(p);
    spec_scenario_fini(&s);
}

/* Peak memory falls with recomputation: none >= selective > full, and full
 * recomputation costs a forward's worth of time in backward. */
static void test_recompute(void **state)
{
    (void)state;
    const char *modes[] = {", \"recompute\": \"none\"", ", \"recompute\": \"selective\"",
                           ", \"recompute\": \"full\""};
    ss_bytes peak[3];
    ss_ns step[3];
    for (int i = 0; i < 3; i++) {
        spec_scenario s;
        run_result r;
        load("llama3-8b", modes[i], &s);
        ss_err err;
        ss_err_clear(&err);
        if (run_step(&s, NULL, &r, &err)) fail_msg("%s", err.msg);
        peak[i] = r.sum.ranks[0].mem.peak;
        step[i] = r.sum.step_ns;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_true(peak[0] >= peak[1]);
    assert_true(peak[1] > peak[2]);
    assert_true(step[2] > step[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts), cmocka_unit_test(test_flops_per_token),
        cmocka_unit_test(test_moe_active), cmocka_unit_test(test_recompute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
