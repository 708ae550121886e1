/* span.h - unions of time intervals, for busy and exposed times.
 *
 * A span list is "merged" when sorted by start with no two spans touching
 * or overlapping; span_merge makes one in place. Pure arithmetic on
 * integer ns; internal to out/ (summary and timeline share it so the
 * exposed communication they report is the same).
 */
#ifndef SPAN_H
#define SPAN_H

#include <stdbool.h>
#include <stddef.h>

#include "trace.h"

typedef struct span {
    ss_ns a, b; /* [a, b) */
} span;

/* Sort and merge in place; returns the new count. */
size_t span_merge(span *s, size_t n);
ss_ns span_total(const span *s, size_t n);
/* Measure of the intersection of two merged lists. */
ss_ns span_overlap(const span *x, size_t nx, const span *y, size_t ny);
/* The parts of merged m not covered by merged c into out (room for nm + nc). */
size_t span_minus(const span *m, size_t nm, const span *c, size_t nc, span *out);

/* What a rank's timeline is made of, as merged spans into out (room for the
 * rank's op count): its compute stream, its collectives, or its host. */
typedef enum { SPAN_COMPUTE, SPAN_COMM, SPAN_HOST } span_kind;
size_t span_rank(const trc *t, uint32_t rank, span_kind k, span *out);
/* The rank's collectives on one stream, as merged spans (room as above). */
size_t span_rank_stream(const trc *t, uint32_t rank, prog_stream s, span *out);

#endif
