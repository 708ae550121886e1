/* Expansion of a transformer architecture into plan blocks.
 *
 * Blocks, in execution order: embed; per layer an attention block (input
 * norm, projections, causal attention core) and an MLP or MoE block (norm,
 * gated or plain MLP, or router + routed and shared experts); final norm;
 * output head. A layer's two blocks share the wrap group "layers.N"; the
 * embedding is "embed", the final norm and head "output".
 *
 * Costs: every projection is its own GEMM through plan_gemm_ns (forward
 * m x k x n; backward the input gradient and the weight gradient); the
 * causal attention core is b a s^2 (d_qk + d_v) FLOPs forward as
 * FlashAttention computes it, 2.5x that backward (it recomputes the
 * scores). MoE experts run t k cf / E tokens each, as one grouped GEMM per
 * projection or as E small GEMMs (training.moe_gemm).
 *
 * Activations saved for backward are counted tensor by tensor (FlashAttention:
 * no s^2 scores); "selective" recomputes the attention core (its output is
 * not kept), "selective_op" is torchtitan's op-level policy (a layer keeps
 * its input, the outputs of its odd-numbered matmuls and of attention, and
 * recomputes the rest), "full" keeps only each block's input and re-runs
 * the forward in backward. Parameter counts follow the published architectures; tests
 * check them against the published totals.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

typedef struct ab {
    plan *p;
    const spec_arch *a;
    uint32_t capb, capp;
    uint64_t t, c; /* tokens per micro-batch (of a CP rank), bytes per activation element */
    uint64_t lc;   /* bytes per element of a linear's input kept for its weight gradient */
    ss_err *err;
    int rc;
    /* Layout shares (all 1 without one): tensor parallel, the split of the
     * activations between GEMMs (tp under sequence parallel), experts. */
    uint64_t tp, sp, ep, cp, etp;
    /* torchtitan's op-level selective checkpointing (selective_op): a
     * layer's matmuls are counted in order; the odd-numbered ones keep
     * their outputs, whose forward time and bytes the block sums here. */
    bool op_sac;
    bool to_residual; /* the GEMMs being added feed the residual add alone */
    bool hp; /* the GEMMs being added stay in 16 bits under fp8 compute (head, router) */
    uint64_t groups; /* the GEMMs being added run as grouped GEMMs of this many (MoE experts) */
    bool eager;        /* training.kernels eager: PyTorch's composite elementwise ops */
    bool torch_cp;     /* cp > 1 as PyTorch's context_parallel runs it (spec_cp_torch) */
    bool dtensor_sp;   /* sequence parallel as PyTorch's DTensor runs it (spec_tp_dtensor) */
    bool fp8_ag;       /* ... with torchao's Float8 tensorwise linears: fp8 all-gathers */
    uint64_t eager_saved; /* what the block's eager composites keep besides the fused
                             kernels' tensors (bytes) */
    uint32_t mm;
    ss_ns keep_ns;
    uint64_t keep_bytes, keep_flops;
    ss_ns tail_ns; /* the residual-only GEMMs' forward (plan_block.tail_ns) */
    uint64_t tail_flops;
    uint32_t tail_kernels;
} ab;

static plan_block *blk(ab *x, const char *group, const char *fmt, unsigned l)
{
    plan *p = x->p;
    if (x->rc || p->nblocks == x->capb) {
        if (!x->rc) x->rc = ss_fail(x->err, SS_E_INTERNAL, NULL, "too many blocks");
        return NULL;
    }
    plan_block *b = &p->blocks[p->nblocks];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, fmt, l);
    snprintf(b->group, sizeof b->group, group, l);
    b->param0 = p->nparams;
    b->unit = 0;
    b->dgrad = true;
    x->keep_ns = 0;
    x->keep_bytes = x->keep_flops = 0;
    x->tail_ns = 0, x->tail_flops = 0, x->tail_kernels = 0;
    x->eager_saved = 0;
    b->in_bytes = b->out_bytes = x->t * x->a->hidden * x->c / x->sp;
    if (x->tp > 1) b->tp_bytes = b->tp_ag_bytes = x->t * x->a->hidden * x->c;
    return b;
}

static void blk_done(ab *x, plan_block *b)
{
    if (!b) return;
    unsigned l = 0;
    if (sscanf(b->name, "layers.%u", &l) == 1)
        b->chunk = x->p->chunks == 1 ? 0 : spec_layer_chunk(&x->p->s->par, x->a->layers, l);
    else b->chunk = strcmp(b->name, "embed") ? x->p->chunks - 1 : 0;
    x->p->nblocks++;
    for (uint32_t i = b->param0; i < b->param0 + b->nparam; i++)
        x->p->params[i].block = (uint32_t)(b - x->p->blocks);
}

/* A parameter tensor of numel elements, rows of them on dim 0 (the layout
 * torch stores: nn.Linear [out, in], embeddings [num, dim], norms [dim]). */
static void param(ab *x, plan_block *b, uint64_t numel, uint64_t rows)
{
    if (!b || !numel || x->rc) return;
    if (x->p->nparams == x->capp) {
        x->rc = ss_fail(x->err, SS_E_INTERNAL, NULL, "too many parameters");
        return;
    }
    x->p->params[x->p->nparams++] = (plan_param){0, numel, rows};
    b->nparam++;
    b->numel += numel;
    x->p->total_numel += numel;
}

/* Whether selective_op keeps a kept matmul's output. Eager PyTorch caches
 * every output the policy saves, whether backward reads it or not
 * (torch/utils/checkpoint.py, _CachingTorchDispatchMode); under
 * torch.compile the partitioner saves only what backward reads, and an
 * output projection's result feeds the residual add alone, whose backward
 * reads nothing: not kept, not re-run (its time stays among the kept). */
static bool op_sac_saves(const ab *x)
{
    return !x->to_residual || x->p->s->kernels != SPEC_KERNELS_COMPILED;
}

/* A weight k x n applied to m tokens: forward m x k x n; backward the input
 * gradient m x n x k and the weight gradient k x m x n. */
static void gemm(ab *x, plan_block *b, uint64_t m, uint64_t k, uint64_t n)
{
    if (!b || !m) return;
    plan *p = x->p;
    uint64_t f = 2 * m * k * n * x->groups;
    plan_lin lin;
    plan_linear(p, x->hp, x->groups, m, k, n, &lin);
    if (x->op_sac && ++x->mm % 2) {
        x->keep_ns += lin.fwd;
        if (op_sac_saves(x)) x->keep_bytes += m * n * x->c * x->groups;
        x->keep_flops += f;
    }
    if (x->to_residual) x->tail_ns += lin.fwd, x->tail_flops += f, x->tail_kernels += lin.fwd_kernels;
    b->fwd_flops += f;
    b->bwd_flops += 2 * f;
    b->fwd_ns += lin.fwd;
    b->bwd_ns += lin.bwd;
    b->fwd_kernels += lin.fwd_kernels, b->bwd_kernels += lin.bwd_kernels;
}

/* A linear layer with its parameters: weight k x n (+ bias n). */
static void linear(ab *x, plan_block *b, uint64_t k, uint64_t n, uint64_t m)
{
    param(x, b, k * n, n);
    if (x->a->bias) param(x, b, n, n);
    gemm(x, b, m, k, n);
}

/* Megatron's column-parallel linear (the output features split over tp)
 * and row-parallel linear (the input features split; its bias whole). */
static void linear_col(ab *x, plan_block *b, uint64_t k, uint64_t n, uint64_t m)
{
    linear(x, b, k, n / x->tp, m);
}

