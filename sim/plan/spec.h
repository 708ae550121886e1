/* spec.h - what a scenario says, as plain data.
 *
 * The scenario loader (io/scenario.c) fills these structs from JSON files;
 * everything downstream (plan, schedulers, network, reports) reads them and
 * never sees JSON. Every enum that is also a scenario value comes from one
 * X-macro list here, so the parser, the summary and the enum cannot drift.
 *
 * Ownership: spec_scenario owns its arrays; spec_scenario_fini frees them.
 * Strings are fixed-size buffers so a spec can be copied by value for sweeps.
 */
#ifndef SPEC_H
#define SPEC_H

#include <stdbool.h>

#include "../core/ss.h"

#define SPEC_NAME_MAX 128
#define SPEC_TEXT_MAX 1024

/* Sharding strategies a scenario can run (sharding.strategy). */
#define SPEC_STRATEGIES(X)                                                     \
    X(DDP, "ddp")                                                              \
    X(ZERO1, "zero1")                                                          \
    X(SHARD_GRAD_OP, "shard_grad_op")                                          \
    X(FULL_SHARD, "full_shard")                                                \
    X(NO_SHARD, "no_shard")                                                    \
    X(HYBRID_SHARD, "hybrid_shard")                                            \
    X(HYBRID_SHARD_ZERO2, "hybrid_shard_zero2")                                \
    X(FSDP2, "fsdp2")                                                          \
    X(DEEPSPEED, "deepspeed")                                                  \
    X(MEGATRON, "megatron")

/* FSDP1 backward_prefetch. */
#define SPEC_BWD_PREFETCH(X)                                                   \
    X(PRE, "backward_pre")                                                     \
    X(POST, "backward_post")                                                   \
    X(NONE, "none")

/* Wrap policy (sharding.wrap.policy). */
#define SPEC_WRAP(X)                                                           \
    X(PER_BLOCK, "per_block")                                                  \
    X(MODULES, "modules")                                                      \
    X(SIZE, "size")

#define SPEC_OPTIMIZERS(X)                                                     \
    X(ADAMW, "adamw")                                                          \
    X(ADAM, "adam")                                                            \
    X(SGD, "sgd")

/* torch.optim implementation: foreach allocates one temporary per parameter
 * list, for_loop one parameter at a time, fused none. */
#define SPEC_OPT_IMPL(X)                                                       \
    X(FOREACH, "foreach")                                                      \
    X(FOR_LOOP, "for_loop")                                                    \
    X(FUSED, "fused")

#define SPEC_DTYPES(X)                                                         \
    X(FP32, "fp32", 4)                                                         \
    X(FP16, "fp16", 2)                                                         \
    X(BF16, "bf16", 2)                                                         \
    X(FP8, "fp8", 1)

#define SPEC_BLOCK_TYPES(X) X(LINEAR, "linear")

/* How the model reaches the devices before the first step (init.mode):
 * built whole on every device then wrapped/sharded, or materialized one
 * wrap unit at a time (meta device + param_init_fn, sync_module_states). */
#define SPEC_INIT_MODES(X)                                                     \
    X(FULL, "full")                                                            \
    X(PER_UNIT, "per_unit")

#define SPEC_ENUM2_(id, name) SPEC_##id,
#define SPEC_ENUM3_(id, name, size) SPEC_DT_##id,
typedef enum { SPEC_STRATEGIES(SPEC_ENUM2_) SPEC_NSTRATEGIES } spec_strategy;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_BWD_##id,
typedef enum { SPEC_BWD_PREFETCH(SPEC_ENUM2_) SPEC_NBWD } spec_bwd_prefetch;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_WRAP_##id,
typedef enum { SPEC_WRAP(SPEC_ENUM2_) SPEC_NWRAP } spec_wrap;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_OPT_##id,
typedef enum { SPEC_OPTIMIZERS(SPEC_ENUM2_) SPEC_NOPT } spec_optimizer;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_IMPL_##id,
typedef enum { SPEC_OPT_IMPL(SPEC_ENUM2_) SPEC_NIMPL } spec_opt_impl;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_BLK_##id,
typedef enum { SPEC_BLOCK_TYPES(SPEC_ENUM2_) SPEC_NBLK } spec_block_type;
#undef SPEC_ENUM2_
typedef enum { SPEC_DTYPES(SPEC_ENUM3_) SPEC_NDT, SPEC_DT_NONE = SPEC_NDT } spec_dtype;
#define SPEC_ENUM2_(id, name) SPEC_INIT_##id,
typedef enum { SPEC_INIT_MODES(SPEC_ENUM2_) SPEC_NINIT } spec_init_mode;
#undef SPEC_ENUM2_
#undef SPEC_ENUM3_

extern const char *const spec_strategy_names[SPEC_NSTRATEGIES];
extern const char *const spec_bwd_names[SPEC_NBWD];
extern const char *const spec_wrap_names[SPEC_NWRAP];
extern const char *const spec_opt_names[SPEC_NOPT];
extern const char *const spec_impl_names[SPEC_NIMPL];
extern const char *const spec_block_names[SPEC_NBLK];
extern const char *const spec_dtype_names[SPEC_NDT];
extern const char *const spec_init_names[SPEC_NINIT];
/* Bytes per element; 0 for SPEC_DT_NONE. */
uint32_t spec_dtype_size(spec_dtype d);

/* One block of the model, after "repeat" is expanded. */
typedef struct spec_block {
    char name[SPEC_NAME_MAX];
    spec_block_type type;
    uint64_t in, out; /* linear: features */
    bool bias;
} spec_block;

/* The MLP's activation (architecture.activation). Gated (three matrices:
 * gate, up, down; the activation of the gate times the up projection):
 * swiglu (SiLU, Llama), geglu (GELU, Gemma). Plain (two matrices): gelu
 * (GPT, MPT, BLOOM), relu (OPT), squared_relu (relu(x)^2: Primer,
 * Nemotron-4). */
#define SPEC_ACTIVATIONS(X)                                                    \
    X(SWIGLU, "swiglu")                                                        \
    X(GELU, "gelu")                                                            \
    X(GEGLU, "geglu")                                                          \
    X(RELU, "relu")                                                            \
    X(SQUARED_RELU, "squared_relu")
