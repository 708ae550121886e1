/* emit.h - the op builder the schedulers share (internal to sched/).
 *
 * An em is a cursor on one rank's program with a sticky error: every call
 * after the first failure does nothing, and em_done returns the first error,
 * so a scheduler reads as the runtime's issue order without an error check
 * on every line.
 *
 * It also emits the model body every runtime shares: the input batch, each
 * block's forward and backward GEMMs with their activations (a linear saves
 * its input for the weight gradient; the first block computes no input
 * gradient), the loss and its backward. Runtime-specific work (hooks,
 * collectives, optimizer) is added around those calls.
 */
#ifndef SCHED_EMIT_H
#define SCHED_EMIT_H

#include "../mem/states.h"
#include "sched.h"

#define EM_NONE UINT32_MAX

/* Tensors the next block op frees when it ends (buffers it reads that
 * another stream filled: gathered KV, gathered activations, unsharded
 * parameters); cleared by that op. A value: a body that interleaves two
 * micro-batches' blocks (mp.c's combined 1F1B) saves and restores it. */
typedef struct em_pending {
    uint32_t tensor[4];
    uint8_t act[4]; /* prog_memact */
    uint32_t n;
} em_pending;

typedef struct em {
    prog *p;
    const plan *pl;
    uint32_t rank;
    int rc;
    ss_err *err;
    /* the op being built */
    prog_op_spec s;
    char name[160];
    uint32_t *deps;
    uint32_t ndeps, capdeps;
    /* dmark[op] == dstamp: op is already a dep of the op being built (an
     * optimizer step waits on one reduction per unit: a linear check
     * would be quadratic in layers) */
    uint32_t *dmark, capdmark, dstamp;
    prog_mem *mem;
    uint32_t nmem, capmem;
    uint32_t last; /* id of the last op emitted */
    /* model body tensors */
    uint32_t t_input, t_loss, t_dloss;
    uint32_t *t_act;  /* output of block i */
    uint32_t *t_dact; /* gradient of the output of block i */
    uint32_t *t_saved; /* what block i keeps for its backward, besides its input */
    /* Pipelines keep several micro-batches in flight: the three arrays hold
     * nslots rows of nblocks, and the block calls use row `slot`. */
    uint32_t slot, nslots;
    em_pending pend;
    st_bytes st;      /* this rank's states */
} em;

/* Index of block i's tensors in the current slot. */
#define EM_AT(e, i) ((size_t)(e)->slot * (e)->pl->nblocks + (i))
/* Free `tensor` with the next block op (at most 4 pending): when it ends
 * (PROG_FREE_AT_END), or once it is issued (PROG_FREE_AT_ISSUE, a buffer
 * the runtime reuses in issue order, as Megatron's global buffers). */
void em_free_after_block(em *e, uint32_t tensor, prog_memact act);

int em_init(em *e, const plan *pl, prog *p, uint32_t rank, ss_err *err);
void em_fini(em *e);
int em_done(em *e); /* the first error, or SS_OK */
void em_nomem(em *e); /* fail with out of memory (sticky) */

