/* Event queue: (t, cls, seq) order whatever the push order, exact counts,
 * heap property after every operation. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_by_seq),
        cmocka_unit_test(test_class_order),
        cmocka_unit_test(test_random_push_then_pop),
        cmocka_unit_test(test_random_interleaved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
