/* The network model against real nccl-tests tables, with the shipped
 * topologies' default parameters (nothing fitted to these tables).
 *
 * Data: tests/data/nccl-tests/h100-8gpu-single-node-together.txt (Together
 * AI's nccl-tests on one 8x H100 HGX node, NCCL 2.26.2; the file names say
 * the algorithm was forced to ring or nvls) and
 * tests/data/nccl-tests/h100-2node-16gpu-gcp-a3mega-ztan.txt (2 x 8 H100 on
 * Google Cloud a3-mega, all_reduce). Their headers give the sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../sim/io/profile.h"
#include "../../sim/run/coll.h"

#define ONE "tests/data/nccl-tests/h100-8gpu-single-node-together.txt"
#define TWO "tests/data/nccl-tests/h100-2node-16gpu-gcp-a3mega-ztan.txt"
#define TABLE "benchmarks/H100/results/20260305_220944/"

static void path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", SS_SOURCE_DIR, rel);
}

/* Compare the table `label` of `log` on topology `topo` with `algo` forced;
 * returns the table (the caller finishes it). */
static coll_table compare_with(const char *topo_file, const char *log, const char *label,
                               algo_kind algo, const prof *pf)
{
    char t[1024], l[1024];
    path(t, sizeof t, topo_file);
    path(l, sizeof l, log);
    net_opts o = {.algo = algo, .proto = ALGO_P_AUTO, .profile = pf};
    coll_table *tabs = NULL;
    size_t n = 0;
    ss_err err;
    ss_err_clear(&err);
    if (coll_compare(t, &o, l, NULL, label, 0, 0, &tabs, &n, &err))
        fail_msg("%s: %s", err.where, err.msg);
    assert_int_equal(n, 1);
    coll_table tab = tabs[0];
    free(tabs);
    print_message("%-60s median |error| (>= 1 MiB, %u sizes): %5.1f%%\n", tab.label, tab.nmedian,
                  100.0 * tab.median_abs_err);
    return tab;
}

static coll_table compare(const char *topo_file, const char *log, const char *label,
                          algo_kind algo)
{
    return compare_with(topo_file, log, label, algo, NULL);
}

/* The ring tables: median |error| of time <= 10% over the 14 sizes from
 * 1 MiB to 8 GiB (the bar), and every size >= 64 MiB (bandwidth
 * bound) within 12%. */
static void check_ring(const char *file, double bar)
{
    char label[256];
    snprintf(label, sizeof label, TABLE "%s", file);
    coll_table t = compare("topologies/h100x8-hgx.json", ONE, label, ALGO_RING);
    assert_int_equal(t.nranks, 8);
    assert_int_equal(t.nmedian, 14);
    assert_true(t.median_abs_err <= bar);
    for (uint32_t i = 0; i < t.nrows; i++) {
        assert_int_equal(t.rows[i].algo, ALGO_RING);
        if (t.rows[i].bytes >= (64u << 20)) assert_true(fabs(t.rows[i].rel_err) <= 0.12);
    }
    coll_table_fini(&t);
}

static void test_all_reduce_ring(void **state)
{
    (void)state;
    check_ring("all_reduce_ring.out", 0.10);
}

static void test_all_gather_ring(void **state)
{
    (void)state;
    check_ring("all_gather_ring.out", 0.10);
}

static void test_reduce_scatter_ring(void **state)
{
    (void)state;
    check_ring("reduce_scatter_ring.out", 0.10);
}

/* NVLS all-reduce: the model moves (1 + 1/n) of the payload over each
 * GPU's NVLink at the switch's reduction rate (0.85 of the link, NCCL's
 * nvlsEfficiency for Hopper) with the Simple protocol only, as NCCL. Held
 * to what that gives: median within 12%, and from 1 GiB within 5% (479
 * GB/s bus bandwidth measured at 8 GiB, 487 modelled; without the switch
 * rate the model was 16-36% fast at every size). */
