/* vec.h - growing arrays of values, the one allocation pattern the modules
 * share: ss_grow makes room for `need` items of `size` bytes in *buf,
 * doubling the capacity (from 16), and leaves *buf and *cap alone when the
 * allocation fails (returns false) or the capacity would pass 2^32 - 1.
 * A block of SS_HUGE_MIN bytes or more is offered huge pages (huge.h):
 * the doubling leaves its new half untouched. */
#ifndef SS_VEC_H
#define SS_VEC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "huge.h"

static inline bool ss_grow(void **buf, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint64_t n = *cap ? (uint64_t)*cap * 2 : 16;
    while (n < need) n *= 2;
    if (n > UINT32_MAX) n = UINT32_MAX;
    void *p = realloc(*buf, (size_t)n * size);
    if (!p) return false;
    ss_prefer_huge(p, (size_t)n * size);
    *buf = p;
    *cap = (uint32_t)n;
    return true;
}

#endif
