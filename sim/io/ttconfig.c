/* torchtitan TOML as scenario sections. ttconfig.h states the contract;
 * every default below is job_config.py's at torchtitan commit 238fa99. */
#include "ttconfig.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "../plan/spec.h"
#include "toml_shim.h"

#define TT_FILE_MAX (64u * 1024u * 1024u) /* as json.h's JS_MAX_FILE_BYTES */

int ttc_read(const char *file, cJSON **out, ss_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = fopen(file, "rb");
    if (!f) return ss_fail(err, SS_E_IO, file, "cannot read file: %s", strerror(errno));
    int rc = js_read_stream(f, file, TT_FILE_MAX, &text, &len, err);
    fclose(f);
    if (!rc) rc = toml_to_json(file, text ? text : "", len, out, err);
    free(text);
    return rc;
}

/* ---- what the config says, in torchtitan's terms ---- */

typedef struct tt_cfg {
    int64_t replicate, shard, tp, pp, cp, ep, etp;
    int64_t pp_mb, pp_lps, pp_in, pp_out; /* microbatch size, layers per stage, less layers */
    int schedule;                          /* index in schedules[] */
    bool async_tp;
    bool cp_alltoall;                      /* context_parallel_rotate_method "alltoall" */
    int raf;                               /* fsdp_reshard_after_forward */
    uint64_t local_batch, seq_len;
    int64_t global_batch;
    bool bf16_params, mp_param_fp32, reduce_bf16, cpu_offload;
    int recompute; /* index in spec_recompute_names */
    uint64_t ac_every; /* full AC on every ac_every-th block (selective_ac_option "N") */
    int opt, impl;
    bool compile;                /* [compile] enable */
    bool compile_model, compile_loss; /* ... and its components */
    bool float8, fp8_all_gather; /* [model] converters ["float8"], [float8] */
    int fp8_recipe;              /* spec_fp8_recipe */
    const char *name, *flavor;
} tt_cfg;

static const char *const schedules[] = {"1F1B", "Interleaved1F1B"};
static const char *const raf_names[] = {"default", "always", "never"};

/* Sections read, and sections accepted unread (they do not change a
 * step: logging, checkpoints, evaluation, process-group timeouts). */
static const char *const mapped[] = {"parallelism", "training", "activation_checkpoint",
                                     "optimizer", "model", "compile", "float8", "quantize",
                                     "fault_tolerance"};
static const char *const unread[] = {"job", "profiling", "metrics", "lr_scheduler", "checkpoint",
                                     "comm", "validation", "debug", "memory_estimation",
                                     "experimental"};

/* An integer at n[key] in [min, max] (-1 allowed when minus1), def when
 * absent. */
static int tt_int(js_node n, const char *key, int64_t def, int64_t min, int64_t max, bool minus1,
                  int64_t *out, ss_err *err)
{
    js_node k;
    double v;
    if (!js_get(n, key, &k)) {
        *out = def;
        return SS_OK;
    }
    int rc = js_num(n, key, false, (double)def, minus1 ? -1.0 : (double)min, (double)max, &v, err);
    if (rc) return rc;
    if (v != floor(v) || (minus1 && v < (double)min && v != -1.0))
        return js_failf(k, err, "expected an integer %s%lld to %lld; found %g",
                        minus1 ? "-1 or " : "", (long long)min, (long long)max, v);
    *out = (int64_t)v;
    return SS_OK;
}

/* A string at n[key] among names[] (torchtitan's spelling, compared
 * without case where torchtitan does so); *out its index. */
static int tt_enum(js_node n, const char *key, int def, const char *const *names, size_t nn,
                   bool nocase, int *out, ss_err *err)
{
    js_node k;
    const char *s;
    *out = def;
    if (!js_get(n, key, &k)) return SS_OK;
    int rc = js_str(n, key, false, "", &s, err);
    if (rc) return rc;
    for (size_t i = 0; i < nn; i++)
        if (nocase ? !strcasecmp(s, names[i]) : !strcmp(s, names[i])) {
            *out = (int)i;
            return SS_OK;
        }
    char list[256] = "";
    for (size_t i = 0; i < nn; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "", names[i]);
    return js_failf(k, err, "expected one of %s; found \"%s\"", list, s);
}

static int tt_section(js_node cfg, const char *name, js_node *out, ss_err *err)
{
    if (!js_get(cfg, name, out)) {
        *out = (js_node){0};
        return SS_OK;
    }
    return js_want_obj(*out, err);
}

