/* Hugging Face config.json import (io/hfconfig.c): each shipped config in
 * models/hf/ gives the architecture of the hand-written model file it
 * stands for, and the parameter count the Hugging Face implementation gives,
 * to the parameter; fields and families the architecture cannot express are
 * errors that name the file, the JSON path, what was expected and what was
 * found.
 *
 * Exact totals and where they come from:
 *  - Llama 3 8B 8,030,261,248; 70B 70,553,706,496; 3.1 405B 405,853,388,800:
 *    meta-llama/Meta-Llama-3-8B, Meta-Llama-3-70B and Llama-3.1-405B, the
 *    tensors of their bf16 checkpoints (model.safetensors.index.json
 *    total_size / 2 bytes), as tests/e2e/test_models.c and the model files
 *    cite them.
 *  - Mixtral 8x7B 46,702,792,704 (mistralai/Mixtral-8x7B-v0.1, its bf16
 *    index total_size / 2; Mistral AI's announcement: 46.7B total, 12.9B
 *    active).
 *  - GPT-2 XL 1,557,611,200 (openai-community/gpt2-xl, the GPT2LMHeadModel
 *    count; lm_head tied to wte).
 *  - Qwen2.5-0.5B 494,032,768 (Qwen/Qwen2.5-0.5B model card "0.49B";
 *    q/k/v biases, tied embeddings).
 *  - DeepSeek-V3: the model card gives 671B total (without the 14B
 *    multi-token-prediction module, which the Hugging Face class does not
 *    build) and 37B activated; its FP8 checkpoint's index counts scales too,
 *    so the exact figure is the closed form below, checked against both.
 * Each exact figure is also recomputed here from the Hugging Face modules'
 * shapes (hf_dense, hf_deepseek), so a wrong test number cannot hide. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../../sim/io/hfconfig.h"
#include "../../sim/io/json.h"
#include "../../sim/io/scenario.h"
#include "../../sim/plan/plan.h"
#include "../../sim/run/run.h"

/* A scenario around `model` (a JSON value) on 8 H100s. */
static int load(const char *model, spec_scenario *s, ss_err *err)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": %s,"
             " \"topology\": \"%s/topologies/h100x8-hgx.json\", \"parallel\": {\"dp\": 8},"
             " \"training\": {\"micro_batch\": 1, \"seq_len\": 1024},"
             " \"precision\": {\"param\": \"bf16\", \"master\": \"fp32\"},"
             " \"optimizer\": {\"type\": \"adamw\"}, \"sharding\": {\"strategy\": \"full_shard\"}}",
             model, SS_SOURCE_DIR);
    ss_err_clear(err);
    return scn_load_text(SS_SOURCE_DIR "/scenarios/t.json", text, strlen(text), NULL, 0, s, err);
}

static void load_ok(const char *model, spec_scenario *s)
{
    ss_err err;
    if (load(model, s, &err)) fail_msg("%s: %s: %s", model, err.where, err.msg);
}

/* The whole model's parameters and those a token uses, from the plan. */
static void counts(const char *model, uint64_t *total, uint64_t *active)
{
    spec_scenario s;
    plan *p = NULL;
    load_ok(model, &s);
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    *total = p->model_numel;
    *active = p->active_numel;
    plan_free(p);
    spec_scenario_fini(&s);
}

static void same_arch(const spec_arch *x, const spec_arch *y)
{
#define EQ(f) assert_true(x->f == y->f)
    EQ(layers), EQ(hidden), EQ(heads), EQ(kv_heads), EQ(head_dim), EQ(ffn_hidden), EQ(vocab);
    EQ(max_positions), EQ(act), EQ(tied_embeddings), EQ(bias), EQ(layernorm), EQ(qkv_bias);
    EQ(experts), EQ(top_k), EQ(shared_experts), EQ(expert_ffn_hidden), EQ(dense_layers);
    EQ(capacity_factor), EQ(q_lora_rank), EQ(kv_lora_rank), EQ(qk_rope_dim), EQ(qk_nope_dim);
    EQ(v_head_dim);
#undef EQ
}

