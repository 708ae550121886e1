/* harness.c - `shardsim-calib <verb>`: options, the verbs, exit codes.
 * CLI code: the only part of the harness that prints messages. */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/core/ofile.h"
#include "../../sim/io/scenario.h"
#include "../../sim/out/diff.h"
#include "../../sim/run/run.h"
#include "bcoll.h"
#include "bcopy.h"
#include "bgemm.h"
#include "blaunch.h"
#include "meas.h"
#include "rexec.h"
#include "rplan.h"

#define MAX_SETS 256

static const char usage_text[] =
    "usage: shardsim-calib gemm   [-o FILE.json] [--shapes MxNxK,...] [--dtypes LIST]\n"
    "                             [--scenario FILE] [--peak-file DEVICE.json] [-r N] [-d DEV]\n"
    "       shardsim-calib copy   [-o FILE.json] [-b MIN] [-e MAX] [-f FACTOR] [--kinds LIST]\n"
    "                             [--pageable-max BYTES] [-r N] [-d DEV]\n"
    "       shardsim-calib launch [-o FILE.json] [-n LAUNCHES] [-r N] [-d DEV]\n"
    "       shardsim-calib coll   [-o FILE.json] [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP]\n"
    "                             [-n ITERS] [-g GPUS] [-c 0|1] [--ops LIST]\n"
    "       mpirun -n R shardsim-calib coll ...    (one GPU per process, when built with MPI)\n"
    "       shardsim-calib replay SCENARIO [--rank R] [--set PATH=VALUE]... [-o MEASURED.json]\n"
    "                             [--trace TRACE.json] [--predicted PREDICTED.json]\n"
    "                             [--iters N] [--no-host] [--tf32] [-d DEV]\n"
    "       shardsim-calib all    [-o FILE.json] [--budget-s S] [--peak-file DEVICE.json] [-d DEV]\n"
    "\n"
    "  gemm    cuBLAS GEMM time and TFLOP/s per shape and dtype (bf16, fp16, fp32, tf32, fp8)\n"
    "  copy    cudaMemcpyAsync d2d, h2d and d2h (pinned and pageable) over a size sweep\n"
    "  launch  kernel launch overhead: host per launch, device per kernel, round trip\n"
    "  coll    NCCL collectives over a size sweep, printed in nccl-tests' format\n"
    "          (ops: all_reduce, all_gather, reduce_scatter, broadcast, alltoall, sendrecv)\n"
    "  replay  run rank R of SCENARIO's simulated step on this GPU; -o writes a summary\n"
    "          that `shardsim diff PREDICTED MEASURED` compares, --trace a Perfetto trace\n"
    "  all     gemm + copy + launch + coll (one process, local GPUs) in about 3 minutes\n"
    "\n"
    "  -o       the measurement file (JSON; docs/HARNESS.md), written atomically\n"
    "  -b -e    sizes in bytes, K/M/G suffixes (powers of 1024); -f the factor between sizes\n"
    "  -r       timed repeats; the median is reported (default 5)\n"
    "  -d       CUDA device (default 0)\n"
    "  --peak-file  copy a device file's peak_tflops (topologies/devices/) into the output\n"
    "  --no-host    replay host ops (runtime hooks) as nothing instead of their predicted time\n";

const char *hx_usage(void) { return usage_text; }

typedef struct hx_args {
    const char *verb, *file, *out, *trace, *predicted, *peak_file, *scenario;
    const char *shapes, *dtypes, *ops, *kinds;
    const char *sets[MAX_SETS];
    size_t nsets;
    int device, ngpus;
    uint32_t rank;
    uint64_t minb, maxb, factor, pageable_max;
    unsigned warmup, iters, repeats, launches;
    double budget_s;
    bool check, no_host, tf32;
} hx_args;

/* ---- messages and exit codes ---- */

static int report(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim-calib: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return err->code == SS_E_INPUT || err->code == SS_E_IO ? 2 : 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardsim-calib: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return 2;
}

/* ---- option values ---- */

