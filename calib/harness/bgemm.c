#include "bgemm.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"

/* Squares for the efficiency curve; then one Llama-3-8B layer on 8192
 * tokens (hidden 4096, 8 KV heads of 128, FFN 14336, vocabulary 128256:
 * models/llama3-8b.json) as forward m = tokens, and one weight gradient
 * (k = tokens). */
const bgemm_shape bgemm_default_shapes[] = {
    {256, 256, 256},      {512, 512, 512},     {1024, 1024, 1024},   {2048, 2048, 2048},
    {4096, 4096, 4096},   {8192, 8192, 8192},  {16384, 16384, 16384}, {8192, 4096, 4096},
    {8192, 1024, 4096},   {8192, 14336, 4096}, {8192, 4096, 14336},  {8192, 128256, 4096},
    {4096, 4096, 8192},
};
const size_t bgemm_ndefault = sizeof bgemm_default_shapes / sizeof bgemm_default_shapes[0];

#define WORKSPACE (32u << 20) /* cuBLAS's recommendation for Hopper */
#define ALIGN 256u            /* fp8 needs 16-byte aligned operands; be generous */
#define MAX_COPIES 4096

typedef struct gdt {
    const char *name;
    unsigned bit;
    cudaDataType_t ab, c;
    cublasComputeType_t compute;
    size_t ea, ec;
    kern_dtype fill;
    bool lt;        /* cublasLt (fp8) */
    bool in_file;   /* written to the measurement file */
} gdt;

static const gdt dtypes[] = {
    {"bf16", BGEMM_BF16, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, KERN_BF16, false, true},
    {"fp16", BGEMM_FP16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, KERN_F16, false, true},
    {"fp32", BGEMM_FP32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, KERN_F32, false, true},
    {"tf32", BGEMM_TF32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, KERN_F32, false,
     false},
    {"fp8", BGEMM_FP8, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, KERN_F8E4M3, true, true},
};

/* Device state shared by every measurement of a run. */
typedef struct gctx {
    const gpu_info *g;
    cublasHandle_t h;
    cublasLtHandle_t lt;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    void *ws;
    FILE *out;
    ss_err *err;
} gctx;

/* One (dtype, shape): operands, rotation and, for fp8, the Lt plan. */
typedef struct gjob {
    const gdt *dt;
    int m, n, k;
    void *a, *b, *c;
    size_t sa, sb, sc; /* bytes between copies */
    size_t copies;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulHeuristicResult_t algo;
} gjob;

