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

/* path made absolute into abs[PATH_MAX]; errors name the option. */
static int find(const char *opt, const char *path, char *abs, const char *data_dir, ss_err *err)
{
    if (!realpath(path, abs))
        return ss_fail(err, SS_E_INPUT, opt, "cannot find \"%s\": %s", path, strerror(errno));
    if (strpbrk(abs, "\"\\") || strpbrk(data_dir, "\"\\"))
        return ss_fail(err, SS_E_INPUT, opt, "a path with a quote or a backslash: \"%s\"", abs);
    return SS_OK;
}

/* The sections FSDP2 as torchtitan runs it by default, or the torchtitan
 * config that gives them. */
static void training_text(char *buf, size_t cap, uint32_t gpus, const char *tt)
{
    if (tt) {
        snprintf(buf, cap, " \"trainer\": {\"torchtitan\": \"%s\"}}\n", tt);
        return;
    }
    snprintf(buf, cap,
             " \"parallel\": {\"dp\": %u},\n"
             " \"training\": {\"micro_batch\": 1, \"seq_len\": 4096, \"recompute\": \"none\"},\n"
             " \"precision\": {\"param\": \"fp32\", \"compute\": \"bf16\", \"grad\": \"fp32\", "
             "\"reduce\": \"fp32\", \"master\": \"none\", \"optimizer\": \"fp32\"},\n"
             " \"optimizer\": {\"type\": \"adamw\", \"impl\": \"foreach\"},\n"
             " \"sharding\": {\"strategy\": \"fsdp2\"}}\n", gpus);
}

int quick_scenario(const char *model, uint32_t gpus, const char *gpu, const char *torchtitan,
                   const char *data_dir, char **text, ss_err *err)
{
    size_t k = 0, n = sizeof machines / sizeof *machines;
    while (k < n && strcmp(machines[k].kind, gpu)) k++;
    if (k == n) return ss_fail(err, SS_E_INPUT, "--gpu", "expected h100, h200 or a100, found \"%s\"", gpu);
    bool hf = !strncmp(model, "hf:", 3);
    char abs[PATH_MAX], tt[PATH_MAX];
    int rc = find("--model", hf ? model + 3 : model, abs, data_dir, err);
    if (!rc && torchtitan) rc = find("--torchtitan", torchtitan, tt, data_dir, err);
    if (rc) return rc;
    uint32_t nodes = (gpus + 7) / 8;
    const char *topo = gpus <= 8 && strcmp(machines[k].node, machines[k].fabric) ? machines[k].node
                                                                                 : machines[k].fabric;
    char train[PATH_MAX + 1024];
    training_text(train, sizeof train, gpus, torchtitan ? tt : NULL);
    size_t cap = strlen(abs) + strlen(data_dir) + sizeof train + 2048;
    if (!(*text = malloc(cap))) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    snprintf(*text, cap,
             "{\"name\": \"%s on %u x %s%s%s (shardsim run --model%s)\",\n"
             " \"assumptions\": [%s],\n"
             " \"model\": %s%s%s,\n"
             " \"topology\": {\"file\": \"%s/%s\", \"nodes\": %u},\n%s",
             strrchr(abs, '/') + 1, gpus, gpu, torchtitan ? " with " : "",
             torchtitan ? strrchr(tt, '/') + 1 : "", torchtitan ? " --torchtitan" : "",
             torchtitan ? "\"the world is every GPU: torchrun on each node\""
                        : "\"FSDP2 as torchtitan runs it by default: fp32 parameters and "
                          "AdamW states, bf16 compute, fp32 reductions, one unit per block\", "
                          "\"micro-batches of 1 x 4096 tokens, no recompute (change with --set)\"",
             hf ? "{\"hf_config\": \"" : "\"", abs, hf ? "\"}" : "\"", data_dir, topo, nodes, train);
    return SS_OK;
}
