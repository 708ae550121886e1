/* Caching-allocator model against sequences worked by hand with the
 * constants of c10/cuda/CUDACachingAllocator.cpp: 512-byte rounding, small
 * pool <= 1 MiB in 2 MiB segments, large requests under 10 MiB in 20 MiB
 * segments, larger ones rounded to 2 MiB; split when the rest is >= 512 B
 * (small) or > 1 MiB (large). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/mem/cache.h"

#define MiB (1024ull * 1024ull)

static mem_cache *mk(bool expandable, ss_bytes cap)
{
    mem_cache_cfg cfg = {expandable, cap};
    mem_cache *c;
    assert_int_equal(mem_cache_new(&c, &cfg, NULL), SS_OK);
    return c;
}

static uint32_t get(mem_cache *c, ss_bytes bytes, uint32_t stream, bool want_oom)
{
    uint32_t b;
    bool oom;
    assert_int_equal(mem_cache_alloc(c, bytes, stream, &b, &oom, NULL), SS_OK);
    assert_int_equal(oom, want_oom);
    return b;
}

/* 1 byte -> a 512-byte block in a new 2 MiB small segment; 600 bytes ->
 * 1024 from the same segment's remainder. */
static void test_small_pool(void **state)
{
    (void)state;
    mem_cache *c = mk(false, 0);
    uint32_t a = get(c, 1, 0, false);
    assert_int_equal(mem_cache_block_size(c, a), 512);
    get(c, 600, 0, false);
    mem_cache_stats s = mem_cache_get_stats(c);
    assert_int_equal(s.allocated, 1536);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.segments_mapped, 1);
    mem_cache_free(c);
}

/* 3 MiB -> a 20 MiB segment, split (17 MiB rest > 1 MiB). 16.5 MiB then
 * takes the 17 MiB rest whole (0.5 MiB rest is not split): allocated
 * 3 + 17 = 20 MiB. A 11 MiB + 1 byte request rounds to a 12 MiB segment
 * and its 1 MiB - 512 rest is not split either: allocated + 12 MiB. */
static void test_large_pool_split(void **state)
{
    (void)state;
    mem_cache *c = mk(false, 0);
    get(c, 3 * MiB, 0, false);
    uint32_t b = get(c, 16 * MiB + MiB / 2, 0, false);
    assert_int_equal(mem_cache_block_size(c, b), 17 * MiB);
    mem_cache_stats s = mem_cache_get_stats(c);
    assert_int_equal(s.allocated, 20 * MiB);
    assert_int_equal(s.reserved, 20 * MiB);
    uint32_t d = get(c, 11 * MiB + 1, 0, false);
    assert_int_equal(mem_cache_block_size(c, d), 12 * MiB);
    assert_int_equal(mem_cache_get_stats(c).reserved, 32 * MiB);
    mem_cache_free(c);
}

/* A freed block is reused by its own stream only: stream 1 maps a new
 * segment for the same size. Freed neighbours merge: two 4 MiB halves of
 * one 20 MiB segment, freed, serve a 19 MiB request without a new map. */
static void test_streams_and_merge(void **state)
{
    (void)state;
    mem_cache *c = mk(false, 0);
    uint32_t a = get(c, 4 * MiB, 0, false);
    mem_cache_release(c, a);
    get(c, 4 * MiB, 1, false);
    assert_int_equal(mem_cache_get_stats(c).reserved, 40 * MiB);
    mem_cache_free(c);

    c = mk(false, 0);
    uint32_t x = get(c, 4 * MiB, 0, false), y = get(c, 4 * MiB, 0, false);
    mem_cache_release(c, x);
    mem_cache_release(c, y);
    assert_int_equal(mem_cache_get_stats(c).allocated, 0);
    uint32_t z = get(c, 19 * MiB, 0, false);
    assert_int_equal(mem_cache_block_size(c, z), 20 * MiB); /* 1 MiB rest: unsplit */
    assert_int_equal(mem_cache_get_stats(c).segments_mapped, 1);
    mem_cache_free(c);
}

/* Best fit: free blocks of 12 and 14 MiB (separate segments); an 11 MiB
 * request takes the 12 MiB one. */
static void test_best_fit(void **state)
{
    (void)state;
    mem_cache *c = mk(false, 0);
    uint32_t big = get(c, 14 * MiB, 0, false), small = get(c, 12 * MiB, 0, false);
    mem_cache_release(c, big);
    mem_cache_release(c, small);
    uint32_t d = get(c, 11 * MiB, 0, false);
    assert_int_equal(mem_cache_block_size(c, d), 12 * MiB);
    mem_cache_free(c);
}

/* Capacity 40 MiB: a free 16 MiB segment is released (empty_cache) to map
 * 30 MiB on another stream; then 12 MiB more cannot fit: an OOM, still
 * served, and counted. */
static void test_capacity(void **state)
{
    (void)state;
    mem_cache *c = mk(false, 40 * MiB);
    uint32_t a = get(c, 15 * MiB, 0, false);
    mem_cache_release(c, a);
    get(c, 30 * MiB, 1, false);
    assert_int_equal(mem_cache_get_stats(c).reserved, 30 * MiB);
    get(c, 12 * MiB, 1, true);
    mem_cache_stats s = mem_cache_get_stats(c);
    assert_int_equal(s.ooms, 1);
    assert_int_equal(s.peak_reserved, 42 * MiB);
    mem_cache_reset_peaks(c);
    assert_int_equal(mem_cache_get_stats(c).ooms, 0);
    mem_cache_free(c);
}

/* Expandable segments: 3 MiB maps 4 MiB of pages (rest 1 MiB: unsplit);
 * 3 MiB more appends 4 MiB; freeing the first and asking 4 MiB reuses it:
 * reserved stays 8 MiB, against 40 MiB with 20 MiB segments. */
static void test_expandable(void **state)
{
    (void)state;
    mem_cache *c = mk(true, 0);
    uint32_t a = get(c, 3 * MiB, 0, false);
    get(c, 3 * MiB, 0, false);
    assert_int_equal(mem_cache_get_stats(c).reserved, 8 * MiB);
    mem_cache_release(c, a);
    get(c, 4 * MiB, 0, false);
    assert_int_equal(mem_cache_get_stats(c).reserved, 8 * MiB);
    assert_int_equal(mem_cache_get_stats(c).segments_mapped, 1);
    mem_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_pool),      cmocka_unit_test(test_large_pool_split),
        cmocka_unit_test(test_streams_and_merge), cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_capacity),        cmocka_unit_test(test_expandable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
