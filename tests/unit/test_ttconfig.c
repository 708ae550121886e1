/* torchtitan job configs (io/ttconfig.c, io/toml_shim.cpp): TOML becomes
 * the JSON tree torchtitan's tables describe; each key of [parallelism],
 * [training], [activation_checkpoint] and [optimizer] lands on the scenario
 * key it stands for; torchtitan's defaults fill what a file omits; every
 * value shardsim does not model is an error naming the TOML key.
 *
 * Where the expected numbers come from: torchtitan's config/job_config.py
 * at commit 238fa99 (defaults: local_batch_size 8, seq_len 2048,
 * data_parallel_shard_degree -1, mixed_precision_param bfloat16,
 * mixed_precision_reduce float32, optimizer AdamW "fused", AC "selective"
 * with selective_ac_option "2"), its parallelize.py (apply_fsdp: blocks
 * reshard unless pipelined, [norm, output] only under "always") and
 * pipeline_parallel.py (generate_llm_fqn_per_model_part, whose docstring
 * example is split(2 stages, 3 layers, weights 2 and 2) = [2, 1]); the
 * splits below are worked by hand in each comment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../../sim/io/json.h"
#include "../../sim/io/toml_shim.h"
#include "../../sim/io/ttconfig.h"

/* The sections of `json` (a config's tables as JSON) on gpus GPUs and a
 * 32-layer model; NULL with *err filled on error. */
static cJSON *map(const char *json, uint64_t gpus, ss_err *err)
{
    js_doc d = {0};
    cJSON *out = NULL;
    ss_err_clear(err);
    int rc = js_doc_parse(&d, "t.json", json, strlen(json), err);
    if (!rc) rc = ttc_sections(js_root(&d), gpus, 32, &out, err);
    js_doc_fini(&d);
    return rc ? NULL : out;
}

static cJSON *map_ok(const char *json, uint64_t gpus)
{
    ss_err err;
    cJSON *o = map(json, gpus, &err);
    if (!o) fail_msg("%s: %s: %s", json, err.where, err.msg);
    return o;
}

/* o.sec.key as a number / string (fails the test when absent). */
static double num(const cJSON *o, const char *sec, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, sec), key);
    if (!cJSON_IsNumber(v)) fail_msg("%s.%s: not a number", sec, key);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *sec, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, sec), key);
    if (!cJSON_IsString(v)) fail_msg("%s.%s: not a string", sec, key);
    return v->valuestring;
}

static bool flag(const cJSON *o, const char *sec, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, sec), key);
    if (!cJSON_IsBool(v)) fail_msg("%s.%s: not a boolean", sec, key);
    return cJSON_IsTrue(v);
}

#define NO_AC "\"activation_checkpoint\": {\"mode\": \"none\"}"

/* Nothing but AC off: torchtitan's defaults on 8 GPUs. */
static void test_defaults(void **state)
{
    (void)state;
    cJSON *o = map_ok("{" NO_AC "}", 8);
    assert_int_equal(num(o, "parallel", "dp"), 8); /* shard -1: the whole world */
    assert_int_equal(num(o, "parallel", "tp"), 1);
    assert_int_equal(num(o, "parallel", "pp"), 1);
    assert_int_equal(num(o, "training", "micro_batch"), 8);
    assert_int_equal(num(o, "training", "seq_len"), 2048);
    assert_int_equal(num(o, "training", "grad_accum"), 1);
    assert_string_equal(str(o, "training", "recompute"), "none");
    assert_string_equal(str(o, "precision", "param"), "fp32");
    assert_string_equal(str(o, "precision", "compute"), "bf16");
    assert_string_equal(str(o, "precision", "grad"), "fp32");
    assert_string_equal(str(o, "precision", "reduce"), "fp32");
    assert_string_equal(str(o, "precision", "master"), "none");
    assert_string_equal(str(o, "precision", "optimizer"), "fp32");
    assert_string_equal(str(o, "optimizer", "type"), "adamw");
    assert_string_equal(str(o, "optimizer", "impl"), "fused");
    assert_string_equal(str(o, "sharding", "strategy"), "fsdp2");
    assert_int_equal(num(o, "sharding", "shard_group_size"), 8);
    /* blocks reshard, [norm, output] stays unsharded after forward */
    const cJSON *raf = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "sharding"), "reshard_after_forward");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(raf, "default")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(raf, "output")));
    assert_null(cJSON_GetObjectItem(o, "offload"));
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(o, "assumptions")) >= 1);
    cJSON_Delete(o);
}

