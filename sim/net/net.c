/* The contention network. net.h states the contract. */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/vec.h"
#include "../io/profile.h"
#include "lclass.h"

enum { I_IDLE, I_LATENCY, I_FLOW, I_DONE };

typedef struct inst {
    uint8_t state, phase;
    uint32_t shape;  /* index in net.shapes (which moves as it grows) */
    uint32_t fshape; /* the shape its flows load: shape, or shape with the group's copies */
    algo_cost cost;
    double bytes, rem; /* rem: bytes left at `at`, moving at `rate` since */
    double rate;
    ss_ns at;
    uint32_t flow;
    ss_ns due;
} inst;

/* Cache slot of (group, collective, algorithm): 0 unbuilt, -1 not
 * applicable, else 1 + index in shapes. */
#define NCOLL PROG_NCOLLS

/* The tuner's last TUNE_WAYS choices for one (group, collective), each by
 * its bytes, replaced round robin: a tensor-parallel group under
 * tp_comm_overlap alternates a chunk and the rest (and a gather and its
 * reduce-scatter's sizes), which one entry would miss every time. */
#define TUNE_WAYS 4
struct tuned {
    struct {
        ss_bytes bytes;
        algo_cost cost;
        uint32_t shape, fshape;
        bool set;
    } w[TUNE_WAYS];
    uint32_t next; /* the way a miss replaces */
};

struct net {
    topo *g;
    net_opts o;
    flow_sys *fs;
    const prog *p; /* for group copies; NULL: none */
    int32_t *slot, *mslot; /* mslot: the merged shapes of groups with copies, same keys */
    uint32_t nslot, cap_slot, nmslot, cap_mslot;
    double *acc;           /* [links]: weight summed while merging */
    uint32_t *acc_links, nacc;
    /* the last choices of each (group, collective) called: few of the
     * ngroups x NCOLL pairs a large run has, so they are kept apart */
    uint32_t *tkey, ntkey, cap_tkey; /* [gid * NCOLL + coll]: 1 + its entry in tune, or 0 */
    struct tuned *tune;
    uint32_t ntune, cap_tune;
    algo_shape *shapes;
    uint32_t nshapes, cap_shapes;
    /* Instances in flight: an engine id names every collective instance of
     * the step (a million on a deep pipeline's), but only those started and
     * not yet done hold an inst; their slots are reused. */
    uint32_t *islot, nislot, cap_islot; /* [instance id]: its slot in pool, or NO_SLOT */
    inst *pool;
    uint32_t npool, cap_pool;
    uint32_t *freed, nfreed, cap_freed; /* slots of pool no instance holds */
    uint32_t *owner, cap_owner; /* [flow id]: the instance whose flow it is */
    flow_use *scratch;
    uint32_t cap_scratch;
    uint64_t solves;
    bool dirty; /* flows changed since the last solve; a settle is asked for */
    bool classed;   /* the link classes were made (first start) */
    uint32_t *rep;  /* [links]: its class's first link; NULL: every link its own */
    uint32_t loaded, solved; /* links the flows can load; classes among them */
    uint32_t gpn, rpn;       /* a node's GPUs and the ranks it holds (spec_place_gpu) */
    uint32_t *gbuf, cap_gbuf; /* a group's GPUs (gpus_of) */
    algo_scratch map;         /* the shape builder's map by link (map_of) */
    bool map_tried;
    uint8_t *solo;            /* [nsolo]: shape s's flows run alone (find_solo) */
    uint32_t nsolo;
};

static int nomem(ss_err *err) { return ss_fail(err, SS_E_NOMEM, NULL, "out of memory in the network"); }

net_opts net_opts_of(const spec_scenario *s, const struct prof *pf)
{
    return (net_opts){.algo = (algo_kind)s->net_algo, .proto = (algo_proto)s->net_proto,
                      .algo_set = s->net_algos, .proto_set = s->net_protos,
                      .profile = pf, .nccl = s->net_nccl, .min_ctas = s->net_min_ctas,
                      .collnet = s->net_collnet};
}

int net_new(const spec_topology *t, const net_opts *o, net **out, ss_err *err)
{
    net *n = calloc(1, sizeof *n);
    if (!n) return nomem(err);
    n->o = *o;
    if (o->algo == ALGO_AUTO && !o->algo_set) n->o.algo_set = t->nccl_algos;
    if (o->proto == ALGO_P_AUTO && !o->proto_set) n->o.proto_set = t->nccl_protos;
    n->gpn = t->gpus_per_node, n->rpn = spec_topo_rpn(t);
    spec_topology tv = *t; /* the version the options name, over the file's */
    if (o->nccl) tv.nccl = o->nccl;
    if (o->min_ctas) tv.min_ctas = o->min_ctas;
    if (o->collnet) tv.collnet = true;
    int rc = topo_new(&tv, &n->g, err);
    double *cap = NULL;
    if (!rc) {
        uint32_t L = topo_nlinks(n->g);
        cap = malloc((L ? L : 1) * sizeof *cap);
        if (!cap) rc = nomem(err);
        for (uint32_t l = 0; !rc && l < L; l++) cap[l] = topo_link_Bps(n->g, l);
        n->acc = calloc(L ? L : 1, sizeof *n->acc);
        n->acc_links = malloc((L ? L : 1) * sizeof *n->acc_links);
        if (!rc && (!n->acc || !n->acc_links)) rc = nomem(err);
        if (!rc) rc = flow_sys_new(L, cap, &n->fs, err);
    }
    free(cap);
    if (rc) {
        net_free(n);
        return rc;
    }
    *out = n;
    return SS_OK;
}

