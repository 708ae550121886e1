/* `shardsim coll`. coll_cmd.h states the contract. */
#include "coll_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/machine.h"
#include "../io/profile.h"
#include "../run/coll.h"
#include "hint.h"
#include "limit.h"
#include "out.h"

static const char usage[] =
    "usage: shardsim coll --topology FILE --op OP [--ranks N] [--nodes N]\n"
    "                     [-b SIZE] [-e SIZE] [-f FACTOR] [-g GPUS] [--algo A]\n"
    "                     [--proto P] [--nccl-version V] [--min-ctas N]\n"
    "                     [--collnet 0|1] [-o FILE]\n"
    "       shardsim coll --topology FILE --compare LOG [--op OP] [--table LABEL]\n"
    "                     [--algo A] [--proto P] [--nccl-version V] [--min-ctas N]\n"
    "                     [--collnet 0|1] [-o FILE]\n"
    "\n"
    "  --op       all_reduce, all_gather, reduce_scatter, broadcast, reduce,\n"
    "             all_to_all, gather, scatter, send_recv\n"
    "  --ranks    ranks, spread evenly over the nodes (default: every GPU)\n"
    "  --nodes    node count of the topology (default: the file's)\n"
    "  -b -e -f   smallest and largest size and the step factor, as nccl-tests\n"
    "             (sizes take K, M, G suffixes; default -b 8 -e 8G -f 2)\n"
    "  -g         GPUs one thread drives, as nccl-tests' -g (default 1): such a\n"
    "             thread launches each GPU's kernel in turn, so an iteration\n"
    "             takes at least GPUS x the device's launch_us (--compare\n"
    "             reads it from the log's \"nGpus\")\n"
    "  --algo     auto, ring, tree, nvls, nvls_tree, hierarchical, direct, pat,\n"
    "             collnet (NCCL_ALGO), or a list the tuner chooses from (ring,tree;\n"
    "             ^nvls)\n"
    "  --nccl-version  the NCCL whose algorithms run, like 2.27.3 (default: the\n"
    "             log's with --compare, else the topology's, else 2.29.7)\n"
    "  --proto    auto, ll, ll128, simple (NCCL_PROTO), or a list (simple,ll128)\n"
    "  --min-ctas the CTAs (channels) each collective runs at least, 1 to 64\n"
    "             (NCCL_MIN_CTAS; NCCL_MIN_NCHANNELS before 2.17); default NCCL's\n"
    "  --collnet  1: CollNet (NCCL_COLLNET_ENABLE=1) on a fabric whose switches\n"
    "             reduce (the topology's fabric \"sharp\": true); default 0\n"
    "  --compare  a real nccl-tests output; predicts every row of every table\n"
    "             with the table's ranks and nodes, prints the error per row\n"
    "             and the median |error| for sizes >= 1 MiB\n"
    "  --op       with --compare: the collective of tables the log does not name\n"
    "  --table    with --compare: only the table of this label\n"
    "  --ranks --nodes  with --compare: the shape of tables whose log has no\n"
    "             \"#  Rank\" lines (a transcribed excerpt)\n"
    "  --calibration  a profile from shardsim-calib fit: its measured curves\n"
    "             replace the model's latency and bandwidth where they apply\n";

typedef struct opts {
    const char *topo, *compare, *table, *out, *op, *calibration;
    uint32_t ranks, nodes, f, gpus;
    uint64_t b, e;
    net_opts net;
} opts;

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardsim coll: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage);
    return 2;
}

static int unknown(const char *k)
{
    static const char *const known[] = {"--topology", "--compare", "--table", "-o",    "--op",
                                       "--calibration", "--ranks", "--nodes", "-f", "-b",
                                       "-e", "-g", "--algo", "--proto", "--nccl-version", "--min-ctas"};
    const char *hit = cli_nearest(k, known, sizeof known / sizeof *known);
    char m[256];
    snprintf(m, sizeof m, "unknown option %.100s%s%s%s", k, hit ? " (did you mean " : "", hit ? hit : "",
             hit ? "?)" : "");
    return bad("%s", m);
}

static int parse_u32(const char *v, uint32_t lo, uint32_t *out)
{
    uint64_t x;
    if (!cli_parse_size(v, &x) || strpbrk(v, "KkMmGg") || x < lo || x > UINT32_MAX) return 0;
    *out = (uint32_t)x;
    return 1;
}

static int pick_name(const char *v, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 1;
        }
    return 0;
}

