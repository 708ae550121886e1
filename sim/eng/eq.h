/* eq.h - the engine's future-event set.
 *
 * Pops events in (t, cls, seq) order: t in integer nanoseconds, cls one of
 * EQ_CLS_* (lower first at equal t), seq the order of eq_push calls on this
 * queue (a counter the queue owns, never reset). Same pushes, same pops, on
 * every platform: nothing is ordered by address or by floating point, and no
 * two events compare equal.
 *
 * Events are small values in one flat binary heap that the queue owns. The
 * struct is embedded by its user: eq_init / eq_fini, no eq_new. push and pop
 * are O(log n); the array grows by doubling, so pushes allocate only
 * O(log n) times in all. Knows nothing about ranks, streams, collectives or
 * FSDP: kind, a and b are opaque to it.
 *
 * Errors: eq_push fails only with SS_E_NOMEM, and then leaves the queue as
 * it was. An eq that failed eq_init needs no eq_fini (it is harmless).
 */
#ifndef EQ_H
#define EQ_H

#include "../core/err.h"

/* Classes, lowest first among events at one instant. Completions come
 * first, so whatever ended at t is visible to whatever is issued or starts
 * at t; then issues (the host finished issuing a device op); then the host
 * looking for work. Events pushed at t while t is processed still pop in
 * this order among the events left at t. */
enum {
    EQ_CLS_END = 0,   /* an op ends on its stream or on the host */
    EQ_CLS_ISSUE = 1, /* a device op reaches its stream */
    EQ_CLS_HOST = 2   /* a host thread looks for its next op */
};

typedef struct eq_ev {
    uint64_t t;    /* when, ns */
    uint8_t cls;   /* EQ_CLS_*, tie-break at equal t */
    uint64_t seq;  /* push order, tie-break at equal (t, cls) */
    uint32_t kind; /* the user's event kind */
    uint32_t a, b; /* the user's ids, e.g. rank and op */
} eq_ev;

typedef struct eq {
    eq_ev *heap;       /* heap[0] is the least event */
    size_t len, cap;
    uint64_t next_seq; /* seq of the next push */
} eq;

/* Empty queue with a small preallocated array. SS_OK or SS_E_NOMEM. */
int eq_init(eq *q, ss_err *err);

/* Release the array; q may be reused only after another eq_init. */
void eq_fini(eq *q);

/* Add one event; its seq is the number of pushes before it. SS_OK, or
 * SS_E_NOMEM with the queue unchanged. */
int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err);

/* Move the least event into *out and return 1; return 0 (and leave *out
 * alone) when the queue is empty. */
int eq_pop(eq *q, eq_ev *out);

size_t eq_len(const eq *q);

/* 1 if the heap property holds on every node, else 0. O(n); for tests and
 * debug builds. */
int eq_check(const eq *q);

#endif