/* A Llama-shaped dense model as Hugging Face builds it: embedding, per
 * layer two RMSNorms, q/k/v/o (q/k/v biases when qkv_bias) and a gated MLP,
 * final norm, head unless tied. */
static uint64_t hf_dense(uint64_t L, uint64_t h, uint64_t heads, uint64_t kv, uint64_t f,
                         uint64_t V, int tied, int qkv_bias)
{
    uint64_t d = h / heads, qkv = heads * d + 2 * kv * d;
    uint64_t layer = 2 * h + h * qkv + (qkv_bias ? qkv : 0) + heads * d * h + 3 * h * f;
    return V * h * (tied ? 1 : 2) + L * layer + h;
}

/* DeepSeek-V3 as DeepseekV3ForCausalLM builds it: MLA (q_a, q_a_layernorm,
 * q_b, kv_a_proj_with_mqa, kv_a_layernorm, kv_b, o), 3 dense layers, 58 MoE
 * layers of a router (256 x h) and 256 routed + 1 shared SwiGLU expert. */
static uint64_t hf_deepseek_v3(uint64_t *active)
{
    uint64_t h = 7168, V = 129280, H = 128, q = 1536, kv = 512, rope = 64, nope = 128, v = 128;
    uint64_t attn = h + h * q + q + q * H * (nope + rope) + h * (kv + rope) + kv +
                    kv * H * (nope + v) + H * v * h;
    uint64_t expert = 3 * h * 2048, dense = h + 3 * h * 18432;
    uint64_t moe = h + 256 * h + 256 * expert + expert;
    uint64_t total = 2 * V * h + h + 61 * attn + 3 * dense + 58 * moe;
    *active = total - 58 * (256 - 8) * expert;
    return total;
}

static const struct {
    const char *hf, *shipped;
    uint64_t total;
} shipped[] = {
    {"llama3-8b", "llama3-8b", 8030261248ull},
    {"llama3-70b", "llama3-70b", 70553706496ull},
    {"llama3.1-405b", "llama3-405b", 405853388800ull},
    {"mixtral-8x7b", "mixtral-8x7b", 46702792704ull},
    {"gpt2-xl", "gpt2-xl", 1557611200ull},
    {"deepseek-v3", "deepseek-v3", 671026404352ull},
};
#define NSHIPPED (sizeof shipped / sizeof shipped[0])

/* Every shipped config imports to its model file's architecture (so a
 * rotary model gets no position table from max_position_embeddings) and
 * takes the name _name_or_path or else the path it was given. */
static void test_same_architecture(void **state)
{
    (void)state;
    for (size_t i = 0; i < NSHIPPED; i++) {
        char a[256], b[256];
        spec_scenario x, y;
        snprintf(a, sizeof a, "{\"hf_config\": \"../models/hf/%s.json\"}", shipped[i].hf);
        snprintf(b, sizeof b, "\"../models/%s.json\"", shipped[i].shipped);
        load_ok(a, &x);
        load_ok(b, &y);
        assert_true(x.model.is_arch);
        same_arch(&x.model.arch, &y.model.arch);
        assert_int_equal(x.model.arch.max_positions, strcmp(shipped[i].hf, "gpt2-xl") ? 0 : 1024);
        assert_non_null(strstr(x.model.name, shipped[i].hf));
        spec_scenario_fini(&x);
        spec_scenario_fini(&y);
    }
}

/* The plan's count of every imported model equals the published total and
 * the closed form of the Hugging Face modules. */
