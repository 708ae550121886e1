/* nccl-tests parser: the two real logs in tests/data/nccl-tests/ (numbers
 * copied from the files, with the line they are on), then small malformed
 * and unusual inputs written to temporary files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "../../sim/io/ncclt.h"

#define DATA SS_SOURCE_DIR "/tests/data/nccl-tests/"
#define FILE8 DATA "h100-8gpu-single-node-together.txt"
#define FILE16 DATA "h100-2node-16gpu-gcp-a3mega-ztan.txt"

static ncclt_log *load_ok(const char *file, const char *hint)
{
    ss_err err;
    ss_err_clear(&err);
    ncclt_log *log = NULL;
    int rc = ncclt_load(file, hint, &log, &err);
    if (rc) fprintf(stderr, "%s: %s\n", err.where, err.msg);
    assert_int_equal(rc, SS_OK);
    return log;
}

/* Text into a fresh temporary file; the name goes into path (room 64). */
static void write_tmp(char *path, const char *text)
{
    snprintf(path, 64, "/tmp/test_ncclt_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t n = strlen(text);
    assert_int_equal(write(fd, text, n), (ssize_t)n);
    close(fd);
}

static ncclt_log *parse_text(const char *text, const char *hint, int want_rc, ss_err *err)
{
    char path[64];
    write_tmp(path, text);
    ss_err_clear(err);
    ncclt_log *log = NULL;
    int rc = ncclt_load(path, hint, &log, err);
    remove(path);
    assert_int_equal(rc, want_rc);
    /* where is "file:line" with the temporary name; keep just ":line". */
    char *colon = strrchr(err->where, ':');
    if (colon) memmove(err->where, colon, strlen(colon) + 1);
    return log;
}

static void expect_error(const char *text, const char *hint, const char *where, const char *frag)
{
    ss_err err;
    ncclt_log *log = parse_text(text, hint, SS_E_INPUT, &err);
    assert_null(log);
    if (where) assert_string_equal(err.where, where);
    if (!strstr(err.msg, frag)) fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, frag));
}

/* h100-8gpu-single-node-together.txt: four tests behind "===== file:"
 * lines, each with "# Collective test starting:", 8 "#  Rank" lines on one
 * host, nThread 1 nGpus 8, nccl-library=22602, 31 rows. */
