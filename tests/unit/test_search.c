/* Layout search: the defaults a scenario gives, the points of a space (which
 * layouts, in which order, with which grad_accum), the zip-mode sweep
 * columns, the Pareto front on results worked by hand; the step bound
 * (run/bound.h) on programs worked by hand and against the engine; the
 * checks before simulating (states, bound) against full runs over the
 * search spaces of shipped scenarios; the pruner's order and verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/eng/eng.h"
#include "../../sim/io/scenario.h"
#include "../../sim/plan/plan.h"
#include "../../sim/run/bound.h"
#include "../../sim/run/least.h"
#include "../../sim/sched/sched.h"
#include "../../sim/run/run.h"
#include "../../sim/run/search.h"

/* One node of 8 GPUs, a dense transformer, dp 8, one micro-batch of 1. */
static spec_scenario scenario(uint32_t nodes, uint64_t experts)
{
    spec_scenario s;
    memset(&s, 0, sizeof s);
    s.topo.nodes = nodes;
    s.topo.gpus_per_node = 8;
    s.model.is_arch = true;
    s.model.arch.experts = experts;
    s.dp = 8;
    s.micro_batch = 1;
    s.grad_accum = 1;
    s.shard.strategy = SPEC_FULL_SHARD;
    s.recompute = SPEC_RECOMP_FULL;
    return s;
}

static search_list list(size_t n, const uint32_t *v)
{
    search_list l = {.n = n};
    memcpy(l.v, v, n * sizeof *v);
    return l;
}

static void assert_list(const search_list *l, size_t n, const uint32_t *want)
{
    assert_int_equal(l->n, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(l->v[i], want[i]);
}

/* Two nodes: tp stays inside a node (up to 8), cp and pp go to 16; a model
 * with 4 experts caps ep at 4; a dense one has ep 1 only. */
static void test_defaults(void **state)
{
    (void)state;
    spec_scenario s = scenario(2, 4);
    search_space sp = {0};
    search_defaults(&sp, &s);
    assert_int_equal(sp.world, 16);
    assert_list(&sp.tp, 4, (uint32_t[]){1, 2, 4, 8});
    assert_list(&sp.cp, 5, (uint32_t[]){1, 2, 4, 8, 16});
    assert_list(&sp.pp, 5, (uint32_t[]){1, 2, 4, 8, 16});
    assert_list(&sp.ep, 3, (uint32_t[]){1, 2, 4});
    assert_list(&sp.strategy, 1, (uint32_t[]){SPEC_FULL_SHARD});
    assert_list(&sp.recompute, 1, (uint32_t[]){SPEC_RECOMP_FULL});
    assert_int_equal(sp.global_batch, 8);
    assert_int_equal(sp.max_points, 2000);
    s = scenario(1, 0);
    sp = (search_space){.world = 4, .tp = list(1, (uint32_t[]){2})};
    search_defaults(&sp, &s);
    assert_int_equal(sp.world, 4);
    assert_list(&sp.tp, 1, (uint32_t[]){2}); /* given lists stay */
    assert_list(&sp.cp, 3, (uint32_t[]){1, 2, 4});
    assert_list(&sp.ep, 1, (uint32_t[]){1});
}

/* World 8 with the defaults: the 20 (tp, cp, pp) whose product divides 8,
 * tp slowest, pp fastest; grad_accum keeps the global batch of 8. */
static void test_enumerate_world8(void **state)
{
    (void)state;
    spec_scenario s = scenario(1, 0);
    search_space sp = {0};
    search_defaults(&sp, &s);
    search_point *p;
    size_t n, skipped;
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, NULL), SS_OK);
    assert_int_equal(n, 20);
    assert_int_equal(skipped, 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(p[i].tp * p[i].cp * p[i].pp * p[i].dp, 8);
        assert_int_equal(p[i].grad_accum * p[i].dp, 8);
        assert_int_equal(p[i].ep, 1);
        assert_int_equal(p[i].strategy, SPEC_FULL_SHARD);
    }
    assert_int_equal(p[0].dp, 8);
    assert_int_equal(p[1].pp, 2); /* pp changes fastest among the layout */
    assert_int_equal(p[19].tp, 8);
    free(p);
}

