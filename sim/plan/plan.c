#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ss_ns dev_floor(const spec_device *d, ss_ns t)
{
    return t > d->kernel_min_ns ? t : d->kernel_min_ns;
}

ss_ns plan_mem_ns(const plan *p, ss_bytes bytes)
{
    const spec_device *d = &p->s->topo.device;
    return dev_floor(d, ss_ns_from_s((double)bytes / (d->hbm_bw_Bps * d->mem_efficiency)));
}

ss_ns plan_op_host_ns(const plan *p)
{
    const spec_device *d = &p->s->topo.device;
    bool dispatched = p->s->kernels != SPEC_KERNELS_COMPILED && d->op_host_ns > 0;
    return dispatched ? d->op_host_ns : d->launch_ns;
}

ss_ns plan_kernels_ns(const plan *p, ss_bytes bytes, uint32_t k)
{
    ss_ns t = plan_mem_ns(p, bytes), floor = k * p->s->topo.device.kernel_min_ns;
    return t > floor ? t : floor;
}

/* Elementwise passes over one element's bytes per optimizer step, counted
 * from torch's foreach AdamW: lerp (3), mul (2), addcmul (3), sqrt (2),
 * div (2), add (2), weight-decay mul (2), addcdiv (4) = 20 accesses; SGD
 * with momentum: mul+add on the buffer and add on the param = 6. */
static uint32_t optim_accesses(const spec_optimizer_cfg *o)
{
    if (o->type == SPEC_OPT_SGD) return o->momentum ? 6 : 3;
    return 20;
}

ss_ns plan_optim_ns(const plan *p, uint64_t numel)
{
    uint32_t elem = spec_dtype_size(p->s->prec.optim);
    if (elem < p->param_elem) elem = p->param_elem;
    return plan_mem_ns(p, numel * elem * optim_accesses(&p->s->opt));
}

/* Roofline of one GEMM m x k x n in the compute dtype. Small GEMMs are far
 * from peak: efficiency = gemm_efficiency * g / (g + gemm_half_dim), g the
 * geometric mean of the three dimensions (flat when gemm_half_dim is 0). */
static double gemm_rate_dt(const plan *p, spec_dtype dt, double g)
{
    const spec_device *d = &p->s->topo.device;
    const spec_gemm_cal *c = &d->gemm_cal[dt];
    if (c->present) { /* measured (calibration profile) */
        double gp = pow(g, c->p);
        return c->peak_flops * c->e_max * gp / (gp + pow(c->d_half, c->p));
    }
    double e = dt == SPEC_DT_FP8 ? d->gemm_efficiency_fp8 : d->gemm_efficiency;
    double eff = e * (d->gemm_half_dim > 0 ? g / (g + d->gemm_half_dim) : 1.0);
    return d->peak_flops[dt] * eff;
}

static bool fp8(const plan *p)
{
    return p->s->prec.compute == SPEC_DT_FP8;
}

/* The dtype of the GEMMs that stay in 16 bits under fp8 compute, else the
 * compute dtype. */
static spec_dtype dt16(const plan *p)
{
    return fp8(p) ? p->dt16 : p->s->prec.compute;
}

double plan_gemm_rate(const plan *p, double g)
{
    return gemm_rate_dt(p, dt16(p), g);
}

/* Past a table's last point `b` (a the one before), a causal kernel's rate
 * as a multiple of b's. The causal kernel falls short of the non-causal
 * one by the share of the work its diagonal blocks and the triangle's
 * uneven rows cost, a share that shrinks as the sequence grows; past the
 * table it keeps shrinking by the ratio it shrank from a to b, per factor
 * b.seq / a.seq of length (FlashAttention-3's chart on H100: 6.8% at 8k,
 * 4.9% at 16k, 0.72 a doubling; FlashAttention-2's 0.95; cuDNN's 0.80).
 * The backward, taken at the forward's causal / non-causal ratio
 * (machine.c), moves with it. Without the non-causal rates, or where the
 * shortfall did not shrink, the rate is held. */
static double beyond(const spec_attn_point *a, const spec_attn_point *b, double seq)
{
    if (a->full_flops <= 0 || b->full_flops <= 0) return 1.0;
    double da = 1.0 - a->fwd_flops / a->full_flops, db = 1.0 - b->fwd_flops / b->full_flops;
    if (da <= 0 || db <= 0 || db >= da) return 1.0;
    double steps = log2(seq / b->seq) / log2(b->seq / a->seq);
    return (1.0 - db * pow(db / da, steps)) / (1.0 - db);
}

