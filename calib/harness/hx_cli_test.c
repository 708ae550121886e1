/* The harness's command line through hx_main (ctest harness.cli).
 *
 * Everywhere: usage errors exit 2 with the usage text, before any GPU is
 * touched; a scenario that does not exist exits 2. Without a GPU (CI), every
 * verb that needs one exits 1 with a message instead of crashing, after
 * loading and planning the scenario for replay. With a GPU, a short launch
 * benchmark and a one-iteration replay of seeds/002 run and exit 0, and the
 * replay's summary is read back by the simulator's own summary reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "gpu.h"
#include "harness.h"

#define SCN SS_SOURCE_DIR "/scenarios/seed002/zero3_full_shard_pre.json"

static int call(const char *verb, int argc, const char **argv)
{
    return hx_main(verb, argc, (char **)argv);
}

static void test_usage(void **state)
{
    (void)state;
    const char *bad_opt[] = {"--frobnicate"};
    const char *bad_dtype[] = {"--dtypes", "int4"};
    const char *no_value[] = {"-b"};
    const char *bad_size[] = {"-b", "12Q"};
    const char *missing[] = {SS_SOURCE_DIR "/scenarios/does-not-exist.json"};
    const char *wrong_verb_opt[] = {"--shapes", "1x1x1"};
    assert_int_equal(call("--help", 0, NULL), 0);
    assert_int_equal(call("frobnicate", 0, NULL), 2);
    assert_int_equal(call("gemm", 1, bad_opt), 2);
    assert_int_equal(call("gemm", 2, bad_dtype), 2);
    assert_int_equal(call("coll", 1, no_value), 2);
    assert_int_equal(call("copy", 2, bad_size), 2);
    assert_int_equal(call("replay", 0, NULL), 2);
    assert_int_equal(call("replay", 1, missing), 2);
    assert_int_equal(call("launch", 2, wrong_verb_opt), 2);
    /* getopt style: the verb repeated as the first argument is skipped */
    const char *with_verb[] = {"gemm", "--frobnicate"};
    assert_int_equal(call("gemm", 2, with_verb), 2);
}

static void test_no_gpu(void **state)
{
    (void)state;
    if (gpu_count() > 0) skip();
    const char *rep[] = {SCN, "--rank", "1"};
    const char *bad_rank[] = {SCN, "--rank", "9"};
    assert_int_equal(call("launch", 0, NULL), 1);
    assert_int_equal(call("gemm", 0, NULL), 1);
    assert_int_equal(call("copy", 0, NULL), 1);
    assert_int_equal(call("coll", 0, NULL), 1);
    assert_int_equal(call("all", 0, NULL), 1);
    assert_int_equal(call("replay", 3, rep), 1);
    assert_int_equal(call("replay", 3, bad_rank), 2); /* planning fails before the GPU */
}

static void test_gpu_smoke(void **state)
{
    (void)state;
    if (gpu_count() == 0) skip();
    const char *launch[] = {"-n", "50", "-r", "2"};
    assert_int_equal(call("launch", 4, launch), 0);
    const char *out = "test_harness_cli.measured.json";
    const char *rep[] = {SCN, "--iters", "1", "-o", out};
    assert_int_equal(call("replay", 5, rep), 0);
    char *text = NULL;
    bool is_summary = false;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scn_read_summary(out, &text, &is_summary, &err), SS_OK);
    assert_true(is_summary);
    assert_non_null(strstr(text, "\"measured\""));
    free(text);
    remove(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_gpu_smoke),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
