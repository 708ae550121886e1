/* kineto.h - one rank's step as the JSON trace the PyTorch profiler
 * (Kineto) writes, for HolisticTraceAnalysis (HTA) and other tools that
 * read a directory of per-rank profiler traces.
 *
 * Before traceEvents, as HTA's metadata reader wants them: schemaVersion,
 * distributedInfo {backend "nccl", rank, world_size}, deviceProperties
 * [{id, name, totalGlobalMem}]. Then, as complete events ("X", ts and dur
 * in microseconds with nanosecond decimals, as PyTorch writes them):
 *   - on the CPU (pid KIN_CPU_PID + rank, tid 1, the host thread):
 *     "ProfilerStep#0" (cat user_annotation) over the step, and an empty
 *     "ProfilerStep#1" where the next step begins (HTA leaves out the last
 *     profiled step's kernels, as a profiler's schedule stops mid-step);
 *     host ops as cpu_op; each device op's launch (cuda_runtime,
 *     cudaLaunchKernel or cudaMemcpyAsync) over its issue time, with the
 *     correlation id of its kernel;
 *   - on the GPU (pid the rank's local device, tid its stream id): each
 *     device op that ran for some time as a kernel (cat "kernel") with
 *     args device, stream, correlation, External id; a collective is named
 *     "ncclDevKernel_<Collective>" (HTA counts names starting with "nccl"
 *     as communication) with its collective name, bytes and group size in
 *     args; an op of the copy stream is a "gpu_memcpy", "Memcpy HtoD
 *     (Pinned -> Device)" when it allocates its device copy, else "Memcpy
 *     DtoH (Device -> Pinned)". Stream ids are KIN_STREAM0 + stream + 7 x
 *     lane (tef.h): streams never run two kernels at once.
 * A kernel lasts exactly its op, so a rank's compute-stream kernels add up
 * to its compute busy time and the union of its NCCL kernels to its
 * communication time (summary.h, rank 0's time.compute_s and
 * time.communication_s).
 *
 * Written as it is produced (memory: one lane per op of the rank), in the
 * canonical form cJSON prints; deterministic. kin_write returns SS_E_IO
 * when writing to f fails (the caller names the file), SS_E_NOMEM when out
 * of memory. Reads only the report, the trace and its program.
 */
#ifndef KINETO_H
#define KINETO_H

#include <stdio.h>

#include "summary.h"

#define KIN_CPU_PID 100000u
#define KIN_STREAM0 7u /* the id PyTorch's traces show for the default stream */

/* Rank r (< t->nranks) of the step into f. */
int kin_write(const sum_report *r, const trc *t, uint32_t rank, FILE *f, ss_err *err);

/* The file a rank's trace goes to inside the output folder: rank_<N>.json. */
void kin_file_name(char *buf, size_t len, uint32_t rank);

#endif
