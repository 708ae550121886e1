/* ttconfig.h - a torchtitan job config (TOML) as a scenario's training and
 * parallel sections.
 *
 * A scenario names one as "trainer": {"torchtitan": PATH} (relative to the
 * scenario, the file users pass to torchtitan's --job.config_file) or
 * inline, its tables as JSON objects. scenario.c reads the file (ttc_read,
 * through io/toml_shim.h), asks ttc_sections for the sections it implies
 * and merges them into the scenario key by key; a key both give is an
 * error. The tables read, by torchtitan's own names (torchtitan's
 * config/job_config.py at commit 238fa99, the last with TOML configs; its
 * defaults apply to what the file omits):
 *   [parallelism]  data_parallel_shard_degree (-1: the rest of the world),
 *     data_parallel_replicate_degree (HSDP: sharding.shard_group_size),
 *     tensor_parallel_degree (with sequence parallel, torchtitan's TP
 *     plan), enable_async_tensor_parallel (async_tp), pipeline_parallel_
 *     degree, _schedule (1F1B, Interleaved1F1B), _microbatch_size,
 *     _layers_per_stage, _first/_last_stage_less_layers (torchtitan's layer
 *     split, as pipeline_layers), context_parallel_degree, expert_parallel_
 *     degree, expert_tensor_parallel_degree, fsdp_reshard_after_forward;
 *   [training]  local_batch_size (or the older batch_size), global_batch_size
 *     (gradient accumulation), seq_len, dtype, mixed_precision_param,
 *     mixed_precision_reduce, enable_cpu_offload;
 *   [activation_checkpoint]  mode none / full / selective with
 *     selective_ac_option "op" (selective_op) or "1" (every block: full);
 *   [optimizer]  name (AdamW, Adam), implementation;
 *   [model]  name and flavor, recorded: the model is the scenario's;
 *   [compile]  recorded (kernels are simulated eager);
 *   [float8], [quantize]  accepted; model.converters (Float8, MX) are an
 *     error: low-precision linears are not modelled.
 * Sections that do not change a step (job, profiling, metrics,
 * lr_scheduler, checkpoint, comm, validation, debug, memory_estimation,
 * experimental, fault_tolerance with enable false) are accepted and their
 * keys not read. Any other section or key, and any value shardsim does not
 * model (another pipeline schedule, AC every 2nd block, memory_budget AC,
 * DeepEP, ...), is an error naming the file, the TOML key, what was
 * expected and what was found.
 *
 * Knows nothing of plans: the world size (every GPU of the topology, as
 * torchrun on every node runs it) and the model's layer count come in as
 * numbers.
 */
#ifndef TT_CONFIG_H
#define TT_CONFIG_H

#include <stdint.h>

#include "../core/err.h"
#include "json.h"

struct cJSON;

/* The TOML file at `file` as a JSON tree (*out, caller deletes). Errors:
 * unreadable (SS_E_IO), not TOML, a build without TOML (SS_E_INPUT), all
 * naming the file. */
int ttc_read(const char *file, struct cJSON **out, ss_err *err);

/* The scenario sections the config `cfg` implies: a new object (*out,
 * caller deletes) with "parallel", "training", "precision", "optimizer",
 * "sharding", maybe "offload", and "assumptions" (what the import
 * decided, as sentences). gpus: the world size; layers: the model's
 * transformer layers (0 when it is a list of blocks: a pipeline is then an
 * error). When cfg was read from a TOML file, error paths are TOML keys
 * ("file.toml: parallelism.tensor_parallel_degree"). */
int ttc_sections(js_node cfg, uint64_t gpus, uint32_t layers, struct cJSON **out, ss_err *err);

/* The shipped model file (relative to the source tree) for torchtitan's
 * [model] name and flavor (llama3 8B, 70B, 405B), or NULL. */
const char *ttc_shipped_model(const char *name, const char *flavor);

/* The layer split of torchtitan's generate_llm_fqn_per_model_part: layers
 * transformer layers over stages model chunks, the embedding counted as
 * in_w layers on the first and the norm and head as out_w on the last.
 * Fills count[0..stages) (chunk order). Returns false where torchtitan
 * raises (more stages than weighted layers, a weight above the smallest
 * share, an empty stage). */
bool ttc_split_layers(uint32_t layers, uint32_t stages, uint32_t in_w, uint32_t out_w,
                      uint32_t *count);

#endif