void net_free(net *n)
{
    if (!n) return;
    for (uint32_t i = 0; i < n->nshapes; i++) algo_shape_fini(&n->shapes[i]);
    free(n->shapes);
    free(n->slot);
    free(n->mslot);
    free(n->acc);
    free(n->acc_links);
    free(n->tkey);
    free(n->tune);
    free(n->islot);
    free(n->pool);
    free(n->freed);
    free(n->owner);
    free(n->scratch);
    free(n->rep);
    free(n->gbuf);
    algo_scratch_fini(&n->map);
    free(n->solo);
    flow_sys_free(n->fs);
    topo_free(n->g);
    free(n);
}

const topo *net_topo(const net *n) { return n->g; }
uint64_t net_solves(const net *n) { return n->solves; }

void net_link_classes(const net *n, uint32_t *loaded, uint32_t *solved)
{
    *loaded = n->loaded;
    *solved = n->rep ? n->solved : n->loaded;
}

/* ---- shapes ---- */

/* The GPUs a group's ranks run on (spec_topo_gpu): the ranks themselves
 * where the job fills whole nodes, else their images in n->gbuf, valid
 * until the next call. The map is increasing: ascending ranks stay so. */
static const uint32_t *gpus_of(net *n, const uint32_t *ranks, uint32_t size, ss_err *err)
{
    if (n->rpn == n->gpn) return ranks;
    if (!ss_grow((void **)&n->gbuf, &n->cap_gbuf, size ? size : 1, sizeof *n->gbuf)) {
        nomem(err);
        return NULL;
    }
    for (uint32_t i = 0; i < size; i++) n->gbuf[i] = spec_place_gpu(n->gpn, n->rpn, ranks[i]);
    return n->gbuf;
}

/* The builder's map by link, made at the first shape a step builds; NULL
 * (the builder hashes instead, the same shapes) where it cannot be had. */
static algo_scratch *map_of(net *n)
{
    if (!n->map_tried) {
        n->map_tried = true;
        ss_err e;
        ss_err_clear(&e);
        if (algo_scratch_init(&n->map, n->g, &e)) return NULL;
    }
    return n->map.nlinks ? &n->map : NULL;
}

static int cached_shape(net *n, uint32_t gid, prog_coll c, prog_group pg, algo_kind a,
                        int32_t *out, ss_err *err)
{
    uint32_t k = (gid * NCOLL + (uint32_t)c) * ALGO_NKINDS + (uint32_t)a;
    if (k >= n->nslot) {
        if (!ss_grow((void **)&n->slot, &n->cap_slot, k + 1, sizeof *n->slot)) return nomem(err);
        for (uint32_t i = n->nslot; i <= k; i++) n->slot[i] = 0;
        n->nslot = k + 1;
    }
    if (n->slot[k] == 0 && n->rep)
        return ss_fail(err, SS_E_INTERNAL, NULL, "group %u: a %s shape after the link classes",
                       gid, prog_coll_name(c));
    if (n->slot[k] == 0) {
        const uint32_t *gpu = gpus_of(n, pg.ranks, pg.size, err);
        if (!gpu) return SS_E_NOMEM;
        if (!algo_applies(n->g, c, gpu, pg.size, a)) {
            n->slot[k] = -1;
        } else {
            if (!ss_grow((void **)&n->shapes, &n->cap_shapes, n->nshapes + 1, sizeof *n->shapes))
                return nomem(err);
            int rc = algo_shape_build_in(n->g, c, gpu, pg.size, a, map_of(n),
                                         &n->shapes[n->nshapes], err);
            if (rc) return rc;
            n->slot[k] = (int32_t)++n->nshapes;
        }
    }
    *out = n->slot[k] - 1; /* -1: not applicable */
    return SS_OK;
}

/* Add shape x's usage to the accumulator, phase k. */
static void acc_add(net *n, const algo_shape *x, uint32_t k)
{
    for (uint32_t i = 0; i < x->nuse[k]; i++) {
        uint32_t l = x->use[k][i].link;
        if (n->acc[l] == 0.0) n->acc_links[n->nacc++] = l;
        n->acc[l] += x->use[k][i].w;
    }
}

/* Shape `base` with the usage of every copy of group gid added, phase by
 * phase (copies run the same algorithm in lockstep: one flow carries them
 * all, at the rate symmetry gives each). Links in first-use order. */
static int merge_copies(net *n, uint32_t gid, prog_coll c, uint32_t base, algo_shape *out,
                        ss_err *err)
{
    uint32_t nc = prog_group_ncopies(n->p, gid);
    algo_shape *cp = calloc(nc, sizeof *cp);
    if (!cp) return nomem(err);
    algo_shape m = n->shapes[base];
    int rc = SS_OK;
    for (uint32_t i = 0; i < nc && !rc; i++) {
        prog_group g = prog_group_copy(n->p, gid, i);
        const uint32_t *gpu = gpus_of(n, g.ranks, g.size, err);
        rc = gpu ? algo_shape_build_in(n->g, c, gpu, g.size, m.algo, map_of(n), &cp[i], err)
                 : SS_E_NOMEM;
        if (!rc && cp[i].nphase != m.nphase)
            rc = ss_fail(err, SS_E_INTERNAL, NULL, "a copy of group %u runs %u phases, not %u",
                         gid, cp[i].nphase, m.nphase);
    }
    for (uint32_t k = 0; k < m.nphase; k++) m.use[k] = NULL;
    for (uint32_t k = 0; k < m.nphase && !rc; k++) {
        n->nacc = 0;
        acc_add(n, &n->shapes[base], k);
        for (uint32_t i = 0; i < nc; i++) acc_add(n, &cp[i], k);
        m.use[k] = malloc((n->nacc ? n->nacc : 1) * sizeof *m.use[k]);
        if (!m.use[k]) rc = nomem(err);
        for (uint32_t i = 0; i < n->nacc; i++) {
            uint32_t l = n->acc_links[i];
            if (m.use[k]) m.use[k][i] = (flow_use){l, n->acc[l]};
            n->acc[l] = 0.0;
        }
        m.nuse[k] = n->nacc;
    }
    for (uint32_t i = 0; i < nc; i++) algo_shape_fini(&cp[i]);
    free(cp);
    if (rc) algo_shape_fini(&m);
    else *out = m;
    return rc;
}

