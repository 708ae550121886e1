/* vfit.h - one global constant fitted to the validation corpus, with the
 * leave-one-source-out cross-validation the fidelity rules ask for beside
 * it (`shardsim validate --fit KEY=VALUES`).
 *
 * The constant is a scenario key set on every row as `--set KEY=VALUE`
 * does (topology.device.gemm_efficiency, overlap.slowdown, ...): the rows
 * are the corpus the caller selects, the candidate values a list or a
 * range. Each value simulates every row (validate.h); the fitted value is
 * the one with the smallest overall median |error| of step time (ties: the
 * first in the list). Cross-validated: for each source, the value fitted
 * without that source's rows, and that source's rows' errors at it; the
 * held-out errors of all sources give the cross-validated medians. A
 * constant that only fits the corpus shows it there: its held-out median
 * is far above its fitted one.
 *
 * Data flow: vfit_values parses the values; vfit_run fills one val_report
 * per value (val_collect, val_run, val_stats); vfit_compute derives the fit
 * and the cross-validation from the reports (the tests fill reports by
 * hand); vfit_text prints them.
 *
 * Ownership: a vfit is zeroed by the caller, owns its values and reports,
 * and is released with vfit_fini.
 *
 * Does not know: the CLI, memory rows (only step time is fitted), which
 * rows a key should apply to (the caller chooses the files).
 */
#ifndef RUN_VFIT_H
#define RUN_VFIT_H

#include "validate.h"

#define VFIT_MAX_VALUES 1000

/* One source's cross-validation: the value fitted without its rows, and
 * its rows' median |error| at the all-source fit and at that value. */
typedef struct vfit_source {
    char source[VAL_NAME_MAX];
    size_t n;          /* its step rows */
    size_t without;    /* index of the value fitted without them */
    double in_sample;  /* its median |error| at the all-source fit */
    double held_out;   /* its median |error| at `without` */
} vfit_source;

typedef struct vfit {
    char key[256];
    char (*text)[32];      /* the values as set on the scenarios */
    double *values;
    size_t nvalues;
    val_report *reps;      /* [nvalues] */
    val_stat *per_value;   /* [nvalues]: overall step medians */
    size_t best;           /* the fitted value's index */
    vfit_source *src;
    size_t nsrc;
    val_stat held_out;     /* medians over every source's held-out rows */
} vfit;

/* spec "KEY=V1,V2,..." or "KEY=LO:HI:STEP" (LO <= HI, STEP > 0, values
 * LO, LO + STEP, ... up to HI within STEP / 1000). Errors (SS_E_INPUT): no
 * '=', an empty key, a value that is not a finite number, a range that
 * gives no value or more than VFIT_MAX_VALUES. */
int vfit_values(vfit *f, const char *spec, ss_err *err);

/* Simulate the rows of paths (default folder def when npaths is 0) once
 * per value, each with sets[0 .. nsets) and then KEY=VALUE, on `threads`
 * threads; `progress` (may be NULL) gets a line per value. Then
 * vfit_compute. */
int vfit_run(vfit *f, const char *const *paths, size_t npaths, const char *def,
             const char *const *sets, size_t nsets, unsigned threads, FILE *progress,
             ss_err *err);

/* The fit and the cross-validation from f->reps (each with val_stats
 * done, the same rows in the same order). Errors: no step-time row
 * (SS_E_INPUT), out of memory. */
int vfit_compute(vfit *f, ss_err *err);

void vfit_text(const vfit *f, FILE *out);
void vfit_fini(vfit *f);

#endif
