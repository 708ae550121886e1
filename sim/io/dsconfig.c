#include "dsconfig.h"

#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py). */
#define DS_BUCKET 500000000ull     /* reduce_bucket_size, allgather_bucket_size */
#define DS_PREFETCH 50000000ull    /* stage3_prefetch_bucket_size */
#define DS_MAX_LIVE 1000000000ull  /* stage3_max_live_parameters */
#define DS_MAX_REUSE 1000000000ull /* stage3_max_reuse_distance */
#define DS_PERSIST 100000ull       /* stage3_param_persistence_threshold */
#define DS_SUB_GROUP 1000000000ull /* sub_group_size */

static bool is_auto(js_node n, const char *key)
{
    js_node c;
    return js_get(n, key, &c) && js_is_str(c) && strcmp(c.j->valuestring, "auto") == 0;
}

/* An element count, "auto" taking auto_val (0: the default). */
static int ds_count(js_node n, const char *key, uint64_t def, uint64_t auto_val, uint64_t *out,
                    ss_err *err)
{
    if (is_auto(n, key)) {
        *out = auto_val ? auto_val : def;
        return SS_OK;
    }
    return js_u64(n, key, false, def, 0, UINT64_MAX, out, err);
}

static int ds_flag(js_node n, const char *key, bool def, bool *out, ss_err *err)
{
    if (is_auto(n, key)) {
        *out = def;
        return SS_OK;
    }
    return js_bool(n, key, false, def, out, err);
}

/* "enabled" of bf16 / fp16: 1, 0, or -1 for "auto" (the scenario decides). */
static int ds_enabled(js_node cfg, const char *key, int *out, ss_err *err)
{
    js_node n;
    bool on = false;
    *out = 0;
    if (!js_get(cfg, key, &n)) return SS_OK;
    int rc = js_want_obj(n, err);
    if (rc) return rc;
    if (is_auto(n, "enabled")) {
        *out = -1;
        return SS_OK;
    }
    rc = js_bool(n, "enabled", false, false, &on, err);
    *out = on;
    return rc;
}

static int ds_offload(js_node z, const char *key, bool param, spec_scenario *s, ss_err *err)
{
    js_node n;
    if (!js_get(z, key, &n)) return SS_OK;
    int dev;
    double ratio = 1;
    int rc = js_want_obj(n, err);
    if (rc || (rc = js_keys_check(n, JS_KEYS("device", "pin_memory", "nvme_path", "buffer_count",
                                             "buffer_size", "max_in_cpu", "fast_init",
                                             "pipeline_read", "pipeline_write", "ratio"), err)) ||
        (rc = js_enum(n, "device", false, SPEC_OFF_NONE, spec_offload_names, SPEC_NOFF, &dev, err)) ||
        (rc = js_bool(n, "pin_memory", false, false, &s->off.pin_memory, err)) ||
        (rc = js_num(n, "ratio", false, 1, 0, 1, &ratio, err)))
        return rc;
    if (ratio != 1) {
        js_node r;
        js_get(n, "ratio", &r);
        return js_failf(r, err, "a partial optimizer offload (ratio < 1) is not modelled");
    }
    if (param && dev != SPEC_OFF_NONE && s->ds.stage != 3)
        return js_failf(n, err, "offload_param needs ZeRO stage 3 (the stage is %u)", s->ds.stage);
    if (param) s->off.params = (spec_offload_dev)dev;
    else s->off.optimizer = (spec_offload_dev)dev;
    return SS_OK;
}

static int ds_zeropp(js_node z, spec_scenario *s, ss_err *err)
{
    uint64_t hpz;
    js_node k;
    int rc = js_u64(z, "zero_hpz_partition_size", false, 1, 1, s->dp, &hpz, err);
    if (rc || (rc = js_bool(z, "zero_quantized_weights", false, false, &s->ds.quantized_weights, err)) ||
        (rc = js_bool(z, "zero_quantized_gradients", false, false, &s->ds.quantized_gradients, err)))
        return rc;
    s->ds.hpz = (uint32_t)hpz;
    bool any = hpz > 1 || s->ds.quantized_weights || s->ds.quantized_gradients;
    if (any && s->ds.stage != 3)
        return js_failf(z, err, "ZeRO++ (zero_hpz_partition_size, zero_quantized_*) needs stage 3");
    if (hpz > 1 && s->dp % hpz) {
        js_get(z, "zero_hpz_partition_size", &k);
        return js_failf(k, err, "groups of %llu ranks do not divide dp = %u",
                        (unsigned long long)hpz, s->dp);
    }
    return SS_OK;
}

