/* plan.h - from a scenario to what the schedulers need: parameters, blocks
 * with their costs, FSDP wrap units with padded FlatParameter sizes, DDP
 * gradient buckets, optimizer cost.
 *
 * A plan is derived data: every number in it follows from the spec and the
 * device file by the formulas here (roofline compute time, 512-byte free of
 * rounding, padding N * ceil(numel / N)). It knows no runtime's issue order;
 * that is the schedulers' job (sched/).
 *
 * Ownership: plan_new allocates; plan_free releases. The spec must outlive
 * the plan.
 */
#ifndef PLAN_H
#define PLAN_H

#include "../core/err.h"
#include "spec.h"

/* A parameter tensor: numel elements, rows of them along dim 0 (FSDP2
 * shards dim 0: nn.Linear's weight [out, in] has out rows, a bias or a
 * norm's weight [dim] dim rows, an embedding [vocab, hidden] vocab rows). */
typedef struct plan_param {
    uint32_t block;
    uint64_t numel;
    uint64_t rows;
} plan_param;

#define PLAN_NAME_MAX SPEC_NAME_MAX

typedef struct plan_block {
    const spec_block *spec;  /* linear models; NULL for architecture blocks */
    char name[PLAN_NAME_MAX]; /* "layers.3", "layers.3.attn", "embed", ... */
    char group[PLAN_NAME_MAX]; /* what per-block wrapping makes one unit */
    uint32_t param0, nparam; /* params[param0 .. param0 + nparam) */
    uint64_t numel;
    uint32_t unit;           /* FSDP wrap unit that owns it */
    ss_bytes in_bytes;       /* activation entering, per micro-batch */
    ss_bytes out_bytes;      /* activation leaving */
    ss_bytes saved_bytes;    /* kept for backward besides the input */
    ss_bytes recompute_bytes; /* re-materialized during backward (recompute) */
    ss_bytes bwd_tmp_bytes;  /* a gradient its backward makes inside it, beside its
                                input's and its weights' */
    uint32_t bwd_tmp_n;      /* how many such live at once at its worst moment,
                                over what it has freed by then */
    uint64_t fwd_flops, bwd_flops;
    ss_ns fwd_ns, bwd_ns;    /* device time */
    /* Kernels each way, each one the host issues (the device's launch_us
     * apiece): eager composites launch many, fused ones few. 0 on a side
     * reads as one. */
    uint32_t fwd_kernels, bwd_kernels;
    /* The forward's tail after the last tensor backward reads (the dense
     * MLP's down projection and the residual add): what full recomputation
     * does not re-run when it stops early (spec recompute_early_stop). */
    ss_ns tail_ns;
    uint64_t tail_flops;
    uint32_t tail_kernels;
    bool recompute_stops;    /* full recompute stops before the tail (and, under
                              * TP, before the tail's reduction) */
    bool dgrad;              /* backward computes the input gradient */
    bool recompute_full;     /* full recompute: its forward re-runs inside its backward */
    bool recompute_input;    /* full recompute, or selective_op's layer: the input
                              * is the layer's previous block's output, re-run in
                              * backward, not kept */
    /* Layouts (plan_layout): costs and bytes above are one rank's share. */
    uint32_t chunk;          /* model chunk: stage chunk % pp, virtual chunk / pp */
    ss_bytes tp_bytes;       /* tp > 1: the activation its TP collectives move */
    ss_bytes tp_ag_bytes;    /* what its sequence-parallel all-gathers move: tp_bytes,
                                or the fp8 cast's under torchao's Float8 TP */
    ss_bytes cp_bytes;       /* cp > 1: the KV its attention gathers over cp */
    ss_bytes cp_dkv_bytes;   /* PyTorch's context_parallel (spec_cp_torch): the fp32
                                dK and dV one ring step passes; 0 otherwise */
    ss_bytes ep_bytes;       /* ep > 1: what one rank dispatches (and combines) */
    ss_bytes ep_probs_bytes; /* Megatron, ep > 1: the fp32 routing probabilities
                                dispatched beside the tokens (their own all-to-all,
                                costed with the tokens': mp.c dispatch_bytes) */
    ss_bytes ep_counts_bytes; /* Megatron's dropless dispatcher: the per-expert token
                                 counts one rank adds to the EP group's all-gather */
    ss_bytes moe_tpe_bytes;   /* Megatron's router, tp > 1: the tokens-per-expert
                                 counts all-reduced over TP for the aux loss */
    ss_bytes etp_bytes;      /* etp > 1: the routed tokens its ETP group gathers */
    uint64_t expert_numel;   /* of numel: routed-expert parameters (EP-sharded) */
} plan_block;

