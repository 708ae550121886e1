/* Model-parallel layouts: tensor (with or without sequence parallel),
 * context, expert and pipeline parallel, with DDP or ZeRO over the data-
 * parallel groups (Megatron-LM's layout; torchtitan's FSDP over dp).
 *
 * Ranks: world rank = t + tp (c + cp (p + pp d)), or t + tp (c + cp (d +
 * dp p)) in the order tp-cp-dp-pp (spec.h). A folded program
 * holds replica 0 only (world ranks below tp cp pp): every replica does the
 * same work, and the groups that leave the replica (dp, and ep when it
 * spans replicas) carry their world members for the network (prog.h).
 *
 * Per block, on the "tp" stream and on the critical path:
 *   tp, no SP: all-reduce of the output after attention / MLP / embedding,
 *              of the input gradient in backward (Megatron's f and g);
 *   tp, SP:    all-gather before the block, reduce-scatter after; backward
 *              all-gathers the output gradient and again the input (its
 *              weight gradient needs it), reduce-scatters the input gradient;
 *   cp:        all-gather of K and V before attention, reduce-scatter of
 *              their gradients after its backward (Llama 3's context
 *              parallel; the gather is exposed);
 *   ep:        all-to-all dispatch before the MoE block and combine after,
 *              the same two again in backward;
 *   etp:       after the dispatch the ETP group all-gathers the routed
 *              tokens, before the combine it reduce-scatters the outputs
 *              (Megatron-core's all-to-all token dispatcher), and in
 *              backward the same for the gradients.
 * Pipeline: Megatron's 1F1B or interleaved order of (micro-batch, chunk);
 * activations and gradients pass to the next / previous stage with one-way
 * sends on the unordered p2p stream, one group per direction and pair so
 * that the k-th send of a group meets the k-th receive.
 * Data parallel: the runtime's hooks (mp.h) around each unit, over the
 * dense group (dp x cp) and the expert group (tp cp dp / ep): canonical
 * ZeRO in mp_zero.c, FSDP in mp_fsdp.c, DeepSpeed in mp_ds.c, Megatron-
 * core's distributed optimizer in mp_megatron.c. */
#include "mp.h"
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ranks and groups ---- */

static uint32_t world_rank(const plan *pl, uint32_t t, uint32_t c, uint32_t p, uint32_t d)
{
    const spec_parallel *x = &pl->s->par;
    if (x->order == SPEC_ORDER_TP_CP_DP_PP)
        return t + x->tp * (c + x->cp * (d + pl->s->dp * p));
    return t + x->tp * (c + x->cp * (p + x->pp * d));
}

static void coords(const plan *pl, uint32_t r, uint32_t *t, uint32_t *c, uint32_t *p,
                   uint32_t *d)
{
    const spec_parallel *x = &pl->s->par;
    *t = r % x->tp, r /= x->tp;
    *c = r % x->cp, r /= x->cp;
    if (x->order == SPEC_ORDER_TP_CP_DP_PP) {
        *d = r % pl->s->dp, *p = r / pl->s->dp;
        return;
    }
    *p = r % x->pp, *d = r / x->pp;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* World members of rank r's group of `kind`, ascending; *n members. */
static void members(const plan *pl, int kind, uint32_t r, uint32_t *out, uint32_t *n)
{
    const spec_parallel *x = &pl->s->par;
    uint32_t t, c, p, d, k = 0;
    coords(pl, r, &t, &c, &p, &d);
    uint32_t dp = pl->s->dp, stage = x->tp * x->cp * dp;
    uint32_t q = t + x->tp * (c + x->cp * d); /* place among the stage's ranks */
    switch (kind) {
    case G_TP: for (uint32_t i = 0; i < x->tp; i++) out[k++] = world_rank(pl, i, c, p, d); break;
    case G_CP: for (uint32_t i = 0; i < x->cp; i++) out[k++] = world_rank(pl, t, i, p, d); break;
    case G_DP:
        for (uint32_t j = 0; j < dp; j++)
            for (uint32_t i = 0; i < x->cp; i++) out[k++] = world_rank(pl, t, i, p, j);
        break;
    case G_SHARD:
    case G_REPL: { /* the dense group's members are ordered by q = c + cp d */
        uint32_t S = pl->shard_n, me = c + x->cp * d;
        for (uint32_t j = 0; j < dp; j++)
            for (uint32_t i = 0; i < x->cp; i++) {
                uint32_t q2 = i + x->cp * j;
                bool in = kind == G_SHARD ? q2 / S == me / S : q2 % S == me % S;
                if (in) out[k++] = world_rank(pl, t, i, p, j);
            }
        break;
    }
    case G_EP:
    case G_EDP:
    case G_ETP: /* the stage's ranks as etp x ep x edp, etp fastest (spec.h) */
        for (uint32_t q2 = 0; q2 < stage; q2++) {
            uint32_t e = x->etp, b = x->ep * x->etp;
            bool in = kind == G_ETP  ? q2 / e == q / e
                      : kind == G_EP ? q2 / b == q / b && q2 % e == q % e
                                     : q2 % b == q % b;
            if (!in) continue;
            uint32_t t2 = q2 % x->tp, c2 = (q2 / x->tp) % x->cp, d2 = q2 / (x->tp * x->cp);
            out[k++] = world_rank(pl, t2, c2, p, d2);
        }
        break;
    default: { /* G_FWD: r and the next chunk's stage; G_BWD: the previous one and r */
        uint32_t o = kind == G_FWD ? (p + 1) % x->pp : (p + x->pp - 1) % x->pp;
        out[k++] = r;
        out[k++] = world_rank(pl, t, c, o, d);
    }
    }
    *n = k;
    qsort(out, k, sizeof *out, cmp_u32);
}

/* The program rank of world rank w (plan.h's stride), or MP_NOGROUP where
 * w is folded away. */
static uint32_t prog_of(const plan *pl, uint32_t w)
{
    return w < pl->n && w % pl->stride == 0 ? w / pl->stride : MP_NOGROUP;
}

/* The world rank of program rank r: prog_of's inverse. */
static uint32_t world_of(const plan *pl, uint32_t r) { return r * pl->stride; }

static bool has_sim(const plan *pl, const uint32_t *mem, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (prog_of(pl, mem[i]) != MP_NOGROUP) return true;
    return false;
}

static bool has_rank(const uint32_t *mem, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mem[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && mem[lo] == v;
}

/* A folded group's copies: the groups of `kind` that the ranks folded away
 * in w's role call where w calls mem[0 .. n) (w's stage peers in replica
 * 0, the same ranks of the other replicas), each distinct group that
 * holds no simulated rank once. They run the same collectives at the same
 * times, so the network loads them too. The kinds but the pipeline's
 * send pairs partition the ranks, so a rank in w's group or in a copy
 * already taken calls that group: seen[] (one flag per world rank, all
 * clear on entry and on return) marks the copies' members, and only the
 * other ranks' groups are looked up. */
static int add_copies(const plan *pl, prog *pg, int kind, uint32_t w, uint32_t gid,
                      const uint32_t *mem, uint32_t n, uint8_t *seen, ss_err *err)
{
    uint32_t dp = pl->n < pl->world ? pl->s->dp : 1, S = pl->stride, m;
    bool part = kind != G_FWD && kind != G_BWD;
    uint32_t *cp = malloc((size_t)dp * S * n * sizeof *cp), *chk = malloc(n * sizeof *chk);
    uint32_t nc = 0;
    int rc = cp && chk ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint64_t j = 0; !rc && j < dp; j++)
        for (uint32_t k = j ? 0 : 1; !rc && k < S; k++) {
            uint64_t v = w + k + j * pl->replica;
            if (v >= pl->world || (part && (seen[v] || has_rank(mem, n, (uint32_t)v)))) continue;
            members(pl, kind, (uint32_t)v, chk, &m);
            if (m != n)
                rc = ss_fail(err, SS_E_INTERNAL, NULL, "folding: rank %llu's group has %u "
                             "members, rank %u's %u", (unsigned long long)v, m, w, n);
            if (rc || chk[0] == mem[0] || seen[chk[0]] || has_sim(pl, chk, n)) continue;
            for (uint32_t i = 0; i < (part ? n : 1); i++) seen[chk[i]] = 1;
            memcpy(cp + (size_t)nc++ * n, chk, n * sizeof *chk);
        }
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t i = 0; i < (part ? n : 1); i++) seen[cp[(size_t)c * n + i]] = 0;
    if (!rc && nc) rc = prog_group_set_copies(pg, gid, cp, nc, err);
    free(cp);
    free(chk);
    return rc;
}

