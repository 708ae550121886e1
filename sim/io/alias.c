#include "alias.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../core/ss.h"

/* Each alias means what its key means: same unit, same values. Sources:
 * Megatron-LM's megatron/training/arguments.py (core_r0.8.0 and later:
 * --tensor-model-parallel-size ... --decoder-first-pipeline-num-layers),
 * Megatron-core's TransformerConfig / ModelParallelConfig field names, which
 * NeMo 2 and Megatron-Bridge recipes set, and NeMo 1's megatron_gpt_config
 * .yaml (encoder_seq_length, activations_checkpoint_granularity). Megatron's
 * data_parallel_size, like parallel.dp, excludes context parallelism; its
 * virtual_pipeline_model_parallel_size is model chunks per stage, as
 * parallel.virtual_stages; recompute_granularity "full" and "selective" are
 * training.recompute's values of those names (full: every layer).
 * Megatron-FSDP's switch is DistributedDataParallelConfig.use_custom_fsdp
 * in core 0.11-0.13 (use_megatron_fsdp from 0.14) and NeMo 2's
 * MegatronStrategy(use_mcore_fsdp=...) (NVIDIA/NeMo v2.3.0). */
static const alias_entry table[] = {
    {"parallel", "tensor_model_parallel_size", "tp", "Megatron-LM, NeMo"},
    {"parallel", "pipeline_model_parallel_size", "pp", "Megatron-LM, NeMo"},
    {"parallel", "context_parallel_size", "cp", "Megatron-LM, NeMo"},
    {"parallel", "expert_model_parallel_size", "ep", "Megatron-LM, NeMo"},
    {"parallel", "expert_tensor_parallel_size", "etp", "Megatron-LM, NeMo"},
    {"parallel", "data_parallel_size", "dp", "Megatron-core"},
    {"parallel", "virtual_pipeline_model_parallel_size", "virtual_stages", "Megatron-LM, NeMo"},
    {"parallel", "decoder_first_pipeline_num_layers", "num_layers_in_first_pipeline_stage",
     "Megatron-LM"},
    {"parallel", "decoder_last_pipeline_num_layers", "num_layers_in_last_pipeline_stage",
     "Megatron-LM"},
    {"parallel", "overlap_moe_expert_parallel_comm", "moe_a2a_overlap", "Megatron-core"},
    {"parallel", "moe_pad_expert_input_to_capacity", "moe_pad_to_capacity", "Megatron-core"},
    {"sharding", "use_custom_fsdp", "use_megatron_fsdp", "Megatron-core 0.11-0.13"},
    {"sharding", "use_mcore_fsdp", "use_megatron_fsdp", "NeMo 2"},
    {"training", "micro_batch_size", "micro_batch", "Megatron-LM, NeMo"},
    {"training", "seq_length", "seq_len", "Megatron-LM, NeMo 2"},
    {"training", "encoder_seq_length", "seq_len", "NeMo 1"},
    {"training", "recompute_granularity", "recompute", "Megatron-LM, NeMo 2"},
    {"training", "activations_checkpoint_granularity", "recompute", "NeMo 1"},
};
#define NALIAS ((int)(sizeof table / sizeof *table))

int alias_count(void) { return NALIAS; }

const alias_entry *alias_at(int i) { return i >= 0 && i < NALIAS ? &table[i] : NULL; }

/* s equals name, with '-' in s read as '_' (Megatron's flags). */
static bool same_name(const char *s, const char *name, size_t len)
{
    if (strlen(name) != len) return false;
    for (size_t i = 0; i < len; i++)
        if ((s[i] == '-' ? '_' : s[i]) != name[i]) return false;
    return true;
}

static const alias_entry *find(const char *section, const char *name, size_t len)
{
    for (int i = 0; i < NALIAS; i++)
        if (!strcmp(table[i].section, section) && same_name(name, table[i].name, len))
            return &table[i];
    return NULL;
}

/* The member of obj named key or one of key's aliases, other than c. */
static const cJSON *other_spelling(const cJSON *obj, const char *section, const char *key,
                                   const cJSON *c)
{
    for (const cJSON *o = obj->child; o; o = o->next) {
        if (o == c || !o->string) continue;
        const alias_entry *a = find(section, o->string, strlen(o->string));
        if (!strcmp(o->string, key) || (a && !strcmp(a->key, key))) return o;
    }
    return NULL;
}

static int rename_section(cJSON *obj, const char *section, const char *file, ss_err *err)
{
    for (cJSON *c = obj->child; c; c = c->next) {
        const alias_entry *a = c->string ? find(section, c->string, strlen(c->string)) : NULL;
        if (!a) continue;
        const cJSON *o = other_spelling(obj, section, a->key, c);
        if (o)
            return ss_fail(err, SS_E_INPUT, file,
                           "$.%s: \"%s\" (the name in %s) and \"%s\" both give %s.%s: "
                           "expected one of them",
                           section, c->string, a->from, o->string, section, a->key);
        char *k = cJSON_malloc(strlen(a->key) + 1);
        if (!k) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
        strcpy(k, a->key);
        if (!(c->type & cJSON_StringIsConst)) cJSON_free(c->string);
        c->string = k;
        c->type &= ~cJSON_StringIsConst;
    }
    return SS_OK;
}

int alias_doc(cJSON *root, const char *file, ss_err *err)
{
    static const char *const sections[] = {"parallel", "training", "sharding"};
    int rc = SS_OK;
    for (size_t i = 0; i < SS_ARRAY_LEN(sections) && !rc; i++) {
        cJSON *s = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, sections[i]) : NULL;
        if (cJSON_IsObject(s)) rc = rename_section(s, sections[i], file, err);
    }
    return rc;
}

const char *alias_assignment(const char *in, char *out, size_t n)
{
    const char *p = !strncmp(in, "$.", 2) ? in + 2 : in;
    size_t sec = strcspn(p, ".=");
    const char *name = p + sec + 1;
    size_t len = strcspn(name, ".=[");
    char section[16];
    const alias_entry *a = NULL;
    if (p[sec] == '.' && sec < sizeof section) {
        snprintf(section, sizeof section, "%.*s", (int)sec, p);
        a = find(section, name, len);
    }
    int w = a ? snprintf(out, n, "%.*s%s.%s%s", (int)(p - in), in, section, a->key, name + len)
              : snprintf(out, n, "%s", in);
    return w >= 0 && (size_t)w < n ? out : NULL;
}
