/* Label fitting: widths from the stated estimate (label.h: 0.6 em a
 * character, 2 pt of margin at each end), worked out by hand below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/out/label.h"

/* At 10 pt a character is 6 pt: "fwd.L3.attn" (11) needs 66 + 4 = 70 pt. */
static void test_width(void **state)
{
    (void)state;
    assert_int_equal(lbl_chars("fwd.L3.attn"), 11);
    assert_int_equal(lbl_chars("a\xe2\x80\xa6" "b"), 3); /* "a…b": the ellipsis is one */
    assert_float_equal(lbl_width(11, 10.0), 70.0, 1e-12);
    assert_float_equal(lbl_width(0, 7.0), 4.0, 1e-12);
}

/* 70 pt holds all 11 characters; 69.9 pt does not, and holds
 * (69.9 - 4) / 6 = 10.98 characters: 9 and the ellipsis. 16 pt holds
 * (16 - 4) / 6 = 2 characters: one and the ellipsis. 15.9 pt holds fewer
 * than 2: no text at all. */
static void test_fit(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(lbl_fit(out, sizeof out, "fwd.L3.attn", 70.0, 10.0), 11);
    assert_string_equal(out, "fwd.L3.attn");
    assert_int_equal(lbl_fit(out, sizeof out, "fwd.L3.attn", 69.9, 10.0), 10);
    assert_string_equal(out, "fwd.L3.at\xe2\x80\xa6");
    assert_true(lbl_width(lbl_chars(out), 10.0) <= 69.9);
    assert_int_equal(lbl_fit(out, sizeof out, "fwd.L3.attn", 16.0, 10.0), 2);
    assert_string_equal(out, "f\xe2\x80\xa6");
    assert_int_equal(lbl_fit(out, sizeof out, "fwd.L3.attn", 15.9, 10.0), 0);
    assert_string_equal(out, "");
}

/* A cut never splits a character: "é" is two bytes and stays whole. */
static void test_utf8(void **state)
{
    (void)state;
    char out[64];
    /* "ééééé" at 10 pt: 5 characters need 34 pt; 28 pt holds 4 - 1 = 3 and the ellipsis. */
    assert_int_equal(lbl_fit(out, sizeof out, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 28.0, 10.0), 4);
    assert_string_equal(out, "\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x80\xa6");
    /* Too small a buffer: nothing, rather than a cut string. */
    assert_int_equal(lbl_fit(out, 4, "abcdef", 1000.0, 10.0), 0);
    assert_string_equal(out, "");
}

/* Every width from 0 to 100 pt, every font size from 5 to 14 pt: what is
 * returned always fits by the estimate, and is a prefix of the name. */
static void test_never_exceeds(void **state)
{
    (void)state;
    const char *s = "tp.overlap.AG.L12.mlp";
    char out[64];
    for (int pt = 5; pt <= 14; pt++)
        for (int w = 0; w <= 1000; w++) {
            size_t n = lbl_fit(out, sizeof out, s, w / 10.0, pt);
            assert_int_equal(n, lbl_chars(out));
            if (n) assert_true(lbl_width(n, pt) <= w / 10.0 + 1e-9);
            size_t keep = strlen(out) >= 3 && !strcmp(out + strlen(out) - 3, "\xe2\x80\xa6")
                              ? strlen(out) - 3 : strlen(out);
            assert_memory_equal(out, s, keep);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_width),
        cmocka_unit_test(test_fit),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_never_exceeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