/* Every program rank's group of `kind`, made once by its lowest present
 * member; the engine's members are the program ranks among the world
 * members. Folded, a group carries the groups of the folded-away ranks
 * that mirror it as copies, so that the network sees the whole job's
 * traffic. */
static int make_groups(const plan *pl, prog *pg, int kind, uint32_t *gid, uint32_t *buf,
                       uint32_t *pres, uint8_t *seen, ss_err *err)
{
    for (uint32_t r = 0; r < pl->nsim; r++) gid[r] = MP_NOGROUP;
    if ((kind == G_SHARD || kind == G_REPL) && pl->shard_n == pl->dense_dp) return SS_OK;
    bool pair = kind == G_FWD || kind == G_BWD, folded = pl->nsim < pl->world;
    for (uint32_t r = 0; r < pl->nsim; r++) {
        if (gid[r] != MP_NOGROUP && !pair) continue;
        uint32_t n, np = 0, id, w = world_of(pl, r);
        members(pl, kind, w, buf, &n);
        if (n < 2 || (pair && buf[0] == buf[1])) continue;
        for (uint32_t i = 0; i < n; i++)
            if (prog_of(pl, buf[i]) != MP_NOGROUP) pres[np++] = prog_of(pl, buf[i]);
        int rc = np == n && pl->stride == 1 ? prog_group_add(pg, pres, np, &id, err)
                                            : prog_group_add_net(pg, pres, np, buf, n, &id, err);
        if (!rc && folded) rc = add_copies(pl, pg, kind, w, id, buf, n, seen, err);
        if (rc) return rc;
        if (pair) gid[r] = id;
        else
            for (uint32_t i = 0; i < np; i++) gid[pres[i]] = id;
    }
    return SS_OK;
}

/* ---- data parallel ---- */

static void stage_numel(const plan *pl, uint32_t p, uint64_t *dense, uint64_t *expert)
{
    *dense = *expert = 0;
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        if (pl->blocks[i].chunk % pl->s->par.pp != p) continue;
        *dense += pl->blocks[i].numel - pl->blocks[i].expert_numel;
        *expert += pl->blocks[i].expert_numel;
    }
}

static void st_add(st_bytes *a, const st_bytes *b)
{
    st_amount *x[] = {&a->param, &a->grad, &a->master, &a->optim};
    const st_amount *y[] = {&b->param, &b->grad, &b->master, &b->optim};
    for (int i = 0; i < 4; i++) x[i]->logical += y[i]->logical, x[i]->physical += y[i]->physical;
    a->total_physical += b->total_physical;
}

int mp_states(const plan *pl, uint32_t rank, st_bytes *out, ss_err *err)
{
    const spec_parallel *x = &pl->s->par;
    uint32_t t, c, p, d;
    coords(pl, rank, &t, &c, &p, &d);
    uint64_t dense, expert;
    stage_numel(pl, p, &dense, &expert);
    uint32_t q = t + x->tp * (c + x->cp * d);
    st_input in = {.kind = mp_rt_find(&pl->s->shard)->state_kind(pl), .n = pl->shard_n,
                   .rank = (c + x->cp * d) % pl->shard_n, .numels = &dense, .count = 1, .prec = pl->s->prec,
                   .opt = pl->s->opt};
    *out = (st_bytes){0};
    int rc = st_compute(&in, out, err);
    if (rc || !expert) return rc;
    st_bytes e;
    in.n = pl->expert_dp, in.rank = q / (x->ep * x->etp), in.numels = &expert;
    rc = st_compute(&in, &e, err);
    if (!rc) st_add(out, &e);
    return rc;
}

/* ---- op helpers ---- */

/* A buffer the collective being built fills for the next block op, which
 * releases it. */
static void gathered(mp *m, ss_bytes bytes, const char *what)
{
    uint32_t t = em_tensor(m->e, PROG_MEM_COMM_BUFFER, bytes, false, "%s", what);
    em_mem(m->e, t, PROG_ALLOC_AT_ISSUE);
    em_free_after_block(m->e, t, PROG_FREE_AT_ISSUE);
}

/* A collective on group g (none when the dimension is 1: it returns dep);
 * with `buffer`, it gathers into a new buffer for the next block. */
static uint32_t coll_buf(mp *m, prog_stream st, prog_phase ph, prog_coll c, uint32_t g,
                         ss_bytes bytes, uint32_t dep, const char *what, const char *block,
                         const char *buffer)
{
    if (g == MP_NOGROUP || !bytes) return dep;
    em_begin(m->e, PROG_OP_COLL, st, ph, "%s.%s", what, block);
    em_coll(m->e, c, bytes);
    em_group(m->e, g);
    em_dep(m->e, dep);
    if (buffer) gathered(m, bytes, buffer);
    return em_end(m->e);
}

uint32_t mp_coll(mp *m, prog_stream st, prog_phase ph, prog_coll c, uint32_t g, ss_bytes bytes,
                 uint32_t dep, const char *what, const char *block)
{
    return coll_buf(m, st, ph, c, g, bytes, dep, what, block, NULL);
}

static bool sp_block(const mp *m, const plan_block *b)
{
    return m->par->sequence_parallel && b->tp_bytes && strcmp(b->name, "embed") &&
           strcmp(b->name, "norm");
}

/* The sequence-parallel gather of a block's input (into a buffer the block
 * frees). Under tp_comm_overlap the block waits for none of it: Transformer
 * Engine's all-gather + GEMM overlap computes on the rank's own chunk first
 * while the others arrive round the ring (userbuffers' split ring
 * exchange), so the gather runs on the TP stream while the block computes,
 * as a first chunk of 1/tp and the rest, and *rest is the op that whoever
 * needs the whole gather waits for (the block's consumers: a block slower
 * than its gather exposes nothing, a faster one the difference); else the
 * block waits for the whole gather and *rest is EM_NONE. */
static uint32_t tp_gather(mp *m, const plan_block *b, prog_phase ph, uint32_t dep,
                          const char *what, const char *buffer, uint32_t *rest)
{
    ss_bytes bytes = b->tp_ag_bytes, tp = m->par->tp;
    *rest = EM_NONE;
    if (!m->par->tp_comm_overlap)
        return coll_buf(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_TP], bytes, dep, what,
                        b->name, buffer);
    uint32_t first = coll_buf(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_TP], bytes / tp, dep,
                              what, b->name, buffer);
    *rest = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_TP], bytes - bytes / tp, first,
                    "tp.overlap.all_gather", b->name);
    return dep;
}

static uint32_t tp_pre(mp *m, const plan_block *b, prog_phase ph, uint32_t *rest)
{
    *rest = EM_NONE;
    if (!sp_block(m, b)) return m->dep;
    return tp_gather(m, b, ph, m->dep, "tp.all_gather", "tp.gathered", rest);
}