/* Strategy and recompute are the fastest-changing, recompute last. */
static void test_enumerate_order(void **state)
{
    (void)state;
    search_space sp = {.world = 2, .tp = list(2, (uint32_t[]){1, 2}),
                       .cp = list(1, (uint32_t[]){1}), .pp = list(1, (uint32_t[]){1}),
                       .ep = list(1, (uint32_t[]){1}),
                       .strategy = list(2, (uint32_t[]){SPEC_DDP, SPEC_FULL_SHARD}),
                       .recompute = list(2, (uint32_t[]){SPEC_RECOMP_NONE, SPEC_RECOMP_FULL}),
                       .global_batch = 2, .micro_batch = 1, .max_points = 100};
    search_point *p;
    size_t n, skipped;
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, NULL), SS_OK);
    assert_int_equal(n, 8);
    assert_int_equal(p[0].strategy, SPEC_DDP);
    assert_int_equal(p[0].recompute, SPEC_RECOMP_NONE);
    assert_int_equal(p[1].recompute, SPEC_RECOMP_FULL);
    assert_int_equal(p[2].strategy, SPEC_FULL_SHARD);
    assert_int_equal(p[4].tp, 2);
    assert_int_equal(p[4].dp, 1);
    assert_int_equal(p[4].grad_accum, 2);
    free(p);
}

/* World 6, tp 1, 2, 4: tp 4 does not divide 6 (not a point, not skipped).
 * A global batch of 12 in micro-batches of 2: dp 6 takes one, dp 3 two.
 * A global batch of 4 splits over neither dp 6 nor dp 3: an error. */
static void test_enumerate_divisibility(void **state)
{
    (void)state;
    search_space sp = {.world = 6, .tp = list(3, (uint32_t[]){1, 2, 4}),
                       .cp = list(1, (uint32_t[]){1}), .pp = list(1, (uint32_t[]){1}),
                       .ep = list(1, (uint32_t[]){1}), .strategy = list(1, (uint32_t[]){0}),
                       .recompute = list(1, (uint32_t[]){0}), .global_batch = 12,
                       .micro_batch = 2, .max_points = 100};
    search_point *p;
    size_t n, skipped;
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, NULL), SS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(skipped, 0);
    assert_int_equal(p[0].dp, 6);
    assert_int_equal(p[0].grad_accum, 1);
    assert_int_equal(p[1].dp, 3);
    assert_int_equal(p[1].grad_accum, 2);
    free(p);
    sp.global_batch = 4;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, &err), SS_E_INPUT);
    assert_int_equal(skipped, 2);
    assert_null(p);
    assert_non_null(strstr(err.msg, "--global-batch"));
}

/* 20 layouts x 7 strategies x 3 modes = 420 points over a bound of 100:
 * an input error that names the longest list. */
static void test_enumerate_bound(void **state)
{
    (void)state;
    spec_scenario s = scenario(1, 0);
    search_space sp = {.max_points = 100, .recompute = list(3, (uint32_t[]){0, 1, 2}),
                       .strategy = list(7, (uint32_t[]){0, 1, 2, 3, 4, 5, 6})};
    search_defaults(&sp, &s);
    search_point *p;
    size_t n, skipped;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, &err), SS_E_INPUT);
    assert_int_equal(n, 420);
    assert_non_null(strstr(err.msg, "narrow --strategy (7 values)"));
    sp.max_points = 420;
    assert_int_equal(search_enumerate(&sp, &p, &n, &skipped, NULL), SS_OK);
    free(p);
}

/* The zip-mode columns: one per key, one value per point. */
static void test_sweep_lists(void **state)
{
    (void)state;
    search_point p[2] = {{1, 1, 2, 1, 4, 2, SPEC_DDP, SPEC_RECOMP_NONE},
                         {4, 2, 1, 1, 1, 8, SPEC_FULL_SHARD, SPEC_RECOMP_SELECTIVE}};
    sweep_cfg c = {0};
    assert_int_equal(search_sweep_lists(p, 2, SPEC_DDP, &c, NULL), SS_OK);
    assert_true(c.zip);
    assert_int_equal(c.nvary, SEARCH_NKEYS);
    assert_int_equal(sweep_points(&c), 2);
    const char *want[2][SEARCH_NKEYS] = {
        {"1", "1", "2", "1", "4", "false", "2", "ddp", "none"},
        {"4", "2", "1", "1", "1", "true", "8", "full_shard", "selective"}};
    for (size_t k = 0; k < SEARCH_NKEYS; k++) {
        assert_string_equal(c.vary[k].key, search_keys[k]);
        for (size_t i = 0; i < 2; i++) assert_string_equal(c.vary[k].values[i], want[i][k]);
    }
    /* the point with another runtime than the scenario's (ddp) gets its defaults */
    assert_null(c.vary[7].sets[0]);
    assert_string_equal(c.vary[7].sets[1], "sharding={\"strategy\": \"full_shard\"}");
    free(c.vary[3].values[1]);
    c.vary[3].nvalues = 1; /* lists of different lengths: no points */
    assert_int_equal(sweep_points(&c), 0);
    for (size_t k = 0; k < c.nvary; k++) sweep_vary_fini(&c.vary[k]);
}

