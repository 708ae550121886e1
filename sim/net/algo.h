/* algo.h - collective algorithms as flows on the machine graph, and the
 * rule that picks one.
 *
 * An algorithm turns a collective over a group of GPUs into phases; each
 * phase is one flow (flow.h) whose usage vector says how many bytes cross
 * each link per byte of the collective's payload (the nccl-tests "size",
 * prog.h convention), so a phase alone on the machine takes
 * payload / min_l(cap_l / w_l) and its rate is directly the algorithm
 * bandwidth (algbw). Phases run one after another; before the first, the
 * collective pays its latency. Vectors are for the whole group at once.
 *
 *   ring  all-gather / reduce-scatter: each ring edge carries (n-1)/n,
 *         all-reduce 2(n-1)/n, broadcast 1 (a pipelined chain from the
 *         root). Ranks in ascending order; an edge between nodes is split
 *         evenly over the NICs of the members on each node (NCCL's
 *         channels leave a node through different members; see NIC
 *         locality below). Inside one node on a direct GPU mesh, the data is split over
 *         every Hamiltonian cycle of the mesh in both directions (NCCL's
 *         rings cover all NVLinks).
 *   tree  all-reduce across nodes: NCCL's double binary tree over the
 *         nodes (each tree half the data, up and down), a chain inside each
 *         node; tree bandwidth x 0.9 as in NCCL's model.
 *   nvls  all-reduce inside a node with an NVLS NVSwitch: each GPU's link
 *         to the switch carries 1 + 1/n each way (reduce-load, then
 *         multicast store of its slice), at the switch's reduction rate:
 *         0.85 of the link's on Hopper, 0.74 on Blackwell (NCCL's
 *         nvlsEfficiency).
 *   nvls_tree  all-reduce across nodes with NVLS inside them: NVLS in each
 *         node, and per local rank a double binary tree over the nodes on
 *         its own rail carrying 1/ppn of the payload (NCCL's NVLS_TREE).
 *   hier  all-reduce / all-gather / reduce-scatter across nodes in two
 *         levels: inside nodes, then across nodes per local rank on its own
 *         rail, then inside nodes again (reduce-scatter, all-reduce,
 *         all-gather for all-reduce).
 *   direct all-to-all: every pair, 1/n of the payload each way; send_recv:
 *         each member to the next, the whole payload; gather and scatter
 *         (nccl-tests'): every member to or from the root (the first), 1/n.
 *   ring reduce (nccl-tests'): broadcast's chain turned round into the root.
 *   pat   all-gather / reduce-scatter over one GPU per node (NCCL 2.23+'s
 *         Parallel Aggregated Trees): log2(nodes) exchanges at doubling
 *         distances, each rank's NIC moving the ring's (n-1)/n, so the
 *         ring's usage; NCCL's latency (8 us + log2(nodes) x 4 us + 2.8 us
 *         per rank) and bandwidth factor (0.85 in 2.23, 0.75 after).
 *   collnet all-reduce across nodes in the fabric's switches (NCCL's
 *         CollNet Direct over SHARP; only where enabled on a fabric whose
 *         switches reduce: topo_collnet): inside each node a direct
 *         reduce-scatter and all-gather, 2/ppn between every two members;
 *         each member's NIC carries 1/ppn up and 1/ppn down whatever the
 *         node count; bandwidth x 0.85 from compute capability 9.0.
 *
 * NIC locality. Each member uses its local NICs (topo_local_nics: the
 * fewest links away without passing another GPU), shared with the other
 * members local to the same NICs, ceil(NICs / those members) each (NCCL's
 * ncclTopoGetLocalNet); GPUs outside the group count for nothing. Ring and
 * tree edges between nodes spread over the NICs of all the members of both
 * nodes, a channel per NIC, received on the same rail where the other node
 * has it. Point-to-point edges (direct, and the per-rail trees and rings
 * of nvls_tree and hier) leave through the sender's own NICs, or on a
 * rail-optimized fabric through the member of the sender's node that owns
 * the receiver's rail (PXN, members only); else they cross the spine.
 *
 * Point-to-point channels (direct across nodes). NCCL 2.29 runs each
 * network peer of a send, receive or all-to-all on a few channels, each
 * moving about 14 GB/s (NCCL_P2P_PER_CHANNEL_NET_BW), and halves the count
 * per peer while peers per batch of 8 x channels per peer exceed the
 * communicator's p2p channels (src/graph/paths.cc,
 * ncclTopoComputeP2pChannels). Those are its ring channels rounded up to a
 * power of 2: on Hopper across nodes 4 per search channel, a search channel
 * per member GPU of a node (one 48 GB/s channel per GPU, its PCIe link) up
 * to the node's NICs, not doubled past 16 (src/graph/connect.cc). So a
 * peer gets k = max(1, pow2Down(P / ceil(n / 8))) channels, and the edge
 * at most k x 14 GB/s: 10 ranks at one GPU per node get 2 (28 GB/s), 80 at
 * eight get 1. Before 2.20 every network peer gets 2; 2.20-2.28 halve
 * the 2 while 2n > 4P. The 4 compute channels per search channel are
 * Hopper's (and Blackwell's from 2.25); Ampere and older get 2. The cap
 * on the edge's rate rides on the whole collective (peer_cap, a flow rate
 * cap); it binds only when below the NICs' rate.
 *
 * NVLS switch rate. NVLS's traffic on a GPU's links is (1 + 1/n) of the
 * payload each way (the reduce of its shard and the multicast of all),
 * at NCCL's nvlsEfficiency of the link rate: its bus bandwidth grows with
 * n as 2(n - 1)/(n + 1), as H100 measures between 4 and 8 GPUs. Blackwell
 * NVSwitches measure the same bus bandwidth, ~840 GB/s, for 8 GPUs (a DGX
 * B200) and for 72 (a GB200 NVL72 rack), where the links would give 847
 * and 1,056: the switch, not the link, sets it there. A topology names
 * that rate on its NVSwitch group ("nvls_GBps"); NVLS's algbw is then at
 * most it x n / (2(n - 1)) (a flow rate cap, as the channel caps below).
 *
 * Channel caps (ring and tree across nodes). A channel is one CTA moving
 * one slice of the collective; NCCL's tuner caps what a channel carries by
 * protocol and architecture (src/graph/tuning.cc, 2.19 to 2.30, bus
 * bandwidth per channel, indexed 1 node / 2 nodes / more): ring LL128
 * Ampere 20, Hopper 36.7, Blackwell 40 GB/s; tree LL128 Ampere 20, Hopper
 * 36.7 / 36.7 / 29.0, Blackwell 55.6 / 31.67 / 20; tree all-reduce, every
 * protocol, Ampere 24 / 23.6 / 17.8, Hopper 38.7 / 41.4 / 36, Blackwell
 * 70 / 42.8 / 24 (Volta as Ampere's LL128, tree 26.5 / 18.5 / 10). Across
 * nodes a channel leaves through one NIC, so a node's members' NICs count
 * the channels (NCCL's search channels, one per NIC); the cap, in bus
 * bandwidth, becomes the collective's algbw ceiling (ring: x n / (2(n-1))
 * for all-reduce, x n / (n-1) for all-gather and reduce-scatter; tree: x
 * 1/2, as NCCL converts). Simple rings are capped by their CTAs (next);
 * a device file without compute_capability gets none.
 *
 * Ring CTAs across nodes. A Simple ring across nodes runs one CTA per
 * execution channel, and a CTA moves a bounded rate however fast the NICs
 * are: NCCL's search gives one channel per NIC of the node's members
 * (ncclTopoDupChannels doubles them at 25 GB/s or more per channel, unless
 * past Ampere with more than 4 under 50 GB/s: a node with 8 x 400 Gb/s
 * NICs keeps 8, one with 4 gets 8), connecting them doubles them again
 * (ncclTopoPostset, at most MAXCHANNELS: 32 up to NCCL 2.24, 64 from
 * 2.25), and NCCL_MIN_CTAS raises the count to at most MAXCHANNELS
 * (copyChannels; a scenario's network.nccl_min_ctas, coll's --min-ctas).
 * The ring's bus bandwidth is then at most CTAs x the CTA's rate: 16 x 20
 * GB/s = 320 GB/s on an
 * eight-GPU H100 node with 8 NICs, below the NICs' 400 GB/s, which is
 * what those nodes measure (nccl-tests across 4 to 10 such nodes: 320-330
 * GB/s busbw at 4-17 GB; with NCCL_MIN_CTAS=24, 390). The CTA's rate is
 * the topology's "nccl_ring_cta_GBps", else the architecture's: Hopper
 * 20 GB/s, fitted to the corpus with leave-one-source-out cross-validation
 * (tests/e2e/ring-cta-fit.sh, DECISIONS.md 161); other architectures have
 * no measurement and no cap (a topology's rate applies to any device).
 * Nodes with 4 or fewer NICs per 8 GPUs, or one GPU per node, get 4 CTAs
 * a NIC or more and stay NIC-bound.
 *
 * Latency follows NCCL's tuning model (src/graph/tuning.cc): a base per
 * algorithm and protocol plus a per-step cost by hardware (NVLink, PCIe,
 * network), with NCCL's step counts, plus the wire latency of the longest
 * path an edge takes. Protocols scale the bytes on the wire: LL carries
 * 8 bytes of flags per 8 of data and runs on few threads (NCCL: 1/4 of the
 * bandwidth for all-reduce or across nodes, 1/3 otherwise), LL128 loses
 * 8 of every 128 bytes (0.92), Simple none.
 *
 * Pipeline fill (tree all-reduce across nodes). A tree moves its data in
 * chunks, each reduced up a node's chain of GPUs and the tree over the
 * nodes, then broadcast down again, so the last chunk leaves (hops - 1)
 * chunk times after the first: hops = 2 (ppn - 1) + 2 ceil(log2 nodes)
 * (NCCL's tree latency counts the same steps). A flow model charges the
 * bytes once, at the bottleneck rate; NCCL's tuner does too ("waiting for
 * proper chunk modeling", src/graph/tuning.cc). The chunk is NCCL's own
 * (src/enqueue.cc, calcCollChunking, 2.19 to 2.29): LL128's 576,000 data
 * bytes halved while bytes / (channels x chunk) < nsteps x 64 / ppn and
 * above 128 KiB, then while < nsteps x 16 / ppn and above 32 KiB, nsteps =
 * 1 + floor(log2(nodes)) + ppn / 10; Simple's 512 KiB step; never more than a
 * channel's share of the bytes. Channels: the communicator's (the ring
 * CTAs below), fewer while bytes < channels x threads x NCCL's per-thread
 * threshold (topoGetAlgoInfo). A hop moves at NCCL's per-channel tree
 * rate (the channel caps below, algbw = bus bandwidth / 2). So 16 MiB over
 * two 8-GPU H100 nodes pays 15 x 72,000 B / 18.35 GB/s = 59 us on top of
 * its latency. The tuner chooses without it, as NCCL's does; LL (no
 * chunking rule, and the small sizes NCCL's latencies were measured at)
 * pays none. tree_fill in tests/unit/test_net.c works the cases by hand.
 *
 * Network steps. NCCL's network step constants were measured where the
 * net plugin reports no latency (InfiniBand). A fabric may give its own
 * step latency (spec_fabric.step_us, step_simple_us): it replaces NCCL's
 * constant in the time of every algorithm crossing nodes (PAT's at a
 * 3.5th, as NCCL divides that step). And the plugin's reported latency
 * (spec_fabric.reported_us) is what NCCL's tuner adds to every network step
 * when it chooses, twice with Simple (tuning.cc, latencyInter): it is in
 * algo_cost.tune_s, which the tuner compares, never in the time.
 *
 * NCCL versions. The topology's version (topo_nccl: the topology file's
 * nccl_version, a scenario's network.nccl_version or coll's --nccl-version
 * over it) decides which algorithms exist: nvls from 2.17, nvls_tree from
 * 2.18, pat from 2.23 (NCCL_PAT_ENABLE's default: one GPU per node only);
 * and the channels per network peer of point-to-point operations (rules
 * of 2.19, 2.20-2.28 and 2.29: "Point-to-point channels").
 *
 * algo_choose is the tuner: among the algorithm and protocol pairs that
 * apply (or the forced ones; hier only when forced, as NCCL has no such
 * algorithm: across nodes all_gather and reduce_scatter run rings,
 * all_reduce ring, tree or nvls_tree), the least time alone on the machine, like
 * NCCL's. Ties go to the earlier pair in list order. Pure; the usage
 * vectors are built into caller-owned algo_shape values so callers can
 * cache them per group.
 */
