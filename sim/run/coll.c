/* nccl-tests-shaped sweeps and comparisons. coll.h states the contract. */
#include "coll.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/machine.h"
#include "../io/ncclt.h"
#include "../net/cost.h"

#define ELEM 4 /* float, nccl-tests' default -d */

/* `ranks` ranks spread evenly over `nodes` nodes: each node's first
 * ranks / nodes GPUs (t's ranks_per_node, which the network places by),
 * and the ranks 0 .. ranks - 1 in *out. */
static int place(spec_topology *t, uint32_t ranks, uint32_t nodes, uint32_t **out,
                 ss_err *err)
{
    if (nodes == 0 || ranks % nodes || ranks / nodes > t->gpus_per_node || nodes > t->nodes)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "%u ranks on %u nodes of %s (%u nodes of %u GPUs): expected an equal "
                       "number of ranks per node, at most the GPUs of a node", ranks, nodes,
                       t->name, t->nodes, t->gpus_per_node);
    uint32_t *g = malloc(ranks * sizeof *g);
    if (!g) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < ranks; i++) g[i] = i;
    t->ranks_per_node = ranks / nodes;
    *out = g;
    return SS_OK;
}

/* Elements nccl-tests prints in its count column. */
static uint64_t count_of(prog_coll c, uint64_t bytes, uint32_t n)
{
    bool per_rank = c == PROG_COLL_ALL_GATHER || c == PROG_COLL_REDUCE_SCATTER ||
                    c == PROG_COLL_ALL_TO_ALL || c == PROG_COLL_GATHER || c == PROG_COLL_SCATTER;
    return bytes / ELEM / (per_rank ? n : 1);
}

/* One row: the collective alone, held to the harness's issue floor
 * (floor_us, coll_table.issue_floor_us). */
static int predict(net *nt, prog_coll c, const uint32_t *g, uint32_t n, uint64_t bytes,
                   double floor_us, coll_row *row, ss_err *err)
{
    net_alone a;
    int rc = net_coll_alone(nt, c, g, n, bytes, &a, err);
    if (rc) return rc;
    row->bytes = bytes;
    row->count = count_of(c, bytes, n);
    row->host_bound = floor_us > a.time_s * 1e6;
    if (row->host_bound) a.time_s = floor_us * 1e-6;
    row->time_us = a.time_s * 1e6;
    row->algbw_GBps = a.time_s > 0 ? (double)bytes / a.time_s * 1e-9 : 0.0;
    row->busbw_GBps = row->algbw_GBps * cost_bus_factor(c, n);
    row->algo = a.algo;
    row->proto = a.proto;
    return SS_OK;
}

static int grow_rows(coll_table *t, uint32_t need, uint32_t *cap, ss_err *err)
{
    if (need <= *cap) return SS_OK;
    uint32_t c = *cap ? *cap * 2 : 32;
    coll_row *r = realloc(t->rows, c * sizeof *r);
    if (!r) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    t->rows = r;
    *cap = c;
    return SS_OK;
}

/* The topology of `file` at `nodes` nodes (0: the file's), `ranks` ranks
 * spread over them (place), and its network. */
static int open_net(const char *file, uint32_t nodes, uint32_t ranks, const net_opts *o,
                    spec_topology *t, net **nt, uint32_t **g, ss_err *err)
{
    int rc = mach_load(file, nodes, t, err);
    if (!rc && !t->graph)
        rc = ss_fail(err, SS_E_INPUT, file,
                     "topology %s has the flat form; collectives need its graph (\"node\")",
                     t->name);
    if (!rc) rc = place(t, ranks, nodes ? nodes : t->nodes, g, err);
    return rc ? rc : net_new(t, o, nt, err);
}

/* Across nodes, for the header: what a network step costs, and the CTAs a
 * ring over the table's GPUs runs and each one's rate (what bounds a ring's
 * bandwidth there). */