/* The collective after a block: forward g (or reduce-scatter), backward
 * f's all-reduce (or reduce-scatter); none after the output head in
 * forward or the embedding in backward (nothing flows there). Under
 * tp_comm_overlap the reduce-scatter's first tp - 1 chunks run while the
 * block computes (after `rest`, the overlapped gather) and only the last
 * follows it; without a collective here the next op still waits for rest. */
static uint32_t tp_post(mp *m, const plan_block *b, prog_phase ph, uint32_t op, uint32_t rest)
{
    bool sp = m->par->sequence_parallel, fwd = ph == PROG_PH_FORWARD;
    bool none = !b->tp_bytes || !strcmp(b->name, "norm") ||
                (fwd && !strcmp(b->name, "head")) || (!fwd && !strcmp(b->name, "embed"));
    if (none && rest == EM_NONE) return op;
    if (none) {
        em_marker_begin(m->e, PROG_COMPUTE, ph, "tp.overlap.wait");
        em_dep(m->e, op);
        em_dep(m->e, rest);
        return em_end(m->e);
    }
    ss_bytes bytes = b->tp_bytes;
    if (sp && m->par->tp_comm_overlap) {
        ss_bytes last = bytes / m->par->tp;
        mp_coll(m, PROG_TP, ph, PROG_COLL_REDUCE_SCATTER, m->g[G_TP], bytes - last, rest,
                "tp.overlap.reduce_scatter", b->name);
        bytes = last;
    }
    return mp_coll(m, PROG_TP, ph, sp ? PROG_COLL_REDUCE_SCATTER : PROG_COLL_ALL_REDUCE,
                   m->g[G_TP], bytes, op, sp ? "tp.reduce_scatter" : "tp.all_reduce", b->name);
}

static bool is_attn(const plan_block *b) { return strstr(b->name, ".attn") != NULL; }

/* One exchange of K and V under PyTorch's context_parallel: rotate method
 * allgather (cp_comm_type all_gather, torchtitan's default), the whole of
 * them gathered once into a buffer the block frees; alltoall (p2p), the
 * other cp - 1 chunks passed round the ring. */
static uint32_t torch_cp_kv(mp *m, const plan_block *b, prog_phase ph, uint32_t dep,
                            uint32_t times)
{
    ss_bytes chunk = b->cp_bytes / m->par->cp;
    bool gather = m->par->cp_comm == SPEC_CP_ALL_GATHER;
    em_begin(m->e, PROG_OP_COLL, PROG_TP, ph, "%s.%s", gather ? "cp.all_gather_kv" : "cp.ring_kv",
             b->name);
    em_coll(m->e, gather ? PROG_COLL_ALL_GATHER : PROG_COLL_SEND_RECV,
            times * (gather ? b->cp_bytes : chunk * (m->par->cp - 1)));
    em_group(m->e, m->g[G_CP]);
    em_dep(m->e, dep);
    gathered(m, gather ? b->cp_bytes : 2 * chunk, gather ? "cp.kv" : "cp.ring_buffers");
    return em_end(m->e);
}

/* PyTorch's context_parallel (spec_cp_torch; plan_arch.c, torch_cp_passes):
 * the first SDPA call runs on the rank's own K and V, so the exchange runs
 * beside the block, and *ring is what the block's successor waits for
 * (forward through a join, backward through the last send, bwd_post).
 * Backward re-runs a fully recomputed layer's forward first, with its own
 * exchange, then exchanges K and V again for the backward: the two run back
 * to back on the stream and are costed as one collective of both (a
 * latency left out; one buffer, the recomputation's freed before the
 * backward's), then dK and dV go round the ring in fp32: a step's send
 * after each SDPA backward, the last one's after the block. */
static uint32_t torch_cp_pre(mp *m, const plan_block *b, prog_phase ph, uint32_t dep,
                             uint32_t *ring)
{
    if (m->g[G_CP] == MP_NOGROUP) return dep;
    bool bwd = ph == PROG_PH_BACKWARD;
    uint32_t op = torch_cp_kv(m, b, ph, dep, bwd && b->recompute_full ? 2 : 1);
    if (bwd) {
        em_begin(m->e, PROG_OP_COLL, PROG_TP, ph, "cp.ring_dkv.%s", b->name);
        em_coll(m->e, PROG_COLL_SEND_RECV, b->cp_dkv_bytes * (m->par->cp - 1));
        em_group(m->e, m->g[G_CP]);
        em_dep(m->e, op);
        gathered(m, 2 * b->cp_dkv_bytes, "cp.ring_dkv_buffers");
        op = em_end(m->e);
    }
    *ring = op;
    return dep;
}

/* Context parallel before attention, Transformer Engine's (PyTorch's is
 * torch_cp_pre). all_gather: K and V gathered (into a buffer the block
 * frees) before it runs. p2p: the ring passes the other
 * cp - 1 KV chunks (send/recv over the CP group) while the attention of the
 * chunks already there runs; its first chunk is local, so attention waits
 * for nothing and *ring is what the next op must wait for. Backward passes
 * K, V and their gradients round the ring: twice the bytes, and no
 * reduce-scatter after. */
static uint32_t cp_pre(mp *m, const plan_block *b, prog_phase ph, uint32_t dep, uint32_t *ring)
{
    *ring = EM_NONE;
    if (!is_attn(b) || !b->cp_bytes) return dep;
    if (b->cp_dkv_bytes) return torch_cp_pre(m, b, ph, dep, ring);
    if (m->par->cp_comm == SPEC_CP_ALL_GATHER)
        return coll_buf(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_CP], b->cp_bytes, dep,
                        "cp.all_gather_kv", b->name, "cp.kv");
    ss_bytes chunk = b->cp_bytes / m->par->cp, k = ph == PROG_PH_BACKWARD ? 2 : 1;
    if (m->g[G_CP] == MP_NOGROUP) return dep;
    em_begin(m->e, PROG_OP_COLL, PROG_TP, ph, "cp.ring_kv.%s", b->name);
    em_coll(m->e, PROG_COLL_SEND_RECV, k * chunk * (m->par->cp - 1));
    em_group(m->e, m->g[G_CP]);
    em_dep(m->e, dep);
    gathered(m, 2 * chunk * k, "cp.ring_buffers"); /* double-buffered chunks */
    *ring = em_end(m->e);
    return dep;
}

/* The op after a block that must also wait for `also` (a ring). */
static uint32_t join(mp *m, prog_phase ph, uint32_t op, uint32_t also)
{
    if (also == EM_NONE) return op;
    em_marker_begin(m->e, PROG_COMPUTE, ph, "cp.ring_wait");
    em_dep(m->e, op);
    em_dep(m->e, also);
    return em_end(m->e);
}

/* Megatron-core's alltoall token dispatcher before it dispatches (token_
 * dispatcher.py, MoEAlltoAllTokenDispatcher, core_r0.15 at 0d8e0714;
 * DECISIONS 146): the router's tokens-per-expert all-reduce over the TP
 * group (the aux loss), and, dropless, the all-gather of every rank's
 * per-expert counts over the EP group, which the host waits for
 * (d2h_event.synchronize() before the all-to-all, the split sizes being
 * host values): a rank's host cannot issue the dispatch until the device
 * has reached it. Padded to capacity, the sizes are known: no wait. */