double plan_attn_rate(const plan *p, double seq, double g, bool backward)
{
    const spec_device *d = &p->s->topo.device;
    spec_dtype dt = dt16(p);
    /* the implementation's table (the loader saw to it that there is one
     * for cudnn and flash3) */
    const spec_attn_table *t = p->s->attn_impl == SPEC_ATTN_CUDNN    ? &d->attn_cudnn
                               : p->s->attn_impl == SPEC_ATTN_FLASH3 ? &d->attn_flash3
                                                                     : &d->attn;
    const spec_attn_point *a = t->pt;
    uint32_t n = t->n;
    if (!n || (dt != SPEC_DT_BF16 && dt != SPEC_DT_FP16)) return plan_gemm_rate(p, g);
    uint32_t i = 0;
    while (i + 1 < n && a[i + 1].seq < seq) i++;
    const spec_attn_point *lo = &a[i], *hi = &a[i + 1 < n ? i + 1 : i];
    double f = p->s->attn_impl == SPEC_ATTN_TRITON ? d->attn_triton_fraction : 1.0;
    double rlo = f * (backward ? lo->bwd_flops : lo->fwd_flops);
    double rhi = f * (backward ? hi->bwd_flops : hi->fwd_flops);
    if (lo == hi && n > 1 && seq > lo->seq) return rlo * beyond(&a[n - 2], lo, seq);
    if (seq <= lo->seq || lo == hi) return rlo; /* below the table, or beyond its end */
    if (seq >= hi->seq) return rhi;
    double w = log(seq / lo->seq) / log(hi->seq / lo->seq);
    return rlo + w * (rhi - rlo);
}

/* The GEMM kernel's fixed time in dtype dt: the device's gemm_floor, but
 * none where a calibration profile measured the dtype's GEMMs (its curve
 * was fitted to kernel times that include it). */
static double floor_s(const plan *p, spec_dtype dt)
{
    const spec_device *d = &p->s->topo.device;
    return d->gemm_cal[dt].present ? 0.0 : (double)d->gemm_floor_ns * 1e-9;
}

/* Transformer Engine's GroupedLinear (Megatron-core's grouped experts)
 * runs one cuBLASLt GEMM per problem, round-robin over 4 side streams
 * (transformer_engine/common/gemm/cublaslt_gemm.cu, multi_stream_cublas_gemm;
 * util/multi_stream.cpp: 4 streams; TE 2.9): its fixed time is paid once
 * per 4 problems. Other grouped GEMMs (torch's grouped_mm, the
 * grouped_gemm library) are one kernel. */
#define TE_GEMM_STREAMS 4

/* Megatron-core runs its linears as Transformer Engine's modules. */
static bool te(const plan *p) { return p->s->shard.strategy == SPEC_MEGATRON; }

static double te_fixed_times(const plan *p, uint64_t groups)
{
    if (groups < 2 || !te(p)) return 1.0;
    return (double)((groups + TE_GEMM_STREAMS - 1) / TE_GEMM_STREAMS);
}

/* A roofline of one GEMM kernel running `groups` problems m x k x n (a
 * grouped GEMM; 1 for a plain one): their FLOPs at `rate` (the rate of one
 * problem's shape) after the kernel's fixed time, or their bytes (inputs
 * of `in` bytes per element, outputs of `out`) at the memory bandwidth. */
static ss_ns roofline(const plan *p, spec_dtype dt, double rate, uint32_t in, uint32_t out,
                      uint64_t groups, uint64_t m, uint64_t k, uint64_t n)
{
    const spec_device *d = &p->s->topo.device;
    double gr = (double)groups;
    double flops = 2.0 * (double)m * (double)k * (double)n * gr;
    double bytes = ((double)(m * k + k * n) * in + (double)(m * n) * out) * gr;
    double tc = floor_s(p, dt) * te_fixed_times(p, groups) + flops / rate;
    double tm = bytes / (d->hbm_bw_Bps * d->mem_efficiency);
    return dev_floor(d, ss_ns_from_s(tc > tm ? tc : tm));
}

static ss_ns gemm_ns(const plan *p, uint64_t groups, uint64_t m, uint64_t k, uint64_t n)
{
    double g = cbrt((double)m * (double)k * (double)n);
    return roofline(p, dt16(p), plan_gemm_rate(p, g), p->act_elem, p->act_elem, groups, m, k,
                    n);
}

ss_ns plan_gemm_ns(const plan *p, uint64_t m, uint64_t k, uint64_t n)
{
    return gemm_ns(p, 1, m, k, n);
}

static ss_ns gemm8_ns(const plan *p, uint64_t groups, uint64_t m, uint64_t k, uint64_t n)
{
    double g = cbrt((double)m * (double)k * (double)n);
    return roofline(p, SPEC_DT_FP8, gemm_rate_dt(p, SPEC_DT_FP8, g), 1, p->act_elem, groups, m,
                    k, n);
}