static int across_nodes(const net *nt, prog_coll c, const uint32_t *g, uint32_t n, coll_table *t,
                      ss_err *err)
{
    const topo *tp = net_topo(nt);
    if (t->nodes < 2) return SS_OK;
    t->step_us = topo_net_step_us(tp, false);
    t->step_simple_us = topo_net_step_us(tp, true);
    t->reported_us = topo_net_reported_us(tp);
    if (!algo_applies(tp, c, g, n, ALGO_RING)) return SS_OK;
    algo_shape s;
    int rc = algo_shape_build(tp, c, g, n, ALGO_RING, &s, err);
    if (rc) return rc;
    if (s.inter && s.channels && algo_ring_cta_Bps(tp) > 0) {
        t->ring_ctas = algo_ring_ctas(tp, s.channels);
        t->ring_cta_GBps = algo_ring_cta_Bps(tp) * 1e-9;
    }
    algo_shape_fini(&s);
    return SS_OK;
}

/* Where the version a table ran came from, first to last: the options, the
 * log's header (0: none), the topology file, the default. */
static coll_nccl_from nccl_from(const net_opts *o, uint32_t log, const spec_topology *t)
{
    return o->nccl ? COLL_NCCL_OPTION : log ? COLL_NCCL_LOG
           : t->nccl ? COLL_NCCL_TOPOLOGY : COLL_NCCL_DEFAULT;
}

/* What the table takes from the topology besides its network: the NCCL
 * lists the tuner keeps (for the header), and the harness's floor
 * (coll.h): a thread driving `gpus` GPUs launches a kernel on each per
 * iteration, at the device's launch cost; one GPU a thread hides its
 * launch. */
static void topology_facts(coll_table *t, const spec_topology *tp, uint32_t gpus)
{
    t->topo_algos = tp->nccl_algos, t->topo_protos = tp->nccl_protos;
    t->gpus_per_thread = gpus;
    t->issue_floor_us = gpus > 1 ? gpus * (double)tp->device.launch_ns * 1e-3 : 0.0;
}

int coll_sweep(const char *topo_file, const net_opts *o, prog_coll c, uint32_t ranks,
               uint32_t nodes, uint64_t b, uint64_t e, uint32_t f, uint32_t gpus,
               coll_table *out, ss_err *err)
{
    if (b == 0 || e < b || f < 2)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "sizes: expected 0 < -b <= -e and -f >= 2, got -b %llu -e %llu -f %u",
                       (unsigned long long)b, (unsigned long long)e, f);
    if (gpus == 0) return ss_fail(err, SS_E_INPUT, NULL, "-g: expected 1 or more GPUs a thread");
    spec_topology t;
    net *nt = NULL;
    uint32_t *g = NULL, cap = 0;
    coll_table tab = {.op = c, .nranks = ranks, .nodes = nodes, .median_abs_err = NAN};
    int rc = open_net(topo_file, nodes, ranks, o, &t, &nt, &g, err);
    if (!rc) tab.nccl = topo_nccl(net_topo(nt));
    tab.nccl_from = nccl_from(o, 0, &t);
    tab.nodes = t.nodes;
    if (!rc) rc = across_nodes(nt, c, g, ranks, &tab, err);
    if (!rc) topology_facts(&tab, &t, gpus);
    snprintf(tab.label, sizeof tab.label, "%s", prog_coll_name(c));
    for (uint64_t s = b; !rc && s <= e; s = s > UINT64_MAX / f ? UINT64_MAX : s * f) {
        rc = grow_rows(&tab, tab.nrows + 1, &cap, err);
        if (!rc) rc = predict(nt, c, g, ranks, s, tab.issue_floor_us, &tab.rows[tab.nrows++], err);
        if (s == UINT64_MAX) break;
    }
    free(g);
    net_free(nt);
    if (rc) {
        coll_table_fini(&tab);
        return rc;
    }
    *out = tab;
    return SS_OK;
}

/* ---- comparisons ---- */

/* The collective a table measures; NULL when the model costs it, else
 * why not (a static string). */