static void linear_row(ab *x, plan_block *b, uint64_t k, uint64_t n, uint64_t m)
{
    param(x, b, k / x->tp * n, n);
    if (x->a->bias) param(x, b, n, n);
    gemm(x, b, m, k / x->tp, n);
}

/* Qwen2's biases on q, k and v alone (n features of this rank), added
 * inside the GEMMs: parameters, no time of their own. */
static void qkv_bias(ab *x, plan_block *b, uint64_t n)
{
    if (x->a->qkv_bias && !x->a->bias) param(x, b, n, n);
}

/* A memory-bound pass of `kf` kernels forward and `kb` backward moving the
 * given bytes: at least one kernel_min per kernel (launch-bound when small);
 * a side of no kernels costs nothing. */
static void eltwise_k(ab *x, plan_block *b, uint64_t fwd_bytes, uint64_t bwd_bytes, uint32_t kf,
                      uint32_t kb)
{
    if (!b) return;
    if (kf) b->fwd_ns += plan_kernels_ns(x->p, fwd_bytes, kf);
    if (kb) b->bwd_ns += plan_kernels_ns(x->p, bwd_bytes, kb);
    b->fwd_kernels += kf, b->bwd_kernels += kb;
}

/* A memory-bound kernel reading and writing its tensors once, forward and
 * backward (bytes each way): every op of the layer that is not a GEMM. */
static void eltwise(ab *x, plan_block *b, uint64_t fwd_bytes, uint64_t bwd_bytes)
{
    eltwise_k(x, b, fwd_bytes, bwd_bytes, 1, 1);
}

/* RMSNorm over n elements. Fused (one kernel each way): forward reads the
 * input and writes the output (with the weight and the rstd, 3 passes
 * counted), backward twice that. Eager: the composite that torch's
 * F.rms_norm and Hugging Face's LlamaRMSNorm run, in fp32 (4-byte upcast,
 * c the activation size), per element:
 *   forward  to(fp32) c+4, pow 8, mean 4, mul by rstd 8, type_as 4+c,
 *            mul by weight 2c: 28 + 4c bytes in 8 kernels (add eps and
 *            rsqrt on the [t, 1] rstd);
 *   backward the weight mul's two grads 5c, type_as' cast c+4, the mul's
 *            grads 8 + 16, pow's 12, the sum of the two paths 12, the
 *            upcast's cast down 4+c: 64 + 7c bytes in 12 kernels;
 * and autograd keeps the fp32 upcast (pow and mul read it) and the
 * normalized copy the weight mul reads: (4 + c) n bytes more than the
 * fused kernel keeps. LayerNorm is one native kernel in eager PyTorch too
 * (aten's layer_norm): fused costs. */
static void rms_pass(ab *x, plan_block *b, uint64_t n)
{
    uint64_t c = x->c;
    if (!x->eager || x->a->layernorm) {
        ss_ns t = plan_mem_ns(x->p, 3 * n * c);
        if (b) b->fwd_ns += t, b->bwd_ns += 2 * t, b->fwd_kernels++, b->bwd_kernels++;
        return;
    }
    eltwise_k(x, b, (28 + 4 * c) * n, (64 + 7 * c) * n, 8, 12);
    x->eager_saved += (4 + c) * n;
}

static void norm(ab *x, plan_block *b, uint64_t dim)
{
    param(x, b, dim, dim);
    if (x->a->layernorm) param(x, b, dim, dim);
    rms_pass(x, b, x->t / x->sp * dim);
}

/* The tensors a block keeps for backward: `bytes` with fused kernels, plus
 * what its eager composites keep. */
static void keep(ab *x, plan_block *b, uint64_t bytes)
{
    b->saved_bytes = bytes + x->eager_saved;
}

/* Qwen3's RMSNorm on every query and key head (q_norm, k_norm: one
 * head_dim weight each, shared by the heads): a memory-bound pass over the
 * n query and key elements of this rank, whose inputs it saves. Returns
 * those saved elements. */
static uint64_t qk_norm(ab *x, plan_block *b, uint64_t n)
{
    if (!x->a->qk_norm) return 0;
    param(x, b, x->a->head_dim, x->a->head_dim);
    param(x, b, x->a->head_dim, x->a->head_dim);
    if (x->eager) rms_pass(x, b, n);
    else eltwise(x, b, 2 * n * x->c, 3 * n * x->c);
    return n;
}

/* The residual add closing a block: two reads and a write of the stream
 * forward; backward, the gradient of the branch joins the stream's. */
static void residual(ab *x, plan_block *b)
{
    uint64_t v = x->t / x->sp * x->a->hidden * x->c;
    eltwise(x, b, 3 * v, 3 * v);
}

/* The MLP's activation on m tokens of width f. Gated (SwiGLU, GeGLU):
 * reads two inputs and writes one (backward: reads the gradient and both
 * inputs, writes two gradients); eager, act(a) * b as two kernels,
 * backward the mul's two grads and the activation's, and autograd keeps
 * act(a) for the mul. Plain (GELU, ReLU): reads one and writes one
 * (backward 2 + 1). Squared ReLU fused is one such kernel; eager it is
 * relu then pow (Megatron-core's squared_relu, torch.pow(F.relu(x), 2)):
 * 2 + 2 forward, backward pow's (3) then relu's (3), relu's output kept
 * for pow's backward. */
static void activation(ab *x, plan_block *b, uint64_t m, uint64_t f)
{
    uint64_t v = m * f * x->c;
    bool gated = spec_act_mats(x->a->act) == 3;
    if (!x->eager) {
        eltwise(x, b, (gated ? 3 : 2) * v, (gated ? 5 : 3) * v);
    } else if (gated) {
        eltwise_k(x, b, 5 * v, 9 * v, 2, 3);
        x->eager_saved += v;
    } else if (x->a->act == SPEC_ACT_SQUARED_RELU) {
        eltwise_k(x, b, 4 * v, 6 * v, 2, 2);
        x->eager_saved += v;
    } else {
        eltwise(x, b, 2 * v, 3 * v);
    }
}

/* Rotary embedding on n query and key elements. Fused: one kernel reading
 * and writing them. Eager (torchtitan's apply_rotary_emb): per tensor
 * to(fp32) c+4, the complex multiply 8, type_as 4+c, each way (the
 * backward multiplies by the conjugate): 16 + 2c bytes in 3 kernels per
 * tensor; the multiply keeps its fp32 input (4 bytes per element).
 * Hugging Face's rotate_half in the activation dtype moves about as much
 * (q cos, the halves' cat, sin, add: ~9c). */
static void rotary(ab *x, plan_block *b, uint64_t n)
{
    if (!x->eager) {
        eltwise(x, b, 2 * n * x->c, 2 * n * x->c);
        return;
    }
    uint64_t v = (16 + 2 * x->c) * n;
    eltwise_k(x, b, v, v, 6, 6);
    x->eager_saved += 4 * n;
}

static void embed(ab *x)
{
    const spec_arch *a = x->a;
    plan_block *b = blk(x, "embed", "embed", 0);
    param(x, b, a->vocab / x->tp * a->hidden, a->vocab / x->tp); /* vocab-parallel */
    if (a->max_positions) param(x, b, a->max_positions * a->hidden, a->max_positions);
    if (!b) return;
    b->in_bytes = x->t * 8; /* token ids */
    b->dgrad = false;
    b->fwd_ns = plan_mem_ns(x->p, x->t * a->hidden * x->c);
    b->bwd_ns = plan_mem_ns(x->p, 2 * x->t * a->hidden * x->c);
    b->fwd_kernels = b->bwd_kernels = 1;
    blk_done(x, b);
}

