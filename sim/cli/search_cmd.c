/* `shardsim search`. search_cmd.h states the contract. */
#include "search_cmd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/scenario.h"
#include "../out/summary.h"
#include "../run/run.h"
#include "../run/search.h"
#include "../run/search_csv.h"
#include "../run/sweep.h"
#include "hint.h"
#include "out.h"
#include "search_write.h"

#define MAX_SETS 256

static const char usage[] =
    "usage: shardsim search SCENARIO [--world N] [--tp LIST] [--cp LIST] [--pp LIST]\n"
    "                       [--ep LIST] [--strategy LIST] [--recompute LIST]\n"
    "                       [--global-batch N] [--max-points N] [--set PATH=VALUE]...\n"
    "                       [-j THREADS] [--csv FILE [--resume]] [--quiet]\n"
    "                       [--prune best|front|none] [--no-prune]\n"
    "                       [--write-best FILE] [--write-torchtitan FILE.toml]\n"
    "                       [--write-megatron FILE] [--point N]\n"
    "\n"
    "  --world      GPUs every layout uses (default: all of the topology's)\n"
    "  --tp --cp --pp --ep  candidate degrees, comma-separated (default: the\n"
    "               powers of two up to the world; tp also up to one node's\n"
    "               GPUs; ep up to the model's experts, 1 for a dense model);\n"
    "               dp = world / (tp cp pp), layouts where it is not whole are\n"
    "               left out; sequence_parallel is on whenever tp > 1\n"
    "  --strategy   sharding strategies, e.g. ddp,zero1,full_shard,fsdp2,megatron (each runs\n"
    "               inside every layout; deepspeed needs its zero_optimization section)\n"
    "               (default: the scenario's)\n"
    "  --recompute  none, selective, full (default: the scenario's)\n"
    "  --global-batch  samples per optimizer step, held across layouts through\n"
    "               grad_accum = N / (micro_batch dp) (default: the scenario's\n"
    "               micro_batch x dp x grad_accum)\n"
    "  --max-points refuse a search of more points than this (default 2000)\n"
    "  --set        override a scenario key for every point\n"
    "  -j           simulate on THREADS threads (default 1)\n"
    "  --csv        write every point, error rows included, to FILE: it starts\n"
    "               over when the points are simulated, each point is appended as\n"
    "               it finishes (a killed search keeps them), and at the end FILE\n"
    "               is rewritten in point order; its first line names the search\n"
    "               (a # comment: skip it when reading)\n"
    "  --resume     go on with the search whose --csv FILE is there: points it\n"
    "               simulated are taken from it, the rest simulated; the result\n"
    "               is the uninterrupted search's, byte for byte (FILE must come\n"
    "               from the same scenario, --set and space; no FILE: start)\n"
    "  --write-best write the fastest fitting point (or point N) as a scenario\n"
    "               FILE that runs from anywhere (file references made absolute)\n"
    "  --write-torchtitan  the same point as a torchtitan job TOML (FSDP2 or DDP\n"
    "               points; read back and simulated before it is written: a point\n"
    "               whose settings torchtitan cannot say is refused, naming why)\n"
    "  --write-megatron  the same point as Megatron-LM arguments, one per line\n"
    "               (strategy megatron points; others are refused, naming why)\n"
    "  --point      write point N (the CSV's) instead of the best\n"
    "  --prune      before simulating, reject the points whose model states alone\n"
    "               exceed the device, then simulate the rest in order of a lower\n"
    "               bound on their step (compute, and each collective as fast as it\n"
    "               runs alone on the machine) and skip those that cannot matter:\n"
    "               best (default) keeps the best point exact (front rows a pruned\n"
    "               point might beat are marked ?, and the pruned points that might\n"
    "               add rows are counted), front the whole memory/time front, none\n"
    "               simulates every point\n"
    "  --no-prune   the same as --prune none\n"
    "  --quiet      no progress on stderr\n";

typedef struct opts {
    const char *scenario, *csv;
    bool resume;            /* --resume: go on with the search in --csv FILE */
    const char *write_best; /* --write-best FILE: the chosen point as a runnable scenario */
    const char *write_tt;   /* --write-torchtitan FILE: ... as a torchtitan job TOML */
    const char *write_mg;   /* --write-megatron FILE: ... as Megatron-LM arguments */
    long point;             /* --point N: that point instead of the best; -1 = the best */
    const char *sets[MAX_SETS];
    size_t nsets;
    search_space sp;
    unsigned threads;
    bool quiet;
    search_prune prune;
} opts;

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shardsim search: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n%s", usage);
    return 2;
}