#define SPEC_ENUM2_(id, name) SPEC_ACT_##id,
typedef enum { SPEC_ACTIVATIONS(SPEC_ENUM2_) SPEC_NACT } spec_activation;
#undef SPEC_ENUM2_
extern const char *const spec_act_names[SPEC_NACT];

/* The MLP's weight matrices: 3 for a gated activation, else 2. */
static inline uint64_t spec_act_mats(spec_activation a)
{
    return a == SPEC_ACT_SWIGLU || a == SPEC_ACT_GEGLU ? 3 : 2;
}

/* A transformer described by its architecture (model "architecture"): the
 * planner expands it into embedding, per-layer attention and MLP (or MoE)
 * blocks, final norm and output head. head_dim 0 means hidden / heads.
 * MLA (DeepSeek's multi-head latent attention) when kv_lora_rank > 0. */
typedef struct spec_arch {
    uint64_t layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab;
    uint64_t max_positions; /* learned position embeddings; 0 = rotary */
    spec_activation act;
    bool tied_embeddings, bias, layernorm; /* layernorm has a bias; rmsnorm not */
    bool qkv_bias;          /* biases on q, k, v only (Qwen2), when bias is false */
    bool qk_norm;           /* RMSNorm on each query and key head (Qwen3); not with MLA */
    /* MoE (experts > 0) */
    uint64_t experts, top_k, shared_experts, expert_ffn_hidden, dense_layers;
    double capacity_factor;
    /* MLA */
    uint64_t q_lora_rank, kv_lora_rank, qk_rope_dim, qk_nope_dim, v_head_dim;
    /* Sliding-window attention (window > 0): layer l attends to the last
     * `window` tokens when l >= window_first and (l - window_first) %
     * window_period < window_count (every layer: 0, 1, 1; Gemma 3's five
     * local to one global: 0, 6, 5), else to the whole causal prefix. */
    uint64_t window, window_first, window_period, window_count;
} spec_arch;

/* Whether layer l of a attends to a sliding window. */
bool spec_arch_sliding(const spec_arch *a, uint64_t l);

typedef struct spec_model {
    char name[SPEC_NAME_MAX];
    spec_block *blocks; /* linear models */
    uint32_t nblocks;
    bool is_arch;       /* described by arch instead of blocks */
    spec_arch arch;
} spec_model;

/* Activation recomputation (training.recompute). */
#define SPEC_RECOMPUTE(X)                                                      \
    X(NONE, "none")                                                            \
    X(SELECTIVE, "selective")                                                  \
    X(SELECTIVE_OP, "selective_op")                                            \
    X(FULL, "full")
#define SPEC_ENUM2_(id, name) SPEC_RECOMP_##id,
typedef enum { SPEC_RECOMPUTE(SPEC_ENUM2_) SPEC_NRECOMP } spec_recompute;
#undef SPEC_ENUM2_
extern const char *const spec_recompute_names[SPEC_NRECOMP];

/* The elementwise kernels a framework launches around the GEMMs
 * (training.kernels), which decide the bytes and kernel count of norms,
 * rotary embedding and the gated activation (plan_arch.c):
 *   eager     PyTorch eager modules as torchtitan and Hugging Face write
 *             them: RMSNorm as fp32 composite ops, complex rotary in fp32,
 *             SwiGLU as silu then mul;
 *   fused     one fused kernel each (Megatron-core, Transformer Engine,
 *             Apex, Megatron-DeepSpeed);
 *   compiled  torch.compile's fused kernels: costed as fused;
 *   liger     Liger-Kernel's Triton kernels in Hugging Face models
 *             (RMSNorm, RoPE, SwiGLU; AutoLigerKernelForCausalLM): costed as
 *             fused, but its SwiGLU backward writes its gradients over the
 *             inputs it saved (ops/swiglu.py), so the MLP's backward makes
 *             one intermediate gradient, not two.
 * AUTO resolves at load: fused for strategy megatron and for deepspeed
 * inside a tp or pp layout (Megatron-DeepSpeed), eager otherwise. */
#define SPEC_KERNEL_SETS(X)                                                    \
    X(AUTO, "auto")                                                            \
    X(EAGER, "eager")                                                          \
    X(FUSED, "fused")                                                          \
    X(COMPILED, "compiled")                                                    \
    X(LIGER, "liger")
#define SPEC_ENUM2_(id, name) SPEC_KERNELS_##id,
typedef enum { SPEC_KERNEL_SETS(SPEC_ENUM2_) SPEC_NKERNELS } spec_kernels;
#undef SPEC_ENUM2_
extern const char *const spec_kernels_names[SPEC_NKERNELS];

/* The loss kernels (training.loss): cross-entropy over the logits.
 *   eager           PyTorch's F.cross_entropy(logits.float(), labels)
 *                   (torchtitan, Hugging Face, llm-foundry): the upcast,
 *                   log_softmax, nll_loss and their backward, each its own
 *                   kernel over the logits;
 *   vocab_parallel  Megatron-core's unfused vocab-parallel cross-entropy
 *                   (tensor_parallel/cross_entropy.py; Megatron-DeepSpeed
 *                   alike): upcast, max, subtract, exp, sum and divide in
 *                   separate passes over the fp32 logits, the softmax kept
 *                   and scaled in place in backward;
 *   fused           one kernel each way (Transformer Engine's or Liger's
 *                   fused cross-entropy), the gradient written into the
 *                   logits;
 *   compiled        torch.compile's (inductor's) cross-entropy over the
 *                   logits cast to fp32 (torchtitan from 2025-04): one
 *                   reduction kernel forward, one pointwise kernel
 *                   backward; the compiled graph keeps the logits and
 *                   writes their gradient apart;
 *   fused_linear    Liger-Kernel's FusedLinearCrossEntropy: the output
 *                   head and the loss in chunks of tokens, all three of the
 *                   head's GEMMs and the gradients in the forward, the
 *                   logits never whole.
 * AUTO resolves at load: vocab_parallel for fused kernels (Megatron-core's
 * default, cross_entropy_loss_fusion off), eager otherwise (torchtitan's
 * torch.compile covers the transformer blocks, not the loss). */
