/* kern.h - the harness's own kernels (kern.cu), callable from C.
 *
 *   kern_empty       an empty kernel: what a launch costs, nothing else
 *   kern_spin        one block per SM, each busy until `ns` nanoseconds of
 *                    the GPU's global timer have passed: a stand-in for a
 *                    kernel whose shape is unknown but whose duration is
 *                    predicted (replay), or a filler that keeps a stream
 *                    busy while launches queue behind it (launch benchmark)
 *   kern_fill        pseudo-random values in [-1, 1) of a GEMM dtype, so
 *                    timed GEMMs run on data like a model's (zeros draw less
 *                    power and run faster)
 *   kern_pattern     float p[i] = base + step * (i / block), the values a
 *                    collective's result is checked against
 *   kern_count_wrong adds to *wrong (device memory) the elements of p that
 *                    differ from that pattern
 * Each returns the launch status (cudaGetLastError); errors of the kernel
 * itself surface at the next synchronization. All run on `s`.
 */
#ifndef HX_KERN_H
#define HX_KERN_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KERN_F32, KERN_F16, KERN_BF16, KERN_F8E4M3 } kern_dtype;

cudaError_t kern_empty(cudaStream_t s);
cudaError_t kern_spin(uint64_t ns, int blocks, cudaStream_t s);
cudaError_t kern_fill(void *p, size_t n, kern_dtype t, uint32_t seed, cudaStream_t s);
cudaError_t kern_pattern(float *p, size_t n, float base, float step, size_t block, cudaStream_t s);
cudaError_t kern_count_wrong(const float *p, size_t n, float base, float step, size_t block,
                             unsigned long long *wrong, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