static void test_single_node_file(void **state)
{
    (void)state;
    ncclt_log *log = load_ok(FILE8, NULL);
    assert_int_equal(ncclt_ntables(log), 4);
    const ncclt_op ops[4] = {NCCLT_ALL_REDUCE, NCCLT_ALL_REDUCE, NCCLT_ALL_GATHER,
                             NCCLT_REDUCE_SCATTER};
    const char *files[4] = {"all_reduce_ring.out", "all_reduce_nvls.out", "all_gather_ring.out",
                            "reduce_scatter_ring.out"};
    const uint32_t first_line[4] = {20, 74, 128, 182};
    for (size_t i = 0; i < 4; i++) {
        const ncclt_info *t = ncclt_table(log, i);
        char label[128];
        snprintf(label, sizeof label, "benchmarks/H100/results/20260305_220944/%s", files[i]);
        assert_int_equal(t->op, ops[i]);
        assert_string_equal(t->label, label);
        assert_int_equal(t->nranks, 8);
        assert_int_equal(t->nnodes, 1);
        assert_int_equal(t->nthreads, 1);
        assert_int_equal(t->ngpus, 8);
        assert_int_equal(t->nccl_version, 22602);
        assert_string_equal(t->device, "NVIDIA H100 80GB HBM3");
        assert_string_equal(t->dtype, "float");
        assert_string_equal(t->redop, ops[i] == NCCLT_ALL_GATHER ? "none" : "sum");
        assert_int_equal(t->root, -1);
        assert_true(t->in_place);
        assert_int_equal(t->nrows, 31);
        assert_int_equal(t->line, first_line[i]);
    }
    assert_null(ncclt_table(log, 4));
    /* line 37: 1048576 262144 float sum -1 44.38 23.63 41.35 0 43.46 24.13 42.23 0 */
    const ncclt_row *r = ncclt_row_at(log, 0, 17);
    assert_int_equal(r->line, 37);
    assert_int_equal(r->bytes, 1048576);
    assert_int_equal(r->count, 262144);
    assert_true(r->out.time_us == 44.38 && r->out.algbw_GBps == 23.63 && r->out.busbw_GBps == 41.35);
    assert_true(r->in.time_us == 43.46 && r->in.algbw_GBps == 24.13 && r->in.busbw_GBps == 42.23);
    assert_int_equal(r->out.wrong, 0);
    /* line 104: 8589934592 2147483648 ... 31372.3 273.81 479.16 0 31327.3 (nvls) */
    r = ncclt_row_at(log, 1, 30);
    assert_int_equal(r->line, 104);
    assert_int_equal(r->bytes, 8589934592ull);
    assert_true(r->out.time_us == 31372.3 && r->in.time_us == 31327.3);
    /* line 128: all_gather's first row, 0 bytes (size rounds to no element
     * per rank) in 0.89 us; line 132: 128 bytes, 34.73 / 47.28 us. */
    r = ncclt_row_at(log, 2, 0);
    assert_int_equal(r->bytes, 0);
    assert_true(r->out.time_us == 0.89);
    r = ncclt_row_at(log, 2, 4);
    assert_int_equal(r->line, 132);
    assert_int_equal(r->bytes, 128);
    assert_true(r->out.time_us == 34.73 && r->in.time_us == 47.28);
    /* line 212: reduce_scatter 8589934592 ... 20753.7 413.90 362.16 0 20783.2 */
    r = ncclt_row_at(log, 3, 30);
    assert_int_equal(r->line, 212);
    assert_true(r->out.time_us == 20753.7 && r->out.algbw_GBps == 413.90 &&
                r->in.time_us == 20783.2);
    assert_null(ncclt_row_at(log, 3, 31));
    ncclt_free(log);
}

/* h100-2node-16gpu-gcp-a3mega-ztan.txt: markdown and an mpirun line, no
 * "test starting" line (the op comes from "all_reduce_perf" in the text),
 * 16 rank lines on two hosts (ztan-mig-235z, ztan-mig-gq73), nGpus 1. */
static void test_two_node_file(void **state)
{
    (void)state;
    ncclt_log *log = load_ok(FILE16, NULL);
    assert_int_equal(ncclt_ntables(log), 1);
    const ncclt_info *t = ncclt_table(log, 0);
    assert_int_equal(t->op, NCCLT_ALL_REDUCE);
    assert_string_equal(t->label, "all_reduce");
    assert_int_equal(t->nranks, 16);
    assert_int_equal(t->nnodes, 2);
    assert_int_equal(t->ngpus, 1);
    assert_int_equal(t->nccl_version, 0);
    assert_int_equal(t->nrows, 31);
    assert_int_equal(t->line, 33);
    /* line 33: 8 2 float sum -1 135.8 0.00 0.00 0 123.5 0.00 0.00 0 */
    const ncclt_row *r = ncclt_row_at(log, 0, 0);
    assert_int_equal(r->bytes, 8);
    assert_true(r->out.time_us == 135.8 && r->in.time_us == 123.5);
    /* line 40: 1024 256 float sum -1 147.1 0.01 0.01 0 123.1 0.01 0.02 0 */
    r = ncclt_row_at(log, 0, 7);
    assert_int_equal(r->line, 40);
    assert_true(r->out.time_us == 147.1 && r->in.busbw_GBps == 0.02);
    /* line 63: 8589934592 2147483648 ... 47535 180.71 338.82 0 47743 */
    r = ncclt_row_at(log, 0, 30);
    assert_int_equal(r->line, 63);
    assert_true(r->out.time_us == 47535 && r->out.busbw_GBps == 338.82 && r->in.time_us == 47743);
    ncclt_free(log);
    /* The file names its test, so a hint does not override it. */
    log = load_ok(FILE16, "all_gather");
    assert_int_equal(ncclt_table(log, 0)->op, NCCLT_ALL_REDUCE);
    ncclt_free(log);
}

