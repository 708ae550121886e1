#define _XOPEN_SOURCE 700 /* realpath */
#include "scenario.h"

#include "alias.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../core/utf8.h"
#include "dsconfig.h"
#include "hfconfig.h"
#include "json.h"
#include "machine.h"
#include "profile.h"
#include "ttconfig.h"

#define SPEC_TOKENS_MAX (1ull << 32) /* micro_batch x seq_len, docs/ROBUSTNESS.md */

#define KEYS(...) (const char *const[]){__VA_ARGS__}, \
    sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

/* ---- model ---- */

static int count_blocks(js_node arr, size_t len, uint64_t *total, ss_err *err)
{
    *total = 0;
    for (size_t i = 0; i < len; i++) {
        js_node b = js_at(arr, i);
        uint64_t rep;
        int rc = js_want_obj(b, err);
        if (rc || (rc = js_u64(b, "repeat", false, 1, 1, 1u << 20, &rep, err))) return rc;
        *total += rep;
        if (*total > (1u << 22))
            return js_failf(b, err, "the model has more than %u blocks", 1u << 22);
    }
    return SS_OK;
}

static int load_block(js_node b, spec_block *out, ss_err *err)
{
    int type;
    spec_block x = {0};
    int rc = js_keys_check(b, KEYS("name", "type", "in", "out", "bias", "repeat"), err);
    if (rc || (rc = js_copy_name(b, "name", true, x.name, err)) ||
        (rc = js_enum(b, "type", true, 0, spec_block_names, SPEC_NBLK, &type, err)) ||
        (rc = js_u64(b, "in", true, 0, 1, 1ull << 32, &x.in, err)) ||
        (rc = js_u64(b, "out", true, 0, 1, 1ull << 32, &x.out, err)) ||
        (rc = js_bool(b, "bias", false, false, &x.bias, err)))
        return rc;
    x.type = (spec_block_type)type;
    *out = x;
    return SS_OK;
}

static int load_moe(js_node a, spec_arch *x, ss_err *err)
{
    js_node n;
    if (!js_get(a, "moe", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("experts", "top_k", "shared_experts", "expert_ffn_hidden",
                                          "dense_layers", "capacity_factor"), err)) ||
        (rc = js_u64(n, "experts", true, 0, 1, 1u << 20, &x->experts, err)) ||
        (rc = js_u64(n, "top_k", true, 0, 1, x->experts, &x->top_k, err)) ||
        (rc = js_u64(n, "shared_experts", false, 0, 0, 1024, &x->shared_experts, err)) ||
        (rc = js_u64(n, "expert_ffn_hidden", true, 0, 1, 1u << 24, &x->expert_ffn_hidden, err)) ||
        (rc = js_u64(n, "dense_layers", false, 0, 0, x->layers, &x->dense_layers, err)) ||
        (rc = js_num(n, "capacity_factor", false, 1.0, 1.0, 64.0, &x->capacity_factor, err)))
        return rc;
    return SS_OK;
}

static int load_mla(js_node a, spec_arch *x, ss_err *err)
{
    js_node n;
    if (!js_get(a, "mla", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("q_lora_rank", "kv_lora_rank", "qk_rope_dim",
                                          "qk_nope_dim", "v_head_dim"), err)) ||
        (rc = js_u64(n, "q_lora_rank", true, 0, 1, 1u << 20, &x->q_lora_rank, err)) ||
        (rc = js_u64(n, "kv_lora_rank", true, 0, 1, 1u << 20, &x->kv_lora_rank, err)) ||
        (rc = js_u64(n, "qk_rope_dim", true, 0, 1, 1u << 16, &x->qk_rope_dim, err)) ||
        (rc = js_u64(n, "qk_nope_dim", true, 0, 1, 1u << 16, &x->qk_nope_dim, err)) ||
        (rc = js_u64(n, "v_head_dim", true, 0, 1, 1u << 16, &x->v_head_dim, err)))
        return rc;
    return SS_OK;
}

/* "sliding_window": {"tokens", "first", "period", "count"} (spec.h). */
static int load_window(js_node a, spec_arch *x, ss_err *err)
{
    js_node n;
    if (!js_get(a, "sliding_window", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("tokens", "first", "period", "count"), err)) ||
        (rc = js_u64(n, "tokens", true, 0, 1, 1u << 24, &x->window, err)) ||
        (rc = js_u64(n, "first", false, 0, 0, x->layers - 1, &x->window_first, err)) ||
        (rc = js_u64(n, "period", false, 1, 1, x->layers, &x->window_period, err)) ||
        (rc = js_u64(n, "count", false, 1, 1, x->window_period, &x->window_count, err)))
        return rc;
    return SS_OK;
}

/* Without an explicit head_dim (or MLA's own head sizes) a head is
 * hidden / heads wide, as in Hugging Face's configs: it must divide, and
 * more heads than hidden features would give heads of width 0. */
static int head_check(js_node a, const spec_arch *x, ss_err *err)
{
    js_node h;
    js_get(a, "heads", &h);
    typedef unsigned long long ull;
    if (x->head_dim || x->q_lora_rank) return SS_OK;
    if (x->heads > x->hidden)
        return js_failf(h, err, "%llu heads over hidden = %llu give heads of width 0: expected "
                        "at most hidden heads (or an explicit head_dim)", (ull)x->heads,
                        (ull)x->hidden);
    if (x->hidden % x->heads)
        return js_failf(h, err, "hidden = %llu does not split into %llu heads (%llu left over): "
                        "expected heads dividing hidden, or an explicit head_dim",
                        (ull)x->hidden, (ull)x->heads, (ull)(x->hidden % x->heads));
    return SS_OK;
}

static int load_arch(js_node a, spec_model *m, ss_err *err)
{
    spec_arch x = {0};
    int act;
    const char *norm;
    int rc = js_want_obj(a, err);
    if (rc || (rc = js_keys_check(a, KEYS("type", "layers", "hidden", "heads", "kv_heads", "head_dim",
                                          "ffn_hidden", "activation", "vocab", "tied_embeddings",
                                          "bias", "qkv_bias", "qk_norm", "norm", "max_positions",
                                          "moe", "mla", "sliding_window"),
                                 err)) ||
        (rc = js_str(a, "type", true, "", &norm, err)))
        return rc;
    if (strcmp(norm, "transformer") != 0) {
        js_node t;
        js_get(a, "type", &t);
        return js_failf(t, err, "expected \"transformer\", found \"%s\"", norm);
    }
    if ((rc = js_u64(a, "layers", true, 0, 1, 1u << 16, &x.layers, err)) ||
        (rc = js_u64(a, "hidden", true, 0, 1, 1u << 20, &x.hidden, err)) ||
        (rc = js_u64(a, "heads", true, 0, 1, 1u << 16, &x.heads, err)) ||
        (rc = js_u64(a, "kv_heads", false, x.heads, 1, x.heads, &x.kv_heads, err)) ||
        (rc = js_u64(a, "head_dim", false, 0, 0, 1u << 16, &x.head_dim, err)) ||
        (rc = js_u64(a, "ffn_hidden", true, 0, 1, 1u << 24, &x.ffn_hidden, err)) ||
        (rc = js_enum(a, "activation", false, SPEC_ACT_SWIGLU, spec_act_names, SPEC_NACT, &act, err)) ||
        (rc = js_u64(a, "vocab", true, 0, 1, 1u << 24, &x.vocab, err)) ||
        (rc = js_bool(a, "tied_embeddings", false, false, &x.tied_embeddings, err)) ||
        (rc = js_bool(a, "bias", false, false, &x.bias, err)) ||
        (rc = js_bool(a, "qkv_bias", false, false, &x.qkv_bias, err)) ||
        (rc = js_bool(a, "qk_norm", false, false, &x.qk_norm, err)) ||
        (rc = js_str(a, "norm", false, "rmsnorm", &norm, err)) ||
        (rc = js_u64(a, "max_positions", false, 0, 0, 1u << 24, &x.max_positions, err)) ||
        (rc = load_moe(a, &x, err)) || (rc = load_mla(a, &x, err)) ||
        (rc = load_window(a, &x, err)))
        return rc;
    if (strcmp(norm, "rmsnorm") && strcmp(norm, "layernorm")) {
        js_node t;
        js_get(a, "norm", &t);
        return js_failf(t, err, "expected \"rmsnorm\" or \"layernorm\", found \"%s\"", norm);
    }
    if (x.heads % x.kv_heads) {
        js_node t;
        js_get(a, "kv_heads", &t);
        return js_failf(t, err, "kv_heads = %llu does not divide heads = %llu: expected a "
                        "divisor of heads (each key/value head serves an equal group of query "
                        "heads)", (unsigned long long)x.kv_heads, (unsigned long long)x.heads);
    }
    if (x.qk_norm && x.kv_lora_rank) {
        js_node t;
        js_get(a, "qk_norm", &t);
        return js_failf(t, err, "expected false with \"mla\" (MLA normalises its latents, "
                                "not its heads), found true");
    }
    if ((rc = head_check(a, &x, err))) return rc;
    x.act = (spec_activation)act;
    x.layernorm = !strcmp(norm, "layernorm");
    if (!x.head_dim) x.head_dim = x.hidden / x.heads;
    m->arch = x;
    m->is_arch = true;
    return SS_OK;
}

/* The architecture hfconfig.c builds from a config.json, read by
 * load_arch under the config's file name (its errors name the
 * architecture key the config's fields became). */
static int load_hf_arch(js_node cfg, spec_model *m, ss_err *err)
{
    js_doc doc = {0};
    int rc = hf_arch(cfg, &doc.root, err);
    if (rc) return rc;
    snprintf(doc.file, sizeof doc.file, "%.900s (as an architecture)", cfg.file);
    rc = load_arch(js_root(&doc), m, err);
    js_doc_fini(&doc);
    return rc;
}

/* {"hf_config": PATH} (relative to the file that names it) or an inline
 * config; the name defaults to the config's _name_or_path, else its path. */
static int load_hf_model(js_node n, spec_model *m, ss_err *err)
{
    js_doc doc = {0};
    js_node cfg, ref;
    const char *name = "";
    int rc = js_keys_check(n, KEYS("name", "source", "hf_config"), err);
    if (rc || (rc = js_load_ref(n, "hf_config", &doc, &cfg, err)) ||
        (rc = js_str(cfg, "_name_or_path", false, "", &name, err)) ||
        (rc = load_hf_arch(cfg, m, err)))
        goto out;
    js_get(n, "hf_config", &ref);
    if (!*name) name = js_is_str(ref) ? ref.j->valuestring : "hf_config";
    rc = js_copy_name(n, "name", false, m->name, err);
    if (!rc && !m->name[0]) snprintf(m->name, sizeof m->name, "%s", name);
out:
    js_doc_fini(&doc);
    return rc;
}

static int load_model(js_node n, spec_model *m, ss_err *err)
{
    js_node arr, a;
    size_t len;
    uint64_t total;
    if (js_get(n, "hf_config", &a)) return load_hf_model(n, m, err);
    int rc = js_keys_check(n, KEYS("name", "source", "blocks", "architecture", "hf_config"), err);
    if (rc || (rc = js_copy_name(n, "name", true, m->name, err))) return rc;
    if (js_get(n, "architecture", &a)) {
        if (js_get(n, "blocks", &arr))
            return js_failf(arr, err, "a model has \"blocks\" or an \"architecture\", not both");
        return load_arch(a, m, err);
    }
    if ((rc = js_arr(n, "blocks", true, &arr, &len, err)) ||
        (rc = count_blocks(arr, len, &total, err)))
        return rc;
    if (len == 0) return js_failf(arr, err, "expected at least one block");
    m->blocks = calloc(total, sizeof *m->blocks);
    if (!m->blocks) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < len && !rc; i++) {
        js_node b = js_at(arr, i);
        spec_block proto;
        uint64_t rep;
        if ((rc = load_block(b, &proto, err)) ||
            (rc = js_u64(b, "repeat", false, 1, 1, 1u << 20, &rep, err)))
            break;
        for (uint64_t k = 0; k < rep; k++) {
            spec_block *dst = &m->blocks[m->nblocks++];
            *dst = proto;
            if (rep > 1) { /* the copy's index after at most 100 bytes of the name */
                char head[101];
                ss_utf8_copy(head, sizeof head, proto.name);
                snprintf(dst->name, sizeof dst->name, "%s.%llu", head, (unsigned long long)k);
            }
        }
    }
    return rc;
}

/* ---- scenario sections ---- */

/* A master copy exists to hold the updates the parameters' dtype would
 * lose: none keeps one in fp8 (Transformer Engine's fp8 training keeps fp32
 * masters), and one narrower than the parameters would lose more. */
static int master_check(js_node n, const spec_precision *p, ss_err *err)
{
    js_node k;
    if (p->master == SPEC_DT_NONE || !js_get(n, "master", &k)) return SS_OK;
    if (p->master == SPEC_DT_FP8)
        return js_failf(k, err, "expected \"fp32\", \"bf16\", \"fp16\" or \"none\"; found "
                        "\"fp8\" (fp8 training keeps fp32 master weights)");
    if (spec_dtype_size(p->master) < spec_dtype_size(p->param))
        return js_failf(k, err, "a %s master copy is narrower than the %s parameters it "
                        "updates: expected a dtype at least as wide as precision.param, or "
                        "\"none\"", spec_dtype_names[p->master], spec_dtype_names[p->param]);
    return SS_OK;
}

/* precision.fp8: {"recipe", "all_gather"}, with compute "fp8" only. */
static int load_fp8(js_node prec, spec_precision *p, ss_err *err)
{
    js_node n;
    if (!js_get(prec, "fp8", &n)) return SS_OK;
    if (p->compute != SPEC_DT_FP8)
        return js_failf(n, err, "the Float8 recipe applies to fp8 compute: expected "
                        "precision.compute \"fp8\" with it, found \"%s\"",
                        spec_dtype_names[p->compute]);
    int recipe;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("recipe", "all_gather"), err)) ||
        (rc = js_enum(n, "recipe", false, SPEC_FP8_TENSORWISE, spec_fp8_names, SPEC_NFP8, &recipe,
                      err)) ||
        (rc = js_bool(n, "all_gather", false, false, &p->fp8_all_gather, err)))
        return rc;
    p->fp8_recipe = (spec_fp8_recipe)recipe;
    return SS_OK;
}