/* Fitting points (step s, reserved bytes): 0 (2, 10), 1 (1, 30), 2 (3, 5),
 * 3 (2.5, 10) beaten by 0, 6 (1, 30) equal to 1 (the first stays), 7 (1,
 * 40) beaten by 1. 4 is faster and smaller but does not fit; 5 failed. The
 * front is 1, 0, 2. */
static void test_front(void **state)
{
    (void)state;
    sweep_fig f[8] = {
        {true, true, 2, 0, 0, 10, 0, 0, 0}, {true, true, 1, 0, 0, 30, 0, 0, 0},   {true, true, 3, 0, 0, 5, 0, 0, 0},
        {true, true, 2.5, 0, 0, 10, 0, 0, 0}, {true, false, 0.5, 0, 0, 1, 0, 0, 0}, {false, false, 0, 0, 0, 0, 0, 0, 0},
        {true, true, 1, 0, 0, 30, 0, 0, 0}, {true, true, 1, 0, 0, 40, 0, 0, 0}};
    size_t front[8], n;
    assert_int_equal(search_front(f, 8, front, &n, NULL), SS_OK);
    assert_int_equal(n, 3);
    assert_int_equal(front[0], 1);
    assert_int_equal(front[1], 0);
    assert_int_equal(front[2], 2);
    for (size_t i = 0; i < 8; i++) f[i].fits = false;
    assert_int_equal(search_front(f, 8, front, &n, NULL), SS_OK);
    assert_int_equal(n, 0);
}


/* ---- the step bound ---- */

static void add_op(prog *p, uint32_t r, prog_op_spec sp)
{
    uint32_t id;
    ss_err err;
    ss_err_clear(&err);
    if (prog_op_add(p, r, &sp, &id, &err)) fail_msg("prog_op_add: %s", err.msg);
}

/* Least bytes through one rank's links, by hand: 8 ranks, 800 bytes, 1 GB/s
 * (1 byte/ns): all-gather, reduce-scatter, all-reduce, all-to-all move 7/8
 * of 800 = 700 ns; broadcast and the point-to-point kinds the whole 800;
 * one rank or no bandwidth: nothing. */
static void test_bound_coll(void **state)
{
    (void)state;
    assert_int_equal(bound_coll_ns(PROG_COLL_ALL_GATHER, 800, 8, 1e9), 700);
    assert_int_equal(bound_coll_ns(PROG_COLL_REDUCE_SCATTER, 800, 8, 1e9), 700);
    assert_int_equal(bound_coll_ns(PROG_COLL_ALL_REDUCE, 800, 8, 1e9), 700);
    assert_int_equal(bound_coll_ns(PROG_COLL_ALL_TO_ALL, 800, 8, 1e9), 700);
    assert_int_equal(bound_coll_ns(PROG_COLL_BROADCAST, 800, 8, 1e9), 800);
    assert_int_equal(bound_coll_ns(PROG_COLL_SEND_UP, 800, 2, 1e9), 800);
    assert_int_equal(bound_coll_ns(PROG_COLL_ALL_GATHER, 800, 1, 1e9), 0);
    assert_int_equal(bound_coll_ns(PROG_COLL_ALL_GATHER, 800, 8, 0), 0);
}

/* A collective lasting a fixed 500 ns (what the bound gives 1,000 bytes of
 * all-gather over 2 ranks at 1 byte/ns). */
static int fixed_500(void *ctx, prog_coll coll, prog_group g, ss_bytes bytes, ss_ns *out,
                     ss_err *err)
{
    (void)ctx, (void)coll, (void)g, (void)bytes, (void)err;
    *out = 500;
    return SS_OK;
}

