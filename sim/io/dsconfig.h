/* dsconfig.h - a DeepSpeed JSON config as a scenario's sharding section.
 *
 * A scenario names DeepSpeed either as "sharding": "PATH" (a DeepSpeed
 * config file, relative to the scenario, as users pass it to
 * deepspeed.initialize) or as an inline object with "strategy":
 * "deepspeed" whose other keys are a DeepSpeed config's. The config is
 * read by DeepSpeed's own names:
 *   zero_optimization (stage 1-3 and its keys, offload_optimizer,
 *     offload_param, ZeRO++), bf16 / fp16 "enabled", data_types
 *     grad_accum_dtype, communication_data_type;
 *   train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 *     train_batch_size: checked against the scenario's training section
 *     (the config's accumulation is taken when the scenario gives none);
 *   optimizer.type: checked against the scenario's optimizer.
 * "auto" (Hugging Face's placeholder) takes the scenario's value, or for
 * bucket sizes Hugging Face's rule from the model's hidden size (reduce
 * hidden^2, prefetch 0.9 hidden^2, persistence 10 hidden) and DeepSpeed's
 * default for models without one. Keys that do not change a step
 * (scheduler, gradient_clipping, logging) are accepted and ignored; any
 * other key is an error naming its JSON path, as is a value shardsim does
 * not model (stage 0, reduce_scatter false, partial offload).
 *
 * Precision: without a scenario "precision" section it follows the config
 * (bit16 parameters, gradients and compute, fp32 master weights and
 * optimizer states); with one, the two must agree.
 */
#ifndef DSCONFIG_H
#define DSCONFIG_H

#include "../plan/spec.h"
#include "json.h"

/* Fill s->ds, the offload devices and (when the scenario has none) the
 * precision from the config at `cfg`; root is the scenario. The model,
 * layout, training and optimizer sections must already be loaded. */
int dsc_load(js_node cfg, js_node root, spec_scenario *s, ss_err *err);

#endif
