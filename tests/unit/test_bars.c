/* The sweep picture: rows, parts and escaping of bars_write on hand-made
 * rows; widths from BARS_WIDTH_PT and label.h's estimate, worked below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/out/bars.h"

static char *draw(const bars_row *rows, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    ss_err err = {0};
    assert_int_equal(bars_write("t <&>", rows, n, m, &err), SS_OK);
    fclose(m);
    return buf;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (; (s = strstr(s, what)); s++) n++;
    return n;
}

/* Labels "a", "b" and a quote at 9 pt are 5.4 + 4 = 9.4 pt wide: the plot starts at
 * 8 + 9.4 + 6 = 23.4 pt and is 1152 - 23.4 - 150 = 978.6 pt for the
 * longest step, 2 s. Row a: 1 s compute = 489.3 pt, 0.5 s exposed =
 * 244.65 pt, rest 0.5 s. Row b: 2 s step whose compute (3 s) exceeds it is
 * clamped to the step: one part, 978.6 pt. The third row has no figures.
 * Rows start at 10 + 24 + 24 - 6 + 6 = 58 pt, bars 3 pt below. */
static void test_rows(void **state)
{
    (void)state;
    bars_row r[3] = {
        {.label = "a", .ok = true, .fits = true, .step_s = 2.0, .compute_s = 1.0, .exposed_s = 0.5},
        {.label = "b", .ok = true, .fits = false, .step_s = 2.0, .compute_s = 3.0, .exposed_s = 1.0},
        {.label = "\"", .ok = false, .why = "error: x < y"},
    };
    char *d = draw(r, 3);
    assert_int_equal(count(d, "<g id=\"point_"), 3);
    assert_non_null(strstr(d, "x=\"23.40\" y=\"61.00\" width=\"489.30\""));
    assert_non_null(strstr(d, "width=\"244.65\" height=\"14.00\" fill=\"#e53935\""));
    assert_non_null(strstr(d, "width=\"978.60\" height=\"14.00\" fill=\"#2e7d32\""));
    assert_int_equal(count(d, "fill=\"#2e7d32\"><title>b:"), 1);
    assert_null(strstr(d, "<title>b: exposed"));
    assert_non_null(strstr(d, "2000.000 ms, does not fit"));
    assert_non_null(strstr(d, "error: x &lt; y"));
    assert_non_null(strstr(d, "<title>&quot;</title>"));
    assert_non_null(strstr(d, "t &lt;&amp;&gt;"));
    assert_int_equal(count(d, "<g id=\"axis_"), 2);
    char *e = draw(r, 3);
    assert_string_equal(d, e);
    free(d);
    free(e);
}

/* A label longer than BARS_LABEL_MAX_PT (360 pt: (360 - 4) / 5.4 = 65.9
 * characters) is cut to 64 characters and the ellipsis in the margin; the
 * whole label stays the row's tooltip. */
static void test_long_label(void **state)
{
    (void)state;
    char lab[201];
    memset(lab, 'x', 200);
    lab[200] = '\0';
    bars_row r = {.label = lab, .ok = true, .fits = true, .step_s = 1, .compute_s = 1};
    char *d = draw(&r, 1), want[80];
    memset(want, 'x', 64);
    strcpy(want + 64, "\xe2\x80\xa6</text>");
    assert_non_null(strstr(d, want));
    assert_non_null(strstr(d, lab));
    free(d);
    ss_err err = {0};
    assert_int_equal(bars_write("t", &r, 0, stdout, &err), SS_E_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_long_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
