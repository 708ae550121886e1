/* Calibration profile loader: a small profile whose times are worked out by
 * hand below, a render/load round trip, the committed profiles, and one bad
 * input per rule of profile.h with the JSON path it must name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/profile.h"

static const char good[] =
    "{\"source\": \"hand example\", \"card\": \"test card\", \"nccl\": \"2.26.2\",\n"
    " \"collectives\": [\n"
    "  {\"op\": \"all_gather\", \"ranks\": 8, \"nodes\": 1, \"label\": \"ag\", \"points\": 9,\n"
    "   \"cv_median_rel_err\": 0.02, \"regimes\": [\n"
    "    {\"min_bytes\": 0, \"max_bytes\": 1048575, \"alpha_us\": 10, \"beta_GBps\": 50,\n"
    "     \"alpha_se_us\": 0.5, \"beta_se_GBps\": 2, \"r2\": 0.99, \"points\": 5},\n"
    "    {\"min_bytes\": 1048576, \"max_bytes\": 1073741824, \"alpha_us\": 30, \"beta_GBps\": 200}]},\n"
    "  {\"op\": \"all_gather\", \"ranks\": 16, \"nodes\": 2, \"regimes\": [\n"
    "    {\"min_bytes\": 8, \"max_bytes\": 8, \"alpha_us\": 100, \"beta_GBps\": 1}]}],\n"
    " \"gemm\": {\"bf16\": {\"peak_tflops\": 989.4, \"e_max\": 0.8, \"d_half\": 1024, \"p\": 2}},\n"
    " \"launch_us\": 4.5,\n"
    " \"copy\": {\"h2d_pinned\": {\"regimes\": [{\"min_bytes\": 1, \"max_bytes\": 1000000000,\n"
    "   \"alpha_us\": 8, \"beta_GBps\": 25}]}}}\n";

static prof load_ok(const char *text)
{
    prof p;
    ss_err err;
    ss_err_clear(&err);
    int rc = prof_load_text("p.json", text, strlen(text), &p, &err);
    if (rc) fprintf(stderr, "%s: %s\n", err.where, err.msg);
    assert_int_equal(rc, SS_OK);
    return p;
}

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fabs(want)) fprintf(stderr, "got %.17g want %.17g\n", got, want);
    assert_true(fabs(got - want) <= 1e-9 * fabs(want));
}

/* time = alpha + bytes / (beta GB/s * 1e3 B/us):
 *   0 B        -> 10
 *   524288 B   -> 10 + 524288 / 5e4     = 20.48576
 *   1048576 B  -> 30 + 1048576 / 2e5    = 35.24288 (the second regime)
 *   2^31 B     -> 30 + 2147483648 / 2e5 = 10767.41824 (above the range: last)
 * eff(d) = 0.8 / (1 + (1024 / d)^2): eff(1024) = 0.4, eff(2048) = 0.64. */
static void test_worked_example(void **state)
{
    (void)state;
    prof p = load_ok(good);
    assert_string_equal(p.source, "hand example");
    assert_string_equal(p.nccl, "2.26.2");
    assert_null(p.cuda);
    assert_int_equal(p.ncoll, 2);
    const prof_coll *c = prof_coll_find(&p, NCCLT_ALL_GATHER, 8, 1);
    assert_ptr_equal(c, &p.coll[0]);
    assert_string_equal(c->label, "ag");
    assert_int_equal(c->c.points, 9);
    near(c->c.cv_median_rel_err, 0.02);
    assert_int_equal(c->c.reg[0].points, 5);
    assert_true(isnan(c->c.reg[1].alpha_se_us) && c->c.reg[1].points == 0);
    near(prof_time_us(c->c.reg, c->c.nreg, 0), 10);
    near(prof_time_us(c->c.reg, c->c.nreg, 524288), 20.48576);
    near(prof_time_us(c->c.reg, c->c.nreg, 1048576), 35.24288);
    near(prof_time_us(c->c.reg, c->c.nreg, 2147483648ull), 10767.41824);
    assert_ptr_equal(prof_coll_find(&p, NCCLT_ALL_GATHER, 16, 2), &p.coll[1]);
    assert_null(prof_coll_find(&p, NCCLT_ALL_GATHER, 16, 1));
    assert_null(prof_coll_find(&p, NCCLT_ALL_REDUCE, 8, 1));
    assert_true(p.gemm[SPEC_DT_BF16].present && !p.gemm[SPEC_DT_FP16].present);
    near(prof_gemm_eff(&p.gemm[SPEC_DT_BF16], 1024), 0.4);
    near(prof_gemm_eff(&p.gemm[SPEC_DT_BF16], 2048), 0.64);
    assert_true(prof_gemm_eff(&p.gemm[SPEC_DT_BF16], 0) == 0);
    near(p.launch_us, 4.5);
    assert_true(p.has_copy[PROF_COPY_H2D_PINNED] && !p.has_copy[PROF_COPY_D2D]);
    near(prof_time_us(p.copy[PROF_COPY_H2D_PINNED].reg, 1, 1000000), 48); /* 8 + 1e6 / 25e3 */
    prof_fini(&p);
    prof_fini(&p); /* a finished profile is empty, finishing it again is fine */
}