static uint32_t ep_preprocess(mp *m, const plan_block *b, prog_phase ph, uint32_t dep)
{
    bool re = ph == PROG_PH_BACKWARD; /* a full recomputation's forward */
    dep = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_REDUCE, m->g[G_TP], b->moe_tpe_bytes, dep,
                  re ? "recompute.moe.tokens_per_expert.all_reduce"
                     : "moe.tokens_per_expert.all_reduce", b->name);
    if (!b->ep_counts_bytes) return dep;
    uint32_t g = m->par->ep > 1 ? m->g[G_EP] : m->g[G_ETP];
    dep = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, g, b->ep_counts_bytes * m->par->ep, dep,
                  re ? "recompute.ep.counts.all_gather" : "ep.counts.all_gather", b->name);
    em_begin(m->e, PROG_OP_HOST, PROG_HOST, ph, "%sep.counts.synchronize.%s", re ? "recompute." : "",
             b->name);
    em_cost(m->e, 0, 0, 0);
    em_dep(m->e, dep);
    em_end(m->e);
    return dep;
}

/* A dispatch's all-to-all bytes: the tokens', and Megatron's fp32 routing
 * probabilities', which it sends by an all-to-all of their own right after
 * on the same stream and group; costed as one collective (the second
 * call's launch latency, tens of microseconds, left out: one op less per
 * layer and micro-batch). */
static ss_bytes dispatch_bytes(const plan_block *b, bool dispatch)
{
    return b->ep_bytes + (dispatch ? b->ep_probs_bytes : 0);
}

/* Into a MoE block: the all-to-all over the EP group, then the ETP group's
 * all-gather of what arrived. */
static uint32_t ep_in(mp *m, const plan_block *b, prog_phase ph, uint32_t dep, const char *a2a,
                      const char *gather, bool dispatch)
{
    if (dispatch) dep = ep_preprocess(m, b, ph, dep);
    if (b->ep_bytes)
        dep = mp_coll(m, m->ep_stream, ph, PROG_COLL_ALL_TO_ALL, m->g[G_EP],
                      dispatch_bytes(b, dispatch), dep, a2a, b->name);
    if (b->etp_bytes)
        dep = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_ETP], b->etp_bytes, dep, gather,
                      b->name);
    return dep;
}

/* Out of a MoE block: the ETP group's reduce-scatter, then the all-to-all
 * back over the EP group (undoing a dispatch in backward, with the
 * probabilities' gradient). */
static uint32_t ep_out(mp *m, const plan_block *b, prog_phase ph, uint32_t op, const char *scatter,
                       const char *a2a, bool dispatch)
{
    if (b->etp_bytes)
        op = mp_coll(m, PROG_TP, ph, PROG_COLL_REDUCE_SCATTER, m->g[G_ETP], b->etp_bytes, op,
                     scatter, b->name);
    if (b->ep_bytes)
        op = mp_coll(m, m->ep_stream, ph, PROG_COLL_ALL_TO_ALL, m->g[G_EP],
                     dispatch_bytes(b, dispatch), op, a2a, b->name);
    return op;
}

/* A block in three parts: the collectives before its op (pre), the op
 * (run), those after it (post). One part after another is the block; the
 * combined schedule (moe_a2a_overlap) puts another micro-batch's parts
 * between them. What one part hands the next rides in blk. */
typedef struct blk {
    uint32_t i;         /* the block */
    uint32_t dep, rest; /* pre -> run: what the op waits for; the overlapped TP gather */
    uint32_t ring;      /* the CP ring the op's successor also waits for */
    uint32_t grad;      /* backward: the gradient tensor the op allocates, or EM_NONE */
} blk;

static void fwd_pre(mp *m, blk *k)
{
    const plan_block *b = &m->pl->blocks[k->i];
    k->dep = tp_pre(m, b, PROG_PH_FORWARD, &k->rest);
    k->dep = cp_pre(m, b, PROG_PH_FORWARD, k->dep, &k->ring);
    k->dep = ep_in(m, b, PROG_PH_FORWARD, k->dep, "ep.dispatch", "etp.all_gather", true);
}

static void fwd_run(mp *m, blk *k)
{
    k->dep = join(m, PROG_PH_FORWARD, em_fwd_block(m->e, k->i, k->dep), k->ring);
}

static void fwd_post(mp *m, const blk *k)
{
    const plan_block *b = &m->pl->blocks[k->i];
    uint32_t op = ep_out(m, b, PROG_PH_FORWARD, k->dep, "etp.reduce_scatter", "ep.combine", false);
    m->dep = tp_post(m, b, PROG_PH_FORWARD, op, k->rest);
}

/* Full recomputation re-runs a layer block's forward inside its backward
 * op, and with it the forward's collectives (Megatron's recompute re-enters
 * the TP, CP and MoE token-dispatcher communication): issued before the
 * backward op, in forward order, on the critical path as in forward; one
 * that stops early (plan_block.recompute_stops) leaves out the last
 * block's output reduction with its down projection. */
static uint32_t recompute_colls(mp *m, const plan_block *b, uint32_t dep)
{
    if (!b->recompute_full) return dep;
    const prog_phase ph = PROG_PH_BACKWARD;
    bool sp = m->par->sequence_parallel;
    if (sp && b->tp_bytes)
        dep = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_TP], b->tp_ag_bytes, dep,
                      "recompute.tp.all_gather", b->name);
    if (is_attn(b) && b->cp_bytes && !b->cp_dkv_bytes) /* torch's: torch_cp_pre */
        dep = mp_coll(m, PROG_TP, ph, m->par->cp_comm == SPEC_CP_P2P ? PROG_COLL_SEND_RECV
                                                                     : PROG_COLL_ALL_GATHER,
                      m->g[G_CP], m->par->cp_comm == SPEC_CP_P2P
                                      ? b->cp_bytes / m->par->cp * (m->par->cp - 1)
                                      : b->cp_bytes,
                      dep, "recompute.cp.kv", b->name);
    dep = ep_in(m, b, ph, dep, "recompute.ep.dispatch", "recompute.etp.all_gather", true);
    dep = ep_out(m, b, ph, dep, "recompute.etp.reduce_scatter", "recompute.ep.combine", false);
    /* an early stop ends before the output projection and its reduction */
    if (b->tp_bytes && !b->recompute_stops)
        dep = mp_coll(m, PROG_TP, ph, sp ? PROG_COLL_REDUCE_SCATTER : PROG_COLL_ALL_REDUCE,
                      m->g[G_TP], b->tp_bytes, dep,
                      sp ? "recompute.tp.reduce_scatter" : "recompute.tp.all_reduce", b->name);
    return dep;
}

static void bwd_pre(mp *m, blk *k)
{
    const plan_block *b = &m->pl->blocks[k->i];
    uint32_t dep = recompute_colls(m, b, m->dep), in_rest;
    k->rest = EM_NONE;
    if (m->par->sequence_parallel && b->tp_bytes && strcmp(b->name, "norm")) {
        if (strcmp(b->name, "head")) /* the output gradient, gathered */
            dep = tp_gather(m, b, PROG_PH_BACKWARD, dep, "tp.all_gather.grad", NULL, &k->rest);
        /* the input, for the weight gradient (computed after the input
         * gradient: overlapped whole under tp_comm_overlap); PyTorch's
         * DTensor kept the gathered input instead (plan_arch.c, sp_input) */
        if (sp_block(m, b) && !spec_tp_dtensor(m->pl->s)) {
            uint32_t in = tp_gather(m, b, PROG_PH_BACKWARD, m->dep, "tp.all_gather",
                                    "tp.gathered", &in_rest);
            if (!m->par->tp_comm_overlap) dep = in;
            else k->rest = in_rest;
        }
    }
    dep = cp_pre(m, b, PROG_PH_BACKWARD, dep, &k->ring);
    k->dep = ep_in(m, b, PROG_PH_BACKWARD, dep, "ep.combine_grad", "etp.all_gather_grad", false);
}

