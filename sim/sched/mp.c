/* Model-parallel layouts: tensor (with or without sequence parallel),
 * context, expert and pipeline parallel, with DDP or ZeRO over the data-
 * parallel groups (Megatron-LM's layout; torchtitan's FSDP over dp).
 *
 * Ranks: world rank = t + tp (c + cp (p + pp d)) (spec.h). A folded program
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
 *              the same two again in backward.
 * Pipeline: Megatron's 1F1B or interleaved order of (micro-batch, chunk);
 * activations and gradients pass to the next / previous stage with one-way
 * sends on the unordered p2p stream, one group per direction and pair so
 * that the k-th send of a group meets the k-th receive.
 * Data parallel, per layer unit (a layer, the embedding, the output), over
 * the dense group (dp x cp) and the expert group (tp cp dp / ep):
 *   ddp: all-reduce of the gradients in the last micro-batch's backward;
 *   zero1 / shard_grad_op: reduce-scatter there, all-gather of the updated
 *   parameters after the optimizer (Megatron's distributed optimizer,
 *   without overlap with the next step);
 *   full_shard: the same reduce-scatter, and an all-gather before each
 *   unit's forward and backward of every micro-batch, at most one unit
 *   ahead of the compute stream.
 * Gradients accumulate unsharded over the micro-batches and are reduced
 * once (the pipelines' no_sync). States follow canonical ZeRO (states.h)
 * over each group's flat buffer. */
#include "emit.h"
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { G_TP, G_CP, G_DP, G_EP, G_EDP, G_FWD, G_BWD, G_NKINDS }; /* per-rank groups */
#define NOGROUP UINT32_MAX

typedef struct mp_unit {
    uint32_t b0, b1;       /* blocks [b0, b1) */
    uint64_t dense, expert; /* elements per rank */
    uint32_t t_full, t_grad; /* unsharded params (full_shard), gradients */
    uint32_t t_shard;        /* ZeRO-2/3: the reduced gradient shard */
    uint32_t ag, first;      /* pending all-gather, its first compute op */
} mp_unit;

typedef struct mp {
    em *e;
    const plan *pl;
    const spec_parallel *par;
    uint32_t t, c, p, d;        /* coordinates of the rank */
    uint32_t g[G_NKINDS];       /* NOGROUP where the dimension is 1 */
    uint32_t gin_fwd, gin_bwd;  /* receive groups (the neighbours' send groups) */
    mp_unit *u;
    uint32_t nu;
    uint32_t dep;               /* what the next compute op waits for */
    uint32_t prev_first;        /* first compute op of the previous unit */
    uint32_t optim_op;
} mp;

/* ---- ranks and groups ---- */

static uint32_t world_rank(const plan *pl, uint32_t t, uint32_t c, uint32_t p, uint32_t d)
{
    const spec_parallel *x = &pl->s->par;
    return t + x->tp * (c + x->cp * (p + x->pp * d));
}

