/* ss.h - the few types and helpers every shardsim module shares.
 *
 * Time is an integer count of nanoseconds (ss_ns), bytes and element counts
 * are uint64_t. Arithmetic on sizes that come from user input goes through the
 * checked helpers below: they return SS_E_OVERFLOW instead of wrapping.
 *
 * Status codes are negative (libuv style); SS_OK is 0. A function that fails
 * fills the caller's ss_err (err.h) and leaves its outputs untouched.
 * Knows nothing about any other module.
 */
#ifndef SS_H
#define SS_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ss_ns;    /* simulated time, nanoseconds */
typedef uint64_t ss_bytes; /* byte counts */

#define SS_NS_MAX UINT64_MAX

enum {
    SS_OK = 0,
    SS_E_INPUT = -1,    /* bad user input: file, JSON path and reason in ss_err */
    SS_E_IO = -2,       /* a file could not be read or written */
    SS_E_NOMEM = -3,    /* allocation failed */
    SS_E_OVERFLOW = -4, /* a size or time does not fit in 64 bits */
    SS_E_INTERNAL = -5, /* an invariant broke: a bug in shardsim */
    SS_E_DEADLOCK = -6  /* the program cannot make progress (bad dependencies) */
};

#define SS_MIB (1024ull * 1024ull)
#define SS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Checked arithmetic: store the result in *out and return SS_OK, or return
 * SS_E_OVERFLOW and leave *out alone. */
static inline int ss_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return SS_E_OVERFLOW;
    *out = r;
    return SS_OK;
}

static inline int ss_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return SS_E_OVERFLOW;
    *out = r;
    return SS_OK;
}

/* ceil(a / b) for b > 0, without the overflow of (a + b - 1) / b. */
static inline uint64_t ss_div_ceil(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Seconds (double) to integer nanoseconds, rounded to nearest; negative or
 * non-finite inputs give 0, too large gives SS_NS_MAX. Costs are computed in
 * double and enter the engine only through this function, so the rounding
 * rule lives in one place. */
ss_ns ss_ns_from_s(double seconds);

#endif
