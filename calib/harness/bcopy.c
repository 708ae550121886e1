#include "bcopy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ckind {
    const char *name;
    enum cudaMemcpyKind dir;
    bool host, pinned;
} ckind;

static const ckind kinds[] = {
    {"d2d", cudaMemcpyDeviceToDevice, false, false},
    {"h2d", cudaMemcpyHostToDevice, true, true},
    {"d2h", cudaMemcpyDeviceToHost, true, true},
    {"h2d", cudaMemcpyHostToDevice, true, false},
    {"d2h", cudaMemcpyDeviceToHost, true, false},
};

typedef struct cctx {
    const gpu_info *g;
    const bcopy_opts *o;
    FILE *out;
    ss_err *err;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    char *dev, *pin, *page;
    size_t dev_bytes, max_bytes, page_bytes;
} cctx;

static bool wanted(const bcopy_opts *o, const ckind *k)
{
    bool dir = k->dir == cudaMemcpyDeviceToDevice ? o->d2d
               : k->dir == cudaMemcpyHostToDevice ? o->h2d : o->d2h;
    return dir && (!k->host || (k->pinned ? o->pinned : o->pageable));
}

/* Device buffer: two of the largest copy, and at least four L2s so the
 * rotation of small copies leaves L2 behind; the largest size shrinks to
 * what a quarter of free memory holds. */
