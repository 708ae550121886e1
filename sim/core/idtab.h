/* idtab.h - an open-addressing index over items kept elsewhere, by id.
 *
 * The caller owns the items and numbers them 0, 1, ... in insertion order
 * (so ids never depend on the hash); the table maps a key to its item's id.
 * A slot holds 1 + id, 0 when empty; the size is a power of two, kept at
 * most half full, probed linearly. hash and eq see the items through ctx.
 *
 *   ss_idtab_reserve  before adding item `count`: grows (doubling from
 *                     `first`, re-placing ids 0 .. count) when one more would
 *                     pass half full; false when out of memory;
 *   ss_idtab_find     the slot of the item equal to key, or the empty slot
 *                     where key goes (slot[k] == 0): store 1 + its new id.
 *
 * Header-only, like vec.h: the calls inline with their callbacks.
 */
#ifndef SS_IDTAB_H
#define SS_IDTAB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct ss_idtab {
    uint32_t *slot, n;
} ss_idtab;

static inline bool ss_idtab_reserve(ss_idtab *t, uint32_t count, uint32_t first,
                                    uint32_t (*hash)(const void *ctx, uint32_t id), const void *ctx)
{
    if (((uint64_t)count + 1) * 2 <= t->n) return true;
    uint32_t n = t->n ? t->n * 2 : first;
    uint32_t *s = n > t->n ? calloc(n, sizeof *s) : NULL;
    if (!s) return false;
    for (uint32_t id = 0; id < count; id++) {
        uint32_t k = hash(ctx, id) & (n - 1);
        while (s[k]) k = (k + 1) & (n - 1);
        s[k] = id + 1;
    }
    free(t->slot);
    t->slot = s;
    t->n = n;
    return true;
}

static inline uint32_t ss_idtab_find(const ss_idtab *t, uint32_t h,
                                     bool (*eq)(const void *ctx, uint32_t id, const void *key),
                                     const void *ctx, const void *key)
{
    uint32_t k = h & (t->n - 1);
    while (t->slot[k] && !eq(ctx, t->slot[k] - 1, key)) k = (k + 1) & (t->n - 1);
    return k;
}

static inline void ss_idtab_fini(ss_idtab *t)
{
    free(t->slot);
    t->slot = NULL;
    t->n = 0;
}

#endif
