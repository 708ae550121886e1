/* eq.h - the engine's future-event set.
 *
 * Pops events in (t, cls, seq) order: t in integer nanoseconds, cls one of
 * EQ_CLS_* (lower first at equal t), seq the order of eq_push calls on this
 * queue (a counter the queue owns, never reset). Same pushes, same pops, on
 * every platform: nothing is ordered by address or by floating point, and no
 * two events compare equal.
 *
 * Layout, and why. Events with equal (t, cls) pop in push order, so the
 * queue keeps one FIFO per "instant" (a distinct (t, cls)) and a 4-ary
 * min-heap of instants keyed on (t, cls, seq of the instant's first event).
 * In a training step most events share an instant with others (ranks run
 * the same program; a collective ends on all its members at once), so most
 * pushes append to an open instant and most pops take a FIFO head: O(1).
 * Opening an instant (a push at a new (t, cls)) and closing it (its last
 * pop) cost O(log instants).
 *
 * A push finds its open instant through a direct-mapped table from a hash
 * of (t, cls) to the newest instant opened with that key. The table is only
 * a cache: on a miss the push opens another instant with the same (t, cls),
 * ordered after the older one by its first seq, and the older one is never
 * appended to again (only an instant's opening writes the table), so every
 * event of the older instant still precedes every event of the newer one.
 * Hits change the speed, never the order.
 *
 * Memory: events and instants live in two pools with free lists (24 and 32
 * bytes a slot), the heap holds 24 bytes per open instant, the table 4
 * bytes a slot. Pools, heap and table grow by doubling and never shrink, so
 * pushes allocate O(log n) times in all and never in the steady state. The
 * struct is embedded by its user: eq_init / eq_fini, no eq_new. Knows
 * nothing about ranks, streams, collectives or FSDP: kind, a and b are
 * opaque to it.
 *
 * Errors: eq_push fails only with SS_E_NOMEM, and then leaves the queue as
 * it was (it may have grown a pool). An eq that failed eq_init needs no
 * eq_fini (it is harmless).
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
    EQ_CLS_HOST = 2,  /* a host thread looks for its next op */
    EQ_CLS_SETTLE = 3 /* the network settles what changed at t (eng.h); the
                         engine runs it in place of a queued event, once
                         eq_peek_t is past t (eng.c, push_settle) */
};

typedef struct eq_ev {
    uint64_t t;    /* when, ns */
    uint64_t seq;  /* push order, tie-break at equal (t, cls) */
    uint32_t kind; /* the user's event kind */
    uint32_t a, b; /* the user's ids, e.g. rank and op */
    uint8_t cls;   /* EQ_CLS_*, tie-break at equal t */
} eq_ev;

/* Internal slots; their fields are the queue's business. */
typedef struct eq_node eq_node; /* one pending event */
typedef struct eq_inst eq_inst; /* one open instant: a FIFO of nodes */
typedef struct eq_hent eq_hent; /* one heap entry: an instant's key */

typedef struct eq {
    eq_node *node;      /* [node_cap] event pool */
    eq_inst *inst;      /* [inst_cap] instant pool */
    eq_hent *heap;      /* [inst_cap] heap[0] is the least open instant */
    uint32_t *slot;     /* [slot_mask + 1] (t, cls) hash -> instant, or none */
    uint32_t node_cap, node_used, node_free; /* used: high-water mark */
    uint32_t inst_cap, inst_used, inst_free;
    uint32_t nheap, slot_mask;
    size_t len;         /* pending events */
    uint64_t next_seq;  /* seq of the next push */
} eq;

/* Empty queue with small preallocated pools. SS_OK or SS_E_NOMEM. */
int eq_init(eq *q, ss_err *err);

/* Release the arrays; q may be reused only after another eq_init. */
void eq_fini(eq *q);

/* Add one event; its seq is the number of pushes before it. SS_OK, or
 * SS_E_NOMEM with the queue's contents unchanged. */
int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err);

/* Move the least event into *out and return 1; return 0 (and leave *out
 * alone) when the queue is empty. */
int eq_pop(eq *q, eq_ev *out);

/* The time of the least event into *t and return 1; return 0 (and leave
 * *t alone) when the queue is empty. */
int eq_peek_t(const eq *q, uint64_t *t);

size_t eq_len(const eq *q);

/* Most events ever pending at once, and the bytes the queue holds now
 * (its arrays never shrink, so this is also its peak). For measurements. */
size_t eq_peak_len(const eq *q);
size_t eq_bytes(const eq *q);

/* 1 if the structure is consistent, else 0: the heap property on every
 * node; every open instant a non-empty FIFO whose seqs rise from the
 * instant's first seq; the FIFOs holding exactly eq_len events; every
 * table slot empty or naming an open instant of that slot's hash, and never
 * an older one than another open instant with the same (t, cls). O(n); for
 * tests and debug builds. */
int eq_check(const eq *q);

#endif
