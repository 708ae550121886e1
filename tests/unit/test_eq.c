/* Event queue: (t, cls, seq) order, whatever the push order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/eng/eq.h"

/* Ties at one instant and class pop in push order (seq), both ways round. */
static void test_ties_by_seq(void **state)
{
    (void)state;
    eq q;
    assert_int_equal(eq_init(&q, NULL), SS_OK);
    for (uint32_t i = 0; i < 5; i++) eq_push(&q, 7, EQ_CLS_END, 0, i, 0, NULL);
    for (uint32_t i = 5; i-- > 0;) eq_push(&q, 3, EQ_CLS_END, 0, 10 + i, 0, NULL);
    eq_ev e;
    /* t=3 first, in the order pushed: 14, 13, 12, 11, 10; then t=7: 0..4 */
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.a, 14 - i);
    }
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(eq_pop(&q, &e), 1);
        assert_int_equal(e.a, i);
    }
    assert_int_equal(eq_pop(&q, &e), 0);
    eq_fini(&q);
}

/* At one instant a lower class pops first even when pushed later. */
static void test_class_order(void **state)
{
    (void)state;
    eq q;
    eq_init(&q, NULL);
    eq_push(&q, 5, EQ_CLS_HOST, 0, 1, 0, NULL);
    eq_push(&q, 5, EQ_CLS_ISSUE, 0, 2, 0, NULL);
    eq_push(&q, 5, EQ_CLS_END, 0, 3, 0, NULL);
    eq_push(&q, 4, EQ_CLS_HOST, 0, 4, 0, NULL);
    uint32_t want[4] = {4, 3, 2, 1};
    eq_ev e;
    for (int i = 0; i < 4; i++) {
        eq_pop(&q, &e);
        assert_int_equal(e.a, want[i]);
    }
    eq_fini(&q);
}

static uint64_t rng(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 10,000 random pushes interleaved with pops, each push strictly after the
 * last popped instant (as the engine only schedules the future): every pop
 * is >= the previous in (t, cls, seq), and exactly as many events come out
 * as went in. */
static void test_random(void **state)
{
    (void)state;
    eq q;
    eq_init(&q, NULL);
    uint64_t s = 42, pushed = 0, popped = 0;
    eq_ev prev = {0}, e;
    int have = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t base = have ? prev.t + 1 : 0;
        eq_push(&q, base + rng(&s) % 100, (uint8_t)(rng(&s) % 3), 0, (uint32_t)i, 0, NULL);
        pushed++;
        if (rng(&s) % 3 == 0 && eq_pop(&q, &e)) {
            if (have) {
                assert_true(e.t > prev.t || (e.t == prev.t && (e.cls > prev.cls ||
                                             (e.cls == prev.cls && e.seq > prev.seq))));
            }
            prev = e;
            have = 1;
            popped++;
        }
    }
    while (eq_pop(&q, &e)) {
        assert_true(e.t > prev.t || (e.t == prev.t && (e.cls > prev.cls ||
                                     (e.cls == prev.cls && e.seq > prev.seq))));
        prev = e;
        popped++;
    }
    assert_int_equal(popped, pushed);
    assert_int_equal(eq_len(&q), 0);
    eq_fini(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_by_seq), cmocka_unit_test(test_class_order),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