/* "8", "64K", "128M", "1G": bytes with nccl-tests' binary suffixes. */
static bool parse_bytes(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || errno || v[0] == '-') return false;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    else if (*end == 'M' || *end == 'm') shift = 20;
    else if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (*end || n > (UINT64_MAX >> shift)) return false;
    *out = (uint64_t)n << shift;
    return true;
}

static bool parse_uint(const char *v, unsigned lo, unsigned hi, unsigned *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < (long)lo || n > (long)hi) return false;
    *out = (unsigned)n;
    return true;
}

/* Options that take a value, and which verbs accept them. */
typedef struct optdef {
    const char *name, *verbs;
} optdef;

static const optdef valued[] = {
    {"-o", "gemm copy launch coll replay all"}, {"-d", "gemm copy launch replay all"},
    {"-r", "gemm copy launch"},  {"-b", "copy coll"}, {"-e", "copy coll"}, {"-f", "copy coll"},
    {"-n", "launch coll"},       {"-w", "coll"},      {"-g", "coll"},      {"-c", "coll"},
    {"--ops", "coll"},           {"--kinds", "copy"}, {"--pageable-max", "copy"},
    {"--shapes", "gemm"},        {"--dtypes", "gemm"}, {"--scenario", "gemm"},
    {"--peak-file", "gemm all"}, {"--rank", "replay"}, {"--set", "replay"},
    {"--trace", "replay"},       {"--predicted", "replay"}, {"--iters", "replay"},
    {"--budget-s", "all"},
};