static int ds_zero(js_node cfg, spec_scenario *s, ss_err *err)
{
    js_node z;
    uint64_t stage;
    bool rs = true, agp = true;
    spec_deepspeed *d = &s->ds;
    if (!js_get(cfg, "zero_optimization", &z))
        return js_failf(cfg, err, "no zero_optimization section: that is ZeRO stage 0, plain data "
                                  "parallelism (use sharding.strategy ddp)");
    int rc = js_want_obj(z, err);
    if (rc || (rc = js_keys_check(z, JS_KEYS("stage", "overlap_comm", "contiguous_gradients",
                                             "reduce_scatter", "reduce_bucket_size",
                                             "allgather_partitions", "allgather_bucket_size",
                                             "stage3_prefetch_bucket_size",
                                             "stage3_max_live_parameters",
                                             "stage3_max_reuse_distance",
                                             "stage3_param_persistence_threshold",
                                             "sub_group_size", "offload_optimizer", "offload_param",
                                             "zero_hpz_partition_size", "zero_quantized_weights",
                                             "zero_quantized_gradients",
                                             "stage3_gather_16bit_weights_on_model_save",
                                             "stage3_gather_fp16_weights_on_model_save",
                                             "round_robin_gradients", "elastic_checkpoint",
                                             "load_from_fp32_weights", "ignore_unused_parameters",
                                             "memory_efficient_linear",
                                             "use_multi_rank_bucket_allreduce"), err)) ||
        (rc = js_u64(z, "stage", true, 0, 0, 3, &stage, err)))
        return rc;
    if (stage == 0) {
        js_node k;
        js_get(z, "stage", &k);
        return js_failf(k, err, "stage 0 is plain data parallelism: use sharding.strategy ddp");
    }
    d->stage = (uint32_t)stage;
    uint64_t h = s->model.is_arch ? s->model.arch.hidden : 0;
    if ((rc = ds_flag(z, "overlap_comm", stage == 3, &d->overlap_comm, err)) ||
        (rc = ds_flag(z, "contiguous_gradients", true, &d->contiguous_gradients, err)) ||
        (rc = ds_flag(z, "use_multi_rank_bucket_allreduce", true, &d->multi_rank_allreduce,
                      err)) ||
        (rc = js_bool(z, "reduce_scatter", false, true, &rs, err)) ||
        (rc = js_bool(z, "allgather_partitions", false, true, &agp, err)) ||
        (rc = ds_count(z, "reduce_bucket_size", DS_BUCKET, h * h, &d->reduce_bucket, err)) ||
        (rc = ds_count(z, "allgather_bucket_size", DS_BUCKET, 0, &d->allgather_bucket, err)) ||
        (rc = ds_count(z, "stage3_prefetch_bucket_size", DS_PREFETCH, h * h * 9 / 10,
                       &d->prefetch_bucket, err)) ||
        (rc = ds_count(z, "stage3_max_live_parameters", DS_MAX_LIVE, 0, &d->max_live, err)) ||
        (rc = ds_count(z, "stage3_max_reuse_distance", DS_MAX_REUSE, 0, &d->max_reuse, err)) ||
        (rc = ds_count(z, "stage3_param_persistence_threshold", DS_PERSIST, 10 * h,
                       &d->persistence_threshold, err)) ||
        (rc = ds_count(z, "sub_group_size", DS_SUB_GROUP, 0, &d->sub_group, err)) ||
        (rc = ds_offload(z, "offload_optimizer", false, s, err)) ||
        (rc = ds_offload(z, "offload_param", true, s, err)) || (rc = ds_zeropp(z, s, err)))
        return rc;
    d->reduce_scatter = rs;
    if (!agp) {
        js_node k;
        js_get(z, "allgather_partitions", &k);
        return js_failf(k, err, "false is not modelled (shardsim all-gathers the updated "
                                "partitions, DeepSpeed's default)");
    }
    if (!d->reduce_bucket || !d->allgather_bucket) {
        js_node k;
        js_get(z, d->reduce_bucket ? "allgather_bucket_size" : "reduce_bucket_size", &k);
        return js_failf(k, err, "expected a bucket of at least one element");
    }
    return SS_OK;
}

