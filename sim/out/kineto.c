/* One rank's step as a Kineto (PyTorch profiler) trace. kineto.h states
 * the contract. */
#include "kineto.h"

#include "tef.h"

void kin_file_name(char *buf, size_t len, uint32_t rank) { snprintf(buf, len, "rank_%u.json", rank); }

/* CUDA's callback id of the runtime call (cupti_runtime_cbid.h), which
 * Kineto writes as "cbid". */
#define CBID_LAUNCH_KERNEL 211
#define CBID_MEMCPY_ASYNC 41

typedef struct kw {
    FILE *f;
    bool first;
    const trc *t;
    uint32_t rank, world, device; /* program rank, its world rank (prog_rank_world), GPU */
    tef_lanes lanes;
} kw;

/* {"ph":"X","cat":...,"name":...,"pid":...,"tid":...,"ts":...,"dur":...  (the
 * caller adds args and '}') */
static void x_event(kw *w, const char *cat, const char *name, uint32_t pid, uint32_t tid,
                    ss_ns ts, ss_ns dur)
{
    if (!w->first) fputc(',', w->f);
    w->first = false;
    tef_kv_str(w->f, '{', "ph", "X");
    tef_kv_str(w->f, ',', "cat", cat);
    tef_kv_str(w->f, ',', "name", name);
    tef_kv_num(w->f, ',', "pid", pid);
    tef_kv_num(w->f, ',', "tid", tid);
    tef_kv_us(w->f, ',', "ts", ts);
    tef_kv_us(w->f, ',', "dur", dur);
}

static void meta(kw *w, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
    if (!w->first) fputc(',', w->f);
    w->first = false;
    tef_kv_str(w->f, '{', "name", what);
    tef_kv_str(w->f, ',', "ph", "M");
    tef_kv_num(w->f, ',', "ts", 0);
    tef_kv_num(w->f, ',', "pid", pid);
    tef_kv_num(w->f, ',', "tid", tid);
    fputs(",\"args\":", w->f);
    tef_kv_str(w->f, '{', "name", name);
    fputs("}}", w->f);
}

static uint32_t cpu_pid(const kw *w) { return KIN_CPU_PID + w->rank; }

static uint32_t stream_id(uint32_t s, uint32_t lane) { return KIN_STREAM0 + s + PROG_NSTREAMS * lane; }

/* "ncclDevKernel_AllGather": NCCL's kernel name without the algorithm and
 * protocol, which the simulation does not pick per call. */
static void nccl_name(char *buf, size_t len, prog_coll c)
{
    static const char *const k[PROG_NCOLLS] = {
        [PROG_COLL_ALL_REDUCE] = "AllReduce",   [PROG_COLL_ALL_GATHER] = "AllGather",
        [PROG_COLL_REDUCE_SCATTER] = "ReduceScatter", [PROG_COLL_BROADCAST] = "Broadcast",
        [PROG_COLL_ALL_TO_ALL] = "SendRecv",    [PROG_COLL_SEND_RECV] = "SendRecv",
        [PROG_COLL_SEND_UP] = "SendRecv",       [PROG_COLL_SEND_DOWN] = "SendRecv",
        [PROG_COLL_REDUCE] = "Reduce",          [PROG_COLL_GATHER] = "SendRecv",
        [PROG_COLL_SCATTER] = "SendRecv"};
    snprintf(buf, len, "ncclDevKernel_%s", k[c]);
}

/* An op of the copy stream that allocates (its device copy) uploads. */
static bool uploads(const trc *t, uint32_t r, const prog_op *op)
{
    const prog_mem *m = prog_mems(t->p, r) + op->mem0;
    for (uint32_t k = 0; k < op->nmem; k++)
        if (m[k].act == PROG_ALLOC_AT_ISSUE) return true;
    return false;
}

static void kernel_args(kw *w, const prog_op *op, uint32_t i, uint32_t stream)
{
    FILE *f = w->f;
    fputs(",\"args\":", f);
    tef_kv_num(f, '{', "External id", i + 1);
    tef_kv_num(f, ',', "device", w->device);
    tef_kv_num(f, ',', "context", 1);
    tef_kv_num(f, ',', "stream", stream);
    tef_kv_num(f, ',', "correlation", i + 1);
    tef_kv_str(f, ',', "op", prog_str_get(w->t->p, op->name));
    if (op->kind == PROG_OP_COLL) {
        tef_kv_str(f, ',', "Collective name", prog_coll_name((prog_coll)op->coll));
        tef_kv_num(f, ',', "bytes", (double)op->bytes);
        /* the communicator's size: its world members, folded-away ranks included */
        tef_kv_num(f, ',', "Group size", prog_group_net(w->t->p, prog_op_group(w->t->p, w->rank, i)).size);
    }
    fputs("}}", f);
}

/* A device op: its launch on the host thread over its issue time, and its
 * kernel on its stream over the time it ran. */