static void test_parameter_counts(void **state)
{
    (void)state;
    uint64_t want_active;
    uint64_t closed[NSHIPPED] = {
        hf_dense(32, 4096, 32, 8, 14336, 128256, 0, 0),
        hf_dense(80, 8192, 64, 8, 28672, 128256, 0, 0),
        hf_dense(126, 16384, 128, 8, 53248, 128256, 0, 0),
        /* Mixtral: Llama's attention, a router (8 x h) and 8 experts */
        hf_dense(32, 4096, 32, 8, 0, 32000, 0, 0) + 32 * (8 * 4096 + 8 * 3 * 4096 * 14336ull),
        /* GPT-2: wte + wpe, per layer ln_1, c_attn, c_proj, ln_2, c_fc,
         * c_proj (all with biases), ln_f; lm_head tied */
        50257ull * 1600 + 1024 * 1600 +
            48 * (4 * 1600 + 1600 * 4800 + 4800 + 1600 * 1600 + 1600 + 1600 * 6400 + 6400 +
                  6400 * 1600 + 1600) + 2 * 1600,
        hf_deepseek_v3(&want_active),
    };
    for (size_t i = 0; i < NSHIPPED; i++) {
        char m[256];
        uint64_t total, active;
        snprintf(m, sizeof m, "{\"hf_config\": \"../models/hf/%s.json\"}", shipped[i].hf);
        counts(m, &total, &active);
        print_message("  %-14s %16llu parameters, %16llu active\n", shipped[i].hf,
                      (unsigned long long)total, (unsigned long long)active);
        assert_true(total == shipped[i].total);
        assert_true(total == closed[i]);
        if (strcmp(shipped[i].hf, "mixtral-8x7b") == 0) /* 12.9B active, as published */
            assert_true(active > 12.85e9 && active < 12.95e9);
        else if (strcmp(shipped[i].hf, "deepseek-v3") != 0)
            assert_true(active == total);
    }
    /* DeepSeek-V3: 671B and 37B as the model card rounds them */
    uint64_t total, active;
    counts("{\"hf_config\": \"../models/hf/deepseek-v3.json\"}", &total, &active);
    assert_true(active == want_active);
    assert_true(total > 670.5e9 && total < 671.5e9);
    assert_true(active >= 37e9 && active < 38e9);
}

/* The whole step from an imported config is the step from its model file:
 * same time, same peak memory, and the summary's parameter counts (the
 * JSON renders these fields). */
static void test_same_step(void **state)
{
    (void)state;
    const char *pairs[][2] = {{"llama3-8b", "llama3-8b"}, {"deepseek-v3", "deepseek-v3"}};
    for (size_t i = 0; i < 2; i++) {
        char a[256], b[256];
        spec_scenario x, y;
        run_result rx, ry;
        snprintf(a, sizeof a, "{\"hf_config\": \"../models/hf/%s.json\"}", pairs[i][0]);
        snprintf(b, sizeof b, "\"../models/%s.json\"", pairs[i][1]);
        load_ok(a, &x);
        load_ok(b, &y);
        assert_int_equal(run_step(&x, NULL, &rx, NULL), SS_OK);
        assert_int_equal(run_step(&y, NULL, &ry, NULL), SS_OK);
        assert_true(rx.sum.step_ns == ry.sum.step_ns && rx.sum.step_ns > 0);
        assert_true(rx.sum.ranks[0].mem.peak == ry.sum.ranks[0].mem.peak);
        assert_true(rx.sum.parameters == ry.sum.parameters && rx.sum.parameters > 0);
        assert_true(rx.sum.active_parameters == ry.sum.active_parameters);
        assert_int_equal(rx.sum.moe, i == 1);
        run_fini(&rx);
        run_fini(&ry);
        spec_scenario_fini(&x);
        spec_scenario_fini(&y);
    }
}

/* Qwen2.5-0.5B (Qwen/Qwen2.5-0.5B config.json, inline): q/k/v biases and
 * tied embeddings, 494,032,768 parameters; dropping the biases would lose
 * 24 x (896 + 2 x 128). */
