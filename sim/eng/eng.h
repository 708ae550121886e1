/* eng.h - the discrete-event engine: runs a program, produces a trace.
 *
 * Input: a prog (plan/prog.h states the execution rules: host issue order,
 * device streams, event deps, collectives that start when every member of the
 * group reached them). Output: a trc (out/trace.h) with issue/start/end of
 * every op. The engine knows nothing of FSDP, of JSON, of memory policy.
 *
 * Collective durations come from the network through eng_net, called once
 * per collective instance at the moment it starts (all members arrived).
 * COMPUTE and HOST durations are in the program.
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

#include "../out/trace.h"
#include "../plan/prog.h"

/* The network as the engine sees it. coll_ns fills *out with the duration of
 * one collective of kind `coll` with payload `bytes` (prog.h convention) over
 * group `g`; returns SS_OK or an error. */
typedef struct eng_net {
    void *ctx;
    int (*coll_ns)(void *ctx, prog_coll coll, prog_group g, ss_bytes bytes,
                   ss_ns *out, ss_err *err);
} eng_net;

/* Run one step of `p`. On success *out is a new trace (caller frees with
 * trc_free); on failure *out is untouched. */
int eng_run(const prog *p, const eng_net *net, trc **out, ss_err *err);

#endif