#ifndef NET_ALGO_H
#define NET_ALGO_H

#include "../plan/prog.h"
#include "flow.h"
#include "topo.h"

/* The lists are the scenario's (plan/spec.h), so names cannot drift. */
#define ALGO_KINDS SPEC_NET_ALGOS
#define ALGO_PROTOS SPEC_NET_PROTOS
#define ALGO_ENUM_(id, name) ALGO_##id,
typedef enum { ALGO_KINDS(ALGO_ENUM_) ALGO_NKINDS } algo_kind;
#undef ALGO_ENUM_
#define ALGO_ENUM_(id, name) ALGO_P_##id,
typedef enum { ALGO_PROTOS(ALGO_ENUM_) ALGO_NPROTOS } algo_proto;
#undef ALGO_ENUM_
extern const char *const algo_kind_names[ALGO_NKINDS];
extern const char *const algo_proto_names[ALGO_NPROTOS];

#define ALGO_MAX_PHASES 3

/* The usage vectors of one algorithm over one group, for any payload. */
typedef struct algo_shape {
    algo_kind algo;
    uint32_t nphase;
    flow_use *use[ALGO_MAX_PHASES]; /* owned */
    uint32_t nuse[ALGO_MAX_PHASES];
    uint32_t steps_intra, steps_inter; /* NCCL's step counts for latency */
    ss_ns wire_ns;                     /* longest path latency of one step */
    bool inter;                        /* the group spans nodes */
    double peer_cap;   /* direct across nodes: the most payload bytes/s the
                          per-peer network channels carry (see "Point-to-point
                          channels" above); 0: no cap */
    uint32_t channels; /* across nodes: the NICs one node's members use, a
                          ring or tree channel each (see "Channel caps") */
    uint32_t nodes;    /* nodes the group spans */
} algo_shape;

