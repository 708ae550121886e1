/* topo.h - the machine as a graph of directed links, and routes over it.
 *
 * Built once from a graph-form spec_topology (io/machine.h): the node's
 * vertex and link groups are instantiated per node; the fabric (star, fat
 * tree, 2D torus) joins the nodes' NICs. Every physical link is two
 * directed links, each with its own capacity (bandwidth x efficiency, the
 * rate a long transfer reaches) and latency. Link ids are dense: node n's
 * links are [n * L, (n + 1) * L) for the node's L links, fabric links
 * follow. Ranks are GPUs: GPU g is local GPU g % gpus_per_node of node
 * g / gpus_per_node (the placement of the parallel layout maps ranks onto
 * GPUs before the network sees them).
 *
 * Routes are deterministic. Inside a node: the cheapest path by sum of
 * 1 / capacity (so NVLink is preferred to PCIe, and a GPU reaches a far
 * NIC through its NVLink peer, as NCCL's PXN does), ties broken by vertex
 * order; precomputed for every pair of the node's vertices. Across nodes:
 * source GPU to the chosen NIC (rail), the fabric, the peer NIC to the
 * destination GPU. Fat tree: NIC, leaf, [leaf uplink, core, leaf
 * downlink], leaf, NIC; the core is one non-blocking stage (ideal ECMP),
 * so oversubscription shows up as the leaf uplink's capacity. Torus:
 * dimension order, x then y, the shorter way round (ties: increasing).
 *
 * Memory: O(nodes x links per node) for the links, O(V^2) per node
 * template for the routing table. The graph is immutable after topo_new
 * and may be shared by threads.
 */
#ifndef NET_TOPO_H
#define NET_TOPO_H

#include <stdbool.h>

#include "../core/err.h"
#include "../plan/spec.h"

#define TOPO_PATH_MAX 1024 /* links in one route */

typedef struct topo topo;

/* Build the graph of t (which must be graph-form: t->graph). Errors: a node
 * whose GPUs cannot reach each other or their NICs (named), too many links,
 * out of memory. */
int topo_new(const spec_topology *t, topo **out, ss_err *err);
void topo_free(topo *g);

uint32_t topo_ngpus(const topo *g);
uint32_t topo_nodes(const topo *g);
uint32_t topo_gpus_per_node(const topo *g);
uint32_t topo_nics_per_node(const topo *g);
uint32_t topo_nlinks(const topo *g);
uint32_t topo_node_of(const topo *g, uint32_t gpu);

/* Capacity (bytes/s), latency and kind of directed link l. */
double topo_link_Bps(const topo *g, uint32_t l);
ss_ns topo_link_latency(const topo *g, uint32_t l);
spec_lkind topo_link_kind(const topo *g, uint32_t l);
/* Bytes on link l per byte a NIC moves (GPUDirect RDMA) over it: above 1
 * on a PCIe link whose efficiency is above NCCL's rate for its lanes
 * (topo.c, GDR_PCIE_FRACTION), else 1. A cross-node route's legs inside
 * the nodes carry this weight; copies inside a node do not. */
double topo_link_net_weight(const topo *g, uint32_t l);
/* "node1.gpu3->nvswitch[0]", "leaf[2]->core"; returns buf. */
const char *topo_link_name(const topo *g, uint32_t l, char *buf, size_t n);

/* True when every GPU of a node has a link to one NVLS-capable NVSwitch
 * group (NVLink SHARP reductions are possible inside a node). */
bool topo_has_nvls(const topo *g);
/* True when every GPU of a node links to one NVSwitch group. */
bool topo_has_nvswitch(const topo *g);
/* True when NCCL's CollNet may run: enabled (spec_topology.collnet,
 * NCCL_COLLNET_ENABLE) on a fabric whose switches reduce (fabric.sharp). */
bool topo_collnet(const topo *g);
/* That switch group's NVLS bus bandwidth per GPU (its "nvls_GBps"), bytes/s;
 * 0: none given (only the links bound NVLS). */
double topo_nvls_Bps(const topo *g);
/* The NCCL version the collectives run (spec.h's code; the default when
 * the topology and the options name none). */
uint32_t topo_nccl(const topo *g);
/* The GPUs' CUDA compute capability x 10 (the device file's; 0: not given). */
uint32_t topo_cc(const topo *g);
/* The topology's "nccl_ring_cta_GBps" in bytes/s; 0: none given. */
double topo_ring_cta_Bps(const topo *g);
/* NCCL_MIN_CTAS of the run (net_opts, a scenario's network.nccl_min_ctas);
 * 0: NCCL's default. */
uint32_t topo_min_ctas(const topo *g);
/* What a network step costs on the fabric (spec.h, spec_fabric): the
 * latency NCCL's net plugin reports, us (0: none), and a step's own
 * latency for the protocol, us (0: NCCL's constants for it). */
double topo_net_reported_us(const topo *g);
double topo_net_step_us(const topo *g, bool simple);
/* A NIC port's nominal rate per direction (the fabric's GBps, before its
 * efficiency: the speed NCCL reads off the NIC), bytes/s; 0: no fabric. */
double topo_port_Bps(const topo *g);

/* The NIC local GPU `local` uses by default: the one of the same index
 * block (GPU i of G with N NICs: NIC i * N / G). */
uint32_t topo_nic_of(const topo *g, uint32_t local);

/* The NICs local to local GPU `local`: those the fewest links away on a
 * path that passes through no other GPU (NCCL's PCIe path types: a NIC on
 * the GPU's own PCIe switch before one behind the CPU). Fills nics[]
 * ascending (the first 32 NICs of a node at most) and returns the count;
 * 0 only when the node has no NIC. */
uint32_t topo_local_nics(const topo *g, uint32_t local, uint32_t *nics);

/* Whether the fabric is a rail-optimized fat tree (NIC i of every node on
 * the leaves of rail i: crossing rails costs the spine). */
bool topo_rail_optimized(const topo *g);

/* One hop of a collective across nodes, with the NICs chosen: GPU a hands
 * the data to GPU via_a of its node (itself, or an NVLink peer that
 * proxies it: NCCL's PXN), which sends through its node's NIC nic_a; NIC
 * nic_b of b's node delivers to GPU via_b, which hands it on to b. The
 * NIC legs pass through no GPU. Inside one node, or on a torus or a node
 * without NICs: topo_route(a, b, -1). */
typedef struct topo_hop {
    uint32_t a, via_a, nic_a, nic_b, via_b, b;
} topo_hop;
uint32_t topo_route_nics(const topo *g, const topo_hop *h, uint32_t *path);

/* Route from GPU a to GPU b (a != b). Across nodes, leave through NIC
 * `rail` of a's node (rail < 0: topo_nic_of(a)); the peer NIC is the same
 * rail on a rail-optimized fat tree, else topo_nic_of(b). Fills path[] with
 * up to TOPO_PATH_MAX link ids and returns the count (0 only when a == b). */
uint32_t topo_route(const topo *g, uint32_t a, uint32_t b, int rail, uint32_t *path);

/* Sum of the latencies of path[0..n). */
ss_ns topo_path_latency(const topo *g, const uint32_t *path, uint32_t n);

#endif
