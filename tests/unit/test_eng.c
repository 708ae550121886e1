/* Engine: stream order, event deps, host issue cost, host blocking,
 * collectives that wait for every member, deadlock reports, errors,
 * determinism. Expected times are worked out by hand in each test's
 * comment from prog.h's rules. The fake network charges alpha + bytes /
 * beta = 100 ns + bytes / 2 ns for every collective and logs its calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/eng/eng.h"

enum { ALPHA = 100, BETA = 2, MAXCALLS = 16, BAD_BYTES = 13 };

typedef struct call {
    prog_coll coll;
    ss_bytes bytes;
    uint32_t size, rank0;
} call;

typedef struct fake {
    int ncalls;
    call calls[MAXCALLS];
} fake;

/* alpha + bytes / beta; BAD_BYTES makes it fail, to test propagation. */
static int fake_coll(void *ctx, prog_coll c, prog_group g, ss_bytes bytes, ss_ns *out,
                     ss_err *err)
{
    fake *f = ctx;
    if (bytes == BAD_BYTES) return ss_fail(err, SS_E_INPUT, NULL, "fake network refuses 13 bytes");
    if (f->ncalls < MAXCALLS) f->calls[f->ncalls] = (call){c, bytes, g.size, g.ranks[0]};
    f->ncalls++;
    *out = ALPHA + bytes / BETA;
    return SS_OK;
}

static prog *new_prog(uint32_t nranks)
{
    prog *p = NULL;
    assert_int_equal(prog_new(&p, nranks, NULL), SS_OK);
    return p;
}

static uint32_t group(prog *p, const uint32_t *ranks, uint32_t n)
{
    uint32_t g;
    assert_int_equal(prog_group_add(p, ranks, n, &g, NULL), SS_OK);
    return g;
}

static uint32_t add(prog *p, uint32_t r, const prog_op_spec *sp)
{
    uint32_t id;
    assert_int_equal(prog_op_add(p, r, sp, &id, NULL), SS_OK);
    return id;
}

/* A COMPUTE op on stream s (or a HOST op when s is PROG_HOST), at most one
 * dep (NULL for none). */
static uint32_t op(prog *p, uint32_t r, const char *name, prog_stream s, ss_ns host, ss_ns dev,
                   const uint32_t *dep)
{
    prog_op_spec sp = {.kind = s == PROG_HOST ? PROG_OP_HOST : PROG_OP_COMPUTE, .stream = s,
                       .name = name, .host_ns = host, .dev_ns = dev, .deps = dep,
                       .ndeps = dep != NULL};
    return add(p, r, &sp);
}

/* A collective with no host cost. */
static uint32_t coll(prog *p, uint32_t r, const char *name, prog_coll c, uint32_t g,
                     prog_stream s, ss_bytes bytes, const uint32_t *dep)
{
    prog_op_spec sp = {.kind = PROG_OP_COLL, .stream = s, .name = name, .coll = c, .group = g,
                       .bytes = bytes, .deps = dep, .ndeps = dep != NULL};
    return add(p, r, &sp);
}

static trc *run_ok(const prog *p, fake *f)
{
    eng_net net = {.ctx = f, .coll_ns = fake_coll};
    trc *t = NULL;
    ss_err err;
    ss_err_clear(&err);
    if (eng_run(p, &net, &t, &err) != SS_OK) fail_msg("eng_run: %s", err.msg);
    assert_non_null(t);
    return t;
}

static void assert_times(const trc_op *o, ss_ns issue, ss_ns start, ss_ns end)
{
    assert_int_equal(o->issue, issue);
    assert_int_equal(o->start, start);
    assert_int_equal(o->end, end);
}

/* One rank, three compute ops on one stream, 10 ns host each, 100/200/300
 * ns device. The host issues them at 10, 20, 30; the stream runs them back
 * to back: [10,110) [110,310) [310,610); ends are running sums 10+100,
 * +200, +300. Events: 1 host kick + 3 issues + 3 ends = 7. seq, in
 * processing order (issues and ends; starts take none): t=10 issue0 0;
 * t=20 issue1 1; t=30 issue2 2; t=110 end0 3; t=310 end1 4; t=610 end2 5. */
static void test_chain(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    for (int i = 1; i <= 3; i++) op(p, 0, "mm", PROG_COMPUTE, 10, 100 * (ss_ns)i, NULL);
    fake f = {0};
    trc *t = run_ok(p, &f);
    const trc_op *o = t->ops[0];
    assert_times(&o[0], 10, 10, 110);
    assert_times(&o[1], 20, 110, 310);
    assert_times(&o[2], 30, 310, 610);
    const uint32_t seq[3][2] = {{0, 3}, {1, 4}, {2, 5}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(o[i].seq_issue, seq[i][0]);
        assert_int_equal(o[i].seq_end, seq[i][1]);
    }
    assert_int_equal(t->step_ns, 610);
    assert_int_equal(t->nevents, 7);
    assert_int_equal(f.ncalls, 0);
    trc_free(t);
    prog_free(p);
}

