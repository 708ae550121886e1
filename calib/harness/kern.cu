// kern.cu - the harness's kernels; contract in kern.h.
#include "kern.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

// Grid-stride launches: enough blocks to fill any current GPU, bounded so
// the grid size never overflows.
const int kThreads = 256;

int blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return b == 0 ? 1 : b > 4096 ? 4096 : (int)b;
}

__global__ void empty_kernel() {}

__device__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin_kernel(unsigned long long ns)
{
    unsigned long long t0 = global_ns();
    while (global_ns() - t0 < ns) {
    }
}

// A hash of the index (splitmix-style), mapped to [-1, 1).
__device__ float hash_unit(size_t i, uint32_t seed)
{
    unsigned long long x = (unsigned long long)i + 0x9e3779b97f4a7c15ull * (seed + 1u);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (float)(x >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

template <typename T> __device__ T from_float(float v);
template <> __device__ float from_float<float>(float v) { return v; }
template <> __device__ __half from_float<__half>(float v) { return __float2half(v); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <typename T> __global__ void fill_kernel(T *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_float<T>(hash_unit(i, seed));
}

template <typename T> cudaError_t fill(void *p, size_t n, uint32_t seed, cudaStream_t s)
{
    fill_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T *>(p), n, seed);
    return cudaGetLastError();
}

__global__ void pattern_kernel(float *p, size_t n, float base, float step, size_t block)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = base + step * (float)(i / block);
}

__global__ void count_kernel(const float *p, size_t n, float base, float step, size_t block,
                             unsigned long long *wrong)
{
    unsigned long long bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        bad += p[i] != base + step * (float)(i / block);
    if (bad) atomicAdd(wrong, bad);
}

} // namespace

extern "C" cudaError_t kern_empty(cudaStream_t s)
{
    empty_kernel<<<1, 1, 0, s>>>();
    return cudaGetLastError();
}

extern "C" cudaError_t kern_spin(uint64_t ns, int blocks, cudaStream_t s)
{
    spin_kernel<<<blocks > 0 ? blocks : 1, 32, 0, s>>>((unsigned long long)ns);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_fill(void *p, size_t n, kern_dtype t, uint32_t seed, cudaStream_t s)
{
    switch (t) {
    case KERN_F32: return fill<float>(p, n, seed, s);
    case KERN_F16: return fill<__half>(p, n, seed, s);
    case KERN_BF16: return fill<__nv_bfloat16>(p, n, seed, s);
    case KERN_F8E4M3: return fill<__nv_fp8_e4m3>(p, n, seed, s);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t kern_pattern(float *p, size_t n, float base, float step, size_t block,
                                    cudaStream_t s)
{
    if (block == 0) return cudaErrorInvalidValue;
    pattern_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, base, step, block);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_count_wrong(const float *p, size_t n, float base, float step,
                                        size_t block, unsigned long long *wrong, cudaStream_t s)
{
    if (block == 0) return cudaErrorInvalidValue;
    count_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, base, step, block, wrong);
    return cudaGetLastError();
}