static bool verb_has(const char *verbs, const char *verb)
{
    size_t n = strlen(verb);
    for (const char *p = strstr(verbs, verb); p; p = strstr(p + 1, verb))
        if ((p == verbs || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

static bool set_int(const char *v, unsigned lo, unsigned hi, int *out)
{
    unsigned u = 0;
    if (!parse_uint(v, lo, hi, &u)) return false;
    *out = (int)u;
    return true;
}

/* 0: set; 1: not a numeric option; -1: a bad value. */
static int set_number(hx_args *a, const char *o, const char *v)
{
    unsigned u = 0;
    bool ok;
    if (!strcmp(o, "-d")) ok = set_int(v, 0, 1023, &a->device);
    else if (!strcmp(o, "-g")) ok = set_int(v, 1, BCOLL_MAX_GPUS, &a->ngpus);
    else if (!strcmp(o, "-r")) ok = parse_uint(v, 1, 64, &a->repeats);
    else if (!strcmp(o, "-b")) ok = parse_bytes(v, &a->minb) && a->minb > 0;
    else if (!strcmp(o, "-e")) ok = parse_bytes(v, &a->maxb) && a->maxb > 0;
    else if (!strcmp(o, "-n") && !strcmp(a->verb, "coll")) ok = parse_uint(v, 1, 100000, &a->iters);
    else if (!strcmp(o, "-n")) ok = parse_uint(v, 1, 1000, &a->launches);
    else if (!strcmp(o, "-w")) ok = parse_uint(v, 0, 100000, &a->warmup);
    else if (!strcmp(o, "--iters")) ok = parse_uint(v, 1, 100, &a->iters);
    else if (!strcmp(o, "--pageable-max")) ok = parse_bytes(v, &a->pageable_max);
    else if (!strcmp(o, "-f")) {
        ok = parse_uint(v, 2, 1024, &u);
        a->factor = u;
    } else if (!strcmp(o, "-c")) {
        ok = parse_uint(v, 0, 1, &u);
        a->check = u != 0;
    } else if (!strcmp(o, "--rank")) {
        ok = parse_uint(v, 0, 1u << 20, &u);
        a->rank = u;
    } else if (!strcmp(o, "--budget-s")) {
        ok = parse_uint(v, 10, 36000, &u);
        a->budget_s = u;
    } else {
        return 1;
    }
    return ok ? 0 : -1;
}

static int set_string(hx_args *a, const char *o, const char *v)
{
    const char **dst = !strcmp(o, "-o")            ? &a->out
                       : !strcmp(o, "--trace")     ? &a->trace
                       : !strcmp(o, "--predicted") ? &a->predicted
                       : !strcmp(o, "--peak-file") ? &a->peak_file
                       : !strcmp(o, "--scenario")  ? &a->scenario
                       : !strcmp(o, "--shapes")    ? &a->shapes
                       : !strcmp(o, "--dtypes")    ? &a->dtypes
                       : !strcmp(o, "--ops")       ? &a->ops
                       : !strcmp(o, "--kinds")     ? &a->kinds
                                                   : NULL;
    if (dst) {
        *dst = v;
        return 0;
    }
    if (strcmp(o, "--set") != 0) return 1;
    if (a->nsets == MAX_SETS) return -1;
    a->sets[a->nsets++] = v;
    return 0;
}

static int parse_opt(hx_args *a, int argc, char **argv, int *i)
{
    const char *o = argv[*i];
    bool replay = !strcmp(a->verb, "replay");
    if (replay && !strcmp(o, "--no-host")) {
        a->no_host = true;
        return 0;
    }
    if (replay && !strcmp(o, "--tf32")) {
        a->tf32 = true;
        return 0;
    }
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
        if (strcmp(o, valued[k].name) != 0 || !verb_has(valued[k].verbs, a->verb)) continue;
        if (*i + 1 >= argc) return usage_error("%s needs a value", o);
        const char *v = argv[++*i];
        int rc = set_number(a, o, v);
        if (rc > 0) rc = set_string(a, o, v);
        if (rc == 0) return 0;
        fprintf(stderr, "shardsim-calib: %s %s: bad value \"%s\" (see --help)\n", a->verb, o, v);
        return 2;
    }
    fprintf(stderr, "shardsim-calib: %s: unknown option %s\n%s", a->verb, o, usage_text);
    return 2;
}

static void defaults(hx_args *a, const char *verb)
{
    bool coll = !strcmp(verb, "coll");
    *a = (hx_args){.verb = verb, .repeats = 5, .launches = 500, .warmup = 5, .iters = coll ? 20 : 3,
                   .factor = coll ? 2 : 4, .minb = coll ? 8 : 4096, .maxb = coll ? 128u << 20 : 1u << 30,
                   .pageable_max = 256u << 20, .budget_s = 180, .check = true};
}

static int parse(hx_args *a, const char *verb, int argc, char **argv)
{
    defaults(a, verb);
    int i = argc > 0 && !strcmp(argv[0], verb) ? 1 : 0;
    for (; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            int rc = parse_opt(a, argc, argv, &i);
            if (rc) return rc;
        } else if (!strcmp(verb, "replay") && !a->file) {
            a->file = argv[i];
        } else {
            return usage_error("unexpected argument %s", argv[i]);
        }
    }
    if (!strcmp(verb, "replay") && !a->file) return usage_error("%s", "replay needs a SCENARIO file");
    if (a->minb > a->maxb) return usage_error("%s", "-b is larger than -e");
    return 0;
}

/* ---- shared steps ---- */

static void banner(const gpu_info *g, const char *verb)
{
    printf("# shardsim-calib %s on %s (device %d, %s, sm_%d%d, %d SMs, %zu MiB L2, %zu MiB)\n"
           "# driver %s, CUDA %s, NCCL %s\n",
           verb, g->name, g->device, g->bus, g->cc_major, g->cc_minor, g->sms, g->l2_bytes >> 20,
           g->mem_bytes >> 20, g->driver, g->cuda, g->nccl);
}

static int new_meas(const gpu_info *g, meas **m, ss_err *err)
{
    meas_hdr h = {g->name, g->driver, g->cuda, g->nccl};
    return meas_new(m, &h, err);
}

static int open_meas(const hx_args *a, gpu_info *g, meas **m, ss_err *err)
{
    int rc = gpu_open(a->device, g, err);
    if (!rc) rc = new_meas(g, m, err);
    if (!rc && a->peak_file) rc = meas_peaks_from(*m, a->peak_file, err);
    if (!rc) banner(g, a->verb);
    return rc;
}

static int finish(const hx_args *a, meas *m, int rc, ss_err *err)
{
    if (!rc && a->out && meas_empty(m))
        rc = ss_fail(err, HX_E_DEVICE, a->out, "nothing was measured, so nothing was written");
    if (!rc && a->out) rc = meas_write(m, a->out, err);
    if (!rc && a->out) printf("# measurements written to %s\n", a->out);
    meas_free(m);
    fflush(stdout);
    return rc ? report(err) : 0;
}

/* ---- gemm ---- */

/* The default shapes (or --shapes), then the scenario's distinct GEMMs. */
static int gemm_shapes(const hx_args *a, bgemm_shape **out, size_t *n, ss_err *err)
{
    int rc = SS_OK;
    if (a->shapes) {
        rc = bgemm_parse_shapes(a->shapes, out, n, err);
    } else {
        *out = malloc(bgemm_ndefault * sizeof **out);
        if (!*out) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        memcpy(*out, bgemm_default_shapes, bgemm_ndefault * sizeof **out);
        *n = bgemm_ndefault;
    }
    if (rc || !a->scenario) return rc;
    spec_scenario s;
    run_result r = {0};
    rplan *rp = NULL;
    rplan_gemm *g = NULL;
    uint32_t ng = 0;
    if ((rc = scn_load(a->scenario, NULL, 0, &s, err))) return rc;
    rc = run_step(&s, NULL, &r, err);
    if (!rc) rc = rplan_new(&rp, r.pl, r.p, 0, err);
    if (!rc) rc = rplan_unique_gemms(rp, &g, &ng, err);
    bgemm_shape *v = !rc ? realloc(*out, (*n + ng + 1) * sizeof *v) : NULL;
    if (!rc && !v) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; !rc && i < ng; i++) v[(*n)++] = (bgemm_shape){g[i].m, g[i].n, g[i].k};
    if (v) *out = v;
    if (!rc) printf("# gemm: %u shapes from %s\n", ng, a->scenario);
    free(g);
    rplan_free(rp);
    run_fini(&r);
    spec_scenario_fini(&s);
    return rc;
}