static int load_precision(js_node root, spec_precision *p, ss_err *err)
{
    js_node n;
    *p = (spec_precision){SPEC_DT_FP32, SPEC_DT_FP32, SPEC_DT_FP32, SPEC_DT_FP32,
                          SPEC_DT_NONE, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
    if (!js_get(root, "precision", &n)) return SS_OK;
    static const char *const master_names[] = {"fp32", "fp16", "bf16", "fp8", "none"};
    int v[6];
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("param", "compute", "grad", "reduce",
                                          "master", "optimizer", "fp8"), err)) ||
        (rc = js_enum(n, "param", false, SPEC_DT_FP32, spec_dtype_names, SPEC_NDT, &v[0], err)) ||
        (rc = js_enum(n, "compute", false, v[0], spec_dtype_names, SPEC_NDT, &v[1], err)) ||
        (rc = js_enum(n, "grad", false, v[0], spec_dtype_names, SPEC_NDT, &v[2], err)) ||
        (rc = js_enum(n, "reduce", false, v[2], spec_dtype_names, SPEC_NDT, &v[3], err)) ||
        (rc = js_enum(n, "master", false, SPEC_DT_NONE, master_names, 5, &v[4], err)) ||
        (rc = js_enum(n, "optimizer", false, SPEC_DT_FP32, spec_dtype_names, SPEC_NDT, &v[5], err)))
        return rc;
    *p = (spec_precision){v[0], v[1], v[2], v[3], v[4], v[5], SPEC_FP8_TENSORWISE, false};
    return (rc = load_fp8(n, p, err)) ? rc : master_check(n, p, err);
}

/* The sharding section is a DeepSpeed config (a file, or strategy
 * "deepspeed" inline). */
static bool ds_sharding(js_node root)
{
    js_node n, st;
    if (!js_get(root, "sharding", &n)) return false;
    return js_is_str(n) || (js_get(n, "strategy", &st) && js_is_str(st) &&
                            strcmp(st.j->valuestring, "deepspeed") == 0);
}

static int load_optimizer(js_node root, spec_optimizer_cfg *o, ss_err *err)
{
    js_node n;
    int type, impl;
    if (!js_get(root, "optimizer", &n) && ds_sharding(root)) {
        /* the DeepSpeed config names it (dsc_load reads its optimizer.type) */
        *o = (spec_optimizer_cfg){.type = SPEC_OPT_ADAMW, .impl = SPEC_IMPL_FUSED, .momentum = true};
        return SS_OK;
    }
    int rc = js_need(root, "optimizer", &n, err);
    if (rc || (rc = js_want_obj(n, err)) ||
        (rc = js_keys_check(n, KEYS("type", "impl", "momentum"), err)) ||
        (rc = js_enum(n, "type", true, 0, spec_opt_names, SPEC_NOPT, &type, err)) ||
        (rc = js_enum(n, "impl", false, SPEC_IMPL_FOREACH, spec_impl_names, SPEC_NIMPL, &impl, err)) ||
        (rc = js_bool(n, "momentum", false, true, &o->momentum, err)))
        return rc;
    o->type = (spec_optimizer)type;
    o->impl = (spec_opt_impl)impl;
    return SS_OK;
}

static int load_wrap(js_node sh, spec_sharding *s, ss_err *err)
{
    js_node w, arr;
    size_t len = 0;
    int policy;
    s->wrap = SPEC_WRAP_PER_BLOCK;
    if (!js_get(sh, "wrap", &w)) return SS_OK;
    int rc = js_want_obj(w, err);
    if (rc || (rc = js_keys_check(w, KEYS("policy", "modules", "min_num_params"), err)) ||
        (rc = js_enum(w, "policy", true, 0, spec_wrap_names, SPEC_NWRAP, &policy, err)) ||
        (rc = js_arr(w, "modules", policy == SPEC_WRAP_MODULES, &arr, &len, err)) ||
        (rc = js_u64(w, "min_num_params", policy == SPEC_WRAP_SIZE, 0, 1, UINT64_MAX,
                     &s->wrap_min_params, err)))
        return rc;
    s->wrap = (spec_wrap)policy;
    if (policy == SPEC_WRAP_MODULES && len == 0)
        return js_failf(arr, err, "expected at least one module name");
    s->wrap_modules = calloc(len ? len : 1, sizeof *s->wrap_modules);
    if (!s->wrap_modules) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < len; i++) {
        const char *m;
        if ((rc = js_str_val(js_at(arr, i), &m, err))) return rc;
        ss_utf8_copy(s->wrap_modules[i], SPEC_NAME_MAX, m);
        s->nwrap_modules++;
    }
    return SS_OK;
}

static int load_sharding_obj(js_node n, spec_sharding *s, ss_err *err)
{
    js_node cap;
    int strat, bwd;
    double mb = 25.0;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("strategy", "bucket_cap_mb", "gradient_as_bucket_view",
                                    "parameters_as_bucket_view", "backward_prefetch",
                                    "forward_prefetch", "limit_all_gathers",
                                    "use_orig_params", "no_sync", "wrap",
                                    "shard_group_size", "reshard_after_forward",
                                    "modules_to_forward_prefetch",
                                    "modules_to_backward_prefetch",
                                    "use_distributed_optimizer", "overlap_grad_reduce",
                                    "overlap_param_gather", "bucket_size",
                                    "grad_reduce_in_fp32", "use_megatron_fsdp",
                                    "data_parallel_sharding_strategy"), err)) ||
        (rc = js_enum(n, "strategy", true, 0, spec_strategy_names, SPEC_NSTRATEGIES, &strat, err)) ||
        (rc = js_num(n, "bucket_cap_mb", false, 25.0, 1e-6, 1e7, &mb, err)) ||
        (rc = js_bool(n, "gradient_as_bucket_view", false, false, &s->gradient_as_bucket_view, err)) ||
        (rc = js_bool(n, "parameters_as_bucket_view", false, false, &s->parameters_as_bucket_view, err)) ||
        (rc = js_enum(n, "backward_prefetch", false, SPEC_BWD_PRE, spec_bwd_names, SPEC_NBWD, &bwd, err)) ||
        (rc = js_bool(n, "forward_prefetch", false, false, &s->forward_prefetch, err)) ||
        (rc = js_bool(n, "limit_all_gathers", false, true, &s->limit_all_gathers, err)) ||
        (rc = js_bool(n, "use_orig_params", false, false, &s->use_orig_params, err)) ||
        (rc = js_bool(n, "no_sync", false, true, &s->no_sync, err)) ||
        (rc = load_wrap(n, s, err)))
        return rc;
    s->strategy = (spec_strategy)strat;
    s->backward_prefetch = (spec_bwd_prefetch)bwd;
    s->bucket_cap_bytes = (uint64_t)(mb * (double)SS_MIB);
    /* PyTorch DDP: only the default cap (none given) starts with a 1 MiB
     * first bucket; an explicit bucket_cap_mb applies to every bucket. */
    s->first_bucket_bytes = js_get(n, "bucket_cap_mb", &cap) ? s->bucket_cap_bytes : SS_MIB;
    return SS_OK;
}

/* "sharding": a runtime's knobs, or DeepSpeed's config (a file named by a
 * string, or inline with strategy "deepspeed"): io/dsconfig.h. */
static int load_sharding(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n, st;
    int rc = js_need(root, "sharding", &n, err);
    if (rc) return rc;
    bool file = js_is_str(n);
    if (!ds_sharding(root)) return load_sharding_obj(n, &s->shard, err);
    js_doc doc = {0};
    if (file) rc = js_load_ref(root, "sharding", &doc, &n, err);
    if (!rc && file && js_get(n, "strategy", &st) &&
        !(js_is_str(st) && strcmp(st.j->valuestring, "deepspeed") == 0))
        rc = js_failf(st, err, "a sharding file is a DeepSpeed config; put other runtimes' "
                               "sharding sections in the scenario");
    s->shard = (spec_sharding){.strategy = SPEC_DEEPSPEED, .wrap = SPEC_WRAP_PER_BLOCK};
    if (!rc) rc = dsc_load(n, root, s, err);
    js_doc_fini(&doc);
    return rc;
}

/* The link between the host and one GPU: a graph topology's direct link
 * from the GPU to its CPU where it has one (GB200's NVLink-C2C), else the
 * GPU's PCIe link, shared with the other GPUs behind its switch's uplink
 * to the CPU; 25 GB/s (PCIe 4.0 x16 as cudaMemcpy reaches it) otherwise. */
static double host_link_Bps(const spec_topology *t)
{
    double gpu = 0, up = 0;
    uint32_t behind = 1;
    for (uint32_t i = 0; t->graph && i < t->nlgroups; i++) {
        const spec_lgroup *l = &t->lg[i];
        uint8_t far = l->from == 0 ? l->to : l->to == 0 ? l->from : UINT8_MAX;
        if (far != UINT8_MAX && t->vg[far].kind == SPEC_V_CPU)
            return l->Bps * (l->efficiency > 0 ? l->efficiency : 1);
    }
    for (uint32_t i = 0; t->graph && i < t->nlgroups; i++) {
        const spec_lgroup *l = &t->lg[i];
        if (l->kind != SPEC_L_PCIE) continue;
        double bw = l->Bps * (l->efficiency > 0 ? l->efficiency : 1);
        uint8_t other = l->from == 0 ? l->to : l->to == 0 ? l->from : UINT8_MAX;
        if (other != UINT8_MAX && t->vg[other].kind == SPEC_V_PCIE_SWITCH) {
            gpu = bw;
            behind = t->vg[other].count ? t->gpus_per_node / t->vg[other].count : 1;
        }
        bool to_cpu = t->vg[l->from].kind == SPEC_V_CPU || t->vg[l->to].kind == SPEC_V_CPU;
        bool from_sw = t->vg[l->from].kind == SPEC_V_PCIE_SWITCH ||
                       t->vg[l->to].kind == SPEC_V_PCIE_SWITCH;
        if (to_cpu && from_sw) up = bw;
    }
    if (gpu <= 0) return 25e9;
    double shared = up > 0 && behind ? up / behind : gpu;
    return shared < gpu ? shared : gpu;
}

/* FSDP1's CPUOffload(offload_params=True) and FSDP2's CPUOffloadPolicy
 * move the shards, their gradients and so the optimizer to the CPU
 * together: offload.params "cpu", with offload.optimizer "cpu" or absent. */
static int fsdp_offload(js_node n, spec_scenario *s, int opt, int par, ss_err *err)
{
    js_node k;
    spec_strategy st = s->shard.strategy;
    bool fsdp = st == SPEC_FULL_SHARD || st == SPEC_SHARD_GRAD_OP || st == SPEC_HYBRID_SHARD ||
                st == SPEC_HYBRID_SHARD_ZERO2 || st == SPEC_FSDP2;
    if (!fsdp || spec_model_parallel(&s->par))
        return js_failf(n, err, "offload is modelled for sharding.strategy deepspeed, fsdp2 "
                                "(CPUOffloadPolicy) and the sharded FSDP1 strategies (full_shard, "
                                "shard_grad_op, hybrid_shard, hybrid_shard_zero2), without a layout");
    if (par != SPEC_OFF_CPU) {
        bool has = js_get(n, "params", &k);
        return js_failf(has ? k : n, err, "FSDP's CPUOffload moves the parameters, their "
                                          "gradients and the optimizer together: set "
                                          "offload.params to \"cpu\" (FSDP has no NVMe offload)");
    }
    if (opt == SPEC_OFF_NVME) {
        js_get(n, "optimizer", &k);
        return js_failf(k, err, "FSDP's optimizer steps the host shards: \"cpu\" or absent");
    }
    if (s->dp < 2 || (s->shard.shard_group_size && s->shard.shard_group_size < 2))
        return js_failf(n, err, "CPUOffload needs a shard group of at least 2 ranks");
    return SS_OK;
}

/* "offload": where the optimizer side and the parameters live, and the
 * rates of the host path. A DeepSpeed config's offload_* set the devices
 * too; both may be given only if they agree. Other runtimes' offload is
 * not modelled yet. */
static int load_offload(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n = {0}, k;
    bool given = js_get(root, "offload", &n);
    spec_offload *o = &s->off;
    spec_offload_dev dso = o->optimizer, dsp = o->params;
    int opt = dso, par = dsp;
    double pcie = host_link_Bps(&s->topo) / 1e9, nvme = 3, cpu = 1, host = 0;
    int rc = SS_OK;
    if (given &&
        ((rc = js_want_obj(n, err)) ||
         (rc = js_keys_check(n, KEYS("optimizer", "params", "pin_memory", "pcie_GBps", "nvme_GBps",
                                     "cpu_optimizer_Gelems_per_s", "host_memory_gib"), err)) ||
         (rc = js_enum(n, "optimizer", false, dso, spec_offload_names, SPEC_NOFF, &opt, err)) ||
         (rc = js_enum(n, "params", false, dsp, spec_offload_names, SPEC_NOFF, &par, err)) ||
         (rc = js_bool(n, "pin_memory", false, o->pin_memory, &o->pin_memory, err)) ||
         (rc = js_num(n, "pcie_GBps", false, pcie, 0.01, 1e4, &pcie, err)) ||
         (rc = js_num(n, "nvme_GBps", false, nvme, 0.01, 1e4, &nvme, err)) ||
         (rc = js_num(n, "cpu_optimizer_Gelems_per_s", false, cpu, 1e-4, 1e4, &cpu, err)) ||
         (rc = js_num(n, "host_memory_gib", false, 0, 0, 1e9, &host, err))))
        return rc;
    if (s->shard.strategy == SPEC_DEEPSPEED &&
        ((dso != SPEC_OFF_NONE && opt != (int)dso) || (dsp != SPEC_OFF_NONE && par != (int)dsp))) {
        js_get(n, opt != (int)dso ? "optimizer" : "params", &k);
        return js_failf(k, err, "the DeepSpeed config offloads to %s",
                        spec_offload_names[opt != (int)dso ? dso : dsp]);
    }
    bool any = opt != SPEC_OFF_NONE || par != SPEC_OFF_NONE;
    if (any && s->shard.strategy != SPEC_DEEPSPEED && (rc = fsdp_offload(n, s, opt, par, err)))
        return rc;
    if (s->shard.strategy == SPEC_DEEPSPEED && par != SPEC_OFF_NONE && s->ds.stage != 3) {
        js_get(n, "params", &k);
        return js_failf(k, err, "parameter offload needs ZeRO stage 3");
    }
    if (s->shard.strategy != SPEC_DEEPSPEED && par == SPEC_OFF_CPU) opt = SPEC_OFF_CPU;
    o->optimizer = (spec_offload_dev)opt;
    o->params = (spec_offload_dev)par;
    o->pcie_Bps = pcie * 1e9;
    o->nvme_Bps = nvme * 1e9;
    o->cpu_optim_eps = cpu * 1e9;
    o->host_bytes = (uint64_t)(host * 1024.0 * 1024.0 * 1024.0);
    return SS_OK;
}

/* DeepSpeed steps with its fused Adam kernel unless the scenario says
 * otherwise. */
static int ds_optimizer_impl(js_node root, spec_scenario *s, ss_err *err)
{
    js_node o, k;
    (void)err;
    js_get(root, "optimizer", &o);
    if (s->shard.strategy == SPEC_DEEPSPEED && !js_get(o, "impl", &k)) s->opt.impl = SPEC_IMPL_FUSED;
    return SS_OK;
}

/* HYBRID_SHARD: FSDP's default shard group is a node's ranks. FSDP2: the
 * shard dimension of a 2D (replicate, shard) mesh, all dp ranks by default
 * (plain FSDP, no replicate group). */
