/* shardsim-calib - fit calibration profiles; run the GPU harness where built.
 * The only place in calib/ that prints to stderr or exits.
 *
 * Exit codes: 0 success; 2 bad usage or bad input (the message names the
 * file and line or JSON path); 1 anything else (a harness verb in a build
 * without CUDA, an internal error). Profiles are written whole or not at
 * all (core/ofile.h: a temporary file renamed over the target; pipes and
 * devices in place), and only after they have been read back through the
 * strict loader. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "../sim/core/ofile.h"
#include "fit/cal.h"
#ifdef SS_WITH_CUDA
#include "harness/harness.h"
#endif

#define MAX_LIST 64

static const char usage[] =
    "usage: shardsim-calib fit --nccl-tests FILE [--op OP] [--ranks N] [--nodes N]\n"
    "                          [--table LABEL]... -o PROFILE.json\n"
    "       shardsim-calib fit --measurements FILE.json [--peak DTYPE=TFLOPS]...\n"
    "                          -o PROFILE.json\n"
    "       shardsim-calib show PROFILE.json\n"
    "       shardsim-calib gemm|copy|launch|coll|replay|all [ARGS]...\n"
    "       shardsim-calib help\n"
    "\n"
    "  fit      fit a profile: per collective table, piecewise alpha-beta regimes\n"
    "           (time = alpha + bytes / beta) by weighted least squares on relative\n"
    "           error; from measurements also GEMM efficiency curves, copies and\n"
    "           the launch time. Prints the fit (alpha, beta, standard errors,\n"
    "           R^2, leave-one-size-out error) and writes PROFILE.json\n"
    "  --nccl-tests  nccl-tests output (several tests may be concatenated)\n"
    "  --op     only tables of this collective; also names the collective of a\n"
    "           table the file does not name (all_reduce, all_gather,\n"
    "           reduce_scatter, broadcast, reduce, alltoall, sendrecv)\n"
    "  --ranks, --nodes  the group, where the file has no \"#  Rank\" lines\n"
    "  --table  only this table (its label, or the label's last path part);\n"
    "           repeat for several\n"
    "  --measurements  the GPU harness's measurement file\n"
    "  --peak   the peak rate GEMM efficiency is relative to, e.g. bf16=989.4\n"
    "  show     load a profile strictly and print it\n"
    "  gemm, copy, launch, coll, replay, all   the GPU harness (needs CUDA)\n"
    "\n"
    "Formats: docs/CALIBRATION.md.\n";

typedef struct fit_args {
    const char *nccl, *meas, *op, *out;
    uint32_t ranks, nodes;
    const char *tables[MAX_LIST];
    size_t ntables;
    double peak[SPEC_NDT];
} fit_args;

static int exit_code(int rc) { return rc == SS_E_INPUT || rc == SS_E_IO ? 2 : 1; }

static int report(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim-calib: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return exit_code(err->code);
}

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "shardsim-calib: %s%s%s\n\n%s", what, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

static bool parse_count(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < 1 || v > (1ul << 24)) return false;
    *out = (uint32_t)v;
    return true;
}

/* "bf16=989.4" into peak[]. */
static bool parse_peak(const char *s, double *peak)
{
    const char *eq = strchr(s, '=');
    if (!eq) return false;
    for (int d = 0; d < SPEC_NDT; d++) {
        size_t n = strlen(spec_dtype_names[d]);
        if ((size_t)(eq - s) != n || strncmp(s, spec_dtype_names[d], n) != 0) continue;
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(v > 0) || v > 1e6) return false;
        peak[d] = v;
        return true;
    }
    return false;
}

/* One option of `fit`; *i advances past its value. Returns 0 or an exit code. */
static int fit_option(int argc, char **argv, int *i, fit_args *a)
{
    const char *o = argv[*i];
    if (*i + 1 >= argc) return usage_error("missing value after", o);
    const char *v = argv[++*i];
    if (!strcmp(o, "--nccl-tests")) a->nccl = v;
    else if (!strcmp(o, "--measurements")) a->meas = v;
    else if (!strcmp(o, "--op")) a->op = v;
    else if (!strcmp(o, "-o")) a->out = v;
    else if (!strcmp(o, "--ranks")) {
        if (!parse_count(v, &a->ranks)) return usage_error("--ranks needs an integer >= 1", v);
    } else if (!strcmp(o, "--nodes")) {
        if (!parse_count(v, &a->nodes)) return usage_error("--nodes needs an integer >= 1", v);
    } else if (!strcmp(o, "--table")) {
        if (a->ntables == MAX_LIST) return usage_error("too many --table options", v);
        a->tables[a->ntables++] = v;
    } else if (!strcmp(o, "--peak")) {
        if (!parse_peak(v, a->peak))
            return usage_error("--peak needs DTYPE=TFLOPS with DTYPE fp32, fp16, bf16 or fp8", v);
    } else {
        return usage_error("unknown option", o);
    }
    return 0;
}