/* Two streams, no host cost, all issued at 0: A (compute, 500 ns) and B
 * (copy, 100 ns) overlap, both start at 0. C (copy, 50 ns) depends on A:
 * it starts at max(issue 0, B ends 100, A ends 500) = 500, ends 550. D
 * (copy, 10 ns, no deps) is FIFO behind C: [550, 560). step = 560. */
static void test_two_streams_event_dep(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    uint32_t a = op(p, 0, "A", PROG_COMPUTE, 0, 500, NULL);
    op(p, 0, "B", PROG_COPY, 0, 100, NULL);
    op(p, 0, "C", PROG_COPY, 0, 50, &a);
    op(p, 0, "D", PROG_COPY, 0, 10, NULL);
    fake f = {0};
    trc *t = run_ok(p, &f);
    assert_times(&t->ops[0][0], 0, 0, 500);
    assert_times(&t->ops[0][1], 0, 0, 100);
    assert_times(&t->ops[0][2], 0, 500, 550);
    assert_times(&t->ops[0][3], 0, 550, 560);
    assert_int_equal(t->step_ns, 560);
    trc_free(t);
    prog_free(p);
}

/* Host issue cost delays device ops: op0 (compute, host 300, dev 100) is
 * issued at 300 and runs [300,400); op1 (compute, host 50, dev 100) is
 * issued at 350 and waits behind op0: [400,500); op2 (copy, host 50, dev
 * 10, dep op0) is issued at 400, the instant op0 ends: [400,410). At 400
 * the END (class END) is processed before the ISSUE (class ISSUE): seq
 * t=300 issue0 0; t=350 issue1 1; t=400 end0 2, issue2 3; t=410 end2 4;
 * t=500 end1 5. */
static void test_host_issue_cost(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    uint32_t a = op(p, 0, "op0", PROG_COMPUTE, 300, 100, NULL);
    op(p, 0, "op1", PROG_COMPUTE, 50, 100, NULL);
    op(p, 0, "op2", PROG_COPY, 50, 10, &a);
    fake f = {0};
    trc *t = run_ok(p, &f);
    const trc_op *o = t->ops[0];
    assert_times(&o[0], 300, 300, 400);
    assert_times(&o[1], 350, 400, 500);
    assert_times(&o[2], 400, 400, 410);
    assert_int_equal(o[0].seq_end, 2);
    assert_int_equal(o[2].seq_issue, 3);
    assert_int_equal(o[2].seq_end, 4);
    assert_int_equal(o[1].seq_end, 5);
    assert_int_equal(t->step_ns, 500);
    trc_free(t);
    prog_free(p);
}

/* A HOST op with a dep blocks the host until the device op ends: X
 * (compute, host 0, dev 1000) runs [0,1000); H (host, 20 ns, dep X)
 * cannot start before 1000, so H has issue = start = 1000, end 1020; Y
 * (compute, host 5, dev 10) is issued only after H: at 1020 + 5 = 1025,
 * runs [1025,1035). Without the block Y would have been issued at 5. */
static void test_host_block(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    uint32_t x = op(p, 0, "X", PROG_COMPUTE, 0, 1000, NULL);
    op(p, 0, "H", PROG_HOST, 20, 0, &x);
    op(p, 0, "Y", PROG_COMPUTE, 5, 10, NULL);
    fake f = {0};
    trc *t = run_ok(p, &f);
    const trc_op *o = t->ops[0];
    assert_times(&o[0], 0, 0, 1000);
    assert_times(&o[1], 1000, 1000, 1020);
    assert_times(&o[2], 1025, 1025, 1035);
    assert_true(o[0].seq_end < o[1].seq_issue);
    assert_true(o[1].seq_issue < o[1].seq_end);
    assert_int_equal(t->step_ns, 1035);
    trc_free(t);
    prog_free(p);
}

/* All-gather over ranks {0,1,2}, payloads 1000/2000/3000 bytes on ranks
 * 0/1/2; rank 2 first computes 700 ns and its call depends on that.
 * Ranks 0 and 1 are ready at 0, rank 2 at 700: all start at 700. The
 * network is asked once, with the lowest member's op: all_gather, 1000
 * bytes, group of 3: 100 + 1000/2 = 600 ns, so all end at 1300. Rank 0's
 * "after" (compute kind, on the reduce stream, issued at 0, 10 ns) waits
 * behind the collective that holds the stream while it waits for rank 2:
 * [1300,1310), not [0,10). */
static void test_coll_late_arrival(void **state)
{
    (void)state;
    prog *p = new_prog(3);
    uint32_t all[3] = {0, 1, 2};
    uint32_t g = group(p, all, 3);
    uint32_t c = op(p, 2, "fwd", PROG_COMPUTE, 0, 700, NULL);
    for (uint32_t r = 0; r < 3; r++)
        coll(p, r, "ag", PROG_COLL_ALL_GATHER, g, PROG_UNSHARD, 1000 * ((ss_bytes)r + 1),
             r == 2 ? &c : NULL);
    op(p, 0, "after", PROG_UNSHARD, 0, 10, NULL);
    fake f = {0};
    trc *t = run_ok(p, &f);
    for (uint32_t r = 0; r < 3; r++) {
        uint32_t i = r == 2 ? 1 : 0;
        assert_times(&t->ops[r][i], 0, 700, 1300);
    }
    assert_times(&t->ops[0][1], 0, 1300, 1310);
    assert_int_equal(f.ncalls, 1);
    assert_int_equal(f.calls[0].coll, PROG_COLL_ALL_GATHER);
    assert_int_equal(f.calls[0].bytes, 1000);
    assert_int_equal(f.calls[0].size, 3);
    assert_int_equal(f.calls[0].rank0, 0);
    assert_int_equal(t->step_ns, 1310);
    trc_free(t);
    prog_free(p);
}