#define ROW_AR "     1024   256  float  sum  -1   37.38  0.03  0.05  0   36.55  0.03  0.05  0\n"
#define ROW_AR2 "     2048   512  float  sum  -1   38.34  0.05  0.09  0   37.03  0.06  0.10  0\n"

/* A table with nothing above it that names the op: an error at its first
 * row, unless the caller gives the op. */
static void test_op_from_hint(void **state)
{
    (void)state;
    const char *text = "some prose\n" ROW_AR ROW_AR2;
    expect_error(text, NULL, ":2", "cannot tell which collective");
    ss_err err;
    ncclt_log *log = parse_text(text, "broadcast", SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->op, NCCLT_BROADCAST);
    assert_string_equal(ncclt_table(log, 0)->label, "broadcast");
    assert_int_equal(ncclt_table(log, 0)->nranks, 0); /* no rank lines: unknown */
    assert_int_equal(ncclt_table(log, 0)->nrows, 2);
    ncclt_free(log);
    expect_error(text, "allreduce", NULL, "unknown collective \"allreduce\"");
}

/* Text naming two different tests is ambiguous; the hint settles it. */
static void test_ambiguous_mentions(void **state)
{
    (void)state;
    const char *text = "ran all_reduce_perf and then all_gather_perf\n" ROW_AR;
    expect_error(text, NULL, ":2", "all_reduce_perf and all_gather_perf");
    ss_err err;
    ncclt_log *log = parse_text(text, "all_reduce", SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->op, NCCLT_ALL_REDUCE);
    ncclt_free(log);
}

static void test_bad_rows(void **state)
{
    (void)state;
    const char *head = "# Collective test starting: all_reduce_perf\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s", head,
             "  1024 256 float sum -1 abc 0.03 0.05 0 36.55 0.03 0.05 0\n");
    expect_error(text, NULL, ":2", "column 6 (out-of-place time): expected a non-negative number, "
                                   "found \"abc\"");
    snprintf(text, sizeof text, "%s%s", head, "  1024 256 float sum -1 37.38 0.03 0.05\n");
    expect_error(text, NULL, ":2", "found 8 columns with a root column (-1)");
    snprintf(text, sizeof text, "%s%s", head, "  1024 256 float sum -1 37.38 0.03\n");
    expect_error(text, NULL, ":2", "found 7 columns");
    snprintf(text, sizeof text, "%s%s", head, "  1024 256 float sum -1 37.38 0.03 0.05 x 1 1 1 0\n");
    expect_error(text, NULL, ":2", "column 9 (out-of-place #wrong): expected a count, N/A or "
                                   "an error such as 5e-07");
    snprintf(text, sizeof text, "%s%s%s", head, ROW_AR2, ROW_AR);
    expect_error(text, NULL, ":3", "sizes must not shrink within a table: 1024 bytes after 2048 "
                                   "bytes on line 2");
    snprintf(text, sizeof text, "%s%s%s", head, ROW_AR,
             "  2048 512 float sum -1 38.34 0.05 0.09 0\n");
    expect_error(text, NULL, ":3", "different set of columns than the table's first row (line 2)");
    snprintf(text, sizeof text, "%s%s", head, "  1024 256 float none -1 1 1 1 0 1 1 1 0\n");
    expect_error(text, NULL, ":2", "redop is \"none\", which all_reduce_perf never prints");
    /* A time of 0 (out-of-place or in-place) is no measurement; a size
     * past 2^64 - 1 = 18446744073709551615 would saturate (it read as 0). */
    snprintf(text, sizeof text, "%s%s", head, "  1024 256 float sum -1 0.00 0.00 0.00 0\n");
    expect_error(text, NULL, ":2", "column 6 (out-of-place time): expected a positive time in us, "
                                   "found \"0.00\"");
    snprintf(text, sizeof text, "%s%s", head,
             "  1024 256 float sum -1 37.38 0.03 0.05 0 0 0.03 0.05 0\n");
    expect_error(text, NULL, ":2", "column 10 (in-place time): expected a positive time");
    snprintf(text, sizeof text, "%s%s", head,
             "  18446744073709551616 256 float sum -1 37.38 0.03 0.05 0\n");
    expect_error(text, NULL, ":2", "column 1 (size): expected a byte count below 2^64, found "
                                   "\"18446744073709551616\"");
}

