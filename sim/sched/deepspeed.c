/* DeepSpeed ZeRO stages 1, 2 and 3 (DeepSpeedZeroOptimizer and
 * DeepSpeedZeroOptimizer_Stage3), with the zero_optimization keys that
 * change what runs, and offload.
 *
 * Stages 1-2 keep whole bit16 parameters; one flat fp32 partition per rank
 * holds the master weights and optimizer states. Gradients go through the
 * independent-partition gradient buckets (ipg, reduce_bucket_size elements,
 * two under overlap_comm so one fills while the other reduces): each bucket
 * is reduced into the ranks' partitions, all-reduced by default
 * (ds_reduction_of). Stage 1 keeps the whole gradients and reduces once per
 * step, after the last micro-batch's backward; stage 2 reduces in the
 * gradient hooks of every micro-batch (DeepSpeed has no no_sync) into a
 * bit16 gradient partition, each gradient freed once it is copied into the
 * bucket (ds_bucket_grad). The step casts the partition's
 * gradient to fp32, steps, copies the fp32 master into the bit16 partition
 * and all-gathers the parameters in allgather_bucket_size pieces.
 *
 * Stage 3 partitions each parameter (ceil(numel / N) elements per rank);
 * parameters under stage3_param_persistence_threshold stay whole. Before a
 * block runs, its parameters are all-gathered (coalesced per block); the
 * fetch of the next blocks is issued ahead while their parameters fit in
 * stage3_prefetch_bucket_size and the live ones in
 * stage3_max_live_parameters. After its forward a block's parameters are
 * released unless they are used again within (less than)
 * stage3_max_reuse_distance elements (the last blocks, whose backward comes first). Gradients are
 * reduce-scattered per bucket into persistent gradient partitions; the step
 * updates the partitions, with no all-gather (the next forward fetches).
 * Stage 3 copies each gradient into its one ipg buffer on the reduction
 * stream and drops it there, and reduces a bucket through a flat copy of
 * it (reduce_scatter_coalesced) that lives until the partitions are copied
 * out (ds_flattens, ds_bucket_grad).
 *
 * ZeRO++: hpZ (zero_hpz_partition_size) keeps a secondary partition of the
 * bit16 parameters over groups of that many consecutive ranks, so the
 * backward all-gathers stay inside the group; qwZ all-gathers int8 weights
 * and qgZ reduces int4 gradients (bytes 1 and 1/2 per element, with a
 * quantize and a dequantize kernel around each collective).
 *
 * Offload: under offload_optimizer each reduced bucket's partition slice is
 * copied to the host (copy stream), the optimizer runs on the CPU (the host
 * thread, as DeepSpeedCPUAdam does) and the updated bit16 partition is
 * copied back; under offload_param (stage 3) the bit16 partitions live on
 * the host and each fetch copies them to the device before its all-gather.
 * Pageable (unpinned) copies run at half the PCIe rate.
 */
#include "emit.h"

#include <stdlib.h>

typedef struct ds {
    em *e;
    const plan *pl;
    const spec_deepspeed *c;
    uint32_t N;
    bool s3, off_opt, off_par;
    /* per block (stage 3) */
    uint32_t *t_full;   /* gathered parameters, EM_NONE when released */
    uint32_t *fetch;    /* the all-gather that filled t_full */
    uint64_t *gnumel;   /* elements it gathers (its partitioned parameters) */
    uint64_t *gpadded;  /* their padded size: N x sum ceil(numel / N) */
    uint64_t gtotal;    /* sum of gnumel */
    uint64_t live;      /* gathered elements live now */
    em_pair rel;        /* the last two releases (the fetch limiter waits on the older) */
    /* per parameter: its gradient tensor while it waits for its bucket */
    uint32_t *t_grad;
    /* gradient buckets */
    uint32_t red[2];         /* the reduction that last used each ipg buffer */
    uint32_t cur;            /* the buffer filling now */
    uint64_t fill;           /* elements in it */
    uint32_t nin;            /* gradients in it */
    uint64_t first;          /* the first one's elements */
    uint32_t ready;          /* the backward op that made the gradients arriving */
    uint32_t last_red;       /* the last reduction's last op */
    uint32_t pend[64], npend; /* gradients waiting in it (freed when it is reduced) */
    uint32_t *reduces;        /* every reduction of the step (the step waits) */
    uint32_t nreduces, capreduces;
    uint32_t t_gpart;        /* bit16 gradient partition (stages 2, 3) */
    uint32_t g_hpz;          /* hpZ: the rank's secondary group */
} ds;

