#include "bcoll.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kern.h"
#include "nctx.h"

#ifdef SS_HX_MPI
#include <mpi.h>
#endif

int bcoll_parse_ops(const char *text, unsigned *mask, ss_err *err)
{
    if (!strcmp(text, "all")) {
        *mask = (1u << NCTX_NOPS) - 1;
        return SS_OK;
    }
    unsigned m = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, ",");
        int k = nctx_op_find(p, len);
        if (k < 0)
            return ss_fail(err, SS_E_INPUT, "--ops",
                           "expected all_reduce, all_gather, reduce_scatter, broadcast, alltoall, "
                           "sendrecv (or all), found \"%.*s\"", (int)len, p);
        m |= 1u << k;
        p += len + (p[len] == ',');
    }
    *mask = m;
    return m ? SS_OK : ss_fail(err, SS_E_INPUT, "--ops", "the list is empty");
}

/* ---- the world: one process or MPI ---- */

bool bcoll_mpi_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static int streams_init(bcoll_world *w, ss_err *err)
{
    int rc = SS_OK;
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        if (!rc)
            rc = gpu_cu(err, cudaStreamCreateWithFlags(&w->streams[i], cudaStreamNonBlocking),
                        "cudaStreamCreateWithFlags", NULL);
    }
    return rc;
}

static int world_single(bcoll_world *w, int ngpus, ss_err *err)
{
    int n = gpu_count();
    if (n == 0) {
        gpu_info g;
        return gpu_open(0, &g, err); /* says why there is no device */
    }
    if (ngpus > n)
        return ss_fail(err, SS_E_INPUT, "-g", "%d GPUs asked for, %d visible", ngpus, n);
    w->nlocal = ngpus > 0 ? ngpus : n > BCOLL_MAX_GPUS ? BCOLL_MAX_GPUS : n;
    for (int i = 0; i < w->nlocal; i++) w->devs[i] = i;
    w->nranks = w->nlocal;
    w->nprocs = 1;
    w->nodes = 1;
    w->root = true;
    int rc = gpu_nccl(err, ncclCommInitAll(w->comms, w->nlocal, w->devs), "ncclCommInitAll", NULL);
    return rc ? rc : streams_init(w, err);
}

#ifdef SS_HX_MPI
/* Every process learns whether any failed; a local failure keeps its own
 * message, a remote one is reported as such. */
static int agree(const bcoll_world *w, int rc, ss_err *err)
{
    if (!w->mpi) return rc;
    int bad = rc != 0, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc || !any) return rc;
    return ss_fail(err, HX_E_DEVICE, "MPI", "another rank failed; stopping with it");
}

static int count_nodes(bcoll_world *w)
{
    char *all = malloc((size_t)w->nprocs * sizeof w->host);
    if (!all) return 0;
    MPI_Allgather(w->host, (int)sizeof w->host, MPI_CHAR, all, (int)sizeof w->host, MPI_CHAR,
                  MPI_COMM_WORLD);
    int nodes = 0;
    for (int i = 0; i < w->nprocs; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(all + i * sizeof w->host, all + j * sizeof w->host);
        nodes += !seen;
    }
    free(all);
    return nodes;
}

static int world_mpi(bcoll_world *w, ss_err *err)
{
    int rank = 0, size = 1, local = 0, ndev = gpu_count();
    MPI_Comm node;
    MPI_Init(NULL, NULL);
    w->mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    *w = (bcoll_world){.mpi = true, .root = rank == 0, .nlocal = 1, .rank0 = rank,
                       .nranks = size, .nprocs = size};
    if (gethostname(w->host, sizeof w->host) != 0) snprintf(w->host, sizeof w->host, "unknown");
    w->host[sizeof w->host - 1] = '\0';
    w->nodes = count_nodes(w);
    gpu_info g;
    int rc = ndev ? SS_OK : gpu_open(0, &g, err);
    if (!rc) w->devs[0] = local % ndev;
    if (!rc) rc = gpu_cu(err, cudaSetDevice(w->devs[0]), "cudaSetDevice", NULL);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (!rc && rank == 0) rc = gpu_nccl(err, ncclGetUniqueId(&id), "ncclGetUniqueId", NULL);
    if ((rc = agree(w, rc, err))) return rc;
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    rc = gpu_nccl(err, ncclCommInitRank(&w->comms[0], size, id, rank), "ncclCommInitRank", NULL);
    if (!rc) rc = streams_init(w, err);
    return agree(w, rc, err);
}

