/* validate --fit on reports made by hand: three candidate values, three
 * sources with step rows and one with memory only. Every expected value is
 * worked out in the comments from the rows' errors (percent).
 *
 *            A       A      B     B     C     all rows' median |err|
 *   v0    -20     -20      2     2    30     |20 20 2 2 30|  -> 20
 *   v1     -4      -4      6     6    12     |4 4 6 6 12|    -> 6   fitted
 *   v2      8       8     15    15     1     |8 8 15 15 1|   -> 8
 *
 * Leaving one source out, the value fitted on the others:
 *   A out: B, C  v0 |2 2 30| 2, v1 |6 6 12| 6, v2 |15 15 1| 15 -> v0;
 *          A held out at v0: -20 -20 (median |err| 20; in sample at v1: 4)
 *   B out: A, C  v0 20, v1 |4 4 12| 4, v2 |8 8 1| 8          -> v1; B held out 6
 *   C out: A, B  v0 (2 + 20) / 2 = 11, v1 (4 + 6) / 2 = 5,
 *          v2 (8 + 15) / 2 = 11.5                            -> v1; C held out 12
 * Held out, all: -20 -20 6 6 12: median |err| 12, median signed 6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/run/vfit.h"

static void fill(val_report *r, const double *err)
{
    static const char *const src[] = {"A", "A", "B", "B", "C", "D"};
    memset(r, 0, sizeof *r);
    r->nrows = 6;
    r->rows = calloc(r->nrows, sizeof *r->rows);
    assert_non_null(r->rows);
    for (size_t i = 0; i < r->nrows; i++) {
        val_row *w = &r->rows[i];
        snprintf(w->source, sizeof w->source, "%s", src[i]);
        if (i < 5) w->step = (val_fig){true, 1.0, 1.0 + err[i] / 100, err[i]};
        else w->alloc = (val_fig){true, 10.0, 11.0, 10.0}; /* D: memory only */
    }
    ss_err e = {0};
    assert_int_equal(val_stats(r, &e), SS_OK);
}

static void test_loso(void **state)
{
    (void)state;
    static const double errs[3][5] = {{-20, -20, 2, 2, 30}, {-4, -4, 6, 6, 12}, {8, 8, 15, 15, 1}};
    vfit f;
    memset(&f, 0, sizeof f);
    ss_err e = {0};
    assert_int_equal(vfit_values(&f, "k=0,1,2", &e), SS_OK);
    f.reps = calloc(3, sizeof *f.reps);
    for (int k = 0; k < 3; k++) fill(&f.reps[k], errs[k]);
    assert_int_equal(vfit_compute(&f, &e), SS_OK);
    assert_int_equal(f.best, 1);
    assert_float_equal(f.per_value[0].med_abs, 20, 1e-12);
    assert_float_equal(f.per_value[1].med_abs, 6, 1e-12);
    assert_float_equal(f.per_value[2].med_abs, 8, 1e-12);
    assert_int_equal(f.nsrc, 3); /* D has no step row */
    size_t without[] = {0, 1, 1}, n[] = {2, 2, 1};
    double held[] = {20, 6, 12}, in[] = {4, 6, 12};
    for (int g = 0; g < 3; g++) {
        assert_int_equal(f.src[g].without, without[g]);
        assert_int_equal(f.src[g].n, n[g]);
        assert_float_equal(f.src[g].held_out, held[g], 1e-12);
        assert_float_equal(f.src[g].in_sample, in[g], 1e-12);
    }
    assert_int_equal(f.held_out.n, 5);
    assert_float_equal(f.held_out.med_abs, 12, 1e-12);
    assert_float_equal(f.held_out.med_signed, 6, 1e-12);
    vfit_fini(&f);
}

static void test_values(void **state)
{
    (void)state;
    vfit f;
    memset(&f, 0, sizeof f);
    ss_err e = {0};
    /* a range is set as typed: 0.55, 0.56, ... 0.60, HI included */
    assert_int_equal(vfit_values(&f, "topology.device.gemm_efficiency=0.55:0.6:0.01", &e), SS_OK);
    assert_string_equal(f.key, "topology.device.gemm_efficiency");
    assert_int_equal(f.nvalues, 6);
    assert_string_equal(f.text[0], "0.55");
    assert_string_equal(f.text[5], "0.60");
    assert_float_equal(f.values[3], 0.58, 1e-12);
    vfit_fini(&f);
    assert_int_equal(vfit_values(&f, "overlap.slowdown=0,0.189,1e-1", &e), SS_OK);
    assert_int_equal(f.nvalues, 3);
    assert_string_equal(f.text[2], "1e-1");
    vfit_fini(&f);
    static const char *const bad[] = {"k", "=1", "k=", "k=a", "k=1,,2", "k=1:0:0.1", "k=0:1:0",
                                      "k=0:1", "k=0:1e6:1e-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(vfit_values(&f, bad[i], &e), SS_E_INPUT);
        vfit_fini(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_loso), cmocka_unit_test(test_values)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
