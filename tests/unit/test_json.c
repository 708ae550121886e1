/* Strict JSON access: every failure names the file and the JSON path and
 * says what was expected and what was found; getters that fail leave their
 * outputs alone; overrides either apply fully or change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../../sim/core/utf8.h"
#include "../../sim/io/json.h"

#define SPEC_NAME_MAX_FOR_TEST 128 /* js_copy_name's buffer (json.h) */

/* Parse text as "t.json", which must succeed. */
static void parse(js_doc *d, const char *text)
{
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(d, "t.json", text, strlen(text), &err), SS_OK);
}

/* Parse text as "t.json", which must fail with SS_E_INPUT; err holds why. */
static void parse_bad(const char *text, size_t len, ss_err *err)
{
    js_doc d;
    ss_err_clear(err);
    assert_int_equal(js_doc_parse(&d, "t.json", text, len, err), SS_E_INPUT);
    assert_null(d.root);
}

static void has(const ss_err *err, const char *where, const char *msg)
{
    if (where && !strstr(err->where, where))
        fail_msg("where \"%s\" lacks \"%s\"", err->where, where);
    if (msg && !strstr(err->msg, msg)) fail_msg("msg \"%s\" lacks \"%s\"", err->msg, msg);
}

/* Print the whole document, so a test can compare trees as text. */
static void expect_doc(const js_doc *d, const char *want)
{
    char *s = cJSON_PrintUnformatted(d->root);
    assert_non_null(s);
    assert_string_equal(s, want);
    cJSON_free(s);
}

/* A file of the given contents in a fresh temporary directory; the caller
 * removes both. */
static void temp_file(char dir[64], char path[96], const char *contents)
{
    snprintf(dir, 64, "/tmp/test_json.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, 96, "%s/in.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(contents, f);
    assert_int_equal(fclose(f), 0);
}

/* ---- files ---- */

/* A missing file is an I/O error whose `where` is the file name alone and
 * whose message carries the system's reason. */
static void test_load_missing(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_doc_load(&d, "/nonexistent/x.json", &err), SS_E_IO);
    assert_string_equal(err.where, "/nonexistent/x.json");
    assert_string_equal(err.msg, "cannot read file: No such file or directory");
    js_doc_fini(&d); /* a NULL root is fine */
}

/* A file of white space only is "empty" (an input error, not I/O); a good
 * file loads; a directory cannot be read (I/O error). */
static void test_load_empty_and_good(void **state)
{
    (void)state;
    char dir[64], path[96];
    js_doc d;
    ss_err err;
    temp_file(dir, path, " \n\t\n");
    ss_err_clear(&err);
    assert_int_equal(js_doc_load(&d, path, &err), SS_E_INPUT);
    assert_string_equal(err.where, path);
    has(&err, NULL, "file is empty");
    remove(path);
    rmdir(dir);

    temp_file(dir, path, "{\"a\": [1, 2]}\n");
    ss_err_clear(&err);
    assert_int_equal(js_doc_load(&d, path, &err), SS_OK);
    assert_string_equal(d.file, path);
    assert_int_equal(js_nmembers(js_root(&d)), 1);
    js_doc_fini(&d);
    assert_int_equal(js_doc_load(&d, dir, &err), SS_E_IO);
    has(&err, dir, "cannot read file");
    remove(path);
    rmdir(dir);
}

/* The position of the first bad character, counted by hand:
 * line 3 is `  "b": ]`, and ']' is its 8th character. */
static void test_malformed_position(void **state)
{
    (void)state;
    ss_err err;
    const char *t = "{\n  \"a\": 1,\n  \"b\": ]\n}";
    parse_bad(t, strlen(t), &err);
    assert_string_equal(err.where, "t.json");
    assert_string_equal(err.msg, "malformed JSON at line 3, column 8");
    /* Trailing text: the second '{' is at column 4. */
    parse_bad("{} {}", 5, &err);
    has(&err, NULL, "line 1, column 4");
    /* Columns count characters: the two-byte 'é' is one column, so the bad
     * 'x' is at column 7 (byte 8). */
    t = "{\"\xc3\xa9\": x}";
    parse_bad(t, strlen(t), &err);
    has(&err, NULL, "line 1, column 7");
    /* NUL bytes are refused before parsing. */
    parse_bad("{}\0", 3, &err);
    has(&err, NULL, "NUL bytes");
    parse_bad("", 0, &err);
    has(&err, NULL, "empty");
}