/* The config's batch keys against the scenario's training section. */
static int ds_batch(js_node cfg, js_node root, spec_scenario *s, ss_err *err)
{
    js_node tr, k;
    uint64_t mb = s->micro_batch, ga = s->grad_accum, tb;
    js_get(root, "training", &tr);
    bool scn_ga = js_get(tr, "grad_accum", &k);
    int rc;
    if (!is_auto(cfg, "train_micro_batch_size_per_gpu") &&
        (rc = js_u64(cfg, "train_micro_batch_size_per_gpu", false, mb, 1, 1ull << 32, &mb, err)))
        return rc;
    if (mb != s->micro_batch) {
        js_get(cfg, "train_micro_batch_size_per_gpu", &k);
        return js_failf(k, err, "%llu, but the scenario's training.micro_batch is %llu",
                        (unsigned long long)mb, (unsigned long long)s->micro_batch);
    }
    if (!is_auto(cfg, "gradient_accumulation_steps") &&
        (rc = js_u64(cfg, "gradient_accumulation_steps", false, ga, 1, 4096, &ga, err)))
        return rc;
    if (ga != s->grad_accum && scn_ga) {
        js_get(cfg, "gradient_accumulation_steps", &k);
        return js_failf(k, err, "%llu, but the scenario's training.grad_accum is %u",
                        (unsigned long long)ga, s->grad_accum);
    }
    s->grad_accum = (uint32_t)ga;
    uint64_t want = mb * ga * s->dp;
    if (!is_auto(cfg, "train_batch_size") &&
        (rc = js_u64(cfg, "train_batch_size", false, want, 1, UINT64_MAX, &tb, err)))
        return rc;
    if (!is_auto(cfg, "train_batch_size") && tb != want) {
        js_get(cfg, "train_batch_size", &k);
        return js_failf(k, err, "%llu is not micro_batch x gradient_accumulation_steps x dp = "
                                "%llu x %llu x %u = %llu",
                        (unsigned long long)tb, (unsigned long long)mb, (unsigned long long)ga,
                        s->dp, (unsigned long long)want);
    }
    return SS_OK;
}

static int dtype_at(js_node n, const char *key, spec_dtype def, spec_dtype *out, ss_err *err)
{
    int v;
    int rc = js_enum(n, key, false, def, spec_dtype_names, SPEC_NDT, &v, err);
    *out = (spec_dtype)v;
    return rc;
}

/* bf16 / fp16 into the precision: bit16 parameters, gradients and compute,
 * fp32 master weights and optimizer states (fp32 training: fp32
 * everywhere, the master a copy DeepSpeed still keeps per partition). */