/* Two ranks, by hand. Rank 0: compute 10 ns, then the all-gather (1,000
 * bytes) on the unshard stream after it, then compute 5 ns after that.
 * Rank 1: a host op of 7 ns, compute 30 ns (issued at 7, ends 37), the
 * all-gather, compute 5. Host costs 0 but the host op. Free communication:
 * the all-gather starts when rank 1 arrives, at 37, and ends at once; the
 * step ends at 42. At 1 byte/ns it lasts 500 ns (1,000 x 1/2): 542. The
 * engine with collectives of exactly 500 ns gives the same 542. */
static void test_bound_by_hand(void **state)
{
    (void)state;
    prog *p = NULL;
    uint32_t g, ranks[2] = {0, 1}, d0 = 0, d1 = 1, d2 = 2;
    assert_int_equal(prog_new(&p, 2, NULL), SS_OK);
    assert_int_equal(prog_group_add(p, ranks, 2, &g, NULL), SS_OK);
    prog_op_spec comp = {.kind = PROG_OP_COMPUTE, .stream = PROG_COMPUTE, .name = "c"};
    prog_op_spec ag = {.kind = PROG_OP_COLL, .stream = PROG_UNSHARD, .name = "ag",
                       .coll = PROG_COLL_ALL_GATHER, .group = g, .bytes = 1000, .ndeps = 1};
    comp.dev_ns = 10;
    add_op(p, 0, comp);
    ag.deps = &d0;
    add_op(p, 0, ag);
    comp.dev_ns = 5, comp.deps = &d1, comp.ndeps = 1;
    add_op(p, 0, comp);
    add_op(p, 1, (prog_op_spec){.kind = PROG_OP_HOST, .stream = PROG_HOST, .name = "h",
                                .host_ns = 7});
    comp.dev_ns = 30, comp.deps = NULL, comp.ndeps = 0;
    add_op(p, 1, comp);
    ag.deps = &d1;
    add_op(p, 1, ag);
    comp.dev_ns = 5, comp.deps = &d2, comp.ndeps = 1;
    add_op(p, 1, comp);
    ss_ns b = 0;
    assert_int_equal(bound_step(p, NULL, &b, NULL), SS_OK);
    assert_int_equal(b, 42);
    double Bps = 1e9;
    bound_net links = bound_links(&Bps);
    assert_int_equal(bound_step(p, &links, &b, NULL), SS_OK);
    assert_int_equal(b, 542);
    eng_net net = {.coll_ns = fixed_500};
    trc *t = NULL;
    assert_int_equal(eng_run(p, &net, &t, NULL), SS_OK);
    assert_int_equal(t->step_ns, 542);
    trc_free(t);
    prog_free(p);
}

/* One rank per program (bound.h): the bound over the ranks that share no
 * program equals the bound over every rank, to the ns, with collectives at
 * their least times, on every shipped layout scenario (README's 5T MoE
 * layouts among them, where one rank stands for each stage's 256) and on
 * small layouts over every axis and data-parallel runtime. Returns how many
 * of the programs had shared ranks (the quotient did something). */
static int bound_both(const char *file, const char *const *sets, size_t nsets)
{
    spec_scenario s;
    plan *pl = NULL;
    prog *p = NULL;
    least *l = NULL;
    ss_err err;
    ss_err_clear(&err);
    if (scn_load(file, sets, nsets, &s, &err) || plan_new(&pl, &s, &err) ||
        sched_build(pl, &p, &err) || least_new(&s, p, &l, &err))
        fail_msg("%s: %s: %s", file, err.where, err.msg);
    bound_net net = least_net(l);
    ss_ns q = 0, all = 0;
    assert_int_equal(bound_step(p, &net, &q, &err), SS_OK);
    assert_int_equal(bound_step_every_rank(p, &net, &all, &err), SS_OK);
    int shared = 0;
    for (uint32_t r = 0; r < prog_nranks(p); r++) shared |= prog_rank_shared(p, r);
    print_message("  %s %s: %u ranks%s, bound %llu ns\n", strrchr(file, '/') + 1,
                  nsets ? sets[0] : "", prog_nranks(p), shared ? " (shared)" : "",
                  (unsigned long long)q);
    assert_true(q > 0);
    assert_int_equal(q, all);
    least_free(l);
    prog_free(p);
    plan_free(pl);
    spec_scenario_fini(&s);
    return shared;
}

