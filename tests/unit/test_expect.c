/* Expectations (out/expect.h) read the summary's tree, not its printed
 * text; the header promises the same verdicts and the same reported values
 * either way. Checked on numbers whose first fifteen digits are not exact
 * (0.1 + 0.2, which cJSON 1.7 prints as 0.3; 1/3; 2^53 + 2; 1e-300; a
 * subnormal), a NaN and an infinity (printed as null), a boolean and a
 * string: exp_check on the tree and on cJSON_Parse(cJSON_Print(tree))
 * must agree entry for entry. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../sim/out/expect.h"

enum { N = 9 };

static void expect_pct(spec_expect *e, const char *key, double value, double pct)
{
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->has_pct = true, e->value = value, e->pct = pct;
}

static void expect_eq(spec_expect *e, const char *key, double v)
{
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->has_eq = true, e->eq_kind = SPEC_EXP_NUM, e->eq_num = v;
}

static void test_tree_reads_as_printed(void **state)
{
    (void)state;
    const double big = 9007199254740994.0; /* 2^53 + 2 */
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "sum_s", 0.1 + 0.2);
    cJSON_AddNumberToObject(t, "third", 1.0 / 3.0);
    cJSON_AddNumberToObject(t, "big_bytes", big);
    cJSON_AddNumberToObject(t, "tiny", 1e-300);
    cJSON_AddNumberToObject(t, "sub", 4.9e-324);
    cJSON_AddNumberToObject(t, "nan", NAN);
    cJSON_AddNumberToObject(t, "inf", INFINITY);
    cJSON_AddBoolToObject(t, "fits", true);
    cJSON_AddStringToObject(t, "name", "x");
    spec_expect ex[N];
    expect_eq(&ex[0], "sum_s", 0.1 + 0.2);        /* fails: the text holds 0.3 */
    expect_eq(&ex[1], "third", 1.0 / 3.0);
    expect_pct(&ex[2], "big_bytes", big, 0);      /* within 0%: exact again */
    expect_eq(&ex[3], "tiny", 1e-300);
    expect_eq(&ex[4], "sub", 4.9e-324);
    expect_pct(&ex[5], "nan", 1.0, 50);           /* null: fails as text would */
    expect_pct(&ex[6], "inf", 1.0, 50);
    expect_eq(&ex[7], "fits", 1.0);               /* a number bound on a boolean fails */
    expect_eq(&ex[8], "name", 0.0);
    spec_scenario s;
    memset(&s, 0, sizeof s);
    s.expects = ex;
    s.nexpects = N;
    char *txt = cJSON_Print(t);
    cJSON *back = cJSON_Parse(txt);
    assert_non_null(back);
    exp_result a[N], b[N];
    uint32_t fa = 0, fb = 0;
    assert_int_equal(exp_check(&s, t, a, &fa, NULL), SS_OK);
    assert_int_equal(exp_check(&s, back, b, &fb, NULL), SS_OK);
    assert_int_equal(fa, fb);
    assert_int_equal(fa, 5); /* sum_s, nan, inf, fits, name */
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].ok, b[i].ok);
        assert_string_equal(a[i].want, b[i].want);
        assert_string_equal(a[i].actual, b[i].actual);
        assert_int_equal(a[i].ok, i >= 1 && i < 5);
    }
    free(txt);
    cJSON_Delete(back);
    cJSON_Delete(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tree_reads_as_printed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