static void test_bad_files(void **state)
{
    (void)state;
    expect_error("# Collective test starting: allgatherv_perf\n", NULL, ":1",
                 "unknown collective test \"allgatherv\"");
    expect_error("# just a comment\n\nprose\n", NULL, NULL, "no nccl-tests table found");
    expect_error("", NULL, NULL, "no nccl-tests table found");
    ss_err err;
    ss_err_clear(&err);
    ncclt_log *log = NULL;
    assert_int_equal(ncclt_parse("t.txt", "# x\0y\n", 6, NULL, &log, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "NUL bytes"));
    assert_null(log);
    ss_err_clear(&err);
    assert_int_equal(ncclt_load("/nonexistent/nccl.txt", NULL, &log, &err), SS_E_IO);
    assert_string_equal(err.where, "/nonexistent/nccl.txt");
}

/* What other nccl-tests versions print: N/A for #wrong and no in-place
 * group (9 columns); no root column (12); CRLF line ends. */
static void test_variants(void **state)
{
    (void)state;
    ss_err err;
    ncclt_log *log = parse_text("# Collective test starting: all_gather_perf\r\n"
                                "  1024 32 float none -1 34.88 0.03 0.03 N/A\r\n"
                                "  2048 64 float none -1 34.64 0.06 0.05 N/A\r\n",
                                NULL, SS_OK, &err);
    const ncclt_info *t = ncclt_table(log, 0);
    assert_int_equal(t->op, NCCLT_ALL_GATHER);
    assert_false(t->in_place);
    assert_int_equal(t->nrows, 2);
    assert_int_equal(ncclt_row_at(log, 0, 1)->out.wrong, -1);
    assert_true(ncclt_row_at(log, 0, 1)->out.time_us == 34.64);
    ncclt_free(log);
    log = parse_text("# Collective test starting: all_reduce_perf\n"
                     "  1024 256 float sum 37.38 0.03 0.05 0 36.55 0.03 0.05 0\n",
                     NULL, SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->root, -1);
    assert_true(ncclt_table(log, 0)->in_place);
    assert_true(ncclt_row_at(log, 0, 0)->in.time_us == 36.55);
    ncclt_free(log);
    /* nccl-tests 2.17+'s -T: a timestamp after the in-place group; 2.19+'s
     * per-iteration timing: four more figures after each group's #wrong
     * (i_min i_max i_p99 i_cv%; src/util.cu writeResultHeader at 2.19.6) */
    log = parse_text("# Collective test starting: all_reduce_perf\n"
                     "  1024 256 float sum -1 37.38 0.03 0.05 0 36.55 0.03 0.05 0"
                     "  2026-01-28 14:50:17\n"
                     "  2048 512 float sum -1 38.34 0.05 0.09 0 35.10 36.00 41.20 2.1"
                     " 37.03 0.06 0.10 0 35.00 36.40 40.80 1.9\n",
                     NULL, SS_OK, &err);
    assert_non_null(log);
    assert_int_equal(ncclt_table(log, 0)->nrows, 2);
    assert_true(ncclt_row_at(log, 0, 0)->in.time_us == 36.55);
    assert_true(ncclt_row_at(log, 0, 1)->out.time_us == 38.34);
    assert_true(ncclt_row_at(log, 0, 1)->in.time_us == 37.03);
    assert_true(ncclt_row_at(log, 0, 1)->in.busbw_GBps == 0.10);
    ncclt_free(log);
    /* nccl-tests of 2019-2021: no root column, and an "error" column of the
     * largest error where #wrong is now (NVIDIA/nccl issue 652's A100 log) */
    log = parse_text("# Collective test starting: all_reduce_perf\n"
                     "           4             1     float     sum    70.95    0.00    0.00  "
                     "5e-07    68.99    0.00    0.00  5e-07\n",
                     NULL, SS_OK, &err);
    assert_non_null(log);
    assert_int_equal(ncclt_row_at(log, 0, 0)->out.wrong, -1);
    assert_true(ncclt_row_at(log, 0, 0)->in.time_us == 68.99);
    ncclt_free(log);
    expect_error("# Collective test starting: all_reduce_perf\n"
                 "  1024 256 float sum -1 37.38 0.03 0.05 -3 36.55 0.03 0.05 0\n",
                 NULL, ":2", "a count, N/A or an error such as 5e-07");
    /* a trailing pair that is no timestamp is no row of any version */
    expect_error("# Collective test starting: all_reduce_perf\n"
                 "  1024 256 float sum -1 37.38 0.03 0.05 0 36.55 0.03 0.05 0 x y\n",
                 NULL, ":2", "found 15 columns");
}

