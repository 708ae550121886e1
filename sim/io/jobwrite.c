/* A scenario as a torchtitan TOML or Megatron-LM arguments. jobwrite.h
 * states the contract. */
#include "jobwrite.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define NOPE(...) ss_fail(err, SS_E_INPUT, where, __VA_ARGS__)

/* ---- torchtitan ---- */

static bool num(cJSON *t, const char *k, double v) { return cJSON_AddNumberToObject(t, k, v); }
static bool str(cJSON *t, const char *k, const char *v) { return cJSON_AddStringToObject(t, k, v); }
static bool flag(cJSON *t, const char *k, bool v) { return cJSON_AddBoolToObject(t, k, v); }

/* What torchtitan shards over: FSDP2 (fully_shard over the shard group,
 * replicated over the rest: HSDP) or, with no other parallelism, DDP. */
static int tt_data_parallel(const spec_scenario *s, const char *where, uint32_t *shard,
                            uint32_t *replicate, ss_err *err)
{
    const char *name = spec_strategy_names[s->shard.strategy];
    if (s->shard.strategy == SPEC_FSDP2) {
        uint32_t g = s->shard.shard_group_size ? s->shard.shard_group_size : s->dp;
        if (g == 1 && s->par.cp == 1)
            return NOPE("strategy fsdp2 over shard groups of one rank: torchtitan applies "
                        "fully_shard only when data_parallel_shard_degree x "
                        "context_parallel_degree > 1");
        *shard = g, *replicate = s->dp / g;
        return SS_OK;
    }
    if (s->shard.strategy == SPEC_DDP && (s->dp == 1 || !spec_model_parallel(&s->par))) {
        *shard = 1, *replicate = s->dp;
        return SS_OK;
    }
    if (s->shard.strategy == SPEC_DDP)
        return NOPE("strategy ddp with tp, cp, pp or ep: torchtitan raises \"DDP has not "
                    "supported > 1D parallelism\"");
    return NOPE("strategy %s: torchtitan runs FSDP2 (fully_shard) or DDP; %s has no "
                "torchtitan setting (search --strategy fsdp2 for torchtitan's runtime)",
                name, name);
}

/* fsdp_reshard_after_forward for what the scenario reshards: always (every
 * unit), never, or torchtitan's default (blocks only, not [norm, output],
 * when it is not pipelined and nothing else is parallel). */
static int tt_reshard(const spec_scenario *s, const char *where, const char **out, ss_err *err)
{
    const spec_sharding *h = &s->shard;
    uint32_t g = h->shard_group_size ? h->shard_group_size : s->dp;
    bool all = h->reshard_after_forward == g, none = h->reshard_after_forward == 0;
    if (!all && !none)
        return NOPE("reshard_after_forward = %u ranks: torchtitan's fsdp_reshard_after_forward "
                    "is \"always\", \"never\" or \"default\" (to the shard group or not at all)",
                    h->reshard_after_forward);
    if (!h->nraf_units) {
        *out = all ? "always" : "never";
        return SS_OK;
    }
    bool output_only = h->nraf_units == 1 && !strcmp(h->raf_units[0].unit, "output") &&
                       !h->raf_units[0].reshard;
    if (all && output_only && !spec_model_parallel(&s->par)) {
        *out = "default";
        return SS_OK;
    }
    return NOPE("reshard_after_forward per unit: torchtitan resharding every block but "
                "[norm, output] (\"default\") is the one per-unit form it has, and only "
                "without tp, cp, pp or ep");
}

/* training.dtype, mixed_precision_param and _reduce: torchtitan keeps the
 * weights, gradients and optimizer states in training.dtype, no master
 * copy, computes in mixed_precision_param and reduces FSDP gradients in
 * mixed_precision_reduce. */