/* selective_op: the block keeps `keep` bytes (its odd matmuls' outputs,
 * plus what the caller adds) and recomputes the rest of its forward, less
 * the kept matmuls and `kept_ns` of other kept ops, inside its backward;
 * what it no longer keeps is re-materialized there. */
static void op_sac(ab *x, plan_block *b, uint64_t keep, ss_ns kept_ns, uint64_t kept_flops)
{
    if (!x->op_sac || !b) return;
    keep += x->keep_bytes;
    b->recompute_bytes = b->saved_bytes > keep ? b->saved_bytes - keep : 0;
    b->saved_bytes = b->saved_bytes < keep ? b->saved_bytes : keep;
    b->bwd_ns += b->fwd_ns - x->keep_ns - kept_ns;
    b->bwd_flops += b->fwd_flops - x->keep_flops - kept_flops;
    b->bwd_kernels += b->fwd_kernels; /* the forward re-run (kept matmuls counted too) */
}

/* The attention core without FlashAttention (training.attention
 * "unfused"), `scores` elements (a rank's queries against every key, per
 * micro-batch and local head): Q K^T and P V as batched GEMMs over
 * every score (the causal half too: 2 x `core`, the FLOPs FlashAttention
 * runs), between them a fused scale-mask-softmax kernel reading the scores
 * and writing the probabilities (Megatron's FusedScaleMaskSoftmax), which
 * backward keeps (*probs bytes). Backward: four GEMMs (dP, dV, dQ, dK) and
 * the softmax's backward reading P and dP and writing dS. Selective
 * recomputation drops the probabilities and re-runs this forward in
 * backward (Korthikanti et al., "Reducing Activation Recomputation in
 * Large Transformer Models", 2022: the s^2 terms are what it recomputes).
 * Its backward holds dP (*dscores bytes), the softmax's backward writing
 * dS over it (Megatron's scaled_masked_softmax bwd_cuda returns its
 * output_grads), and with dropout the dropped dP beside it first.
 * Returns the forward time. */
static ss_ns unfused_core(ab *x, plan_block *b, double g, double core, double scores,
                          uint64_t *probs, uint64_t *dscores)
{
    double flops = 2.0 * core, c = (double)x->c;
    /* Attention dropout (training.attention_dropout > 0) is its own kernel
     * here, as in Megatron-LM's CoreAttention and Hugging Face's eager
     * modules: forward reads the probabilities and writes the dropped ones
     * and a one-byte mask, backward reads the gradient and the mask and
     * writes the gradient; autograd keeps the mask and both copies of the
     * probabilities (softmax's backward needs the kept ones, P V's the
     * dropped). The rate changes no byte. */
    double drop = x->p->s->attn_dropout > 0 ? (2.0 * c + 1.0) * scores : 0.0;
    /* Each batched GEMM writes or reads the whole score matrix (Q K^T
     * writes it, P V reads it; backward dP writes, dV reads P, dQ and dK
     * read dS): with a head's short k they are a roofline of their FLOPs
     * and those c bytes a score, whichever is longer. */
    ss_ns gemm = ss_ns_from_s(flops / plan_gemm_rate(x->p, g));
    ss_ns fwd_bytes = plan_mem_ns(x->p, (ss_bytes)(2.0 * scores * c));
    ss_ns bwd_bytes = plan_mem_ns(x->p, (ss_bytes)(4.0 * scores * c));
    ss_ns fwd_gemm = gemm > fwd_bytes ? gemm : fwd_bytes;
    ss_ns bwd_gemm = 2 * gemm > bwd_bytes ? 2 * gemm : bwd_bytes;
    ss_ns fwd = fwd_gemm + plan_mem_ns(x->p, (ss_bytes)(2.0 * scores * c + drop));
    ss_ns bwd = bwd_gemm + plan_mem_ns(x->p, (ss_bytes)(3.0 * scores * c + drop));
    if (x->p->s->recompute == SPEC_RECOMP_SELECTIVE) bwd += fwd;
    b->fwd_flops += (uint64_t)flops;
    b->bwd_flops += (uint64_t)(2.0 * flops);
    b->fwd_ns += fwd;
    b->bwd_ns += bwd;
    /* two batched GEMMs and the softmax; four and its backward; dropout's one each way */
    b->fwd_kernels += drop > 0 ? 4 : 3, b->bwd_kernels += drop > 0 ? 6 : 5;
    *probs = (uint64_t)(scores * c + (drop > 0 ? scores * (c + 1.0) : 0.0));
    *dscores = (uint64_t)(scores * c * (drop > 0 ? 2.0 : 1.0));
    return fwd;
}

/* What eager PyTorch does around SDPA in a Llama-style attention module
 * (torchtitan's Attention.forward, pytorch/torchtitan 0199cbc1
 * torchtitan/models/llama/model.py; Hugging Face's and fms's modules do
 * the same): with fewer KV heads than query heads and training.repeat_kv
 * (the eager default), repeat_kv expands K and
 * V to every query head and reshape copies them (forward: read the kvh
 * heads, write the h heads, for K and V, two kernels; backward: expand's
 * backward sums the copies back, one kernel each), and SDPA keeps the
 * expanded K and V instead of the rotary's outputs; the output's
 * transpose(1, 2).contiguous() before wo is one more copy forward (its
 * backward is a view), which wo keeps while SDPA keeps its own output.
 * kv and full are the K and V elements of kvh and of h heads, o the
 * output's elements. Fused and compiled kernels (Megatron, TE,
 * torch.compile) read the layouts in place: nothing. LayerNorm models
 * (GPT-2, MPT, BLOOM) come from other code bases and are left as fused. */
static bool eager_llama(const ab *x)
{
    return x->eager && !x->a->layernorm;
}

static void eager_sdpa_layout(ab *x, plan_block *b, uint64_t kv, uint64_t full, uint64_t o)
{
    if (!eager_llama(x) || !b) return;
    uint64_t c = x->c;
    if (full > kv && x->p->s->repeat_kv) {
        eltwise_k(x, b, (kv + full) * c, (full + kv) * c, 2, 2);
        x->eager_saved += (full - kv) * c;
    }
    eltwise_k(x, b, 2 * o * c, 0, 1, 0);
    x->eager_saved += o * c;
}

/* Autograd sums the input gradients of the k projections one input feeds
 * (wq, wk and wv; w1 and w3) in k - 1 adds, each reading two tensors and
 * writing one, backward, where the module writes them as separate
 * nn.Linear layers (torchtitan, Hugging Face; fms before its fused
 * projections): the eager Llama-style modules above. n: the elements of
 * the shared input (the gathered one under sequence parallel). */
static void eager_fanout(ab *x, plan_block *b, uint32_t k, uint64_t n)
{
    if (eager_llama(x) && k > 1) eltwise_k(x, b, 0, 3 * (uint64_t)(k - 1) * n * x->c, 0, k - 1);
}

