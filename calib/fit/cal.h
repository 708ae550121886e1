/* cal.h - from measured data to a calibration profile: what is fitted, on
 * which rows, and how the result is shown to a person.
 *
 * Two sources. nccl-tests logs (ncclt_): each selected table becomes one
 * collective curve, fitted on its out-of-place times (the in-place column
 * measures the same transfer into the same buffer and is left as a check
 * for people). Rows of 0 bytes are dropped: nccl-tests prints them when the
 * size rounds to no element per rank, and they time an empty call. Rows
 * with #wrong > 0 are an error: a failing run is not calibration data. The
 * harness's measurement file (mf_): one curve per (op, ranks, nodes) and
 * per copy kind, one efficiency curve per GEMM dtype (relative to a peak
 * from the file or the caller), the launch time as measured.
 *
 * Each curve gets its leave-one-size-out median error. Errors are
 * SS_E_INPUT with `where` = "file:line" (nccl-tests) or "file: $.path"
 * (measurements) and the fitter's reason. Ownership: *out is filled only on
 * success and owns its contents (prof_fini). Knows nothing about the
 * command line.
 */
#ifndef CAL_H
#define CAL_H

#include <stdio.h>

#include "../../sim/io/ncclt.h"
#include "../../sim/io/profile.h"
#include "fit.h"
#include "mfile.h"

typedef struct cal_sel {
    const char *op;            /* keep tables of this op; NULL: every op */
    uint32_t ranks, nodes;     /* 0: as the file says (an error when it does not) */
    const char *const *tables; /* keep these labels (whole, or the part after the */
    size_t ntables;            /* last '/'); none: every table */
} cal_sel;

int cal_from_ncclt(const char *file, const ncclt_log *log, const cal_sel *sel,
                   const fit_opts *o, prof *out, ss_err *err);

/* peak[d] > 0 overrides the file's peak_tflops for dtype d; NULL: none. */
int cal_from_meas(const char *file, const mf_data *m, const double *peak, const fit_opts *o,
                  prof *out, ss_err *err);

/* The profile as tables for people: regimes with alpha, beta, their
 * standard errors, R^2 and points; the cross-validation error per curve;
 * the GEMM curves; launch time. */
void cal_print(const prof *p, FILE *f);

#endif