/* -d all prints one run per type without a '#' line between: a new table
 * per type, in one section, so both get the section's label and the labels
 * are numbered. Rank lines and the op carry over to the second table. */
static void test_type_split(void **state)
{
    (void)state;
    ss_err err;
    ncclt_log *log = parse_text("# ===== file: run.out =====\n"
                                "# Collective test starting: all_reduce_perf\n"
                                "#  Rank  0 Group  0 Pid 1 on hostA device  0 [0x1] GPU\n"
                                "#  Rank  1 Group  0 Pid 1 on hostB device  0 [0x1] GPU\n"
                                "  1024 256 float sum -1 37.38 0.03 0.05 0 36.55 0.03 0.05 0\n"
                                "  1024 512 half sum -1 30.00 0.03 0.05 0 31.00 0.03 0.05 0\n"
                                "# ===== file: other.out =====\n"
                                "# Collective test starting: broadcast_perf\n"
                                "  1024 256 float none 0 20.00 0.05 0.05 0 21.00 0.05 0.05 0\n",
                                NULL, SS_OK, &err);
    assert_int_equal(ncclt_ntables(log), 3);
    assert_string_equal(ncclt_table(log, 0)->label, "run.out#1");
    assert_string_equal(ncclt_table(log, 1)->label, "run.out#2");
    assert_string_equal(ncclt_table(log, 1)->dtype, "half");
    assert_int_equal(ncclt_table(log, 1)->op, NCCLT_ALL_REDUCE);
    assert_int_equal(ncclt_table(log, 1)->nranks, 2);
    assert_int_equal(ncclt_table(log, 1)->nnodes, 2);
    assert_string_equal(ncclt_table(log, 1)->device, "GPU");
    /* The next file starts afresh: no rank lines there. */
    assert_string_equal(ncclt_table(log, 2)->label, "other.out");
    assert_int_equal(ncclt_table(log, 2)->op, NCCLT_BROADCAST);
    assert_int_equal(ncclt_table(log, 2)->root, 0);
    assert_int_equal(ncclt_table(log, 2)->nranks, 0);
    ncclt_free(log);
}

/* Launchers' marks around the lines: Open MPI's --tag-output tags every
 * write, so a row can carry three tags (the 1 MiB row of AWS's p5 log,
 * KeitaW/p5-nccl-test-2024-07-19 nccl-test-output-v2.22.3-1.log at
 * 1c78584b, verbatim; its rank lines cut to two ranks on two hosts), and
 * Slurm's srun --label puts "N: " first. Both come off; the rows read as
 * the plain ones do, and the tagged rank lines still count ranks and
 * hosts. */
