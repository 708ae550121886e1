#include "hfconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define LIST(...) (const char *const[]){__VA_ARGS__}, \
    sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

/* Fields of every family that change neither the parameters nor the compute
 * of a training step: names, dtypes (the scenario's precision decides),
 * token ids, initialisation, inference caches, norm epsilons, rotary
 * settings (rope_theta, rope_scaling, rope_parameters: frequencies, not
 * tensors), dropout, Llama's pretraining_tp (a numerics split of the same
 * GEMMs) and max_position_embeddings, which for a rotary model only bounds
 * the cos/sin cache (it is not a learned table). */
static const char *const common_keys[] = {
    "_name_or_path", "architectures", "model_type", "auto_map", "torch_dtype", "dtype",
    "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
    "initializer_range", "use_cache", "rms_norm_eps", "rope_theta", "rope_scaling",
    "attention_dropout", "max_position_embeddings", "pretraining_tp", "rope_parameters",
};

typedef int (*hf_map_fn)(js_node c, cJSON *a, ss_err *err);

/* One model_type: its class name, its mapping, and the fields it accepts
 * besides common_keys (those it maps and those known not to matter). */
typedef struct hf_family {
    const char *type, *cls;
    hf_map_fn map;
    const char *const *keys;
    size_t nkeys;
} hf_family;

/* ---- reading fields ---- */

static bool is_null(js_node c, const char *key)
{
    js_node v;
    return js_get(c, key, &v) && cJSON_IsNull(v.j);
}

/* c[key] as an integer >= min; absent or null gives def when not required. */
static int num(js_node c, const char *key, bool required, uint64_t def, uint64_t min,
               uint64_t *out, ss_err *err)
{
    js_node v;
    if (!js_get(c, key, &v) || cJSON_IsNull(v.j)) {
        if (required)
            return js_failf(c, err, "missing required field \"%s\" (an integer, found %s)", key,
                            js_get(c, key, &v) ? "null" : "nothing");
        *out = def;
        return SS_OK;
    }
    return js_u64_val(v, min, 1ull << 32, out, err);
}

/* c[key] must be false (or absent): the architecture has no such part. */
static int must_be_false(js_node c, const char *key, const char *why, ss_err *err)
{
    js_node v;
    bool b = false;
    int rc = js_bool(c, key, false, false, &b, err);
    if (rc || !b) return rc;
    js_get(c, key, &v);
    return js_failf(v, err, "expected false, found true: %s", why);
}

static int put(cJSON *a, const char *key, uint64_t v, ss_err *err)
{
    if (!cJSON_AddNumberToObject(a, key, (double)v))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return SS_OK;
}

static int put_bool(cJSON *a, const char *key, bool v, ss_err *err)
{
    if (!cJSON_AddBoolToObject(a, key, v)) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return SS_OK;
}

static int put_str(cJSON *a, const char *key, const char *v, ss_err *err)
{
    if (!cJSON_AddStringToObject(a, key, v)) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return SS_OK;
}

/* ---- the parts families share ---- */

/* The gated MLP's activation: SiLU is SwiGLU; GELU in any of Hugging
 * Face's spellings (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast) is
 * GeGLU (Gemma). *out is the architecture's name. */