/* The shape the flows of an instance load: `base` itself, or (groups with
 * copies) base merged with its copies, built once per (group, coll, algo). */
static int flow_shape(net *n, uint32_t gid, prog_coll c, uint32_t base, uint32_t *out,
                      ss_err *err)
{
    *out = base;
    if (!n->p || gid >= prog_ngroups(n->p) || !prog_group_ncopies(n->p, gid)) return SS_OK;
    uint32_t k = (gid * NCOLL + (uint32_t)c) * ALGO_NKINDS + (uint32_t)n->shapes[base].algo;
    if (k >= n->nmslot) {
        if (!ss_grow((void **)&n->mslot, &n->cap_mslot, k + 1, sizeof *n->mslot)) return nomem(err);
        for (uint32_t i = n->nmslot; i <= k; i++) n->mslot[i] = 0;
        n->nmslot = k + 1;
    }
    if (n->mslot[k] == 0 && n->rep)
        return ss_fail(err, SS_E_INTERNAL, NULL, "group %u: a merged %s shape after the link "
                       "classes", gid, prog_coll_name(c));
    if (n->mslot[k] == 0) {
        algo_shape m;
        if (!ss_grow((void **)&n->shapes, &n->cap_shapes, n->nshapes + 1, sizeof *n->shapes))
            return nomem(err);
        int rc = merge_copies(n, gid, c, base, &m, err);
        if (rc) return rc;
        n->shapes[n->nshapes] = m;
        n->mslot[k] = (int32_t)++n->nshapes;
    }
    *out = (uint32_t)n->mslot[k] - 1;
    return SS_OK;
}

/* Whether the tuner weighs protocol p for algorithm a: the forced one
 * alone, else those NCCL pairs with a, of the listed ones unless `any`. */
static bool proto_considered(const net *n, algo_kind a, int p, bool any)
{
    if (n->o.proto != ALGO_P_AUTO) return p == (int)n->o.proto;
    if (!any && n->o.proto_set && !(n->o.proto_set >> p & 1)) return false;
    return algo_proto_tunable(a, (algo_proto)p);
}

/* The tuner over built shapes: forced choices where they apply; a protocol
 * list that leaves none of the shapes a protocol is set aside. */
static void pick(const net *n, const algo_shape *const *sh, uint32_t nsh, prog_coll c,
                 uint32_t size, ss_bytes bytes, uint32_t *best_i, algo_cost *best)
{
    bool first = true;
    for (int any = 0; any < 2 && first; any++) {
        for (uint32_t i = 0; i < nsh; i++)
            for (int p = ALGO_P_LL; p < ALGO_NPROTOS; p++) {
                if (!proto_considered(n, sh[i]->algo, p, any)) continue;
                algo_cost k = algo_cost_of(n->g, sh[i], c, size, (algo_proto)p, bytes);
                if (first || k.tune_s < best->tune_s) {
                    *best = k;
                    *best_i = i;
                    first = false;
                }
            }
    }
    if (first) return;
    ss_ns fill = algo_fill_ns(n->g, sh[*best_i], c, best->proto, bytes);
    best->latency_ns += fill;
    best->iso_s += (double)fill * 1e-9;
}

/* The tuner over the cached candidate shapes idx[0 .. nsh) of a group:
 * *best indexes idx. choose() and mark_shapes both ask it, so a run loads
 * only shapes the link classes were made from. */
static void pick_of(const net *n, const uint32_t *idx, uint32_t nsh, prog_coll c, uint32_t size,
                    ss_bytes bytes, uint32_t *best, algo_cost *cost)
{
    const algo_shape *sh[ALGO_NKINDS];
    for (uint32_t i = 0; i < nsh; i++) sh[i] = &n->shapes[idx[i]];
    pick(n, sh, nsh, c, size, bytes, best, cost);
}

/* The profile's curve for c over the GPUs gpu[0 .. size), if any: latency
 * and time alone replace the model's, the flows' bytes scale to match
 * (net.h). */