/* Group a's calls on ranks 0 and 1: A#0 and A#1 on rank 0's REDUCE
 * stream; on rank 1, A#0, a 2000-ns compute, then A#1 on UNSHARD after it. */
static void pair_a(prog *p, uint32_t ga)
{
    coll(p, 0, "a0", PROG_COLL_ALL_REDUCE, ga, PROG_REDUCE, 400, NULL);
    coll(p, 0, "a1", PROG_COLL_ALL_REDUCE, ga, PROG_REDUCE, 1000, NULL);
    coll(p, 1, "a0", PROG_COLL_ALL_REDUCE, ga, PROG_REDUCE, 400, NULL);
    uint32_t c1 = op(p, 1, "c1", PROG_COMPUTE, 0, 2000, NULL);
    coll(p, 1, "a1", PROG_COLL_ALL_REDUCE, ga, PROG_UNSHARD, 1000, &c1);
}

/* Two groups, A = {0,1} and B = {2,3}, all host costs 0.
 * rank 0: A#0 (reduce, 400 B), A#1 (reduce, 1000 B)
 * rank 1: A#0 (reduce, 400 B), c1 (compute 2000), A#1 (unshard, 1000 B, dep c1)
 * rank 2: c2 (compute 1000), B#0 (reduce, 0 B, dep c2)
 * rank 3: B#0 (reduce, 0 B)
 * A#0: both ready at 0, 100 + 400/2 = 300: [0,300). B#0 does not wait for
 * A: ready 0 (rank 3) and 1000 (rank 2), 100 + 0 = 100: [1000,1100). A#1
 * matches the second A call on each rank, whatever its stream: rank 0
 * ready at 300 (behind A#0), rank 1 at 2000: 100 + 1000/2 = 600:
 * [2000,2600). Network calls in start order: (A, 400), (B, 0), (A, 1000),
 * with lowest members 0, 2, 0. */
static void test_two_groups(void **state)
{
    (void)state;
    prog *p = new_prog(4);
    uint32_t ra[2] = {0, 1}, rb[2] = {2, 3};
    uint32_t ga = group(p, ra, 2), gb = group(p, rb, 2);
    pair_a(p, ga);
    uint32_t c2 = op(p, 2, "c2", PROG_COMPUTE, 0, 1000, NULL);
    coll(p, 2, "b0", PROG_COLL_REDUCE_SCATTER, gb, PROG_REDUCE, 0, &c2);
    coll(p, 3, "b0", PROG_COLL_REDUCE_SCATTER, gb, PROG_REDUCE, 0, NULL);
    fake f = {0};
    trc *t = run_ok(p, &f);
    assert_times(&t->ops[0][0], 0, 0, 300);
    assert_times(&t->ops[1][0], 0, 0, 300);
    assert_times(&t->ops[2][1], 0, 1000, 1100);
    assert_times(&t->ops[3][0], 0, 1000, 1100);
    assert_times(&t->ops[0][1], 0, 2000, 2600);
    assert_times(&t->ops[1][2], 0, 2000, 2600);
    assert_int_equal(f.ncalls, 3);
    const call want[3] = {{PROG_COLL_ALL_REDUCE, 400, 2, 0},
                          {PROG_COLL_REDUCE_SCATTER, 0, 2, 2},
                          {PROG_COLL_ALL_REDUCE, 1000, 2, 0}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(f.calls[i].coll, want[i].coll);
        assert_int_equal(f.calls[i].bytes, want[i].bytes);
        assert_int_equal(f.calls[i].size, want[i].size);
        assert_int_equal(f.calls[i].rank0, want[i].rank0);
    }
    assert_int_equal(t->step_ns, 2600);
    trc_free(t);
    prog_free(p);
}

/* test_two_groups' groups {0,1} and {2,3}, with ranks 2 and 3 running
 * ranks 0 and 1's programs (prog_rank_share) with group b for group a:
 * each pair's all-reduces are timed as if built alone (rank 1's compute
 * delays the second one to 2000 + 100 + 1000/2 = 2600 on both pairs). A
 * shared rank cannot name a group it is not in, nor share a shared rank. */
