/* The fitter: synthetic data with known answers (exact alpha-beta, two
 * regimes with a known border, a GEMM efficiency curve), its errors, and
 * the acceptance check of issue 9 on the real nccl-tests logs in
 * tests/data/nccl-tests/: fit the even-indexed sizes, predict the odd ones,
 * median |relative error| <= 5% at sizes >= 1 MiB, per table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>

#include "../../calib/fit/fit.h"

#define DATA SS_SOURCE_DIR "/tests/data/nccl-tests/"

static void near(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fabs(want)))
        fprintf(stderr, "got %.17g want %.17g (rel %.3g)\n", got, want, fabs(got - want) / fabs(want));
    assert_true(fabs(got - want) <= rel * fabs(want));
}

static fit_model fit_ok(const uint64_t *x, const double *t, size_t n)
{
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_model m;
    ss_err err;
    ss_err_clear(&err);
    int rc = fit_alpha_beta(x, t, n, &o, &m, &err);
    if (rc) fprintf(stderr, "fit: %s\n", err.msg);
    assert_int_equal(rc, SS_OK);
    return m;
}

/* 8 B .. 8 GiB in powers of two: the sizes nccl-tests -b 8 -e 8G -f 2 runs. */
static size_t pow2_sizes(uint64_t *x)
{
    size_t n = 0;
    for (uint64_t b = 8; b <= 8589934592ull; b *= 2) x[n++] = b;
    return n;
}

/* t = 20 us + bytes / 100 GB/s exactly: one regime, alpha 20, beta 100
 * GB/s (1e-5 us per byte), R^2 1, and every prediction exact. */
static void test_exact_alpha_beta(void **state)
{
    (void)state;
    uint64_t x[40];
    double t[40];
    size_t n = pow2_sizes(x);
    for (size_t i = 0; i < n; i++) t[i] = 20 + (double)x[i] / 1e5;
    fit_model m = fit_ok(x, t, n);
    assert_int_equal(m.nreg, 1);
    near(m.reg[0].alpha_us, 20, 1e-9);
    near(m.reg[0].beta_GBps, 100, 1e-9);
    near(m.st[0].beta_us_per_byte, 1e-5, 1e-9);
    assert_true(m.reg[0].r2 > 1 - 1e-12);
    assert_true(m.reg[0].alpha_se_us < 1e-9 && m.reg[0].beta_se_GBps < 1e-7);
    assert_int_equal(m.reg[0].min_bytes, 8);
    assert_int_equal(m.reg[0].max_bytes, 8589934592ull);
    assert_int_equal(m.reg[0].points, 31);
    near(fit_predict(&m, 12345), 20.12345, 1e-9);
    near(fit_predict(&m, 1ull << 40), 20 + 1099511627776.0 / 1e5, 1e-9); /* extrapolated */
    fit_opts o = FIT_OPTS_DEFAULT;
    double cv = 1;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(fit_loso(x, t, n, &o, &cv, &err), SS_OK);
    assert_true(cv < 1e-9);
}

/* t = min(10 + bytes / 20 GB/s, 50 + bytes / 200 GB/s), the faster of two
 * protocols. The lines cross at 40 / (1/2e4 - 1/2e5) = 888888.9 bytes, so
 * the first regime ends at 888888 and the second starts at 888889. */
static void test_two_regimes(void **state)
{
    (void)state;
    uint64_t x[40];
    double t[40];
    size_t n = pow2_sizes(x);
    for (size_t i = 0; i < n; i++) t[i] = fmin(10 + (double)x[i] / 2e4, 50 + (double)x[i] / 2e5);
    fit_model m = fit_ok(x, t, n);
    assert_int_equal(m.nreg, 2);
    assert_int_equal(m.reg[0].max_bytes, 888888);
    assert_int_equal(m.reg[1].min_bytes, 888889);
    near(m.reg[0].alpha_us, 10, 1e-9);
    near(m.reg[0].beta_GBps, 20, 1e-9);
    near(m.reg[1].alpha_us, 50, 1e-9);
    near(m.reg[1].beta_GBps, 200, 1e-9);
    assert_int_equal(m.reg[0].points, 17); /* 8 B .. 512 KiB */
    assert_int_equal(m.reg[1].points, 14); /* 1 MiB .. 8 GiB */
    /* The same points in reverse order give the same fit, bit for bit. */
    uint64_t xr[40];
    double tr[40];
    for (size_t i = 0; i < n; i++) {
        xr[i] = x[n - 1 - i];
        tr[i] = t[n - 1 - i];
    }
    fit_model r = fit_ok(xr, tr, n);
    assert_memory_equal(&r, &m, sizeof m);
}