/* Casting e elements of a 16-bit tensor to fp8 for a GEMM, `ways` layouts
 * written (the backward needs a transposed copy for the weight gradient).
 * Dynamic (current) scaling needs the tensor's amax before its scale: an
 * amax pass (read 2) and a cast (read 2, write 1 per layout), in eager
 * torchao and in Transformer Engine alike (TE's
 * Float8CurrentScalingQuantizer: amax, scale, quantize; "amax ... can not
 * be fused with quantize kernel", transformer_engine/pytorch/csrc/
 * quantizer.cpp). One kernel reading 2 and writing 1 per layout where the
 * scale is known first: delayed scaling (TE's cast records the amax for
 * later steps), and torch.compile's torchao, whose amax the compiler fuses
 * into the producer's kernel. The kernels: TE's current scaling is four a
 * tensor (zero the amax, the amax, the scale, the cast; quantize_impl), and
 * its GroupedLinear quantizes each expert's tensor on its own (split_
 * quantize loops over the quantizers unless they are delayed-scaling ones,
 * which it casts in one multi-tensor kernel; cast.cpp, TE 2.9; DECISIONS
 * 146); eager torchao two. */
static bool cast8_fused(const plan *p)
{
    bool delayed = p->s->prec.fp8_recipe == SPEC_FP8_DELAYED;
    return delayed || (p->s->kernels != SPEC_KERNELS_EAGER && !te(p));
}

/* groups is a rank's local experts (at most 2^20 by the scenario's
 * limits), so the counts fit 32 bits */
static uint32_t cast8_kernels(const plan *p, uint64_t groups)
{
    if (cast8_fused(p)) return 1;
    return te(p) ? 4 * (uint32_t)groups : 2;
}

static ss_ns cast8_ns(const plan *p, uint64_t groups, uint64_t e, uint32_t ways)
{
    uint64_t bytes = e * ((cast8_fused(p) ? 2 : 4) + ways);
    return plan_kernels_ns(p, bytes, cast8_kernels(p, groups));
}

/* The layouts Transformer Engine writes of a tensor-scaled fp8 tensor used
 * in both GEMM operand positions: one where the GPU's fp8 GEMMs take any
 * layout, else the data and its transpose (Hopper; a device file without
 * a compute capability too). nvte_is_non_tn_fp8_gemm_supported (TE 2.9,
 * transformer_engine/pytorch/utils.py: compute capability 10.0 to 11.x
 * and 13.0 on) decides it; quantizer.cpp then writes no transpose. */
static uint32_t te_fp8_layouts(const plan *p)
{
    uint32_t cc = p->s->topo.device.cc;
    return (cc >= 100 && cc < 120) || cc >= 130 ? 1 : 2;
}

/* One GEMM of `groups` problems: TE's GroupedLinear a kernel a problem
 * (see te_fixed_times), other grouped GEMMs one. */
static uint32_t gemm_kernels(const plan *p, uint64_t groups)
{
    return te(p) ? (uint32_t)groups : 1;
}

void plan_linear(const plan *p, bool hp, uint64_t groups, uint64_t m, uint64_t k, uint64_t n,
                 plan_lin *out)
{
    uint32_t gk = gemm_kernels(p, groups);
    if (hp || !fp8(p)) {
        *out = (plan_lin){gemm_ns(p, groups, m, k, n),
                          gemm_ns(p, groups, m, n, k) + gemm_ns(p, groups, k, m, n), gk, 2 * gk};
        return;
    }
    uint64_t g = groups; /* the casts cover every group's tensors */
    uint32_t ck = cast8_kernels(p, groups);
    if (te(p)) {
        /* Transformer Engine (Megatron-core's fp8): the forward casts the
         * input in both operand layouts at once and keeps them for the
         * backward, and the weight's are made on a step's first micro-batch
         * and reused (is_first_microbatch), so each micro-batch carries
         * 1 / grad_accum of that cast (its kernels not counted); the
         * backward casts only the output gradient. Each cast writes
         * te_fp8_layouts: two on Hopper, one on Blackwell. */
        uint32_t w = te_fp8_layouts(p);
        out->fwd = cast8_ns(p, g, g * m * k, w) + cast8_ns(p, g, g * k * n, w) / p->s->grad_accum +
                   gemm8_ns(p, g, m, k, n);
        out->bwd = cast8_ns(p, g, g * m * n, w) + gemm8_ns(p, g, m, n, k) + gemm8_ns(p, g, k, m, n);
        out->fwd_kernels = ck + gk, out->bwd_kernels = ck + 2 * gk;
        return;
    }
    /* torchao's Float8Linear: forward the input and the weight cast, the
     * fp8 GEMM; backward the output gradient cast in both layouts, the
     * saved bf16 input and the weight cast again transposed, two fp8
     * GEMMs. */
    out->fwd = cast8_ns(p, g, g * m * k, 1) + cast8_ns(p, g, g * k * n, 1) + gemm8_ns(p, g, m, k, n);
    out->bwd = cast8_ns(p, g, g * m * n, 2) + cast8_ns(p, g, g * m * k, 1) +
               cast8_ns(p, g, g * k * n, 1) + gemm8_ns(p, g, m, n, k) + gemm8_ns(p, g, k, m, n);
    out->fwd_kernels = 2 * ck + gk, out->bwd_kernels = 3 * ck + 2 * gk;
}