static int cmd_gemm(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    gpu_info g;
    meas *m = NULL;
    bgemm_shape *shapes = NULL;
    size_t n = 0;
    unsigned mask = BGEMM_ALL;
    int rc = a->dtypes ? bgemm_parse_dtypes(a->dtypes, &mask, &err) : SS_OK;
    if (!rc) rc = gemm_shapes(a, &shapes, &n, &err);
    if (!rc) rc = open_meas(a, &g, &m, &err);
    bgemm_opts o = {shapes, n, mask, a->repeats, 10.0, 0};
    if (!rc) rc = bgemm_run(&g, &o, m, stdout, &err);
    free(shapes);
    return finish(a, m, rc, &err);
}

/* ---- copy, launch ---- */

static int copy_kinds(const hx_args *a, bcopy_opts *o, ss_err *err)
{
    o->d2d = o->h2d = o->d2h = o->pinned = o->pageable = true;
    if (!a->kinds) return SS_OK;
    o->d2d = strstr(a->kinds, "d2d") != NULL;
    o->h2d = strstr(a->kinds, "h2d") != NULL;
    o->d2h = strstr(a->kinds, "d2h") != NULL;
    bool pin = strstr(a->kinds, "pinned") != NULL, page = strstr(a->kinds, "pageable") != NULL;
    if (pin || page) o->pinned = pin, o->pageable = page;
    if (!o->d2d && !o->h2d && !o->d2h)
        return ss_fail(err, SS_E_INPUT, "--kinds",
                       "expected some of d2d, h2d, d2h (and pinned, pageable), found \"%s\"", a->kinds);
    return SS_OK;
}

static bcopy_opts copy_opts(const hx_args *a, uint64_t deadline)
{
    return (bcopy_opts){.min_bytes = a->minb, .max_bytes = a->maxb, .pageable_max = a->pageable_max,
                        .factor = (double)a->factor, .repeats = a->repeats, .target_ms = 5.0,
                        .deadline_ns = deadline};
}