static void test_bound_one_rank_per_program_heavy(void **state)
{
    (void)state;
    static const char *const files[] = {
        "scenarios/examples/tiny-gpt-fsdp2-tp2-cp2-ring.json",
        "scenarios/examples/tiny-gpt-megatron-tp2-pp2-overlap.json",
        "scenarios/examples/tiny-gpt-deepspeed-zero1-pp2-uneven.json",
        "scenarios/moe-5t/accel-4096-cp16-pp16-ep64.json",
        "scenarios/moe-5t/h200-1024-tp8-cp2-pp16-ep64.json",
        "scenarios/published/meta-llama3.1-405b-tp8-pp16-dp128-16kxh100.json",
        "scenarios/published/nemo-24.07-llama3-70b-tp4-pp4-cp2-vp5-dp2-fp8-64xh100.json",
        "scenarios/published/megatron-bridge-25.11-qwen3-30b-a3b-tp1-pp2-vp24-cp1-ep8-dp8-fp8cs-16xh100.json",
        "scenarios/published/torchtitan-llama3.1-70b-fsdp32-tp8-asynctp-256xh100.json",
    };
    int shared = 0;
    char path[1024];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", SS_SOURCE_DIR, files[i]);
        shared += bound_both(path, NULL, 0);
    }
    /* Small layouts: every axis, each data-parallel runtime that runs in a
     * layout, on the tiny model of the examples. */
    static const char *const layouts[] = {
        "parallel={\"dp\": 2, \"tp\": 2, \"pp\": 2, \"sequence_parallel\": true}",
        "parallel={\"dp\": 2, \"cp\": 2, \"pp\": 2}",
        "parallel={\"dp\": 4, \"tp\": 2}",
        "parallel={\"dp\": 1, \"tp\": 2, \"cp\": 2, \"pp\": 2}",
        "parallel={\"dp\": 4, \"pp\": 2, \"pipeline_schedule\": \"interleaved\", "
        "\"virtual_stages\": 2}",
    };
    static const char *const strategies[] = {
        "sharding={\"strategy\": \"fsdp2\"}", "sharding={\"strategy\": \"zero1\"}",
        "sharding={\"strategy\": \"megatron\"}", "sharding={\"strategy\": \"full_shard\"}",
        "sharding={\"strategy\": \"ddp\"}"};
    snprintf(path, sizeof path, "%s/scenarios/examples/tiny-gpt-fsdp2-tp2-cp2-ring.json",
             SS_SOURCE_DIR);
    for (size_t a = 0; a < sizeof layouts / sizeof *layouts; a++)
        for (size_t b = 0; b < sizeof strategies / sizeof *strategies; b++) {
            const char *sets[3] = {layouts[a], strategies[b], "training.grad_accum=4"};
            shared += bound_both(path, sets, 3);
        }
    assert_true(shared > 0);
}

/* ---- the checks against full runs ---- */

typedef struct space_case {
    const char *file;
    const char *sets[4];
    size_t nsets;
    search_space sp; /* zeros: the defaults */
} space_case;

/* Every point of the case's space: checked, then run in full. The bound
 * is <= the simulated step and the states <= the peak allocated on every
 * point that runs; a point rejected for its states does not fit. Counts
 * what ran and what was rejected into *ran and *rejected. */
