/* jobwrite.h - a loaded scenario as the configuration a framework runs: a
 * torchtitan job TOML or Megatron-LM command-line arguments.
 *
 * The reverse of io/ttconfig.h for torchtitan: every key written is one
 * ttconfig.c reads back to the same scenario value, with torchtitan's
 * names (config/job_config.py at commit 238fa99):
 *   [parallelism]  data_parallel_replicate_degree, data_parallel_shard_
 *     degree (FSDP2 over dp, or HSDP's shard group), tensor_parallel_
 *     degree, enable_async_tensor_parallel, pipeline_parallel_degree,
 *     _schedule (1F1B, Interleaved1F1B), _microbatch_size, context_
 *     parallel_degree, expert_parallel_degree, expert_tensor_parallel_
 *     degree, fsdp_reshard_after_forward;
 *   [training]  local_batch_size, global_batch_size (accumulation), seq_len,
 *     steps, dtype, mixed_precision_param, mixed_precision_reduce,
 *     enable_cpu_offload;
 *   [activation_checkpoint]  mode, selective_ac_option;
 *   [optimizer]  name, implementation;  [compile]  enable;
 *   [model] converters ["float8"] and [float8] when compute is fp8.
 * Megatron-LM's names (megatron/training/arguments.py and the config
 * dataclasses it builds arguments from, NVIDIA/Megatron-LM at d98e8a6):
 *   --tensor-model-parallel-size, --sequence-parallel, --tp-comm-overlap,
 *   --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-
 *   stage, --context-parallel-size, --cp-comm-type, --expert-model-
 *   parallel-size, --expert-tensor-parallel-size, --micro-batch-size,
 *   --global-batch-size, --seq-length, --use-distributed-optimizer,
 *   --overlap-grad-reduce, --overlap-param-gather, --ddp-bucket-size,
 *   --accumulate-allreduce-grads-in-fp32, --grad-reduce-in-bf16,
 *   --recompute-granularity,
 *   --recompute-method, --recompute-num-layers, --bf16, --fp16,
 *   --fp8-format, --fp8-recipe, --optimizer.
 *
 * Only what maps one to one is written. A scenario value the framework
 * cannot express (another runtime: FSDP1 or DeepSpeed as torchtitan,
 * anything but Megatron-core's DDP as Megatron; a recomputation, precision,
 * kernel set or rank order it has no setting for) is SS_E_INPUT at
 * `where`, naming the value and why. The model itself (its shapes) is not
 * written: torchtitan names it by [model] name and flavor, Megatron by its
 * own arguments; both say so in a comment.
 *
 * Pure: text out (caller frees with free()), nothing read or run.
 */
#ifndef JOBWRITE_H
#define JOBWRITE_H

#include "../core/err.h"
#include "../plan/spec.h"

/* The torchtitan job config of s as TOML text (caller frees), its [job]
 * description `title`, after comment lines saying what it leaves out. */
int jobw_torchtitan(const spec_scenario *s, const char *where, const char *title, char **out,
                    ss_err *err);

/* The scenario that reads that config back: `resolved` (s as scenario
 * JSON, scn_write_resolved) without the keys the torchtitan import gives
 * (io/ttconfig.c's sections) and with "trainer": {"torchtitan": {...}},
 * the config inline. JSON text in *out (caller frees). Loading and running
 * it must give s's step: search --write-torchtitan checks that. */
int jobw_torchtitan_readback(const spec_scenario *s, const char *resolved, const char *title,
                             char **out, ss_err *err);

/* Megatron-LM's arguments for s, one per line, after a comment header
 * naming `title`. */
int jobw_megatron(const spec_scenario *s, const char *where, const char *title, char **out,
                  ss_err *err);

#endif
