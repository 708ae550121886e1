/* machine.h - topology and device files into spec_topology.
 *
 * A topology file names its device (a file or an inline object) and gives
 * either the flat form (intra_node / inter_node ring levels, the first
 * network model) or the graph form: "node" (vertex groups and link groups of
 * one node, repeated per node) and "fabric" (what joins the nodes' NICs).
 * docs/TOPOLOGY.md describes the keys; net/topo.h builds the graph.
 *
 * Strict like every loader: unknown keys, wrong types, out-of-range values,
 * names that refer to no vertex group, and graph shapes the fabric cannot
 * use (a fabric without NICs, torus dims that do not multiply to the node
 * count) are errors naming the file and JSON path. Nothing is clamped.
 */
#ifndef IO_MACHINE_H
#define IO_MACHINE_H

#include "../plan/spec.h"
#include "json.h"

/* Fill *t from the topology object n (its device reference is resolved
 * against n's file). nodes_override > 0 replaces the file's "nodes", for a
 * topology parametrised by node count. */
int mach_from_node(js_node n, uint32_t nodes_override, spec_topology *t, ss_err *err);
/* Replace t's device with the one n["device"] names (a path resolved
 * against n's file, or an inline device object). On error t is untouched. */
int mach_set_device(js_node n, spec_topology *t, ss_err *err);
/* Replace t's fabric with n["fabric"] (a whole fabric object, read as a
 * topology file's), for a graph topology whose nodes are joined otherwise
 * than the file says. On error t's fabric is untouched. */
int mach_set_fabric(js_node n, spec_topology *t, ss_err *err);
/* t's ranks_per_node from n["ranks_per_node"] where n has it (1 to the
 * node's GPUs: a job that takes only the first GPUs of each node, as a
 * scheduler's segments place it), else left as it is. */
int mach_set_ranks_per_node(js_node n, spec_topology *t, ss_err *err);

/* n["nccl_version"] ("2.27.3", "2.27" or a code) as a version code (spec.h,
 * SPEC_NCCL_*), 0 when n has no such key; the topology file's key and the
 * scenario's network.nccl_version read alike. */
int mach_nccl_version(js_node n, uint32_t *code, ss_err *err);
/* str, the string at node v, as an NCCL_ALGO (proto false) or NCCL_PROTO
 * list into *set (spec_net_set_parse), or an error at v saying what a list
 * is: a topology's nccl_algo / nccl_proto and a scenario's network.algo /
 * proto read them alike. */
int mach_net_list(js_node v, const char *str, bool proto, uint32_t *set, ss_err *err);

/* Load a topology file. */
int mach_load(const char *file, uint32_t nodes_override, spec_topology *t, ss_err *err);

#endif
