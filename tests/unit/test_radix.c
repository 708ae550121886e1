/* ss_radix_sort (core/radix.h) against a comparison sort on (key, input
 * position): ascending and stable, for keys of 1 to 8 bytes, with many
 * equal keys (stability visible), all keys equal (every byte skipped), and
 * the sizes where nothing moves (0, 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/core/radix.h"

typedef struct rec {
    uint64_t key;
    uint32_t pos; /* input position: equal keys must keep its order */
    char pad[3];  /* a size that is no power of two */
} rec;

static uint64_t rec_key(const void *r) { return ((const rec *)r)->key; }

static int by_key_pos(const void *x, const void *y)
{
    const rec *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static uint64_t xs(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void test_sorted_and_stable(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 7, 300, 5000};
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (unsigned bytes = 1; bytes <= 8; bytes++)
        for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++)
            for (int same = 0; same < 2; same++) {
                size_t n = sizes[c];
                rec *a = calloc(n ? n : 1, sizeof *a), *b = calloc(n ? n : 1, sizeof *b);
                assert_non_null(a);
                assert_non_null(b);
                uint64_t mask = bytes == 8 ? UINT64_MAX : (1ull << (8 * bytes)) - 1;
                for (size_t i = 0; i < n; i++) /* few distinct values: many ties */
                    a[i] = (rec){same ? 42 & mask : (xs(&s) % 17) * (mask / 17), (uint32_t)i, {0}};
                memcpy(b, a, n * sizeof *a);
                assert_int_equal(ss_radix_sort(a, n, sizeof *a, rec_key, bytes, NULL), SS_OK);
                if (n) qsort(b, n, sizeof *b, by_key_pos);
                assert_memory_equal(a, b, n * sizeof *a);
                free(a);
                free(b);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sorted_and_stable)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
