/* validate's statistics on rows made by hand: the median of odd and even
 * counts, signed vs absolute medians, per-source grouping (step time and
 * memory apart, a row with no step time left out of the step figures), the
 * classes across sources, and
 * the thresholds. Every expected median is worked out in the comments from
 * the rows' errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/run/validate.h"

static void test_median(void **state)
{
    (void)state;
    double odd[] = {5, -1, 3};          /* sorted -1 3 5: the middle one */
    double even[] = {4, -2, 10, 1};     /* sorted -2 1 4 10: (1 + 4) / 2 */
    double one[] = {-7};
    assert_float_equal(val_median(odd, 3), 3.0, 0);
    assert_float_equal(val_median(even, 4), 2.5, 0);
    assert_float_equal(val_median(one, 1), -7.0, 0);
    assert_float_equal(val_median(NULL, 0), 0.0, 0);
    /* (predicted - measured) / measured in percent */
    assert_float_equal(val_err_pct(2.0, 1.5), -25.0, 1e-12);
    assert_float_equal(val_err_pct(4.0, 5.0), 25.0, 1e-12);
}

/* A row whose step error is `step` percent (measured 1 s), and memory
 * errors `alloc` / `resv` percent when has_* (measured 10 GiB). */
static val_row row(const char *source, bool has_step, double step, bool has_alloc, double alloc,
                   bool has_resv, double resv)
{
    val_row w;
    memset(&w, 0, sizeof w);
    snprintf(w.source, sizeof w.source, "%s", source);
    w.step = (val_fig){has_step, 1.0, 1.0 + step / 100, step};
    w.alloc = (val_fig){has_alloc, 10.0, 10.0 * (1 + alloc / 100), alloc};
    w.reserved = (val_fig){has_resv, 10.0, 10.0 * (1 + resv / 100), resv};
    return w;
}

/* A report over rows made by hand, its statistics computed; stats_free
 * releases what val_stats allocated (the rows are the caller's). */
static val_report stats_of(val_row *rows, size_t n)
{
    val_report r;
    memset(&r, 0, sizeof r);
    r.rows = rows;
    r.nrows = n;
    assert_int_equal(val_stats(&r, NULL), SS_OK);
    return r;
}

static void stats_free(val_report *r)
{
    free(r->groups);
    free(r->classes);
    free(r->seqs);
}

static void test_groups(void **state)
{
    (void)state;
    val_row rows[] = {
        row("a", true, -30, false, 0, false, 0),
        row("b", true, 8, true, -4, true, 2),
        row("a", true, 10, false, 0, false, 0),
        row("a", true, 4, false, 0, false, 0),
        row("c", false, 0, true, 6, false, 0),
        row("b", true, -2, false, 0, true, -1),
    };
    val_report r = stats_of(rows, sizeof rows / sizeof rows[0]);
    assert_int_equal(r.ngroups, 3);
    /* first-seen order: a, b, c */
    assert_string_equal(r.groups[0].source, "a");
    assert_string_equal(r.groups[1].source, "b");
    assert_string_equal(r.groups[2].source, "c");
    /* a: step -30, 10, 4: signed median 4; |.| 30, 10, 4: median 10 */
    assert_int_equal(r.groups[0].step.n, 3);
    assert_float_equal(r.groups[0].step.med_signed, 4.0, 1e-12);
    assert_float_equal(r.groups[0].step.med_abs, 10.0, 1e-12);
    assert_int_equal(r.groups[0].mem.n, 0);
    /* b: step 8, -2: signed (-2 + 8) / 2 = 3, |.| (2 + 8) / 2 = 5;
     * memory -4, 2, -1: signed -1, |.| 4, 2, 1: 2 */
    assert_int_equal(r.groups[1].step.n, 2);
    assert_float_equal(r.groups[1].step.med_signed, 3.0, 1e-12);
    assert_float_equal(r.groups[1].step.med_abs, 5.0, 1e-12);
    assert_int_equal(r.groups[1].mem.n, 3);
    assert_float_equal(r.groups[1].mem.med_signed, -1.0, 1e-12);
    assert_float_equal(r.groups[1].mem.med_abs, 2.0, 1e-12);
    /* c: memory only */
    assert_int_equal(r.groups[2].step.n, 0);
    assert_int_equal(r.groups[2].mem.n, 1);
    assert_float_equal(r.groups[2].mem.med_signed, 6.0, 1e-12);
    /* all: step -30, 8, 10, 4, -2 (c has none): sorted -30 -2 4 8 10,
     * signed 4; |.| 2 4 8 10 30: 8. memory -4, 2, 6, -1: sorted
     * -4 -1 2 6: signed 0.5; |.| 1 2 4 6: 3 */
    assert_int_equal(r.all.step.n, 5);
    assert_float_equal(r.all.step.med_signed, 4.0, 1e-12);
    assert_float_equal(r.all.step.med_abs, 8.0, 1e-12);
    assert_int_equal(r.all.mem.n, 4);
    assert_float_equal(r.all.mem.med_signed, 0.5, 1e-12);
    assert_float_equal(r.all.mem.med_abs, 3.0, 1e-12);
    assert_string_equal(r.all.source, "");
    /* thresholds: overall step 8% <= 10 and |4%| <= 5, memory 3% and 0.5%;
     * source a's 10% <= 20: all hold */
    assert_true(val_pass(&r));
    /* a fourth row for a at -50%: a's |.| 50 30 10 4 -> 20, still <= 20;
     * but overall step |.| 2 4 8 10 30 50 -> 9 and signed -30 -2 4 8 10
     * -50 -> (-2 + 4) / 2 = 1: pass; a fifth at -60 makes a's median 30 */
    free(r.groups);
    r.groups = NULL;
    val_row more[8];
    memcpy(more, rows, sizeof rows);
    more[6] = row("a", true, -50, false, 0, false, 0);
    r.rows = more;
    r.nrows = 7;
    assert_int_equal(val_stats(&r, NULL), SS_OK);
    assert_float_equal(r.groups[0].step.med_abs, 20.0, 1e-12);
    assert_float_equal(r.all.step.med_abs, 9.0, 1e-12);
    assert_float_equal(r.all.step.med_signed, 1.0, 1e-12);
    assert_true(val_pass(&r));
    more[7] = row("a", true, -60, false, 0, false, 0);
    r.nrows = 8;
    assert_int_equal(val_stats(&r, NULL), SS_OK);
    assert_float_equal(r.groups[0].step.med_abs, 30.0, 1e-12); /* 60 50 30 10 4 */
    assert_false(val_pass(&r));
    stats_free(&r);
}

