/* validate.h - the simulator against public measurements: every scenario
 * that carries a "measured" block is simulated and its prediction compared
 * with the figure its source gives, signed and split, so that a too-fast
 * row and a too-slow row cannot cancel unseen in one average.
 *
 * Data flow: val_collect expands the paths (a folder gives its *.json files
 * in name order, a file itself; nothing recursive), loads each scenario and
 * keeps those with "measured"; val_run simulates them (threads >= 1; rows
 * are independent and each thread loads its own scenario, so the result
 * does not depend on the thread count); val_stats groups the rows by source
 * (first-seen order) and computes the medians; val_text and val_json render
 * the same report.
 *
 * Errors are (predicted - measured) / measured in percent. Step time and
 * memory are never mixed: each has its own n and medians. A row contributes
 * one step sample when its source gives a step time and one memory sample
 * per memory figure it gives (peak allocated, peak reserved: the largest
 * over ranks, memory.max_peak_*_bytes of the summary; where the source's
 * peaks cover the model's setup, measured.peak_since "start", the larger of
 * that and memory.max_init_peak_bytes, and the row says "setup peak" when
 * the setup's is the larger). Memory is in GiB.
 *
 * Rows are also grouped by class: the device, the runtime (the sharding
 * strategy) and the kernel set (training.kernels) the scenario runs, as
 * "H100-SXM5-80GB fsdp eager". Classes are a view, not a threshold.
 *
 * And split by sequence: where one source measured one model (the same
 * recomputation, GPUs, layout and device) at three or more sequence
 * lengths, the
 * time per token is fitted as rest + context x seq (least squares over
 * those rows), measured and predicted apart. The context term is what
 * grows with the sequence (the attention core); the rest is the GEMMs and
 * everything else. Errors in one that the other hides show there: a view,
 * not a threshold.
 *
 * Thresholds (the fidelity issue's): over all rows median |error| <= 10%
 * and |median signed error| <= 5%; every source's median |error| <= 20%;
 * checked for step time and memory separately, only where there are
 * samples. val_pass tells whether they all hold.
 *
 * Ownership: a val_report is zeroed by the caller and released with
 * val_fini (NULL-safe on its arrays); val_json's string is the caller's to
 * free(). On an error a val_* call leaves the report as it found it except
 * rows it had already filled, which val_fini releases.
 *
 * Does not know: the CLI, files other than the scenarios (the caller writes
 * the JSON text with of_write_text), anything of a source but its id.
 */
#ifndef VAL_VALIDATE_H
#define VAL_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/err.h"

#define VAL_NAME_MAX 128

/* One compared figure: measured, predicted, signed error in percent. */
typedef struct val_fig {
    bool has;
    double measured, predicted, err_pct;
} val_fig;

typedef struct val_row {
    char file[1024];
    char name[VAL_NAME_MAX];   /* the file's base name without .json */
    char source[VAL_NAME_MAX];
    char cls[VAL_NAME_MAX];    /* "device runtime kernels", e.g. "H100-SXM5-80GB fsdp eager" */
    val_fig step;              /* seconds */
    val_fig alloc, reserved;   /* GiB */
    bool setup_counts;         /* measured.peak_since "start" and the setup's peak is
                                  above the step's: the prediction is the setup's */
    val_fig mfu;               /* fractions; no error computed (kept for JSON) */
    /* the prediction's split (summary keys time.compute_s,
     * time.exposed_communication_s, layout.bubble_fraction_analytic) */
    double compute_s, exposed_comm_s, bubble_fraction;
    double interference_s; /* of compute_s, what collectives beside it added */
    bool pipelined;            /* pp > 1: the bubble applies */
    /* for the split by sequence: its group (source, model, recomputation,
     * GPUs, layout, device), sequence length, and the tokens a GPU
     * processes per step (the summary's; 0 until run) */
    char seq_key[4 * VAL_NAME_MAX];
    uint64_t seq, tokens;
} val_row;

/* Medians of one kind of error over n samples (percent). */
typedef struct val_stat {
    size_t n;
    double med_abs, med_signed;
} val_stat;

typedef struct val_group {
    char source[VAL_NAME_MAX]; /* the source, or the class (val_report.classes); "" overall */
    val_stat step, mem;
} val_group;

/* One model's rows split by sequence: time per token (seconds) =
 * rest + ctx x seq, fitted on the measured and on the predicted steps;
 * errors in percent, NAN where the measured term is not positive. */
typedef struct val_seq {
    char label[4 * VAL_NAME_MAX]; /* source: model, recomputation, GPUs, device (seq_key) */
    size_t n;
    uint64_t seq_min, seq_max;
    double rest_meas, rest_pred, ctx_meas, ctx_pred;
    double rest_err_pct, ctx_err_pct;
} val_seq;

typedef struct val_report {
    /* "key=value" assignments applied to every scenario before it runs (a
     * what-if over the corpus, as `run --set`); set by the caller, not
     * owned; the text and Markdown say the corpus was changed */
    const char *const *sets;
    size_t nsets;
    val_row *rows;
    size_t nrows;
    val_group *groups; /* one per source, in first-seen row order */
    size_t ngroups;
    val_group *classes; /* one per row class (device, runtime, kernels), sorted by name:
                           the same errors cut across sources, so that a device or
                           a runtime that errs one way shows */
    size_t nclasses;
    val_seq *seqs; /* the split by sequence, in first-seen row order */
    size_t nseqs;
    val_group all;
} val_report;

/* Signed error in percent: 100 (predicted - measured) / measured. */
double val_err_pct(double measured, double predicted);

/* Median of v[0..n) (sorts v in place); the mean of the two middle values
 * when n is even; 0 when n is 0. */
double val_median(double *v, size_t n);

/* Load the scenarios under paths (default folder when npaths is 0) and add
 * a row for each one with "measured". Errors: an unreadable folder or file
 * (SS_E_IO), a scenario that does not load (SS_E_INPUT, with its file and
 * JSON path), no scenario with "measured" at all (SS_E_INPUT). */
int val_collect(const char *const *paths, size_t npaths, const char *def, val_report *r,
                ss_err *err);

/* Simulate every row on `threads` threads and fill its predictions and
 * errors. The first failing row's error is returned. */
int val_run(val_report *r, unsigned threads, ss_err *err);

/* Group by source and by class and compute the medians from the rows'
 * figures (the rows may be filled by hand, as the tests do). */
int val_stats(val_report *r, ss_err *err);

/* The table, the per-source and overall lines and the PASS/FAIL lines. */
void val_text(const val_report *r, FILE *f);
/* The same as JSON; NULL when out of memory. */
char *val_json(const val_report *r);

/* The same report as Markdown for a review or a README: a table of the
 * rows (measured, predicted, signed error and its split), a table of the
 * per-source and overall medians, and the threshold lines. The caller
 * frees the string; NULL when out of memory. */
char *val_markdown(const val_report *r);
/* Whether every threshold above holds. */
bool val_pass(const val_report *r);

void val_fini(val_report *r);

#endif
