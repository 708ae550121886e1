/* profile.h - calibration profiles: measured costs of one machine, as data.
 *
 * A profile (format in docs/CALIBRATION.md) is what shardsim-calib fits from
 * nccl-tests logs or from the GPU harness's measurements, and what the
 * simulator's cost model reads instead of its defaults:
 *   collectives  per (op, ranks, nodes): piecewise alpha-beta regimes,
 *                time_us = alpha_us + bytes / (beta_GBps * 1e3);
 *   gemm         per dtype: efficiency eff(d) = e_max d^p / (d^p + d_half^p)
 *                of the peak rate, d the geometric mean of m, n, k;
 *   launch_us    one kernel launch; copy: alpha-beta regimes per copy kind.
 *
 * Invariants the loader enforces (each violation is an SS_E_INPUT error whose
 * `where` is "file: $.json.path"): unknown keys are rejected; a curve's
 * regimes tile [first min_bytes, last max_bytes] without gaps or overlaps, in
 * increasing order; beta_GBps > 0; every regime predicts a positive time at
 * both ends; at most one curve per (op, ranks, nodes); nodes <= ranks.
 *
 * Ownership: a loaded or built prof owns its strings and arrays; prof_fini
 * frees them (and accepts a zeroed prof). On error *out is untouched.
 * prof_json renders deterministically: same profile, same bytes. Knows
 * nothing about how the numbers were fitted or about the engine.
 */
#ifndef PROF_PROFILE_H
#define PROF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/err.h"
#include "../plan/spec.h"
#include "ncclt.h"

#define PROF_MAX_REGIMES 64

/* Copy kinds: host to device from pinned or pageable memory, back, and
 * device to device. */
#define PROF_COPIES(X)                                                         \
    X(H2D_PINNED, "h2d_pinned")                                                \
    X(H2D_PAGEABLE, "h2d_pageable")                                            \
    X(D2H_PINNED, "d2h_pinned")                                                \
    X(D2H_PAGEABLE, "d2h_pageable")                                            \
    X(D2D, "d2d")

#define PROF_ENUM_(id, name) PROF_COPY_##id,
typedef enum { PROF_COPIES(PROF_ENUM_) PROF_NCOPY } prof_copy_kind;
#undef PROF_ENUM_
extern const char *const prof_copy_names[PROF_NCOPY];

typedef struct prof_regime {
    uint64_t min_bytes, max_bytes; /* inclusive */
    double alpha_us, beta_GBps;
    /* Fit statistics, for people; NAN (points 0) when the file omits them. */
    double alpha_se_us, beta_se_GBps, r2;
    uint32_t points;
} prof_regime;

typedef struct prof_curve {
    prof_regime *reg;
    uint32_t nreg;
    uint32_t points;          /* sizes fitted; 0 when not given */
    double cv_median_rel_err; /* leave-one-size-out; NAN when not given */
} prof_curve;

typedef struct prof_coll {
    ncclt_op op;
    uint32_t ranks, nodes;
    char *label; /* where the table came from; NULL when not given */
    prof_curve c;
} prof_coll;

typedef struct prof_gemm {
    bool present;
    double peak_tflops; /* the rate the efficiency is a fraction of */
    double e_max, d_half, p;
    double e_max_se, d_half_se, p_se; /* NAN when not given */
    uint32_t points;
} prof_gemm;

typedef struct prof {
    char *source, *card;                     /* required */
    char *nccl, *cuda, *driver, *date, *host; /* NULL when not given */
    prof_coll *coll;
    uint32_t ncoll;
    prof_gemm gemm[SPEC_NDT];
    double launch_us; /* NAN when not given */
    bool has_copy[PROF_NCOPY];
    prof_curve copy[PROF_NCOPY];
} prof;

/* A profile with nothing in it (launch_us and the statistics NAN), ready to
 * be filled by a fitter. */
void prof_init(prof *p);
void prof_fini(prof *p);

/* Read and validate. Errors: unreadable file (SS_E_IO), malformed JSON and
 * every violated rule above (SS_E_INPUT), out of memory. */
int prof_load(const char *file, prof *out, ss_err *err);
/* The same from len bytes of text; `file` names it in messages. */
int prof_load_text(const char *file, const char *text, size_t len, prof *out, ss_err *err);

/* JSON text of p into *out (caller frees with free()). Optional values that
 * are NAN, NULL or absent are left out; a required value that is not finite
 * is SS_E_INTERNAL (a fitter bug). Numbers carry 6 significant digits. */
int prof_json(const prof *p, char **out, ss_err *err);

/* Time of `bytes` on a curve: the regime whose range holds bytes, the first
 * or the last below or above the fitted range; never below 0. */
double prof_time_us(const prof_regime *reg, uint32_t nreg, uint64_t bytes);
/* The curve for (op, ranks, nodes), or NULL. */
const prof_coll *prof_coll_find(const prof *p, ncclt_op op, uint32_t ranks, uint32_t nodes);
/* eff(d) of a gemm entry (0 for d <= 0). */
double prof_gemm_eff(const prof_gemm *g, double d);

#endif
