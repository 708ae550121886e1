/* quick.h - a scenario from the command line alone, for the question "will
 * model X fit on N GPUs of type Y, and how fast": `shardsim run --model
 * FILE --gpus N [--gpu KIND]`.
 *
 * quick_scenario writes the JSON text of that scenario: the model (a
 * shardsim model file, or a Hugging Face config.json written hf:PATH); N
 * GPUs of the kind on its shipped machine (one HGX node up to 8 GPUs, else
 * the rail-optimized fat tree of ceil(N / 8) nodes; h100, h200, a100);
 * data parallel over all of them; FSDP2 as torchtitan runs it by default
 * (fp32 parameters and AdamW states, bf16 compute, fp32 reductions, one unit
 * per block); micro-batches of 1 x 4,096 tokens, no recompute. `--set`
 * changes any of it afterwards. With a torchtitan TOML job config
 * (`--torchtitan FILE`, may be NULL) the scenario names it as "trainer":
 * {"torchtitan": PATH} instead of the parallel, training, precision,
 * optimizer and sharding sections above (io/ttconfig.h maps it, the world
 * being the N GPUs); model may then be NULL: the shipped model file of
 * the config's [model] name and flavor (llama3 8B, 70B, 405B). Every file is named by its absolute path
 * under data_dir (the source tree), so the text loads from anywhere.
 * Errors: SS_E_INPUT for an unknown kind or a model or torchtitan file
 * that cannot be found, naming the option.
 */
#ifndef CLI_QUICK_H
#define CLI_QUICK_H

#include <stdint.h>

#include "../core/err.h"

int quick_scenario(const char *model, uint32_t gpus, const char *gpu, const char *torchtitan,
                   const char *data_dir, char **text, ss_err *err);

#endif
