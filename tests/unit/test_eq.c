/* Event queue: (t, cls, seq) order whatever the push order, exact counts,
 * structure valid after every operation, pops equal to a slow reference
 * queue's while the (t, cls) table grows and misses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../../sim/eng/eq.h"

/* (t, cls, seq) of x is strictly after y: seq is unique, so no two events
 * ever compare equal. */
static int after(const eq_ev *x, const eq_ev *y)
{
    if (x->t != y->t) return x->t > y->t;
    if (x->cls != y->cls) return x->cls > y->cls;
    return x->seq > y->seq;
}

static void push_ok(eq *q, uint64_t t, uint8_t cls, uint32_t a)
{
    assert_int_equal(eq_push(q, t, cls, 0, a, 0, NULL), SS_OK);
    assert_true(eq_check(q));
}

/* Five ties at t=7 pushed with a = 0..4, then five ties at t=3 pushed with
 * a = 14, 13, .., 10 (the other way round). Expected pops: t=3 first in push
 * order, a = 14, 13, 12, 11, 10 with seq 5..9; then t=7 with a = 0..4 and
 * seq 0..4. Then empty: eq_pop returns 0 and leaves *out alone. */
static void test_ties_by_seq(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    for (uint32_t i = 0; i < 5; i++) push_ok(&q, 7, EQ_CLS_END, i);
    for (uint32_t i = 5; i-- > 0;) push_ok(&q, 3, EQ_CLS_END, 10 + i);
    assert_int_equal(eq_len(&q), 10);
    eq_ev e;
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.t, 3);
        assert_int_equal(e.a, 14 - i);
        assert_int_equal(e.seq, 5 + i);
    }
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.t, 7);
        assert_int_equal(e.a, i);
        assert_int_equal(e.seq, i);
    }
    e.a = 12345;
    assert_int_equal(eq_pop(&q, &e), 0);
    assert_int_equal(e.a, 12345);
    assert_int_equal(eq_len(&q), 0);
    eq_fini(&q);
}

/* At t=5, HOST (a=1), ISSUE (a=2), END (a=3) pushed in that order, then a
 * HOST event at t=4 (a=4): the earlier instant wins over any class, then
 * at t=5 the lower class wins over the earlier push: a = 4, 3, 2, 1. Every
 * field pushed comes back unchanged (kind 9, b 77). */
static void test_class_order(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    const uint8_t cls[4] = {EQ_CLS_HOST, EQ_CLS_ISSUE, EQ_CLS_END, EQ_CLS_HOST};
    const uint64_t t[4] = {5, 5, 5, 4};
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(eq_push(&q, t[i], cls[i], 9, i + 1, 77, NULL), SS_OK);
    const uint32_t want[4] = {4, 3, 2, 1};
    eq_ev e;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.a, want[i]);
        assert_int_equal(e.t, t[want[i] - 1]);
        assert_int_equal(e.cls, cls[want[i] - 1]);
        assert_int_equal(e.seq, want[i] - 1);
        assert_int_equal(e.kind, 9);
        assert_int_equal(e.b, 77);
    }
    assert_int_equal(eq_pop(&q, &e), 0);
    eq_fini(&q);
}

/* splitmix64: a local, fixed-seed generator, so the schedule is the same on
 * every platform. */
