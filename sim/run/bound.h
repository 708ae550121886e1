/* bound.h - a lower bound on a program's step time: the step with free
 * communication.
 *
 * Evaluates the program under prog.h's execution rules (the host issues
 * ops in program order, a device op waits for its issue, for the op before
 * it on its stream (not on "p2p") and for its deps, a HOST op blocks the
 * host until its deps ended, a collective starts when every member of its
 * group reached the matching call) with every collective lasting zero
 * time, or, given the most bytes per second a rank can move in one
 * direction (the sum of its GPU's link bandwidths, before efficiency), the
 * least time its members' bytes take through their own links: a
 * collective over n ranks (the network's group) moves at least, through
 * some member's links, (n - 1) / n of the payload for all-gather (what each
 * receives), reduce-scatter, all-reduce and all-to-all (what each sends:
 * its share of every other rank's result must leave it), and the whole
 * payload for broadcast (a non-root receives it) and the point-to-point
 * kinds. Those rules make every start time the max of earlier ends plus
 * fixed durations (a max-plus system), which is monotone in each duration:
 * the engine runs the same rules with each collective lasting at least
 * that long (its flows cross the same links, at most at their bandwidth),
 * so each of its op ends is >= the one found here, and so is its step. The
 * bound keeps the pipeline's bubble, the dependency chains and the bytes
 * each rank must move; it drops latency, contention and the algorithms'
 * extra traffic.
 *
 * One pass over ops and deps (Kahn's order across ranks): O(ops + deps)
 * time and memory, no events, no network. A program in which some op could
 * never run is SS_E_DEADLOCK, as the engine would report it.
 *
 * Knows nothing of the scenario, memory or search policy.
 */
#ifndef RUN_BOUND_H
#define RUN_BOUND_H

#include "../core/err.h"
#include "../plan/prog.h"

/* *out: the step of p with each collective lasting its bytes' least time
 * through links of link_Bps bytes/s (0: free communication), <= the
 * engine's step of p on any network whose GPUs' links are no faster. */
int bound_step(const prog *p, double link_Bps, ss_ns *out, ss_err *err);

/* The least time of one collective (prog.h payload convention) over a
 * network group of n ranks with links of link_Bps (0: none). */
ss_ns bound_coll_ns(prog_coll coll, uint64_t bytes, uint32_t n, double link_Bps);

#endif