/* Every mapped key of [parallelism], [training], [activation_checkpoint]
 * and [optimizer], each changed from its default. */
static void test_each_key(void **state)
{
    (void)state;
    /* HSDP: 2 replicas of 8 on 16 GPUs; the rest of [training] */
    cJSON *o = map_ok("{\"parallelism\": {\"data_parallel_replicate_degree\": 2},"
                      " \"training\": {\"local_batch_size\": 2, \"seq_len\": 8192,"
                      "  \"global_batch_size\": 128, \"mixed_precision_param\": \"float32\","
                      "  \"mixed_precision_reduce\": \"bfloat16\", \"enable_cpu_offload\": true,"
                      "  \"steps\": 10, \"max_norm\": 1.0},"
                      " \"activation_checkpoint\": {\"mode\": \"selective\", \"selective_ac_option\": \"op\"},"
                      " \"optimizer\": {\"name\": \"Adam\", \"implementation\": \"for-loop\", \"lr\": 1e-4}}", 16);
    assert_int_equal(num(o, "parallel", "dp"), 16);
    assert_int_equal(num(o, "sharding", "shard_group_size"), 8);
    assert_int_equal(num(o, "training", "micro_batch"), 2);
    assert_int_equal(num(o, "training", "seq_len"), 8192);
    assert_int_equal(num(o, "training", "grad_accum"), 4); /* 128 / (2 x 16) */
    assert_string_equal(str(o, "training", "recompute"), "selective_op");
    assert_string_equal(str(o, "precision", "compute"), "fp32");
    assert_string_equal(str(o, "precision", "reduce"), "bf16");
    assert_string_equal(str(o, "optimizer", "type"), "adam");
    assert_string_equal(str(o, "optimizer", "impl"), "for_loop");
    assert_string_equal(str(o, "offload", "params"), "cpu");
    assert_string_equal(str(o, "offload", "optimizer"), "cpu");
    cJSON_Delete(o);

    /* TP 2 with async TP (which torchtitan allows only compiled), CP 2,
     * EP 2, bf16 training, full AC, never reshard */
    o = map_ok("{\"parallelism\": {\"tensor_parallel_degree\": 2, \"enable_async_tensor_parallel\": true,"
               "  \"context_parallel_degree\": 2, \"expert_parallel_degree\": 2,"
               "  \"expert_tensor_parallel_degree\": 2, \"fsdp_reshard_after_forward\": \"never\"},"
               " \"compile\": {\"enable\": true}, \"training\": {\"dtype\": \"bfloat16\"},"
               " \"activation_checkpoint\": {\"mode\": \"full\"}}", 16);
    assert_int_equal(num(o, "parallel", "dp"), 4); /* 16 / (2 x 2) */
    assert_int_equal(num(o, "parallel", "tp"), 2);
    assert_true(flag(o, "parallel", "sequence_parallel"));
    assert_true(flag(o, "parallel", "async_tp"));
    assert_int_equal(num(o, "parallel", "cp"), 2);
    assert_int_equal(num(o, "parallel", "ep"), 2);
    assert_int_equal(num(o, "parallel", "etp"), 2);
    assert_false(flag(o, "sharding", "reshard_after_forward"));
    assert_string_equal(str(o, "precision", "param"), "bf16");
    assert_string_equal(str(o, "precision", "grad"), "bf16");
    assert_string_equal(str(o, "precision", "optimizer"), "bf16");
    assert_string_equal(str(o, "training", "recompute"), "full");
    cJSON_Delete(o);

    /* selective_ac_option "1": every block checkpointed, i.e. full AC;
     * "always": the [norm, output] unit reshards too; replicate only: DDP */
    o = map_ok("{\"activation_checkpoint\": {\"selective_ac_option\": \"1\"},"
               " \"parallelism\": {\"fsdp_reshard_after_forward\": \"always\"}}", 8);
    assert_string_equal(str(o, "training", "recompute"), "full");
    assert_true(flag(o, "sharding", "reshard_after_forward"));
    cJSON_Delete(o);
    /* torchtitan's default selective_ac_option "2" (and any N): one block
     * in every N checkpointed whole (its ac_freq), full recomputation on
     * every N-th layer; [compile] gives the compiled kernels, the float8
     * converter Float8 linears with [float8]'s recipe and all-gather */
    o = map_ok("{\"training\": {}}", 8);
    assert_string_equal(str(o, "training", "recompute"), "full");
    assert_int_equal(num(o, "training", "recompute_every"), 2);
    assert_string_equal(str(o, "training", "kernels"), "eager");
    cJSON_Delete(o);
    o = map_ok("{\"activation_checkpoint\": {\"selective_ac_option\": \"3\"},"
               " \"compile\": {\"enable\": true}, \"model\": {\"converters\": [\"float8\"]},"
               " \"float8\": {\"recipe_name\": \"rowwise\", \"enable_fsdp_float8_all_gather\": true}}", 8);
    assert_int_equal(num(o, "training", "recompute_every"), 3);
    assert_string_equal(str(o, "training", "kernels"), "compiled");
    /* [compile] components default to the model and the loss */
    assert_string_equal(str(o, "training", "loss"), "compiled");
    assert_string_equal(str(o, "precision", "compute"), "fp8");
    cJSON *f8 = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "precision"), "fp8");
    assert_string_equal(cJSON_GetObjectItem(f8, "recipe")->valuestring, "rowwise");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f8, "all_gather")));
    cJSON_Delete(o);
    /* components name what is compiled: the model alone keeps the eager
     * loss (no loss key: auto), the loss alone the eager kernels */
    o = map_ok("{" NO_AC ", \"compile\": {\"enable\": true, \"components\": [\"model\"]}}", 8);
    assert_string_equal(str(o, "training", "kernels"), "compiled");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "training"), "loss"));
    cJSON_Delete(o);
    o = map_ok("{" NO_AC ", \"compile\": {\"enable\": true, \"components\": [\"loss\"]}}", 8);
    assert_string_equal(str(o, "training", "kernels"), "eager");
    assert_string_equal(str(o, "training", "loss"), "compiled");
    cJSON_Delete(o);
    o = map_ok("{" NO_AC ", \"compile\": {\"enable\": false, \"components\": [\"loss\"]}}", 8);
    assert_string_equal(str(o, "training", "kernels"), "eager");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "training"), "loss"));
    cJSON_Delete(o);
    o = map_ok("{" NO_AC ", \"parallelism\": {\"data_parallel_replicate_degree\": 4,"
               " \"data_parallel_shard_degree\": 1}}", 4);
    assert_string_equal(str(o, "sharding", "strategy"), "ddp");
    assert_int_equal(num(o, "parallel", "dp"), 4);
    cJSON_Delete(o);
    /* context parallel's rotate methods: allgather (the default), alltoall
     * (K and V passed round the ring: cp_comm_type p2p) */
    o = map_ok("{" NO_AC ", \"parallelism\": {\"context_parallel_degree\": 2}}", 8);
    assert_string_equal(str(o, "parallel", "cp_comm_type"), "all_gather");
    cJSON_Delete(o);
    o = map_ok("{" NO_AC ", \"parallelism\": {\"context_parallel_degree\": 2,"
               " \"context_parallel_rotate_method\": \"alltoall\"}}", 8);
    assert_string_equal(str(o, "parallel", "cp_comm_type"), "p2p");
    cJSON_Delete(o);
}