static void calibrate(const net *n, prog_coll c, const uint32_t *gpu, uint32_t size,
                      ss_bytes bytes, algo_cost *k)
{
    static const ncclt_op ops[PROG_NCOLLS] = {
        [PROG_COLL_ALL_REDUCE] = NCCLT_ALL_REDUCE, [PROG_COLL_ALL_GATHER] = NCCLT_ALL_GATHER,
        [PROG_COLL_REDUCE_SCATTER] = NCCLT_REDUCE_SCATTER, [PROG_COLL_BROADCAST] = NCCLT_BROADCAST,
        [PROG_COLL_ALL_TO_ALL] = NCCLT_ALLTOALL, [PROG_COLL_SEND_RECV] = NCCLT_SENDRECV,
        [PROG_COLL_SEND_UP] = NCCLT_SENDRECV, [PROG_COLL_SEND_DOWN] = NCCLT_SENDRECV,
        [PROG_COLL_REDUCE] = NCCLT_REDUCE,    [PROG_COLL_GATHER] = NCCLT_GATHER,
        [PROG_COLL_SCATTER] = NCCLT_SCATTER};
    if (!n->o.profile) return;
    uint32_t nodes = 1;
    for (uint32_t i = 1; i < size; i++)
        nodes += topo_node_of(n->g, gpu[i]) != topo_node_of(n->g, gpu[i - 1]);
    const prof_coll *pc = prof_coll_find(n->o.profile, ops[c], size, nodes);
    if (!pc || pc->c.nreg == 0) return;
    const prof_regime *r = pc->c.reg;
    uint32_t i = 0;
    while (i + 1 < pc->c.nreg && bytes > r[i].max_bytes) i++;
    double alpha = r[i].alpha_us > 0 ? r[i].alpha_us * 1e-6 : 0.0;
    double total = prof_time_us(r, pc->c.nreg, bytes) * 1e-6;
    /* Below the fitted sizes the first regime is extrapolated, and a fit
     * with a small or negative alpha would give ~0 us there: the model's
     * own latency (the algorithm's cost at 0 bytes, from the topology) is
     * the floor. Not the smallest fitted point's time: that would be a
     * measurement the log does not hold (docs/ROBUSTNESS.md). */
    double floor_s = (double)k->latency_ns * 1e-9;
    if (bytes < r[0].min_bytes && total < floor_s) total = alpha = floor_s;
    double bw_model = k->iso_s - (double)k->latency_ns * 1e-9, bw_meas = total - alpha;
    if (bw_model > 0 && bw_meas > 0) k->wscale *= bw_meas / bw_model;
    else alpha = total; /* a curve with no bandwidth term: all latency */
    k->latency_ns = ss_ns_from_s(alpha);
    k->iso_s = total;
}

/* Whether the tuner weighs algorithm a on this pass: pass 0 the forced
 * algorithm alone, or the listed ones (every one without either), pass 1,
 * when none of those applies, NCCL's; hierarchical, which NCCL does not
 * have, only when forced (algo.h). The step's candidates and
 * net_coll_alone share it. */
static bool considered(const net *n, int pass, int a)
{
    if (pass == 0 && n->o.algo != ALGO_AUTO && a != (int)n->o.algo) return false;
    if (pass == 0 && n->o.algo == ALGO_AUTO && n->o.algo_set && !(n->o.algo_set >> a & 1))
        return false;
    return a != ALGO_HIER || n->o.algo == ALGO_HIER;
}

/* Candidate shapes (indexes) of the algorithms considered that apply. */
static int candidates(net *n, uint32_t gid, prog_coll c, prog_group pg,
                      uint32_t idx[ALGO_NKINDS], uint32_t *nsh, ss_err *err)
{
    *nsh = 0;
    for (int pass = 0; pass < 2 && *nsh == 0; pass++)
        for (int a = ALGO_RING; a < ALGO_NKINDS; a++) {
            if (!considered(n, pass, a)) continue;
            int32_t i = -1;
            int rc = cached_shape(n, gid, c, pg, (algo_kind)a, &i, err);
            if (rc) return rc;
            if (i >= 0) idx[(*nsh)++] = (uint32_t)i;
        }
    if (*nsh == 0)
        return ss_fail(err, SS_E_INTERNAL, NULL, "no algorithm runs %s over %u ranks",
                       prog_coll_name(c), pg.size);
    return SS_OK;
}

/* ---- progress ---- */

/* Progress is accounted lazily, per instance: when its rate changes and
 * when it wakes, so that an event costs what it touches, not every flow. */
static void catch_up(inst *x, ss_ns now)
{
    if (now <= x->at) return;
    x->rem = isinf(x->rate) ? 0.0 : x->rem - x->rate * ((double)(now - x->at) * 1e-9);
    x->at = now;
}

static ss_ns due_of(const inst *x, double rate, ss_ns now)
{
    if (x->rem <= 0.0 || isinf(rate)) return now;
    double ns = ceil(x->rem / rate * 1e9);
    return ns >= 1.8e19 ? UINT64_MAX / 2 : now + (ss_ns)ns;
}

#define NO_SLOT UINT32_MAX

/* The inst of an instance in flight (inst_take'n, not yet given back). */
static inline inst *inst_at(net *n, uint32_t id) { return &n->pool[n->islot[id]]; }

/* A slot for instance id, cleared: a freed one, else a new one at the
 * pool's end. An id that still holds one (a run that stopped on an error
 * before its instances ended) keeps it. */
static int inst_take(net *n, uint32_t id, ss_err *err)
{
    if (id >= n->nislot) {
        if (!ss_grow((void **)&n->islot, &n->cap_islot, id + 1, sizeof *n->islot)) return nomem(err);
        for (uint32_t i = n->nislot; i <= id; i++) n->islot[i] = NO_SLOT;
        n->nislot = id + 1;
    }
    if (n->islot[id] == NO_SLOT) {
        if (n->nfreed) {
            n->islot[id] = n->freed[--n->nfreed];
        } else {
            if (!ss_grow((void **)&n->pool, &n->cap_pool, n->npool + 1, sizeof *n->pool) ||
                !ss_grow((void **)&n->freed, &n->cap_freed, n->npool + 1, sizeof *n->freed))
                return nomem(err);
            n->islot[id] = n->npool++;
        }
    }
    *inst_at(n, id) = (inst){0};
    return SS_OK;
}

