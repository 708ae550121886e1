/* Interval unions, checked on lists worked by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/out/span.h"

/* [5,9) [0,3) [2,4) [9,10) merge to [0,4) [5,10): total 9. */
static void test_merge(void **state)
{
    (void)state;
    span s[] = {{5, 9}, {0, 3}, {2, 4}, {9, 10}};
    size_t n = span_merge(s, 4);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].a, 0);
    assert_int_equal(s[0].b, 4);
    assert_int_equal(s[1].a, 5);
    assert_int_equal(s[1].b, 10);
    assert_int_equal(span_total(s, n), 9);
    assert_int_equal(span_merge(s, 0), 0);
}

/* Communication [0,4) [5,10) minus compute [1,2) [3,6): exposed [0,1)
 * [2,3) [6,10) = 6; overlap 1 + 1 + 1 = 3 (= 9 - 6). */
static void test_overlap_and_minus(void **state)
{
    (void)state;
    span m[] = {{0, 4}, {5, 10}}, c[] = {{1, 2}, {3, 6}}, out[4];
    assert_int_equal(span_overlap(m, 2, c, 2), 3);
    size_t k = span_minus(m, 2, c, 2, out);
    assert_int_equal(k, 3);
    ss_ns want[3][2] = {{0, 1}, {2, 3}, {6, 10}};
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(out[i].a, want[i][0]);
        assert_int_equal(out[i].b, want[i][1]);
    }
    assert_int_equal(span_total(out, k), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_merge),
                                       cmocka_unit_test(test_overlap_and_minus)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
