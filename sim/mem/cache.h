/* cache.h - a model of PyTorch's CUDA caching allocator.
 *
 * Replays malloc/free requests the way CUDACachingAllocator serves them, to
 * predict what torch.cuda.max_memory_allocated() and max_memory_reserved()
 * report:
 *   - requests round up to 512 bytes; <= 1 MiB go to the small pool, larger
 *     ones to the large pool;
 *   - a request no cached block fits gets a new segment: 2 MiB for small
 *     requests, 20 MiB for large ones under 10 MiB, else the request rounded
 *     up to 2 MiB;
 *   - best fit among the free blocks of the same pool and the same stream
 *     (smallest size, then lowest address); the rest of the block is split
 *     off when it is >= 512 bytes (small pool) or > 1 MiB (large pool), so an
 *     unsplit block counts whole in "allocated";
 *   - a freed block merges with free neighbours of its segment; it is reused
 *     only by its own stream (callers delay the free for record_stream);
 *   - over capacity, fully free segments are released (empty_cache) before
 *     a new one is mapped (a retry, torch's num_alloc_retries); if that is
 *     not enough the request is an OOM: it is recorded and still served, so
 *     the rest of the step can be measured;
 *   - expandable_segments: the large pool of each stream is one segment that
 *     grows in 2 MiB pages at its end.
 * Constants: c10/cuda/CUDACachingAllocator.cpp (kMinBlockSize, kSmallSize,
 * kSmallBuffer, kLargeBuffer, kMinLargeAlloc, kRoundLarge).
 *
 * Deterministic: addresses are assigned in order of segment creation. The
 * free blocks are a search tree (O(log free blocks) expected per request)
 * and empty_cache visits only the segments it releases, so a step's replay
 * is linear in its requests up to that log factor.
 * Ownership: mem_cache_new / mem_cache_free. Knows nothing about tensors,
 * ops or time: callers give sizes and streams and get block ids back.
 */
#ifndef MEM_CACHE_H
#define MEM_CACHE_H

#include <stdbool.h>

#include "../core/err.h"

#define MEM_CACHE_NONE UINT32_MAX

typedef struct mem_cache mem_cache;

typedef struct mem_cache_cfg {
    bool expandable_segments;
    ss_bytes capacity; /* device bytes the allocator may reserve; 0 = unlimited */
} mem_cache_cfg;

typedef struct mem_cache_stats {
    ss_bytes allocated, reserved;           /* now */
    ss_bytes peak_allocated, peak_reserved; /* since the last reset */
    uint64_t segments_mapped;               /* cudaMalloc calls since reset */
    uint64_t ooms;                          /* requests over capacity since reset */
    uint64_t retries; /* requests served only after freeing the cached segments
                         (torch's num_alloc_retries) since reset */
} mem_cache_stats;

/* What the allocator did, in the terms of PyTorch's memory history
 * (CUDACachingAllocator's TraceEntry): a block served or released (its
 * address and its size, what "allocated" counts), a segment mapped or
 * released whole (cudaMalloc / cudaFree), or, with expandable_segments,
 * pages mapped at a segment's end or a segment unmapped. */
typedef enum {
    MEM_EV_ALLOC,
    MEM_EV_FREE,
    MEM_EV_SEGMENT_ALLOC,
    MEM_EV_SEGMENT_FREE,
    MEM_EV_SEGMENT_MAP,
    MEM_EV_SEGMENT_UNMAP
} mem_ev_kind;

typedef struct mem_cache_ev {
    mem_ev_kind kind;
    ss_bytes addr, size;
    uint32_t stream;
    uint32_t block; /* ALLOC and FREE: the block id */
} mem_cache_ev;

/* Called after each action, in order, while set (NULL f: none). */
typedef void (*mem_cache_hook)(void *ctx, const mem_cache_ev *e);

/* A block of a segment, for mem_cache_walk: first is set on the first
 * block of each segment (seg_addr, seg_size: the segment's). */
typedef struct mem_cache_blk {
    ss_bytes addr, size, seg_addr, seg_size;
    uint32_t id, stream;
    bool first, free, small, expandable;
} mem_cache_blk;

int mem_cache_new(mem_cache **out, const mem_cache_cfg *cfg, ss_err *err);
void mem_cache_free(mem_cache *c); /* NULL is a no-op */

/* Serve a request of `bytes` (> 0) on `stream`; *block is the block id to
 * release later, *oom is set when it did not fit the capacity. */
int mem_cache_alloc(mem_cache *c, ss_bytes bytes, uint32_t stream, uint32_t *block,
                    bool *oom, ss_err *err);
void mem_cache_release(mem_cache *c, uint32_t block);

void mem_cache_set_hook(mem_cache *c, mem_cache_hook f, void *ctx);

/* Every block of every segment, segments by address and blocks in address
 * order within each (they tile it). SS_E_NOMEM when out of memory. */
int mem_cache_walk(const mem_cache *c, void (*f)(void *ctx, const mem_cache_blk *b), void *ctx,
                   ss_err *err);

/* Bytes the block occupies (counted in "allocated"). */
ss_bytes mem_cache_block_size(const mem_cache *c, uint32_t block);

mem_cache_stats mem_cache_get_stats(const mem_cache *c);
/* Peaks and counters restart from the current values
 * (torch.cuda.reset_peak_memory_stats). */
void mem_cache_reset_peaks(mem_cache *c);

#endif