static void test_shared_programs(void **state)
{
    (void)state;
    prog *p = new_prog(4);
    uint32_t ra[2] = {0, 1}, rb[2] = {2, 3};
    uint32_t ga = group(p, ra, 2), gb = group(p, rb, 2);
    pair_a(p, ga);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(prog_rank_share(p, 2, 0, NULL, NULL, 0, &err), SS_E_INTERNAL); /* not in a */
    assert_non_null(strstr(err.msg, "not in group"));
    assert_false(prog_rank_shared(p, 2));
    assert_int_equal(prog_rank_share(p, 2, 0, &ga, &gb, 1, NULL), SS_OK);
    assert_int_equal(prog_rank_share(p, 3, 2, &ga, &gb, 1, NULL), SS_E_INTERNAL); /* 2 is shared */
    assert_int_equal(prog_rank_share(p, 3, 1, &ga, &gb, 1, NULL), SS_OK);
    assert_true(prog_rank_shared(p, 3));
    assert_int_equal(prog_nops(p, 3), 3);
    assert_ptr_equal(prog_ops(p, 3), prog_ops(p, 1));
    assert_int_equal(prog_op_group(p, 3, 2), gb);
    assert_int_equal(prog_op_group(p, 1, 2), ga);
    fake f = {0};
    trc *t = run_ok(p, &f);
    for (uint32_t r = 0; r < 4; r += 2) {
        assert_times(&t->ops[r][0], 0, 0, 300);
        assert_times(&t->ops[r + 1][0], 0, 0, 300);
        assert_times(&t->ops[r][1], 0, 2000, 2600);
        assert_times(&t->ops[r + 1][2], 0, 2000, 2600);
    }
    assert_int_equal(f.ncalls, 4);
    assert_int_equal(f.calls[1].rank0, 2); /* group b's first all-reduce */
    trc_free(t);
    prog_free(p);
}

/* eng_run must fail with `code`, leave *out untouched, and say each of the
 * fragments. */
static void expect_fail(const prog *p, int code, const char *const *frag, int nfrag)
{
    fake f = {0};
    eng_net net = {.ctx = &f, .coll_ns = fake_coll};
    trc sentinel, *t = &sentinel;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(eng_run(p, &net, &t, &err), code);
    assert_ptr_equal(t, &sentinel);
    for (int i = 0; i < nfrag; i++)
        if (!strstr(err.msg, frag[i])) fail_msg("message \"%s\" lacks \"%s\"", err.msg, frag[i]);
}

/* Group {0,1}; only rank 0 calls its all-reduce "lonely_ar" (rank 1 just
 * computes). Instance 0 never has rank 1, so rank 0 op 0 never ends. */
static void test_deadlock_missing_peer(void **state)
{
    (void)state;
    prog *p = new_prog(2);
    uint32_t two[2] = {0, 1};
    uint32_t g = group(p, two, 2);
    coll(p, 0, "lonely_ar", PROG_COLL_ALL_REDUCE, g, PROG_REDUCE, 10, NULL);
    op(p, 1, "busy", PROG_COMPUTE, 0, 5, NULL);
    const char *frag[] = {"rank 0 op 0 (lonely_ar)", "1 of 2 members",
                          "waits for rank 1, which never makes that call"};
    expect_fail(p, SS_E_DEADLOCK, frag, 3);
    prog_free(p);
}

/* A dependency on an op queued behind a waiting collective on another
 * stream. Groups G = {0,1} (id 0), H = {0,1} (id 1):
 * rank 0: h_r0 (H, reduce), g_r0 (G, reduce)
 * rank 1: g_r1 (G, reduce), d (reduce, queued behind g_r1),
 *         x (compute, dep d), h_r1 (H, unshard, dep x)
 * rank 0's reduce stream holds h_r0 waiting for h_r1; h_r1 waits for x,
 * x for d, d sits behind g_r1, and g_r1 waits for g_r0, which sits behind
 * h_r0: a cycle. The first op that never ends is rank 0 op 0; the report
 * follows it to rank 1's h_r1 and its dep x. */
static void test_deadlock_dep_behind_stream(void **state)
{
    (void)state;
    prog *p = new_prog(2);
    uint32_t two[2] = {0, 1};
    uint32_t gg = group(p, two, 2), gh = group(p, two, 2);
    coll(p, 0, "h_r0", PROG_COLL_ALL_REDUCE, gh, PROG_REDUCE, 8, NULL);
    coll(p, 0, "g_r0", PROG_COLL_ALL_REDUCE, gg, PROG_REDUCE, 8, NULL);
    coll(p, 1, "g_r1", PROG_COLL_ALL_REDUCE, gg, PROG_REDUCE, 8, NULL);
    uint32_t d = op(p, 1, "d", PROG_REDUCE, 0, 5, NULL);
    uint32_t x = op(p, 1, "x", PROG_COMPUTE, 0, 5, &d);
    coll(p, 1, "h_r1", PROG_COLL_ALL_REDUCE, gh, PROG_UNSHARD, 8, &x);
    const char *frag[] = {"rank 0 op 0 (h_r0)", "group 1", "rank 1, whose matching op 3 (h_r1)",
                          "dependency op 2 (x"};
    expect_fail(p, SS_E_DEADLOCK, frag, 4);
    prog_free(p);
}

/* NCCL ordering bug: rank 0 calls A then B on its reduce stream, rank 1 B
 * then A. Each stream holds the first call waiting for a peer whose
 * matching call sits behind on its stream. Report: rank 0 op 0 (a_r0)
 * waits for rank 1's op 1 (a_r1), stuck on the reduce stream behind op 0
 * (b_r1). */
