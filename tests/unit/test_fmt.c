/* ss_vfmt (core/fmt.h) against the C library's vsnprintf: the same bytes
 * for the formats it writes itself (every conversion it knows, at the
 * extremes of each type, literal text around them) and for those it
 * hands on (flags, widths, precisions, other conversions), at every
 * buffer size from 0 to past the result, so truncation and the
 * terminator are checked too. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/core/fmt.h"

/* Both formatters into buffers of n bytes (n <= 64) prefilled with '#',
 * compared whole: what ss_vfmt leaves past the terminator counts too. */
static void same(size_t n, const char *fmt, ...)
{
    char a[72], b[72];
    memset(a, '#', sizeof a);
    memset(b, '#', sizeof b);
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    ss_vfmt(a, n, fmt, ap);
    vsnprintf(b, n, fmt, aq);
    va_end(aq);
    va_end(ap);
    if (memcmp(a, b, sizeof a))
        fail_msg("format \"%s\" into %zu bytes: \"%.*s\" against vsnprintf's \"%.*s\"", fmt, n,
                 (int)(n ? n : 1), a, (int)(n ? n : 1), b);
}

static void test_own_conversions(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 64; n++) {
        same(n, "plain text, no conversion");
        same(n, "fwd.%s", "layers.31.attn");
        same(n, "%s", "");
        same(n, "bwd.%s.chunk%u.mb%u", "layers.7.mlp", 0u, 4294967295u);
        same(n, "%d|%d|%d|%d", 0, -1, INT_MAX, INT_MIN);
        same(n, "%lu and %llu and %zu", ULONG_MAX, ULLONG_MAX, (size_t)SIZE_MAX);
        same(n, "100%% of %u%%", 7u);
        same(n, "ds.all_gather.params.%llu", 123456789012345ull);
        same(n, "fsdp.u%u[%s].grad_shard", 12u, "layers.0");
    }
}

static void test_handed_on(void **state)
{
    (void)state;
    for (size_t n = 0; n <= 64; n++) {
        same(n, "%5u|%-4s|%03d", 42u, "ab", 7);
        same(n, "%.3f ms", 1.23456);
        same(n, "%x %c %s", 255u, 'q', "tail");
        same(n, "%.4s", "truncated");
        same(n, "50%"); /* a lone '%' at the end */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_conversions),
        cmocka_unit_test(test_handed_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
