/* memsnap.h - rank 0's allocator over the step as the pickle PyTorch's
 * torch.cuda.memory._dump_snapshot writes, for pytorch.org/memory_viz and
 * torch/cuda/_memory_viz.py.
 *
 * The dict torch.cuda.memory._snapshot() returns:
 *   "device_traces": [[entry, ...]]: device 0's history, one entry per
 *     action of the caching model's measured pass (mem/replay.h), in the
 *     allocator's order: action ("alloc", "free_requested" then
 *     "free_completed", "segment_alloc", "segment_free", "segment_map",
 *     "segment_unmap"), addr, size, stream, time_us (when the step shows
 *     it) and frames, one frame naming the tensor, its category and its
 *     requested bytes (name) and the op that allocated or freed it
 *     (filename, and its op id as line);
 *   "segments": the allocator at the end of the step (the steady state the
 *     next step starts from): per segment device, address, total_size,
 *     stream, segment_type ("small" or "large"), is_expandable,
 *     allocated_size, active_size, requested_size and its blocks in address
 *     order (size, requested_size, address, state "active_allocated" or
 *     "inactive", frames);
 *   "allocator_settings": {"expandable_segments": bool}.
 * Sizes are the allocator's blocks, what torch.cuda.memory_allocated()
 * counts: PyTorch records the requested size in its history, smaller by
 * the 512-byte rounding and unsplit remainders (the summary's allocator
 * slack); with block sizes the viewer's active-memory timeline peaks at the
 * summary's peak allocated bytes (DECISIONS 88). Addresses are the model's
 * (segments in order of creation, apart).
 *
 * Streams are the program's stream indexes (0, the compute stream, is the
 * default stream). Written as the replay runs, in memory of one replay of
 * rank 0 (the same as the summary's). Errors: SS_E_INPUT when the scenario
 * uses the ideal allocator (it has no blocks or addresses), SS_E_IO when
 * writing fails (the caller names the file), the replay's errors.
 */
#ifndef MEMSNAP_H
#define MEMSNAP_H

#include <stdio.h>

#include "summary.h"

int msnap_write(const sum_report *r, const trc *t, FILE *f, ss_err *err);

#endif