static void test_qwen2(void **state)
{
    (void)state;
    const char *cfg =
        "{\"hf_config\": {\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0,"
        " \"bos_token_id\": 151643, \"eos_token_id\": 151643, \"hidden_act\": \"silu\","
        " \"hidden_size\": 896, \"initializer_range\": 0.02, \"intermediate_size\": 4864,"
        " \"max_position_embeddings\": 32768, \"max_window_layers\": 24, \"model_type\": \"qwen2\","
        " \"num_attention_heads\": 14, \"num_hidden_layers\": 24, \"num_key_value_heads\": 2,"
        " \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, \"sliding_window\": 32768,"
        " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
        " \"transformers_version\": \"4.40.1\", \"use_cache\": true, \"use_sliding_window\": false,"
        " \"vocab_size\": 151936}}";
    uint64_t total, active;
    counts(cfg, &total, &active);
    assert_true(total == 494032768ull);
    assert_true(total == hf_dense(24, 896, 14, 2, 4864, 151936, 1, 1));
    assert_true(active == total);
}

/* Sliding windows, as Hugging Face configs state them: Mistral's
 * sliding_window on every layer (Mistral-7B-v0.1: 4096); Qwen's only with
 * use_sliding_window, from max_window_layers on (Qwen2.5-0.5B above has it
 * false: none); layer_types, one entry a layer, as a pattern from the first
 * sliding layer (alternating, GPT-OSS's form; five local to one global,
 * Gemma 3's), and an irregular list is an error naming layer_types. */
static const char *mistral_cfg(const char *extra, char *buf, size_t n)
{
    snprintf(buf, n,
             "{\"hf_config\": {\"architectures\": [\"MistralForCausalLM\"],"
             " \"model_type\": \"mistral\", \"hidden_act\": \"silu\", \"hidden_size\": 512,"
             " \"intermediate_size\": 1024, \"num_attention_heads\": 8, \"num_hidden_layers\": 6,"
             " \"num_key_value_heads\": 2, \"vocab_size\": 1000%s}}",
             extra);
    return buf;
}

static void window_of(const char *extra, uint64_t w, uint64_t first, uint64_t period,
                      uint64_t count)
{
    char buf[2048];
    spec_scenario s;
    load_ok(mistral_cfg(extra, buf, sizeof buf), &s);
    const spec_arch *a = &s.model.arch;
    assert_int_equal(a->window, w);
    if (w) {
        assert_int_equal(a->window_first, first);
        assert_int_equal(a->window_period, period);
        assert_int_equal(a->window_count, count);
    }
    spec_scenario_fini(&s);
}

/* A gated MLP with a GELU (Gemma's GeGLU; Hugging Face's LlamaMLP applies
 * whatever hidden_act names to the gate) is geglu: the same three matrices
 * as SwiGLU, so the same parameters; every GELU spelling maps to it. */
static void test_gated_gelu(void **state)
{
    (void)state;
    static const char *const acts[] = {"silu", "gelu", "gelu_new", "gelu_pytorch_tanh",
                                       "gelu_fast"};
    uint64_t total[5], active;
    for (int i = 0; i < 5; i++) {
        char buf[1024];
        snprintf(buf, sizeof buf,
                 "{\"hf_config\": {\"model_type\": \"llama\", \"hidden_act\": \"%s\","
                 " \"hidden_size\": 512, \"intermediate_size\": 1024, \"num_attention_heads\": 8,"
                 " \"num_hidden_layers\": 2, \"vocab_size\": 1000}}", acts[i]);
        spec_scenario s;
        load_ok(buf, &s);
        assert_int_equal(s.model.arch.act, i ? SPEC_ACT_GEGLU : SPEC_ACT_SWIGLU);
        spec_scenario_fini(&s);
        counts(buf, &total[i], &active);
        assert_int_equal(total[i], total[0]);
    }
}