static void bwd_run(mp *m, blk *k)
{
    uint32_t op = em_bwd_block(m->e, k->i, k->dep, &k->grad, k->grad == EM_NONE ? 0 : 1);
    /* PyTorch's CP ring: its last send (bwd_post), behind it on the same
     * stream, is what the next block waits for */
    k->dep = m->pl->blocks[k->i].cp_dkv_bytes ? op : join(m, PROG_PH_BACKWARD, op, k->ring);
}

static void bwd_post(mp *m, const blk *k)
{
    const plan_block *b = &m->pl->blocks[k->i];
    uint32_t op = ep_out(m, b, PROG_PH_BACKWARD, k->dep, "etp.reduce_scatter_grad",
                         "ep.dispatch_grad", true);
    if (is_attn(b) && b->cp_dkv_bytes) /* after the block and, on the stream, the ring */
        op = mp_coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_SEND_RECV, m->g[G_CP],
                     b->cp_dkv_bytes, op, "cp.ring_dkv_last", b->name);
    else if (is_attn(b) && b->cp_bytes && m->par->cp_comm == SPEC_CP_ALL_GATHER)
        op = mp_coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_REDUCE_SCATTER, m->g[G_CP],
                     b->cp_bytes, op, "cp.reduce_scatter_dkv", b->name);
    m->dep = tp_post(m, b, PROG_PH_BACKWARD, op, k->rest);
}

/* ---- units ---- */

ss_bytes mp_padded(uint64_t numel, uint32_t n, uint32_t elem)
{
    return ss_div_ceil(numel, n) * n * elem;
}

void mp_buckets(mp *m, uint64_t cap, bool first_chunk_only, mp_bucket **out, uint32_t *n)
{
    mp_bucket *bk = calloc(m->nu ? m->nu : 1, sizeof *bk);
    *out = bk, *n = 0;
    if (!bk) {
        em_nomem(m->e);
        return;
    }
    for (uint32_t k = m->nu; k-- > 0;) {
        mp_unit *u = &m->u[k];
        mp_bucket *b = *n ? &bk[*n - 1] : NULL;
        uint32_t chunk = m->pl->blocks[u->b0].chunk;
        bool same_chunk = b && m->pl->blocks[m->u[b->u0].b0].chunk == chunk;
        bool capped = cap && (!first_chunk_only || chunk == 0);
        bool full = b && capped && b->n[0] + b->n[1] >= cap;
        if (!b || !same_chunk || full) {
            b = &bk[(*n)++];
            *b = (mp_bucket){.u0 = k + 1, .u1 = k + 1, .ag = EM_NONE};
        }
        b->u0 = k;
        b->n[0] += u->dense, b->n[1] += u->expert;
        u->bucket = (uint32_t)(b - bk);
    }
}

void mp_reduce_bucket(mp *m, const mp_bucket *b, bool dist, uint32_t after, const char *what)
{
    char name[64];
    snprintf(name, sizeof name, "%s.%s", what, dist ? "reduce_scatter" : "all_reduce");
    for (int k = 0; k < 2; k++) {
        ss_bytes bytes = dist ? mp_padded(b->n[k], m->gsize[k], m->pl->reduce_elem)
                              : b->n[k] * m->pl->reduce_elem;
        mp_coll(m, PROG_REDUCE, PROG_PH_BACKWARD,
                dist ? PROG_COLL_REDUCE_SCATTER : PROG_COLL_ALL_REDUCE, m->g[k ? G_EDP : G_DP],
                bytes, after, name, k ? "bucket.experts" : "bucket");
    }
}

uint32_t mp_gather_issue(mp *m, mp_unit *u, prog_phase ph, uint32_t g_dense, mp_bound bound,
                         const char *prefix)
{
    const plan *pl = m->pl;
    const char *unit = pl->blocks[u->b0].group;
    /* the buffer holds the parts gathered: a part whose group is one
     * rank stays in the rank's own parameters */
    ss_bytes bytes = (g_dense != MP_NOGROUP ? mp_padded(u->dense, m->gsize[0], pl->compute_elem) : 0) +
                     (m->g[G_EDP] != MP_NOGROUP ? mp_padded(u->expert, m->gsize[1], pl->compute_elem) : 0);
    u->t_full = em_tensor(m->e, PROG_MEM_PARAM_UNSHARDED, bytes, false, "%s.unsharded.%s",
                          prefix, unit);
    uint32_t last = EM_NONE, issued = bound == MP_BOUND_ISSUED ? mp_last_compute(m) : EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = k ? m->g[G_EDP] : g_dense;
        if (!n || g == MP_NOGROUP) continue;
        if (last == EM_NONE && m->prev_first != EM_NONE && bound == MP_BOUND_HOST) {
            /* at most two units unsharded: the host waits before it
             * allocates the next buffer */
            em_begin(m->e, PROG_OP_HOST, PROG_HOST, ph, "%s.rate_limit", prefix);
            em_cost(m->e, 0, 0, 0);
            em_dep(m->e, m->prev_first);
            em_end(m->e);
        }
        em_begin(m->e, PROG_OP_COLL, PROG_UNSHARD, ph, "%s.all_gather.%s%s", prefix, unit,
                 k ? ".experts" : "");
        em_coll(m->e, PROG_COLL_ALL_GATHER, mp_padded(n, m->gsize[k], pl->compute_elem));
        em_group(m->e, g);
        if (bound == MP_BOUND_DEVICE) em_dep(m->e, m->prev_first);
        em_dep(m->e, issued);
        if (last == EM_NONE) em_mem(m->e, u->t_full, PROG_ALLOC_AT_ISSUE);
        last = em_end(m->e);
    }
    if (last == EM_NONE) u->t_full = EM_NONE;
    return last;
}

void mp_gather_wait(mp *m, uint32_t ag, prog_phase ph, const char *prefix)
{
    if (ag == EM_NONE) return;
    char wait[32];
    snprintf(wait, sizeof wait, "%s.wait", prefix);
    em_marker_begin(m->e, PROG_COMPUTE, ph, wait);
    em_dep(m->e, ag);
    em_end(m->e);
}

void mp_gather_unit(mp *m, mp_unit *u, prog_phase ph, uint32_t g_dense, mp_bound bound,
                    const char *prefix)
{
    mp_gather_wait(m, mp_gather_issue(m, u, ph, g_dense, bound, prefix), ph, prefix);
}

uint32_t mp_last_compute(const mp *m)
{
    const prog_op *ops = prog_ops(m->e->p, m->e->rank);
    for (uint32_t q = prog_nops(m->e->p, m->e->rank); q-- > 0;)
        if (ops[q].stream == PROG_COMPUTE) return q;
    return EM_NONE;
}

const mp_rt *mp_rt_find(const spec_sharding *sh)
{
    switch (sh->strategy) {
    case SPEC_MEGATRON: return sh->mcore.fsdp ? &mp_rt_mfsdp : &mp_rt_megatron;
    case SPEC_DEEPSPEED: return &mp_rt_deepspeed;
    case SPEC_FSDP2:
    case SPEC_SHARD_GRAD_OP:
    case SPEC_HYBRID_SHARD:
    case SPEC_HYBRID_SHARD_ZERO2: return &mp_rt_fsdp;
    default: return &mp_rt_zero;
    }
}

