/* rplan.h - replay planning: one rank of a simulated program as steps a GPU
 * can execute, and the measured times turned back into the project's
 * summary and trace formats.
 *
 * Sits between the simulator and the CUDA executor (rexec.h): program
 * (plan/prog.h) -> rplan -> rexec (GPU) -> rplan_meas -> rplan_report ->
 * summary JSON (what `shardsim run --json` writes, what `shardsim diff`
 * compares) + Chrome trace (what `shardsim run --trace` writes). Pure C: no
 * CUDA here, so it builds and is tested everywhere.
 *
 * One step per op, step i = op i, in program (host issue) order:
 *   GEMM    a COMPUTE op the plan knows the GEMMs of (forward / backward of
 *           a linear block: forward m x k x n, backward the input gradient
 *           and the weight gradient), in the compute dtype;
 *   SPIN    any other COMPUTE op with device time: a kernel that lasts the
 *           predicted dev_ns (flag RPLAN_F_PREDICTED: not an independent
 *           measurement);
 *   MARKER  a COMPUTE op of zero device time (an event / deferred free);
 *   COPY    a COPY-stream op whose bytes and direction are known;
 *   COLL    a collective, with its payload (prog.h convention) and group;
 *   HOST    a host op: the host waits for its deps, then is busy host_ns.
 * Deps are wired as CUDA does it: a dep on a device op of another stream is
 * a wait (cudaStreamWaitEvent on the dep's end event); a dep on the same
 * stream or on a HOST op is implied by stream or host order and dropped
 * (counted in `implied`); a HOST op's deps on device ops are syncs
 * (cudaEventSynchronize). Memory: a tensor is allocated on the stream of
 * the op that allocates it (the compute stream for host ops and the start
 * state), freed at issue on that stream, or at the end of the freeing op on
 * the op's stream.
 *
 * Ownership: rplan_new allocates; rplan_free releases (NULL is a no-op).
 * The plan and program must outlive the rplan. O(ops + deps + mems), plus
 * O(ops log blocks) to find each op's block by name.
 */
#ifndef RPLAN_H
#define RPLAN_H

#include <stdbool.h>

#include "../../sim/mem/replay.h"
#include "../../sim/plan/plan.h"
#include "../../sim/plan/prog.h"

#define RPLAN_KINDS(X)                                                         \
    X(GEMM, "gemm")                                                            \
    X(SPIN, "spin")                                                            \
    X(MARKER, "marker")                                                        \
    X(COPY, "copy")                                                            \
    X(COLL, "coll")                                                            \
    X(HOST, "host")

#define RPLAN_ENUM_(id, name) RPLAN_##id,
typedef enum { RPLAN_KINDS(RPLAN_ENUM_) RPLAN_NKINDS } rplan_kind;
#undef RPLAN_ENUM_

const char *rplan_kind_name(rplan_kind k);

/* Why a step does not measure the op independently (bit flags). */
enum {
    RPLAN_F_PREDICTED = 1, /* SPIN: lasts the predicted time (no GEMM shape known) */
    RPLAN_F_ONE_RANK = 2,  /* COLL of a group of more than one rank, run on one GPU */
    RPLAN_F_HOST_WAIT = 4, /* HOST: busy for the predicted host time */
    RPLAN_F_DTYPE = 8      /* GEMM in bf16 for an fp8 compute dtype */
};

typedef enum { RPLAN_H2D, RPLAN_D2H, RPLAN_D2D } rplan_copy_dir;

/* Column-major C (m x n) = A (m x k) B (k x n); each fits a cuBLAS int. */
typedef struct rplan_gemm {
    uint32_t m, n, k;
} rplan_gemm;

/* Index ranges [x0, x0 + nx) point into rplan.idx. */
typedef struct rplan_step {
    uint8_t kind;     /* rplan_kind */
    uint8_t stream;   /* prog_stream; PROG_HOST for HOST */
    uint8_t coll;     /* prog_coll, COLL only */
    uint8_t copy_dir; /* rplan_copy_dir, COPY only */
    uint8_t dtype;    /* spec_dtype of the GEMM operands or the collective's data */
    uint8_t flags;    /* RPLAN_F_* */
    uint32_t gemm0, ngemm;  /* rplan.gemms[gemm0 ..) */
    uint64_t bytes;         /* COLL payload, COPY size */
    uint32_t group_size;    /* COLL: ranks of the program's group */
    ss_ns ns;               /* SPIN device time, HOST host time, else the predicted dev_ns */
    uint32_t wait0, nwait;  /* device steps: earlier steps this stream waits on */
    uint32_t sync0, nsync;  /* HOST: earlier device steps the host waits for */
    uint32_t alloc0, nalloc; /* tensors allocated when the host issues it */
    uint32_t freei0, nfreei; /* tensors freed right after it is issued */
    uint32_t freee0, nfreee; /* tensors freed when it ends */
} rplan_step;