static int gated_act(js_node c, const char **out, ss_err *err)
{
    static const char *const gelus[] = {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast"};
    const char *act;
    js_node v;
    int rc = js_str(c, "hidden_act", false, "silu", &act, err);
    if (rc) return rc;
    *out = "swiglu";
    if (strcmp(act, "silu") == 0) return SS_OK;
    *out = "geglu";
    for (size_t i = 0; i < sizeof gelus / sizeof gelus[0]; i++)
        if (strcmp(act, gelus[i]) == 0) return SS_OK;
    js_get(c, "hidden_act", &v);
    return js_failf(v, err, "expected \"silu\" (a gated MLP the architecture models as "
                            "SwiGLU) or a GELU (\"gelu\", \"gelu_new\", \"gelu_pytorch_tanh\", "
                            "\"gelu_fast\": GeGLU), found \"%s\"", act);
}

/* Depth, width, heads, dense MLP, vocabulary, tying, RMSNorm: every
 * rotary decoder family. */
static int decoder(js_node c, cJSON *a, ss_err *err)
{
    uint64_t layers, hidden, heads, ffn, vocab;
    bool tie;
    const char *act = NULL;
    int rc;
    if ((rc = num(c, "num_hidden_layers", true, 0, 1, &layers, err)) ||
        (rc = num(c, "hidden_size", true, 0, 1, &hidden, err)) ||
        (rc = num(c, "num_attention_heads", true, 0, 1, &heads, err)) ||
        (rc = num(c, "intermediate_size", true, 0, 1, &ffn, err)) ||
        (rc = num(c, "vocab_size", true, 0, 1, &vocab, err)) ||
        (rc = js_bool(c, "tie_word_embeddings", false, false, &tie, err)) ||
        (rc = gated_act(c, &act, err)))
        return rc;
    if ((rc = put_str(a, "type", "transformer", err)) || (rc = put(a, "layers", layers, err)) ||
        (rc = put(a, "hidden", hidden, err)) || (rc = put(a, "heads", heads, err)) ||
        (rc = put(a, "ffn_hidden", ffn, err)) || (rc = put_str(a, "activation", act, err)) ||
        (rc = put(a, "vocab", vocab, err)) || (rc = put_bool(a, "tied_embeddings", tie, err)) ||
        (rc = put_str(a, "norm", "rmsnorm", err)))
        return rc;
    return SS_OK;
}

/* Grouped-query attention: key/value heads (null: as many as query heads)
 * and head_dim (null: hidden / heads). */
static int gqa(js_node c, cJSON *a, ss_err *err)
{
    uint64_t heads, kv, hd;
    int rc;
    if ((rc = num(c, "num_attention_heads", true, 0, 1, &heads, err)) ||
        (rc = num(c, "num_key_value_heads", false, heads, 1, &kv, err)) ||
        (rc = num(c, "head_dim", false, 0, 1, &hd, err)) || (rc = put(a, "kv_heads", kv, err)))
        return rc;
    return hd ? put(a, "head_dim", hd, err) : SS_OK;
}

/* ---- families ---- */

static int map_llama(js_node c, cJSON *a, ss_err *err)
{
    int rc;
    if ((rc = must_be_false(c, "attention_bias", "biases on the attention projections alone "
                                                 "have no equivalent in the architecture", err)) ||
        (rc = must_be_false(c, "mlp_bias", "biases on the MLP alone have no equivalent in the "
                                           "architecture", err)))
        return rc;
    return (rc = decoder(c, a, err)) ? rc : gqa(c, a, err);
}

static bool sliding_entry(const cJSON *e)
{
    return cJSON_IsString(e) && !strcmp(e->valuestring, "sliding_attention");
}

/* The layers layer_types marks "sliding_attention" as a pattern: the
 * first sliding layer, then a period whose first `count` layers slide;
 * *count 0 when no entry slides. false when the list has no such form
 * (spec.h, spec_arch_sliding). */
static bool window_pattern(js_node lt, uint64_t n, uint64_t *first, uint64_t *period,
                           uint64_t *count)
{
    bool any = false;
    for (int i = 0; cJSON_IsArray(lt.j) && i < cJSON_GetArraySize(lt.j); i++)
        any = any || sliding_entry(cJSON_GetArrayItem(lt.j, i));
    *count = 0;
    if (!any) return true;
    if (!cJSON_IsArray(lt.j) || (uint64_t)cJSON_GetArraySize(lt.j) != n) return false;
    bool *sl = calloc(n ? n : 1, sizeof *sl);
    if (!sl) return false;
    for (uint64_t i = 0; i < n; i++) sl[i] = sliding_entry(cJSON_GetArrayItem(lt.j, (int)i));
    uint64_t f = 0;
    while (f < n && !sl[f]) f++;
    bool ok = f < n;
    for (uint64_t p = 1; ok && p <= n - f; p++) {
        uint64_t k = 0;
        while (k < p && sl[f + k]) k++;
        bool fits = true;
        for (uint64_t i = f; i < n && fits; i++) fits = sl[i] == ((i - f) % p < k);
        if (fits) {
            *first = f, *period = p, *count = k;
            free(sl);
            return true;
        }
    }
    free(sl);
    return false;
}

/* Sliding-window attention: layer_types where the config has it (newer
 * transformers: "sliding_attention" / "full_attention" per layer), else
 * Qwen's use_sliding_window from max_window_layers on, else Mistral's
 * sliding_window on every layer (null: none). */
static int window(js_node c, cJSON *a, ss_err *err)
{
    uint64_t w, layers, first = 0, period = 1, count = 1;
    bool use = true;
    js_node lt, v;
    int rc = num(c, "sliding_window", false, 0, 1, &w, err);
    if (rc || (rc = num(c, "num_hidden_layers", true, 0, 1, &layers, err))) return rc;
    if (js_get(c, "use_sliding_window", &v)) { /* Qwen: off unless asked */
        if ((rc = js_bool(c, "use_sliding_window", false, false, &use, err))) return rc;
        if (use && (rc = num(c, "max_window_layers", false, 0, 0, &first, err))) return rc;
    }
    if (js_get(c, "layer_types", &lt) && !cJSON_IsNull(lt.j)) {
        if (!window_pattern(lt, layers, &first, &period, &count))
            return js_failf(lt, err, "expected num_hidden_layers entries whose "
                                     "\"sliding_attention\" layers repeat with a period from "
                                     "the first of them (the form the architecture's "
                                     "sliding_window has)");
        if (!count) return SS_OK;
        use = true;
    }
    if (!w || !use || first >= layers) return SS_OK;
    cJSON *o = cJSON_AddObjectToObject(a, "sliding_window");
    if (!o) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if ((rc = put(o, "tokens", w, err)) || (rc = put(o, "first", first, err)) ||
        (rc = put(o, "period", period, err)) || (rc = put(o, "count", count, err)))
        return rc;
    return SS_OK;
}

/* Mistral: Llama's shape, and a sliding window on every layer where
 * sliding_window is set (window). */
static int map_mistral(js_node c, cJSON *a, ss_err *err)
{
    int rc = decoder(c, a, err);
    if (rc || (rc = gqa(c, a, err))) return rc;
    return window(c, a, err);
}

/* Qwen2 and 2.5: biases on q, k and v only. */
static int map_qwen2(js_node c, cJSON *a, ss_err *err)
{
    int rc = map_mistral(c, a, err);
    return rc ? rc : put_bool(a, "qkv_bias", true, err);
}

/* Qwen3: Llama's shape with an RMSNorm on every query and key head
 * (q_norm, k_norm) and an explicit head_dim; attention_bias would put
 * biases on q, k, v and o, which the architecture has no form for. */
static int map_qwen3(js_node c, cJSON *a, ss_err *err)
{
    int rc = must_be_false(c, "attention_bias", "biases on the attention projections alone "
                                                "have no equivalent in the architecture", err);
    if (rc || (rc = map_mistral(c, a, err))) return rc;
    return put_bool(a, "qk_norm", true, err);
}

static int map_mixtral(js_node c, cJSON *a, ss_err *err)
{
    uint64_t e, k, f;
    int rc = map_mistral(c, a, err);
    if (rc || (rc = num(c, "num_local_experts", true, 0, 1, &e, err)) ||
        (rc = num(c, "num_experts_per_tok", true, 0, 1, &k, err)) ||
        (rc = num(c, "intermediate_size", true, 0, 1, &f, err)))
        return rc;
    cJSON *m = cJSON_AddObjectToObject(a, "moe");
    if (!m) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if ((rc = put(m, "experts", e, err)) || (rc = put(m, "top_k", k, err)) ||
        (rc = put(m, "expert_ffn_hidden", f, err)))
        return rc;
    return SS_OK;
}

/* DeepSeek's MLA. q_lora_rank null (DeepSeek-V2-Lite) projects queries
 * directly, which the architecture's MLA has no form for. */
static int deepseek_mla(js_node c, cJSON *a, ss_err *err)
{
    uint64_t q, kv, rope, nope, v;
    js_node t;
    int rc;
    if (is_null(c, "q_lora_rank")) {
        js_get(c, "q_lora_rank", &t);
        return js_failf(t, err, "expected a query down-projection rank (an integer), found null: "
                                "a direct query projection (DeepSeek-V2-Lite) has no equivalent "
                                "in the architecture's MLA");
    }
    if ((rc = num(c, "q_lora_rank", true, 0, 1, &q, err)) ||
        (rc = num(c, "kv_lora_rank", true, 0, 1, &kv, err)) ||
        (rc = num(c, "qk_rope_head_dim", true, 0, 1, &rope, err)) ||
        (rc = num(c, "qk_nope_head_dim", true, 0, 1, &nope, err)) ||
        (rc = num(c, "v_head_dim", true, 0, 1, &v, err)))
        return rc;
    cJSON *m = cJSON_AddObjectToObject(a, "mla");
    if (!m) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if ((rc = put(m, "q_lora_rank", q, err)) || (rc = put(m, "kv_lora_rank", kv, err)) ||
        (rc = put(m, "qk_rope_dim", rope, err)) || (rc = put(m, "qk_nope_dim", nope, err)) ||
        (rc = put(m, "v_head_dim", v, err)))
        return rc;
    return SS_OK;
}

/* Routed experts from layer first_k_dense_replace on, every layer
 * (moe_layer_freq 1: the architecture has no interleaving), with
 * n_shared_experts always-on experts of moe_intermediate_size each (HF
 * builds one MLP n_shared times as wide: the same parameters and FLOPs). */
static int deepseek_moe(js_node c, cJSON *a, ss_err *err)
{
    uint64_t e, k, shared, f, dense, freq;
    js_node t;
    int rc;
    if (is_null(c, "n_routed_experts") || !js_get(c, "n_routed_experts", &t)) return SS_OK;
    if ((rc = num(c, "moe_layer_freq", false, 1, 1, &freq, err))) return rc;
    if (freq != 1) {
        js_get(c, "moe_layer_freq", &t);
        return js_failf(t, err, "expected 1 (every layer after the dense ones is MoE), found %llu",
                        (unsigned long long)freq);
    }
    if ((rc = num(c, "n_routed_experts", true, 0, 1, &e, err)) ||
        (rc = num(c, "num_experts_per_tok", true, 0, 1, &k, err)) ||
        (rc = num(c, "n_shared_experts", false, 0, 0, &shared, err)) ||
        (rc = num(c, "moe_intermediate_size", true, 0, 1, &f, err)) ||
        (rc = num(c, "first_k_dense_replace", false, 0, 0, &dense, err)))
        return rc;
    cJSON *m = cJSON_AddObjectToObject(a, "moe");
    if (!m) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if ((rc = put(m, "experts", e, err)) || (rc = put(m, "top_k", k, err)) ||
        (rc = put(m, "shared_experts", shared, err)) ||
        (rc = put(m, "expert_ffn_hidden", f, err)) || (rc = put(m, "dense_layers", dense, err)))
        return rc;
    return SS_OK;
}

/* DeepSeek-V2 and V3. num_key_value_heads is read by no MLA projection;
 * the multi-token-prediction layers (num_nextn_predict_layers) are not
 * built by the Hugging Face implementation, so they are not counted. */
static int map_deepseek(js_node c, cJSON *a, ss_err *err)
{
    int rc;
    if ((rc = must_be_false(c, "attention_bias", "biases on the attention projections alone "
                                                 "have no equivalent in the architecture", err)) ||
        (rc = decoder(c, a, err)) || (rc = deepseek_mla(c, a, err)))
        return rc;
    return deepseek_moe(c, a, err);
}

/* GPT-2: learned positions (n_positions rows, real parameters), biases on
 * every projection, LayerNorm, the 4h GELU MLP unless n_inner says
 * otherwise; the head is the token embedding (HF ties it). */
static int map_gpt2(js_node c, cJSON *a, ss_err *err)
{
    uint64_t layers, hidden, heads, inner, vocab, pos;
    const char *act;
    js_node t;
    int rc;
    if ((rc = num(c, "n_layer", true, 0, 1, &layers, err)) ||
        (rc = num(c, "n_embd", true, 0, 1, &hidden, err)) ||
        (rc = num(c, "n_head", true, 0, 1, &heads, err)) ||
        (rc = num(c, "n_inner", false, 4 * hidden, 1, &inner, err)) ||
        (rc = num(c, "vocab_size", true, 0, 1, &vocab, err)) ||
        (rc = num(c, "n_positions", true, 0, 1, &pos, err)) ||
        (rc = js_str(c, "activation_function", false, "gelu_new", &act, err)) ||
        (rc = must_be_false(c, "add_cross_attention", "cross-attention layers have no "
                                                      "equivalent in the architecture", err)))
        return rc;
    if (strncmp(act, "gelu", 4) != 0) {
        js_get(c, "activation_function", &t);
        return js_failf(t, err, "expected a GELU (gelu_new, gelu, ...), found \"%s\"", act);
    }
    bool tie = true;
    if ((rc = js_bool(c, "tie_word_embeddings", false, true, &tie, err))) return rc;
    if (!tie) {
        js_get(c, "tie_word_embeddings", &t);
        return js_failf(t, err, "expected true: an untied GPT-2 head has no bias, which the "
                                "architecture (biases everywhere) cannot express");
    }
    if ((rc = put_str(a, "type", "transformer", err)) || (rc = put(a, "layers", layers, err)) ||
        (rc = put(a, "hidden", hidden, err)) || (rc = put(a, "heads", heads, err)) ||
        (rc = put(a, "ffn_hidden", inner, err)) || (rc = put_str(a, "activation", "gelu", err)) ||
        (rc = put(a, "vocab", vocab, err)) || (rc = put_bool(a, "tied_embeddings", true, err)) ||
        (rc = put_bool(a, "bias", true, err)) || (rc = put_str(a, "norm", "layernorm", err)) ||
        (rc = put(a, "max_positions", pos, err)))
        return rc;
    return SS_OK;
}

/* Fields each family maps or knowingly ignores, besides common_keys. */
#define ROTARY "num_hidden_layers", "hidden_size", "num_attention_heads", \
    "num_key_value_heads", "intermediate_size", "vocab_size", "hidden_act", "tie_word_embeddings"
#define WINDOW "sliding_window", "use_sliding_window", "max_window_layers", "layer_types"
/* Routing details: which experts a token picks and how the loss weighs
 * them, not how many or how large they are. */
#define ROUTING "num_experts_per_tok", "output_router_logits", "router_aux_loss_coef", \
    "router_jitter_noise", "norm_topk_prob", "scoring_func", "topk_method", "n_group", \
    "topk_group", "routed_scaling_factor", "aux_loss_alpha", "seq_aux", "ep_size"

static const hf_family families[] = {
    {"llama", "LlamaForCausalLM", map_llama,
     LIST(ROTARY, "head_dim", "attention_bias", "mlp_bias", "max_sequence_length")},
    {"mistral", "MistralForCausalLM", map_mistral, LIST(ROTARY, "head_dim", WINDOW)},
    {"qwen2", "Qwen2ForCausalLM", map_qwen2, LIST(ROTARY, WINDOW)},
    {"qwen3", "Qwen3ForCausalLM", map_qwen3,
     LIST(ROTARY, "head_dim", "attention_bias", WINDOW)},
    {"mixtral", "MixtralForCausalLM", map_mixtral,
     LIST(ROTARY, "head_dim", "num_local_experts", WINDOW, ROUTING)},
    {"deepseek_v2", "DeepseekV2ForCausalLM", map_deepseek,
     LIST(ROTARY, "attention_bias", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
          "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "n_shared_experts",
          "moe_intermediate_size", "moe_layer_freq", "first_k_dense_replace", ROUTING)},
    {"deepseek_v3", "DeepseekV3ForCausalLM", map_deepseek,
     LIST(ROTARY, "attention_bias", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
          "qk_nope_head_dim", "v_head_dim", "n_routed_experts", "n_shared_experts",
          "moe_intermediate_size", "moe_layer_freq", "first_k_dense_replace",
          "num_nextn_predict_layers", "quantization_config", "rope_interleave", ROUTING)},
    {"gpt2", "GPT2LMHeadModel", map_gpt2,
     LIST("n_layer", "n_embd", "n_head", "n_inner", "vocab_size", "n_positions", "n_ctx",
          "activation_function", "tie_word_embeddings", "add_cross_attention", "attn_pdrop",
          "embd_pdrop", "resid_pdrop", "layer_norm_epsilon", "output_past",
          "summary_activation", "summary_first_dropout", "summary_proj_to_labels",
          "summary_type", "summary_use_proj", "task_specific_params", "scale_attn_weights",
          "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn")},
};
#define NFAMILIES (sizeof families / sizeof families[0])

static bool listed(const char *k, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, keys[i]) == 0) return true;
    return false;
}

