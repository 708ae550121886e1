/* bound.h - a lower bound on a program's step time: the step with each
 * collective at its least time.
 *
 * Evaluates the program under prog.h's execution rules (the host issues
 * ops in program order, a device op waits for its issue, for the op before
 * it on its stream (not on "p2p") and for its deps, a HOST op blocks the
 * host until its deps ended, a collective starts when every member of its
 * group reached the matching call) with every collective lasting a least
 * time the caller gives (bound_net): zero (free communication); or, given
 * the most bytes per second a rank can move in one direction (the sum of
 * its GPU's link bandwidths, before efficiency), the least time its
 * members' bytes take through their own links (bound_links): a collective
 * over n ranks (the network's group) moves at least, through some member's
 * links, (n - 1) / n of the payload for all-gather (what each receives),
 * reduce-scatter, all-reduce and all-to-all (what each sends: its share of
 * every other rank's result must leave it), and the whole payload for
 * broadcast (a non-root receives it) and the point-to-point kinds; or the
 * network model's own time for the collective alone on the machine, which
 * contention can only lengthen (the search's checks, search.c). Those rules
 * make every start time the max of earlier ends plus fixed durations (a
 * max-plus system), which is monotone in each duration: the engine runs
 * the same rules with each collective lasting at least that long, so each
 * of its op ends is >= the one found here, and so is its step. The bound
 * keeps the pipeline's bubble, the dependency chains and each collective's
 * own cost; it drops contention between collectives and compute slowed by
 * collectives beside it.
 *
 * One rank per program. Ranks that share a program (prog_rank_share: a
 * layout's ranks of one stage) reach every op at the same time when each
 * group an evaluated rank calls holds, for each member outside the
 * evaluated ranks, the rank whose program it shares, and the renamed
 * groups' least times equal their sources' (a layout's groups are
 * translates): the times that copy the sources' satisfy every rule (a
 * member's arrival is its source's, at the same op), and the rules have
 * one solution. So only the ranks that share nobody's program are
 * evaluated, and a collective waits for its evaluated members; where a
 * group breaks that condition every rank is. Were a renamed group slower,
 * the result would still be a lower bound: it drops arrivals and costs a
 * collective at its source group's time, and max-plus times only fall
 * when constraints are dropped or durations shortened. On the 5T MoE at
 * 4,096 GPUs that is one rank of 256 per stage. (The engine cannot fold
 * so: under contention the renamed groups' flows need not finish with the
 * source's, e.g. the 5T torus's context-parallel copies, 69 us apart over
 * a 271 s step.)
 *
 * One pass over the evaluated ranks' ops and deps (Kahn's order across
 * ranks): O(ops + deps) time and memory plus one net->coll_ns per
 * collective instance, no events. A program in which some op could never
 * run is SS_E_DEADLOCK, as the engine would report it.
 *
 * Knows nothing of the scenario, memory or search policy.
 */
#ifndef RUN_BOUND_H
#define RUN_BOUND_H

#include "../core/err.h"
#include "../plan/prog.h"

/* The least time a collective can take: coll over the program's group gid
 * (g: its network group, world ranks) moving `bytes` (the smallest payload
 * any member gives), <= what the engine's network would give it under any
 * contention. SS_OK, or an error that bound_step returns. */
typedef struct bound_net {
    int (*coll_ns)(void *ctx, prog_coll coll, uint32_t gid, prog_group g, uint64_t bytes,
                   ss_ns *out, ss_err *err);
    void *ctx;
} bound_net;

/* *out: the step of p with each collective lasting net's least time (NULL:
 * free communication), <= the engine's step of p on any network for which
 * net's times are least times. */
int bound_step(const prog *p, const bound_net *net, ss_ns *out, ss_err *err);
/* The same evaluated on every rank (see "One rank per program" above); for
 * tests. */
int bound_step_every_rank(const prog *p, const bound_net *net, ss_ns *out, ss_err *err);

/* The least time of one collective (prog.h payload convention) over a
 * network group of n ranks with links of link_Bps (0: none). */
ss_ns bound_coll_ns(prog_coll coll, uint64_t bytes, uint32_t n, double link_Bps);

/* A bound_net of bound_coll_ns at *link_Bps (which must outlive it): least
 * times on any network whose GPUs' links are no faster. */
bound_net bound_links(const double *link_Bps);

#endif