static void coords(const plan *pl, uint32_t r, uint32_t *t, uint32_t *c, uint32_t *p,
                   uint32_t *d)
{
    const spec_parallel *x = &pl->s->par;
    *t = r % x->tp, r /= x->tp;
    *c = r % x->cp, r /= x->cp;
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
    case G_EP:
    case G_EDP:
        for (uint32_t q2 = 0; q2 < stage; q2++) {
            bool in = kind == G_EP ? q2 / x->ep == q / x->ep : q2 % x->ep == q % x->ep;
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

/* A folded group's copies: its images one, two, ... replicas on (world
 * rank + j tp cp pp) that are groups of the same kind, which no simulated
 * rank is in. Rank r's group of `kind` is mem[0 .. n), world members. */
static int add_copies(const plan *pl, prog *pg, int kind, uint32_t r, uint32_t gid,
                      const uint32_t *mem, uint32_t n, ss_err *err)
{
    uint32_t dp = pl->s->dp, *cp = malloc((size_t)dp * n * sizeof *cp), *chk = malloc(n * sizeof *chk);
    uint32_t nc = 0, m;
    int rc = cp && chk ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t j = 1; !rc && j < dp; j++) {
        uint64_t shift = (uint64_t)j * pl->replica;
        if (mem[n - 1] + shift >= pl->world) break;
        members(pl, kind, r + (uint32_t)shift, chk, &m);
        bool same = m == n;
        for (uint32_t i = 0; same && i < n; i++) same = chk[i] == mem[i] + shift;
        if (!same) continue; /* not a group: an EP group spanning replicas, shifted by less */
        memcpy(cp + (size_t)nc * n, chk, n * sizeof *chk);
        nc++;
    }
    if (!rc && nc) rc = prog_group_set_copies(pg, gid, cp, nc, err);
    free(cp);
    free(chk);
    return rc;
}

/* Every rank's group of `kind`, made once by its lowest present member;
 * the engine's members are the world members inside the program. Folded,
 * a group carries the groups of the other replicas that mirror it as
 * copies, so that the network sees the whole job's traffic. */
static int make_groups(const plan *pl, prog *pg, int kind, uint32_t *gid, uint32_t *buf,
                       uint32_t *pres, ss_err *err)
{
    for (uint32_t r = 0; r < pl->n; r++) gid[r] = NOGROUP;
    for (uint32_t r = 0; r < pl->n; r++) {
        if (gid[r] != NOGROUP && kind != G_FWD && kind != G_BWD) continue;
        uint32_t n, np = 0, id;
        members(pl, kind, r, buf, &n);
        if (n < 2 || (kind == G_FWD || kind == G_BWD ? buf[0] == buf[1] : false)) continue;
        for (uint32_t i = 0; i < n; i++)
            if (buf[i] < pl->n) pres[np++] = buf[i];
        int rc = np == n ? prog_group_add(pg, pres, np, &id, err)
                         : prog_group_add_net(pg, pres, np, buf, n, &id, err);
        if (!rc && pl->n < pl->world) rc = add_copies(pl, pg, kind, r, id, buf, n, err);
        if (rc) return rc;
        if (kind == G_FWD || kind == G_BWD) gid[r] = id;
        else
            for (uint32_t i = 0; i < np; i++) gid[pres[i]] = id;
    }
    return SS_OK;
}

/* ---- data parallel ---- */

static st_kind dp_kind(spec_strategy s)
{
    switch (s) {
    case SPEC_DDP: return ST_ZERO0;
    case SPEC_ZERO1: return ST_ZERO1;
    case SPEC_SHARD_GRAD_OP: return ST_ZERO2;
    default: return ST_ZERO3;
    }
}

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
    st_input in = {.kind = dp_kind(pl->s->shard.strategy), .n = pl->dense_dp,
                   .rank = c + x->cp * d, .numels = &dense, .count = 1, .prec = pl->s->prec,
                   .opt = pl->s->opt};
    *out = (st_bytes){0};
    int rc = st_compute(&in, out, err);
    if (rc || !expert) return rc;
    st_bytes e;
    in.n = pl->expert_dp, in.rank = q / x->ep, in.numels = &expert;
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
    if (g == NOGROUP || !bytes) return dep;
    em_begin(m->e, PROG_OP_COLL, st, ph, "%s.%s", what, block);
    em_coll(m->e, c, bytes);
    em_group(m->e, g);
    em_dep(m->e, dep);
    if (buffer) gathered(m, bytes, buffer);
    return em_end(m->e);
}

static uint32_t coll(mp *m, prog_stream st, prog_phase ph, prog_coll c, uint32_t g,
                     ss_bytes bytes, uint32_t dep, const char *what, const char *block)
{
    return coll_buf(m, st, ph, c, g, bytes, dep, what, block, NULL);
}