/* PyTorch's experimental context_parallel around the attention core
 * (torch/distributed/tensor/experimental/_attention.py, the same code path
 * in pytorch/pytorch f2127dbd and 0123248a: _templated_ring_attention and
 * its backward, load balancing and fp32 accumulation on, their defaults),
 * on cp ranks, qn, on and kvn the local query, output and K + V elements.
 * The core's FLOPs are the ones costed above (load balancing gives each
 * rank its share); what this adds is the memory-bound work around the cp
 * SDPA calls, counted on the last CP rank, which merges every step whole
 * (the others merge some steps on half the queries) and paces the group:
 *   forward  K and V made contiguous (2 kvn c), their concatenation for the
 *            exchange before each of the first cp - 1 steps (2 kvn c each),
 *            each step's output cast to fp32 (on (c + 4)), each later
 *            step's merge, out - sigmoid(lse' - lse) * (out - out') in
 *            three passes over fp32 outputs (32 on; the logsumexp's
 *            updates are 1/d of that, left out), the result cast back
 *            (on (4 + c)): 3 + 9 (cp - 1) + cp kernels, the further
 *            cp - 1 SDPA calls among them;
 *   backward fp32 zeros for dQ, dK, dV (4 (qn + kvn)), K and V contiguous
 *            and concatenated as forward, each step's dQ added into fp32
 *            (qn (8 + c)), the first step's dK and dV added (kvn (8 + c)),
 *            each later step's added into the first half of the buffer
 *            received (kvn (8 + c) / 2) and the halves joined again (8
 *            kvn), every step's dK and dV concatenated for the send (8 kvn),
 *            dQ and the last dK, dV cast back ((qn + kvn)(4 + c)): 9 +
 *            8 (cp - 1) + 2 cp kernels, three per further flash backward
 *            among them.
 * The exchanges themselves are collectives (sched/mp.c, torch_cp_pre). */
static void torch_cp_passes(ab *x, plan_block *b, uint64_t qn, uint64_t on, uint64_t kvn)
{
    uint64_t n = x->cp, c = x->c, k = n - 1;
    uint64_t fwd = 2 * kvn * c * n + on * (c + 4) * n + 32 * on * k + on * (4 + c);
    uint64_t bwd = 4 * (qn + kvn) + 2 * kvn * c * n + qn * (8 + c) * n + kvn * (8 + c) +
                   k * (kvn * (8 + c) / 2 + 8 * kvn) + 8 * kvn * n + (qn + kvn) * (4 + c);
    eltwise_k(x, b, fwd, bwd, (uint32_t)(3 + 9 * k + n), (uint32_t)(9 + 8 * k + 2 * n));
}

/* A transformer block's input as its linears keep it for their weight
 * gradients (bytes), and what its sequence-parallel gather moves. Megatron
 * keeps the rank's 1/tp shard and gathers it again in backward; PyTorch's
 * DTensor keeps the gathered tensor (the redistribute's output is the
 * matmuls' saved input), in fp8 where torchao's PrepareFloat8ModuleInput
 * casts before it gathers (torchao/float8/float8_tensor_parallel.py, which
 * torchtitan's apply_tp used with Float8 at ba2469780). */
static uint64_t sp_input(ab *x, plan_block *b, uint64_t h)
{
    if (!x->dtensor_sp) return x->t * h / x->sp * x->lc;
    uint64_t e = x->fp8_ag ? 1 : x->lc;
    b->tp_ag_bytes = x->t * h * e;
    return x->t * h * e;
}

/* The gradients an attention block's backward holds inside it at the
 * core's backward, in bytes: the output projection's input gradient (the
 * core's dO) and the core's dQ, dK and dV, with what the kernel adds:
 * FlashAttention-2 (mha_bwd, csrc/flash_attn/flash_api.cpp at 765fbd92;
 * PyTorch's SDPA flash backend runs it) an fp32 dQ accumulator and, for
 * grouped KV heads, dK and dV at every query head before they are summed;
 * FlashAttention-3 (hopper/flash_api.cpp at 0e79d711) the fp32 dQ
 * accumulator and, grouped, fp32 dK and dV accumulators; the unfused
 * composite its score gradients (`dscores`, unfused_core). cuDNN's and
 * Triton's workspaces are not published: dO, dQ, dK and dV alone. q, kv
 * and o are elements of the
 * queries, keys with values, and output; qe the queries' elements at the
 * query heads' K and V width (grouped KV expanded). */
static uint64_t attn_bwd_tmp(const ab *x, uint64_t q, uint64_t kv, uint64_t o, uint64_t qe,
                             bool grouped, uint64_t dscores)
{
    uint64_t c = x->c, n = (o + q + kv) * c;
    switch (x->p->s->attn_impl) {
    case SPEC_ATTN_FLASH: return n + 4 * q + (grouped ? qe * c : 0);
    case SPEC_ATTN_FLASH3: return n + 4 * q + (grouped ? 4 * kv : 0);
    case SPEC_ATTN_UNFUSED: return n + dscores;
    default: return n;
    }
}

/* Saved tensors of attention besides the input (bytes), and the core's
 * output, which selective recomputation drops. */
