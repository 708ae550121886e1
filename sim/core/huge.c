/* madvise and MADV_HUGEPAGE are Linux, outside POSIX */
#define _DEFAULT_SOURCE
#include "huge.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

/* Set once by ss_huge_init, before any thread starts; read-only after. */
static bool advise;

void ss_huge_init(void)
{
    const char *v = getenv("SHARDSIM_HUGE_PAGES");
    advise = v && strcmp(v, "1") == 0;
#if defined(M_MMAP_THRESHOLD) && defined(__GLIBC__)
    (void)mallopt(M_MMAP_THRESHOLD, (int)(advise ? SS_HUGE_MIN : SS_MMAP_MIN));
#endif
}

void ss_prefer_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!advise || !p || bytes < SS_HUGE_MIN) return;
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}
