/* states.h - per-rank bytes of the model states at the optimizer boundary.
 *
 * Parameters, gradients, master weights and optimizer states of one rank,
 * for the canonical ZeRO stages (DeepSpeed's definition: 1 shards optimizer
 * states, 2 also gradients, 3 also parameters; one flat buffer padded to
 * N * ceil(numel / N)), for PyTorch's ZeroRedundancyOptimizer (whole
 * parameters assigned to owner ranks, largest first, to the least loaded
 * rank), and for FSDP1 FULL_SHARD / SHARD_GRAD_OP / NO_SHARD (one
 * FlatParameter per wrap unit, each padded to N * ceil(numel / N)), and
 * FSDP2 (every parameter sharded on dim 0 on its own: a rank stores
 * ceil(rows / N) rows of each, the last ranks fewer real ones or none; its
 * optimizer steps the DTensor local shards, i.e. the real rows).
 *
 * "Logical" counts the model's own elements a rank holds; "physical" adds
 * the padding it stores. Under FSDP, the optimizer of use_orig_params=True
 * sees the original parameters' views (logical), otherwise the padded flat
 * shard (physical). SHARD_GRAD_OP holds sharded parameters at the optimizer
 * boundary (PyTorch reshards after backward), unlike canonical ZeRO-2.
 *
 * DeepSpeed's own accounting (stage_1_and_2.py, stage3.py): bit16
 * parameters, bit16 gradients (stage 1 whole, 2 and 3 partitioned), fp32
 * master and optimizer states partitioned, and the fp32 gradient partition
 * the step reads; the gradients go straight to the host's fp32 buffer
 * under optimizer offload (stages 2 and 3), so none stay on the device.
 *
 * Pure arithmetic, overflow-checked: no allocation, no knowledge of time.
 * Source of the formulas: seeds/002 (state table and FlatParameter padding),
 * DeepSpeed runtime/zero/config.py stage definitions quoted there.
 */
#ifndef ST_STATES_H
#define ST_STATES_H

#include "../core/err.h"
#include "../plan/spec.h"

#define ST_KINDS(X)                                                            \
    X(ZERO0, "zero0")                                                          \
    X(ZERO1, "zero1")                                                          \
    X(ZERO2, "zero2")                                                          \
    X(ZERO3, "zero3")                                                          \
    X(ZERO1_ZRO, "zero1_zero_redundancy")                                      \
    X(FSDP_FULL_SHARD, "full_shard")                                           \
    X(FSDP_SHARD_GRAD_OP, "shard_grad_op")                                     \
    X(FSDP_NO_SHARD, "no_shard")                                               \
    X(DS_ZERO1, "deepspeed_zero1")                                             \
    X(DS_ZERO2, "deepspeed_zero2")                                             \
    X(DS_ZERO3, "deepspeed_zero3")                                             \
    X(FSDP2, "fsdp2")

#define ST_ENUM_(id, name) ST_##id,
typedef enum { ST_KINDS(ST_ENUM_) ST_NKINDS } st_kind;
#undef ST_ENUM_

typedef struct st_input {
    st_kind kind;
    uint32_t n;    /* ranks in the sharding group, >= 1 */
    uint32_t rank; /* which rank to report, < n */
    /* Element counts: the parameters (canonical ZeRO, ZRO, DDP) or the wrap
     * units' FlatParameters (FSDP), in model order. */
    const uint64_t *numels;
    uint32_t count;
    spec_precision prec;
    spec_optimizer_cfg opt;
    bool use_orig_params; /* FSDP only */
    /* DeepSpeed kinds. Stages 1-2 count one flat buffer of every parameter,
     * stage 3 one partition per parameter (numels are parameters), those
     * under persist_below (stage3_param_persistence_threshold) also whole.
     * Offload moves the optimizer side (master, optimizer states, fp32
     * gradients) and/or the parameter partitions to the host. For the
     * other kinds off_params is FSDP's CPUOffload: every state on the host. */
    uint64_t persist_below;
    bool off_optim, off_params;
    /* FSDP2: rows[i], the dim-0 size of parameter i (numels[i] / rows[i]
     * elements per row); NULL for the other kinds. */
    const uint64_t *rows;
} st_input;

/* host: the part of physical held in host memory (offload). */
typedef struct st_amount {
    ss_bytes logical, physical, host;
} st_amount;

/* total_physical sums the four states and grad32 wherever they live; host
 * is the part of it in host memory (offload). grad32 is DeepSpeed's fp32
 * gradient partition, the copy the optimizer step reads when the gradients
 * are kept in another dtype (zero for the other kinds). */
typedef struct st_bytes {
    st_amount param, grad, master, optim, grad32;
    ss_bytes total_physical, host;
} st_bytes;

/* Compute the states of in->rank. Errors: n == 0, rank >= n, overflow. */
int st_compute(const st_input *in, st_bytes *out, ss_err *err);

/* Optimizer-state bytes per element (Adam: two moments; SGD: momentum). */
uint32_t st_optim_elem_bytes(const spec_optimizer_cfg *opt, spec_dtype optim);

/* ZeroRedundancyOptimizer's owner of each parameter: owner[i] for
 * numels[i]. Sorted by size descending (stable), each to the rank with the
 * least assigned elements (lowest rank on ties). SS_E_NOMEM (owner left
 * alone) when its scratch cannot be allocated: another assignment would
 * disagree with the scheduler's. */
int st_zro_owners(const uint64_t *numels, uint32_t count, uint32_t n,
                   uint32_t *owner);

/* Elements of a flat buffer of `numel` that rank r holds logically when it is
 * padded to n * ceil(numel / n) and split in n equal shards. */
uint64_t st_shard_logical(uint64_t numel, uint32_t n, uint32_t r);

#endif
