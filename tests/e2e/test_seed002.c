/* seeds/002: the measured 4 x V100-SXM2-32GB experiment, reproduced.
 *
 * Reference: shared/validation/seed002-v100x4.md (PyTorch 2.5, NCCL 2.22.3),
 * itself from seeds/002. Exact: per-rank P/G/O bytes (max over ranks) and
 * the collective counts per step. Within 1%: steady allocated memory. Peak
 * memory: the ranking the measurement shows. The scenario files state every
 * assumption the seed does not give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"

#define MIB (1024.0 * 1024.0)

typedef struct row {
    const char *file;
    double p, g, o;                /* MiB, max over ranks */
    unsigned ar, ag_fwd, ag_bwd, rs, bc;
    double steady, peak;           /* MiB, measured */
} row;

static const row rows[] = {
    {"zero0_ddp", 128, 128, 256, 2, 0, 0, 0, 0, 528.25, 784.50},
    {"zero1_zro", 128, 128, 64, 2, 0, 0, 0, 8, 336.25, 496.50},
    {"zero2_fsdp_sgo", 32, 32, 64, 0, 8, 0, 8, 0, 144.25, 273.50},
    {"zero3_full_shard_pre", 32, 32, 64, 0, 8, 8, 8, 0, 144.25, 200.75},
    {"zero3_full_shard_post", 32, 32, 64, 0, 8, 8, 8, 0, 144.25, 188.50},
    {"zero3_full_shard_none", 32, 32, 64, 0, 8, 8, 8, 0, 144.25, 188.50},
};
#define NROWS (sizeof rows / sizeof rows[0])

static double peaks[NROWS];
static double steps[NROWS]; /* predicted step, ms */

static void load_run(const row *w, spec_scenario *s, run_result *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/seed002/%s.json", SS_SOURCE_DIR, w->file);
    ss_err err;
    ss_err_clear(&err);
    int rc = scn_load(path, NULL, 0, s, &err);
    if (rc) fail_msg("%s: %s", err.where, err.msg);
    rc = run_step(s, NULL, r, &err);
    if (rc) fail_msg("%s: %s", err.where, err.msg);
}

static double max_state(const run_result *r, int which)
{
    double m = 0;
    for (uint32_t k = 0; k < r->sum.nranks; k++) {
        const st_bytes *b = &r->sum.ranks[k].st;
        double v = which == 0 ? b->param.physical : which == 1 ? b->grad.physical
                                                               : b->optim.physical;
        if (v > m) m = v;
    }
    return m / MIB;
}

static void check_row(size_t i)
{
    const row *w = &rows[i];
    spec_scenario s;
    run_result r;
    load_run(w, &s, &r);
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->nranks, 4);
    assert_true(max_state(&r, 0) == w->p);
    assert_true(max_state(&r, 1) == w->g);
    assert_true(max_state(&r, 2) == w->o);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, w->ar);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], w->ag_fwd);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], w->ag_bwd);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].count, w->rs);
    assert_int_equal(sr->coll[PROG_COLL_BROADCAST].count, w->bc);
    assert_int_equal(sr->coll[PROG_COLL_ALL_TO_ALL].count, 0);
    double peak = 0;
    for (uint32_t k = 0; k < sr->nranks; k++) {
        double steady = sr->ranks[k].mem.end / MIB;
        if (steady < w->steady * 0.99 || steady > w->steady * 1.01)
            fail_msg("%s rank %u: steady %.2f MiB, measured %.2f", w->file, k, steady,
                     w->steady);
        if (sr->ranks[k].mem.peak / MIB > peak) peak = sr->ranks[k].mem.peak / MIB;
    }
    peaks[i] = peak;
    steps[i] = sr->step_ns * 1e-6;
    assert_true(sr->step_ns > 0);
    print_message("  %-24s steady %7.2f  peak %7.2f (measured %7.2f)  step %.3f ms\n",
                  w->file, sr->ranks[0].mem.end / MIB, peak, w->peak, sr->step_ns * 1e-6);
    run_fini(&r);
    spec_scenario_fini(&s);
}

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < NROWS; i++) check_row(i);
}

/* Measured peaks rank DDP > ZRO > SHARD_GRAD_OP > FULL_SHARD PRE >= POST,
 * POST = None (784.50, 496.50, 273.50, 200.75, 188.50, 188.50 MiB). */
static void test_peak_ranking(void **state)
{
    (void)state;
    assert_true(peaks[0] > peaks[1]);
    assert_true(peaks[1] > peaks[2]);
    for (size_t i = 3; i < NROWS; i++) assert_true(peaks[2] > peaks[i]);
    assert_true(peaks[3] >= peaks[4]);
    assert_true(peaks[4] >= peaks[5] - 0.5 && peaks[4] <= peaks[5] + 0.5);
}

/* Measured median steps rank ZRO <= DDP < SHARD_GRAD_OP < FULL_SHARD PRE ~
 * POST <= None (7.354, 8.320, 18.738, 20.573, 20.583, 23.123 ms). The model
 * gives None's extra exposed communication but the host-bound step hides
 * it, so None is only required not to be faster than PRE. */
static void test_step_ranking(void **state)
{
    (void)state;
    assert_true(steps[1] <= steps[0]);
    assert_true(steps[0] < steps[2]);
    assert_true(steps[2] < steps[3]);
    assert_true(steps[4] > steps[3] * 0.95 && steps[4] < steps[3] * 1.05);
    assert_true(steps[5] >= steps[3]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_peak_ranking),
        cmocka_unit_test(test_step_ranking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