static const char *to_coll(ncclt_op op, prog_coll *c)
{
    switch (op) {
    case NCCLT_ALL_REDUCE: *c = PROG_COLL_ALL_REDUCE; return NULL;
    case NCCLT_ALL_GATHER: *c = PROG_COLL_ALL_GATHER; return NULL;
    case NCCLT_REDUCE_SCATTER: *c = PROG_COLL_REDUCE_SCATTER; return NULL;
    case NCCLT_BROADCAST: *c = PROG_COLL_BROADCAST; return NULL;
    case NCCLT_REDUCE: *c = PROG_COLL_REDUCE; return NULL;
    case NCCLT_ALLTOALL: *c = PROG_COLL_ALL_TO_ALL; return NULL;
    case NCCLT_SENDRECV: *c = PROG_COLL_SEND_RECV; return NULL;
    case NCCLT_GATHER: *c = PROG_COLL_GATHER; return NULL;
    case NCCLT_SCATTER: *c = PROG_COLL_SCATTER; return NULL;
    case NCCLT_HYPERCUBE:
        return "hypercube_perf: its log2(n) rounds of pairwise exchanges are not modelled";
    case NCCLT_ALLTOALLV:
        return "alltoallv_perf: its per-peer sizes follow nccl-tests' distance-weighted pattern "
               "(NCCL_TESTS_ALLTOALLV_SPREAD, default 1) or a matrix file, not modelled";
    default: return "not a collective shardsim models";
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void set_median(coll_table *t)
{
    double *v = malloc((t->nrows ? t->nrows : 1) * sizeof *v);
    uint32_t k = 0;
    for (uint32_t i = 0; v && i < t->nrows; i++)
        if (t->rows[i].bytes >= COLL_MIB_MIN) v[k++] = fabs(t->rows[i].rel_err);
    t->nmedian = k;
    t->median_abs_err = NAN;
    if (v && k) {
        qsort(v, k, sizeof *v, cmp_double);
        t->median_abs_err = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    }
    free(v);
}

static int compare_table(const char *topo_file, const net_opts *o, const char *log_file,
                         const ncclt_log *log, size_t ti, const uint32_t shape[2], bool want,
                         coll_table *tab, ss_err *err)
{
    const ncclt_info *in = ncclt_table(log, ti);
    char where[1100];
    snprintf(where, sizeof where, "%s:%u", log_file, in->line);
    prog_coll c = PROG_COLL_ALL_REDUCE;
    const char *why = to_coll(in->op, &c);
    if (why && want)
        return ss_fail(err, SS_E_INPUT, where, "table %s: %s", in->label, why);
    if (why) { /* a file's other tables are compared; this one says why not */
        *tab = (coll_table){.skipped = why, .median_abs_err = NAN, .measured = true};
        snprintf(tab->label, sizeof tab->label, "%s", in->label);
        return SS_OK;
    }
    if (!in->nranks && !shape[0])
        return ss_fail(err, SS_E_INPUT, where, "table %s: the log does not say how many ranks "
                       "ran (%s); give --ranks and --nodes", in->label,
                       in->min_ranks ? "its \"#  Rank N Group\" lines are an excerpt"
                                     : "no \"#  Rank N Group\" lines");
    if (!in->nranks && shape[0] < in->min_ranks)
        return ss_fail(err, SS_E_INPUT, where, "table %s: the log names rank %u; --ranks %u "
                       "is too few", in->label, in->min_ranks - 1, shape[0]);
    *tab = (coll_table){.nranks = in->nranks ? in->nranks : shape[0],
                        .nodes = in->nranks ? (in->nnodes ? in->nnodes : 1)
                                            : (shape[1] ? shape[1] : 1),
                        .measured = true};
    snprintf(tab->label, sizeof tab->label, "%s", in->label);
    spec_topology t;
    net *nt = NULL;
    uint32_t *g = NULL;
    net_opts ov = *o; /* the NCCL the log ran, unless the options name one */
    if (!ov.nccl && in->nccl_version) ov.nccl = in->nccl_version;
    tab->op = c;
    int rc = open_net(topo_file, tab->nodes, tab->nranks, &ov, &t, &nt, &g, err);
    if (!rc) tab->nccl = topo_nccl(net_topo(nt));
    if (!rc) rc = across_nodes(nt, tab->op, g, tab->nranks, tab, err);
    if (!rc) topology_facts(tab, &t, in->ngpus ? in->ngpus : 1);
    tab->nccl_from = nccl_from(o, in->nccl_version, &t);
    if (!rc && !(tab->rows = calloc(in->nrows ? in->nrows : 1, sizeof *tab->rows)))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t j = 0; !rc && j < in->nrows; j++) {
        const ncclt_row *m = ncclt_row_at(log, ti, j);
        coll_row *r = &tab->rows[tab->nrows++];
        rc = predict(nt, tab->op, g, tab->nranks, m->bytes, tab->issue_floor_us, r, err);
        r->count = m->count;
        r->measured_us = m->out.time_us;
        r->rel_err = m->out.time_us > 0 ? (r->time_us - m->out.time_us) / m->out.time_us : 0.0;
    }
    if (!rc) set_median(tab);
    free(g);
    net_free(nt);
    return rc;
}

int coll_compare(const char *topo_file, const net_opts *o, const char *log_file,
                 const char *op_hint, const char *label, uint32_t ranks, uint32_t nodes,
                 coll_table **out, size_t *n, ss_err *err)
{
    const uint32_t shape[2] = {ranks, nodes};
    ncclt_log *log = NULL;
    int rc = ncclt_load(log_file, op_hint, &log, err);
    if (rc) return rc;
    size_t nt = ncclt_ntables(log), k = 0, compared = 0;
    coll_table *tabs = calloc(nt ? nt : 1, sizeof *tabs);
    if (!tabs) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; !rc && i < nt; i++) {
        if (label && strcmp(ncclt_table(log, i)->label, label)) continue;
        rc = compare_table(topo_file, o, log_file, log, i, shape, label != NULL, &tabs[k], err);
        compared += !rc && !tabs[k].skipped;
        k++;
    }
    if (!rc && k == 0)
        rc = ss_fail(err, SS_E_INPUT, log_file, label ? "no table labelled \"%s\" in the log"
                                                      : "no tables in the log%s", label ? label : "");
    if (!rc && compared == 0)
        rc = ss_fail(err, SS_E_INPUT, log_file, "no table of the log measures a collective "
                     "shardsim models (%s)", tabs[0].skipped);
    ncclt_free(log);
    if (rc) {
        for (size_t i = 0; tabs && i < k; i++) coll_table_fini(&tabs[i]);
        free(tabs);
        return rc;
    }
    *out = tabs;
    *n = k;
    return SS_OK;
}

