/* diff: rows, deltas and percentages from two hand-written summaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/out/diff.h"

static char *run(const char *a, const char *b, int want_rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(diff_text(a, "a.json", b, "b.json", f, &err), want_rc);
    fclose(f);
    return buf;
}

/* Step time 10 ms -> 12 ms: +2.000 ms, +20.0%. Peak 100 -> 50 MiB: -50.0%.
 * all_gather only in B: "new". A has no reserved peak: "-". */
static void test_rows(void **state)
{
    (void)state;
    const char *a = "{\"scenario\":\"A\",\"step_time_s\":0.010,"
                    "\"memory\":{\"max_peak_allocated_bytes\":104857600},"
                    "\"collectives\":{\"all_gather\":{\"count\":0,\"bytes\":0}}}";
    const char *b = "{\"scenario\":\"B\",\"step_time_s\":0.012,"
                    "\"memory\":{\"max_peak_allocated_bytes\":52428800,"
                    "\"max_peak_reserved_bytes\":62914560},"
                    "\"collectives\":{\"all_gather\":{\"count\":16,\"bytes\":0}}}";
    char *out = run(a, b, SS_OK);
    const char *step = strstr(out, "step time");
    assert_non_null(step);
    assert_non_null(strstr(step, "10.000"));
    assert_non_null(strstr(step, "12.000"));
    assert_non_null(strstr(step, "+2.000"));
    assert_non_null(strstr(step, "+20.0%"));
    const char *peak = strstr(out, "peak allocated");
    assert_non_null(strstr(peak, "-50.0%"));
    const char *res = strstr(out, "peak reserved");
    assert_true(strncmp(res + strcspn(res, "-0123456789"), "-", 1) == 0);
    const char *ag = strstr(out, "all_gather count");
    assert_non_null(ag);
    assert_non_null(strstr(ag, "new"));
    assert_null(strstr(out, "all_gather MiB")); /* zero in both: no row */
    assert_non_null(strstr(out, "A: a.json (A)"));
    free(out);
}

static void test_not_json(void **state)
{
    (void)state;
    char *out = run("{}", "not json", SS_E_INPUT);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_rows), cmocka_unit_test(test_not_json)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