static int fail(const ss_err *err)
{
    char buf[1200];
    fprintf(stderr, "shardsim search: error: %s\n", ss_err_str(err, buf, sizeof buf));
    return err->code == SS_E_INPUT || err->code == SS_E_IO ? 2 : 1;
}

/* ---- options ---- */

static bool parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (!*v || *v == '-' || *v == '+') return false;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || x < lo || x > hi) return false;
    *out = x;
    return true;
}

static bool list_add(search_list *l, uint32_t x)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == x) return false;
    if (l->n == SEARCH_MAX_VALUES) return false;
    l->v[l->n++] = x;
    return true;
}

/* Split v at commas into l: each item a count in [1, 2^24], or (names) one
 * of names[0..nnames). Empty items and repeats are errors. */
static bool parse_list(const char *v, const char *const *names, int nnames, search_list *l)
{
    char buf[1024];
    size_t len = strlen(v);
    if (!len || len >= sizeof buf || v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,"))
        return false;
    memcpy(buf, v, len + 1);
    char *save = NULL;
    l->n = 0;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        uint64_t x = 0;
        int k = 0;
        while (names && k < nnames && strcmp(item, names[k])) k++;
        if (names ? k == nnames : !parse_u64(item, 1, 1u << 24, &x)) return false;
        if (!list_add(l, names ? (uint32_t)k : (uint32_t)x)) return false;
    }
    return true;
}

static int parse_value(opts *o, const char *k, const char *v)
{
    search_space *sp = &o->sp;
    search_list *lists[] = {&sp->tp, &sp->cp, &sp->pp, &sp->ep};
    static const char *const list_opts[] = {"--tp", "--cp", "--pp", "--ep"};
    uint64_t x;
    for (int i = 0; i < 4; i++)
        if (!strcmp(k, list_opts[i]))
            return parse_list(v, NULL, 0, lists[i]) ? 0
                   : bad("%s: expected distinct counts like 1,2,4 (at most %d), not %s", k,
                         SEARCH_MAX_VALUES, v);
    if (!strcmp(k, "--strategy"))
        return parse_list(v, spec_strategy_names, SPEC_NSTRATEGIES, &sp->strategy) ? 0
               : bad("--strategy: expected names among ddp, zero1, shard_grad_op, full_shard, "
                     "no_shard, hybrid_shard, hybrid_shard_zero2, fsdp2, deepspeed, megatron, "
                     "not %s", v);
    if (!strcmp(k, "--recompute"))
        return parse_list(v, spec_recompute_names, SPEC_NRECOMP, &sp->recompute) ? 0
               : bad("--recompute: expected names among none, selective, full, not %s", v);
    if (!strcmp(k, "--world") && parse_u64(v, 1, 1u << 24, &x)) sp->world = (uint32_t)x;
    else if (!strcmp(k, "--global-batch") && parse_u64(v, 1, 1ull << 40, &x)) sp->global_batch = x;
    else if (!strcmp(k, "--max-points") && parse_u64(v, 1, 10000000, &x)) sp->max_points = x;
    else if (!strcmp(k, "-j") && parse_u64(v, 1, 64, &x)) o->threads = (unsigned)x;
    else if (!strcmp(k, "--csv")) o->csv = v;
    else if (!strcmp(k, "--prune")) {
        int m = 0;
        while (m < 3 && strcmp(v, search_prune_names[m])) m++;
        if (m == 3) return bad("--prune: expected best, front or none, not %s", v);
        o->prune = (search_prune)m;
    }
    else if (!strcmp(k, "--write-best")) o->write_best = v;
    else if (!strcmp(k, "--write-torchtitan")) o->write_tt = v;
    else if (!strcmp(k, "--write-megatron")) o->write_mg = v;
    else if (!strcmp(k, "--point") && parse_u64(v, 0, 100000000, &x)) o->point = (long)x;
    else if (!strcmp(k, "--point")) return bad("--point: expected a point number, not %s", v);
    else if (!strcmp(k, "--set") && o->nsets < MAX_SETS) o->sets[o->nsets++] = v;
    else if (!strcmp(k, "--set")) return bad("at most %d --set", MAX_SETS);
    else if (!strcmp(k, "--world") || !strcmp(k, "--global-batch") || !strcmp(k, "--max-points"))
        return bad("%s: expected a count >= 1, not %s", k, v);
    else if (!strcmp(k, "-j")) return bad("-j takes 1 to 64 threads, not %s", v);
    else {
        static const char *const known[] = {"--world", "--tp", "--cp", "--pp", "--ep", "--strategy",
                                           "--recompute", "--global-batch", "--set", "-j", "--csv",
                                           "--write-best", "--point", "--write-torchtitan",
                                           "--write-megatron",
                                           "--max-points", "--quiet", "--prune",
                                           "--no-prune", "--resume"};
        const char *hit = cli_nearest(k, known, sizeof known / sizeof *known);
        return hit ? bad("unknown option %s (did you mean %s?)", k, hit) : bad("unknown option %s", k);
    }
    return 0;
}