static int make_units(mp *m)
{
    const plan *pl = m->pl;
    m->u = calloc(pl->nblocks ? pl->nblocks : 1, sizeof *m->u);
    if (!m->u) return ss_fail(m->e->err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        const plan_block *b = &pl->blocks[i];
        if (b->chunk % m->par->pp != m->p) continue;
        mp_unit *u = m->nu ? &m->u[m->nu - 1] : NULL;
        if (!u || u->b1 != i || strcmp(pl->blocks[u->b0].group, b->group) ||
            pl->blocks[u->b0].chunk != b->chunk) {
            u = &m->u[m->nu++];
            *u = (mp_unit){.b0 = i, .b1 = i, .t_full = EM_NONE, .t_grad = EM_NONE,
                           .t_shard = EM_NONE};
        }
        u->b1 = i + 1;
        u->dense += b->numel - b->expert_numel;
        u->expert += b->expert_numel;
    }
    return SS_OK;
}

static mp_unit *unit_of(mp *m, uint32_t i)
{
    for (uint32_t k = 0; k < m->nu; k++)
        if (i >= m->u[k].b0 && i < m->u[k].b1) return &m->u[k];
    return NULL;
}

/* ---- pipeline ---- */

static void chunk_range(const mp *m, uint32_t k, uint32_t *b0, uint32_t *b1)
{
    *b0 = *b1 = 0;
    bool seen = false;
    for (uint32_t i = 0; i < m->pl->nblocks; i++)
        if (m->pl->blocks[i].chunk == k) {
            if (!seen) *b0 = i;
            seen = true;
            *b1 = i + 1;
        }
}

static prog_coll send_dir(const mp *m, uint32_t g)
{
    prog_group pg = prog_group_get(m->e->p, g);
    return pg.ranks[0] == m->e->rank ? PROG_COLL_SEND_UP : PROG_COLL_SEND_DOWN;
}

static uint32_t p2p(mp *m, uint32_t g, bool send, prog_phase ph, ss_bytes bytes, uint32_t dep,
                    uint32_t tensor, const char *what)
{
    prog_coll c = send_dir(m, g);
    if (!send) c = c == PROG_COLL_SEND_UP ? PROG_COLL_SEND_DOWN : PROG_COLL_SEND_UP;
    /* Megatron-LM's scatter_gather_tensors_in_pipeline: each TP rank moves
     * its 1/tp of the activation; the receivers all-gather it over NVLink. */
    bool sg = m->par->p2p_scatter_gather;
    em_begin(m->e, PROG_OP_COLL, PROG_P2P, ph, "pp.%s", what);
    em_coll(m->e, c, sg ? bytes / m->par->tp : bytes);
    em_group(m->e, g);
    em_dep(m->e, dep);
    em_mem(m->e, tensor, send ? PROG_FREE_AT_END : PROG_ALLOC_AT_ISSUE);
    uint32_t op = em_end(m->e);
    if (send) return op;
    /* Megatron's batch_p2p_sync: torch.cuda.synchronize() after the batched
     * isend/irecv, so the host never runs ahead of the pipeline (which bounds
     * the micro-batches whose buffers are allocated at once). Waiting on the
     * receive alone: a send's completion needs the peer's receive, and
     * Megatron posts the pair together, so a wait on sends here would be a
     * deadlock Megatron does not have. */
    if (!m->rt->recv_on_stream) {
        em_begin(m->e, PROG_OP_HOST, PROG_HOST, ph, "pp.synchronize");
        em_cost(m->e, 0, 0, 0);
        em_dep(m->e, op);
        em_end(m->e);
    }
    if (sg)
        op = mp_coll(m, PROG_TP, ph, PROG_COLL_ALL_GATHER, m->g[G_TP], bytes, op, "pp.all_gather",
                     what);
    return op;
}

/* ---- the walk: forward and backward of one micro-batch's model chunk ---- */

/* A pipeline receive of `bytes` from group g into a new activation tensor
 * *t named `tensor`. */
static uint32_t recv_into(mp *m, uint32_t *t, ss_bytes bytes, uint32_t g, prog_phase ph,
                          const char *tensor, const char *what)
{
    *t = em_tensor(m->e, PROG_MEM_ACTIVATION, bytes, false, "%s", tensor);
    return p2p(m, g, false, ph, bytes, EM_NONE, *t, what);
}

/* Before chunk k's forward of micro-batch mb: its input, or its receive. */
static void fwd_begin(mp *m, uint32_t mb, uint32_t k)
{
    em *e = m->e;
    e->slot = mb;
    m->dep = EM_NONE;
    m->prev_first = EM_NONE;
    if (k == 0) {
        m->dep = em_input(e);
        return;
    }
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    m->dep = recv_into(m, &e->t_act[EM_AT(e, b0 - 1)], m->pl->blocks[b0 - 1].out_bytes, m->gin_fwd,
                       PROG_PH_FORWARD, "pp.recv.act", "recv_act");
}

/* After it: the loss, or the send to the next stage. */
static void fwd_end(mp *m, uint32_t k)
{
    em *e = m->e;
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    if (k + 1 == m->pl->chunks)
        em_loss_fwd(e);
    else
        p2p(m, m->g[G_FWD], true, PROG_PH_FORWARD, m->pl->blocks[b1 - 1].out_bytes, m->dep,
            e->t_act[EM_AT(e, b1 - 1)], "send_act");
}

/* Block k->i's forward with the runtime's hooks: open (hooks, then the
 * collectives before the op), fwd_run, close (those after it). */
static void fwd_open(mp *m, uint32_t mb, blk *k)
{
    mp_unit *u = unit_of(m, k->i);
    if (k->i == u->b0 && m->rt->pre_forward) m->rt->pre_forward(m, u, mb);
    if (m->rt->before_block) m->rt->before_block(m, u, k->i, true);
    fwd_pre(m, k);
}

static void fwd_close(mp *m, const blk *k)
{
    mp_unit *u = unit_of(m, k->i);
    fwd_post(m, k);
    if (k->i == u->b0) m->prev_first = m->e->last;
    if (k->i + 1 == u->b1) mp_off_fwd_end(m, u);
}

static void fwd_whole(mp *m, uint32_t mb, uint32_t i)
{
    blk k = {.i = i};
    fwd_open(m, mb, &k);
    fwd_run(m, &k);
    fwd_close(m, &k);
}

static void bwd_begin(mp *m, uint32_t mb, uint32_t k)
{
    em *e = m->e;
    e->slot = mb;
    m->prev_first = EM_NONE;
    if (k + 1 == m->pl->chunks) {
        m->dep = em_loss_bwd(e);
        return;
    }
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    m->dep = recv_into(m, &e->t_dact[EM_AT(e, b1 - 1)], m->pl->blocks[b1 - 1].out_bytes,
                       m->gin_bwd, PROG_PH_BACKWARD, "pp.recv.grad", "recv_grad");
}

static void bwd_end(mp *m, uint32_t k)
{
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    if (k > 0)
        p2p(m, m->g[G_BWD], true, PROG_PH_BACKWARD, m->pl->blocks[b0].in_bytes, m->dep,
            m->e->t_dact[EM_AT(m->e, b0 - 1)], "send_grad");
}

static void bwd_open(mp *m, uint32_t mb, blk *k)
{
    em *e = m->e;
    mp_unit *u = unit_of(m, k->i);
    if (k->i + 1 == u->b1) mp_off_bwd_begin(m, u);
    if (k->i + 1 == u->b1 && m->rt->pre_backward) m->rt->pre_backward(m, u, mb);
    if (m->rt->before_block) m->rt->before_block(m, u, k->i, false);
    k->grad = EM_NONE;
    if (u->t_grad == EM_NONE && !m->rt->persistent_grads) {
        u->t_grad = em_tensor(e, PROG_MEM_GRAD, (u->dense + u->expert) * m->pl->grad_elem, false,
                              "grad.%s", m->pl->blocks[u->b0].group);
        k->grad = u->t_grad;
    }
    bwd_pre(m, k);
}