/* A memory-bound kernel on `st` touching `bytes`. */
static uint32_t ds_kernel(ds *d, prog_stream st, prog_phase ph, ss_bytes bytes, uint32_t dep,
                          const char *name)
{
    em_begin(d->e, PROG_OP_COMPUTE, st, ph, "%s", name);
    em_cost(d->e, em_op_host_ns(d->e), plan_mem_ns(d->pl, bytes), 0);
    em_dep(d->e, dep);
    return em_end(d->e);
}

static void ds_note_reduce(ds *d, uint32_t op)
{
    if (op == EM_NONE || d->e->rc) return;
    if (d->nreduces == d->capreduces) {
        uint32_t cap = d->capreduces ? 2 * d->capreduces : 64;
        uint32_t *r = realloc(d->reduces, cap * sizeof *r);
        if (!r) {
            d->e->rc = ss_fail(d->e->err, SS_E_NOMEM, NULL, "out of memory");
            return;
        }
        d->reduces = r;
        d->capreduces = cap;
    }
    d->reduces[d->nreduces++] = op;
}

/* Autograd's gradients are in the parameters' bit16 dtype; stage 1 keeps
 * them (in the accumulation dtype), the others partition them. */
static uint32_t ds_grad_elem(const ds *d)
{
    return d->c->stage == 1 ? d->pl->grad_elem : d->pl->compute_elem;
}

/* ---- gradient buckets ---- */

static uint64_t bucket_cap(const ds *d)
{
    uint64_t total = d->pl->total_numel;
    return d->c->reduce_bucket < total ? d->c->reduce_bucket : total;
}

/* The stream the bucket's work runs on: the reduction stream under
 * overlap_comm, else the compute stream. */
static prog_stream ds_reduce_stream(const ds *d)
{
    return d->c->overlap_comm ? PROG_REDUCE : PROG_COMPUTE;
}

/* Stages 1-2 (stage_1_and_2.py), with contiguous_gradients: average_tensor
 * under use_multi_rank_bucket_allreduce (DeepSpeed's default from v0.13.0,
 * PR #4695) hands the bucket's slices to allreduce_and_scatter, which
 * all-reduces a flattened copy of them and copies each rank's own slices
 * back; without it, one dist.reduce per rank's slice (costed as one
 * reduce-scatter); under reduce_scatter: false,
 * gradient_reduction_w_predivide all-reduces the bucket where it lies.
 * average_tensor also makes the compute stream wait for the reduction
 * stream (current_stream().wait_stream) before it reduces: under
 * overlap_comm the compute stream waits there for the reductions before.
 * Without contiguous_gradients, buffered_reduce_fallback all-reduces a
 * flattened copy on the compute stream.
 * Stage 3 (stage3.py) all-reduces its one ipg buffer where it lies under
 * reduce_scatter: false with contiguous_gradients
 * (__avg_scatter_contiguous_grads); otherwise __avg_scatter_grads goes
 * through reduce_scatter_coalesced (the same from v0.12.0 to v0.19.2):
 * torch.cat of the bucket's rank-interleaved, padded partitions into a new
 * tensor, reduce-scattered in place, whose views partition_grads copies
 * out. */
ds_reduction ds_reduction_of(const spec_deepspeed *c)
{
    bool s3 = c->stage == 3, contiguous = c->contiguous_gradients;
    bool in_place = contiguous && !c->reduce_scatter;
    bool ar = s3 ? in_place : !contiguous || !c->reduce_scatter || c->multi_rank_allreduce;
    return (ds_reduction){.all_reduce = ar,
                          .flat = s3 ? !in_place : ar && !in_place,
                          .waits = !s3 && contiguous && c->overlap_comm};
}

/* Does this bucket's reduction flatten it (ds_reduction_of)? Not stage 3's
 * bucket of one tensor divisible by N (reduce_scatter_coalesced reduces it
 * where it lies), nor ZeRO++'s qgZ, whose all-to-all quantizes instead. */
static bool ds_flattens(const ds *d)
{
    if (!ds_reduction_of(d->c).flat) return false;
    return !d->s3 || (!d->c->quantized_gradients && !(d->nin == 1 && d->first % d->N == 0));
}