#define SPEC_LOSS_IMPLS(X)                                                     \
    X(AUTO, "auto")                                                            \
    X(EAGER, "eager")                                                          \
    X(VOCAB_PARALLEL, "vocab_parallel")                                        \
    X(FUSED, "fused")                                                          \
    X(FUSED_LINEAR, "fused_linear")                                            \
    X(COMPILED, "compiled")
#define SPEC_ENUM2_(id, name) SPEC_LOSS_##id,
typedef enum { SPEC_LOSS_IMPLS(SPEC_ENUM2_) SPEC_NLOSS } spec_loss;
#undef SPEC_ENUM2_
extern const char *const spec_loss_names[SPEC_NLOSS];

/* The attention core's implementation (training.attention):
 *   flash    FlashAttention-2 (PyTorch SDPA's flash backend, flash-attn):
 *            tiles in on-chip memory, the causal half skipped, no s x s
 *            tensor kept; the device's "attention" table;
 *   unfused  before FlashAttention (Megatron-LM and Megatron-DeepSpeed of
 *            2021-22): Q K^T and P V as batched GEMMs over every score, a
 *            fused scale-mask-softmax kernel between them, the
 *            probabilities kept for backward;
 *   cudnn    cuDNN's fused attention (Transformer Engine's FusedAttention,
 *            PyTorch SDPA's cuDNN backend): as flash, at the device's
 *            "attention_cudnn" table;
 *   flash3   FlashAttention-3 (Hopper): as flash, at "attention_flash3";
 *   triton   llm-foundry's Triton FlashAttention kernel (MPT's attn_impl
 *            "triton"): as flash, at the "attention" table's rates times
 *            the device's attention_triton fraction.
 * AUTO resolves at load: cudnn for Megatron-core with fused kernels on a
 * device with a cuDNN table (Transformer Engine prefers FusedAttention on
 * sm90 from v1.2), flash otherwise. */
#define SPEC_ATTN_IMPLS(X)                                                     \
    X(AUTO, "auto")                                                            \
    X(FLASH, "flash")                                                          \
    X(UNFUSED, "unfused")                                                      \
    X(CUDNN, "cudnn")                                                          \
    X(FLASH3, "flash3")                                                        \
    X(TRITON, "triton")
#define SPEC_ENUM2_(id, name) SPEC_ATTN_##id,
typedef enum { SPEC_ATTN_IMPLS(SPEC_ENUM2_) SPEC_NATTN_IMPLS } spec_attn_impl;
#undef SPEC_ENUM2_
extern const char *const spec_attn_impl_names[SPEC_NATTN_IMPLS];

/* How a rank's MoE experts run their GEMMs (training.moe_gemm):
 *   grouped     one grouped GEMM per projection for all the rank's experts
 *               (Megatron-core's --moe-grouped-gemm, torchtitan's grouped
 *               mm): one kernel's fixed time;
 *   per_expert  one GEMM per expert and projection (a loop over expert
 *               modules: Megatron's SequentialMLP, Hugging Face's eager
 *               MoE): the fixed time once per expert.
 * The same FLOPs at the same rate either way; they differ by the device's
 * gemm_floor per kernel. */
#define SPEC_MOE_GEMMS(X)                                                      \
    X(GROUPED, "grouped")                                                      \
    X(PER_EXPERT, "per_expert")
#define SPEC_ENUM2_(id, name) SPEC_MOE_GEMM_##id,
typedef enum { SPEC_MOE_GEMMS(SPEC_ENUM2_) SPEC_NMOE_GEMMS } spec_moe_gemm;
#undef SPEC_ENUM2_
extern const char *const spec_moe_gemm_names[SPEC_NMOE_GEMMS];

/* A measured GEMM efficiency curve (a calibration profile's "gemm"):
 * eff(d) = e_max d^p / (d^p + d_half^p) of peak_flops, d the geometric mean
 * of m, n, k. Replaces the device's curve for that dtype when present. */
typedef struct spec_gemm_cal {
    bool present;
    double peak_flops, e_max, d_half, p;
} spec_gemm_cal;

/* Measured rates of the fused attention kernel (FlashAttention) on 16-bit
 * inputs, by sequence length: forward and backward FLOP/s, counted as the
 * kernel's own benchmarks count them, and the non-causal forward's (the
 * causal one where the table gives none: no shortfall to shrink). Points in increasing seq; the planner
 * interpolates linearly in log(seq), holds the first values below the
 * table and, past its end, lets the causal kernel's shortfall against the
 * non-causal one keep shrinking as the table's last doubling shrank it
 * (plan_attn_rate). */
#define SPEC_ATTN_MAX 16
typedef struct spec_attn_point {
    double seq, fwd_flops, bwd_flops, full_flops;
} spec_attn_point;

/* One implementation's table (spec_device.attn, attn_cudnn, attn_flash3). */
typedef struct spec_attn_table {
    spec_attn_point pt[SPEC_ATTN_MAX];
    uint32_t n; /* 0: the device file has none */
} spec_attn_table;

typedef struct spec_device {
    char name[SPEC_NAME_MAX];
    /* "attention" (FlashAttention-2; none: the core runs at the GEMM
     * curve), "attention_cudnn", "attention_flash3" */
    spec_attn_table attn, attn_cudnn, attn_flash3;
    spec_gemm_cal gemm_cal[SPEC_NDT];
    uint64_t hbm_bytes;
    double hbm_bw_Bps;         /* bytes per second */
    double peak_flops[SPEC_NDT]; /* dense FLOP/s per dtype, 0 = unsupported */
    double gemm_efficiency;    /* fraction of peak a large GEMM reaches */
    double gemm_efficiency_fp8; /* the same for fp8 GEMMs (default: gemm_efficiency) */
    double gemm_half_dim;      /* GEMM size (geometric mean of m, n, k) at half that */
    double mem_efficiency;     /* fraction of HBM bandwidth a stream reaches */
    ss_ns launch_ns;           /* host time to launch one kernel (a C call, as nccl-tests') */
    ss_ns op_host_ns;          /* host time to issue one framework op, its launch included
                                  (the device file's op_host.us); 0: launch_ns */
    double attn_triton_fraction; /* llm-foundry's Triton kernel / FlashAttention-2 (the
                                    device file's attention_triton.fraction); 0: none */
    ss_ns kernel_min_ns;       /* shortest kernel on the device */
    ss_ns gemm_floor_ns;       /* fixed time every GEMM kernel adds to its FLOPs' (0: none) */
    double overlap_slowdown;   /* compute slowdown while a collective runs (eng.h) */
    uint64_t cuda_total_bytes; /* the total CUDA reports (cudaDeviceProp::totalGlobalMem); 0: not given */
    uint64_t process_reserve_bytes; /* CUDA context and NCCL buffers of one training process */
    uint32_t cc; /* CUDA compute capability x 10 (Hopper 9.0: 90); 0: not given */
} spec_device;