static size_t round_up(size_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

static int ctx_init(gctx *c, ss_err *err)
{
    int rc = gpu_blas(err, cublasCreate(&c->h), "cublasCreate", NULL);
    if (!rc) rc = gpu_blas(err, cublasLtCreate(&c->lt), "cublasLtCreate", NULL);
    if (!rc)
        rc = gpu_cu(err, cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c->e0), "cudaEventCreate", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c->e1), "cudaEventCreate", NULL);
    if (!rc) rc = gpu_cu(err, cudaMalloc(&c->ws, WORKSPACE), "cudaMalloc", "cuBLAS workspace");
    if (!rc) rc = gpu_blas(err, cublasSetStream(c->h, c->s), "cublasSetStream", NULL);
    if (!rc)
        rc = gpu_blas(err, cublasSetWorkspace(c->h, c->ws, WORKSPACE), "cublasSetWorkspace", NULL);
    /* Default math: fp32 stays fp32 (no TF32) unless the compute type asks. */
    if (!rc)
        rc = gpu_blas(err, cublasSetMathMode(c->h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", NULL);
    return rc;
}

/* Cleanup keeps going after a failure; the first error stays in err. */
static void ctx_fini(gctx *c)
{
    if (c->s) gpu_cu(c->err, cudaStreamSynchronize(c->s), "cudaStreamSynchronize", NULL);
    if (c->ws) gpu_cu(c->err, cudaFree(c->ws), "cudaFree", NULL);
    if (c->e0) gpu_cu(c->err, cudaEventDestroy(c->e0), "cudaEventDestroy", NULL);
    if (c->e1) gpu_cu(c->err, cudaEventDestroy(c->e1), "cudaEventDestroy", NULL);
    if (c->s) gpu_cu(c->err, cudaStreamDestroy(c->s), "cudaStreamDestroy", NULL);
    if (c->lt) gpu_blas(c->err, cublasLtDestroy(c->lt), "cublasLtDestroy", NULL);
    if (c->h) gpu_blas(c->err, cublasDestroy(c->h), "cublasDestroy", NULL);
}

static void job_free(gctx *c, gjob *j)
{
    void *p[] = {j->a, j->b, j->c};
    for (int i = 0; i < 3; i++)
        if (p[i]) gpu_cu(c->err, cudaFree(p[i]), "cudaFree", "GEMM operands");
    if (j->op)
        gpu_blas(c->err, cublasLtMatmulDescDestroy(j->op), "cublasLtMatmulDescDestroy", NULL);
    cublasLtMatrixLayout_t l[] = {j->la, j->lb, j->lc};
    for (int i = 0; i < 3; i++)
        if (l[i])
            gpu_blas(c->err, cublasLtMatrixLayoutDestroy(l[i]), "cublasLtMatrixLayoutDestroy", NULL);
    memset(j, 0, sizeof *j);
}

/* A rotation buffer; inputs get pseudo-random values (seeded per operand). */
static int alloc_fill(gctx *c, void **p, size_t bytes, const gdt *dt, int seed, const char *ctx)
{
    int rc = gpu_cu(c->err, cudaMalloc(p, bytes), "cudaMalloc", ctx);
    if (rc || seed < 0) return rc;
    return gpu_cu(c->err, kern_fill(*p, bytes / dt->ea, dt->fill, (uint32_t)seed, c->s), "kern_fill",
                  ctx);
}

/* Operands for `copies` rotations; false (and a note) when they do not fit. */
static int job_buffers(gctx *c, gjob *j, bool *fits)
{
    size_t free_b = 0, total = 0;
    int rc = gpu_cu(c->err, cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", NULL);
    if (rc) return rc;
    size_t ea = j->dt->ea, ec = j->dt->ec;
    j->sa = round_up((size_t)j->m * j->k * ea);
    j->sb = round_up((size_t)j->k * j->n * ea);
    j->sc = round_up((size_t)j->m * j->n * ec);
    size_t set = j->sa + j->sb + j->sc, budget = free_b / 10 * 6;
    *fits = set <= budget;
    if (!*fits) return SS_OK;
    j->copies = gpu_rotations(c->g, set, budget, MAX_COPIES);
    char ctx[96];
    snprintf(ctx, sizeof ctx, "GEMM %s %dx%dx%d", j->dt->name, j->m, j->n, j->k);
    rc = alloc_fill(c, &j->a, j->sa * j->copies, j->dt, 1, ctx);
    if (!rc) rc = alloc_fill(c, &j->b, j->sb * j->copies, j->dt, 2, ctx);
    if (!rc) rc = alloc_fill(c, &j->c, j->sc * j->copies, j->dt, -1, ctx);
    return rc;
}

/* fp8 through cublasLt: op(A) = A^T with A stored k x m ("TN"), bf16 out. */
static int lt_layouts(gctx *c, gjob *j)
{
    ss_err *e = c->err;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const char *set = "cublasLtMatmulDescSetAttribute", *mk = "cublasLtMatrixLayoutCreate";
    int rc = gpu_blas(e, cublasLtMatmulDescCreate(&j->op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                      "cublasLtMatmulDescCreate", NULL);
    if (!rc)
        rc = gpu_blas(e, cublasLtMatmulDescSetAttribute(j->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                                        sizeof ta), set, "TRANSA");
    if (!rc)
        rc = gpu_blas(e, cublasLtMatmulDescSetAttribute(j->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                                        sizeof tb), set, "TRANSB");
    uint64_t m = (uint64_t)j->m, n = (uint64_t)j->n, k = (uint64_t)j->k;
    if (!rc) rc = gpu_blas(e, cublasLtMatrixLayoutCreate(&j->la, CUDA_R_8F_E4M3, k, m, j->k), mk, "A");
    if (!rc) rc = gpu_blas(e, cublasLtMatrixLayoutCreate(&j->lb, CUDA_R_8F_E4M3, k, n, j->k), mk, "B");
    if (!rc) rc = gpu_blas(e, cublasLtMatrixLayoutCreate(&j->lc, CUDA_R_16BF, m, n, j->m), mk, "C");
    return rc;
}

/* fp8 through cublasLt: op(A) = A^T with A stored k x m ("TN", which fp8
 * requires), bf16 out. *supported: cuBLASLt has an algorithm for it. */
static int job_lt(gctx *c, gjob *j, bool *supported)
{
    size_t ws = WORKSPACE;
    int found = 0;
    cublasLtMatmulPreference_t pref = NULL;
    ss_err *e = c->err;
    int rc = lt_layouts(c, j);
    if (!rc)
        rc = gpu_blas(e, cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", NULL);
    if (!rc)
        rc = gpu_blas(e, cublasLtMatmulPreferenceSetAttribute(
                             pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                      "cublasLtMatmulPreferenceSetAttribute", NULL);
    if (!rc) {
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c->lt, j->op, j->la, j->lb, j->lc, j->lc,
                                                           pref, 1, &j->algo, &found);
        *supported = st == CUBLAS_STATUS_SUCCESS && found > 0;
        if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
            rc = gpu_blas(e, st, "cublasLtMatmulAlgoGetHeuristic", NULL);
    }
    if (pref)
        gpu_blas(e, cublasLtMatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy", NULL);
    return rc;
}

/* One GEMM on rotation copy i. */
static int call(gctx *c, const gjob *j, size_t i)
{
    const float one = 1.0f, zero = 0.0f;
    const char *a = (const char *)j->a + (i % j->copies) * j->sa;
    const char *b = (const char *)j->b + (i % j->copies) * j->sb;
    char *cc = (char *)j->c + (i % j->copies) * j->sc;
    if (j->dt->lt)
        return gpu_blas(c->err, cublasLtMatmul(c->lt, j->op, &one, a, j->la, b, j->lb, &zero, cc,
                                               j->lc, cc, j->lc, &j->algo.algo, c->ws, WORKSPACE,
                                               c->s),
                        "cublasLtMatmul", j->dt->name);
    return gpu_blas(c->err, cublasGemmEx(c->h, CUBLAS_OP_N, CUBLAS_OP_N, j->m, j->n, j->k, &one, a,
                                         j->dt->ab, j->m, b, j->dt->ab, j->k, &zero, cc, j->dt->c,
                                         j->m, j->dt->compute, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx", j->dt->name);
}

/* n calls between two events; *ms per call. */
static int batch(gctx *c, const gjob *j, size_t n, size_t *at, double *ms)
{
    int rc = gpu_cu(c->err, cudaEventRecord(c->e0, c->s), "cudaEventRecord", NULL);
    for (size_t i = 0; i < n && !rc; i++) rc = call(c, j, (*at)++);
    if (!rc) rc = gpu_cu(c->err, cudaEventRecord(c->e1, c->s), "cudaEventRecord", NULL);
    if (!rc) rc = gpu_cu(c->err, cudaEventSynchronize(c->e1), "cudaEventSynchronize", "GEMM batch");
    float t = 0;
    if (!rc) rc = gpu_elapsed_ms(c->e0, c->e1, &t, c->err);
    *ms = (double)t / (double)n;
    return rc;
}

static int time_job(gctx *c, const gjob *j, const bgemm_opts *o, double *us)
{
    size_t at = 0;
    double one = 0, warm = 0, v[64];
    int rc = batch(c, j, 1, &at, &one);
    size_t nw = one > 0 ? (size_t)ceil(10.0 / one) : 200;
    if (!rc) rc = batch(c, j, nw < 3 ? 3 : nw > 200 ? 200 : nw, &at, &warm);
    size_t per = warm > 0 ? (size_t)ceil(o->target_ms / warm) : 1000;
    per = per < 1 ? 1 : per > 2000 ? 2000 : per;
    unsigned reps = o->repeats < 1 ? 1 : o->repeats > 64 ? 64 : o->repeats;
    for (unsigned r = 0; r < reps && !rc; r++) rc = batch(c, j, per, &at, &v[r]);
    if (!rc) *us = gpu_median(v, reps) * 1e3;
    return rc;
}

static bool dims_ok(const bgemm_shape *s)
{
    return s->m && s->n && s->k && s->m <= INT_MAX && s->n <= INT_MAX && s->k <= INT_MAX;
}

static int one(gctx *c, const gdt *dt, const bgemm_shape *s, const bgemm_opts *o, meas *m)
{
    gjob j = {.dt = dt, .m = (int)s->m, .n = (int)s->n, .k = (int)s->k};
    bool fits = false, ok = true;
    double us = 0;
    int rc = job_buffers(c, &j, &fits);
    if (!rc && fits && dt->lt) rc = job_lt(c, &j, &ok);
    if (!rc && fits && ok) rc = time_job(c, &j, o, &us);
    job_free(c, &j);
    if (rc) return rc;
    if (!fits || !ok) {
        fprintf(c->out, "# gemm %-4s m %6llu n %6llu k %6llu   skipped: %s\n", dt->name,
                (unsigned long long)s->m, (unsigned long long)s->n, (unsigned long long)s->k,
                !fits ? "operands do not fit in free device memory"
                      : "cuBLASLt has no algorithm for it (fp8 needs m, n, k multiples of 16)");
        return SS_OK;
    }
    double tflops = 2.0 * (double)s->m * (double)s->n * (double)s->k / us / 1e6;
    fprintf(c->out, "# gemm %-4s m %6llu n %6llu k %6llu %12.2f us %9.1f TFLOP/s  (%zu copies)\n",
            dt->name, (unsigned long long)s->m, (unsigned long long)s->n, (unsigned long long)s->k,
            us, tflops, j.copies);
    return dt->in_file ? meas_gemm(m, dt->name, s->m, s->n, s->k, us, tflops, c->err) : SS_OK;
}

static int run_all(gctx *c, const bgemm_opts *o, meas *m)
{
    int rc = SS_OK;
    bool fp8 = c->g->cc_major * 10 + c->g->cc_minor >= 89;
    if ((o->dtypes & BGEMM_FP8) && !fp8)
        fprintf(c->out, "# gemm fp8 skipped: needs compute capability 8.9 or later, %s is %d.%d\n",
                c->g->name, c->g->cc_major, c->g->cc_minor);
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0] && !rc; d++) {
        if (!(o->dtypes & dtypes[d].bit) || (dtypes[d].lt && !fp8)) continue;
        for (size_t i = 0; i < o->nshapes && !rc; i++) {
            if (o->deadline_ns && gpu_now_ns() > o->deadline_ns) {
                fprintf(c->out, "# gemm: time budget reached, %s and later dtypes partly skipped\n",
                        dtypes[d].name);
                return SS_OK;
            }
            if (!dims_ok(&o->shapes[i])) continue;
            rc = one(c, &dtypes[d], &o->shapes[i], o, m);
        }
    }
    return rc;
}

int bgemm_run(const gpu_info *g, const bgemm_opts *o, meas *m, FILE *out, ss_err *err)
{
    gctx c = {.g = g, .out = out, .err = err};
    int rc = ctx_init(&c, err);
    if (!rc) rc = run_all(&c, o, m);
    ctx_fini(&c);
    return rc ? rc : err->code;
}

/* ---- parsing ---- */

int bgemm_parse_shapes(const char *text, bgemm_shape **out, size_t *n, ss_err *err)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    bgemm_shape *v = calloc(cap, sizeof *v);
    if (!v) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    size_t k = 0;
    const char *p = text;
    while (*p) {
        unsigned long long a, b, c2;
        int used = 0;
        if (sscanf(p, "%llux%llux%llu%n", &a, &b, &c2, &used) != 3 || !a || !b || !c2 ||
            a > INT_MAX || b > INT_MAX || c2 > INT_MAX || (p[used] && p[used] != ',')) {
            free(v);
            return ss_fail(err, SS_E_INPUT, "--shapes",
                           "expected MxNxK[,MxNxK...] with sides 1..%d, found \"%s\"", INT_MAX, p);
        }
        v[k++] = (bgemm_shape){a, b, c2};
        p += used + (p[used] == ',');
    }
    *out = v;
    *n = k;
    return SS_OK;
}

int bgemm_parse_dtypes(const char *text, unsigned *mask, ss_err *err)
{
    if (!strcmp(text, "all")) {
        *mask = BGEMM_ALL;
        return SS_OK;
    }
    unsigned m = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t d = 0;
        while (d < sizeof dtypes / sizeof dtypes[0] &&
               (strlen(dtypes[d].name) != len || strncmp(dtypes[d].name, p, len) != 0))
            d++;
        if (d == sizeof dtypes / sizeof dtypes[0])
            return ss_fail(err, SS_E_INPUT, "--dtypes",
                           "expected a list of bf16, fp16, fp32, tf32, fp8 (or all), found \"%.*s\"",
                           (int)len, p);
        m |= dtypes[d].bit;
        p += len + (p[len] == ',');
    }
    if (!m) return ss_fail(err, SS_E_INPUT, "--dtypes", "the list is empty");
    *mask = m;
    return SS_OK;
}
