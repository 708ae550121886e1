/* mp.h - the layout body and the data-parallel runtimes it calls
 * (internal to sched/).
 *
 * A layout body (mp.c) walks one rank's pipeline schedule: micro-batches,
 * model chunks, the blocks of each chunk with their TP, CP and EP
 * collectives; under parallel.moe_a2a_overlap a forward chunk and a
 * backward chunk of two micro-batches at once, layer by layer (combined
 * 1F1B, the expert all-to-alls on stream "ep"), so the hooks below may
 * see two micro-batches' blocks interleaved. The data-parallel work
 * around that walk (gathering sharded parameters, reducing gradients,
 * gathering the updated parameters) belongs to the runtime: an mp_rt
 * table, one per runtime, that the body calls at fixed points of the
 * walk. A runtime adds only its own ops, through em; it never reorders
 * the body's.
 *
 *   setup          once, after the rank's states exist: buckets,
 *                  persistent buffers
 *   pre_forward    before a unit's first block in each micro-batch's forward
 *   pre_backward   before a unit's last block in each micro-batch's backward
 *   before_block   before every block op (to release what the block is the
 *                  last user of)
 *   grads_ready    after a unit's first block's backward: its gradients are
 *                  final for micro-batch mb (op `after` produced them)
 *   end_backward   after the last backward of the step, before the body
 *                  waits for every reduction on the reduce stream
 *   after_step     after the optimizer step `opt`: gathers of the update
 *
 * Units are the layer groups of the rank's stage (a transformer layer, the
 * embedding, the output) in model order. The rank's groups are m->g[]: the
 * dense data-parallel group G_DP (dp x cp ranks; under HSDP cut into
 * G_SHARD and G_REPL) and the expert one G_EDP. m->gsize[0] is the ranks
 * the dense part is sharded over (plan.shard_n), m->gsize[1] the expert
 * group's.
 * State bytes come from rt->state_kind and rt->at_rest; em_states checks
 * that what setup and the body allocate agrees with them.
 *
 * Every hook may be NULL (nothing to do at that point). Hooks report
 * errors through the em's sticky error.
 */
#ifndef SCHED_MP_H
#define SCHED_MP_H

#include "emit.h"

/* Per-rank groups. G_SHARD and G_REPL exist under HSDP only (the dense
 * group cut into shard groups of plan.shard_n ranks, and the ranks with the
 * same place in each): MP_NOGROUP otherwise. */
enum { G_TP, G_CP, G_DP, G_EP, G_EDP, G_FWD, G_BWD, G_SHARD, G_REPL, G_ETP, G_NKINDS };
#define MP_NOGROUP UINT32_MAX

typedef struct mp_unit {
    uint32_t b0, b1;         /* blocks [b0, b1) */
    uint64_t dense, expert;  /* elements per rank */
    uint32_t t_full, t_grad; /* unsharded params (full_shard), gradients */
    uint32_t t_shard;        /* ZeRO-2/3: the reduced gradient shard */
    uint32_t bucket;         /* runtime's bucket of the unit (runtimes with buckets) */
    uint32_t backwards;      /* micro-batches whose backward reached it */
} mp_unit;

typedef struct mp mp;

typedef struct mp_rt {
    spec_strategy strategy;
    /* The state model over the dense and the expert groups (states.h). */
    st_kind (*state_kind)(const plan *pl);
    /* Of `part` elements sharded over n ranks: the elements the rank stores
     * as parameters and the elements its optimizer steps. */
    void (*at_rest)(const plan *pl, uint64_t part, uint32_t n, uint64_t *param,
                    uint64_t *optim);
    /* true: the runtime's setup allocates the gradients (a persistent
     * buffer) and the body allocates none in backward. */
    bool persistent_grads;
    /* false: a pipeline receive holds the host until it completes
     * (Megatron's batch_p2p_sync: torch.cuda.synchronize after the batched
     * isend/irecv; DeepSpeed's and the ZeRO body's schedules alike); true:
     * the receive is a stream wait and the host runs on to issue what
     * follows, the unit's parameter gathers among it
     * (torch.distributed.pipelining: Work.wait() on an NCCL receive). */
    bool recv_on_stream;
    void (*setup)(mp *m);
    void (*pre_forward)(mp *m, mp_unit *u, uint32_t mb);
    void (*pre_backward)(mp *m, mp_unit *u, uint32_t mb);
    void (*before_block)(mp *m, mp_unit *u, uint32_t i, bool fwd);
    void (*grads_ready)(mp *m, mp_unit *u, uint32_t mb, uint32_t after);
    void (*end_backward)(mp *m);
    void (*after_step)(mp *m, uint32_t opt);
    void (*fini)(mp *m); /* frees m->rt_state */
} mp_rt;

struct mp {
    em *e;
    const plan *pl;
    const spec_parallel *par;
    const mp_rt *rt;
    uint32_t t, c, p, d;        /* coordinates of the rank */
    uint32_t g[G_NKINDS];       /* MP_NOGROUP where the dimension is 1 */
    uint32_t gin_fwd, gin_bwd;  /* receive groups (the neighbours' send groups) */
    mp_unit *u;
    uint32_t nu;
    prog_stream ep_stream;      /* the expert all-to-alls': "ep" under moe_a2a_overlap, else "tp" */
    uint32_t dep;               /* what the next compute op waits for */
    uint32_t prev_first;        /* first compute op of the previous unit */
    uint64_t part[2];           /* the stage's dense and expert elements */
    uint32_t gsize[2];          /* the dense and expert data-parallel group sizes */
    void *rt_state;             /* the runtime's own, freed by rt->fini */
    struct mp_off *off;         /* CPU activation offloading (mp_offload.c); NULL: none */
};

