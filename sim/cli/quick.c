/* A scenario from the command line alone. quick.h states the contract. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "quick.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../io/json.h"
#include "../io/ttconfig.h"

/* The shipped machine of each kind: one node of per_node GPUs, and the
 * multi-node fabric (NULL: none shipped, one node at most). A GB200 NVL72
 * rack is one node of 72 (its NVLink domain), racks on the fabric. */
static const struct {
    const char *kind, *node, *fabric;
    uint32_t per_node;
} machines[] = {
    {"h100", "topologies/h100x8-hgx.json", "topologies/h100-ib-fattree.json", 8},
    {"h200", "topologies/h200x8-hgx.json", "topologies/h200-ib-fattree.json", 8},
    {"a100", "topologies/dgx-a100-80gb-hdr.json", "topologies/dgx-a100-80gb-hdr.json", 8},
    {"b200", "topologies/dgx-b200.json", "topologies/b200-ib-fattree.json", 8},
    {"gb200", "topologies/gb200-nvl72.json", "topologies/gb200-nvl72.json", 72},
    {"h100-pcie", "topologies/h100-pcie8-nvlink-bridge.json", NULL, 8},
};
#define NMACHINES (sizeof machines / sizeof *machines)

/* "h100, h200, ... or h100-pcie" into buf. */
static const char *kinds(char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t k = 0; k < NMACHINES && o < cap; k++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k == 0 ? "" : k + 1 == NMACHINES ? " or " : ", ",
                              machines[k].kind);
    return buf;
}

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
        snprintf(buf, cap, " \"trainer\": {\"torchtitan\": \"%s\", \"gpus\": %u}}\n", tt, gpus);
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

/* No --model: the shipped model of the config's [model] name and flavor,
 * under data_dir, into path[PATH_MAX]. */
static int model_of(const char *tt, const char *data_dir, char *path, ss_err *err)
{
    js_doc d = {0};
    js_node m;
    const char *name = "llama3", *flavor = "debugmodel", *rel = NULL; /* torchtitan's defaults */
    snprintf(d.file, sizeof d.file, "%.1000s", tt);
    int rc = ttc_read(tt, &d.root, err);
    if (!rc && js_get(js_root(&d), "model", &m) && js_is_obj(m)) {
        rc = js_str(m, "name", false, "llama3", &name, err);
        if (!rc) rc = js_str(m, "flavor", false, "debugmodel", &flavor, err);
    }
    if (!rc && !(rel = ttc_shipped_model(name, flavor)))
        rc = ss_fail(err, SS_E_INPUT, "--torchtitan", "[model] name \"%s\", flavor \"%s\" has no "
                     "shipped model (llama3 8B, 70B and 405B do): give --model FILE", name, flavor);
    if (!rc) snprintf(path, PATH_MAX, "%s/%s", data_dir, rel);
    js_doc_fini(&d);
    return rc;
}

int quick_scenario(const char *model, uint32_t gpus, const char *gpu, const char *torchtitan,
                   const char *data_dir, char **text, ss_err *err)
{
    size_t k = 0;
    char names[128];
    while (k < NMACHINES && strcmp(machines[k].kind, gpu)) k++;
    if (k == NMACHINES)
        return ss_fail(err, SS_E_INPUT, "--gpu", "expected %s, found \"%s\"",
                       kinds(names, sizeof names), gpu);
    uint32_t per = machines[k].per_node;
    if (!machines[k].fabric && gpus > per)
        return ss_fail(err, SS_E_INPUT, "--gpus", "%u GPUs of %s: its shipped machine is one server of "
                       "%u (%s); for more, write a scenario whose topology joins such servers",
                       gpus, gpu, per, machines[k].node);
    char abs[PATH_MAX], tt[PATH_MAX], shipped[PATH_MAX];
    int rc = torchtitan ? find("--torchtitan", torchtitan, tt, data_dir, err) : SS_OK;
    if (!rc && !model) rc = model_of(tt, data_dir, shipped, err);
    if (rc) return rc;
    if (!model) model = shipped;
    bool hf = !strncmp(model, "hf:", 3);
    if ((rc = find("--model", hf ? model + 3 : model, abs, data_dir, err))) return rc;
    uint32_t nodes = (gpus + per - 1) / per;
    const char *fab = machines[k].fabric ? machines[k].fabric : machines[k].node;
    const char *topo = gpus <= per && strcmp(machines[k].node, fab) ? machines[k].node : fab;
    char train[PATH_MAX + 1024];
    training_text(train, sizeof train, gpus, torchtitan ? tt : NULL);
    size_t cap = strlen(abs) + strlen(data_dir) + sizeof train + 2048;
    if (!(*text = malloc(cap))) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    snprintf(*text, cap,
             "{\"name\": \"%s on %u x %s%s%s (shardsim run%s%s)\",\n"
             " \"assumptions\": [%s],\n"
             " \"model\": %s%s%s,\n"
             " \"topology\": {\"file\": \"%s/%s\", \"nodes\": %u},\n%s",
             strrchr(abs, '/') + 1, gpus, gpu, torchtitan ? " with " : "",
             torchtitan ? strrchr(tt, '/') + 1 : "", model != shipped ? " --model" : "",
             torchtitan ? " --torchtitan" : "",
             torchtitan ? "\"the world is every GPU: torchrun on each node\""
                        : "\"FSDP2 as torchtitan runs it by default: fp32 parameters and "
                          "AdamW states, bf16 compute, fp32 reductions, one unit per block\", "
                          "\"micro-batches of 1 x 4096 tokens, no recompute (change with --set)\"",
             hf ? "{\"hf_config\": \"" : "\"", abs, hf ? "\"}" : "\"", data_dir, topo, nodes, train);
    return SS_OK;
}
