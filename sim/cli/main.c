/* shardsim - command line. The only place that prints to stderr or exits.
 *
 * Exit codes: 0 success; 2 bad input or usage (the message names the file
 * and JSON path); 1 anything else (a bug, out of memory). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/scenario.h"
#include "../run/run.h"

#define MAX_SETS 256

static const char usage[] =
    "usage: shardsim run SCENARIO [--json FILE] [--set PATH=VALUE]... [--memory] [--quiet]\n"
    "       shardsim --version | --help\n"
    "\n"
    "  run      simulate one training step of SCENARIO and print a summary\n"
    "  --json   also write the summary as JSON to FILE ('-' for stdout)\n"
    "  --set    override a scenario key, e.g. --set sharding.strategy=full_shard\n"
    "  --memory print every tensor live at rank 0's memory peak, by category\n"
    "  --quiet  do not print the text summary\n";

typedef struct cli_args {
    const char *scenario, *json;
    const char *sets[MAX_SETS];
    size_t nsets;
    int quiet, memory;
} cli_args;

static int exit_code(int rc)
{
    return rc == SS_E_INPUT || rc == SS_E_IO ? 2 : 1;
}

static int fail(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return exit_code(err->code);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "shardsim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

static int parse_run(int argc, char **argv, cli_args *a)
{
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(s, "--json") || !strcmp(s, "--set")) {
            if (!has_val) return usage_error("%s needs a value", s);
            if (s[2] == 'j') a->json = argv[++i];
            else if (a->nsets == MAX_SETS) return usage_error("too many --set (%s)", "max 256");
            else a->sets[a->nsets++] = argv[++i];
        } else if (!strcmp(s, "--quiet")) {
            a->quiet = 1;
        } else if (!strcmp(s, "--memory")) {
            a->memory = 1;
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option %s", s);
        } else if (a->scenario) {
            return usage_error("more than one scenario given (%s)", s);
        } else {
            a->scenario = s;
        }
    }
    if (!a->scenario) return usage_error("%s", "run needs a SCENARIO file");
    return 0;
}

/* Write to a temporary file beside the target, then rename: a reader never
 * sees a half-written summary. */
static int write_atomic(const char *path, const char *text, ss_err *err)
{
    if (!strcmp(path, "-")) {
        fputs(text, stdout);
        fputc('\n', stdout);
        return SS_OK;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(errno));
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return ss_fail(err, SS_E_IO, path, "cannot write: %s", strerror(e));
    }
    return SS_OK;
}

static int cmd_run(const cli_args *a)
{
    ss_err err;
    ss_err_clear(&err);
    spec_scenario s;
    run_result r;
    int rc = scn_load(a->scenario, a->sets, a->nsets, &s, &err);
    if (rc) return fail(&err);
    rc = run_step(&s, &r, &err);
    if (!rc && a->json) {
        char *txt = sum_json(&r.sum);
        rc = txt ? write_atomic(a->json, txt, &err)
                 : ss_fail(&err, SS_E_NOMEM, NULL, "out of memory rendering JSON");
        free(txt);
    }
    if (!rc && !a->quiet) sum_text(&r.sum, stdout);
    if (!rc && a->memory) sum_ledger(&r.sum, r.t, 0, stdout);
    run_fini(&r);
    spec_scenario_fini(&s);
    return rc ? fail(&err) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage_error("%s", "no command given");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("shardsim " SHARDSIM_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") != 0) return usage_error("unknown command %s", argv[1]);
    cli_args a = {0};
    int rc = parse_run(argc, argv, &a);
    return rc ? rc : cmd_run(&a);
}