static int cmd_copy(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    gpu_info g;
    meas *m = NULL;
    bcopy_opts o = copy_opts(a, 0);
    int rc = copy_kinds(a, &o, &err);
    if (!rc) rc = open_meas(a, &g, &m, &err);
    if (!rc) rc = bcopy_run(&g, &o, m, stdout, &err);
    return finish(a, m, rc, &err);
}

static int cmd_launch(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    gpu_info g;
    meas *m = NULL;
    blaunch_opts o = {a->launches, a->repeats};
    int rc = open_meas(a, &g, &m, &err);
    if (!rc) rc = blaunch_run(&g, &o, m, stdout, NULL, &err);
    return finish(a, m, rc, &err);
}

/* ---- coll ---- */

static bcoll_opts coll_opts(const hx_args *a, unsigned ops, uint64_t deadline)
{
    return (bcoll_opts){a->minb, a->maxb, a->factor, a->warmup, a->iters, a->check, ops, a->ngpus,
                        deadline};
}

static int cmd_coll(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    bcoll_world w;
    gpu_info g;
    meas *m = NULL;
    unsigned ops = (1u << NCTX_NOPS) - 1;
    int rc = a->ops ? bcoll_parse_ops(a->ops, &ops, &err) : SS_OK;
    if (rc) return report(&err);
    if ((rc = bcoll_world_init(&w, a->ngpus, &err))) return report(&err);
    rc = gpu_open(w.devs[0], &g, &err);
    if (!rc) rc = new_meas(&g, &m, &err);
    if (!rc && w.root) banner(&g, "coll");
    bcoll_opts o = coll_opts(a, ops, 0);
    if (!rc) rc = bcoll_run(&w, &o, m, stdout, &err);
    bool root = w.root;
    bcoll_world_fini(&w, &err);
    if (!rc) rc = err.code;
    if (!root) {
        meas_free(m);
        return rc ? report(&err) : 0;
    }
    return finish(a, m, rc, &err);
}

/* ---- all ---- */

static int all_parts(const hx_args *a, const gpu_info *g, meas *m, ss_err *err)
{
    uint64_t t0 = gpu_now_ns(), budget = (uint64_t)(a->budget_s * 1e9);
    bgemm_opts go = {bgemm_default_shapes, bgemm_ndefault, BGEMM_ALL, 5, 10.0, t0 + budget / 2};
    int rc = bgemm_run(g, &go, m, stdout, err);
    hx_args ca = *a;
    ca.minb = 4096;
    ca.maxb = 1u << 30;
    ca.factor = 4;
    bcopy_opts co = copy_opts(&ca, t0 + budget / 10 * 7);
    co.d2d = co.h2d = co.d2h = co.pinned = co.pageable = true;
    if (!rc) rc = bcopy_run(g, &co, m, stdout, err);
    blaunch_opts lo = {500, 5};
    if (!rc) rc = blaunch_run(g, &lo, m, stdout, NULL, err);
    bcoll_world w;
    if (!rc) rc = bcoll_world_init(&w, 0, err);
    if (rc) return rc;
    hx_args la = *a;
    la.minb = 8;
    la.maxb = 1u << 30;
    la.factor = 2;
    la.warmup = 5;
    la.iters = 20;
    bcoll_opts bo = coll_opts(&la, (1u << NCTX_NOPS) - 1, t0 + budget);
    rc = bcoll_run(&w, &bo, m, stdout, err);
    bcoll_world_fini(&w, err);
    printf("# all: %.1f s\n", (double)(gpu_now_ns() - t0) * 1e-9);
    return rc ? rc : err->code;
}

static int cmd_all(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    gpu_info g;
    meas *m = NULL;
    int rc = open_meas(a, &g, &m, &err);
    if (!rc) rc = all_parts(a, &g, m, &err);
    return finish(a, m, rc, &err);
}

/* ---- replay ---- */

