/* nctx.h - nccl-tests' text format, as the harness's `coll` prints it.
 *
 * One block per collective, line for line what an nccl-tests binary prints
 * (nccl-tests' src/common.cu, the format with a root column and "#wrong"):
 *   # Collective test starting: all_reduce_perf
 *   # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) ...
 *   #
 *   # Using devices
 *   #  Rank  0 Group  0 Pid   1234 on     host device  0 [0000:19:00] NAME
 *   #
 *   #  (three header lines: out-of-place / in-place; the columns; units)
 *          size  count  type  redop  root  time algbw busbw #wrong  time ...
 *   # Out of bounds values : 0 OK
 *   # Avg bus bandwidth    : 123.4
 *   #
 *   # Collective test concluded: all_reduce_perf
 * so sim/io/ncclt.h, the project's reader of nccl-tests logs, reads it.
 * Counts follow nccl-tests per op (float elements): "size" is the larger of
 * the send and receive buffers, "count" the per-call count argument;
 * algbw = size / time, busbw = algbw x the op's bus factor. Pure text: no
 * CUDA here. A #wrong below 0 prints "N/A" (not checked).
 */
#ifndef HX_NCTX_H
#define HX_NCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { NCTX_AR, NCTX_AG, NCTX_RS, NCTX_BC, NCTX_A2A, NCTX_SR, NCTX_NOPS };

/* nccl-tests' name of op (its program is NAME_perf), NULL out of range. */
const char *nctx_op_name(int op);
/* op by name; -1 when unknown. */
int nctx_op_find(const char *name, size_t len);
double nctx_bus_factor(int op, int nranks);
int nctx_root(int op);

typedef struct nctx_counts {
    size_t send, recv, param; /* elements */
    size_t bytes;             /* the printed size */
} nctx_counts;

nctx_counts nctx_counts_of(int op, size_t size, int nranks);

typedef struct nctx_run {
    int op;
    int ngpus;  /* GPUs of one process */
    int nranks;
    uint64_t min_bytes, max_bytes, factor;
    unsigned warmup, iters;
    bool check;
    const char *rank_lines; /* the "#  Rank" lines, each ending in '\n' */
} nctx_run;

void nctx_head(FILE *f, const nctx_run *r);
/* One row: out-of-place then in-place times (us) and #wrong (-1: N/A).
 * Returns the sum of the two bus bandwidths (for the average). */
double nctx_row(FILE *f, int op, const nctx_counts *c, const double us[2], const long long wrong[2],
                int nranks);
void nctx_tail(FILE *f, int op, long long wrong, double avg_busbw);
/* "#  Rank ..." into buf; the count of characters it needed. */
int nctx_rank_line(char *buf, size_t len, int rank, int pid, const char *host, int device,
                   const char *bus, const char *name);

#endif
