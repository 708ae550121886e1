/* Inputs the fuzzers found (tests/fuzz/regressions/), replayed through the
 * same calls as the fuzz targets, in the normal and sanitizer builds, plus
 * the two bugs they exposed, pinned down directly:
 *  - js_doc_parse read past a buffer that does not end with a NUL while
 *    skipping trailing white space;
 *  - js_keys_check on an array dereferenced the members' missing keys;
 *  - js_doc_parse, quoting an integer too large to be exact, read past a
 *    buffer that ends with it (found through fuzz_profile).
 * Every file is replayed through every reader the targets drive (JSON,
 * scenario, nccl-tests log, profile, and the scenario wrappers of the
 * DeepSpeed and Hugging Face configs), whichever target found it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>

#include "../../sim/io/json.h"
#include "../../sim/io/ncclt.h"
#include "../../sim/io/profile.h"
#include "../../sim/io/scenario.h"
#include "../fuzz/fuzz_splice.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n ? (size_t)n : 1); /* deliberately no NUL */
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void test_no_nul_buffer(void **state)
{
    (void)state;
    const char text[] = {'{', '}', ' ', ' '}; /* no terminating NUL */
    js_doc d;
    assert_int_equal(js_doc_parse(&d, "t.json", text, sizeof text, NULL), SS_OK);
    js_doc_fini(&d);
}

static void test_keys_check_on_array(void **state)
{
    (void)state;
    js_doc d;
    static const char *const allowed[] = {"a"};
    assert_int_equal(js_doc_parse(&d, "t.json", "[\",,\"]", 6, NULL), SS_OK);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_keys_check(js_root(&d), allowed, 1, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "expected an object, found an array"));
    js_doc_fini(&d);
}

/* The crashing input itself: 23 digits and nothing after them (no newline,
 * no NUL). The message must quote the whole number and stop there. */
static void test_big_integer_at_end(void **state)
{
    (void)state;
    static const char digits[] = "88888888888888888888882";
    size_t len = sizeof digits - 1;
    char *text = malloc(len); /* exactly the digits, so ASan or valgrind sees an overread */
    assert_non_null(text);
    memcpy(text, digits, len);
    js_doc d;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(&d, "t.json", text, len, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "88888888888888888888882 is too large to be exact"));
    free(text);
}

/* What the fuzz targets other than json and scenario call on one input:
 * each either succeeds or gives an input error with a message. */
static void replay_other_readers(const char *buf, size_t len)
{
    ss_err err;
    ncclt_log *log = NULL;
    ss_err_clear(&err);
    if (ncclt_parse("r.txt", buf, len, "all_reduce", &log, &err) == SS_OK) ncclt_free(log);
    else assert_true(err.msg[0] != '\0');
    prof p;
    ss_err_clear(&err);
    if (prof_load_text("r.json", buf, len, &p, &err) == SS_OK) prof_fini(&p);
    else assert_true(err.msg[0] != '\0');
    /* fuzz_splice_load traps on anything but success or an input error */
    fuzz_splice_load(FUZZ_DS_PREFIX, (const uint8_t *)buf, len, FUZZ_DS_SUFFIX);
    fuzz_splice_load(FUZZ_HF_PREFIX, (const uint8_t *)buf, len, FUZZ_HF_SUFFIX);
}

static void test_replay_corpus(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/regressions", SS_SOURCE_DIR);
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *buf = slurp(path, &len);
        js_doc d;
        static const char *const keys[] = {"name"};
        if (js_doc_parse(&d, "r.json", buf, len, NULL) == SS_OK) {
            js_keys_check(js_root(&d), keys, 1, NULL);
            js_doc_fini(&d);
        }
        spec_scenario s;
        ss_err err;
        ss_err_clear(&err);
        if (scn_load_text("r.json", buf, len, NULL, 0, &s, &err) == SS_OK) spec_scenario_fini(&s);
        else assert_true(err.msg[0] != '\0');
        replay_other_readers(buf, len);
        free(buf);
        n++;
    }
    closedir(dp);
    assert_true(n >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_nul_buffer),
        cmocka_unit_test(test_keys_check_on_array),
        cmocka_unit_test(test_big_integer_at_end),
        cmocka_unit_test(test_replay_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