static int load_hybrid(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n, k;
    js_get(root, "sharding", &n);
    bool fsdp2 = s->shard.strategy == SPEC_FSDP2;
    bool hybrid = s->shard.strategy == SPEC_HYBRID_SHARD ||
                  s->shard.strategy == SPEC_HYBRID_SHARD_ZERO2 || fsdp2;
    bool given = js_get(n, "shard_group_size", &k);
    s->shard.shard_group_size = 0;
    if (!hybrid) {
        if (given)
            return js_failf(k, err, "shard_group_size goes with strategy hybrid_shard, "
                                    "hybrid_shard_zero2 or fsdp2");
        return SS_OK;
    }
    uint32_t gpn = spec_topo_rpn(&s->topo); /* the ranks one node holds */
    uint32_t def = fsdp2 || gpn >= s->dp ? s->dp : gpn;
    if (spec_model_parallel(&s->par) && !fsdp2) {
        /* In a layout the ranks of a dp group are tp cp pp apart: shard
         * over the dp ranks one node holds (at least one), as HYBRID_SHARD
         * shards within a node. */
        uint64_t per = (uint64_t)s->par.tp * s->par.cp * s->par.pp;
        def = per < gpn ? (uint32_t)(gpn / per) : 1;
        while (s->dp % def) def--;
    }
    uint64_t size;
    int rc = js_u64(n, "shard_group_size", false, def, 1, s->dp, &size, err);
    if (rc) return rc;
    if (s->dp % size)
        return js_failf(given ? k : n, err, "shard groups of %llu ranks do not divide dp = %u",
                        (unsigned long long)size, s->dp);
    s->shard.shard_group_size = (uint32_t)size;
    return SS_OK;
}

/* FSDP1's knobs and what FSDP2 offers instead (an error names both). */
static const char *const fsdp1_only[][2] = {
    {"use_orig_params", "FSDP2 always steps the original parameters (DTensor shards)"},
    {"limit_all_gathers", "FSDP2 has no rate limiter; its stream waits bound the all-gathers in flight"},
    {"backward_prefetch", "use modules_to_backward_prefetch"},
    {"forward_prefetch", "use modules_to_forward_prefetch"},
};
static const char *const fsdp2_only[] = {"reshard_after_forward", "modules_to_forward_prefetch",
                                         "modules_to_backward_prefetch"};

/* modules_to_{forward,backward}_prefetch: an integer k, or an object from
 * a unit's name to the names it prefetches. The names are resolved by the
 * plan, which knows the units; an empty list is kept (target "") so that
 * its key is checked too. */
static int load_prefetch(js_node sh, const char *key, spec_sharding *s, int pass, ss_err *err)
{
    js_node n;
    if (!js_get(sh, key, &n)) return SS_OK;
    if (!js_is_obj(n) && !js_is_num(n))
        return js_failf(n, err, "expected an integer (prefetch the next k units) or an object "
                        "from unit names to lists of unit names");
    if (!js_is_obj(n)) {
        uint64_t k;
        int rc = js_u64(sh, key, false, 0, 0, 1u << 20, &k, err);
        s->prefetch_k[pass] = (uint32_t)k;
        return rc;
    }
    size_t total = 0, nm = js_nmembers(n);
    for (size_t i = 0; i < nm; i++) {
        const char *unit = "";
        js_node list;
        js_member(n, i, &unit);
        size_t len;
        int rc = js_arr(n, unit, true, &list, &len, err);
        if (rc) return rc;
        total += len ? len : 1;
    }
    s->prefetch[pass] = calloc(total ? total : 1, sizeof *s->prefetch[pass]);
    if (!s->prefetch[pass]) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < nm; i++) {
        const char *unit = "", *target = "";
        js_node list;
        js_member(n, i, &unit);
        size_t len;
        int rc = js_arr(n, unit, true, &list, &len, err);
        if (rc) return rc;
        for (size_t j = 0; j < (len ? len : 1); j++) {
            rc = len ? js_str_val(js_at(list, j), &target, err) : SS_OK;
            if (rc) return rc;
            spec_prefetch *e = &s->prefetch[pass][s->nprefetch[pass]++];
            ss_utf8_copy(e->unit, sizeof e->unit, unit);
            ss_utf8_copy(e->target, sizeof e->target, target);
            e->index = (uint32_t)j;
        }
    }
    return SS_OK;
}

/* sharding.reshard_after_forward: true (the shard group), false or 1 (0:
 * kept unsharded) or an integer k dividing the shard group: the ranks the
 * parameters stay sharded over between forward and backward. On a shard
 * group of one rank true still reshards (and re-gathers in backward). */
static int load_reshard_value(js_node sh, const char *key, spec_scenario *s, ss_err *err)
{
    js_node n;
    uint32_t S = s->shard.shard_group_size;
    s->shard.reshard_after_forward = S;
    if (!js_get(sh, key, &n)) return SS_OK;
    if (js_is_bool(n)) {
        bool b;
        int rc = js_bool(sh, key, false, true, &b, err);
        s->shard.reshard_after_forward = b ? S : 0;
        return rc;
    }
    if (!js_is_num(n))
        return js_failf(n, err, "expected true, false, a number of ranks dividing the shard "
                        "group of %u, or an object of them per unit", S);
    uint64_t k;
    int rc = js_u64(sh, key, false, 0, 1, S, &k, err);
    if (rc) return rc;
    if (S % k)
        return js_failf(n, err, "reshard_after_forward = %llu does not divide the shard group "
                        "of %u ranks (give true, false or a divisor of it)",
                        (unsigned long long)k, S);
    s->shard.reshard_after_forward = k == 1 ? 0 : (uint32_t)k;
    return SS_OK;
}

/* The object form, fully_shard called per module with its own value:
 * {"default": <value>, "<unit>": true | false, ...}; the plan checks the
 * unit names. */
static int load_reshard(js_node sh, spec_scenario *s, ss_err *err)
{
    js_node n;
    if (!js_get(sh, "reshard_after_forward", &n) || !js_is_obj(n))
        return load_reshard_value(sh, "reshard_after_forward", s, err);
    int rc = load_reshard_value(n, "default", s, err);
    size_t m = js_nmembers(n);
    s->shard.raf_units = calloc(m ? m : 1, sizeof *s->shard.raf_units);
    if (!s->shard.raf_units) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < m && !rc; i++) {
        const char *unit;
        js_node v = js_member(n, i, &unit);
        if (!strcmp(unit, "default")) continue;
        if (!js_is_bool(v))
            return js_failf(v, err, "a unit's own reshard_after_forward is true or false (an "
                                    "integer is given once, as \"default\")");
        struct spec_raf_unit *r = &s->shard.raf_units[s->shard.nraf_units++];
        ss_utf8_copy(r->unit, sizeof r->unit, unit);
        rc = js_bool(n, unit, true, true, &r->reshard, err);
    }
    return rc;
}

/* FSDP2 keys go with strategy fsdp2 only, FSDP1's knobs never with it. */
static int load_fsdp2(js_node root, spec_scenario *s, ss_err *err)
{
    js_node sh, k;
    js_get(root, "sharding", &sh);
    bool fsdp2 = s->shard.strategy == SPEC_FSDP2;
    for (size_t i = 0; i < SS_ARRAY_LEN(fsdp2_only); i++)
        if (!fsdp2 && js_get(sh, fsdp2_only[i], &k))
            return js_failf(k, err, "%s goes with strategy fsdp2 (FSDP2's fully_shard), not %s",
                            fsdp2_only[i], spec_strategy_names[s->shard.strategy]);
    if (!fsdp2) return SS_OK;
    for (size_t i = 0; i < SS_ARRAY_LEN(fsdp1_only); i++)
        if (js_get(sh, fsdp1_only[i][0], &k))
            return js_failf(k, err, "%s is an FSDP1 option, not accepted with strategy fsdp2: %s",
                            fsdp1_only[i][0], fsdp1_only[i][1]);
    s->shard.limit_all_gathers = false;
    s->shard.backward_prefetch = SPEC_BWD_NONE;
    int rc = load_reshard(sh, s, err);
    if (!rc) rc = load_prefetch(sh, "modules_to_forward_prefetch", &s->shard, 0, err);
    if (!rc) rc = load_prefetch(sh, "modules_to_backward_prefetch", &s->shard, 1, err);
    return rc;
}

static const char *const mcore_only[] = {"use_distributed_optimizer", "overlap_grad_reduce",
                                         "overlap_param_gather", "bucket_size",
                                         "grad_reduce_in_fp32", "use_megatron_fsdp",
                                         "data_parallel_sharding_strategy"};

/* grad_reduce_in_fp32 sets the gradient and reduction dtypes; a precision
 * section that names either must agree. */
static int mcore_precision(js_node root, js_node sh, spec_scenario *s, ss_err *err)
{
    js_node pr, k;
    spec_dtype want = s->shard.mcore.grad_reduce_in_fp32 ? SPEC_DT_FP32 : s->prec.param;
    static const char *const keys[] = {"grad", "reduce"};
    spec_dtype *have[] = {&s->prec.grad, &s->prec.reduce};
    for (int i = 0; i < 2; i++) {
        if (js_get(root, "precision", &pr) && js_get(pr, keys[i], &k) && *have[i] != want) {
            js_node g;
            bool named = js_get(sh, "grad_reduce_in_fp32", &g);
            return js_failf(k, err, "Megatron keeps gradients and reduces them in %s (%s); "
                            "found precision.%s \"%s\"", spec_dtype_names[want],
                            named ? "sharding.grad_reduce_in_fp32"
                                  : "grad_reduce_in_fp32, which precision.grad sets",
                            keys[i], spec_dtype_names[*have[i]]);
        }
        *have[i] = want;
    }
    /* Mixed precision keeps fp32 main parameters (Float16OptimizerWithFloat16Params
     * and the distributed optimizer alike). */
    if (s->prec.param == SPEC_DT_FP32) return SS_OK;
    if (js_get(root, "precision", &pr) && js_get(pr, "master", &k) &&
        s->prec.master != SPEC_DT_FP32)
        return js_failf(k, err, "Megatron keeps fp32 main parameters beside %s ones: expected "
                        "\"fp32\" (or no master key); found \"%s\"",
                        spec_dtype_names[s->prec.param],
                        s->prec.master == SPEC_DT_NONE ? "none" : spec_dtype_names[s->prec.master]);
    s->prec.master = SPEC_DT_FP32;
    return SS_OK;
}

/* grad_reduce_in_fp32's default: an explicit precision.grad decides it;
 * else Megatron-LM's, on with bf16 parameters. */
static bool mcore_fp32_default(js_node root, const spec_scenario *s)
{
    js_node pr, g;
    if (js_get(root, "precision", &pr) && js_get(pr, "grad", &g))
        return s->prec.grad == SPEC_DT_FP32;
    return s->prec.param == SPEC_DT_BF16;
}

/* use_megatron_fsdp (Megatron-FSDP, sched/mp_mfsdp.c) and its
 * data_parallel_sharding_strategy, default optim_grads_params: what FSDP
 * means, and what NeMo's and Megatron-Bridge's performance configs set
 * (Megatron's own default, no_shard, is its DDP). optim_grads_params
 * gathers and reduces as it goes: Megatron-core 0.12 asserts both
 * overlaps, 0.14 turns them on, so an explicit false is refused. */
static int load_megatron_fsdp(js_node sh, struct spec_mcore *m, ss_err *err)
{
    js_node k;
    int shard;
    int rc = js_bool(sh, "use_megatron_fsdp", false, false, &m->fsdp, err);
    if (!rc) rc = js_enum(sh, "data_parallel_sharding_strategy", false,
                          SPEC_MFSDP_OPTIM_GRADS_PARAMS, spec_mfsdp_names, SPEC_NMFSDP, &shard, err);
    if (rc) return rc;
    m->fsdp_shard = (spec_mfsdp_shard)shard;
    if (!m->fsdp && js_get(sh, "data_parallel_sharding_strategy", &k))
        return js_failf(k, err, "data_parallel_sharding_strategy goes with use_megatron_fsdp: true "
                                "(Megatron-FSDP); Megatron's DDP shards as use_distributed_optimizer "
                                "says");
    if (m->fsdp && m->fsdp_shard < SPEC_MFSDP_OPTIM_GRADS) {
        js_get(sh, "data_parallel_sharding_strategy", &k);
        return js_failf(k, err, "Megatron-FSDP's %s is not modelled: Megatron's DDP runs the same "
                                "sharding (use_megatron_fsdp false, use_distributed_optimizer %s); "
                                "expected optim_grads or optim_grads_params",
                        spec_mfsdp_names[m->fsdp_shard],
                        m->fsdp_shard == SPEC_MFSDP_OPTIM ? "true" : "false");
    }
    if (!m->fsdp || m->fsdp_shard != SPEC_MFSDP_OPTIM_GRADS_PARAMS) return SS_OK;
    static const char *const overlaps[] = {"overlap_param_gather", "overlap_grad_reduce"};
    const bool on[] = {m->overlap_param_gather, m->overlap_grad_reduce}; /* as read */
    for (int i = 0; i < 2; i++)
        if (js_get(sh, overlaps[i], &k) && !on[i])
            return js_failf(k, err, "Megatron-FSDP's optim_grads_params gathers parameters and "
                                    "reduces gradients as the step goes (%s is always on there): "
                                    "expected true or no key, found false", overlaps[i]);
    m->overlap_param_gather = m->overlap_grad_reduce = true;
    return SS_OK;
}

/* Megatron-core's DistributedDataParallelConfig keys go with strategy
 * megatron only. Defaults: Megatron-LM's (megatron/training/arguments.py):
 * overlaps off, bf16 gradients accumulated and reduced in fp32; bucket_size
 * max(40M, 1M x dp) parameters (distributed_data_parallel_config.py).
 * use_distributed_optimizer is on: it is the runtime's reason to exist
 * (false gives Megatron's DDP). */
