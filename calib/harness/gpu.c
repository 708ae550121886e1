#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fail(ss_err *err, const char *call, const char *ctx, const char *what, int code)
{
    return ss_fail(err, HX_E_DEVICE, call, "%s (error %d)%s%s", what, code, ctx ? " at " : "",
                   ctx ? ctx : "");
}

int gpu_cu(ss_err *err, cudaError_t rc, const char *call, const char *ctx)
{
    if (rc == cudaSuccess) return SS_OK;
    return fail(err, call, ctx, cudaGetErrorString(rc), (int)rc);
}

static const char *blas_str(cublasStatus_t rc)
{
    switch (rc) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "cuBLAS could not allocate";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value (a shape, type or leading dimension)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported on this GPU architecture";
    case CUBLAS_STATUS_MAPPING_ERROR: return "cuBLAS mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU kernel failed to run";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "cuBLAS internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported (type, shape or layout)";
    default: return "cuBLAS error";
    }
}

int gpu_blas(ss_err *err, cublasStatus_t rc, const char *call, const char *ctx)
{
    if (rc == CUBLAS_STATUS_SUCCESS) return SS_OK;
    return fail(err, call, ctx, blas_str(rc), (int)rc);
}

int gpu_nccl(ss_err *err, ncclResult_t rc, const char *call, const char *ctx)
{
    if (rc == ncclSuccess) return SS_OK;
    return fail(err, call, ctx, ncclGetErrorString(rc), (int)rc);
}

int gpu_count(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

/* The kernel module's version line, when the driver exposes it. */
static void kernel_driver(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p) {
            p += strlen("Kernel Module");
            while (*p == ' ') p++;
            size_t n = strcspn(p, " \t\n");
            snprintf(out, len, "%.*s", (int)(n < 40 ? n : 40), p);
        }
    }
    fclose(f);
}

/* Version strings; a query that fails leaves its part at 0 or "unknown"
 * rather than failing the run: they only label the measurements. */
static void versions(gpu_info *g)
{
    int drv = 0, rt = 0, nv = 0, ma = 0, mi = 0, pa = 0;
    char km[48];
    if (cudaDriverGetVersion(&drv) != cudaSuccess) drv = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = 0;
    kernel_driver(km, sizeof km);
    snprintf(g->driver, sizeof g->driver, "%s%sCUDA %d.%d%s", km, km[0] ? " (" : "", drv / 1000,
             drv % 1000 / 10, km[0] ? ")" : "");
    if (cublasGetProperty(MAJOR_VERSION, &ma) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(MINOR_VERSION, &mi) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(PATCH_LEVEL, &pa) != CUBLAS_STATUS_SUCCESS)
        ma = mi = pa = 0;
    snprintf(g->cuda, sizeof g->cuda, "%d.%d, cuBLAS %d.%d.%d", rt / 1000, rt % 1000 / 10, ma, mi, pa);
    if (ncclGetVersion(&nv) == ncclSuccess)
        snprintf(g->nccl, sizeof g->nccl, "%d.%d.%d", nv / 10000, nv / 100 % 100, nv % 100);
    else
        snprintf(g->nccl, sizeof g->nccl, "unknown");
}

static int no_device(ss_err *err, cudaError_t rc)
{
    if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver ||
        rc == cudaErrorSystemDriverMismatch)
        return ss_fail(err, HX_E_DEVICE, "cudaGetDeviceCount",
                       "no usable CUDA device: %s (error %d); the harness needs an NVIDIA GPU "
                       "and a driver at least as new as the CUDA runtime it was built with",
                       cudaGetErrorString(rc), (int)rc);
    return gpu_cu(err, rc, "cudaGetDeviceCount", NULL);
}

int gpu_open(int device, gpu_info *out, ss_err *err)
{
    int n = 0;
    cudaError_t crc = cudaGetDeviceCount(&n);
    if (crc != cudaSuccess) return no_device(err, crc);
    if (n == 0) return no_device(err, cudaErrorNoDevice);
    if (device < 0 || device >= n)
        return ss_fail(err, SS_E_INPUT, "-d", "device %d does not exist: %d visible (0..%d)", device,
                       n, n - 1);
    struct cudaDeviceProp p;
    int rc = gpu_cu(err, cudaSetDevice(device), "cudaSetDevice", NULL);
    if (!rc) rc = gpu_cu(err, cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties", NULL);
    if (rc) return rc;
    gpu_info g = {.device = device, .cc_major = p.major, .cc_minor = p.minor,
                  .sms = p.multiProcessorCount, .l2_bytes = (size_t)p.l2CacheSize,
                  .mem_bytes = p.totalGlobalMem};
    snprintf(g.name, sizeof g.name, "%s", p.name);
    snprintf(g.bus, sizeof g.bus, "%04x:%02x:%02x", (unsigned)p.pciDomainID, (unsigned)p.pciBusID,
             (unsigned)p.pciDeviceID);
    versions(&g);
    *out = g;
    return SS_OK;
}

uint64_t gpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gpu_host_spin(uint64_t ns)
{
    uint64_t t0 = gpu_now_ns();
    while (gpu_now_ns() - t0 < ns) {
    }
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double gpu_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, dcmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t gpu_rotations(const gpu_info *g, size_t bytes, size_t budget, size_t max_copies)
{
    if (bytes == 0) return 1;
    size_t want = (2 * g->l2_bytes + bytes - 1) / bytes;
    if (want > max_copies) want = max_copies;
    if (want * bytes > budget) want = budget / bytes;
    return want ? want : 1;
}

int gpu_elapsed_ms(cudaEvent_t a, cudaEvent_t b, float *ms, ss_err *err)
{
    return gpu_cu(err, cudaEventElapsedTime(ms, a, b), "cudaEventElapsedTime", NULL);
}