/* Tensors. */
uint32_t em_tensor(em *e, prog_memcat cat, ss_bytes bytes, bool live,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Op building: begin, add deps/memory/costs, end. */
void em_begin(em *e, prog_opkind kind, prog_stream st, prog_phase ph,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void em_dep(em *e, uint32_t op); /* EM_NONE is ignored */
void em_mem(em *e, uint32_t tensor, prog_memact act);
void em_coll(em *e, prog_coll c, ss_bytes bytes);
/* The collective's group, when it is not group 0 (all data-parallel ranks). */
void em_group(em *e, uint32_t gid);
void em_cost(em *e, ss_ns host_ns, ss_ns dev_ns, uint64_t flops);
uint32_t em_end(em *e); /* returns the op id (EM_NONE after an error) */

/* Shorthands. */
uint32_t em_host(em *e, prog_phase ph, ss_ns ns, const char *name);
/* A zero-time op on a stream: a place to hang an event or a deferred free. */
void em_marker_begin(em *e, prog_stream st, prog_phase ph, const char *name);

/* The local tensors the optimizer works on: element counts, one entry per
 * tensor (whole parameters, owned parameters, or FSDP shards / views), each
 * with the module it belongs to (a block or unit name of the plan, or a
 * runtime's own word such as "partition"; NULL: none), which names the
 * tensor in the memory ledger. */
typedef struct em_tensors {
    uint64_t *numel;
    const char **label;
    uint32_t n;
} em_tensors;

/* Room for n entries (n = 0 allowed); em_tensors_fini frees. */
int em_tensors_init(em_tensors *t, uint32_t n, ss_err *err);
void em_tensors_fini(em_tensors *t);
/* Append an entry (room for it was made by em_tensors_init). */
void em_tensors_add(em_tensors *t, uint64_t numel, const char *label);
/* The name of parameter i's block in the plan. */
const char *em_param_module(const plan *pl, uint32_t i);
/* Every parameter of the model, whole. */
int em_tensors_all(const plan *pl, em_tensors *t, ss_err *err);

/* The persistent state every runtime has: one tensor per local parameter
 * (params: what the rank stores; optim: what its optimizer steps), with
 * master weights and optimizer states per optimizer tensor, and the runtime
 * workspaces. Their sums must equal the state model's bytes (e->st): a
 * mismatch is SS_E_INTERNAL. */
void em_states(em *e, const em_tensors *params, const em_tensors *optim);

/* Model body. dep: an extra dep of the op (EM_NONE for none). */
uint32_t em_input(em *e);
uint32_t em_fwd_block(em *e, uint32_t b, uint32_t dep);
uint32_t em_loss(em *e);
/* em_loss in two halves, for pipelines whose loss backward comes later. */
uint32_t em_loss_fwd(em *e);
uint32_t em_loss_bwd(em *e);
/* grads: tensors the op allocates for the parameter gradients (autograd's
 * AccumulateGrad output), may be empty. */
uint32_t em_bwd_block(em *e, uint32_t b, uint32_t dep, const uint32_t *grads,
                      uint32_t ngrads);
/* The optimizer step over the optimizer's tensors; temporaries per impl. */
uint32_t em_optim(em *e, const em_tensors *optim);

/* The host's time to issue one op (plan_op_host_ns): every device op the
 * schedulers emit costs the host this much before it reaches its stream. */
ss_ns em_op_host_ns(const em *e);

/* The last two events of a kind (FSDP1's pending frees, DeepSpeed's
 * releases), for a host that may run at most two of them ahead of the
 * device. em_pair_wait: with two pending, a host op `name` that waits for
 * the older, which then leaves the pair. */
typedef struct em_pair {
    uint32_t ev[2], n;
} em_pair;
void em_pair_push(em_pair *q, uint32_t ev);
void em_pair_wait(em *e, em_pair *q, const char *name);

/* Offload (the scenario's "offload" section). A host <-> device copy of
 * `bytes` on the copy stream at the PCIe rate (pageable buffers at half of
 * it; nvme: no faster than the NVMe rate), after dep; it allocates the
 * device tensor `dst` when it is issued and frees `src` when it ends
 * (either EM_NONE). em_host_copy_drop frees `src` when the copy is issued
 * instead: a runtime that drops its reference at once and relies on the
 * stream's order (FSDP2's CPUOffloadPolicy, no record_stream). */
uint32_t em_host_copy_drop(em *e, prog_phase ph, ss_bytes bytes, uint32_t dep, uint32_t src,
                           const char *name);
uint32_t em_host_copy(em *e, prog_phase ph, ss_bytes bytes, bool nvme, uint32_t dep,
                      uint32_t dst, uint32_t src, const char *name);
/* The optimizer stepping the optimizer's tensors on the CPU: a host op (it
 * holds the training thread) after deps[0 .. ndeps). */
uint32_t em_cpu_optim(em *e, const em_tensors *optim, const uint32_t *deps, uint32_t ndeps);
/* The step where the optimizer states are: on the CPU after deps under
 * optimizer offload, else em_optim on the device. */
uint32_t em_step(em *e, const em_tensors *optim, const uint32_t *deps, uint32_t ndeps);

/* Gradient accumulation: does micro-batch m (of training.grad_accum)
 * reduce its gradients? Always the last; every one without no_sync. */
bool em_syncs(const em *e, uint32_t m);

/* DDP's gradient path, shared by ddp.c and zero.c: forward, backward with
 * the reducer's bucket copies and all-reduces, finalize. Leaves the grads
 * (view=false) in g->t_grad for the optimizer and zero_grad. */
typedef struct ddp_grads {
    uint32_t *t_grad;   /* per param, EM_NONE under gradient_as_bucket_view */
    uint32_t *t_bucket; /* per bucket */
    uint32_t *ar;       /* per bucket: its all-reduce op */
} ddp_grads;
int ddp_grads_init(ddp_grads *g, const plan *pl, ss_err *err);
void ddp_grads_fini(ddp_grads *g);
void ddp_body(em *e, ddp_grads *g);
/* optimizer.zero_grad(set_to_none=True) and the end of the loop body. */
void ddp_zero_grad(em *e, const ddp_grads *g);

#endif
