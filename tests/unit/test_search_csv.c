/* A search's CSV (run/search_csv.h): the key line and what differs between
 * two; the search's own fields; reading rows back, figures exact (doubles
 * written to 17 digits read back to the same bits), verdict rows and a cut
 * last line left out, bad rows refused with file and line. The figures
 * below are made up: only the round trip is tested. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/run/search_csv.h"

static search_space space(void)
{
    search_space sp = {.world = 8, .global_batch = 8, .micro_batch = 1};
    sp.tp = (search_list){{1, 2}, 2};
    sp.cp = (search_list){{1}, 1};
    sp.pp = (search_list){{1}, 1};
    sp.ep = (search_list){{1}, 1};
    sp.strategy = (search_list){{SPEC_FULL_SHARD}, 1};
    sp.recompute = (search_list){{SPEC_RECOMP_NONE, SPEC_RECOMP_FULL}, 2};
    return sp;
}

/* The key names every list; the same space and scenario give the same key,
 * another list or scenario text a message naming what differs. */
static void test_key(void **state)
{
    (void)state;
    search_space sp = space();
    char a[SCSV_KEY_MAX], b[SCSV_KEY_MAX];
    scsv_key(&sp, "{\"name\": \"x\"}", a, sizeof a);
    assert_non_null(strstr(a, "; world 8; tp 1,2; cp 1; pp 1; ep 1; strategy full_shard; "
                              "recompute none,full; global_batch 8; micro_batch 1"));
    assert_int_equal(strncmp(a, "# shardsim search: version ", 27), 0);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scsv_key_check("f.csv", a, a, &err), SS_OK);
    sp.tp.n = 1;
    scsv_key(&sp, "{\"name\": \"x\"}", b, sizeof b);
    ss_err_clear(&err);
    assert_int_equal(scsv_key_check("f.csv", a, b, &err), SS_E_INPUT);
    assert_string_equal(err.where, "f.csv: line 1");
    assert_non_null(strstr(err.msg, "its tp is 1,2, this search's 1"));
    sp = space();
    scsv_key(&sp, "{\"name\": \"y\"}", b, sizeof b);
    ss_err_clear(&err);
    assert_int_equal(scsv_key_check("f.csv", a, b, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "its scenario"));
    ss_err_clear(&err);
    assert_int_equal(scsv_key_check("f.csv", "point,tp\n", a, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "found \"point,tp\":"));
}

/* The search's fields: empty where unknown, figures exact. */
static void test_extra(void **state)
{
    (void)state;
    char buf[256];
    search_check none = {0}, chk = {.checked = true, .states = 123, .bound_ns = 150000000};
    sweep_fig no = {0}, f = {.ok = true, .step_ns = 188068110, .tokens_per_s = 0.1, .mfu = 1.0 / 3};
    scsv_extra(&none, &no, buf, sizeof buf);
    assert_string_equal(buf, ",,,,,");
    scsv_extra(&chk, &f, buf, sizeof buf);
    assert_string_equal(buf, ",123,0.15,188068110,0.10000000000000001,0.33333333333333331");
    chk.rejected = true;
    scsv_extra(&chk, &no, buf, sizeof buf);
    assert_string_equal(buf, ",123,,,,");
}

/* Two points of space(): 0 is tp 1 none, 1 tp 1 full, 2 tp 2 none, 3 tp 2 full. */
static void points(search_point *p)
{
    for (int i = 0; i < 4; i++)
        p[i] = (search_point){.tp = i < 2 ? 1 : 2, .cp = 1, .pp = 1, .ep = 1, .dp = i < 2 ? 8 : 4,
                              .grad_accum = i < 2 ? 1 : 2, .strategy = SPEC_FULL_SHARD,
                              .recompute = i % 2 ? SPEC_RECOMP_FULL : SPEC_RECOMP_NONE};
}

#define HEAD "point,a,b,c,d,e,f,g,h,i,status,s,c,x,pa,pr,ps,fits,n1,n2,n3,n4,error"

static const char ok_row[] =
    "2,2,1,1,1,4,true,2,full_shard,none,ok,0.5,0.4,0.1,10,20,5,true,0,3,2,0,,7,0.4,500000001,"
    "4096.1234567890123,0.31415926535897931\n";
static const char err_row[] =
    "1,1,1,1,1,8,false,1,full_shard,full,error,,,,,,,,,,,,\"f.json: $.x: bad, very\",,,,,\n";
static const char pruned_row[] =
    "0,1,1,1,1,8,false,1,full_shard,none,pruned,,,,,,,,,,,,pruned: bound,1,0.9,,,\n";

