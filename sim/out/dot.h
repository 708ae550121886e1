/* dot.h - the step as a Graphviz drawing: a timeline of every op.
 *
 * dot_write renders a DOT graph meant for `neato -n2 -Tsvg`: every node is
 * a fixed-size box with an explicit pos (points, y up), so the boxes are
 * placed and sized to time and neato only draws them. Shown, top to bottom:
 * a title (scenario, strategy, step time); one lane per (rank, stream) that
 * has an op in the window, each op a box over [start, end) coloured by kind,
 * with its name, times and bytes as tooltip; per rank, the exposed
 * communication (a collective runs while the compute stream is idle) in
 * red; rank 0's allocated memory as bars, with a red marker at its peak; a
 * time axis in ms; a legend.
 *
 * Reads the report and the trace it was built from; allocates only scratch
 * that it frees. Deterministic: same inputs and options, same bytes.
 * Errors: SS_E_INPUT for options that select nothing, SS_E_NOMEM, SS_E_IO
 * when writing to f fails.
 */
#ifndef SUM_DOT_H
#define SUM_DOT_H

#include <stdio.h>

#include "summary.h"

typedef struct dot_opts {
    uint32_t rank_lo, rank_hi; /* ranks drawn, inclusive; rank_hi is clamped */
    ss_ns t_lo, t_hi;          /* time window; t_hi = 0 means the whole step */
    double width_in;           /* drawing width in inches, e.g. 16 */
} dot_opts;

/* The plot area starts DOT_LEFT_PT points from the left edge (lane labels)
 * and ends DOT_RIGHT_PT before the right one: the time scale is
 * (width_in * 72 - DOT_LEFT_PT - DOT_RIGHT_PT) / (t_hi - t_lo) points per ns. */
#define DOT_LEFT_PT 132.0
#define DOT_RIGHT_PT 20.0
#define DOT_MIN_W_PT 0.75 /* narrowest box drawn, so short ops stay visible */

/* o == NULL: every rank, the whole step, 16 inches. */
int dot_write(const sum_report *r, const trc *t, const dot_opts *o, FILE *f, ss_err *err);

#endif
