/* fuzz_splice.h - load the fuzz input as one section of a fixed scenario.
 *
 * The DeepSpeed config reader and the Hugging Face config importer are
 * reached only through a scenario (they need its model, layout and
 * training). fuzz_splice_load puts the input's bytes verbatim between a
 * prefix and a suffix, so `{"sharding": INPUT}` or `{"model": {"hf_config":
 * INPUT}}`, and loads the result with scn_load_text as fuzz_scenario does.
 * The rest of the scenario is inline (a small Llama-like architecture, one
 * node of eight GPUs), so no file is read per input. With SS_FUZZ_SHOW set
 * in the environment, each input's error is printed: a way to check that
 * the seeds get past the wrapper into the reader under test. */
#ifndef FUZZ_SPLICE_H
#define FUZZ_SPLICE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/io/scenario.h"

#define FUZZ_ARCH                                                              \
    "{\"type\": \"transformer\", \"layers\": 2, \"hidden\": 256, \"heads\": 4," \
    " \"kv_heads\": 2, \"ffn_hidden\": 512, \"activation\": \"swiglu\","      \
    " \"vocab\": 1024, \"norm\": \"rmsnorm\"}"

#define FUZZ_TOPOLOGY                                                          \
    "{\"name\": \"t\", \"nodes\": 1, \"gpus_per_node\": 8,"                    \
    " \"intra_node\": {\"bus_bw_GBps\": 450, \"latency_us\": 1},"              \
    " \"device\": {\"name\": \"d\", \"hbm_bytes\": 80000000000,"               \
    "  \"hbm_bw_GBps\": 3000, \"peak_tflops\": {\"bf16\": 900, \"fp16\": 900," \
    "  \"fp32\": 60}, \"gemm_efficiency\": 0.6, \"mem_efficiency\": 0.8,"      \
    "  \"launch_us\": 4}}"

/* The scenario's keys other than the one the input fills, ending in ", ". */
#define FUZZ_REST                                                              \
    "\"name\": \"fuzz\", \"topology\": " FUZZ_TOPOLOGY ","                     \
    " \"parallel\": {\"dp\": 8},"                                              \
    " \"training\": {\"micro_batch\": 1, \"seq_len\": 1024},"                  \
    " \"optimizer\": {\"type\": \"adamw\"}, "

/* The two wrappers: the input as the sharding section (DeepSpeed's config
 * when it has "strategy": "deepspeed"), and as the model's hf_config. */
#define FUZZ_DS_PREFIX                                                         \
    "{" FUZZ_REST "\"model\": {\"name\": \"m\", \"architecture\": " FUZZ_ARCH  \
    "}, \"sharding\": "
#define FUZZ_DS_SUFFIX "}"
#define FUZZ_HF_PREFIX                                                         \
    "{" FUZZ_REST "\"sharding\": {\"strategy\": \"full_shard\"},"              \
    " \"model\": {\"hf_config\": "
#define FUZZ_HF_SUFFIX "}}"

/* Load prefix + data + suffix as a scenario. Returns 0; traps when the
 * loader fails other than with an input error carrying a message. */
static int fuzz_splice_load(const char *prefix, const uint8_t *data, size_t size,
                            const char *suffix)
{
    size_t np = strlen(prefix), ns = strlen(suffix);
    char *text = malloc(np + size + ns);
    if (!text) return 0;
    memcpy(text, prefix, np);
    if (size) memcpy(text + np, data, size);
    memcpy(text + np + size, suffix, ns);
    spec_scenario s;
    ss_err err;
    ss_err_clear(&err);
    int rc = scn_load_text("scenarios/fuzz/fuzz.json", text, np + size + ns, NULL, 0, &s, &err);
    free(text);
    if (rc == SS_OK) {
        spec_scenario_fini(&s);
    } else {
        if (getenv("SS_FUZZ_SHOW")) fprintf(stderr, "%s: %s\n", err.where, err.msg);
        if ((rc != SS_E_INPUT && rc != SS_E_IO && rc != SS_E_OVERFLOW) || !err.msg[0])
            __builtin_trap();
    }
    return 0;
}

#endif
