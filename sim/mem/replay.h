/* replay.h - allocated and reserved bytes over one step, from a trace.
 *
 * Replays every rank's allocations and frees in the order the engine
 * produced them (time, then engine sequence; an op's allocations before its
 * own issue-time frees) through one of two allocator models:
 *   - ideal: the sum of live requests rounded up to 512 bytes (a lower
 *     bound: no segments, no fragmentation);
 *   - caching: PyTorch's caching allocator (cache.h), the default. A tensor
 *     is served on the stream of the op that allocates it (the host's
 *     allocations on the compute stream, PyTorch's current stream). The step
 *     is replayed twice and measured the second time, so the allocator
 *     starts warm, as in a measured steady-state iteration; tensors the step
 *     frees from its start state take over the blocks of the matching
 *     tensors (same category and size) it leaves at its end.
 * Figures follow that (the allocator's, host-side) order; the times reported
 * (peak_t, series) are on the step's device time base: an event is shown
 * when its op starts on its stream (a free at the end: when the op ends),
 * never before the event shown ahead of it, so a host that runs ahead does
 * not pile the series up at the start of the step.
 * Reports per rank the bytes at the start and at the end of the step (the
 * steady state at the optimizer boundary), the allocated and reserved peaks,
 * when the allocated peak happened, the op that caused it, and what was live
 * then by category, with the allocator's slack (block bytes beyond the
 * requests) and the tensors themselves.
 *
 * A free of a tensor that is not live, or a double allocation, is a
 * scheduler bug: SS_E_INTERNAL naming the tensor. mem_rank_fini releases the
 * live list and the series.
 */
#ifndef MEM_REPLAY_H
#define MEM_REPLAY_H

#include <stdbool.h>

#include "../out/trace.h"
#include "cache.h"

#define MEM_ROUND 512u

typedef enum { MEM_MODEL_CACHING, MEM_MODEL_IDEAL, MEM_NMODELS } mem_model;
extern const char *const mem_model_names[MEM_NMODELS];

/* A tap on the caching model's replay (memory snapshots): event is
 * called for each allocator action of the measured pass, in order, with
 * the time the step shows it (as the series), the tensor of an ALLOC or
 * FREE (UINT32_MAX for segment actions) and the op that caused it;
 * segment for each block of the allocator's state at the end of the step
 * (mem_cache_walk's order), with the tensor that holds it (UINT32_MAX when
 * free). Both NULL-able. */
typedef struct mem_tap {
    void *ctx;
    void (*event)(void *ctx, const mem_cache_ev *e, ss_ns t, uint32_t tensor, uint32_t op);
    void (*segment)(void *ctx, const mem_cache_blk *b, uint32_t tensor);
} mem_tap;

typedef struct mem_cfg {
    mem_model model;
    bool expandable_segments;
    ss_bytes capacity; /* 0 = unlimited */
    bool series;       /* record allocated/reserved after every event */
    const mem_tap *tap; /* caching model only; NULL: none */
} mem_cfg;

typedef struct mem_point {
    ss_ns t;
    ss_bytes allocated, reserved;
} mem_point;

typedef struct mem_rank {
    ss_bytes start, end;    /* allocated, in the model's terms */
    ss_bytes peak;          /* peak allocated (max_memory_allocated) */
    ss_bytes peak_reserved; /* peak reserved (max_memory_reserved); = peak if ideal */
    ss_bytes ideal_peak;    /* the lower bound, whatever the model */
    ss_ns peak_t;
    uint32_t peak_op; /* op whose allocation reached the peak; UINT32_MAX if
                         the peak is the start state */
    ss_bytes peak_by_cat[PROG_NMEMCATS]; /* requests rounded to 512 */
    ss_bytes peak_slack;                 /* allocated - sum of the above */
    uint64_t ooms;                       /* requests over capacity */
    uint64_t retries;                    /* requests served after freeing the cache */
    uint32_t oom_op;                     /* first such op, UINT32_MAX if none */
    uint32_t *peak_live;                 /* tensor ids live at the peak */
    uint32_t npeak_live;
    mem_point *series; /* cfg->series: one point per event of the step */
    size_t nseries;
} mem_rank;

ss_bytes mem_round(ss_bytes b);

/* The series thinned to about `max` points for plots: it is cut in equal
 * windows of events and each window keeps its point of largest allocated
 * bytes, so the peak always survives. Calls f(ctx, point) in time order. */
void mem_series_thin(const mem_rank *m, size_t max, void (*f)(void *ctx, const mem_point *p),
                     void *ctx);

int mem_replay(const trc *t, uint32_t rank, const mem_cfg *cfg, mem_rank *out, ss_err *err);
void mem_rank_fini(mem_rank *m);

/* The allocator's view of one rank's step: its memory events in the order
 * the replay applies them, with the times it shows them. Ranks that run one
 * program (prog_rank_share: a layout's stage) often see it at the same
 * times; where two views are the same (mem_view_same: same program, same
 * events, same times, same order) the replays give the same figures, so a
 * caller replays one and copies it (mem_rank_copy: the live set duplicated,
 * no series). mem_replay is mem_view_new, mem_replay_view, mem_view_free. */
typedef struct mem_view mem_view;

int mem_view_new(const trc *t, uint32_t rank, mem_view **out, ss_err *err);
void mem_view_free(mem_view *v);
bool mem_view_same(const mem_view *a, const mem_view *b);
int mem_replay_view(const mem_view *v, const mem_cfg *cfg, mem_rank *out, ss_err *err);
int mem_rank_copy(const mem_rank *from, mem_rank *to, ss_err *err);

#endif
