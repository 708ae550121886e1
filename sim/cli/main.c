/* shardsim - command line. The only place that prints to stderr or exits.
 *
 * Exit codes: 0 success; 1 a violated expectation (check) or an internal
 * error; 2 bad input or usage (the message names the file and JSON path). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../core/huge.h"
#include "../core/ofile.h"
#include "../io/scenario.h"
#include "../out/chrome.h"
#include "../out/diff.h"
#include "../out/dot.h"
#include "../out/expect.h"
#include "../out/kineto.h"
#include "../out/memsnap.h"
#include "../run/run.h"
#include "../run/sweep.h"
#include "coll_cmd.h"
#include "dist.h"
#include "hint.h"
#include "limit.h"
#include "quick.h"
#include "out.h"
#include "search_cmd.h"
#include "validate_cmd.h"
#include "keys_cmd.h"

#define MAX_SETS 256
#define MAX_FILES 4096

static const char usage[] =
    "usage: shardsim run SCENARIO [--json FILE] [--trace FILE] [--dot FILE] [--svg FILE]\n"
    "                    [--kineto DIR] [--memory-snapshot FILE]\n"
    "       shardsim run --model FILE|hf:CONFIG.json --gpus N [--gpu KIND]\n"
    "                    [--torchtitan JOB.toml] [...]\n"
    "       shardsim run --torchtitan JOB.toml --gpus N [--gpu KIND] [...]\n"
    "                    [--window MS..MS] [--ranks A..B] [--set PATH=VALUE]...\n"
    "                    [--memory] [--quiet] [--timing] [--max-memory SIZE]\n"
    "                    [--expect | --no-expect] [--top N] [--no-advice]\n"
    "       shardsim check SCENARIO... [--set PATH=VALUE]... [--junit FILE]\n"
    "       shardsim diff A B [--set PATH=VALUE]... [--svg FILE] [--ranks A..B]\n"
    "       shardsim sweep SCENARIO --vary PATH=V1,V2,... [--vary ...] [--set ...]\n"
    "                      [-j THREADS] [-o FILE.csv] [--svg FILE]\n"
    "       shardsim search SCENARIO [--world N] [--tp L] [--cp L] [--pp L] [--ep L]\n"
    "                       [--strategy L] [--recompute L] [--global-batch N] [--set ...]\n"
    "                       [-j THREADS] [--csv FILE] [--max-points N] [--quiet]\n"
    "       shardsim coll --topology FILE --op OP [--ranks N] [--nodes N] [-b SIZE]\n"
    "                     [-e SIZE] [-f FACTOR] [--algo A] [--proto P] [-o FILE]\n"
    "       shardsim coll --topology FILE --compare NCCL_TESTS_LOG [--table LABEL] ...\n"
    "       shardsim validate [FILE|FOLDER]... [--json FILE] [-j THREADS] [--strict]\n"
    "       shardsim keys SCENARIO|FOLDER... [--markdown | --cases]\n"
    "       shardsim --version | --help\n"
    "\n"
    "  run      simulate one training step of SCENARIO and print a summary\n"
    "  check    simulate every SCENARIO and test its \"expect\" block; exit 1 if any\n"
    "           expectation is violated, with a table of what failed (and by how\n"
    "           much); --junit writes the results as JUnit XML for CI\n"
    "  diff     compare two runs side by side; A and B are JSON summaries or\n"
    "           scenarios (simulated first, --set applying to both); --svg draws\n"
    "           the two timelines one above the other on one time scale and\n"
    "           one memory scale\n"
    "  coll     predict one collective alone on the machine over a size sweep, in\n"
    "           nccl-tests' columns; --compare reads a real nccl-tests log and\n"
    "           prints predicted vs measured per row and the median error\n"
    "  sweep    simulate the cartesian product of the --vary lists on THREADS\n"
    "           threads (default 1) and write one CSV row per point; under\n"
    "           mpirun -n K the points are split across the K processes;\n"
    "           --svg draws each point's step as a bar on one time scale\n"
    "  search   simulate every layout (tp, cp, pp, ep, dp) and sharding choice of\n"
    "           the lists over the world's GPUs at one global batch; print the\n"
    "           fastest that fits and the memory/time Pareto front, --csv all of\n"
    "           them (shardsim search --help for the options)\n"
    "  validate simulate the scenarios that carry a \"measured\" figure (default:\n"
    "           scenarios/published) and print predicted vs measured, the signed\n"
    "           error and its split, per source and overall (validate --help)\n"
    "  keys     the scenario keys as the loader reads them (kind, bounds,\n"
    "           default), from the given scenarios; --cases: a bad value for each\n"
    "";

/* The options, apart: one string literal may hold at most 4,095 characters. */
static const char usage_options[] =
    "  --json   also write the summary as JSON to FILE ('-' for stdout)\n"
    "  --trace  write a Chrome/Perfetto trace (Trace Event Format JSON) to FILE\n"
    "  --kineto write each rank's step as a PyTorch profiler (Kineto) trace,\n"
    "           DIR/rank_<N>.json, for HolisticTraceAnalysis (creates DIR)\n"
    "  --memory-snapshot  write rank 0's allocator over the step as the pickle\n"
    "           torch.cuda.memory._dump_snapshot writes, for pytorch.org/memory_viz\n"
    "  --dot    write the timeline as Graphviz DOT (for neato -n2) to FILE\n"
    "  --svg    render the timeline to an SVG FILE with Graphviz's neato; ranks\n"
    "           that run the same ops at the same times are drawn once\n"
    "  --window draw only this time range of the step, in ms (e.g. 2.5..6)\n"
    "  --ranks  draw (each one) and trace only these ranks, --kineto too (default: all)\n"
    "  --set    override a scenario key, e.g. --set sharding.strategy=full_shard\n"
    "  --memory print what is live at rank 0's memory peak: each category's total\n"
    "           and its --top N largest tensors (default 10; 0: all)\n"
    "  --quiet  do not print the text summary\n"
    "  --timing print the wall time of each stage (and of the outputs) to stderr\n"
    "  --expect / --no-expect  check the scenario's \"expect\" block even after\n"
    "           --set (by default a changed scenario's is not checked) / never\n"
    "  --model  no scenario file: the model (a shardsim model file, or hf: and a\n"
    "           Hugging Face config.json) on --gpus N GPUs of --gpu: h100 (the\n"
    "           default), h200, a100, b200 (nodes of 8 on InfiniBand), gb200\n"
    "           (NVL72 racks of 72), h100-pcie (one server of 8 PCIe cards);\n"
    "           FSDP2 as torchtitan runs it, 1 x 4096 tokens per GPU;\n"
    "           --set changes any of it\n"
    "  --torchtitan  the parallel, training, precision, optimizer and sharding\n"
    "           sections from a torchtitan TOML job config; without --model, the\n"
    "           model its [model] names (llama3 8B, 70B, 405B)\n"
    "  --no-advice  when the step does not fit, do not try the usual changes\n"
    "           (recompute, another sharding, optimizer offload, ...) one by one\n"
    "  --max-memory  cap the process's memory (address space) at SIZE, e.g. 8G;\n"
    "           a run that needs more stops with \"out of memory\" and the budget\n"
    "           (run, check, diff, sweep; default: no cap)\n";