static void bwd_close(mp *m, uint32_t mb, const blk *k)
{
    mp_unit *u = unit_of(m, k->i);
    bwd_post(m, k);
    if (k->i + 1 == u->b1) m->prev_first = m->e->last;
    if (k->i == u->b0 && m->rt->grads_ready) m->rt->grads_ready(m, u, mb, m->e->last);
}

static void bwd_whole(mp *m, uint32_t mb, uint32_t i)
{
    blk k = {.i = i};
    bwd_open(m, mb, &k);
    bwd_run(m, &k);
    bwd_close(m, mb, &k);
}

static void forward(mp *m, uint32_t mb, uint32_t k)
{
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    fwd_begin(m, mb, k);
    for (uint32_t i = b0; i < b1; i++) fwd_whole(m, mb, i);
    fwd_end(m, k);
}

static void backward(mp *m, uint32_t mb, uint32_t k)
{
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    bwd_begin(m, mb, k);
    for (uint32_t i = b1; i-- > b0;) bwd_whole(m, mb, i);
    bwd_end(m, k);
}

/* ---- combined 1F1B (parallel.moe_a2a_overlap) ----
 * Megatron-core's overlap_moe_expert_parallel_comm runs, in 1F1B's steady
 * state, one micro-batch's forward chunk and another's backward chunk as
 * one: layer by layer (forward layer i with backward layer n - 1 - i),
 * each layer cut at its expert all-to-alls, on a compute stream and a
 * communication stream (megatron/core/models/common/
 * model_chunk_schedule_plan.py, schedule_layer_1f1b):
 *   comm:    combine_bwd | dispatch_fwd, dispatch_bwd    | combine_fwd
 *   compute: attn_fwd    | mlp_bwd, mlp_fwd              | attn_bwd
 * Here the two chunks' ops are emitted in that order, the all-to-alls on
 * the "ep" stream, so each one's communication runs under the other's
 * computation wherever the dependencies allow. Non-layer units (embedding,
 * output) run alone: the forward's first, the backward's last (the loss's
 * backward) before the layers, the rest after them, as Megatron's pre- and
 * post-process nodes. Each chunk keeps its own emitter state (chain). */
typedef struct chain {
    uint32_t slot, dep, prev_first;
    em_pending pend;
} chain;

static void chain_enter(mp *m, const chain *c)
{
    em *e = m->e;
    e->slot = c->slot, m->dep = c->dep, m->prev_first = c->prev_first;
    e->pend = c->pend;
}

static void chain_leave(const mp *m, chain *c)
{
    const em *e = m->e;
    c->slot = e->slot, c->dep = m->dep, c->prev_first = m->prev_first;
    c->pend = e->pend;
}

bool mp_unit_is_layer(const mp *m, const mp_unit *u)
{
    return strncmp(m->pl->blocks[u->b0].group, "layers.", 7) == 0;
}

/* Chunk k's units: m->u[*u0 .. *u1) (units are in block order). */
static void chunk_units(const mp *m, uint32_t k, uint32_t *u0, uint32_t *u1)
{
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    *u0 = 0;
    while (*u0 < m->nu && m->u[*u0].b0 < b0) ++*u0;
    *u1 = *u0;
    while (*u1 < m->nu && m->u[*u1].b0 < b1) ++*u1;
}

static void unit_fwd(mp *m, uint32_t mb, const mp_unit *u)
{
    for (uint32_t i = u->b0; i < u->b1; i++) fwd_whole(m, mb, i);
}

static void unit_bwd(mp *m, uint32_t mb, const mp_unit *u)
{
    for (uint32_t i = u->b1; i-- > u->b0;) bwd_whole(m, mb, i);
}

/* Forward layer uf (micro-batch fmb, chain F) with backward layer ub (bmb,
 * B): the MLP (expert) block is each layer's last, cut in three. */
static void layer_pair(mp *m, chain *F, uint32_t fmb, const mp_unit *uf, chain *B, uint32_t bmb,
                       const mp_unit *ub)
{
    blk fm = {.i = uf->b1 - 1}, bm = {.i = ub->b1 - 1};
    chain_enter(m, B); /* combine_bwd */
    bwd_open(m, bmb, &bm);
    chain_leave(m, B);
    chain_enter(m, F); /* attn_fwd */
    for (uint32_t i = uf->b0; i < fm.i; i++) fwd_whole(m, fmb, i);
    chain_leave(m, F);
    chain_enter(m, B); /* mlp_bwd */
    bwd_run(m, &bm);
    chain_leave(m, B);
    chain_enter(m, F); /* dispatch_fwd */
    fwd_open(m, fmb, &fm);
    chain_leave(m, F);
    chain_enter(m, B); /* dispatch_bwd */
    bwd_close(m, bmb, &bm);
    chain_leave(m, B);
    chain_enter(m, F); /* mlp_fwd, combine_fwd */
    fwd_run(m, &fm);
    fwd_close(m, &fm);
    chain_leave(m, F);
    chain_enter(m, B); /* attn_bwd */
    for (uint32_t i = bm.i; i-- > ub->b0;) bwd_whole(m, bmb, i);
    chain_leave(m, B);
}

static void combined(mp *m, uint32_t fmb, uint32_t fk, uint32_t bmb, uint32_t bk)
{
    chain F, B;
    uint32_t f, f1, b0, b;
    chunk_units(m, fk, &f, &f1);
    chunk_units(m, bk, &b0, &b);
    fwd_begin(m, fmb, fk);
    for (; f < f1 && !mp_unit_is_layer(m, &m->u[f]); f++) unit_fwd(m, fmb, &m->u[f]);
    chain_leave(m, &F);
    bwd_begin(m, bmb, bk);
    for (; b > b0 && !mp_unit_is_layer(m, &m->u[b - 1]); b--) unit_bwd(m, bmb, &m->u[b - 1]);
    chain_leave(m, &B);
    for (; f < f1 && mp_unit_is_layer(m, &m->u[f]) && b > b0 && mp_unit_is_layer(m, &m->u[b - 1]); f++, b--)
        layer_pair(m, &F, fmb, &m->u[f], &B, bmb, &m->u[b - 1]);
    chain_enter(m, &F); /* the layers left over, then the post-process */
    for (; f < f1; f++) unit_fwd(m, fmb, &m->u[f]);
    fwd_end(m, fk);
    chain_leave(m, &F);
    chain_enter(m, &B);
    for (; b > b0; b--) unit_bwd(m, bmb, &m->u[b - 1]);
    bwd_end(m, bk);
}

/* Virtual micro-batch j's micro-batch, and its model chunk on this stage
 * (the forward's; the backward counts chunks from the last). */
static uint32_t vmb_mb(const mp *m, uint32_t j)
{
    uint32_t pp = m->par->pp;
    return (j / (pp * m->par->virtual_stages)) * pp + j % pp;
}

static uint32_t vmb_chunk(const mp *m, uint32_t j, bool fwd)
{
    uint32_t pp = m->par->pp, V = m->par->virtual_stages, v = (j / pp) % V;
    return (fwd ? v : V - 1 - v) * pp + m->p;
}

/* Megatron's order: warm-up forwards, then one forward and one backward
 * alternately, then the remaining backwards. Virtual micro-batch j runs
 * chunk (j / pp) mod V (backward: counted from the last) of micro-batch
 * (j / (pp V)) pp + j mod pp. With moe_a2a_overlap each forward of the
 * alternation runs combined with the backward after it, after one more
 * warm-up forward (Megatron-core's get_pp_rank_microbatches: else the last
 * stage would pair a chunk's forward with its own backward); without a
 * pipeline the first forward runs alone and forward j + 1 with backward j
 * (combined_1f1b_schedule_for_no_pipelining). */