static int read_parallelism(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node p, k;
    c->replicate = c->tp = c->pp = c->cp = c->ep = c->etp = c->pp_mb = c->pp_in = c->pp_out = 1;
    c->shard = -1;
    int rc = tt_section(cfg, "parallelism", &p, err);
    if (rc || !p.j) return rc;
    if ((rc = js_keys_check(p, JS_KEYS("data_parallel_replicate_degree",
            "data_parallel_shard_degree", "fsdp_reshard_after_forward", "tensor_parallel_degree",
            "disable_loss_parallel", "enable_async_tensor_parallel", "pipeline_parallel_degree",
            "module_fqns_per_model_part", "pipeline_parallel_first_stage_less_layers",
            "pipeline_parallel_last_stage_less_layers", "pipeline_parallel_layers_per_stage",
            "pipeline_parallel_schedule", "pipeline_parallel_schedule_csv",
            "pipeline_parallel_microbatch_size", "pipeline_parallel_expert_parallel_overlap",
            "context_parallel_degree", "context_parallel_load_balancer",
            "context_parallel_rotate_method", "expert_parallel_degree",
            "expert_tensor_parallel_degree", "expert_parallel_comm_backend"), err)) ||
        (rc = tt_int(p, "data_parallel_replicate_degree", 1, 1, 1 << 24, false, &c->replicate, err)) ||
        (rc = tt_int(p, "data_parallel_shard_degree", -1, 1, 1 << 24, true, &c->shard, err)) ||
        (rc = tt_int(p, "tensor_parallel_degree", 1, 1, 1024, false, &c->tp, err)) ||
        (rc = tt_int(p, "pipeline_parallel_degree", 1, 1, 1024, false, &c->pp, err)) ||
        (rc = tt_int(p, "context_parallel_degree", 1, 1, 1024, false, &c->cp, err)) ||
        (rc = tt_int(p, "expert_parallel_degree", 1, 1, 1 << 16, false, &c->ep, err)) ||
        (rc = tt_int(p, "expert_tensor_parallel_degree", 1, 1, 1024, false, &c->etp, err)) ||
        (rc = tt_int(p, "pipeline_parallel_microbatch_size", 1, 1, 1 << 20, false, &c->pp_mb, err)) ||
        (rc = tt_int(p, "pipeline_parallel_layers_per_stage", 0, 1, 1 << 20, false, &c->pp_lps, err)) ||
        (rc = tt_int(p, "pipeline_parallel_first_stage_less_layers", 1, 0, 1 << 20, false, &c->pp_in, err)) ||
        (rc = tt_int(p, "pipeline_parallel_last_stage_less_layers", 1, 0, 1 << 20, false, &c->pp_out, err)) ||
        (rc = js_bool(p, "enable_async_tensor_parallel", false, false, &c->async_tp, err)) ||
        (rc = tt_enum(p, "fsdp_reshard_after_forward", 0, raf_names, 3, false, &c->raf, err)))
        return rc;
    /* a pipeline schedule matters only with a pipeline */
    if (c->pp > 1 && (rc = tt_enum(p, "pipeline_parallel_schedule", 0, schedules, 2, true,
                                   &c->schedule, err)))
        return rc;
    const char *s;
    if (js_get(p, "module_fqns_per_model_part", &k) && !cJSON_IsNull(k.j))
        return js_failf(k, err, "module_fqns_per_model_part is not read: give the split with "
                        "pipeline_parallel_layers_per_stage and the _less_layers weights");
    if (!rc) rc = js_str(p, "pipeline_parallel_schedule_csv", false, "", &s, err);
    if (!rc && *s) {
        js_get(p, "pipeline_parallel_schedule_csv", &k);
        return js_failf(k, err, "a schedule from a CSV file is not modelled: expected \"\"; found \"%s\"", s);
    }
    if (!rc) rc = js_str(p, "context_parallel_rotate_method", false, "allgather", &s, err);
    if (!rc && strcmp(s, "allgather") && strcmp(s, "alltoall")) {
        js_get(p, "context_parallel_rotate_method", &k);
        return js_failf(k, err, "expected \"allgather\" or \"alltoall\"; found \"%s\"", s);
    }
    if (!rc) c->cp_alltoall = !strcmp(s, "alltoall");
    if (!rc) rc = js_str(p, "expert_parallel_comm_backend", false, "standard", &s, err);
    if (!rc && strcmp(s, "standard")) {
        js_get(p, "expert_parallel_comm_backend", &k);
        return js_failf(k, err, "expected \"standard\" (all-to-all dispatch; DeepEP is not "
                        "modelled); found \"%s\"", s);
    }
    return rc;
}