static void test_all_reduce_nvls(void **state)
{
    (void)state;
    coll_table t = compare("topologies/h100x8-hgx.json", ONE, TABLE "all_reduce_nvls.out",
                           ALGO_NVLS);
    assert_true(t.median_abs_err <= 0.12);
    for (uint32_t i = 0; i < t.nrows; i++) {
        if (t.rows[i].bytes >= (1u << 20)) assert_int_equal(t.rows[i].proto, ALGO_P_SIMPLE);
        if (t.rows[i].bytes >= (1u << 30)) assert_true(fabs(t.rows[i].rel_err) <= 0.05);
    }
    coll_table_fini(&t);
}

/* Two a3-mega nodes, the tuner's choice among what the topology's NCCL
 * profile allows (GCP's TCPXO profile: NCCL_ALGO=Ring,Tree,
 * NCCL_PROTO=Simple; topologies/gcp-a3mega.json, DECISIONS 171). Up to
 * 512 B the Simple ring's latency is the log's 123-136 us within 10%
 * (125.6 us); from 1 GiB the Simple tree runs within 12% (it carries more
 * than the ring can through 8 x 200 Gb/s NICs). In between, this
 * machine's GPUDirect-TCPXO transport is up to 3x slower than any model
 * of its stated NICs, so the median over >= 1 MiB is far off with default
 * parameters: printed, not asserted. A profile fitted by shardsim-calib
 * replaces the defaults for such machines. */
static void test_two_nodes(void **state)
{
    (void)state;
    coll_table t = compare("topologies/gcp-a3mega.json", TWO, NULL, ALGO_AUTO);
    assert_int_equal(t.nranks, 16);
    assert_int_equal(t.nodes, 2);
    uint32_t small = 0, big = 0;
    for (uint32_t i = 0; i < t.nrows; i++) {
        assert_int_equal(t.rows[i].proto, ALGO_P_SIMPLE);
        if (t.rows[i].bytes <= 512) {
            assert_int_equal(t.rows[i].algo, ALGO_RING);
            assert_true(fabs(t.rows[i].rel_err) <= 0.10);
            small++;
        } else if (t.rows[i].bytes >= (1u << 30)) {
            assert_int_equal(t.rows[i].algo, ALGO_TREE);
            assert_true(fabs(t.rows[i].rel_err) <= 0.12);
            big++;
        }
    }
    assert_int_equal(small, 7);
    assert_int_equal(big, 4);
    coll_table_fini(&t);
}

/* With the profile shardsim-calib fitted from this log
 * (calib/profiles/h100-2node-a3mega.json; its leave-one-size-out error is
 * 1%), the same comparison lands within 5%: the plumbing from profile to
 * network is whole. Not an independent validation (same data). */
static void test_two_nodes_calibrated(void **state)
{
    (void)state;
    char f[1024];
    path(f, sizeof f, "calib/profiles/h100-2node-a3mega.json");
    prof pf;
    ss_err err;
    ss_err_clear(&err);
    if (prof_load(f, &pf, &err)) fail_msg("%s", err.msg);
    coll_table t = compare_with("topologies/gcp-a3mega.json", TWO, NULL, ALGO_AUTO, &pf);
    assert_true(t.median_abs_err <= 0.05);
    coll_table_fini(&t);
    prof_fini(&pf);
}

/* A log of all of nccl-tests' tests (what scripts that run every *_perf
 * binary collect): the tables of tests the model costs are compared, a
 * hypercube_perf table says why it is not and sinks nothing, and naming
 * it, or a log of nothing else, is an error. The a3-mega log's real table
 * comes first; the hypercube table after it is written here in nccl-tests'
 * layout (its figures are placeholders: only its test name matters). */
