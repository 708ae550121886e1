#include "spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_NAME2_(id, name) name,
#define SPEC_NAME3_(id, name, size) name,
#define SPEC_SIZE3_(id, name, size) size,
const char *const spec_strategy_names[] = {SPEC_STRATEGIES(SPEC_NAME2_)};
const char *const spec_bwd_names[] = {SPEC_BWD_PREFETCH(SPEC_NAME2_)};
const char *const spec_wrap_names[] = {SPEC_WRAP(SPEC_NAME2_)};
const char *const spec_opt_names[] = {SPEC_OPTIMIZERS(SPEC_NAME2_)};
const char *const spec_impl_names[] = {SPEC_OPT_IMPL(SPEC_NAME2_)};
const char *const spec_block_names[] = {SPEC_BLOCK_TYPES(SPEC_NAME2_)};
const char *const spec_dtype_names[] = {SPEC_DTYPES(SPEC_NAME3_)};
const char *const spec_init_names[] = {SPEC_INIT_MODES(SPEC_NAME2_)};
const char *const spec_offload_names[] = {SPEC_OFFLOAD_DEVS(SPEC_NAME2_)};
const char *const spec_act_names[] = {SPEC_ACTIVATIONS(SPEC_NAME2_)};
const char *const spec_recompute_names[] = {SPEC_RECOMPUTE(SPEC_NAME2_)};
const char *const spec_kernels_names[] = {SPEC_KERNEL_SETS(SPEC_NAME2_)};
const char *const spec_attn_impl_names[] = {SPEC_ATTN_IMPLS(SPEC_NAME2_)};
const char *const spec_loss_names[] = {SPEC_LOSS_IMPLS(SPEC_NAME2_)};
const char *const spec_moe_gemm_names[] = {SPEC_MOE_GEMMS(SPEC_NAME2_)};
const char *const spec_fp8_names[] = {SPEC_FP8_RECIPES(SPEC_NAME2_)};
const char *const spec_vkind_names[] = {SPEC_VKINDS(SPEC_NAME2_)};
const char *const spec_lkind_names[] = {SPEC_LKINDS(SPEC_NAME2_)};
const char *const spec_fabric_names[] = {SPEC_FABRICS(SPEC_NAME2_)};
const char *const spec_net_algo_names[] = {SPEC_NET_ALGOS(SPEC_NAME2_)};
const char *const spec_net_proto_names[] = {SPEC_NET_PROTOS(SPEC_NAME2_)};
const char *const spec_pp_names[] = {SPEC_PP_SCHEDULES(SPEC_NAME2_)};
const char *const spec_cp_comm_names[] = {SPEC_CP_COMMS(SPEC_NAME2_)};
const char *const spec_mfsdp_names[] = {SPEC_MFSDP_SHARDS(SPEC_NAME2_)};
const char *const spec_offload_impl_names[] = {SPEC_OFFLOAD_IMPLS(SPEC_NAME2_)};
const char *const spec_order_names[] = {SPEC_ORDERS(SPEC_NAME2_)};
static const uint32_t dtype_sizes[] = {SPEC_DTYPES(SPEC_SIZE3_)};

uint32_t spec_dtype_size(spec_dtype d)
{
    return d < SPEC_NDT ? dtype_sizes[d] : 0;
}

bool spec_model_parallel(const spec_parallel *p)
{
    return p->tp > 1 || p->cp > 1 || p->pp > 1 || p->ep > 1 || p->etp > 1;
}

/* The PyTorch-native runtimes: not Megatron-core's nor DeepSpeed's (whose
 * layouts are Megatron-DeepSpeed's). */
static bool torch_native(const spec_scenario *s)
{
    return s->shard.strategy != SPEC_MEGATRON && s->shard.strategy != SPEC_DEEPSPEED;
}

bool spec_cp_torch(const spec_scenario *s) { return s->par.cp > 1 && torch_native(s); }

bool spec_tp_dtensor(const spec_scenario *s) { return s->par.tp > 1 && torch_native(s); }

void spec_scenario_fini(spec_scenario *s)
{
    if (!s) return;
    free(s->model.blocks);
    free(s->shard.wrap_modules);
    free(s->shard.raf_units);
    free(s->par.chunk_layers);
    s->par.chunk_layers = NULL;
    s->shard.raf_units = NULL;
    s->shard.nraf_units = 0;
    for (int k = 0; k < 2; k++) {
        free(s->shard.prefetch[k]);
        s->shard.prefetch[k] = NULL;
        s->shard.nprefetch[k] = 0;
    }
    free(s->expects);
    s->expects = NULL;
    s->model.blocks = NULL;
    s->shard.wrap_modules = NULL;
}