/* A jump rather than a crossing: 10 + b / 20 GB/s up to 64 KiB, then 100 +
 * b / 200 GB/s. The lines cross at 2e6 bytes, outside the gap (65536,
 * 131072), so the border is the geometric midpoint sqrt(65536 * 131072) =
 * 92681.9: the first regime ends at 92681. */
static void test_border_in_gap(void **state)
{
    (void)state;
    uint64_t x[40];
    double t[40];
    size_t n = pow2_sizes(x);
    for (size_t i = 0; i < n; i++)
        t[i] = x[i] <= 65536 ? 10 + (double)x[i] / 2e4 : 100 + (double)x[i] / 2e5;
    fit_model m = fit_ok(x, t, n);
    assert_int_equal(m.nreg, 2);
    assert_int_equal(m.reg[0].max_bytes, 92681);
    near(fit_predict(&m, 92681), 10 + 92681 / 2e4, 1e-9);
    near(fit_predict(&m, 92682), 100 + 92682 / 2e5, 1e-9);
}

static void expect_fit_error(const uint64_t *x, const double *t, size_t n, const char *frag)
{
    fit_opts o = FIT_OPTS_DEFAULT;
    fit_model m;
    memset(&m, 0x5a, sizeof m);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(fit_alpha_beta(x, t, n, &o, &m, &err), SS_E_INPUT);
    if (!strstr(err.msg, frag)) fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, frag));
    assert_true(((unsigned char *)&m)[0] == 0x5a); /* untouched */
}

static void test_fit_errors(void **state)
{
    (void)state;
    uint64_t x[4] = {8, 16, 32, 64};
    double t[4] = {10, 11, 12, 13};
    expect_fit_error(x, t, 2, "need at least 3 sizes");
    double zero[4] = {10, 0, 12, 13};
    expect_fit_error(x, zero, 4, "time 0 us (measurement 2) is not positive");
    double falling[4] = {13, 12, 11, 10};
    expect_fit_error(x, falling, 4, "times that grow with size");
    uint64_t same[4] = {64, 64, 64, 64};
    expect_fit_error(same, t, 4, "times that grow with size");
    /* Too few sizes to leave one out: the cross-validation is NAN, not an error. */
    fit_opts o = FIT_OPTS_DEFAULT;
    double cv = 0;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(fit_loso(x, t, 3, &o, &cv, &err), SS_OK);
    assert_true(isnan(cv));
    double v[4] = {3, 1, 2, 10};
    assert_true(fit_median(v, 4) == 2.5 && fit_median(v, 3) == 2 && isnan(fit_median(v, 0)));
}

/* eff(d) = 0.82 d^1.7 / (d^1.7 + 1800^1.7) at d = 128 * 2^(k/2), k = 0..12.
 * Exact values give the parameters back to 1e-6; 2% multiplicative noise
 * (a fixed linear congruential sequence) keeps each within 4 standard
 * errors, and the errors are not zero. */
static void gemm_data(double *d, double *eff, size_t n, double noise)
{
    uint64_t s = 12345;
    for (size_t k = 0; k < n; k++) {
        d[k] = 128 * pow(2, (double)k / 2);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0 * 2 - 1;
        eff[k] = 0.82 / (1 + pow(1800 / d[k], 1.7)) * (1 + noise * u);
    }
}

static void test_gemm_curve(void **state)
{
    (void)state;
    double d[13], eff[13];
    gemm_data(d, eff, 13, 0);
    fit_gemm g;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(fit_gemm_curve(d, eff, 13, &g, &err), SS_OK);
    near(g.e_max, 0.82, 1e-6);
    near(g.d_half, 1800, 1e-6);
    near(g.p, 1.7, 1e-6);
    assert_int_equal(g.npoints, 13);
    gemm_data(d, eff, 13, 0.02);
    assert_int_equal(fit_gemm_curve(d, eff, 13, &g, &err), SS_OK);
    printf("gemm with 2%% noise: e_max %.4f +- %.4f, d_half %.1f +- %.1f, p %.3f +- %.3f, "
           "rms rel err %.4f\n", g.e_max, g.e_max_se, g.d_half, g.d_half_se, g.p, g.p_se, g.rms_rel);
    assert_true(g.e_max_se > 0 && g.d_half_se > 0 && g.p_se > 0);
    assert_true(fabs(g.e_max - 0.82) < 4 * g.e_max_se);
    assert_true(fabs(g.d_half - 1800) < 4 * g.d_half_se);
    assert_true(fabs(g.p - 1.7) < 4 * g.p_se);
    assert_true(g.rms_rel > 0.005 && g.rms_rel < 0.02);
    double few[3] = {1, 2, 3};
    assert_int_equal(fit_gemm_curve(few, few, 3, &g, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "need at least 4 GEMM measurements"));
}

/* ---- the real logs ---- */

