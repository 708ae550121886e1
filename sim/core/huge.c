/* madvise and MADV_HUGEPAGE are Linux, outside POSIX */
#define _DEFAULT_SOURCE
#include "huge.h"

#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void ss_huge_init(void)
{
#if defined(M_MMAP_THRESHOLD) && defined(__GLIBC__)
    (void)mallopt(M_MMAP_THRESHOLD, (int)SS_HUGE_MIN);
#endif
}

void ss_prefer_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!p || bytes < SS_HUGE_MIN) return;
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}