/* Flat network (a topology without "node"): per level, ring alpha-beta with
 * a bus bandwidth. */
typedef struct spec_link_level {
    double bus_bw_Bps; /* nccl-tests busbw a large ring reaches */
    ss_ns latency_ns;  /* per ring step */
} spec_link_level;

/* Topology graph (a topology with "node"): one node's vertices and links,
 * repeated per node, and the fabric that joins the nodes' NICs. The GPUs are
 * vertex group 0 ("gpu", gpus_per_node members). net/topo.h builds the graph. */
#define SPEC_VKINDS(X)                                                         \
    X(GPU, "gpu")                                                              \
    X(NVSWITCH, "nvswitch")                                                    \
    X(PCIE_SWITCH, "pcie_switch")                                              \
    X(CPU, "cpu")                                                              \
    X(NIC, "nic")
#define SPEC_LKINDS(X)                                                         \
    X(NVLINK, "nvlink")                                                        \
    X(PCIE, "pcie")                                                            \
    X(XBUS, "xbus")                                                            \
    X(NET, "net")
#define SPEC_FABRICS(X)                                                        \
    X(NONE, "none")                                                            \
    X(STAR, "star")                                                            \
    X(FAT_TREE, "fat_tree")                                                    \
    X(TORUS2D, "torus2d")
#define SPEC_ENUM2_(id, name) SPEC_V_##id,
typedef enum { SPEC_VKINDS(SPEC_ENUM2_) SPEC_NVKINDS } spec_vkind;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_L_##id,
typedef enum { SPEC_LKINDS(SPEC_ENUM2_) SPEC_NLKINDS } spec_lkind;
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_FAB_##id,
typedef enum { SPEC_FABRICS(SPEC_ENUM2_) SPEC_NFABRICS } spec_fabric_kind;
#undef SPEC_ENUM2_
extern const char *const spec_vkind_names[SPEC_NVKINDS];
extern const char *const spec_lkind_names[SPEC_NLKINDS];
extern const char *const spec_fabric_names[SPEC_NFABRICS];

#define SPEC_TOPO_VGROUPS 16 /* vertex groups in one node, the GPUs included */
#define SPEC_TOPO_LGROUPS 32 /* link groups in one node */
#define SPEC_TOPO_VMAX 256   /* vertices in one node */

typedef struct spec_vgroup {
    char name[32];
    spec_vkind kind;
    uint32_t count;
    bool nvls; /* nvswitch: can reduce and multicast (NVLink SHARP) */
    /* nvswitch: the NVLS all-reduce's bus bandwidth per GPU the switch
     * sustains whatever the group's size, bytes/s; 0: none but the links'
     * (topology "nvls_GBps"; see docs/TOPOLOGY.md) */
    double nvls_Bps;
} spec_vgroup;

/* Links between two vertex groups: "block" joins member i of the larger
 * group to member i * small / large of the smaller (one to one when equal,
 * all to one when one side has one member); "mesh" joins every pair of one
 * group. from_i / to_i >= 0 pick a single member. Bandwidth is per
 * direction; efficiency is the fraction of it a long transfer reaches. */
typedef struct spec_lgroup {
    uint8_t from, to;
    int32_t from_i, to_i;
    bool mesh;
    spec_lkind kind;
    double Bps, efficiency;
    ss_ns latency_ns;
} spec_lgroup;

/* The fabric between nodes, attached to every NIC. fat_tree: NIC -> leaf
 * (one per rail and pod when rail_optimized, else one per pod) -> core
 * (the spines, as one non-blocking stage whose leaf uplinks carry
 * nodes_per_leaf * NICs-per-leaf-per-node * Bps / oversubscription).
 * torus2d: node (x, y) joined to its four neighbours through NIC 0,
 * dimension-order routes. star: one switch. */
typedef struct spec_fabric {
    spec_fabric_kind kind;
    double Bps, efficiency; /* one NIC port or torus link, per direction */
    ss_ns latency_ns;       /* per switch or torus hop */
    uint32_t nodes_per_leaf;
    double oversubscription;
    bool rail_optimized;
    /* The switches reduce in the network ("sharp": NVIDIA SHARP, which
     * NCCL's CollNet algorithms use when enabled: spec_topology.collnet) */
    bool sharp;
    uint32_t dims[2];
    /* What NCCL's network steps cost on this fabric (net/algo.h, "Network
     * steps"): the latency its net plugin reports, which NCCL's tuner adds
     * to every network step (twice with Simple) when it chooses, 0 where
     * the plugin reports none (InfiniBand); and a step's own latency, LL and
     * LL128 / Simple, in place of NCCL's InfiniBand constants (0: those
     * constants). */
    double reported_us, step_us, step_simple_us;
} spec_fabric;

typedef struct spec_topology {
    char name[SPEC_NAME_MAX];
    uint32_t nodes, gpus_per_node;
    /* The job's ranks on each node ("ranks_per_node"; 0: gpus_per_node):
     * they fill each node's first ranks_per_node GPUs, as a scheduler's
     * segment placement does (spec_topo_gpu). */
    uint32_t ranks_per_node;
    spec_link_level intra, inter; /* flat form */
    bool graph;                   /* graph form: the fields below */
    uint32_t nvgroups, nlgroups;
    spec_vgroup vg[SPEC_TOPO_VGROUPS];
    spec_lgroup lg[SPEC_TOPO_LGROUPS];
    spec_fabric fabric;
    spec_device device;
    uint32_t nccl; /* NCCL version (SPEC_NCCL_*); 0: SPEC_NCCL_DEFAULT */
    /* The platform's NCCL_ALGO / NCCL_PROTO ("nccl_algo", "nccl_proto":
     * lists a vendor's NCCL profile exports, spec_net_set_parse); the
     * tuner's choice where a scenario or coll names none; 0: every one */
    uint32_t nccl_algos, nccl_protos;
    /* One CTA's bus bandwidth on a Simple-protocol ring across nodes
     * ("nccl_ring_cta_GBps", bytes/s); 0: the architecture's (net/algo.h,
     * "Ring CTAs across nodes") */
    double ring_cta_Bps;
    uint32_t min_ctas; /* NCCL_MIN_CTAS the collectives run with; 0: NCCL's default */
    /* NCCL_COLLNET_ENABLE: the tuner may run CollNet on a fabric.sharp
     * fabric (a scenario's network.collnet, coll's --collnet) */
    bool collnet;
} spec_topology;

