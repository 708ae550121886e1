/* fit.c - alpha-beta regimes and the GEMM efficiency curve (contract in fit.h). */
#include "fit.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_statistics_double.h>

/* nccl-tests prints 4 to 6 significant digits, so a relative misfit below
 * 1e-6 is print rounding, not structure. BIC compares log(mean squared
 * error); without a floor, exact data would make it compare logs of
 * rounding noise and pick regimes at random. */
#define REL_FLOOR 1e-6

typedef struct pt {
    double x, t;
    size_t idx; /* input position: the tie-break that makes the sort total */
} pt;

static int pt_cmp(const void *a, const void *b)
{
    const pt *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return p->idx < q->idx ? -1 : p->idx > q->idx;
}

static int nomem(ss_err *err) { return ss_fail(err, SS_E_NOMEM, NULL, "out of memory fitting"); }

/* ---- segment costs ---- */

/* Weighted least squares of t on x over a run, accumulated one point at a
 * time (West's weighted update of means and co-moments), so every run
 * starting at i costs O(1) more than the previous one and no sum of large
 * numbers is ever differenced. */
typedef struct acc {
    double w, mx, mt, cxx, cxt, ctt;
} acc;

static void acc_add(acc *a, double x, double t)
{
    double w = 1 / (t * t); /* relative error: (t - f) / t = sqrt(w) (t - f) */
    a->w += w;
    double dx = x - a->mx, dt = t - a->mt;
    a->mx += w / a->w * dx;
    a->mt += w / a->w * dt;
    a->cxx += w * dx * (x - a->mx);
    a->cxt += w * dx * (t - a->mt);
    a->ctt += w * dt * (t - a->mt);
}

/* Sum of squared relative errors of the best line, or INFINITY when the run
 * has one distinct size or a slope that is not positive (time that does not
 * grow with size has no bandwidth to report). */
static double acc_cost(const acc *a)
{
    if (!(a->cxx > 0) || !(a->cxt > 0)) return INFINITY;
    double sse = a->ctt - a->cxt * a->cxt / a->cxx;
    return sse > 0 ? sse : 0;
}

/* A regime may start at i only between two different sizes, so equal sizes
 * never straddle a border. */
static bool split_ok(const pt *p, size_t n, size_t i)
{
    return i == 0 || i == n || p[i - 1].x < p[i].x;
}

/* cost[i * (n + 1) + j]: the run [i, j). */
static double *seg_costs(const pt *p, size_t n, uint32_t minp)
{
    double *c = malloc((n + 1) * (n + 1) * sizeof *c);
    if (!c) return NULL;
    for (size_t k = 0; k < (n + 1) * (n + 1); k++) c[k] = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!split_ok(p, n, i)) continue;
        acc a = {0};
        for (size_t j = i + 1; j <= n; j++) {
            acc_add(&a, p[j - 1].x, p[j - 1].t);
            if (j - i >= minp && split_ok(p, n, j)) c[i * (n + 1) + j] = acc_cost(&a);
        }
    }
    return c;
}

/* ---- choosing the regimes ---- */

typedef struct seg_plan {
    uint32_t k;                       /* number of regimes */
    size_t start[FIT_MAX_REGIMES + 1]; /* regime r is [start[r], start[r + 1]) */
} seg_plan;

/* D[k][j]: least cost of j points in k runs; from[k][j]: where the last run
 * starts. Strict < keeps the earliest break among equal costs. */
static void dp_fill(const double *c, size_t n, uint32_t kmax, double *D, size_t *from)
{
    size_t w = n + 1;
    for (size_t k = 0; k <= kmax; k++)
        for (size_t j = 0; j <= n; j++) D[k * w + j] = INFINITY;
    D[0] = 0;
    for (size_t k = 1; k <= kmax; k++)
        for (size_t j = 1; j <= n; j++)
            for (size_t i = 0; i < j; i++) {
                double v = D[(k - 1) * w + i] + c[i * w + j];
                if (v < D[k * w + j]) {
                    D[k * w + j] = v;
                    from[k * w + j] = i;
                }
            }
}