typedef struct cli_args {
    const char *json, *trace, *dot, *svg;
    const char *kineto;   /* --kineto DIR */
    const char *snapshot; /* --memory-snapshot FILE */
    dot_opts view;
    char win_from[128], win_to[128]; /* --window by op names, resolved after the run */
    const char *files[MAX_FILES];
    size_t nfiles;
    const char *sets[MAX_SETS];
    size_t nsets;
    int quiet, memory, timing, expect, no_expect, no_advice;
    uint64_t max_memory; /* --max-memory: bytes of address space, 0 = none */
    uint32_t top;        /* --top: tensors per category in --memory (0: all) */
    const char *junit;   /* check --junit FILE */
    const char *quick_model, *quick_gpu; /* run --model FILE --gpus N [--gpu KIND] */
    const char *quick_tt;                /* [--torchtitan JOB.toml] */
    uint32_t quick_gpus;
    char *quick_text;    /* the scenario they make (cli/quick.h) */
    const char *out;
    unsigned threads;
    sweep_cfg sweep;
} cli_args;

static int exit_code(int rc) { return rc == SS_E_INPUT || rc == SS_E_IO ? 2 : 1; }

/* --max-memory, set once in main before any command runs: what an
 * "out of memory" is measured against. */
static uint64_t max_memory;

static int report(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim: error: %s\n", ss_err_str(err, buf, sizeof buf));
    if (err->code == SS_E_NOMEM && max_memory)
        fprintf(stderr, "shardsim: the run needed more than --max-memory %.0f MiB of address space; "
                        "fold the layout (--set parallel.fold=true), leave out --trace and --dot, "
                        "or raise the budget\n",
                (double)max_memory / (double)(1ull << 20));
    return exit_code(err->code);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardsim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s%s", usage, usage_options);
    return 2;
}

/* An option no command of this kind takes, with the nearest one it does. */
static int unknown_option(const char *s, int is_run)
{
    static const char *const run[] = {"--json", "--trace", "--dot",    "--svg",   "--window",
                                      "--ranks", "--set",  "--memory", "--quiet", "--timing",
                                      "--max-memory", "--expect", "--no-expect", "--top",
                                      "--no-advice", "--model", "--gpus", "--gpu",
                                      "--torchtitan", "--kineto", "--memory-snapshot"};
    static const char *const sweep[] = {"--set", "--vary", "-o", "-j", "--svg", "--max-memory"};
    static const char *const diff[] = {"--set", "--svg", "--window", "--ranks", "--max-memory"};
    static const char *const check[] = {"--set", "--max-memory", "--junit"};
    const char *hit = is_run == 1   ? cli_nearest(s, run, sizeof run / sizeof *run)
                      : is_run == 2 ? cli_nearest(s, sweep, sizeof sweep / sizeof *sweep)
                      : is_run == 3 ? cli_nearest(s, diff, sizeof diff / sizeof *diff)
                                    : cli_nearest(s, check, 3);
    fprintf(stderr, "shardsim: unknown option %s", s);
    if (hit) fprintf(stderr, " (did you mean %s?)", hit);
    fprintf(stderr, "\n%s%s", usage, usage_options);
    return 2;
}

/* "A..B": a window in ms (--window) or a rank range (--ranks). */
static int parse_range(const char *opt, const char *v, dot_opts *view, cli_args *names)
{
    char a[64], *end;
    const char *dots = strstr(v, "..");
    if (!dots || dots == v || (size_t)(dots - v) >= sizeof a)
        return usage_error("expected A..B, not %s", v);
    memcpy(a, v, (size_t)(dots - v));
    a[dots - v] = '\0';
    double lo = strtod(a, &end);
    const char *b = dots + 2;
    if (opt[2] == 'w' && (end == a || *end)) { /* op names: fwd.layers.3..bwd.layers.3 */
        snprintf(names->win_from, sizeof names->win_from, "%s", a);
        snprintf(names->win_to, sizeof names->win_to, "%s", b);
        return *b ? 0 : usage_error("expected NAME..NAME, not %s", v);
    }
    if (end == a || *end) return usage_error("expected A..B, not %s", v);
    double hi = strtod(b, &end);
    if (end == b || *end || !isfinite(lo) || !isfinite(hi) || hi < lo || lo < 0)
        return usage_error("expected A..B with 0 <= A <= B, both finite, not %s", v);
    if (opt[2] == 'r' && (lo != floor(lo) || hi != floor(hi) || hi > (double)UINT32_MAX - 1))
        return usage_error("expected ranks A..B, whole numbers below 2^32 - 1, not %s", v);
    if (opt[2] == 'w' && hi > 1e9)
        return usage_error("expected a window within 10^9 ms (11 days), not %s", v);
    if (opt[2] == 'w') {
        view->t_lo = ss_ns_from_s(lo * 1e-3);
        view->t_hi = ss_ns_from_s(hi * 1e-3);
        if (view->t_hi <= view->t_lo) return usage_error("the window %s is empty", v);
    } else {
        view->rank_lo = (uint32_t)lo;
        view->rank_hi = (uint32_t)hi;
        view->every_rank = true; /* asked for by number: each is drawn */
    }
    return 0;
}