/* One collective's costed choice. */
typedef struct algo_cost {
    algo_kind algo;
    algo_proto proto;
    ss_ns latency_ns;
    double wscale;          /* wire bytes per payload byte of the usage vectors */
    double iso_s;           /* time alone on the machine, seconds */
    double tune_s;          /* what NCCL's tuner compares: iso_s plus the net
                               plugin's reported latency per network step
                               (see "Network steps" above) */
    double iso_rate[ALGO_MAX_PHASES]; /* algbw of each phase alone, bytes/s */
    double wire_cap;        /* the flow's ceiling in usage-vector bytes/s (the
                               rate cap is wire_cap / wscale): the direct
                               peers' channels or the channel caps; 0: none */
} algo_cost;

/* Build the shape of `algo` for collective `c` over GPUs ranks[0..n)
 * (ascending, n >= 2). SS_E_INPUT when the algorithm does not apply to
 * this collective or group (the message says why), SS_E_NOMEM. On error
 * *out needs no algo_shape_fini. */
int algo_shape_build(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                     algo_kind algo, algo_shape *out, ss_err *err);
void algo_shape_fini(algo_shape *s);

/* A map by link the builder may use in place of a hash table: a caller
 * that builds many shapes on one topology (the network, every copy of
 * every group) keeps one. Between builds every entry is 0. */