typedef struct table_pts {
    uint64_t x[64];
    double t[64];
    size_t n;
} table_pts;

/* Out-of-place times of rows with bytes > 0 (cal.h says why 0 is dropped). */
static table_pts table_points(const ncclt_log *log, size_t i)
{
    table_pts p = {.n = 0};
    for (size_t j = 0; j < ncclt_table(log, i)->nrows; j++) {
        const ncclt_row *r = ncclt_row_at(log, i, j);
        if (r->bytes == 0) continue;
        assert_true(p.n < 64);
        p.x[p.n] = r->bytes;
        p.t[p.n++] = r->out.time_us;
    }
    return p;
}

/* Fit rows 0, 2, 4, ... (8 B, 32 B, ... where the table starts at 8 B),
 * predict rows 1, 3, 5, ...; the median |relative error| over odd sizes
 * >= 1 MiB must be <= 5%. The leave-one-size-out median over the whole
 * table must be <= 5% too. */
static void check_alternate(const char *file, size_t ntables)
{
    ss_err err;
    ss_err_clear(&err);
    ncclt_log *log = NULL;
    assert_int_equal(ncclt_load(file, NULL, &log, &err), SS_OK);
    assert_int_equal(ncclt_ntables(log), ntables);
    for (size_t i = 0; i < ntables; i++) {
        table_pts all = table_points(log, i), even = {.n = 0};
        for (size_t j = 0; j < all.n; j += 2) {
            even.x[even.n] = all.x[j];
            even.t[even.n++] = all.t[j];
        }
        fit_model m = fit_ok(even.x, even.t, even.n);
        double rel[32], worst = 0;
        size_t k = 0;
        for (size_t j = 1; j < all.n; j += 2) {
            if (all.x[j] < 1048576) continue;
            rel[k] = fabs(fit_predict(&m, all.x[j]) - all.t[j]) / all.t[j];
            worst = fmax(worst, rel[k++]);
        }
        double med = fit_median(rel, k), cv = NAN;
        fit_opts o = FIT_OPTS_DEFAULT;
        assert_int_equal(fit_loso(all.x, all.t, all.n, &o, &cv, &err), SS_OK);
        printf("%-60s %u regimes on even rows; odd rows >= 1 MiB: median %.2f%% max %.2f%% "
               "(%zu sizes); leave-one-size-out median %.2f%%\n",
               ncclt_table(log, i)->label, m.nreg, 100 * med, 100 * worst, k, 100 * cv);
        assert_true(k >= 6);
        assert_true(med <= 0.05);
        assert_true(cv <= 0.05);
    }
    ncclt_free(log);
}

/* 8 x H100, one node: all_reduce ring, all_reduce nvls, all_gather,
 * reduce_scatter. */
static void test_real_single_node(void **state)
{
    (void)state;
    check_alternate(DATA "h100-8gpu-single-node-together.txt", 4);
}

/* 2 x 8 H100: all_reduce on 16 ranks. */
static void test_real_two_nodes(void **state)
{
    (void)state;
    check_alternate(DATA "h100-2node-16gpu-gcp-a3mega-ztan.txt", 1);
}

/* The committed profile predicts what the in-memory fit predicts, to the
 * 6 digits profiles keep, at every measured size. */
static void test_profile_matches_fit(void **state)
{
    (void)state;
    ss_err err;
    ss_err_clear(&err);
    ncclt_log *log = NULL;
    assert_int_equal(ncclt_load(DATA "h100-2node-16gpu-gcp-a3mega-ztan.txt", NULL, &log, &err), SS_OK);
    table_pts all = table_points(log, 0);
    fit_model m = fit_ok(all.x, all.t, all.n);
    prof p;
    assert_int_equal(prof_load(SS_SOURCE_DIR "/calib/profiles/h100-2node-a3mega.json", &p, &err), SS_OK);
    const prof_coll *c = prof_coll_find(&p, NCCLT_ALL_REDUCE, 16, 2);
    assert_non_null(c);
    assert_int_equal(c->c.nreg, m.nreg);
    for (size_t j = 0; j < all.n; j++)
        near(prof_time_us(c->c.reg, c->c.nreg, all.x[j]), fit_predict(&m, all.x[j]), 2e-5);
    prof_fini(&p);
    ncclt_free(log);
}

int main(void)
{
    gsl_set_error_handler_off();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_alpha_beta), cmocka_unit_test(test_two_regimes),
        cmocka_unit_test(test_border_in_gap),    cmocka_unit_test(test_fit_errors),
        cmocka_unit_test(test_gemm_curve),       cmocka_unit_test(test_real_single_node),
        cmocka_unit_test(test_real_two_nodes),   cmocka_unit_test(test_profile_matches_fit)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