static int parse_sweep_opt(int argc, char **argv, int *i, cli_args *a)
{
    const char *s = argv[*i];
    if (*i + 1 >= argc) return usage_error("%s needs a value", s);
    const char *v = argv[++*i];
    if (!strcmp(s, "-o")) {
        a->out = v;
    } else if (!strcmp(s, "-j")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 64) return usage_error("-j takes 1 to 64 threads, not %s", v);
        a->threads = (unsigned)n;
    } else {
        if (a->sweep.nvary == SWEEP_MAX_VARY) return usage_error("at most 16 --vary (%s)", v);
        ss_err err;
        ss_err_clear(&err);
        if (sweep_vary_parse(v, &a->sweep.vary[a->sweep.nvary], &err)) return report(&err);
        a->sweep.nvary++;
    }
    return 0;
}

static int parse_opt(int argc, char **argv, int *i, cli_args *a, int is_run)
{
    const char *s = argv[*i];
    bool has_val = *i + 1 < argc;
    if (is_run == 2 && (!strcmp(s, "-o") || !strcmp(s, "-j") || !strcmp(s, "--vary")))
        return parse_sweep_opt(argc, argv, i, a);
    if (!strcmp(s, "--max-memory")) {
        uint64_t b = 0;
        if (!has_val) return usage_error("%s needs a value", s);
        if (!cli_parse_size(argv[++*i], &b) || b < (64ull << 20))
            return usage_error("--max-memory: expected a size of at least 64M like 512M or 8G, not %s",
                               argv[*i]);
        a->max_memory = b;
    } else if (!strcmp(s, "--set")) {
        if (!has_val) return usage_error("%s needs a value", s);
        if (a->nsets == MAX_SETS) return usage_error("too many --set (%s)", "max 256");
        a->sets[a->nsets++] = argv[++*i];
    } else if ((is_run == 1 && (!strcmp(s, "--json") || !strcmp(s, "--trace") ||
                                !strcmp(s, "--dot"))) ||
               (is_run >= 1 && !strcmp(s, "--svg"))) {
        if (!has_val) return usage_error("%s needs a value", s);
        const char **dst = s[2] == 'j' ? &a->json : s[2] == 't' ? &a->trace
                           : s[2] == 'd' ? &a->dot : &a->svg;
        *dst = argv[++*i];
    } else if ((is_run == 1 || is_run == 3) && (!strcmp(s, "--window") || !strcmp(s, "--ranks"))) {
        if (!has_val) return usage_error("%s needs a value", s);
        return parse_range(s, argv[++*i], &a->view, a);
    } else if (is_run == 1 && !strcmp(s, "--quiet")) {
        a->quiet = 1;
    } else if (is_run == 1 && (!strcmp(s, "--kineto") || !strcmp(s, "--memory-snapshot"))) {
        if (!has_val) return usage_error("%s needs a value", s);
        *(s[2] == 'k' ? &a->kineto : &a->snapshot) = argv[++*i];
    } else if (is_run == 1 && !strcmp(s, "--memory")) {
        a->memory = 1;
    } else if (is_run == 1 && !strcmp(s, "--timing")) {
        a->timing = 1;
    } else if (is_run == 0 && !strcmp(s, "--junit")) {
        if (!has_val) return usage_error("%s needs a value", s);
        a->junit = argv[++*i];
    } else if (is_run == 1 && (!strcmp(s, "--model") || !strcmp(s, "--gpu"))) {
        if (!has_val) return usage_error("%s needs a value", s);
        *(s[2] == 'm' ? &a->quick_model : &a->quick_gpu) = argv[++*i];
    } else if (is_run == 1 && !strcmp(s, "--torchtitan")) {
        if (!has_val) return usage_error("%s needs a value", s);
        a->quick_tt = argv[++*i];
    } else if (is_run == 1 && !strcmp(s, "--gpus")) {
        char *end;
        if (!has_val) return usage_error("%s needs a value", s);
        const char *v = argv[++*i];
        unsigned long n = strtoul(v, &end, 10);
        if (end == v || *end || v[0] == '-' || n < 1 || n > (1ul << 20))
            return usage_error("--gpus: expected a count of GPUs from 1 to 2^20, not %s", v);
        a->quick_gpus = (uint32_t)n;
    } else if (is_run == 1 && !strcmp(s, "--top")) {
        char *end;
        if (!has_val) return usage_error("%s needs a value", s);
        const char *v = argv[++*i];
        unsigned long n = strtoul(v, &end, 10);
        if (end == v || *end || v[0] == '-' || n > 1000000)
            return usage_error("--top: expected a count of tensors per category (0: all), not %s", v);
        a->top = (uint32_t)n;
    } else if (is_run == 1 && !strcmp(s, "--expect")) {
        a->expect = 1;
    } else if (is_run == 1 && !strcmp(s, "--no-expect")) {
        a->no_expect = 1;
    } else if (is_run == 1 && !strcmp(s, "--no-advice")) {
        a->no_advice = 1;
    } else {
        return unknown_option(s, is_run);
    }
    return 0;
}

static int parse_args(int argc, char **argv, cli_args *a, int is_run)
{
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            int rc = parse_opt(argc, argv, &i, a, is_run);
            if (rc) return rc;
        } else if (a->nfiles == (is_run == 1 || is_run == 2 ? 1u : MAX_FILES)) {
            return usage_error("too many scenario files (%s)", argv[i]);
        } else {
            a->files[a->nfiles++] = argv[i];
        }
    }
    bool quick = a->quick_model || a->quick_tt;
    if (quick && a->nfiles)
        return usage_error("%s", "give a SCENARIO or --model / --torchtitan, not both (a scenario "
                                 "names a torchtitan config as \"trainer\": {\"torchtitan\": PATH})");
    if (!quick && (a->quick_gpus || a->quick_gpu))
        return usage_error("%s", "--gpus and --gpu go with --model FILE or --torchtitan FILE");
    if (quick && !a->quick_gpus)
        return usage_error("%s", a->quick_model ? "--model needs --gpus N" : "--torchtitan needs --gpus N");
    if (quick) return 0;
    if (!a->nfiles) return usage_error("%s", "no SCENARIO file given");
    return 0;
}