static void check_space(const space_case *c, size_t *ran, size_t *rejected)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SS_SOURCE_DIR, c->file);
    spec_scenario s;
    ss_err err;
    ss_err_clear(&err);
    if (scn_load(path, c->sets, c->nsets, &s, &err)) fail_msg("%s: %s", path, err.msg);
    search_space sp = c->sp;
    search_defaults(&sp, &s);
    spec_strategy base = s.shard.strategy;
    spec_scenario_fini(&s);
    search_point *pts = NULL;
    size_t n = 0, skipped = 0;
    if (search_enumerate(&sp, &pts, &n, &skipped, &err)) fail_msg("%s: %s", path, err.msg);
    for (size_t i = 0; i < n; i++) {
        search_check k;
        search_check_point(path, c->sets, c->nsets, base, &pts[i], &k);
        char own[SEARCH_NKEYS][SEARCH_SET_MAX];
        const char *all[4 + SEARCH_NKEYS];
        size_t m = 0;
        for (size_t j = 0; j < c->nsets; j++) all[m++] = c->sets[j];
        size_t np = search_point_sets(&pts[i], base, own);
        for (size_t j = 0; j < np; j++) all[m++] = own[j];
        run_result r = {0};
        int rc = scn_load(path, all, m, &s, &err);
        if (!rc) {
            rc = run_step(&s, NULL, &r, &err);
            spec_scenario_fini(&s);
        }
        if (rc) { /* the checks may pass a point that fails later, never the reverse */
            run_fini(&r);
            continue;
        }
        if (!k.checked) fail_msg("%s point %zu runs but was not checked", c->file, i);
        (*ran)++;
        if (k.rejected) {
            (*rejected)++;
            if (sum_fits(&r.sum)) fail_msg("%s point %zu rejected but fits", c->file, i);
        } else if (k.bound_ns > r.sum.step_ns) {
            fail_msg("%s point %zu: bound %llu ns > step %llu ns", c->file, i,
                     (unsigned long long)k.bound_ns, (unsigned long long)r.sum.step_ns);
        }
        if (k.states > sum_max_peak(&r.sum))
            fail_msg("%s point %zu: states %llu > peak %llu", c->file, i,
                     (unsigned long long)k.states, (unsigned long long)sum_max_peak(&r.sum));
        run_fini(&r);
    }
    free(pts);
}

/* Spaces of shipped scenarios that run in seconds: every runtime (DDP,
 * ZeRO-1, FSDP1 (Mixtral, seeds/002), FSDP2, HSDP, DeepSpeed with offload,
 * Megatron), layouts
 * with tp, cp, pp and ep, a dense and a MoE model, graph topologies, a
 * calibration profile and flat ones. A 20 GiB capacity on Llama-3 8B
 * makes DDP's 16 bytes per parameter (128 GB) and more rejected. At this
 * commit 190 points run, 33 of them rejected; the floors below leave room
 * for scenarios that change, not for a bound that breaks (any one point
 * over fails the test). */
static void test_checks_against_runs_heavy(void **state)
{
    (void)state;
    static const space_case cases[] = {
        {"scenarios/transformers/llama3-8b-full-shard-8xh100.json",
         {"training.seq_len=1024", "allocator.capacity_bytes=21474836480"}, 2,
         {.strategy = {.v = {SPEC_DDP, SPEC_ZERO1, SPEC_FSDP2, SPEC_HYBRID_SHARD}, .n = 4}}},
        {"scenarios/examples/tiny-gpt-fsdp2-tp2-cp2-ring.json", {NULL}, 0, {0}},
        {"scenarios/examples/tiny-gpt-megatron-tp2-pp2-overlap.json", {NULL}, 0, {0}},
        {"scenarios/examples/tiny-gpt-deepspeed-zero1-pp2-uneven.json", {NULL}, 0, {0}},
        {"scenarios/transformers/mixtral-8x7b-full-shard-8xh200.json",
         {"training.seq_len=1024"}, 1, {0}},
        {"scenarios/deepspeed/llama3-8b-zero2-offload-8xh100.json", {"training.seq_len=1024"}, 1,
         {.pp = {.v = {1}, .n = 1}}},
        {"scenarios/multinode/llama3-8b-ddp-2x8-a3mega-calibrated.json",
         {"training.seq_len=1024"}, 1, {.cp = {.v = {1}, .n = 1}, .pp = {.v = {1, 2}, .n = 2}}},
        {"scenarios/seed002/zero3_full_shard_pre.json", {NULL}, 0, {0}},
        {"scenarios/examples/mlp7-zero1-bucket-view.json", {NULL}, 0, {0}},
    };
    size_t ran = 0, rejected = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_space(&cases[i], &ran, &rejected);
    print_message("%zu points ran, %zu of them rejected for their states\n", ran, rejected);
    assert_true(ran >= 150);
    assert_true(rejected >= 20);
}

/* ---- the pruner ---- */

static sweep_fig fig(double step_s, uint64_t reserved)
{
    return (sweep_fig){.ok = true, .fits = true, .step_s = step_s, .peak_reserved = reserved};
}