/* The compute stream waits for the reductions before (ds_reduction_of). */
static void ds_wait_reductions(ds *d)
{
    if (!ds_reduction_of(d->c).waits || d->last_red == EM_NONE) return;
    em_marker_begin(d->e, PROG_COMPUTE, PROG_PH_BACKWARD, "ds.wait_reduction_stream");
    em_dep(d->e, d->last_red);
    em_end(d->e);
}

/* After the collective: the rank's partition slice goes to the host
 * (offload), to the gradient partition (stages 2-3), or stays where it is
 * (stage 1). The flat copy was made on the stream that uses it, so the
 * allocator may hand it out again once the host drops it (stream order
 * keeps it safe): it is freed when the last op reading it is issued.
 * Returns the reduction's last device op. */
static uint32_t ds_after_reduce(ds *d, prog_stream st, uint32_t op, uint64_t n, uint32_t flat)
{
    em *e = d->e;
    const plan *pl = d->pl;
    if (d->off_opt) {
        bool nvme = pl->s->off.optimizer == SPEC_OFF_NVME;
        uint32_t d2h = em_host_copy(e, PROG_PH_BACKWARD, n / d->N * 4, nvme, op, EM_NONE, EM_NONE,
                                    "ds.grads_to_host");
        ds_note_reduce(d, d2h);
        if (flat != EM_NONE) {
            em_marker_begin(e, st, PROG_PH_BACKWARD, "ds.drop_bucket_flat");
            em_dep(e, d2h);
            em_mem(e, flat, PROG_FREE_AT_ISSUE);
            em_end(e);
        }
        return op;
    }
    if (d->t_gpart != EM_NONE) {
        em_begin(e, PROG_OP_COMPUTE, st, PROG_PH_BACKWARD, "ds.copy_grads_in_partition");
        em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, 2 * (n / d->N) * pl->grad_elem), 0);
    } else {
        if (flat == EM_NONE) return op;
        em_marker_begin(e, st, PROG_PH_BACKWARD, "ds.drop_bucket_flat");
    }
    em_dep(e, op);
    em_mem(e, flat, PROG_FREE_AT_ISSUE);
    return em_end(e);
}

/* Reduce the filling bucket on ds_reduce_stream (stages 1-2 without
 * contiguous_gradients: the compute stream): flatten it where the runtime
 * does (the cat and the pre-divide each read and write it), then
 * all-reduce or reduce-scatter it (ds_reduction_of; qgZ: int4 all-to-all
 * bytes), then ds_after_reduce. */
static void ds_reduce_bucket(ds *d)
{
    em *e = d->e;
    const plan *pl = d->pl;
    if (!d->fill) return;
    bool ar = ds_reduction_of(d->c).all_reduce, q = d->c->quantized_gradients;
    prog_stream st = !d->s3 && !d->c->contiguous_gradients ? PROG_COMPUTE : ds_reduce_stream(d);
    uint64_t n = ss_div_ceil(d->fill, d->N) * d->N;
    ss_bytes nb = (ar ? d->fill : n) * pl->reduce_elem;
    ds_wait_reductions(d);
    uint32_t dep = e->last;
    uint32_t flat = ds_flattens(d) ? em_tensor(e, PROG_MEM_COMM_BUFFER, nb, false, "ds.bucket_flat")
                                   : EM_NONE;
    if (q) dep = ds_kernel(d, st, PROG_PH_BACKWARD, nb, dep, "ds.quantize_grads");
    if (flat != EM_NONE) {
        em_begin(e, PROG_OP_COMPUTE, st, PROG_PH_BACKWARD, "ds.flatten_bucket");
        em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, 4 * nb), 0);
        em_dep(e, dep);
        em_dep(e, d->ready);
        em_mem(e, flat, PROG_ALLOC_AT_ISSUE);
        dep = em_end(e);
    }
    em_begin(e, PROG_OP_COLL, st, PROG_PH_BACKWARD, ar ? "ds.all_reduce.bucket"
                                                       : "ds.reduce_scatter.bucket");
    em_coll(e, ar ? PROG_COLL_ALL_REDUCE : PROG_COLL_REDUCE_SCATTER, q ? n / 2 : nb);
    em_dep(e, dep);
    em_dep(e, d->ready); /* e->last may be a host op (the hooks) */
    for (uint32_t i = 0; i < d->npend; i++) em_mem(e, d->pend[i], PROG_FREE_AT_END);
    uint32_t op = em_end(e);
    if (q)
        op = ds_kernel(d, st, PROG_PH_BACKWARD, n / d->N * pl->reduce_elem, op,
                       "ds.dequantize_grads");
    op = ds_after_reduce(d, st, op, n, flat);
    d->red[d->cur] = d->last_red = op;
    ds_note_reduce(d, op);
    d->npend = d->fill = 0;
    d->nin = 0;
    if (d->c->overlap_comm && !d->s3) d->cur ^= 1;
}