static uint32_t tp_pre(mp *m, const plan_block *b, prog_phase ph)
{
    bool sp = m->par->sequence_parallel;
    if (!sp || !b->tp_bytes || !strcmp(b->name, "embed") || !strcmp(b->name, "norm"))
        return m->dep;
    em_begin(m->e, PROG_OP_COLL, PROG_TP, ph, "tp.all_gather.%s", b->name);
    em_coll(m->e, PROG_COLL_ALL_GATHER, b->tp_bytes);
    em_group(m->e, m->g[G_TP]);
    em_dep(m->e, m->dep);
    gathered(m, b->tp_bytes, "tp.gathered");
    return em_end(m->e);
}

/* The collective after a block: forward g (or reduce-scatter), backward
 * f's all-reduce (or reduce-scatter); none after the output head in
 * forward or the embedding in backward (nothing flows there). */
static uint32_t tp_post(mp *m, const plan_block *b, prog_phase ph, uint32_t op)
{
    bool sp = m->par->sequence_parallel, fwd = ph == PROG_PH_FORWARD;
    if (!b->tp_bytes || !strcmp(b->name, "norm")) return op;
    if ((fwd && !strcmp(b->name, "head")) || (!fwd && !strcmp(b->name, "embed"))) return op;
    return coll(m, PROG_TP, ph, sp ? PROG_COLL_REDUCE_SCATTER : PROG_COLL_ALL_REDUCE,
                m->g[G_TP], b->tp_bytes, op, sp ? "tp.reduce_scatter" : "tp.all_reduce",
                b->name);
}

static bool is_attn(const plan_block *b) { return strstr(b->name, ".attn") != NULL; }

static void fwd_block(mp *m, uint32_t i)
{
    const plan_block *b = &m->pl->blocks[i];
    uint32_t dep = tp_pre(m, b, PROG_PH_FORWARD);
    if (is_attn(b) && b->cp_bytes) {
        dep = coll_buf(m, PROG_TP, PROG_PH_FORWARD, PROG_COLL_ALL_GATHER, m->g[G_CP],
                       b->cp_bytes, dep, "cp.all_gather_kv", b->name, "cp.kv");
    }
    if (b->ep_bytes)
        dep = coll(m, PROG_TP, PROG_PH_FORWARD, PROG_COLL_ALL_TO_ALL, m->g[G_EP], b->ep_bytes,
                   dep, "ep.dispatch", b->name);
    uint32_t op = em_fwd_block(m->e, i, dep);
    if (b->ep_bytes)
        op = coll(m, PROG_TP, PROG_PH_FORWARD, PROG_COLL_ALL_TO_ALL, m->g[G_EP], b->ep_bytes, op,
                  "ep.combine", b->name);
    m->dep = tp_post(m, b, PROG_PH_FORWARD, op);
}

static void bwd_block(mp *m, uint32_t i, const uint32_t *grads, uint32_t ngrads)
{
    const plan_block *b = &m->pl->blocks[i];
    uint32_t dep = m->dep;
    if (m->par->sequence_parallel && b->tp_bytes && strcmp(b->name, "norm")) {
        if (strcmp(b->name, "head")) /* the output gradient, gathered */
            dep = coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_ALL_GATHER, m->g[G_TP],
                       b->tp_bytes, dep, "tp.all_gather.grad", b->name);
        dep = tp_pre(m, b, PROG_PH_BACKWARD); /* the input, for the weight gradient */
    }
    if (is_attn(b) && b->cp_bytes) {
        dep = coll_buf(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_ALL_GATHER, m->g[G_CP],
                       b->cp_bytes, dep, "cp.all_gather_kv", b->name, "cp.kv");
    }
    if (b->ep_bytes)
        dep = coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_ALL_TO_ALL, m->g[G_EP], b->ep_bytes,
                   dep, "ep.combine_grad", b->name);
    uint32_t op = em_bwd_block(m->e, i, dep, grads, ngrads);
    if (b->ep_bytes)
        op = coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_ALL_TO_ALL, m->g[G_EP], b->ep_bytes,
                  op, "ep.dispatch_grad", b->name);
    if (is_attn(b) && b->cp_bytes)
        op = coll(m, PROG_TP, PROG_PH_BACKWARD, PROG_COLL_REDUCE_SCATTER, m->g[G_CP],
                  b->cp_bytes, op, "cp.reduce_scatter_dkv", b->name);
    m->dep = tp_post(m, b, PROG_PH_BACKWARD, op);
}

