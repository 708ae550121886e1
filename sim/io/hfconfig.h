/* hfconfig.h - a Hugging Face config.json as a model "architecture".
 *
 * Users hold their models as the config.json a Hugging Face checkpoint ships
 * with. hf_arch reads one (already parsed, as a js_node) and builds the
 * equivalent "architecture" object, the one a model file would spell out;
 * scenario.c then reads that object with the same parser, so the checks on
 * an architecture live in one place.
 *
 * Families (model_type): llama, mistral, qwen2 (q/k/v biases), qwen3
 * (q/k norms), mixtral (MoE), deepseek_v2 and deepseek_v3 (MLA, shared experts, leading dense
 * layers) and gpt2 (learned positions). Every field of the config is either
 * mapped, or on an explicit list of fields that change neither the
 * parameters nor the compute of a training step (dtypes, token ids, rope
 * settings, dropout, routing-loss coefficients, ...); any other field, a
 * value the architecture cannot express (biases on only
 * some projections of a Llama, DeepSeek-V2-Lite's direct query projection)
 * and an unknown model_type are errors naming the file, the JSON path, what
 * was expected and what was found. max_position_embeddings of a rotary
 * model is never turned into a position table.
 *
 * Ownership: *out is a new cJSON object the caller deletes (cJSON_Delete);
 * on error *out is untouched. Knows nothing of plans or scenarios.
 */
#ifndef HF_CONFIG_H
#define HF_CONFIG_H

#include "../core/err.h"
#include "json.h"

struct cJSON;

/* cfg: the config.json object. Errors (SS_E_INPUT): see above;
 * SS_E_NOMEM. */
int hf_arch(js_node cfg, struct cJSON **out, ss_err *err);

#endif