/* Pipelines: micro-batches from local_batch_size / microbatch size, the
 * layer split torchtitan computes, no reshard after forward by default. */
static void test_pipeline(void **state)
{
    (void)state;
    /* 1F1B, pp 2, 32 layers: 34 weighted over 2 stages of 17, first and
     * last less one: [16, 16] */
    cJSON *o = map_ok("{" NO_AC ", \"parallelism\": {\"pipeline_parallel_degree\": 2,"
                      " \"pipeline_parallel_microbatch_size\": 2}}", 8);
    assert_int_equal(num(o, "parallel", "pp"), 2);
    assert_int_equal(num(o, "parallel", "dp"), 4);
    assert_int_equal(num(o, "training", "micro_batch"), 2);
    assert_int_equal(num(o, "training", "grad_accum"), 4); /* 8 / 2 */
    assert_string_equal(str(o, "parallel", "pipeline_schedule"), "1f1b");
    const cJSON *pl = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "parallel"), "pipeline_layers");
    assert_int_equal(cJSON_GetArraySize(pl), 2);
    assert_int_equal(cJSON_GetArrayItem(pl, 0)->valueint, 16);
    assert_int_equal(cJSON_GetArrayItem(pl, 1)->valueint, 16);
    assert_false(flag(o, "sharding", "reshard_after_forward"));
    cJSON_Delete(o);
    /* Interleaved1F1B (any case, as torch's get_schedule_class), pp 2:
     * 2 stages per rank, 34 over 4 = 8 rest 2: [9-1, 9, 8, 8-1] */
    o = map_ok("{" NO_AC ", \"parallelism\": {\"pipeline_parallel_degree\": 2,"
               " \"pipeline_parallel_schedule\": \"interleaved1f1b\"}}", 8);
    assert_string_equal(str(o, "parallel", "pipeline_schedule"), "interleaved");
    assert_int_equal(num(o, "parallel", "virtual_stages"), 2);
    pl = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "parallel"), "pipeline_layers");
    int want[] = {8, 9, 8, 7};
    for (int i = 0; i < 4; i++) assert_int_equal(cJSON_GetArrayItem(pl, i)->valueint, want[i]);
    cJSON_Delete(o);

    uint32_t c[4];
    assert_true(ttc_split_layers(3, 2, 2, 2, c)); /* torchtitan's docstring example */
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 1);
    assert_false(ttc_split_layers(2, 8, 1, 1, c)); /* more stages than weighted layers */
    assert_false(ttc_split_layers(4, 3, 3, 1, c)); /* input weight 3 above the share of 2 */
}