static int add_params(plan *p, ss_err *err)
{
    const spec_model *m = &p->s->model;
    p->nblocks = m->nblocks;
    p->blocks = calloc(m->nblocks, sizeof *p->blocks);
    p->params = calloc(2 * (size_t)m->nblocks, sizeof *p->params);
    if (!p->blocks || !p->params)
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the plan");
    uint64_t rows = p->tokens;
    for (uint32_t i = 0; i < m->nblocks; i++) {
        const spec_block *sb = &m->blocks[i];
        plan_block *b = &p->blocks[i];
        b->spec = sb;
        snprintf(b->name, sizeof b->name, "%s", sb->name);
        snprintf(b->group, sizeof b->group, "%s", sb->name);
        b->param0 = p->nparams;
        uint64_t w;
        if (ss_mul_u64(sb->in, sb->out, &w))
            return ss_fail(err, SS_E_OVERFLOW, p->s->file,
                           "block %s: parameter count overflows", sb->name);
        /* nn.Linear stores its weight [out, in] and its bias [out]. */
        p->params[p->nparams++] = (plan_param){i, w, sb->out};
        if (sb->bias) p->params[p->nparams++] = (plan_param){i, sb->out, sb->out};
        b->nparam = p->nparams - b->param0;
        b->numel = w + (sb->bias ? sb->out : 0);
        if (ss_add_u64(p->total_numel, b->numel, &p->total_numel) ||
            ss_mul_u64(rows * p->act_elem, sb->in, &b->in_bytes) ||
            ss_mul_u64(rows * p->act_elem, sb->out, &b->out_bytes))
            return ss_fail(err, SS_E_OVERFLOW, p->s->file,
                           "block %s: sizes overflow 64 bits", sb->name);
        /* The first block's input needs no gradient: autograd skips dgrad. */
        b->dgrad = i > 0;
        b->fwd_flops = 2 * rows * b->numel;
        b->bwd_flops = b->fwd_flops * (b->dgrad ? 2 : 1);
        plan_lin lin;
        plan_linear(p, false, 1, rows, sb->in, sb->out, &lin);
        /* the first block computes no input gradient: its weight
         * gradient alone, about half of the pair */
        b->fwd_ns = lin.fwd;
        b->bwd_ns = b->dgrad ? lin.bwd : lin.bwd / 2;
        b->fwd_kernels = 1, b->bwd_kernels = b->dgrad ? 2 : 1;
    }
    return SS_OK;
}

