/* summary.h - the step's figures, and the JSON and text renderings of them.
 *
 * sum_build reads only the trace (and the program it refers to) plus the
 * per-rank state bytes the caller computed: step time, busy and exposed
 * time per kind of work, collectives per rank, memory per rank from the
 * allocation replay. The JSON keys are a stable interface (scenario checks
 * and users' CI read them): add keys, never rename or remove.
 *
 * Ownership: sum_build fills a caller-owned sum_report that owns one array
 * (sum_fini frees it). sum_json returns a string the caller frees with
 * free(). Rendering is deterministic: same report, same bytes.
 */
#ifndef SUM_SUMMARY_H
#define SUM_SUMMARY_H

#include <stdio.h>

#include "../mem/replay.h"
#include "../mem/states.h"
#include "../plan/spec.h"
#include "trace.h"

typedef struct sum_coll {
    uint64_t count, bytes;
    uint64_t phase_count[PROG_NPHASES], phase_bytes[PROG_NPHASES];
} sum_coll;

typedef struct sum_rank {
    st_bytes st;
    mem_rank mem;
    char peak_op[160]; /* name of the op at the peak, or "(step start)" */
    ss_bytes init_peak; /* set by the caller: model setup before the first step */
} sum_rank;

typedef struct sum_report {
    const spec_scenario *s;
    ss_ns step_ns;
    ss_ns compute_ns, comm_ns, overlap_ns, exposed_comm_ns, host_ns; /* rank 0 */
    ss_ns interference_ns; /* rank 0: compute time added by collectives beside it */
    /* rank 0: the host's time issuing device ops (op_host.us each), and the
     * compute stream's time idle because its next op was not issued yet
     * (its stream predecessor and its deps had ended): a launch-bound step
     * shows here */
    ss_ns issue_ns, host_wait_ns;
    /* rank 0: each stream's collectives while its compute stream is idle
     * (a period two streams share counts for both); 0 for streams that
     * carry none */
    ss_ns exposed_by_stream[PROG_NSTREAMS];
    sum_coll coll[PROG_NCOLLS]; /* rank 0, per step */
    uint32_t nranks;        /* ranks reported: every rank, or (a layout) those simulated */
    uint32_t nsim;          /* ranks simulated (the trace's) */
    sum_rank *ranks;
    uint64_t nops, nevents;
    /* set by the caller from the plan: the MFU convention's inputs */
    uint64_t tokens;        /* per rank per step */
    double flops_per_token; /* 6 N + 12 L H Q T (torchtitan) */
    double peak_flops;      /* the device's dense rate in the compute dtype */
    /* set by the caller from the plan: the model's parameters, every one
     * once (tied embeddings once), and those a token uses (MoE) */
    uint64_t parameters, active_parameters;
    bool moe;
    /* set by the caller under runtime.jitter: the step time of each sample
     * (owned; sum_fini frees it) */
    ss_ns *samples;
    uint32_t nsamples;
} sum_report;

/* st[0 .. nst): each reported rank's state bytes, nst >= the trace's
 * ranks; a rank past the trace's was folded away (prog.h) and reports rank
 * 0's simulation with its own states. The memory series is recorded for
 * rank 0, or every simulated rank with series_all (traces). Errors: memory
 * replay inconsistencies (SS_E_INTERNAL), a step that does not end in the
 * state it started from. */
int sum_build(const spec_scenario *s, const trc *t, const st_bytes *st, uint32_t nst,
              bool series_all, sum_report *out, ss_err *err);
void sum_fini(sum_report *r);

char *sum_json(const sum_report *r); /* NULL when out of memory */
/* The summary as the tree sum_json prints (caller: cJSON_Delete), for
 * readers that need no text: printing a large run's summary cost more than
 * checking its expectations. NULL when out of memory. */
struct cJSON;
struct cJSON *sum_tree(const sum_report *r);
/* No rank's allocator went over its capacity, nor reserved more than
 * sum_usable (the summary's memory.fits),
 * and the largest peak allocated / reserved over ranks (memory.max_peak_
 * allocated_bytes, .max_peak_reserved_bytes): for the reports that read a
 * run without its JSON (sweeps, validate, run's advice). */
bool sum_fits(const sum_report *r);
/* What a rank may reserve and still fit (memory.usable_bytes): the
 * allocator's capacity, or the device's CUDA total less the process reserve
 * when lower (docs/MEMORY.md). */
ss_bytes sum_usable(const sum_report *r);
/* The same from the scenario alone (UINT64_MAX: unlimited), for reports
 * on runs they hold no summary of (search's nearest miss). */
ss_bytes sum_usable_of(const spec_scenario *s);
/* Where the allocator replay runs out (mem_cfg.capacity): the usable bytes,
 * where cudaMalloc would refuse the process; 0 (unlimited) without a
 * capacity. */
ss_bytes sum_alloc_limit(const spec_scenario *s);
ss_bytes sum_max_peak(const sum_report *r);
ss_bytes sum_max_peak_reserved(const sum_report *r);
ss_bytes sum_max_init_peak(const sum_report *r); /* the model's setup, before the step */
void sum_text(const sum_report *r, FILE *f);
/* The pipeline bubble's share of the step, (pp - 1) / (v m + pp - 1) for
 * m micro-batches and v virtual stages; 0 without a pipeline (the
 * summary's layout.bubble_fraction_analytic). */
double sum_bubble_fraction(const spec_parallel *p, uint32_t m);
/* The tensors live at rank's allocated peak, by category: each category's
 * total, then its `top` largest tensors (0: all), largest first (equal
 * sizes in program order), and one line for the rest. The trace must be
 * the one the report was built from. */
void sum_ledger(const sum_report *r, const trc *t, uint32_t rank, uint32_t top, FILE *f);

#endif