typedef struct algo_scratch {
    uint32_t *pos[ALGO_MAX_PHASES]; /* owned, topo_nlinks entries each */
    uint32_t nlinks;
} algo_scratch;
int algo_scratch_init(algo_scratch *sc, const topo *g, ss_err *err);
void algo_scratch_fini(algo_scratch *sc);
/* algo_shape_build with a scratch map (NULL: none); the same shape. */
int algo_shape_build_in(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                        algo_kind algo, algo_scratch *sc, algo_shape *out, ss_err *err);

/* send_recv, send_up, send_down: point to point, run by direct only. */
bool algo_is_p2p(prog_coll c);
/* Whether the tuner may pair `algo` with protocol p: NVLS and NVLS_TREE
 * run Simple only (NCCL, src/graph/tuning.cc, ncclTopoTuneModel since
 * 2.17: "if ((a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE) && p !=
 * NCCL_PROTO_SIMPLE) continue;"). A forced protocol is the user's. */
bool algo_proto_tunable(algo_kind algo, algo_proto p);
/* Whether `algo` applies to c over the group (no error message). */
bool algo_applies(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n, algo_kind algo);

/* Cost of a built shape with protocol p for `bytes` of payload, alone. */
algo_cost algo_cost_of(const topo *g, const algo_shape *s, prog_coll c, uint32_t n,
                       algo_proto p, ss_bytes bytes);

/* The pipeline fill of a tree all-reduce across nodes (see "Pipeline
 * fill"), ns: 0 for every other collective, algorithm and LL. The tuner
 * chooses without it, as NCCL's does; the chosen collective pays it. */
ss_ns algo_fill_ns(const topo *g, const algo_shape *s, prog_coll c, algo_proto p,
                   ss_bytes bytes);

/* The CTAs (execution channels) a ring across nodes runs, for a node
 * whose members use `channels` NICs (see "Ring CTAs across nodes"). */
uint32_t algo_ring_ctas(const topo *g, uint32_t channels);
/* One CTA's bus bandwidth on a Simple ring across nodes, bytes/s: the
 * topology's, else the architecture's (none without a compute capability
 * or before Volta); 0: none known, no cap. */
double algo_ring_cta_Bps(const topo *g);

/* NCCL's channels per network peer of a point-to-point operation over n
 * ranks on two or more nodes, at most ppn of them on one node (see
 * "Point-to-point channels"); at least 1. */
uint32_t algo_p2p_peer_channels(const topo *g, uint32_t n, uint32_t ppn);

/* The algorithms the tuner tries for c over the group (hier only when
 * forced, so not here), in tuner order; the count is returned. */
uint32_t algo_candidates(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                         algo_kind out[ALGO_NKINDS]);

#endif
