#include "blaunch.h"

#include <stdlib.h>

#include "kern.h"

#define MAX_LAUNCHES 1000u
#define ROUND_TRIPS 200u

typedef struct lctx {
    cudaStream_t s;
    cudaEvent_t e0, e1;
    ss_err *err;
} lctx;

/* One batch behind a spin kernel long enough (10 us per launch) that the
 * host issues all n while the device is still busy. */
static int batch(lctx *c, unsigned n, double *host_us, double *dev_us)
{
    int rc = gpu_cu(c->err, kern_spin(10000ull * n, 1, c->s), "kern_spin", "launch filler");
    if (!rc) rc = gpu_cu(c->err, cudaEventRecord(c->e0, c->s), "cudaEventRecord", NULL);
    uint64_t t0 = gpu_now_ns();
    for (unsigned i = 0; i < n && !rc; i++)
        rc = gpu_cu(c->err, kern_empty(c->s), "kern_empty", "launch benchmark");
    uint64_t t1 = gpu_now_ns();
    if (!rc) rc = gpu_cu(c->err, cudaEventRecord(c->e1, c->s), "cudaEventRecord", NULL);
    if (!rc) rc = gpu_cu(c->err, cudaStreamSynchronize(c->s), "cudaStreamSynchronize", NULL);
    float ms = 0;
    if (!rc) rc = gpu_elapsed_ms(c->e0, c->e1, &ms, c->err);
    *host_us = (double)(t1 - t0) * 1e-3 / n;
    *dev_us = (double)ms * 1e3 / n;
    return rc;
}

static int round_trips(lctx *c, double *us)
{
    double *v = malloc(ROUND_TRIPS * sizeof *v);
    if (!v) return ss_fail(c->err, SS_E_NOMEM, NULL, "out of memory");
    int rc = SS_OK;
    for (unsigned i = 0; i < ROUND_TRIPS && !rc; i++) {
        uint64_t t0 = gpu_now_ns();
        rc = gpu_cu(c->err, kern_empty(c->s), "kern_empty", "round trip");
        if (!rc) rc = gpu_cu(c->err, cudaStreamSynchronize(c->s), "cudaStreamSynchronize", NULL);
        v[i] = (double)(gpu_now_ns() - t0) * 1e-3;
    }
    if (!rc) *us = gpu_median(v, ROUND_TRIPS);
    free(v);
    return rc;
}

static int measure(lctx *c, const blaunch_opts *o, blaunch_result *r)
{
    unsigned n = o->launches < 1 ? 1 : o->launches > MAX_LAUNCHES ? MAX_LAUNCHES : o->launches;
    unsigned reps = o->repeats < 1 ? 1 : o->repeats > 64 ? 64 : o->repeats;
    double h[64], d[64], dummy = 0;
    int rc = batch(c, n, &dummy, &dummy); /* warm-up: module load, first launches */
    for (unsigned i = 0; i < reps && !rc; i++) rc = batch(c, n, &h[i], &d[i]);
    if (!rc) rc = round_trips(c, &r->sync_us);
    if (rc) return rc;
    r->host_us = gpu_median(h, reps);
    r->device_us = gpu_median(d, reps);
    return SS_OK;
}

int blaunch_run(const gpu_info *g, const blaunch_opts *o, meas *m, FILE *out, blaunch_result *res,
                ss_err *err)
{
    (void)g;
    lctx c = {.err = err};
    blaunch_result r = {0};
    int rc = gpu_cu(err, cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c.e0), "cudaEventCreate", NULL);
    if (!rc) rc = gpu_cu(err, cudaEventCreate(&c.e1), "cudaEventCreate", NULL);
    if (!rc) rc = measure(&c, o, &r);
    if (c.s) gpu_cu(err, cudaStreamSynchronize(c.s), "cudaStreamSynchronize", NULL);
    if (c.e0) gpu_cu(err, cudaEventDestroy(c.e0), "cudaEventDestroy", NULL);
    if (c.e1) gpu_cu(err, cudaEventDestroy(c.e1), "cudaEventDestroy", NULL);
    if (c.s) gpu_cu(err, cudaStreamDestroy(c.s), "cudaStreamDestroy", NULL);
    if (rc || err->code) return rc ? rc : err->code;
    fprintf(out, "# launch host %.3f us per launch, device %.3f us per kernel, launch + sync %.3f us\n",
            r.host_us, r.device_us, r.sync_us);
    if (res) *res = r;
    return meas_launch(m, r.host_us, err);
}
