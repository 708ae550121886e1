/* prog.h - the program: what every rank does in one training step.
 *
 * This is the contract between the schedulers (sched/) and the engine (eng/).
 * A scheduler builds a prog with the prog_*_add functions; the engine reads it
 * and never changes it. Nothing here knows about FSDP, DDP or JSON.
 *
 * Per rank, ops are kept in program order, which is the order the rank's host
 * thread issues them. Each op runs on one stream of its rank:
 *   - a HOST op occupies the host thread for host_ns; if it has deps, the host
 *     blocks until they completed (cudaEventSynchronize);
 *   - a device op (COMPUTE or COLL) costs host_ns of host time to issue, then
 *     waits on its device stream behind earlier ops of that stream and on its
 *     deps (cudaStreamWaitEvent); a COMPUTE op then runs for dev_ns; a COLL op
 *     starts only when every member of its group reached the matching call
 *     (the k-th op of a group on each member rank matches) and lasts as long
 *     as the network says.
 * Deps name earlier ops of the same rank (ids are indexes in program order).
 *
 * Memory: a tensor belongs to one rank. Allocation is a host action, as in
 * PyTorch's caching allocator: an op allocates its tensors when the host
 * issues it (PROG_ALLOC_AT_ISSUE), and the host may drop tensors right after
 * issuing it (PROG_FREE_AT_ISSUE, allocations of the same op come first). A
 * free that must wait for the device (record_stream, or a buffer a
 * collective on another stream still reads) is PROG_FREE_AT_END: released
 * when the op ends on its stream. Tensors marked live_at_start exist before
 * the first op (they are the state the previous step left behind).
 *
 * Ownership: prog_new allocates, prog_free releases everything, including the
 * interned strings. Pointers returned by the accessors live until prog_free.
 */
#ifndef PROG_H
#define PROG_H

#include <stdbool.h>

#include "../core/err.h"
#include "../core/ss.h"

/* Streams of a rank. "unshard" carries all-gathers and broadcasts, "reduce"
 * carries reduce-scatters and all-reduces (FSDP's own stream names); "tp"
 * the model-parallel collectives of a layout (tensor, context and expert
 * parallel), which sit on the critical path. "p2p" is unordered: its ops
 * wait for their deps and their issue only, not for each other, as the
 * pipeline's batched isend/irecv do (an ordered stream of blocking
 * sends and receives between stages would deadlock where real runtimes
 * don't). "ep" carries the expert all-to-alls where a layout overlaps them
 * with another micro-batch's computation (parallel.moe_a2a_overlap, a
 * communication stream of their own in Megatron-core); else they are on
 * "tp". */
#define PROG_STREAMS(X)                                                        \
    X(COMPUTE, "compute")                                                      \
    X(UNSHARD, "unshard")                                                      \
    X(REDUCE, "reduce")                                                        \
    X(COPY, "copy")                                                            \
    X(HOST, "host")                                                            \
    X(TP, "tp")                                                                \
    X(P2P, "p2p")                                                              \
    X(EP, "ep")

#define PROG_COLLS(X)                                                          \
    X(ALL_REDUCE, "all_reduce")                                                \
    X(ALL_GATHER, "all_gather")                                                \
    X(REDUCE_SCATTER, "reduce_scatter")                                        \
    X(BROADCAST, "broadcast")                                                  \
    X(ALL_TO_ALL, "all_to_all")                                                \
    X(SEND_RECV, "send_recv")                                                  \
    X(SEND_UP, "send_up")                                                      \
    X(SEND_DOWN, "send_down")                                                  \
    X(REDUCE, "reduce")                                                        \
    X(GATHER, "gather")                                                        \
    X(SCATTER, "scatter")

#define PROG_PHASES(X)                                                         \
    X(FORWARD, "forward")                                                      \
    X(BACKWARD, "backward")                                                    \
    X(OPTIMIZER, "optimizer")                                                  \
    X(OTHER, "other")

/* What a tensor is, for the memory ledger. */
#define PROG_MEMCATS(X)                                                        \
    X(PARAM, "params")                                                         \
    X(PARAM_UNSHARDED, "unsharded_params")                                     \
    X(GRAD, "grads")                                                           \
    X(GRAD_SHARD, "grad_shards")                                               \
    X(OPTIM, "optim_states")                                                   \
    X(ACTIVATION, "activations")                                               \
    X(COMM_BUFFER, "comm_buffers")                                             \
    X(OPT_TEMP, "optim_temps")                                                 \
    X(INPUT, "input")                                                          \
    X(RUNTIME, "runtime")

