/* fit.h - least-squares fits of measured costs, for calibration profiles.
 *
 * Two models, both fitted with GSL:
 *   alpha-beta  time_us = alpha + beta * bytes, piecewise over size regimes
 *               (NCCL switches protocol and algorithm with size, so one line
 *               does not fit 8 B..8 GB). The regimes are found by dynamic
 *               programming over contiguous runs of sizes: at most K + 1
 *               runs of at least min_points points each, every run with a
 *               positive slope, minimising the sum of squared RELATIVE
 *               errors; the number of runs is chosen by BIC. Each run is
 *               then fitted by gsl_multifit_wlinear with weights 1/t^2.
 *   gemm curve  eff(d) = e_max d^p / (d^p + d_half^p), by
 *               gsl_multifit_nlinear (trust region, Levenberg-Marquardt),
 *               minimising squared relative errors as well.
 * Standard errors come from the GSL covariance scaled by the residual
 * variance (the weights fix only the shape of the noise, not its size).
 *
 * Determinism: inputs are sorted by (bytes, input index); every choice
 * between equal costs takes the fewer regimes and the earliest break. Same
 * input, same fit, bit for bit on one platform.
 *
 * Errors: data that cannot be fitted (too few sizes, times <= 0, no split
 * with rising times, a curve that does not converge) are SS_E_INPUT with a
 * message but no `where`: the caller knows the file and adds it. GSL must
 * have its abort-on-error handler turned off (gsl_set_error_handler_off, in
 * main). Cost: O(n^2 K) per alpha-beta fit, n <= FIT_MAX_POINTS; the
 * leave-one-size-out check refits once per size. Knows nothing about files.
 */
#ifndef FIT_H
#define FIT_H

#include <stddef.h>
#include <stdint.h>

#include "../../sim/core/err.h"
#include "../../sim/io/profile.h"

#define FIT_MAX_BREAKS 7
#define FIT_MAX_REGIMES (FIT_MAX_BREAKS + 1)
#define FIT_MAX_POINTS 1024

typedef struct fit_opts {
    uint32_t max_breaks; /* K: at most K + 1 regimes, K <= FIT_MAX_BREAKS */
    uint32_t min_points; /* per regime, at least 3 (two parameters and an error) */
} fit_opts;

/* Three breaks are enough for NCCL's three protocols (LL, LL128, Simple)
 * plus the bandwidth plateau; three points is the fewest that leave a
 * residual to estimate errors from. */
#define FIT_OPTS_DEFAULT ((fit_opts){3, 3})

/* What a regime's fit adds to the profile's view of it. */
typedef struct fit_stats {
    uint32_t first, npoints;     /* its points in the sorted input */
    double beta_us_per_byte, beta_se_us_per_byte;
    double sse_rel;              /* sum of squared relative errors */
} fit_stats;

typedef struct fit_model {
    prof_regime reg[FIT_MAX_REGIMES]; /* ranges, alpha, beta, SE, R^2, points */
    fit_stats st[FIT_MAX_REGIMES];
    uint32_t nreg, npoints;
    double sse_rel;
} fit_model;

/* Fit n measurements (any order; equal sizes are allowed and stay in one
 * regime). Regime i covers [reg[i].min_bytes, reg[i].max_bytes]: the first
 * starts at the smallest size, the last ends at the largest, and the border
 * between two lies where their lines cross if that is between the two
 * sizes, else at the geometric midpoint. On error *out is untouched. */
int fit_alpha_beta(const uint64_t *bytes, const double *time_us, size_t n, const fit_opts *o,
                   fit_model *out, ss_err *err);

/* Predicted time: prof_time_us on the model's regimes, the same rule the
 * simulator applies to a profile. */
double fit_predict(const fit_model *m, uint64_t bytes);

/* Leave-one-size-out cross-validation: for each distinct size, fit the
 * others and predict it; *median is the median |relative error| over all
 * points. NAN when some refit is impossible (too few sizes left). Errors
 * other than that (out of memory) are returned. */
int fit_loso(const uint64_t *bytes, const double *time_us, size_t n, const fit_opts *o,
             double *median, ss_err *err);

/* Median of v[0..n) (sorted in place); NAN for n = 0. */
double fit_median(double *v, size_t n);

typedef struct fit_gemm {
    double e_max, d_half, p;
    double e_max_se, d_half_se, p_se;
    double rms_rel; /* root mean square relative error of the fit */
    uint32_t npoints;
} fit_gemm;

/* Fit eff[i] (achieved / peak, > 0) at dimension d[i] (> 0). Needs at least
 * 4 points and 3 distinct d. On error *out is untouched. */
int fit_gemm_curve(const double *d, const double *eff, size_t n, fit_gemm *out, ss_err *err);

#endif