static void mpi_barrier(const bcoll_world *w)
{
    if (w->mpi) MPI_Barrier(MPI_COMM_WORLD);
}

static double mean_time(const bcoll_world *w, double t)
{
    if (!w->mpi) return t;
    double sum = 0;
    MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / w->nprocs;
}

static unsigned long long sum_wrong(const bcoll_world *w, unsigned long long v)
{
    if (!w->mpi) return v;
    unsigned long long s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

/* Rank lines of every process, in rank order, on the root. */
static void gather_lines(const bcoll_world *w, const char *mine, char *all, size_t len)
{
    if (!w->mpi) {
        snprintf(all, len, "%s", mine);
        return;
    }
    char *buf = w->root ? malloc((size_t)w->nprocs * 512) : NULL;
    MPI_Gather(mine, 512, MPI_CHAR, buf, 512, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (!w->root) return;
    size_t at = 0;
    all[0] = '\0';
    for (int p = 0; buf && p < w->nprocs && at < len; p++) {
        int k = snprintf(all + at, len - at, "%s", buf + (size_t)p * 512);
        at += k > 0 ? (size_t)k : 0;
    }
    free(buf);
}
#else
static int agree(const bcoll_world *w, int rc, ss_err *err)
{
    (void)w;
    (void)err;
    return rc;
}
static void mpi_barrier(const bcoll_world *w) { (void)w; }
static double mean_time(const bcoll_world *w, double t)
{
    (void)w;
    return t;
}
static unsigned long long sum_wrong(const bcoll_world *w, unsigned long long v)
{
    (void)w;
    return v;
}
static void gather_lines(const bcoll_world *w, const char *mine, char *all, size_t len)
{
    (void)w;
    snprintf(all, len, "%s", mine);
}
#endif

int bcoll_world_init(bcoll_world *w, int ngpus, ss_err *err)
{
    memset(w, 0, sizeof *w);
    if (gethostname(w->host, sizeof w->host) != 0) snprintf(w->host, sizeof w->host, "unknown");
    w->host[sizeof w->host - 1] = '\0';
    int rc;
    if (bcoll_mpi_launched()) {
#ifdef SS_HX_MPI
        rc = world_mpi(w, err);
#else
        rc = ss_fail(err, SS_E_INPUT, "coll",
                     "started by mpirun, but this build has no MPI (configure with MPI "
                     "installed, without SS_NO_MPI); run one process with -g N instead");
#endif
    } else {
        rc = world_single(w, ngpus, err);
    }
    if (rc) bcoll_world_fini(w, err);
    return rc;
}

void bcoll_world_fini(bcoll_world *w, ss_err *err)
{
    for (int i = 0; i < w->nlocal; i++) {
        if (w->streams[i]) {
            gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
            gpu_cu(err, cudaStreamSynchronize(w->streams[i]), "cudaStreamSynchronize", NULL);
            gpu_cu(err, cudaStreamDestroy(w->streams[i]), "cudaStreamDestroy", NULL);
        }
        if (w->comms[i]) gpu_nccl(err, ncclCommDestroy(w->comms[i]), "ncclCommDestroy", NULL);
        w->streams[i] = NULL;
        w->comms[i] = NULL;
    }
#ifdef SS_HX_MPI
    if (w->mpi) MPI_Finalize();
#endif
    w->mpi = false;
    w->nlocal = 0;
}

/* ---- one op, one size ---- */

typedef struct cbuf {
    float *send[BCOLL_MAX_GPUS], *recv[BCOLL_MAX_GPUS];
    unsigned long long *wrong[BCOLL_MAX_GPUS];
    size_t bytes;
} cbuf;

static int call_p2p(const bcoll_world *w, int i, int op, const nctx_counts *c, float *s, float *r,
                    ss_err *err)
{
    int rank = w->rank0 + i, n = w->nranks;
    ncclComm_t cm = w->comms[i];
    cudaStream_t st = w->streams[i];
    int rc = SS_OK;
    if (op == NCTX_SR) {
        rc = gpu_nccl(err, ncclSend(s, c->param, ncclFloat, (rank + 1) % n, cm, st), "ncclSend", "sendrecv");
        if (!rc)
            rc = gpu_nccl(err, ncclRecv(r, c->param, ncclFloat, (rank + n - 1) % n, cm, st), "ncclRecv",
                          "sendrecv");
        return rc;
    }
    for (int p = 0; p < n && !rc; p++) {
        rc = gpu_nccl(err, ncclSend(s + (size_t)p * c->param, c->param, ncclFloat, p, cm, st), "ncclSend",
                      "alltoall");
        if (!rc)
            rc = gpu_nccl(err, ncclRecv(r + (size_t)p * c->param, c->param, ncclFloat, p, cm, st),
                          "ncclRecv", "alltoall");
    }
    return rc;
}

/* Device i's part of one call; in place per nccl-tests' offsets. */
static int call_one(const bcoll_world *w, const cbuf *b, int i, int op, const nctx_counts *c, bool in,
                    ss_err *err)
{
    int rank = w->rank0 + i;
    float *s = b->send[i], *r = b->recv[i];
    ncclComm_t cm = w->comms[i];
    cudaStream_t st = w->streams[i];
    if (in && op == NCTX_AG) s = r + (size_t)rank * c->send;
    else if (in && op == NCTX_RS) r = s + (size_t)rank * c->recv;
    else if (in) s = r;
    switch (op) {
    case NCTX_AR:
        return gpu_nccl(err, ncclAllReduce(s, r, c->param, ncclFloat, ncclSum, cm, st), "ncclAllReduce", NULL);
    case NCTX_AG:
        return gpu_nccl(err, ncclAllGather(s, r, c->param, ncclFloat, cm, st), "ncclAllGather", NULL);
    case NCTX_RS:
        return gpu_nccl(err, ncclReduceScatter(s, r, c->param, ncclFloat, ncclSum, cm, st),
                        "ncclReduceScatter", NULL);
    case NCTX_BC:
        return gpu_nccl(err, ncclBroadcast(s, r, c->param, ncclFloat, 0, cm, st), "ncclBroadcast", NULL);
    default:
        return call_p2p(w, i, op, c, s, r, err);
    }
}

static int launch(const bcoll_world *w, const cbuf *b, int op, const nctx_counts *c, bool in, ss_err *err)
{
    int rc = gpu_nccl(err, ncclGroupStart(), "ncclGroupStart", NULL);
    for (int i = 0; i < w->nlocal && !rc; i++) rc = call_one(w, b, i, op, c, in, err);
    int rc2 = gpu_nccl(err, ncclGroupEnd(), "ncclGroupEnd", nctx_op_name(op));
    return rc ? rc : rc2;
}

static int sync_all(const bcoll_world *w, ss_err *err)
{
    int rc = SS_OK;
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaStreamSynchronize(w->streams[i]), "cudaStreamSynchronize", "collective");
        ncclResult_t async = ncclSuccess;
        if (!rc) rc = gpu_nccl(err, ncclCommGetAsyncError(w->comms[i], &async), "ncclCommGetAsyncError", NULL);
        if (!rc) rc = gpu_nccl(err, async, "NCCL (asynchronous error)", NULL);
    }
    return rc;
}

