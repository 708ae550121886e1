/* sweep.h - many runs of one scenario: the cartesian product of --vary
 * lists (or an explicit list of points), simulated on worker threads, one
 * CSV row per point.
 *
 * Point i of the product is the same whatever the thread count: the last
 * --vary changes fastest, and rows are written in point order, so -j 1 and
 * -j N give the same bytes. In zip mode the lists are columns of one table
 * instead: point i takes value i of every list (layout searches, whose
 * points are not a product). A point that fails (an invalid combination, a
 * layout that does not fit the topology) does not stop the sweep: its row
 * carries the error message and empty figures.
 *
 * Each thread loads and runs its own scenario: the simulator has no shared
 * mutable state, which is what makes this safe. Progress: a callback
 * called from the workers with the count of finished points (serialized by
 * the sweep's own lock).
 *
 * Ownership: sweep_run returns the CSV text in *csv; the caller frees it
 * with free(). The optional figures array is the caller's.
 */
#ifndef SWEEP_H
#define SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/err.h"

#define SWEEP_MAX_VARY 16

typedef struct sweep_vary {
    char key[256];       /* scenario key path */
    char **values;       /* JSON or plain-string values */
    size_t nvalues;
    /* Optional, one per value (NULL entries allowed): the "key=value" that
     * is applied instead of key=values[i], while the CSV still shows
     * values[i] (search: another runtime replaces the whole sharding
     * section with that runtime's defaults). */
    char **sets;
} sweep_vary;

/* A point's figures as numbers, for callers that rank points. */
typedef struct sweep_fig {
    bool ok;                /* simulated; false: an error row */
    bool fits;              /* no rank's allocator went over its capacity */
    double step_s;          /* step_ns * 1e-9 */
    double tokens_per_s;    /* per GPU */
    double mfu;             /* 0 when the device has no peak for the dtype */
    uint64_t peak_reserved; /* bytes, the largest over ranks */
    uint64_t step_ns;       /* the step, exact */
    double compute_s;       /* rank 0's compute busy time (CSV compute_s) */
    double exposed_s;       /* rank 0's exposed communication (CSV exposed_communication_s) */
} sweep_fig;

/* A point left out (search pruning): its row's status word and the reason
 * the error column shows. */
enum { SWEEP_RUN = 0, SWEEP_SKIP = 1 };
typedef struct sweep_skip {
    char status[16];
    char why[256];
} sweep_skip;

typedef struct sweep_cfg {
    const char *scenario;
    const char *const *sets; /* applied to every point before the varied keys */
    size_t nsets;
    sweep_vary vary[SWEEP_MAX_VARY];
    size_t nvary;
    bool zip;                  /* explicit points: all lists of one length */
    sweep_fig *figs;           /* optional: one per row of sweep_run, in its order */
    unsigned threads;          /* >= 1 */
    size_t first, stride;      /* this process runs points first, first+stride, ... */
    /* After each point, under the pool's lock (one call at a time): points
     * done of total, and the point just finished (its slot in this
     * process's order and its figures). */
    void (*progress)(void *ctx, size_t done, size_t total, size_t slot, const sweep_fig *fig);
    void *progress_ctx;
    /* Optional (search): the order the points are taken in, a permutation
     * of this process's slots (NULL: slot order); rows stay in point order. */
    const size_t *order;
    /* Optional (search), under the pool's lock: before a point is simulated
     * (final false) and, once all are done, for every point in slot order
     * (final true), SWEEP_SKIP leaves it out: its row is row->status with
     * row->why in the error column and empty figures, its sweep_fig zero
     * (a point left out after it ran loses its figures). A point left out
     * before it runs still counts in progress, with a zero sweep_fig. */
    int (*skip)(void *ctx, size_t slot, bool final, sweep_skip *row);
    void *skip_ctx;
    /* Optional (search --resume): per slot, the row of a point simulated
     * before (with its newline; NULL: simulate it) and its figures, taken
     * as they are in its turn instead of simulating it. The skip hook is
     * still asked first. */
    char *const *given;
    const sweep_fig *given_figs;
    /* Optional (search --csv), under the pool's lock right after progress:
     * the row of the point just finished (skipped, given or simulated), as
     * sweep_run's text will have it unless the final skip pass replaces it. */
    void (*on_row)(void *ctx, size_t slot, const char *row, const sweep_fig *fig);
    void *row_ctx;
} sweep_cfg;

/* Parse "key=v1,v2,v3" into v (values split at commas outside brackets and
 * quotes, so JSON objects and arrays can be values). */
int sweep_vary_parse(const char *arg, sweep_vary *v, ss_err *err);
void sweep_vary_fini(sweep_vary *v);

/* Number of points: of the product (0 on overflow past SIZE_MAX), or in zip
 * mode the lists' common length (0 when they differ or there are none). */
size_t sweep_points(const sweep_cfg *c);

/* The CSV header line (with its newline). Caller frees. */
char *sweep_header(const sweep_cfg *c);

/* Point i's values as "key=value, key=value" (the last part of each key
 * path: sharding.strategy -> strategy) into buf[n], cut at n bytes. */
void sweep_point_label(const sweep_cfg *c, size_t i, char *buf, size_t n);

/* The sweep as one picture (out/bars.h): a bar per point, in point order,
 * labelled by sweep_point_label, split from figs (one per point, as
 * sweep_run filled them); a point without figures shows its CSV row's
 * status and error (csv: sweep_run's rows, all points). Errors: SS_E_NOMEM,
 * SS_E_IO from writing f. */
int sweep_svg(const sweep_cfg *c, const sweep_fig *figs, const char *csv, FILE *f, ss_err *err);

/* Run this process's points; *csv holds their rows (no header), in point
 * order, each line prefixed by its point index. */
int sweep_run(const sweep_cfg *c, char **csv, ss_err *err);

#endif