/* ---- data-parallel units ---- */

static ss_bytes padded(uint64_t numel, uint32_t n, uint32_t elem)
{
    return ss_div_ceil(numel, n) * n * elem;
}

static void unshard(mp *m, mp_unit *u, prog_phase ph)
{
    const plan *pl = m->pl;
    if (pl->s->shard.strategy != SPEC_FULL_SHARD) return;
    ss_bytes bytes = padded(u->dense, pl->dense_dp, pl->compute_elem) +
                     padded(u->expert, pl->expert_dp, pl->compute_elem);
    u->t_full = em_tensor(m->e, PROG_MEM_PARAM_UNSHARDED, bytes, false, "zero3.unsharded.%s",
                          pl->blocks[u->b0].group);
    uint32_t last = EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = m->g[k ? G_EDP : G_DP], size = k ? pl->expert_dp : pl->dense_dp;
        if (!n || g == NOGROUP) continue;
        if (last == EM_NONE && m->prev_first != EM_NONE) {
            /* The host waits for the previous unit's compute before it
             * allocates the next buffer: at most two units unsharded (the
             * rate limit FSDP's limit_all_gathers sets). */
            em_begin(m->e, PROG_OP_HOST, PROG_HOST, ph, "zero3.rate_limit");
            em_cost(m->e, 0, 0, 0);
            em_dep(m->e, m->prev_first);
            em_end(m->e);
        }
        em_begin(m->e, PROG_OP_COLL, PROG_UNSHARD, ph, "zero3.all_gather.%s%s",
                 pl->blocks[u->b0].group, k ? ".experts" : "");
        em_coll(m->e, PROG_COLL_ALL_GATHER, padded(n, size, pl->compute_elem));
        em_group(m->e, g);
        if (last == EM_NONE) em_mem(m->e, u->t_full, PROG_ALLOC_AT_ISSUE);
        last = em_end(m->e);
    }
    u->ag = last;
    if (last == EM_NONE) u->t_full = EM_NONE; /* one rank: nothing to gather */
    if (last == EM_NONE) return;
    em_marker_begin(m->e, PROG_COMPUTE, ph, "zero3.wait");
    em_dep(m->e, last);
    em_end(m->e);
}

/* The gathered parameters go after the unit's last block. */
static void unit_release(mp *m, mp_unit *u, uint32_t i, bool fwd)
{
    uint32_t last = fwd ? u->b1 - 1 : u->b0;
    if (i == last && u->t_full != EM_NONE) {
        em_free_after_block(m->e, u->t_full, PROG_FREE_AT_END);
        u->t_full = EM_NONE;
    }
}