/* The ranks a node holds, and the GPU world rank r runs on: local GPU
 * r % rpn of node r / rpn on nodes of gpn GPUs (the identity when the job
 * fills whole nodes). */
static inline uint32_t spec_topo_rpn(const spec_topology *t)
{
    return t->ranks_per_node ? t->ranks_per_node : t->gpus_per_node;
}
static inline uint32_t spec_place_gpu(uint32_t gpn, uint32_t rpn, uint32_t r)
{
    return rpn == gpn || !rpn ? r : (r / rpn) * gpn + r % rpn;
}
static inline uint32_t spec_topo_gpu(const spec_topology *t, uint32_t r)
{
    return spec_place_gpu(t->gpus_per_node, spec_topo_rpn(t), r);
}

/* NCCL versions as NCCL_VERSION_CODE has them: major * 10000 + minor * 100
 * + patch (2.29.7 is 22907). The version decides which algorithms the
 * tuner has (net/algo.h, "NCCL versions"). The default is the NCCL that
 * PyTorch 2.12's CUDA 13 wheels bring (nvidia-nccl-cu13 2.29.7, as
 * NVIDIA/TensorRT-LLM#17160 records). */
#define SPEC_NCCL_DEFAULT 22907
/* "2.27", "2.27.3" or a code ("22703") into a version code; false for
 * anything else (versions before 2.0 included). */
bool spec_nccl_parse(const char *s, uint32_t *code);
/* "2.27.3" into out (at least 16 bytes). */
void spec_nccl_format(uint32_t code, char *out, size_t len);

/* Collective algorithm and protocol a scenario may force (network.algo,
 * network.proto); net/algo.h builds its enums from these lists. */
#define SPEC_NET_ALGOS(X)                                                      \
    X(AUTO, "auto")                                                            \
    X(RING, "ring")                                                            \
    X(TREE, "tree")                                                            \
    X(NVLS, "nvls")                                                            \
    X(NVLS_TREE, "nvls_tree")                                                  \
    X(HIER, "hierarchical")                                                    \
    X(DIRECT, "direct")                                                        \
    X(PAT, "pat")                                                              \
    X(COLLNET, "collnet")
#define SPEC_NET_PROTOS(X)                                                     \
    X(AUTO, "auto")                                                            \
    X(LL, "ll")                                                                \
    X(LL128, "ll128")                                                          \
    X(SIMPLE, "simple")
#define SPEC_ENUM2_(id, name) SPEC_NALGO_##id,
enum { SPEC_NET_ALGOS(SPEC_ENUM2_) SPEC_NNET_ALGOS };
#undef SPEC_ENUM2_
#define SPEC_ENUM2_(id, name) SPEC_NPROTO_##id,
enum { SPEC_NET_PROTOS(SPEC_ENUM2_) SPEC_NNET_PROTOS };
#undef SPEC_ENUM2_
extern const char *const spec_net_algo_names[SPEC_NNET_ALGOS];
extern const char *const spec_net_proto_names[SPEC_NNET_PROTOS];
/* NCCL_ALGO and NCCL_PROTO lists as sets, bit 1u << SPEC_NALGO_* (or
 * SPEC_NPROTO_*): "ring,tree" the listed ones, "^nvls,nvls_tree" all but
 * those (NCCL's syntax); the names above or NCCL's spellings (Ring,
 * NVLSTree, Simple, ...), any case; "auto" is no member. spec_net_set_parse
 * is false on an unknown name, an empty item or an empty set;
 * spec_net_set_format writes a set back as a list. */
bool spec_net_set_parse(const char *s, bool proto, uint32_t *set);
void spec_net_set_format(uint32_t set, bool proto, char *buf, size_t n);

/* Float8 training (precision.compute "fp8"): how the linear layers scale
 * their fp8 inputs (precision.fp8.recipe): torchao's dynamic tensorwise or
 * rowwise scaling (an amax pass, then the cast), or Transformer Engine's
 * delayed scaling (the cast kernel records the amax). */
#define SPEC_FP8_RECIPES(X)                                                    \
    X(TENSORWISE, "tensorwise")                                                \
    X(ROWWISE, "rowwise")                                                      \
    X(DELAYED, "delayed")
#define SPEC_ENUM2_(id, name) SPEC_FP8_##id,
typedef enum { SPEC_FP8_RECIPES(SPEC_ENUM2_) SPEC_NFP8 } spec_fp8_recipe;
#undef SPEC_ENUM2_
extern const char *const spec_fp8_names[SPEC_NFP8];

typedef struct spec_precision {
    spec_dtype param, compute, grad, reduce, master, optim;
    spec_fp8_recipe fp8_recipe; /* compute fp8 only */
    bool fp8_all_gather;        /* FSDP all-gathers the fp8 weights (torchtitan's
                                   enable_fsdp_float8_all_gather) */
} spec_precision;

typedef struct spec_optimizer_cfg {
    spec_optimizer type;
    spec_opt_impl impl;
    bool momentum; /* SGD only */
} spec_optimizer_cfg;

/* How Transformer Engine paces CPU activation offloading (training.
 * cpu_offloading_impl): "synchronizer", its DefaultOffloadSynchronizer (TE
 * 2.10 and later, the default there), or "double_buffer", its
 * AsyncDoubleBufferGroupOffloadHandler (TE 2.9 and earlier, or
 * NVTE_CPU_OFFLOAD_V1=1). sched/mp_offload.c runs both. */