static int load_megatron(js_node root, spec_scenario *s, ss_err *err)
{
    js_node sh, k;
    js_get(root, "sharding", &sh);
    bool mc = s->shard.strategy == SPEC_MEGATRON;
    for (size_t i = 0; i < SS_ARRAY_LEN(mcore_only); i++)
        if (!mc && js_get(sh, mcore_only[i], &k))
            return js_failf(k, err, "%s goes with strategy megatron (Megatron-core's "
                            "DistributedDataParallel), not %s", mcore_only[i],
                            spec_strategy_names[s->shard.strategy]);
    if (!mc) return SS_OK;
    struct spec_mcore *m = &s->shard.mcore;
    uint64_t dp = (uint64_t)s->dp * s->par.cp, def = 1000000 * dp;
    if (def < 40000000) def = 40000000;
    int rc;
    if ((rc = js_bool(sh, "use_distributed_optimizer", false, true, &m->distributed_optimizer,
                      err)) ||
        (rc = js_bool(sh, "overlap_grad_reduce", false, false, &m->overlap_grad_reduce, err)) ||
        (rc = js_bool(sh, "overlap_param_gather", false, false, &m->overlap_param_gather, err)) ||
        (rc = js_bool(sh, "grad_reduce_in_fp32", false, mcore_fp32_default(root, s),
                      &m->grad_reduce_in_fp32, err)) ||
        (rc = js_u64(sh, "bucket_size", false, def, 1, UINT64_MAX / 16, &m->bucket_size, err)))
        return rc;
    if ((rc = load_megatron_fsdp(sh, m, err))) return rc;
    if (m->fsdp && s->par.moe_a2a_overlap) {
        js_get(sh, "use_megatron_fsdp", &k);
        return js_failf(k, err, "Megatron-FSDP beside parallel.moe_a2a_overlap (a layer's forward "
                                "and backward of two micro-batches interleaved, each wanting its "
                                "gathered parameters) is not modelled: expected one of them");
    }
    if (m->overlap_param_gather && !m->distributed_optimizer && !m->fsdp) {
        js_get(sh, "overlap_param_gather", &k);
        return js_failf(k, err, "overlap_param_gather needs use_distributed_optimizer (Megatron "
                                "gathers parameters only when the optimizer is distributed)");
    }
    if (!s->model.is_arch)
        return js_failf(sh, err, "strategy megatron needs a model described by its "
                                 "architecture (model \"%s\" is a list of blocks)", s->model.name);
    return mcore_precision(root, sh, s, err);
}

/* training.cpu_offloading_num_layers: Transformer Engine's activation
 * offloading as Megatron-core's TransformerBlock drives it, under
 * Megatron-core's own checks (megatron/core/transformer/
 * transformer_config.py, every core from 0.14): fewer layers than the
 * model's, no pipeline parallelism, no activation recomputation. */
static int offload_activations_check(js_node root, const spec_scenario *s, ss_err *err)
{
    js_node tr, k;
    js_get(root, "training", &tr);
    if (!s->cpu_offload_layers) {
        if (js_get(tr, "cpu_offloading_impl", &k))
            return js_failf(k, err, "cpu_offloading_impl goes with cpu_offloading_num_layers above 0");
        return SS_OK;
    }
    js_get(tr, "cpu_offloading_num_layers", &k);
    if (s->shard.strategy != SPEC_MEGATRON)
        return js_failf(k, err, "cpu_offloading_num_layers is Transformer Engine's activation "
                                "offloading as Megatron-core drives it: it goes with strategy "
                                "megatron, not %s", spec_strategy_names[s->shard.strategy]);
    if (s->cpu_offload_layers >= s->model.arch.layers)
        return js_failf(k, err, "expected fewer than the model's %llu layers (Megatron-core's "
                        "check), found %u", (unsigned long long)s->model.arch.layers,
                        s->cpu_offload_layers);
    if (s->par.pp > 1)
        return js_failf(k, err, "Megatron-core offloads no activations under a pipeline "
                        "(\"Currently there is no support for Pipeline parallelism with CPU "
                        "offloading\"): expected parallel.pp 1, found %u", s->par.pp);
    if (s->recompute != SPEC_RECOMP_NONE)
        return js_failf(k, err, "Megatron-core refuses CPU offloading with recomputation (\"CPU "
                        "offloading does not work when activation recomputation is enabled\"): "
                        "expected training.recompute none, found %s",
                        spec_recompute_names[s->recompute]);
    if (s->par.moe_a2a_overlap)
        return js_failf(k, err, "CPU offloading beside parallel.moe_a2a_overlap (a forward and a "
                                "backward of two micro-batches interleaved) is not modelled: "
                                "expected one of them");
    return SS_OK;
}

/* runtime.stragglers: [{"rank": r, "factor": f}], at most 16, distinct ranks
 * inside dp. */
static int load_stragglers(js_node n, spec_scenario *s, ss_err *err)
{
    js_node a;
    size_t len;
    int rc = js_arr(n, "stragglers", false, &a, &len, err);
    if (rc) return rc;
    if (len > 16) return js_failf(a, err, "at most 16 stragglers");
    for (size_t i = 0; i < len && !rc; i++) {
        js_node x = js_at(a, i);
        uint64_t r;
        double f;
        if ((rc = js_want_obj(x, err)) || (rc = js_keys_check(x, KEYS("rank", "factor"), err)) ||
            (rc = js_u64(x, "rank", true, 0, 0, s->dp - 1, &r, err)) ||
            (rc = js_num(x, "factor", true, 1, 0.01, 100, &f, err)))
            return rc;
        for (uint32_t k = 0; k < s->nstragglers; k++)
            if (s->stragglers[k].rank == r)
                return js_failf(x, err, "rank %llu is listed twice", (unsigned long long)r);
        s->stragglers[s->nstragglers++] = (struct spec_straggler){(uint32_t)r, f};
    }
    return rc;
}

/* runtime.jitter: {"cv": c, "seed": s, "samples": k}. */
static int load_jitter(js_node n, spec_scenario *s, ss_err *err)
{
    js_node j;
    uint64_t samples;
    if (!js_get(n, "jitter", &j)) return SS_OK;
    int rc = js_want_obj(j, err);
    if (rc || (rc = js_keys_check(j, KEYS("cv", "seed", "samples"), err)) ||
        (rc = js_num(j, "cv", true, 0, 0.0, 1.0, &s->jitter_cv, err)) ||
        (rc = js_u64(j, "seed", false, 1, 0, UINT64_MAX, &s->jitter_seed, err)) ||
        (rc = js_u64(j, "samples", false, 16, 1, 10000, &samples, err)))
        return rc;
    s->jitter_samples = (uint32_t)samples;
    return SS_OK;
}

static int load_runtime(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n;
    double hook_us = 0.0;
    if (!js_get(root, "runtime", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("resident_bytes", "hook_us", "stragglers", "jitter"),
                                  err)) ||
        (rc = load_stragglers(n, s, err)) || (rc = load_jitter(n, s, err)) ||
        (rc = js_u64(n, "resident_bytes", false, 0, 0, UINT64_MAX, &s->resident_bytes, err)) ||
        (rc = js_num(n, "hook_us", false, 0.0, 0.0, 1e6, &hook_us, err)))
        return rc;
    s->hook_ns = ss_ns_from_s(hook_us * 1e-6);
    return SS_OK;
}

/* network.algo or network.proto: one name, or a list as NCCL_ALGO and
 * NCCL_PROTO take one ("ring,tree", "^nvls"), the tuner choosing among the
 * listed (*set; *one stays auto). */
static int load_choice(js_node n, const char *key, bool proto, int *one, uint32_t *set,
                       ss_err *err)
{
    js_node v;
    const char *str = NULL;
    *set = 0;
    if (js_get(n, key, &v) && js_is_str(v) && !js_str_val(v, &str, NULL) && strpbrk(str, ",^"))
        return mach_net_list(v, str, proto, set, err);
    return proto ? js_enum(n, key, false, SPEC_NPROTO_AUTO, spec_net_proto_names,
                           SPEC_NNET_PROTOS, one, err)
                 : js_enum(n, key, false, SPEC_NALGO_AUTO, spec_net_algo_names, SPEC_NNET_ALGOS,
                           one, err);
}

/* "network": {"algo", "proto", "nccl_version", "nccl_min_ctas", "collnet"}:
 * NCCL_ALGO / NCCL_PROTO for every collective of the step (where the
 * algorithm applies; see net/algo.h), the NCCL whose algorithms the tuner
 * has (over the topology's), NCCL_MIN_CTAS (the CTAs a ring across nodes
 * runs at least: net/algo.h, "Ring CTAs across nodes") and
 * NCCL_COLLNET_ENABLE (CollNet on a fabric whose switches reduce). */
static int load_network(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n;
    s->net_algo = SPEC_NALGO_AUTO;
    s->net_proto = SPEC_NPROTO_AUTO;
    s->net_algos = s->net_protos = 0;
    s->net_nccl = 0;
    s->net_min_ctas = 0;
    s->net_collnet = false;
    if (!js_get(root, "network", &n)) return SS_OK;
    uint64_t ctas = 0;
    int rc = js_want_obj(n, err);
    if (rc ||
        (rc = js_keys_check(n, KEYS("algo", "proto", "nccl_version", "nccl_min_ctas", "collnet"),
                            err)) ||
        (rc = load_choice(n, "algo", false, &s->net_algo, &s->net_algos, err)) ||
        (rc = load_choice(n, "proto", true, &s->net_proto, &s->net_protos, err)) ||
        (rc = mach_nccl_version(n, &s->net_nccl, err)) ||
        (rc = js_u64(n, "nccl_min_ctas", false, 0, 1, 64, &ctas, err)) ||
        (rc = js_bool(n, "collnet", false, false, &s->net_collnet, err)))
        return rc;
    s->net_min_ctas = (uint32_t)ctas;
    if (s->net_algo != SPEC_NALGO_AUTO || s->net_proto != SPEC_NPROTO_AUTO || s->net_algos ||
        s->net_protos || s->net_nccl || s->net_min_ctas || s->net_collnet) {
        if (!s->topo.graph)
            return js_failf(n, err, "network.algo, network.proto, network.nccl_version, "
                                    "network.nccl_min_ctas and network.collnet need a topology "
                                    "graph (a topology file with \"node\"); %s has the flat form",
                            s->topo.name);
    }
    if (s->net_collnet && !s->topo.fabric.sharp) {
        js_node v;
        js_get(n, "collnet", &v);
        return js_failf(v, err, "CollNet needs a fabric whose switches reduce in the network; "
                                "topology %s's fabric has no \"sharp\": true",
                        s->topo.name);
    }
    return SS_OK;
}

/* "calibration": a profile (docs/CALIBRATION.md) whose measured GEMM
 * curves and launch cost replace the device's; the network reads its
 * collective curves from the same file (s->calibration). */
static int load_calibration(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n;
    const char *rel;
    s->calibration[0] = '\0';
    if (!js_get(root, "calibration", &n)) return SS_OK;
    int rc = js_str_val(n, &rel, err);
    if (rc || (rc = js_path_resolve(n.file, rel, s->calibration, sizeof s->calibration, err)))
        return rc;
    prof pf;
    if ((rc = prof_load(s->calibration, &pf, err))) {
        if (err && !strstr(err->msg, "referenced"))
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     " (referenced from %s: %s)", n.file, n.path);
        return rc;
    }
    spec_device *d = &s->topo.device;
    for (int t = 0; t < SPEC_NDT; t++)
        if (pf.gemm[t].present)
            d->gemm_cal[t] = (spec_gemm_cal){true, pf.gemm[t].peak_tflops * 1e12, pf.gemm[t].e_max,
                                             pf.gemm[t].d_half, pf.gemm[t].p};
    if (isfinite(pf.launch_us)) d->launch_ns = ss_ns_from_s(pf.launch_us * 1e-6);
    prof_fini(&pf);
    return SS_OK;
}

static int load_allocator(js_node root, spec_scenario *s, ss_err *err)
{
    static const char *const models[] = {"caching", "ideal"};
    js_node n;
    s->capacity_bytes = s->topo.device.hbm_bytes;
    if (!js_get(root, "allocator", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("model", "expandable_segments", "capacity_bytes"), err)) ||
        (rc = js_enum(n, "model", false, 0, models, 2, &s->alloc_model, err)) ||
        (rc = js_bool(n, "expandable_segments", false, false, &s->expandable_segments, err)) ||
        (rc = js_u64(n, "capacity_bytes", false, s->topo.device.hbm_bytes, 0, UINT64_MAX,
                     &s->capacity_bytes, err)))
        return rc;
    /* 0 would read as "no limit" downstream (spec.h) and report fits. */
    js_node c;
    if (s->capacity_bytes == 0 && js_get(n, "capacity_bytes", &c))
        return js_failf(c, err, "expected a capacity of at least 1 byte (omit the key for the "
                        "device's hbm_bytes, %llu); found 0",
                        (unsigned long long)s->topo.device.hbm_bytes);
    return SS_OK;
}

static int load_init(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n;
    int mode = SPEC_INIT_FULL;
    if (js_get(root, "init", &n)) {
        int rc = js_want_obj(n, err);
        if (rc || (rc = js_keys_check(n, KEYS("mode"), err)) ||
            (rc = js_enum(n, "mode", true, 0, spec_init_names, SPEC_NINIT, &mode, err)))
            return rc;
    }
    s->init_mode = (spec_init_mode)mode;
    return SS_OK;
}

/* A quantity with its unit, "75 GiB", "1.5e9 B", "850 ms", in the key's
 * base unit (bytes, seconds); false when the text is not one the key can
 * take. Binary prefixes for KiB..TiB, decimal for KB..TB. */
static bool quantity(const char *text, spec_quantity q, double *out)
{
    static const struct { const char *unit; spec_quantity q; double scale; } units[] = {
        {"B", SPEC_Q_BYTES, 1},           {"KiB", SPEC_Q_BYTES, 1024.0},
        {"MiB", SPEC_Q_BYTES, 1048576.0}, {"GiB", SPEC_Q_BYTES, 1073741824.0},
        {"TiB", SPEC_Q_BYTES, 1099511627776.0}, {"KB", SPEC_Q_BYTES, 1e3},
        {"MB", SPEC_Q_BYTES, 1e6},        {"GB", SPEC_Q_BYTES, 1e9},
        {"TB", SPEC_Q_BYTES, 1e12},       {"s", SPEC_Q_SECONDS, 1},
        {"ms", SPEC_Q_SECONDS, 1e-3},     {"us", SPEC_Q_SECONDS, 1e-6},
        {"ns", SPEC_Q_SECONDS, 1e-9}};
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v)) return false;
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (units[i].q == q && !strcmp(end, units[i].unit)) {
            *out = v * units[i].scale;
            return true;
        }
    return false;
}

/* n[field] as a number, or as a quantity with a unit the summary key takes. */
static int expect_bound(js_node n, const char *field, const char *key, bool required, double *out,
                        ss_err *err)
{
    js_node c;
    if (!js_get(n, field, &c) || !js_is_str(c))
        return js_num(n, field, required, 0, -1e300, 1e300, out, err);
    spec_quantity q = spec_quantity_of(key);
    if (q == SPEC_Q_NUMBER)
        return js_failf(c, err, "expected a number: \"%s\" has no unit (units go with keys "
                                "ending in _bytes or _s), found \"%s\"", key, c.j->valuestring);
    if (!quantity(c.j->valuestring, q, out))
        return js_failf(c, err, "expected a number or a %s like %s, found \"%s\"",
                        q == SPEC_Q_BYTES ? "size" : "time",
                        q == SPEC_Q_BYTES ? "\"75 GiB\" (B, KiB..TiB, KB..TB)"
                                          : "\"850 ms\" (s, ms, us, ns)",
                        c.j->valuestring);
    return SS_OK;
}

