/* The harness's outputs read back by calib's readers (ctest harness.formats).
 *
 * The measurement file (meas.h) must load through calib/fit/mfile.h, which
 * rejects unknown keys; the nccl-tests text (nctx.h) must parse through
 * sim/io/ncclt.h and match nccl-tests byte for byte: the expected header
 * and row below are copied from a real all_reduce_perf log, 16 x H100
 * (shared/validation/nccl-tests/h100-2node-16gpu-gcp-a3mega-ztan.txt, the
 * 8-byte row). No GPU is involved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../fit/mfile.h"
#include "meas.h"
#include "nctx.h"

static void tmp_path(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "/tmp/test_hx_formats.%ld.%s", (long)getpid(), what);
}

/* Every kind of entry the harness writes, loaded strictly. */
static void test_measurement_file(void **state)
{
    (void)state;
    meas_hdr h = {"NVIDIA H200", "580.159.03 (CUDA 13.0)", "13.0, cuBLAS 13.1.0", "2.28.9"};
    meas *m = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(meas_new(&m, &h, &err), SS_OK);
    assert_true(meas_empty(m));
    char dev[1024];
    snprintf(dev, sizeof dev, "%s/topologies/devices/h200-sxm-141gb.json", SS_SOURCE_DIR);
    assert_int_equal(meas_peaks_from(m, dev, &err), SS_OK);
    assert_int_equal(meas_gemm(m, "bf16", 4096, 4096, 8192, 250.0, 1099.5, &err), SS_OK);
    assert_int_equal(meas_gemm(m, "fp8", 8192, 8192, 8192, 700.0, 1570.8, &err), SS_OK);
    assert_int_equal(meas_copy(m, "h2d", true, true, 1 << 20, 25.0, &err), SS_OK);
    assert_int_equal(meas_copy(m, "d2d", false, false, 1 << 20, 1.5, &err), SS_OK);
    assert_int_equal(meas_copy(m, "d2h", true, false, 4096, 9.0, &err), SS_OK);
    assert_int_equal(meas_launch(m, 4.5, &err), SS_OK);
    assert_int_equal(meas_coll(m, "all_reduce", 8, 1, 1 << 20, 40.0, &err), SS_OK);
    assert_int_equal(meas_coll(m, "alltoall", 8, 1, 8192, 30.0, &err), SS_OK);
    assert_false(meas_empty(m));
    char path[256];
    tmp_path(path, sizeof path, "meas.json");
    assert_int_equal(meas_write(m, path, &err), SS_OK);
    meas_free(m);

    mf_data d;
    int rc = mf_load(path, &d, &err);
    if (rc) fail_msg("%s: %s", err.where, err.msg);
    remove(path);
    assert_string_equal(d.card, "NVIDIA H200");
    assert_string_equal(d.nccl, "2.28.9");
    assert_non_null(d.date);
    assert_true(d.peak_tflops[SPEC_DT_BF16] == 989.4);
    assert_int_equal(d.ngemm, 2);
    assert_int_equal(d.gemm[0].dtype, SPEC_DT_BF16);
    assert_true(d.gemm[0].m == 4096 && d.gemm[0].n == 4096 && d.gemm[0].k == 8192);
    assert_true(d.gemm[0].time_us == 250.0 && d.gemm[0].tflops == 1099.5);
    assert_int_equal(d.gemm[1].dtype, SPEC_DT_FP8);
    assert_int_equal(d.ncopy, 3);
    assert_int_equal(d.copy[0].kind, PROF_COPY_H2D_PINNED);
    assert_int_equal(d.copy[1].kind, PROF_COPY_D2D);
    assert_int_equal(d.copy[2].kind, PROF_COPY_D2H_PAGEABLE);
    assert_true(d.launch_us == 4.5);
    assert_int_equal(d.ncoll, 2);
    assert_int_equal(d.coll[0].op, NCCLT_ALL_REDUCE);
    assert_true(d.coll[0].ranks == 8 && d.coll[0].nodes == 1 && d.coll[0].bytes == 1 << 20);
    assert_int_equal(d.coll[1].op, NCCLT_ALLTOALL);
    mf_fini(&d);
}

static void test_measurement_errors(void **state)
{
    (void)state;
    meas_hdr h = {"x", "y", "z", "w"};
    meas *m = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(meas_new(&m, &h, &err), SS_OK);
    char scn[1024];
    snprintf(scn, sizeof scn, "%s/scenarios/seed002/zero0_ddp.json", SS_SOURCE_DIR);
    assert_int_equal(meas_peaks_from(m, scn, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "peak_tflops"));
    ss_err_clear(&err);
    assert_int_equal(meas_write(m, "/nonexistent-dir/x.json", &err), SS_E_IO);
    meas_free(m);
}