/* A gradient enters the bucket. With contiguous_gradients one that fits is
 * copied into the ipg buffer and freed (autograd's tensor is replaced by
 * the buffer's view): stages 1-2 copy on the compute stream, after the
 * reduction that last used that buffer; stage 3 on ds_reduce_stream, after
 * the reductions before it (its one buffer is ordered by the stream), and
 * the gradient lives until the copy has run there (record_stream). One that
 * does not fit (more elements than the bucket) or is not copied waits for
 * its reduction. Stage 1 keeps its gradients whole. */
static void ds_bucket_grad(ds *d, uint32_t param, bool keep)
{
    em *e = d->e;
    const plan *pl = d->pl;
    uint64_t n = pl->params[param].numel;
    if (d->fill + n > bucket_cap(d) && d->fill) ds_reduce_bucket(d);
    bool copied = d->c->contiguous_gradients && d->fill + n <= bucket_cap(d);
    uint32_t grad = keep ? EM_NONE : d->t_grad[param];
    if (copied) {
        em_begin(e, PROG_OP_COMPUTE, d->s3 ? ds_reduce_stream(d) : PROG_COMPUTE, PROG_PH_BACKWARD,
                 "ds.copy_to_ipg.p%u", param);
        em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, 2 * n * ds_grad_elem(d)), 0);
        em_dep(e, d->s3 ? d->ready : d->red[d->cur]);
        em_mem(e, grad, PROG_FREE_AT_END);
        em_end(e);
    } else if (grad != EM_NONE) {
        if (d->npend == SS_ARRAY_LEN(d->pend)) ds_reduce_bucket(d);
        d->pend[d->npend++] = grad;
    }
    if (grad != EM_NONE) d->t_grad[param] = EM_NONE;
    if (!d->nin++) d->first = n;
    d->fill += n;
    if (d->fill >= bucket_cap(d)) ds_reduce_bucket(d);
}

/* ---- stage 3 parameter fetch ---- */

/* Fetch block b's parameters: (offload_param) copy the partitions in, then
 * all-gather them over the world, or over the hpZ group in backward. The
 * host runs at most two releases ahead of the device: before a fetch it
 * waits for the older of the last two released blocks to be done with (the
 * coordinator synchronizes on its in-flight events; without a bound the
 * host would gather the whole model ahead of the compute stream). */
static void ds_fetch(ds *d, uint32_t b, prog_phase ph)
{
    em *e = d->e;
    const plan *pl = d->pl;
    if (b >= pl->nblocks || !d->gnumel[b] || d->t_full[b] != EM_NONE) return;
    em_pair_wait(e, &d->rel, "ds.fetch_limit");
    uint64_t pad = d->gpadded[b];
    bool q = d->c->quantized_weights, sub = ph == PROG_PH_BACKWARD && d->c->hpz > 1;
    uint32_t dep = EM_NONE;
    if (d->off_par)
        dep = em_host_copy(d->e, ph, pad / d->N * pl->param_elem,
                           pl->s->off.params == SPEC_OFF_NVME, EM_NONE, EM_NONE,
                           EM_NONE, "ds.params_to_device");
    if (q)
        dep = ds_kernel(d, PROG_UNSHARD, ph, pad / d->N * pl->param_elem, dep,
                        "ds.quantize_weights");
    d->t_full[b] = em_tensor(e, PROG_MEM_PARAM_UNSHARDED, pad * pl->compute_elem, false,
                             "ds.gathered.%s.%s", pl->blocks[b].name, prog_phase_name(ph));
    em_begin(e, PROG_OP_COLL, PROG_UNSHARD, ph, "ds.all_gather.%s", pl->blocks[b].name);
    em_coll(e, PROG_COLL_ALL_GATHER, q ? pad : pad * pl->compute_elem);
    if (sub) em_group(e, d->g_hpz);
    em_dep(e, dep);
    em_mem(e, d->t_full[b], PROG_ALLOC_AT_ISSUE);
    d->fetch[b] = em_end(e);
    if (q) d->fetch[b] = ds_kernel(d, PROG_UNSHARD, ph, 2 * pad * pl->compute_elem, d->fetch[b],
                                   "ds.dequantize_weights");
    d->live += d->gnumel[b];
}