#define SPEC_OFFLOAD_IMPLS(X)                                                  \
    X(SYNCHRONIZER, "synchronizer")                                            \
    X(DOUBLE_BUFFER, "double_buffer")
#define SPEC_ENUM2_(id, name) SPEC_OFFL_##id,
typedef enum { SPEC_OFFLOAD_IMPLS(SPEC_ENUM2_) SPEC_NOFFL } spec_offload_impl;
#undef SPEC_ENUM2_
extern const char *const spec_offload_impl_names[SPEC_NOFFL];

/* Megatron-FSDP's data_parallel_sharding_strategy: what the data-parallel
 * ranks shard, ZeRO's stages by Megatron's names (nothing; the optimizer
 * states; and the gradients; and the parameters). */
#define SPEC_MFSDP_SHARDS(X)                                                   \
    X(NO_SHARD, "no_shard")                                                    \
    X(OPTIM, "optim")                                                          \
    X(OPTIM_GRADS, "optim_grads")                                              \
    X(OPTIM_GRADS_PARAMS, "optim_grads_params")
#define SPEC_ENUM2_(id, name) SPEC_MFSDP_##id,
typedef enum { SPEC_MFSDP_SHARDS(SPEC_ENUM2_) SPEC_NMFSDP } spec_mfsdp_shard;
#undef SPEC_ENUM2_
extern const char *const spec_mfsdp_names[SPEC_NMFSDP];

typedef struct spec_sharding {
    spec_strategy strategy;
    /* DDP (also under zero1, which runs DDP for gradients) */
    uint64_t bucket_cap_bytes;
    uint64_t first_bucket_bytes;
    bool gradient_as_bucket_view;
    /* ZeroRedundancyOptimizer */
    bool parameters_as_bucket_view;
    /* FSDP1 */
    spec_bwd_prefetch backward_prefetch;
    bool forward_prefetch;
    bool limit_all_gathers;
    bool use_orig_params;
    bool no_sync; /* accumulate without reducing until the last micro-batch */
    spec_wrap wrap;
    char (*wrap_modules)[SPEC_NAME_MAX]; /* wrap == MODULES */
    uint32_t nwrap_modules;
    uint64_t wrap_min_params; /* wrap == SIZE */
    /* HYBRID_SHARD / _HYBRID_SHARD_ZERO2: ranks per shard group (consecutive
     * ranks; replicated across groups); 0 for the other strategies. */
    uint32_t shard_group_size;
    /* FSDP2 (fully_shard). reshard_after_forward: the ranks the parameters
     * stay sharded over between forward and backward: shard_group_size
     * (true), the integer given, or 0: kept unsharded (false, or 1). Explicit prefetch
     * (modules_to_forward_prefetch / modules_to_backward_prefetch): an
     * integer k (every unit prefetches the next k of that pass; 0 none) or
     * pairs (unit, target) in file order, resolved to units by the plan. */
    uint32_t reshard_after_forward;
    /* Per-unit reshard_after_forward (the object form: fully_shard called
     * with its own value on some modules): unit names and true / false. */
    struct spec_raf_unit { char unit[SPEC_NAME_MAX]; bool reshard; } *raf_units;
    uint32_t nraf_units;
    uint32_t prefetch_k[2];               /* [0] forward, [1] backward */
    struct spec_prefetch *prefetch[2];
    uint32_t nprefetch[2];
    /* Megatron-core's DistributedDataParallel and distributed optimizer
     * (strategy megatron), with DistributedDataParallelConfig's names. */
    struct spec_mcore {
        bool distributed_optimizer; /* use_distributed_optimizer */
        bool overlap_grad_reduce, overlap_param_gather, grad_reduce_in_fp32;
        uint64_t bucket_size; /* parameters per bucket; 0: one bucket per model chunk */
        /* use_megatron_fsdp: Megatron-FSDP (sched/mp_mfsdp.c) instead of
         * the DDP buffers, sharding as data_parallel_sharding_strategy says */
        bool fsdp;
        spec_mfsdp_shard fsdp_shard;
    } mcore;
} spec_sharding;

/* DeepSpeed ZeRO (sharding.strategy "deepspeed"): the keys of a DeepSpeed
 * config's zero_optimization section, in DeepSpeed's units (elements, not
 * bytes). io/dsconfig.c fills it from a DeepSpeed JSON config. */
typedef struct spec_deepspeed {
    uint32_t stage;                 /* 1, 2 or 3 */
    bool overlap_comm;              /* reductions on their own stream */
    bool contiguous_gradients;      /* reduced gradients copied into one buffer */
    bool multi_rank_allreduce;      /* use_multi_rank_bucket_allreduce (stages 1-2) */
    bool reduce_scatter;            /* reduce_scatter: false all-reduces each bucket */
    uint64_t reduce_bucket;         /* reduce_bucket_size */
    uint64_t allgather_bucket;      /* allgather_bucket_size (stages 1-2) */
    uint64_t prefetch_bucket;       /* stage3_prefetch_bucket_size */
    uint64_t max_live;              /* stage3_max_live_parameters */
    uint64_t max_reuse;             /* stage3_max_reuse_distance */
    uint64_t persistence_threshold; /* stage3_param_persistence_threshold */
    uint64_t sub_group;             /* sub_group_size */
    uint32_t hpz;                   /* zero_hpz_partition_size (ZeRO++ hpZ); 1 = off */
    bool quantized_weights;         /* zero_quantized_weights (ZeRO++ qwZ) */
    bool quantized_gradients;       /* zero_quantized_gradients (ZeRO++ qgZ) */
} spec_deepspeed;

/* Where a state is offloaded (the "offload" section, or a DeepSpeed
 * config's offload_optimizer / offload_param). */
#define SPEC_OFFLOAD_DEVS(X)                                                   \
    X(NONE, "none")                                                            \
    X(CPU, "cpu")                                                              \
    X(NVME, "nvme")
#define SPEC_ENUM2_(id, name) SPEC_OFF_##id,
typedef enum { SPEC_OFFLOAD_DEVS(SPEC_ENUM2_) SPEC_NOFF } spec_offload_dev;
#undef SPEC_ENUM2_
extern const char *const spec_offload_names[SPEC_NOFF];

