/* DeepSpeed ZeRO against DeepSpeed's own memory estimators and hand
 * derivations of its collectives.
 *
 * The estimators are DeepSpeed's published formulas,
 * deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs
 * and deepspeed/runtime/zero/stage3.py estimate_zero3_model_states_mem_needs
 * (also in DeepSpeed's docs, "Memory Requirements"), with P parameters,
 * G GPUs on one node, L the largest layer's parameters and
 * additional_buffer_factor 1 (the factor is their safety margin):
 *   ZeRO-2, cpu_offload:    gpu 2P,            cpu P max(4G, 16)
 *   ZeRO-2, no offload:     gpu 4P + 16P / G
 *   ZeRO-3, offload both:   gpu 4L,            cpu 18P (zero_init)
 *   ZeRO-3, offload optim:  gpu 4L + 2P / G,   cpu 16P (zero_init)
 *   ZeRO-3, no offload:     gpu 4L + 18P / G
 * 4L is the working set of one gathered layer (bit16 parameters and their
 * gradient); the rest are model states. The formula for "ZeRO-2" lives in
 * stage_1_and_2.py and serves stages 1 and 2: it counts whole bit16
 * gradients, which is stage 1's layout; stage 2 partitions them, so its
 * states are 2P + 18P / G, 2P (1 - 1/G) under the formula.
 *
 * Models: L x (H x H) linear layers without bias, three sizes, every count
 * divisible by G (no padding), bf16 with fp32 master and AdamW states;
 * stage 3 keeps its gradient partition in fp32 (data_types.grad_accum_dtype),
 * the setting under which DeepSpeed's partition is the fp32 gradient the
 * step reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"
#include "../../sim/out/summary.h"
#include "../../sim/plan/prog.h"

typedef struct size_case {
    uint64_t h, layers;
} size_case;

static const size_case sizes[3] = {{1024, 8}, {2048, 16}, {4096, 32}}; /* 8.4M, 67M, 537M */

/* A model-state-only scenario: one token per rank, so activations are a
 * few KiB against gigabytes of states. */
static void load(const size_case *c, uint32_t dp, const char *zero, const char *extra,
                 spec_scenario *s, run_result *r)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"name\": \"ds\", \"model\": {\"name\": \"m\", \"blocks\": [{\"name\": \"layers\", "
             "\"type\": \"linear\", \"in\": %llu, \"out\": %llu, \"repeat\": %llu}]},"
             "\"topology\": \"%s/topologies/h100x8-hgx.json\", \"parallel\": {\"dp\": %u},"
             "\"training\": {\"micro_batch\": 1}, \"optimizer\": {\"type\": \"adamw\"},"
             "\"allocator\": {\"model\": \"ideal\"}%s,"
             "\"sharding\": {\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": true},"
             "%s\"zero_optimization\": {%s}}}",
             (unsigned long long)c->h, (unsigned long long)c->h, (unsigned long long)c->layers,
             SS_SOURCE_DIR, dp, extra,
             strstr(zero, "\"stage\": 3") ? "\"data_types\": {\"grad_accum_dtype\": \"fp32\"}, " : "",
             zero);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load_text("ds.json", text, strlen(text), NULL, 0, s, &err))
        fail_msg("%s: %s", err.where, err.msg);
    if (run_step(s, NULL, r, &err)) fail_msg("%s: %s", err.where, err.msg);
}

static uint64_t device_states(const st_bytes *b) { return b->total_physical - b->host; }

