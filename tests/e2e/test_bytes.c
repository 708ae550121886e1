/* Collective counts and bytes per step of every runtime against hand
 * derivations, and seeds/000's table (section 4, "通信量"): with P elements
 * and N ranks, a ring all-gather or reduce-scatter moves (N-1)/N P elements
 * per rank and an all-reduce 2 (N-1)/N P, so at one dtype full sharding
 * (two all-gathers and a reduce-scatter) moves 1.5x DDP's bytes; with a
 * bf16 all-gather and an fp32 reduce-scatter the bytes follow the dtypes:
 * (N-1)/N P (2 x 2 + 4) against DDP's 2 (N-1)/N P x 4.
 *
 * Model: 8 bias-free 1024 x 1024 linear layers (P = 8 Mi elements, every
 * count divisible by N = 8: no padding), wrapped or fetched per layer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"

#define H 1024ull
#define LAYERS 8ull
#define P (H * H * LAYERS)
#define N 8ull

static void load(const char *precision, const char *sharding, uint32_t accum, spec_scenario *s,
                 run_result *r)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"name\": \"bytes\", \"model\": {\"name\": \"m\", \"blocks\": [{\"name\": \"layers\", "
             "\"type\": \"linear\", \"in\": %llu, \"out\": %llu, \"repeat\": %llu}]},"
             "\"topology\": \"%s/topologies/h100x8-hgx.json\", \"parallel\": {\"dp\": %llu},"
             "\"training\": {\"micro_batch\": 1, \"grad_accum\": %u}, \"optimizer\": {\"type\": "
             "\"adamw\"}%s%s, \"sharding\": %s}",
             H, H, LAYERS, SS_SOURCE_DIR, N, accum, precision[0] ? ", " : "", precision, sharding);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load_text("bytes.json", text, strlen(text), NULL, 0, s, &err))
        fail_msg("%s: %s", err.where, err.msg);
    if (run_step(s, NULL, r, &err)) fail_msg("%s: %s", err.where, err.msg);
}

/* Bus bytes per rank: what a ring moves for the nccl-tests payloads. */
static double bus(const sum_report *r)
{
    double f = (double)(N - 1) / (double)N;
    return 2 * f * (double)r->coll[PROG_COLL_ALL_REDUCE].bytes +
           f * (double)r->coll[PROG_COLL_ALL_GATHER].bytes +
           f * (double)r->coll[PROG_COLL_REDUCE_SCATTER].bytes;
}

typedef struct runtime {
    const char *name, *sharding;
    double ratio_fp32, ratio_mixed; /* bus bytes / DDP's (fp32) */
} runtime;

#define FP32 "\"precision\": {\"param\": \"fp32\"}"
#define MIXED "\"precision\": {\"param\": \"fp32\", \"compute\": \"bf16\", \"grad\": \"fp32\", \"reduce\": \"fp32\"}"
#define DS_FP32 "\"precision\": {\"param\": \"fp32\", \"master\": \"fp32\"}"
#define DS_MIXED "\"precision\": {\"param\": \"bf16\", \"compute\": \"bf16\", \"grad\": \"bf16\", \"reduce\": \"fp32\", \"master\": \"fp32\"}"

static const runtime runtimes[] = {
    {"full_shard", "{\"strategy\": \"full_shard\"}", 1.5, 1.0},
    {"shard_grad_op", "{\"strategy\": \"shard_grad_op\"}", 1.0, 0.75},
    /* FSDP2 (dim-0 shards: 1024 rows divide by 8, no padding); with
     * reshard_after_forward false it is SHARD_GRAD_OP's pattern. */
    {"fsdp2", "{\"strategy\": \"fsdp2\"}", 1.5, 1.0},
    {"fsdp2 reshard_after_forward false",
     "{\"strategy\": \"fsdp2\", \"reshard_after_forward\": false}", 1.0, 0.75},
    /* ZeRO-3 with no reuse: both all-gathers; ZeRO-2 as the ZeRO paper
     * counts it (use_multi_rank_bucket_allreduce false: a reduce per rank's
     * slice, costed as a reduce-scatter) and the step's all-gather of the
     * bit16 parameters; ZeRO-2 as DeepSpeed runs it by default since
     * v0.13.0: an all-reduce of each bucket (stage_1_and_2.py
     * allreduce_and_scatter), and the all-gather. */
    {"deepspeed zero3", "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3, "
                        "\"stage3_max_reuse_distance\": 0, \"stage3_param_persistence_threshold\": 0}}",
     1.5, 1.0},
    {"deepspeed zero2 (ZeRO paper)", "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 2, "
                                     "\"use_multi_rank_bucket_allreduce\": false}}", 1.0, 0.75},
    {"deepspeed zero2", "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 2}}", 1.5,
     1.25},
};