/* "layers" wraps "layers.3"; "layers.3" wraps only itself. */
static bool name_matches(const char *module, const char *name)
{
    size_t n = strlen(module);
    return strncmp(name, module, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

/* 6 N per token for a model without attention (the MLP models); the
 * architecture expansion sets its own. */
static int add_flops_per_token(plan *p)
{
    if (!p->s->model.is_arch) p->flops_per_token = 6.0 * (double)p->total_numel;
    return SS_OK;
}

static bool wrapped_by_name(const spec_sharding *sh, const char *name)
{
    for (uint32_t k = 0; k < sh->nwrap_modules; k++)
        if (name_matches(sh->wrap_modules[k], name)) return true;
    return false;
}

static bool block_wrapped(const plan *p, const plan_block *b)
{
    const spec_sharding *sh = &p->s->shard;
    switch (sh->wrap) {
    case SPEC_WRAP_PER_BLOCK: return true;
    case SPEC_WRAP_SIZE: return b->numel >= sh->wrap_min_params;
    default: return wrapped_by_name(sh, b->name) || wrapped_by_name(sh, b->group);
    }
}

/* FSDP2: every parameter padded on dim 0 to n * ceil(rows / n) rows. */
static void unit_dim0(plan *p)
{
    for (uint32_t u = 0; u < p->nunits; u++) p->units[u].shard = 0;
    for (uint32_t i = 0; i < p->nparams; i++) {
        const plan_param *q = &p->params[i];
        plan_unit *u = &p->units[p->blocks[q->block].unit];
        u->shard += ss_div_ceil(q->rows, p->shard_n) * (q->numel / q->rows);
    }
    for (uint32_t u = 0; u < p->nunits; u++) p->units[u].padded = p->units[u].shard * p->shard_n;
}

static void unit_close(plan *p, plan_unit *u)
{
    u->shard = ss_div_ceil(u->numel, p->shard_n);
    u->padded = u->shard * p->shard_n;
    for (uint32_t i = 0; i < u->nblocks; i++)
        p->blocks[u->block0 + i].unit = (uint32_t)(u - p->units);
}

/* Unwrapped blocks belong to the root FlatParameter. In FSDP1 the root is
 * unsharded first in forward and resharded last in backward; we give it
 * block0 = its first block and keep the blocks' own unit ids for the rest. */
static int add_units(plan *p, ss_err *err)
{
    const spec_sharding *sh = &p->s->shard;
    for (uint32_t k = 0; k < sh->nwrap_modules; k++) {
        bool hit = false;
        for (uint32_t i = 0; i < p->nblocks && !hit; i++)
            hit = name_matches(sh->wrap_modules[k], p->blocks[i].name) ||
                  name_matches(sh->wrap_modules[k], p->blocks[i].group);
        if (!hit)
            return ss_fail(err, SS_E_INPUT, p->s->file,
                           "$.sharding.wrap.modules[%u]: \"%s\" names no block "
                           "of model %s", k, sh->wrap_modules[k], p->s->model.name);
    }
    p->units = calloc(p->nblocks + 1, sizeof *p->units);
    if (!p->units) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    plan_unit *root = &p->units[p->nunits++];
    root->is_root = true;
    root->block0 = UINT32_MAX;
    for (uint32_t i = 0; i < p->nblocks; i++) {
        plan_block *b = &p->blocks[i];
        if (block_wrapped(p, b)) {
            /* Consecutive blocks of one group (a transformer layer's
             * attention and MLP) share a unit. */
            plan_unit *u = &p->units[p->nunits - 1];
            bool same = p->nunits > 1 && i > 0 && u->block0 + u->nblocks == i &&
                        !strcmp(p->blocks[i - 1].group, b->group);
            if (same) {
                u->nblocks++;
                u->numel += b->numel;
            } else {
                u = &p->units[p->nunits++];
                *u = (plan_unit){.block0 = i, .nblocks = 1, .numel = b->numel};
            }
            unit_close(p, u);
        } else {
            if (root->block0 == UINT32_MAX) root->block0 = i;
            root->numel += b->numel;
            b->unit = 0;
        }
    }
    root->shard = ss_div_ceil(root->numel, p->shard_n);
    root->padded = root->shard * p->shard_n;
    if (root->block0 == UINT32_MAX) root->block0 = 0;
    if (sh->strategy == SPEC_FSDP2) unit_dim0(p);
    return SS_OK;
}

const char *plan_unit_name(const plan *p, uint32_t u)
{
    return p->units[u].is_root ? "root" : p->blocks[p->units[u].block0].group;
}

static bool unit_named(const plan *p, const char *name, uint32_t *u)
{
    for (*u = 0; *u < p->nunits; (*u)++)
        if (!strcmp(plan_unit_name(p, *u), name)) return true;
    return false;
}

/* The next units of a pass after u: forward is unit order (root first),
 * backward its reverse with the root last. */
static uint32_t pass_next(const plan *p, int pass, uint32_t u)
{
    if (pass == 0) return u + 1 < p->nunits ? u + 1 : UINT32_MAX;
    if (u == 0) return UINT32_MAX;
    return u - 1;
}

static uint32_t pass_count(const plan *p, int pass, uint32_t u, uint32_t k)
{
    uint32_t n = 0;
    for (uint32_t v = pass_next(p, pass, u); v != UINT32_MAX && n < k; v = pass_next(p, pass, v))
        if (p->units[v].numel) n++;
    return n;
}

/* FSDP2's reshard_after_forward per unit: the scenario's value, or true
 * (the shard group) / false (0) where the object form names the unit; an
 * unknown name is an input error with its JSON path. */
static int add_reshard(plan *p, ss_err *err)
{
    const spec_sharding *sh = &p->s->shard;
    uint32_t S = p->shard_n, k = sh->reshard_after_forward > S ? S : sh->reshard_after_forward;
    p->raf = malloc((p->nunits ? p->nunits : 1) * sizeof *p->raf);
    if (!p->raf) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t u = 0; u < p->nunits; u++) p->raf[u] = k;
    for (uint32_t i = 0; i < sh->nraf_units; i++) {
        uint32_t u;
        const struct spec_raf_unit *r = &sh->raf_units[i];
        if (!unit_named(p, r->unit, &u))
            return ss_fail(err, SS_E_INPUT, p->s->file, "$.sharding.reshard_after_forward[\"%s\"]: "
                           "\"%s\" is no fully_shard unit of model %s under this wrap policy "
                           "(units are \"root\" and the wrap groups, e.g. \"%s\")", r->unit,
                           r->unit, p->s->model.name, plan_unit_name(p, p->nunits - 1));
        p->raf[u] = r->reshard ? S : 0;
    }
    return SS_OK;
}

/* FSDP2's set_modules_to_{forward,backward}_prefetch, resolved to units:
 * an integer k gives every unit the next k units of the pass that have
 * parameters; a list names them, and a name that is no unit is an input
 * error with its JSON path. */
static int add_prefetch_pass(plan *p, int pass, ss_err *err)
{
    static const char *const key[2] = {"modules_to_forward_prefetch",
                                       "modules_to_backward_prefetch"};
    const spec_sharding *sh = &p->s->shard;
    uint32_t k = sh->prefetch_k[pass], n = sh->nprefetch[pass], nu = p->nunits;
    size_t cap = (size_t)n + (size_t)nu * (k < nu ? k : nu);
    p->pf0[pass] = calloc(nu + 1, sizeof *p->pf0[pass]);
    p->pf[pass] = calloc(cap ? cap : 1, sizeof *p->pf[pass]);
    p->explicit_pf[pass] = calloc(nu, sizeof *p->explicit_pf[pass]);
    if (!p->pf0[pass] || !p->pf[pass] || !p->explicit_pf[pass])
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const spec_prefetch *e = &sh->prefetch[pass][i];
        uint32_t u, t;
        if (!unit_named(p, e->unit, &u))
            return ss_fail(err, SS_E_INPUT, p->s->file, "$.sharding.%s[\"%s\"]: \"%s\" is no "
                           "fully_shard unit of model %s under this wrap policy (units are "
                           "\"root\" and the wrap groups, e.g. \"%s\")", key[pass], e->unit,
                           e->unit, p->s->model.name, plan_unit_name(p, nu - 1));
        if (e->target[0] && !unit_named(p, e->target, &t))
            return ss_fail(err, SS_E_INPUT, p->s->file, "$.sharding.%s[\"%s\"][%u]: \"%s\" is "
                           "no fully_shard unit of model %s under this wrap policy (units are "
                           "\"root\" and the wrap groups, e.g. \"%s\")", key[pass], e->unit,
                           e->index, e->target, p->s->model.name, plan_unit_name(p, nu - 1));
    }
    uint32_t at = 0;
    for (uint32_t u = 0; u < nu; u++) {
        p->pf0[pass][u] = at;
        if (k) {
            p->explicit_pf[pass][u] = true;
            uint32_t want = pass_count(p, pass, u, k), got = 0;
            for (uint32_t v = pass_next(p, pass, u); got < want; v = pass_next(p, pass, v))
                if (p->units[v].numel) p->pf[pass][at++] = v, got++;
        }
        for (uint32_t i = 0; i < n; i++) {
            const spec_prefetch *e = &sh->prefetch[pass][i];
            uint32_t eu, t;
            if (!unit_named(p, e->unit, &eu) || eu != u) continue;
            p->explicit_pf[pass][u] = true;
            if (e->target[0] && unit_named(p, e->target, &t)) p->pf[pass][at++] = t;
        }
    }
    p->pf0[pass][nu] = at;
    return SS_OK;
}

