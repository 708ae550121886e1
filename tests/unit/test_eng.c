/* Engine: stream order, event deps, host issue, host blocking, collectives
 * that wait for every member, deadlock reports, determinism. Expected times
 * are worked out by hand in each test's comment. The fake network charges
 * 100 ns + 1 ns per byte for every collective and counts its calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/eng/eng.h"

typedef struct fake {
    int calls;
    ss_bytes last_bytes;
} fake;

static int fake_coll(void *ctx, prog_coll c, prog_group g, ss_bytes bytes, ss_ns *out,
                     ss_err *err)
{
    (void)c, (void)g, (void)err;
    fake *f = ctx;
    f->calls++;
    f->last_bytes = bytes;
    *out = 100 + bytes;
    return SS_OK;
}

static uint32_t op(prog *p, uint32_t r, prog_opkind k, prog_stream s, ss_ns host, ss_ns dev,
                   const uint32_t *deps, uint32_t nd)
{
    prog_op_spec sp = {.kind = k, .stream = s, .name = "op", .host_ns = host, .dev_ns = dev,
                       .deps = deps, .ndeps = nd};
    uint32_t id;
    assert_int_equal(prog_op_add(p, r, &sp, &id, NULL), SS_OK);
    return id;
}

static uint32_t coll(prog *p, uint32_t r, uint32_t g, ss_ns host, ss_bytes bytes)
{
    prog_op_spec sp = {.kind = PROG_OP_COLL, .stream = PROG_REDUCE, .name = "ar",
                       .coll = PROG_COLL_ALL_REDUCE, .group = g, .host_ns = host,
                       .bytes = bytes};
    uint32_t id;
    assert_int_equal(prog_op_add(p, r, &sp, &id, NULL), SS_OK);
    return id;
}

static trc *run_ok(prog *p, fake *f)
{
    eng_net net = {f, fake_coll};
    trc *t = NULL;
    ss_err err;
    ss_err_clear(&err);
    int rc = eng_run(p, &net, &t, &err);
    if (rc) fail_msg("eng_run: %s", err.msg);
    return t;
}

/* Three compute ops, 10 ns host each, 100/200/300 ns device: issued at 10,
 * 20, 30; run back to back [10,110) [110,310) [310,610). */
static void test_chain(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 1, NULL);
    for (int i = 1; i <= 3; i++) op(p, 0, PROG_OP_COMPUTE, PROG_COMPUTE, 10, 100 * (ss_ns)i, NULL, 0);
    fake f = {0};
    trc *t = run_ok(p, &f);
    ss_ns want[3][3] = {{10, 10, 110}, {20, 110, 310}, {30, 310, 610}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(t->ops[0][i].issue, want[i][0]);
        assert_int_equal(t->ops[0][i].start, want[i][1]);
        assert_int_equal(t->ops[0][i].end, want[i][2]);
    }
    assert_int_equal(t->step_ns, 610);
    trc_free(t);
    prog_free(p);
}

/* Two streams: A (compute, 0 host, 500 ns) and B (copy, 0 host, 100 ns)
 * overlap: both start at 0. C on copy depends on A: starts at 500, not at
 * B's end (100). */
static void test_event_dep(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 1, NULL);
    uint32_t a = op(p, 0, PROG_OP_COMPUTE, PROG_COMPUTE, 0, 500, NULL, 0);
    op(p, 0, PROG_OP_COMPUTE, PROG_COPY, 0, 100, NULL, 0);
    op(p, 0, PROG_OP_COMPUTE, PROG_COPY, 0, 50, &a, 1);
    fake f = {0};
    trc *t = run_ok(p, &f);
    assert_int_equal(t->ops[0][1].start, 0);
    assert_int_equal(t->ops[0][1].end, 100);
    assert_int_equal(t->ops[0][2].start, 500);
    assert_int_equal(t->ops[0][2].end, 550);
    trc_free(t);
    prog_free(p);
}

/* A host op that depends on a device op blocks the host: X (compute, 1000
 * ns) then H (host, 20 ns, dep X) then Y (compute, host 5): H runs
 * [1000,1020), Y is issued at 1025 and runs [1025,1035). */
static void test_host_block(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 1, NULL);
    uint32_t x = op(p, 0, PROG_OP_COMPUTE, PROG_COMPUTE, 0, 1000, NULL, 0);
    op(p, 0, PROG_OP_HOST, PROG_HOST, 20, 0, &x, 1);
    op(p, 0, PROG_OP_COMPUTE, PROG_COMPUTE, 5, 10, NULL, 0);
    fake f = {0};
    trc *t = run_ok(p, &f);
    assert_int_equal(t->ops[0][1].start, 1000);
    assert_int_equal(t->ops[0][1].end, 1020);
    assert_int_equal(t->ops[0][2].issue, 1025);
    assert_int_equal(t->ops[0][2].start, 1025);
    trc_free(t);
    prog_free(p);
}