static int find_family(js_node c, const hf_family **out, ss_err *err)
{
    const char *type;
    js_node t;
    int rc = js_need(c, "model_type", &t, err);
    if (rc || (rc = js_str_val(t, &type, err))) return rc;
    char names[256] = "";
    for (size_t i = 0; i < NFAMILIES; i++) {
        if (strcmp(type, families[i].type) == 0) {
            *out = &families[i];
            return SS_OK;
        }
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 families[i].type);
    }
    return js_failf(t, err, "expected a supported model_type (%s), found \"%s\"", names, type);
}

/* architectures, when given: the family's one causal-LM class. */
static int check_class(js_node c, const hf_family *f, ss_err *err)
{
    js_node arr;
    size_t n;
    const char *cls;
    if (is_null(c, "architectures")) return SS_OK;
    int rc = js_arr(c, "architectures", false, &arr, &n, err);
    if (rc || n == 0) return rc;
    if ((rc = js_str_val(js_at(arr, 0), &cls, err))) return rc;
    if (n == 1 && strcmp(cls, f->cls) == 0) return SS_OK;
    return js_failf(arr, err, "expected [\"%s\"] for model_type \"%s\", found %zu class%s, the "
                              "first \"%s\"", f->cls, f->type, n, n == 1 ? "" : "es", cls);
}

