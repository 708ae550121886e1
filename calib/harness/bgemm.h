/* bgemm.h - GEMM throughput: cuBLAS over a list of shapes and dtypes.
 *
 * Per (dtype, shape): C (m x n) = A (m x k) B (k x n) on pseudo-random data,
 * through cublasGemmEx (bf16 and fp16 with fp32 accumulation, fp32 strict,
 * fp32 with TF32 tensor cores) or cublasLtMatmul (fp8 e4m3 inputs, bf16
 * output, "TN" layout as fp8 requires; compute capability 8.9 and up, else
 * skipped with a note). Timing: warm-up calls (at least 3 and 10 ms), then
 * `repeats` CUDA-event-timed batches of as many calls as fill target_ms;
 * the median batch's time per call is reported. Consecutive calls rotate
 * through copies of A, B and C that together exceed twice the L2 cache, so
 * small GEMMs read HBM as a training step does.
 *
 * Results go to the measurement file (tf32 only to the text output: the
 * simulator has no tf32 dtype, its fp32 is PyTorch's strict default) and as
 * "# gemm ..." lines to `out`. A shape that does not fit in device memory,
 * or that cuBLAS cannot run in a dtype, is skipped with a line saying so;
 * any other CUDA or cuBLAS failure ends the run with HX_E_DEVICE.
 */
#ifndef HX_BGEMM_H
#define HX_BGEMM_H

#include <stdio.h>

#include "gpu.h"
#include "meas.h"

typedef struct bgemm_shape {
    uint64_t m, n, k;
} bgemm_shape;

enum { BGEMM_BF16 = 1, BGEMM_FP16 = 2, BGEMM_FP32 = 4, BGEMM_TF32 = 8, BGEMM_FP8 = 16,
       BGEMM_ALL = 31 };

typedef struct bgemm_opts {
    const bgemm_shape *shapes;
    size_t nshapes;
    unsigned dtypes;      /* BGEMM_* mask */
    unsigned repeats;     /* timed batches (median reported) */
    double target_ms;     /* length of one batch */
    uint64_t deadline_ns; /* gpu_now_ns() past which the rest is skipped; 0: none */
} bgemm_opts;

/* Squares 256..16384 and the projections of a Llama-3-8B-sized layer. */
extern const bgemm_shape bgemm_default_shapes[];
extern const size_t bgemm_ndefault;

int bgemm_run(const gpu_info *g, const bgemm_opts *o, meas *m, FILE *out, ss_err *err);

/* "MxNxK,MxNxK,...": caller frees *out. Errors: SS_E_INPUT naming the item. */
int bgemm_parse_shapes(const char *text, bgemm_shape **out, size_t *n, ss_err *err);
/* "bf16,fp16,fp32,tf32,fp8" or "all". */
int bgemm_parse_dtypes(const char *text, unsigned *mask, ss_err *err);

#endif