/* 0 parsed, -1 --help printed, 2 usage error. */
static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.threads = 1, .point = -1};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return -1;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--resume")) {
            o->resume = true;
        } else if (!strcmp(a, "--no-prune")) {
            o->prune = SEARCH_PRUNE_NONE;
        } else if (a[0] == '-' && a[1]) {
            if (i + 1 >= argc) return bad("%s needs a value", a);
            int rc = parse_value(o, a, argv[++i]);
            if (rc) return rc;
        } else if (o->scenario) {
            return bad("one SCENARIO only (%s)", a);
        } else {
            o->scenario = a;
        }
    }
    if (o->point >= 0 && !o->write_best && !o->write_tt && !o->write_mg)
        return bad("%s", "--point N goes with --write-best, --write-torchtitan or --write-megatron");
    if (o->resume && !o->csv) return bad("%s", "--resume goes with --csv FILE (the search to go on with)");
    return o->scenario ? 0 : bad("%s", "no SCENARIO file given");
}

/* ---- the report ---- */

/* What the printout needs from the scenario besides the points. */
typedef struct base {
    char name[SPEC_NAME_MAX], topo[SPEC_NAME_MAX];
    uint64_t capacity; /* bytes; 0 = unlimited */
    uint64_t usable;   /* what a rank may reserve and fit (sum_usable_of) */
    spec_strategy strategy; /* the scenario's runtime (its sharding knobs are its own) */
    uint32_t gpus, gpus_per_node; /* the topology's, as the job takes them (ranks_per_node) */
    uint64_t micro_batch;
    bool offloads;     /* the optimizer step is already on the host */
} base;