/* Stage 1 holds what the stage 1-2 formula counts, exactly. */
static void test_zero1_matches_formula(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        spec_scenario s;
        run_result r;
        load(&sizes[i], 8, "\"stage\": 1", "", &s, &r);
        uint64_t P = sizes[i].h * sizes[i].h * sizes[i].layers, G = 8;
        assert_int_equal(device_states(&r.sum.ranks[0].st), 4 * P + 16 * P / G);
        assert_int_equal(r.sum.ranks[0].st.host, 0);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Stage 2: the formula's bound, less the gradient partitioning; with
 * offload, 2P on the device (the formula's) and 16P on the node's host
 * (the formula's cpu term at G = 4, where max(4G, 16) = 16). */
static void test_zero2(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        uint64_t P = sizes[i].h * sizes[i].h * sizes[i].layers;
        spec_scenario s;
        run_result r;
        load(&sizes[i], 8, "\"stage\": 2", "", &s, &r);
        uint64_t formula = 4 * P + 16 * P / 8;
        assert_int_equal(device_states(&r.sum.ranks[0].st), formula - (2 * P - 2 * P / 8));
        run_fini(&r);
        spec_scenario_fini(&s);
        load(&sizes[i], 4, "\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}", "", &s, &r);
        assert_int_equal(device_states(&r.sum.ranks[0].st), 2 * P);
        uint64_t node = 0;
        for (uint32_t k = 0; k < 4; k++) node += r.sum.ranks[k].st.host;
        assert_int_equal(node, P * 16);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Stage 3 without prefetch or reuse, reduce buckets of one layer and no
 * ipg buffer (contiguous_gradients off): the states are the formula less
 * 4L exactly. The measured peak (ideal allocator) holds the states and at
 * least the formula's working set, one gathered layer and its gradient;
 * the formula assumes one layer at a time, while shardsim lets the host
 * issue up to two releases ahead of the device (deepspeed.c), so up to
 * three layers' working sets, each with its flattened bucket (2L), may be
 * live. */
static void check_zero3(const char *offload, uint64_t dev_per_elem_x_g, uint64_t host_per_elem)
{
    char zero[512];
    snprintf(zero, sizeof zero,
             "\"stage\": 3, \"stage3_prefetch_bucket_size\": 0, \"stage3_max_reuse_distance\": 0,"
             "\"stage3_param_persistence_threshold\": 0, \"contiguous_gradients\": false,"
             "\"overlap_comm\": false, \"reduce_bucket_size\": 1 %s",
             offload);
    for (int i = 0; i < 3; i++) {
        const size_case *c = &sizes[i];
        uint64_t P = c->h * c->h * c->layers, L = c->h * c->h, G = 8;
        char z[600];
        snprintf(z, sizeof z, "%s", zero);
        /* the bucket of one layer */
        char *one = strstr(z, "\"reduce_bucket_size\": 1");
        char tail[256];
        snprintf(tail, sizeof tail, "%s", one + strlen("\"reduce_bucket_size\": 1"));
        snprintf(one, sizeof z - (size_t)(one - z), "\"reduce_bucket_size\": %llu%s",
                 (unsigned long long)L, tail);
        spec_scenario s;
        run_result r;
        load(c, 8, z, "", &s, &r);
        const sum_rank *k = &r.sum.ranks[0];
        uint64_t formula = 4 * L + dev_per_elem_x_g * P / G;
        assert_int_equal(device_states(&k->st), formula - 4 * L);
        assert_int_equal(k->st.host, host_per_elem * P / G);
        /* Measured: within the activations of one token (a few KiB) and the
         * 512-byte rounding of the ideal allocator, plus the fp32 copy of
         * one bucket's partition slice under offload. */
        uint64_t states = formula - 4 * L, tokens = 64 * 1024;
        assert_true(k->mem.peak >= formula);
        assert_true(k->mem.peak <= states + 3 * (4 * L + 2 * L) + tokens);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

static void test_zero3_no_offload(void **state)
{
    (void)state;
    check_zero3("", 18, 0);
}

static void test_zero3_offload_optimizer(void **state)
{
    (void)state;
    check_zero3(", \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}", 2, 16);
}

static void test_zero3_offload_all(void **state)
{
    (void)state;
    check_zero3(", \"offload_optimizer\": {\"device\": \"cpu\"}, \"offload_param\": {\"device\": "
                "\"cpu\"}",
                0, 18);
}

/* A scenario that leaves to its DeepSpeed config what the config says
 * (configs/deepspeed/zero3-bf16.json: bf16 enabled, optimizer AdamW) runs as
 * the one that spells it out: DeepSpeed's AdamW (its fused kernel), bf16
 * parameters, gradients and reductions, fp32 master and states. "auto"
 * with no precision section reads as bf16 (Hugging Face's --bf16); a
 * section that states fp32 parameters still contradicts DeepSpeed. */
/* The ipg buffers (contiguous_gradients, reduce_bucket_size B elements of
 * the gradient dtype): stages 1-2 hold two under overlap_comm and one
 * without (stage_1_and_2.py at v0.18.0: "double buffers to avoid data
 * access conflict when overlap_comm is enabled"); stage 3 holds one either
 * way (stage3.py's IPGBucketZ3 at v0.18.0, __ipg_bucket_flat_buffer at
 * v0.12.0). So overlap_comm adds exactly one bucket to stage 2's peak and
 * none to stage 3's. */
static void test_ipg_buffers(void **state)
{
    (void)state;
    const uint64_t B = 4000000; /* elements, larger than any layer here */
    const char *stage[] = {"2", "3"};
    for (int k = 0; k < 2; k++) {
        ss_bytes start[2]; /* the persistent buffers are live when the step starts */
        for (int overlap = 0; overlap < 2; overlap++) {
            char zero[256];
            snprintf(zero, sizeof zero,
                     "\"stage\": %s, \"contiguous_gradients\": true, \"overlap_comm\": %s, "
                     "\"reduce_bucket_size\": %llu",
                     stage[k], overlap ? "true" : "false", (unsigned long long)B);
            spec_scenario s;
            run_result r;
            load(&sizes[0], 8, zero, "", &s, &r);
            start[overlap] = r.sum.ranks[0].mem.start;
            run_fini(&r);
            spec_scenario_fini(&s);
        }
        print_message("  stage %s: %llu bytes at the step's start without overlap_comm, %llu "
                      "with\n", stage[k], (unsigned long long)start[0],
                      (unsigned long long)start[1]);
        assert_int_equal(start[1] - start[0], k == 0 ? B * 2 : 0);
    }
}

/* The op of rank 0 that applies `act` to tensor t, or NULL. */
static const prog_op *op_with(const prog *p, uint32_t t, prog_memact act)
{
    const prog_op *ops = prog_ops(p, 0);
    const prog_mem *mems = prog_mems(p, 0);
    for (uint32_t i = 0; i < prog_nops(p, 0); i++)
        for (uint32_t k = 0; k < ops[i].nmem; k++)
            if (mems[ops[i].mem0 + k].tensor == t && mems[ops[i].mem0 + k].act == act)
                return &ops[i];
    return NULL;
}

static bool starts_with(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

/* Stage 3 reduces a bucket through reduce_scatter_coalesced (stage3.py
 * __avg_scatter_grads, DeepSpeed's default reduce_scatter: true, v0.12.0 to
 * v0.19.2): torch.cat makes a flat copy of the bucket, reduce-scattered in
 * place, whose views partition_grads copies into the gradient partition;
 * a bucket of one tensor divisible by the ranks is reduced where it lies
 * (deepspeed/runtime/comm/coalesced_collectives.py). And each gradient that
 * fits the bucket is copied into the ipg buffer on the reduction stream and
 * dropped there (__add_grad_to_ipg_bucket: param.grad.data becomes the
 * buffer's view after record_stream). Layers of 1,048,576 elements: a
 * bucket of 2,500,000 holds two of them, one of 1,048,576 exactly one. */
static void test_zero3_bucket_flat(void **state)
{
    (void)state;
    const uint64_t L = sizes[0].h * sizes[0].h;
    for (int two = 0; two < 2; two++) {
        char zero[256];
        snprintf(zero, sizeof zero,
                 "\"stage\": 3, \"overlap_comm\": true, \"reduce_bucket_size\": %llu, "
                 "\"stage3_param_persistence_threshold\": 0",
                 (unsigned long long)(two ? 2500000 : L));
        spec_scenario s;
        run_result r;
        load(&sizes[0], 8, zero, "", &s, &r);
        const prog_tensor *ts = prog_tensors(r.p, 0);
        uint32_t flats = 0, grads = 0;
        for (uint32_t t = 0; t < prog_ntensors(r.p, 0); t++) {
            const char *name = prog_str_get(r.p, ts[t].name);
            const prog_op *a = op_with(r.p, t, PROG_ALLOC_AT_ISSUE);
            const prog_op *f = op_with(r.p, t, PROG_FREE_AT_END);
            if (!strcmp(name, "ds.bucket_flat")) {
                f = op_with(r.p, t, PROG_FREE_AT_ISSUE); /* dropped by the host, same stream */
                flats++;
                assert_int_equal(ts[t].bytes, 2 * L * 2); /* two layers in bf16 */
                assert_non_null(a);
                assert_non_null(f);
                assert_string_equal(prog_str_get(r.p, a->name), "ds.flatten_bucket");
                assert_string_equal(prog_str_get(r.p, f->name), "ds.copy_grads_in_partition");
                assert_int_equal(a->stream, PROG_REDUCE);
                assert_int_equal(f->stream, PROG_REDUCE);
            } else if (starts_with(name, "ds.grad.p")) {
                grads++;
                assert_non_null(f);
                assert_true(starts_with(prog_str_get(r.p, f->name), "ds.copy_to_ipg."));
                assert_int_equal(f->stream, PROG_REDUCE);
            }
        }
        print_message("  bucket of %s: %u flat copies, %u gradients dropped at their copy\n",
                      two ? "two layers" : "one layer", flats, grads);
        assert_int_equal(flats, two ? sizes[0].layers / 2 : 0);
        assert_int_equal(grads, sizes[0].layers);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Stages 1-2 reduce a bucket through average_tensor (stage_1_and_2.py at
 * v0.19.2): under use_multi_rank_bucket_allreduce, DeepSpeed's default
 * since v0.13.0, allreduce_and_scatter all-reduces a flattened copy of the
 * bucket's elements (no padding); without it one dist.reduce per rank's
 * slice, costed as one reduce-scatter of the padded bucket; under
 * reduce_scatter: false gradient_reduction_w_predivide all-reduces the
 * buffer where it lies (no copy). And with overlap_comm it makes the
 * compute stream wait for the reduction stream before each bucket after
 * the first (current_stream().wait_stream). Eight layers of 1,048,576
 * elements, buckets of two: four reductions of 2,097,152 bf16 elements,
 * three waits. */
static void test_zero12_bucket_allreduce(void **state)
{
    (void)state;
    const uint64_t L = sizes[0].h * sizes[0].h;
    for (int k = 0; k < 3; k++) {
        bool multi = k == 1, rs = k < 2, ar = !rs || multi;
        char zero[256];
        snprintf(zero, sizeof zero,
                 "\"stage\": 2, \"overlap_comm\": true, \"reduce_bucket_size\": 2500000, "
                 "\"use_multi_rank_bucket_allreduce\": %s, \"reduce_scatter\": %s",
                 multi ? "true" : "false", rs ? "true" : "false");
        spec_scenario s;
        run_result r;
        load(&sizes[0], 8, zero, "", &s, &r);
        const prog_op *ops = prog_ops(r.p, 0);
        uint32_t colls = 0, waits = 0, flats = 0;
        for (uint32_t i = 0; i < prog_nops(r.p, 0); i++) {
            const char *name = prog_str_get(r.p, ops[i].name);
            if (starts_with(name, "ds.all_reduce.bucket") ||
                starts_with(name, "ds.reduce_scatter.bucket")) {
                colls++;
                assert_int_equal(ops[i].coll, ar ? PROG_COLL_ALL_REDUCE
                                                 : PROG_COLL_REDUCE_SCATTER);
                assert_int_equal(ops[i].bytes, 2 * L * 2);
                assert_int_equal(ops[i].stream, PROG_REDUCE);
            }
            if (!strcmp(name, "ds.wait_reduction_stream")) {
                waits++;
                assert_int_equal(ops[i].stream, PROG_COMPUTE);
            }
            if (!strcmp(name, "ds.flatten_bucket")) flats++;
        }
        print_message("  use_multi_rank_bucket_allreduce %s, reduce_scatter %s: %u reductions, "
                      "%u flat copies, %u waits\n", multi ? "true" : "false",
                      rs ? "true" : "false", colls, flats, waits);
        assert_int_equal(colls, sizes[0].layers / 2);
        assert_int_equal(flats, multi ? sizes[0].layers / 2 : 0);
        assert_int_equal(waits, sizes[0].layers / 2 - 1);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

static char *summary_of_text(const char *text, ss_err *err)
{
    char name[1024];
    snprintf(name, sizeof name, "%s/scenarios/deepspeed/inline.json", SS_SOURCE_DIR);
    spec_scenario s;
    run_result r;
    if (scn_load_text(name, text, strlen(text), NULL, 0, &s, err)) return NULL;
    char *js = NULL;
    if (!run_step(&s, NULL, &r, err)) {
        js = sum_json(&r.sum);
        run_fini(&r);
    }
    spec_scenario_fini(&s);
    return js;
}

static void test_inferred_from_config(void **state)
{
    (void)state;
#define DS_BASE "{\"name\": \"z3\", \"model\": \"../../models/llama3-8b.json\", " \
    "\"topology\": \"../../topologies/h100x8-hgx.json\", \"parallel\": {\"dp\": 8}, " \
    "\"training\": {\"micro_batch\": 1, \"seq_len\": 2048, \"recompute\": \"full\"}, "
    ss_err err;
    ss_err_clear(&err);
    char *spelled = summary_of_text(DS_BASE "\"optimizer\": {\"type\": \"adamw\", \"impl\": \"fused\"}, "
        "\"precision\": {\"param\": \"bf16\", \"compute\": \"bf16\", \"grad\": \"bf16\", "
        "\"reduce\": \"bf16\", \"master\": \"fp32\", \"optimizer\": \"fp32\"}, "
        "\"sharding\": \"../../configs/deepspeed/zero3-bf16.json\"}", &err);
    if (!spelled) fail_msg("%s: %s", err.where, err.msg);
    char *left = summary_of_text(DS_BASE "\"sharding\": \"../../configs/deepspeed/zero3-bf16.json\"}", &err);
    if (!left) fail_msg("%s: %s", err.where, err.msg);
    assert_string_equal(left, spelled);
    char *compute_only = summary_of_text(DS_BASE "\"precision\": {\"compute\": \"bf16\"}, "
        "\"sharding\": \"../../configs/deepspeed/zero3-bf16.json\"}", &err);
    if (!compute_only) fail_msg("%s: %s", err.where, err.msg);
    assert_string_equal(compute_only, spelled);
    char *autos = summary_of_text(DS_BASE "\"sharding\": {\"strategy\": \"deepspeed\", "
        "\"bf16\": {\"enabled\": \"auto\"}, \"zero_optimization\": {\"stage\": 3}, "
        "\"optimizer\": {\"type\": \"AdamW\"}}}", &err);
    if (!autos) fail_msg("%s: %s", err.where, err.msg);
    char *enabled = summary_of_text(DS_BASE "\"sharding\": {\"strategy\": \"deepspeed\", "
        "\"bf16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3}, "
        "\"optimizer\": {\"type\": \"AdamW\"}}}", &err);
    if (!enabled) fail_msg("%s: %s", err.where, err.msg);
    assert_string_equal(autos, enabled);
    free(enabled);
    ss_err_clear(&err);
    assert_null(summary_of_text(DS_BASE "\"precision\": {\"param\": \"fp32\", \"compute\": \"bf16\"}, "
        "\"sharding\": \"../../configs/deepspeed/zero3-bf16.json\"}", &err));
    assert_non_null(strstr(err.msg, "DeepSpeed keeps bf16 parameters and fp32 master weights"));
    ss_err_clear(&err);
    assert_null(summary_of_text(DS_BASE "\"sharding\": {\"strategy\": \"deepspeed\", "
        "\"zero_optimization\": {\"stage\": 1}}}", &err));
    assert_non_null(strstr(err.msg, "neither the scenario nor its DeepSpeed config names one"));
    free(spelled);
    free(left);
    free(compute_only);
    free(autos);
#undef DS_BASE
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zero1_matches_formula),
        cmocka_unit_test(test_zero2), cmocka_unit_test(test_ipg_buffers),
        cmocka_unit_test(test_zero3_bucket_flat), cmocka_unit_test(test_zero12_bucket_allreduce),
        cmocka_unit_test(test_zero3_no_offload),
        cmocka_unit_test(test_zero3_offload_optimizer),
        cmocka_unit_test(test_zero3_offload_all),
        cmocka_unit_test(test_inferred_from_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
