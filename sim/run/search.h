/* search.h - a layout search: the points of a space of layouts and sharding
 * choices, and which of their results are worth showing.
 *
 * The space is a world of GPUs and candidate lists for tp, cp, pp, ep, the
 * sharding strategy and the recomputation mode. A layout (tp, cp, pp) is a
 * point only when dp = world / (tp cp pp) is whole, and when dp splits the
 * global batch: the global batch (samples per optimizer step) is held fixed
 * across layouts, each point taking grad_accum = global_batch / (micro_batch
 * dp), so step times compare the same work. Every other check (heads, layers,
 * experts, strategies a layout can run) is the scenario loader's: a point
 * it rejects becomes an error row of the sweep, not a hole in the list.
 *
 * Points are listed in the candidate lists' order, tp slowest, recompute
 * fastest, so a search's rows are the same on any number of threads.
 * search_sweep_lists turns them into the columns of a zip-mode sweep
 * (run/sweep.h), which simulates them.
 *
 * Among the results, only simulated points that fit their device count:
 * the memory/time Pareto front is the fitting points no other fitting point
 * beats on both peak reserved bytes and step time, sorted by step time; its
 * first point is the fastest one.
 *
 * Pruning (search_check, search_pruner): before anything is simulated,
 * each point is loaded and planned once more to get two closed-form
 * figures: its state bytes on the device (the largest rank's parameters,
 * gradients, master weights and optimizer states, mem/states.h), a lower
 * bound on its peak, and its step with each collective at its least time
 * (run/bound.h, run/least.h), a lower bound on its step. A point whose states alone exceed the device is
 * rejected (it cannot fit). The rest are simulated in order of increasing
 * bound; a point is pruned when a point already simulated is sure to come
 * before it: SEARCH_PRUNE_BEST keeps the best point exact (its front
 * lists the simulated points only), SEARCH_PRUNE_FRONT keeps the whole
 * front exact (a point is pruned only by one that also needs no more
 * memory than its states), SEARCH_PRUNE_NONE simulates everything. The
 * verdicts are the same on any number of threads: a point counts as a
 * pruner only once every point before it in the order has finished, and a
 * point simulated while that was pending is pruned afterwards when the
 * complete record says so (docs/DECISIONS.md, entry 79).
 *
 * Knows nothing about option syntax or printing (cli/search_cmd.c).
 */
#ifndef SEARCH_H
#define SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/err.h"
#include "../plan/spec.h"
#include "sweep.h"

#define SEARCH_MAX_VALUES 32

/* A candidate list; n == 0 means "the default" until search_defaults. */
typedef struct search_list {
    uint32_t v[SEARCH_MAX_VALUES];
    size_t n;
} search_list;

typedef struct search_space {
    uint32_t world;             /* GPUs the layouts use */
    search_list tp, cp, pp, ep;
    search_list strategy;       /* spec_strategy values */
    search_list recompute;      /* spec_recompute values */
    uint64_t global_batch;      /* samples per optimizer step */
    uint64_t micro_batch;       /* samples per rank per micro-batch */
    size_t max_points;
} search_space;

typedef struct search_point {
    uint32_t tp, cp, pp, ep, dp, grad_accum;
    spec_strategy strategy;
    spec_recompute recompute;
} search_point;

/* Fill what the space leaves at zero from scenario s: world = every GPU of
 * the topology; tp the powers of two up to the world and the GPUs of one
 * node (TP stays inside a node); cp, pp the powers of two up to the world;
 * ep those up to the world and the model's experts (1 for a dense model);
 * the scenario's strategy and recompute; its global batch (micro_batch x dp
 * x grad_accum) and micro-batch; max_points 2000. */
void search_defaults(search_space *sp, const spec_scenario *s);

/* The points of the space, in order (*out: caller frees). *skipped counts
 * the layouts whose dp divides the world but not the global batch.
 * SS_E_INPUT: no point at all, or more than max_points (the message names
 * the option to narrow). */
int search_enumerate(const search_space *sp, search_point **out, size_t *n, size_t *skipped,
                     ss_err *err);

/* The scenario keys a point sets, in its CSV column order. */
#define SEARCH_NKEYS 9
extern const char *const search_keys[SEARCH_NKEYS];

/* Point p's value of search_keys[key] as its CSV column shows it. */
void search_point_value(const search_point *p, size_t key, char *buf, size_t cap);

/* The overrides that make the scenario point p, "key=value" in sets (as
 * the sweep applies them: another runtime than `base` replaces the
 * sharding section). Returns how many (SEARCH_NKEYS). */
#define SEARCH_SET_MAX 160
size_t search_point_sets(const search_point *p, spec_strategy base,
                         char sets[SEARCH_NKEYS][SEARCH_SET_MAX]);

