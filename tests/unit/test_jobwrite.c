/* A scenario as torchtitan TOML and Megatron-LM arguments (io/jobwrite.h):
 * the whole text for a scenario whose every value is written by hand below
 * (the expected lines are those values under torchtitan's and Megatron's
 * names), and each refusal naming the setting. The scenarios are loaded
 * from text with the shipped Llama-3 8B and tiny GPT models and the 8 x
 * H100 topology (32 and 4 layers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/jobwrite.h"
#include "../../sim/io/scenario.h"

/* Llama-3 8B on 8 H100 with the sections given (JSON members, no braces). */
static int load(const char *model, const char *sections, spec_scenario *s)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": \"%s/models/%s\", \"topology\": \"%s/topologies/"
             "h100x8-hgx.json\", %s}", SS_SOURCE_DIR, model, SS_SOURCE_DIR, sections);
    ss_err err;
    ss_err_clear(&err);
    int rc = scn_load_text("t.json", text, strlen(text), NULL, 0, s, &err);
    if (rc) fail_msg("%s: %s", err.where, err.msg);
    return rc;
}

static const char tt_base[] =
    "\"training\": {\"micro_batch\": 2, \"seq_len\": 1024, \"grad_accum\": 2, "
    "\"recompute\": \"selective_op\"}, "
    "\"precision\": {\"param\": \"fp32\", \"compute\": \"bf16\", \"grad\": \"fp32\", "
    "\"reduce\": \"bf16\", \"master\": \"none\", \"optimizer\": \"fp32\"}, "
    "\"optimizer\": {\"type\": \"adamw\", \"impl\": \"foreach\"}";

/* FSDP2 HSDP (dp 4 as 2 x 2) under tp 2: every key as the scenario has it. */
static void test_torchtitan_text(void **state)
{
    (void)state;
    spec_scenario s;
    char sec[2048];
    snprintf(sec, sizeof sec, "%s, \"parallel\": {\"dp\": 4, \"tp\": 2, \"sequence_parallel\": true}, "
             "\"sharding\": {\"strategy\": \"fsdp2\", \"shard_group_size\": 2, "
             "\"reshard_after_forward\": false}", tt_base);
    assert_int_equal(load("llama3-8b.json", sec, &s), SS_OK);
    char *text = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(jobw_torchtitan(&s, "w", "job", &text, &err), SS_OK);
    const char *body = strstr(text, "\n[job]");
    assert_non_null(body);
    assert_string_equal(body,
        "\n[job]\ndescription = \"job\"\n"
        "\n[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 2\n"
        "tensor_parallel_degree = 2\npipeline_parallel_degree = 1\ncontext_parallel_degree = 1\n"
        "expert_parallel_degree = 1\nexpert_tensor_parallel_degree = 1\n"
        "enable_async_tensor_parallel = false\nfsdp_reshard_after_forward = \"never\"\n"
        "\n[training]\nlocal_batch_size = 2\nglobal_batch_size = 16\nseq_len = 1024\nsteps = 10\n"
        "enable_cpu_offload = false\ndtype = \"float32\"\nmixed_precision_param = \"bfloat16\"\n"
        "mixed_precision_reduce = \"bfloat16\"\n"
        "\n[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n"
        "\n[optimizer]\nname = \"AdamW\"\nimplementation = \"foreach\"\n"
        "\n[compile]\nenable = false\n");
    assert_non_null(strstr(text, "the model \"Llama-3 8B\""));
    free(text);
    spec_scenario_fini(&s);
    /* context parallel's ring (cp_comm_type p2p) is the alltoall rotate method */
    snprintf(sec, sizeof sec, "%s, \"parallel\": {\"dp\": 4, \"cp\": 2, \"cp_comm_type\": "
             "\"p2p\"}, \"sharding\": {\"strategy\": \"fsdp2\"}", tt_base);
    assert_int_equal(load("llama3-8b.json", sec, &s), SS_OK);
    assert_int_equal(jobw_torchtitan(&s, "w", "job", &text, &err), SS_OK);
    assert_non_null(strstr(text, "context_parallel_degree = 2\n"
                                 "context_parallel_rotate_method = \"alltoall\"\n"));
    free(text);
    spec_scenario_fini(&s);
    /* what torch.compile covers: the blocks' kernels and the loss each say
     * so in [compile] components (torchtitan compiles both by default) */
    static const struct {
        const char *kernels, *loss, *want;
    } compiled[] = {
        {"compiled", "eager", "\n[compile]\nenable = true\ncomponents = [\"model\"]\n"},
        {"eager", "compiled", "\n[compile]\nenable = true\ncomponents = [\"loss\"]\n"},
        {"compiled", "compiled", "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n"},
    };
    for (size_t k = 0; k < sizeof compiled / sizeof *compiled; k++) {
        char tr[256];
        snprintf(tr, sizeof tr, "\"kernels\": \"%s\", \"loss\": \"%s\", ", compiled[k].kernels,
                 compiled[k].loss);
        /* tt_base with these two keys first in its training object */
        const char *at = strchr(tt_base, '{') + 1;
        snprintf(sec, sizeof sec, "%.*s%s%s, \"parallel\": {\"dp\": 8}, "
                 "\"sharding\": {\"strategy\": \"fsdp2\"}", (int)(at - tt_base), tt_base, tr, at);
        assert_int_equal(load("llama3-8b.json", sec, &s), SS_OK);
        assert_int_equal(jobw_torchtitan(&s, "w", "job", &text, &err), SS_OK);
        assert_non_null(strstr(text, compiled[k].want));
        free(text);
        spec_scenario_fini(&s);
    }
}