static int read_training(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node t, k;
    static const char *const dt[] = {"float32", "bfloat16"};
    int dtype = 0, mp = 1, red = 0;
    int64_t lb;
    c->local_batch = 8, c->seq_len = 2048, c->global_batch = -1;
    int rc = tt_section(cfg, "training", &t, err);
    if (rc || !t.j) return rc;
    if ((rc = js_keys_check(t, JS_KEYS("dataset", "dataset_path", "local_batch_size", "batch_size",
            "global_batch_size", "seq_len", "max_norm", "steps", "enable_cpu_offload", "dtype",
            "mixed_precision_param", "mixed_precision_reduce", "gc_freq", "gc_debug",
            "dataloader", "seed", "deterministic"), err)))
        return rc;
    const char *bkey = js_get(t, "batch_size", &k) ? "batch_size" : "local_batch_size";
    if (js_get(t, "batch_size", &k) && js_get(t, "local_batch_size", &k))
        return js_failf(k, err, "batch_size is torchtitan's older name for local_batch_size: give one");
    int64_t seq;
    if ((rc = tt_int(t, bkey, 8, 1, 1 << 20, false, &lb, err)) ||
        (rc = tt_int(t, "seq_len", 2048, 1, 1 << 24, false, &seq, err)) ||
        (rc = tt_int(t, "global_batch_size", -1, 1, 1ll << 40, true, &c->global_batch, err)) ||
        (rc = js_bool(t, "enable_cpu_offload", false, false, &c->cpu_offload, err)) ||
        (rc = tt_enum(t, "dtype", 0, dt, 2, false, &dtype, err)) ||
        (rc = tt_enum(t, "mixed_precision_param", 1, dt, 2, false, &mp, err)) ||
        (rc = tt_enum(t, "mixed_precision_reduce", 0, dt, 2, false, &red, err)))
        return rc;
    c->local_batch = (uint64_t)lb, c->seq_len = (uint64_t)seq;
    c->bf16_params = dtype == 1, c->mp_param_fp32 = mp == 0, c->reduce_bf16 = red == 1;
    return SS_OK;
}

static int read_ac(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node a, k;
    static const char *const modes[] = {"selective", "full", "none", "memory_budget"};
    int mode = 0;
    const char *opt;
    int rc = tt_section(cfg, "activation_checkpoint", &a, err);
    if (!rc && a.j)
        rc = js_keys_check(a, JS_KEYS("mode", "selective_ac_option",
                "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop", "memory_budget",
                "visualize_memory_budget_pareto", "preserve_rng_state", "determinism_check",
                "debug"), err);
    if (!rc && a.j) rc = tt_enum(a, "mode", 0, modes, 4, false, &mode, err);
    if (!rc && a.j) rc = js_str(a, "selective_ac_option", false, "2", &opt, err);
    if (rc) return rc;
    if (!a.j) opt = "2";
    if (mode == 3)
        return js_failf(js_get(a, "mode", &k) ? k : a, err, "memory_budget AC (the compiler's "
                        "min-cut) is not modelled: expected \"none\", \"selective\" or \"full\"");
    c->ac_every = 1;
    c->recompute = mode == 1 ? SPEC_RECOMP_FULL : mode == 2 ? SPEC_RECOMP_NONE : -1;
    if (c->recompute >= 0) return SS_OK;
    if (!strcmp(opt, "op")) {
        c->recompute = SPEC_RECOMP_SELECTIVE_OP;
        return SS_OK;
    }
    /* "N": one block in every N checkpointed whole (torchtitan's ac_freq):
     * full recomputation on every N-th layer */
    char *end;
    unsigned long long every = strtoull(opt, &end, 10);
    if (*opt >= '1' && *opt <= '9' && !*end && every <= (1u << 20)) {
        c->recompute = SPEC_RECOMP_FULL;
        c->ac_every = every;
        return SS_OK;
    }
    bool def = !a.j || !js_get(a, "selective_ac_option", &k);
    if (def) k = a.j ? a : cfg;
    return js_failf(k, err, "selective_ac_option \"%s\": expected \"op\" (per-op SAC) or a "
                    "block frequency N from 1 to 1048576 (every N-th block checkpointed whole)",
                    opt);
}

static int read_optimizer(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node o, k;
    static const char *const names[] = {"AdamW", "Adam"};
    static const char *const impls[] = {"foreach", "for-loop", "fused"}; /* spec_opt_impl order */
    bool early = false;
    c->opt = SPEC_OPT_ADAMW, c->impl = SPEC_IMPL_FUSED;
    int rc = tt_section(cfg, "optimizer", &o, err);
    if (rc || !o.j) return rc;
    if ((rc = js_keys_check(o, JS_KEYS("name", "lr", "eps", "weight_decay", "beta1", "beta2",
                                       "implementation", "early_step_in_backward"), err)) ||
        (rc = tt_enum(o, "name", 0, names, 2, false, &c->opt, err)) ||
        (rc = tt_enum(o, "implementation", SPEC_IMPL_FUSED, impls, 3, false, &c->impl, err)) ||
        (rc = js_bool(o, "early_step_in_backward", false, false, &early, err)))
        return rc;
    c->opt = c->opt == 0 ? SPEC_OPT_ADAMW : SPEC_OPT_ADAM;
    if (early) {
        js_get(o, "early_step_in_backward", &k);
        return js_failf(k, err, "early_step_in_backward (the optimizer stepped in backward hooks) "
                        "is not modelled: expected false");
    }
    return SS_OK;
}