/* BIC = n ln(mean squared error) + (parameters) ln n, with two parameters
 * per regime and one per break. Ties keep the fewer regimes. */
static uint32_t bic_pick(const double *D, size_t n, uint32_t kmax)
{
    uint32_t best = 0;
    double best_bic = INFINITY;
    for (uint32_t k = 1; k <= kmax; k++) {
        double sse = D[k * (n + 1) + n];
        if (!isfinite(sse)) continue;
        double mse = fmax(sse / (double)n, REL_FLOOR * REL_FLOOR);
        double bic = (double)n * log(mse) + (3.0 * k - 1) * log((double)n);
        if (bic < best_bic) {
            best_bic = bic;
            best = k;
        }
    }
    return best;
}

static int plan_regimes(const pt *p, size_t n, const fit_opts *o, seg_plan *sp, ss_err *err)
{
    uint32_t kmax = o->max_breaks + 1;
    double *c = seg_costs(p, n, o->min_points);
    double *D = malloc((kmax + 1) * (n + 1) * sizeof *D);
    size_t *from = calloc((kmax + 1) * (n + 1), sizeof *from);
    int rc = SS_OK;
    if (!c || !D || !from) rc = nomem(err);
    if (!rc) {
        dp_fill(c, n, kmax, D, from);
        sp->k = bic_pick(D, n, kmax);
        if (!sp->k)
            rc = ss_fail(err, SS_E_INPUT, NULL,
                         "no split of the %zu sizes into runs of at least %u has times that grow "
                         "with size in every run; alpha-beta needs rising times",
                         n, o->min_points);
    }
    for (size_t k = sp->k, j = n; !rc && k > 0; k--) {
        sp->start[k] = j;
        j = from[k * (n + 1) + j];
        sp->start[k - 1] = j;
    }
    free(c);
    free(D);
    free(from);
    return rc;
}

/* ---- one regime by GSL ---- */

/* Weighted fit of [first, first + m) with x scaled by its largest value,
 * which keeps the design matrix well conditioned for sizes up to 2^53. */
static int fit_run(const pt *p, size_t first, size_t m, prof_regime *r, fit_stats *st, ss_err *err)
{
    gsl_matrix *X = gsl_matrix_alloc(m, 2), *cov = gsl_matrix_alloc(2, 2);
    gsl_vector *y = gsl_vector_alloc(m), *w = gsl_vector_alloc(m), *c = gsl_vector_alloc(2);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(m, 2);
    int rc = X && cov && y && w && c && ws ? SS_OK : nomem(err);
    double scale = p[first + m - 1].x, chisq = 0;
    for (size_t i = 0; !rc && i < m; i++) {
        const pt *q = &p[first + i];
        gsl_matrix_set(X, i, 0, 1);
        gsl_matrix_set(X, i, 1, q->x / scale);
        gsl_vector_set(y, i, q->t);
        gsl_vector_set(w, i, 1 / (q->t * q->t));
    }
    if (!rc && gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) != GSL_SUCCESS)
        rc = ss_fail(err, SS_E_INTERNAL, NULL, "GSL could not solve a regime's least squares");
    if (!rc) {
        double s2 = chisq / (double)(m - 2);
        double beta = gsl_vector_get(c, 1) / scale;
        double beta_se = sqrt(gsl_matrix_get(cov, 1, 1) * s2) / scale;
        double tss = gsl_stats_wtss(w->data, 1, y->data, 1, m);
        r->alpha_us = gsl_vector_get(c, 0);
        r->alpha_se_us = sqrt(gsl_matrix_get(cov, 0, 0) * s2);
        /* bytes/us = MB/s: 1 / beta B/us is 1e-3 / beta GB/s; its error by
         * the delta method. */
        r->beta_GBps = 1e-3 / beta;
        r->beta_se_GBps = 1e-3 * beta_se / (beta * beta);
        r->r2 = tss > 0 ? 1 - chisq / tss : NAN;
        r->points = (uint32_t)m;
        *st = (fit_stats){(uint32_t)first, (uint32_t)m, beta, beta_se, chisq};
        if (!(beta > 0))
            rc = ss_fail(err, SS_E_INPUT, NULL, "a regime's fitted time does not grow with size");
    }
    if (X) gsl_matrix_free(X);
    if (cov) gsl_matrix_free(cov);
    if (y) gsl_vector_free(y);
    if (w) gsl_vector_free(w);
    if (c) gsl_vector_free(c);
    if (ws) gsl_multifit_linear_free(ws);
    return rc;
}

