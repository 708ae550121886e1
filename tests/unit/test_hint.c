/* "Did you mean" (cli/hint.h): typos within two edits and half the word's
 * length find their word, a swap of neighbours costs one edit, ties go to
 * the earlier choice, and words too far away find nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/cli/hint.h"

static const char *const run_opts[] = {"--json", "--trace", "--dot",    "--svg",   "--window",
                                       "--ranks", "--set",  "--memory", "--quiet", "--timing"};
#define N (sizeof run_opts / sizeof *run_opts)

static void test_typos(void **state)
{
    (void)state;
    assert_string_equal(cli_nearest("--jsn", run_opts, N), "--json");     /* a deletion */
    assert_string_equal(cli_nearest("--jsoon", run_opts, N), "--json");   /* an insertion */
    assert_string_equal(cli_nearest("--tarce", run_opts, N), "--trace");  /* a swap: one edit */
    assert_string_equal(cli_nearest("-json", run_opts, N), "--json");
    assert_string_equal(cli_nearest("--memroy", run_opts, N), "--memory");
    static const char *const verbs[] = {"run", "check", "diff", "sweep", "search", "coll"};
    assert_string_equal(cli_nearest("rn", verbs, 6), "run");
    assert_string_equal(cli_nearest("serach", verbs, 6), "search");
}

static void test_too_far(void **state)
{
    (void)state;
    assert_null(cli_nearest("--output", run_opts, N));  /* 3+ edits from everything */
    assert_null(cli_nearest("-x", run_opts, N));        /* 1 letter: nothing within half */
    assert_null(cli_nearest("", run_opts, N));
    static const char *const ab[] = {"ab", "ba"};
    assert_null(cli_nearest("x", ab, 2));
    char longw[CLI_HINT_MAX + 2];
    for (int i = 0; i < CLI_HINT_MAX + 1; i++) longw[i] = 'a';
    longw[CLI_HINT_MAX + 1] = '\0';
    assert_null(cli_nearest(longw, run_opts, N));
}

static void test_ties_first(void **state)
{
    (void)state;
    static const char *const two[] = {"--dot", "--dog"};
    assert_string_equal(cli_nearest("--do", two, 2), "--dot"); /* both one edit away */
    static const char *const rev[] = {"--dog", "--dot"};
    assert_string_equal(cli_nearest("--do", rev, 2), "--dog");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_typos), cmocka_unit_test(test_too_far),
                                       cmocka_unit_test(test_ties_first)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