/* The block and the next ones in this pass whose parameters fit the
 * prefetch bucket and the live limit. step is +1 (forward) or -1. */
static void ds_fetch_ahead(ds *d, uint32_t b, int step, prog_phase ph)
{
    ds_fetch(d, b, ph);
    uint64_t ahead = 0;
    for (int64_t k = (int64_t)b + step; k >= 0 && k < (int64_t)d->pl->nblocks; k += step) {
        uint64_t n = d->gnumel[k];
        if (d->t_full[k] != EM_NONE || !n) continue;
        if (ahead + n > d->c->prefetch_bucket || d->live + n > d->c->max_live) break;
        ds_fetch(d, (uint32_t)k, ph);
        ahead += n;
    }
}

static void ds_release(ds *d, uint32_t b, prog_phase ph)
{
    if (d->t_full[b] == EM_NONE) return;
    em_marker_begin(d->e, PROG_COMPUTE, ph, "ds.release");
    em_mem(d->e, d->t_full[b], PROG_FREE_AT_END);
    em_pair_push(&d->rel, em_end(d->e));
    d->t_full[b] = EM_NONE;
    d->fetch[b] = EM_NONE;
    d->live -= d->gnumel[b];
}

/* ---- one micro-batch ---- */

static void ds_forward(ds *d)
{
    const plan *pl = d->pl;
    em_input(d->e);
    uint64_t later = d->gtotal; /* gathered by the blocks after this one */
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        uint32_t dep = EM_NONE;
        later -= d->gnumel[i];
        if (d->s3) {
            if (pl->s->hook_ns) em_host(d->e, PROG_PH_FORWARD, pl->s->hook_ns, "ds.pre_forward");
            ds_fetch_ahead(d, i, +1, PROG_PH_FORWARD);
            dep = d->fetch[i];
        }
        em_fwd_block(d->e, i, dep);
        /* Reuse distance: the elements fetched before its backward, the later
         * blocks once forward and once backward. Kept only if reused within
         * the threshold (DeepSpeed's docs): 0 keeps nothing. */
        if (d->s3 && 2 * later >= d->c->max_reuse) ds_release(d, i, PROG_PH_FORWARD);
    }
}

static void ds_backward(ds *d, uint32_t m)
{
    const plan *pl = d->pl;
    bool boundary = m + 1 == pl->s->grad_accum;
    bool hooks = d->c->stage >= 2 || d->c->overlap_comm; /* stage 1 reduces after backward */
    em_loss(d->e);
    for (uint32_t i = pl->nblocks; i-- > 0;) {
        const plan_block *b = &pl->blocks[i];
        uint32_t dep = EM_NONE;
        if (d->s3) {
            if (pl->s->hook_ns) em_host(d->e, PROG_PH_BACKWARD, pl->s->hook_ns, "ds.pre_backward");
            ds_fetch_ahead(d, i, -1, PROG_PH_BACKWARD);
            dep = d->fetch[i];
        }
        /* Stage 1 accumulates into whole gradients made by the first
         * micro-batch; the other stages make them anew each time. */
        bool fresh = d->c->stage >= 2 || m == 0;
        for (uint32_t k = 0; fresh && k < b->nparam; k++)
            d->t_grad[b->param0 + k] =
                em_tensor(d->e, PROG_MEM_GRAD, pl->params[b->param0 + k].numel * ds_grad_elem(d),
                          false, "ds.grad.p%u", b->param0 + k);
        d->ready = em_bwd_block(d->e, i, dep, &d->t_grad[b->param0], fresh ? b->nparam : 0);
        if (d->s3) ds_release(d, i, PROG_PH_BACKWARD);
        if (hooks && (d->c->stage >= 2 || boundary)) {
            if (pl->s->hook_ns) em_host(d->e, PROG_PH_BACKWARD, pl->s->hook_ns, "ds.grad_hooks");
            for (uint32_t k = b->nparam; k-- > 0;)
                ds_bucket_grad(d, b->param0 + k, d->c->stage == 1);
        }
    }
    if (!hooks && boundary) /* stage 1: reduce_gradients() after backward */
        for (uint32_t p = pl->nparams; p-- > 0;) ds_bucket_grad(d, p, true);
    if (d->c->stage < 2 && !boundary) return;
    ds_reduce_bucket(d);
    /* The backward epilogue synchronizes the device before it clears the
     * reduced gradients: the host starts the next micro-batch only then. */
    em_begin(d->e, PROG_OP_HOST, PROG_HOST, PROG_PH_BACKWARD, "ds.epilogue_synchronize");
    em_cost(d->e, 0, 0, 0);
    em_dep(d->e, d->e->last);
    for (uint32_t i = 0; i < d->nreduces; i++) em_dep(d->e, d->reduces[i]);
    em_end(d->e);
}