/* The last byte count of regime a, given the next one b starts at size lo
 * and a ends at size hi < lo. */
static uint64_t border(const fit_stats *a, const prof_regime *ra, const fit_stats *b,
                       const prof_regime *rb, double hi, double lo)
{
    double at = a->beta_us_per_byte - b->beta_us_per_byte, B = sqrt(hi * lo);
    if (at != 0) {
        double xc = (rb->alpha_us - ra->alpha_us) / at;
        if (xc > hi && xc < lo) B = xc;
    }
    uint64_t e = (uint64_t)floor(B), h = (uint64_t)hi, l = (uint64_t)lo;
    return e < h ? h : e >= l ? l - 1 : e;
}

static int fit_plan(const pt *p, size_t n, const seg_plan *sp, fit_model *m, ss_err *err)
{
    memset(m, 0, sizeof *m);
    m->nreg = sp->k;
    m->npoints = (uint32_t)n;
    for (uint32_t r = 0; r < sp->k; r++) {
        int rc = fit_run(p, sp->start[r], sp->start[r + 1] - sp->start[r], &m->reg[r], &m->st[r], err);
        if (rc) return rc;
        m->sse_rel += m->st[r].sse_rel;
    }
    m->reg[0].min_bytes = (uint64_t)p[0].x;
    m->reg[sp->k - 1].max_bytes = (uint64_t)p[n - 1].x;
    for (uint32_t r = 0; r + 1 < sp->k; r++) {
        double hi = p[sp->start[r + 1] - 1].x, lo = p[sp->start[r + 1]].x;
        m->reg[r].max_bytes = border(&m->st[r], &m->reg[r], &m->st[r + 1], &m->reg[r + 1], hi, lo);
        m->reg[r + 1].min_bytes = m->reg[r].max_bytes + 1;
    }
    return SS_OK;
}

static int check_input(const double *t, size_t n, const fit_opts *o, ss_err *err)
{
    if (o->min_points < 3 || o->max_breaks > FIT_MAX_BREAKS)
        return ss_fail(err, SS_E_INTERNAL, NULL, "fit options out of range (min_points %u, "
                       "max_breaks %u)", o->min_points, o->max_breaks);
    if (n > FIT_MAX_POINTS)
        return ss_fail(err, SS_E_INPUT, NULL, "%zu sizes is more than the %d a fit takes", n,
                       FIT_MAX_POINTS);
    if (n < o->min_points)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "need at least %u sizes to fit alpha and beta with an error estimate, "
                       "found %zu", o->min_points, n);
    for (size_t i = 0; i < n; i++)
        if (!(t[i] > 0) || !isfinite(t[i]))
            return ss_fail(err, SS_E_INPUT, NULL, "time %g us (measurement %zu) is not positive",
                           t[i], i + 1);
    return SS_OK;
}

int fit_alpha_beta(const uint64_t *bytes, const double *time_us, size_t n, const fit_opts *o,
                   fit_model *out, ss_err *err)
{
    int rc = check_input(time_us, n, o, err);
    if (rc) return rc;
    pt *p = malloc(n * sizeof *p);
    if (!p) return nomem(err);
    for (size_t i = 0; i < n; i++) p[i] = (pt){(double)bytes[i], time_us[i], i};
    qsort(p, n, sizeof *p, pt_cmp);
    seg_plan sp;
    fit_model m;
    rc = plan_regimes(p, n, o, &sp, err);
    if (!rc) rc = fit_plan(p, n, &sp, &m, err);
    free(p);
    if (!rc) *out = m;
    return rc;
}