static void attention(ab *x, unsigned l)
{
    const spec_arch *a = x->a;
    uint64_t t = x->t, h = a->hidden, s = x->p->s->seq_len, bs = x->p->s->micro_batch;
    uint64_t heads = a->heads / x->tp;
    plan_block *b = blk(x, "layers.%u", "layers.%u.attn", l);
    x->mm = 0;
    norm(x, b, h);
    /* rope_heads x rope_dim: the query and key features rotary embedding
     * touches (MLA: one key head of qk_rope_dim shared by all queries). */
    uint64_t dqk, dv, kv_saved, kv_cp = 0, rope_heads, rope_dim, qk_saved = 0, kv_core;
    bool grouped = false;
    if (a->kv_lora_rank) { /* MLA: down projections whole on every TP rank */
        dqk = a->qk_nope_dim + a->qk_rope_dim, dv = a->v_head_dim;
        linear(x, b, h, a->q_lora_rank, t);
        norm(x, b, a->q_lora_rank);
        linear_col(x, b, a->q_lora_rank, a->heads * dqk, t);
        linear(x, b, h, a->kv_lora_rank + a->qk_rope_dim, t);
        norm(x, b, a->kv_lora_rank);
        linear_col(x, b, a->kv_lora_rank, a->heads * (a->qk_nope_dim + dv), t);
        kv_saved = t * (a->q_lora_rank + a->kv_lora_rank + a->qk_rope_dim + heads * (dqk + dv));
        kv_cp = kv_core = t * heads * (dqk + dv);
        rope_heads = heads + 1, rope_dim = a->qk_rope_dim;
    } else {
        dqk = dv = a->head_dim;
        /* KV heads split over tp, or replicated when there are fewer. */
        uint64_t kvh = a->kv_heads >= x->tp ? a->kv_heads / x->tp : 1;
        linear_col(x, b, h, a->heads * dqk, t);
        linear(x, b, h, kvh * dqk, t);
        linear(x, b, h, kvh * dv, t);
        qkv_bias(x, b, a->heads / x->tp * dqk + kvh * (dqk + dv));
        qk_saved = qk_norm(x, b, t * (heads + kvh) * dqk);
        kv_saved = kv_cp = kv_core = t * kvh * (dqk + dv);
        grouped = kvh < heads;
        /* training.repeat_kv: K and V repeated to every query head before
         * SDPA, whose inputs PyTorch's context_parallel exchanges */
        if (x->torch_cp && x->p->s->repeat_kv) kv_cp = t * heads * (dqk + dv);
        rope_heads = heads + kvh, rope_dim = a->head_dim;
    }
    x->to_residual = true;
    linear_row(x, b, a->heads * dv, h, t);
    x->to_residual = false;
    if (!b) return;
    /* Rotary embedding (read and write); learned absolute positions are
     * added in the embedding instead. */
    if (!a->max_positions) {
        rotary(x, b, t * rope_heads * rope_dim);
    }
    residual(x, b);
    /* Causal context parallel with load-balanced chunks: each rank's s / cp
     * queries see s / 2 keys on average, as without it. */
    double q = (double)s / x->cp;
    double core = (double)bs * heads * q * s * (dqk + dv);
    double g = cbrt(q * s * dqk), rate_seq = q;
    if (spec_arch_sliding(a, l) && x->p->s->attn_impl != SPEC_ATTN_UNFUSED && a->window < s) {
        /* The fused kernels skip the blocks outside the window: a query at
         * position i sees min(i + 1, w) keys, (w (w + 1) / 2 + (s - w) w) / s
         * on average against the causal (s + 1) / 2; each query block
         * walks ~w keys, as in a causal sequence of 2w (the rate's length) */
        double w = (double)a->window, sd = (double)s;
        core *= (w * (w + 1) / 2 + (sd - w) * w) / (sd * (sd + 1) / 2);
        if (2 * w < rate_seq) rate_seq = 2 * w;
    }
    uint64_t out = t * heads * dv * x->c, lse = t * heads * 4;
    uint64_t probs = 0, dscores = 0;
    ss_ns core_ns;
    if (x->p->s->attn_impl == SPEC_ATTN_UNFUSED) {
        core_ns = unfused_core(x, b, g, core, (double)bs * heads * q * (double)s, &probs,
                               &dscores);
        lse = 0;
    } else {
        core_ns = ss_ns_from_s(core / plan_attn_rate(x->p, rate_seq, g, false));
        b->fwd_flops += (uint64_t)core;
        b->bwd_flops += (uint64_t)(2.5 * core);
        b->fwd_ns += core_ns;
        b->bwd_ns += ss_ns_from_s(2.5 * core / plan_attn_rate(x->p, rate_seq, g, true));
        /* FlashAttention-2's backward: dot(dO, O), the main kernel, dQ's
         * conversion (flash-attn's run_mha_bwd) */
        b->fwd_kernels += 1, b->bwd_kernels += 3;
        /* Selective recomputation (Megatron's, whichever runtime names it)
         * checkpoints the core: a fused kernel re-runs its forward in
         * backward to rebuild the output it did not keep, as Transformer
         * Engine's DotProductAttention does under checkpoint_core_attention
         * (DECISIONS 144); with cp > 1 the re-run's K and V exchange is not
         * emitted again */
        if (x->p->s->recompute == SPEC_RECOMP_SELECTIVE) {
            b->bwd_flops += (uint64_t)core;
            b->bwd_ns += core_ns;
            b->bwd_kernels += 1;
        }
    }
    if (!a->kv_lora_rank && x->p->s->attn_impl != SPEC_ATTN_UNFUSED)
        eager_sdpa_layout(x, b, kv_saved, t * heads * (dqk + dv), t * heads * dv);
    if (!a->kv_lora_rank) eager_fanout(x, b, 3, t * h);
    /* Under Transformer Engine's fp8 the QKV projection keeps its input as
     * its fp8 cast and the output projection an fp8 copy of the core's
     * output, which the core keeps in 16 bits for its own backward */
    uint64_t in_kept = sp_input(x, b, h), out_fp8 = x->lc < x->c ? t * heads * dv * x->lc : 0;
    keep(x, b, in_kept + (t * heads * dqk + kv_saved + qk_saved) * x->c + out + out_fp8 + lse +
                   probs);
    b->recompute_bytes = out + probs;
    b->bwd_tmp_bytes = attn_bwd_tmp(x, t * heads * dqk, kv_core, t * heads * dv,
                                    t * heads * (dqk + dv), grouped, dscores);
    b->bwd_tmp_n = 1;
    /* selective_op keeps the attention output with its logsumexp (the
     * layer's input too, which is the previous block's output, held as
     * that); the kernel's own time is not re-run. */
    op_sac(x, b, out + lse, core_ns, (uint64_t)core);
    if (x->cp > 1) b->cp_bytes = kv_cp * x->c * x->cp;
    if (x->torch_cp) {
        torch_cp_passes(x, b, t * heads * dqk, t * heads * dv, kv_cp);
        b->cp_dkv_bytes = kv_cp * 4;
    }
    blk_done(x, b);
}

/* The gradients an MLP's backward holds inside it, on n = tokens x width
 * elements (autograd frees a node's saved tensors once the node has run). The down
 * projection's input gradient dm comes first, while its saved input is
 * still held: f. Gated, the activation's backward then makes the two input
 * gradients while dm lives and the down projection's input is gone: 2f in
 * eager PyTorch (the mul's two, then the silu's over the mul's freed ones:
 * act(a) * b in Hugging Face's LlamaMLP and torchtitan's FeedForward),
 * under torch.compile (one kernel writing both) and in Megatron-core
 * (bias_swiglu's swiglu_back returns their concatenation,
 * megatron/core/fusions/fused_bias_swiglu.py); Liger-Kernel's SwiGLU writes
 * them over its saved inputs (ops/swiglu.py swiglu_backward at v0.8.0):
 * f. Plain activations make one input gradient as the output's goes: f. */
static void mlp_bwd_tmp(const ab *x, plan_block *b, uint64_t n)
{
    bool gated = spec_act_mats(x->a->act) == 3;
    bool in_place = x->p->s->kernels == SPEC_KERNELS_LIGER;
    b->bwd_tmp_bytes = n * x->c;
    b->bwd_tmp_n = gated && !in_place ? 2 : 1;
}

/* One expert-sized MLP (or the dense MLP): params and, for m tokens, GEMMs. */
static void mlp_weights(ab *x, plan_block *b, uint64_t f, uint64_t m, bool params)
{
    const spec_arch *a = x->a;
    uint64_t h = a->hidden, mats = spec_act_mats(a->act);
    if (params)
        for (uint64_t i = 0; i < mats; i++) {
            /* up (and gate) [f, h], then down [h, f]: experts are separate
             * nn.Linear modules here, each sharded on its own dim 0. */
            uint64_t rows = i + 1 == mats ? h : f;
            param(x, b, h * f, rows);
            if (a->bias) param(x, b, rows, rows);
        }
    for (uint64_t i = 0; i + 1 < mats; i++) gemm(x, b, m, h, f);
    x->to_residual = true;
    gemm(x, b, m, f, h);
    x->to_residual = false;
}

/* The MLP's forward tail (plan_block.tail_ns): the residual add (add_ns)
 * and the down projection, whose input is the layer's last tensor backward
 * reads. An aten GEMM saves its inputs before it runs (autograd's
 * generated code), so an early-stopping recomputation ends before it; a
 * custom autograd Function saves after its forward has run: torchao's and
 * Transformer Engine's fp8 linears run the GEMM, leaving the add. Under
 * torch.compile the partitioner re-runs only what backward reads: neither. */
static void mlp_tail(ab *x, plan_block *b, ss_ns add_ns)
{
    bool gemm = x->p->s->prec.compute != SPEC_DT_FP8 || x->p->s->kernels == SPEC_KERNELS_COMPILED;
    b->tail_ns = add_ns + (gemm ? x->tail_ns : 0);
    b->tail_flops = gemm ? x->tail_flops : 0;
    b->tail_kernels = 1 + (gemm ? x->tail_kernels : 0);
}