static int buffers(cctx *c)
{
    size_t free_b = 0, total = 0;
    int rc = gpu_cu(c->err, cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", NULL);
    if (rc) return rc;
    c->max_bytes = c->o->max_bytes;
    while (c->max_bytes > c->o->min_bytes && 2 * c->max_bytes > free_b / 4) c->max_bytes /= 2;
    c->dev_bytes = 2 * c->max_bytes > 4 * c->g->l2_bytes ? 2 * c->max_bytes : 4 * c->g->l2_bytes;
    c->page_bytes = c->max_bytes < c->o->pageable_max ? c->max_bytes : c->o->pageable_max;
    rc = gpu_cu(c->err, cudaMalloc((void **)&c->dev, c->dev_bytes), "cudaMalloc", "copy buffer");
    bool host = c->o->h2d || c->o->d2h;
    if (!rc && host && c->o->pinned)
        rc = gpu_cu(c->err, cudaMallocHost((void **)&c->pin, c->max_bytes), "cudaMallocHost",
                    "pinned copy buffer");
    if (!rc && host && c->o->pageable) {
        c->page = malloc(c->page_bytes);
        if (!c->page) return ss_fail(c->err, SS_E_NOMEM, NULL, "out of host memory for copies");
        memset(c->page, 1, c->page_bytes); /* touch every page before timing */
    }
    if (!rc) rc = gpu_cu(c->err, cudaMemset(c->dev, 0, c->dev_bytes), "cudaMemset", "copy buffer");
    if (!rc && c->pin) memset(c->pin, 1, c->max_bytes);
    return rc;
}

static int copy_one(cctx *c, const ckind *k, size_t bytes, size_t i)
{
    size_t slots = c->dev_bytes / bytes;
    char *host = k->pinned ? c->pin : c->page;
    char *d0 = c->dev + (2 * i % slots) * bytes, *d1 = c->dev + ((2 * i + 1) % slots) * bytes;
    void *dst = k->dir == cudaMemcpyDeviceToHost ? host : d1;
    const void *src = k->dir == cudaMemcpyHostToDevice ? host : d0;
    return gpu_cu(c->err, cudaMemcpyAsync(dst, src, bytes, k->dir, c->s), "cudaMemcpyAsync", k->name);
}

/* n copies; *us per copy, by events (device and pinned) or the host clock. */
static int batch(cctx *c, const ckind *k, size_t bytes, size_t n, size_t *at, double *us)
{
    bool host_clock = k->host && !k->pinned;
    uint64_t t0 = gpu_now_ns();
    int rc = host_clock ? SS_OK : gpu_cu(c->err, cudaEventRecord(c->e0, c->s), "cudaEventRecord", NULL);
    for (size_t i = 0; i < n && !rc; i++) rc = copy_one(c, k, bytes, (*at)++);
    if (!rc && !host_clock) rc = gpu_cu(c->err, cudaEventRecord(c->e1, c->s), "cudaEventRecord", NULL);
    if (!rc) rc = gpu_cu(c->err, cudaStreamSynchronize(c->s), "cudaStreamSynchronize", "copies");
    float ms = 0;
    if (!rc && !host_clock) rc = gpu_elapsed_ms(c->e0, c->e1, &ms, c->err);
    double total_us = host_clock ? (double)(gpu_now_ns() - t0) * 1e-3 : (double)ms * 1e3;
    *us = total_us / (double)n;
    return rc;
}

static int time_size(cctx *c, const ckind *k, size_t bytes, double *us)
{
    size_t at = 0;
    double one = 0, v[64];
    int rc = batch(c, k, bytes, 2, &at, &one);
    if (!rc) rc = batch(c, k, bytes, 1, &at, &one);
    size_t per = one > 0 ? (size_t)ceil(c->o->target_ms * 1e3 / one) : 1000;
    per = per < 1 ? 1 : per > 1000 ? 1000 : per;
    unsigned reps = c->o->repeats < 1 ? 1 : c->o->repeats > 64 ? 64 : c->o->repeats;
    for (unsigned r = 0; r < reps && !rc; r++) rc = batch(c, k, bytes, per, &at, &v[r]);
    if (!rc) *us = gpu_median(v, reps);
    return rc;
}

static int sweep(cctx *c, const ckind *k, meas *m)
{
    size_t top = k->host && !k->pinned ? c->page_bytes : c->max_bytes;
    int rc = SS_OK;
    for (double b = (double)c->o->min_bytes; b <= (double)top && !rc; b *= c->o->factor) {
        size_t bytes = (size_t)b;
        if (c->o->deadline_ns && gpu_now_ns() > c->o->deadline_ns) {
            fprintf(c->out, "# copy: time budget reached, %s %s from %zu bytes on skipped\n",
                    k->name, k->host ? (k->pinned ? "pinned" : "pageable") : "", bytes);
            return SS_OK;
        }
        double us = 0;
        rc = time_size(c, k, bytes, &us);
        if (rc) break;
        fprintf(c->out, "# copy %s %-8s %12zu B %12.2f us %9.2f GB/s\n", k->name,
                k->host ? (k->pinned ? "pinned" : "pageable") : "device", bytes, us,
                (double)bytes / us * 1e-3);
        rc = meas_copy(m, k->name, k->host, k->pinned, bytes, us, c->err);
    }
    return rc;
}

static void fini(cctx *c)
{
    if (c->s) gpu_cu(c->err, cudaStreamSynchronize(c->s), "cudaStreamSynchronize", NULL);
    if (c->dev) gpu_cu(c->err, cudaFree(c->dev), "cudaFree", "copy buffer");
    if (c->pin) gpu_cu(c->err, cudaFreeHost(c->pin), "cudaFreeHost", "pinned copy buffer");
    free(c->page);
    if (c->e0) gpu_cu(c->err, cudaEventDestroy(c->e0), "cudaEventDestroy", NULL);
    if (c->e1) gpu_cu(c->err, cudaEventDestroy(c->e1), "cudaEventDestroy", NULL);
    if (c->s) gpu_cu(c->err, cudaStreamDestroy(c->s), "cudaStreamDestroy", NULL);
}

int bcopy_run(const gpu_info *g, const bcopy_opts *o, meas *m, FILE *out, ss_err *err)
{
    if (o->min_bytes == 0 || o->max_bytes < o->min_bytes || !(o->factor > 1.0))
        return ss_fail(err, SS_E_INPUT, "copy", "expected 0 < -b <= -e and -f > 1");
    cctx c = {.g = g, .o = o, .out = out, .err = err};
    int rc = gpu_cu(err, cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c.e0), "cudaEventCreate", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c.e1), "cudaEventCreate", NULL);
    if (!rc) rc = buffers(&c);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !rc; i++)
        if (wanted(o, &kinds[i])) rc = sweep(&c, &kinds[i], m);
    fini(&c);
    return rc ? rc : err->code;
}
