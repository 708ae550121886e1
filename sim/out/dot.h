/* dot.h - the step as a Graphviz drawing: a timeline of every op.
 *
 * dot_write renders a DOT graph meant for `neato -n2 -Tsvg`: every node is
 * a fixed-size box with an explicit pos (points, y up), so the boxes are
 * placed and sized to time and neato only draws them. Shown, top to bottom:
 * a title (scenario, strategy, step time); a time axis in ms; a block per
 * group of identical ranks (below), headed by its ranks ("ranks 0-7 (8
 * identical)", node group_K, the full list as tooltip): one lane per stream
 * that has an op in the window, each op a box over [start, end) coloured by
 * kind, with its name, times and bytes as tooltip and its short name inside
 * when the box is wide enough, then the exposed communication (a
 * collective runs while the compute stream is idle) in red; rank 0's
 * allocated memory as bars on a GiB axis (node mem_scale), with a red
 * marker at its peak; the time axis again; a legend. The axes are nodes
 * axis_top and axis_bottom.
 *
 * Groups: two ranks are identical when they run as many ops and, op by op,
 * the same name, kind, collective, phase, stream and bytes, starting and
 * ending at the same ns; the drawing would show them the same. Each group
 * is drawn once, from its lowest rank (ops op_R_I, exposed spans exp_R_I,
 * R that rank). With every_rank (`--ranks A..B` on the command line) each
 * rank of the range has its own block, lanes labelled "rank R stream".
 *
 * Op labels: the short name is the op name without a leading runtime
 * prefix (fsdp., ds., ddp., zero.; the title names the runtime) and with
 * all_gather, reduce_scatter, all_reduce, all_to_all and "layers." written
 * AG, RS, AR, A2A and L ("fsdp.all_gather.layers.3" -> "AG.L3"), fitted to
 * the box at 7 pt by label.h's estimate (0.6 em a character, 2 pt margins),
 * cut with an ellipsis, or left out when not one character fits.
 *
 * Reads the report and the trace it was built from; allocates only scratch
 * that it frees. Deterministic: same inputs and options, same bytes.
 * Errors: SS_E_INPUT for options that select nothing, SS_E_NOMEM, SS_E_IO
 * when writing to f fails.
 */
#ifndef SUM_DOT_H
#define SUM_DOT_H

#include <stdbool.h>
#include <stdio.h>

#include "summary.h"

typedef struct dot_opts {
    uint32_t rank_lo, rank_hi; /* ranks drawn, inclusive; rank_hi is clamped */
    ss_ns t_lo, t_hi;          /* time window; t_hi = 0 means the whole step */
    double width_in;           /* drawing width in inches, e.g. 16 */
    bool every_rank;           /* a block per rank; false: per group of identical ranks */
    ss_bytes mem_top;          /* the memory band's least full height (0: rank 0's peak);
                                * two drawings with the same value share a scale */
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