typedef struct rp_state {
    spec_scenario s;
    bool loaded;
    run_result r;
    rplan *rp;
    rexec_out ro;
    char *pred, *js, *tr;
} rp_state;

static void rp_fini(rp_state *x)
{
    free(x->pred);
    free(x->js);
    free(x->tr);
    rexec_out_fini(&x->ro);
    rplan_free(x->rp);
    run_fini(&x->r);
    if (x->loaded) spec_scenario_fini(&x->s);
}

static void print_plan(const rplan *rp, const char *file)
{
    printf("# replay %s, rank %u of %u: %u steps (", file, rp->rank, prog_nranks(rp->p), rp->nsteps);
    for (int k = 0; k < RPLAN_NKINDS; k++)
        printf("%s%u %s", k ? ", " : "", rp->count[k], rplan_kind_name((rplan_kind)k));
    printf("), %u GEMMs, %u stream waits, %u host syncs, %u deps implied by order, "
           "%u steps approximated\n", rp->ngemms, rp->waits, rp->syncs, rp->implied, rp->flagged);
    fflush(stdout);
}

static int replay_outputs(const hx_args *a, rp_state *x, ss_err *err)
{
    int rc = SS_OK;
    if (a->out) rc = of_write_text(a->out, x->js, err);
    if (!rc && a->trace) rc = of_write_text(a->trace, x->tr, err);
    if (!rc && a->predicted) rc = of_write_text(a->predicted, x->pred, err);
    if (!rc) rc = diff_text(x->pred, "predicted", x->js, "measured", stdout, err);
    return rc;
}

static int cmd_replay(const hx_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    rp_state x;
    memset(&x, 0, sizeof x);
    gpu_info g;
    rexec_opts ro = {a->iters, !a->no_host, a->tf32};
    int rc = scn_load(a->file, a->sets, a->nsets, &x.s, &err);
    x.loaded = rc == SS_OK;
    x.s.par.fold = false; /* --rank names a world rank: every rank's program */
    if (!rc) rc = run_step(&x.s, NULL, &x.r, &err);
    if (!rc) rc = rplan_new(&x.rp, x.r.pl, x.r.p, a->rank, &err);
    if (!rc) print_plan(x.rp, a->file);
    if (!rc) rc = gpu_open(a->device, &g, &err);
    if (!rc) banner(&g, "replay");
    if (!rc) rc = rexec_run(x.rp, &g, &ro, &x.ro, &err);
    rplan_meas m = rexec_meas(&x.ro, &g, !a->no_host);
    if (!rc) rc = rplan_report(x.rp, &x.s, &m, &x.js, &x.tr, &err);
    if (!rc && !(x.pred = sum_json(&x.r.sum))) rc = ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) rc = replay_outputs(a, &x, &err);
    rp_fini(&x);
    fflush(stdout);
    return rc ? report(&err) : 0;
}

/* ---- entry ---- */

int hx_main(const char *verb, int argc, char **argv)
{
    if (!verb || !strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
        fputs(usage_text, stdout);
        return verb ? 0 : 2;
    }
    static const char *const verbs[] = {"gemm", "copy", "launch", "coll", "replay", "all"};
    size_t v = 0;
    while (v < sizeof verbs / sizeof verbs[0] && strcmp(verb, verbs[v]) != 0) v++;
    if (v == sizeof verbs / sizeof verbs[0]) return usage_error("unknown verb %s", verb);
    hx_args a;
    int rc = parse(&a, verbs[v], argc, argv);
    if (rc) return rc;
    if (v != 3 && bcoll_mpi_launched()) {
        fprintf(stderr, "shardsim-calib: error: %s runs in one process; under mpirun only coll runs\n",
                verb);
        return 2;
    }
    switch (v) {
    case 0: return cmd_gemm(&a);
    case 1: return cmd_copy(&a);
    case 2: return cmd_launch(&a);
    case 3: return cmd_coll(&a);
    case 4: return cmd_replay(&a);
    default: return cmd_all(&a);
    }
}