/* Classes cut across sources: the rows of one device, runtime and kernel
 * set whatever their source, sorted by name. */
static void test_classes(void **state)
{
    (void)state;
    val_row rows[] = {
        row("a", true, -20, false, 0, false, 0), row("b", true, -10, true, 4, false, 0),
        row("a", true, 2, false, 0, false, 0),   row("c", true, -14, false, 0, false, 0),
    };
    const char *cls[] = {"H100 fsdp eager", "H100 fsdp eager", "A100 fsdp eager", "H100 fsdp eager"};
    for (int i = 0; i < 4; i++) snprintf(rows[i].cls, sizeof rows[i].cls, "%s", cls[i]);
    val_report r = stats_of(rows, 4);
    assert_int_equal(r.ngroups, 3);
    assert_int_equal(r.nclasses, 2);
    /* sorted: A100 first, though its row came third */
    assert_string_equal(r.classes[0].source, "A100 fsdp eager");
    assert_int_equal(r.classes[0].step.n, 1);
    assert_float_equal(r.classes[0].step.med_signed, 2.0, 1e-12);
    /* H100: -20 (a), -10 (b), -14 (c): signed median -14, |.| 14; memory 4 */
    assert_string_equal(r.classes[1].source, "H100 fsdp eager");
    assert_int_equal(r.classes[1].step.n, 3);
    assert_float_equal(r.classes[1].step.med_signed, -14.0, 1e-12);
    assert_float_equal(r.classes[1].step.med_abs, 14.0, 1e-12);
    assert_int_equal(r.classes[1].mem.n, 1);
    char *j = val_json(&r);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"class\":\t\"H100 fsdp eager\""));
    free(j);
    stats_free(&r);
}

/* A signed median far from zero fails on its own, though |error| is small
 * enough: every row 6% too slow. */
static void test_signed_threshold(void **state)
{
    (void)state;
    val_row rows[] = {row("a", true, 6, false, 0, false, 0), row("b", true, 7, false, 0, false, 0),
                      row("c", true, 6, false, 0, false, 0)};
    val_report r = stats_of(rows, 3);
    assert_float_equal(r.all.step.med_abs, 6.0, 1e-12);
    assert_float_equal(r.all.step.med_signed, 6.0, 1e-12);
    assert_false(val_pass(&r));
    char *j = val_json(&r);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"pass\":\tfalse"));
    free(j);
    stats_free(&r);
}

/* The split by sequence, on rows made from two known lines: measured time
 * per token 10 us + 2 ns x seq, predicted 9 us + 1 ns x seq (1000 tokens a
 * step): the rest -10%, the context -50%, exact for any three lengths.
 * Rows of another model, a row without a step time, and a model at only
 * two lengths make no group. */
static val_row seq_row(const char *key, uint64_t seq, bool has_step)
{
    val_row w;
    memset(&w, 0, sizeof w);
    snprintf(w.source, sizeof w.source, "s");
    snprintf(w.seq_key, sizeof w.seq_key, "%s", key);
    w.seq = seq;
    w.tokens = 1000;
    double m = 1000 * (10e-6 + 2e-9 * (double)seq), p = 1000 * (9e-6 + 1e-9 * (double)seq);
    w.step = (val_fig){has_step, m, p, 100 * (p - m) / m};
    return w;
}

static void test_seq_split(void **state)
{
    (void)state;
    val_row rows[] = {seq_row("k", 1024, true), seq_row("two", 512, true), seq_row("k", 4096, true),
                      seq_row("k", 8192, false), seq_row("two", 2048, true), seq_row("k", 16384, true),
                      seq_row("k", 1024, true)};
    val_report r = stats_of(rows, 7);
    assert_int_equal(r.nseqs, 1);
    const val_seq *q = &r.seqs[0];
    assert_string_equal(q->label, "k");
    assert_int_equal(q->n, 4); /* 1024 twice, 4096, 16384; not the row without a step */
    assert_int_equal(q->seq_min, 1024);
    assert_int_equal(q->seq_max, 16384);
    assert_float_equal(q->rest_meas, 10e-6, 1e-15);
    assert_float_equal(q->ctx_pred, 1e-9, 1e-18);
    assert_float_equal(q->rest_err_pct, -10.0, 1e-6);
    assert_float_equal(q->ctx_err_pct, -50.0, 1e-6);
    char *j = val_json(&r);
    assert_non_null(j);
    assert_non_null(strstr(j, "\"context_error_pct\":\t-50"));
    free(j);
    stats_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_median), cmocka_unit_test(test_groups),
                                       cmocka_unit_test(test_classes),
                                       cmocka_unit_test(test_signed_threshold),
                                       cmocka_unit_test(test_seq_split)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