/* nccl-tests' timing: warm-up, then iters launches and one synchronize. */
static int time_op(const bcoll_world *w, const cbuf *b, const bcoll_opts *o, int op, const nctx_counts *c,
                   bool in, double *us, ss_err *err)
{
    int rc = SS_OK;
    for (unsigned k = 0; k < o->warmup && !rc; k++) rc = launch(w, b, op, c, in, err);
    if (!rc) rc = sync_all(w, err);
    if ((rc = agree(w, rc, err))) return rc;
    mpi_barrier(w);
    uint64_t t0 = gpu_now_ns();
    for (unsigned k = 0; k < o->iters && !rc; k++) rc = launch(w, b, op, c, in, err);
    if (!rc) rc = sync_all(w, err);
    double t = (double)(gpu_now_ns() - t0) * 1e-3 / (o->iters ? o->iters : 1);
    if ((rc = agree(w, rc, err))) return rc;
    *us = mean_time(w, t);
    return SS_OK;
}

/* ---- checking ---- */

typedef struct expect {
    float base, step;
    size_t block, n, offset; /* check recv[offset .. offset + n) */
    bool on_send;            /* the result is in the send buffer (in-place reduce_scatter) */
} expect;

static int fill(float *p, size_t n, float base, float step, size_t block, cudaStream_t s, ss_err *err)
{
    if (!n) return SS_OK;
    return gpu_cu(err, kern_pattern(p, n, base, step, block ? block : 1, s), "kern_pattern", NULL);
}