static void reduce(mp *m, mp_unit *u, uint32_t after)
{
    const plan *pl = m->pl;
    bool ddp = pl->s->shard.strategy == SPEC_DDP;
    bool shards = pl->s->shard.strategy == SPEC_SHARD_GRAD_OP ||
                  pl->s->shard.strategy == SPEC_FULL_SHARD;
    if (shards)
        u->t_shard = em_tensor(m->e, PROG_MEM_GRAD_SHARD,
                               (ss_div_ceil(u->dense, pl->dense_dp) +
                                ss_div_ceil(u->expert, pl->expert_dp)) * pl->grad_elem,
                               false, "grad_shard.%s", pl->blocks[u->b0].group);
    uint32_t last = EM_NONE;
    for (int k = 0; k < 2; k++) {
        uint64_t n = k ? u->expert : u->dense;
        uint32_t g = m->g[k ? G_EDP : G_DP], size = k ? pl->expert_dp : pl->dense_dp;
        if (!n || g == NOGROUP) continue;
        em_begin(m->e, PROG_OP_COLL, PROG_REDUCE, PROG_PH_BACKWARD, "dp.%s.%s%s",
                 ddp ? "all_reduce" : "reduce_scatter", pl->blocks[u->b0].group,
                 k ? ".experts" : "");
        em_coll(m->e, ddp ? PROG_COLL_ALL_REDUCE : PROG_COLL_REDUCE_SCATTER,
                ddp ? n * pl->reduce_elem : padded(n, size, pl->reduce_elem));
        em_group(m->e, g);
        em_dep(m->e, after);
        if (last == EM_NONE) em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
        last = em_end(m->e);
    }
    if (last == EM_NONE && u->t_shard != EM_NONE) { /* one rank: the shard is the gradient */
        em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "dp.grad_shard");
        em_mem(m->e, u->t_shard, PROG_ALLOC_AT_ISSUE);
        em_dep(m->e, after);
        last = em_end(m->e);
    }
    /* ZeRO-2/3 keep the reduced shard only. */
    if (shards) {
        em_marker_begin(m->e, PROG_REDUCE, PROG_PH_BACKWARD, "dp.free_grad");
        em_dep(m->e, last);
        em_mem(m->e, u->t_grad, PROG_FREE_AT_END);
        em_end(m->e);
        u->t_grad = EM_NONE;
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
            *u = (mp_unit){.b0 = i, .b1 = i, .t_full = EM_NONE, .t_grad = EM_NONE, .t_shard = EM_NONE,
                           .ag = EM_NONE, .first = EM_NONE};
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
    em_begin(m->e, PROG_OP_COLL, PROG_P2P, ph, "pp.%s", what);
    em_coll(m->e, c, bytes);
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
    em_begin(m->e, PROG_OP_HOST, PROG_HOST, ph, "pp.synchronize");
    em_cost(m->e, 0, 0, 0);
    em_dep(m->e, op);
    em_end(m->e);
    return op;
}

static void forward(mp *m, uint32_t mb, uint32_t k)
{
    em *e = m->e;
    const plan *pl = m->pl;
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    e->slot = mb;
    m->dep = EM_NONE;
    m->prev_first = EM_NONE;
    if (k == 0) {
        m->dep = em_input(e);
    } else {
        size_t at = EM_AT(e, b0 - 1);
        e->t_act[at] = em_tensor(e, PROG_MEM_ACTIVATION, pl->blocks[b0 - 1].out_bytes, false,
                                 "pp.recv.act");
        m->dep = p2p(m, m->gin_fwd, false, PROG_PH_FORWARD, pl->blocks[b0 - 1].out_bytes,
                     EM_NONE, e->t_act[at], "recv_act");
    }
    for (uint32_t i = b0; i < b1; i++) {
        mp_unit *u = unit_of(m, i);
        if (i == u->b0) unshard(m, u, PROG_PH_FORWARD);
        unit_release(m, u, i, true);
        fwd_block(m, i);
        if (i == u->b0) m->prev_first = e->last;
    }
    if (k + 1 == pl->chunks) {
        em_loss_fwd(e);
    } else {
        p2p(m, m->g[G_FWD], true, PROG_PH_FORWARD, pl->blocks[b1 - 1].out_bytes, m->dep,
            e->t_act[EM_AT(e, b1 - 1)], "send_act");
    }
}