/* Offload as its own axis: the optimizer step (master weights, optimizer
 * states, fp32 gradients) and/or the parameter shards live on the host;
 * copies cross PCIe on the copy stream, the optimizer runs on the CPU. */
typedef struct spec_offload {
    spec_offload_dev optimizer, params;
    bool pin_memory;
    double pcie_Bps;      /* host <-> one GPU, each direction */
    double nvme_Bps;      /* nvme: what one rank reads or writes per second */
    double cpu_optim_eps; /* optimizer elements one rank's CPU steps per second */
    uint64_t host_bytes;  /* host memory per node (0: not checked) */
} spec_offload;

/* One entry of an explicit FSDP2 prefetch list: unit `unit` prefetches
 * `target`, the `index`-th name of its list (for error paths). */
typedef struct spec_prefetch {
    char unit[SPEC_NAME_MAX], target[SPEC_NAME_MAX];
    uint32_t index;
} spec_prefetch;

/* One expectation on a summary key (scenario "expect" block). */
typedef enum { SPEC_EXP_NUM, SPEC_EXP_BOOL, SPEC_EXP_STR } spec_exp_kind;

/* Model-parallel layout (the "parallel" section): world = tp x cp x pp x dp
 * ranks, tp varying fastest, then cp, then pp, dp slowest (so tensor
 * parallel stays inside a node and one data-parallel replica is the
 * consecutive ranks [0, tp cp pp)). Experts: a stage's tp x cp x dp ranks
 * are regrouped as etp x ep x edp, etp fastest (Megatron-core's expert
 * grid, expert_tensor_parallel_size = etp): an expert's FFN is split over
 * etp consecutive ranks (its ETP group), the E experts over ep such groups
 * (an EP group: same place in their ETP group), and the expert
 * data-parallel group is the ranks with the same place in an etp x ep
 * block. */
#define SPEC_PP_SCHEDULES(X)                                                   \
    X(ONE_F_ONE_B, "1f1b")                                                     \
    X(INTERLEAVED, "interleaved")
#define SPEC_ENUM2_(id, name) SPEC_PP_##id,
typedef enum { SPEC_PP_SCHEDULES(SPEC_ENUM2_) SPEC_NPP } spec_pp_schedule;
#undef SPEC_ENUM2_
extern const char *const spec_pp_names[SPEC_NPP];

/* Context parallel's communication (Transformer Engine's cp_comm_type):
 * all_gather of K and V before attention (Llama 3's), or p2p, the ring that
 * passes KV chunks with send/recv while each chunk's attention runs. */
#define SPEC_CP_COMMS(X)                                                       \
    X(ALL_GATHER, "all_gather")                                                \
    X(P2P, "p2p")
#define SPEC_ENUM2_(id, name) SPEC_CP_##id,
typedef enum { SPEC_CP_COMMS(SPEC_ENUM2_) SPEC_NCP } spec_cp_comm;
#undef SPEC_ENUM2_
extern const char *const spec_cp_comm_names[SPEC_NCP];

/* Rank order, innermost first: tp-cp-pp-dp (one replica on consecutive
 * ranks; folded runs need it) or tp-cp-dp-pp (Megatron-core's default
 * order tp-cp-ep-dp-pp: a stage's ranks consecutive). */
#define SPEC_ORDERS(X)                                                         \
    X(TP_CP_PP_DP, "tp-cp-pp-dp")                                              \
    X(TP_CP_DP_PP, "tp-cp-dp-pp")
#define SPEC_ENUM2_(id, name) SPEC_ORDER_##id,
typedef enum { SPEC_ORDERS(SPEC_ENUM2_) SPEC_NORDER } spec_order;
#undef SPEC_ENUM2_
extern const char *const spec_order_names[SPEC_NORDER];

typedef struct spec_parallel {
    uint32_t tp, cp, pp, ep;  /* 1 = that dimension is off */
    uint32_t etp;             /* expert tensor parallel: 1 = experts whole */
    bool sequence_parallel;   /* tp > 1: activations split over tp between GEMMs */
    spec_pp_schedule schedule;
    uint32_t virtual_stages;  /* interleaved: model chunks per stage */
    double expert_imbalance;  /* busiest EP rank's routed tokens / the mean, >= 1 */
    bool fold;                /* simulate one data-parallel replica (dp > 1) */
    /* Megatron's tp_comm_overlap (torchtitan's AsyncTP): sequence-parallel
     * gathers and scatters pipelined with the block's GEMMs in tp chunks. */
    bool tp_comm_overlap;
    /* Megatron-core's overlap_moe_expert_parallel_comm (Megatron-Bridge's
     * moe_a2a_overlap): in 1F1B's steady state a forward and a backward of
     * two micro-batches run layer by layer together, each one's expert
     * all-to-alls on their own stream under the other's computation. */
    bool moe_a2a_overlap;
    /* Megatron-core's moe_pad_expert_input_to_capacity: each expert's input
     * padded to its capacity (the model's capacity_factor), split sizes
     * known ahead. Off (the dropless alltoall dispatcher): the per-expert
     * counts are all-gathered over the EP group and the host waits for them
     * before the all-to-all (DECISIONS 146). */
    bool moe_pad_to_capacity;
    /* Megatron-LM's scatter_gather_tensors_in_pipeline: without sequence
     * parallel, a stage sends 1/tp of the activation and the receiver's TP
     * group all-gathers it. */
    bool p2p_scatter_gather;
    spec_cp_comm cp_comm;
    spec_order order;
    /* Uneven pipelines: the layers of each model chunk (pp x virtual_stages
     * entries, in chunk order), or NULL: layers / chunks each. */
    uint32_t *chunk_layers;
} spec_parallel;

/* tp, cp, pp or ep above 1: the layout scheduler (sched/mp.c) runs it. */
bool spec_model_parallel(const spec_parallel *p);
/* The model chunk that holds layer l of `layers`. */
uint32_t spec_layer_chunk(const spec_parallel *p, uint64_t layers, uint64_t l);

typedef struct spec_expect {
    char key[SPEC_NAME_MAX]; /* summary path: "memory.per_rank[0].steady_bytes" */
    bool has_min, has_max, has_eq, has_pct;
    double min, max, pct, value; /* within_pct: |actual - value| <= pct% of value */
    spec_exp_kind eq_kind;
    double eq_num;
    bool eq_bool;
    char eq_str[SPEC_NAME_MAX];
} spec_expect;