/* ---- the step ---- */

static uint64_t ds_partition(const ds *d)
{
    if (!d->s3) return ss_div_ceil(d->pl->total_numel, d->N);
    uint64_t n = 0;
    for (uint32_t p = 0; p < d->pl->nparams; p++) n += ss_div_ceil(d->pl->params[p].numel, d->N);
    return n;
}

static uint32_t ds_gpu_step(ds *d, const em_tensors *optim, uint64_t part)
{
    em *e = d->e;
    const plan *pl = d->pl;
    em_marker_begin(e, PROG_COMPUTE, PROG_PH_OPTIMIZER, "ds.wait_reduce");
    for (uint32_t i = 0; i < d->nreduces; i++) em_dep(e, d->reduces[i]);
    em_end(e);
    /* The fp32 copy of the gradient partition, one sub-group at a time. */
    uint64_t g32 = e->st.grad32.physical;
    uint64_t chunk = d->s3 && d->c->sub_group && d->c->sub_group < part ? d->c->sub_group : part;
    uint32_t t32 = g32 ? em_tensor(e, PROG_MEM_GRAD, g32 / part * chunk, false, "ds.grad_fp32")
                       : EM_NONE;
    if (t32 != EM_NONE) {
        em_begin(e, PROG_OP_COMPUTE, PROG_COMPUTE, PROG_PH_OPTIMIZER, "ds.grad_to_fp32");
        em_cost(e, em_op_host_ns(e), plan_mem_ns(pl, part * (pl->grad_elem + 4)), 0);
        em_mem(e, t32, PROG_ALLOC_AT_ISSUE);
        em_end(e);
    }
    uint32_t step = em_optim(e, optim);
    em_begin(e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "ds.free_grad_fp32");
    em_cost(e, 0, 0, 0);
    em_mem(e, t32, PROG_FREE_AT_ISSUE);
    em_end(e);
    return step;
}

/* After the update: the bit16 partition from the fp32 master (on the
 * device, or copied back from the host), then stages 1-2 all-gather the
 * parameters in allgather_bucket_size pieces. */
static void ds_update_params(ds *d, uint32_t step, uint64_t part)
{
    const plan *pl = d->pl;
    uint32_t dep;
    if (d->off_opt && d->off_par) return; /* the host partitions are the parameters */
    if (d->off_opt) dep = em_host_copy(d->e, PROG_PH_OPTIMIZER, part * pl->param_elem,
                                       pl->s->off.optimizer == SPEC_OFF_NVME, step, EM_NONE,
                                       EM_NONE, "ds.params_to_device");
    else dep = ds_kernel(d, PROG_COMPUTE, PROG_PH_OPTIMIZER, part * (4 + pl->param_elem), step,
                         "ds.master_to_bit16");
    if (d->s3) return;
    uint64_t total = part * d->N, chunk = d->c->allgather_bucket; /* elements per call */
    for (uint64_t at = 0, k = 0; at < total; at += chunk, k++) {
        uint64_t n = total - at < chunk ? total - at : chunk;
        em_begin(d->e, PROG_OP_COLL, PROG_UNSHARD, PROG_PH_OPTIMIZER, "ds.all_gather.params.%llu",
                 (unsigned long long)k);
        em_coll(d->e, PROG_COLL_ALL_GATHER, n * pl->param_elem);
        em_dep(d->e, dep);
        em_end(d->e);
    }
}

