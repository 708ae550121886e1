/* bars.h - many runs compared in one picture: a sweep's points as bars.
 *
 * bars_write draws an SVG (written directly, no Graphviz): a title; a time
 * axis in ms at the top and the bottom, one scale for every row (0 to the
 * longest step); one row per point, top to bottom in the order given (node
 * <g id="point_I">, I its index), its label on the left and its step as a
 * horizontal bar split into rank 0's compute busy time, its exposed
 * communication (collectives while compute is idle) and the rest of the
 * step (idle: pipeline bubble, host-bound gaps, waits on other ranks),
 * each part with its figures as tooltip, the step in ms after the bar
 * ("does not fit" when the point's memory does not); a point without
 * figures (an error, a point left out) shows why instead; a legend.
 *
 * Labels are fitted to the left margin (at most BARS_LABEL_MAX_PT) by
 * label.h's estimate, cut with an ellipsis; the full label is the row's
 * tooltip. Text is escaped for XML. Deterministic: same rows, same bytes.
 * Allocates nothing. Errors: SS_E_INPUT for no rows, SS_E_IO when writing
 * to f fails.
 */
#ifndef BARS_H
#define BARS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../core/err.h"

typedef struct bars_row {
    const char *label; /* the point, e.g. "sharding.strategy=full_shard" */
    bool ok;           /* simulated: the figures below are set */
    const char *why;   /* !ok: what the row shows instead (an error) */
    bool fits;
    double step_s, compute_s, exposed_s; /* rank 0's: compute + exposed <= step */
} bars_row;

#define BARS_WIDTH_PT 1152.0    /* 16 in */
#define BARS_LABEL_MAX_PT 360.0 /* the widest label margin */
#define BARS_FONT 9.0

int bars_write(const char *title, const bars_row *rows, size_t n, FILE *f, ss_err *err);

#endif
