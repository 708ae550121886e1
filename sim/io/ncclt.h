/* ncclt.h - read the text that nccl-tests prints (all_reduce_perf and kin).
 *
 * Input: one file holding one or more test outputs, possibly concatenated
 * ("# ===== file: NAME =====" lines between them) and mixed with prose
 * (markdown, the mpirun command line, NCCL INFO lines), its lines possibly
 * marked by the launcher (Open MPI's "[1,0]<stdout>:" tags, anywhere in a
 * line, and Slurm's "0: " rank labels, which are removed first). Output: one table
 * per run of data rows
 *   size count type redop [root] time algbw busbw #wrong [time algbw busbw #wrong]
 * (out-of-place, then in-place; the root column and the in-place group are
 * optional because nccl-tests versions differ; #wrong may be "N/A", or in
 * the versions of 2019-2021 an "error" column of the largest error as a
 * float ("5e-07"), which counts as N/A; 2.17+'s
 * -T adds a "YYYY-MM-DD HH:MM:SS" timestamp after the in-place group, and
 * 2.19+'s per-iteration timing four figures after each #wrong, not read).
 *
 * What each table learns from the lines between it and the previous table
 * (a '#' line ends a table; prose and blank lines do not):
 *   op      "# Collective test starting: <op>_perf"; else the one "<op>_perf"
 *           named in the text (a command line, a title); else the caller's
 *           op hint; else an error at the table's first line ("test
 *           concluded:" lines name the previous test and do not count);
 *   label   the last "===== file:" name (it holds until the next one), else
 *           the op name; labels that repeat in one file become "label#1",
 *           "label#2", ... in file order;
 *   ranks   the count of "#  Rank N ... on HOST ..." lines; nodes: the
 *           distinct hosts those lines name (0 when there are no such lines).
 * A change of type, redop or root between rows starts a new table (-d all,
 * -o all); sizes that shrink inside one table are an error.
 *
 * Errors (SS_E_INPUT, SS_E_IO, SS_E_NOMEM) have `where` = "file:line" and say
 * which column or line was expected. Ownership: *out is the caller's, freed
 * with ncclt_free (NULL is fine); on error *out is untouched. Reads the whole
 * file (at most NCCLT_MAX_FILE_BYTES). Knows nothing about fitting.
 */
#ifndef NCCLT_H
#define NCCLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/err.h"

#define NCCLT_MAX_FILE_BYTES (64u * 1024u * 1024u)

/* The collectives nccl-tests measures, by the name of their test program
 * without "_perf". */
#define NCCLT_OPS(X)                                                           \
    X(ALL_REDUCE, "all_reduce")                                                \
    X(ALL_GATHER, "all_gather")                                                \
    X(REDUCE_SCATTER, "reduce_scatter")                                        \
    X(BROADCAST, "broadcast")                                                  \
    X(REDUCE, "reduce")                                                        \
    X(ALLTOALL, "alltoall")                                                    \
    X(SENDRECV, "sendrecv")                                                    \
    X(GATHER, "gather")                                                        \
    X(SCATTER, "scatter")                                                      \
    X(HYPERCUBE, "hypercube")                                                  \
    X(ALLTOALLV, "alltoallv")

#define NCCLT_ENUM_(id, name) NCCLT_##id,
typedef enum { NCCLT_OPS(NCCLT_ENUM_) NCCLT_NOPS } ncclt_op;
#undef NCCLT_ENUM_

extern const char *const ncclt_op_names[NCCLT_NOPS];
/* Name to op; false when name is not one of ncclt_op_names. */
bool ncclt_op_from_name(const char *name, ncclt_op *out);

/* One group of columns: out-of-place or in-place. */
typedef struct ncclt_side {
    double time_us, algbw_GBps, busbw_GBps;
    int64_t wrong; /* #wrong; -1 when the file says N/A or prints an error */
} ncclt_side;

typedef struct ncclt_row {
    uint64_t bytes, count;
    ncclt_side out, in; /* `in` is zeros when the table has no in-place group */
    uint32_t line;      /* 1-based line of the row in the file */
} ncclt_row;

typedef struct ncclt_info {
    ncclt_op op;
    const char *label;     /* owned by the log */
    char dtype[16];        /* the type column: "float", "bfloat16", ... */
    char redop[16];        /* "sum", "none" (all_gather), ... */
    int64_t root;          /* -1 when the test has no root or no root column */
    bool in_place;         /* the rows have the in-place group */
    uint32_t nranks;       /* 0 when unknown (no rank lines, or an excerpt of them) */
    uint32_t nnodes;       /* distinct hosts of the rank lines; 0 when unknown */
    uint32_t min_ranks;    /* the highest rank number seen + 1 (0: none): a floor where
                              the rank lines are an excerpt ("Rank 71" alone) */
    uint32_t nthreads;     /* "# nThread T nGpus G" header; 0 when absent */
    uint32_t ngpus;
    uint32_t nccl_version; /* "nccl-library=22602", else NCCL's own banner
                              ("NCCL version 2.26.2+cuda12.8"); 0 when absent */
    char device[128];      /* the first rank line's device name, or "" */
    uint32_t line;         /* line of the first row */
    uint32_t nrows;
} ncclt_info;

typedef struct ncclt_log ncclt_log; /* opaque */

/* Read `file`. op_hint (an op name, or NULL) names the collective of tables
 * the file does not name itself; an unknown hint is an error. */
int ncclt_load(const char *file, const char *op_hint, ncclt_log **out, ss_err *err);
/* The same from len bytes of text; `file` is the name used in messages. */
int ncclt_parse(const char *file, const char *text, size_t len, const char *op_hint,
                ncclt_log **out, ss_err *err);
void ncclt_free(ncclt_log *log);

size_t ncclt_ntables(const ncclt_log *log);
/* Table i's description, or NULL when i >= ncclt_ntables. */
const ncclt_info *ncclt_table(const ncclt_log *log, size_t i);
/* Row j of table i, or NULL when out of range. Rows are in file order. */
const ncclt_row *ncclt_row_at(const ncclt_log *log, size_t i, size_t j);

#endif