/* Each refusal names the setting (the message fragment) at `where`. */
static void test_torchtitan_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *msg;
    } cases[] = {
        {"\"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": \"full_shard\"}",
         "strategy full_shard: torchtitan runs FSDP2"},
        {"\"parallel\": {\"dp\": 4, \"tp\": 2}, \"sharding\": {\"strategy\": \"ddp\"}",
         "strategy ddp with tp, cp, pp or ep"},
        {"\"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": \"fsdp2\", "
         "\"reshard_after_forward\": 2}",
         "reshard_after_forward = 2 ranks"},
        {"\"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": \"fsdp2\", "
         "\"modules_to_forward_prefetch\": 2}",
         "explicit FSDP2 prefetch"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        spec_scenario s;
        char sec[2048], *text = NULL;
        snprintf(sec, sizeof sec, "%s, %s", tt_base, cases[k].extra);
        assert_int_equal(load("llama3-8b.json", sec, &s), SS_OK);
        ss_err err;
        ss_err_clear(&err);
        assert_int_equal(jobw_torchtitan(&s, "--w", "job", &text, &err), SS_E_INPUT);
        assert_null(text);
        assert_string_equal(err.where, "--w");
        if (!strstr(err.msg, cases[k].msg)) fail_msg("case %zu: %s", k, err.msg);
        spec_scenario_fini(&s);
    }
    /* an attention kernel other than SDPA's flash backend */
    spec_scenario s;
    char *text = NULL;
    assert_int_equal(load("llama3-8b.json",
                          "\"training\": {\"micro_batch\": 1, \"seq_len\": 1024, "
                          "\"attention\": \"cudnn\"}, \"parallel\": {\"dp\": 8}, "
                          "\"optimizer\": {\"type\": \"adamw\"}, "
                          "\"sharding\": {\"strategy\": \"fsdp2\"}", &s), SS_OK);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(jobw_torchtitan(&s, "--w", "job", &text, &err), SS_E_INPUT);
    assert_null(text);
    assert_non_null(strstr(err.msg, "training.attention cudnn"));
    spec_scenario_fini(&s);
}

#define MG_TRAINING(extra)                                                                        \
    "\"training\": {\"micro_batch\": 1, \"seq_len\": 512, \"grad_accum\": 4, "                    \
    "\"recompute\": \"selective\"" extra "}, "
static const char mg_base[] =
    MG_TRAINING("")
    "\"precision\": {\"param\": \"bf16\", \"compute\": \"bf16\"}, "
    "\"optimizer\": {\"type\": \"adamw\", \"impl\": \"fused\"}";
static const char mg_eager[] =
    MG_TRAINING(", \"kernels\": \"eager\"")
    "\"precision\": {\"param\": \"bf16\", \"compute\": \"bf16\"}, "
    "\"optimizer\": {\"type\": \"adamw\", \"impl\": \"fused\"}";

/* Megatron: tp 2, an interleaved pipeline of 2 x 2 chunks over the tiny
 * GPT's 4 layers (1 layer a chunk), cp 1, dp 2, Megatron's rank order;
 * distributed optimizer without overlaps and its default buckets of 40M
 * parameters (written out: Megatron's own default depends on dp), bf16
 * reduce, Transformer Engine's fused (cuDNN) attention that auto gives
 * Megatron-core on the H100. */
