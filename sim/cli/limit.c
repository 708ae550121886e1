/* Command-line sizes and the memory budget. limit.h states the contract. */
#include "limit.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#if defined(__SANITIZE_ADDRESS__)
#define SS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SS_ASAN 1
#endif
#endif

int cli_parse_size(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || v[0] == '-' || errno) return 0;
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (*end && (!u || end[1])) return 0;
    uint64_t mul = u ? 1ull << (10 * (u - units + 1)) : 1;
    if (n > UINT64_MAX / mul) return 0;
    *out = (uint64_t)n * mul;
    return 1;
}

int cli_limit_memory(uint64_t bytes, ss_err *err)
{
#ifdef SS_ASAN
    (void)bytes;
    return ss_fail(err, SS_E_INPUT, "--max-memory",
                   "not available in a sanitizer build (its shadow memory needs terabytes of "
                   "address space)");
#else
    struct rlimit r = {(rlim_t)bytes, (rlim_t)bytes};
    if (setrlimit(RLIMIT_AS, &r) != 0)
        return ss_fail(err, SS_E_IO, "--max-memory", "cannot set the limit: %s", strerror(errno));
    return SS_OK;
#endif
}
