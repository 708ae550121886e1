/* coll.h - the network model in nccl-tests' terms: size sweeps and
 * comparisons with real nccl-tests logs.
 *
 * A sweep predicts one collective alone on the machine for sizes b, b*f,
 * ... up to e, like `all_gather_perf -b B -e E -f F`: time, algbw = size /
 * time, busbw = algbw x the nccl-tests bus factor, and the algorithm and
 * protocol the tuner chose. A comparison reads a log with io/ncclt.h and
 * predicts every row of every table (the table's collective, rank and node
 * count, the GPUs a thread drove, "nGpus 8", and the NCCL version its header
 * names, "nccl-library=22902" (else NCCL's banner, "NCCL version 2.26.2"),
 * unless the options name one; ranks spread
 * evenly over the nodes, local GPUs from 0) against its out-of-place time;
 * the figure of merit is the median |relative error| over sizes >= 1 MiB.
 *
 * The harness: a thread that drives G GPUs (-g G) issues each one's
 * collective in turn, a kernel launch each, so an iteration lasts at least
 * G launches (the device file's launch_us) whatever the size; with
 * one process per GPU the launch hides behind the device (DECISIONS 170).
 *
 * Ranks of node k are GPUs k * gpus_per_node + (0 .. ranks/nodes - 1); the
 * topology file is loaded with the table's node count (topologies are
 * parametrised by node count). Texts come out in nccl-tests' column layout
 * so they can sit beside a real run. Ownership: tables and texts are the
 * caller's (coll_table_fini, free).
 */
#ifndef RUN_COLL_H
#define RUN_COLL_H

#include "../net/net.h"

#define COLL_MIB_MIN (1u << 20) /* sizes counted in the median */

typedef struct coll_row {
    uint64_t bytes, count;
    double time_us, algbw_GBps, busbw_GBps;
    algo_kind algo;
    algo_proto proto;
    bool host_bound;    /* time is the harness's issue floor (coll_table) */
    double measured_us; /* comparisons only */
    double rel_err;     /* (predicted - measured) / measured */
} coll_row;

/* Where a table's NCCL version came from (coll_format says). */
typedef enum { COLL_NCCL_DEFAULT, COLL_NCCL_TOPOLOGY, COLL_NCCL_LOG, COLL_NCCL_OPTION } coll_nccl_from;

typedef struct coll_table {
    char label[128];
    prog_coll op;
    const char *skipped;      /* comparisons: why the table's collective is not
                                 compared (static text; no rows); NULL: compared */
    uint32_t nranks, nodes;
    uint32_t nccl;            /* the NCCL version predicted (spec.h's code) */
    coll_nccl_from nccl_from; /* the option, the log ("nccl-library="), the
                                 topology file, or the default */
    coll_row *rows;
    uint32_t nrows;
    bool measured;
    double median_abs_err; /* over rows >= COLL_MIB_MIN; NAN when none */
    uint32_t nmedian;
    /* A ring across nodes: its CTAs and each one's rate (net/algo.h, "Ring
     * CTAs across nodes"); 0: one node, no ring, or no rate known */
    uint32_t ring_ctas;
    double ring_cta_GBps;
    /* Across nodes, the fabric's network steps (net/algo.h, "Network
     * steps"): a step's own latency, LL and LL128 / Simple, and the latency
     * its net plugin reports to the tuner, us; 0: NCCL's constants, none. */
    double step_us, step_simple_us, reported_us;
    /* nccl-tests' harness: GPUs one thread drives (its -g; the log's "nGpus"),
     * and the least time an iteration then takes, us: the host launches
     * each GPU's kernel in turn, gpus x the device's launch_us (0: one GPU,
     * no floor). Rows held to it say so (coll_row.host_bound). */
    uint32_t gpus_per_thread;
    double issue_floor_us;
    /* The topology's NCCL_ALGO / NCCL_PROTO lists (spec_topology), which
     * the tuner keeps where the options name none; 0: none */
    uint32_t topo_algos, topo_protos;
} coll_table;

/* A sweep over `ranks` GPUs on `nodes` nodes of the topology file (loaded
 * with that node count; 0 keeps the file's), sizes b..e by factor f >= 2,
 * float elements, `gpus` GPUs to a thread (nccl-tests' -g; 1: one process
 * per GPU). Errors: a flat topology, ranks that do not fit or do not divide
 * evenly over the nodes, sizes out of order, gpus 0. */
int coll_sweep(const char *topo_file, const net_opts *o, prog_coll c, uint32_t ranks,
               uint32_t nodes, uint64_t b, uint64_t e, uint32_t f, uint32_t gpus,
               coll_table *out, ss_err *err);

/* Compare with every table of an nccl-tests log (or the one labelled
 * `label`, when not NULL). op_hint: the collective for tables the file does
 * not name; ranks and nodes: the shape of tables whose log has no rank
 * lines (a transcribed excerpt; 0: such a table is an error). *out is an
 * array of *n tables. A table of a test the model does not cost
 * (hypercube_perf, alltoallv_perf) comes back with `skipped` saying why when
 * the whole file is compared, so one such test does not sink a log of all
 * of nccl-tests' tests; naming it with `label`, or a log of nothing else,
 * is an error. */
int coll_compare(const char *topo_file, const net_opts *o, const char *log_file,
                 const char *op_hint, const char *label, uint32_t ranks, uint32_t nodes,
                 coll_table **out, size_t *n, ss_err *err);

void coll_table_fini(coll_table *t);

/* nccl-tests-shaped text of a table (with the measured columns when it has
 * them); *text is malloc'd. */
int coll_format(const coll_table *t, const char *topo_name, const net_opts *o, char **text,
                ss_err *err);

#endif