void coll_table_fini(coll_table *t)
{
    if (!t) return;
    free(t->rows);
    t->rows = NULL;
    t->nrows = 0;
}

/* ---- text ---- */

typedef struct buf {
    char *s;
    size_t len, cap;
    bool nomem;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        if (b->nomem) return;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        size_t c = b->cap ? b->cap : 4096;
        while (c <= b->len + (size_t)k) c *= 2;
        char *p = realloc(b->s, c);
        if (!p) {
            b->nomem = true;
            return;
        }
        b->s = p;
        b->cap = c;
    }
}

/* The text put into b, handed to the caller, or out of memory. */
static int take(buf *b, char **text, ss_err *err)
{
    if (b->nomem || !b->s) {
        free(b->s);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    *text = b->s;
    return SS_OK;
}

static const char *redop_of(prog_coll c)
{
    return c == PROG_COLL_ALL_REDUCE || c == PROG_COLL_REDUCE_SCATTER || c == PROG_COLL_REDUCE
               ? "sum"
               : "none";
}

/* The root column: 0 for the rooted collectives (nccl-tests' default -r),
 * -1 for the others, as nccl-tests prints them. */
static int root_of(prog_coll c)
{
    return c == PROG_COLL_BROADCAST || c == PROG_COLL_REDUCE || c == PROG_COLL_GATHER ||
                   c == PROG_COLL_SCATTER
               ? 0
               : -1;
}

static void put_row(buf *b, const coll_table *t, const coll_row *r)
{
    char ap[32];
    snprintf(ap, sizeof ap, "%s/%s", algo_kind_names[r->algo], algo_proto_names[r->proto]);
    put(b, "%15llu  %12llu  %8s  %6s  %6d  %9.2f  %7.2f  %7.2f", (unsigned long long)r->bytes,
        (unsigned long long)r->count, "float", redop_of(t->op),
        root_of(t->op), r->time_us, r->algbw_GBps, r->busbw_GBps);
    if (t->measured) put(b, "  %10.2f  %+7.1f%%", r->measured_us, 100.0 * r->rel_err);
    put(b, "  %s%s\n", ap, r->host_bound ? " host" : "");
}

/* What the tuner chose among, for the header: the forced one, the listed
 * ones, the topology's list, or "auto". */
static void choice_name(char *out, size_t n, const char *one, bool forced, uint32_t set,
                        uint32_t topo_set, bool proto)
{
    char list[96];
    if (forced || (!set && !topo_set)) {
        snprintf(out, n, "%s", one);
    } else if (set) {
        spec_net_set_format(set, proto, out, n);
    } else {
        static const char tail[] = " (the topology's)";
        /* the list shortened, never the tail that says whose it is */
        int room = n > sizeof tail ? (int)(n - sizeof tail) : 0;
        spec_net_set_format(topo_set, proto, list, sizeof list);
        snprintf(out, n, "%.*s%s", room, list, tail);
    }
}

int coll_format(const coll_table *t, const char *topo_name, const net_opts *o, char **text,
                ss_err *err)
{
    static const char *const from[] = {"the default", "the topology's", "the log's",
                                       "--nccl-version"};
    buf b = {0};
    if (t->skipped) {
        put(&b, "# shardsim coll: table %s not compared: %s\n", t->label, t->skipped);
        return take(&b, text, err);
    }
    char ver[24];
    spec_nccl_format(t->nccl, ver, sizeof ver);
    char algo[128], proto[64];
    choice_name(algo, sizeof algo, algo_kind_names[o->algo], o->algo != ALGO_AUTO, o->algo_set,
                t->topo_algos, false);
    choice_name(proto, sizeof proto, algo_proto_names[o->proto], o->proto != ALGO_P_AUTO,
                o->proto_set, t->topo_protos, true);
    put(&b, "# shardsim coll: %s (%s), %u ranks on %u node(s) of %s; algo %s, proto %s, NCCL %s "
            "(%s)\n",
        prog_coll_name(t->op), t->label, t->nranks, t->nodes, topo_name, algo, proto, ver,
        from[t->nccl_from]);
    if (t->ring_ctas)
        put(&b, "# a ring across nodes runs %u CTAs of %.1f GB/s: at most %.0f GB/s bus bandwidth "
                "(docs/TOPOLOGY.md, \"Ring CTAs across nodes\"; --min-ctas raises the CTAs)\n",
            t->ring_ctas, t->ring_cta_GBps, t->ring_ctas * t->ring_cta_GBps);
    if (t->step_us > 0)
        put(&b, "# a network step costs %g us (%g with Simple), the fabric's step_latency_us, in "
                "place of NCCL's InfiniBand constants (docs/TOPOLOGY.md, \"Network steps\")\n",
            t->step_us, t->step_simple_us);
    if (t->reported_us > 0)
        put(&b, "# the tuner adds the %g us the net plugin reports to every network step (twice "
                "with Simple); the rows do not pay it (docs/TOPOLOGY.md, \"Network steps\")\n",
            t->reported_us);
    if (o->collnet)
        put(&b, "# CollNet is on (NCCL_COLLNET_ENABLE=1): all_reduce may run in the fabric's "
                "switches (docs/TOPOLOGY.md, \"CollNet\")\n");
    if (t->issue_floor_us > 0)
        put(&b, "# one thread drives %u GPUs (nccl-tests -g %u): an iteration takes at least "
                "%u kernel launches, %.1f us (the device's launch_us); rows held to it say "
                "\"host\" (docs/TOPOLOGY.md, \"The harness\")\n",
            t->gpus_per_thread, t->gpus_per_thread, t->gpus_per_thread, t->issue_floor_us);
    bool fill = false;
    for (uint32_t i = 0; i < t->nrows; i++) fill |= t->nodes > 1 && t->rows[i].algo == ALGO_TREE;
    if (fill)
        put(&b, "# tree rows pay the tree's pipeline fill, NCCL's chunks through every hop "
                "(docs/TOPOLOGY.md, \"Pipeline fill\")\n");
    put(&b, "# predicted, one collective alone on the machine (columns as nccl-tests' "
            "out-of-place group)\n#\n");
    /* nccl-tests' own header text for the shared columns */
    put(&b, "#       size         count      type   redop    root       time    algbw    busbw");
    if (t->measured) put(&b, "    measured     error");
    put(&b, "  algo/proto\n");
    put(&b, "#        (B)    (elements)                                 (us)   (GB/s)   (GB/s)");
    if (t->measured) put(&b, "        (us)");
    put(&b, "\n");
    for (uint32_t i = 0; i < t->nrows; i++) put_row(&b, t, &t->rows[i]);
    if (t->measured && t->nmedian)
        put(&b, "# median |error| of time for sizes >= 1 MiB: %.1f%% over %u sizes\n",
            100.0 * t->median_abs_err, t->nmedian);
    return take(&b, text, err);
}
