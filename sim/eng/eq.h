/* eq.h - the engine's future-event set.
 *
 * Pops events in (t, cls, seq) order: t in integer nanoseconds, cls one of
 * EQ_CLS_* (lower first at equal t), seq the order of eq_push calls on this
 * queue. Same pushes, same pops, on every platform; nothing is ordered by
 * address or by floating point.
 *
 * Events are small values in one flat binary heap that the queue owns
 * (eq_init / eq_fini; the struct is embedded by its user). push and pop are
 * O(log n), amortized allocation-free once the heap has grown. Knows nothing
 * about streams, collectives or FSDP.
 */
#ifndef EQ_H
#define EQ_H

#include "../core/err.h"

/* At one instant, completions are handled before issues, and issues before
 * the host looks for more work, so everything that finished at t is visible
 * to whatever starts at t. */
enum { EQ_CLS_END = 0, EQ_CLS_ISSUE = 1, EQ_CLS_HOST = 2 };

typedef struct eq_ev {
    uint64_t t;
    uint64_t seq;
    uint8_t cls;
    uint32_t kind;
    uint32_t a, b; /* ids of the target, e.g. rank and op */
} eq_ev;

typedef struct eq {
    eq_ev *heap;
    size_t len, cap;
    uint64_t next_seq;
} eq;

int eq_init(eq *q, ss_err *err);
void eq_fini(eq *q);
int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err);
/* Pop the least event into *out; returns 1, or 0 when the queue is empty. */
int eq_pop(eq *q, eq_ev *out);
size_t eq_len(const eq *q);

#endif