/* One expectation: {"max": x}, {"min": x}, {"eq": number|bool|string},
 * {"within_pct": p, "value": v}, combinable; max, min and value may carry
 * a unit when the key is a size or a time. */
static int load_expect_one(js_node n, const char *key, spec_expect *e, ss_err *err)
{
    js_node c;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("max", "min", "eq", "within_pct", "value"), err)))
        return rc;
    if (strlen(key) >= sizeof e->key || !key[0])
        return js_failf(n, err, "expected a summary key of 1 to %zu characters", sizeof e->key - 1);
    ss_utf8_copy(e->key, sizeof e->key, key);
    e->has_min = js_get(n, "min", &c);
    e->has_max = js_get(n, "max", &c);
    e->has_pct = js_get(n, "within_pct", &c);
    if ((rc = expect_bound(n, "min", key, false, &e->min, err)) ||
        (rc = expect_bound(n, "max", key, false, &e->max, err)) ||
        (rc = js_num(n, "within_pct", false, 0, 0, 1e6, &e->pct, err)) ||
        (rc = expect_bound(n, "value", key, e->has_pct, &e->value, err)))
        return rc;
    if (js_get(n, "value", &c) && !e->has_pct)
        return js_failf(c, err, "\"value\" goes with \"within_pct\"");
    if (!js_get(n, "eq", &c)) {
        if (!e->has_min && !e->has_max && !e->has_pct)
            return js_failf(n, err, "expected at least one of max, min, eq, within_pct");
        return SS_OK;
    }
    e->has_eq = true;
    const char *str;
    if (js_bool(n, "eq", true, false, &e->eq_bool, NULL) == SS_OK) e->eq_kind = SPEC_EXP_BOOL;
    else if (js_num(n, "eq", true, 0, -1e300, 1e300, &e->eq_num, NULL) == SS_OK) e->eq_kind = SPEC_EXP_NUM;
    else if ((rc = js_str(n, "eq", true, "", &str, NULL)) == SS_OK) {
        e->eq_kind = SPEC_EXP_STR;
        ss_utf8_copy(e->eq_str, sizeof e->eq_str, str);
    } else {
        return js_failf(c, err, "expected a number, a boolean or a string");
    }
    return SS_OK;
}

static int load_expect(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n;
    if (!js_get(root, "expect", &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc) return rc;
    size_t k = js_nmembers(n);
    s->expects = calloc(k ? k : 1, sizeof *s->expects);
    if (!s->expects) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < k && !rc; i++) {
        const char *key;
        js_node m = js_member(n, i, &key);
        for (uint32_t j = 0; j < s->nexpects; j++)
            if (!strcmp(s->expects[j].key, key))
                return js_failf(m, err, "duplicate expectation for \"%s\"", key);
        rc = load_expect_one(m, key, &s->expects[s->nexpects], err);
        if (!rc) s->nexpects++;
    }
    return rc;
}

/* "measured": {"source", "step_time_s", "peak_allocated_gib",
 * "peak_reserved_gib", "peak_since", "mfu", "note"}; a source and at least
 * one of the step time or a memory figure. Read and kept, never simulated.
 * peak_since says what the source's peaks cover: "step" (the peak stats
 * were reset after the setup, or the setup is below the step) or "start"
 * (torch.cuda.max_memory_* read with no reset since the process began: the
 * model's setup counts). */
static const char *const peak_since_names[] = {"step", "start"};

static int load_measured(js_node root, spec_scenario *s, ss_err *err)
{
    js_node n, c;
    spec_measured *m = &s->measured;
    if (!js_get(root, "measured", &n)) return SS_OK;
    const char *note;
    int since = 0;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, KEYS("source", "step_time_s", "peak_allocated_gib",
                                          "peak_reserved_gib", "peak_since", "mfu", "note"),
                                  err)) ||
        (rc = js_enum(n, "peak_since", false, 0, peak_since_names, 2, &since, err)) ||
        (rc = js_copy_name(n, "source", true, m->source, err)) ||
        (rc = js_num(n, "step_time_s", false, 0, 1e-9, 1e9, &m->step_s, err)) ||
        (rc = js_num(n, "peak_allocated_gib", false, 0, 1e-9, 1e9, &m->alloc_gib, err)) ||
        (rc = js_num(n, "peak_reserved_gib", false, 0, 1e-9, 1e9, &m->reserved_gib, err)) ||
        (rc = js_num(n, "mfu", false, 0, 1e-9, 1, &m->mfu, err)) ||
        (rc = js_str(n, "note", false, "", &note, err)))
        return rc;
    if (!m->source[0]) return js_failf(n, err, "expected a non-empty \"source\"");
    m->has_step = js_get(n, "step_time_s", &c);
    m->has_alloc = js_get(n, "peak_allocated_gib", &c);
    m->has_reserved = js_get(n, "peak_reserved_gib", &c);
    m->has_mfu = js_get(n, "mfu", &c);
    m->peak_from_start = since == 1;
    if (m->peak_from_start && !m->has_alloc && !m->has_reserved) {
        js_get(n, "peak_since", &c);
        return js_failf(c, err, "expected a peak_allocated_gib or peak_reserved_gib for "
                                "\"peak_since\" to qualify");
    }
    if (!m->has_step && !m->has_alloc && !m->has_reserved)
        return js_failf(n, err, "expected at least one of step_time_s, peak_allocated_gib, "
                                "peak_reserved_gib");
    m->present = true;
    return SS_OK;
}

/* parallel.tp / cp / pp / ep and the pipeline and MoE knobs. */
/* The overlaps and orders of a layout, named as the frameworks name them;
 * "tp-cp-ep-dp-pp" (Megatron's spelling, ep inside the stage's tp x cp x
 * dp ranks as always here) is read as tp-cp-dp-pp. */
static int load_overlaps(js_node par, spec_parallel *p, ss_err *err)
{
    js_node a, b, o;
    int cpc, ord = SPEC_ORDER_TP_CP_PP_DP;
    bool async = false;
    if (js_get(par, "tp_comm_overlap", &a) && js_get(par, "async_tp", &b))
        return js_failf(b, err, "async_tp is torchtitan's name for tp_comm_overlap: give one");
    int rc = js_bool(par, "tp_comm_overlap", false, false, &p->tp_comm_overlap, err);
    if (!rc) rc = js_bool(par, "async_tp", false, false, &async, err);
    if (!rc) rc = js_bool(par, "p2p_scatter_gather", false, false, &p->p2p_scatter_gather, err);
    if (!rc) rc = js_bool(par, "moe_a2a_overlap", false, false, &p->moe_a2a_overlap, err);
    if (!rc)
        rc = js_bool(par, "moe_pad_to_capacity", false, false, &p->moe_pad_to_capacity, err);
    if (!rc) rc = js_enum(par, "cp_comm_type", false, SPEC_CP_ALL_GATHER, spec_cp_comm_names,
                          SPEC_NCP, &cpc, err);
    if (rc) return rc;
    p->tp_comm_overlap = p->tp_comm_overlap || async;
    p->cp_comm = (spec_cp_comm)cpc;
    if (js_get(par, "order", &o)) {
        if (js_is_str(o) && !strcmp(o.j->valuestring, "tp-cp-ep-dp-pp"))
            ord = SPEC_ORDER_TP_CP_DP_PP;
        else if ((rc = js_enum(par, "order", false, ord, spec_order_names, SPEC_NORDER, &ord, err)))
            return rc;
    }
    p->order = (spec_order)ord;
    return SS_OK;
}

static int load_parallel(js_node par, spec_scenario *s, ss_err *err)
{
    spec_parallel *p = &s->par;
    uint64_t tp, cp, pp, ep, etp, vs;
    int sched;
    int rc;
    if ((rc = js_u64(par, "tp", false, 1, 1, 1024, &tp, err)) ||
        (rc = js_u64(par, "etp", false, 1, 1, 1024, &etp, err)) ||
        (rc = js_u64(par, "cp", false, 1, 1, 1024, &cp, err)) ||
        (rc = js_u64(par, "pp", false, 1, 1, 1024, &pp, err)) ||
        (rc = js_u64(par, "ep", false, 1, 1, 1u << 16, &ep, err)) ||
        (rc = js_bool(par, "sequence_parallel", false, false, &p->sequence_parallel, err)) ||
        (rc = js_enum(par, "pipeline_schedule", false, SPEC_PP_ONE_F_ONE_B, spec_pp_names,
                      SPEC_NPP, &sched, err)) ||
        (rc = js_u64(par, "virtual_stages", false, 1, 1, 64, &vs, err)) ||
        (rc = js_num(par, "expert_imbalance", false, 1.0, 1.0, 1000.0, &p->expert_imbalance,
                     err)) ||
        (rc = js_bool(par, "fold", false, true, &p->fold, err)) ||
        (rc = load_overlaps(par, p, err)))
        return rc;
    p->tp = (uint32_t)tp, p->cp = (uint32_t)cp, p->pp = (uint32_t)pp, p->ep = (uint32_t)ep;
    p->etp = (uint32_t)etp;
    p->schedule = (spec_pp_schedule)sched;
    p->virtual_stages = (uint32_t)vs;
    return SS_OK;
}

/* Fail at parallel.KEY, or at "parallel" when the key is absent. */
static int par_fail(js_node par, const char *key, ss_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int par_fail(js_node par, const char *key, ss_err *err, const char *fmt, ...)
{
    js_node k;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!js_get(par, key, &k)) k = par;
    return js_failf(k, err, "%s", msg);
}

/* Uneven pipelines, as Megatron-core spells them: num_layers_in_first_ /
 * _last_pipeline_stage (the middle stages split the rest evenly; one model
 * chunk per stage), or pipeline_layers, every chunk's count in chunk order
 * (chunk k of stage k mod pp). Every chunk keeps at least one layer but
 * the first and the last, which may hold the embedding or the output head
 * alone, as Megatron-core's pipeline_model_parallel_layout writes a stage
 * of "E" or "L" only, and as Llama 3's 126 layers sit on 16 stages of 8
 * virtual stages with one layer fewer on the first and the last stage. */
static int load_stage_layers(js_node par, spec_scenario *s, ss_err *err)
{
    spec_parallel *p = &s->par;
    js_node a, f, l;
    bool list = js_get(par, "pipeline_layers", &a);
    bool first = js_get(par, "num_layers_in_first_pipeline_stage", &f);
    bool last = js_get(par, "num_layers_in_last_pipeline_stage", &l);
    if (!list && !first && !last) return SS_OK;
    uint32_t chunks = p->pp * p->virtual_stages;
    uint64_t layers = s->model.arch.layers, lo, hi;
    if (list && (first || last))
        return js_failf(a, err, "give pipeline_layers or num_layers_in_first/last_pipeline_stage, "
                                "not both");
    if (!s->model.is_arch || chunks < 2)
        return js_failf(list ? a : first ? f : l, err, "uneven stages need pp above 1 and a "
                        "model described by its architecture");
    p->chunk_layers = calloc(chunks, sizeof *p->chunk_layers);
    if (!p->chunk_layers) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (list) {
        size_t len;
        int rc = js_arr(par, "pipeline_layers", true, &a, &len, err);
        if (rc) return rc;
        if (len != chunks)
            return js_failf(a, err, "expected %u entries (pp x virtual_stages), one per model "
                            "chunk; found %zu", chunks, len);
        uint64_t sum = 0;
        for (size_t i = 0; i < len; i++) {
            uint64_t v;
            if ((rc = js_u64_val(js_at(a, i), 0, layers, &v, err))) return rc;
            if (!v && i && i + 1 < len)
                return js_failf(js_at(a, i), err, "expected at least 1 layer in chunk %zu: only "
                                "the first and the last chunk may hold none (the embedding or "
                                "the output head alone); found 0", i);
            p->chunk_layers[i] = (uint32_t)v, sum += v;
        }
        if (sum != layers)
            return js_failf(a, err, "the entries add up to %llu layers; the model has %llu",
                            (unsigned long long)sum, (unsigned long long)layers);
        return SS_OK;
    }
    if (p->virtual_stages > 1)
        return js_failf(first ? f : l, err, "num_layers_in_first/last_pipeline_stage with "
                        "virtual_stages: give every chunk in pipeline_layers instead");
    int rc = js_u64(par, "num_layers_in_first_pipeline_stage", false, 0, 1, layers, &lo, err);
    if (!rc) rc = js_u64(par, "num_layers_in_last_pipeline_stage", false, 0, 1, layers, &hi, err);
    if (rc) return rc;
    uint32_t middle = chunks - (first ? 1 : 0) - (last ? 1 : 0);
    uint64_t ends = (first ? lo : 0) + (last ? hi : 0);
    uint64_t rest = ends < layers ? layers - ends : 0;
    if (ends >= layers || !middle || rest % middle)
        return js_failf(first ? f : l, err, "the first and last stages take %llu of the model's "
                        "%llu layers: the %u middle stages need a positive multiple of %u "
                        "left; found %llu", (unsigned long long)ends, (unsigned long long)layers,
                        middle, middle ? middle : 1, (unsigned long long)rest);
    for (uint32_t k = 0; k < chunks; k++)
        p->chunk_layers[k] = (uint32_t)(middle ? rest / middle : 0);
    if (first) p->chunk_layers[0] = (uint32_t)lo;
    if (last) p->chunk_layers[chunks - 1] = (uint32_t)hi;
    return SS_OK;
}

/* FSDP2 inside a layout: reshard_after_forward true or false (per unit too);
 * an integer below the shard group and explicit prefetch lists are not
 * modelled there. */
static int fsdp2_layout_check(js_node root, const spec_scenario *s, ss_err *err)
{
    js_node sh, k;
    js_get(root, "sharding", &sh);
    uint32_t raf = s->shard.reshard_after_forward;
    if (raf && raf != s->shard.shard_group_size) {
        js_get(sh, "reshard_after_forward", &k);
        return js_failf(k, err, "reshard_after_forward = %u (a post-forward group smaller than "
                        "the shard group) is not modelled inside a model-parallel layout: give "
                        "true or false", raf);
    }
    static const char *const pf[] = {"modules_to_forward_prefetch", "modules_to_backward_prefetch"};
    for (int i = 0; i < 2; i++)
        if (js_get(sh, pf[i], &k))
            return js_failf(k, err, "%s is not modelled inside a model-parallel layout (FSDP2's "
                            "implicit prefetch runs there)", pf[i]);
    return SS_OK;
}

/* DeepSpeed inside a layout: stage 1 with any layout, stages 2-3 without a
 * pipeline (DeepSpeed's PipelineEngine asserts "ZeRO-2 and ZeRO-3 are
 * incompatible with pipeline parallelism"); offload and ZeRO++ are not
 * modelled there. */
