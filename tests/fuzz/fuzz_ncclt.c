/* libFuzzer target: the nccl-tests log reader (io/ncclt.h). Bad input must
 * give SS_E_INPUT with a message; a log that parses is walked through every
 * table and row so out-of-bounds labels or rows show. Inputs of odd length
 * are read with the op hint "all_reduce", the others without, so both the
 * hint and the "no op named" paths are reached. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../sim/io/ncclt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ncclt_log *log = NULL;
    ss_err err;
    ss_err_clear(&err);
    const char *hint = (size & 1) ? "all_reduce" : NULL;
    int rc = ncclt_parse("fuzz.txt", (const char *)data, size, hint, &log, &err);
    if (rc != SS_OK) {
        if (rc != SS_E_INPUT || !err.msg[0]) __builtin_trap();
        return 0;
    }
    size_t sum = 0;
    for (size_t i = 0; i < ncclt_ntables(log); i++) {
        const ncclt_info *t = ncclt_table(log, i);
        if (!t || !t->label || t->op >= NCCLT_NOPS || !t->nrows) __builtin_trap();
        sum += strlen(t->label) + strlen(t->device) + strlen(t->dtype) + strlen(t->redop);
        for (uint32_t j = 0; j < t->nrows; j++) {
            const ncclt_row *r = ncclt_row_at(log, i, j);
            if (!r || (j && r->bytes < ncclt_row_at(log, i, j - 1)->bytes)) __builtin_trap();
        }
        if (ncclt_row_at(log, i, t->nrows)) __builtin_trap();
    }
    if (ncclt_table(log, ncclt_ntables(log))) __builtin_trap();
    ncclt_free(log);
    return sum == SIZE_MAX; /* keeps the walk from being optimized away */
}