static int ds_precision(js_node cfg, js_node root, spec_scenario *s, ss_err *err)
{
    js_node prec, dt;
    int bf, fp;
    int rc = ds_enabled(cfg, "bf16", &bf, err);
    if (rc || (rc = ds_enabled(cfg, "fp16", &fp, err))) return rc;
    bool given = js_get(root, "precision", &prec);
    if (bf == 1 && fp == 1) return js_failf(cfg, err, "bf16 and fp16 are both enabled");
    /* "auto" is what Hugging Face's Trainer fills from its --bf16/--fp16
     * flag: with no precision section to say, bf16 (what A100 and later
     * train in); a precision section's compute dtype decides otherwise. */
    if (bf < 0 && !given && fp != 1) bf = 1;
    if (fp < 0 && !given && bf == 1) fp = 0;
    if (given && bf < 0 && fp != 1) bf = s->prec.compute == SPEC_DT_BF16;
    if (given && fp < 0 && bf != 1) fp = s->prec.compute == SPEC_DT_FP16;
    spec_dtype bit16 = bf == 1 ? SPEC_DT_BF16 : fp == 1 ? SPEC_DT_FP16 : SPEC_DT_FP32;
    if (given && bf >= 0 && fp >= 0 && s->prec.compute != bit16)
        return js_failf(prec, err, "the DeepSpeed config trains in %s but precision.compute is %s",
                        spec_dtype_names[bit16], spec_dtype_names[s->prec.compute]);
    if (given) {
        /* DeepSpeed stores the parameters in the compute dtype and keeps
         * fp32 master weights beside them: what the section leaves out is
         * filled so; what it states must agree. */
        spec_precision *q = &s->prec;
        js_node k;
        if (!js_get(prec, "param", &k)) q->param = q->compute;
        if (!js_get(prec, "master", &k)) q->master = SPEC_DT_FP32;
        if (!js_get(prec, "grad", &k)) q->grad = q->compute;
        if (!js_get(prec, "reduce", &k)) q->reduce = q->grad;
        if (q->param != q->compute || q->master != SPEC_DT_FP32)
            return js_failf(prec, err, "DeepSpeed keeps %s parameters and fp32 master weights: "
                                       "expected param %s and master fp32, found param %s and "
                                       "master %s",
                            spec_dtype_names[q->compute], spec_dtype_names[q->compute],
                            spec_dtype_names[q->param],
                            q->master < SPEC_NDT ? spec_dtype_names[q->master] : "none");
        return SS_OK;
    }
    spec_precision p = {bit16, bit16, bit16, bit16, SPEC_DT_FP32, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
    if (js_get(cfg, "data_types", &dt) &&
        ((rc = js_want_obj(dt, err)) || (rc = js_keys_check(dt, JS_KEYS("grad_accum_dtype"), err)) ||
         (rc = dtype_at(dt, "grad_accum_dtype", bit16, &p.grad, err))))
        return rc;
    /* DeepSpeed reduces in the model's dtype unless told otherwise. */
    if ((rc = dtype_at(cfg, "communication_data_type", bit16, &p.reduce, err))) return rc;
    s->prec = p;
    return SS_OK;
}

/* optimizer.type against the scenario's: Adam, AdamW and their DeepSpeed
 * kernels are one family; SGD another. A scenario without an optimizer
 * section takes the config's (DeepSpeed's Adam is AdamW unless adam_w_mode
 * is false, and runs its fused kernel). */
static int ds_optimizer(js_node cfg, js_node root, spec_scenario *s, ss_err *err)
{
    js_node o, t, given;
    bool infer = !js_get(root, "optimizer", &given);
    if (!js_get(cfg, "optimizer", &o))
        return infer ? js_failf(root, err, "missing required key \"optimizer\": neither the "
                                           "scenario nor its DeepSpeed config names one")
                     : SS_OK;
    int rc = js_want_obj(o, err);
    if (rc || !js_get(o, "type", &t)) return rc;
    const char *type;
    if ((rc = js_str_val(t, &type, err))) return rc;
    static const char *const adam[] = {"adam", "adamw", "fusedadam", "cpuadam", "deepspeedcpuadam",
                                       "onebitadam", "zerooneadam"};
    bool is_adam = false;
    for (size_t i = 0; i < SS_ARRAY_LEN(adam); i++) is_adam |= strcasecmp(type, adam[i]) == 0;
    if (infer && (is_adam || !strcasecmp(type, "sgd"))) {
        s->opt.type = is_adam ? SPEC_OPT_ADAMW : SPEC_OPT_SGD;
        return SS_OK;
    }
    bool want_adam = s->opt.type != SPEC_OPT_SGD;
    if (is_adam != want_adam || (!is_adam && strcasecmp(type, "sgd") != 0))
        return js_failf(t, err, "\"%s\", but the scenario's optimizer.type is %s", type,
                        spec_opt_names[s->opt.type]);
    return SS_OK;
}

int dsc_load(js_node cfg, js_node root, spec_scenario *s, ss_err *err)
{
    int rc = js_want_obj(cfg, err);
    if (rc || (rc = js_keys_check(cfg, JS_KEYS("strategy", "zero_optimization", "bf16", "fp16",
                                               "data_types", "communication_data_type",
                                               "train_batch_size",
                                               "train_micro_batch_size_per_gpu",
                                               "gradient_accumulation_steps", "optimizer",
                                               "scheduler", "gradient_clipping", "steps_per_print",
                                               "wall_clock_breakdown", "prescale_gradients",
                                               "gradient_predivide_factor",
                                               "zero_allow_untested_optimizer",
                                               "zero_force_ds_cpu_optimizer", "memory_breakdown",
                                               "flops_profiler", "tensorboard", "wandb",
                                               "csv_monitor", "comms_logger"), err)))
        return rc;
    s->ds = (spec_deepspeed){0};
    if ((rc = ds_zero(cfg, s, err)) || (rc = ds_batch(cfg, root, s, err)) ||
        (rc = ds_precision(cfg, root, s, err)) || (rc = ds_optimizer(cfg, root, s, err)))
        return rc;
    return SS_OK;
}