static int read_text(const char *rows, char **given, sweep_fig *figs, size_t *nr, ss_err *err)
{
    search_space sp = space();
    search_point p[4];
    points(p);
    char key[SCSV_KEY_MAX], text[4096];
    scsv_key(&sp, "{}", key, sizeof key);
    snprintf(text, sizeof text, "%s\n" HEAD "%s\n%s", key, scsv_extra_header, rows);
    memset(given, 0, 4 * sizeof *given);
    memset(figs, 0, 4 * sizeof *figs);
    char header[1024];
    snprintf(header, sizeof header, HEAD "%s", scsv_extra_header);
    return scsv_read("f.csv", text, key, header, p, 4, given, figs, nr, err);
}

/* An ok row and an error row come back (the sweep's part of the row; the
 * ok row's figures to the bit); the pruned row and the cut line do not. */
static void test_read(void **state)
{
    (void)state;
    char rows[2048], *given[4];
    sweep_fig figs[4];
    size_t nr;
    ss_err err;
    ss_err_clear(&err);
    snprintf(rows, sizeof rows, "%s%s%s3,2,1,1", pruned_row, ok_row, err_row);
    assert_int_equal(read_text(rows, given, figs, &nr, &err), SS_OK);
    assert_int_equal(nr, 2);
    assert_null(given[0]);
    assert_null(given[3]);
    assert_string_equal(given[2], "2,2,1,1,1,4,true,2,full_shard,none,ok,0.5,0.4,0.1,10,20,5,"
                                  "true,0,3,2,0,\n");
    assert_string_equal(given[1], "1,1,1,1,1,8,false,1,full_shard,full,error,,,,,,,,,,,,"
                                  "\"f.json: $.x: bad, very\"\n");
    assert_true(figs[2].ok && figs[2].fits);
    assert_int_equal(figs[2].step_ns, 500000001);
    assert_true(figs[2].step_s == 500000001 * 1e-9);
    assert_true(figs[2].tokens_per_s == 4096.1234567890123);
    assert_true(figs[2].mfu == 0.31415926535897931);
    assert_int_equal(figs[2].peak_reserved, 20);
    assert_false(figs[1].ok);
    for (int i = 0; i < 4; i++) free(given[i]);
}

/* Bad rows: each refused at its line, nothing left allocated. */
static void test_read_errors(void **state)
{
    (void)state;
    static const struct {
        const char *rows, *where, *msg;
    } bad[] = {
        {"2,2,1\n", "f.csv: line 4", "expected 28 fields"},
        {"9,2,1,1,1,4,true,2,full_shard,none,ok,,,,,,,,,,,,,,,,,\n", "f.csv: line 4",
         "expected a point from 0 to 3; found \"9\""},
        {"3,4,1,1,1,4,true,2,full_shard,full,ok,,,,,,,,,,,,,,,,,\n", "f.csv: line 4",
         "point 3 has parallel.tp = 2 in this search; found 4"},
        {"3,2,1,1,1,4,true,2,full_shard,full,maybe,,,,,,,,,,,,,,,,,\n", "f.csv: line 4",
         "status: expected ok, error, pruned or rejected; found \"maybe\""},
        {"3,2,1,1,1,4,true,2,full_shard,full,ok,,,,,,,,,,,,,,,,,\n", "f.csv: line 4",
         "expected max_peak_reserved_bytes, step_ns"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char rows[2048], *given[4];
        sweep_fig figs[4];
        size_t nr = 7;
        ss_err err;
        ss_err_clear(&err);
        snprintf(rows, sizeof rows, "%s%s", ok_row, bad[k].rows);
        int rc = read_text(rows, given, figs, &nr, &err);
        assert_int_equal(rc, SS_E_INPUT);
        if (strcmp(bad[k].where, err.where)) fail_msg("case %zu: where %s", k, err.where);
        if (!strstr(err.msg, bad[k].msg)) fail_msg("case %zu: %s", k, err.msg);
        assert_int_equal(nr, 0);
        for (int i = 0; i < 4; i++) assert_null(given[i]);
    }
    char rows[2048], *given[4];
    sweep_fig figs[4];
    size_t nr;
    ss_err err;
    ss_err_clear(&err);
    snprintf(rows, sizeof rows, "%s%s", ok_row, ok_row);
    assert_int_equal(read_text(rows, given, figs, &nr, &err), SS_E_INPUT);
    assert_string_equal(err.where, "f.csv: line 4");
    assert_non_null(strstr(err.msg, "point 2 again (line 3 has it)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_key), cmocka_unit_test(test_extra),
                                       cmocka_unit_test(test_read),
                                       cmocka_unit_test(test_read_errors)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