static double gib(uint64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

static void print_header(const opts *o, const base *b, size_t n, size_t skipped, size_t valid,
                         size_t fitting)
{
    const search_space *sp = &o->sp;
    printf("search: %s\n", b->name);
    printf("  world        %u GPUs of %s\n", sp->world, b->topo);
    printf("  batch        %llu samples per step (micro_batch %llu, grad_accum to match dp)\n",
           (unsigned long long)sp->global_batch, (unsigned long long)sp->micro_batch);
    if (b->capacity) printf("  capacity     %.2f GiB per GPU\n", gib(b->capacity));
    else printf("  capacity     unlimited\n");
    printf("  points       %zu enumerated, %zu valid, %zu fit", n, valid, fitting);
    if (skipped) printf(" (%zu layouts left out: dp does not split the batch)", skipped);
    printf("\n");
}

static void print_best(const search_point *p, const sweep_fig *f, size_t i, const base *b)
{
    printf("\nbest by step time: point %zu\n", i);
    printf("  layout       tp %u, cp %u, pp %u, ep %u, dp %u%s, grad_accum %u\n", p->tp, p->cp,
           p->pp, p->ep, p->dp, p->tp > 1 ? " (sequence_parallel)" : "", p->grad_accum);
    printf("  sharding     %s, recompute %s\n", spec_strategy_names[p->strategy],
           spec_recompute_names[p->recompute]);
    printf("  step time    %.3f ms\n", f->step_s * 1e3);
    printf("  throughput   %.0f tokens/s/GPU", f->tokens_per_s);
    if (f->mfu > 0) printf(", MFU %.1f%%", 100.0 * f->mfu);
    printf("\n  memory       %.2f GiB peak reserved", gib(f->peak_reserved));
    if (b->capacity) printf(" of %.2f GiB", gib(b->capacity));
    printf("\n");
}

static void print_front(const search_point *pts, const sweep_fig *figs, const size_t *front,
                        size_t nfront, size_t fitting, const search_pruner *pr)
{
    printf("\nmemory/time Pareto front: %zu of the %zu fitting points, by step time (no other "
           "is faster with less memory)\n", nfront, fitting);
    printf("  %5s %4s %4s %4s %4s %4s %5s  %-18s %-9s %10s %12s %6s\n", "point", "tp", "cp", "pp",
           "ep", "dp", "accum", "strategy", "recompute", "step_ms", "reserved_GiB", "MFU");
    size_t doubt = 0;
    for (size_t k = 0; k < nfront; k++) {
        const search_point *p = &pts[front[k]];
        const sweep_fig *f = &figs[front[k]];
        char mfu[16] = "-";
        if (f->mfu > 0) snprintf(mfu, sizeof mfu, "%.1f%%", 100.0 * f->mfu);
        bool d = search_pruner_doubt(pr, f);
        doubt += d;
        printf("  %5zu %4u %4u %4u %4u %4u %5u  %-18s %-9s %10.3f %12.2f %6s%s\n", front[k], p->tp,
               p->cp, p->pp, p->ep, p->dp, p->grad_accum, spec_strategy_names[p->strategy],
               spec_recompute_names[p->recompute], f->step_s * 1e3, gib(f->peak_reserved), mfu,
               d ? " ?" : "");
    }
    size_t open = search_pruner_open(pr);
    if (doubt)
        printf("  ? a pruned point might beat it (pruning keeps the best exact, not the front: "
               "--prune front keeps all of it)\n");
    else if (open)
        printf("  pruning keeps the best exact, not the front: %zu pruned point%s might add "
               "rows to it (--prune front keeps all of it)\n", open, open == 1 ? "" : "s");
}

/* ---- the nearest miss ---- */

static uint32_t list_max(const search_list *l)
{
    uint32_t m = 0;
    for (size_t k = 0; k < l->n; k++) m = l->v[k] > m ? l->v[k] : m;
    return m;
}

static bool has(const search_list *l, uint32_t v)
{
    for (size_t k = 0; k < l->n; k++)
        if (l->v[k] == v) return true;
    return false;
}

/* What would take memory off, among the changes this search did not try:
 * the levers each point could still pull, as options. */
static void print_levers(const opts *o, const base *b)
{
    const search_space *sp = &o->sp;
    uint32_t tp_top = sp->world < b->gpus_per_node ? sp->world : b->gpus_per_node;
    const char *sep = "  not searched ";
    if (!has(&sp->recompute, SPEC_RECOMP_FULL)) {
        printf("%s--recompute ...,full (activations recomputed, not kept)\n", sep);
        sep = "               ";
    }
    if (!has(&sp->strategy, SPEC_FULL_SHARD) && !has(&sp->strategy, SPEC_FSDP2)) {
        printf("%s--strategy ...,fsdp2 or full_shard (parameters, gradients and optimizer "
               "states sharded over dp)\n", sep);
        sep = "               ";
    }
    if (list_max(&sp->tp) < tp_top) {
        printf("%s--tp up to %u (one node's GPUs)\n", sep, tp_top);
        sep = "               ";
    }
    if (list_max(&sp->pp) < sp->world) {
        printf("%s--pp up to %u\n", sep, sp->world);
        sep = "               ";
    }
    if (sp->world < b->gpus) {
        printf("%s--world up to %u (the topology's GPUs: more to shard over)\n", sep, b->gpus);
        sep = "               ";
    }
    if (b->micro_batch > 1) {
        printf("%s--set training.micro_batch=%llu --global-batch %llu (half the micro-batch, "
               "the same batch)\n", sep, (unsigned long long)b->micro_batch / 2,
               (unsigned long long)sp->global_batch);
        sep = "               ";
    }
    if (!b->offloads)
        printf("%s--set offload.optimizer=cpu (the optimizer step on the host)\n", sep);
}

/* No point fits: the one that came closest, by how much, and what would
 * close the gap (docs/DECISIONS.md, entry 84). */
static void print_miss(const opts *o, const base *b, const search_point *pts,
                       const sweep_fig *figs, const search_check *chk, size_t n)
{
    search_miss m;
    if (b->usable == UINT64_MAX) return; /* no limit: what failed, failed to run */
    if (!search_nearest_miss(figs, chk, n, b->usable, &m)) return;
    const search_point *p = &pts[m.point];
    printf("\nnearest miss: point %zu\n", m.point);
    printf("  layout       tp %u, cp %u, pp %u, ep %u, dp %u%s, grad_accum %u\n", p->tp, p->cp,
           p->pp, p->ep, p->dp, p->tp > 1 ? " (sequence_parallel)" : "", p->grad_accum);
    printf("  sharding     %s, recompute %s\n", spec_strategy_names[p->strategy],
           spec_recompute_names[p->recompute]);
    double pct = b->usable ? 100.0 * (double)m.over / (double)b->usable : 0;
    if (m.simulated) {
        printf("  memory       %.2f GiB peak reserved, %.2f GiB usable: %.2f GiB over (%.1f%%)",
               gib(m.bytes), gib(b->usable), gib(m.over), pct);
        if (chk[m.point].checked) printf(", model states %.2f GiB", gib(chk[m.point].states));
        printf("\n  step time    %.3f ms (were it to fit)\n", figs[m.point].step_s * 1e3);
    } else {
        printf("  memory       model states alone %.2f GiB, %.2f GiB usable: at least %.2f GiB "
               "over (%.1f%%); rejected, not simulated (--no-prune gives its peak)\n",
               gib(m.bytes), gib(b->usable), gib(m.over), pct);
    }
    if (m.doubt != SIZE_MAX)
        printf("  (point %zu, rejected for its states, misses by at least %.2f GiB: it might "
               "come closer; --no-prune simulates it)\n", m.doubt,
               gib(chk[m.doubt].states - b->usable));
    printf("  to fit       %.2f GiB less per GPU, or a device that lets a process reserve "
           "%.2f GiB%s\n", gib(m.over), gib(m.bytes), m.simulated ? "" : " or more");
    print_levers(o, b);
}

/* ---- the command ---- */

/* Load the scenario once: the defaults of the space and what the header
 * prints. A world larger than the topology is a usage error, not a list of
 * error rows. */
static int prepare(opts *o, base *b, ss_err *err)
{
    spec_scenario s;
    int rc = scn_load(o->scenario, o->sets, o->nsets, &s, err);
    if (rc) return rc;
    uint64_t gpus = (uint64_t)s.topo.nodes * spec_topo_rpn(&s.topo);
    if (o->sp.world > gpus)
        rc = ss_fail(err, SS_E_INPUT, "--world", "%u GPUs, but topology %s has %llu%s",
                     o->sp.world, s.topo.name, (unsigned long long)gpus,
                     spec_topo_rpn(&s.topo) < s.topo.gpus_per_node ? " at its ranks_per_node" : "");
    search_defaults(&o->sp, &s);
    snprintf(b->name, sizeof b->name, "%s", s.name);
    snprintf(b->topo, sizeof b->topo, "%s", s.topo.name);
    b->capacity = s.capacity_bytes;
    b->usable = sum_usable_of(&s);
    b->strategy = s.shard.strategy;
    b->gpus = (uint32_t)gpus, b->gpus_per_node = spec_topo_rpn(&s.topo);
    b->micro_batch = s.micro_batch;
    b->offloads = s.off.optimizer != SPEC_OFF_NONE;
    spec_scenario_fini(&s);
    return rc;
}

/* What the sweep's hooks need: the pruner sees every finished point, the
 * progress line every one too unless --quiet. */
typedef struct hooks {
    search_pruner *pr;
    cli_progress *prog; /* NULL: quiet */
} hooks;

static void on_done(void *ctx, size_t done, size_t total, size_t slot, const sweep_fig *fig)
{
    hooks *h = ctx;
    search_pruner_done(h->pr, slot, fig);
    if (h->prog) cli_progress_cb(h->prog, done, total, slot, fig);
}

static int on_skip(void *ctx, size_t slot, bool final, sweep_skip *row)
{
    (void)final; /* the pruner knows when its verdicts are final */
    return search_pruner_skip(((hooks *)ctx)->pr, slot, row);
}

static void on_check(void *ctx, size_t done, size_t total)
{
    cli_progress *p = ctx;
    double now = run_wall_s();
    if (done != total && now - p->last < CLI_PROGRESS_EVERY_S) return;
    p->last = now;
    double spent = now - p->t0;
    fprintf(stderr, "shardsim search: checked %zu/%zu points, %.0f s spent, ~%.0f s left\n",
            done, total, spent, done ? spent / (double)done * (double)(total - done) : 0.0);
}

/* The closed-form checks of every point (none under --prune none). */
static void check(const opts *o, const base *b, const search_point *pts, size_t n,
                  search_check *chk)
{
    if (o->prune == SEARCH_PRUNE_NONE) return;
    cli_progress bar;
    cli_progress_init(&bar, "search", false);
    if (!o->quiet)
        fprintf(stderr, "shardsim search: checking %zu points (memory, step bound) on %u "
                "thread%s\n", n, o->threads, o->threads == 1 ? "" : "s");
    search_check_all(o->scenario, o->sets, o->nsets, b->strategy, pts, n, o->threads, chk,
                     o->quiet ? NULL : on_check, &bar);
}

/* ---- the CSV as a record (run/search_csv.h) ---- */

/* What --csv keeps while the search runs: the file the rows are appended
 * to as points finish (NULL: FILE is not a regular file, written at the
 * end only), and what --resume took from it. */
typedef struct record {
    const char *path;
    char key[SCSV_KEY_MAX];
    char *old;              /* --resume: the file's text; NULL: none to go on with */
    FILE *f;
    const search_check *chk;
    char **given;           /* per point: its row from the file, or NULL */
    sweep_fig *given_figs;
    size_t nreused;
} record;

static void record_fini(record *r, size_t n)
{
    if (r->f) fclose(r->f);
    for (size_t i = 0; r->given && i < n; i++) free(r->given[i]);
    free(r->given);
    free(r->given_figs);
    free(r->old);
}

/* FILE is written in place as points finish only when it is a regular
 * file or nothing yet: a device or pipe takes the final text alone. */
static bool appendable(const char *path)
{
    struct stat st;
    if (!strcmp(path, "-")) return false;
    return stat(path, &st) ? errno == ENOENT : S_ISREG(st.st_mode);
}

/* The key line: the scenario with the search's --set, resolved. */
static int record_key(const opts *o, record *r, ss_err *err)
{
    char *text = NULL;
    int rc = scn_write_resolved(o->scenario, o->sets, o->nsets, NULL, &text, err);
    if (!rc) scsv_key(&o->sp, text, r->key, sizeof r->key);
    free(text);
    return rc;
}

/* --resume: the file's text, its key line checked now (before the checks
 * spend their time); a missing or empty file leaves nothing to go on with. */
static int record_open_old(const opts *o, record *r, ss_err *err)
{
    if (!appendable(o->csv))
        return ss_fail(err, SS_E_INPUT, o->csv, "--resume: expected a regular file (the CSV "
                       "of the search to go on with); found a device, pipe or folder");
    FILE *f = fopen(o->csv, "rb");
    if (!f && errno == ENOENT) return SS_OK;
    if (!f) return ss_fail(err, SS_E_IO, o->csv, "cannot read: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        char *more = len + 1 == cap ? realloc(buf, cap *= 2) : buf;
        if (!more) free(buf);
        buf = more;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (failed) {
        free(buf);
        return ss_fail(err, SS_E_IO, o->csv, "cannot read: %s", strerror(errno));
    }
    buf[len] = '\0';
    if (!len) {
        free(buf);
        return SS_OK;
    }
    r->old = buf;
    return scsv_key_check(o->csv, buf, r->key, err);
}

/* One row with the search's own columns, to f (newline included). */
static void put_row(FILE *f, const char *row, const search_check *chk, const sweep_fig *fig)
{
    char extra[256];
    scsv_extra(chk, fig, extra, sizeof extra);
    fprintf(f, "%.*s%s\n", (int)strcspn(row, "\n"), row, extra);
}

/* sweep_cfg.on_row: the finished point's row, flushed at once. */
static void on_row(void *ctx, size_t slot, const char *row, const sweep_fig *fig)
{
    record *r = ctx;
    put_row(r->f, row, &r->chk[slot], fig);
    fflush(r->f);
}

/* Before the sweep: take back the rows --resume finds, and start the file
 * over with its key, header and those rows (whole, through ofile.h: a
 * failure here leaves the old file), then append from there. */
static int record_start(record *r, const char *head, const search_point *pts, size_t n,
                        sweep_cfg *c, ss_err *err)
{
    char header[4096];
    snprintf(header, sizeof header, "%.*s%s", (int)strcspn(head, "\n"), head, scsv_extra_header);
    r->given = calloc(n ? n : 1, sizeof *r->given);
    r->given_figs = calloc(n ? n : 1, sizeof *r->given_figs);
    if (!r->given || !r->given_figs) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    int rc = r->old ? scsv_read(r->path, r->old, r->key, header, pts, n, r->given,
                                r->given_figs, &r->nreused, err)
                    : SS_OK;
    c->given = r->given;
    c->given_figs = r->given_figs;
    if (rc || !appendable(r->path)) return rc; /* a device or pipe: the final text only */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    fprintf(m, "%s\n%s\n", r->key, header);
    for (size_t i = 0; i < n; i++)
        if (r->given[i]) put_row(m, r->given[i], &r->chk[i], &r->given_figs[i]);
    fclose(m);
    rc = text ? of_write_text(r->path, text, err) : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    free(text);
    if (!rc && !(r->f = fopen(r->path, "a")))
        rc = ss_fail(err, SS_E_IO, r->path, "cannot append: %s", strerror(errno));
    if (r->f) c->on_row = on_row, c->row_ctx = r;
    return rc;
}

/* The final CSV: the key line, the header with the search's columns, and
 * every row with its own, in point order. */
static char *final_csv(const char *key, const char *csv, const search_check *chk,
                       const sweep_fig *figs, size_t n)
{
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    if (!m) return NULL;
    fprintf(m, "%s\n", key);
    for (const char *line = csv; *line;) {
        size_t l = strcspn(line, "\n");
        char *end;
        unsigned long long i = strtoull(line, &end, 10);
        if (line == csv) fprintf(m, "%.*s%s\n", (int)l, line, scsv_extra_header);
        else if (end != line && i < n) put_row(m, line, &chk[i], &figs[i]);
        line += l + (line[l] == '\n');
    }
    fclose(m);
    return out;
}

/* Simulate the points (in the pruner's order, skipping what it prunes,
 * taking what --resume found); the CSV (header and rows) in *csv. */
static int simulate(const opts *o, const base *b, const search_point *pts, size_t n,
                    search_pruner *pr, record *rec, sweep_fig *figs, char **csv, ss_err *err)
{
    sweep_cfg c = {.scenario = o->scenario, .sets = o->sets, .nsets = o->nsets,
                   .threads = o->threads, .stride = 1, .figs = figs,
                   .order = search_pruner_order(pr), .skip = on_skip};
    cli_progress bar;
    cli_progress_init(&bar, "search", isatty(2) && !getenv("CI"));
    hooks h = {pr, o->quiet ? NULL : &bar};
    c.progress = on_done;
    c.progress_ctx = c.skip_ctx = &h;
    char *rows = NULL, *head = NULL;
    int rc = search_sweep_lists(pts, n, b->strategy, &c, err);
    if (!rc && !(head = sweep_header(&c))) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && o->csv) rc = record_start(rec, head, pts, n, &c, err);
    if (!rc && !o->quiet && o->resume)
        fprintf(stderr, "shardsim search: resuming %s: %zu points simulated before taken from it, "
                "%zu to simulate or prune\n",
                o->csv, rec->nreused, n - rec->nreused);
    if (!rc && !o->quiet)
        fprintf(stderr, "shardsim search: simulating %zu points on %u thread%s%s\n", n, c.threads,
                c.threads == 1 ? "" : "s",
                o->prune == SEARCH_PRUNE_NONE ? "" : ", by bound, skipping what cannot matter");
    if (!rc) rc = sweep_run(&c, &rows, err);
    if (!rc && !(*csv = malloc(strlen(head) + strlen(rows) + 1)))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) {
        strcpy(*csv, head);
        strcat(*csv, rows);
    }
    free(rows);
    free(head);
    for (size_t k = 0; k < c.nvary; k++) sweep_vary_fini(&c.vary[k]);
    return rc;
}