/* Four points, bounds 3, 1, 2, 5 s (ns below), states 10, 30, 20, 5 GiB-ish
 * units; point 4 unchecked, point 5 rejected. Order: 4 (unchecked first),
 * 1, 2, 0, 3, then 5 (rejected last). Point 1 runs: 4 s with 40 units.
 * Under best: point 2 (bound 2 < 4) runs, takes 2.5 s with 25; point 0
 * (bound 3 >= 2.5) and point 3 (5 >= 2.5) are pruned, by point 2. Under
 * front: point 0's states 10 < 25 and 40, so nothing prunes it; point 3's
 * bound 5 >= 2.5 but its states 5 < 25: it runs too. Rejected always says
 * so; none runs everything, in index order. */
static void test_pruner(void **state)
{
    (void)state;
    const uint64_t G = 1;
    search_check chk[6] = {
        {.checked = true, .states = 10 * G, .bound_ns = 3000000000ull},
        {.checked = true, .states = 30 * G, .bound_ns = 1000000000ull},
        {.checked = true, .states = 20 * G, .bound_ns = 2000000000ull},
        {.checked = true, .states = 5 * G, .bound_ns = 5000000000ull},
        {.checked = false},
        {.checked = true, .rejected = true, .states = 100 * G, .capacity = 50 * G}};
    search_pruner *p = NULL;
    sweep_skip row;
    const size_t want[6] = {4, 1, 2, 0, 3, 5};
    for (int mode = 0; mode < 3; mode++) {
        assert_int_equal(search_pruner_new(&p, chk, 6, (search_prune)mode, NULL), SS_OK);
        const size_t *order = search_pruner_order(p);
        for (size_t k = 0; k < 6; k++) assert_int_equal(order[k], mode == 2 ? k : want[k]);
        if (mode == 2) {
            for (size_t k = 0; k < 6; k++) assert_int_equal(search_pruner_skip(p, k, &row), SWEEP_RUN);
            search_pruner_free(p);
            continue;
        }
        sweep_fig none = {0}, f1 = fig(4.0, 40 * G), f2 = fig(2.5, 25 * G), f0 = fig(3.5, 12 * G),
                  f3 = fig(6.0, 6 * G);
        assert_int_equal(search_pruner_skip(p, 4, &row), SWEEP_RUN);
        search_pruner_done(p, 4, &none);
        assert_int_equal(search_pruner_skip(p, 1, &row), SWEEP_RUN);
        search_pruner_done(p, 1, &f1);
        assert_int_equal(search_pruner_skip(p, 2, &row), SWEEP_RUN);
        search_pruner_done(p, 2, &f2);
        int s0 = search_pruner_skip(p, 0, &row);
        assert_int_equal(s0, mode == 0 ? SWEEP_SKIP : SWEEP_RUN);
        if (mode == 0) assert_string_equal(row.why, "pruned: bound 3.000000 s >= best 2.500000 s (point 2)");
        search_pruner_done(p, 0, s0 ? &none : &f0);
        int s3 = search_pruner_skip(p, 3, &row);
        assert_int_equal(s3, mode == 0 ? SWEEP_SKIP : SWEEP_RUN);
        search_pruner_done(p, 3, s3 ? &none : &f3);
        assert_int_equal(search_pruner_skip(p, 5, &row), SWEEP_SKIP);
        assert_string_equal(row.status, "rejected");
        assert_string_equal(row.why, "rejected: states 0.00 GiB > 0.00 GiB");
        search_pruner_done(p, 5, &none);
        size_t rej, pruned;
        search_pruner_counts(p, &rej, &pruned);
        assert_int_equal(rej, 1);
        assert_int_equal(pruned, mode == 0 ? 2 : 0);
        /* best: pruned point 0 (bound 3 s, states 10) might beat a front
         * point of 3 s and 50 units, not one of 2.9 s or of 9 units. */
        sweep_fig q = fig(3.0, 50 * G), fast = fig(2.9, 50 * G), small = fig(3.0, 9 * G);
        assert_int_equal(search_pruner_doubt(p, &q), mode == 0);
        assert_false(search_pruner_doubt(p, &fast));
        assert_false(search_pruner_doubt(p, &small));
        search_pruner_free(p);
    }
}

/* Verdicts do not depend on finishing order: point 0 (bound 3) is taken
 * while point 2 (bound 2) still runs, so nothing prunes it yet and it runs;
 * when point 2 finishes at 2.5 s, the frontier passes both and point 0,
 * which only point 2 beats, is pruned after the fact: the verdict a
 * single thread would have reached. */
