#include "rexec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"

#define WORKSPACE (32u << 20)
#define NONE UINT32_MAX

/* One iteration's record. */
typedef struct iter {
    ss_ns *t;         /* issue, start, end: 3 * nsteps */
    mem_point *series;
    size_t nseries, cap;
    ss_bytes start_used, peak_used, peak_reserved, end_used, seen_peak;
    uint32_t peak_step;
    ss_ns peak_t, step;
} iter;

typedef struct rx {
    const rplan *rp;
    const gpu_info *g;
    const rexec_opts *o;
    ss_err *err;
    cudaStream_t st[PROG_NSTREAMS];
    cublasHandle_t blas[PROG_NSTREAMS];
    void *ws[PROG_NSTREAMS];
    ncclComm_t comm;
    cudaMemPool_t pool;
    cudaEvent_t t0, *ev0, *ev1;
    cudaEvent_t *aev; /* per tensor freed on another stream: its allocation point */
    void **ptr;       /* per tensor; NULL when not live */
    char *ga, *gb, *gc, *cs, *cr, *cd;
    void *ch;
    size_t sa, sb, sc, copies, gemm_at, scratch;
    uint64_t h0;
    iter *it; /* the iteration being run */
    char ctx[256];
} rx;

static const char *step_ctx(rx *x, uint32_t i)
{
    if (i >= x->rp->nsteps) return "start state";
    const prog_op *op = &prog_ops(x->rp->p, x->rp->rank)[i];
    snprintf(x->ctx, sizeof x->ctx, "op %u %s", i, prog_str_get(x->rp->p, op->name));
    return x->ctx;
}

static ss_ns host_now(const rx *x) { return gpu_now_ns() - x->h0; }

/* Status checks for the issue path: the step's name is formatted only when
 * the call failed, so a successful call costs the host nothing extra. */
static int ck(rx *x, cudaError_t rc, const char *call, uint32_t step)
{
    return rc == cudaSuccess ? SS_OK : gpu_cu(x->err, rc, call, step_ctx(x, step));
}

static int ckb(rx *x, cublasStatus_t rc, const char *call, uint32_t step)
{
    return rc == CUBLAS_STATUS_SUCCESS ? SS_OK : gpu_blas(x->err, rc, call, step_ctx(x, step));
}

static int ckn(rx *x, ncclResult_t rc, const char *call, uint32_t step)
{
    return rc == ncclSuccess ? SS_OK : gpu_nccl(x->err, rc, call, step_ctx(x, step));
}

/* ---- setup ---- */