static void backward(mp *m, uint32_t mb, uint32_t k)
{
    em *e = m->e;
    const plan *pl = m->pl;
    uint32_t b0, b1;
    chunk_range(m, k, &b0, &b1);
    e->slot = mb;
    m->prev_first = EM_NONE;
    if (k + 1 == pl->chunks) {
        m->dep = em_loss_bwd(e);
    } else {
        size_t at = EM_AT(e, b1 - 1);
        e->t_dact[at] = em_tensor(e, PROG_MEM_ACTIVATION, pl->blocks[b1 - 1].out_bytes, false,
                                  "pp.recv.grad");
        m->dep = p2p(m, m->gin_bwd, false, PROG_PH_BACKWARD, pl->blocks[b1 - 1].out_bytes,
                     EM_NONE, e->t_dact[at], "recv_grad");
    }
    for (uint32_t i = b1; i-- > b0;) {
        mp_unit *u = unit_of(m, i);
        if (i + 1 == u->b1) unshard(m, u, PROG_PH_BACKWARD);
        unit_release(m, u, i, false);
        uint32_t grad = EM_NONE;
        if (u->t_grad == EM_NONE && mb == 0) {
            u->t_grad = em_tensor(e, PROG_MEM_GRAD, (u->dense + u->expert) * pl->grad_elem, false,
                                  "grad.%s", pl->blocks[u->b0].group);
            grad = u->t_grad;
        }
        bwd_block(m, i, &grad, grad == EM_NONE ? 0 : 1);
        if (i + 1 == u->b1) m->prev_first = e->last;
        if (i == u->b0 && mb + 1 == pl->s->grad_accum) reduce(m, u, e->last);
    }
    if (k > 0)
        p2p(m, m->g[G_BWD], true, PROG_PH_BACKWARD, pl->blocks[b0].in_bytes, m->dep,
            e->t_dact[EM_AT(e, b0 - 1)], "send_grad");
}

/* Megatron's order: warm-up forwards, then one forward and one backward
 * alternately, then the remaining backwards. Virtual micro-batch j runs
 * chunk (j / pp) mod V (backward: counted from the last) of micro-batch
 * (j / (pp V)) pp + j mod pp. */
static void run_pipeline(mp *m)
{
    uint32_t pp = m->par->pp, V = m->par->virtual_stages, M = m->pl->s->grad_accum;
    uint32_t total = M * V;
    uint32_t warm = V == 1 ? pp - m->p - 1 : (pp - m->p - 1) * 2 + (V - 1) * pp;
    if (warm > total) warm = total;
    uint32_t nf = 0, nb = 0;
    while (nb < total && !m->e->rc) {
        bool fwd = nf < warm || (nf < total && nf - warm == nb);
        uint32_t j = fwd ? nf++ : nb++;
        uint32_t v = (j / pp) % V, mb = (j / (pp * V)) * pp + j % pp;
        if (V == 1) mb = j;
        if (fwd) forward(m, mb, v * pp + m->p);
        else backward(m, mb, (V - 1 - v) * pp + m->p);
    }
}

/* ---- the rank ---- */

