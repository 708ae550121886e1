/* expect.h - scenario expectations checked against a summary.
 *
 * An expectation names a key of the JSON summary by its path
 * ("step_time_s", "memory.per_rank[0].peak_allocated_bytes",
 * "collectives.all_gather.forward.count") and bounds it: max, min, eq
 * (number, boolean or string) and within_pct of a value. Checking reads the
 * summary's tree (summary.h, sum_tree), the one the JSON summary prints, so
 * every summary key can be checked and the checked value is exactly what
 * users' tools read: each checked value is printed and read back by the
 * printer the summary uses (which may drop a number's last digits, and
 * writes a non-finite one as null), without printing the whole summary.
 *
 * A key the summary does not have is an input error naming the scenario
 * file and $.expect entry. Ownership: exp_check fills a caller array of
 * nexpects results (no allocation beyond a temporary parse).
 */
#ifndef EXP_EXPECT_H
#define EXP_EXPECT_H

#include <stdbool.h>

#include "../core/err.h"
#include "../plan/spec.h"

typedef struct exp_result {
    const spec_expect *e;
    bool ok;
    char want[96];   /* "max 75.00 GiB", "1.500 s +-10%" (in the key's unit) */
    char actual[96]; /* the value found, and by how much it misses: "102.20 GiB (+27.20 GiB)" */
} exp_result;

struct cJSON;
/* The value at a summary path ("a.b[2].c") in a parsed summary, or NULL. */
const struct cJSON *exp_lookup(const struct cJSON *root, const char *path);

/* res must have room for s->nexpects entries. *nfailed = violated ones. */
int exp_check(const spec_scenario *s, const struct cJSON *summary, exp_result *res,
              uint32_t *nfailed, ss_err *err);

#endif