static void mlp(ab *x, unsigned l)
{
    const spec_arch *a = x->a;
    plan_block *b = blk(x, "layers.%u", "layers.%u.mlp", l);
    norm(x, b, a->hidden);
    mlp_weights(x, b, a->ffn_hidden / x->tp, x->t, true);
    activation(x, b, x->t, a->ffn_hidden / x->tp);
    eager_fanout(x, b, spec_act_mats(a->act) - 1, x->t * a->hidden); /* gated: w1 and w3 */
    ss_ns before = b ? b->fwd_ns : 0;
    residual(x, b);
    if (!b) return;
    mlp_tail(x, b, b->fwd_ns - before);
    /* kept: the up projection's input and outputs and the down projection's
     * input; the projections' inputs as x->lc bytes (their fp8 casts under
     * Transformer Engine's fp8), the activation's input in 16 bits */
    uint64_t inter = spec_act_mats(a->act), f = a->ffn_hidden / x->tp;
    keep(x, b, sp_input(x, b, a->hidden) + x->t * ((inter - 1) * f * x->c + f * x->lc));
    mlp_bwd_tmp(x, b, x->t * f);
    op_sac(x, b, 0, 0, 0);
    /* selective_op checkpoints the layer whole: the residual between its
     * attention and its MLP is an add's output, dropped once the MLP has
     * read it and recomputed for the MLP's backward */
    if (x->op_sac) {
        b->recompute_input = true;
        b->recompute_bytes += b->in_bytes;
    }
    blk_done(x, b);
}

/* The memory-bound work around the experts in Megatron-core's MoE layer
 * with its alltoall token dispatcher and Transformer Engine's kernels
 * (NVIDIA/Megatron-LM megatron/core/transformer/moe/ at 0d8e0714, the
 * core_r0.15 submodule of Megatron-Bridge 0.2; TE 2.9; DECISIONS 146),
 * each a kernel forward and one backward unless said, on ts tokens of h,
 * `sent` routed rows leaving the rank and `routed` arriving:
 *   router: the fused top-k softmax, the aux-loss scores and the aux loss
 *     (3 small kernels over the ts x E fp32 scores);
 *   permute (moe_permute_fusion): 3 row-id-map passes over the ts x E
 *     routing map and the permute reading ts h and writing sent h (and the
 *     fp32 probabilities), one kernel back on the saved map in backward;
 *     unpermute after the combine, one kernel each way;
 *   with more than one local expert, sort_chunks_by_idxs into expert order
 *     after the dispatch and back before the combine (a row-id map and the
 *     sort forward, the sort alone backward, reading and writing routed h);
 *   with fp8 GEMMs, Fp8Padding of the tokens and of the probabilities to
 *     multiples of 16 rows per expert and Fp8Unpadding of the output (one
 *     pass each over routed h; moe_router_padding_for_quantization is off
 *     by default, and forced-balance routing leaves counts unaligned).
 * Bytes are c a hidden element; the probabilities, 4 bytes a row. */
static void moe_glue_megatron(ab *x, plan_block *b, uint64_t ts, uint64_t sent, uint64_t routed,
                              uint64_t local)
{
    uint64_t h = x->a->hidden, c = x->c, E = x->a->experts;
    /* three passes reading and writing a ts x E fp32 array: the router's
     * scores, and in the same shape the permute's row-id maps */
    uint64_t scores = 3 * 2 * ts * E * 4;
    uint64_t perm = ts * h * c + sent * (h * c + 4), rows = 2 * routed * (h * c + 4);
    eltwise_k(x, b, scores, scores, 3, 3);                   /* router */
    eltwise_k(x, b, scores + perm, perm, 4, 1);              /* permute */
    eltwise_k(x, b, perm, perm, 1, 1);                       /* unpermute */
    if (local > 1) eltwise_k(x, b, 2 * rows, 2 * rows, 4, 2); /* sort, unsort */
    if (x->p->s->prec.compute == SPEC_DT_FP8) eltwise_k(x, b, 2 * rows, 2 * rows, 3, 3);
}

/* A rank holds E / ep experts, each split over its ETP group (1 / etp of
 * every expert FFN, Megatron-core's expert tensor parallel). It receives
 * from its EP group the tokens routed to its experts, on average its own
 * routed tokens (ts k cf, ts its share of the sequence) times the
 * imbalance on the busiest rank; with etp > 1 the ETP group all-gathers
 * them (etp times as many tokens at 1 / etp of the FFN width: the same
 * FLOPs, narrower GEMMs) and reduce-scatters the outputs. */
static void moe(ab *x, unsigned l)
{
    const spec_arch *a = x->a;
    uint64_t t = x->t, ts = t / x->sp, h = a->hidden, fe = a->expert_ffn_hidden;
    uint64_t local = a->experts / x->ep, fl = fe / x->etp;
    plan_block *b = blk(x, "layers.%u", "layers.%u.moe", l);
    norm(x, b, h);
    param(x, b, h * a->experts, a->experts); /* router: nn.Linear(h, E) */
    x->hp = true; /* Float8 recipes leave the router in bf16 */
    gemm(x, b, ts, h, a->experts);
    x->hp = false;
    uint64_t sent = (uint64_t)ceil((double)ts * a->top_k * a->capacity_factor);
    uint64_t routed = (uint64_t)ceil((double)sent * x->p->s->par.expert_imbalance) * x->etp;
    uint64_t per = ss_div_ceil(routed, local);
    uint64_t before = b ? b->numel : 0;
    for (uint64_t e = 0; e < local && !x->rc; e++) mlp_weights(x, b, fl, 0, true);
    if (b) b->expert_numel = b->numel - before;
    /* The experts' GEMMs, `per` tokens each: grouped, one kernel per
     * projection for all E / ep; per expert, one expert's costs E / ep times. */
    bool grouped = x->p->s->moe_gemm == SPEC_MOE_GEMM_GROUPED;
    plan_block one = {0};
    x->groups = grouped ? local : 1;
    mlp_weights(x, &one, fl, per, false);
    x->groups = 1;
    uint64_t times = grouped ? 1 : local;
    if (b) {
        b->fwd_ns += one.fwd_ns * times;
        b->bwd_ns += one.bwd_ns * times;
        b->fwd_kernels += one.fwd_kernels * (uint32_t)times;
        b->bwd_kernels += one.bwd_kernels * (uint32_t)times;
        b->fwd_flops += one.fwd_flops * times;
        b->bwd_flops += one.bwd_flops * times;
    }
    for (uint64_t e = 0; e < a->shared_experts; e++) mlp_weights(x, b, fe / x->tp, t, true);
    /* Activations of the routed and shared experts; the routed tokens are
     * permuted into expert order and back. */
    activation(x, b, routed, fl);
    if (a->shared_experts) activation(x, b, t * a->shared_experts, fe / x->tp);
    if (x->p->s->shard.strategy == SPEC_MEGATRON) moe_glue_megatron(x, b, ts, sent, routed, local);
    else eltwise(x, b, 4 * routed * h * x->c, 4 * routed * h * x->c); /* a gather, a scatter */
    residual(x, b);
    if (!b) return;
    uint64_t inter = spec_act_mats(a->act), fs = fe / x->tp;
    keep(x, b, ts * h * x->c + routed * (h * x->lc + (inter - 1) * fl * x->c + fl * x->lc) +
                   t * a->shared_experts * ((inter - 1) * fs * x->c + fs * x->lc) +
                   ts * a->experts * 4);
    if (x->ep > 1) b->ep_bytes = sent * h * x->c;
    if (x->p->s->shard.strategy == SPEC_MEGATRON) {
        /* the counts: E int64s a rank; the all-gather's group is Megatron's
         * tp_ep group (etp x ep ranks), costed on the EP group (or the ETP
         * group without EP) with its bytes */
        if (x->ep > 1) b->ep_probs_bytes = sent * 4;
        if ((x->ep > 1 || x->etp > 1) && !x->p->s->par.moe_pad_to_capacity)
            b->ep_counts_bytes = a->experts * 8 * x->etp;
        if (x->tp > 1) b->moe_tpe_bytes = a->experts * 8;
    }
    if (x->etp > 1) b->etp_bytes = sent * x->etp * h * x->c;
    if (!a->shared_experts) b->tp_bytes = 0; /* routed tokens stay split over tp */
    /* The experts' backward, as an MLP's (mlp_bwd_tmp): grouped GEMMs run
     * every routed token at once, per-expert ones one expert's; the shared
     * experts are MLPs of their own, run one after another. */
    uint64_t rows = grouped ? routed : per, shared = a->shared_experts ? t * fs : 0;
    mlp_bwd_tmp(x, b, rows * fl > shared ? rows * fl : shared);
    blk_done(x, b);
}