/* DDP's bucket assignment: parameters in reverse registration order; a
 * bucket closes once it reaches its limit (the first bucket has its own,
 * smaller limit in PyTorch's default configuration). */
static int add_buckets(plan *p, ss_err *err)
{
    p->buckets = calloc(p->nparams ? p->nparams : 1, sizeof *p->buckets);
    if (!p->buckets) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    const spec_sharding *sh = &p->s->shard;
    plan_bucket *cur = NULL;
    for (uint32_t i = p->nparams; i-- > 0;) {
        if (!cur) {
            cur = &p->buckets[p->nbuckets++];
            *cur = (plan_bucket){.first = i, .last = i};
        }
        cur->last = i;
        cur->numel += p->params[i].numel;
        uint64_t limit = p->nbuckets == 1 ? sh->first_bucket_bytes : sh->bucket_cap_bytes;
        if (cur->numel * p->grad_elem >= limit) cur = NULL;
    }
    return SS_OK;
}

static int check_device(const spec_scenario *s, ss_err *err)
{
    if (s->topo.device.peak_flops[s->prec.compute] <= 0.0)
        return ss_fail(err, SS_E_INPUT, s->file,
                       "$.precision.compute: device %s has no %s peak rate",
                       s->topo.device.name, spec_dtype_names[s->prec.compute]);
    return SS_OK;
}

/* Every op's time must fit the engine's integer nanoseconds with room for
 * a whole step of them: an op past PLAN_OP_NS_MAX is refused here, naming
 * the inputs that make it, rather than as an engine overflow. */
#define PLAN_OP_NS_MAX (1ull << 53) /* ~104 days */

static int check_times(const plan *p, ss_err *err)
{
    for (uint32_t i = 0; i < p->nblocks; i++) {
        const plan_block *b = &p->blocks[i];
        if (b->fwd_ns <= PLAN_OP_NS_MAX && b->bwd_ns <= PLAN_OP_NS_MAX) continue;
        double s = (double)(b->fwd_ns > b->bwd_ns ? b->fwd_ns : b->bwd_ns) * 1e-9;
        return ss_fail(err, SS_E_INPUT, p->s->file,
                       "$.training: block %s would run %.3g s (over 2^53 ns, 104 days, the "
                       "limit of one op): expected fewer tokens per micro-batch (micro_batch x "
                       "seq_len = %llu) or a faster device (%s)",
                       b->name, s, (unsigned long long)p->tokens, p->s->topo.device.name);
    }
    return SS_OK;
}