static void ds_zero_grad(ds *d)
{
    em_begin(d->e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "zero_grad");
    em_cost(d->e, 0, 0, 0);
    for (uint32_t p = 0; p < d->pl->nparams; p++) em_mem(d->e, d->t_grad[p], PROG_FREE_AT_ISSUE);
    em_mem(d->e, d->e->t_input, PROG_FREE_AT_ISSUE);
    em_end(d->e);
}

/* ---- set-up ---- */

/* What the rank stores: stage 1-2 every parameter whole; stage 3 each
 * parameter's partition, the persistent ones also whole, the hpZ
 * secondary partition; nothing on the device under offload_param. The
 * optimizer steps one flat partition (stages 1-2) or the parameters'
 * partitions (stage 3). */
static int ds_local(ds *d, em_tensors *params, em_tensors *optim)
{
    const plan *pl = d->pl;
    int rc = em_tensors_init(params, 2 * pl->nparams + 1, d->e->err);
    if (!rc) rc = em_tensors_init(optim, pl->nparams + 1, d->e->err);
    if (rc) return rc;
    if (!d->s3) {
        for (uint32_t p = 0; p < pl->nparams; p++)
            em_tensors_add(params, pl->params[p].numel, em_param_module(pl, p));
        em_tensors_add(optim, ds_partition(d), "partition");
        return SS_OK;
    }
    uint64_t sec = 0;
    for (uint32_t p = 0; p < pl->nparams; p++) {
        uint64_t n = pl->params[p].numel, part = ss_div_ceil(n, d->N);
        const char *mod = em_param_module(pl, p);
        em_tensors_add(optim, part, mod);
        if (n < d->c->persistence_threshold) em_tensors_add(params, n, mod);
        else sec += ss_div_ceil(n, d->c->hpz);
        if (!d->off_par) em_tensors_add(params, part, mod);
    }
    if (d->c->hpz > 1) em_tensors_add(params, sec, "hpz_secondary");
    return SS_OK;
}

static int ds_blocks(ds *d)
{
    const plan *pl = d->pl;
    size_t nb = pl->nblocks ? pl->nblocks : 1, np = pl->nparams ? pl->nparams : 1;
    d->t_full = malloc(nb * sizeof *d->t_full);
    d->fetch = malloc(nb * sizeof *d->fetch);
    d->gnumel = calloc(nb, sizeof *d->gnumel);
    d->gpadded = calloc(nb, sizeof *d->gpadded);
    d->t_grad = malloc(np * sizeof *d->t_grad);
    if (!d->t_full || !d->fetch || !d->gnumel || !d->gpadded || !d->t_grad)
        return ss_fail(d->e->err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t p = 0; p < pl->nparams; p++) d->t_grad[p] = EM_NONE;
    for (uint32_t b = 0; b < pl->nblocks; b++) {
        d->t_full[b] = d->fetch[b] = EM_NONE;
        for (uint32_t k = 0; d->s3 && k < pl->blocks[b].nparam; k++) {
            uint64_t n = pl->params[pl->blocks[b].param0 + k].numel;
            if (n < d->c->persistence_threshold) continue;
            d->gnumel[b] += n;
            d->gpadded[b] += ss_div_ceil(n, d->N) * d->N;
            d->gtotal += n;
        }
    }
    return SS_OK;
}

/* Persistent buffers: the ipg buffers (contiguous_gradients) and the
 * gradient partition (stages 2-3 without optimizer offload). Stages 1-2
 * double the ipg buffer under overlap_comm ("double buffers to avoid data
 * access conflict", stage_1_and_2.py at v0.18.0, 79caae1c); stage 3 keeps
 * one per communication dtype (stage3.py's IPGBucketZ3 at v0.18.0, its
 * __ipg_bucket_flat_buffer at v0.12.0): overlap_comm only gives it a
 * stream of its own. */
static void ds_buffers(ds *d)
{
    em *e = d->e;
    bool twice = d->c->overlap_comm && d->c->stage <= 2;
    uint32_t nipg = d->c->contiguous_gradients ? (twice ? 2 : 1) : 0;
    d->red[0] = d->red[1] = EM_NONE;
    for (uint32_t i = 0; i < nipg; i++)
        em_tensor(e, PROG_MEM_COMM_BUFFER, bucket_cap(d) * ds_grad_elem(d), true,
                  "ds.ipg_buffer.%u", i);
    d->t_gpart = e->st.grad.physical && d->c->stage >= 2
                     ? em_tensor(e, PROG_MEM_GRAD_SHARD, e->st.grad.physical, true,
                                 "ds.grad_partition")
                     : EM_NONE;
}