#define PROG_ENUM_(id, name) PROG_##id,
typedef enum { PROG_STREAMS(PROG_ENUM_) PROG_NSTREAMS } prog_stream;
#undef PROG_ENUM_
#define PROG_ENUM_(id, name) PROG_COLL_##id,
typedef enum { PROG_COLLS(PROG_ENUM_) PROG_NCOLLS } prog_coll;
#undef PROG_ENUM_
/* The collectives a training step runs come first; reduce, gather and
 * scatter are nccl-tests' (reduce_perf, gather_perf, scatter_perf), which
 * `shardsim coll` costs and no runtime emits, so a step's summary lists
 * the first PROG_NSTEP_COLLS only. */
#define PROG_NSTEP_COLLS (PROG_COLL_SEND_DOWN + 1)
#define PROG_ENUM_(id, name) PROG_PH_##id,
typedef enum { PROG_PHASES(PROG_ENUM_) PROG_NPHASES } prog_phase;
#undef PROG_ENUM_
#define PROG_ENUM_(id, name) PROG_MEM_##id,
typedef enum { PROG_MEMCATS(PROG_ENUM_) PROG_NMEMCATS } prog_memcat;
#undef PROG_ENUM_

typedef enum { PROG_OP_COMPUTE, PROG_OP_COLL, PROG_OP_HOST } prog_opkind;

const char *prog_stream_name(prog_stream s);
const char *prog_coll_name(prog_coll c);
const char *prog_phase_name(prog_phase p);
const char *prog_memcat_name(prog_memcat m);

typedef struct prog prog; /* opaque */

typedef struct prog_op {
    uint8_t kind;        /* prog_opkind */
    uint8_t stream;      /* prog_stream; PROG_HOST for HOST ops */
    uint8_t phase;       /* prog_phase */
    uint8_t coll;        /* prog_coll, COLL ops only */
    uint32_t group;      /* group id, COLL ops only */
    uint32_t name;       /* interned string id, see prog_str_get */
    uint64_t bytes;      /* COLL: payload per rank (see below); else 0 */
    uint64_t flops;      /* COMPUTE: floating-point operations, for reports */
    ss_ns host_ns;       /* host time to issue (device op) or to run (HOST) */
    ss_ns dev_ns;        /* COMPUTE: device time; else 0 */
    uint32_t dep0, ndep; /* deps: prog_deps(p, rank)[dep0 .. dep0+ndep) */
    uint32_t mem0, nmem; /* memory actions: prog_mem(p, rank)[mem0 ..) */
} prog_op;
/* COLL payload convention (nccl-tests "size"): all_reduce, broadcast and
 * all_to_all: the buffer size; all_gather: the output (full) size;
 * reduce_scatter: the input (full) size; send_recv: what each member sends
 * to the next member of the group (in rank order, the last to the first)
 * while it receives as much from the previous one, as nccl-tests'
 * sendrecv_perf (a 2-member group exchanges); send_up / send_down: a
 * 2-member group, the lower member sends `bytes` to the higher one (up) or
 * the higher to the lower (down), nothing the other way (pipeline stages
 * pass activations and gradients with them); reduce: the buffer size, summed
 * onto the group's first member (the root); gather: the root's output (each
 * member sends 1/n of it to the root), scatter: the root's input (1/n to
 * each member), as gather_perf and scatter_perf print it. */

typedef enum { PROG_ALLOC_AT_ISSUE, PROG_FREE_AT_ISSUE, PROG_FREE_AT_END } prog_memact;

typedef struct prog_mem {
    uint32_t tensor; /* tensor id of this rank */
    uint8_t act;     /* prog_memact */
} prog_mem;

typedef struct prog_tensor {
    uint32_t name;  /* interned string id */
    uint8_t cat;    /* prog_memcat */
    uint8_t live_at_start;
    ss_bytes bytes; /* requested bytes (the allocator model rounds) */
} prog_tensor;

typedef struct prog_group {
    uint32_t size;
    const uint32_t *ranks; /* size entries, ascending */
} prog_group;
/* A folded program (one rank per role: a layout's replica, one rank of
 * DDP or FSDP) has groups whose members are partly outside the program:
 * the engine matches the members it has (prog_group_get), the network
 * costs the whole group (prog_group_net: world ranks, ascending; the same
 * as prog_group_get for a group added without them). A group may also name
 * its copies: the groups of the folded-away ranks that run the same
 * collectives at the same times (HSDP's other replicate groups); the
 * network loads their links as well, so that contention is the whole
 * job's (prog_group_copy). */