static void run_pipeline(mp *m)
{
    uint32_t pp = m->par->pp, V = m->par->virtual_stages, M = m->pl->s->grad_accum;
    uint32_t total = M * V;
    uint32_t warm = V == 1 ? pp - m->p - 1 : (pp - m->p - 1) * 2 + (V - 1) * pp;
    bool both = m->par->moe_a2a_overlap;
    if (both) warm = pp == 1 ? 1 : warm + 1; /* the pairs' chunks must not depend on each other */
    if (warm > total) warm = total;
    uint32_t nf = 0, nb = 0;
    while (nb < total && !m->e->rc) {
        bool fwd = nf < warm || (nf < total && nf - warm == nb);
        if (both && fwd && nf >= warm) {
            combined(m, vmb_mb(m, nf), vmb_chunk(m, nf, true), vmb_mb(m, nb),
                     vmb_chunk(m, nb, false));
            nf++, nb++;
        } else if (fwd) {
            forward(m, vmb_mb(m, nf), vmb_chunk(m, nf, true));
            nf++;
        } else {
            backward(m, vmb_mb(m, nb), vmb_chunk(m, nb, false));
            nb++;
        }
    }
}

/* ---- the rank ---- */

static void states_and_step(mp *m)
{
    em *e = m->e;
    const plan *pl = m->pl;
    stage_numel(pl, m->p, &m->part[0], &m->part[1]);
    m->gsize[0] = pl->shard_n, m->gsize[1] = pl->expert_dp;
    em_tensors params = {0}, optim = {0};
    if (em_tensors_init(&params, 2, e->err) || em_tensors_init(&optim, 2, e->err)) {
        e->rc = SS_E_NOMEM;
        goto out;
    }
    for (int k = 0; k < 2; k++) {
        if (!m->part[k]) continue;
        uint64_t pn, on;
        m->rt->at_rest(pl, m->part[k], m->gsize[k], &pn, &on);
        em_tensors_add(&params, pn, k ? "experts" : "dense");
        em_tensors_add(&optim, on, k ? "experts" : "dense");
    }
    em_states(e, &params, &optim);
    if (make_units(m) || mp_off_new(m)) {
        e->rc = ss_fail(e->err, SS_E_NOMEM, NULL, "out of memory");
        goto out;
    }
    if (m->rt->setup) m->rt->setup(m);
    run_pipeline(m);
    if (m->rt->end_backward) m->rt->end_backward(m);
    em_marker_begin(e, PROG_COMPUTE, PROG_PH_BACKWARD, "dp.wait_reduce");
    for (uint32_t q = prog_nops(e->p, e->rank); q-- > 0;) /* every reduction of the step */
        if (prog_ops(e->p, e->rank)[q].stream == PROG_REDUCE) em_dep(e, q);
    em_end(e);
    uint32_t opt = em_optim(e, &optim);
    if (m->rt->after_step) m->rt->after_step(m, opt);
    em_begin(e, PROG_OP_HOST, PROG_HOST, PROG_PH_OPTIMIZER, "zero_grad");
    em_cost(e, 0, 0, 0);
    for (uint32_t k = 0; k < m->nu; k++) {
        em_mem(e, m->u[k].t_grad, PROG_FREE_AT_ISSUE);
        em_mem(e, m->u[k].t_shard, PROG_FREE_AT_ISSUE);
    }
    em_mem(e, e->t_input, PROG_FREE_AT_ISSUE);
    em_end(e);
out:
    em_tensors_fini(&params);
    em_tensors_fini(&optim);
}

/* Program rank r's receive groups: the previous stage's forward send
 * group and the next stage's backward one (MP_NOGROUP without a pipeline). */
static void receive_groups(const plan *pl, uint32_t r, uint32_t *const gids[G_NKINDS],
                           uint32_t *gin_fwd, uint32_t *gin_bwd)
{
    uint32_t t, c, p, d, pp = pl->s->par.pp;
    coords(pl, world_of(pl, r), &t, &c, &p, &d);
    *gin_fwd = pp > 1 ? gids[G_FWD][prog_of(pl, world_rank(pl, t, c, (p + pp - 1) % pp, d))]
                      : MP_NOGROUP;
    *gin_bwd = pp > 1 ? gids[G_BWD][prog_of(pl, world_rank(pl, t, c, (p + 1) % pp, d))]
                      : MP_NOGROUP;
}

static int mp_emit_rank(const plan *pl, prog *p, uint32_t rank, uint32_t *const gids[G_NKINDS],
                        ss_err *err)
{
    em e;
    mp m = {.e = &e, .pl = pl, .par = &pl->s->par, .rt = mp_rt_find(&pl->s->shard),
            .ep_stream = pl->s->par.moe_a2a_overlap ? PROG_EP : PROG_TP};
    coords(pl, world_of(pl, rank), &m.t, &m.c, &m.p, &m.d);
    for (int k = 0; k < G_NKINDS; k++) m.g[k] = gids[k][rank];
    receive_groups(pl, rank, gids, &m.gin_fwd, &m.gin_bwd);
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    states_and_step(&m);
    rc = em_done(&e);
    if (m.rt->fini) m.rt->fini(&m);
    free(m.u);
    mp_off_free(m.off);
    em_fini(&e);
    return rc;
}

/* Rank r of a stage runs the stage's first rank's program (the same ops:
 * tp, cp and dp positions differ only in their groups), with each of its
 * groups in place of the first rank's. */
static int mp_share_rank(const plan *pl, prog *p, uint32_t r, uint32_t rep,
                         uint32_t *const gids[G_NKINDS], ss_err *err)
{
    uint32_t from[G_NKINDS + 2], to[G_NKINDS + 2], n = 0;
    for (int k = 0; k < G_NKINDS; k++) from[k] = gids[k][rep], to[k] = gids[k][r];
    receive_groups(pl, rep, gids, &from[G_NKINDS], &from[G_NKINDS + 1]);
    receive_groups(pl, r, gids, &to[G_NKINDS], &to[G_NKINDS + 1]);
    for (int k = 0; k < G_NKINDS + 2; k++) /* MP_NOGROUP on both sides where a dimension is 1 */
        if (from[k] != MP_NOGROUP && from[k] != to[k]) from[n] = from[k], to[n++] = to[k];
    return prog_rank_share(p, r, rep, from, to, n, err);
}

int mp_build(const plan *pl, prog *p, ss_err *err)
{
    uint32_t *gids[G_NKINDS] = {0};
    size_t n = pl->nsim;
    uint32_t *buf = malloc(pl->world * sizeof *buf), *pres = malloc(pl->world * sizeof *pres);
    uint8_t *seen = calloc(pl->world, 1);
    int rc = buf && pres && seen ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    prog_set_stride(p, pl->stride);
    for (int k = 0; k < G_NKINDS && !rc; k++) {
        gids[k] = malloc(n * sizeof *gids[k]);
        rc = gids[k] ? make_groups(pl, p, k, gids[k], buf, pres, seen, err)
                     : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (uint32_t r = 0; r < pl->nsim && !rc; r++) {
        uint32_t t, c, s, d, rep;
        coords(pl, world_of(pl, r), &t, &c, &s, &d);
        rep = prog_of(pl, world_rank(pl, 0, 0, s, 0));
        rc = pl->share && rep != r ? mp_share_rank(pl, p, r, rep, gids, err)
                                   : mp_emit_rank(pl, p, r, gids, err);
    }
    for (int k = 0; k < G_NKINDS; k++) free(gids[k]);
    free(buf);
    free(pres);
    free(seen);
    return rc;
}
