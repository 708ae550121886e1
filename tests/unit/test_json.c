/* Strict JSON access: every failure names the file and the JSON path and
 * says what was expected and what was found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/json.h"

static ss_err err;

static void parse(js_doc *d, const char *text)
{
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(d, "t.json", text, strlen(text), &err), SS_OK);
}

static void has(const char *where, const char *msg)
{
    if (where && !strstr(err.where, where)) fail_msg("where \"%s\" lacks \"%s\"", err.where, where);
    if (msg && !strstr(err.msg, msg)) fail_msg("msg \"%s\" lacks \"%s\"", err.msg, msg);
}

static void test_missing_file(void **state)
{
    (void)state;
    js_doc d;
    ss_err_clear(&err);
    assert_int_equal(js_doc_load(&d, "/nonexistent/x.json", &err), SS_E_IO);
    has("/nonexistent/x.json", "cannot read file");
}

/* "{\n  \"a\": 1,\n  \"b\": ]\n}": the bad character is the ']' on line 3,
 * column 8 (after two spaces, "b", colon and a space). */
static void test_malformed_position(void **state)
{
    (void)state;
    js_doc d;
    const char *t = "{\n  \"a\": 1,\n  \"b\": ]\n}";
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(&d, "t.json", t, strlen(t), &err), SS_E_INPUT);
    has("t.json", "line 3, column 8");
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(&d, "t.json", " \n\t", 3, &err), SS_E_INPUT);
    has(NULL, "empty");
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(&d, "t.json", "{} {}", 5, &err), SS_E_INPUT);
    has(NULL, "line 1, column 4");
}

static void test_unknown_and_duplicate_keys(void **state)
{
    (void)state;
    js_doc d;
    static const char *const allowed[] = {"alpha", "beta"};
    parse(&d, "{\"sub\": {\"alpha\": 1, \"gamma\": 2}}");
    js_node sub;
    assert_true(js_get(js_root(&d), "sub", &sub));
    assert_int_equal(js_keys_check(sub, allowed, 2, &err), SS_E_INPUT);
    has("t.json: $.sub", "unknown key \"gamma\" (allowed: alpha, beta)");
    js_doc_fini(&d);
    parse(&d, "{\"alpha\": 1, \"alpha\": 2}");
    assert_int_equal(js_keys_check(js_root(&d), allowed, 2, &err), SS_E_INPUT);
    has(NULL, "duplicate key \"alpha\"");
    js_doc_fini(&d);
}

static void test_integers(void **state)
{
    (void)state;
    js_doc d;
    uint64_t v = 7;
    parse(&d, "{\"neg\": -3, \"frac\": 1.5, \"big\": 9007199254740994, \"s\": \"x\", \"ok\": 12}");
    js_node r = js_root(&d);
    assert_int_equal(js_u64(r, "neg", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    has("$.neg", "non-negative");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "frac", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    has("$.frac", "expected an integer, found 1.5");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "big", true, 0, 0, UINT64_MAX, &v, &err), SS_E_INPUT);
    has(NULL, "too large to be exact");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "s", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    has(NULL, "expected an integer, found a string");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "ok", true, 0, 13, 100, &v, &err), SS_E_INPUT);
    has(NULL, "[13, 100], found 12");
    assert_int_equal(v, 7); /* failures leave *out alone */
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "ok", true, 0, 0, 100, &v, &err), SS_OK);
    assert_int_equal(v, 12);
    assert_int_equal(js_u64(r, "absent", false, 5, 0, 100, &v, &err), SS_OK);
    assert_int_equal(v, 5);
    assert_int_equal(js_u64(r, "absent", true, 5, 0, 100, &v, &err), SS_E_INPUT);
    has("$", "missing required key \"absent\"");
    js_doc_fini(&d);
}

static void test_enum_and_paths(void **state)
{
    (void)state;
    js_doc d;
    static const char *const names[] = {"ddp", "zero1"};
    parse(&d, "{\"a\": {\"b\": [0, {\"c\": \"zero7\"}]}}");
    js_node a, arr;
    size_t len;
    assert_true(js_get(js_root(&d), "a", &a));
    assert_int_equal(js_arr(a, "b", true, &arr, &len, &err), SS_OK);
    assert_int_equal(len, 2);
    int out;
    assert_int_equal(js_enum(js_at(arr, 1), "c", true, 0, names, 2, &out, &err), SS_E_INPUT);
    has("t.json: $.a.b[1].c", "expected one of \"ddp\", \"zero1\"; found \"zero7\"");
    js_doc_fini(&d);
}

static void test_set(void **state)
{
    (void)state;
    js_doc d;
    uint64_t v;
    const char *s;
    parse(&d, "{\"a\": {\"n\": 1}, \"l\": [1, 2], \"x\": 3}");
    js_node r = js_root(&d), a, c;
    assert_int_equal(js_doc_set(&d, "a.n=5", &err), SS_OK);
    assert_true(js_get(r, "a", &a));
    js_u64(a, "n", true, 0, 0, 10, &v, &err);
    assert_int_equal(v, 5);
    assert_int_equal(js_doc_set(&d, "a.new.deep=true", &err), SS_OK);
    assert_true(js_get(a, "new", &c) && js_is_obj(c));
    assert_int_equal(js_doc_set(&d, "a.word=full_shard", &err), SS_OK);
    js_str(a, "word", true, NULL, &s, &err);
    assert_string_equal(s, "full_shard");
    assert_int_equal(js_doc_set(&d, "a.obj={\"k\": 1}", &err), SS_OK);
    assert_true(js_get(a, "obj", &c) && js_is_obj(c));
    assert_int_equal(js_doc_set(&d, "l[1]=9", &err), SS_OK);
    js_node arr;
    size_t len;
    js_arr(r, "l", true, &arr, &len, &err);
    js_u64_val(js_at(arr, 1), 0, 10, &v, &err);
    assert_int_equal(v, 9);
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "l[5]=1", &err), SS_E_INPUT);
    has("--set l[5]=1", "no element 5");
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "x.y=1", &err), SS_E_INPUT);
    has("--set x.y=1", "not an object");
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "novalue", &err), SS_E_INPUT);
    has(NULL, "PATH=VALUE");
    js_doc_fini(&d);
}

static void test_resolve(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(js_path_resolve("scenarios/a/s.json", "../m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "scenarios/a/../m.json");
    assert_int_equal(js_path_resolve("s.json", "m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "m.json");
    assert_int_equal(js_path_resolve("a/s.json", "/abs/m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "/abs/m.json");
    char tiny[8];
    assert_int_equal(js_path_resolve("dir/s.json", "long-name.json", tiny, sizeof tiny, NULL),
                     SS_E_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),      cmocka_unit_test(test_malformed_position),
        cmocka_unit_test(test_unknown_and_duplicate_keys), cmocka_unit_test(test_integers),
        cmocka_unit_test(test_enum_and_paths),    cmocka_unit_test(test_set),
        cmocka_unit_test(test_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
