/* least.h - each collective's least time in a scenario's network: the
 * bound_net (bound.h) of the search's step bound.
 *
 * The engine's network gives a collective over group g of `bytes`:
 * - on a flat topology (no graph), the ring alpha-beta duration of
 *   net/cost.h, whatever else runs: that is its least time;
 * - on a graph, its latency, then each phase as a flow whose rate max-min
 *   sharing can only lower below the rate the flow has alone on the
 *   machine (more flows only take capacity; a group's copies only add
 *   links). So it lasts at least the tuner's time alone (net_coll_alone:
 *   the least over the algorithms and protocols the tuner may pick, with a
 *   calibration profile's curves where the scenario names one), less the
 *   engine's end tolerance (a flow ends within 1 byte and 1 ppb of its
 *   payload) and the rounding of ns.
 * Each is at least bound_coll_ns at the GPU's own link bandwidth where the
 * graph is modelled (no profile). Times are kept per (group, collective)
 * for the last payload, as the engine's tuner keeps its choice.
 *
 * Ownership: least_new copies nothing of s or p, which must outlive it; it
 * owns its network and profile.
 */
#ifndef RUN_LEAST_H
#define RUN_LEAST_H

#include "../plan/spec.h"
#include "bound.h"

typedef struct least least;

int least_new(const spec_scenario *s, const prog *p, least **out, ss_err *err);
void least_free(least *l);

/* The bound_net over l (valid while l lives). */
bound_net least_net(least *l);

#endif