static uint64_t rng(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

enum { NRAND = 10000 };

/* 10,000 pushes with t in [0, 50) and a random class (so most events tie on
 * t and many on (t, cls)), growing the array from 64 past 10,000, then pop
 * all: each pop is strictly after the previous in (t, cls, seq), each seq
 * 0..9999 comes out exactly once, with the a it was pushed with (a = seq),
 * and exactly 10,000 come out. */
static void test_random_push_then_pop(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    uint64_t s = 42;
    for (uint32_t i = 0; i < NRAND; i++)
        assert_int_equal(eq_push(&q, rng(&s) % 50, (uint8_t)(rng(&s) % 3), 0, i, 0, NULL), SS_OK);
    assert_true(eq_check(&q));
    assert_int_equal(eq_len(&q), NRAND);
    unsigned char *seen = calloc(NRAND, 1);
    assert_non_null(seen);
    eq_ev prev = {0}, e;
    size_t popped = 0;
    while (eq_pop(&q, &e)) {
        if (popped) assert_true(after(&e, &prev));
        assert_true(e.seq < NRAND);
        assert_int_equal(e.a, e.seq);
        assert_int_equal(seen[e.seq], 0);
        seen[e.seq] = 1;
        prev = e;
        popped++;
    }
    assert_int_equal(popped, NRAND);
    assert_int_equal(eq_len(&q), 0);
    free(seen);
    eq_fini(&q);
}

/* Pushes interleaved with pops (one pop after about a third of the
 * pushes), each push at t_last + 0..99 where t_last is the last popped
 * instant, so same-instant pushes happen. A push at t_last with a class
 * below the last pop would legitimately pop "backwards" (it is the least
 * event left), so such pushes are raised to the last pop's class; then the
 * whole pop sequence is strictly increasing in (t, cls, seq). 10,000 in,
 * 10,000 out, heap valid after every pop. */
static void test_random_interleaved(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    uint64_t s = 7;
    size_t popped = 0;
    eq_ev prev = {0}, e;
    for (uint32_t i = 0; i < NRAND; i++) {
        uint64_t t = prev.t + rng(&s) % 100;
        uint8_t c = (uint8_t)(rng(&s) % 3);
        if (t == prev.t && c < prev.cls) c = prev.cls;
        assert_int_equal(eq_push(&q, t, c, 0, i, 0, NULL), SS_OK);
        if (rng(&s) % 3 != 0 || !eq_pop(&q, &e)) continue;
        if (popped) assert_true(after(&e, &prev));
        assert_true(eq_check(&q));
        prev = e;
        popped++;
    }
    while (eq_pop(&q, &e)) {
        if (popped) assert_true(after(&e, &prev));
        prev = e;
        popped++;
    }
    assert_int_equal(popped, NRAND);
    eq_fini(&q);
}

/* The reference queue for the next test: pending events in an array, the
 * least found by a linear scan. Slow and obviously right. */
typedef struct ref {
    eq_ev ev[4096];
    size_t n;
} ref;

static eq_ev ref_pop(ref *r)
{
    size_t best = 0;
    for (size_t i = 1; i < r->n; i++)
        if (after(&r->ev[best], &r->ev[i])) best = i;
    eq_ev e = r->ev[best];
    r->ev[best] = r->ev[--r->n];
    return e;
}

enum { NREF = 40000 };

/* 40,000 operations, pushes twice as likely as pops while fewer than 4,000
 * are pending, with t in [t_last, t_last + 3000) and a random class: up to
 * thousands of open instants at once, so the (t, cls) table grows (and is
 * emptied) several times while instants are open and many pushes miss it,
 * opening a second instant for a key that already has one. Every pop must
 * equal the reference's, field by field; eq_len matches, eq_check holds
 * every 97 operations, and eq_peak_len is the most ever pending. */
static void test_against_reference(void **state)
{
    (void)state;
    static ref r;
    r.n = 0;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    uint64_t s = 99, seq = 0, t_last = 0;
    size_t peak = 0;
    for (uint32_t i = 0; i < NREF; i++) {
        int push = r.n == 0 || (r.n < 4000 && rng(&s) % 3 != 0);
        if (push) {
            eq_ev e = {.t = t_last + rng(&s) % 3000, .cls = (uint8_t)(rng(&s) % 3), .seq = seq++,
                       .kind = (uint32_t)(rng(&s) % 4), .a = i, .b = (uint32_t)~i};
            assert_int_equal(eq_push(&q, e.t, e.cls, e.kind, e.a, e.b, NULL), SS_OK);
            r.ev[r.n++] = e;
            if (r.n > peak) peak = r.n;
        } else {
            eq_ev want = ref_pop(&r), got;
            assert_int_equal(eq_pop(&q, &got), 1);
            assert_int_equal(got.t, want.t);
            assert_int_equal(got.cls, want.cls);
            assert_int_equal(got.seq, want.seq);
            assert_int_equal(got.kind, want.kind);
            assert_int_equal(got.a, want.a);
            assert_int_equal(got.b, want.b);
            t_last = got.t;
        }
        assert_int_equal(eq_len(&q), r.n);
        if (i % 97 == 0) assert_true(eq_check(&q));
    }
    assert_true(eq_check(&q));
    assert_int_equal(eq_peak_len(&q), peak);
    eq_ev e;
    while (r.n) {
        eq_ev want = ref_pop(&r);
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.seq, want.seq);
    }
    assert_int_equal(eq_pop(&q, &e), 0);
    eq_fini(&q);
}

/* 1,000 events at one instant (t = 5, END), as a collective's ends on
 * 1,000 members, pushed between two other instants: they share one FIFO
 * and pop in push order between t = 4 and t = 6. While they pop, a push at
 * the same (5, END) goes behind the ones left, and one at (5, ISSUE) after
 * all of them. The queue's bytes never shrink. */
static void test_one_big_instant(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    assert_int_equal(eq_push(&q, 6, EQ_CLS_END, 0, 6, 0, NULL), SS_OK);
    for (uint32_t m = 0; m < 1000; m++)
        assert_int_equal(eq_push(&q, 5, EQ_CLS_END, 1, m, 0, NULL), SS_OK);
    assert_int_equal(eq_push(&q, 4, EQ_CLS_HOST, 0, 4, 0, NULL), SS_OK);
    size_t bytes = eq_bytes(&q);
    assert_true(eq_check(&q));
    eq_ev e;
    assert_int_equal(eq_pop(&q, &e), 1);
    assert_int_equal(e.t, 4);
    for (uint32_t m = 0; m < 1001; m++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.t, 5);
        assert_int_equal(e.cls, EQ_CLS_END);
        assert_int_equal(e.a, m);
        if (m == 10) {
            assert_int_equal(eq_push(&q, 5, EQ_CLS_ISSUE, 2, 2000, 0, NULL), SS_OK);
            assert_int_equal(eq_push(&q, 5, EQ_CLS_END, 1, 1000, 0, NULL), SS_OK);
        }
    }
    assert_int_equal(eq_pop(&q, &e), 1);
    assert_int_equal(e.a, 2000);
    assert_int_equal(eq_pop(&q, &e), 1);
    assert_int_equal(e.a, 6);
    assert_int_equal(eq_pop(&q, &e), 0);
    assert_true(eq_bytes(&q) >= bytes);
    assert_int_equal(eq_peak_len(&q), 1002);
    eq_fini(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_by_seq),
        cmocka_unit_test(test_class_order),
        cmocka_unit_test(test_random_push_then_pop),
        cmocka_unit_test(test_random_interleaved),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_one_big_instant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
