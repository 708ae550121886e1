/* trace.h - what the engine produces: when each op of each rank ran.
 *
 * The contract between the engine and every report. A trace refers to the
 * program it ran (for names, sizes, memory actions) but owns only its own
 * arrays. Times are integer nanoseconds from the start of the step.
 *
 * seq_issue/seq_end are the engine's global order of processing; two things
 * that happen at the same instant are ordered by seq, so a memory replay that
 * sorts by (t, seq) sees exactly the order the engine did. 32 bits: a step
 * of more than 2^32 - 1 issues and ends is refused by the engine (it would
 * need hundreds of gigabytes of program first).
 *
 * Ownership: trc_new allocates one record per op of every rank, in one
 * block; trc_free releases it (NULL is a no-op). The prog must outlive the
 * trace.
 */
#ifndef TRACE_H
#define TRACE_H

#include "../core/err.h"
#include "../plan/prog.h"

typedef struct trc_op {
    ss_ns issue;        /* host finished issuing it (device op) / started (HOST) */
    ss_ns start, end;   /* ran on its stream in [start, end) */
    uint32_t seq_issue; /* engine order of the issue event */
    uint32_t seq_end;   /* engine order of the end event */
} trc_op;

typedef struct trc {
    const prog *p;
    uint32_t nranks;
    trc_op **ops;     /* ops[rank][op id], pointers into rec */
    trc_op *rec;      /* every rank's records, rank by rank: one block */
    ss_ns step_ns;    /* latest end over all ops of all ranks */
    uint64_t nevents; /* events the engine processed */
} trc;

int trc_new(trc **out, const prog *p, ss_err *err);
void trc_free(trc *t);

#endif