/* [float8]: torchao's recipe (tensorwise by default; rowwise and
 * rowwise_with_gw_hp as rowwise) and whether FSDP all-gathers fp8 weights.
 * Read whether or not a converter uses it, for its errors. */
static int read_float8(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node f;
    static const char *const recipes[] = {"tensorwise", "rowwise", "rowwise_with_gw_hp"};
    int recipe = 0;
    c->fp8_recipe = SPEC_FP8_TENSORWISE;
    int rc = tt_section(cfg, "float8", &f, err);
    if (rc || !f.j) return rc;
    if ((rc = js_keys_check(f, JS_KEYS("enable_fsdp_float8_all_gather",
                                       "precompute_float8_dynamic_scale_for_fsdp", "recipe_name",
                                       "filter_fqns", "emulate", "moe_fqns_prototype"), err)) ||
        (rc = js_bool(f, "enable_fsdp_float8_all_gather", false, false, &c->fp8_all_gather, err)) ||
        (rc = tt_enum(f, "recipe_name", 0, recipes, 3, false, &recipe, err)))
        return rc;
    c->fp8_recipe = recipe ? SPEC_FP8_ROWWISE : SPEC_FP8_TENSORWISE;
    return SS_OK;
}

/* [compile] components: what torch.compile covers when enabled, "model"
 * and "loss" (torchtitan's default: both; config/job_config.py's Compile,
 * where the section came in at 08b8b244f, 2025-08-20). */
static int read_components(js_node s, tt_cfg *c, ss_err *err)
{
    js_node k;
    size_t n = 0;
    bool given = js_get(s, "components", &k);
    int rc = js_arr(s, "components", false, &k, &n, err);
    c->compile_model = c->compile_loss = !given;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *v;
        js_node e = js_at(k, i);
        if ((rc = js_str_val(e, &v, err))) break;
        if (!strcmp(v, "model")) c->compile_model = true;
        else if (!strcmp(v, "loss")) c->compile_loss = true;
        else rc = js_failf(e, err, "compile component \"%s\": expected \"model\" or \"loss\"", v);
    }
    c->compile_model = c->compile_model && c->compile;
    c->compile_loss = c->compile_loss && c->compile;
    return rc;
}

/* [model], [compile], [float8], [quantize], [fault_tolerance]. */
static int read_rest(js_node cfg, tt_cfg *c, ss_err *err)
{
    js_node m, k, s;
    size_t n;
    bool on = false;
    c->name = "llama3", c->flavor = "debugmodel";
    int rc = tt_section(cfg, "model", &m, err);
    if (!rc && m.j)
        rc = js_keys_check(m, JS_KEYS("name", "flavor", "hf_assets_path", "tokenizer_path",
                                      "converters", "print_after_conversion"), err);
    if (!rc && m.j) rc = js_str(m, "name", false, "llama3", &c->name, err);
    if (!rc && m.j) rc = js_str(m, "flavor", false, "debugmodel", &c->flavor, err);
    if (!rc && m.j) rc = js_arr(m, "converters", false, &k, &n, err);
    if (rc) return rc;
    for (size_t i = 0; m.j && i < n && !rc; i++) {
        const char *conv;
        js_node ci = js_at(k, i);
        if ((rc = js_str_val(ci, &conv, err))) return rc;
        if (strcmp(conv, "float8"))
            return js_failf(ci, err, "model converter \"%s\" is not modelled: expected \"float8\" "
                            "(torchao's Float8 linears) or none", conv);
        c->float8 = true;
    }
    if ((rc = read_float8(cfg, c, err))) return rc;
    if ((rc = tt_section(cfg, "compile", &s, err)) ||
        (s.j && (rc = js_keys_check(s, JS_KEYS("enable", "components", "backend"), err))) ||
        (s.j && (rc = js_bool(s, "enable", false, false, &c->compile, err))) ||
        (s.j && (rc = read_components(s, c, err))))
        return rc;
    /* only converters read this; without one it changes nothing */
    if ((rc = tt_section(cfg, "quantize", &s, err)) ||
        (rc = tt_section(cfg, "fault_tolerance", &s, err)))
        return rc;
    if (s.j && (rc = js_bool(s, "enable", false, false, &on, err))) return rc;
    if (on) {
        js_get(s, "enable", &k);
        return js_failf(k, err, "torchft fault tolerance is not modelled: expected false");
    }
    return SS_OK;
}