static void test_sliding_window(void **state)
{
    (void)state;
    window_of(", \"sliding_window\": 4096", 4096, 0, 1, 1);
    window_of(", \"sliding_window\": null", 0, 0, 0, 0);
    window_of(", \"sliding_window\": 4096, \"use_sliding_window\": false", 0, 0, 0, 0);
    window_of(", \"sliding_window\": 4096, \"use_sliding_window\": true, \"max_window_layers\": 4",
              4096, 4, 1, 1);
    const char *alt = "\"sliding_attention\", \"full_attention\"";
    char lt[512];
    snprintf(lt, sizeof lt, ", \"sliding_window\": 128, \"layer_types\": [%s, %s, %s]", alt, alt,
             alt);
    window_of(lt, 128, 0, 2, 1);
    const char *sl = "\"sliding_attention\"", *fu = "\"full_attention\"";
    snprintf(lt, sizeof lt, ", \"sliding_window\": 1024, \"layer_types\": [%s, %s, %s, %s, %s, %s]",
             sl, sl, sl, sl, sl, fu);
    window_of(lt, 1024, 0, 6, 5);
    snprintf(lt, sizeof lt, ", \"sliding_window\": 1024, \"layer_types\": [%s, %s, %s, %s, %s, %s]",
             fu, fu, fu, fu, fu, fu);
    window_of(lt, 0, 0, 0, 0);
    snprintf(lt, sizeof lt, ", \"sliding_window\": 1024, \"layer_types\": [%s, %s, %s, %s, %s, %s]",
             sl, fu, sl, sl, fu, fu);
    char buf[2048];
    spec_scenario s;
    ss_err err;
    assert_int_not_equal(load(mistral_cfg(lt, buf, sizeof buf), &s, &err), SS_OK);
    assert_non_null(strstr(err.where, "layer_types"));
}

/* Qwen3-8B (Qwen/Qwen3-8B config.json, inline): head_dim 128 given, q/k
 * RMSNorms of 128 each per layer, untied: 8,190,735,360 parameters by the
 * closed form (the model card's 8.2B, 8.19B on the checkpoint's page),
 * 36 x 256 more than the same shape without q/k norms. */
static void test_qwen3(void **state)
{
    (void)state;
    const char *cfg =
        "{\"hf_config\": {\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false,"
        " \"attention_dropout\": 0.0, \"bos_token_id\": 151643, \"eos_token_id\": 151645,"
        " \"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 4096,"
        " \"initializer_range\": 0.02, \"intermediate_size\": 12288,"
        " \"max_position_embeddings\": 40960, \"max_window_layers\": 36, \"model_type\": \"qwen3\","
        " \"num_attention_heads\": 32, \"num_hidden_layers\": 36, \"num_key_value_heads\": 8,"
        " \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000,"
        " \"sliding_window\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
        " \"transformers_version\": \"4.51.0\", \"use_cache\": true, \"use_sliding_window\": false,"
        " \"vocab_size\": 151936}}";
    uint64_t total, active;
    counts(cfg, &total, &active);
    assert_true(total == 8190735360ull);
    assert_true(total == hf_dense(36, 4096, 32, 8, 12288, 151936, 0, 0) + 36 * 2 * 128);
}

/* hf_arch on an inline config (file "c.json"): fails with SS_E_INPUT at
 * `where` (the JSON path) with `msg` in the message. */
static void bad(const char *text, const char *where, const char *msg)
{
    js_doc d = {0};
    ss_err err;
    cJSON *a = NULL;
    ss_err_clear(&err);
    assert_int_equal(js_doc_parse(&d, "c.json", text, strlen(text), &err), SS_OK);
    assert_int_equal(hf_arch(js_root(&d), &a, &err), SS_E_INPUT);
    assert_null(a);
    if (!strstr(err.where, "c.json") || !strstr(err.where, where))
        fail_msg("where \"%s\" lacks c.json / \"%s\"", err.where, where);
    if (!strstr(err.msg, msg)) fail_msg("msg \"%s\" lacks \"%s\"", err.msg, msg);
    js_doc_fini(&d);
}