/* Transformer Engine's CPU activation offloading (mp_offload.c), with
 * training.cpu_offloading_num_layers: mp_off_new after the units exist
 * (m->off stays NULL without it; SS_E_NOMEM), mp_off_fwd_end after a
 * unit's forward, mp_off_bwd_begin before its backward (both no-ops
 * without offloading or outside a transformer layer), mp_off_free. */
typedef struct mp_off mp_off;
int mp_off_new(mp *m);
void mp_off_free(mp_off *o);
void mp_off_fwd_end(mp *m, mp_unit *u);
void mp_off_bwd_begin(mp *m, mp_unit *u);

/* The runtimes (mp_zero.c, mp_megatron.c, mp_mfsdp.c, mp_fsdp.c, mp_ds.c),
 * and the one a sharding section runs. */
extern const mp_rt mp_rt_zero, mp_rt_megatron, mp_rt_mfsdp, mp_rt_fsdp, mp_rt_deepspeed;
const mp_rt *mp_rt_find(const spec_sharding *sh);

/* Gradient buckets (Megatron's param-and-grad buffer buckets, DeepSpeed's
 * ipg buckets): runs of units in backward order, closed once they hold cap
 * parameters (0: never) and at a model chunk's first unit; with
 * first_chunk_only the cap applies to the model's first chunk (chunk 0)
 * alone and every other chunk is one bucket. A unit's
 * bucket is u->bucket; bucket b's lowest unit is u0, the last whose
 * gradients complete it in backward. In forward order bucket b is followed
 * by b - 1. */
typedef struct mp_bucket {
    uint32_t u0, u1; /* units [u0, u1) */
    uint64_t n[2];   /* dense and expert parameters */
    uint32_t ag;     /* its parameter all-gather, EM_NONE before it is issued */
} mp_bucket;
/* Caller frees *out with free(). Errors: out of memory (sticky in m->e). */
void mp_buckets(mp *m, uint64_t cap, bool first_chunk_only, mp_bucket **out, uint32_t *n);
/* Bucket b's gradient reduction after `after` on the reduce stream: a
 * reduce-scatter (dist) or an all-reduce of each part over its group, in
 * bytes of pl->reduce_elem; named "<what>.bucket[.experts]". */
void mp_reduce_bucket(mp *m, const mp_bucket *b, bool dist, uint32_t after, const char *what);
/* The last compute op so far (EM_NONE for none). */
uint32_t mp_last_compute(const mp *m);
/* Is unit u a transformer layer (its blocks' group "layers.N"), not the
 * embedding or the output? */
bool mp_unit_is_layer(const mp *m, const mp_unit *u);

/* How a runtime bounds the gathers that run ahead of the compute. HOST:
 * the host waits for the previous unit's compute before it gathers the
 * next (FSDP1's limit_all_gathers, DeepSpeed's fetch limiter); DEVICE: the
 * gather waits for it on the device and the host runs on (FSDP2); ISSUED:
 * the gather waits on the device for every compute op issued before it
 * (an NCCL call's stream waits for the stream it was issued from:
 * Megatron-FSDP's prefetches, issued before the current unit's kernels). */
typedef enum { MP_BOUND_HOST, MP_BOUND_DEVICE, MP_BOUND_ISSUED } mp_bound;
/* Unit u's parameters gathered before its blocks run in phase ph: a new
 * buffer u->t_full ("<prefix>.unsharded.<unit>", its padded dense and
 * expert shards in the compute dtype) filled by "<prefix>.all_gather"s,
 * dense over group g_dense of m->gsize[0] ranks and experts over G_EDP,
 * then a compute-stream "<prefix>.wait" for them. With nothing to gather
 * (groups of one) u->t_full is EM_NONE. */
void mp_gather_unit(mp *m, mp_unit *u, prog_phase ph, uint32_t g_dense, mp_bound bound,
                    const char *prefix);
/* mp_gather_unit in two: the gathers alone (their last op, EM_NONE with
 * nothing to gather), and the compute stream's "<prefix>.wait" for them,
 * for runtimes that gather a unit ahead of its compute (prefetch). */
uint32_t mp_gather_issue(mp *m, mp_unit *u, prog_phase ph, uint32_t g_dense, mp_bound bound,
                         const char *prefix);
void mp_gather_wait(mp *m, uint32_t ag, prog_phase ph, const char *prefix);

/* numel padded to a multiple of n, in bytes of elem. */
ss_bytes mp_padded(uint64_t numel, uint32_t n, uint32_t elem);
/* A collective on group g after dep (none when g is MP_NOGROUP or bytes is
 * 0: it returns dep), named "what.block". */
uint32_t mp_coll(mp *m, prog_stream st, prog_phase ph, prog_coll c, uint32_t g, ss_bytes bytes,
                 uint32_t dep, const char *what, const char *block);

#endif