static int read_cfg(js_node cfg, tt_cfg *c, ss_err *err)
{
    int rc = js_want_obj(cfg, err);
    size_t nm = rc ? 0 : js_nmembers(cfg);
    for (size_t i = 0; i < nm && !rc; i++) {
        const char *key;
        js_node v = js_member(cfg, i, &key);
        bool known = false;
        for (size_t j = 0; j < SS_ARRAY_LEN(mapped) && !known; j++) known = !strcmp(key, mapped[j]);
        for (size_t j = 0; j < SS_ARRAY_LEN(unread) && !known; j++) known = !strcmp(key, unread[j]);
        if (!known)
            rc = js_failf(v, err, "unknown torchtitan section [%s]: expected parallelism, "
                          "training, activation_checkpoint, optimizer, model, compile, float8, "
                          "quantize, or one that does not change a step (job, profiling, "
                          "metrics, lr_scheduler, checkpoint, comm, validation, debug, "
                          "memory_estimation, experimental, fault_tolerance)", key);
    }
    if (!rc) rc = read_parallelism(cfg, c, err);
    if (!rc) rc = read_training(cfg, c, err);
    if (!rc) rc = read_ac(cfg, c, err);
    if (!rc) rc = read_optimizer(cfg, c, err);
    if (!rc) rc = read_rest(cfg, c, err);
    return rc;
}

const char *ttc_shipped_model(const char *name, const char *flavor)
{
    /* torchtitan's llama3 flavors are Llama 3.1's shapes, deepseek_v3 671B
     * DeepSeek-V3's, as the model files */
    static const char *const known[][3] = {{"llama3", "8B", "models/llama3-8b.json"},
                                           {"llama3", "70B", "models/llama3-70b.json"},
                                           {"llama3", "405B", "models/llama3-405b.json"},
                                           {"deepseek_v3", "671B", "models/deepseek-v3.json"}};
    for (size_t i = 0; i < SS_ARRAY_LEN(known); i++)
        if (!strcmp(name, known[i][0]) && !strcmp(flavor, known[i][1])) return known[i][2];
    return NULL;
}

/* ---- torchtitan's rules, then the scenario's sections ---- */

bool ttc_split_layers(uint32_t layers, uint32_t stages, uint32_t in_w, uint32_t out_w,
                      uint32_t *count)
{
    if (stages == 0) return false;
    if (stages == 1) {
        count[0] = layers;
        return true;
    }
    uint64_t eff = (uint64_t)layers + in_w + out_w;
    if (stages > eff) return false;
    uint64_t per = eff / stages, extra = eff % stages;
    if (per == 0 || in_w > per || out_w > per) return false;
    uint64_t cur = 0;
    for (uint32_t s = 0; s < stages; s++) {
        uint64_t want = per + (s < extra) - (s == 0 ? in_w : 0) - (s == stages - 1 ? out_w : 0);
        uint64_t take = want < layers - cur ? want : layers - cur;
        count[s] = (uint32_t)take;
        cur += take;
    }
    return true;
}

