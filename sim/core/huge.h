/* huge.h - let the kernel back a large array with huge pages, on request.
 *
 * A step of 16,384 ranks touches gigabytes of freshly allocated arrays
 * (trace records, per-op engine state, grown vectors) exactly once each.
 * Where a 4 KiB page fault is expensive (some virtual machines: the
 * synthetic engine run of shardsim-bench spent more time in faults than
 * in events) marking them for transparent huge pages (madvise
 * MADV_HUGEPAGE) before they are touched halves the run; where faults are
 * cheap and the host backs each new 2 MiB page lazily, the zeroing of
 * huge pages costs more than the faults it saves (DECISIONS 121). So the
 * advice is off unless the environment says SHARDSIM_HUGE_PAGES=1.
 *
 * ss_prefer_huge marks the 2 MiB-aligned interior of [p, p + bytes).
 * Advice only: it changes no byte of the memory or of any output, never
 * fails, and does nothing below SS_HUGE_MIN bytes, when not asked for,
 * where the kernel has no such advice, or where transparent huge pages
 * are off ("never"). Call it on memory the caller owns (from malloc,
 * calloc, realloc), right after the allocation.
 *
 * ss_huge_init, once at the start of a program (the CLI's and the bench's
 * main, before any thread), reads the environment and has the C library
 * map every block of SS_HUGE_MIN bytes or more on its own when the advice
 * is on (glibc's M_MMAP_THRESHOLD, fixed instead of adaptive), so that such
 * a block is fresh, untouched memory the advice can reach; with the advice
 * off, blocks of SS_MMAP_MIN or more: growing them still moves pages
 * (mremap) instead of copying, and the many short-lived arrays of a few
 * MiB (a rank's memory events, replayed one rank after another) come back
 * from the heap already faulted in instead of as fresh pages each time (a
 * 4 MiB threshold made the 405B layout's summary 2-5x slower on a machine
 * whose faults are dear; DECISIONS 199). Without ss_huge_init no advice is
 * given. */
#ifndef SS_HUGE_H
#define SS_HUGE_H

#include <stddef.h>

#define SS_HUGE_MIN ((size_t)4 << 20)
#define SS_MMAP_MIN ((size_t)32 << 20)

void ss_huge_init(void);
void ss_prefer_huge(void *p, size_t bytes);

#endif