static void test_launcher_marks(void **state)
{
    (void)state;
    ss_err err;
    ncclt_log *log = parse_text(
        "[1,0]<stdout>:#  Rank  0 Group  0 Pid     25 on test-nccl-worker-0 device  0 [0x53] "
        "NVIDIA H100 80GB HBM3\n"
        "[1,1]<stdout>:test-nccl-worker-0:26:26 [1] NCCL INFO NCCL version 2.22.3+cuda12.2\n"
        "[1,0]<stdout>:#  Rank  1 Group  0 Pid     25 on test-nccl-worker-1 device  0 [0x53] "
        "NVIDIA H100 80GB HBM3\n"
        "[1,0]<stdout>:     1048576        262144     float     sum      -1[1,0]<stdout>:    "
        "138.1    7.59   14.24      0[1,0]<stdout>:    122.1    8.59   16.10      0\n",
        "all_reduce", SS_OK, &err);
    assert_non_null(log);
    assert_int_equal(ncclt_ntables(log), 1);
    assert_int_equal(ncclt_table(log, 0)->nranks, 2);
    assert_int_equal(ncclt_table(log, 0)->nnodes, 2);
    const ncclt_row *r = ncclt_row_at(log, 0, 0);
    assert_true(r->bytes == 1048576 && r->out.time_us == 138.1 && r->in.time_us == 122.1);
    ncclt_free(log);
    log = parse_text("0: # Collective test starting: all_gather_perf\n"
                     "0: " ROW_AR "0: " ROW_AR2, NULL, SS_OK, &err);
    assert_non_null(log);
    assert_int_equal(ncclt_table(log, 0)->op, NCCLT_ALL_GATHER);
    assert_int_equal(ncclt_table(log, 0)->nrows, 2);
    ncclt_free(log);
}

/* NCCL's banner names the library where nccl-tests' header does not:
 * bare (NCCL_DEBUG=VERSION, as the Dell XE9680 log of this corpus prints
 * it) or after an INFO prefix; "nccl-library=" wins where both appear. */
static void test_nccl_banner(void **state)
{
    (void)state;
    ss_err err;
    ncclt_log *log = parse_text("NCCL version 2.26.2+cuda12.8\n"
                                "# Collective test starting: all_reduce_perf\n" ROW_AR,
                                NULL, SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->nccl_version, 22602);
    ncclt_free(log);
    log = parse_text("host:25:25 [0] NCCL INFO NCCL version 2.22.3+cuda12.2\n"
                     "# Collective test starting: all_reduce_perf\n" ROW_AR,
                     NULL, SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->nccl_version, 22203);
    ncclt_free(log);
    log = parse_text("# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
                     "NCCL version 2.26.2+cuda12.8\n"
                     "# Collective test starting: all_reduce_perf\n" ROW_AR,
                     NULL, SS_OK, &err);
    assert_int_equal(ncclt_table(log, 0)->nccl_version, 22902);
    ncclt_free(log);
}

/* Every op name maps back to itself; unknown names do not map. */
static void test_op_names(void **state)
{
    (void)state;
    for (int i = 0; i < NCCLT_NOPS; i++) {
        ncclt_op op;
        assert_true(ncclt_op_from_name(ncclt_op_names[i], &op));
        assert_int_equal(op, i);
    }
    ncclt_op op = NCCLT_REDUCE;
    assert_false(ncclt_op_from_name("all_to_all", &op));
    assert_int_equal(op, NCCLT_REDUCE);
    ncclt_free(NULL);
    assert_int_equal(ncclt_ntables(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_node_file), cmocka_unit_test(test_two_node_file),
        cmocka_unit_test(test_op_from_hint),     cmocka_unit_test(test_ambiguous_mentions),
        cmocka_unit_test(test_bad_rows),         cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_variants),         cmocka_unit_test(test_type_split),
        cmocka_unit_test(test_op_names),         cmocka_unit_test(test_launcher_marks),
        cmocka_unit_test(test_nccl_banner)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
