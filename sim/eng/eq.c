/* The future-event set: FIFOs of events per instant (t, cls), a 4-ary heap
 * of instants, a direct-mapped cache from (t, cls) to its newest open
 * instant. eq.h says why this keeps the exact (t, cls, seq) order. */
#include "eq.h"

#include <stdlib.h>

#define NONE UINT32_MAX

enum { NODE_CAP0 = 64, INST_CAP0 = 16, SLOT_BITS0 = 6, ARITY = 4 };

struct eq_node {
    uint64_t seq;
    uint32_t kind, a, b;
    uint32_t next; /* next event of the instant, or of the free list */
};

struct eq_inst {
    uint64_t t, seq0;   /* seq0: seq of its first event */
    uint32_t head;      /* first event; next free instant while closed */
    uint32_t tail;      /* last event; NONE while closed */
    uint8_t cls;
};

struct eq_hent {
    uint64_t t, seq0;
    uint32_t inst;
    uint8_t cls;
};

static int nomem(ss_err *err)
{
    return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the event queue");
}

static int key_less(const eq_hent *x, const eq_hent *y)
{
    if (x->t != y->t) return x->t < y->t;
    if (x->cls != y->cls) return x->cls < y->cls;
    return x->seq0 < y->seq0;
}

/* Fibonacci hashing of (t, cls): the top bits of one multiply. */
static uint32_t slot_of(const eq *q, uint64_t t, uint8_t cls)
{
    uint64_t h = (t + cls * 0x632be59bd9b4e019ull) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & q->slot_mask;
}

/* Double *cap (from cap0), reallocating *p; on failure *p and *cap are
 * unchanged. */
static int grow(void **p, uint32_t *cap, uint32_t cap0, size_t size, ss_err *err)
{
    uint64_t n = *cap ? (uint64_t)*cap * 2 : cap0;
    if (n >= NONE || n > SIZE_MAX / size) return nomem(err);
    void *np = realloc(*p, (size_t)n * size);
    if (!np) return nomem(err);
    *p = np;
    *cap = (uint32_t)n;
    return SS_OK;
}

/* A fresh, empty table of 2^bits slots in place of the old one. Emptying
 * is always allowed: the table is a cache (eq.h). */
static int reset_slots(eq *q, uint32_t bits, ss_err *err)
{
    uint32_t n = 1u << bits;
    uint32_t *s = malloc((size_t)n * sizeof *s);
    if (!s) return nomem(err);
    for (uint32_t i = 0; i < n; i++) s[i] = NONE;
    free(q->slot);
    q->slot = s;
    q->slot_mask = n - 1;
    return SS_OK;
}

int eq_init(eq *q, ss_err *err)
{
    *q = (eq){.node_free = NONE, .inst_free = NONE};
    int rc = grow((void **)&q->node, &q->node_cap, NODE_CAP0, sizeof *q->node, err);
    if (!rc) rc = grow((void **)&q->inst, &q->inst_cap, INST_CAP0, sizeof *q->inst, err);
    if (!rc) q->heap = malloc(q->inst_cap * sizeof *q->heap);
    if (!rc && !q->heap) rc = nomem(err);
    if (!rc) rc = reset_slots(q, SLOT_BITS0, err);
    if (rc) eq_fini(q);
    return rc;
}

void eq_fini(eq *q)
{
    free(q->node);
    free(q->inst);
    free(q->heap);
    free(q->slot);
    *q = (eq){0};
}

/* ---- the heap of instants (hole-moving sifts) ---- */