double fit_predict(const fit_model *m, uint64_t bytes)
{
    return prof_time_us(m->reg, m->nreg, bytes);
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double fit_median(double *v, size_t n)
{
    if (!n) return NAN;
    qsort(v, n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One round: fit everything but size s, add the errors at s to rel. false
 * with *rc = SS_OK when the rest cannot be fitted. */
static bool loso_round(const uint64_t *bytes, const double *t, size_t n, const fit_opts *o,
                       uint64_t s, uint64_t *xb, double *tb, double *rel, size_t *nrel, int *rc,
                       ss_err *err)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (bytes[i] == s) continue;
        xb[m] = bytes[i];
        tb[m++] = t[i];
    }
    fit_model fm;
    ss_err e;
    ss_err_clear(&e);
    *rc = fit_alpha_beta(xb, tb, m, o, &fm, &e);
    if (*rc == SS_E_INPUT) {
        *rc = SS_OK;
        return false;
    }
    if (*rc) {
        ss_fail(err, e.code, NULL, "%s", e.msg);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if (bytes[i] == s) rel[(*nrel)++] = fabs(fit_predict(&fm, s) - t[i]) / t[i];
    return true;
}

static bool seen_before(const uint64_t *bytes, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (bytes[j] == bytes[i]) return true;
    return false;
}

int fit_loso(const uint64_t *bytes, const double *time_us, size_t n, const fit_opts *o,
             double *median, ss_err *err)
{
    uint64_t *xb = malloc((n ? n : 1) * sizeof *xb);
    double *tb = malloc((n ? n : 1) * sizeof *tb), *rel = malloc((n ? n : 1) * sizeof *rel);
    int rc = xb && tb && rel ? SS_OK : nomem(err);
    size_t nrel = 0;
    bool ok = n > 0;
    for (size_t i = 0; i < n && !rc && ok; i++)
        if (!seen_before(bytes, i))
            ok = loso_round(bytes, time_us, n, o, bytes[i], xb, tb, rel, &nrel, &rc, err);
    if (!rc) *median = ok ? fit_median(rel, nrel) : NAN;
    free(xb);
    free(tb);
    free(rel);
    return rc;
}

/* ---- the GEMM efficiency curve ---- */

/* Parameters (e_max, L = ln d_half, p): eff = e_max / (1 + u), u = exp(p (L -
 * ln d)). Fitting ln d_half keeps d_half positive and the problem well
 * scaled whatever the units of d. Residuals are relative, as above. */
typedef struct gdata {
    const double *lnd, *eff;
    size_t n;
} gdata;

static int g_f(const gsl_vector *x, void *data, gsl_vector *f)
{
    const gdata *g = data;
    double e = gsl_vector_get(x, 0), L = gsl_vector_get(x, 1), p = gsl_vector_get(x, 2);
    for (size_t i = 0; i < g->n; i++) {
        double u = exp(p * (L - g->lnd[i]));
        gsl_vector_set(f, i, (e / (1 + u) - g->eff[i]) / g->eff[i]);
    }
    return GSL_SUCCESS;
}

/* u / (1 + u)^2 written as 1 / (u + 2 + 1/u), finite for u = 0 and u = inf. */
static int g_df(const gsl_vector *x, void *data, gsl_matrix *J)
{
    const gdata *g = data;
    double e = gsl_vector_get(x, 0), L = gsl_vector_get(x, 1), p = gsl_vector_get(x, 2);
    for (size_t i = 0; i < g->n; i++) {
        double z = L - g->lnd[i], u = exp(p * z);
        double ug2 = u > 0 ? 1 / (u + 2 + 1 / u) : 0;
        gsl_matrix_set(J, i, 0, 1 / (1 + u) / g->eff[i]);
        gsl_matrix_set(J, i, 1, -e * p * ug2 / g->eff[i]);
        gsl_matrix_set(J, i, 2, -e * z * ug2 / g->eff[i]);
    }
    return GSL_SUCCESS;
}

/* A start from the linearised model: with e0 a little above the largest
 * efficiency, ln(e0 / eff - 1) = p L - p ln d is a straight line in ln d. */
static void g_start(const gdata *g, double x0[3])
{
    double emax = 0, su = 0, sy = 0, suu = 0, suy = 0;
    for (size_t i = 0; i < g->n; i++) emax = fmax(emax, g->eff[i]);
    double e0 = 1.05 * emax, nn = (double)g->n;
    for (size_t i = 0; i < g->n; i++) {
        double u = g->lnd[i], y = log(e0 / g->eff[i] - 1);
        su += u;
        sy += y;
        suu += u * u;
        suy += u * y;
    }
    double den = nn * suu - su * su, s = den > 0 ? (nn * suy - su * sy) / den : 0;
    double p = -s, c = (sy - s * su) / nn;
    x0[0] = e0;
    x0[1] = p > 0 && isfinite(p) ? c / p : su / nn;
    x0[2] = p > 0 && isfinite(p) ? p : 1;
}

static int g_check(const double *d, const double *eff, size_t n, ss_err *err)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(d[i] > 0) || !isfinite(d[i]) || !(eff[i] > 0) || !isfinite(eff[i]))
            return ss_fail(err, SS_E_INPUT, NULL,
                           "measurement %zu has dimension %g and efficiency %g; both must be "
                           "positive", i + 1, d[i], eff[i]);
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen |= d[j] == d[i];
        distinct += !seen;
    }
    if (n < 4 || distinct < 3)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "need at least 4 GEMM measurements at 3 or more sizes to fit e_max, "
                       "d_half and p with errors; found %zu at %zu sizes", n, distinct);
    return SS_OK;
}