/* Per-rank variation (stragglers, jitter) gives ranks of one role their
 * own ops: only every rank simulated, each with its own program, shows it. */
static bool uniform(const spec_scenario *s) { return !s->nstragglers && !s->jitter_samples; }

/* Symmetric folding applies when every rank of a role runs the same
 * program. In the order tp-cp-pp-dp it keeps replica 0's ranks [0, tp cp
 * pp) (then, node allowing, one per stage); in Megatron's tp-cp-dp-pp a
 * stage's ranks are consecutive instead, and it keeps one per stage where
 * the node allows (fold_stride), else every rank. */
static bool can_fold(const spec_scenario *s) { return s->par.fold && uniform(s); }

static bool dp_outermost(const spec_scenario *s)
{
    return s->par.order == SPEC_ORDER_TP_CP_PP_DP;
}

/* Whether the machine looks the same from every GPU of a node, as far as
 * the fold along tp and cp needs: a folded-away rank's flows are the
 * simulated rank's moved to the next GPUs (local GPU i to i + t), so
 * every GPU must have the same kind of links, and the NICs must be shared
 * alike (N NICs for G GPUs: N a multiple or a divisor of G). No link may
 * single out one GPU (an NVLink bridge between two of them). The shifts
 * stay inside a node (tp cp divides the node's GPUs) or move whole nodes
 * (the node's GPUs divide tp cp), as the replica fold's do; not on a
 * torus, where moving a node along the row order is no symmetry of the
 * torus at a row's end (the 5T's cp 8 rows came out 1e-5 off). Exactness
 * is what tests/e2e/test_fold.c checks, on every shipped layout. */
static bool node_alike(const spec_topology *t, uint32_t shift)
{
    uint32_t G = t->gpus_per_node, K = spec_topo_rpn(t); /* K: the ranks a node holds */
    if (!G || (K % shift && shift % K)) return false;
    if (!t->graph) return true;
    if (t->fabric.kind == SPEC_FAB_TORUS2D) return false;
    uint32_t gpu = SPEC_TOPO_VGROUPS, nics = 0;
    for (uint32_t i = 0; i < t->nvgroups; i++) {
        if (t->vg[i].kind == SPEC_V_GPU) gpu = i;
        if (t->vg[i].kind == SPEC_V_NIC) nics += t->vg[i].count;
    }
    for (uint32_t i = 0; i < t->nlgroups; i++) {
        const spec_lgroup *l = &t->lg[i];
        if ((l->from == gpu && l->from_i >= 0) || (l->to == gpu && l->to_i >= 0)) return false;
    }
    /* GPUs sharing a NIC: a node's ranks must fill whole such sets, or
     * one NIC carries more of them than another */
    return !nics || !(nics % G) || (!(G % nics) && !(K % (G / nics)));
}

/* A layout folds along tp and cp too (one rank per stage) where the
 * replica folds, the ranks of a stage share one program, and the node
 * allows it; in the order tp-cp-dp-pp along tp, cp and dp at once (a
 * stage's ranks). plan.h's stride. */
static uint32_t fold_stride(const plan *p)
{
    const spec_parallel *x = &p->s->par;
    uint32_t k = x->tp * x->cp * (dp_outermost(p->s) ? 1 : p->s->dp);
    if (k == 1 || !can_fold(p->s) || !p->share || !node_alike(&p->s->topo, k)) return 1;
    return k;
}

/* FSDP2's rank r of a shard group holds rows [r ceil(R / N), ...) of each
 * parameter's R real rows: where N divides every R, every rank holds
 * R / N real rows of each, and the ranks' programs are the same. */
static bool fsdp2_even(const plan *p)
{
    for (uint32_t i = 0; i < p->nparams; i++) {
        uint64_t rows = p->params[i].rows ? p->params[i].rows : 1;
        if (rows % p->shard_n) return false;
    }
    return true;
}

/* Without a layout, DDP and FSDP ranks are identical by construction, but
 * for ZeroRedundancyOptimizer's per-rank parameter owners and FSDP's
 * use_orig_params, whose optimizer steps each rank's own parameter views.
 * DeepSpeed is simulated on every rank (its hpZ groups have no folded form). */