static void fails(const char *json, uint64_t gpus, const char *where, const char *frag)
{
    ss_err err;
    cJSON *o = map(json, gpus, &err);
    if (o) {
        cJSON_Delete(o);
        fail_msg("accepted: %s", json);
    }
    if (!strstr(err.where, where) || !strstr(err.msg, frag))
        fail_msg("%s\n  got %s: %s\n  want %s: ...%s", json, err.where, err.msg, where, frag);
}

/* Each bad input fails at its key with what was expected. */
static void test_errors(void **state)
{
    (void)state;
    fails("{\"activation_checkpoint\": {\"selective_ac_option\": \"2x\"}}", 8,
          "$.activation_checkpoint.selective_ac_option", "expected \"op\" (per-op SAC) or a "
          "block frequency N");
    fails("{\"activation_checkpoint\": {\"mode\": \"memory_budget\"}}", 8,
          "$.activation_checkpoint.mode", "memory_budget AC");
    fails("{" NO_AC ", \"trainning\": {}}", 8, "$.trainning", "unknown torchtitan section [trainning]");
    fails("{" NO_AC ", \"compile\": {\"enable\": true, \"components\": [\"model\", \"optimizer\"]}}", 8,
          "$.compile.components[1]", "compile component \"optimizer\": expected \"model\" or \"loss\"");
    fails("{" NO_AC ", \"parallelism\": {\"tensor_parallel\": 2}}", 8, "$.parallelism",
          "tensor_parallel");
    fails("{" NO_AC ", \"parallelism\": {\"data_parallel_shard_degree\": 4}}", 8, "$.parallelism",
          "= 4: expected the world size, the topology's 8 GPUs");
    /* the -1 of torchtitan's default, named at the section that omits it */
    fails("{" NO_AC ", \"parallelism\": {\"tensor_parallel_degree\": 3}}", 8,
          "$.parallelism", "data_parallel_shard_degree = -1 takes the rest of the world, but "
          "replicate x tp x pp x cp = 3 does not divide the 8 GPUs");
    fails("{" NO_AC ", \"parallelism\": {\"data_parallel_shard_degree\": -1, \"tensor_parallel_degree\": 3}}",
          8, "$.parallelism.data_parallel_shard_degree", "= 3 does not divide the 8 GPUs");
    fails("{" NO_AC ", \"parallelism\": {\"data_parallel_shard_degree\": 0}}", 8,
          "$.parallelism.data_parallel_shard_degree", "");
    fails("{" NO_AC ", \"parallelism\": {\"tensor_parallel_degree\": 2, "
          "\"enable_async_tensor_parallel\": true}}", 8,
          "$.parallelism.enable_async_tensor_parallel", "Async TP requires");
    fails("{" NO_AC ", \"parallelism\": {\"tensor_parallel_degree\": 2, "
          "\"data_parallel_replicate_degree\": 4, \"data_parallel_shard_degree\": 1}}", 8,
          "$.parallelism.data_parallel_replicate_degree", "DDP has not supported > 1D");
    fails("{" NO_AC ", \"parallelism\": {\"pipeline_parallel_degree\": 2, "
          "\"pipeline_parallel_schedule\": \"GPipe\"}}", 8,
          "$.parallelism.pipeline_parallel_schedule", "found \"GPipe\"");
    fails("{" NO_AC ", \"parallelism\": {\"context_parallel_rotate_method\": \"ring\"}}", 8,
          "$.parallelism.context_parallel_rotate_method",
          "expected \"allgather\" or \"alltoall\"; found \"ring\"");
    fails("{" NO_AC ", \"parallelism\": {\"expert_parallel_comm_backend\": \"deepep\"}}", 8,
          "$.parallelism.expert_parallel_comm_backend", "DeepEP");
    fails("{" NO_AC ", \"model\": {\"converters\": [\"mx\"]}}", 8, "$.model.converters[0]",
          "model converter \"mx\" is not modelled");
    fails("{" NO_AC ", \"float8\": {\"recipe_name\": \"mxfp8\"}}", 8, "$.float8.recipe_name",
          "found \"mxfp8\"");
    fails("{" NO_AC ", \"optimizer\": {\"name\": \"Muon\"}}", 8, "$.optimizer.name",
          "found \"Muon\"");
    fails("{" NO_AC ", \"optimizer\": {\"early_step_in_backward\": true}}", 8,
          "$.optimizer.early_step_in_backward", "expected false");
    fails("{" NO_AC ", \"training\": {\"batch_size\": 2, \"local_batch_size\": 2}}", 8,
          "$.training.local_batch_size", "give one");
    fails("{" NO_AC ", \"training\": {\"global_batch_size\": 100}}", 8,
          "$.training.global_batch_size", "not a multiple of local_batch_size");
    fails("{" NO_AC ", \"training\": {\"dtype\": \"float16\"}}", 8, "$.training.dtype",
          "found \"float16\"");
    fails("{" NO_AC ", \"fault_tolerance\": {\"enable\": true}}", 8,
          "$.fault_tolerance.enable", "torchft");
    fails("{" NO_AC ", \"parallelism\": {\"pipeline_parallel_degree\": 2,"
          " \"pipeline_parallel_microbatch_size\": 3}}", 8,
          "$.parallelism.pipeline_parallel_microbatch_size", "does not divide local_batch_size = 8");
    /* the sections that do not change a step are read for nothing */
    cJSON *o = map_ok("{" NO_AC ", \"job\": {\"anything\": 1}, \"metrics\": {\"log_freq\": 1},"
                      " \"checkpoint\": {\"enable\": true}, \"lr_scheduler\": {}}", 8);
    cJSON_Delete(o);
}