static void device_op(kw *w, uint32_t i)
{
    const prog_op *op = &prog_ops(w->t->p, w->rank)[i];
    const trc_op *x = &w->t->ops[w->rank][i];
    bool copy = op->kind == PROG_OP_COMPUTE && op->stream == PROG_COPY;
    char name[64];
    const char *kname = prog_str_get(w->t->p, op->name), *cat = "kernel";
    if (op->kind == PROG_OP_COLL) {
        nccl_name(name, sizeof name, (prog_coll)op->coll);
        kname = name;
    } else if (copy) {
        kname = uploads(w->t, w->rank, op) ? "Memcpy HtoD (Pinned -> Device)"
                                           : "Memcpy DtoH (Device -> Pinned)";
        cat = "gpu_memcpy";
    }
    ss_ns launch = op->host_ns < x->issue ? x->issue - op->host_ns : 0;
    x_event(w, "cuda_runtime", copy ? "cudaMemcpyAsync" : "cudaLaunchKernel", cpu_pid(w), 1,
            launch, x->issue - launch);
    fputs(",\"args\":", w->f);
    tef_kv_num(w->f, '{', "External id", i + 1);
    tef_kv_num(w->f, ',', "cbid", copy ? CBID_MEMCPY_ASYNC : CBID_LAUNCH_KERNEL);
    tef_kv_num(w->f, ',', "correlation", i + 1);
    fputs("}}", w->f);
    uint32_t stream = stream_id(op->stream, w->lanes.lane[i]);
    x_event(w, cat, kname, w->device, stream, x->start, x->end - x->start);
    kernel_args(w, op, i, stream);
}

static void host_op(kw *w, uint32_t i)
{
    const prog_op *op = &prog_ops(w->t->p, w->rank)[i];
    const trc_op *x = &w->t->ops[w->rank][i];
    x_event(w, "cpu_op", prog_str_get(w->t->p, op->name), cpu_pid(w), 1, x->start, x->end - x->start);
    fputs(",\"args\":", w->f);
    tef_kv_num(w->f, '{', "External id", i + 1);
    fputs("}}", w->f);
}

/* Process and thread names: the host, and each lane of each device stream. */
static void names(kw *w)
{
    char buf[64];
    snprintf(buf, sizeof buf, "rank %u", w->world);
    meta(w, "process_name", cpu_pid(w), 0, buf);
    meta(w, "thread_name", cpu_pid(w), 1, "host");
    snprintf(buf, sizeof buf, "GPU %u (rank %u)", w->device, w->world);
    meta(w, "process_name", w->device, 0, buf);
    for (uint32_t s = 0; s < PROG_NSTREAMS; s++)
        for (uint32_t k = 0; s != PROG_HOST && k < w->lanes.nlanes[s]; k++) {
            snprintf(buf, sizeof buf, "stream %u (%s)", stream_id(s, k), prog_stream_name((prog_stream)s));
            meta(w, "thread_name", w->device, stream_id(s, k), buf);
        }
}

static void steps(kw *w)
{
    ss_ns step = w->t->step_ns;
    x_event(w, "user_annotation", "ProfilerStep#0", cpu_pid(w), 1, 0, step);
    fputs(",\"args\":{\"External id\":0}}", w->f);
    x_event(w, "user_annotation", "ProfilerStep#1", cpu_pid(w), 1, step, 0);
    fputs(",\"args\":{\"External id\":0}}", w->f);
}

static void header(const sum_report *r, kw *w)
{
    FILE *f = w->f;
    const spec_device *d = &r->s->topo.device;
    tef_kv_num(f, '{', "schemaVersion", 1);
    fputs(",\"distributedInfo\":", f);
    tef_kv_str(f, '{', "backend", "nccl");
    tef_kv_num(f, ',', "rank", w->world);
    tef_kv_num(f, ',', "world_size", r->nranks);
    fputs("},\"deviceProperties\":[", f);
    tef_kv_num(f, '{', "id", w->device);
    tef_kv_str(f, ',', "name", d->name);
    tef_kv_num(f, ',', "totalGlobalMem", (double)(d->cuda_total_bytes ? d->cuda_total_bytes : d->hbm_bytes));
    fputs("}]", f);
}

int kin_write(const sum_report *r, const trc *t, uint32_t rank, FILE *f, ss_err *err)
{
    uint32_t gpn = r->s->topo.gpus_per_node;
    uint32_t world = prog_rank_world(t->p, rank);
    kw w = {.f = f, .first = true, .t = t, .rank = rank, .world = world,
            .device = gpn ? spec_topo_gpu(&r->s->topo, world) % gpn : 0};
    int rc = tef_lanes_rank(&w.lanes, t, rank, err);
    if (rc) return rc;
    header(r, &w);
    fputs(",\"traceEvents\":[", f);
    names(&w);
    steps(&w);
    const prog_op *ops = prog_ops(t->p, rank);
    for (uint32_t i = 0; i < prog_nops(t->p, rank) && !ferror(f); i++) {
        const trc_op *x = &t->ops[rank][i];
        if (x->end == x->start) continue; /* a wait that was already satisfied: no kernel ran */
        if (ops[i].kind == PROG_OP_HOST) host_op(&w, i);
        else device_op(&w, i);
    }
    tef_lanes_fini(&w.lanes);
    fputc(']', f);
    tef_kv_str(f, ',', "traceName", r->s->name);
    tef_kv_str(f, ',', "displayTimeUnit", "ms");
    fputs(",\"otherData\":", f);
    tef_kv_str(f, '{', "shardsim_version", SHARDSIM_VERSION);
    fputs("}}", f);
    return ferror(f) ? ss_fail(err, SS_E_IO, NULL, "cannot write the Kineto trace") : SS_OK;
}