/* What pruning left out, and what that means for the front. */
static void print_pruning(const opts *o, const search_pruner *pr, size_t n)
{
    if (o->prune == SEARCH_PRUNE_NONE) return;
    size_t rejected, pruned;
    search_pruner_counts(pr, &rejected, &pruned);
    printf("  pruning      %s: %zu rejected (model states alone exceed the device), %zu pruned "
           "(step bound), %zu simulated\n", search_prune_names[o->prune], rejected, pruned,
           n - rejected - pruned);
}

static int report(const opts *o, const base *b, const search_point *pts, size_t n,
                  size_t skipped, const search_pruner *pr, const sweep_fig *figs,
                  const search_check *chk, size_t *best, ss_err *err)
{
    size_t *front = malloc((n ? n : 1) * sizeof *front), nfront = 0;
    int rc = front ? search_front(figs, n, front, &nfront, err)
                   : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (rc) {
        free(front);
        return fail(err);
    }
    size_t valid = 0, fitting = 0;
    for (size_t i = 0; i < n; i++) {
        valid += figs[i].ok;
        fitting += figs[i].ok && figs[i].fits;
    }
    print_header(o, b, n, skipped, valid, fitting);
    print_pruning(o, pr, n);
    if (nfront) {
        *best = front[0];
        print_best(&pts[front[0]], &figs[front[0]], front[0], b);
        print_front(pts, figs, front, nfront, fitting, pr);
    } else {
        printf("\nno point fits: every one failed to run or went over the capacity (the CSV's "
               "status, fits and error columns say which)\n");
        print_miss(o, b, pts, figs, chk, n);
    }
    free(front);
    return nfront ? 0 : 1;
}