static int tt_precision(const spec_scenario *s, const char *where, bool fsdp, cJSON *tr,
                        ss_err *err)
{
    const spec_precision *p = &s->prec;
    const char *const *n = spec_dtype_names;
    if ((p->param != SPEC_DT_FP32 && p->param != SPEC_DT_BF16) || p->grad != p->param ||
        p->optim != p->param || p->master != SPEC_DT_NONE)
        return NOPE("precision param %s, grad %s, optimizer %s, master %s: torchtitan keeps "
                    "weights, gradients and optimizer states in one training.dtype (fp32 or "
                    "bf16) without a master copy",
                    n[p->param], n[p->grad], n[p->optim],
                    p->master == SPEC_DT_NONE ? "none" : n[p->master]);
    bool bf16 = p->param == SPEC_DT_BF16;
    if (bf16 && p->compute == SPEC_DT_FP32)
        return NOPE("precision param bf16 with compute fp32: torchtitan computes in bf16 when "
                    "training.dtype is bfloat16");
    if (p->compute != SPEC_DT_FP32 && p->compute != SPEC_DT_BF16 && p->compute != SPEC_DT_FP8)
        return NOPE("precision compute %s: torchtitan computes in float32, bfloat16 or Float8 "
                    "linears", n[p->compute]);
    bool red_ok = fsdp ? (p->reduce == SPEC_DT_FP32 || p->reduce == SPEC_DT_BF16)
                       : p->reduce == p->param;
    if (!red_ok)
        return NOPE("precision reduce %s: torchtitan reduces %s", n[p->reduce],
                    fsdp ? "FSDP gradients in float32 or bfloat16"
                         : "DDP gradients in training.dtype");
    bool ok = str(tr, "dtype", bf16 ? "bfloat16" : "float32") &&
              str(tr, "mixed_precision_param", p->compute == SPEC_DT_FP32 ? "float32" : "bfloat16") &&
              str(tr, "mixed_precision_reduce", p->reduce == SPEC_DT_BF16 ? "bfloat16" : "float32");
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* [activation_checkpoint]: none, full (every block, or every N-th as
 * selective_ac_option "N"), per-op SAC ("op"). */
static int tt_recompute(const spec_scenario *s, const char *where, cJSON *ac, ss_err *err)
{
    bool ok = true;
    switch (s->recompute) {
    case SPEC_RECOMP_NONE: ok = str(ac, "mode", "none"); break;
    case SPEC_RECOMP_SELECTIVE_OP:
        ok = str(ac, "mode", "selective") && str(ac, "selective_ac_option", "op");
        break;
    case SPEC_RECOMP_FULL:
        if (s->recompute_every <= 1) {
            ok = str(ac, "mode", "full");
        } else {
            char every[16];
            snprintf(every, sizeof every, "%u", s->recompute_every);
            ok = str(ac, "mode", "selective") && str(ac, "selective_ac_option", every);
        }
        break;
    default:
        return NOPE("recompute selective (attention's softmax and dropout, Megatron's "
                    "selective recomputation): torchtitan's AC is none, full, per-op "
                    "(selective_op) or every N-th block");
    }
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* The pipeline: torchtitan's 1F1B or Interleaved1F1B, its micro-batches
 * local_batch_size / pipeline_parallel_microbatch_size, its stages of
 * equal layers (no lighter first and last stage: the scenario's split). */
static int tt_pipeline(const spec_scenario *s, const char *where, cJSON *par, ss_err *err)
{
    const spec_parallel *p = &s->par;
    uint64_t layers = s->model.is_arch ? s->model.arch.layers : 0, chunks = (uint64_t)p->pp *
                                                                           p->virtual_stages;
    if (p->pp == 1) return SS_OK;
    if (!layers || p->chunk_layers || layers % chunks)
        return NOPE("a pipeline of %llu model chunks over %llu layers%s: torchtitan's "
                    "pipeline_parallel_layers_per_stage gives chunks of equal layers",
                    (unsigned long long)chunks, (unsigned long long)layers,
                    p->chunk_layers ? " split unevenly" : "");
    if (p->schedule == SPEC_PP_INTERLEAVED && p->virtual_stages < 2)
        return NOPE("%s", "an interleaved schedule of one chunk per stage");
    bool ok = str(par, "pipeline_parallel_schedule",
                  p->schedule == SPEC_PP_INTERLEAVED ? "Interleaved1F1B" : "1F1B") &&
              num(par, "pipeline_parallel_microbatch_size", (double)s->micro_batch) &&
              num(par, "pipeline_parallel_layers_per_stage", (double)(layers / chunks)) &&
              num(par, "pipeline_parallel_first_stage_less_layers", 0) &&
              num(par, "pipeline_parallel_last_stage_less_layers", 0);
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* What else torchtitan cannot say about the layout. */
static int tt_layout_check(const spec_scenario *s, const char *where, ss_err *err)
{
    const spec_parallel *p = &s->par;
    if (p->sequence_parallel != (p->tp > 1))
        return NOPE("sequence_parallel %s with tp %u: torchtitan's TP plan always splits the "
                    "norms' activations (sequence parallel whenever tp > 1)",
                    p->sequence_parallel ? "true" : "false", p->tp);
    if (p->p2p_scatter_gather)
        return NOPE("%s", "p2p_scatter_gather is Megatron-LM's; torchtitan has no such setting");
    if (p->order != SPEC_ORDER_TP_CP_PP_DP && p->pp > 1 && s->dp > 1)
        return NOPE("rank order %s: a torchtitan config read back gives tp-cp-pp-dp",
                    spec_order_names[p->order]);
    if (p->tp_comm_overlap && s->kernels != SPEC_KERNELS_COMPILED)
        return NOPE("%s", "tp_comm_overlap (async TP) without compiled kernels: torchtitan "
                    "raises \"Async TP requires 'model' in --compile.components and "
                    "--compile.enable\"");
    if (s->kernels == SPEC_KERNELS_FUSED || s->kernels == SPEC_KERNELS_LIGER)
        return NOPE("training.kernels %s (%s): torchtitan runs eager modules or torch.compile's "
                    "kernels (training.kernels eager or compiled)",
                    spec_kernels_names[s->kernels],
                    s->kernels == SPEC_KERNELS_LIGER ? "Liger-Kernel"
                                                     : "Transformer Engine, Apex");
    if (s->loss != SPEC_LOSS_EAGER && s->loss != SPEC_LOSS_COMPILED)
        return NOPE("training.loss %s: torchtitan's loss is PyTorch's cross_entropy on the "
                    "logits cast to fp32, eager or compiled (training.loss eager or compiled)",
                    spec_loss_names[s->loss]);
    if (s->attn_impl != SPEC_ATTN_FLASH)
        return NOPE("training.attention %s: torchtitan's attention is PyTorch SDPA's flash "
                    "backend (training.attention flash)", spec_attn_impl_names[s->attn_impl]);
    const spec_sharding *h = &s->shard;
    if (h->prefetch_k[0] || h->prefetch_k[1] || h->nprefetch[0] || h->nprefetch[1])
        return NOPE("%s", "explicit FSDP2 prefetch (modules_to_forward_prefetch / "
                    "modules_to_backward_prefetch): torchtitan's config has no such setting");
    bool cpu = s->off.params == SPEC_OFF_CPU && s->off.optimizer == SPEC_OFF_CPU;
    bool none = s->off.params == SPEC_OFF_NONE && s->off.optimizer == SPEC_OFF_NONE;
    if (!cpu && !none)
        return NOPE("offload params %s, optimizer %s: torchtitan's enable_cpu_offload puts "
                    "both on the CPU, or neither", spec_offload_names[s->off.params],
                    spec_offload_names[s->off.optimizer]);
    return SS_OK;
}

static int tt_parallelism(const spec_scenario *s, const char *where, cJSON *par, bool *fsdp,
                          ss_err *err)
{
    uint32_t shard = 1, replicate = 1;
    const char *raf = NULL;
    int rc = tt_data_parallel(s, where, &shard, &replicate, err);
    if (!rc) rc = tt_layout_check(s, where, err);
    *fsdp = s->shard.strategy == SPEC_FSDP2;
    if (!rc && *fsdp) rc = tt_reshard(s, where, &raf, err);
    if (rc) return rc;
    const spec_parallel *p = &s->par;
    bool ok = num(par, "data_parallel_replicate_degree", replicate) &&
              num(par, "data_parallel_shard_degree", shard) &&
              num(par, "tensor_parallel_degree", p->tp) &&
              num(par, "pipeline_parallel_degree", p->pp) &&
              num(par, "context_parallel_degree", p->cp) &&
              (p->cp == 1 || str(par, "context_parallel_rotate_method",
                                 p->cp_comm == SPEC_CP_P2P ? "alltoall" : "allgather")) &&
              num(par, "expert_parallel_degree", p->ep) &&
              num(par, "expert_tensor_parallel_degree", p->etp) &&
              flag(par, "enable_async_tensor_parallel", p->tp > 1 && p->tp_comm_overlap) &&
              (!raf || str(par, "fsdp_reshard_after_forward", raf));
    if (!ok) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return tt_pipeline(s, where, par, err);
}

static int tt_training(const spec_scenario *s, const char *where, bool fsdp, cJSON *tr,
                       ss_err *err)
{
    bool ok = true;
    if (s->par.pp > 1) /* the pipeline's micro-batches: local batch / microbatch size */
        ok = num(tr, "local_batch_size", (double)(s->micro_batch * s->grad_accum));
    else
        ok = num(tr, "local_batch_size", (double)s->micro_batch) &&
             num(tr, "global_batch_size", (double)(s->micro_batch * s->dp * s->grad_accum));
    ok = ok && num(tr, "seq_len", (double)s->seq_len) && num(tr, "steps", 10) &&
         flag(tr, "enable_cpu_offload", s->off.params == SPEC_OFF_CPU);
    if (!ok) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    return tt_precision(s, where, fsdp, tr, err);
}

static int tt_optimizer(const spec_scenario *s, const char *where, cJSON *op, ss_err *err)
{
    static const char *const impls[] = {"foreach", "for-loop", "fused"}; /* spec_opt_impl order */
    if (s->opt.type != SPEC_OPT_ADAMW && s->opt.type != SPEC_OPT_ADAM)
        return NOPE("optimizer %s: torchtitan's are AdamW and Adam", spec_opt_names[s->opt.type]);
    if ((size_t)s->opt.impl >= sizeof impls / sizeof *impls)
        return NOPE("optimizer implementation number %d", (int)s->opt.impl);
    bool ok = str(op, "name", s->opt.type == SPEC_OPT_ADAMW ? "AdamW" : "Adam") &&
              str(op, "implementation", impls[s->opt.impl]);
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* [model] converters ["float8"] and [float8] for Float8 linears. */
static int tt_float8(const spec_scenario *s, const char *where, cJSON *o, ss_err *err)
{
    if (s->prec.compute != SPEC_DT_FP8) return SS_OK;
    if (s->prec.fp8_recipe == SPEC_FP8_DELAYED)
        return NOPE("%s", "fp8 recipe delayed: torchao's Float8 linears in torchtitan scale "
                    "tensorwise or rowwise");
    cJSON *m = cJSON_AddObjectToObject(o, "model"), *f = cJSON_AddObjectToObject(o, "float8");
    cJSON *conv = m ? cJSON_AddArrayToObject(m, "converters") : NULL, *c8 = cJSON_CreateString("float8");
    bool ok = f && conv && c8 && cJSON_AddItemToArray(conv, c8);
    if (!ok) cJSON_Delete(conv ? NULL : c8);
    ok = ok && str(f, "recipe_name", spec_fp8_names[s->prec.fp8_recipe]) &&
         flag(f, "enable_fsdp_float8_all_gather", s->prec.fp8_all_gather);
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* Appends the string v to the array a. */
static bool push_str(cJSON *a, const char *v)
{
    cJSON *e = cJSON_CreateString(v);
    if (e && cJSON_AddItemToArray(a, e)) return true;
    cJSON_Delete(e);
    return false;
}

/* [compile]: enable, and which of the model and the loss torch.compile
 * covers (components; torchtitan's default is both, so the list is always
 * written). */
static bool compile_table(const spec_scenario *s, cJSON *co)
{
    bool model = s->kernels == SPEC_KERNELS_COMPILED, loss = s->loss == SPEC_LOSS_COMPILED;
    if (!flag(co, "enable", model || loss)) return false;
    if (!model && !loss) return true;
    cJSON *c = cJSON_AddArrayToObject(co, "components");
    return c && (!model || push_str(c, "model")) && (!loss || push_str(c, "loss"));
}

static int tt_tables(const spec_scenario *s, const char *where, const char *title, cJSON **out,
                     ss_err *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *job = cJSON_AddObjectToObject(o, "job"), *par = cJSON_AddObjectToObject(o, "parallelism");
    cJSON *tr = cJSON_AddObjectToObject(o, "training");
    cJSON *ac = cJSON_AddObjectToObject(o, "activation_checkpoint");
    cJSON *op = cJSON_AddObjectToObject(o, "optimizer"), *co = cJSON_AddObjectToObject(o, "compile");
    bool fsdp = false;
    int rc = o && job && par && tr && ac && op && co && str(job, "description", title) &&
                     compile_table(s, co)
                 ? SS_OK
                 : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) rc = tt_parallelism(s, where, par, &fsdp, err);
    if (!rc) rc = tt_training(s, where, fsdp, tr, err);
    if (!rc) rc = tt_recompute(s, where, ac, err);
    if (!rc) rc = tt_optimizer(s, where, op, err);
    if (!rc) rc = tt_float8(s, where, o, err);
    if (rc) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return SS_OK;
}

/* ---- TOML text ---- */

static void toml_value(FILE *f, const cJSON *v)
{
    if (cJSON_IsBool(v)) fputs(cJSON_IsTrue(v) ? "true" : "false", f);
    else if (cJSON_IsNumber(v)) fprintf(f, "%.0f", v->valuedouble);
    else if (cJSON_IsString(v)) fprintf(f, "\"%s\"", v->valuestring); /* our own, no quotes */
    else if (cJSON_IsArray(v)) {
        fputc('[', f);
        for (const cJSON *e = v->child; e; e = e->next) {
            toml_value(f, e);
            if (e->next) fputs(", ", f);
        }
        fputc(']', f);
    }
}

static char *toml_text(const cJSON *tables, const char *head)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (head) fputs(head, f);
    for (const cJSON *t = tables->child; t; t = t->next) {
        fprintf(f, "\n[%s]\n", t->string);
        for (const cJSON *k = t->child; k; k = k->next) {
            fprintf(f, "%s = ", k->string);
            toml_value(f, k);
            fputc('\n', f);
        }
    }
    fclose(f);
    return text;
}

/* ---- Megatron-LM ---- */

/* Megatron-core's DDP and distributed optimizer is strategy megatron; a
 * rank order with dp outside pp is Megatron's (tp-cp-ep-dp-pp). */
static int mg_check(const spec_scenario *s, const char *where, ss_err *err)
{
    const spec_parallel *p = &s->par;
    spec_strategy st = s->shard.strategy;
    if (st == SPEC_DEEPSPEED)
        return NOPE("strategy deepspeed (ZeRO-%u): DeepSpeed's runtime, which Megatron-LM's "
                    "arguments cannot select (search --strategy megatron for Megatron-core's "
                    "DDP and distributed optimizer)", s->ds.stage);
    if (st != SPEC_MEGATRON)
        return NOPE("strategy %s: Megatron-LM runs Megatron-core's DDP and distributed "
                    "optimizer (strategy megatron); %s has no Megatron-LM argument",
                    spec_strategy_names[st], spec_strategy_names[st]);
    if (p->order != SPEC_ORDER_TP_CP_DP_PP && p->pp > 1 && s->dp > 1)
        return NOPE("rank order %s: Megatron-LM orders ranks tp-cp-ep-dp-pp (set "
                    "parallel.order to search that)", spec_order_names[p->order]);
    if (p->p2p_scatter_gather)
        return NOPE("%s", "p2p_scatter_gather: Megatron-LM's scatter_gather_tensors_in_pipeline "
                    "has no argument in the Megatron-LM these names are from");
    if (s->kernels != SPEC_KERNELS_FUSED)
        return NOPE("training.kernels %s: Megatron-LM runs fused kernels (Transformer Engine)",
                    spec_kernels_names[s->kernels]);
    if (s->loss == SPEC_LOSS_EAGER || s->loss == SPEC_LOSS_FUSED_LINEAR)
        return NOPE("training.loss %s: Megatron-LM's loss is its vocab-parallel "
                    "cross-entropy (training.loss vocab_parallel, or fused: "
                    "--cross-entropy-loss-fusion with Transformer Engine's kernel)",
                    spec_loss_names[s->loss]);
    if (s->off.params != SPEC_OFF_NONE || s->off.optimizer != SPEC_OFF_NONE)
        return NOPE("%s", "offload: not written as Megatron-LM arguments (its CPU optimizer "
                    "offload is not the one modelled here)");
    return SS_OK;
}

static int mg_precision(const spec_scenario *s, const char *where, FILE *f, ss_err *err)
{
    const spec_precision *p = &s->prec;
    const char *const *n = spec_dtype_names;
    bool half = p->param == SPEC_DT_BF16 || p->param == SPEC_DT_FP16;
    if (p->compute == SPEC_DT_FP32 && p->param == SPEC_DT_FP32) return SS_OK;
    if (!half || p->master != SPEC_DT_FP32 || p->optim != SPEC_DT_FP32)
        return NOPE("precision param %s, master %s, optimizer %s: Megatron-LM's --bf16 / "
                    "--fp16 keep half-precision weights with fp32 main weights and fp32 "
                    "optimizer states", n[p->param],
                    p->master == SPEC_DT_NONE ? "none" : n[p->master], n[p->optim]);
    if (p->compute == SPEC_DT_FP8 && p->fp8_recipe == SPEC_FP8_ROWWISE)
        return NOPE("%s", "fp8 recipe rowwise (torchao's): Megatron-LM's --fp8-recipe is "
                    "tensorwise, delayed, mxfp8 or blockwise");
    if (p->compute != SPEC_DT_FP8 && p->compute != p->param)
        return NOPE("precision compute %s with param %s", n[p->compute], n[p->param]);
    /* fp8 parameters gathered in fp8: Megatron-LM allows --fp8-param-gather
     * with the distributed optimizer (megatron/training/arguments.py) */
    bool fp8_gather = p->compute == SPEC_DT_FP8 && p->fp8_all_gather;
    if (fp8_gather && !s->shard.mcore.distributed_optimizer)
        return NOPE("%s", "precision.fp8.all_gather without the distributed optimizer: "
                    "Megatron-LM's --fp8-param-gather needs --use-distributed-optimizer");
    fprintf(f, "%s\n", p->param == SPEC_DT_BF16 ? "--bf16" : "--fp16");
    if (p->compute == SPEC_DT_FP8) /* e4m3 forward, e5m2 gradients */
        fprintf(f, "--fp8-format hybrid\n--fp8-recipe %s\n", spec_fp8_names[p->fp8_recipe]);
    if (fp8_gather) fputs("--fp8-param-gather\n", f);
    return SS_OK;
}

static int mg_recompute(const spec_scenario *s, const char *where, FILE *f, ss_err *err)
{
    switch (s->recompute) {
    case SPEC_RECOMP_NONE: return SS_OK;
    case SPEC_RECOMP_SELECTIVE: fputs("--recompute-granularity selective\n", f); return SS_OK;
    case SPEC_RECOMP_FULL:
        /* uniform, 1 layer per checkpoint: every layer's input kept, the
         * layer recomputed; every N-th layer only has no Megatron form */
        if (s->recompute_every > 1)
            return NOPE("recompute full on every %u-th layer: Megatron-LM's full recomputation "
                        "covers every layer (uniform) or the first N of a stage (block)",
                        s->recompute_every);
        fputs("--recompute-granularity full\n--recompute-method uniform\n"
              "--recompute-num-layers 1\n", f);
        return SS_OK;
    default:
        return NOPE("recompute %s (PyTorch's per-op selective checkpointing): Megatron-LM's "
                    "is selective (attention) or full", spec_recompute_names[s->recompute]);
    }
}

static int mg_layout(const spec_scenario *s, const char *where, FILE *f, ss_err *err)
{
    const spec_parallel *p = &s->par;
    uint64_t layers = s->model.is_arch ? s->model.arch.layers : 0;
    fprintf(f, "--tensor-model-parallel-size %u\n", p->tp);
    if (p->sequence_parallel) fputs("--sequence-parallel\n", f);
    if (p->tp_comm_overlap) fputs("--tp-comm-overlap\n", f);
    if (p->moe_a2a_overlap) fputs("--overlap-moe-expert-parallel-comm\n", f);
    fprintf(f, "--pipeline-model-parallel-size %u\n", p->pp);
    if (p->pp > 1 && p->chunk_layers)
        return NOPE("%s", "a pipeline split unevenly (parallel.pipeline_layers): not written as "
                    "Megatron-LM arguments");
    if (p->schedule == SPEC_PP_INTERLEAVED && p->virtual_stages > 1) {
        uint64_t chunks = (uint64_t)p->pp * p->virtual_stages;
        if (!layers || layers % chunks)
            return NOPE("an interleaved pipeline of %llu chunks over %llu layers: Megatron-LM's "
                        "virtual stages hold equal layers", (unsigned long long)chunks,
                        (unsigned long long)layers);
        fprintf(f, "--num-layers-per-virtual-pipeline-stage %llu\n",
                (unsigned long long)(layers / chunks));
    }
    fprintf(f, "--context-parallel-size %u\n", p->cp);
    if (p->cp > 1)
        fprintf(f, "--cp-comm-type %s\n", p->cp_comm == SPEC_CP_P2P ? "p2p" : "allgather");
    fprintf(f, "--expert-model-parallel-size %u\n", p->ep);
    if (p->ep > 1 || p->etp > 1) fprintf(f, "--expert-tensor-parallel-size %u\n", p->etp);
    if (p->moe_pad_to_capacity)
        fprintf(f, "--moe-expert-capacity-factor %g\n--moe-pad-expert-input-to-capacity\n",
                s->model.arch.capacity_factor);
    return SS_OK;
}

int jobw_megatron(const spec_scenario *s, const char *where, const char *title, char **out,
                  ss_err *err)
{
    int rc = mg_check(s, where, err);
    if (rc) return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    fprintf(f, "# Megatron-LM arguments for %s, one per line: pass them to pretrain_gpt.py\n"
               "# with the model's own (--num-layers, --hidden-size, ...) and the data's, e.g.\n"
               "#   torchrun ... pretrain_gpt.py $(grep -v '^#' THIS_FILE) MODEL_AND_DATA_ARGS\n",
            title);
    const struct spec_mcore *m = &s->shard.mcore;
    rc = mg_layout(s, where, f, err);
    fprintf(f, "--micro-batch-size %llu\n--global-batch-size %llu\n--seq-length %llu\n",
            (unsigned long long)s->micro_batch,
            (unsigned long long)(s->micro_batch * s->dp * s->grad_accum),
            (unsigned long long)s->seq_len);
    if (m->distributed_optimizer) fputs("--use-distributed-optimizer\n", f);
    if (m->overlap_grad_reduce) fputs("--overlap-grad-reduce\n", f);
    if (m->overlap_param_gather) fputs("--overlap-param-gather\n", f);
    if (m->bucket_size) fprintf(f, "--ddp-bucket-size %llu\n", (unsigned long long)m->bucket_size);
    /* with --bf16 Megatron reduces in fp32 unless told --grad-reduce-in-bf16 */
    if (m->grad_reduce_in_fp32) fputs("--accumulate-allreduce-grads-in-fp32\n", f);
    else if (s->prec.param == SPEC_DT_BF16) fputs("--grad-reduce-in-bf16\n", f);
    if (s->loss == SPEC_LOSS_FUSED)
        fputs("--cross-entropy-loss-fusion\n--cross-entropy-fusion-impl te\n", f);
    /* Transformer Engine's backends: FusedAttention (cuDNN), FlashAttention
     * (FlashAttention-3 where it is installed), or unfused */
    fprintf(f, "--attention-backend %s\n", s->attn_impl == SPEC_ATTN_CUDNN     ? "fused"
                                          : s->attn_impl == SPEC_ATTN_UNFUSED ? "unfused"
                                                                              : "flash");
    /* Megatron-LM's default is 0.1, shardsim's 0: always say which */
    fprintf(f, "--attention-dropout %g\n", s->attn_dropout);
    if (!rc) rc = mg_recompute(s, where, f, err);
    if (!rc) rc = mg_precision(s, where, f, err);
    if (!rc && s->opt.type == SPEC_OPT_ADAM)
        rc = NOPE("%s", "optimizer adam (weight decay in the gradient): Megatron-LM's adam "
                  "decouples it (AdamW: optimizer adamw)");
    if (!rc) fprintf(f, "--optimizer %s\n", s->opt.type == SPEC_OPT_SGD ? "sgd" : "adam");
    fclose(f);
    if (rc || !text) {
        free(text);
        return rc ? rc : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    *out = text;
    return SS_OK;
}

int jobw_torchtitan(const spec_scenario *s, const char *where, const char *title, char **out,
                    ss_err *err)
{
    cJSON *t = NULL;
    int rc = tt_tables(s, where, title, &t, err);
    if (rc) return rc;
    char head[1024];
    snprintf(head, sizeof head,
             "# torchtitan job config (--job.config_file) for %s.\n"
             "# [model] is not written: give torchtitan's name and flavor of the model \"%s\"\n"
             "# (e.g. name = \"llama3\", flavor = \"8B\"); add [job] dump_folder, [training]\n"
             "# dataset and the rest as for any run: they do not change the step.\n",
             title, s->model.name);
    *out = toml_text(t, head);
    cJSON_Delete(t);
    return *out ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}

/* The keys io/ttconfig.c's import gives, by section: a scenario that names
 * a torchtitan config must not give them too. */
static const char *const given[][12] = {
    {"parallel", "dp", "tp", "sequence_parallel", "async_tp", "tp_comm_overlap", "cp", "ep",
     "etp", "pp", "pipeline_schedule", "virtual_stages"},
    {"parallel", "pipeline_layers"},
    {"training", "micro_batch", "seq_len", "grad_accum", "recompute", "kernels",
     "recompute_every", "loss"},
    {"precision", "param", "compute", "grad", "reduce", "master", "optimizer", "fp8"},
    {"optimizer", "type", "impl"},
    {"sharding", "strategy", "shard_group_size", "reshard_after_forward"},
    {"offload", "params", "optimizer"},
};

int jobw_torchtitan_readback(const spec_scenario *s, const char *resolved, const char *title,
                             char **out, ss_err *err)
{
    cJSON *t = NULL, *root = cJSON_Parse(resolved), *tr = NULL;
    int rc = root ? tt_tables(s, "--write-torchtitan", title, &t, err)
                  : ss_fail(err, SS_E_INPUT, NULL, "the resolved scenario does not parse");
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    for (size_t k = 0; k < sizeof given / sizeof *given; k++) {
        cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, given[k][0]);
        for (size_t j = 1; sec && j < 12 && given[k][j]; j++)
            cJSON_DeleteItemFromObjectCaseSensitive(sec, given[k][j]);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "trainer");
    if ((tr = cJSON_AddObjectToObject(root, "trainer")) && cJSON_AddItemToObject(tr, "torchtitan", t))
        t = NULL;
    cJSON_Delete(t);
    *out = tr && !t ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    return *out ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
}