/* What an expectation's summary key measures, by its name's suffix:
 * "..._bytes" bytes, "..._s" seconds, anything else a plain number. Bounds
 * may then be written with units ("75 GiB", "850 ms"), and reports show
 * them so. */
typedef enum spec_quantity { SPEC_Q_NUMBER, SPEC_Q_BYTES, SPEC_Q_SECONDS } spec_quantity;
spec_quantity spec_quantity_of(const char *key);

/* "measured": what a public source measured for this run, for `shardsim
 * validate`. It never changes the simulation; a value is present when its
 * has_ flag is set. */
typedef struct spec_measured {
    bool present;
    char source[SPEC_NAME_MAX]; /* one id per independent source */
    bool has_step, has_alloc, has_reserved, has_mfu;
    double step_s, alloc_gib, reserved_gib, mfu;
    /* "peak_since": "start": the source read its peaks without resetting
     * them after the model's setup, so they cover the setup too */
    bool peak_from_start;
} spec_measured;

typedef struct spec_scenario {
    char name[SPEC_NAME_MAX];
    char file[1024];
    spec_model model;
    spec_topology topo;
    uint32_t dp;          /* data-parallel ranks */
    spec_parallel par;    /* the rest of the layout */
    uint64_t micro_batch; /* samples per rank per micro-batch */
    uint64_t seq_len;     /* tokens per sample (1 for row-wise models) */
    uint32_t grad_accum;  /* micro-batches per optimizer step */
    spec_recompute recompute;
    uint32_t recompute_every; /* full: every N-th layer only (1: all) */
    /* training.recompute_early_stop: full recomputation stops once it has
     * re-made every tensor backward reads, as PyTorch's non-reentrant
     * checkpoint does (torch.utils.checkpoint's early stop), so the layer's
     * last GEMM, whose output only the residual add reads, is not re-run;
     * a reentrant checkpoint (Megatron's, DeepSpeed's, Hugging Face's
     * default) re-runs the whole layer. Resolved at load (auto: PyTorch's
     * own runtimes with its eager, compiled or Liger modules). */
    bool recompute_early_stop;
    /* training.cpu_offloading_num_layers: Transformer Engine offloads the
     * saved activations of this many transformer layers to the host
     * (strategy megatron; sched/mp_offload.c); 0: none */
    uint32_t cpu_offload_layers;
    spec_offload_impl cpu_offload_impl; /* training.cpu_offloading_impl */
    spec_kernels kernels; /* never AUTO after loading */
    spec_attn_impl attn_impl; /* training.attention; never AUTO after loading */
    /* training.repeat_kv: the attention code repeats K and V to every query
     * head before SDPA (torchtitan before ff0829c1, 2026-01; Hugging Face's
     * SDPA path without enable_gqa): eager composites copy them, and
     * PyTorch's context_parallel exchanges the repeated heads. Default: on
     * with eager kernels outside Megatron (as the eager modules have it). */
    bool repeat_kv;
    double attn_dropout;      /* training.attention_dropout: the rate, [0, 0.99] */
    spec_loss loss;           /* training.loss; never AUTO after loading */
    spec_moe_gemm moe_gemm;   /* training.moe_gemm */
    spec_precision prec;
    spec_optimizer_cfg opt;
    spec_sharding shard;
    spec_deepspeed ds;       /* strategy deepspeed */
    spec_offload off;
    uint64_t resident_bytes; /* allocated outside the model (workspaces) */
    int alloc_model;         /* mem_model of mem/replay.h: 0 caching, 1 ideal */
    bool expandable_segments;
    uint64_t capacity_bytes; /* what the allocator may reserve; 0 = unlimited */
    spec_init_mode init_mode;
    spec_expect *expects;
    uint32_t nexpects;
    spec_measured measured;
    ss_ns hook_ns;           /* host time of one runtime hook (FSDP/DDP) */
    int net_algo, net_proto; /* SPEC_NALGO_*, SPEC_NPROTO_* */
    uint32_t net_algos, net_protos; /* network.algo / proto as lists
                                       (spec_net_set_parse); 0: none */
    uint32_t net_nccl;       /* network.nccl_version; 0: the topology's */
    uint32_t net_min_ctas;   /* network.nccl_min_ctas (NCCL_MIN_CTAS); 0: NCCL's default */
    bool net_collnet;        /* network.collnet (NCCL_COLLNET_ENABLE) */
    char calibration[1024];  /* profile file (resolved), or "" */
    /* Variation (runtime.stragglers, runtime.jitter): compute time of rank
     * straggler[i].rank scaled by .factor; jitter scales every compute op by
     * exp(cv * z - cv^2 / 2), z standard normal from `seed`, for `samples`
     * extra runs whose step times the summary reports. */
    struct spec_straggler { uint32_t rank; double factor; } stragglers[16];
    uint32_t nstragglers;
    double jitter_cv;
    uint64_t jitter_seed;
    uint32_t jitter_samples;
} spec_scenario;

void spec_scenario_fini(spec_scenario *s);

/* Context parallel as PyTorch's experimental context_parallel runs it
 * (cp > 1 under the PyTorch-native runtimes: DDP, FSDP1, FSDP2): SDPA's
 * inputs gathered or passed round the ring, the outputs merged and the
 * gradients accumulated in fp32, dK and dV passed round the ring in fp32
 * (plan_arch.c, torch_cp_passes; sched/mp.c, cp_pre). Megatron's is
 * Transformer Engine's (cp_comm_type); DeepSpeed's is not modelled apart. */
bool spec_cp_torch(const spec_scenario *s);
/* Tensor parallel as PyTorch's DTensor runs it (tp > 1 under the
 * PyTorch-native runtimes): a sequence-parallel linear's gathered input is
 * what autograd keeps for the weight gradient (no second gather in
 * backward, unlike Megatron's), and with torchao's Float8 tensorwise
 * linears (torchtitan's Float8ColwiseParallel, Float8RowwiseParallel,
 * PrepareFloat8ModuleInput) the block inputs and the output gradients are
 * all-gathered in fp8 (sched/mp.c, plan_arch.c). */
bool spec_tp_dtensor(const spec_scenario *s);

#endif