/* Inputs of device i, and what its result must be. */
static int init_data(const bcoll_world *w, const cbuf *b, int i, int op, const nctx_counts *c, bool in,
                     expect *e, ss_err *err)
{
    int rank = w->rank0 + i, n = w->nranks;
    cudaStream_t st = w->streams[i];
    float *s = b->send[i], *r = b->recv[i], me = (float)(rank + 1);
    int rc = gpu_cu(err, cudaMemsetAsync(r, 0xff, b->bytes, st), "cudaMemsetAsync", "check");
    *e = (expect){(float)n, 0, c->recv, c->recv, 0, false};
    if (rc) return rc;
    switch (op) {
    case NCTX_AR:
        return fill(in ? r : s, c->send, 1, 0, 0, st, err);
    case NCTX_AG:
        *e = (expect){1, 1, c->send, c->recv, 0, false};
        return fill(in ? r + (size_t)rank * c->send : s, c->send, me, 0, 0, st, err);
    case NCTX_RS:
        if (in) *e = (expect){(float)n, 0, c->recv, c->recv, (size_t)rank * c->recv, true};
        return fill(s, c->send, 1, 0, 0, st, err);
    case NCTX_BC:
        *e = (expect){1, 0, c->recv, c->recv, 0, false};
        return rank == 0 ? fill(in ? r : s, c->send, 1, 0, 0, st, err) : SS_OK;
    case NCTX_A2A:
        *e = (expect){1, 1, c->param, c->recv, 0, false};
        return fill(s, c->send, me, 0, 0, st, err);
    default: /* sendrecv: from the previous rank */
        *e = (expect){(float)((rank + n - 1) % n + 1), 0, c->recv, c->recv, 0, false};
        return fill(s, c->send, me, 0, 0, st, err);
    }
}

static int count_wrong(const bcoll_world *w, const cbuf *b, int i, const expect *e,
                       unsigned long long *wrong, ss_err *err)
{
    cudaStream_t st = w->streams[i];
    const float *p = (e->on_send ? b->send[i] : b->recv[i]) + e->offset;
    unsigned long long h = 0;
    int rc = gpu_cu(err, cudaMemsetAsync(b->wrong[i], 0, sizeof h, st), "cudaMemsetAsync", "check");
    if (!rc && e->n)
        rc = gpu_cu(err, kern_count_wrong(p, e->n, e->base, e->step, e->block ? e->block : 1,
                                          b->wrong[i], st), "kern_count_wrong", NULL);
    if (!rc) rc = gpu_cu(err, cudaMemcpyAsync(&h, b->wrong[i], sizeof h, cudaMemcpyDeviceToHost, st),
                         "cudaMemcpyAsync", "check");
    if (!rc) rc = gpu_cu(err, cudaStreamSynchronize(st), "cudaStreamSynchronize", "check");
    *wrong += h;
    return rc;
}

