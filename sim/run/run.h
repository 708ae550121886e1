/* run.h - one simulated step, end to end: spec -> plan -> program ->
 * engine -> trace -> summary.
 *
 * The only place that knows the order of the stages; the CLI, the tests and
 * (later) sweeps call it. Every stage's output is kept in the result so
 * reports that need more than the summary (timelines, traces, ledgers) can
 * read it.
 *
 * Ownership: run_step fills *out (release with run_fini, which also accepts
 * a zeroed result); on failure *out is left zeroed and nothing leaks. The
 * spec must outlive the result.
 */
#ifndef RUN_H
#define RUN_H

#include "../out/summary.h"
#include "../plan/plan.h"

/* Wall time of each stage, for --timing and benches (never in a summary:
 * summaries are the same bytes on every run). */
enum { RUN_T_BUILD, RUN_T_SIMULATE, RUN_T_SUMMARY, RUN_T_N };

typedef struct run_result {
    plan *pl;
    prog *p;
    trc *t;
    st_bytes *st; /* per rank */
    sum_report sum;
    double wall_s[RUN_T_N]; /* plan and program; engine and network; states, memory, summary */
} run_result;

/* Options a report needs from the run; NULL means the defaults (zeros). */
typedef struct run_opts {
    bool series_all; /* memory series of every rank, not only rank 0 */
} run_opts;

int run_step(const spec_scenario *s, const run_opts *o, run_result *out, ss_err *err);
/* Seconds on the monotonic clock: what wall_s is measured with. */
double run_wall_s(void);
void run_fini(run_result *r);

#endif