static void test_deadlock_stream_order(void **state)
{
    (void)state;
    prog *p = new_prog(2);
    uint32_t two[2] = {0, 1};
    uint32_t ga = group(p, two, 2), gb = group(p, two, 2);
    coll(p, 0, "a_r0", PROG_COLL_ALL_GATHER, ga, PROG_REDUCE, 8, NULL);
    coll(p, 0, "b_r0", PROG_COLL_ALL_GATHER, gb, PROG_REDUCE, 8, NULL);
    coll(p, 1, "b_r1", PROG_COLL_ALL_GATHER, gb, PROG_REDUCE, 8, NULL);
    coll(p, 1, "a_r1", PROG_COLL_ALL_GATHER, ga, PROG_REDUCE, 8, NULL);
    const char *frag[] = {"rank 0 op 0 (a_r0)", "rank 1, whose matching op 1 (a_r1)",
                          "reduce stream behind op 0 (b_r1)"};
    expect_fail(p, SS_E_DEADLOCK, frag, 3);
    prog_free(p);
}

/* The network's error is the engine's error: a 13-byte collective makes
 * the fake fail with SS_E_INPUT and its message; no trace comes back. */
static void test_net_error(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    uint32_t one[1] = {0};
    uint32_t g = group(p, one, 1);
    coll(p, 0, "bad", PROG_COLL_BROADCAST, g, PROG_UNSHARD, BAD_BYTES, NULL);
    const char *frag[] = {"refuses 13 bytes"};
    expect_fail(p, SS_E_INPUT, frag, 1);
    prog_free(p);
}

/* Issue at 1 ns plus UINT64_MAX ns of device time does not fit: the
 * engine reports SS_E_OVERFLOW naming the op instead of wrapping. */
static void test_overflow(void **state)
{
    (void)state;
    prog *p = new_prog(1);
    op(p, 0, "huge", PROG_COMPUTE, 1, UINT64_MAX, NULL);
    const char *frag[] = {"rank 0 op 0 (huge)"};
    expect_fail(p, SS_E_OVERFLOW, frag, 1);
    prog_free(p);
}

/* Ranks without ops: nothing runs, step 0, one host kick per rank. */
static void test_empty(void **state)
{
    (void)state;
    prog *p = new_prog(2);
    fake f = {0};
    trc *t = run_ok(p, &f);
    assert_int_equal(t->step_ns, 0);
    assert_int_equal(t->nevents, 2);
    trc_free(t);
    prog_free(p);
}

/* A mixed program over 4 ranks: every rank computes, issues to two streams
 * with deps, calls a world all-reduce every 4th op and a pair all-gather
 * every 5th, and syncs the host every 7th op. */
static prog *mixed_prog(void)
{
    prog *p = new_prog(4);
    uint32_t w[4] = {0, 1, 2, 3}, lo[2] = {0, 1}, hi[2] = {2, 3};
    uint32_t gw = group(p, w, 4), gp[2] = {group(p, lo, 2), group(p, hi, 2)};
    for (uint32_t r = 0; r < 4; r++) {
        uint32_t prev = op(p, r, "c", PROG_COMPUTE, 3, 40 + 7 * r, NULL);
        for (uint32_t i = 1; i < 40; i++) {
            uint32_t id;
            if (i % 4 == 0) id = coll(p, r, "ar", PROG_COLL_ALL_REDUCE, gw, PROG_REDUCE, 64 * i, &prev);
            else if (i % 5 == 0) id = coll(p, r, "ag", PROG_COLL_ALL_GATHER, gp[r / 2], PROG_UNSHARD, 32, NULL);
            else if (i % 7 == 0) id = op(p, r, "sync", PROG_HOST, 2, 0, &prev);
            else id = op(p, r, "c", i % 2 ? PROG_COMPUTE : PROG_COPY, 1 + r, 10 + (i * (r + 1)) % 23, &prev);
            prev = id;
        }
    }
    return p;
}

/* Same program twice: identical trace records, byte for byte, and the
 * same step time and event count. Within one run the 2 x 160 issue and
 * end seqs are exactly 0 .. 319, each once: every record has its own
 * place in the total order. */
static void test_deterministic(void **state)
{
    (void)state;
    prog *p = mixed_prog();
    fake f = {0};
    trc *a = run_ok(p, &f), *b = run_ok(p, &f);
    for (uint32_t r = 0; r < 4; r++)
        assert_memory_equal(a->ops[r], b->ops[r], prog_nops(p, r) * sizeof(trc_op));
    assert_int_equal(a->step_ns, b->step_ns);
    assert_int_equal(a->nevents, b->nevents);
    enum { N = 4 * 40 * 2 };
    unsigned char seen[N] = {0};
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) {
            const trc_op *o = &a->ops[r][i];
            const uint32_t s[2] = {o->seq_issue, o->seq_end};
            for (int k = 0; k < 2; k++) {
                assert_true(s[k] < N);
                assert_int_equal(seen[s[k]], 0);
                seen[s[k]] = 1;
            }
            assert_true(o->issue <= o->start && o->start <= o->end && o->end <= a->step_ns);
        }
    trc_free(a);
    trc_free(b);
    prog_free(p);
}

/* ---- random programs, checked against prog.h's rules ----
 * splitmix64 with a fixed seed, so every platform builds the same
 * programs. Collectives follow one global order of instances (each
 * instance names a group; each member calls it in that order, on a stream
 * and with deps of its own choosing), which makes the program deadlock-free
 * whatever the streams and deps: every wait points to an earlier position
 * in some rank's program. */