/* Instance id ended: its slot is free for the next one (the free list
 * has room for every slot of the pool: inst_take). */
static void inst_give(net *n, uint32_t id)
{
    n->freed[n->nfreed++] = n->islot[id];
    n->islot[id] = NO_SLOT;
}

/* Re-solve and reschedule every instance the solve gave a rate (flow.h:
 * those whose component changed) whose end moved. */
static int resolve(net *n, ss_ns now, eng_wakes *w, ss_err *err)
{
    n->dirty = false;
    int rc = flow_solve(n->fs, err);
    n->solves++;
    const uint32_t *ids = NULL;
    uint32_t k = rc ? 0 : flow_last_solved(n->fs, &ids);
    for (uint32_t i = 0; i < k && !rc; i++) {
        uint32_t id = n->owner[ids[i]];
        inst *x = inst_at(n, id);
        catch_up(x, now);
        x->rate = flow_rate(n->fs, x->flow);
        ss_ns due = due_of(x, x->rate, now);
        if (due == x->due) continue;
        x->due = due;
        rc = eng_wake_at(w, id, due, err);
    }
    return rc;
}

/* Flows changed at now: solve once, after everything else at now. Rates
 * read before that (a wake at now whose rounding left bytes) may be stale,
 * but no time passes on them: the settle reschedules every end it moves. */
static void changed(net *n, ss_ns now, eng_wakes *w)
{
    if (n->dirty) return;
    n->dirty = true;
    eng_settle_at(w, now);
}

/* Phase k of instance x as a flow's usage, into n->scratch[0 .. *nu), and
 * its rate cap (0: none). */
static int phase_use(net *n, const inst *x, uint32_t k, uint32_t *nu, double *cap, ss_err *err)
{
    const algo_shape *s = &n->shapes[x->fshape];
    *nu = s->nuse[k];
    if (!ss_grow((void **)&n->scratch, &n->cap_scratch, *nu ? *nu : 1, sizeof *n->scratch))
        return nomem(err);
    for (uint32_t i = 0; i < *nu; i++) /* one link per class already (keep_reps) */
        n->scratch[i] = (flow_use){s->use[k][i].link, s->use[k][i].w * x->cost.wscale};
    *cap = x->cost.wire_cap > 0 ? x->cost.wire_cap / x->cost.wscale : 0.0;
    return SS_OK;
}

static int start_phase(net *n, uint32_t id, ss_ns now, ss_err *err)
{
    inst *x = inst_at(n, id);
    uint32_t nu;
    double cap;
    int rc = phase_use(n, x, x->phase, &nu, &cap, err);
    if (!rc) rc = flow_add(n->fs, n->scratch, nu, cap, &x->flow, err);
    if (rc) return rc;
    if (!ss_grow((void **)&n->owner, &n->cap_owner, x->flow + 1, sizeof *n->owner)) {
        flow_remove(n->fs, x->flow);
        return nomem(err);
    }
    n->owner[x->flow] = id;
    x->state = I_FLOW;
    x->rem = x->bytes;
    x->rate = 0.0; /* until the settle's solve */
    x->at = now;
    x->due = UINT64_MAX;
    return SS_OK;
}

static void stop_flow(net *n, uint32_t id) { flow_remove(n->fs, inst_at(n, id)->flow); }

/* ---- link classes (lclass.h) ----
 * A ring's hops load every member's links alike, and a folded program's
 * flows also carry their copies' links (prog.h), which the layout's
 * symmetry loads alike: one link per class is left, and the flow system
 * solves one hop's and one copy's worth. Made once, before the first flow,
 * from every shape a collective of the program can load (each (group,
 * collective) with the algorithm the tuner picks for each size it is
 * called with, every candidate past 8 sizes: mark_shapes); a shape built
 * later would break it, and is an internal error. An every-rank run's replicas are
 * separate flows, whose links never match across replicas, but each
 * replica's own links still fall into classes. */

/* The sizes one (group, collective) pair is called with, as the program
 * holds them: up to MARK_SIZES distinct ones, else `all`. */
#define MARK_SIZES 8
typedef struct seen_sizes {
    uint8_t n;
    bool all;
    uint64_t b[MARK_SIZES];
} seen_sizes;

static void seen_add(seen_sizes *z, uint64_t bytes)
{
    if (z->all) return;
    for (uint32_t i = 0; i < z->n; i++)
        if (z->b[i] == bytes) return;
    if (z->n < MARK_SIZES) z->b[z->n++] = bytes;
    else z->all = true;
}

/* Mark the flow shape of candidate idx[i] of pair k (fl gains it). */
static int mark_one(net *n, uint32_t k, uint32_t base, uint32_t **fl, uint32_t *nfl,
                    uint32_t *cap, ss_err *err)
{
    uint32_t f;
    int rc = flow_shape(n, k / NCOLL, (prog_coll)(k % NCOLL), base, &f, err);
    if (!rc && !ss_grow((void **)fl, cap, 2 * (*nfl + 1), sizeof **fl)) rc = nomem(err);
    if (!rc) { /* pairs: the shape, its group */
        (*fl)[2 * *nfl] = f;
        (*fl)[2 * (*nfl)++ + 1] = k / NCOLL;
    }
    return rc;
}

/* The flow shapes the program's collectives load: marks[s] set. A pair
 * called with a few sizes loads the shape the tuner picks for each (pick
 * depends on the group, the collective and the size alone, so choose()
 * picks the same ones during the run); merging a group's copies is most of
 * a layout's network setup, so the algorithms no size picks are not
 * merged. A pair called with more sizes marks every candidate. */