/* A FlatParameter: blocks [block0, block0 + nblocks) in model order; the
 * root unit (is_root) holds the blocks no policy wrapped, if any. Under
 * FSDP2 a unit is one fully_shard module and each of its parameters is
 * padded on dim 0 on its own: shard = sum ceil(rows / n) * (numel / rows),
 * padded = n * shard (what its all-gather moves). */
typedef struct plan_unit {
    uint32_t block0, nblocks;
    uint64_t numel, padded, shard; /* padded = n * shard */
    bool is_root;
} plan_unit;

/* A DDP bucket: params [param_lo, param_hi] in reverse model order, i.e.
 * bucket 0 holds the last parameters, whose gradients are ready first. */
typedef struct plan_bucket {
    uint32_t first, last; /* param ids, first > = last (reverse order) */
    uint64_t numel;
} plan_bucket;

typedef struct plan {
    const spec_scenario *s;
    uint32_t n;               /* data-parallel ranks (a layout: the ranks it simulates) */
    uint32_t nsim;            /* ranks in the program: n, n / stride, or 1 when folded without a layout */
    /* A layout folded along tp and cp as well (plan.c's fold_stride): the
     * program holds one rank per stage, program rank i being world rank
     * i x stride (stride = tp cp in the order tp-cp-pp-dp, tp cp dp in
     * Megatron's tp-cp-dp-pp, whose stages are runs of consecutive ranks;
     * 1 otherwise). The ranks a layout's figures name stay 0 .. n - 1
     * (replica 0's world ranks, or all of them in Megatron's order); rank
     * w runs program rank w / stride's program. */
    uint32_t stride;
    uint32_t shard_n;         /* ranks a FlatParameter is sharded over (n; HSDP: a group) */
    uint32_t param_elem, compute_elem, grad_elem, reduce_elem;
    /* Activations' element size: compute_elem, but 16-bit under fp8 compute
     * (Float8 training keeps activations in bf16 and casts each linear's
     * inputs); compute_elem is then the all-gathered weight's (1 with
     * precision.fp8.all_gather, else 2). */
    uint32_t act_elem;
    /* A linear's input as kept for its weight gradient: act_elem, but 1
     * under Transformer Engine's fp8 (strategy megatron), which keeps the
     * fp8 cast it ran the GEMM on, column-wise data only ("Discard row-wise
     * data since it is not needed in backward pass", module/linear.py,
     * NVIDIA/TransformerEngine v2.2 to v2.9; layernorm_linear.py alike). */
    uint32_t saved_in_elem;
    spec_dtype dt16; /* the 16-bit dtype fp8 scenarios run the rest in */
    plan_param *params;
    uint32_t nparams;
    plan_block *blocks;
    uint32_t nblocks;
    plan_unit *units;         /* in forward execution order; root first */
    uint32_t nunits;
    plan_bucket *buckets;
    uint32_t nbuckets;
    uint64_t total_numel;
    uint64_t tokens;          /* per rank per micro-batch: micro_batch x seq_len */
    double flops_per_token;   /* the MFU convention: 6 N + 12 L H Q T */
    /* The loss's kernels on one micro-batch's logits, forward and backward
     * (training.loss, plan_arch.c); 0 for the linear models, whose loss
     * reads the output once (sched/emit.c). */
    ss_ns loss_fwd_ns, loss_bwd_ns, loss_cast_ns;
    uint32_t loss_fwd_kernels, loss_bwd_kernels;
    /* Its tensors, as the implementation's autograd holds them: `saved`
     * from forward to backward; the forward's temporary (the fp32 upcast
     * of the logits); the backward's, freed when its kernels end (the
     * log-probabilities' gradient); `grad32`, the fp32 gradient the cast
     * (loss_cast_ns, 0: no cast) turns into the logits' dtype. grad_in_saved:
     * the gradient is formed in place in the saved tensor (freed after the
     * cast); grad_in_logits: in place in the logits themselves (nothing is
     * allocated, the logits become their gradient). */
    ss_bytes loss_saved, loss_fwd_tmp, loss_bwd_tmp, loss_grad32;
    bool loss_grad_in_saved, loss_grad_in_logits;
    /* training.loss fused_linear: the loss's forward wrote the head's input
     * and weight gradients (kept in loss_saved until the loss's backward
     * hands them over); its backward makes no gradient of the logits */
    bool loss_grads_in_fwd;
    /* Layout. Without one: world = n, dense_dp = expert_dp = n. */
    bool layout;              /* spec_model_parallel: sched/mp.c runs it */
    uint32_t world;           /* tp cp pp dp ranks */
    uint32_t replica;         /* tp cp pp: the ranks of one data-parallel replica (1 without a layout) */
    uint32_t dense_dp;        /* ranks a dense parameter is replicated over: dp cp */
    uint32_t expert_dp;       /* ranks an expert is replicated over: tp cp dp / ep */
    uint32_t chunks;          /* pp x virtual_stages */
    bool share;               /* ranks of a stage share one program (prog_rank_share): no variation */
    uint64_t model_numel;     /* the whole model's parameters (total_numel is one rank's) */
    uint64_t active_numel;    /* of those, what one token uses: all but the routed experts
                                 it is not sent to (model_numel without MoE) */
    /* FSDP2 explicit prefetch, [0] forward, [1] backward: unit u prefetches
     * units pf[k][pf0[k][u] .. pf0[k][u + 1]) in that order; explicit[k][u]
     * says it was given a list (backward: which replaces the implicit
     * one-unit-ahead prefetch). NULL for the other strategies. */
    uint32_t *pf0[2], *pf[2];
    bool *explicit_pf[2];
    /* FSDP2: per unit, the ranks its parameters stay sharded over between
     * forward and backward (shard_n: resharded; 0: kept unsharded; k: the
     * 1/k copy), the scenario's value unless the unit has its own. */
    uint32_t *raf;
} plan;