/* Rendering what was loaded and loading it again gives the same text: the
 * writer and the loader agree on every key. */
static void test_round_trip(void **state)
{
    (void)state;
    prof p = load_ok(good);
    char *a = NULL, *b = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(prof_json(&p, &a, &err), SS_OK);
    prof q = load_ok(a);
    assert_int_equal(prof_json(&q, &b, &err), SS_OK);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "\"beta_se_GBps\": 2"));
    assert_null(strstr(a, "\"cuda\"")); /* absent stays absent */
    near(prof_time_us(q.coll[0].c.reg, q.coll[0].c.nreg, 524288), 20.48576);
    free(a);
    free(b);
    prof_fini(&p);
    prof_fini(&q);
}

/* A required value that is not finite is a fitter bug, never a file. */
static void test_render_refuses_nan(void **state)
{
    (void)state;
    prof p = load_ok(good);
    p.coll[0].c.reg[0].alpha_us = NAN;
    char *text = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(prof_json(&p, &text, &err), SS_E_INTERNAL);
    assert_null(text);
    prof_fini(&p);
}

typedef struct bad_case {
    const char *text, *where, *frag;
} bad_case;

#define HEAD "{\"source\": \"s\", \"card\": \"c\", "
#define R1 "{\"min_bytes\": 8, \"max_bytes\": 2048, \"alpha_us\": 10, \"beta_GBps\": 1}"
#define COLL(extra, regs) "{\"op\": \"all_reduce\", \"ranks\": 8, \"nodes\": 1" extra ", \"regimes\": [" regs "]}"

static const bad_case bad[] = {
    {HEAD "\"colectives\": []}", "p.json: $", "unknown key \"colectives\""},
    {"{\"card\": \"c\", \"launch_us\": 1}", "p.json: $", "missing required key \"source\""},
    {HEAD "\"launch_us\": -1}", "p.json: $.launch_us", "expected a number in"},
    {HEAD "\"card2\": 1}", "p.json: $", "unknown key \"card2\""},
    {"{\"source\": \"s\", \"card\": \"c\"}", "p.json: $", "calibrates nothing"},
    {HEAD "\"collectives\": [" COLL("", R1 ", {\"min_bytes\": 4096, \"max_bytes\": 8192, "
                                        "\"alpha_us\": 10, \"beta_GBps\": 2}") "]}",
     "p.json: $.collectives[0].regimes[1].min_bytes", "expected 2049"},
    {HEAD "\"collectives\": [" COLL("", "{\"min_bytes\": 8, \"max_bytes\": 4, \"alpha_us\": 1, "
                                        "\"beta_GBps\": 1}") "]}",
     "p.json: $.collectives[0].regimes[0].max_bytes", "expected at least min_bytes (8)"},
    {HEAD "\"collectives\": [" COLL("", "{\"min_bytes\": 8, \"max_bytes\": 16, \"alpha_us\": 1, "
                                        "\"beta_GBps\": 0}") "]}",
     "p.json: $.collectives[0].regimes[0].beta_GBps", "expected a number in"},
    {HEAD "\"collectives\": [" COLL("", "{\"min_bytes\": 8, \"max_bytes\": 16, \"alpha_us\": -100, "
                                        "\"beta_GBps\": 1}") "]}",
     "p.json: $.collectives[0].regimes[0]", "time <= 0"},
    {HEAD "\"collectives\": [" COLL("", "") "]}", "p.json: $.collectives[0].regimes",
     "expected 1 to 64 regimes, found 0"},
    {HEAD "\"collectives\": [" COLL("", R1) ", " COLL("", R1) "]}", "p.json: $.collectives[1]",
     "all_reduce on 8 ranks, 1 node is already given by $.collectives[0]"},
    {HEAD "\"collectives\": [{\"op\": \"all_reduce\", \"ranks\": 8, \"nodes\": 9, \"regimes\": [" R1
          "]}]}",
     "p.json: $.collectives[0].nodes", "expected an integer in [1, 8], found 9"},
    {HEAD "\"collectives\": [{\"op\": \"allreduce\", \"ranks\": 8, \"nodes\": 1, \"regimes\": [" R1
          "]}]}",
     "p.json: $.collectives[0].op", "allreduce"},
    {HEAD "\"collectives\": [" COLL(", \"algo\": \"ring\"", R1) "]}", "p.json: $.collectives[0]",
     "unknown key \"algo\""},
    {HEAD "\"gemm\": {\"bf17\": {}}}", "p.json: $.gemm", "unknown key \"bf17\""},
    {HEAD "\"gemm\": {\"bf16\": {\"peak_tflops\": 989, \"e_max\": 0.8, \"d_half\": 1000}}}",
     "p.json: $.gemm.bf16", "missing required key \"p\""},
    {HEAD "\"copy\": {\"h2d\": {\"regimes\": [" R1 "]}}}", "p.json: $.copy",
     "unknown key \"h2d\""},
    {HEAD "\"launch_us\": 1", "p.json", "malformed JSON at line 1"},
};