/* Cross-entropy over e logits of c bytes each (training.loss), as the
 * kernels each implementation launches read and write them, and the
 * tensors its autograd holds. The upcast to fp32 is a copy of (c + 4) e
 * bytes each way (logits.float(), and its backward casting the gradient
 * down: the loss's last backward kernel, loss_cast_ns), none when c is
 * already 4.
 *   eager (ATen's SoftMax.cu and LossNLL.cu): log_softmax forward reads
 *     the row three times (max, sum of exponentials, the output pass) and
 *     writes it, 16 e; nll_loss reads one element a row. Backward:
 *     nll_loss's zero-filled gradient 4 e, log_softmax's backward reads
 *     the gradient twice (its sum, then the output pass) and the output
 *     once and writes, 16 e. Kernels 2 + 3, plus the casts. Memory:
 *     log_softmax saves its fp32 output; the fp32 copy of the logits lives
 *     through the forward; nll_loss's gradient and log_softmax's (fp32)
 *     are live together with the saved output, 12 e, before the cast.
 *   vocab_parallel (Megatron-core tensor_parallel/cross_entropy.py, core
 *     r0.8.0 baf94af3): max 4 e, in-place subtract 8 e, in-place exp 8 e,
 *     sum 4 e, in-place divide 8 e; backward the in-place scale by the
 *     output gradient 8 e. Kernels 5 + 1, plus the casts. Memory: the fp32
 *     copy becomes the saved softmax (ctx.save_for_backward(exp_logits))
 *     and then, in place, the gradient the cast reads.
 *   fused: the logits read twice forward (max, then the sum of
 *     exponentials), read and the gradient written backward: 2 c e each
 *     way, one kernel each. Memory: none besides the logits, which the
 *     kernel overwrites with their gradient (Transformer Engine's
 *     cross_entropy.py, the kernel Megatron's --cross-entropy-fusion-impl
 *     te runs).
 *   compiled (inductor's code for F.cross_entropy(logits.float()) under
 *     torch.compile): the upcast fused into the kernels, the same passes
 *     as fused; the partitioner saves the graph's input, the logits (c e;
 *     the fp32 log-probabilities it can recompute pointwise from them and
 *     the per-row reductions, which it saves instead), and backward writes
 *     the gradient, cast down inside the kernel, as a tensor of its own: 2c
 *     e at the loss's backward. */
static void loss_cost(ab *x, uint64_t e)
{
    plan *p = x->p;
    spec_loss impl = p->s->loss;
    bool one_pass = impl == SPEC_LOSS_FUSED || impl == SPEC_LOSS_COMPILED;
    uint64_t c = x->c, up = c < 4 && !one_pass ? (c + 4) * e : 0;
    uint64_t f = 2 * c * e, g = 2 * c * e;
    uint32_t kf = 1, kb = 1;
    p->loss_saved = p->loss_fwd_tmp = p->loss_bwd_tmp = p->loss_grad32 = 0;
    p->loss_grad_in_saved = impl == SPEC_LOSS_VOCAB_PARALLEL;
    p->loss_grad_in_logits = impl == SPEC_LOSS_FUSED;
    p->loss_grads_in_fwd = false;
    if (impl == SPEC_LOSS_EAGER) {
        f = up + 16 * e, g = 20 * e, kf = up ? 3 : 2, kb = 3;
        p->loss_saved = 4 * e, p->loss_bwd_tmp = 4 * e;
        p->loss_fwd_tmp = p->loss_grad32 = up ? 4 * e : 0;
    } else if (impl == SPEC_LOSS_VOCAB_PARALLEL) {
        f = up + 32 * e, g = 8 * e, kf = up ? 6 : 5, kb = 1;
        p->loss_saved = 4 * e;
    } else if (impl == SPEC_LOSS_COMPILED) {
        p->loss_saved = c * e;
    }
    p->loss_fwd_ns = plan_kernels_ns(p, f, kf);
    p->loss_bwd_ns = plan_kernels_ns(p, g, kb);
    p->loss_cast_ns = up ? plan_kernels_ns(p, up, 1) : 0;
    p->loss_fwd_kernels = kf, p->loss_bwd_kernels = kb;
}

/* Liger-Kernel's FusedLinearCrossEntropy (training.loss fused_linear;
 * src/liger_kernel/ops/fused_linear_cross_entropy.py at v0.8.0,
 * c4b16d43): the head and the loss over the t tokens in chunks of
 * next_pow2(ceil(t / ceil(v / h))) rows, so that a chunk's logits are
 * about the size of the head's input, and all three of the head's GEMMs in
 * the forward: per chunk the logits, the cross-entropy kernel writing their
 * gradient in place (the row read twice, written once: 3 c a logit), the
 * input gradient's rows, and the weight gradient's product, copied to fp32
 * and added into the weight gradient (the product written, c; .float()
 * reads c, writes 4; the add reads 4 and c, writes c: 4 c + 8 a weight
 * element a chunk). The backward only scales the kept gradients, and only
 * when the loss's gradient is not 1: it is 1 in a step that does not scale
 * the loss after it, so it costs nothing here. Memory: the input gradient
 * (t h c), the weight gradient (v h c) and the fp32 per-token losses live
 * from the forward to the backward; a chunk's logits (the head's output
 * here) and the weight-gradient product with its fp32 copy (v h (c + 4))
 * only within a chunk. */
static void fused_linear_loss(ab *x, plan_block *b)
{
    plan *p = x->p;
    uint64_t h = x->a->hidden, v = x->a->vocab / x->tp, t = x->t, c = x->c;
    uint64_t inc = (v + h - 1) / h, rows = 1;
    while (rows < (t + inc - 1) / inc) rows *= 2;
    if (rows > t) rows = t;
    uint64_t full = t / rows, rest = t % rows, chunks = full + (rest != 0);
    plan_lin lc, lr = {0};
    plan_linear(p, x->hp, 1, rows, h, v, &lc);
    if (rest) plan_linear(p, x->hp, 1, rest, h, v, &lr);
    b->out_bytes = rows * v * c;
    b->fwd_ns = full * (lc.fwd + lc.bwd) + lr.fwd + lr.bwd;
    b->fwd_flops = 6 * t * h * v;
    b->fwd_kernels = (uint32_t)(chunks * (lc.fwd_kernels + lc.bwd_kernels));
    b->bwd_ns = 0, b->bwd_flops = 0, b->bwd_kernels = 0;
    uint64_t f = 3 * c * t * v + chunks * (4 * c + 8) * v * h + (t * h + v * h) * c;
    uint32_t kf = (uint32_t)(3 * chunks + 2); /* per chunk the loss, .float(), the add; two zero fills */
    p->loss_fwd_ns = plan_kernels_ns(p, f, kf);
    p->loss_bwd_ns = p->loss_cast_ns = 0;
    p->loss_fwd_kernels = kf, p->loss_bwd_kernels = 0;
    p->loss_saved = (t * h + v * h) * c + 4 * t;
    p->loss_fwd_tmp = v * h * (c + 4);
    p->loss_bwd_tmp = p->loss_grad32 = 0;
    p->loss_grad_in_saved = p->loss_grad_in_logits = false;
    p->loss_grads_in_fwd = true;
}

