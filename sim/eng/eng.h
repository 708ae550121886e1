/* eng.h - the discrete-event engine: runs a program, produces a trace.
 *
 * Input: a prog (plan/prog.h states the execution rules: host issue order,
 * device streams, event deps, collectives that start when every member of the
 * group reached them). Output: a trc (out/trace.h) with issue/start/end of
 * every op. The engine knows nothing of FSDP, of JSON, of memory policy.
 *
 * Collective durations come from the network through eng_net: fixed when
 * the instance starts (all members arrived), or driven by the network's
 * wake requests when it models shared links. COMPUTE and HOST durations are
 * in the program.
 *
 * Determinism: events are ordered by (time, class, sequence) in eq.h; no
 * iteration depends on addresses or hash order. Same prog, same trace.
 *
 * Errors: a program in which some op can never run (a dependency cycle
 * through streams, a collective some member never calls) is reported as
 * SS_E_DEADLOCK naming the first stuck op; no trace is returned then.
 */
#ifndef ENG_H
#define ENG_H

#include <stdbool.h>

#include "../out/trace.h"
#include "../plan/prog.h"

/* Wake requests a dynamic network makes: "call wake for instance id at t".
 * A later request for the same id replaces the earlier one. */
typedef struct eng_wakes eng_wakes;
int eng_wake_at(eng_wakes *w, uint32_t id, ss_ns t, ss_err *err);
/* "Call settle at t once every other event at t has run": a network that
 * re-solves its rates once per instant instead of once per change (many
 * collectives start and end at the same ns). Requests for one t merge;
 * at most one settle is pending at a time (a request for another t while
 * one is pending is an internal error: the network asks again only after
 * its settle ran). */
void eng_settle_at(eng_wakes *w, ss_ns t);

/* The network as the engine sees it, in one of two forms.
 *
 * Fixed durations (start == NULL): coll_ns fills *out with the duration of
 * one collective of kind `coll` with payload `bytes` (prog.h convention)
 * over group `g`, asked once when all members have arrived.
 *
 * Dynamic (start != NULL), for networks whose durations change while a
 * collective runs (shared links): start is called when all members of
 * instance `id` (dense over the run, stable for its lifetime) have arrived,
 * at `now`; the network then asks to be woken through eng_wake_at, and
 * wake is called at the requested time, setting *done when the instance
 * has finished at `now`. Either call may (re)schedule any instance. Group
 * `gid` is the program's group id, for caches keyed by group. A dynamic
 * network that calls eng_settle_at must set settle: it runs after every
 * other event at its instant (EQ_CLS_SETTLE) and may wake instances too;
 * no time passes between a request and its settle. */
typedef struct eng_net {
    void *ctx;
    int (*coll_ns)(void *ctx, prog_coll coll, prog_group g, ss_bytes bytes,
                   ss_ns *out, ss_err *err);
    int (*start)(void *ctx, uint32_t id, prog_coll coll, prog_group g, uint32_t gid,
                 ss_bytes bytes, ss_ns now, eng_wakes *w, ss_err *err);
    int (*wake)(void *ctx, uint32_t id, ss_ns now, bool *done, eng_wakes *w,
                ss_err *err);
    int (*settle)(void *ctx, ss_ns now, eng_wakes *w, ss_err *err);
    /* Interference: while any collective of a rank runs (from its start,
     * every member arrived, to its end), the COMPUTE op on that rank's
     * compute stream progresses 1 / (1 + overlap_slowdown) as fast: NCCL's
     * kernels hold SMs and HBM bandwidth the compute kernel would use. The
     * op's dev_ns is its work alone; its trace record holds the stretched
     * end. 0: no interference (the op lasts dev_ns). */
    double overlap_slowdown;
} eng_net;

/* Run one step of `p`. On success *out is a new trace (caller frees with
 * trc_free); on failure *out is untouched. */
int eng_run(const prog *p, const eng_net *net, trc **out, ss_err *err);

/* What a run cost the engine, for benchmarks. peak_bytes: the most bytes
 * the engine held at once for its own state (per-op, per-rank and
 * per-group arrays, the event queue, wake requests), counted by the engine
 * as it allocates; the trace it returns (trace.h) is not included. */
typedef struct eng_stats {
    uint64_t events;     /* events processed (trc.nevents) */
    uint64_t peak_bytes;
    uint64_t queue_peak; /* most events pending at once */
} eng_stats;

/* eng_run that also fills *st (if st is not NULL) on success; the trace is
 * the same as eng_run's. */
int eng_run_stats(const prog *p, const eng_net *net, trc **out, eng_stats *st, ss_err *err);

#endif