static int fit_parse(int argc, char **argv, fit_args *a)
{
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] != '-') return usage_error("unexpected argument", argv[i]);
        int rc = fit_option(argc, argv, &i, a);
        if (rc) return rc;
    }
    if (!a->nccl == !a->meas)
        return usage_error("fit needs exactly one of --nccl-tests FILE and --measurements FILE", NULL);
    if (!a->out) return usage_error("fit needs -o PROFILE.json", NULL);
    bool nccl_only = a->op || a->ranks || a->nodes || a->ntables;
    if (a->meas && nccl_only)
        return usage_error("--op, --ranks, --nodes and --table apply to --nccl-tests", NULL);
    bool any_peak = false;
    for (int d = 0; d < SPEC_NDT; d++) any_peak |= a->peak[d] > 0;
    if (a->nccl && any_peak) return usage_error("--peak applies to --measurements", NULL);
    return 0;
}

/* Render, read back through the loader the simulator uses, write. A profile
 * the loader refuses is a fitter bug (exit 1), never a file on disk. */
static int save(const char *path, const prof *p, ss_err *err)
{
    char *text = NULL;
    int rc = prof_json(p, &text, err);
    if (rc) return rc;
    prof back;
    ss_err e;
    ss_err_clear(&e);
    rc = prof_load_text(path, text, strlen(text), &back, &e);
    if (rc) rc = ss_fail(err, SS_E_INTERNAL, e.where, "the fitted profile does not load back: %s", e.msg);
    else prof_fini(&back);
    if (!rc) rc = of_write_text(path, text, err);
    free(text);
    return rc;
}

static int fit_build(const fit_args *a, prof *p, ss_err *err)
{
    fit_opts o = FIT_OPTS_DEFAULT;
    if (a->nccl) {
        ncclt_log *log = NULL;
        int rc = ncclt_load(a->nccl, a->op, &log, err);
        cal_sel sel = {a->op, a->ranks, a->nodes, a->tables, a->ntables};
        if (!rc) rc = cal_from_ncclt(a->nccl, log, &sel, &o, p, err);
        ncclt_free(log);
        return rc;
    }
    mf_data m;
    int rc = mf_load(a->meas, &m, err);
    if (rc) return rc;
    rc = cal_from_meas(a->meas, &m, a->peak, &o, p, err);
    mf_fini(&m);
    return rc;
}

static int cmd_fit(int argc, char **argv)
{
    fit_args a;
    memset(&a, 0, sizeof a);
    int rc = fit_parse(argc, argv, &a);
    if (rc) return rc;
    ss_err err;
    ss_err_clear(&err);
    prof p;
    prof_init(&p);
    rc = fit_build(&a, &p, &err);
    if (!rc) rc = save(a.out, &p, &err);
    if (!rc && strcmp(a.out, "-") != 0) {
        cal_print(&p, stdout);
        printf("wrote %s\n", a.out);
    }
    prof_fini(&p);
    return rc ? report(&err) : 0;
}

static int cmd_show(int argc, char **argv)
{
    if (argc != 3) return usage_error("show needs one PROFILE.json", NULL);
    ss_err err;
    ss_err_clear(&err);
    prof p;
    int rc = prof_load(argv[2], &p, &err);
    if (rc) return report(&err);
    cal_print(&p, stdout);
    prof_fini(&p);
    return 0;
}

static bool is_harness_verb(const char *v)
{
    static const char *const verbs[] = {"gemm", "copy", "launch", "coll", "replay", "all"};
    for (size_t i = 0; i < SS_ARRAY_LEN(verbs); i++)
        if (!strcmp(v, verbs[i])) return true;
    return false;
}

static int cmd_harness(int argc, char **argv)
{
#ifdef SS_WITH_CUDA
    return hx_main(argv[1], argc - 2, argv + 2);
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "shardsim-calib was built without CUDA; the harness verbs need the CUDA "
                    "toolkit\n");
    return 1;
#endif
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off(); /* GSL reports through status codes, never abort() */
    if (argc < 2) return usage_error("no command given", NULL);
    const char *verb = argv[1];
    if (!strcmp(verb, "help") || !strcmp(verb, "--help") || !strcmp(verb, "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(verb, "fit")) return cmd_fit(argc, argv);
    if (!strcmp(verb, "show")) return cmd_show(argc, argv);
    if (is_harness_verb(verb)) return cmd_harness(argc, argv);
    return usage_error("unknown command", verb);
}