/* The column header and the 8-byte row of a real log, reproduced exactly. */
static void test_nccl_tests_bytes(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    nctx_run run = {NCTX_AR, 1, 16, 8, 8589934592ull, 2, 5, 20, true, ""};
    nctx_head(f, &run);
    nctx_counts c = nctx_counts_of(NCTX_AR, 8, 16);
    double us[2] = {135.8, 123.5};
    long long wrong[2] = {0, 0};
    nctx_row(f, NCTX_AR, &c, us, wrong, 16);
    fclose(f);
    assert_non_null(strstr(buf, "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) "
                                "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"));
    assert_non_null(strstr(buf, "#                                                              "
                                "out-of-place                       in-place          \n"));
    assert_non_null(strstr(buf, "#       size         count      type   redop    root     time   "
                                "algbw   busbw #wrong     time   algbw   busbw #wrong\n"));
    assert_non_null(strstr(buf, "#        (B)    (elements)                               (us)  "
                                "(GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"));
    assert_non_null(strstr(buf, "           8             2     float     sum      -1    135.8    "
                                "0.00    0.00      0    123.5    0.00    0.00      0\n"));
    free(buf);
}

/* A two-node all_gather and a one-node alltoall block, parsed by ncclt. */
static void test_nccl_tests_parse(void **state)
{
    (void)state;
    char *buf = NULL, lines[4096] = "";
    size_t len = 0, at = 0;
    for (int r = 0; r < 16; r++)
        at += (size_t)nctx_rank_line(lines + at, sizeof lines - at, r, 100 + r, r < 8 ? "nodeA" : "nodeB",
                                     r % 8, "0000:19:00", "NVIDIA H200");
    FILE *f = open_memstream(&buf, &len);
    nctx_run run = {NCTX_AG, 1, 16, 1024, 4096, 2, 5, 20, true, lines};
    nctx_head(f, &run);
    double bw = 0;
    for (size_t s = 1024; s <= 4096; s *= 2) {
        nctx_counts c = nctx_counts_of(NCTX_AG, s, 16);
        double us[2] = {10.24 * (double)s / 1024, 11.0};
        long long wrong[2] = {0, 0};
        bw += nctx_row(f, NCTX_AG, &c, us, wrong, 16);
    }
    nctx_tail(f, NCTX_AG, 0, bw / 6);
    run = (nctx_run){NCTX_A2A, 1, 1, 64, 64, 2, 5, 20, true, "#  Rank  0 Group  0 Pid   7 on h device  0 [0000:19:00] G\n"};
    nctx_head(f, &run);
    nctx_counts c = nctx_counts_of(NCTX_A2A, 64, 1);
    double us[2] = {5.0, 6.0};
    long long wrong[2] = {0, -1};
    nctx_row(f, NCTX_A2A, &c, us, wrong, 1);
    nctx_tail(f, NCTX_A2A, 0, 0);
    fclose(f);

    ncclt_log *log = NULL;
    ss_err err;
    ss_err_clear(&err);
    int rc = ncclt_parse("coll.txt", buf, len, NULL, &log, &err);
    if (rc) fail_msg("%s: %s\n%s", err.where, err.msg, buf);
    assert_int_equal(ncclt_ntables(log), 2);
    const ncclt_info *t = ncclt_table(log, 0);
    assert_int_equal(t->op, NCCLT_ALL_GATHER);
    assert_int_equal(t->nranks, 16);
    assert_int_equal(t->nnodes, 2);
    assert_int_equal(t->nrows, 3);
    assert_true(t->in_place);
    assert_string_equal(t->dtype, "float");
    assert_string_equal(t->redop, "none");
    assert_string_equal(t->device, "NVIDIA H200");
    const ncclt_row *r = ncclt_row_at(log, 0, 2);
    assert_true(r->bytes == 4096 && r->count == 64);  /* all_gather: count per rank */
    assert_true(r->out.time_us == 40.96);
    assert_true(r->out.algbw_GBps == 0.1);            /* 4096 B / 40.96 us = 0.1 GB/s */
    assert_true(r->out.busbw_GBps == 0.09);           /* x 15/16 = 0.09375, printed 0.09 */
    const ncclt_info *a = ncclt_table(log, 1);
    assert_int_equal(a->op, NCCLT_ALLTOALL);
    assert_int_equal(a->nranks, 1);
    assert_int_equal(ncclt_row_at(log, 1, 0)->in.wrong, -1); /* in-place alltoall: N/A */
    ncclt_free(log);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measurement_file),
        cmocka_unit_test(test_measurement_errors),
        cmocka_unit_test(test_nccl_tests_bytes),
        cmocka_unit_test(test_nccl_tests_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