/* Three ranks all-reduce 1000 bytes; rank 2 computes 700 ns first. All
 * start at 700 and end at 700 + 100 + 1000 = 1800; the network is asked
 * once. A second group (ranks 0,1) runs its own collective afterwards:
 * [1800, 2000) for 100 bytes. */
static void test_collective_waits(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 3, NULL);
    uint32_t all[3] = {0, 1, 2}, two[2] = {0, 1}, g0, g1;
    prog_group_add(p, all, 3, &g0, NULL);
    prog_group_add(p, two, 2, &g1, NULL);
    op(p, 2, PROG_OP_COMPUTE, PROG_COMPUTE, 0, 700, NULL, 0);
    for (uint32_t r = 0; r < 3; r++) {
        uint32_t prev = r == 2 ? 0 : UINT32_MAX;
        prog_op_spec sp = {.kind = PROG_OP_COLL, .stream = PROG_REDUCE, .name = "ar",
                           .coll = PROG_COLL_ALL_REDUCE, .group = g0, .bytes = 1000,
                           .deps = &prev, .ndeps = r == 2};
        uint32_t id;
        assert_int_equal(prog_op_add(p, r, &sp, &id, NULL), SS_OK);
    }
    coll(p, 0, g1, 0, 100);
    coll(p, 1, g1, 0, 100);
    fake f = {0};
    trc *t = run_ok(p, &f);
    for (uint32_t r = 0; r < 3; r++) {
        uint32_t i = r == 2 ? 1 : 0;
        assert_int_equal(t->ops[r][i].start, 700);
        assert_int_equal(t->ops[r][i].end, 1800);
    }
    assert_int_equal(t->ops[0][1].start, 1800);
    assert_int_equal(t->ops[0][1].end, 2000);
    assert_int_equal(f.calls, 2);
    assert_int_equal(f.last_bytes, 100);
    trc_free(t);
    prog_free(p);
}

static void expect_deadlock(prog *p, const char *fragment)
{
    fake f = {0};
    eng_net net = {&f, fake_coll};
    trc *t = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(eng_run(p, &net, &t, &err), SS_E_DEADLOCK);
    assert_null(t);
    if (!strstr(err.msg, fragment)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, fragment);
}

/* A collective only one of its two members calls never runs. */
static void test_deadlock_missing_peer(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 2, NULL);
    uint32_t two[2] = {0, 1}, g;
    prog_group_add(p, two, 2, &g, NULL);
    coll(p, 0, g, 0, 10);
    expect_deadlock(p, "only 1 of 2 members arrived");
    prog_free(p);
}

/* A cross-rank cycle: rank 0 calls group A's collective and blocks its
 * host on it before calling group B's; rank 1 does the same with B first.
 * Neither instance ever has both members. */
static void test_deadlock_cycle(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 2, NULL);
    uint32_t two[2] = {0, 1}, ga, gb;
    prog_group_add(p, two, 2, &ga, NULL);
    prog_group_add(p, two, 2, &gb, NULL);
    uint32_t a0 = coll(p, 0, ga, 0, 1);
    op(p, 0, PROG_OP_HOST, PROG_HOST, 0, 0, &a0, 1);
    coll(p, 0, gb, 0, 1);
    uint32_t b1 = coll(p, 1, gb, 0, 1);
    op(p, 1, PROG_OP_HOST, PROG_HOST, 0, 0, &b1, 1);
    coll(p, 1, ga, 0, 1);
    expect_deadlock(p, "only 1 of 2 members arrived");
    prog_free(p);
}

/* Same program twice: identical trace records, byte for byte. */
static void test_deterministic(void **state)
{
    (void)state;
    prog *p;
    prog_new(&p, 2, NULL);
    uint32_t two[2] = {0, 1}, g;
    prog_group_add(p, two, 2, &g, NULL);
    for (uint32_t r = 0; r < 2; r++)
        for (int i = 0; i < 20; i++) {
            op(p, r, PROG_OP_COMPUTE, PROG_COMPUTE, 3, 10 + (ss_ns)(i * (r + 1)), NULL, 0);
            if (i % 4 == 0) coll(p, r, g, 1, 64);
        }
    fake f = {0};
    trc *a = run_ok(p, &f), *b = run_ok(p, &f);
    for (uint32_t r = 0; r < 2; r++)
        assert_memory_equal(a->ops[r], b->ops[r], prog_nops(p, r) * sizeof(trc_op));
    assert_int_equal(a->step_ns, b->step_ns);
    assert_int_equal(a->nevents, b->nevents);
    trc_free(a);
    trc_free(b);
    prog_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_event_dep),
        cmocka_unit_test(test_host_block),
        cmocka_unit_test(test_collective_waits),
        cmocka_unit_test(test_deadlock_missing_peer),
        cmocka_unit_test(test_deadlock_cycle),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