/* Make c a zip-mode sweep of the points: c->vary[k] is the column of
 * search_keys[k] (the values are owned by c; free with sweep_vary_fini).
 * A point whose strategy is not `base` (the scenario's) replaces the
 * sharding section with {"strategy": name}: that runtime's defaults. On
 * failure nothing is left allocated. */
int search_sweep_lists(const search_point *pts, size_t n, spec_strategy base, sweep_cfg *c,
                       ss_err *err);

/* The Pareto front of figs[0..n): *nfront point indices into front (room
 * for n), by step time, then peak reserved, then index; none when nothing
 * fits. front[0] is the best point by step time. O(n log n). */
int search_front(const sweep_fig *figs, size_t n, size_t *front, size_t *nfront, ss_err *err);

/* ---- pruning ---- */

typedef struct search_check {
    bool checked;     /* false: the point did not load, plan or build (its
                         simulation reports why: it is simulated, never pruned) */
    bool rejected;    /* states > capacity: it cannot fit */
    uint64_t states;  /* bytes on the device, the largest rank's */
    uint64_t capacity; /* bytes; 0 = unlimited */
    ss_ns bound_ns;   /* the step with each collective at its least time */
} search_check;

/* The closed-form figures of point p of scenario `file` with the search's
 * sets (the same overrides the sweep applies: search_point_sets). Never
 * fails: a point that does not load, plan or build is left unchecked. */
void search_check_point(const char *file, const char *const *sets, size_t nsets,
                        spec_strategy base, const search_point *p, search_check *out);

/* search_check_point for points 0..n) on `threads` threads (each loads
 * its own scenario), chk[i] for pts[i]; progress (optional) is called
 * under a lock after each point. */
void search_check_all(const char *file, const char *const *sets, size_t nsets,
                      spec_strategy base, const search_point *pts, size_t n, unsigned threads,
                      search_check *chk, void (*progress)(void *ctx, size_t done, size_t total),
                      void *ctx);

/* When no point fits: the one that came closest. A simulated point's
 * miss is its peak reserved over `usable` (what a rank may reserve,
 * out/summary.h's sum_usable), 0 when it failed at the capacity without
 * reserving past it; a rejected point's (never simulated) is its states
 * over usable, a lower bound. The smallest simulated miss wins (then the
 * lower index); a rejected point only when none was simulated, or as
 * *doubt when its lower bound is below the winner's miss (it might come
 * closer: --no-prune would tell). false: no point was simulated or
 * rejected (all errors). */
typedef struct search_miss {
    size_t point;
    bool simulated;   /* false: rejected, bytes its states */
    uint64_t bytes;   /* peak reserved, or states */
    uint64_t over;    /* bytes - usable, or 0 */
    size_t doubt;     /* a rejected point that might come closer; SIZE_MAX none */
} search_miss;
bool search_nearest_miss(const sweep_fig *figs, const search_check *chk, size_t n,
                         uint64_t usable, search_miss *out);

typedef enum { SEARCH_PRUNE_BEST, SEARCH_PRUNE_FRONT, SEARCH_PRUNE_NONE } search_prune;
extern const char *const search_prune_names[3]; /* "best", "front", "none" */

typedef struct search_pruner search_pruner; /* opaque */

/* A pruner over the checks of points 0..n) (chk must outlive it). */
int search_pruner_new(search_pruner **out, const search_check *chk, size_t n,
                      search_prune mode, ss_err *err);
void search_pruner_free(search_pruner *p);
/* The order to simulate in: unchecked points, then by bound (then index),
 * rejected ones last. n entries, owned by the pruner. */
const size_t *search_pruner_order(const search_pruner *p);
/* SEARCH_PRUNE_NONE: every point runs, in index order, none rejected
 * (the checks need not be run: zeroed chk will do). */
/* Point i finished (f->ok false when it was not simulated or failed). */
void search_pruner_done(search_pruner *p, size_t i, const sweep_fig *f);
/* Whether point i is left out, from what is known now (before it runs) or,
 * once every point is done, for good: SWEEP_SKIP_* with the row's status
 * and reason in *row. */
int search_pruner_skip(search_pruner *p, size_t i, sweep_skip *row);
/* After the run: whether a pruned point might still beat fitting point q
 * (step_s, peak reserved) on the front: its bound is not above q's step
 * and its states not above q's memory. Always false but under
 * SEARCH_PRUNE_BEST (front keeps the front exact, none prunes nothing). */
bool search_pruner_doubt(const search_pruner *p, const sweep_fig *q);
/* After the run: the pruned points that might still be on the front (no
 * simulated fitting point is both no slower than their bound and no larger
 * than their states). 0 but under SEARCH_PRUNE_BEST. */
size_t search_pruner_open(const search_pruner *p);
/* Counts after the run: rejected and pruned points. */
void search_pruner_counts(const search_pruner *p, size_t *rejected, size_t *pruned);

#endif
