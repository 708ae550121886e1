/* Layout search: the defaults a scenario gives, the points of a space (which
 * layouts, in which order, with which grad_accum), the zip-mode sweep
 * columns, and the Pareto front on results worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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
        {true, true, 2, 0, 0, 10}, {true, true, 1, 0, 0, 30},   {true, true, 3, 0, 0, 5},
        {true, true, 2.5, 0, 0, 10}, {true, false, 0.5, 0, 0, 1}, {false, false, 0, 0, 0, 0},
        {true, true, 1, 0, 0, 30}, {true, true, 1, 0, 0, 40}};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),         cmocka_unit_test(test_enumerate_world8),
        cmocka_unit_test(test_enumerate_order),  cmocka_unit_test(test_enumerate_divisibility),
        cmocka_unit_test(test_enumerate_bound),  cmocka_unit_test(test_sweep_lists),
        cmocka_unit_test(test_front)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
