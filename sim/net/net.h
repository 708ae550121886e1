/* net.h - the network with contention: collectives as flows on the
 * machine graph, sharing links max-min fairly, behind eng_net.
 *
 * A collective instance, when all its members have arrived: the tuner
 * (algo.h) picks an algorithm and protocol by its time alone on the
 * machine (or the scenario forces them); the instance waits its latency,
 * then runs its phases one after another, each as one flow of flow.h. At
 * every instant at which flows start or end, once all of that instant's
 * events have run (eng_settle_at), the rates are re-solved (the components
 * that changed, flow.h) and every instance whose rate moved is
 * rescheduled, so concurrent TP, DP and EP traffic on one
 * NIC slows each other down exactly as max-min sharing predicts, and
 * collectives on disjoint links do not interact.
 *
 * Times are integer ns: an instance's end is rounded up to the next ns;
 * progress is carried in double bytes, brought up to date when the
 * instance's rate changes or it wakes. The tuner's choice is kept per
 * (group, collective) for the bytes it was made for. A group with copies
 * (prog.h) runs one flow that loads its copies' links too. Deterministic:
 * the same program gives the same trace.
 *
 * Shapes (usage vectors) are built once per (group, collective, algorithm)
 * and cached; a group's ranks are world ranks, rank r on the GPU the
 * topology's placement gives (spec_topo_gpu: GPU r where the job fills
 * whole nodes, else each node's first ranks_per_node GPUs). Links that every flow the program can start loads alike carry the
 * same constraint at every instant, so flows load one link of each such
 * class (a folded program: one copy's links), which changes no rate.
 * Owns its topology graph.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include "../eng/eng.h"
#include "algo.h"
#include "topo.h"

struct prof;

/* With a calibration profile, a collective whose (op, ranks, nodes) has a
 * measured curve keeps the tuner's algorithm and its flows, but takes the
 * curve's latency (alpha) and its time alone on the machine (the flows'
 * wire bytes are scaled so that their rate alone is the curve's): contention
 * then slows it from the measured time, not the modelled one. */
typedef struct net_opts {
    algo_kind algo;   /* ALGO_AUTO: the tuner's choice */
    algo_proto proto; /* ALGO_P_AUTO: the tuner's choice */
    /* NCCL_ALGO / NCCL_PROTO as lists (spec.h, spec_net_set_parse), with algo
     * or proto auto: the tuner chooses among these; 0: the topology's
     * (spec_topology.nccl_algos, nccl_protos), else every one */
    uint32_t algo_set, proto_set;
    const struct prof *profile; /* NULL: model defaults; must outlive the net */
    bool every_link;  /* solve on every link, without link classes (tests) */
    bool no_solo;     /* every collective a flow, none worked out alone (tests) */
    uint32_t nccl;    /* NCCL version (spec.h); 0: the topology's */
    uint32_t min_ctas; /* NCCL_MIN_CTAS; 0: NCCL's default */
    bool collnet;      /* NCCL_COLLNET_ENABLE (over the topology's) */
} net_opts;

typedef struct net net;

/* The options a scenario's network keys set (network.algo, proto,
 * nccl_version, nccl_min_ctas, collnet), with calibration profile pf
 * (NULL: none). */
net_opts net_opts_of(const spec_scenario *s, const struct prof *pf);

/* A network over the graph of t (graph form). */
int net_new(const spec_topology *t, const net_opts *o, net **out, ss_err *err);
void net_free(net *n);

const topo *net_topo(const net *n);

/* The engine's view of n for running p (whose group copies, prog.h, the
 * flows load too; p may be NULL: none); n and p must outlive the run. */
eng_net net_eng(net *n, const prog *p);

/* What one collective costs alone on the machine: the chosen algorithm and
 * protocol and its time. For `shardsim coll` and tests. */
typedef struct net_alone {
    algo_kind algo;
    algo_proto proto;
    ss_ns latency_ns;
    double time_s;
} net_alone;

/* ranks are world ranks, placed as the topology says (spec_topo_gpu). */
int net_coll_alone(net *n, prog_coll c, const uint32_t *ranks, uint32_t nranks, ss_bytes bytes,
                   net_alone *out, ss_err *err);

/* The links the run's flows can load, and of those the ones the flow
 * system solves on: one per class of links every flow loads alike (a
 * folded program's copies, net.c); both 0 before the first collective and
 * where there are no classes (every link solved). For tests and benches. */
void net_link_classes(const net *n, uint32_t *loaded, uint32_t *solved);

/* Collectives started and flows re-solved since net_new; for benches. */
uint64_t net_solves(const net *n);

#endif