/* Fail at cfg.section.key, or at the section, or at cfg. */
static int tt_fail(js_node cfg, const char *section, const char *key, ss_err *err,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int tt_fail(js_node cfg, const char *section, const char *key, ss_err *err,
                   const char *fmt, ...)
{
    js_node s, k;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (js_get(cfg, section, &s)) {
        if (key && js_get(s, key, &k)) s = k;
        return js_failf(s, err, "%s", msg);
    }
    return js_failf(cfg, err, "%s", msg);
}

/* ParallelDims' checks: the degrees multiply to the world. */
static int world_check(js_node cfg, tt_cfg *c, uint64_t gpus, ss_err *err)
{
    typedef long long ll;
    int64_t other = c->replicate * c->tp * c->pp * c->cp;
    if (c->shard == -1) {
        if (other > (int64_t)gpus || gpus % (uint64_t)other)
            return tt_fail(cfg, "parallelism", "data_parallel_shard_degree", err,
                           "data_parallel_shard_degree = -1 takes the rest of the world, but replicate x tp x pp x cp = %lld "
                           "does not divide the %llu GPUs of the topology", (ll)other,
                           (unsigned long long)gpus);
        c->shard = (int64_t)gpus / other;
    }
    if ((uint64_t)(other * c->shard) != gpus)
        return tt_fail(cfg, "parallelism", NULL, err,
                       "data_parallel_replicate_degree x data_parallel_shard_degree x tensor x "
                       "pipeline x context parallel degrees = %lld x %lld x %lld x %lld x %lld = "
                       "%lld: expected the world size, the topology's %llu GPUs",
                       (ll)c->replicate, (ll)c->shard, (ll)c->tp, (ll)c->pp, (ll)c->cp,
                       (ll)(other * c->shard), (unsigned long long)gpus);
    if (c->replicate > 1 && c->shard == 1 && c->cp == 1 && other != c->replicate)
        return tt_fail(cfg, "parallelism", "data_parallel_replicate_degree", err,
                       "DDP (replicate without shard) with tensor, pipeline or context "
                       "parallel: torchtitan raises \"DDP has not supported > 1D parallelism\"");
    if (c->async_tp && c->tp > 1 && !c->compile_model)
        return tt_fail(cfg, "parallelism", "enable_async_tensor_parallel", err,
                       "torchtitan raises \"Async TP requires 'model' in --compile.components "
                       "and --compile.enable\": set [compile] enable = true");
    return SS_OK;
}

/* Micro-batches: the pipeline's (local batch / microbatch size), times
 * the accumulation global_batch_size asks for. */
static int batches(js_node cfg, const tt_cfg *c, uint64_t *mb, uint64_t *accum, ss_err *err)
{
    typedef unsigned long long ull;
    uint64_t dp = (uint64_t)(c->replicate * c->shard);
    *mb = c->local_batch, *accum = 1;
    if (c->global_batch > 0) {
        uint64_t per = c->local_batch * dp;
        if ((uint64_t)c->global_batch % per)
            return tt_fail(cfg, "training", "global_batch_size", err, "global_batch_size = %lld "
                           "is not a multiple of local_batch_size x data-parallel degree = %llu "
                           "x %llu", (long long)c->global_batch, (ull)c->local_batch, (ull)dp);
        *accum = (uint64_t)c->global_batch / per;
    }
    if (c->pp == 1) return SS_OK;
    if (*accum > 1)
        return tt_fail(cfg, "training", "global_batch_size", err, "gradient accumulation around "
                       "a pipeline (global_batch_size above local_batch_size x dp) is not "
                       "modelled: give the micro-batches as local_batch_size / "
                       "pipeline_parallel_microbatch_size");
    if (c->local_batch % (uint64_t)c->pp_mb)
        return tt_fail(cfg, "parallelism", "pipeline_parallel_microbatch_size", err,
                       "%lld does not divide local_batch_size = %llu", (long long)c->pp_mb,
                       (ull)c->local_batch);
    *mb = (uint64_t)c->pp_mb;
    *accum = c->local_batch / (uint64_t)c->pp_mb;
    return SS_OK;
}

/* Model chunks per pipeline rank and their layers (pipeline_llm). */
static int stages(js_node cfg, const tt_cfg *c, uint32_t layers, uint32_t *vs, cJSON *par,
                  ss_err *err)
{
    bool multi = c->schedule == 1;
    uint64_t in = (uint64_t)c->pp_in, out = (uint64_t)c->pp_out, n;
    if (layers == 0)
        return tt_fail(cfg, "parallelism", "pipeline_parallel_degree", err, "a pipeline needs "
                       "a model described by its architecture (its layers are split)");
    if (c->pp_lps) {
        n = (layers + in + out + (uint64_t)c->pp_lps - 1) / (uint64_t)c->pp_lps;
        if (n % (uint64_t)c->pp || (multi ? n / (uint64_t)c->pp < 2 : n != (uint64_t)c->pp))
            return tt_fail(cfg, "parallelism", "pipeline_parallel_layers_per_stage", err,
                           "%u layers (+ %llu + %llu) at %lld per stage make %llu stages: "
                           "expected %s pipeline_parallel_degree = %lld", layers,
                           (unsigned long long)in, (unsigned long long)out,
                           (long long)c->pp_lps, (unsigned long long)n,
                           multi ? "a multiple, at least twice," : "exactly", (long long)c->pp);
    } else {
        n = (uint64_t)c->pp * (multi ? 2 : 1);
    }
    if (n > 1024) return tt_fail(cfg, "parallelism", NULL, err, "%llu stages: expected at most 1024",
                                 (unsigned long long)n);
    uint32_t count[1024];
    if (!ttc_split_layers(layers, (uint32_t)n, (uint32_t)in, (uint32_t)out, count))
        return tt_fail(cfg, "parallelism", "pipeline_parallel_degree", err,
                       "%u layers with first/last stage weights %llu and %llu do not split "
                       "into %llu stages (torchtitan raises)", layers, (unsigned long long)in,
                       (unsigned long long)out, (unsigned long long)n);
    *vs = (uint32_t)(n / (uint64_t)c->pp);
    cJSON *arr = cJSON_AddArrayToObject(par, "pipeline_layers");
    for (uint64_t i = 0; arr && i < n; i++) {
        cJSON *v = cJSON_CreateNumber(count[i]);
        if (!v || !cJSON_AddItemToArray(arr, v)) {
            cJSON_Delete(v);
            arr = NULL;
        }
    }
    return arr ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

static bool add_note(cJSON *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool add_note(cJSON *notes, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cJSON *s = cJSON_CreateString(buf);
    if (s && cJSON_AddItemToArray(notes, s)) return true;
    cJSON_Delete(s);
    return false;
}

static int build(js_node cfg, const tt_cfg *c, uint32_t layers, cJSON *o, ss_err *err)
{
    cJSON *par = cJSON_AddObjectToObject(o, "parallel"), *tr = cJSON_AddObjectToObject(o, "training");
    cJSON *pr = cJSON_AddObjectToObject(o, "precision"), *op = cJSON_AddObjectToObject(o, "optimizer");
    cJSON *sh = cJSON_AddObjectToObject(o, "sharding"), *notes = cJSON_AddArrayToObject(o, "assumptions");
    if (!par || !tr || !pr || !op || !sh || !notes) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    uint64_t dp = (uint64_t)(c->replicate * c->shard), mb, accum;
    uint32_t vs = 1;
    int rc = batches(cfg, c, &mb, &accum, err);
    if (!rc && c->pp > 1) rc = stages(cfg, c, layers, &vs, par, err);
    if (rc) return rc;
    bool mp = c->tp > 1 || c->pp > 1 || c->cp > 1 || c->ep > 1;
    bool fsdp = c->shard > 1 || c->cp > 1; /* torchtitan's fsdp_enabled */
    /* every key, defaults too, so that a scenario key or --set that would
     * change one is caught by the merge (scenario.c) */
    bool ok = cJSON_AddNumberToObject(par, "dp", (double)dp) &&
              cJSON_AddNumberToObject(par, "tp", (double)c->tp) &&
              cJSON_AddBoolToObject(par, "sequence_parallel", c->tp > 1) &&
              cJSON_AddBoolToObject(par, "async_tp", c->tp > 1 && c->async_tp) &&
              cJSON_AddNumberToObject(par, "cp", (double)c->cp) &&
              cJSON_AddStringToObject(par, "cp_comm_type", c->cp_alltoall ? "p2p" : "all_gather") &&
              cJSON_AddNumberToObject(par, "ep", (double)c->ep) &&
              cJSON_AddNumberToObject(par, "etp", (double)c->etp) &&
              cJSON_AddNumberToObject(par, "pp", (double)c->pp) &&
              cJSON_AddStringToObject(par, "pipeline_schedule", vs > 1 ? "interleaved" : "1f1b") &&
              cJSON_AddNumberToObject(par, "virtual_stages", vs);
    ok = ok && cJSON_AddNumberToObject(tr, "micro_batch", (double)mb) &&
         cJSON_AddNumberToObject(tr, "seq_len", (double)c->seq_len) &&
         cJSON_AddNumberToObject(tr, "grad_accum", (double)accum) &&
         cJSON_AddStringToObject(tr, "recompute", spec_recompute_names[c->recompute]) &&
         cJSON_AddStringToObject(tr, "kernels", c->compile_model ? "compiled" : "eager");
    if (ok && c->compile_loss) ok = cJSON_AddStringToObject(tr, "loss", "compiled") != NULL;
    if (ok && c->recompute == SPEC_RECOMP_FULL && c->ac_every > 1)
        ok = cJSON_AddNumberToObject(tr, "recompute_every", (double)c->ac_every) != NULL;
    /* torchtitan trains in training.dtype (fp32 unless bfloat16), casts to
     * mixed_precision_param for compute (FSDP's MixedPrecisionPolicy, else
     * autocast) and reduces FSDP gradients in mixed_precision_reduce. */
    const char *param = c->bf16_params ? "bf16" : "fp32";
    const char *compute = c->bf16_params || !c->mp_param_fp32 ? "bf16" : "fp32";
    const char *reduce = fsdp && c->reduce_bf16 ? "bf16" : param;
    if (c->float8) compute = "fp8"; /* Float8 linears; the rest stays bf16 (DECISIONS 73) */
    ok = ok && cJSON_AddStringToObject(pr, "param", param) &&
         cJSON_AddStringToObject(pr, "compute", compute) && cJSON_AddStringToObject(pr, "grad", param) &&
         cJSON_AddStringToObject(pr, "reduce", reduce) && cJSON_AddStringToObject(pr, "master", "none") &&
         cJSON_AddStringToObject(pr, "optimizer", param);
    if (ok && c->float8) {
        cJSON *f8 = cJSON_AddObjectToObject(pr, "fp8");
        ok = f8 && cJSON_AddStringToObject(f8, "recipe", spec_fp8_names[c->fp8_recipe]) &&
             cJSON_AddBoolToObject(f8, "all_gather", c->fp8_all_gather);
    }
    ok = ok && cJSON_AddStringToObject(op, "type", spec_opt_names[c->opt]) &&
         cJSON_AddStringToObject(op, "impl", spec_impl_names[c->impl]);
    ok = ok && cJSON_AddStringToObject(sh, "strategy", fsdp ? "fsdp2" : "ddp");
    if (ok && fsdp) /* HSDP when replicate > 1: sharded over shard x cp */
        ok = cJSON_AddNumberToObject(sh, "shard_group_size", (double)c->shard) != NULL;
    /* fsdp_reshard_after_forward: "default" reshards unless pipelined;
     * the [norm, output] unit only under "always" (apply_fsdp). Inside a
     * layout the non-layer units are never resharded (sched/mp_fsdp.c). */
    bool blocks = c->raf == 1 || (c->raf == 0 && c->pp == 1);
    if (ok && fsdp && (mp || layers == 0 || blocks == (c->raf == 1)))
        ok = cJSON_AddBoolToObject(sh, "reshard_after_forward", blocks) != NULL;
    else if (ok && fsdp) {
        cJSON *r = cJSON_AddObjectToObject(sh, "reshard_after_forward");
        ok = r && cJSON_AddBoolToObject(r, "default", blocks) && cJSON_AddFalseToObject(r, "output");
    }
    if (ok && c->cpu_offload) {
        cJSON *off = cJSON_AddObjectToObject(o, "offload");
        ok = off && cJSON_AddStringToObject(off, "params", "cpu") &&
             cJSON_AddStringToObject(off, "optimizer", "cpu");
    }
    ok = ok && add_note(notes, "torchtitan %s (model %s, flavor %s): its [parallelism], "
                        "[training], [activation_checkpoint] and [optimizer] give the parallel, "
                        "training, precision, optimizer and sharding sections; the model "
                        "simulated is the scenario's \"model\"", cfg.file, c->name, c->flavor);
    if (ok && !fsdp)
        ok = add_note(notes, "no data-parallel sharding (data_parallel_shard_degree 1): %s",
                      dp > 1 ? "torchtitan's DDP over the replicate group"
                             : "one data-parallel rank, no wrapper (simulated as ddp over one rank)");
    if (ok && c->compile_model)
        ok = add_note(notes, "[compile] enable = true: torch.compile's fused elementwise kernels "
                      "(training.kernels \"compiled\")");
    if (ok && c->compile_loss)
        ok = add_note(notes, "[compile] components with \"loss\" (torchtitan's default): the "
                      "cross-entropy compiled (training.loss \"compiled\")");
    if (ok && c->float8)
        ok = add_note(notes, "[model] converters [\"float8\"]: torchao's Float8 linears "
                      "(precision.compute \"fp8\", recipe %s), the output head in bf16",
                      spec_fp8_names[c->fp8_recipe]);
    if (ok && c->tp > 1)
        ok = add_note(notes, "tensor parallel as torchtitan's plan: sequence parallel norms; "
                      "loss parallel is not modelled");
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* "file.toml: $.a.b" -> "file.toml: a.b": a TOML file's keys as TOML
 * spells them. */
static void toml_where(ss_err *err, const char *file)
{
    size_t n = strlen(file);
    if (n < 5 || strcmp(file + n - 5, ".toml") || strncmp(err->where, file, n)) return;
    char *p = err->where + n;
    if (!strncmp(p, ": $.", 4)) memmove(p + 2, p + 4, strlen(p + 4) + 1);
    else if (!strcmp(p, ": $")) strcpy(p, ": (top level)");
}

int ttc_sections(js_node cfg, uint64_t gpus, uint32_t layers, cJSON **out, ss_err *err)
{
    tt_cfg c = {0};
    cJSON *o = NULL;
    int rc = read_cfg(cfg, &c, err);
    if (!rc) rc = world_check(cfg, &c, gpus, err);
    if (!rc && !(o = cJSON_CreateObject())) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) rc = build(cfg, &c, layers, o, err);
    if (rc) {
        cJSON_Delete(o);
        if (cfg.file) toml_where(err, cfg.file);
        return rc;
    }
    *out = o;
    return SS_OK;
}