static void test_pruner_order_independent(void **state)
{
    (void)state;
    search_check chk[3] = {
        {.checked = true, .states = 1, .bound_ns = 3000000000ull},
        {.checked = true, .states = 1, .bound_ns = 1000000000ull},
        {.checked = true, .states = 1, .bound_ns = 2000000000ull}};
    search_pruner *p = NULL;
    sweep_skip row;
    assert_int_equal(search_pruner_new(&p, chk, 3, SEARCH_PRUNE_BEST, NULL), SS_OK);
    sweep_fig f1 = fig(4.0, 9), f2 = fig(2.5, 9), f0 = fig(3.0, 9);
    assert_int_equal(search_pruner_skip(p, 1, &row), SWEEP_RUN);
    assert_int_equal(search_pruner_skip(p, 2, &row), SWEEP_RUN);
    search_pruner_done(p, 1, &f1);
    assert_int_equal(search_pruner_skip(p, 0, &row), SWEEP_RUN); /* point 2 pending */
    search_pruner_done(p, 0, &f0);
    search_pruner_done(p, 2, &f2);
    assert_int_equal(search_pruner_skip(p, 0, &row), SWEEP_SKIP);
    assert_string_equal(row.status, "pruned");
    assert_int_equal(search_pruner_skip(p, 2, &row), SWEEP_RUN);
    search_pruner_free(p);
}

/* The nearest miss, worked by hand with usable 100: simulated points 0
 * (peak 130: 30 over) and 2 (peak 110: 10 over) miss, 1 fits, 3 failed;
 * rejected 4 (states 105: at least 5 over, below 10: it might come closer)
 * and 5 (states 150). The nearest is 2, with 4 as the doubt; without the
 * simulated ones, the rejected 4 (its states); with nothing simulated or
 * rejected, none. */
static void test_nearest_miss(void **state)
{
    (void)state;
    sweep_fig f[6] = {{.ok = true, .peak_reserved = 130}, {.ok = true, .fits = true, .peak_reserved = 90},
                      {.ok = true, .peak_reserved = 110}, {0}, {0}, {0}};
    search_check c[6] = {[4] = {.checked = true, .rejected = true, .states = 105},
                         [5] = {.checked = true, .rejected = true, .states = 150}};
    search_miss m;
    assert_true(search_nearest_miss(f, c, 6, 100, &m));
    assert_int_equal(m.point, 2);
    assert_true(m.simulated);
    assert_int_equal(m.bytes, 110);
    assert_int_equal(m.over, 10);
    assert_int_equal(m.doubt, 4);
    c[4].states = 120; /* 20 over: no longer below 10 */
    assert_true(search_nearest_miss(f, c, 6, 100, &m));
    assert_int_equal(m.doubt, SIZE_MAX);
    f[0].ok = f[2].ok = false;
    assert_true(search_nearest_miss(f, c, 6, 100, &m));
    assert_int_equal(m.point, 4);
    assert_false(m.simulated);
    assert_int_equal(m.bytes, 120);
    assert_int_equal(m.over, 20);
    c[4].rejected = c[5].rejected = false;
    assert_false(search_nearest_miss(f, c, 6, 100, &m));
}

/* SS_SKIP_TESTS (a cmocka pattern, e.g. "*_heavy"): the tests the suite's
 * valgrind pass leaves to the plain and sanitizer passes (scripts/test.sh). */
int main(void)
{
    cmocka_set_skip_filter(getenv("SS_SKIP_TESTS"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),         cmocka_unit_test(test_enumerate_world8),
        cmocka_unit_test(test_enumerate_order),  cmocka_unit_test(test_enumerate_divisibility),
        cmocka_unit_test(test_enumerate_bound),  cmocka_unit_test(test_sweep_lists),
        cmocka_unit_test(test_front),            cmocka_unit_test(test_bound_coll),
        cmocka_unit_test(test_bound_by_hand),    cmocka_unit_test(test_checks_against_runs_heavy),
        cmocka_unit_test(test_pruner),           cmocka_unit_test(test_pruner_order_independent),
        cmocka_unit_test(test_nearest_miss),
        cmocka_unit_test(test_bound_one_rank_per_program_heavy)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