/* The files of point i the options ask for: the scenario (runs from
 * anywhere: its file references absolute), torchtitan's TOML, Megatron's
 * arguments (cli/search_write.h). Each one that fails says why and sets
 * the exit code; the others are still written. */
static int write_point(const opts *o, const base *b, const search_point *p, size_t i)
{
    char sets[SEARCH_NKEYS][SEARCH_SET_MAX], name[160];
    const char *all[MAX_SETS + SEARCH_NKEYS];
    size_t n = 0;
    for (size_t k = 0; k < o->nsets; k++) all[n++] = o->sets[k];
    size_t m = search_point_sets(p, b->strategy, sets);
    for (size_t k = 0; k < m; k++) all[n++] = sets[k];
    snprintf(name, sizeof name, "%.100s (search point %zu)", b->name, i);
    sw_point pt = {o->scenario, all, n, name};
    const char *paths[] = {o->write_best, o->write_tt, o->write_mg};
    int (*const write[])(const sw_point *, const char *, ss_err *) = {sw_scenario, sw_torchtitan,
                                                                      sw_megatron};
    int code = 0;
    for (size_t k = 0; k < 3; k++) {
        ss_err err;
        ss_err_clear(&err);
        if (!paths[k]) continue;
        if (write[k](&pt, paths[k], &err)) code = fail(&err);
        else if (!o->quiet)
            fprintf(stderr, "shardsim search: point %zu written to %s\n", i, paths[k]);
    }
    return code;
}

