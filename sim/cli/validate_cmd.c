/* `shardsim validate`. validate_cmd.h states the contract. */
#include "validate_cmd.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/ofile.h"
#include "../run/validate.h"
#include "../run/vfit.h"

#define MAX_PATHS 1024
#define DEFAULT_DIR "scenarios/published"

static const char usage[] =
    "usage: shardsim validate [FILE|FOLDER]... [--json FILE] [--markdown FILE] [-j THREADS]\n"
    "                         [--set KEY=VALUE]... [--strict] [--fit KEY=VALUES]\n"
    "\n"
    "  Simulate every scenario with a \"measured\" block (default: the folder\n"
    "  " DEFAULT_DIR ") and compare with the figure its source measured:\n"
    "  one row per scenario (step time measured, predicted, signed error\n"
    "  (predicted - measured) / measured; the prediction's compute, exposed\n"
    "  communication and pipeline bubble; peak memory measured vs predicted),\n"
    "  then per source and overall the count, median |error| and median\n"
    "  signed error, for step time and memory separately, and PASS/FAIL of\n"
    "  the thresholds (overall median |error| <= 10%, |median signed| <= 5%,\n"
    "  every source's median |error| <= 20%). Where one source measured one\n"
    "  model at three or more sequence lengths, the time per token is also\n"
    "  fitted as rest + context x seq, measured and predicted apart, so that\n"
    "  the attention core's error and the rest's show on their own.\n"
    "\n"
    "  --json    also write the table as JSON to FILE ('-' for stdout)\n"
    "  --markdown  also write the tables as Markdown to FILE ('-' for stdout),\n"
    "            for a review or a README\n"
    "  -j        simulate on THREADS threads (default 1)\n"
    "  --set     change every scenario as `run --set` does (repeatable): a\n"
    "            what-if over the corpus, e.g. --set training.kernels=fused; the\n"
    "            outputs say what was changed\n"
    "  --strict  exit 1 when a threshold fails (default: exit 0 once it ran)\n"
    "  --fit     fit one global constant to the rows instead of printing the\n"
    "            table: KEY=V1,V2,... or KEY=LO:HI:STEP (e.g.\n"
    "            topology.device.gemm_efficiency=0.55:0.75:0.01); every value\n"
    "            simulates every row; prints each value's medians, the value\n"
    "            with the least median |error|, and the leave-one-source-out\n"
    "            cross-validated error beside it (each source's rows at the\n"
    "            value fitted without them). Select the rows the key applies\n"
    "            to with the FILE arguments\n";

#define MAX_SETS 64

typedef struct opts {
    const char *paths[MAX_PATHS];
    size_t npaths;
    const char *sets[MAX_SETS];
    size_t nsets;
    const char *json, *markdown, *fit;
    unsigned threads;
    bool strict;
} opts;

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "shardsim validate: %s %s\n\n%s", what, arg, usage);
    return 2;
}

static int fail(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim validate: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return err->code == SS_E_INPUT || err->code == SS_E_IO ? 2 : 1;
}

/* 0 parsed, 1 --help printed, 2 usage error (printed). */
static int parse(int argc, char **argv, opts *o)
{
    o->threads = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        if (!strcmp(a, "--strict")) {
            o->strict = true;
        } else if (!strcmp(a, "--set")) {
            if (i + 1 >= argc) return bad("missing value after", a);
            if (o->nsets == MAX_SETS) return bad("too many --set at", argv[i + 1]);
            if (!strchr(argv[i + 1], '=')) return bad("--set: expected KEY=VALUE, not", argv[i + 1]);
            o->sets[o->nsets++] = argv[++i];
        } else if (!strcmp(a, "--fit")) {
            if (i + 1 >= argc) return bad("missing value after", a);
            o->fit = argv[++i];
        } else if (!strcmp(a, "--markdown")) {
            if (i + 1 >= argc) return bad("missing value after", a);
            o->markdown = argv[++i];
        } else if (!strcmp(a, "--json") || !strcmp(a, "-j")) {
            if (i + 1 >= argc) return bad("missing value after", a);
            const char *v = argv[++i];
            if (a[1] == '-') {
                o->json = v;
                continue;
            }
            char *end;
            long t = strtol(v, &end, 10);
            if (!*v || *end || t < 1 || t > 64) return bad("expected 1 to 64 threads, not", v);
            o->threads = (unsigned)t;
        } else if (a[0] == '-' && a[1]) {
            return bad("unknown option", a);
        } else if (o->npaths == MAX_PATHS) {
            return bad("too many paths at", a);
        } else {
            o->paths[o->npaths++] = a;
        }
    }
    return 0;
}

/* --fit: the fit's report on stdout, progress on stderr. */
static int fit_cmd(const opts *o)
{
    if (o->json || o->markdown || o->strict)
        return bad("--fit prints its own report; it takes no", o->json ? "--json" : o->markdown ? "--markdown" : "--strict");
    vfit f = {0};
    ss_err err = {0};
    int rc = vfit_values(&f, o->fit, &err);
    if (!rc) rc = vfit_run(&f, o->paths, o->npaths, DEFAULT_DIR, o->sets, o->nsets, o->threads,
                           stderr, &err);
    if (!rc) vfit_text(&f, stdout);
    vfit_fini(&f);
    return rc ? fail(&err) : 0;
}

int validate_cmd(int argc, char **argv)
{
    opts o = {0};
    int prc = parse(argc, argv, &o);
    if (prc) return prc == 1 ? 0 : 2;
    if (o.fit) return fit_cmd(&o);
    val_report r = {.sets = o.sets, .nsets = o.nsets};
    ss_err err = {0};
    char *json = NULL;
    int rc = val_collect(o.paths, o.npaths, DEFAULT_DIR, &r, &err);
    if (!rc) rc = val_run(&r, o.threads, &err);
    if (!rc) rc = val_stats(&r, &err);
    if (!rc && o.json && !(json = val_json(&r))) rc = ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && json) rc = of_write_text(o.json, json, &err);
    char *md = NULL;
    if (!rc && o.markdown && !(md = val_markdown(&r))) rc = ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && md) rc = of_write_text(o.markdown, md, &err);
    free(md);
    bool pass = !rc && val_pass(&r);
    /* With --json - (or --markdown -), stdout is that output's alone. */
    if (!rc && !(o.json && !strcmp(o.json, "-")) && !(o.markdown && !strcmp(o.markdown, "-")))
        val_text(&r, stdout);
    free(json);
    val_fini(&r);
    if (rc) return fail(&err);
    return o.strict && !pass ? 1 : 0;
}
