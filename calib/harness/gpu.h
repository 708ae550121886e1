/* gpu.h - the harness's view of one GPU: opening it, describing it, turning
 * CUDA, cuBLAS and NCCL status codes into ss_err values, timing.
 *
 * Every CUDA, cuBLAS or NCCL call of the harness goes through gpu_cu,
 * gpu_blas or gpu_nccl: SS_OK when the call succeeded; otherwise HX_E_DEVICE
 * with `where` naming the call and the message its library's error string
 * plus the caller's context ("op 17 fsdp.all_gather.u3"). The first error
 * wins (ss_fail), so cleanup code may keep calling these without hiding the
 * cause.
 *
 * Times: gpu_now_ns is CLOCK_MONOTONIC; device intervals come from CUDA
 * events (cudaEventElapsedTime, 0.5 us resolution). gpu_median sorts its
 * input. Rotating buffers: gpu_rotations says how many copies of a working
 * set make the sweep over them at least twice the L2 cache, so a timed loop
 * reads HBM, not L2.
 *
 * No state of its own: the device is whatever cudaSetDevice made current.
 */
#ifndef HX_GPU_H
#define HX_GPU_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../sim/core/err.h"

/* A CUDA, cuBLAS or NCCL call failed, or the device lacks something. */
#define HX_E_DEVICE (-100)

typedef struct gpu_info {
    int device;
    char name[256];
    char bus[32];      /* "0000:19:00", as nccl-tests prints it */
    int cc_major, cc_minor;
    int sms;
    size_t l2_bytes;
    size_t mem_bytes;
    char driver[96];   /* "580.159.03 (CUDA 13.0)" or "CUDA 13.0" */
    char cuda[96];     /* runtime and cuBLAS: "13.0, cuBLAS 13.1.0" */
    char nccl[32];     /* "2.28.9" */
} gpu_info;

/* Status of one call; ctx may be NULL. */
int gpu_cu(ss_err *err, cudaError_t rc, const char *call, const char *ctx);
int gpu_blas(ss_err *err, cublasStatus_t rc, const char *call, const char *ctx);
int gpu_nccl(ss_err *err, ncclResult_t rc, const char *call, const char *ctx);

/* Make `device` current and describe it. Errors: no CUDA device (a message
 * that says whether the driver or the device is missing), a device index
 * out of range. */
int gpu_open(int device, gpu_info *out, ss_err *err);

/* Number of visible devices (0 when there is no driver). */
int gpu_count(void);

uint64_t gpu_now_ns(void);
/* Busy-wait on the host for ns nanoseconds. */
void gpu_host_spin(uint64_t ns);
/* Median of n > 0 values (sorts v). */
double gpu_median(double *v, size_t n);
/* Copies of a `bytes` working set to rotate through: ceil(2 L2 / bytes),
 * at least 1, at most max_copies, and at most what `budget` bytes hold. */
size_t gpu_rotations(const gpu_info *g, size_t bytes, size_t budget, size_t max_copies);

/* Milliseconds between two recorded, completed events. */
int gpu_elapsed_ms(cudaEvent_t a, cudaEvent_t b, float *ms, ss_err *err);

#endif