static uint64_t rnd(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n) { return (uint32_t)(rnd(s) % n); }

enum { RMAX_RANKS = 6, RMAX_GROUPS = 4, RMAX_COLLS = 24, RMAX_OPS = 60 };

typedef struct rgroups {
    uint32_t n, size[RMAX_GROUPS], ranks[RMAX_GROUPS][RMAX_RANKS];
} rgroups;

/* Group 0 is the world; the others random non-empty subsets. */
static void random_groups(prog *p, uint32_t nr, uint64_t *s, rgroups *gs)
{
    gs->n = 1 + below(s, RMAX_GROUPS);
    for (uint32_t g = 0; g < gs->n; g++) {
        uint32_t n = 0;
        for (uint32_t r = 0; r < nr; r++)
            if (g == 0 || below(s, 2)) gs->ranks[g][n++] = r;
        if (n == 0) gs->ranks[g][n++] = below(s, nr);
        gs->size[g] = n;
        group(p, gs->ranks[g], n);
    }
}

static int in_group(const rgroups *gs, uint32_t g, uint32_t r)
{
    for (uint32_t m = 0; m < gs->size[g]; m++)
        if (gs->ranks[g][m] == r) return 1;
    return 0;
}

/* One random op for rank r with up to 3 deps among its last 6 ops: a HOST
 * op (1 in 6), a collective when `g` names the next instance this rank is
 * in, else a COMPUTE op on a random device stream. Zero costs are common,
 * so many things happen at one instant. */
static void random_op(prog *p, uint32_t r, uint32_t n, int g, ss_bytes bytes, uint64_t *s)
{
    uint32_t deps[3], nd = n ? below(s, 4) : 0;
    for (uint32_t d = 0; d < nd; d++) deps[d] = n - 1 - below(s, n < 6 ? n : 6);
    prog_op_spec sp = {.name = "x", .deps = deps, .ndeps = nd, .host_ns = below(s, 3) ? below(s, 4) : 0};
    if (g >= 0) {
        sp.kind = PROG_OP_COLL;
        sp.coll = (prog_coll)below(s, PROG_NCOLLS);
        sp.group = (uint32_t)g;
        sp.bytes = bytes;
        sp.stream = (prog_stream)below(s, PROG_HOST);
    } else if (below(s, 6) == 0) {
        sp.kind = PROG_OP_HOST;
        sp.stream = PROG_HOST;
        sp.host_ns = below(s, 5);
    } else {
        sp.kind = PROG_OP_COMPUTE;
        sp.stream = (prog_stream)below(s, PROG_HOST);
        sp.dev_ns = below(s, 4) ? below(s, 60) : 0;
    }
    add(p, r, &sp);
}

static prog *random_prog(uint64_t *s)
{
    uint32_t nr = 1 + below(s, RMAX_RANKS);
    prog *p = new_prog(nr);
    rgroups gs;
    random_groups(p, nr, s, &gs);
    uint32_t ncoll = below(s, RMAX_COLLS), cg[RMAX_COLLS];
    ss_bytes cb[RMAX_COLLS];
    for (uint32_t k = 0; k < ncoll; k++) {
        cg[k] = below(s, gs.n);
        cb[k] = below(s, 400);
        if (cb[k] == BAD_BYTES) cb[k]++;
    }
    for (uint32_t r = 0; r < nr; r++) {
        uint32_t nops = below(s, RMAX_OPS), k = 0, n = 0;
        while (k < ncoll && !in_group(&gs, cg[k], r)) k++;
        while (n < nops || k < ncoll) {
            int coll_now = k < ncoll && (n >= nops || below(s, 3) == 0);
            random_op(p, r, n++, coll_now ? (int)cg[k] : -1, coll_now ? cb[k] : 0, s);
            if (!coll_now) continue;
            for (k++; k < ncoll && !in_group(&gs, cg[k], r); k++) {}
        }
    }
    return p;
}

/* When op i of rank r was ready on its stream: issued, the op before it
 * on its stream ended, its deps ended. */
static ss_ns ready_at(const prog *p, const trc *t, uint32_t r, uint32_t i)
{
    const prog_op *ops = prog_ops(p, r);
    const uint32_t *deps = prog_deps(p, r) + ops[i].dep0;
    ss_ns at = ops[i].kind == PROG_OP_HOST ? 0 : t->ops[r][i].issue;
    for (uint32_t d = 0; d < ops[i].ndep; d++)
        if (t->ops[r][deps[d]].end > at) at = t->ops[r][deps[d]].end;
    for (uint32_t j = i; ops[i].kind != PROG_OP_HOST && j-- > 0;)
        if (ops[j].kind != PROG_OP_HOST && ops[j].stream == ops[i].stream) {
            if (t->ops[r][j].end > at) at = t->ops[r][j].end;
            break;
        }
    return at;
}

/* The host's rules: it takes ops in program order, a device op costs
 * host_ns and is issued then, a HOST op runs from when the host is free and
 * its deps ended. host_free is when the host finished the previous op. */