#define LLAMA "\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64," \
    " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100"

/* Each refusal names the field, what was expected and what was found. */
static void test_errors(void **state)
{
    (void)state;
    bad("{" LLAMA ", \"some_new_field\": 1}", "$.some_new_field",
        "unknown field \"some_new_field\" for model_type \"llama\"");
    bad("{\"model_type\": \"falcon\"}", "$.model_type",
        "expected a supported model_type (llama, mistral, qwen2, qwen3, mixtral, "
        "deepseek_v2, deepseek_v3, gpt2), found \"falcon\"");
    bad("{\"hidden_size\": 8}", "$", "missing required key \"model_type\"");
    bad("{" LLAMA ", \"hidden_size\": 32}", "$.hidden_size", "found \"hidden_size\" twice");
    bad("{" LLAMA ", \"architectures\": [\"MistralForCausalLM\"]}", "$.architectures",
        "expected [\"LlamaForCausalLM\"]");
    bad("{" LLAMA ", \"attention_bias\": true}", "$.attention_bias", "expected false, found true");
    bad("{" LLAMA ", \"hidden_act\": \"relu\"}", "$.hidden_act", "found \"relu\"");
    bad("{\"model_type\": \"llama\", \"hidden_size\": 64}", "$",
        "missing required field \"num_hidden_layers\"");
    bad("{" LLAMA ", \"num_key_value_heads\": 2.5}", "$.num_key_value_heads",
        "expected an integer");
    bad("{\"model_type\": \"qwen3\", \"attention_bias\": true}", "$.attention_bias",
        "expected false, found true");
    bad("{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"
        " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100,"
        " \"q_lora_rank\": null}", "$.q_lora_rank", "DeepSeek-V2-Lite");
    bad("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"
        " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100,"
        " \"q_lora_rank\": 16, \"kv_lora_rank\": 8, \"qk_rope_head_dim\": 4,"
        " \"qk_nope_head_dim\": 8, \"v_head_dim\": 8, \"n_routed_experts\": 4,"
        " \"moe_layer_freq\": 2}", "$.moe_layer_freq", "expected 1");
    bad("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 64, \"n_head\": 4,"
        " \"vocab_size\": 100, \"n_positions\": 32, \"tie_word_embeddings\": false}",
        "$.tie_word_embeddings", "expected true");
}

/* The architecture parser still checks what it always did on the imported
 * object: 2 key/value heads do not divide 3 heads, and the error names
 * the config file and the architecture key. */
static void test_single_validation(void **state)
{
    (void)state;
    spec_scenario s;
    ss_err err;
    assert_int_equal(load("{\"hf_config\": {\"model_type\": \"llama\", \"num_hidden_layers\": 2,"
                          " \"hidden_size\": 96, \"num_attention_heads\": 3, \"intermediate_size\": 8,"
                          " \"vocab_size\": 10, \"num_key_value_heads\": 2}}", &s, &err),
                     SS_E_INPUT);
    assert_non_null(strstr(err.msg, "does not divide heads"));
    assert_non_null(strstr(err.where, "(as an architecture): $.kv_heads"));
    /* an unknown model key next to hf_config */
    assert_int_equal(load("{\"hf_config\": {" LLAMA "}, \"blocks\": []}", &s, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "unknown key \"blocks\""));
    /* a missing file names the path and the scenario key */
    assert_int_equal(load("{\"hf_config\": \"no/config.json\"}", &s, &err), SS_E_IO);
    assert_non_null(strstr(err.msg, "$.model.hf_config"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_architecture), cmocka_unit_test(test_parameter_counts),
        cmocka_unit_test(test_same_step),
        cmocka_unit_test(test_qwen2),            cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_gated_gelu),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_single_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