/* One scenario: load, simulate, render JSON, check expectations. */
typedef struct sim_one {
    spec_scenario s;
    run_result r;
    struct cJSON *tree; /* the summary */
    char *json;         /* printed, for --json only */
    exp_result *res;
    uint32_t nfailed;
} sim_one;

/* A scratch file in $TMPDIR (or /tmp) for Graphviz's input and output;
 * path receives its name, which the caller removes. */
static FILE *scratch(char *path, size_t n, ss_err *err)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/shardsim-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w+b");
    if (!f) {
        if (fd >= 0) close(fd), remove(path);
        ss_fail(err, SS_E_IO, path, "cannot create a scratch file: %s", strerror(errno));
    }
    return f;
}

/* The timeline as DOT text to f, which is then closed (fclose reports
 * a late write error, ENOSPC included). */
static int dot_to(const sim_one *o, const dot_opts *view, FILE *f, const char *path, ss_err *err)
{
    int rc = dot_write(&o->r.sum, o->r.t, view, f, err);
    int e = fflush(f) ? errno : ferror(f) ? EIO : 0;
    if (fclose(f) && !e) e = errno;
    if (!rc && e) rc = ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(e));
    return rc;
}

/* neato -n2 -Tsvg DOTFILE with its output on out's descriptor: Graphviz
 * draws, we only place. A Graphviz that is missing or complains is an
 * error naming svg, the output the user asked for. */