static void check_host(const prog *p, const trc *t, uint32_t r)
{
    const prog_op *ops = prog_ops(p, r);
    ss_ns host_free = 0;
    for (uint32_t i = 0; i < prog_nops(p, r); i++) {
        const trc_op *o = &t->ops[r][i];
        if (ops[i].kind != PROG_OP_HOST) {
            assert_int_equal(o->issue, host_free + ops[i].host_ns);
            host_free = o->issue;
            continue;
        }
        ss_ns deps_end = ready_at(p, t, r, i);
        assert_int_equal(o->start, host_free > deps_end ? host_free : deps_end);
        assert_int_equal(o->issue, o->start);
        assert_int_equal(o->end, o->start + ops[i].host_ns);
        host_free = o->end;
    }
}

/* Device ops: never before they are ready, and a COMPUTE op exactly then
 * (nothing else holds it back), for dev_ns. Everything after its issue,
 * deps and stream predecessor in time and in seq. */
static void check_device(const prog *p, const trc *t, uint32_t r)
{
    const prog_op *ops = prog_ops(p, r);
    const uint32_t *deps = prog_deps(p, r);
    for (uint32_t i = 0; i < prog_nops(p, r); i++) {
        const trc_op *o = &t->ops[r][i];
        assert_true(o->issue <= o->start && o->start <= o->end && o->end <= t->step_ns);
        assert_true(o->seq_issue < o->seq_end);
        for (uint32_t d = 0; d < ops[i].ndep; d++) {
            const trc_op *od = &t->ops[r][deps[ops[i].dep0 + d]];
            assert_true(od->end <= o->start && od->seq_end < o->seq_end);
        }
        if (ops[i].kind == PROG_OP_HOST) continue;
        assert_true(o->start >= ready_at(p, t, r, i));
        if (ops[i].kind == PROG_OP_COMPUTE) {
            assert_int_equal(o->start, ready_at(p, t, r, i));
            assert_int_equal(o->end, o->start + ops[i].dev_ns);
        }
    }
}

/* Collectives: the k-th call of group g on each member is one instance;
 * its members start together, when the last of them got ready, and end
 * together. Visits instances in order of their first member's op. */
static void check_colls(const prog *p, const trc *t)
{
    for (uint32_t g = 0; g < prog_ngroups(p); g++) {
        prog_group pg = prog_group_get(p, g);
        uint32_t pos[RMAX_RANKS] = {0};
        for (;;) {
            ss_ns ready = 0, start = 0, end = 0;
            uint32_t found = 0;
            for (uint32_t m = 0; m < pg.size; m++) {
                uint32_t r = pg.ranks[m], n = prog_nops(p, r);
                const prog_op *ops = prog_ops(p, r);
                while (pos[m] < n && !(ops[pos[m]].kind == PROG_OP_COLL && ops[pos[m]].group == g))
                    pos[m]++;
                if (pos[m] == n) continue;
                const trc_op *o = &t->ops[r][pos[m]];
                ss_ns rd = ready_at(p, t, r, pos[m]++);
                if (rd > ready) ready = rd;
                if (found++ == 0) {
                    start = o->start;
                    end = o->end;
                }
                assert_int_equal(o->start, start);
                assert_int_equal(o->end, end);
            }
            if (found == 0) break;
            assert_int_equal(found, pg.size);
            assert_int_equal(start, ready);
        }
    }
}

/* Every issue and end has its own seq, 0 .. 2 x ops - 1, and the step is
 * the latest end. */
static void check_seqs(const prog *p, const trc *t)
{
    uint64_t nops = 0;
    ss_ns last = 0;
    for (uint32_t r = 0; r < prog_nranks(p); r++) nops += prog_nops(p, r);
    unsigned char *seen = calloc(2 * nops + 1, 1);
    assert_non_null(seen);
    for (uint32_t r = 0; r < prog_nranks(p); r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) {
            const trc_op *o = &t->ops[r][i];
            const uint32_t sq[2] = {o->seq_issue, o->seq_end};
            for (int k = 0; k < 2; k++) {
                assert_true(sq[k] < 2 * nops);
                assert_int_equal(seen[sq[k]], 0);
                seen[sq[k]] = 1;
            }
            if (o->end > last) last = o->end;
        }
    assert_int_equal(t->step_ns, last);
    free(seen);
}

/* On the fixed network a collective lasts ALPHA + bytes / BETA. */
static void check_fixed_durations(const prog *p, const trc *t)
{
    for (uint32_t r = 0; r < prog_nranks(p); r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) {
            const prog_op *o = &prog_ops(p, r)[i];
            if (o->kind != PROG_OP_COLL) continue;
            assert_int_equal(t->ops[r][i].end - t->ops[r][i].start, ALPHA + o->bytes / BETA);
        }
}

static void check_trace(const prog *p, const trc *t)
{
    for (uint32_t r = 0; r < prog_nranks(p); r++) {
        check_host(p, t, r);
        check_device(p, t, r);
    }
    check_colls(p, t);
    check_seqs(p, t);
}

/* A dynamic network that takes its time: instance id lasts 1 + id % 5 ns
 * in up to two wakes, and at every start it moves the pending wake of the
 * previous instance (if still running) one ns later, so stale wake events
 * (older generations) are common. */