static void sift_up(eq_hent *h, uint32_t i)
{
    eq_hent x = h[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / ARITY;
        if (!key_less(&x, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = x;
}

/* Index of the least child of i among h[0 .. n), or n if i has none. */
static uint32_t least_child(const eq_hent *h, uint32_t n, uint32_t i)
{
    uint64_t c0 = (uint64_t)i * ARITY + 1;
    if (c0 >= n) return n;
    uint32_t best = (uint32_t)c0, end = c0 + ARITY < n ? (uint32_t)c0 + ARITY : n;
    for (uint32_t c = best + 1; c < end; c++)
        if (key_less(&h[c], &h[best])) best = c;
    return best;
}

static void sift_down(eq_hent *h, uint32_t n, uint32_t i)
{
    eq_hent x = h[i];
    for (;;) {
        uint32_t c = least_child(h, n, i);
        if (c == n || !key_less(&h[c], &x)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* ---- instants ---- */

/* Room for one more open instant: a free slot in the pool (the heap has as
 * many entries as the pool), and a table at most half full. */
static int inst_reserve(eq *q, ss_err *err)
{
    if (q->inst_free == NONE && q->inst_used == q->inst_cap) {
        uint32_t cap = q->inst_cap;
        int rc = grow((void **)&q->inst, &cap, INST_CAP0, sizeof *q->inst, err);
        if (rc) return rc;
        eq_hent *h = realloc(q->heap, (size_t)cap * sizeof *h);
        if (!h) return nomem(err); /* the larger pool is harmless */
        q->heap = h;
        q->inst_cap = cap;
    }
    if ((uint64_t)(q->nheap + 1) * 2 <= (uint64_t)q->slot_mask + 1) return SS_OK;
    uint32_t bits = 0;
    while ((1u << bits) <= q->slot_mask) bits++;
    return bits >= 31 ? SS_OK : reset_slots(q, bits + 1, err);
}

/* Open an instant for (t, cls) whose first event will have seq next_seq;
 * inst_reserve made room. It becomes the table's choice for its key. */
static uint32_t inst_open(eq *q, uint64_t t, uint8_t cls, uint32_t s)
{
    uint32_t id = q->inst_free;
    if (id != NONE) q->inst_free = q->inst[id].head;
    else id = q->inst_used++;
    q->inst[id] = (eq_inst){.t = t, .seq0 = q->next_seq, .head = NONE, .tail = NONE, .cls = cls};
    q->heap[q->nheap] = (eq_hent){.t = t, .seq0 = q->next_seq, .inst = id, .cls = cls};
    sift_up(q->heap, q->nheap++);
    q->slot[s] = id;
    return id;
}

/* The least instant (heap[0], id) has no events left: drop it from the
 * heap, the table and the pool. Out of line, as push_slow. */
__attribute__((noinline)) static void inst_close_least(eq *q, uint32_t id)
{
    eq_inst *in = &q->inst[id];
    uint32_t s = slot_of(q, in->t, in->cls);
    if (q->slot[s] == id) q->slot[s] = NONE;
    in->tail = NONE;
    in->head = q->inst_free;
    q->inst_free = id;
    q->heap[0] = q->heap[--q->nheap];
    if (q->nheap) sift_down(q->heap, q->nheap, 0);
}

/* ---- events ---- */

static int node_reserve(eq *q, ss_err *err)
{
    if (q->node_free != NONE || q->node_used < q->node_cap) return SS_OK;
    return grow((void **)&q->node, &q->node_cap, NODE_CAP0, sizeof *q->node, err);
}

static uint32_t node_take(eq *q)
{
    uint32_t n = q->node_free;
    if (n == NONE) return q->node_used++;
    q->node_free = q->node[n].next;
    return n;
}

/* Append a fresh event to open instant id, taking node n (reserved). */
static void append(eq *q, uint32_t id, uint32_t n, uint32_t kind, uint32_t a, uint32_t b)
{
    q->node[n] = (eq_node){.seq = q->next_seq++, .kind = kind, .a = a, .b = b, .next = NONE};
    eq_inst *in = &q->inst[id];
    if (in->tail == NONE) in->head = n;
    else q->node[in->tail].next = n;
    in->tail = n;
    q->len++;
}

/* The push that needs a new node slot or a new instant. Kept out of line
 * so that eq_push's common path saves no registers for it. */
__attribute__((noinline)) static int push_slow(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
                     ss_err *err)
{
    int rc = node_reserve(q, err);
    if (rc) return rc;
    uint32_t id = q->slot[slot_of(q, t, cls)];
    if (id == NONE || q->inst[id].t != t || q->inst[id].cls != cls) {
        if ((rc = inst_reserve(q, err)) != 0) return rc;
        id = inst_open(q, t, cls, slot_of(q, t, cls)); /* the table may have grown */
    }
    append(q, id, node_take(q), kind, a, b);
    return SS_OK;
}

/* The common case stays small: a free node and a table hit on an open
 * instant, whose tail is then an event (open instants are never empty). */
int eq_push(eq *q, uint64_t t, uint8_t cls, uint32_t kind, uint32_t a, uint32_t b,
            ss_err *err)
{
    uint32_t id = q->slot[slot_of(q, t, cls)], n = q->node_free;
    if (id == NONE || n == NONE || q->inst[id].t != t || q->inst[id].cls != cls)
        return push_slow(q, t, cls, kind, a, b, err);
    eq_node *nd = &q->node[n];
    q->node_free = nd->next;
    *nd = (eq_node){.seq = q->next_seq++, .kind = kind, .a = a, .b = b, .next = NONE};
    eq_inst *in = &q->inst[id];
    q->node[in->tail].next = n;
    in->tail = n;
    q->len++;
    return SS_OK;
}

int eq_pop(eq *q, eq_ev *out)
{
    if (q->nheap == 0) return 0;
    uint32_t id = q->heap[0].inst;
    eq_inst *in = &q->inst[id];
    uint32_t n = in->head;
    eq_node *nd = &q->node[n];
    *out = (eq_ev){.t = in->t, .cls = in->cls, .seq = nd->seq, .kind = nd->kind, .a = nd->a,
                   .b = nd->b};
    in->head = nd->next;
    nd->next = q->node_free;
    q->node_free = n;
    q->len--;
    if (in->head == NONE) inst_close_least(q, id);
    return 1;
}

int eq_peek_t(const eq *q, uint64_t *t)
{
    if (q->nheap == 0) return 0;
    *t = q->heap[0].t;
    return 1;
}

size_t eq_len(const eq *q) { return q->len; }

size_t eq_peak_len(const eq *q) { return q->node_used; }

size_t eq_bytes(const eq *q)
{
    return (size_t)q->node_cap * sizeof *q->node +
           (size_t)q->inst_cap * (sizeof *q->inst + sizeof *q->heap) +
           ((size_t)q->slot_mask + 1) * sizeof *q->slot;
}

/* ---- consistency ---- */

/* The FIFO of an open instant: non-empty, seqs rising and none below seq0
 * (earlier ones may have popped), tail last. Adds its length to *count. */
static int fifo_ok(const eq *q, const eq_inst *in, size_t *count)
{
    if (in->head == NONE || in->tail == NONE || q->node[in->head].seq < in->seq0) return 0;
    uint32_t n = in->head, last = NONE;
    for (size_t k = 0; n != NONE; k++) {
        if (k > q->len || (last != NONE && q->node[n].seq <= q->node[last].seq)) return 0;
        last = n;
        n = q->node[n].next;
        (*count)++;
    }
    return last == in->tail;
}

static int same_key(const eq_inst *x, const eq_hent *y) { return x->t == y->t && x->cls == y->cls; }

static int slots_ok(const eq *q)
{
    for (uint32_t s = 0; s <= q->slot_mask; s++) {
        uint32_t id = q->slot[s];
        if (id == NONE) continue;
        if (id >= q->inst_used || q->inst[id].tail == NONE) return 0;
        if (slot_of(q, q->inst[id].t, q->inst[id].cls) != s) return 0;
    }
    for (uint32_t i = 0; i < q->nheap; i++) {
        const eq_hent *y = &q->heap[i];
        uint32_t id = q->slot[slot_of(q, y->t, y->cls)];
        if (id != NONE && same_key(&q->inst[id], y) && q->inst[id].seq0 < y->seq0) return 0;
    }
    return 1;
}

int eq_check(const eq *q)
{
    size_t count = 0;
    for (uint32_t i = 0; i < q->nheap; i++) {
        const eq_hent *h = &q->heap[i];
        if (i > 0 && key_less(h, &q->heap[(i - 1) / ARITY])) return 0;
        const eq_inst *in = &q->inst[h->inst];
        if (!same_key(in, h) || in->seq0 != h->seq0 || !fifo_ok(q, in, &count)) return 0;
    }
    return count == q->len && slots_ok(q);
}