static uint32_t sim_ranks(const plan *p)
{
    const spec_scenario *s = p->s;
    bool views = s->shard.use_orig_params && s->shard.strategy != SPEC_NO_SHARD && p->shard_n > 1;
    /* Uneven FSDP2 ranks hold different real rows of some parameter (the
     * last ones fewer, or none): their optimizers differ, so every rank runs. */
    bool fsdp2 = s->shard.strategy == SPEC_FSDP2 && !fsdp2_even(p);
    if (!can_fold(s) || s->shard.strategy == SPEC_ZERO1 || views || fsdp2 ||
        s->shard.strategy == SPEC_DEEPSPEED)
        return p->n;
    return 1;
}

/* The whole model's parameters less, in each MoE block, the routed experts
 * (E - top_k of E, each expert_numel / E) a token is not sent to. Read
 * from the first, undivided pass. */
static uint64_t active_numel(const plan *p)
{
    const spec_arch *a = &p->s->model.arch;
    uint64_t n = p->total_numel;
    if (!p->s->model.is_arch || !a->experts) return n;
    for (uint32_t i = 0; i < p->nblocks; i++)
        n -= p->blocks[i].expert_numel / a->experts * (a->experts - a->top_k);
    return n;
}

int plan_new(plan **out, const spec_scenario *s, ss_err *err)
{
    int rc = check_device(s, err);
    if (rc) return rc;
    plan *p = calloc(1, sizeof *p);
    if (!p) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the plan");
    p->s = s;
    p->n = s->dp;
    p->chunks = 1;
    p->shard_n = s->shard.shard_group_size ? s->shard.shard_group_size : s->dp;
    p->tokens = s->micro_batch * s->seq_len;
    p->param_elem = spec_dtype_size(s->prec.param);
    p->compute_elem = spec_dtype_size(s->prec.compute);
    p->act_elem = p->compute_elem;
    p->dt16 = s->topo.device.peak_flops[SPEC_DT_BF16] > 0 ? SPEC_DT_BF16 : SPEC_DT_FP16;
    if (s->prec.compute == SPEC_DT_FP8) {
        p->act_elem = 2;
        p->compute_elem = s->prec.fp8_all_gather ? 1 : 2;
    }
    p->saved_in_elem = te(p) && s->prec.compute == SPEC_DT_FP8 ? 1 : p->act_elem;
    p->grad_elem = spec_dtype_size(s->prec.grad);
    p->reduce_elem = spec_dtype_size(s->prec.reduce);
    rc = s->model.is_arch ? plan_arch_blocks(p, err) : add_params(p, err);
    if (!rc) rc = add_flops_per_token(p);
    p->model_numel = p->total_numel;
    p->active_numel = active_numel(p);
    p->world = p->dense_dp = p->expert_dp = p->n;
    p->replica = 1;
    p->stride = 1;
    p->chunks = 1;
    /* Megatron's runtime exists only as a layout body's (one with tp = cp = pp = 1). */
    if (!rc && (spec_model_parallel(&s->par) || s->shard.strategy == SPEC_MEGATRON))
        rc = plan_layout(p, err);
    if (!rc) rc = check_times(p, err);
    p->nsim = p->layout ? p->n / p->stride : sim_ranks(p);
    if (rc || (rc = add_units(p, err)) || (rc = add_buckets(p, err)) ||
        (s->shard.strategy == SPEC_FSDP2 &&
         ((rc = add_prefetch_pass(p, 0, err)) || (rc = add_prefetch_pass(p, 1, err)) ||
          (rc = add_reshard(p, err))))) {
        plan_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

/* The same model again, every block cut to one rank's share (plan_arch.c
 * reads the layout); the whole model's totals stay from the first pass. */
int plan_layout(plan *p, ss_err *err)
{
    const spec_parallel *par = &p->s->par;
    free(p->blocks);
    free(p->params);
    p->blocks = NULL;
    p->params = NULL;
    p->nblocks = p->nparams = 0;
    p->total_numel = 0;
    p->layout = true;
    p->replica = par->tp * par->cp * par->pp;
    p->world = p->replica * p->s->dp;
    p->n = can_fold(p->s) && dp_outermost(p->s) ? p->replica : p->world;
    p->share = uniform(p->s);
    p->stride = fold_stride(p);
    p->dense_dp = p->s->dp * par->cp;
    p->expert_dp = par->tp * par->cp * p->s->dp / (par->ep * par->etp);
    /* HSDP: shard groups of shard_group_size dp ranks, each with its cp ranks. */
    uint32_t S = p->s->shard.shard_group_size;
    p->shard_n = S ? S * par->cp : p->dense_dp;
    p->chunks = par->pp * par->virtual_stages;
    double fpt = p->flops_per_token;
    int rc = plan_arch_blocks(p, err);
    p->flops_per_token = fpt;
    return rc;
}

void plan_free(plan *p)
{
    if (!p) return;
    free(p->params);
    free(p->blocks);
    free(p->units);
    free(p->buckets);
    for (int k = 0; k < 2; k++) {
        free(p->pf0[k]);
        free(p->pf[k]);
        free(p->explicit_pf[k]);
    }
    free(p->raf);
    free(p);
}