/* TOML in: types, errors with line and column, keys as TOML paths. */
static void test_toml(void **state)
{
    (void)state;
    ss_err err;
    cJSON *j = NULL;
    if (!toml_available()) {
        ss_err_clear(&err);
        assert_int_not_equal(toml_to_json("x.toml", "a = 1", 5, &j, &err), SS_OK);
        assert_non_null(strstr(err.msg, "libtomlplusplus-dev"));
        skip();
    }
    const char *t = "[training]\nseq_len = 8192 # tokens\nmax_norm = 1.0\n"
                    "[quantize.linear.float8]\nfilter_fqns = [\"output\"]\n"
                    "[job]\nwhen = 2026-02-23\nok = true\n";
    ss_err_clear(&err);
    assert_int_equal(toml_to_json("x.toml", t, strlen(t), &j, &err), SS_OK);
    const cJSON *tr = cJSON_GetObjectItem(j, "training");
    assert_int_equal(cJSON_GetObjectItem(tr, "seq_len")->valueint, 8192);
    assert_true(cJSON_GetObjectItem(tr, "max_norm")->valuedouble == 1.0);
    const cJSON *f8 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "quantize"),
                                                              "linear"), "float8");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(f8, "filter_fqns"), 0)->valuestring,
                        "output");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "job"), "when")->valuestring,
                        "2026-02-23");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "job"), "ok")));
    cJSON_Delete(j);

    ss_err_clear(&err);
    const char *bad = "[training]\nseq_len = = 3\n";
    assert_int_equal(toml_to_json("x.toml", bad, strlen(bad), &j, &err), SS_E_INPUT);
    assert_string_equal(err.where, "x.toml:2:11");
    assert_non_null(strstr(err.msg, "not valid TOML"));
    ss_err_clear(&err);
    const char *big = "[training]\nsteps = 9007199254740993\n";
    assert_int_equal(toml_to_json("x.toml", big, strlen(big), &j, &err), SS_E_INPUT);
    assert_string_equal(err.where, "x.toml: training.steps");
    ss_err_clear(&err);
    const char *inf = "[optimizer]\nlr = inf\n";
    assert_int_equal(toml_to_json("x.toml", inf, strlen(inf), &j, &err), SS_E_INPUT);
    assert_string_equal(err.where, "x.toml: optimizer.lr");

    /* a mapping error in a .toml file names the key as TOML spells it */
    js_doc d = {0};
    const char *tp3 = "[activation_checkpoint]\nmode = \"none\"\n[parallelism]\ntensor_parallel_degree = 3\n";
    ss_err_clear(&err);
    assert_int_equal(toml_to_json("cfg.toml", tp3, strlen(tp3), &d.root, &err), SS_OK);
    snprintf(d.file, sizeof d.file, "cfg.toml");
    cJSON *o = NULL;
    assert_int_equal(ttc_sections(js_root(&d), 8, 32, &o, &err), SS_E_INPUT);
    assert_string_equal(err.where, "cfg.toml: parallelism"); /* shard degree omitted: -1 */
    js_doc_fini(&d);
}