typedef struct rplan_tensor {
    ss_bytes bytes;
    uint8_t stream; /* prog_stream it is allocated (and freed at issue) on */
    bool live_at_start;
} rplan_tensor;

typedef struct rplan {
    const plan *pl;
    const prog *p;
    uint32_t rank;
    rplan_step *steps; /* one per op */
    uint32_t nsteps;
    rplan_gemm *gemms;
    uint32_t ngemms;
    uint32_t *idx; /* step ids (waits, syncs) and tensor ids (memory) */
    uint32_t nidx;
    rplan_tensor *tensors; /* the rank's tensors, by tensor id */
    uint32_t ntensors;
    uint32_t count[RPLAN_NKINDS];
    uint32_t flagged;   /* steps with any RPLAN_F_* flag */
    uint32_t waits;     /* cudaStreamWaitEvent calls per step */
    uint32_t syncs;     /* cudaEventSynchronize calls per step */
    uint32_t implied;   /* deps dropped: implied by stream or host order */
    unsigned streams;   /* bit s set: some device step runs on prog_stream s */
    /* sizes of the scratch buffers the executor needs */
    uint64_t max_coll_bytes, max_copy_bytes;
    uint64_t max_a, max_b, max_c; /* GEMM operand elements */
} rplan;

/* Plan rank `rank` of program p (built from plan pl). Errors: a rank out of
 * range (SS_E_INPUT), a dep that is not an earlier op or a tensor id out of
 * range (SS_E_INTERNAL), out of memory. On error *out is untouched. */
int rplan_new(rplan **out, const plan *pl, const prog *p, uint32_t rank, ss_err *err);
void rplan_free(rplan *rp);

/* The distinct GEMM shapes of the plan, sorted by (m, n, k). Caller frees
 * *out with free(); *n may be 0 (then *out is NULL). */
int rplan_unique_gemms(const rplan *rp, rplan_gemm **out, uint32_t *n, ss_err *err);

/* What the executor measured, for one step of the rank (the median of the
 * timed iterations). Times are ns from the start of the step, host and
 * device on one time base (docs/HARNESS.md says how they are aligned). */
typedef struct rplan_meas {
    const ss_ns *issue, *start, *end; /* per step */
    const mem_point *series;          /* pool bytes after each allocation / free */
    size_t nseries;
    ss_bytes start_used;        /* pool bytes in use when the step starts */
    ss_bytes peak_used;         /* pool high watermark of used bytes in the step */
    ss_bytes peak_reserved;     /* pool high watermark of reserved bytes */
    ss_bytes end_used;          /* in use when the step ended (steady) */
    uint32_t peak_step;         /* step whose allocation was highest; UINT32_MAX: start */
    ss_ns peak_t;
    const char *device;         /* "NVIDIA H200" */
    uint32_t iters;             /* timed iterations; the median one is reported */
    const double *step_ms;      /* iters entries: every timed step */
    ss_bytes scratch_bytes;     /* harness buffers outside the pool (not in the peaks) */
    bool host_wait;             /* HOST steps were busy for their predicted time */
} rplan_meas;

/* The measured summary (JSON text in the format of `shardsim run --json`,
 * with measured step time, busy and exposed times, pool peaks and steady
 * bytes; model-only figures are left out; a "measured" object says what was
 * measured how) and the Chrome trace of the measured step. s is the
 * scenario the plan was built from. An op that seems to start before its
 * issue or end before its start (host and device clocks agree to a few
 * microseconds) is moved to that time and counted in measured.clamped_ops.
 * Both strings are the caller's to free with free(). Errors: out of memory;
 * SS_E_INTERNAL from the summary's memory replay, which would mean the
 * measured order contradicts the program. */
int rplan_report(const rplan *rp, const spec_scenario *s, const rplan_meas *m, char **summary,
                 char **trace, ss_err *err);

#endif
