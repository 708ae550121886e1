/* The Kineto (PyTorch profiler) traces of --kineto, one per rank, as
 * HolisticTraceAnalysis reads them (its trace_file.py and trace.py):
 * distributedInfo with backend nccl, the file's rank and the world size,
 * and deviceProperties before traceEvents; every complete event with ph,
 * cat, name, pid, tid, ts, dur; every kernel with args device, stream and
 * correlation, and exactly one launch (cuda_runtime) of that correlation
 * on the host; NCCL kernels named ncclDevKernel_*, one per collective that
 * ran; two ProfilerStep annotations. And the kernels are the step's time:
 * per rank, the compute-stream kernels add up to the rank's compute busy
 * time and the union of its NCCL kernels to its communication time, for
 * rank 0 as the summary JSON reports them (time.compute_s,
 * time.communication_s) and for every rank as the summary computes them
 * (span.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/out/kineto.h"
#include "../../sim/out/span.h"
#include "../../sim/run/run.h"

#include "load_run.h"

static cJSON *rank_json(const run_result *r, uint32_t k)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(kin_write(&r->sum, r->t, k, f, &err), SS_OK);
    assert_int_equal(fclose(f), 0);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    /* the canonical text cJSON prints, as the Chrome trace */
    char *again = cJSON_PrintUnformatted(root);
    assert_string_equal(text, again);
    free(again);
    free(text);
    return root;
}

static const cJSON *get(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) fail_msg("no key \"%s\"", k);
    return v;
}

/* A time in us with ns decimals back to integer ns (exact below 2^53 ns). */
static ss_ns ns(const cJSON *v) { return (ss_ns)llround(v->valuedouble * 1000.0); }

static ss_ns from_summary(const char *json, const char *key)
{
    cJSON *s = cJSON_Parse(json);
    assert_non_null(s);
    ss_ns v = (ss_ns)llround(get(get(s, "time"), key)->valuedouble * 1e9);
    cJSON_Delete(s);
    return v;
}

typedef struct seen {
    span *comm, *compute;
    size_t ncomm, ncompute;
    uint32_t nccl, kernels, steps;
} seen;

static void check_kernel(const cJSON *e, const cJSON *evs, uint32_t device, seen *x)
{
    const char *name = get(e, "name")->valuestring;
    const cJSON *args = get(e, "args");
    assert_int_equal(get(args, "device")->valueint, (int)device);
    assert_int_equal(get(args, "stream")->valueint, get(e, "tid")->valueint);
    assert_int_equal(get(e, "pid")->valueint, (int)device);
    int corr = get(args, "correlation")->valueint, launches = 0;
    const cJSON *l;
    cJSON_ArrayForEach(l, evs)
    {
        const cJSON *la = cJSON_GetObjectItem(l, "args"), *c = la ? cJSON_GetObjectItem(la, "correlation") : NULL;
        if (l != e && c && c->valueint == corr) {
            assert_string_equal(get(l, "cat")->valuestring, "cuda_runtime");
            assert_true(ns(get(l, "ts")) + ns(get(l, "dur")) <= ns(get(e, "ts")));
            launches++;
        }
    }
    assert_int_equal(launches, 1);
    span s = {ns(get(e, "ts")), ns(get(e, "ts")) + ns(get(e, "dur"))};
    x->kernels++;
    if (!strncmp(name, "nccl", 4)) {
        assert_int_equal(strncmp(name, "ncclDevKernel_", 14), 0);
        assert_non_null(get(args, "Collective name"));
        x->comm[x->ncomm++] = s, x->nccl++;
    } else if (get(e, "tid")->valueint == (int)(KIN_STREAM0 + PROG_COMPUTE)) {
        x->compute[x->ncompute++] = s;
    }
}

static void check_rank(const run_result *r, uint32_t k, const char *summary)
{
    cJSON *root = rank_json(r, k);
    assert_int_equal(get(root, "schemaVersion")->valueint, 1);
    const cJSON *di = get(root, "distributedInfo");
    assert_string_equal(get(di, "backend")->valuestring, "nccl");
    uint32_t world = prog_rank_world(r->t->p, k); /* program rank k's (k where nothing folds along tp) */
    assert_int_equal(get(di, "rank")->valueint, (int)world);
    assert_int_equal(get(di, "world_size")->valueint, (int)r->sum.nranks);
    const cJSON *dp = get(root, "deviceProperties");
    assert_int_equal(cJSON_GetArraySize(dp), 1);
    uint32_t device = (uint32_t)get(cJSON_GetArrayItem(dp, 0), "id")->valueint;
    assert_int_equal(device, world % r->sum.s->topo.gpus_per_node);
    uint32_t n = prog_nops(r->t->p, k);
    seen x = {calloc(n, sizeof(span)), calloc(n, sizeof(span)), 0, 0, 0, 0, 0};
    const cJSON *evs = get(root, "traceEvents"), *e;
    cJSON_ArrayForEach(e, evs)
    {
        if (strcmp(get(e, "ph")->valuestring, "X")) continue;
        const char *keys[] = {"cat", "name", "pid", "tid", "ts", "dur"};
        for (size_t q = 0; q < 6; q++) get(e, keys[q]);
        const char *cat = get(e, "cat")->valuestring;
        if (!strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy")) check_kernel(e, evs, device, &x);
        x.steps += !strncmp(get(e, "name")->valuestring, "ProfilerStep#", 13);
    }
    assert_int_equal(x.steps, 2);
    /* one NCCL kernel per collective that ran for some time */
    uint32_t colls = 0;
    for (uint32_t i = 0; i < n; i++)
        colls += prog_ops(r->t->p, k)[i].kind == PROG_OP_COLL && r->t->ops[k][i].end > r->t->ops[k][i].start;
    assert_int_equal(x.nccl, colls);
    assert_true(x.nccl > 0 && x.kernels > x.nccl);
    ss_ns compute = 0;
    for (size_t i = 0; i < x.ncompute; i++) compute += x.compute[i].b - x.compute[i].a;
    ss_ns comm = span_total(x.comm, span_merge(x.comm, x.ncomm));
    span *sp = calloc(n, sizeof *sp);
    assert_int_equal(compute, span_total(sp, span_rank(r->t, k, SPAN_COMPUTE, sp)));
    assert_int_equal(comm, span_total(sp, span_rank(r->t, k, SPAN_COMM, sp)));
    if (k == 0) {
        assert_int_equal(compute, from_summary(summary, "compute_s"));
        assert_int_equal(comm, from_summary(summary, "communication_s"));
    }
    free(sp);
    free(x.comm);
    free(x.compute);
    cJSON_Delete(root);
}

/* FSDP FULL_SHARD on 4 ranks (all-gathers and reduce-scatters on two
 * streams), and the Megatron TP 2 x PP 2 x DP 2 example, whose p2p stream
 * runs two sends at once (two stream lanes) and whose ranks differ. */
static void test_kineto_ranks(void **state)
{
    (void)state;
    const char *files[] = {"seed002/zero3_full_shard_pre.json",
                           "examples/tiny-gpt-megatron-tp2-pp2-overlap.json"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        spec_scenario s;
        run_result r;
        load_run(files[f], NULL, 0, &s, &r);
        char *summary = sum_json(&r.sum);
        assert_non_null(summary);
        for (uint32_t k = 0; k < r.t->nranks; k++) check_rank(&r, k, summary);
        free(summary);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kineto_ranks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