static void output(ab *x)
{
    const spec_arch *a = x->a;
    plan_block *n = blk(x, "output", "norm", 0);
    norm(x, n, a->hidden);
    if (n) n->saved_bytes = 0;
    blk_done(x, n);
    plan_block *b = blk(x, "output", "head", 0);
    x->hp = true; /* Float8 recipes leave the output head in bf16 (torchtitan, TE) */
    if (a->tied_embeddings) gemm(x, b, x->t, a->hidden, a->vocab / x->tp);
    else linear_col(x, b, a->hidden, a->vocab, x->t);
    if (!b) return;
    b->out_bytes = x->t * a->vocab / x->tp * x->c;
    b->saved_bytes = 0; /* the Linear keeps its input; the loss its own (loss_cost) */
    if (x->p->s->loss == SPEC_LOSS_FUSED_LINEAR) fused_linear_loss(x, b);
    else loss_cost(x, x->t * a->vocab / x->tp);
    blk_done(x, b);
}

/* Full recomputation keeps only each layer's input (Megatron's and
 * checkpoint_wrapper's granularity: the transformer layer) and re-runs its
 * forward inside backward; selective drops the attention core's output. */
static void apply_recompute(plan *p)
{
    spec_recompute r = p->s->recompute;
    for (uint32_t i = 0; i < p->nblocks; i++) {
        plan_block *b = &p->blocks[i];
        unsigned l = 0;
        if (sscanf(b->name, "layers.%u", &l) != 1) {
            b->recompute_bytes = 0;
            continue;
        }
        /* training.recompute_every N: the N-th, 2N-th, ... layer (counted
         * from 1, as torchtitan's ac_freq and fms-fsdp's every_xth_item) */
        if (r == SPEC_RECOMP_FULL && (l + 1) % p->s->recompute_every) {
            b->recompute_bytes = 0;
        } else if (r == SPEC_RECOMP_FULL) {
            b->recompute_full = true;
            b->recompute_bytes = b->saved_bytes;
            b->saved_bytes = 0;
            b->recompute_input = i > 0 && strcmp(p->blocks[i - 1].group, b->group) == 0;
            /* an early stop leaves the layer's tail (the last block's) */
            bool last = i + 1 == p->nblocks || strcmp(p->blocks[i + 1].group, b->group) != 0;
            bool stop = p->s->recompute_early_stop && last;
            b->recompute_stops = stop && b->tail_kernels;
            b->bwd_ns += b->fwd_ns - (stop ? b->tail_ns : 0);
            b->bwd_flops += b->fwd_flops - (stop ? b->tail_flops : 0);
            b->bwd_kernels += b->fwd_kernels - (stop ? b->tail_kernels : 0);
        } else if (r == SPEC_RECOMP_SELECTIVE && b->recompute_bytes) {
            b->saved_bytes -= b->recompute_bytes;
        } else if (r == SPEC_RECOMP_SELECTIVE_OP) {
            /* set per block by op_sac */
        } else {
            b->recompute_bytes = 0;
        }
    }
}

/* torchtitan's convention: 6 x (parameters a token uses, without the
 * embedding) + 12 L H Q T for attention. */
static void flops_per_token(plan *p, const spec_arch *a)
{
    double n = 0;
    for (uint32_t i = 0; i < p->nblocks; i++) {
        const plan_block *b = &p->blocks[i];
        if (!strcmp(b->name, "embed")) continue;
        double numel = (double)b->numel;
        if (strstr(b->name, ".moe")) {
            uint64_t mats = spec_act_mats(a->act);
            double expert = (double)(mats * a->hidden * a->expert_ffn_hidden);
            numel -= expert * (double)(a->experts - a->top_k);
        }
        n += numel;
    }
    double q = a->kv_lora_rank ? (a->qk_nope_dim + a->qk_rope_dim + a->v_head_dim) / 2.0
                               : (double)a->head_dim;
    p->flops_per_token = 6.0 * n + 12.0 * a->layers * a->heads * q * (double)p->s->seq_len;
}

int plan_arch_blocks(plan *p, ss_err *err)
{
    const spec_arch *a = &p->s->model.arch;
    const spec_parallel *par = &p->s->par;
    ab x = {.p = p, .a = a, .capb = (uint32_t)(2 * a->layers + 3), .t = p->tokens,
            .c = p->act_elem, .lc = p->saved_in_elem, .err = err, .rc = SS_OK, .tp = 1, .sp = 1, .ep = 1, .cp = 1, .etp = 1,
            .groups = 1};
    if (p->layout) {
        x.tp = par->tp, x.cp = par->cp, x.ep = par->ep, x.etp = par->etp;
        x.sp = par->sequence_parallel ? par->tp : 1;
        x.t = p->tokens / par->cp;
    }
    x.op_sac = p->s->recompute == SPEC_RECOMP_SELECTIVE_OP;
    x.eager = p->s->kernels == SPEC_KERNELS_EAGER;
    x.torch_cp = p->layout && spec_cp_torch(p->s);
    x.dtensor_sp = p->layout && spec_tp_dtensor(p->s) && par->sequence_parallel;
    x.fp8_ag = x.dtensor_sp && p->s->prec.compute == SPEC_DT_FP8 &&
               p->s->prec.fp8_recipe == SPEC_FP8_TENSORWISE;
    if (x.op_sac && a->experts)
        return ss_fail(err, SS_E_INPUT, p->s->file,
                       "$.training.recompute: \"selective_op\" (torchtitan's op-level "
                       "checkpointing) is modelled for dense layers; model %s has MoE layers: "
                       "use none, selective or full", p->s->model.name);
    if (x.op_sac && p->layout && par->tp > 1)
        return ss_fail(err, SS_E_INPUT, p->s->file,
                       "$.training.recompute: \"selective_op\" is modelled without tensor "
                       "parallelism (tp = %u): use none, selective or full",
                       (unsigned)par->tp);
    uint64_t per_layer = 20 + (a->experts + a->shared_experts) * 6;
    if (a->layers * per_layer + 16 > UINT32_MAX)
        return ss_fail(err, SS_E_INPUT, p->s->file, "model %s has too many parameter tensors",
                       p->s->model.name);
    x.capp = (uint32_t)(a->layers * per_layer + 16);
    p->blocks = calloc(x.capb, sizeof *p->blocks);
    p->params = calloc(x.capp, sizeof *p->params);
    if (!p->blocks || !p->params) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    embed(&x);
    for (unsigned l = 0; l < a->layers && !x.rc; l++) {
        attention(&x, l);
        if (a->experts && l >= a->dense_layers) moe(&x, l);
        else mlp(&x, l);
    }
    output(&x);
    if (x.rc) return x.rc;
    apply_recompute(p);
    if (!p->layout) flops_per_token(p, a);
    return SS_OK;
}
