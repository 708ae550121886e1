/* huge.h - ask the kernel to back a large array with huge pages.
 *
 * A step of 16,384 ranks touches gigabytes of freshly allocated arrays
 * (trace records, per-op engine state, grown vectors) exactly once each,
 * and on a virtual machine every 4 KiB page fault costs microseconds:
 * the synthetic engine run of shardsim-bench spent more time in page
 * faults than in events. ss_prefer_huge marks the 2 MiB-aligned interior
 * of [p, p + bytes) for transparent huge pages (madvise MADV_HUGEPAGE)
 * before it is touched, so one fault maps 2 MiB.
 *
 * Advice only: it changes no byte of the memory or of any output, never
 * fails, and does nothing below SS_HUGE_MIN bytes, where the kernel has no
 * such advice, or where transparent huge pages are off ("never"). Call it
 * on memory the caller owns (from malloc, calloc, realloc), right after
 * the allocation.
 *
 * ss_huge_init, once at the start of a program (the CLI's and the bench's
 * main), has the C library map every block of SS_HUGE_MIN bytes or more
 * on its own (glibc's M_MMAP_THRESHOLD, fixed instead of adaptive), so
 * that such a block is fresh, untouched memory the advice can reach, and
 * growing it moves pages (mremap) instead of copying them into pages the
 * advice came too late for. Without it the advice still works, less
 * often. */
#ifndef SS_HUGE_H
#define SS_HUGE_H

#include <stddef.h>

#define SS_HUGE_MIN ((size_t)4 << 20)

void ss_huge_init(void);
void ss_prefer_huge(void *p, size_t bytes);

#endif