/* Wrong elements over all ranks; -1: not checked (in-place p2p, no --check). */
static int check_op(const bcoll_world *w, const cbuf *b, const bcoll_opts *o, int op, const nctx_counts *c,
                    bool in, long long *wrong, ss_err *err)
{
    *wrong = -1;
    if (!o->check || (in && (op == NCTX_A2A || op == NCTX_SR))) return SS_OK;
    expect e[BCOLL_MAX_GPUS];
    int rc = SS_OK;
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        if (!rc) rc = init_data(w, b, i, op, c, in, &e[i], err);
    }
    if (!rc) rc = sync_all(w, err);
    if (!rc) rc = launch(w, b, op, c, in, err);
    if (!rc) rc = sync_all(w, err);
    unsigned long long bad = 0;
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        if (!rc) rc = count_wrong(w, b, i, &e[i], &bad, err);
    }
    if ((rc = agree(w, rc, err))) return rc;
    *wrong = (long long)sum_wrong(w, bad);
    return SS_OK;
}

/* ---- printing ---- */

static void rank_lines(const bcoll_world *w, char *all, size_t len)
{
    char mine[512];
    size_t at = 0;
    mine[0] = '\0';
    for (int i = 0; i < w->nlocal; i++) {
        struct cudaDeviceProp p;
        char bus[32];
        if (cudaGetDeviceProperties(&p, w->devs[i]) != cudaSuccess) {
            memset(&p, 0, sizeof p);
            snprintf(p.name, sizeof p.name, "?");
        }
        snprintf(bus, sizeof bus, "%04x:%02x:%02x", (unsigned)p.pciDomainID, (unsigned)p.pciBusID,
                 (unsigned)p.pciDeviceID);
        int k = nctx_rank_line(mine + at, sizeof mine - at, w->rank0 + i, (int)getpid(), w->host,
                               w->devs[i], bus, p.name);
        if (k < 0 || (size_t)k >= sizeof mine - at) break;
        at += (size_t)k;
    }
    gather_lines(w, mine, all, len);
}

/* ---- the sweep ---- */

typedef struct tally {
    double bw;
    unsigned nbw;
    long long wrong;
} tally;

static int one_size(const bcoll_world *w, const cbuf *b, const bcoll_opts *o, int op, size_t size,
                    meas *m, FILE *f, tally *t, ss_err *err)
{
    nctx_counts c = nctx_counts_of(op, size, w->nranks);
    double us[2] = {0, 0};
    long long wrong[2] = {-1, -1};
    int rc = SS_OK;
    for (int in = 0; in < 2 && !rc; in++) {
        rc = time_op(w, b, o, op, &c, in, &us[in], err);
        if (!rc) rc = check_op(w, b, o, op, &c, in, &wrong[in], err);
    }
    if (rc || !w->root) return rc;
    t->bw += nctx_row(f, op, &c, us, wrong, w->nranks);
    t->nbw += 2;
    for (int in = 0; in < 2; in++) t->wrong += wrong[in] > 0 ? wrong[in] : 0;
    fflush(f);
    if (!c.bytes) return SS_OK;
    return meas_coll(m, nctx_op_name(op), (uint32_t)w->nranks, (uint32_t)w->nodes, c.bytes, us[0], err);
}

