/* replay.h - allocated bytes over one step, from a trace.
 *
 * Replays every rank's allocations and frees in the order the engine
 * produced them (time, then engine sequence; an op's allocations before its
 * own issue-time frees) and reports, per rank, the bytes allocated at the
 * start and at the end of the step (the steady state at the optimizer
 * boundary), the peak, when it happened, the op that caused it and what was
 * live then, by category.
 *
 * Model: "ideal with PyTorch rounding": every request is rounded up to
 * 512 bytes, as torch.cuda.memory_allocated() counts it; no segments, no
 * fragmentation (the caching-allocator model with reserved bytes is a
 * separate mode, issue 4). A free of a tensor that is not live, or a
 * double allocation, is a scheduler bug: SS_E_INTERNAL naming the tensor.
 */
#ifndef MEM_REPLAY_H
#define MEM_REPLAY_H

#include "../out/trace.h"

#define MEM_ROUND 512u

typedef struct mem_rank {
    ss_bytes start, end, peak;
    ss_ns peak_t;
    uint32_t peak_op; /* op whose allocation reached the peak; UINT32_MAX if
                         the peak is the start state */
    ss_bytes peak_by_cat[PROG_NMEMCATS];
} mem_rank;

ss_bytes mem_round(ss_bytes b);

int mem_replay(const trc *t, uint32_t rank, mem_rank *out, ss_err *err);

#endif
