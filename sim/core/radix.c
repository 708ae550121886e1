/* A stable LSD radix sort. radix.h states the contract. */
#include "radix.h"

#include <stdlib.h>
#include <string.h>

/* The keys are read once into (key, index) pairs, the pairs sorted a byte
 * a pass, and the records moved once, by the sorted indices. */
typedef struct kv {
    uint64_t key;
    size_t i;
} kv;

int ss_radix_sort(void *base, size_t n, size_t size, uint64_t (*key)(const void *rec),
                  unsigned key_bytes, ss_err *err)
{
    if (n < 2) return SS_OK;
    kv *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    char *moved = malloc(n * size);
    if (!a || !b || !moved) {
        free(a), free(b), free(moved);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a sort of %zu records", n);
    }
    char *rec = base;
    for (size_t i = 0; i < n; i++) a[i] = (kv){key(rec + i * size), i};
    for (unsigned d = 0; d < key_bytes && d < 8; d++) {
        size_t cnt[256] = {0};
        unsigned sh = 8 * d;
        for (size_t i = 0; i < n; i++) cnt[a[i].key >> sh & 0xff]++;
        if (cnt[a[0].key >> sh & 0xff] == n) continue; /* one digit for all */
        size_t at = 0;
        for (unsigned v = 0; v < 256; v++) {
            size_t c = cnt[v];
            cnt[v] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++) b[cnt[a[i].key >> sh & 0xff]++] = a[i];
        kv *t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; i++) memcpy(moved + i * size, rec + a[i].i * size, size);
    memcpy(base, moved, n * size);
    free(a), free(b), free(moved);
    return SS_OK;
}