static int ds_layout_check(js_node root, const spec_scenario *s, ss_err *err)
{
    js_node sh;
    js_get(root, "sharding", &sh);
    if (s->ds.stage >= 2 && s->par.pp > 1)
        return js_failf(sh, err, "DeepSpeed ZeRO stage %u with pp = %u: DeepSpeed's pipeline "
                        "engine refuses ZeRO-2 and ZeRO-3 (\"incompatible with pipeline "
                        "parallelism\"); use stage 1", s->ds.stage, s->par.pp);
    if (s->off.params != SPEC_OFF_NONE || s->off.optimizer != SPEC_OFF_NONE)
        return js_failf(sh, err, "DeepSpeed offload is not modelled inside a model-parallel "
                                 "layout");
    if (s->ds.hpz > 1 || s->ds.quantized_weights || s->ds.quantized_gradients)
        return js_failf(sh, err, "ZeRO++ (hpZ, qwZ, qgZ) is not modelled inside a "
                                 "model-parallel layout");
    return SS_OK;
}

/* moe_a2a_overlap over no expert parallelism: nothing to hide. */
static int a2a_overlap_needs_ep(js_node par, uint32_t ep, ss_err *err)
{
    return par_fail(par, "moe_a2a_overlap", err, "moe_a2a_overlap hides the expert all-to-alls "
                    "of one micro-batch under another's computation: it needs ep above 1 (ep = "
                    "%u)", ep);
}

/* A key that is a Megatron-core option (named `option` there) under
 * another runtime. */
static int megatron_only(js_node par, const char *key, const char *option,
                         const spec_scenario *s, ss_err *err)
{
    return par_fail(par, key, err, "%s is Megatron-core's %s: it needs sharding.strategy "
                    "\"megatron\" (not \"%s\")", key, option,
                    spec_strategy_names[s->shard.strategy]);
}

/* What a layout needs from the model and the batch: every divisibility a
 * runtime would refuse (Megatron-core's checks), named at the key. */
static int layout_check(js_node root, spec_scenario *s, ss_err *err)
{
    js_node par;
    js_get(root, "parallel", &par);
    const spec_parallel *p = &s->par;
    const spec_arch *a = &s->model.arch;
    typedef unsigned long long ull; /* the messages' %llu */
    ull tp = p->tp, cp = p->cp, pp = p->pp, ep = p->ep, vs = p->virtual_stages;
    ull seq = s->seq_len, accum = s->grad_accum, layers = a->layers, experts = a->experts;
    if (!spec_model_parallel(p)) {
        if (p->sequence_parallel || p->virtual_stages > 1 || p->schedule != SPEC_PP_ONE_F_ONE_B)
            return js_failf(par, err, "sequence_parallel, pipeline_schedule and virtual_stages "
                                      "need tp, cp or pp above 1");
        if (p->moe_a2a_overlap) return a2a_overlap_needs_ep(par, p->ep, err);
        return SS_OK;
    }
    if (!s->model.is_arch)
        return js_failf(par, err, "tp, cp, pp and ep need a model described by its "
                                  "architecture (model \"%s\" is a list of blocks)",
                        s->model.name);
    uint64_t heads = a->heads, kv = a->kv_heads ? a->kv_heads : a->heads;
    if (heads % p->tp)
        return par_fail(par, "tp", err, "tp = %llu does not divide the model's %llu heads",
                        tp, (ull)heads);
    if ((!a->experts || a->dense_layers) && a->ffn_hidden % p->tp)
        return par_fail(par, "tp", err, "tp = %llu does not divide the model's ffn_hidden = %llu "
                        "(the MLP's columns are split over tp)", tp, (ull)a->ffn_hidden);
    if (a->shared_experts && a->expert_ffn_hidden % p->tp)
        return par_fail(par, "tp", err, "tp = %llu does not divide the model's expert_ffn_hidden "
                        "= %llu (the shared experts' columns are split over tp)", tp,
                        (ull)a->expert_ffn_hidden);
    if (kv % p->tp && p->tp % kv)
        return par_fail(par, "tp", err, "tp = %llu and the model's %llu KV heads do not divide "
                        "one another", tp, (ull)kv);
    if (p->tp_comm_overlap && !p->sequence_parallel)
        return par_fail(par, js_get(par, "async_tp", &(js_node){0}) ? "async_tp" : "tp_comm_overlap",
                        err, "tp_comm_overlap pipelines sequence-parallel gathers and scatters: "
                        "it needs sequence_parallel (as Megatron-core and AsyncTP do)");
    if (p->p2p_scatter_gather && (p->tp == 1 || p->sequence_parallel || p->pp == 1))
        return par_fail(par, "p2p_scatter_gather", err, "p2p_scatter_gather splits pipeline "
                        "sends over tp: it needs pp and tp above 1, without sequence_parallel "
                        "(whose activations are split already)");
    if (p->sequence_parallel && p->tp == 1)
        return par_fail(par, "sequence_parallel", err,
                        "sequence_parallel needs tp above 1 (tp = %llu)", tp);
    uint64_t shards = (uint64_t)p->cp * (p->sequence_parallel ? p->tp : 1);
    if (s->seq_len % (2 * p->cp) && p->cp > 1)
        return par_fail(par, "cp", err, "cp = %llu needs seq_len divisible by 2 cp (load-balanced "
                        "causal chunks); seq_len = %llu", cp, seq);
    if ((s->micro_batch * s->seq_len) % shards)
        return par_fail(par, "sequence_parallel", err, "%llu tokens per micro-batch do not split "
                        "over %llu ranks", (ull)s->micro_batch * seq, (ull)shards);
    uint64_t chunks = (uint64_t)p->pp * p->virtual_stages;
    if (p->virtual_stages > 1 && p->schedule != SPEC_PP_INTERLEAVED)
        return par_fail(par, "virtual_stages", err, "virtual_stages = %llu needs "
                        "pipeline_schedule \"interleaved\"", vs);
    if (p->schedule == SPEC_PP_INTERLEAVED && (p->pp < 2 || p->virtual_stages < 2))
        return par_fail(par, "pipeline_schedule", err, "the interleaved schedule needs pp >= 2 "
                        "and virtual_stages >= 2 (pp = %llu, virtual_stages = %llu)", pp,
                        vs);
    if (p->schedule == SPEC_PP_INTERLEAVED && s->grad_accum % p->pp)
        return par_fail(par, "pipeline_schedule", err, "the interleaved schedule runs micro-"
                        "batches in groups of pp = %llu; training.grad_accum = %llu is not a "
                        "multiple", pp, accum);
    if (!p->chunk_layers && a->layers % chunks)
        return par_fail(par, "pp", err, "pp x virtual_stages = %llu model chunks do not divide "
                        "the model's %llu layers", (ull)chunks, layers);
    if (p->ep > 1 && !a->experts)
        return par_fail(par, "ep", err, "ep = %llu needs a model with experts", ep);
    if (p->ep > 1 && a->experts % p->ep)
        return par_fail(par, "ep", err, "ep = %llu does not divide the model's %llu experts",
                        ep, experts);
    uint64_t stage = (uint64_t)p->tp * p->cp * s->dp;
    if (stage % p->ep)
        return par_fail(par, "ep", err, "ep = %llu does not divide a stage's tp x cp x dp = %llu "
                        "ranks", ep, (ull)stage);
    if (p->etp > 1 && !a->experts)
        return par_fail(par, "etp", err, "etp = %u splits experts: it needs a model with "
                        "experts", p->etp);
    if (p->etp > 1 && a->expert_ffn_hidden % p->etp)
        return par_fail(par, "etp", err, "etp = %u does not divide the model's "
                        "expert_ffn_hidden = %llu", p->etp, (ull)a->expert_ffn_hidden);
    if (stage % ((uint64_t)p->ep * p->etp))
        return par_fail(par, "etp", err, "ep x etp = %llu does not divide a stage's tp x cp x "
                        "dp = %llu ranks (experts regroup them as etp x ep x expert dp)",
                        (ull)p->ep * p->etp, (ull)stage);
    if (p->moe_a2a_overlap && p->ep == 1) return a2a_overlap_needs_ep(par, p->ep, err);
    if (p->moe_a2a_overlap && p->pp > 1 && p->virtual_stages < 2)
        return par_fail(par, "moe_a2a_overlap", err, "moe_a2a_overlap with pp = %llu needs the "
                        "interleaved schedule (virtual_stages >= 2), as Megatron-core's combined "
                        "1F1B does", pp);
    if (p->moe_pad_to_capacity && !a->experts)
        return par_fail(par, "moe_pad_to_capacity", err, "moe_pad_to_capacity pads each expert's "
                        "input to its capacity: it needs a model with experts (this one has none)");
    if (p->moe_pad_to_capacity && s->shard.strategy != SPEC_MEGATRON)
        return megatron_only(par, "moe_pad_to_capacity", "moe_pad_expert_input_to_capacity", s, err);
    if (p->moe_pad_to_capacity && p->expert_imbalance > 1)
        return par_fail(par, "expert_imbalance", err, "expert_imbalance %g with moe_pad_to_capacity: "
                        "padded to capacity every expert computes exactly its capacity, so no rank "
                        "is busier (leave expert_imbalance at 1)", p->expert_imbalance);
    if (p->moe_a2a_overlap && s->shard.strategy != SPEC_MEGATRON)
        return megatron_only(par, "moe_a2a_overlap", "overlap_moe_expert_parallel_comm", s, err);
    if (a->experts && p->tp > 1 && !p->sequence_parallel)
        return par_fail(par, "sequence_parallel", err, "MoE layers with tp = %llu need "
                        "sequence_parallel (as Megatron-core requires)", tp);
    switch (s->shard.strategy) {
    case SPEC_DDP: case SPEC_ZERO1: case SPEC_SHARD_GRAD_OP: case SPEC_FULL_SHARD:
    case SPEC_MEGATRON: case SPEC_HYBRID_SHARD: case SPEC_HYBRID_SHARD_ZERO2:
    case SPEC_NO_SHARD: return SS_OK;
    case SPEC_FSDP2: return fsdp2_layout_check(root, s, err);
    case SPEC_DEEPSPEED: return ds_layout_check(root, s, err);
    default: {
        js_node n;
        js_get(root, "sharding", &n);
        return js_failf(n, err, "sharding.strategy %s is not modelled inside a model-parallel "
                        "layout (use ddp, zero1, shard_grad_op, full_shard, hybrid_shard, hybrid_shard_zero2, "
                        "fsdp2, deepspeed or megatron)",
                        spec_strategy_names[s->shard.strategy]);
    }
    }
}

static int load_layout(js_node root, spec_scenario *s, ss_err *err)
{
    js_node par, tr;
    uint64_t dp, mb, accum, every, offl;
    int recomp, kern, attn, moe_gemm, loss, offimpl;
    int rc = js_need(root, "parallel", &par, err);
    if (rc || (rc = js_want_obj(par, err)) ||
        (rc = js_keys_check(par, KEYS("dp", "tp", "cp", "pp", "ep", "etp", "sequence_parallel",
                                      "pipeline_schedule", "virtual_stages",
                                      "expert_imbalance", "fold", "pipeline_layers",
                                      "num_layers_in_first_pipeline_stage",
                                      "num_layers_in_last_pipeline_stage", "tp_comm_overlap",
                                      "async_tp", "p2p_scatter_gather", "cp_comm_type",
                                      "order", "moe_a2a_overlap", "moe_pad_to_capacity"),
                             err)) ||
        (rc = js_u64(par, "dp", true, 0, 1, 1u << 24, &dp, err)) ||
        (rc = js_need(root, "training", &tr, err)) || (rc = js_want_obj(tr, err)) ||
        (rc = js_keys_check(tr, KEYS("micro_batch", "seq_len", "recompute", "grad_accum",
                                     "kernels", "recompute_every", "attention", "moe_gemm",
                                     "loss", "attention_dropout", "cpu_offloading_num_layers",
                                     "cpu_offloading_impl", "repeat_kv", "recompute_early_stop"),
                               err)) ||
        (rc = js_u64(tr, "grad_accum", false, 1, 1, 4096, &accum, err)) ||
        (rc = js_u64(tr, "micro_batch", true, 0, 1, 1ull << 32, &mb, err)) ||
        (rc = js_u64(tr, "seq_len", s->model.is_arch, 1, 1, 1ull << 24, &s->seq_len, err)) ||
        (rc = js_enum(tr, "recompute", false, SPEC_RECOMP_NONE, spec_recompute_names, SPEC_NRECOMP,
                      &recomp, err)) ||
        (rc = js_enum(tr, "kernels", false, SPEC_KERNELS_AUTO, spec_kernels_names, SPEC_NKERNELS,
                      &kern, err)) ||
        (rc = js_u64(tr, "recompute_every", false, 1, 1, 1u << 20, &every, err)) ||
        (rc = js_enum(tr, "attention", false, SPEC_ATTN_AUTO, spec_attn_impl_names,
                      SPEC_NATTN_IMPLS, &attn, err)) ||
        (rc = js_enum(tr, "moe_gemm", false, SPEC_MOE_GEMM_GROUPED, spec_moe_gemm_names,
                      SPEC_NMOE_GEMMS, &moe_gemm, err)) ||
        (rc = js_enum(tr, "loss", false, SPEC_LOSS_AUTO, spec_loss_names, SPEC_NLOSS, &loss, err)) ||
        (rc = js_num(tr, "attention_dropout", false, 0.0, 0.0, 0.99, &s->attn_dropout, err)) ||
        (rc = js_u64(tr, "cpu_offloading_num_layers", false, 0, 0, 1u << 20, &offl, err)) ||
        (rc = js_enum(tr, "cpu_offloading_impl", false, SPEC_OFFL_SYNCHRONIZER,
                      spec_offload_impl_names, SPEC_NOFFL, &offimpl, err)))
        return rc;
    s->cpu_offload_layers = (uint32_t)offl;
    s->cpu_offload_impl = (spec_offload_impl)offimpl;
    s->loss = (spec_loss)loss;
    s->moe_gemm = (spec_moe_gemm)moe_gemm;
    s->kernels = (spec_kernels)kern;
    s->attn_impl = (spec_attn_impl)attn;
    s->recompute_every = (uint32_t)every;
    if (every > 1 && recomp != SPEC_RECOMP_FULL) {
        js_node n;
        js_get(tr, "recompute_every", &n);
        return js_failf(n, err, "recompute_every = %llu recomputes one layer in %llu in full: "
                        "expected recompute \"full\" with it, found \"%s\"",
                        (unsigned long long)every, (unsigned long long)every,
                        spec_recompute_names[recomp]);
    }
    if (mb * s->seq_len > SPEC_TOKENS_MAX) /* both bounded, so no overflow */
        return js_failf(tr, err, "micro_batch x seq_len = %llu tokens per micro-batch: expected "
                        "at most 2^32 = %llu", (unsigned long long)(mb * s->seq_len),
                        (unsigned long long)SPEC_TOKENS_MAX);
    s->recompute = (spec_recompute)recomp;
    s->grad_accum = (uint32_t)accum;
    s->dp = (uint32_t)dp;
    s->micro_batch = mb;
    if ((rc = load_parallel(par, s, err)) || (rc = load_stage_layers(par, s, err))) return rc;
    uint64_t gpus = (uint64_t)s->topo.nodes * spec_topo_rpn(&s->topo);
    uint64_t world = dp * s->par.tp * s->par.cp * s->par.pp;
    if (world > gpus) {
        js_node d;
        js_get(par, "dp", &d);
        const char *what = spec_topo_rpn(&s->topo) < s->topo.gpus_per_node
                               ? "GPUs at its ranks_per_node" : "GPUs";
        if (world == dp)
            return js_failf(d, err, "dp = %llu ranks do not fit topology %s (%llu %s)",
                            (unsigned long long)dp, s->topo.name, (unsigned long long)gpus, what);
        return js_failf(par, err, "tp x cp x pp x dp = %llu ranks do not fit topology %s (%llu %s)",
                        (unsigned long long)world, s->topo.name, (unsigned long long)gpus, what);
    }
    return SS_OK;
}