static int render_svg(const char *dotfile, FILE *out, const char *svg, ss_err *err)
{
    char *argv[] = {"neato", "-n2", "-Tsvg", (char *)dotfile, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0, rc = SS_OK;
    extern char **environ;
    fflush(out);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
    if (posix_spawnp(&pid, "neato", &fa, NULL, argv, environ) != 0)
        rc = ss_fail(err, SS_E_IO, svg, "cannot run Graphviz's neato: is graphviz installed?");
    else if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = ss_fail(err, SS_E_IO, svg, "neato failed to render %s", dotfile);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static void sim_fini(sim_one *o)
{
    free(o->res);
    free(o->json);
    cJSON_Delete(o->tree);
    run_fini(&o->r);
    spec_scenario_fini(&o->s);
}

/* The summary as JSON text, printed on first need (--json, diff). */
static int sim_json(sim_one *o, ss_err *err)
{
    if (!o->json) o->json = cJSON_Print(o->tree);
    return o->json ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

static int sim_run(const char *file, const cli_args *a, sim_one *o, ss_err *err)
{
    memset(o, 0, sizeof *o);
    int rc = a->quick_text ? scn_load_text(file, a->quick_text, strlen(a->quick_text), a->sets,
                                           a->nsets, &o->s, err)
                           : scn_load(file, a->sets, a->nsets, &o->s, err);
    if (rc) return rc;
    run_opts ro = {a->trace != NULL};
    if ((rc = run_step(&o->s, &ro, &o->r, err))) return rc;
    o->tree = sum_tree(&o->r.sum);
    o->res = calloc(o->s.nexpects ? o->s.nexpects : 1, sizeof *o->res);
    if (!o->tree || !o->res) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (a->json && (rc = sim_json(o, err))) return rc;
    return exp_check(&o->s, o->tree, o->res, &o->nfailed, err);
}

static void print_expectations(const sim_one *o, const char *file, bool only_failed, FILE *f)
{
    for (uint32_t i = 0; i < o->s.nexpects; i++) {
        const exp_result *x = &o->res[i];
        if (only_failed && x->ok) continue;
        fprintf(f, "  %-4s %-36s %-44s %-28s %s\n", x->ok ? "ok" : "FAIL", file, x->e->key,
                x->want, x->actual);
    }
}

/* --window NAME..NAME: from the start of rank 0's first op whose name
 * contains the first name to the end of the first op after it whose name
 * contains the second. */
static int window_by_names(const cli_args *a, const sim_one *o, dot_opts *view, ss_err *err)
{
    const prog *p = o->r.p;
    const trc *t = o->r.t;
    uint32_t n = prog_nops(p, 0), i = 0, j;
    while (i < n && !strstr(prog_str_get(p, prog_ops(p, 0)[i].name), a->win_from)) i++;
    for (j = i; j < n && !strstr(prog_str_get(p, prog_ops(p, 0)[j].name), a->win_to); j++) {}
    if (i == n || j == n)
        return ss_fail(err, SS_E_INPUT, "--window", "no op of rank 0 is named like \"%s\"%s",
                       i == n ? a->win_from : a->win_to, i == n ? "" : " after the first one");
    view->t_lo = t->ops[0][i].start;
    view->t_hi = t->ops[0][j].end > view->t_lo ? t->ops[0][j].end : view->t_lo + 1;
    return SS_OK;
}

/* --dot and --svg into their (open) outputs, each closed on success. The
 * SVG is rendered from the DOT output's bytes, or from a scratch DOT file
 * when no --dot was asked for. */
static int write_timeline(const cli_args *a, const sim_one *o, const dot_opts *ranks,
                          of_file *dot, of_file *svg, ss_err *err)
{
    dot_opts view = *ranks;
    char tmp[4096] = "";
    int rc = a->win_from[0] ? window_by_names(a, o, &view, err) : SS_OK;
    if (rc) return rc;
    FILE *f = dot ? of_stream(dot) : scratch(tmp, sizeof tmp, err);
    if (!f) return err->code;
    if (dot) {
        rc = dot_write(&o->r.sum, o->r.t, &view, f, err);
        if (!rc) rc = of_close(dot, err);
    } else {
        rc = dot_to(o, &view, f, tmp, err);
    }
    if (!rc && svg) rc = render_svg(dot ? of_written_path(dot) : tmp, of_stream(svg), a->svg, err);
    if (!rc && svg) rc = of_close(svg, err);
    if (tmp[0]) remove(tmp);
    return rc;
}

/* The trace into its output, closed on success; a write error is the
 * stream's, which of_close names. */
static int write_trace(const dot_opts *ranks, const sim_one *o, of_file *f, const char *path,
                       ss_err *err)
{
    ss_err werr;
    ss_err_clear(&werr);
    int w = chrome_write(&o->r.sum, o->r.t, ranks->rank_lo, ranks->rank_hi, of_stream(f), &werr);
    if (w == SS_E_NOMEM) return ss_fail(err, w, path, "%s", werr.msg);
    fputc('\n', of_stream(f));
    int rc = of_close(f, err);
    return rc ? rc : w ? ss_fail(err, SS_E_IO, path, "cannot write the trace") : SS_OK;
}

/* --memory-snapshot: into its output, closed on success. */
static int write_snapshot(const cli_args *a, const sim_one *o, of_file *f, ss_err *err)
{
    ss_err werr;
    ss_err_clear(&werr);
    int w = msnap_write(&o->r.sum, o->r.t, of_stream(f), &werr);
    if (w && w != SS_E_IO)
        return ss_fail(err, w, a->snapshot, "%s%s%s", werr.where, werr.where[0] ? ": " : "", werr.msg);
    int rc = of_close(f, err);
    return rc ? rc : w ? ss_fail(err, SS_E_IO, a->snapshot, "cannot write the memory snapshot") : SS_OK;
}

/* --kineto DIR: the file of each rank written (--ranks), each opened into
 * ks[*nk], written and closed; the caller publishes or aborts them. */
static int write_kineto(const cli_args *a, const dot_opts *ranks, const sim_one *o, of_file **ks,
                        uint32_t *nk, ss_err *err)
{
    const trc *t = o->r.t;
    int rc = SS_OK;
    for (uint32_t r = ranks->rank_lo; !rc && r < t->nranks && r <= ranks->rank_hi; r++) {
        char name[64], path[4096];
        kin_file_name(name, sizeof name, prog_rank_world(t->p, r));
        snprintf(path, sizeof path, "%s/%s", a->kineto, name);
        if ((rc = of_open(&ks[*nk], path, err))) break;
        ss_err werr;
        ss_err_clear(&werr);
        int w = kin_write(&o->r.sum, t, r, of_stream(ks[*nk]), &werr);
        of_file *f = ks[(*nk)++];
        if (w == SS_E_NOMEM) return ss_fail(err, w, path, "%s", werr.msg);
        fputc('\n', of_stream(f));
        rc = of_close(f, err);
        if (!rc && w) rc = ss_fail(err, SS_E_IO, path, "cannot write the Kineto trace");
    }
    return rc;
}

/* --ranks A..B names world ranks; a program folded along tp and cp holds
 * every stride-th of them (prog_rank_world): *out is the view with the
 * program ranks in A..B, an error where the range holds none. */
static int program_ranks(const cli_args *a, const trc *t, dot_opts *out, ss_err *err)
{
    *out = a->view;
    uint32_t stride = prog_stride(t->p);
    if (stride == 1 || !a->view.every_rank) return SS_OK;
    uint64_t lo = ((uint64_t)a->view.rank_lo + stride - 1) / stride, hi = a->view.rank_hi / stride;
    if (lo > hi)
        return ss_fail(err, SS_E_INPUT, "--ranks",
                       "ranks %u..%u hold no simulated rank: the step is folded to one rank in every %u "
                       "(ranks 0, %u, %u, ...), whose tensor- and context-parallel peers run the "
                       "same ops at the same times; name one of those, or add --set "
                       "parallel.fold=false to simulate every rank",
                       a->view.rank_lo, a->view.rank_hi, stride, stride, 2 * stride);
    out->rank_lo = (uint32_t)lo, out->rank_hi = (uint32_t)(hi < UINT32_MAX ? hi : UINT32_MAX);
    return SS_OK;
}

/* Every output of `run`, all or nothing (ofile.h): each is opened, written
 * and closed, and they are published only once all of them have been; on
 * any error none is left behind (in-place outputs, a pipe or a device,
 * keep what they were sent). */
static int write_outputs(const cli_args *a, const sim_one *o, ss_err *err)
{
    enum { JSON, DOT, SVG, TRACE, SNAP, N };
    const char *path[N] = {a->json, a->dot, a->svg, a->trace, a->snapshot};
    of_file *f[N] = {NULL};
    dot_opts ranks;
    int rc = program_ranks(a, o->r.t, &ranks, err);
    for (int k = 0; k < N && !rc; k++)
        if (path[k]) rc = of_open(&f[k], path[k], err);
    if (!rc && f[JSON]) {
        fputs(o->json, of_stream(f[JSON]));
        fputc('\n', of_stream(f[JSON]));
        rc = of_close(f[JSON], err);
    }
    if (!rc && (f[DOT] || f[SVG])) rc = write_timeline(a, o, &ranks, f[DOT], f[SVG], err);
    if (!rc && f[TRACE]) rc = write_trace(&ranks, o, f[TRACE], a->trace, err);
    if (!rc && f[SNAP]) rc = write_snapshot(a, o, f[SNAP], err);
    uint32_t nk = 0;
    bool made = false; /* the --kineto folder, removed again on failure */
    of_file **ks = a->kineto ? calloc(o->r.t->nranks ? o->r.t->nranks : 1, sizeof *ks) : NULL;
    if (!rc && a->kineto && !ks) rc = ss_fail(err, SS_E_NOMEM, a->kineto, "out of memory");
    if (!rc && a->kineto) rc = cli_mkdir(a->kineto, &made, err);
    if (!rc && a->kineto) rc = write_kineto(a, &ranks, o, ks, &nk, err);
    for (int k = 0; k < N; k++) {
        if (!rc && f[k]) rc = of_publish(f[k], err);
        else of_abort(f[k]);
        f[k] = NULL;
    }
    for (uint32_t k = 0; k < nk; k++) {
        if (!rc) rc = of_publish(ks[k], err);
        else of_abort(ks[k]);
    }
    if (rc && made) rmdir(a->kineto);
    free(ks);
    return rc;
}

static void print_timing(const sim_one *o, double t0)
{
    const double *w = o->r.wall_s;
    double all = run_wall_s() - t0;
    fprintf(stderr,
            "timing: %.3f s in all: build %.3f s, simulate %.3f s, summary %.3f s, load and "
            "outputs %.3f s (%u of %u ranks simulated, %llu ops, %llu events)\n",
            all, w[RUN_T_BUILD], w[RUN_T_SIMULATE], w[RUN_T_SUMMARY],
            all - w[RUN_T_BUILD] - w[RUN_T_SIMULATE] - w[RUN_T_SUMMARY], o->r.sum.nsim,
            o->r.pl->world, (unsigned long long)o->r.sum.nops,
            (unsigned long long)o->r.sum.nevents);
}

/* DOES NOT FIT: the scenario again with each of the usual remedies alone
 * (the ones this runtime and layout accept; the others fail to load and
 * are left out), with its peak and step, so the answer says what to
 * change. Each is a whole run of the scenario. */
static void print_advice(const cli_args *a, const sim_one *o)
{
    static const char *const tries[] = {
        "training.recompute=full", "training.recompute=selective", "sharding.strategy=fsdp2",
        "sharding.strategy=zero3", "offload.optimizer=cpu", "offload.params=cpu",
        "optimizer.impl=fused", "allocator.expandable_segments=true"};
    cli_args *b = malloc(sizeof *b);
    if (!b || a->nsets + 1 > MAX_SETS) {
        free(b);
        return;
    }
    printf("\n  what would fit in %.2f GiB, each change alone (peak reserved, step):\n",
           (double)sum_usable(&o->r.sum) / (double)(1ull << 30));
    unsigned shown = 0;
    ss_bytes peak0 = sum_max_peak_reserved(&o->r.sum);
    for (size_t k = 0; k < sizeof tries / sizeof *tries; k++) {
        *b = *a;
        b->trace = NULL;
        b->json = NULL; /* the advice reruns print nothing */
        b->sets[b->nsets++] = tries[k];
        sim_one x;
        ss_err err;
        ss_err_clear(&err);
        if (!sim_run(a->files[0], b, &x, &err)) {
            bool fits = sum_fits(&x.r.sum);
            ss_bytes peak = sum_max_peak_reserved(&x.r.sum);
            if (peak != peak0 || x.r.sum.step_ns != o->r.sum.step_ns) { /* else a no-op here */
                printf("    --set %-36s %8.2f GiB  %9.3f s  %s\n", tries[k],
                       (double)peak / (double)(1ull << 30), (double)x.r.sum.step_ns * 1e-9,
                       fits ? "fits" : "does not fit");
                shown++;
            }
        }
        sim_fini(&x);
    }
    if (!shown) printf("    (none of the usual changes applies to this runtime and layout)\n");
    free(b);
}

/* The file's expectations were written for the file: after --set they
 * would report on a scenario nobody wrote them for, so they are checked
 * only when asked (--expect); --no-expect leaves them out always. */
static void print_run_expectations(const cli_args *a, const sim_one *o)
{
    if (!o->s.nexpects || a->no_expect) return;
    if (a->nsets && !a->expect) {
        printf("\n  expectations: %u not checked: --set changed the scenario (--expect checks "
               "them anyway)\n", o->s.nexpects);
        return;
    }
    printf("\n  expectations: %u of %u hold\n", o->s.nexpects - o->nfailed, o->s.nexpects);
    print_expectations(o, a->files[0], false, stdout);
}

static int cmd_run(const cli_args *a)
{
    double t0 = run_wall_s();
    ss_err err;
    ss_err_clear(&err);
    sim_one o;
    int rc = sim_run(a->files[0], a, &o, &err);
    if (!rc) rc = write_outputs(a, &o, &err);
    if (!rc && !a->quiet) {
        for (size_t i = 0; i < a->nsets; i++) /* what ran is not the file's title alone */
            printf("%s --set %s\n", i ? "             " : "changed with", a->sets[i]);
        sum_text(&o.r.sum, stdout);
        if (!a->no_advice && o.s.capacity_bytes && !sum_fits(&o.r.sum)) print_advice(a, &o);
        print_run_expectations(a, &o);
    }
    if (!rc && a->memory) sum_ledger(&o.r.sum, o.r.t, 0, a->top, stdout);
    if (!rc && a->timing) print_timing(&o, t0);
    sim_fini(&o);
    return rc ? report(&err) : 0;
}

/* Text as XML attribute content. */
static void xml_attr(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s < 32) fprintf(f, "&#%d;", *s); /* \n and \t as characters */
            else fputc(*s, f);
        }
    }
}

