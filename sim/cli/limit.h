/* limit.h - sizes on the command line, and the --max-memory budget.
 *
 * cli_parse_size reads "64", "8K", "300M", "8G", "1T" (powers of 1024, as
 * nccl-tests writes them); 0 on anything else, or past 2^64.
 *
 * cli_limit_memory caps the process's address space (RLIMIT_AS) at bytes,
 * so that a run too large for the machine fails with "out of memory" at the
 * allocation that crossed the budget, which the command reports with the
 * budget, instead of climbing into swap. Every allocation of the simulator
 * is checked and unwinds as an error, so the cap ends a run cleanly. The
 * address space counts the program, its libraries and thread stacks too (a
 * few tens of MiB). In a sanitizer build the cap cannot be set (the
 * sanitizer's shadow memory is terabytes of address space): SS_E_INPUT
 * saying so. SS_E_IO when the system refuses the limit.
 */
#ifndef CLI_LIMIT_H
#define CLI_LIMIT_H

#include <stdint.h>

#include "../core/err.h"

int cli_parse_size(const char *v, uint64_t *out);
int cli_limit_memory(uint64_t bytes, ss_err *err);

#endif