typedef struct dyn {
    unsigned char state[256]; /* 0 never started, 1 running, 2 done */
    ss_ns due[256];
} dyn;

static int dyn_start(void *ctx, uint32_t id, prog_coll c, prog_group g, uint32_t gid,
                     ss_bytes bytes, ss_ns now, eng_wakes *w, ss_err *err)
{
    dyn *d = ctx;
    (void)c, (void)g, (void)gid, (void)bytes;
    assert_true(id < 256);
    d->state[id] = 1;
    d->due[id] = now + 1 + id % 5;
    int rc = eng_wake_at(w, id, now + (id % 2), err);
    if (!rc && id > 0 && d->state[id - 1] == 1) {
        d->due[id - 1]++;
        rc = eng_wake_at(w, id - 1, d->due[id - 1], err);
    }
    return rc;
}

static int dyn_wake(void *ctx, uint32_t id, ss_ns now, bool *done, eng_wakes *w, ss_err *err)
{
    dyn *d = ctx;
    assert_int_equal(d->state[id], 1);
    if (now < d->due[id]) return eng_wake_at(w, id, d->due[id], err);
    d->state[id] = 2;
    *done = true;
    return SS_OK;
}

/* 300 random programs (1-6 ranks, up to 4 groups, 24 collective
 * instances, 60 other ops a rank, deps, HOST syncs, zero costs), each run
 * on the fixed network and on the dynamic one: the run succeeds and every
 * rule holds (check_trace). Collectives on the fixed network last
 * ALPHA + bytes / BETA. */
static void test_random_programs(void **state)
{
    (void)state;
    uint64_t s = 20240611;
    for (int it = 0; it < 300; it++) {
        prog *p = random_prog(&s);
        fake f = {0};
        trc *t = run_ok(p, &f);
        check_trace(p, t);
        check_fixed_durations(p, t);
        trc_free(t);
        dyn d = {0};
        eng_net net = {.ctx = &d, .start = dyn_start, .wake = dyn_wake};
        ss_err err;
        ss_err_clear(&err);
        t = NULL;
        if (eng_run(p, &net, &t, &err) != SS_OK) fail_msg("dynamic run %d: %s", it, err.msg);
        check_trace(p, t);
        trc_free(t);
        prog_free(p);
    }
}

/* Interference (eng_net.overlap_slowdown = 0.25): op b (200 ns of work)
 * runs on the compute stream from 20 ns; an all-gather (100 ns: [20, 120])
 * and a reduce-scatter (100 + 100 / 2 = 150 ns: [20, 170]) run beside it.
 * While either runs b progresses at 1 / 1.25: by 170 it has done 150 / 1.25
 * = 120 ns of work, the 80 left take 80 ns: b ends at 250 (220 with the
 * all-gather alone: 80 done by 120, 120 left). Collectives keep their
 * durations; op a, over before they start, keeps its own; an op that
 * starts and ends inside the window (c, 8 ns of work after b) is not
 * slowed after 170. */
static void overlap_case(double slow, bool two, ss_ns want_b)
{
    prog *p = new_prog(1);
    uint32_t r0 = 0, g = group(p, &r0, 1);
    uint32_t a = op(p, 0, "a", PROG_COMPUTE, 0, 20, NULL);
    coll(p, 0, "ag", PROG_COLL_ALL_GATHER, g, PROG_UNSHARD, 0, &a);
    if (two) coll(p, 0, "rs", PROG_COLL_REDUCE_SCATTER, g, PROG_REDUCE, 100, &a);
    uint32_t b = op(p, 0, "b", PROG_COMPUTE, 0, 200, NULL);
    uint32_t c = op(p, 0, "c", PROG_COMPUTE, 0, 8, NULL);
    fake f = {0};
    eng_net net = {.ctx = &f, .coll_ns = fake_coll, .overlap_slowdown = slow};
    trc *t = NULL;
    assert_int_equal(eng_run(p, &net, &t, NULL), SS_OK);
    assert_times(&t->ops[0][a], 0, 0, 20);
    assert_times(&t->ops[0][1], 0, 20, 120);
    if (two) assert_times(&t->ops[0][2], 0, 20, 170);
    assert_times(&t->ops[0][b], 0, 20, want_b);
    assert_times(&t->ops[0][c], 0, want_b, want_b + 8);
    trc_free(t);
    prog_free(p);
}

static void test_overlap_slowdown(void **state)
{
    (void)state;
    overlap_case(0, true, 220);     /* no interference: 20 + 200 */
    overlap_case(0.25, false, 240); /* 80 done by 120, 120 left */
    overlap_case(0.25, true, 250);  /* 120 done by 170, 80 left */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_overlap_slowdown),
        cmocka_unit_test(test_two_streams_event_dep),
        cmocka_unit_test(test_host_issue_cost),
        cmocka_unit_test(test_host_block),
        cmocka_unit_test(test_coll_late_arrival),
        cmocka_unit_test(test_two_groups),
        cmocka_unit_test(test_shared_programs),
        cmocka_unit_test(test_deadlock_missing_peer),
        cmocka_unit_test(test_deadlock_dep_behind_stream),
        cmocka_unit_test(test_deadlock_stream_order),
        cmocka_unit_test(test_net_error),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_random_programs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