/* One scenario as a JUnit testsuite: a testcase per expectation, or one
 * errored testcase when the scenario could not run. */
static void junit_suite(FILE *f, const char *file, const sim_one *o, const ss_err *err)
{
    char buf[1200];
    fputs("  <testsuite name=\"", f);
    xml_attr(f, file);
    if (err) {
        fputs("\" tests=\"1\" failures=\"0\" errors=\"1\">\n    <testcase classname=\"", f);
        xml_attr(f, file);
        fputs("\" name=\"load and run\"><error message=\"", f);
        xml_attr(f, ss_err_str(err, buf, sizeof buf));
        fputs("\"/></testcase>\n  </testsuite>\n", f);
        return;
    }
    fprintf(f, "\" tests=\"%u\" failures=\"%u\" errors=\"0\">\n", o->s.nexpects, o->nfailed);
    for (uint32_t i = 0; i < o->s.nexpects; i++) {
        const exp_result *x = &o->res[i];
        fputs("    <testcase classname=\"", f);
        xml_attr(f, file);
        fputs("\" name=\"", f);
        xml_attr(f, x->e->key);
        if (x->ok) {
            fputs("\"/>\n", f);
            continue;
        }
        snprintf(buf, sizeof buf, "expected %s, found %s", x->want, x->actual);
        fputs("\"><failure message=\"", f);
        xml_attr(f, buf);
        fputs("\"/></testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
}

static int cmd_check(const cli_args *a)
{
    size_t nexp = 0, nfail = 0, nbad = 0, jlen = 0;
    char *jtext = NULL;
    FILE *j = a->junit ? open_memstream(&jtext, &jlen) : NULL;
    if (a->junit && !j) return report(&(ss_err){SS_E_NOMEM, "", "out of memory"});
    for (size_t i = 0; i < a->nfiles; i++) {
        ss_err err;
        ss_err_clear(&err);
        sim_one o;
        if (sim_run(a->files[i], a, &o, &err)) {
            report(&err);
            nbad++;
            if (j) junit_suite(j, a->files[i], NULL, &err);
        } else {
            nexp += o.s.nexpects;
            nfail += o.nfailed;
            if (o.nfailed) {
                if (nfail == o.nfailed) printf("violated expectations:\n");
                print_expectations(&o, a->files[i], true, stdout);
            }
            if (j) junit_suite(j, a->files[i], &o, NULL);
        }
        sim_fini(&o);
    }
    printf("check: %zu scenarios, %zu expectations, %zu violated, %zu scenarios with errors\n",
           a->nfiles, nexp, nfail, nbad);
    int rc = nbad ? 2 : nfail ? 1 : 0;
    if (j && fclose(j) == 0) {
        size_t n = jlen + 256;
        char *all = malloc(n);
        ss_err err;
        ss_err_clear(&err);
        if (!all) return report(&(ss_err){SS_E_NOMEM, "", "out of memory"});
        snprintf(all, n, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"shardsim check\" "
                 "tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n%s</testsuites>\n",
                 nexp + nbad, nfail, nbad, jtext);
        if (of_write_text(a->junit, all, &err)) rc = report(&err);
        free(all);
    } else if (j) {
        rc = report(&(ss_err){SS_E_NOMEM, "", "out of memory"});
    }
    free(jtext);
    return rc;
}

/* A summary's JSON text: the file itself, or the simulated scenario's. */
static int summary_of(const char *file, const cli_args *a, char **text, ss_err *err)
{
    bool is_summary;
    int rc = scn_read_summary(file, text, &is_summary, err);
    if (rc || is_summary) return rc;
    sim_one o;
    rc = sim_run(file, a, &o, err);
    if (!rc) rc = sim_json(&o, err);
    if (!rc) {
        *text = o.json;
        o.json = NULL;
    }
    sim_fini(&o);
    return rc;
}

/* The file's text from its "<svg" on, and the height in points it declares. */
static char *svg_body(const char *path, double *width, double *height, ss_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[len] = '\0';
    char *svg = strstr(buf, "<svg"), *w = svg ? strstr(svg, "width=\"") : NULL;
    char *h = svg ? strstr(svg, "height=\"") : NULL;
    if (!svg || !w || !h) {
        free(buf);
        ss_fail(err, SS_E_IO, path, "neato wrote no SVG size");
        return NULL;
    }
    *width = strtod(w + 7, NULL);
    *height = strtod(h + 8, NULL);
    memmove(buf, svg, strlen(svg) + 1);
    return buf;
}

/* Two timelines on one time scale and one memory scale, A above B, as one
 * SVG of two nested ones. */
static int diff_svg(const cli_args *a, const sim_one *o, ss_err *err)
{
    char dots[2][4096] = {"", ""}, svgs[2][4096] = {"", ""};
    double w[2], h[2];
    char *body[2] = {NULL, NULL};
    dot_opts view = a->view;
    ss_ns ta = o[0].r.t->step_ns, tb = o[1].r.t->step_ns;
    if (!view.t_hi) view.t_hi = ta > tb ? ta : tb;
    /* One memory scale: the larger of the two rank-0 peaks. */
    for (int k = 0; k < 2; k++)
        if (o[k].r.sum.ranks && o[k].r.sum.ranks[0].mem.peak > view.mem_top)
            view.mem_top = o[k].r.sum.ranks[0].mem.peak;
    int rc = SS_OK;
    for (int k = 0; k < 2 && !rc; k++) {
        dot_opts vk; /* --ranks in each side's simulated ranks */
        if ((rc = program_ranks(a, o[k].r.t, &vk, err))) break;
        vk.t_hi = view.t_hi, vk.mem_top = view.mem_top;
        FILE *d = scratch(dots[k], sizeof dots[k], err), *g = NULL;
        rc = d ? dot_to(&o[k], &vk, d, dots[k], err) : err->code;
        if (!rc && !(g = scratch(svgs[k], sizeof svgs[k], err))) rc = err->code;
        if (!rc) rc = render_svg(dots[k], g, a->svg, err);
        if (g && fclose(g) && !rc) rc = ss_fail(err, SS_E_IO, svgs[k], "cannot write: %s", strerror(errno));
        if (!rc && !(body[k] = svg_body(svgs[k], &w[k], &h[k], err)))
            rc = ss_fail(err, SS_E_IO, svgs[k], "cannot read the rendered SVG");
        if (dots[k][0]) remove(dots[k]);
        if (svgs[k][0]) remove(svgs[k]);
    }
    if (!rc) {
        size_t n = strlen(body[0]) + strlen(body[1]) + 512;
        char *all = malloc(n);
        if (!all) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        else {
            snprintf(all, n, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0fpt\" height=\"%.0fpt\">\n"
                     "<svg x=\"0\" y=\"0\"%s\n<svg x=\"0\" y=\"%.0fpt\"%s\n</svg>\n",
                     w[0] > w[1] ? w[0] : w[1], h[0] + h[1], body[0] + 4, h[0], body[1] + 4);
            rc = of_write_text(a->svg, all, err);
            free(all);
        }
    }
    free(body[0]);
    free(body[1]);
    return rc;
}

static int cmd_diff(const cli_args *a)
{
    if (a->nfiles != 2) return usage_error("%s", "diff needs two files, A and B");
    if (a->svg) {
        ss_err err;
        ss_err_clear(&err);
        sim_one o[2];
        memset(o, 0, sizeof o);
        int rc = SS_OK;
        for (int k = 0; k < 2 && !rc; k++) {
            char *txt = NULL;
            bool summary = false;
            rc = scn_read_summary(a->files[k], &txt, &summary, &err);
            free(txt);
            if (!rc && summary)
                rc = ss_fail(&err, SS_E_INPUT, a->files[k],
                             "is a summary; --svg draws timelines, so it needs scenarios");
        }
        if (!rc) rc = sim_run(a->files[0], a, &o[0], &err);
        if (!rc) rc = sim_run(a->files[1], a, &o[1], &err);
        if (!rc) rc = sim_json(&o[0], &err);
        if (!rc) rc = sim_json(&o[1], &err);
        if (!rc) rc = diff_text(o[0].json, a->files[0], o[1].json, a->files[1], stdout, &err);
        if (!rc) rc = diff_svg(a, o, &err);
        sim_fini(&o[0]);
        sim_fini(&o[1]);
        return rc ? report(&err) : 0;
    }
    ss_err err;
    ss_err_clear(&err);
    char *ta = NULL, *tb = NULL;
    int rc = summary_of(a->files[0], a, &ta, &err);
    if (!rc) rc = summary_of(a->files[1], a, &tb, &err);
    if (!rc) rc = diff_text(ta, a->files[0], tb, a->files[1], stdout, &err);
    free(ta);
    free(tb);
    return rc ? report(&err) : 0;
}

/* sweep's -o CSV and --svg picture, all or nothing (ofile.h): both are
 * written and closed before either is published. Without -o the CSV goes
 * to stdout. */
static int write_sweep(const cli_args *a, const sweep_cfg *c, const sweep_fig *figs,
                       const char *rows, const char *all, ss_err *err)
{
    of_file *csv = NULL, *svg = NULL;
    int rc = a->out ? of_open(&csv, a->out, err) : SS_OK;
    if (!rc && a->svg) rc = of_open(&svg, a->svg, err);
    if (!rc) fputs(all, csv ? of_stream(csv) : stdout);
    if (!rc && svg) rc = sweep_svg(c, figs, rows, of_stream(svg), err);
    if (!rc && csv) rc = of_close(csv, err);
    if (!rc && svg) rc = of_close(svg, err);
    if (rc) {
        of_abort(csv);
        of_abort(svg);
        return rc;
    }
    rc = csv ? of_publish(csv, err) : SS_OK;
    if (rc) of_abort(svg);
    else if (svg) rc = of_publish(svg, err);
    return rc;
}

static int cmd_sweep(cli_args *a)
{
    if (!a->sweep.nvary) return usage_error("%s", "sweep needs at least one --vary PATH=V1,V2");
    sweep_cfg *c = &a->sweep;
    c->scenario = a->files[0];
    c->sets = a->sets;
    c->nsets = a->nsets;
    c->threads = a->threads ? a->threads : 1;
    c->stride = 1;
    cli_progress shown;
    cli_progress_init(&shown, "sweep", isatty(2) && !getenv("CI"));
    c->progress = cli_progress_cb;
    c->progress_ctx = &shown;
    if (a->svg && dist_active())
        return usage_error("%s", "sweep --svg draws in one process: run it without mpirun");
    ss_err err;
    ss_err_clear(&err);
    char *rows = NULL, *head = sweep_header(c), *all = NULL;
    bool root = true;
    size_t npts = sweep_points(c);
    sweep_fig *figs = a->svg && npts ? calloc(npts, sizeof *figs) : NULL;
    c->figs = figs;
    int rc = !head || (a->svg && npts && !figs) ? ss_fail(&err, SS_E_NOMEM, NULL, "out of memory")
             : dist_active() ? dist_sweep(c, &rows, &root, &err)
                             : sweep_run(c, &rows, &err);
    if (!rc && root && !(all = malloc(strlen(head) + strlen(rows) + 1)))
        rc = ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && root) {
        strcpy(all, head);
        strcat(all, rows);
        rc = write_sweep(a, c, figs, rows, all, &err);
    }
    free(all);
    free(rows);
    free(head);
    free(figs);
    for (size_t k = 0; k < c->nvary; k++) sweep_vary_fini(&c->vary[k]);
    return rc ? report(&err) : 0;
}

static int unknown_command(const char *s)
{
    static const char *const verbs[] = {"run", "check", "diff", "sweep", "search", "coll", "validate", "keys"};
    const char *hit = cli_nearest(s, verbs, sizeof verbs / sizeof *verbs);
    fprintf(stderr, "shardsim: unknown command %s", s);
    if (hit) fprintf(stderr, " (did you mean %s?)", hit);
    fprintf(stderr, "\n%s%s", usage, usage_options);
    return 2;
}

int main(int argc, char **argv)
{
    ss_huge_init();
    if (argc < 2) return usage_error("%s", "no command given");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        fputs(usage_options, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("shardsim " SHARDSIM_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "coll")) return coll_cmd(argc - 2, argv + 2);
    if (!strcmp(argv[1], "search")) return search_cmd(argc - 2, argv + 2);
    if (!strcmp(argv[1], "validate")) return validate_cmd(argc - 2, argv + 2);
    if (!strcmp(argv[1], "keys")) return keys_cmd(argc - 2, argv + 2);
    int is_diff = !strcmp(argv[1], "diff");
    int is_run = !strcmp(argv[1], "run") ? 1 : !strcmp(argv[1], "sweep") ? 2 : is_diff ? 3 : 0;
    if (!is_run && !is_diff && strcmp(argv[1], "check") != 0) return unknown_command(argv[1]);
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(usage_options, stdout);
            return 0;
        }
    static cli_args a;
    a.view = (dot_opts){0, UINT32_MAX, 0, 0, 16.0, false, 0};
    a.top = 10;
    int rc = parse_args(argc, argv, &a, is_run);
    if (rc) return rc;
    if (a.quick_model || a.quick_tt) {
        ss_err err;
        ss_err_clear(&err);
        if (quick_scenario(a.quick_model, a.quick_gpus, a.quick_gpu ? a.quick_gpu : "h100",
                           a.quick_tt, SS_DATA_DIR, &a.quick_text, &err))
            return report(&err);
        a.files[a.nfiles++] = "(run --model)";
    }
    if (a.max_memory) {
        ss_err err;
        ss_err_clear(&err);
        if (cli_limit_memory(a.max_memory, &err)) return report(&err);
        max_memory = a.max_memory;
    }
    if (is_run == 2) return cmd_sweep(&a);
    return is_run == 1 ? cmd_run(&a) : is_diff ? cmd_diff(&a) : cmd_check(&a);
}