/* The shipped llama3_70b.toml on 64 GPUs: FSDP 8 x TP 8, local batch 8 x
 * 8192 tokens, full AC (the file's own values). */
static void test_shipped(void **state)
{
    (void)state;
    if (!toml_available()) skip();
    js_doc d = {0};
    ss_err err;
    cJSON *o = NULL;
    ss_err_clear(&err);
    snprintf(d.file, sizeof d.file, "%s", SS_SOURCE_DIR "/configs/torchtitan/llama3_70b.toml");
    if (ttc_read(d.file, &d.root, &err) || ttc_sections(js_root(&d), 64, 80, &o, &err))
        fail_msg("%s: %s", err.where, err.msg);
    assert_int_equal(num(o, "parallel", "dp"), 8);
    assert_int_equal(num(o, "parallel", "tp"), 8);
    assert_true(flag(o, "parallel", "sequence_parallel"));
    assert_int_equal(num(o, "training", "micro_batch"), 8);
    assert_int_equal(num(o, "training", "seq_len"), 8192);
    assert_string_equal(str(o, "training", "recompute"), "full");
    assert_true(flag(o, "sharding", "reshard_after_forward")); /* a layout: plain true */
    cJSON_Delete(o);
    js_doc_fini(&d);
}

/* The shipped deepseek_v3_671b.toml on 256 GPUs: FSDP over all of them,
 * local batch 4 x 4096, per-op SAC, compile recorded (the file's values);
 * its [model] is the shipped DeepSeek-V3 file. */
static void test_shipped_deepseek(void **state)
{
    (void)state;
    if (!toml_available()) skip();
    js_doc d = {0};
    ss_err err;
    cJSON *o = NULL;
    ss_err_clear(&err);
    snprintf(d.file, sizeof d.file, "%s", SS_SOURCE_DIR "/configs/torchtitan/deepseek_v3_671b.toml");
    if (ttc_read(d.file, &d.root, &err) || ttc_sections(js_root(&d), 256, 61, &o, &err))
        fail_msg("%s: %s", err.where, err.msg);
    assert_int_equal(num(o, "parallel", "dp"), 256);
    assert_int_equal(num(o, "training", "micro_batch"), 4);
    assert_int_equal(num(o, "training", "seq_len"), 4096);
    assert_string_equal(str(o, "training", "recompute"), "selective_op");
    const cJSON *notes = cJSON_GetObjectItem(o, "assumptions");
    bool compile = false;
    for (int i = 0; i < cJSON_GetArraySize(notes); i++)
        compile = compile || strstr(cJSON_GetArrayItem(notes, i)->valuestring, "[compile]");
    assert_true(compile);
    assert_string_equal(ttc_shipped_model("deepseek_v3", "671B"), "models/deepseek-v3.json");
    assert_null(ttc_shipped_model("deepseek_v3", "16B"));
    cJSON_Delete(o);
    js_doc_fini(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults), cmocka_unit_test(test_each_key),
        cmocka_unit_test(test_pipeline), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_toml),     cmocka_unit_test(test_shipped),
        cmocka_unit_test(test_shipped_deepseek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
