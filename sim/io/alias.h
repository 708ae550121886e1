/* alias.h - other frameworks' names for scenario keys.
 *
 * Megatron-LM's arguments and NeMo's config keys name some scenario keys
 * differently: tensor_model_parallel_size is parallel.tp, micro_batch_size
 * is training.micro_batch. Where a name means exactly what the scenario key
 * means (same unit, same values), a scenario or a --set may use it; the
 * table in alias.c lists each with the framework that spells it so.
 * Megatron's command-line spelling with dashes (tensor-model-parallel-size)
 * is accepted too. Names that do not map one to one (recompute_method,
 * bf16: true) are not aliases: they stay unknown keys, whose error lists
 * the keys that exist.
 *
 * alias_doc renames the aliases in a parsed scenario to the scenario keys
 * before anything reads it, so every later message names the scenario key.
 * It fails (SS_E_INPUT, naming the file and section) when a section holds a
 * key and one of its aliases, or two aliases of one key. alias_assignment
 * rewrites a --set assignment whose path starts with an alias
 * ("parallel.tensor_model_parallel_size=4" -> "parallel.tp=4"), any other
 * assignment unchanged; it returns out, or NULL when out is too short.
 */
#ifndef SS_ALIAS_H
#define SS_ALIAS_H

#include <stddef.h>

#include "../core/err.h"

struct cJSON;

int alias_doc(struct cJSON *root, const char *file, ss_err *err);
const char *alias_assignment(const char *in, char *out, size_t n);

/* The i-th alias (for docs and tests): its section, name, scenario key and
 * the framework that spells it so; NULL past the end. */
typedef struct alias_entry {
    const char *section, *name, *key, *from;
} alias_entry;
int alias_count(void);
const alias_entry *alias_at(int i);

#endif
