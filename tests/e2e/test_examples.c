/* End to end on the shipped example scenarios: FlatParameter padding with a
 * 7-layer model of odd sizes wrapped per block, N = 1, overrides. The
 * expected numbers are computed here from the model file's shapes with the
 * formulas of seeds/002 (padding N * ceil(numel / N)), independently of the
 * plan code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"

/* models/mlp7-odd.json: (in, out), all with bias. */
static const uint64_t shapes[7][2] = {{1001, 999}, {999, 1003}, {1003, 997}, {997, 1009},
                                      {1009, 991}, {991, 1013}, {1013, 10}};

static uint64_t numel(int i) { return shapes[i][0] * shapes[i][1] + shapes[i][1]; }

static void load_run(const char *name, const char **sets, size_t nsets, spec_scenario *s,
                     run_result *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, name);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load(path, sets, nsets, s, &err)) fail_msg("%s: %s", err.where, err.msg);
    if (run_step(s, r, &err)) fail_msg("%s: %s", err.where, err.msg);
}

/* FULL_SHARD per block on 4 ranks: 7 units, 7 forward and 7 backward
 * all-gathers of the padded units, 7 reduce-scatters; every rank stores
 * sum ceil(numel/4) elements; rank 3 holds fewer real ones. */
static void test_mlp7_full_shard(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-per-block.json", NULL, 0, &s, &r);
    uint64_t phys = 0, padded = 0, log3 = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t c = (numel(i) + 3) / 4;
        phys += c;
        padded += 4 * c;
        log3 += numel(i) > 3 * c ? numel(i) - 3 * c : 0;
    }
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].count, 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].bytes, 2 * padded * 4);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].bytes, padded * 4);
    for (uint32_t k = 0; k < 4; k++) assert_int_equal(sr->ranks[k].st.param.physical, phys * 4);
    assert_int_equal(sr->ranks[3].st.param.logical, log3 * 4);
    assert_true(sr->ranks[3].st.param.logical < sr->ranks[3].st.param.physical);
    /* The peak holds at least one unsharded unit beyond the steady state. */
    assert_true(sr->ranks[0].mem.peak >= sr->ranks[0].mem.end + 4 * ((numel(0) + 3) / 4) * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* N = 1: FSDP1 runs as NO_SHARD: no all-gather, one all-reduce per unit,
 * every state whole: P + G + 2P (AdamW) with G freed by zero_grad. */
static void test_one_rank(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-one-rank.json", NULL, 0, &s, &r);
    uint64_t total = 0;
    for (int i = 0; i < 7; i++) total += numel(i);
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->nranks, 1);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].count, 0);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, 7);
    assert_int_equal(sr->ranks[0].st.total_physical, total * 16);
    assert_int_equal(sr->exposed_comm_ns, 0);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* --set turns the DDP example into SHARD_GRAD_OP on 2 ranks: the
 * collectives and the state bytes follow the override. */
static void test_overrides(void **state)
{
    (void)state;
    const char *sets[] = {"sharding.strategy=shard_grad_op", "parallel.dp=2"};
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-ddp-default-buckets.json", sets, 2, &s, &r);
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->nranks, 2);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, 0);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 0);
    uint64_t phys = 0;
    for (int i = 0; i < 7; i++) phys += (numel(i) + 1) / 2;
    assert_int_equal(sr->ranks[1].st.grad.physical, phys * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* Same scenario twice: the same JSON, byte for byte. */
static void test_json_deterministic(void **state)
{
    (void)state;
    char *txt[2];
    for (int i = 0; i < 2; i++) {
        spec_scenario s;
        run_result r;
        load_run("seed002/zero3_full_shard_pre.json", NULL, 0, &s, &r);
        txt[i] = sum_json(&r.sum);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_string_equal(txt[0], txt[1]);
    free(txt[0]);
    free(txt[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp7_full_shard), cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_overrides), cmocka_unit_test(test_json_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