static int g_solve(gdata *g, double x0[3], fit_gemm *out, ss_err *err)
{
    gsl_multifit_nlinear_parameters prm = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &prm, g->n, 3);
    gsl_matrix *cov = gsl_matrix_alloc(3, 3);
    gsl_multifit_nlinear_fdf fdf = {g_f, g_df, NULL, g->n, 3, g, 0, 0, 0};
    gsl_vector_view xv = gsl_vector_view_array(x0, 3);
    int rc = w && cov ? SS_OK : nomem(err), info = 0, st = GSL_SUCCESS;
    if (!rc) st = gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
    if (!rc && st == GSL_SUCCESS) st = gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 0, NULL, NULL, &info, w);
    if (!rc && st != GSL_SUCCESS)
        rc = ss_fail(err, SS_E_INPUT, NULL, "the GEMM efficiency curve did not converge (%s)",
                     gsl_strerror(st));
    if (!rc) {
        const gsl_vector *x = gsl_multifit_nlinear_position(w);
        double chisq;
        gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), &chisq);
        gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
        double s2 = chisq / (double)(g->n - 3);
        fit_gemm r = {gsl_vector_get(x, 0), exp(gsl_vector_get(x, 1)), gsl_vector_get(x, 2),
                      sqrt(gsl_matrix_get(cov, 0, 0) * s2), 0, sqrt(gsl_matrix_get(cov, 2, 2) * s2),
                      sqrt(chisq / (double)g->n), (uint32_t)g->n};
        r.d_half_se = r.d_half * sqrt(gsl_matrix_get(cov, 1, 1) * s2); /* delta method */
        if (!(r.e_max > 0) || !(r.p > 0) || !isfinite(r.d_half))
            rc = ss_fail(err, SS_E_INPUT, NULL,
                         "the GEMM efficiency does not rise with size (fit: e_max %g, p %g)",
                         r.e_max, r.p);
        else *out = r;
    }
    if (w) gsl_multifit_nlinear_free(w);
    if (cov) gsl_matrix_free(cov);
    return rc;
}

int fit_gemm_curve(const double *d, const double *eff, size_t n, fit_gemm *out, ss_err *err)
{
    int rc = g_check(d, eff, n, err);
    if (rc) return rc;
    double *lnd = malloc(n * sizeof *lnd);
    if (!lnd) return nomem(err);
    for (size_t i = 0; i < n; i++) lnd[i] = log(d[i]);
    gdata g = {lnd, eff, n};
    double x0[3];
    g_start(&g, x0);
    rc = g_solve(&g, x0, out, err);
    free(lnd);
    return rc;
}