/* What a scheduler passes to prog_op_add. Arrays are copied. */
typedef struct prog_op_spec {
    prog_opkind kind;
    prog_stream stream;
    prog_phase phase;
    prog_coll coll;
    uint32_t group;
    const char *name;
    uint64_t bytes, flops;
    ss_ns host_ns, dev_ns;
    const uint32_t *deps;
    uint32_t ndeps;
    const prog_mem *mem;
    uint32_t nmem;
} prog_op_spec;

/* Building. All return SS_OK or a negative code with err filled. */
int prog_new(prog **out, uint32_t nranks, ss_err *err);
void prog_free(prog *p); /* NULL is a no-op */
/* Program rank r is world rank r x stride (1 unless set): a layout folded
 * along tensor and context parallelism holds one rank of each group of
 * stride consecutive world ranks (plan.h's stride). Set before any group. */
void prog_set_stride(prog *p, uint32_t stride);
int prog_group_add(prog *p, const uint32_t *ranks, uint32_t n, uint32_t *gid,
                   ss_err *err);
/* A group whose network members are net[0 .. nnet), world ranks that
 * include the world rank of every rank of `ranks` (ascending). */
int prog_group_add_net(prog *p, const uint32_t *ranks, uint32_t n, const uint32_t *net,
                       uint32_t nnet, uint32_t *gid, ss_err *err);
/* Copies of group gid: ncopies groups of its network size, ranks[i * size
 * .. (i + 1) * size) each ascending world ranks, none a rank of gid's
 * network members. Replaces earlier copies. */
int prog_group_set_copies(prog *p, uint32_t gid, const uint32_t *ranks, uint32_t ncopies,
                          ss_err *err);
int prog_tensor_add(prog *p, uint32_t rank, const char *name, prog_memcat cat,
                    ss_bytes bytes, int live_at_start, uint32_t *tid,
                    ss_err *err);
/* Checks: deps name earlier ops, HOST ops are on PROG_HOST and device ops are
 * not, COLL ops name a group that contains `rank`, tensors exist. */
int prog_op_add(prog *p, uint32_t rank, const prog_op_spec *s, uint32_t *opid,
                ss_err *err);

/* Rank `rank` (nothing added to it yet) runs the program of rank src (one
 * that shares nobody's) with its groups renamed: where an op of src names
 * from[i], it names to[i] on rank. The ops, deps, memory actions and
 * tensors are src's, not copied: ranks of one role (a layout's stage) cost
 * one program. Checks that rank is in every group its collectives name.
 * A shared rank cannot be changed (prog_set_dev_ns). */
int prog_rank_share(prog *p, uint32_t rank, uint32_t src, const uint32_t *from,
                    const uint32_t *to, uint32_t n, ss_err *err);

/* Reading. Indexes are not checked beyond assert-level: callers use the
 * counts. A shared rank reads its source's arrays, so an op's `group` field
 * is the source's: prog_op_group gives the rank's own. */
/* Variation (stragglers, jitter): replace the device time of a COMPUTE op
 * after the program is built; the one change a built program accepts, on a
 * rank that shares no other's program. */
void prog_set_dev_ns(prog *p, uint32_t rank, uint32_t op, ss_ns dev_ns);

uint32_t prog_nranks(const prog *p);
/* The program's stride (prog_set_stride), and the world rank of program
 * rank r: r x the stride. */
uint32_t prog_stride(const prog *p);
uint32_t prog_rank_world(const prog *p, uint32_t r);
bool prog_rank_shared(const prog *p, uint32_t rank);
uint32_t prog_rank_source(const prog *p, uint32_t rank); /* whose program it runs: itself if none */
uint32_t prog_op_group(const prog *p, uint32_t rank, uint32_t op); /* COLL ops */
uint32_t prog_nops(const prog *p, uint32_t rank);
const prog_op *prog_ops(const prog *p, uint32_t rank);
const uint32_t *prog_deps(const prog *p, uint32_t rank);
const prog_mem *prog_mems(const prog *p, uint32_t rank);
uint32_t prog_ntensors(const prog *p, uint32_t rank);
const prog_tensor *prog_tensors(const prog *p, uint32_t rank);
uint32_t prog_ngroups(const prog *p);
prog_group prog_group_get(const prog *p, uint32_t gid);
prog_group prog_group_net(const prog *p, uint32_t gid);
bool prog_group_has(const prog *p, uint32_t gid, uint32_t rank); /* a member (binary search) */
uint32_t prog_group_ncopies(const prog *p, uint32_t gid);
prog_group prog_group_copy(const prog *p, uint32_t gid, uint32_t i); /* i < ncopies */
const char *prog_str_get(const prog *p, uint32_t id);

#endif
