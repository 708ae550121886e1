/* cost.h - the first network model: ring alpha-beta with bus factors.
 *
 * time = steps * latency + bytes * factor / bus_bw, where bytes follows the
 * prog.h payload convention (nccl-tests "size") and factor is nccl-tests'
 * bus factor: (N-1)/N for all-gather, reduce-scatter and all-to-all,
 * 2(N-1)/N for all-reduce, 1 for broadcast and send_recv. steps is the ring's step count
 * (N-1, or 2(N-1) for all-reduce). A group inside one node uses the
 * topology's intra-node level, a group spanning nodes the inter-node level
 * (its bottleneck). A group of one rank costs nothing.
 *
 * Replaced by the topology graph and per-algorithm models (issue 3) behind
 * the same eng_net interface; the bus factors stay as the way sizes are
 * reported. Knows nothing of FSDP; pure arithmetic.
 */
#ifndef NET_COST_H
#define NET_COST_H

#include "../eng/eng.h"
#include "../plan/spec.h"

typedef struct cost_net {
    const spec_topology *topo;
} cost_net;

/* nccl-tests bus factor of `coll` over n ranks. */
double cost_bus_factor(prog_coll coll, uint32_t n);

/* Duration of one collective (see above). */
int cost_coll_ns(const spec_topology *t, prog_coll coll, prog_group g,
                 ss_bytes bytes, ss_ns *out, ss_err *err);

/* An eng_net backed by cost_coll_ns; `c` must outlive the engine run. */
eng_net cost_eng_net(cost_net *c);

#endif