static int make_streams(rx *x)
{
    int rc = SS_OK;
    unsigned want = x->rp->streams | 1u << PROG_COMPUTE;
    for (int s = 0; s < PROG_NSTREAMS && !rc; s++)
        if (s != PROG_HOST && (want >> s & 1u))
            rc = gpu_cu(x->err, cudaStreamCreateWithFlags(&x->st[s], cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags", prog_stream_name((prog_stream)s));
    return rc;
}

static int make_blas(rx *x)
{
    bool need[PROG_NSTREAMS] = {false};
    for (uint32_t i = 0; i < x->rp->nsteps; i++)
        if (x->rp->steps[i].kind == RPLAN_GEMM) need[x->rp->steps[i].stream] = true;
    int rc = SS_OK;
    for (int s = 0; s < PROG_NSTREAMS && !rc; s++) {
        if (!need[s]) continue;
        rc = gpu_blas(x->err, cublasCreate(&x->blas[s]), "cublasCreate", NULL);
        if (!rc) rc = gpu_cu(x->err, cudaMalloc(&x->ws[s], WORKSPACE), "cudaMalloc", "cuBLAS workspace");
        if (!rc) rc = gpu_blas(x->err, cublasSetStream(x->blas[s], x->st[s]), "cublasSetStream", NULL);
        if (!rc)
            rc = gpu_blas(x->err, cublasSetWorkspace(x->blas[s], x->ws[s], WORKSPACE),
                          "cublasSetWorkspace", NULL);
        if (!rc)
            rc = gpu_blas(x->err, cublasSetMathMode(x->blas[s], CUBLAS_DEFAULT_MATH),
                          "cublasSetMathMode", NULL);
        x->scratch += WORKSPACE;
    }
    return rc;
}

static int make_pool(rx *x)
{
    struct cudaMemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = cudaMemAllocationTypePinned;
    pp.location.type = cudaMemLocationTypeDevice;
    pp.location.id = x->g->device;
    uint64_t keep = UINT64_MAX; /* never give memory back between steps */
    int rc = gpu_cu(x->err, cudaMemPoolCreate(&x->pool, &pp), "cudaMemPoolCreate", NULL);
    if (!rc)
        rc = gpu_cu(x->err, cudaMemPoolSetAttribute(x->pool, cudaMemPoolAttrReleaseThreshold, &keep),
                    "cudaMemPoolSetAttribute", "release threshold");
    return rc;
}

static int make_events(rx *x)
{
    uint32_t n = x->rp->nsteps;
    x->ev0 = calloc(n ? n : 1, sizeof *x->ev0);
    x->ev1 = calloc(n ? n : 1, sizeof *x->ev1);
    x->ptr = calloc(x->rp->ntensors ? x->rp->ntensors : 1, sizeof *x->ptr);
    x->aev = calloc(x->rp->ntensors ? x->rp->ntensors : 1, sizeof *x->aev);
    if (!x->ev0 || !x->ev1 || !x->ptr || !x->aev)
        return ss_fail(x->err, SS_E_NOMEM, NULL, "out of memory");
    int rc = gpu_cu(x->err, cudaEventCreate(&x->t0), "cudaEventCreate", NULL);
    for (uint32_t i = 0; i < n && !rc; i++) {
        const rplan_step *s = &x->rp->steps[i];
        if (s->kind == RPLAN_HOST) continue;
        rc = gpu_cu(x->err, cudaEventCreate(&x->ev0[i]), "cudaEventCreate", NULL);
        if (!rc) rc = gpu_cu(x->err, cudaEventCreate(&x->ev1[i]), "cudaEventCreate", NULL);
        for (uint32_t k = 0; k < s->nfreee && !rc; k++) {
            uint32_t t = x->rp->idx[s->freee0 + k];
            if (x->rp->tensors[t].stream != s->stream && !x->aev[t])
                rc = gpu_cu(x->err, cudaEventCreateWithFlags(&x->aev[t], cudaEventDisableTiming),
                            "cudaEventCreateWithFlags", NULL);
        }
    }
    return rc;
}

static kern_dtype fill_type(spec_dtype d)
{
    return d == SPEC_DT_FP16 ? KERN_F16 : d == SPEC_DT_BF16 ? KERN_BF16 : KERN_F32;
}

/* GEMM operands: the largest A, B and C of the plan, in copies that rotate
 * past the L2 cache, filled in the compute dtype. */
static int make_gemm_scratch(rx *x)
{
    const rplan *rp = x->rp;
    if (!rp->ngemms) return SS_OK;
    spec_dtype dt = SPEC_DT_FP32;
    for (uint32_t i = 0; i < rp->nsteps; i++)
        if (rp->steps[i].kind == RPLAN_GEMM) dt = (spec_dtype)rp->steps[i].dtype;
    size_t e = spec_dtype_size(dt), align = 256;
    x->sa = (rp->max_a * e + align - 1) / align * align;
    x->sb = (rp->max_b * e + align - 1) / align * align;
    x->sc = (rp->max_c * e + align - 1) / align * align;
    x->copies = gpu_rotations(x->g, x->sa + x->sb + x->sc, x->g->mem_bytes / 8, 1024);
    x->scratch += (x->sa + x->sb + x->sc) * x->copies;
    int rc = gpu_cu(x->err, cudaMalloc((void **)&x->ga, x->sa * x->copies), "cudaMalloc", "GEMM A");
    if (!rc) rc = gpu_cu(x->err, cudaMalloc((void **)&x->gb, x->sb * x->copies), "cudaMalloc", "GEMM B");
    if (!rc) rc = gpu_cu(x->err, cudaMalloc((void **)&x->gc, x->sc * x->copies), "cudaMalloc", "GEMM C");
    if (!rc)
        rc = gpu_cu(x->err, kern_fill(x->ga, x->sa * x->copies / e, fill_type(dt), 1, x->st[PROG_COMPUTE]),
                    "kern_fill", "GEMM A");
    if (!rc)
        rc = gpu_cu(x->err, kern_fill(x->gb, x->sb * x->copies / e, fill_type(dt), 2, x->st[PROG_COMPUTE]),
                    "kern_fill", "GEMM B");
    return rc;
}

static int make_io_scratch(rx *x)
{
    const rplan *rp = x->rp;
    size_t cb = rp->max_coll_bytes, pb = rp->max_copy_bytes;
    int rc = SS_OK;
    if (cb) {
        rc = gpu_cu(x->err, cudaMalloc((void **)&x->cs, cb), "cudaMalloc", "collective send buffer");
        if (!rc) rc = gpu_cu(x->err, cudaMalloc((void **)&x->cr, cb), "cudaMalloc", "collective recv buffer");
        if (!rc) rc = gpu_cu(x->err, cudaMemset(x->cs, 0, cb), "cudaMemset", "collective buffer");
        x->scratch += 2 * cb;
    }
    if (!rc && pb) { /* two halves: device-to-device copies go from one to the other */
        rc = gpu_cu(x->err, cudaMalloc((void **)&x->cd, 2 * pb), "cudaMalloc", "copy buffer");
        if (!rc) rc = gpu_cu(x->err, cudaMallocHost(&x->ch, pb), "cudaMallocHost", "copy buffer");
        x->scratch += 2 * pb;
    }
    if (!rc && rp->count[RPLAN_COLL]) {
        int dev = x->g->device;
        rc = gpu_nccl(x->err, ncclCommInitAll(&x->comm, 1, &dev), "ncclCommInitAll", "replay");
    }
    return rc;
}

static int setup(rx *x)
{
    int rc = make_streams(x);
    if (!rc) rc = make_blas(x);
    if (!rc) rc = make_pool(x);
    if (!rc) rc = make_events(x);
    if (!rc) rc = make_gemm_scratch(x);
    if (!rc) rc = make_io_scratch(x);
    if (!rc) rc = gpu_cu(x->err, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "replay setup");
    return rc;
}

/* Everything created above, in reverse; keeps going after a failure. */
static void teardown(rx *x)
{
    ss_err *e = x->err;
    gpu_cu(e, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "replay teardown");
    for (uint32_t t = 0; x->ptr && t < x->rp->ntensors; t++)
        if (x->ptr[t]) gpu_cu(e, cudaFreeAsync(x->ptr[t], x->st[PROG_COMPUTE]), "cudaFreeAsync", NULL);
    gpu_cu(e, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "replay teardown");
    if (x->comm) gpu_nccl(e, ncclCommDestroy(x->comm), "ncclCommDestroy", NULL);
    void *dev[] = {x->ga, x->gb, x->gc, x->cs, x->cr, x->cd};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) gpu_cu(e, cudaFree(dev[i]), "cudaFree", "replay scratch");
    if (x->ch) gpu_cu(e, cudaFreeHost(x->ch), "cudaFreeHost", "replay scratch");
    for (uint32_t i = 0; x->ev0 && i < x->rp->nsteps; i++) {
        if (x->ev0[i]) gpu_cu(e, cudaEventDestroy(x->ev0[i]), "cudaEventDestroy", NULL);
        if (x->ev1[i]) gpu_cu(e, cudaEventDestroy(x->ev1[i]), "cudaEventDestroy", NULL);
    }
    for (uint32_t t = 0; x->aev && t < x->rp->ntensors; t++)
        if (x->aev[t]) gpu_cu(e, cudaEventDestroy(x->aev[t]), "cudaEventDestroy", NULL);
    if (x->t0) gpu_cu(e, cudaEventDestroy(x->t0), "cudaEventDestroy", NULL);
    if (x->pool) gpu_cu(e, cudaMemPoolDestroy(x->pool), "cudaMemPoolDestroy", NULL);
    for (int s = 0; s < PROG_NSTREAMS; s++) {
        if (x->blas[s]) gpu_blas(e, cublasDestroy(x->blas[s]), "cublasDestroy", NULL);
        if (x->ws[s]) gpu_cu(e, cudaFree(x->ws[s]), "cudaFree", "cuBLAS workspace");
        if (x->st[s]) gpu_cu(e, cudaStreamDestroy(x->st[s]), "cudaStreamDestroy", NULL);
    }
    free(x->ev0);
    free(x->ev1);
    free(x->aev);
    free(x->ptr);
}

/* ---- memory ---- */

static int pool_get(rx *x, enum cudaMemPoolAttr a, ss_bytes *out)
{
    uint64_t v = 0;
    int rc = gpu_cu(x->err, cudaMemPoolGetAttribute(x->pool, a, &v), "cudaMemPoolGetAttribute", NULL);
    *out = v;
    return rc;
}

static int point(rx *x, uint32_t step)
{
    iter *it = x->it;
    mem_point p = {host_now(x), 0, 0};
    int rc = pool_get(x, cudaMemPoolAttrUsedMemCurrent, &p.allocated);
    if (!rc) rc = pool_get(x, cudaMemPoolAttrReservedMemCurrent, &p.reserved);
    if (rc) return rc;
    if (it->nseries == it->cap) {
        size_t cap = it->cap ? 2 * it->cap : 256;
        mem_point *s = realloc(it->series, cap * sizeof *s);
        if (!s) return ss_fail(x->err, SS_E_NOMEM, NULL, "out of memory");
        it->series = s;
        it->cap = cap;
    }
    it->series[it->nseries++] = p;
    if (p.allocated > it->seen_peak) {
        it->seen_peak = p.allocated;
        it->peak_step = step;
        it->peak_t = p.t;
    }
    return SS_OK;
}

static int alloc_tensor(rx *x, uint32_t t, uint32_t step)
{
    const rplan_tensor *rt = &x->rp->tensors[t];
    if (!rt->bytes) return SS_OK;
    if (x->ptr[t])
        return ss_fail(x->err, SS_E_INTERNAL, step_ctx(x, step), "tensor %u is allocated twice", t);
    cudaError_t c = cudaMallocFromPoolAsync(&x->ptr[t], rt->bytes, x->pool, x->st[rt->stream]);
    if (c != cudaSuccess) x->ptr[t] = NULL;
    if (c == cudaErrorMemoryAllocation)
        return ss_fail(x->err, HX_E_DEVICE, step_ctx(x, step),
                       "the device has no memory for tensor %u (%llu bytes): the rank's program "
                       "does not fit beside %llu MiB of harness buffers",
                       t, (unsigned long long)rt->bytes, (unsigned long long)(x->scratch >> 20));
    int rc = ck(x, c, "cudaMallocFromPoolAsync", step);
    if (!rc && x->aev[t]) rc = ck(x, cudaEventRecord(x->aev[t], x->st[rt->stream]), "cudaEventRecord", step);
    return rc;
}

/* stream: where the free is ordered (PROG_NSTREAMS: the tensor's own). A
 * stream-ordered free must come after the allocation in stream order, so a
 * free on another stream first waits for the allocation point (already
 * passed in every program where the freeing op used the tensor). */
static int free_tensor(rx *x, uint32_t t, int stream, uint32_t step)
{
    const rplan_tensor *rt = &x->rp->tensors[t];
    if (!rt->bytes) return SS_OK;
    if (!x->ptr[t])
        return ss_fail(x->err, SS_E_INTERNAL, step_ctx(x, step), "tensor %u is freed but not live", t);
    int on = stream < PROG_NSTREAMS ? stream : rt->stream;
    cudaStream_t s = x->st[on];
    int rc = SS_OK;
    if (on != rt->stream && x->aev[t]) rc = ck(x, cudaStreamWaitEvent(s, x->aev[t], 0), "cudaStreamWaitEvent", step);
    if (!rc) rc = ck(x, cudaFreeAsync(x->ptr[t], s), "cudaFreeAsync", step);
    x->ptr[t] = NULL;
    return rc;
}

static int mem_list(rx *x, uint32_t first, uint32_t n, int free_on, uint32_t step)
{
    int rc = SS_OK;
    for (uint32_t k = 0; k < n && !rc; k++) {
        uint32_t t = x->rp->idx[first + k];
        rc = free_on < 0 ? alloc_tensor(x, t, step) : free_tensor(x, t, free_on, step);
    }
    return rc;
}

/* ---- one step ---- */

static cudaDataType_t blas_type(spec_dtype d)
{
    return d == SPEC_DT_FP16 ? CUDA_R_16F : d == SPEC_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static int gemms(rx *x, const rplan_step *s, uint32_t i)
{
    const float one = 1.0f, zero = 0.0f;
    cudaDataType_t t = blas_type((spec_dtype)s->dtype);
    cublasComputeType_t ct = t == CUDA_R_32F && x->o->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                           : CUBLAS_COMPUTE_32F;
    int rc = SS_OK;
    for (uint32_t k = 0; k < s->ngemm && !rc; k++) {
        const rplan_gemm *g = &x->rp->gemms[s->gemm0 + k];
        size_t c = x->gemm_at++ % x->copies;
        rc = ckb(x, cublasGemmEx(x->blas[s->stream], CUBLAS_OP_N, CUBLAS_OP_N, (int)g->m, (int)g->n,
                                 (int)g->k, &one, x->ga + c * x->sa, t, (int)g->m, x->gb + c * x->sb,
                                 t, (int)g->k, &zero, x->gc + c * x->sc, t, (int)g->m, ct,
                                 CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx", i);
    }
    return rc;
}

static ncclDataType_t nccl_type(const rplan_step *s, size_t *count)
{
    size_t e = spec_dtype_size((spec_dtype)s->dtype);
    ncclDataType_t t = ncclUint8;
    if (e == 4) t = ncclFloat32;
    if (e == 2) t = s->dtype == SPEC_DT_BF16 ? ncclBfloat16 : ncclFloat16;
    if (e < 2 || s->bytes % e) {
        *count = s->bytes;
        return ncclUint8;
    }
    *count = s->bytes / e;
    return t;
}

/* On one rank every collective keeps its payload in place of its "size":
 * a gather or scatter of one rank moves count elements; all-to-all is a
 * send to itself. */
static int collective(rx *x, const rplan_step *s, uint32_t i)
{
    size_t n = 0;
    ncclDataType_t t = nccl_type(s, &n);
    cudaStream_t st = x->st[s->stream];
    if (!n) return SS_OK;
    switch (s->coll) {
    case PROG_COLL_ALL_REDUCE:
        return ckn(x, ncclAllReduce(x->cs, x->cr, n, t, ncclSum, x->comm, st), "ncclAllReduce", i);
    case PROG_COLL_ALL_GATHER:
        return ckn(x, ncclAllGather(x->cs, x->cr, n, t, x->comm, st), "ncclAllGather", i);
    case PROG_COLL_REDUCE_SCATTER:
        return ckn(x, ncclReduceScatter(x->cs, x->cr, n, t, ncclSum, x->comm, st), "ncclReduceScatter", i);
    case PROG_COLL_BROADCAST:
        return ckn(x, ncclBroadcast(x->cs, x->cr, n, t, 0, x->comm, st), "ncclBroadcast", i);
    default: {
        int rc = ckn(x, ncclGroupStart(), "ncclGroupStart", i);
        if (!rc) rc = ckn(x, ncclSend(x->cs, n, t, 0, x->comm, st), "ncclSend", i);
        if (!rc) rc = ckn(x, ncclRecv(x->cr, n, t, 0, x->comm, st), "ncclRecv", i);
        int rc2 = ckn(x, ncclGroupEnd(), "ncclGroupEnd", i);
        return rc ? rc : rc2;
    }
    }
}

static int copy(rx *x, const rplan_step *s, uint32_t i)
{
    enum cudaMemcpyKind k = s->copy_dir == RPLAN_H2D   ? cudaMemcpyHostToDevice
                            : s->copy_dir == RPLAN_D2H ? cudaMemcpyDeviceToHost
                                                       : cudaMemcpyDeviceToDevice;
    char *hi = x->cd + x->rp->max_copy_bytes;
    void *dst = s->copy_dir == RPLAN_D2H ? x->ch : x->cd;
    const void *src = s->copy_dir == RPLAN_H2D ? x->ch : hi;
    return ck(x, cudaMemcpyAsync(dst, src, s->bytes, k, x->st[s->stream]), "cudaMemcpyAsync", i);
}

static int body(rx *x, const rplan_step *s, uint32_t i)
{
    switch (s->kind) {
    case RPLAN_GEMM: return gemms(x, s, i);
    case RPLAN_SPIN:
        return ck(x, kern_spin(s->ns, x->g->sms, x->st[s->stream]), "kern_spin", i);
    case RPLAN_COPY: return copy(x, s, i);
    case RPLAN_COLL: return collective(x, s, i);
    default: return SS_OK; /* marker: only its events */
    }
}

static int device_step(rx *x, const rplan_step *s, uint32_t i)
{
    cudaStream_t st = x->st[s->stream];
    int rc = SS_OK;
    for (uint32_t k = 0; k < s->nwait && !rc; k++)
        rc = ck(x, cudaStreamWaitEvent(st, x->ev1[x->rp->idx[s->wait0 + k]], 0), "cudaStreamWaitEvent", i);
    if (!rc) rc = ck(x, cudaEventRecord(x->ev0[i], st), "cudaEventRecord", i);
    if (!rc) rc = body(x, s, i);
    if (!rc) rc = ck(x, cudaEventRecord(x->ev1[i], st), "cudaEventRecord", i);
    return rc;
}

static int host_step(rx *x, const rplan_step *s, uint32_t i)
{
    int rc = SS_OK;
    for (uint32_t k = 0; k < s->nsync && !rc; k++)
        rc = ck(x, cudaEventSynchronize(x->ev1[x->rp->idx[s->sync0 + k]]), "cudaEventSynchronize", i);
    ss_ns *t = x->it->t;
    uint32_t n = x->rp->nsteps;
    t[i] = t[n + i] = host_now(x);
    if (!rc && x->o->host_wait) gpu_host_spin(s->ns);
    t[2 * n + i] = host_now(x);
    return rc;
}

static int issue(rx *x, uint32_t i)
{
    const rplan_step *s = &x->rp->steps[i];
    bool host = s->kind == RPLAN_HOST, mem = s->nalloc || s->nfreei || s->nfreee;
    x->it->t[i] = host_now(x);
    int rc = mem_list(x, s->alloc0, s->nalloc, -1, i);
    if (!rc && mem) rc = point(x, i);
    if (!rc) rc = host ? host_step(x, s, i) : device_step(x, s, i);
    if (!rc) rc = mem_list(x, s->freee0, s->nfreee, host ? PROG_NSTREAMS : s->stream, i);
    if (!rc) rc = mem_list(x, s->freei0, s->nfreei, PROG_NSTREAMS, i);
    if (!rc && (s->nfreei || s->nfreee)) rc = point(x, i);
    return rc;
}

/* ---- iterations ---- */

static int start_state(rx *x)
{
    int rc = SS_OK;
    for (uint32_t t = 0; t < x->rp->ntensors && !rc; t++)
        if (x->rp->tensors[t].live_at_start) rc = alloc_tensor(x, t, NONE);
    if (!rc) rc = gpu_cu(x->err, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "start state");
    uint64_t zero = 0;
    if (!rc)
        rc = gpu_cu(x->err, cudaMemPoolSetAttribute(x->pool, cudaMemPoolAttrUsedMemHigh, &zero),
                    "cudaMemPoolSetAttribute", "used high watermark");
    if (!rc)
        rc = gpu_cu(x->err, cudaMemPoolSetAttribute(x->pool, cudaMemPoolAttrReservedMemHigh, &zero),
                    "cudaMemPoolSetAttribute", "reserved high watermark");
    if (!rc) rc = pool_get(x, cudaMemPoolAttrUsedMemCurrent, &x->it->start_used);
    x->it->seen_peak = x->it->start_used;
    x->it->peak_step = NONE;
    return rc;
}

/* The clock: an event on the idle compute stream, then the host clock. */
static int zero_time(rx *x)
{
    int rc = gpu_cu(x->err, cudaEventRecord(x->t0, x->st[PROG_COMPUTE]), "cudaEventRecord", "step start");
    if (!rc) rc = gpu_cu(x->err, cudaEventSynchronize(x->t0), "cudaEventSynchronize", "step start");
    x->h0 = gpu_now_ns();
    return rc;
}

static int device_times(rx *x)
{
    ss_ns *t = x->it->t;
    uint32_t n = x->rp->nsteps;
    int rc = SS_OK;
    for (uint32_t i = 0; i < n && !rc; i++) {
        if (x->rp->steps[i].kind != RPLAN_HOST) {
            float a = 0, b = 0;
            rc = gpu_elapsed_ms(x->t0, x->ev0[i], &a, x->err);
            if (!rc) rc = gpu_elapsed_ms(x->t0, x->ev1[i], &b, x->err);
            t[n + i] = a > 0 ? (ss_ns)((double)a * 1e6 + 0.5) : 0;
            t[2 * n + i] = b > 0 ? (ss_ns)((double)b * 1e6 + 0.5) : 0;
        }
        if (t[2 * n + i] > x->it->step) x->it->step = t[2 * n + i];
    }
    return rc;
}

static int end_state(rx *x)
{
    iter *it = x->it;
    int rc = pool_get(x, cudaMemPoolAttrUsedMemCurrent, &it->end_used);
    if (!rc) rc = pool_get(x, cudaMemPoolAttrUsedMemHigh, &it->peak_used);
    if (!rc) rc = pool_get(x, cudaMemPoolAttrReservedMemHigh, &it->peak_reserved);
    for (uint32_t t = 0; t < x->rp->ntensors && !rc; t++)
        if (x->ptr[t]) {
            rc = gpu_cu(x->err, cudaFreeAsync(x->ptr[t], x->st[PROG_COMPUTE]), "cudaFreeAsync", "step end");
            x->ptr[t] = NULL;
        }
    if (!rc) rc = gpu_cu(x->err, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "step end");
    return rc;
}

static int run_iter(rx *x, iter *it)
{
    x->it = it;
    int rc = start_state(x);
    if (!rc) rc = zero_time(x);
    for (uint32_t i = 0; i < x->rp->nsteps && !rc; i++) rc = issue(x, i);
    if (!rc) rc = gpu_cu(x->err, cudaDeviceSynchronize(), "cudaDeviceSynchronize", "replayed step");
    if (!rc) rc = device_times(x);
    if (!rc) rc = end_state(x);
    return rc;
}

static int iter_cmp(const iter *a, const iter *b) { return a->step < b->step ? -1 : a->step > b->step; }

/* Index of the iteration with the median step time (the lower one of two). */
static unsigned median_iter(const iter *its, unsigned n)
{
    unsigned best = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned below = 0, same_before = 0;
        for (unsigned j = 0; j < n; j++) {
            int c = iter_cmp(&its[j], &its[i]);
            below += c < 0;
            same_before += c == 0 && j < i;
        }
        if (below + same_before == (n - 1) / 2) best = i;
    }
    return best;
}

static void take(rexec_out *out, iter *it, const rx *x)
{
    uint32_t n = x->rp->nsteps;
    out->issue = it->t;
    out->start = it->t + n;
    out->end = it->t + 2 * n;
    out->series = it->series;
    out->nseries = it->nseries;
    out->start_used = it->start_used;
    out->peak_used = it->peak_used > it->seen_peak ? it->peak_used : it->seen_peak;
    out->peak_reserved = it->peak_reserved;
    out->end_used = it->end_used;
    out->peak_step = it->peak_step;
    out->peak_t = it->peak_t;
    out->scratch_bytes = x->scratch;
    it->t = NULL;
    it->series = NULL;
}

static int run_all(rx *x, iter *its, unsigned n, rexec_out *out)
{
    uint32_t ns = x->rp->nsteps;
    int rc = SS_OK;
    for (unsigned k = 0; k <= n && !rc; k++) {
        its[k].t = calloc(3 * (size_t)(ns ? ns : 1), sizeof *its[k].t);
        if (!its[k].t) return ss_fail(x->err, SS_E_NOMEM, NULL, "out of memory");
        rc = run_iter(x, &its[k]); /* its[0] is the warm-up */
    }
    if (rc) return rc;
    out->step_ms = malloc(n * sizeof *out->step_ms);
    if (!out->step_ms) return ss_fail(x->err, SS_E_NOMEM, NULL, "out of memory");
    for (unsigned k = 0; k < n; k++) out->step_ms[k] = (double)its[k + 1].step * 1e-6;
    out->iters = n;
    take(out, &its[1 + median_iter(its + 1, n)], x);
    return SS_OK;
}

int rexec_run(const rplan *rp, const gpu_info *g, const rexec_opts *o, rexec_out *out, ss_err *err)
{
    memset(out, 0, sizeof *out);
    unsigned n = o->iters < 1 ? 1 : o->iters > 100 ? 100 : o->iters;
    rx x = {.rp = rp, .g = g, .o = o, .err = err};
    iter *its = calloc(n + 1, sizeof *its);
    int rc = its ? setup(&x) : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    if (!rc) rc = run_all(&x, its, n, out);
    if (its) teardown(&x);
    for (unsigned k = 0; its && k <= n; k++) {
        free(its[k].t);
        free(its[k].series);
    }
    free(its);
    if (!rc && err->code) rc = err->code;
    if (rc) rexec_out_fini(out);
    return rc;
}

void rexec_out_fini(rexec_out *o)
{
    if (!o) return;
    free(o->issue); /* start and end point into the same block */
    free(o->series);
    free(o->step_ms);
    memset(o, 0, sizeof *o);
}

rplan_meas rexec_meas(const rexec_out *o, const gpu_info *g, bool host_wait)
{
    return (rplan_meas){o->issue, o->start, o->end, o->series, o->nseries, o->start_used,
                        o->peak_used, o->peak_reserved, o->end_used, o->peak_step, o->peak_t,
                        g->name, o->iters, o->step_ms, o->scratch_bytes, host_wait};
}
