/* rexec.h - the replay executor: a planned rank (rplan.h) run on one GPU.
 *
 * One CUDA stream per program stream; the host walks the steps in program
 * order, as the rank's host thread issues them:
 *   allocations  cudaMallocFromPoolAsync on the tensor's stream, from a pool
 *                of the executor's own (release threshold: never), so the
 *                pool's used / reserved counters are the program's tensors
 *                and nothing else;
 *   device step  cudaStreamWaitEvent on each wait's end event, a start
 *                event, the work (cublasGemmEx GEMMs on rotating scratch
 *                operands, a spin kernel, cudaMemcpyAsync, or an NCCL call on
 *                a one-rank communicator), an end event;
 *   host step    cudaEventSynchronize on each sync, then a host busy wait of
 *                its predicted time (or nothing without host_wait);
 *   frees        at the end of the step (cudaFreeAsync on its stream), or
 *                right after issue (on the tensor's own stream).
 * The step runs once to warm up (cuBLAS heuristics, NCCL, the pool), then
 * `iters` times; each iteration starts from the start state (tensors marked
 * live_at_start allocated again) and frees what is left at its end. The
 * iteration with the median step time is reported.
 *
 * Time base: a start event recorded on the compute stream of an idle device
 * and synchronized; device times are event intervals from it, host times
 * are the host clock from the moment that synchronize returned, so host
 * times can lag device times by the synchronize's wake-up (microseconds).
 *
 * Errors: HX_E_DEVICE naming the call and the step ("op 17
 * fsdp.all_gather.u3"), including a tensor the device has no memory for;
 * SS_E_INTERNAL for a program that frees a tensor that is not live. The
 * device is left as it was found (everything created here is destroyed).
 */
#ifndef HX_REXEC_H
#define HX_REXEC_H

#include "gpu.h"
#include "rplan.h"

typedef struct rexec_opts {
    unsigned iters; /* timed iterations, after one warm-up */
    bool host_wait; /* HOST steps busy for their predicted time */
    bool tf32;      /* fp32 GEMMs on TF32 tensor cores (torch allow_tf32) */
} rexec_opts;

typedef struct rexec_out {
    ss_ns *issue, *start, *end; /* per step, the reported iteration */
    mem_point *series;          /* pool bytes after each step's allocations and frees */
    size_t nseries;
    ss_bytes start_used, peak_used, peak_reserved, end_used;
    uint32_t peak_step; /* UINT32_MAX: the start state */
    ss_ns peak_t;
    double *step_ms; /* per timed iteration */
    unsigned iters;
    ss_bytes scratch_bytes;
} rexec_out;

/* Run rp on the current device g (gpu_open). *out is filled on success;
 * release it with rexec_out_fini (also fine on a zeroed one). */
int rexec_run(const rplan *rp, const gpu_info *g, const rexec_opts *o, rexec_out *out, ss_err *err);
void rexec_out_fini(rexec_out *o);

/* The measurement rplan_report takes, pointing into o. */
rplan_meas rexec_meas(const rexec_out *o, const gpu_info *g, bool host_wait);

#endif
