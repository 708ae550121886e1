/* radix.h - a stable sort of fixed-size records by an unsigned key.
 *
 * Least significant byte first over the key's low `key_bytes` bytes, a
 * byte skipped when every record shares it: O(n x key_bytes), where a
 * comparison sort through qsort's callback was much of a large layout's
 * setup and summary. Stable, so records with equal keys keep their order
 * (callers put their tie-break in the input order). Knows nothing of what
 * the records are.
 */
#ifndef SS_RADIX_H
#define SS_RADIX_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Sort base[0..n) (records of `size` bytes) by key(record) ascending.
 * SS_E_NOMEM, with base unchanged, when the scratch copy cannot be had. */
int ss_radix_sort(void *base, size_t n, size_t size, uint64_t (*key)(const void *rec),
                  unsigned key_bytes, ss_err *err);

#endif