/* ---- keys, types, paths ---- */

/* An unknown key names itself and every allowed key; keys are
 * case-sensitive; a repeated key is an error, not "the first wins". */
static void test_keys(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    js_node sub;
    static const char *const allowed[] = {"alpha", "beta", "gamma_ray"};
    parse(&d, "{\"sub\": {\"alpha\": 1, \"strategyy\": 2}, \"Alpha\": 3}");
    assert_true(js_get(js_root(&d), "sub", &sub));
    ss_err_clear(&err);
    assert_int_equal(js_keys_check(sub, allowed, 3, &err), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $.sub");
    assert_string_equal(err.msg, "unknown key \"strategyy\" (allowed: alpha, beta, gamma_ray)");
    ss_err_clear(&err);
    assert_int_equal(js_keys_check(js_root(&d), allowed, 3, &err), SS_E_INPUT);
    has(&err, NULL, "unknown key \"sub\"");
    assert_false(js_get(js_root(&d), "alpha", &sub)); /* "Alpha" is another key */
    js_doc_fini(&d);

    parse(&d, "{\"alpha\": 1, \"beta\": 2, \"alpha\": 3}");
    ss_err_clear(&err);
    assert_int_equal(js_keys_check(js_root(&d), allowed, 3, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "duplicate key \"alpha\"");
    js_doc_fini(&d);
}

/* Each getter says what it wanted and what it found; missing required keys
 * are named; optional ones give the default. */
static void test_types(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    const char *s = "untouched";
    bool b = false;
    double x = 2.5;
    js_node c, arr;
    size_t len = 99;
    parse(&d, "{\"n\": 3, \"s\": \"x\", \"l\": [1], \"o\": {}, \"b\": true, \"f\": 0.1}");
    js_node r = js_root(&d);
    ss_err_clear(&err);
    assert_int_equal(js_str(r, "n", true, NULL, &s, &err), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $.n");
    assert_string_equal(err.msg, "expected a string, found a number");
    assert_string_equal(s, "untouched");
    ss_err_clear(&err);
    assert_int_equal(js_bool(r, "s", true, false, &b, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected true or false, found a string");
    ss_err_clear(&err);
    assert_int_equal(js_arr(r, "o", true, &arr, &len, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected an array, found an object");
    assert_int_equal(len, 99);
    assert_true(js_get(r, "l", &c));
    ss_err_clear(&err);
    assert_int_equal(js_want_obj(c, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected an object, found an array");
    ss_err_clear(&err);
    assert_int_equal(js_num(r, "f", true, 0, 0.5, 1, &x, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected a number in [0.5, 1], found 0.1");
    assert_true(x == 2.5);
    ss_err_clear(&err);
    assert_int_equal(js_str(r, "nope", true, NULL, &s, &err), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $");
    assert_string_equal(err.msg, "missing required key \"nope\"");
    /* Optional and absent: the default, and an empty array. */
    assert_int_equal(js_bool(r, "nope", false, true, &b, &err), SS_OK);
    assert_true(b);
    assert_int_equal(js_arr(r, "nope", false, &arr, &len, &err), SS_OK);
    assert_int_equal(len, 0);
    assert_int_equal(js_bool(r, "b", true, false, &b, &err), SS_OK);
    assert_true(b);
    js_doc_fini(&d);
}

/* Integers: no sign, no fraction, within [min, max], and exact: 2^53 is
 * the largest accepted, 2^53 + 2 (the next double) is refused. */
static void test_integers(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    uint64_t v = 7;
    parse(&d, "{\"neg\": -3, \"frac\": 1.5, \"big\": 9007199254740994, \"max\": 9007199254740992,"
              " \"s\": \"x\", \"ok\": 12, \"e\": 1e3}");
    js_node r = js_root(&d);
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "neg", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $.neg");
    assert_string_equal(err.msg, "expected a non-negative integer, found -3");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "frac", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected an integer, found 1.5");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "big", true, 0, 0, UINT64_MAX, &v, &err), SS_E_INPUT);
    has(&err, NULL, "9007199254740994 is too large to be exact");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "s", true, 0, 0, 100, &v, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected an integer, found a string");
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "ok", true, 0, 13, 100, &v, &err), SS_E_INPUT);
    assert_string_equal(err.msg, "expected an integer in [13, 100], found 12");
    assert_int_equal(v, 7); /* failures leave *out alone */
    ss_err_clear(&err);
    assert_int_equal(js_u64(r, "max", true, 0, 0, UINT64_MAX, &v, &err), SS_OK);
    assert_int_equal(v, 9007199254740992ull);
    assert_int_equal(js_u64(r, "e", true, 0, 0, 1000, &v, &err), SS_OK); /* 1e3 is whole */
    assert_int_equal(v, 1000);
    assert_int_equal(js_u64(r, "absent", false, 5, 0, 100, &v, &err), SS_OK);
    assert_int_equal(v, 5);
    js_doc_fini(&d);
}

/* The enum error lists every accepted name, quoted, and the path of the
 * value, here four levels down through an array. */
static void test_enum_and_paths(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    static const char *const names[] = {"ddp", "zero1", "zero2"};
    parse(&d, "{\"a\": {\"b\": [0, {\"c\": \"zero7\", \"d\": \"zero2\"}]}}");
    js_node a, arr;
    size_t len;
    int out = -1;
    ss_err_clear(&err);
    assert_true(js_get(js_root(&d), "a", &a));
    assert_int_equal(js_arr(a, "b", true, &arr, &len, &err), SS_OK);
    assert_int_equal(len, 2);
    assert_string_equal(js_at(arr, 1).path, "$.a.b[1]");
    assert_int_equal(js_enum(js_at(arr, 1), "c", true, 0, names, 3, &out, &err), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $.a.b[1].c");
    assert_string_equal(err.msg, "expected one of \"ddp\", \"zero1\", \"zero2\"; found \"zero7\"");
    assert_int_equal(out, -1);
    assert_int_equal(js_enum(js_at(arr, 1), "d", true, 0, names, 3, &out, &err), SS_OK);
    assert_int_equal(out, 2);
    const char *key;
    js_node m = js_member(js_at(arr, 1), 1, &key);
    assert_string_equal(key, "d");
    assert_string_equal(m.path, "$.a.b[1].d");
    ss_err_clear(&err);
    assert_int_equal(js_failf(m, &err, "custom %d", 5), SS_E_INPUT);
    assert_string_equal(err.where, "t.json: $.a.b[1].d");
    assert_string_equal(err.msg, "custom 5");
    js_doc_fini(&d);
}

/* A path deeper than JS_PATH_MAX is cut and ends in "...", never overflows. */
static void test_long_path(void **state)
{
    (void)state;
    /* 60 levels (under JS_MAX_DEPTH) of ".keykeykey": 601 characters. */
    char text[4096] = "";
    for (int i = 0; i < 60; i++) strcat(text, "{\"keykeykey\":");
    strcat(text, "1");
    for (int i = 0; i < 60; i++) strcat(text, "}");
    js_doc d;
    parse(&d, text);
    js_node n = js_root(&d);
    for (int i = 0; i < 60; i++) assert_true(js_get(n, "keykeykey", &n));
    size_t len = strlen(n.path);
    assert_true(len < JS_PATH_MAX);
    assert_string_equal(n.path + len - 3, "...");
    assert_memory_equal(n.path, "$.keykeykey.keykeykey", 21);
    js_doc_fini(&d);
}

/* What cJSON's tree hides is refused with the node's path and the line and
 * column: a \u0000 escape in a value or a key (cJSON would end the string
 * there), bytes that are not UTF-8 (0xFF never occurs in UTF-8; C3 28 is a
 * lead byte without its continuation; ED A0 80 encodes a surrogate), an
 * integer literal a double rounds (2^53 + 1 reads as 2^53; a 23-digit size
 * as 1.2345678901234568e22), and nesting past JS_MAX_DEPTH. */
static void test_text_checks(void **state)
{
    (void)state;
    ss_err err;
    const char *nul = "{\"a\": {\"s\": \"x\\u0000y\"}}";
    parse_bad(nul, strlen(nul), &err);
    has(&err, "t.json: $.a.s", "line 1, column 15 holds a NUL character");
    const char *nulkey = "{\"a\": {\"s\\u0000t\": 1}}";
    parse_bad(nulkey, strlen(nulkey), &err);
    has(&err, "t.json: $.a", "the key \"s\" at line 1, column 10 holds a NUL character");
    const char *esc = "{\"a\": \"x\\\\u0000\"}"; /* an escaped backslash, then text */
    js_doc d;
    parse(&d, esc);
    js_doc_fini(&d);
    static const char *const bad_utf8[] = {"{\"a\": [\"ok\", \"\xff\"]}", "{\"a\": \"\xc3(\"}",
                                           "{\"a\": \"\xed\xa0\x80\"}"};
    for (size_t i = 0; i < 3; i++) {
        parse_bad(bad_utf8[i], strlen(bad_utf8[i]), &err);
        has(&err, "t.json: $.a", "holds bytes that are not UTF-8");
    }
    parse(&d, "{\"a\": \"caf\xc3\xa9 \xf0\x9f\x98\x80\"}"); /* 2- and 4-byte characters */
    js_doc_fini(&d);
    const char *bom = "\xEF\xBB\xBF{\"a\": \"\xff\"}"; /* after a byte-order mark too */
    parse_bad(bom, strlen(bom), &err);
    has(&err, "t.json: $.a", "holds bytes that are not UTF-8");
    const char *big = "{\"n\": [9007199254740993]}";
    parse_bad(big, strlen(big), &err);
    has(&err, "t.json: $.n[0]", "9007199254740993 is too large to be exact");
    has(&err, NULL, "reads this one as 9007199254740992");
    const char *huge = "{\"n\": -12345678901234567890123}";
    parse_bad(huge, strlen(huge), &err);
    has(&err, "$.n", "-12345678901234567890123 is too large to be exact");
    /* 2^53 and 2^60 are exact doubles: the integer check passes them (the
     * typed getters bound them later). */
    parse(&d, "{\"n\": [9007199254740992, 1152921504606846976, 1e30, 0.1]}");
    js_doc_fini(&d);
    char deep[256] = "{\"a\":";
    for (int i = 0; i < JS_MAX_DEPTH; i++) strcat(deep, "[");
    for (int i = 0; i < JS_MAX_DEPTH; i++) strcat(deep, "]");
    strcat(deep, "}");
    parse_bad(deep, strlen(deep), &err);
    has(&err, "t.json", "nested deeper than 64 levels at line 1, column 69");
    char ok[256] = "{\"a\":"; /* the object and 63 arrays: 64 levels */
    for (int i = 1; i < JS_MAX_DEPTH; i++) strcat(ok, "[");
    for (int i = 1; i < JS_MAX_DEPTH; i++) strcat(ok, "]");
    strcat(ok, "}");
    parse(&d, ok);
    js_doc_fini(&d);
}

/* Paths in messages are the ones --set takes: a key with a '.' prints as
 * ["memory.fits"], '"' and '\' escaped, and --set accepts that form, with
 * or without the "$." messages start with. */
static void test_paths_round_trip(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    ss_err_clear(&err);
    parse(&d, "{\"expect\": {\"memory.fits\": 1, \"a\\\"b\\\\c\": 2}}");
    js_node e, k;
    assert_true(js_get(js_root(&d), "expect", &e));
    assert_true(js_get(e, "memory.fits", &k));
    assert_string_equal(k.path, "$.expect[\"memory.fits\"]");
    assert_true(js_get(e, "a\"b\\c", &k));
    assert_string_equal(k.path, "$.expect[\"a\\\"b\\\\c\"]");
    assert_int_equal(js_doc_set(&d, "$.expect[\"memory.fits\"]=7", &err), SS_OK);
    assert_int_equal(js_doc_set(&d, "expect[\"a\\\"b\\\\c\"]=8", &err), SS_OK);
    assert_int_equal(js_doc_set(&d, "expect[\"x=y\"]=9", &err), SS_OK); /* '=' in the key */
    expect_doc(&d, "{\"expect\":{\"memory.fits\":7,\"a\\\"b\\\\c\":8,\"x=y\":9}}");
    assert_int_equal(js_doc_set(&d, "expect[\"open=1", &err), SS_E_INPUT);
    has(&err, "--set expect[\"open=1", "expected PATH=VALUE");
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "expect[\"a\"x]=1", &err), SS_E_INPUT);
    has(&err, NULL, "expected a quoted key and '\"]'");
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "expect.v=\"a\\u0000\"", &err), SS_E_INPUT);
    has(&err, "--set expect.v=", "holds a NUL character");
    ss_err_clear(&err);
    assert_int_equal(js_doc_set(&d, "expect.v=9007199254740993", &err), SS_E_INPUT);
    has(&err, NULL, "too large to be exact");
    expect_doc(&d, "{\"expect\":{\"memory.fits\":7,\"a\\\"b\\\\c\":8,\"x=y\":9}}"); /* untouched */
    js_doc_fini(&d);
}

/* Names are cut on character boundaries: "é" is two bytes (C3 A9), so a
 * 4-byte buffer holds "aé" (3 bytes) whole and a 3-byte one only "a". */
static void test_copy_name_utf8(void **state)
{
    (void)state;
    char b4[4], b3[3];
    assert_false(ss_utf8_copy(b4, sizeof b4, "a\xc3\xa9z"));
    assert_string_equal(b4, "a\xc3\xa9");
    assert_false(ss_utf8_copy(b3, sizeof b3, "a\xc3\xa9z"));
    assert_string_equal(b3, "a");
    assert_true(ss_utf8_copy(b4, sizeof b4, "abc"));
    char cut[] = "ab\xe2\x82"; /* a euro sign (E2 82 AC) cut after 2 of its bytes */
    ss_utf8_trim(cut);
    assert_string_equal(cut, "ab");
    char whole[] = "ab\xe2\x82\xac";
    ss_utf8_trim(whole);
    assert_string_equal(whole, "ab\xe2\x82\xac");
    js_doc d;
    char name[SPEC_NAME_MAX_FOR_TEST];
    char text[400] = "{\"name\": \"";
    for (int i = 0; i < 63; i++) strcat(text, "a");
    for (int i = 0; i < 40; i++) strcat(text, "\xe2\x82\xac"); /* euro sign, 3 bytes */
    strcat(text, "\"}");
    parse(&d, text);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_copy_name(js_root(&d), "name", true, name, &err), SS_OK);
    /* 63 + 3 k <= 127: k = 21, 126 bytes; the 22nd euro would split. */
    assert_int_equal(strlen(name), 126);
    js_doc_fini(&d);
}

/* ---- overrides ---- */

/* Replace an existing key, add a new one, create nested objects, replace
 * an array element, take JSON objects and plain strings as values. */
static void test_set_applies(void **state)
{
    (void)state;
    js_doc d;
    ss_err err;
    ss_err_clear(&err);
    parse(&d, "{\"a\": {\"n\": 1}, \"l\": [1, {\"k\": 2}], \"x\": 3}");
    assert_int_equal(js_doc_set(&d, "a.n=5", &err), SS_OK);        /* existing key */
    assert_int_equal(js_doc_set(&d, "y=true", &err), SS_OK);        /* new key */
    assert_int_equal(js_doc_set(&d, "a.p.q.r=null", &err), SS_OK);  /* nested creation */
    assert_int_equal(js_doc_set(&d, "l[0]=9", &err), SS_OK);        /* array index */
    assert_int_equal(js_doc_set(&d, "l[1].k=\"2\"", &err), SS_OK);  /* quoted: a string */
    assert_int_equal(js_doc_set(&d, "x={\"o\": [1]}", &err), SS_OK); /* a JSON object */
    assert_int_equal(js_doc_set(&d, "s=full_shard", &err), SS_OK); /* not JSON: a string */
    assert_int_equal(js_doc_set(&d, "t=a=b", &err), SS_OK);        /* '=' in the value */
    assert_int_equal(js_doc_set(&d, "u= 7 ", &err), SS_OK);        /* spaces around JSON */
    assert_int_equal(js_doc_set(&d, "v=7 8", &err), SS_OK);        /* only a prefix is JSON */
    assert_int_equal(err.code, SS_OK);
    expect_doc(&d, "{\"a\":{\"n\":5,\"p\":{\"q\":{\"r\":null}}},\"l\":[9,{\"k\":\"2\"}],"
                   "\"x\":{\"o\":[1]},\"y\":true,\"s\":\"full_shard\",\"t\":\"a=b\",\"u\":7,"
                   "\"v\":\"7 8\"}");
    js_doc_fini(&d);
}

/* Each failure names the override and the part of the path at fault, and
 * leaves the document exactly as it was. */
static void test_set_errors(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"sharding.x=3", "\"sharding\" is a number, not an object"},
        {"l[5]=1", "\"l\" has 2 elements, no index 5"},
        {"sharding[0]=1", "\"sharding\" is a number, not an array"},
        {"l[1].x=1", "\"l[1]\" is a number, not an object"},
        {"new.list[0]=1", "\"new.list\" does not exist, so it has no index 0"},
        {"[0]=1", "the document is an object, not an array"},
        {"novalue", "expected PATH=VALUE"},
        {"=3", "expected PATH=VALUE"},
        {"a..b=1", "empty key at character 3"},
        {"l[-1]=1", "non-negative index"},
        {"l[1x]=1", "non-negative index"},
        {"l[1]x=1", "expected '.' or '[' at character 5"},
        {"a]=1", "unexpected ']'"},
        {"a.=1", "empty key"},
    };
    const char *orig = "{\"sharding\":3,\"l\":[1,2]}";
    for (size_t i = 0; i < SS_ARRAY_LEN(bad); i++) {
        js_doc d;
        ss_err err;
        char where[128];
        parse(&d, orig);
        ss_err_clear(&err);
        assert_int_equal(js_doc_set(&d, bad[i][0], &err), SS_E_INPUT);
        snprintf(where, sizeof where, "--set %s", bad[i][0]);
        assert_string_equal(err.where, where);
        has(&err, NULL, bad[i][1]);
        expect_doc(&d, orig);
        js_doc_fini(&d);
    }
}

/* ---- paths of included files ---- */

/* Relative to the including file's directory; absolute paths kept; a
 * result that does not fit fails and leaves out alone. */
static void test_resolve(void **state)
{
    (void)state;
    char out[64];
    ss_err err;
    assert_int_equal(js_path_resolve("scenarios/a/s.json", "../m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "scenarios/a/../m.json");
    assert_int_equal(js_path_resolve("s.json", "m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "m.json");
    assert_int_equal(js_path_resolve("/s.json", "m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "/m.json");
    assert_int_equal(js_path_resolve("a/s.json", "/abs/m.json", out, sizeof out, NULL), 0);
    assert_string_equal(out, "/abs/m.json");
    char tiny[13] = "keep";
    ss_err_clear(&err);
    /* "dir/long.json" needs 14 bytes with its NUL; "dir/lon.json" exactly fits 13. */
    assert_int_equal(js_path_resolve("dir/s.json", "long.json", tiny, sizeof tiny, &err),
                     SS_E_INPUT);
    assert_string_equal(tiny, "keep");
    assert_string_equal(err.where, "dir/s.json");
    has(&err, NULL, "long.json");
    assert_int_equal(js_path_resolve("dir/s.json", "lon.json", tiny, sizeof tiny, NULL), 0);
    assert_string_equal(tiny, "dir/lon.json");
}

/* Enum values in the spellings users' frameworks print: any case
 * (ShardingStrategy.FULL_SHARD's name), torch's dtype names with or without
 * "torch."; a near miss is still refused with the list. */
static void test_enum_spellings(void **state)
{
    (void)state;
    static const char *const strat[] = {"no_shard", "shard_grad_op", "full_shard"};
    static const char *const dts[] = {"fp32", "fp16", "bf16", "fp8"};
    js_doc d;
    parse(&d, "{\"s\": \"FULL_SHARD\", \"a\": \"bfloat16\", \"b\": \"torch.float16\", "
              "\"c\": \"half\", \"e\": \"torch.float32\", \"f\": \"bfloat\", \"g\": \"Shard_Grad_Op\"}");
    ss_err err;
    ss_err_clear(&err);
    int out = -1;
    assert_int_equal(js_enum(js_root(&d), "s", true, 0, strat, 3, &out, &err), SS_OK);
    assert_int_equal(out, 2);
    assert_int_equal(js_enum(js_root(&d), "g", true, 0, strat, 3, &out, &err), SS_OK);
    assert_int_equal(out, 1);
    const char *keys[] = {"a", "b", "c", "e"};
    const int want[] = {2, 1, 1, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(js_enum(js_root(&d), keys[i], true, 0, dts, 4, &out, &err), SS_OK);
        assert_int_equal(out, want[i]);
    }
    assert_int_equal(js_enum(js_root(&d), "f", true, 0, dts, 4, &out, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "found \"bfloat\""));
    assert_int_equal(js_enum(js_root(&d), "a", true, 0, strat, 3, &out, &err), SS_E_INPUT);
    js_doc_fini(&d);
}

/* Members by index in any order (forward, backward, strided, nested loops
 * over more arrays than the document remembers walks, an override in
 * between) are the members at those indexes: the walk cache never answers
 * for another container or a replaced item. */
static void test_walk_any_order(void **state)
{
    (void)state;
    enum { N = 12, M = 40 };
    char text[16384];
    size_t at = (size_t)snprintf(text, sizeof text, "{\"o\": {\"a\": 0, \"b\": 1, \"c\": 2}");
    for (int a = 0; a < N; a++) {
        at += (size_t)snprintf(text + at, sizeof text - at, ", \"x%d\": [", a);
        for (int i = 0; i < M; i++)
            at += (size_t)snprintf(text + at, sizeof text - at, "%s%d", i ? ", " : "", a * 1000 + i);
        at += (size_t)snprintf(text + at, sizeof text - at, "]");
    }
    snprintf(text + at, sizeof text - at, "}");
    js_doc d;
    parse(&d, text);
    js_node arr[N];
    for (int a = 0; a < N; a++) {
        char key[8];
        snprintf(key, sizeof key, "x%d", a);
        assert_true(js_get(js_root(&d), key, &arr[a]));
    }
    for (int i = 0; i < M; i++) /* nested: every array's i-th, twelve walks at once */
        for (int a = 0; a < N; a++) assert_int_equal(js_at(arr[a], (size_t)i).j->valueint, a * 1000 + i);
    for (int i = M - 1; i >= 0; i -= 3) assert_int_equal(js_at(arr[5], (size_t)i).j->valueint, 5000 + i);
    assert_null(js_at(arr[2], M).j);
    assert_int_equal(js_at(arr[2], 7).j->valueint, 2007);
    const char *key;
    js_node o;
    assert_true(js_get(js_root(&d), "o", &o));
    assert_int_equal(js_member(o, 2, &key).j->valueint, 2);
    assert_string_equal(key, "c");
    assert_int_equal(js_member(o, 0, &key).j->valueint, 0);
    assert_string_equal(key, "a");
    assert_null(js_at(o, 0).j); /* an object is not an array */
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(js_at(arr[3], 10).j->valueint, 3010); /* remembered, then replaced: */
    assert_int_equal(js_doc_set(&d, "x3[10]=77", &err), SS_OK);
    assert_true(js_get(js_root(&d), "x3", &arr[3]));
    assert_int_equal(js_at(arr[3], 10).j->valueint, 77);
    assert_int_equal(js_at(arr[3], 11).j->valueint, 3011);
    js_doc_fini(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_missing),   cmocka_unit_test(test_load_empty_and_good),
        cmocka_unit_test(test_malformed_position), cmocka_unit_test(test_keys),
        cmocka_unit_test(test_types),          cmocka_unit_test(test_integers),
        cmocka_unit_test(test_enum_and_paths), cmocka_unit_test(test_long_path),
        cmocka_unit_test(test_set_applies),    cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_resolve),        cmocka_unit_test(test_walk_any_order),
        cmocka_unit_test(test_enum_spellings),
        cmocka_unit_test(test_text_checks),    cmocka_unit_test(test_paths_round_trip),
        cmocka_unit_test(test_copy_name_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