static int mark_shapes(net *n, unsigned char **marks, uint32_t **pairs, uint32_t *npairs,
                       ss_err *err)
{
    uint32_t ng = prog_ngroups(n->p), npair = ng * NCOLL;
    seen_sizes *seen = calloc(npair ? npair : 1, sizeof *seen);
    if (!seen) return nomem(err);
    for (uint32_t r = 0; r < prog_nranks(n->p); r++) {
        const prog_op *ops = prog_ops(n->p, r);
        for (uint32_t i = 0; i < prog_nops(n->p, r); i++)
            if (ops[i].kind == PROG_OP_COLL)
                seen_add(&seen[prog_op_group(n->p, r, i) * NCOLL + ops[i].coll], ops[i].bytes);
    }
    uint32_t *fl = NULL, nfl = 0, cap = 0;
    int rc = SS_OK;
    for (uint32_t k = 0; k < npair && !rc; k++) {
        prog_group pg = prog_group_net(n->p, k / NCOLL);
        const seen_sizes *z = &seen[k];
        if ((!z->n && !z->all) || pg.size <= 1) continue;
        uint32_t idx[ALGO_NKINDS], nsh = 0;
        rc = candidates(n, k / NCOLL, (prog_coll)(k % NCOLL), pg, idx, &nsh, err);
        for (uint32_t i = 0; z->all && i < nsh && !rc; i++)
            rc = mark_one(n, k, idx[i], &fl, &nfl, &cap, err);
        for (uint32_t j = 0; !z->all && j < z->n && !rc; j++) {
            uint32_t best = 0;
            algo_cost cost;
            pick_of(n, idx, nsh, (prog_coll)(k % NCOLL), pg.size, z->b[j], &best, &cost);
            rc = mark_one(n, k, idx[best], &fl, &nfl, &cap, err);
        }
    }
    free(seen);
    /* the shapes flows load: merged ones for groups with copies (their
     * base shapes only price the tuner's choice), the base ones otherwise */
    if (!rc && !(*marks = calloc(n->nshapes ? n->nshapes : 1, 1))) rc = nomem(err);
    for (uint32_t i = 0; !rc && i < nfl; i++) (*marks)[fl[2 * i]] = 1;
    if (rc) free(fl);
    else *pairs = fl, *npairs = nfl;
    return rc;
}

/* A flow shape keeps one entry per class, once, so that each flow of it
 * loads that much (start_phase copies no others). What the tuner reads of
 * a shape stays: its least cap / w (a class's links have one capacity, and
 * the shape one weight on them all) and its link kinds (a class has one). */
static void keep_reps(net *n, algo_shape *x)
{
    for (uint32_t k = 0; k < x->nphase; k++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < x->nuse[k]; i++)
            if (n->rep[x->use[k][i].link] == x->use[k][i].link) x->use[k][m++] = x->use[k][i];
        x->nuse[k] = m;
    }
}

/* ---- collectives that run alone ----
 * A flow whose links no other flow can load while it runs gets the rate
 * its own links give it, from its start to its end: the flow system would
 * solve it alone (every link private: the least cap / w, flow.h) at the
 * settle after it starts, and never again. Such an instance needs no flow,
 * no settle and no wake but its end (solo_end works out the same end, wake
 * by wake). Which flows run alone: the marked flow shapes fall into
 * clusters that share a link class (union-find over their class links);
 * a cluster whose groups all have the same first engine member, whose
 * collectives on that rank all run on one stream, never has two instances
 * at once (an instance holds every member's stream until it ends, eng.h),
 * so its shapes are solo. A tensor-parallel group folded to one rank, its
 * copies on links no other group loads, is the common case. */
static uint32_t uf_find(uint32_t *up, uint32_t x)
{
    while (up[x] != x) x = up[x] = up[up[x]];
    return x;
}

static bool first_link(const algo_shape *x, uint32_t *l)
{
    for (uint32_t k = 0; k < x->nphase; k++)
        if (x->nuse[k]) {
            *l = x->use[k][0].link;
            return true;
        }
    return false;
}

/* The stream every collective of group g runs on at its first engine
 * member, into st[g]: PROG_NSTREAMS + 1 where it has none yet, PROG_NSTREAMS
 * where they differ. */
static void group_streams(const prog *p, uint8_t *st)
{
    uint32_t ng = prog_ngroups(p);
    for (uint32_t g = 0; g < ng; g++) st[g] = PROG_NSTREAMS + 1;
    for (uint32_t r = 0; r < prog_nranks(p); r++) {
        const prog_op *ops = prog_ops(p, r);
        for (uint32_t i = 0; i < prog_nops(p, r); i++) {
            if (ops[i].kind != PROG_OP_COLL) continue;
            uint32_t g = prog_op_group(p, r, i);
            if (prog_group_get(p, g).ranks[0] != r) continue;
            if (st[g] == PROG_NSTREAMS + 1) st[g] = ops[i].stream;
            else if (st[g] != ops[i].stream) st[g] = PROG_NSTREAMS;
        }
    }
}