static void test_megatron_text(void **state)
{
    (void)state;
    spec_scenario s;
    char sec[2048], *text = NULL;
    snprintf(sec, sizeof sec, "%s, \"parallel\": {\"dp\": 2, \"tp\": 2, \"pp\": 2, "
             "\"pipeline_schedule\": \"interleaved\", \"virtual_stages\": 2, "
             "\"order\": \"tp-cp-ep-dp-pp\"}, \"sharding\": {\"strategy\": \"megatron\", "
             "\"grad_reduce_in_fp32\": false}", mg_base);
    assert_int_equal(load("tiny-gpt.json", sec, &s), SS_OK);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(jobw_megatron(&s, "w", "job", &text, &err), SS_OK);
    const char *body = strstr(text, "\n--");
    assert_non_null(body);
    assert_string_equal(body + 1,
        "--tensor-model-parallel-size 2\n--pipeline-model-parallel-size 2\n"
        "--num-layers-per-virtual-pipeline-stage 1\n--context-parallel-size 1\n"
        "--expert-model-parallel-size 1\n--micro-batch-size 1\n--global-batch-size 8\n"
        "--seq-length 512\n--use-distributed-optimizer\n--ddp-bucket-size 40000000\n"
        "--grad-reduce-in-bf16\n--attention-backend fused\n--attention-dropout 0\n"
        "--recompute-granularity selective\n--bf16\n--optimizer adam\n");
    free(text);
    spec_scenario_fini(&s);
}

/* fp8 parameters gathered in fp8 (Megatron-Bridge's FP8 recipes): Megatron-
 * LM's --fp8-param-gather, which it accepts only with the distributed
 * optimizer (megatron/training/arguments.py). */
static const char mg_fp8[] =
    MG_TRAINING("")
    "\"precision\": {\"param\": \"bf16\", \"compute\": \"fp8\", \"grad\": \"bf16\", "
    "\"reduce\": \"bf16\", \"master\": \"fp32\", \"optimizer\": \"fp32\", "
    "\"fp8\": {\"recipe\": \"tensorwise\", \"all_gather\": true}}, "
    "\"optimizer\": {\"type\": \"adamw\", \"impl\": \"fused\"}";

static void test_megatron_fp8_param_gather(void **state)
{
    (void)state;
    for (int dist = 1; dist >= 0; dist--) {
        spec_scenario s;
        char sec[2048], *text = NULL;
        snprintf(sec, sizeof sec, "%s, \"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": "
                 "\"megatron\", \"use_distributed_optimizer\": %s}", mg_fp8, dist ? "true" : "false");
        assert_int_equal(load("tiny-gpt.json", sec, &s), SS_OK);
        ss_err err;
        ss_err_clear(&err);
        int rc = jobw_megatron(&s, "--m", "job", &text, &err);
        if (dist) {
            assert_int_equal(rc, SS_OK);
            assert_non_null(strstr(text, "--fp8-format hybrid\n--fp8-recipe tensorwise\n"
                                         "--fp8-param-gather\n"));
        } else {
            assert_int_equal(rc, SS_E_INPUT);
            assert_null(text);
            assert_non_null(strstr(err.msg, "--fp8-param-gather needs --use-distributed-optimizer"));
        }
        free(text);
        spec_scenario_fini(&s);
    }
}

static void test_megatron_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *msg;
    } cases[] = {
        {"\"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": \"zero1\"}",
         "strategy zero1: Megatron-LM runs Megatron-core's DDP"},
        {"\"parallel\": {\"dp\": 2, \"pp\": 4}, \"sharding\": {\"strategy\": \"megatron\"}",
         "rank order tp-cp-pp-dp"},
        {"\"parallel\": {\"dp\": 8}, \"sharding\": {\"strategy\": \"megatron\"}",
         "training.kernels eager"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        spec_scenario s;
        char sec[2048], *text = NULL;
        snprintf(sec, sizeof sec, "%s, %s", k == 2 ? mg_eager : mg_base, cases[k].extra);
        assert_int_equal(load("tiny-gpt.json", sec, &s), SS_OK);
        ss_err err;
        ss_err_clear(&err);
        assert_int_equal(jobw_megatron(&s, "--m", "job", &text, &err), SS_E_INPUT);
        assert_null(text);
        if (!strstr(err.msg, cases[k].msg)) fail_msg("case %zu: %s", k, err.msg);
        spec_scenario_fini(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torchtitan_text), cmocka_unit_test(test_torchtitan_refusals),
        cmocka_unit_test(test_megatron_text), cmocka_unit_test(test_megatron_refusals),
        cmocka_unit_test(test_megatron_fp8_param_gather)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