/* "topology": a path, an inline topology, or {"file": PATH, "nodes": N,
 * "device": PATH, "fabric": {...}, "ranks_per_node": K} (a shipped
 * topology at another node count, with another GPU in the same places,
 * with its nodes joined by another fabric: a cluster whose source gives
 * its inter-node bandwidth, or with the job on each node's first K GPUs). */
static int load_topology_ref(js_node root, js_doc *doc, spec_topology *t, ss_err *err)
{
    js_node n, f, ref, dev;
    uint64_t nodes = 0;
    int rc;
    if (js_get(root, "topology", &n) && js_is_obj(n) && js_get(n, "file", &f)) {
        ref = n;
        if ((rc = js_keys_check(n, KEYS("file", "nodes", "device", "fabric", "ranks_per_node"),
                                err)) ||
            (rc = js_u64(n, "nodes", false, 0, 1, 1u << 20, &nodes, err)) ||
            (rc = js_load_ref(n, "file", doc, &n, err)) ||
            (rc = mach_from_node(n, (uint32_t)nodes, t, err)) ||
            (rc = mach_set_ranks_per_node(ref, t, err)))
            return rc;
        if (js_get(ref, "device", &dev) && (rc = mach_set_device(ref, t, err))) return rc;
        return js_get(ref, "fabric", &dev) ? mach_set_fabric(ref, t, err) : SS_OK;
    }
    rc = js_load_ref(root, "topology", doc, &n, err);
    return rc ? rc : mach_from_node(n, 0, t, err);
}

static int load_refs(js_node root, spec_scenario *s, ss_err *err)
{
    js_doc mdoc = {0}, tdoc = {0};
    js_node m;
    int rc = js_load_ref(root, "model", &mdoc, &m, err);
    if (!rc) rc = load_model(m, &s->model, err);
    if (!rc) rc = load_topology_ref(root, &tdoc, &s->topo, err);
    js_doc_fini(&mdoc);
    js_doc_fini(&tdoc);
    return rc;
}

/* training.kernels "auto": the fused kernels of Megatron-core, and of
 * Megatron-DeepSpeed (DeepSpeed inside a tp or pp layout); PyTorch eager
 * modules for every other runtime (spec.h, SPEC_KERNEL_SETS). Liger-Kernel
 * patches Hugging Face's modules, which Megatron-core does not run. */
static int resolve_kernels(js_node root, spec_scenario *s, ss_err *err)
{
    bool megatron = s->shard.strategy == SPEC_MEGATRON ||
                    (s->shard.strategy == SPEC_DEEPSPEED && (s->par.tp > 1 || s->par.pp > 1));
    if (s->kernels == SPEC_KERNELS_LIGER && megatron) {
        js_node tr, k;
        js_get(root, "training", &tr);
        js_get(tr, "kernels", &k);
        return js_failf(k, err, "\"liger\" with %s: Liger-Kernel patches Hugging Face's "
                        "modules, and this layout runs Megatron-core's; expected \"fused\" or "
                        "\"auto\"", s->shard.strategy == SPEC_MEGATRON
                                          ? "strategy megatron"
                                          : "DeepSpeed in a tp or pp layout (Megatron-DeepSpeed)");
    }
    if (s->kernels != SPEC_KERNELS_AUTO) return SS_OK;
    s->kernels = megatron ? SPEC_KERNELS_FUSED : SPEC_KERNELS_EAGER;
    return SS_OK;
}

/* training.repeat_kv: absent, on with eager kernels outside Megatron (the
 * eager modules torchtitan and Hugging Face ran); Transformer Engine takes
 * K and V at their own heads, so it is refused under strategy megatron. */
static int resolve_repeat_kv(js_node root, spec_scenario *s, ss_err *err)
{
    js_node tr, k;
    js_get(root, "training", &tr);
    bool megatron = s->shard.strategy == SPEC_MEGATRON;
    int rc = js_bool(tr, "repeat_kv", false, s->kernels == SPEC_KERNELS_EAGER && !megatron,
                     &s->repeat_kv, err);
    if (rc || !js_get(tr, "repeat_kv", &k)) return rc;
    if (s->repeat_kv && megatron)
        return js_failf(k, err, "true under strategy megatron: Transformer Engine's attention "
                        "takes K and V at their own heads; expected false or no key");
    return SS_OK;
}

/* training.attention "auto": cuDNN's fused attention for Megatron-core's
 * fused kernels on a device with a cuDNN table (Transformer Engine selects
 * FusedAttention over FlashAttention on sm90, spec.h), FlashAttention-2
 * otherwise. An implementation the device has no table for is an error:
 * its rates would silently be another kernel's. */
static int resolve_attention(js_node root, spec_scenario *s, ss_err *err)
{
    const spec_device *d = &s->topo.device;
    if (s->attn_impl == SPEC_ATTN_AUTO) {
        bool te = s->shard.strategy == SPEC_MEGATRON && s->kernels == SPEC_KERNELS_FUSED;
        s->attn_impl = te && d->attn_cudnn.n ? SPEC_ATTN_CUDNN : SPEC_ATTN_FLASH;
        return SS_OK;
    }
    bool cudnn = s->attn_impl == SPEC_ATTN_CUDNN, fa3 = s->attn_impl == SPEC_ATTN_FLASH3;
    bool triton = s->attn_impl == SPEC_ATTN_TRITON;
    if ((cudnn && !d->attn_cudnn.n) || (fa3 && !d->attn_flash3.n) ||
        (triton && !(d->attn.n && d->attn_triton_fraction > 0))) {
        js_node tr, at;
        js_get(root, "training", &tr);
        js_get(tr, "attention", &at);
        return js_failf(at, err, "\"%s\" needs the device's measured rates (%s in the "
                        "device file) and %s has none: expected \"flash\" or a device with "
                        "that table", spec_attn_impl_names[s->attn_impl],
                        cudnn ? "\"attention_cudnn\"" : fa3 ? "\"attention_flash3\""
                                                            : "\"attention\" and \"attention_triton\"",
                        d->name);
    }
    return SS_OK;
}

/* training.recompute_early_stop (spec.h): given, or by the runtime: a
 * PyTorch-native one (DDP, ZeRO-1, FSDP1, FSDP2) with PyTorch's own modules
 * (eager, compiled, Liger) checkpoints through torch.utils.checkpoint's
 * non-reentrant path (FSDP's checkpoint_wrapper default, torchtitan's
 * ptd_checkpoint_wrapper, llm-foundry, fms-fsdp), which stops early;
 * Megatron-core's and DeepSpeed's checkpoints re-run the whole layer, and so
 * do Transformer Engine's and Apex's fused modules' stacks. Only full
 * recomputation reads it. After resolve_kernels. */
static int resolve_early_stop(js_node root, spec_scenario *s, ss_err *err)
{
    js_node tr;
    js_get(root, "training", &tr);
    bool native = s->shard.strategy != SPEC_MEGATRON && s->shard.strategy != SPEC_DEEPSPEED;
    return js_bool(tr, "recompute_early_stop", false, native && s->kernels != SPEC_KERNELS_FUSED,
                   &s->recompute_early_stop, err);
}

/* training.loss "auto": Megatron-core's vocab-parallel cross-entropy with
 * the fused kernel set, Liger's fused linear cross-entropy with Liger's
 * (AutoLigerKernelForCausalLM's default; its plain cross-entropy kernel
 * when tp splits the head), PyTorch's eager one otherwise (spec.h). After
 * resolve_kernels. Liger's fused linear cross-entropy takes the whole
 * output weight on every rank, so a head split over tp cannot run it. */
static int resolve_loss(js_node root, spec_scenario *s, ss_err *err)
{
    if (s->loss == SPEC_LOSS_AUTO)
        s->loss = s->kernels == SPEC_KERNELS_FUSED   ? SPEC_LOSS_VOCAB_PARALLEL
                  : s->kernels != SPEC_KERNELS_LIGER ? SPEC_LOSS_EAGER
                  : s->par.tp > 1                    ? SPEC_LOSS_FUSED /* Liger's cross-entropy */
                                                     : SPEC_LOSS_FUSED_LINEAR;
    if (s->loss != SPEC_LOSS_FUSED_LINEAR || s->par.tp <= 1) return SS_OK;
    js_node tr, lo;
    js_get(root, "training", &tr);
    js_get(tr, "loss", &lo);
    return js_failf(lo, err, "\"fused_linear\" (Liger-Kernel's fused linear cross-entropy) needs "
                    "the whole output weight on each rank, and tp is %u: expected "
                    "\"vocab_parallel\" or \"fused\" with tensor parallelism", s->par.tp);
}

static int load_root(js_node root, spec_scenario *s, ss_err *err)
{
    js_node a;
    size_t na;
    int rc = js_want_obj(root, err);
    if (rc || (rc = js_keys_check(root, KEYS("name", "description", "assumptions", "model",
                                             "topology", "parallel", "training", "precision",
                                             "optimizer", "sharding", "offload", "runtime", "network",
                                             "calibration",
                                             "allocator", "init",
                                             "expect", "measured"),
                                 err)) ||
        (rc = js_copy_name(root, "name", true, s->name, err)) ||
        (rc = js_arr(root, "assumptions", false, &a, &na, err)) ||
        (rc = load_refs(root, s, err)) || (rc = load_layout(root, s, err)) ||
        (rc = load_precision(root, &s->prec, err)) ||
        (rc = load_optimizer(root, &s->opt, err)) ||
        (rc = load_sharding(root, s, err)) || (rc = load_hybrid(root, s, err)) ||
        (rc = load_fsdp2(root, s, err)) || (rc = load_megatron(root, s, err)) ||
        (rc = offload_activations_check(root, s, err)) || (rc = load_offload(root, s, err)) ||
        (rc = ds_optimizer_impl(root, s, err)) ||
        (rc = layout_check(root, s, err)) || (rc = resolve_kernels(root, s, err)) ||
        (rc = resolve_repeat_kv(root, s, err)) ||
        (rc = resolve_loss(root, s, err)) || (rc = resolve_attention(root, s, err)) ||
        (rc = resolve_early_stop(root, s, err)) ||
        (rc = load_runtime(root, s, err)) ||
        (rc = load_network(root, s, err)) || (rc = load_calibration(root, s, err)) ||
        (rc = load_allocator(root, s, err)) || (rc = load_init(root, s, err)) ||
        (rc = load_expect(root, s, err)) || (rc = load_measured(root, s, err)))
        return rc;
    for (size_t i = 0; i < na && !rc; i++) {
        const char *txt;
        rc = js_str_val(js_at(a, i), &txt, err);
    }
    return rc;
}

/* ---- "trainer": a runtime's own config as the training sections ---- */

/* The scenario keys a trainer config gave ("$.training", "$.parallel.tp"),
 * so that a later error at one of them can say where it came from. */
typedef struct tt_origin {
    char file[JS_FILE_MAX];
    char keys[48][48];      /* "$.training", "$.parallel.tp" */
    char sets[16][48];      /* "training.seq_len": overridden after the merge */
    size_t n, nsets;
} tt_origin;

static void origin_set(tt_origin *o, const char *assignment)
{
    size_t n = strcspn(assignment, "=");
    if (o->nsets < SS_ARRAY_LEN(o->sets))
        snprintf(o->sets[o->nsets++], sizeof o->sets[0], "%.*s", (int)(n < 47 ? n : 47), assignment);
}

static void origin_add(tt_origin *o, const char *sec, const char *key)
{
    if (o->n < SS_ARRAY_LEN(o->keys))
        snprintf(o->keys[o->n++], sizeof o->keys[0], "$.%.20s%s%.20s", sec, key ? "." : "",
                 key ? key : "");
}

/* An error at a key the trainer config gave says so. */
static void origin_note(const tt_origin *o, ss_err *err)
{
    const char *p = strstr(err->where, ": $.");
    for (size_t i = 0; p && i < o->nsets; i++) /* --set gave it after the merge */
        if (!strncmp(p + 4, o->sets[i], strlen(o->sets[i]))) return;
    for (size_t i = 0; p && i < o->n; i++) {
        size_t n = strlen(o->keys[i]);
        if (strncmp(p + 2, o->keys[i], n) || (p[2 + n] && p[2 + n] != '.' && p[2 + n] != '['))
            continue;
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, " (set by trainer.torchtitan: %s)",
                 o->file);
        return;
    }
}

/* Move each key of sec (a section the trainer config implies) into the
 * scenario's own section of that name; a key both give is an error. */
static int merge_section(js_node root, cJSON *dst_root, cJSON *sec, const char *tfile,
                         tt_origin *origin, ss_err *err)
{
    cJSON *dst = cJSON_GetObjectItemCaseSensitive(dst_root, sec->string);
    js_node own, k;
    js_get(root, sec->string, &own);
    if (!strcmp(sec->string, "assumptions")) {
        if (!cJSON_IsArray(dst)) return js_failf(own, err, "expected an array of strings");
    } else if (!cJSON_IsObject(dst)) {
        return js_failf(own, err, "expected an object (keys added to what the torchtitan "
                                  "config %s gives)", tfile);
    }
    while (sec->child) {
        cJSON *c = cJSON_DetachItemViaPointer(sec, sec->child);
        if (c->string && cJSON_GetObjectItemCaseSensitive(dst, c->string)) {
            js_get(own, c->string, &k);
            int rc = js_failf(k, err, "also given by the torchtitan config %s (trainer."
                              "torchtitan): give it in one place (--set changes either)", tfile);
            cJSON_Delete(c);
            return rc;
        }
        if (c->string) origin_add(origin, sec->string, c->string);
        if (!(c->string ? cJSON_AddItemToObject(dst, c->string, c) : cJSON_AddItemToArray(dst, c))) {
            cJSON_Delete(c);
            return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        }
    }
    return SS_OK;
}

/* "trainer": {"torchtitan": PATH or inline tables, "gpus": N}: the sections
 * the job config implies (io/ttconfig.h), for a world of N GPUs (default
 * every GPU of the scenario's topology) and the layers of its model, merged
 * into the scenario; "trainer" then goes. Runs between the two passes of
 * --set (scn_from_doc): a key the scenario file also gives is an error
 * naming both; --set changes either. */