static int find_solo(net *n, const uint32_t *pairs, uint32_t npairs, ss_err *err)
{
    uint32_t L = topo_nlinks(n->g), ng = prog_ngroups(n->p);
    uint32_t *up = malloc((L ? L : 1) * sizeof *up);
    uint32_t *lead = malloc((L ? L : 1) * sizeof *lead); /* [root]: a group, or NONE_G */
    uint8_t *st = malloc(ng ? ng : 1), *ok = malloc(L ? L : 1);
    n->solo = calloc(n->nshapes ? n->nshapes : 1, 1);
    if (!up || !lead || !st || !ok || !n->solo) {
        free(up), free(lead), free(st), free(ok);
        return nomem(err);
    }
    n->nsolo = n->nshapes;
    const uint32_t NONE_G = UINT32_MAX; /* an enum cannot hold it in ISO C */
    for (uint32_t l = 0; l < L; l++) up[l] = l, lead[l] = NONE_G, ok[l] = 1;
    for (uint32_t i = 0; i < npairs; i++) { /* one cluster per shared link */
        const algo_shape *x = &n->shapes[pairs[2 * i]];
        uint32_t a0;
        if (!first_link(x, &a0)) continue;
        uint32_t b = uf_find(up, a0); /* stays a root: only others join it */
        for (uint32_t k = 0; k < x->nphase; k++)
            for (uint32_t j = 0; j < x->nuse[k]; j++) {
                uint32_t a = uf_find(up, x->use[k][j].link);
                if (a != b) up[a] = b;
            }
    }
    group_streams(n->p, st);
    for (uint32_t i = 0; i < npairs; i++) { /* one first member, one stream */
        const algo_shape *x = &n->shapes[pairs[2 * i]];
        uint32_t a0;
        if (!first_link(x, &a0)) continue;
        uint32_t root = uf_find(up, a0), g = pairs[2 * i + 1];
        if (st[g] >= PROG_NSTREAMS) ok[root] = 0;
        else if (lead[root] == NONE_G) lead[root] = g;
        else if (prog_group_get(n->p, lead[root]).ranks[0] != prog_group_get(n->p, g).ranks[0] ||
                 st[lead[root]] != st[g])
            ok[root] = 0;
    }
    for (uint32_t i = 0; i < npairs; i++) { /* a shape with no links is left to the flows */
        uint32_t a0;
        if (first_link(&n->shapes[pairs[2 * i]], &a0)) n->solo[pairs[2 * i]] = ok[uf_find(up, a0)];
    }
    free(up), free(lead), free(st), free(ok);
    return SS_OK;
}

static int classify(net *n, ss_err *err)
{
    n->classed = true;
    if (!n->p || n->o.every_link) return SS_OK;
    unsigned char *marks = NULL;
    uint32_t *pairs = NULL, npairs = 0;
    int rc = mark_shapes(n, &marks, &pairs, &npairs, err);
    const algo_shape **sh = rc ? NULL : malloc((n->nshapes ? n->nshapes : 1) * sizeof *sh);
    uint32_t k = 0;
    if (!rc && !sh) rc = nomem(err);
    for (uint32_t s = 0; !rc && s < n->nshapes; s++)
        if (marks[s]) sh[k++] = &n->shapes[s];
    if (!rc) rc = lclass_make(n->g, sh, k, &n->rep, &n->loaded, &n->solved, err);
    for (uint32_t s = 0; !rc && s < n->nshapes; s++)
        if (marks[s]) keep_reps(n, &n->shapes[s]);
    if (!rc && !n->o.no_solo) rc = find_solo(n, pairs, npairs, err);
    free(sh);
    free(marks);
    free(pairs);
    return rc;
}

/* ---- eng_net ---- */

static int choose(net *n, uint32_t gid, prog_coll c, prog_group pg, ss_bytes bytes, inst *x,
                  ss_err *err);

/* When a solo instance (find_solo) started at `now` ends, into *end: its
 * latency, then each phase at the rate the flow system gives a flow alone
 * (flow_alone_rate), woken at due_of and again while rounding left more
 * than a byte, as the flow's own wakes would be. */
static int solo_end(net *n, const inst *x, ss_ns now, ss_ns *end, ss_err *err)
{
    ss_ns t = now + x->cost.latency_ns;
    for (uint32_t k = 0; k < n->shapes[x->fshape].nphase; k++) {
        uint32_t nu;
        double cap;
        int rc = phase_use(n, x, k, &nu, &cap, err);
        if (rc) return rc;
        double rate = flow_alone_rate(n->fs, n->scratch, nu, cap);
        inst f = {.bytes = x->bytes, .rem = x->bytes, .rate = rate, .at = t};
        ss_ns due = due_of(&f, rate, t);
        for (;;) {
            catch_up(&f, due);
            if (!(f.rem > 1.0 + 1e-9 * f.bytes)) break;
            due = due_of(&f, rate, due);
        }
        t = due;
    }
    *end = t;
    return SS_OK;
}

static int on_start(void *ctx, uint32_t id, prog_coll c, prog_group pg, uint32_t gid,
                    ss_bytes bytes, ss_ns now, eng_wakes *w, ss_err *err)
{
    net *n = ctx;
    int rc = inst_take(n, id, err);
    if (rc) return rc;
    inst *x = inst_at(n, id);
    *x = (inst){.state = I_DONE, .bytes = (double)bytes};
    if (pg.size <= 1) return eng_wake_at(w, id, now, err);
    rc = n->classed ? SS_OK : classify(n, err);
    if (!rc) rc = choose(n, gid, c, pg, bytes, x, err);
    if (rc) return rc;
    if (bytes && x->fshape < n->nsolo && n->solo[x->fshape]) {
        ss_ns end;
        x->state = I_DONE;
        rc = solo_end(n, x, now, &end, err);
        return rc ? rc : eng_wake_at(w, id, end, err);
    }
    x->state = bytes ? I_LATENCY : I_DONE;
    return eng_wake_at(w, id, now + x->cost.latency_ns, err);
}

/* The entry of tune for key (gid * NCOLL + coll) into *k, made empty on
 * the key's first call. */