static void states_and_step(mp *m)
{
    em *e = m->e;
    const plan *pl = m->pl;
    bool z3 = pl->s->shard.strategy == SPEC_FULL_SHARD, ddp = pl->s->shard.strategy == SPEC_DDP;
    uint64_t dense, expert;
    stage_numel(pl, m->p, &dense, &expert);
    em_tensors params = {0}, optim = {0};
    if (em_tensors_init(&params, 2, e->err) || em_tensors_init(&optim, 2, e->err)) {
        e->rc = SS_E_NOMEM;
        goto out;
    }
    uint64_t part[2] = {dense, expert}, n[2] = {pl->dense_dp, pl->expert_dp};
    for (int k = 0; k < 2; k++) {
        if (!part[k]) continue;
        uint64_t shard = ss_div_ceil(part[k], n[k]);
        params.numel[params.n++] = z3 ? shard : part[k];
        optim.numel[optim.n++] = ddp ? part[k] : shard;
    }
    em_states(e, &params, &optim);
    if (make_units(m)) {
        e->rc = SS_E_NOMEM;
        goto out;
    }
    run_pipeline(m);
    em_marker_begin(e, PROG_COMPUTE, PROG_PH_BACKWARD, "dp.wait_reduce");
    for (uint32_t q = prog_nops(e->p, e->rank); q-- > 0;) /* every reduction of the step */
        if (prog_ops(e->p, e->rank)[q].stream == PROG_REDUCE) em_dep(e, q);
    em_end(e);
    uint32_t opt = em_optim(e, &optim);
    if (pl->s->shard.strategy == SPEC_ZERO1 || pl->s->shard.strategy == SPEC_SHARD_GRAD_OP)
        for (int k = 0; k < 2; k++)
            coll(m, PROG_UNSHARD, PROG_PH_OPTIMIZER, PROG_COLL_ALL_GATHER,
                 m->g[k ? G_EDP : G_DP], padded(part[k], (uint32_t)n[k], pl->param_elem), opt,
                 "dp.all_gather_params", k ? "experts" : "dense");
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

/* Rank r's receive groups: the previous stage's forward send group and
 * the next stage's backward one (NOGROUP without a pipeline). */
static void receive_groups(const plan *pl, uint32_t r, uint32_t *const gids[G_NKINDS],
                           uint32_t *gin_fwd, uint32_t *gin_bwd)
{
    uint32_t t, c, p, d, pp = pl->s->par.pp;
    coords(pl, r, &t, &c, &p, &d);
    *gin_fwd = pp > 1 ? gids[G_FWD][world_rank(pl, t, c, (p + pp - 1) % pp, d)] : NOGROUP;
    *gin_bwd = pp > 1 ? gids[G_BWD][world_rank(pl, t, c, (p + 1) % pp, d)] : NOGROUP;
}

static int mp_emit_rank(const plan *pl, prog *p, uint32_t rank, uint32_t *const gids[G_NKINDS],
                        ss_err *err)
{
    em e;
    mp m = {.e = &e, .pl = pl, .par = &pl->s->par};
    coords(pl, rank, &m.t, &m.c, &m.p, &m.d);
    for (int k = 0; k < G_NKINDS; k++) m.g[k] = gids[k][rank];
    receive_groups(pl, rank, gids, &m.gin_fwd, &m.gin_bwd);
    int rc = em_init(&e, pl, p, rank, err);
    if (rc) return rc;
    states_and_step(&m);
    rc = em_done(&e);
    free(m.u);
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
    for (int k = 0; k < G_NKINDS + 2; k++) /* NOGROUP on both sides where a dimension is 1 */
        if (from[k] != NOGROUP && from[k] != to[k]) from[n] = from[k], to[n++] = to[k];
    return prog_rank_share(p, r, rep, from, to, n, err);
}

int mp_build(const plan *pl, prog *p, ss_err *err)
{
    uint32_t *gids[G_NKINDS] = {0};
    size_t n = pl->n;
    uint32_t *buf = malloc(pl->world * sizeof *buf), *pres = malloc(pl->world * sizeof *pres);
    int rc = buf && pres ? SS_OK : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (int k = 0; k < G_NKINDS && !rc; k++) {
        gids[k] = malloc(n * sizeof *gids[k]);
        rc = gids[k] ? make_groups(pl, p, k, gids[k], buf, pres, err)
                     : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (uint32_t r = 0; r < pl->n && !rc; r++) {
        uint32_t t, c, s, d, rep;
        coords(pl, r, &t, &c, &s, &d);
        rep = world_rank(pl, 0, 0, s, 0);
        rc = pl->share && rep != r ? mp_share_rank(pl, p, r, rep, gids, err)
                                   : mp_emit_rank(pl, p, r, gids, err);
    }
    for (int k = 0; k < G_NKINDS; k++) free(gids[k]);
    free(buf);
    free(pres);
    return rc;
}