static int expand_trainer(js_doc *doc, tt_origin *origin, ss_err *err)
{
    js_node root = js_root(doc), tr, cfg;
    js_doc tdoc = {0};
    spec_scenario pre = {0};
    cJSON *secs = NULL;
    if (!cJSON_IsObject(doc->root) || !js_get(root, "trainer", &tr)) return SS_OK;
    int rc = js_want_obj(tr, err);
    if (!rc) rc = js_keys_check(tr, KEYS("torchtitan", "gpus"), err);
    if (!rc) rc = js_need(tr, "torchtitan", &cfg, err);
    if (!rc && js_is_str(cfg)) {
        rc = js_path_resolve(doc->file, cfg.j->valuestring, tdoc.file, sizeof tdoc.file, err);
        if (!rc) rc = ttc_read(tdoc.file, &tdoc.root, err);
        if (!rc) cfg = js_root(&tdoc);
    } else if (!rc && !js_is_obj(cfg)) {
        rc = js_failf(cfg, err, "expected the path of a torchtitan TOML job config, or its "
                                "tables as an object");
    }
    uint64_t world = 0;
    if (!rc) rc = load_refs(root, &pre, err);
    if (!rc) { /* torchrun's world: every GPU of the topology unless "gpus" says fewer */
        uint64_t all = (uint64_t)pre.topo.nodes * spec_topo_rpn(&pre.topo);
        rc = js_u64(tr, "gpus", false, all, 1, all, &world, err);
    }
    if (!rc) rc = ttc_sections(cfg, world, pre.model.is_arch ? pre.model.arch.layers : 0, &secs,
                               err);
    while (!rc && secs->child) {
        cJSON *sec = cJSON_DetachItemViaPointer(secs, secs->child);
        cJSON *dst = cJSON_GetObjectItemCaseSensitive(doc->root, sec->string);
        if (!dst) {
            if (strcmp(sec->string, "assumptions")) origin_add(origin, sec->string, NULL);
            if (!cJSON_AddItemToObject(doc->root, sec->string, sec)) {
                cJSON_Delete(sec);
                rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
            }
            continue;
        }
        rc = merge_section(root, doc->root, sec, cfg.file, origin, err);
        cJSON_Delete(sec);
    }
    if (!rc) snprintf(origin->file, sizeof origin->file, "%s", cfg.file);
    if (!rc) cJSON_DeleteItemFromObjectCaseSensitive(doc->root, "trainer");
    cJSON_Delete(secs);
    spec_scenario_fini(&pre);
    js_doc_fini(&tdoc);
    return rc;
}

static int scn_from_doc(js_doc *doc, int rc, const char *file, const char *const *overrides,
                        size_t noverrides, spec_scenario *out, ss_err *err);

int scn_load(const char *file, const char *const *overrides, size_t noverrides,
             spec_scenario *out, ss_err *err)
{
    js_doc doc = {0};
    int rc = js_doc_load(&doc, file, err);
    return scn_from_doc(&doc, rc, file, overrides, noverrides, out, err);
}

int scn_load_text(const char *name, const char *text, size_t len, const char *const *overrides,
                  size_t noverrides, spec_scenario *out, ss_err *err)
{
    js_doc doc = {0};
    int rc = js_doc_parse(&doc, name, text, len, err);
    return scn_from_doc(&doc, rc, name, overrides, noverrides, out, err);
}

static int absolute_ref(cJSON *node, const char *key, const char *file, ss_err *err);

/* An override that reaches into a file the scenario names ("model.
 * architecture.layers=40" with "model": "PATH", "topology.fabric.GBps=25"
 * with "topology": {"file": PATH, "nodes": 4}) first brings that file into
 * the scenario, its own references made absolute and a topology wrapper's
 * nodes, device and fabric kept; the override then applies to the copy, never to
 * the file. */
static int inline_trainer(js_doc *doc, const char *file, const char *assignment, ss_err *err)
{
    cJSON *tr = cJSON_IsObject(doc->root) ? cJSON_GetObjectItemCaseSensitive(doc->root, "trainer") : NULL;
    cJSON *ref = cJSON_IsObject(tr) ? cJSON_GetObjectItemCaseSensitive(tr, "torchtitan") : NULL;
    if (strncmp(assignment, "trainer.torchtitan.", 19) || !cJSON_IsString(ref)) return SS_OK;
    char path[JS_FILE_MAX];
    cJSON *cfg = NULL;
    int rc = js_path_resolve(file, ref->valuestring, path, sizeof path, err);
    if (!rc) rc = ttc_read(path, &cfg, err);
    if (!rc && !cJSON_ReplaceItemInObjectCaseSensitive(tr, "torchtitan", cfg)) {
        cJSON_Delete(cfg);
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    return rc;
}

/* "topology.device.gemm_efficiency=0.6": the device a topology (inline or
 * a wrapper) names by path is read into it first, as inline_for does for
 * the topology itself; a path is resolved against the scenario's file (a
 * copied topology's was made absolute). */
static int inline_device(js_doc *doc, const char *file, const char *assignment, ss_err *err)
{
    if (strncmp(assignment, "topology.device", 15) ||
        (assignment[15] != '.' && assignment[15] != '['))
        return SS_OK;
    cJSON *topo = cJSON_IsObject(doc->root) ? cJSON_GetObjectItemCaseSensitive(doc->root, "topology") : NULL;
    cJSON *dev = cJSON_IsObject(topo) ? cJSON_GetObjectItemCaseSensitive(topo, "device") : NULL;
    if (!cJSON_IsString(dev)) return SS_OK; /* inline already, or an error load reports */
    char path[JS_FILE_MAX];
    js_doc d = {0};
    int rc = js_path_resolve(file, dev->valuestring, path, sizeof path, err);
    if (!rc) rc = js_doc_load(&d, path, err);
    if (!rc && !cJSON_ReplaceItemInObjectCaseSensitive(topo, "device", d.root))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) d.root = NULL; /* now the scenario's */
    js_doc_fini(&d);
    return rc;
}

static int inline_for(js_doc *doc, const char *file, const char *assignment, ss_err *err)
{
    if (!strncmp(assignment, "trainer.", 8)) return inline_trainer(doc, file, assignment, err);
    static const char *const heads[] = {"model", "topology", "sharding"};
    const char *head = NULL;
    for (size_t k = 0; k < 3 && !head; k++) {
        size_t n = strlen(heads[k]);
        if (!strncmp(assignment, heads[k], n) && (assignment[n] == '.' || assignment[n] == '['))
            head = heads[k];
    }
    cJSON *v = head && cJSON_IsObject(doc->root) ? cJSON_GetObjectItemCaseSensitive(doc->root, head) : NULL;
    cJSON *wrap = NULL, *ref = v;
    if (cJSON_IsObject(v) && !strcmp(head, "topology")) {
        const char *sub = assignment + strlen(head) + 1;
        if (!strncmp(sub, "file", 4) || !strncmp(sub, "nodes", 5) ||
            !strncmp(sub, "ranks_per_node", 14) ||
            (!strncmp(sub, "device", 6) && (sub[6] == '\0' || sub[6] == '=' ||
                                             cJSON_GetObjectItemCaseSensitive(v, "device"))) ||
            (!strncmp(sub, "fabric", 6) && cJSON_GetObjectItemCaseSensitive(v, "fabric")))
            return SS_OK; /* the wrapper's own keys */
        wrap = v;
        ref = cJSON_GetObjectItemCaseSensitive(v, "file");
    }
    if (!cJSON_IsString(ref)) return SS_OK; /* inline already */
    char path[JS_FILE_MAX];
    js_doc sub = {0};
    int rc = js_path_resolve(file, ref->valuestring, path, sizeof path, err);
    if (!rc) rc = js_doc_load(&sub, path, err);
    if (!rc) rc = absolute_ref(sub.root, !strcmp(head, "model") ? "hf_config" : "device", path, err);
    if (!rc && wrap) rc = absolute_ref(wrap, "device", file, err);
    cJSON *obj = rc ? NULL : sub.root;
    static const char *const kept[] = {"nodes", "device", "fabric", "ranks_per_node"}; /* the wrapper's, over the file's */
    for (size_t k = 0; obj && wrap && k < SS_ARRAY_LEN(kept) && !rc; k++) {
        cJSON *w = cJSON_DetachItemFromObjectCaseSensitive(wrap, kept[k]);
        if (w && !cJSON_ReplaceItemInObjectCaseSensitive(obj, kept[k], w) &&
            !cJSON_AddItemToObject(obj, kept[k], w)) {
            cJSON_Delete(w);
            rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        }
    }
    /* a sharding file is a DeepSpeed config (load_sharding); inline, it says so */
    if (!rc && !strcmp(head, "sharding") && cJSON_IsObject(obj) &&
        !cJSON_GetObjectItemCaseSensitive(obj, "strategy") &&
        !cJSON_AddStringToObject(obj, "strategy", "deepspeed"))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) {
        sub.root = NULL; /* now the scenario's */
        if (!cJSON_ReplaceItemInObjectCaseSensitive(doc->root, head, obj)) {
            cJSON_Delete(obj);
            rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        }
    }
    js_doc_fini(&sub);
    return rc;
}

/* An override of what the trainer config reads (its file, the model, the
 * topology): applied before the config is expanded. */
static bool trainer_input(const char *o)
{
    static const char *const heads[] = {"trainer", "model", "topology"};
    for (size_t k = 0; k < SS_ARRAY_LEN(heads); k++) {
        size_t n = strlen(heads[k]);
        if (!strncmp(o, heads[k], n) && (o[n] == '.' || o[n] == '[' || o[n] == '='))
            return true;
    }
    return false;
}

/* Overrides in two passes around the trainer config's expansion: what it
 * reads first, then everything else, so that --set on a key the config
 * gave changes it (run's advice, sweeps and search vary keys that way);
 * within a pass the command line's order holds. */
static int scn_from_doc(js_doc *d, int rc, const char *file, const char *const *overrides,
                        size_t noverrides, spec_scenario *out, ss_err *err)
{
    js_doc doc = *d;
    spec_scenario s = {0};
    tt_origin origin;
    origin.n = origin.nsets = 0;
    snprintf(s.file, sizeof s.file, "%s", file);
    if (!rc) rc = alias_doc(doc.root, file, err);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        for (size_t i = 0; i < noverrides && !rc; i++) {
            char buf[4096]; /* an alias's value is a number or a word */
            const char *set = alias_assignment(overrides[i], buf, sizeof buf);
            if (!set) set = overrides[i];
            const char *o = !strncmp(set, "$.", 2) ? set + 2 : set;
            if (trainer_input(o) != (pass == 0)) continue;
            if (pass == 1) origin_set(&origin, o);
            rc = inline_for(&doc, file, o, err);
            if (!rc) rc = inline_device(&doc, file, o, err);
            if (!rc) rc = js_doc_set(&doc, set, err);
        }
        if (!rc && pass == 0) rc = expand_trainer(&doc, &origin, err);
    }
    if (!rc && (rc = load_root(js_root(&doc), &s, err))) origin_note(&origin, err);
    js_doc_fini(&doc);
    if (rc) {
        spec_scenario_fini(&s);
        return rc;
    }
    *out = s;
    return SS_OK;
}

int scn_read_summary(const char *file, char **text, bool *is_summary, ss_err *err)
{
    js_doc doc = {0};
    js_node v;
    *text = NULL;
    *is_summary = false;
    int rc = js_doc_load(&doc, file, err);
    if (!rc && js_get(js_root(&doc), "shardsim_version", &v)) {
        /* what every summary since the first has; without them diff would
         * print a table of dashes and exit 0 */
        static const char *const need[] = {"scenario", "step_time_s", "memory"};
        for (size_t k = 0; k < 3 && !rc; k++)
            if (!js_get(js_root(&doc), need[k], &v)) {
                char where[512];
                snprintf(where, sizeof where, "%s: $.%s", file, need[k]);
                rc = ss_fail(err, SS_E_INPUT, where,
                             "missing: a file with \"shardsim_version\" is read as a summary "
                             "(shardsim run --json), which has \"scenario\", \"step_time_s\" "
                             "and \"memory\"");
            }
        *is_summary = !rc;
    }
    if (*is_summary) {
        *text = cJSON_PrintUnformatted(doc.root);
        if (!*text) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    js_doc_fini(&doc);
    return rc;
}

/* node[key], when a relative path string, made absolute against file's
 * folder (the loader's rule). */
static int absolute_ref(cJSON *node, const char *key, const char *file, ss_err *err)
{
    cJSON *v = cJSON_IsObject(node) ? cJSON_GetObjectItemCaseSensitive(node, key) : NULL;
    if (!cJSON_IsString(v) || v->valuestring[0] == '/') return SS_OK;
    char rel[JS_FILE_MAX], abs[PATH_MAX];
    int rc = js_path_resolve(file, v->valuestring, rel, sizeof rel, err);
    if (rc) return rc;
    if (!realpath(rel, abs))
        return ss_fail(err, SS_E_IO, file, "$.%s: cannot find \"%s\": %s", key, v->valuestring,
                       strerror(errno));
    return cJSON_SetValuestring(v, abs) ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

int scn_write_resolved(const char *file, const char *const *overrides, size_t noverrides,
                       const char *name, char **text, ss_err *err)
{
    js_doc doc = {0};
    *text = NULL;
    int rc = js_doc_load(&doc, file, err);
    if (!rc) rc = alias_doc(doc.root, file, err);
    for (size_t i = 0; i < noverrides && !rc; i++) {
        char buf[4096]; /* an alias's value is a number or a word */
        const char *set = alias_assignment(overrides[i], buf, sizeof buf);
        rc = js_doc_set(&doc, set ? set : overrides[i], err);
    }
    cJSON *root = doc.root, *model = NULL, *topo = NULL;
    if (!rc) {
        model = cJSON_GetObjectItemCaseSensitive(root, "model");
        topo = cJSON_GetObjectItemCaseSensitive(root, "topology");
    }
    static const char *const top[] = {"model", "topology", "sharding", "calibration"};
    for (size_t k = 0; k < 4 && !rc; k++) rc = absolute_ref(root, top[k], file, err);
    if (!rc) rc = absolute_ref(model, "hf_config", file, err);
    if (!rc) rc = absolute_ref(cJSON_GetObjectItemCaseSensitive(root, "trainer"), "torchtitan", file, err);
    if (!rc) rc = absolute_ref(topo, "file", file, err);
    if (!rc) rc = absolute_ref(topo, "device", file, err);
    cJSON *n = !rc && name ? cJSON_GetObjectItemCaseSensitive(root, "name") : NULL;
    if (n && cJSON_IsString(n) && !cJSON_SetValuestring(n, name))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc && !(*text = cJSON_Print(root))) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    js_doc_fini(&doc);
    spec_scenario back;
    if (!rc && !(rc = scn_load_text(file, *text, strlen(*text), NULL, 0, &back, err)))
        spec_scenario_fini(&back);
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}