int search_cmd(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    ss_err err;
    ss_err_clear(&err);
    base b;
    search_point *pts = NULL;
    size_t n = 0, skipped = 0;
    if ((rc = prepare(&o, &b, &err)) || (rc = search_enumerate(&o.sp, &pts, &n, &skipped, &err)))
        return fail(&err);
    if (o.point >= 0 && (size_t)o.point >= n) {
        free(pts);
        return bad("--point %ld: the search has points 0 to %zu", o.point, n - 1);
    }
    sweep_fig *figs = calloc(n, sizeof *figs);
    search_check *chk = calloc(n, sizeof *chk);
    search_pruner *pr = NULL;
    char *csv = NULL, *full = NULL;
    record rec = {.path = o.csv, .chk = chk};
    rc = figs && chk ? SS_OK : ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && o.csv) rc = record_key(&o, &rec, &err);
    if (!rc && o.resume) rc = record_open_old(&o, &rec, &err);
    if (!rc) check(&o, &b, pts, n, chk);
    if (!rc) rc = search_pruner_new(&pr, chk, n, o.prune, &err);
    if (!rc) rc = simulate(&o, &b, pts, n, pr, &rec, figs, &csv, &err);
    if (!rc && o.csv && !(full = final_csv(rec.key, csv, chk, figs, n)))
        rc = ss_fail(&err, SS_E_NOMEM, NULL, "out of memory");
    if (rec.f) fclose(rec.f);
    rec.f = NULL;
    if (!rc && o.csv) rc = of_write_text(o.csv, full, &err);
    size_t best = SIZE_MAX;
    int code = rc ? fail(&err) : report(&o, &b, pts, n, skipped, pr, figs, chk, &best, &err);
    if (!rc && (o.write_best || o.write_tt || o.write_mg)) {
        size_t i = o.point >= 0 ? (size_t)o.point : best;
        int wc = i == SIZE_MAX ? bad("%s", "--write-best, --write-torchtitan, --write-megatron: "
                                     "no point fits (name one with --point N)")
                               : write_point(&o, &b, &pts[i], i);
        code = wc ? wc : code;
    }
    free(full);
    free(csv);
    record_fini(&rec, n);
    search_pruner_free(pr);
    free(chk);
    free(figs);
    free(pts);
    return code;
}