/* Whether a member before the i-th has the key k. */
static bool seen_before(js_node c, size_t i, const char *k)
{
    const char *prev;
    for (size_t j = 0; j < i; j++) {
        js_member(c, j, &prev);
        if (strcmp(prev, k) == 0) return true;
    }
    return false;
}

/* Every field listed, once (cJSON would read the first of two silently).
 * Quadratic in the fields, which stop at the first unlisted or repeated
 * one, so at most the ~60 a family lists are scanned. */
static int check_fields(js_node c, const hf_family *f, ss_err *err)
{
    size_t common = sizeof common_keys / sizeof common_keys[0], n = js_nmembers(c);
    for (size_t i = 0; i < n; i++) {
        const char *k;
        js_node v = js_member(c, i, &k);
        if (!listed(k, common_keys, common) && !listed(k, f->keys, f->nkeys))
            return js_failf(v, err, "unknown field \"%s\" for model_type \"%s\": expected a "
                                    "field that sets the architecture or one known to change "
                                    "neither parameters nor compute (sim/io/hfconfig.c, "
                                    "docs/DECISIONS.md 59); found one that is neither", k,
                            f->type);
        if (seen_before(c, i, k))
            return js_failf(v, err, "expected each field once, found \"%s\" twice", k);
    }
    return SS_OK;
}

int hf_arch(js_node cfg, cJSON **out, ss_err *err)
{
    const hf_family *f = NULL;
    int rc = js_want_obj(cfg, err);
    if (rc || (rc = find_family(cfg, &f, err)) || (rc = check_class(cfg, f, err)) ||
        (rc = check_fields(cfg, f, err)))
        return rc;
    cJSON *a = cJSON_CreateObject();
    if (!a) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if ((rc = f->map(cfg, a, err))) {
        cJSON_Delete(a);
        return rc;
    }
    *out = a;
    return SS_OK;
}