static int sweep_op(const bcoll_world *w, const cbuf *b, const bcoll_opts *o, int op, meas *m, FILE *f,
                    long long *wrong_all, ss_err *err)
{
    char ranks[8192];
    rank_lines(w, ranks, sizeof ranks);
    nctx_run run = {op, w->nlocal, w->nranks, o->min_bytes, o->max_bytes, o->factor, o->warmup,
                    o->iters, o->check, ranks};
    if (w->root) nctx_head(f, &run);
    tally t = {0, 0, 0};
    int rc = SS_OK;
    for (uint64_t s = o->min_bytes; s <= b->bytes && !rc; s *= o->factor) {
        int late = o->deadline_ns && gpu_now_ns() > o->deadline_ns;
        if (agree(w, late, err)) {
            if (w->root) fprintf(f, "# shardsim-calib: time budget reached, sizes from %llu skipped\n",
                                 (unsigned long long)s);
            ss_err_clear(err);
            break;
        }
        rc = one_size(w, b, o, op, (size_t)s, m, f, &t, err);
        if (s > UINT64_MAX / o->factor) break;
    }
    if (rc || !w->root) return rc;
    nctx_tail(f, op, t.wrong, t.nbw ? t.bw / t.nbw : 0.0);
    fflush(f);
    *wrong_all += t.wrong;
    return SS_OK;
}

static int buffers(const bcoll_world *w, cbuf *b, uint64_t max_bytes, ss_err *err)
{
    size_t free_b = 0, total = 0;
    b->bytes = (size_t)max_bytes;
    int rc = SS_OK;
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        if (!rc) rc = gpu_cu(err, cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", NULL);
        while (!rc && b->bytes > 4096 && 2 * b->bytes > free_b / 2) b->bytes /= 2;
    }
    for (int i = 0; i < w->nlocal && !rc; i++) {
        rc = gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        if (!rc) rc = gpu_cu(err, cudaMalloc((void **)&b->send[i], b->bytes), "cudaMalloc", "send buffer");
        if (!rc) rc = gpu_cu(err, cudaMalloc((void **)&b->recv[i], b->bytes), "cudaMalloc", "recv buffer");
        if (!rc) rc = gpu_cu(err, cudaMalloc((void **)&b->wrong[i], sizeof **b->wrong), "cudaMalloc", "check");
        if (!rc) rc = gpu_cu(err, cudaMemset(b->send[i], 0, b->bytes), "cudaMemset", "send buffer");
    }
    return agree(w, rc, err);
}

static void buffers_free(const bcoll_world *w, cbuf *b, ss_err *err)
{
    for (int i = 0; i < w->nlocal; i++) {
        gpu_cu(err, cudaSetDevice(w->devs[i]), "cudaSetDevice", NULL);
        void *p[] = {b->send[i], b->recv[i], b->wrong[i]};
        for (int k = 0; k < 3; k++)
            if (p[k]) gpu_cu(err, cudaFree(p[k]), "cudaFree", "collective buffers");
    }
}

int bcoll_run(bcoll_world *w, const bcoll_opts *o, meas *m, FILE *out, ss_err *err)
{
    if (o->min_bytes < 1 || o->max_bytes < o->min_bytes || o->factor < 2)
        return ss_fail(err, SS_E_INPUT, "coll", "expected 1 <= -b <= -e and an integer -f >= 2");
    cbuf b;
    memset(&b, 0, sizeof b);
    long long wrong = 0;
    int rc = buffers(w, &b, o->max_bytes, err);
    if (!rc && w->root && b.bytes < o->max_bytes)
        fprintf(out, "# shardsim-calib: sizes stop at %zu bytes (device memory)\n", b.bytes);
    for (int op = 0; op < NCTX_NOPS && !rc; op++)
        if (o->ops & (1u << op)) rc = sweep_op(w, &b, o, op, m, out, &wrong, err);
    buffers_free(w, &b, err);
    if (!rc && wrong > 0)
        rc = ss_fail(err, HX_E_DEVICE, "coll", "%lld wrong values in the collectives' results", wrong);
    return rc ? rc : err->code;
}