static int tuned_of(net *n, uint32_t key, uint32_t *k, ss_err *err)
{
    if (key >= n->ntkey) {
        if (!ss_grow((void **)&n->tkey, &n->cap_tkey, key + 1, sizeof *n->tkey)) return nomem(err);
        memset(n->tkey + n->ntkey, 0, (size_t)(key + 1 - n->ntkey) * sizeof *n->tkey);
        n->ntkey = key + 1;
    }
    if (!n->tkey[key]) {
        if (!ss_grow((void **)&n->tune, &n->cap_tune, n->ntune + 1, sizeof *n->tune))
            return nomem(err);
        n->tune[n->ntune] = (struct tuned){0};
        n->tkey[key] = ++n->ntune;
    }
    *k = n->tkey[key] - 1;
    return SS_OK;
}

/* The tuner's choice for an instance of c over group gid: a group calls
 * the same collective with the same few sizes over and over (per layer,
 * per micro-batch), so its last choices are kept (struct tuned). */
static int choose(net *n, uint32_t gid, prog_coll c, prog_group pg, ss_bytes bytes, inst *x,
                  ss_err *err)
{
    uint32_t k = 0, j = 0;
    int rc = tuned_of(n, gid * NCOLL + (uint32_t)c, &k, err);
    if (rc) return rc;
    while (j < TUNE_WAYS && !(n->tune[k].w[j].set && n->tune[k].w[j].bytes == bytes)) j++;
    if (j == TUNE_WAYS) {
        uint32_t idx[ALGO_NKINDS], nsh, best = 0;
        algo_cost cost;
        rc = candidates(n, gid, c, pg, idx, &nsh, err);
        if (rc) return rc;
        pick_of(n, idx, nsh, c, pg.size, bytes, &best, &cost);
        const uint32_t *gpu = n->o.profile ? gpus_of(n, pg.ranks, pg.size, err) : pg.ranks;
        if (!gpu) return SS_E_NOMEM;
        calibrate(n, c, gpu, pg.size, bytes, &cost);
        uint32_t fshape;
        rc = flow_shape(n, gid, c, idx[best], &fshape, err);
        if (rc) return rc;
        struct tuned *t = &n->tune[k];
        j = t->next;
        t->next = (t->next + 1) % TUNE_WAYS;
        t->w[j].bytes = bytes, t->w[j].cost = cost, t->w[j].shape = idx[best];
        t->w[j].fshape = fshape, t->w[j].set = true;
    }
    const struct tuned *t = &n->tune[k];
    x->cost = t->w[j].cost;
    x->shape = t->w[j].shape;
    x->fshape = t->w[j].fshape;
    return SS_OK;
}

static int on_wake(void *ctx, uint32_t id, ss_ns now, bool *done, eng_wakes *w, ss_err *err)
{
    net *n = ctx;
    inst *x = inst_at(n, id);
    if (x->state == I_FLOW) catch_up(x, now);
    if (x->state == I_DONE) {
        *done = true;
        inst_give(n, id);
        return SS_OK;
    }
    if (x->state == I_LATENCY) {
        x->phase = 0;
    } else {
        /* woken at its due time: within a byte (or a ppb) of the end */
        if (x->rem > 1.0 + 1e-9 * x->bytes) { /* rounding left more: come back */
            x->due = due_of(x, x->rate, now);
            return eng_wake_at(w, id, x->due, err);
        }
        stop_flow(n, id);
        if (++x->phase == n->shapes[x->shape].nphase) {
            *done = true;
            inst_give(n, id);
            changed(n, now, w);
            return SS_OK;
        }
    }
    int rc = start_phase(n, id, now, err);
    if (!rc) changed(n, now, w);
    return rc;
}

static int on_settle(void *ctx, ss_ns now, eng_wakes *w, ss_err *err)
{
    net *n = ctx;
    return n->dirty ? resolve(n, now, w, err) : SS_OK;
}

eng_net net_eng(net *n, const prog *p)
{
    n->p = p;
    eng_net e = {.ctx = n, .coll_ns = NULL, .start = on_start, .wake = on_wake, .settle = on_settle};
    return e;
}

int net_coll_alone(net *n, prog_coll c, const uint32_t *ranks, uint32_t nranks, ss_bytes bytes,
                   net_alone *out, ss_err *err)
{
    *out = (net_alone){0};
    if (nranks <= 1) return SS_OK;
    algo_shape own[ALGO_NKINDS];
    const algo_shape *sh[ALGO_NKINDS];
    uint32_t nsh = 0, best = 0;
    const uint32_t *gpu = gpus_of(n, ranks, nranks, err);
    int rc = gpu ? SS_OK : SS_E_NOMEM;
    for (int pass = 0; pass < 2 && nsh == 0 && !rc; pass++)
        for (int a = ALGO_RING; a < ALGO_NKINDS && !rc; a++) {
            if (!considered(n, pass, a) || !algo_applies(n->g, c, gpu, nranks, (algo_kind)a))
                continue;
            rc = algo_shape_build(n->g, c, gpu, nranks, (algo_kind)a, &own[nsh], err);
            if (!rc) {
                sh[nsh] = &own[nsh];
                nsh++;
            }
        }
    if (!rc && nsh) {
        algo_cost k;
        pick(n, sh, nsh, c, nranks, bytes, &best, &k);
        calibrate(n, c, gpu, nranks, bytes, &k);
        *out = (net_alone){k.algo, k.proto, k.latency_ns, k.iso_s};
    }
    for (uint32_t i = 0; i < nsh; i++) algo_shape_fini(&own[i]);
    return rc;
}
