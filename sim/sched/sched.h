/* sched.h - schedulers: from a plan to each rank's ops, the way a runtime
 * issues them.
 *
 * One module per runtime (ddp.c: DDP's reducer and gradient buckets;
 * zero.c: PyTorch's ZeroRedundancyOptimizer over DDP; fsdp1.c: FSDP1
 * FULL_SHARD / SHARD_GRAD_OP / NO_SHARD / HYBRID_SHARD / _HYBRID_SHARD_ZERO2
 * with its prefetch knobs and rate limiter; fsdp2.c: FSDP2's fully_shard). Each is a sched_ops entry in a static table searched by the
 * scenario's sharding.strategy. Schedulers know heaps and streams only
 * through prog.h; they know nothing of the engine's queue or of JSON.
 *
 * Every rank gets its own ops (ranks may differ: ZeroRedundancyOptimizer
 * owners, logical shard sizes). On error *out is untouched.
 */
#ifndef SCHED_H
#define SCHED_H

#include "../plan/plan.h"
#include "../mem/states.h"
#include "../plan/prog.h"

typedef struct sched_ops {
    const char *name; /* the sharding.strategy value */
    spec_strategy strategy;
    /* Emit rank `rank`'s ops into p (group 0 holds all data-parallel ranks). */
    int (*emit_rank)(const plan *pl, prog *p, uint32_t rank, ss_err *err);
} sched_ops;

const sched_ops *sched_find(spec_strategy s);

/* The state model that describes a strategy (FSDP strategies count per
 * FlatParameter, the others per parameter). */
st_kind sched_state_kind(spec_strategy s);
/* Rank `rank`'s state bytes under the plan's strategy. */
int sched_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err);

/* Peak bytes allocated on `rank` while the model is set up, before the
 * first step (optimizer states are created lazily by the first step, so
 * they are not part of it):
 *   DDP / ZeRO-1: the whole model, plus the larger of DDP's 250 MiB
 *   coalesced broadcast of module states and its gradient buckets;
 *   FSDP, init.mode full: the whole model, then each unit flattened (a
 *   padded copy; FSDP2 makes none) and cut to its shard, the originals
 *   freed as it goes;
 *   FSDP, init.mode per_unit: each unit materialized only when it is
 *   wrapped, so at most one unit whole beside the shards done so far. */
int sched_init_peak(const plan *pl, uint32_t rank, ss_bytes *out, ss_err *err);

/* Group ids for HSDP (HYBRID_SHARD): the rank's shard group (0, all ranks,
 * when the plan shards over every rank) and its replicate group (the ranks
 * holding the same shard in the other shard groups). */
uint32_t sched_gid_shard(const plan *pl, uint32_t rank);
uint32_t sched_gid_replicate(const plan *pl, uint32_t rank);
/* FSDP2 with reshard_after_forward = k (1 < k < shard group): the group of
 * k consecutive ranks the rank's backward all-gathers run over (ids after
 * the HSDP groups); otherwise its shard group. */
uint32_t sched_gid_post_forward(const plan *pl, uint32_t rank);

/* Build the whole program for a plan with the scheduler of its strategy.
 * Caller frees *out with prog_free. */
int sched_build(const plan *pl, prog **out, ss_err *err);

/* Model-parallel layouts (mp.c): the whole program of a layout plan, and a
 * rank's states (canonical ZeRO over its dense and expert groups). */
int mp_build(const plan *pl, prog *p, ss_err *err);
int mp_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err);

/* DeepSpeed ZeRO (deepspeed.c): a rank's states under the scenario's stage
 * and offload (DeepSpeed's accounting, mem/states.h). */
int ds_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err);
/* Its set-up peak: stages 1-2 build the model whole and flatten it into one
 * bit16 buffer (both exist while the parameters are moved in); stage 3
 * under init.mode per_unit is zero.Init, each parameter partitioned as it is
 * made (the partitions so far and one parameter whole), else the model is
 * built whole and then partitioned. */
int ds_init_peak(const plan *pl, uint32_t rank, ss_bytes *out, ss_err *err);
/* How its zero_optimization keys reduce a bucket of gradients, for the
 * DeepSpeed scheduler and DeepSpeed inside layouts (deepspeed.c says where
 * each rule comes from): all-reduced or reduce-scattered; through a
 * flattened copy of the bucket (stage 3 takes none for a bucket of one
 * tensor divisible by the ranks, or under ZeRO++'s quantized reduction,
 * which only the caller knows); and whether the compute stream waits for
 * the reductions before each bucket's. */
typedef struct ds_reduction {
    bool all_reduce, flat, waits;
} ds_reduction;
ds_reduction ds_reduction_of(const spec_deepspeed *c);

#endif