/* Build the plan. Errors (SS_E_INPUT, naming the scenario file): a wrap
 * module that names no block, a dtype the device cannot compute in. */
int plan_new(plan **out, const spec_scenario *s, ss_err *err);
void plan_free(plan *p);

/* FLOP/s a GEMM of geometric-mean dimension g reaches in the compute dtype:
 * the calibration profile's measured curve when the scenario names one,
 * else the device file's curve. */
double plan_gemm_rate(const plan *p, double g);

/* FLOP/s of the fused attention core at `seq` query positions, forward or
 * backward: the device file's measured attention table (16-bit compute),
 * else the GEMM curve at geometric-mean dimension g. */
double plan_attn_rate(const plan *p, double seq, double g, bool backward);

/* Device time of a GEMM m x k x n in the compute dtype: the device's
 * per-kernel fixed time (gemm_floor) and the FLOPs at that rate, or the
 * bytes at the memory bandwidth, whichever is longer. Under fp8 compute, in the 16-bit dtype
 * (the GEMMs that stay in bf16: the output head, the router). */
ss_ns plan_gemm_ns(const plan *p, uint64_t m, uint64_t k, uint64_t n);

/* A linear layer's weight k x n applied to m tokens: the forward GEMM and
 * the backward's input- and weight-gradient GEMMs. Under fp8 compute they
 * run at the fp8 rate on fp8 inputs (bf16 outputs), plus the casts the
 * recipe launches (plan.c, plan_linear), unless hp: a layer Float8 recipes
 * leave in 16 bits (the output head, the MoE router). `groups` such
 * layers (MoE experts) run as grouped GEMMs: `groups` times the FLOPs and
 * bytes after the device's gemm_floor, once for one grouped kernel, or,
 * for Transformer Engine's GroupedLinear under Megatron (a GEMM a problem
 * over 4 streams), once per 4 problems; a calibration profile's GEMM curve
 * includes the fixed time, so none is added then. */
typedef struct plan_lin {
    ss_ns fwd, bwd;          /* forward; backward's input and weight gradients */
    uint32_t fwd_kernels;    /* launches a micro-batch, GEMMs and casts (the host's
                                issue); Megatron's weight casts, made on a step's
                                first micro-batch, are left out */
    uint32_t bwd_kernels;
} plan_lin;
void plan_linear(const plan *p, bool hp, uint64_t groups, uint64_t m, uint64_t k, uint64_t n,
                 plan_lin *out);
/* Internal to plan/: expand an architecture model into blocks (plan_arch.c). */
int plan_arch_blocks(plan *p, ss_err *err);
/* Internal: rebuild the blocks as one rank's share of a layout (plan.c). */
int plan_layout(plan *p, ss_err *err);

/* The name FSDP2's prefetch lists use for unit u: "root" for the root
 * (the model's own fully_shard), else its first block's wrap group
 * ("layers.3", "embed", "output"). Points into the plan. */
const char *plan_unit_name(const plan *p, uint32_t u);

/* The host's time to issue one op of the step: the device file's
 * op_host.us (a PyTorch op through the eager dispatcher, its launch
 * included) where it gives one, else its launch_us; torch.compile's
 * generated code launches its kernels without the dispatcher: launch_us. */
ss_ns plan_op_host_ns(const plan *p);

/* Device time of an elementwise kernel touching `bytes` of HBM. */
ss_ns plan_mem_ns(const plan *p, ss_bytes bytes);
/* Memory-bound work of k kernels moving `bytes`: plan_mem_ns, but at least
 * the device's kernel_min for each kernel (launch-bound when small). */
ss_ns plan_kernels_ns(const plan *p, ss_bytes bytes, uint32_t k);
/* Device time of the optimizer step over `numel` elements per rank. */
ss_ns plan_optim_ns(const plan *p, uint64_t numel);

#endif