static void test_bad_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < SS_ARRAY_LEN(bad); i++) {
        const bad_case *b = &bad[i];
        prof p;
        memset(&p, 0x5a, sizeof p); /* on error the output is left as it was */
        ss_err err;
        ss_err_clear(&err);
        int rc = prof_load_text("p.json", b->text, strlen(b->text), &p, &err);
        if (rc != SS_E_INPUT || strcmp(err.where, b->where) || !strstr(err.msg, b->frag))
            fprintf(stderr, "case %zu: rc %d, %s: %s\n", i, rc, err.where, err.msg);
        assert_int_equal(rc, SS_E_INPUT);
        assert_string_equal(err.where, b->where);
        assert_non_null(strstr(err.msg, b->frag));
        const unsigned char *bytes = (const unsigned char *)&p;
        assert_true(bytes[0] == 0x5a && bytes[sizeof p - 1] == 0x5a);
    }
    prof p;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(prof_load("/nonexistent/profile.json", &p, &err), SS_E_IO);
}

/* The committed profiles load, and hold what their logs measured: the
 * single node's three ring tables on 8 ranks and the two nodes' all_reduce
 * on 16 ranks (tests/data/nccl-tests/). */
static void test_committed_profiles(void **state)
{
    (void)state;
    prof p;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(prof_load(SS_SOURCE_DIR "/calib/profiles/h100-8gpu-together.json", &p, &err),
                     SS_OK);
    assert_int_equal(p.ncoll, 3);
    assert_non_null(prof_coll_find(&p, NCCLT_ALL_REDUCE, 8, 1));
    assert_non_null(prof_coll_find(&p, NCCLT_ALL_GATHER, 8, 1));
    assert_non_null(prof_coll_find(&p, NCCLT_REDUCE_SCATTER, 8, 1));
    assert_string_equal(p.card, "NVIDIA H100 80GB HBM3");
    assert_string_equal(p.nccl, "2.26.2");
    prof_fini(&p);
    assert_int_equal(prof_load(SS_SOURCE_DIR "/calib/profiles/h100-2node-a3mega.json", &p, &err),
                     SS_OK);
    assert_int_equal(p.ncoll, 1);
    const prof_coll *c = prof_coll_find(&p, NCCLT_ALL_REDUCE, 16, 2);
    assert_non_null(c);
    /* h100-2node-16gpu-gcp-a3mega-ztan.txt line 63: 8 GiB in 47535 us; the
     * fit's last regime must be within 2% of it. */
    double t = prof_time_us(c->c.reg, c->c.nreg, 8589934592ull);
    assert_true(fabs(t - 47535) / 47535 < 0.02);
    prof_fini(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_render_refuses_nan), cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_committed_profiles)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