static void test_seed000_table(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load(FP32, "{\"strategy\": \"ddp\"}", 1, &s, &r);
    double ddp = bus(&r.sum);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].bytes, P * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++) {
        const runtime *rt = &runtimes[i];
        bool ds = strstr(rt->sharding, "deepspeed") != NULL;
        load(ds ? DS_FP32 : FP32, rt->sharding, 1, &s, &r);
        double got = bus(&r.sum) / ddp;
        if (fabs(got - rt->ratio_fp32) > 1e-12)
            fail_msg("%s at fp32: %.6f x DDP, expected %.3f", rt->name, got, rt->ratio_fp32);
        run_fini(&r);
        spec_scenario_fini(&s);
        load(ds ? DS_MIXED : MIXED, rt->sharding, 1, &s, &r);
        got = bus(&r.sum) / ddp;
        if (fabs(got - rt->ratio_mixed) > 1e-12)
            fail_msg("%s with bf16 gathers, fp32 reductions: %.6f x DDP, expected %.3f", rt->name,
                     got, rt->ratio_mixed);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* DeepSpeed's counts: stage 1 reduces once per step (after the last
 * micro-batch), stage 2 in every micro-batch's hooks (DeepSpeed has no
 * no_sync); buckets of one layer give one reduction per layer, an
 * all-reduce under use_multi_rank_bucket_allreduce (the default) and a
 * reduce-scatter without; the step all-gathers P in allgather_bucket_size
 * pieces. */
static void test_deepspeed_counts(void **state)
{
    (void)state;
    char sh[512];
    for (uint32_t k = 0; k < 4; k++) {
        uint32_t stage = 1 + k % 2;
        bool multi = k < 2;
        snprintf(sh, sizeof sh,
                 "{\"strategy\": \"deepspeed\", \"zero_optimization\": {\"stage\": %u, "
                 "\"reduce_bucket_size\": %llu, \"allgather_bucket_size\": %llu, "
                 "\"use_multi_rank_bucket_allreduce\": %s}}",
                 stage, H * H, P / 4, multi ? "true" : "false");
        spec_scenario s;
        run_result r;
        load(DS_FP32, sh, 3, &s, &r);
        uint64_t syncs = stage == 1 ? 1 : 3;
        prog_coll red = multi ? PROG_COLL_ALL_REDUCE : PROG_COLL_REDUCE_SCATTER;
        prog_coll other = multi ? PROG_COLL_REDUCE_SCATTER : PROG_COLL_ALL_REDUCE;
        assert_int_equal(r.sum.coll[red].count, LAYERS * syncs);
        assert_int_equal(r.sum.coll[red].bytes, P * 4 * syncs);
        assert_int_equal(r.sum.coll[other].count, 0);
        assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].count, 4);
        assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].bytes, P * 4);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Stage 3: with stage3_max_reuse_distance 0 every layer is gathered in
 * forward and again in backward; with a distance covering the model none
 * is released after forward, so backward gathers nothing. ZeRO++: qwZ
 * gathers int8 (1 byte per element), qgZ reduces int4 (half a byte); hpZ
 * adds the secondary partition, P / hpz bit16 elements per rank. */
static void test_deepspeed_stage3(void **state)
{
    (void)state;
    static const struct {
        const char *zero;
        uint64_t fwd, bwd, ag_bytes, rs_bytes, param_bytes;
    } cases[] = {
        {"\"stage3_max_reuse_distance\": 0", LAYERS, LAYERS, 2 * P * 2, P * 2, P / N * 2},
        {"\"stage3_max_reuse_distance\": 1000000000000", LAYERS, 0, P * 2, P * 2, P / N * 2},
        {"\"stage3_max_reuse_distance\": 0, \"zero_quantized_weights\": true, "
         "\"zero_quantized_gradients\": true",
         LAYERS, LAYERS, 2 * P, P / 2, P / N * 2},
        {"\"stage3_max_reuse_distance\": 0, \"zero_hpz_partition_size\": 4", LAYERS, LAYERS,
         2 * P * 2, P * 2, P / N * 2 + P / 4 * 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char sh[512];
        snprintf(sh, sizeof sh,
                 "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": true}, \"zero_optimization\": "
                 "{\"stage\": 3, \"stage3_param_persistence_threshold\": 0, \"reduce_bucket_size\": "
                 "%llu, %s}}",
                 H * H, cases[i].zero);
        spec_scenario s;
        run_result r;
        load("", sh, 1, &s, &r);
        const sum_coll *ag = &r.sum.coll[PROG_COLL_ALL_GATHER];
        assert_int_equal(ag->phase_count[PROG_PH_FORWARD], cases[i].fwd);
        assert_int_equal(ag->phase_count[PROG_PH_BACKWARD], cases[i].bwd);
        assert_int_equal(ag->bytes, cases[i].ag_bytes);
        assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes, cases[i].rs_bytes);
        assert_int_equal(r.sum.ranks[0].st.param.physical, cases[i].param_bytes);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed000_table),
        cmocka_unit_test(test_deepspeed_counts),
        cmocka_unit_test(test_deepspeed_stage3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