static int parse_one(opts *o, const char *k, const char *v)
{
    int x;
    if (!strcmp(k, "--topology")) o->topo = v;
    else if (!strcmp(k, "--compare")) o->compare = v;
    else if (!strcmp(k, "--table")) o->table = v;
    else if (!strcmp(k, "-o")) o->out = v;
    else if (!strcmp(k, "--op")) o->op = v;
    else if (!strcmp(k, "--calibration")) o->calibration = v;
    else if (!strcmp(k, "--ranks")) return parse_u32(v, 1, &o->ranks) ? 0 : bad("--ranks: expected a count >= 1, not %s", v);
    else if (!strcmp(k, "--nodes")) return parse_u32(v, 1, &o->nodes) ? 0 : bad("--nodes: expected a count >= 1, not %s", v);
    else if (!strcmp(k, "--collnet")) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return bad("--collnet: expected 0 or 1 (NCCL_COLLNET_ENABLE), not %s", v);
        o->net.collnet = v[0] == '1';
    } else if (!strcmp(k, "--min-ctas")) return parse_u32(v, 1, &o->net.min_ctas) && o->net.min_ctas <= 64 ? 0 : bad("--min-ctas: expected a count from 1 to 64, not %s", v);
    else if (!strcmp(k, "-g")) return parse_u32(v, 1, &o->gpus) ? 0 : bad("-g: expected a count of GPUs >= 1, not %s", v);
    else if (!strcmp(k, "-f")) return parse_u32(v, 2, &o->f) ? 0 : bad("-f: expected a factor >= 2, not %s", v);
    else if (!strcmp(k, "-b")) return cli_parse_size(v, &o->b) ? 0 : bad("-b: expected a size like 8, 64K, 1M, not %s", v);
    else if (!strcmp(k, "-e")) return cli_parse_size(v, &o->e) ? 0 : bad("-e: expected a size like 8G, not %s", v);
    else if (!strcmp(k, "--algo")) {
        if (pick_name(v, algo_kind_names, ALGO_NKINDS, &x)) o->net.algo = (algo_kind)x;
        else if (!spec_net_set_parse(v, false, &o->net.algo_set))
            return bad("--algo: expected auto, ring, tree, nvls, nvls_tree, hierarchical, "
                       "direct, pat or collnet, or a list of them as NCCL_ALGO takes one "
                       "(ring,tree; ^nvls), not %s", v);
    } else if (!strcmp(k, "--nccl-version")) {
        if (!spec_nccl_parse(v, &o->net.nccl))
            return bad("--nccl-version: expected a version like 2.27.3 or 2.27 (2.0 or later), "
                       "not %s", v);
    } else if (!strcmp(k, "--proto")) {
        if (pick_name(v, algo_proto_names, ALGO_NPROTOS, &x)) o->net.proto = (algo_proto)x;
        else if (!spec_net_set_parse(v, true, &o->net.proto_set))
            return bad("--proto: expected auto, ll, ll128 or simple, or a list of them as "
                       "NCCL_PROTO takes one (simple,ll128; ^ll), not %s", v);
    } else {
        return unknown(k);
    }
    return 0;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.f = 2, .b = 8, .e = 8ull << 30, .gpus = 1};
    for (int i = 0; i < argc; i++) /* --help anywhere wins, as for the other commands */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return -1;
        }
    for (int i = 0; i < argc; i += 2) { /* every option takes a value */
        if (i + 1 >= argc) return bad("%s needs a value", argv[i]);
        int rc = parse_one(o, argv[i], argv[i + 1]);
        if (rc) return rc;
    }
    if (!o->topo) return bad("%s", "--topology FILE is required");
    if (!o->compare && !o->op) return bad("%s", "--op OP (or --compare LOG) is required");
    if (o->compare && o->gpus != 1)
        return bad("%s", "-g: with --compare the log's \"nGpus\" says how many GPUs a thread drove");
    return 0;
}

static int coll_of(const char *name, prog_coll *out)
{
    for (int c = 0; c < PROG_NCOLLS; c++)
        if (!strcmp(name, prog_coll_name((prog_coll)c))) {
            *out = (prog_coll)c;
            return 1;
        }
    return 0;
}

static int fail(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim coll: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return err->code == SS_E_INPUT || err->code == SS_E_IO ? 2 : 1;
}

/* Append s to *all (both malloc'd; s is consumed). */
static int append(char **all, char *s)
{
    size_t a = *all ? strlen(*all) : 0, b = strlen(s);
    char *p = realloc(*all, a + b + 2);
    if (!p) {
        free(s);
        return 0;
    }
    if (a) p[a++] = '\n';
    memcpy(p + a, s, b + 1);
    *all = p;
    free(s);
    return 1;
}

static int emit(const opts *o, const char *topo_name, coll_table *t, size_t n, ss_err *err)
{
    char *all = NULL;
    int rc = SS_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        char *s = NULL;
        rc = coll_format(&t[i], topo_name, &o->net, &s, err);
        if (!rc && !append(&all, s)) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    if (!rc) {
        if (o->out) rc = of_write_text(o->out, all, err);
        else fputs(all, stdout);
    }
    free(all);
    return rc;
}

int coll_cmd(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    prog_coll c = PROG_COLL_ALL_REDUCE;
    if (o.op && !o.compare && !coll_of(o.op, &c))
        return bad("--op: expected all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                   "all_to_all, gather, scatter or send_recv, not %s", o.op);
    ss_err err;
    ss_err_clear(&err);
    spec_topology t;
    if ((rc = mach_load(o.topo, o.nodes, &t, &err))) return fail(&err);
    if (o.net.collnet && !t.fabric.sharp)
        return bad("--collnet 1: CollNet needs a fabric whose switches reduce in the network; "
                   "%s's fabric has no \"sharp\": true", o.topo);
    prof pf;
    prof_init(&pf);
    if (o.calibration) {
        if ((rc = prof_load(o.calibration, &pf, &err))) return fail(&err);
        o.net.profile = &pf;
    }
    coll_table *tabs = NULL, one;
    size_t n = 0;
    if (o.compare) {
        rc = coll_compare(o.topo, &o.net, o.compare, o.op, o.table, o.ranks, o.nodes, &tabs, &n,
                          &err);
    } else {
        uint32_t ranks = o.ranks ? o.ranks : t.nodes * spec_topo_rpn(&t);
        rc = coll_sweep(o.topo, &o.net, c, ranks, t.nodes, o.b, o.e, o.f, o.gpus, &one, &err);
        if (!rc) {
            tabs = &one;
            n = 1;
        }
    }
    if (!rc) rc = emit(&o, t.name, tabs, n, &err);
    for (size_t i = 0; i < n; i++) coll_table_fini(&tabs[i]);
    if (tabs != &one) free(tabs);
    prof_fini(&pf);
    return rc ? fail(&err) : 0;
}