static const char hypercube[] =
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: "
    "20 agg iters: 1 validation: 1 graph: 0\n"
    "# Collective test starting: hypercube_perf\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time "
    "  algbw   busbw #wrong\n"
    "     1048576         16384     float    none      -1    40.00   24.58   24.58      0    40.00 "
    "  24.58   24.58      0\n"
    "     2097152         32768     float    none      -1    70.00   28.10   28.10      0    70.00 "
    "  28.10   28.10      0\n";

static int compare_text(const char *text, const char *label, coll_table **tabs, size_t *n,
                        ss_err *err)
{
    char t[1024], log[] = "/tmp/shardsim-coll-XXXXXX";
    path(t, sizeof t, "topologies/gcp-a3mega.json");
    int fd = mkstemp(log);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) fail_msg("cannot make a scratch log");
    fputs(text, f);
    fclose(f);
    net_opts o = {.algo = ALGO_AUTO, .proto = ALGO_P_AUTO};
    int rc = coll_compare(t, &o, log, NULL, label, 16, 2, tabs, n, err);
    remove(log);
    return rc;
}

static void test_whole_suite_log(void **state)
{
    (void)state;
    char two[1024];
    path(two, sizeof two, TWO);
    FILE *f = fopen(two, "r");
    if (!f) fail_msg("cannot read %s", two);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - sizeof hypercube - 1, f);
    fclose(f);
    memcpy(text + len, hypercube, sizeof hypercube);
    coll_table *tabs = NULL;
    size_t n = 0;
    ss_err err;
    ss_err_clear(&err);
    if (compare_text(text, NULL, &tabs, &n, &err)) fail_msg("%s: %s", err.where, err.msg);
    assert_int_equal(n, 2);
    assert_null(tabs[0].skipped);
    assert_true(tabs[0].nrows > 20 && tabs[0].nmedian > 0);
    assert_non_null(tabs[1].skipped);
    assert_non_null(strstr(tabs[1].skipped, "hypercube_perf"));
    assert_int_equal(tabs[1].nrows, 0);
    net_opts o = {.algo = ALGO_AUTO, .proto = ALGO_P_AUTO};
    char *s = NULL;
    assert_int_equal(coll_format(&tabs[1], "a3", &o, &s, NULL), SS_OK);
    assert_non_null(strstr(s, "# shardsim coll: table hypercube not compared: hypercube_perf"));
    free(s);
    for (size_t i = 0; i < n; i++) coll_table_fini(&tabs[i]);
    free(tabs);
    ss_err_clear(&err);
    assert_int_equal(compare_text(text, "hypercube", &tabs, &n, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "hypercube_perf"));
    ss_err_clear(&err);
    assert_int_equal(compare_text(hypercube, NULL, &tabs, &n, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "no table of the log measures a collective"));
}

/* The text is nccl-tests' column layout with the comparison columns. */
static void test_format(void **state)
{
    (void)state;
    coll_table t = compare("topologies/h100x8-hgx.json", ONE, TABLE "all_gather_ring.out",
                           ALGO_RING);
    net_opts o = {.algo = ALGO_RING, .proto = ALGO_P_AUTO};
    char *s = NULL;
    assert_int_equal(coll_format(&t, "hgx", &o, &s, NULL), SS_OK);
    assert_non_null(strstr(s, "#       size         count      type   redop    root"));
    /* a row as nccl-tests prints it: size, count, type, redop, root */
    assert_non_null(strstr(s, "\n     8589934592     268435456     float    none      -1 "));
    assert_non_null(strstr(s, "# median |error| of time for sizes >= 1 MiB:"));
    free(s);
    coll_table_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce_ring), cmocka_unit_test(test_all_gather_ring),
        cmocka_unit_test(test_reduce_scatter_ring), cmocka_unit_test(test_all_reduce_nvls),
        cmocka_unit_test(test_two_nodes), cmocka_unit_test(test_two_nodes_calibrated),
        cmocka_unit_test(test_format),          cmocka_unit_test(test_whole_suite_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
