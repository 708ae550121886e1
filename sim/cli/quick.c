/* A scenario from the command line alone. quick.h states the contract. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "quick.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shipped machine of each kind: one node, and the multi-node fabric. */
static const struct {
    const char *kind, *node, *fabric;
} machines[] = {
    {"h100", "topologies/h100x8-hgx.json", "topologies/h100-ib-fattree.json"},
    {"h200", "topologies/h200x8-hgx.json", "topologies/h200-ib-fattree.json"},
    {"a100", "topologies/dgx-a100-80gb-hdr.json", "topologies/dgx-a100-80gb-hdr.json"},
};

int quick_scenario(const char *model, uint32_t gpus, const char *gpu, const char *data_dir,
                   char **text, ss_err *err)
{
    size_t k = 0, n = sizeof machines / sizeof *machines;
    while (k < n && strcmp(machines[k].kind, gpu)) k++;
    if (k == n) return ss_fail(err, SS_E_INPUT, "--gpu", "expected h100, h200 or a100, found \"%s\"", gpu);
    bool hf = !strncmp(model, "hf:", 3);
    char abs[PATH_MAX];
    if (!realpath(hf ? model + 3 : model, abs))
        return ss_fail(err, SS_E_INPUT, "--model", "cannot find \"%s\": %s", hf ? model + 3 : model,
                       strerror(errno));
    if (strpbrk(abs, "\"\\") || strpbrk(data_dir, "\"\\"))
        return ss_fail(err, SS_E_INPUT, "--model", "a path with a quote or a backslash: \"%s\"", abs);
    uint32_t nodes = (gpus + 7) / 8;
    const char *topo = gpus <= 8 && strcmp(machines[k].node, machines[k].fabric) ? machines[k].node
                                                                                 : machines[k].fabric;
    size_t cap = strlen(abs) + strlen(data_dir) + 2048;
    if (!(*text = malloc(cap))) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    snprintf(*text, cap,
             "{\"name\": \"%s on %u x %s (shardsim run --model)\",\n"
             " \"assumptions\": [\"FSDP2 as torchtitan runs it by default: fp32 parameters and "
             "AdamW states, bf16 compute, fp32 reductions, one unit per block\", \"micro-batches of "
             "1 x 4096 tokens, no recompute (change with --set)\"],\n"
             " \"model\": %s%s%s,\n"
             " \"topology\": {\"file\": \"%s/%s\", \"nodes\": %u},\n"
             " \"parallel\": {\"dp\": %u},\n"
             " \"training\": {\"micro_batch\": 1, \"seq_len\": 4096, \"recompute\": \"none\"},\n"
             " \"precision\": {\"param\": \"fp32\", \"compute\": \"bf16\", \"grad\": \"fp32\", "
             "\"reduce\": \"fp32\", \"master\": \"none\", \"optimizer\": \"fp32\"},\n"
             " \"optimizer\": {\"type\": \"adamw\", \"impl\": \"foreach\"},\n"
             " \"sharding\": {\"strategy\": \"fsdp2\"}}\n",
             strrchr(abs, '/') + 1, gpus, gpu, hf ? "{\"hf_config\": \"" : "\"", abs,
             hf ? "\"}" : "\"", data_dir, topo, nodes, gpus);
    return SS_OK;
}