uint32_t spec_layer_chunk(const spec_parallel *p, uint64_t layers, uint64_t l)
{
    uint32_t chunks = p->pp * p->virtual_stages;
    if (!p->chunk_layers) return (uint32_t)(l / (layers / chunks));
    uint64_t end = 0;
    for (uint32_t k = 0; k < chunks; k++)
        if (l < (end += p->chunk_layers[k])) return k;
    return chunks - 1;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

spec_quantity spec_quantity_of(const char *key)
{
    if (ends_with(key, "_bytes")) return SPEC_Q_BYTES;
    if (ends_with(key, "_s")) return SPEC_Q_SECONDS;
    return SPEC_Q_NUMBER;
}

/* One item of a list: the index of its name, or -1. NCCL spells NVLS_TREE
 * "NVLSTree", which folds to "nvlstree", and the CollNet Direct that
 * "collnet" models "CollnetDirect" (CollnetChain is not modelled). */
static int set_item(const char *s, size_t len, bool proto)
{
    const char *const *names = proto ? spec_net_proto_names : spec_net_algo_names;
    int n = proto ? SPEC_NNET_PROTOS : SPEC_NNET_ALGOS;
    char w[32];
    if (len == 0 || len >= sizeof w) return -1;
    for (size_t i = 0; i < len; i++) w[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    w[len] = '\0';
    if (!proto && !strcmp(w, "nvlstree")) return SPEC_NALGO_NVLS_TREE;
    if (!proto && !strcmp(w, "collnetdirect")) return SPEC_NALGO_COLLNET;
    for (int i = 1; i < n; i++) /* 0 is "auto", no member of a set */
        if (!strcmp(w, names[i])) return i;
    return -1;
}

bool spec_net_set_parse(const char *s, bool proto, uint32_t *set)
{
    bool but = *s == '^';
    uint32_t bits = 0, all = ((1u << (proto ? SPEC_NNET_PROTOS : SPEC_NNET_ALGOS)) - 1) & ~1u;
    for (const char *p = s + but;;) {
        size_t len = strcspn(p, ",");
        int i = set_item(p, len, proto);
        if (i < 0) return false;
        bits |= 1u << i;
        if (!p[len]) break;
        p += len + 1;
    }
    *set = but ? all & ~bits : bits;
    return *set != 0;
}

void spec_net_set_format(uint32_t set, bool proto, char *buf, size_t n)
{
    const char *const *names = proto ? spec_net_proto_names : spec_net_algo_names;
    int k = proto ? SPEC_NNET_PROTOS : SPEC_NNET_ALGOS;
    size_t at = 0;
    if (n) buf[0] = '\0';
    for (int i = 1; i < k && at < n; i++)
        if (set >> i & 1) {
            int w = snprintf(buf + at, n - at, "%s%s", at ? "," : "", names[i]);
            if (w < 0) return;
            at += (size_t)w;
        }
}

bool spec_nccl_parse(const char *s, uint32_t *code)
{
    unsigned long v[3] = {0, 0, 0};
    int n = 0;
    const char *p = s;
    while (n < 3) {
        if (*p < '0' || *p > '9') return false;
        char *end;
        v[n++] = strtoul(p, &end, 10);
        p = end;
        if (*p != '.') break;
        p++;
    }
    if (*p) return false;
    if (n == 1) { /* a code: 22703 */
        if (v[0] < 20000 || v[0] > 99999) return false;
        *code = (uint32_t)v[0];
        return true;
    }
    if (v[0] < 2 || v[0] > 9 || v[1] > 99 || v[2] > 99) return false;
    *code = (uint32_t)(v[0] * 10000 + v[1] * 100 + v[2]);
    return true;
}

void spec_nccl_format(uint32_t code, char *out, size_t len)
{
    snprintf(out, len, "%u.%u.%u", code / 10000, code / 100 % 100, code % 100);
}

bool spec_arch_sliding(const spec_arch *a, uint64_t l)
{
    return a->window && l >= a->window_first &&
           (l - a->window_first) % a->window_period < a->window_count;
}