static void ds_fini(ds *d)
{
    free(d->t_full);
    free(d->fetch);
    free(d->gnumel);
    free(d->gpadded);
    free(d->t_grad);
    free(d->reduces);
}

static int ds_emit_rank(const plan *pl, prog *p, uint32_t rank, ss_err *err)
{
    em e;
    const spec_scenario *s = pl->s;
    ds d = {.e = &e, .pl = pl, .c = &s->ds, .N = pl->n, .s3 = s->ds.stage == 3,
            .off_opt = s->off.optimizer != SPEC_OFF_NONE, .off_par = s->off.params != SPEC_OFF_NONE,
            .g_hpz = 1 + rank / (s->ds.hpz ? s->ds.hpz : 1), .ready = EM_NONE, .last_red = EM_NONE};
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    em_tensors params = {0}, optim = {0};
    if ((rc = ds_blocks(&d)) || (rc = ds_local(&d, &params, &optim))) goto out;
    uint64_t part = ds_partition(&d);
    em_states(&e, &params, &optim);
    ds_buffers(&d);
    for (uint32_t m = 0; m < s->grad_accum; m++) {
        ds_forward(&d);
        ds_backward(&d, m);
    }
    uint32_t step = d.off_opt ? em_cpu_optim(&e, &optim, d.reduces, d.nreduces)
                             : ds_gpu_step(&d, &optim, part);
    ds_update_params(&d, step, part);
    ds_zero_grad(&d);
    rc = em_done(&e);
out:
    em_tensors_fini(&params);
    em_tensors_fini(&optim);
    ds_fini(&d);
    em_fini(&e);
    return rc;
}

int ds_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err)
{
    const spec_scenario *s = pl->s;
    uint64_t *numels = malloc((pl->nparams ? pl->nparams : 1) * sizeof *numels);
    if (!numels) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < pl->nparams; i++) numels[i] = pl->params[i].numel;
    static const st_kind kinds[] = {ST_DS_ZERO1, ST_DS_ZERO1, ST_DS_ZERO2, ST_DS_ZERO3};
    st_input in = {.kind = kinds[s->ds.stage], .n = pl->n, .rank = rank, .numels = numels,
                   .count = pl->nparams, .prec = s->prec, .opt = s->opt,
                   .persist_below = s->ds.stage == 3 ? s->ds.persistence_threshold : 0,
                   .off_optim = s->off.optimizer != SPEC_OFF_NONE,
                   .off_params = s->off.params != SPEC_OFF_NONE};
    int rc = st_compute(&in, out, err);
    /* hpZ's secondary partition is a parameter copy on the device. */
    for (uint32_t i = 0; !rc && s->ds.stage == 3 && s->ds.hpz > 1 && i < pl->nparams; i++)
        if (numels[i] >= s->ds.persistence_threshold) {
            ss_bytes b = ss_div_ceil(numels[i], s->ds.hpz) * pl->param_elem;
            out->param.physical += b;
            out->param.logical += b;
            out->total_physical += b;
        }
    free(numels);
    return rc;
}

int ds_init_peak(const plan *pl, uint32_t rank, ss_bytes *out, ss_err *err)
{
    st_bytes st;
    int rc = ds_states(pl, rank, &st, err);
    if (rc) return rc;
    ss_bytes whole = pl->total_numel * pl->param_elem, dev = st.param.physical - st.param.host;
    if (pl->s->ds.stage < 3) {
        *out = 2 * whole;
        return SS_OK;
    }
    ss_bytes biggest = 0;
    for (uint32_t i = 0; i < pl->nparams; i++)
        if (pl->params[i].numel * pl->param_elem > biggest)
            biggest = pl->params[i].numel * pl->param_elem;
    *out = pl->s->init_mode == SPEC_INIT_PER_UNIT ? dev + biggest : whole + dev;
    return SS_OK;
}

const sched_ops sched_deepspeed = {"deepspeed", SPEC_DEEPSPEED, ds_emit_rank};
