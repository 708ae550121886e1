/* bcoll.h - NCCL collectives over a size sweep, printed as nccl-tests does.
 *
 * The world is either one process driving every local GPU it is given
 * (ncclCommInitAll; nccl-tests' -g N) or, when started by mpirun and built
 * with MPI (SS_HX_MPI), one GPU per process (local rank modulo the visible
 * devices) with the NCCL unique id broadcast by MPI (ncclCommInitRank;
 * nccl-tests under mpirun with -g 1). A world of one rank is valid: its
 * collectives move no data between GPUs, so they give NCCL's launch and
 * latency floor, and the output says so.
 *
 * Ops: all_reduce (sum), all_gather, reduce_scatter (sum), broadcast (root
 * 0), alltoall (grouped ncclSend/ncclRecv to every peer) and sendrecv (to
 * the next rank, from the previous one), on float data. Sizes min, min *
 * factor, ... max, with nccl-tests' "size" and "count" per op. Timing is
 * nccl-tests': `warmup` untimed calls, then `iters` calls launched back to
 * back and one synchronize, host clock, time per call; under MPI the mean
 * over processes. Out-of-place, then in-place. With check, each size is then
 * run once more on known data and the wrong elements counted (in-place
 * alltoall and sendrecv are not checked: "N/A", as nccl-tests).
 *
 * Output: on the root process, per op, a block in nccl-tests' format
 * ("# Collective test starting: all_reduce_perf", the "# nThread" header,
 * the "#  Rank" lines, the column headers, one row per size, "# Avg bus
 * bandwidth") that calib's nccl-tests reader (sim/io/ncclt.h) parses, and
 * one measurement-file entry per size (out-of-place time). Errors: a CUDA or
 * NCCL failure (HX_E_DEVICE); wrong results (HX_E_DEVICE, after the block is
 * printed); under MPI a failure on any rank stops every rank at the same
 * size instead of leaving the others waiting.
 */
#ifndef HX_BCOLL_H
#define HX_BCOLL_H

#include <stdio.h>

#include "gpu.h"
#include "meas.h"
#include "nctx.h"

#define BCOLL_MAX_GPUS 64

typedef struct bcoll_opts {
    uint64_t min_bytes, max_bytes;
    uint64_t factor;   /* > 1 */
    unsigned warmup, iters;
    bool check;
    unsigned ops;      /* bit NCTX_* (nctx.h) set: run that op */
    int ngpus;         /* single process: GPUs to use, 0 = all */
    uint64_t deadline_ns; /* 0: none */
} bcoll_opts;

typedef struct bcoll_world {
    bool mpi;              /* one rank per process */
    bool root;             /* prints and writes */
    int nlocal;            /* GPUs of this process */
    int devs[BCOLL_MAX_GPUS];
    int rank0;             /* global rank of devs[0] */
    int nranks;            /* ranks in all */
    int nprocs;
    int nodes;             /* distinct host names */
    ncclComm_t comms[BCOLL_MAX_GPUS];
    cudaStream_t streams[BCOLL_MAX_GPUS];
    char host[256];
} bcoll_world;

/* True when this process was started by an MPI launcher (OpenMPI, PMI). */
bool bcoll_mpi_launched(void);

/* Start the world (MPI_Init under mpirun). Errors: no GPU, NCCL or CUDA
 * failures, started by mpirun but built without MPI (SS_E_INPUT). On error
 * the world is already finished. */
int bcoll_world_init(bcoll_world *w, int ngpus, ss_err *err);
/* Destroy communicators and streams; MPI_Finalize under MPI. */
void bcoll_world_fini(bcoll_world *w, ss_err *err);

/* Parse "all_reduce,all_gather,..." (nccl-tests names; "all" for every op). */
int bcoll_parse_ops(const char *text, unsigned *mask, ss_err *err);

int bcoll_run(bcoll_world *w, const bcoll_opts *o, meas *m, FILE *out, ss_err *err);

#endif
