/* Collective algorithms and the tuner. algo.h states the contract. */
#include "algo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/idtab.h"
#include "../core/vec.h"

#define ALGO_NAME_(id, name) name,
const char *const algo_kind_names[] = {ALGO_KINDS(ALGO_NAME_)};
const char *const algo_proto_names[] = {ALGO_PROTOS(ALGO_NAME_)};
#undef ALGO_NAME_

#define MAX_CYCLES 64 /* mesh rings used at most */

/* ---- The latency model, in us: NCCL's formula (src/graph/tuning.cc) ----
 * Indexed [proto - 1] for LL, LL128, Simple. The constants are not any one
 * NCCL version's (DECISIONS.md 165): base latencies, ring and LL/LL128
 * steps as 2.19-2.29 (v2.29.7-1's ncclTunerConstantsDefaults); a ring's
 * network Simple step 9.6 as 2.14-2.17 (14 from 2.18); a tree's Simple
 * steps 28 as 2.19-2.22 (4 and 14 from 2.23), its network Simple step 50
 * (no version); NVLS 23 of base and 23 of switch step (one of the two in
 * every version: 23 to 2.20, 25 from 2.21), NVLS_TREE's network steps at
 * the tree's. NCCL's own values by version, used for both the choice and
 * the time or for the choice alone, fit the nccl-tests corpus worse or no
 * better (median over 63 tables 6.8% / 6.0% against 6.0%), so these stay
 * until the NVLS and NVLS_TREE ramps they stand in for are modelled: a
 * regression guard on the corpus, not a transcription. */
enum { HW_NVLINK, HW_PCI, HW_NET };
static const double base_lat[ALGO_NKINDS][3] = {
    [ALGO_RING] = {6.6, 14.0, 8.4}, [ALGO_TREE] = {6.8, 14.0, 0.0},
    [ALGO_NVLS] = {0.0, 0.0, 23.0}, [ALGO_NVLS_TREE] = {0.0, 0.0, 23.0},
    [ALGO_HIER] = {6.6, 14.0, 8.4},
    [ALGO_DIRECT] = {6.6, 14.0, 8.4},
};
static const double hw_lat_ring[3][3] = {
    [HW_NVLINK] = {0.6, 1.9, 3.4}, [HW_PCI] = {1.0, 2.5, 5.7}, [HW_NET] = {2.7, 4.0, 9.6}};
static const double hw_lat_tree[3][3] = {
    [HW_NVLINK] = {0.6, 1.25, 28.0}, [HW_PCI] = {1.0, 1.9, 28.0}, [HW_NET] = {5.0, 8.5, 50.0}};
static const double nvls_lat = 23.0;
/* PAT (all_gather and reduce_scatter at one GPU per node, NCCL 2.23+):
 * 8 us, plus log2(nodes) network steps at 1/3.5 of the tree's Simple
 * network step (14 us; PAT runs at one GPU per node, where NCCL charges
 * every algorithm the tree's network latency), plus 2.8 us per rank ("still
 * a linear part"); bus bandwidth x 0.85 in 2.23, x 0.75 from 2.24
 * (ncclTopoTuneModel, src/graph/tuning.cc, v2.23.4 to v2.30). */
#define PAT_BASE_US 8.0
#define PAT_NET_STEP_US 14.0 /* the tree's Simple network step */
#define PAT_PIPELINE 3.5     /* NCCL divides PAT's network steps by it */
#define PAT_RANK_US 2.8
#define NCCL_PAT 22300       /* PAT first ships */
#define NCCL_PAT_075 22400   /* PAT's bandwidth factor 0.75 (0.85 before) */
#define NCCL_NVLS 21700      /* NVLS (NVLink SHARP) first ships */
#define NCCL_NVLS_TREE 21800 /* NVLS_TREE first ships */
#define TREE_BW_FACTOR 0.9 /* NCCL: tree busBw * .9 */
/* CollNet Direct (src/graph/tuning.cc, 2.19-2.30): its bus bandwidth x
 * 0.85 from compute capability 9.0 on; latency 2 (min(1, ppn - 1) x 3.7 us
 * over NVLink + (ppn - 1) x 0.4 us of arity serialization) + one network
 * step of 31 us, Simple only. */
#define COLLNET_BW_FACTOR 0.85
#define COLLNET_NVL_US 3.7
#define COLLNET_ARITY_US 0.4
#define COLLNET_NET_US 31.0
/* NCCL's tree correction: trees reach only this fraction of their modelled
 * bandwidth at medium sizes; index log2(bytes / 64), 64 B .. 512 MiB, per
 * protocol LL, LL128, Simple (treeCorrectionFactor, src/graph/tuning.cc,
 * NCCL 2.2x; "Trees are not perfectly sticking to the model for medium
 * sizes"). NCCL's tuner applies it to all-reduce trees; so does ours, and
 * the flows run at the corrected rate. */
#define TREE_CORR_N 24
static const double tree_corr[3][TREE_CORR_N] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9, .9}};

/* NCCL's per-channel bus bandwidth caps, GB/s, [arch][nodes: 1, 2, more]
 * (src/graph/tuning.cc, perChMaxRingLL128Bws, perChMaxTreeLL128Bws,
 * perChMaxTreeBws; the same from 2.19 to 2.30, Blackwell from 2.24); arch
 * Volta, Ampere, Hopper, Blackwell. See algo.h, "Channel caps". */
static const double ch_ring_ll128[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
static const double ch_tree_ll128[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double ch_tree[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};

/* Ring CTAs across nodes (algo.h): one CTA's bus bandwidth on a Simple
 * ring, by architecture, GB/s; 0: not measured, no cap. Hopper: fitted to
 * the corpus's eight-GPU-per-node ring tables with leave-one-source-out
 * cross-validation (tests/e2e/ring-cta-fit.sh; DECISIONS.md 161). */
#define RING_CTA_HOPPER_GBPS 20.0
static const double ring_cta_GBps[4] = {0.0, 0.0, RING_CTA_HOPPER_GBPS, 0.0};

/* NCCL's network speeds (GB/s per channel) its ring search tries, fastest
 * first (src/graph/search.cc, speedArrayInter and its sm90 / sm100
 * variants, 2.19 to 2.30). */
static const double speeds_inter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                      7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const double speeds_sm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
static const double speeds_sm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                      20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
#define NSPEEDS(a) (sizeof a / sizeof *a)
/* NCCL's channel limit (MAXCHANNELS, src/include/device.h): 32 up to
 * 2.24, 64 from 2.25 (v2.24.3-1, v2.25.1-1) */
#define NCCL_MAXCHANNELS_64 22500

/* The NVSwitch's reduce and multicast rate as a fraction of the GPU's
 * NVLink rate, by architecture: NCCL's nvlsEfficiency (src/graph/tuning.cc,
 * 2.19-2.30: {Volta 0, Ampere 0, Hopper 0.85, Blackwell 0.74}). Only Hopper
 * and Blackwell parts have NVLS switches. */
static double nvls_efficiency(const topo *g) { return topo_cc(g) >= 100 ? 0.74 : 0.85; }

/* ---- usage accumulation: one entry per link, weights summed as the
 * paths are added (an open-addressing table finds a link's entry), sorted
 * by link at the end. A link's sum is in the order its paths were added,
 * so the result depends on the construction alone. ---- */

#define NICS_MAX 32 /* NICs one member uses, at most */

/* Which NICs each member of the group uses across nodes (algo.h, "NIC
 * locality"). Members are ascending, so a node's members are contiguous. */
typedef struct nicmap {
    const topo *g;
    const uint32_t *r;
    uint32_t n;
    uint8_t *cnt;            /* [n] */
    uint8_t (*nic)[NICS_MAX]; /* [n] */
} nicmap;

typedef struct acc {
    flow_use *u;
    uint32_t n, cap;
    ss_idtab links; /* link -> its entry in u */
    uint32_t *pos;  /* or, given a scratch: 1 + its entry by link, 0 elsewhere */
    ss_ns wire;     /* longest path latency added */
    bool nomem;
    const nicmap *nm; /* NULL: every edge by topo_route's default rail */
} acc;

/* Leave the scratch map as it was given: zero. */
static void acc_unmap(acc *a)
{
    for (uint32_t i = 0; a->pos && i < a->n; i++) a->pos[a->u[i].link] = 0;
}

static void acc_free(acc *a)
{
    acc_unmap(a);
    free(a->u);
    a->u = NULL;
    a->n = a->cap = 0;
    ss_idtab_fini(&a->links);
}

static uint32_t link_hash(uint32_t l) { return l * 2654435761u; }

static uint32_t entry_hash(const void *ctx, uint32_t id)
{
    return link_hash(((const acc *)ctx)->u[id].link);
}

static bool entry_is(const void *ctx, uint32_t id, const void *link)
{
    return ((const acc *)ctx)->u[id].link == *(const uint32_t *)link;
}

static void acc_add(acc *a, uint32_t link, double w)
{
    if (a->pos) {
        uint32_t *p = &a->pos[link];
        if (*p) {
            a->u[*p - 1].w += w;
        } else if (ss_grow((void **)&a->u, &a->cap, a->n + 1, sizeof *a->u)) {
            a->u[a->n++] = (flow_use){link, w};
            *p = a->n;
        } else {
            a->nomem = true;
        }
        return;
    }
    if (!ss_idtab_reserve(&a->links, a->n, 64, entry_hash, a)) {
        a->nomem = true;
        return;
    }
    uint32_t k = ss_idtab_find(&a->links, link_hash(link), entry_is, a, &link);
    if (a->links.slot[k]) {
        a->u[a->links.slot[k] - 1].w += w;
        return;
    }
    if (!ss_grow((void **)&a->u, &a->cap, a->n + 1, sizeof *a->u)) {
        a->nomem = true;
        return;
    }
    a->u[a->n++] = (flow_use){link, w};
    a->links.slot[k] = a->n;
}

static void acc_path(acc *a, const topo *g, const uint32_t *path, uint32_t n, double w)
{
    for (uint32_t i = 0; i < n && !a->nomem; i++) acc_add(a, path[i], w);
    ss_ns lat = topo_path_latency(g, path, n);
    if (lat > a->wire) a->wire = lat;
}

/* acc_path for a route across nodes: a NIC moves its bytes over the PCIe
 * legs by GPUDirect RDMA, which weighs more there (topo_link_net_weight). */
static void acc_net_path(acc *a, const topo *g, const uint32_t *path, uint32_t n, double w)
{
    for (uint32_t i = 0; i < n && !a->nomem; i++)
        acc_add(a, path[i], w * topo_link_net_weight(g, path[i]));
    ss_ns lat = topo_path_latency(g, path, n);
    if (lat > a->wire) a->wire = lat;
}

/* Member index of GPU x (members ascending), n when absent. */
static uint32_t member_idx(const nicmap *m, uint32_t x)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (m->r[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->n && m->r[lo] == x ? lo : m->n;
}

/* The members on x's node: [*lo, *hi). */
static void node_members(const nicmap *m, uint32_t x, uint32_t *lo, uint32_t *hi)
{
    uint32_t node = topo_node_of(m->g, m->r[x]);
    *lo = *hi = x;
    while (*lo > 0 && topo_node_of(m->g, m->r[*lo - 1]) == node) (*lo)--;
    while (*hi < m->n && topo_node_of(m->g, m->r[*hi]) == node) (*hi)++;
}

/* NCCL's choice of NICs per GPU (ncclTopoGetLocalNet, src/graph/topo.cc,
 * 2.19+): a GPU uses its local NICs, which it shares with the other
 * members local to the same NICs: each takes ceil(nics / those members)
 * of them, starting at its own index among them. GPUs of the node that
 * are not members do not count (NCCL's topology holds the communicator's
 * GPUs only). */
static void nicmap_fill(nicmap *m)
{
    uint32_t gpn = topo_gpus_per_node(m->g), L[NICS_MAX], L2[NICS_MAX];
    for (uint32_t i = 0; i < m->n; i++) {
        uint32_t nl = topo_local_nics(m->g, m->r[i] % gpn, L), lo, hi, k = 0, idx = 0;
        node_members(m, i, &lo, &hi);
        for (uint32_t j = lo; j < hi; j++) {
            uint32_t nl2 = topo_local_nics(m->g, m->r[j] % gpn, L2);
            if (nl2 != nl || memcmp(L, L2, nl * sizeof *L)) continue;
            if (j == i) idx = k;
            k++;
        }
        uint32_t use = nl ? (nl + k - 1) / k : 0;
        m->cnt[i] = (uint8_t)use;
        for (uint32_t c = 0; c < use; c++) m->nic[i][c] = (uint8_t)L[(idx * use + c) % nl];
    }
}

static int nicmap_init(nicmap *m, const topo *g, const uint32_t *r, uint32_t n, ss_err *err)
{
    *m = (nicmap){.g = g, .r = r, .n = n};
    m->cnt = calloc(n, sizeof *m->cnt);
    m->nic = calloc(n, sizeof *m->nic);
    if (!m->cnt || !m->nic) {
        free(m->cnt);
        free(m->nic);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a collective's NIC map");
    }
    nicmap_fill(m);
    return SS_OK;
}

static void nicmap_fini(nicmap *m)
{
    free(m->cnt);
    free(m->nic);
}

/* The NICs a side of an edge offers, each with the member that owns it. */
typedef struct side {
    uint32_t n, nic[NICS_MAX], owner[NICS_MAX];
} side;

static bool side_find(const side *s, uint32_t nic, uint32_t *owner)
{
    for (uint32_t i = 0; i < s->n; i++)
        if (s->nic[i] == nic) {
            if (owner) *owner = s->owner[i];
            return true;
        }
    return false;
}

static void side_add(side *s, const nicmap *m, uint32_t i)
{
    for (uint32_t c = 0; c < m->cnt[i] && s->n < NICS_MAX; c++)
        if (!side_find(s, m->nic[i][c], NULL)) {
            s->nic[s->n] = m->nic[i][c];
            s->owner[s->n++] = m->r[i];
        }
}

/* The NICs the members on the first member's node use: that node's
 * channels across nodes. */
static uint32_t node_nics(const nicmap *m)
{
    side sd = {0};
    uint32_t node = topo_node_of(m->g, m->r[0]);
    for (uint32_t i = 0; i < m->n && topo_node_of(m->g, m->r[i]) == node; i++) side_add(&sd, m, i);
    return sd.n;
}

/* Member x alone (a point-to-point peer) or every member of its node (a
 * ring or tree edge between nodes: NCCL's channels enter and leave a node
 * through different members, so the node's traffic spreads over all the
 * members' NICs). */
static side side_of(const nicmap *m, uint32_t x, bool whole_node)
{
    side s = {0};
    uint32_t i = member_idx(m, x), lo = i, hi = i + 1;
    if (i == m->n) return s;
    if (whole_node) node_members(m, i, &lo, &hi);
    for (uint32_t j = lo; j < hi; j++) side_add(&s, m, j);
    return s;
}

/* PXN: a member of the sender's node that owns NIC `nic` (NCCL sends
 * through the NIC on the receiver's rail, from the GPU local to it, when
 * that GPU is in the communicator). */
static bool pxn_owner(const nicmap *m, uint32_t s, uint32_t nic, uint32_t *owner)
{
    uint32_t i = member_idx(m, s), lo, hi;
    if (i == m->n) return false;
    node_members(m, i, &lo, &hi);
    for (uint32_t j = lo; j < hi; j++)
        for (uint32_t c = 0; c < m->cnt[j]; c++)
            if (m->nic[j][c] == nic) {
                *owner = m->r[j];
                return true;
            }
    return false;
}

/* One channel of an edge across nodes: send NIC k of S, received on the
 * same rail when R has it (or, point to point on a rail-optimized fabric,
 * the sender proxies to the member owning the receiver's rail), else on
 * R's NIC k. */
static topo_hop pick_hop(const nicmap *m, uint32_t s, uint32_t d, const side *S, const side *R,
                         uint32_t k, bool p2p)
{
    topo_hop h = {.a = s, .b = d};
    h.nic_b = R->nic[k % R->n];
    h.via_b = R->owner[k % R->n];
    if (side_find(S, h.nic_b, &h.via_a) ||
        (p2p && topo_rail_optimized(m->g) && pxn_owner(m, s, h.nic_b, &h.via_a))) {
        h.nic_a = h.nic_b;
        return h;
    }
    h.nic_a = S->nic[k % S->n];
    h.via_a = S->owner[k % S->n];
    if (!p2p && side_find(R, h.nic_a, &h.via_b)) h.nic_b = h.nic_a;
    return h;
}

/* s -> d carrying w per payload byte. Across nodes, split evenly over the
 * channels the NIC map gives (pick_hop); node-wide for ring and tree edges
 * (whole_node), the two GPUs' own NICs for point to point. A ring or tree
 * channel runs from the member that owns its send NIC to the one that owns
 * its receive NIC: NCCL orders each channel's ring inside the node so that
 * it leaves and enters there, so the hop puts nothing on NVLink (the edges
 * inside the node stay those of the ranks' order). */
static void acc_hop(acc *a, const topo *g, uint32_t s, uint32_t d, double w, bool whole_node)
{
    static _Thread_local uint32_t path[TOPO_PATH_MAX];
    const nicmap *m = a->nm;
    if (topo_node_of(g, s) == topo_node_of(g, d)) {
        acc_path(a, g, path, topo_route(g, s, d, -1, path), w);
        return;
    }
    if (topo_nics_per_node(g) == 0 || !m) {
        acc_net_path(a, g, path, topo_route(g, s, d, -1, path), w);
        return;
    }
    side S = side_of(m, s, whole_node), R = side_of(m, d, whole_node);
    if (S.n == 0 || R.n == 0) {
        acc_net_path(a, g, path, topo_route(g, s, d, -1, path), w);
        return;
    }
    uint32_t ch = S.n > R.n ? S.n : R.n;
    for (uint32_t k = 0; k < ch; k++) {
        topo_hop h = pick_hop(m, s, d, &S, &R, k, !whole_node);
        if (whole_node) { /* the channel's ring leaves and enters at the NICs' owners */
            h.a = h.via_a;
            h.b = h.via_b;
        }
        acc_net_path(a, g, path, topo_route_nics(g, &h, path), w / ch);
    }
}

static void acc_edge(acc *a, const topo *g, uint32_t s, uint32_t d, double w)
{
    acc_hop(a, g, s, d, w, true);
}

static void acc_p2p(acc *a, const topo *g, uint32_t s, uint32_t d, double w)
{
    acc_hop(a, g, s, d, w, false);
}

/* The entries in link order. */
static int acc_finish(acc *a, flow_use **use, uint32_t *n, ss_err *err)
{
    ss_idtab_fini(&a->links);
    acc_unmap(a);
    if (a->nomem) {
        free(a->u);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a collective's flows");
    }
    int rc = flow_use_sort(a->u, a->n, err);
    if (rc) {
        free(a->u);
        return rc;
    }
    *use = a->u;
    *n = a->n;
    return SS_OK;
}

/* ---- group shape ---- */

static uint32_t count_nodes(const topo *g, const uint32_t *r, uint32_t n)
{
    uint32_t k = 1;
    for (uint32_t i = 1; i < n; i++) k += topo_node_of(g, r[i]) != topo_node_of(g, r[i - 1]);
    return k;
}

/* Same number of ranks on every node, and ranks grouped by node. */
static bool regular(const topo *g, const uint32_t *r, uint32_t n, uint32_t nodes)
{
    if (n % nodes) return false;
    uint32_t ppn = n / nodes;
    for (uint32_t i = 0; i < n; i++)
        if (topo_node_of(g, r[i]) != topo_node_of(g, r[(i / ppn) * ppn])) return false;
    return true;
}

bool algo_is_p2p(prog_coll c)
{
    return c == PROG_COLL_SEND_RECV || c == PROG_COLL_SEND_UP || c == PROG_COLL_SEND_DOWN;
}

/* Collectives whose peers each carry 1/n of the payload: all_to_all, and
 * gather and scatter between the root and each other member; direct runs
 * them, as NCCL runs them from grouped sends and receives. */
static bool spread(prog_coll c)
{
    return c == PROG_COLL_ALL_TO_ALL || c == PROG_COLL_GATHER || c == PROG_COLL_SCATTER;
}

static double ring_factor(prog_coll c, uint32_t n)
{
    double k = (double)(n - 1) / n;
    if (c == PROG_COLL_ALL_REDUCE) return 2.0 * k;
    if (c == PROG_COLL_BROADCAST || c == PROG_COLL_REDUCE || algo_is_p2p(c)) return 1.0;
    return k;
}

/* ---- ring ---- */

static bool direct(const topo *g, uint32_t a, uint32_t b)
{
    uint32_t path[TOPO_PATH_MAX];
    return topo_node_of(g, a) == topo_node_of(g, b) && topo_route(g, a, b, -1, path) == 1;
}

typedef struct cyc {
    const topo *g;
    const uint32_t *r;
    uint32_t n, k, ncyc;
    uint32_t cur[64], all[MAX_CYCLES][64];
    bool used[64];
} cyc;

/* Hamiltonian cycles over direct links from member 0, each undirected
 * cycle once (second member below the last). */
static void cycles_dfs(cyc *c)
{
    if (c->ncyc == MAX_CYCLES) return;
    if (c->k == c->n) {
        if (c->cur[1] < c->cur[c->n - 1] && direct(c->g, c->r[c->cur[c->n - 1]], c->r[0])) {
            for (uint32_t i = 0; i < c->n; i++) c->all[c->ncyc][i] = c->cur[i];
            c->ncyc++;
        }
        return;
    }
    for (uint32_t m = 1; m < c->n; m++) {
        if (c->used[m] || !direct(c->g, c->r[c->cur[c->k - 1]], c->r[m])) continue;
        c->used[m] = true;
        c->cur[c->k++] = m;
        cycles_dfs(c);
        c->k--;
        c->used[m] = false;
    }
}

static bool mesh_rings(const topo *g, const uint32_t *r, uint32_t n, double w, acc *a)
{
    if (n < 3 || n > 64 || !direct(g, r[0], r[1])) return false;
    cyc *c = calloc(1, sizeof *c);
    if (!c) {
        a->nomem = true;
        return true;
    }
    *c = (cyc){.g = g, .r = r, .n = n, .k = 1};
    cycles_dfs(c);
    bool ok = c->ncyc > 0;
    double share = w / (2.0 * c->ncyc);
    for (uint32_t y = 0; y < c->ncyc; y++)
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x0 = r[c->all[y][i]], x1 = r[c->all[y][(i + 1) % n]];
            acc_edge(a, g, x0, x1, share);
            acc_edge(a, g, x1, x0, share);
        }
    free(c);
    return ok;
}

static void ring(const topo *g, prog_coll c, const uint32_t *r, uint32_t n, bool one_node,
                 acc *a)
{
    double w = ring_factor(c, n);
    if (one_node && mesh_rings(g, r, n, w, a)) return;
    if (c == PROG_COLL_REDUCE) { /* broadcast's chain, into the root */
        for (uint32_t i = 0; i + 1 < n; i++) acc_edge(a, g, r[i + 1], r[i], w);
        return;
    }
    uint32_t edges = c == PROG_COLL_BROADCAST ? n - 1 : n;
    for (uint32_t i = 0; i < edges; i++) acc_edge(a, g, r[i], r[(i + 1) % n], w);
}

/* ---- tree ---- */

/* NCCL's binary trees over m positions keep edges short: position p != 0
 * with lowest set bit b hangs under (p ^ b) | 2b, or p ^ b past the end, so
 * most edges join neighbours (inside a pod). Returns the parent of p. */
static uint32_t btree_parent(uint32_t p, uint32_t m)
{
    uint32_t b = p & -p, up = (p ^ b) | (b << 1);
    return up < m ? up : p ^ b;
}

/* Tree t's position of node x: the second tree mirrors the first (even m)
 * or shifts it by one (odd m), so a node inner in one is a leaf in the
 * other. The map is its own inverse for the mirror; for the shift, inv. */
static uint32_t tree_pos(uint32_t t, uint32_t x, uint32_t m)
{
    if (t == 0) return x;
    return m % 2 == 0 ? m - 1 - x : (x + m - 1) % m;
}

static uint32_t tree_node(uint32_t t, uint32_t pos, uint32_t m)
{
    if (t == 0) return pos;
    return m % 2 == 0 ? m - 1 - pos : (pos + 1) % m;
}

/* The parent node of node x in tree t (x not the tree's root). */
static uint32_t tree_parent(uint32_t t, uint32_t x, uint32_t m)
{
    return tree_node(t, btree_parent(tree_pos(t, x, m), m), m);
}

/* Two binary trees over the m nodes (tree_pos), each half the payload up
 * and down; a chain inside each node carries both. */
static void tree(const topo *g, const uint32_t *r, uint32_t n, uint32_t m, acc *a)
{
    uint32_t ppn = n / m;
    for (uint32_t x = 0; x < m; x++)
        for (uint32_t j = 0; j + 1 < ppn; j++) {
            acc_edge(a, g, r[x * ppn + j], r[x * ppn + j + 1], 1.0);
            acc_edge(a, g, r[x * ppn + j + 1], r[x * ppn + j], 1.0);
        }
    for (uint32_t t = 0; t < 2; t++)
        for (uint32_t child = 0; child < m; child++) {
            if (tree_pos(t, child, m) == 0) continue; /* the root */
            uint32_t rc = r[child * ppn], rp = r[tree_parent(t, child, m) * ppn];
            acc_edge(a, g, rc, rp, 0.5);
            acc_edge(a, g, rp, rc, 0.5);
        }
}

/* ---- nvls ---- */

static void nvls(const topo *g, const uint32_t *r, uint32_t n, acc *a)
{
    uint32_t path[TOPO_PATH_MAX];
    double w = (1.0 + 1.0 / n) / nvls_efficiency(g);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t peer = r[(i + 1) % n];
        uint32_t k = topo_route(g, r[i], peer, -1, path);
        acc_path(a, g, path, 1, w);                    /* GPU -> switch */
        k = topo_route(g, peer, r[i], -1, path);
        acc_path(a, g, path + k - 1, 1, w);            /* switch -> GPU */
    }
}

/* ---- nvls_tree ---- */

/* NVLS inside each node, and per local rank j a double binary tree over
 * the nodes on rail j carrying 1/ppn of the payload (NCCL's NVLS_TREE). */
static void nvls_tree(const topo *g, const uint32_t *r, uint32_t n, uint32_t m, acc *a)
{
    uint32_t ppn = n / m;
    for (uint32_t x = 0; x < m; x++) nvls(g, r + x * ppn, ppn, a);
    for (uint32_t j = 0; j < ppn; j++) {
        for (uint32_t t = 0; t < 2; t++)
            for (uint32_t child = 0; child < m; child++) {
                if (tree_pos(t, child, m) == 0) continue;
                uint32_t parent = tree_parent(t, child, m);
                uint32_t rc = r[child * ppn + j], rp = r[parent * ppn + j];
                acc_p2p(a, g, rc, rp, 0.5 / ppn);
                acc_p2p(a, g, rp, rc, 0.5 / ppn);
            }
    }
}

/* ---- hierarchical ---- */

/* Rings inside every node over its ppn ranks, factor w each. */
static void hier_intra(const topo *g, const uint32_t *r, uint32_t m, uint32_t ppn, double w,
                       acc *a)
{
    if (ppn < 2) return;
    for (uint32_t x = 0; x < m; x++)
        for (uint32_t j = 0; j < ppn; j++)
            acc_edge(a, g, r[x * ppn + j], r[x * ppn + (j + 1) % ppn], w);
}

/* Rings across nodes, one per local rank on its own rail, factor w. */
static void hier_inter(const topo *g, const uint32_t *r, uint32_t m, uint32_t ppn, double w,
                       acc *a)
{
    for (uint32_t j = 0; j < ppn; j++)
        for (uint32_t x = 0; x < m; x++)
            acc_p2p(a, g, r[x * ppn + j], r[((x + 1) % m) * ppn + j], w);
}

/* ---- direct ---- */

/* From every one of r's n members to every other, factor w each. */
static void all_pairs(const topo *g, const uint32_t *r, uint32_t n, double w, acc *a)
{
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (i != j) acc_p2p(a, g, r[i], r[j], w);
}

static void direct_all(const topo *g, prog_coll c, const uint32_t *r, uint32_t n, acc *a)
{
    if (c == PROG_COLL_SEND_UP || c == PROG_COLL_SEND_DOWN) { /* one way, 2 members */
        bool up = c == PROG_COLL_SEND_UP;
        acc_p2p(a, g, r[up ? 0 : n - 1], r[up ? n - 1 : 0], 1.0);
        return;
    }
    if (c == PROG_COLL_SEND_RECV) { /* a shift by one: every member's payload once */
        for (uint32_t i = 0; i < n; i++) acc_p2p(a, g, r[i], r[(i + 1) % n], 1.0);
        return;
    }
    if (c == PROG_COLL_GATHER || c == PROG_COLL_SCATTER) { /* 1/n between the root and each */
        for (uint32_t i = 1; i < n; i++)
            acc_p2p(a, g, c == PROG_COLL_GATHER ? r[i] : r[0], c == PROG_COLL_GATHER ? r[0] : r[i],
                    1.0 / n);
        return;
    }
    all_pairs(g, r, n, 1.0 / n, a);
}

/* ---- collnet ---- */

/* NCCL's CollNet Direct all-reduce: inside each node a direct
 * reduce-scatter to the ppn heads and an all-gather back (1/ppn of the
 * payload from each member to each other in each, 2/ppn in all), and each
 * head's shard once up to the fabric's switches and once down, which
 * reduce across the nodes in the network: on a NIC 1/ppn of the payload
 * each way whatever the node count. The switches' own traffic is not
 * modelled; the NIC legs are carried as the per-rail rings of the
 * hierarchical algorithm, which load every NIC the same. */
static void collnet(const topo *g, const uint32_t *r, uint32_t n, uint32_t m, acc *a)
{
    uint32_t ppn = n / m;
    for (uint32_t x = 0; x < m; x++) all_pairs(g, r + x * ppn, ppn, 2.0 / ppn, a);
    hier_inter(g, r, m, ppn, 1.0 / ppn, a);
}

/* ---- point-to-point channels across nodes (algo.h) ---- */

#define P2P_NET_CHANNEL_BPS 14e9 /* NCCL_P2P_PER_CHANNEL_NET_BW, GB/s */
#define P2P_PEERS_PER_BATCH 8    /* NCCL_MAX_DEV_WORK_P2P_PER_BATCH */
#define NCCL_SM100_SEARCH4 22500 /* 2.25.1: Blackwell too (minCompCap >= 90, was == 90) */
#define CHANNELS_AUTO_MAX 16     /* "won't automatically double past 16" */
#define P2P_NET_PEER_DEFAULT 2   /* NCCL_NCHANNELS_PER_NET_PEER's default before 2.29 */
#define NCCL_P2P_SCALED 22000    /* 2.20.3: the 2 halved with the ranks ("reduce with scale") */
#define NCCL_P2P_BY_BW 22900     /* 2.29.2: from the NIC's bandwidth, halved by batches of peers */

static uint32_t pow2_up(uint32_t x)
{
    uint32_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

static uint32_t pow2_down(uint32_t x)
{
    uint32_t p = 1;
    while (2 * p <= x) p <<= 1;
    return p;
}

/* Channels a search channel becomes across nodes (connect.cc,
 * ncclTopoPostset): 2 as it connects them, 4 on Hopper ("4 compute
 * channels per search channel to reach peak BW on <8 PPN", 2.18 on) and on
 * Blackwell from 2.25. A device without a compute capability (not an
 * NVIDIA part) is taken as Hopper, as the model was before it knew. */
static uint32_t channels_per_search(const topo *g)
{
    uint32_t cc = topo_cc(g);
    if (cc == 0 || cc == 90) return 4;
    return cc > 90 && topo_nccl(g) >= NCCL_SM100_SEARCH4 ? 4 : 2;
}

/* Channels per network peer of a p2p operation over n ranks on m > 1
 * nodes with at most ppn members on a node, by the rule of the topology's
 * NCCL (src/graph/paths.cc, ncclTopoGetNchannels and
 * ncclTopoComputeP2pChannels, at v2.19.4, v2.20.3 to v2.28.9, v2.29.2):
 * P is the communicator's p2p channels, a power of 2. */
uint32_t algo_p2p_peer_channels(const topo *g, uint32_t n, uint32_t ppn)
{
    uint32_t search = ppn < topo_nics_per_node(g) ? ppn : topo_nics_per_node(g);
    uint32_t ring = channels_per_search(g) * (search ? search : 1);
    uint32_t p2p = pow2_up(ring < CHANNELS_AUTO_MAX ? ring : CHANNELS_AUTO_MAX);
    if (topo_nccl(g) >= NCCL_P2P_BY_BW) {
        uint32_t batches = (n + P2P_PEERS_PER_BATCH - 1) / P2P_PEERS_PER_BATCH;
        return p2p / batches ? pow2_down(p2p / batches) : 1;
    }
    /* 2.20-2.28 halve the 2 while 2 n > 4 P ("avoid overloading channels
     * with 8+ operations") and keep at least the local NICs the GPU's own
     * link to the CPU needs (getLocalNetCountByBw), which is 0 where the
     * GPU's PCIe link ends at a switch, as on every shipped node; before
     * 2.20 every network peer gets the 2. */
    uint32_t k = P2P_NET_PEER_DEFAULT;
    if (topo_nccl(g) >= NCCL_P2P_SCALED)
        while (k > 1 && (uint64_t)k * n > 4ull * p2p) k /= 2;
    return k < p2p ? k : p2p;
}

/* The payload rate at which the busiest network peer edge of a direct
 * shape reaches k channels' worth; 0 inside one node or without NICs. */
static double peer_cap(const topo *g, prog_coll c, const uint32_t *r, uint32_t n, uint32_t m)
{
    if (m < 2 || topo_nics_per_node(g) == 0) return 0.0;
    uint32_t ppn = 0, run = 0;
    for (uint32_t i = 0; i < n; i++) {
        run = i > 0 && topo_node_of(g, r[i]) == topo_node_of(g, r[i - 1]) ? run + 1 : 1;
        if (run > ppn) ppn = run;
    }
    double w = spread(c) ? 1.0 / n : 1.0; /* payload share of one peer */
    return algo_p2p_peer_channels(g, n, ppn) * P2P_NET_CHANNEL_BPS / w;
}

/* ---- shapes ---- */

bool algo_applies(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n, algo_kind algo)
{
    uint32_t m = count_nodes(g, ranks, n);
    switch (algo) {
    case ALGO_RING: return !spread(c) && !algo_is_p2p(c);
    case ALGO_TREE: return c == PROG_COLL_ALL_REDUCE && m > 1 && regular(g, ranks, n, m);
    case ALGO_NVLS:
        return c == PROG_COLL_ALL_REDUCE && m == 1 && topo_has_nvls(g) &&
               topo_nccl(g) >= NCCL_NVLS;
    case ALGO_NVLS_TREE:
        return c == PROG_COLL_ALL_REDUCE && m > 1 && n / m > 1 && topo_has_nvls(g) &&
               regular(g, ranks, n, m) && topo_nccl(g) >= NCCL_NVLS_TREE;
    case ALGO_HIER:
        return (c == PROG_COLL_ALL_REDUCE || c == PROG_COLL_ALL_GATHER ||
                c == PROG_COLL_REDUCE_SCATTER) && m > 1 && regular(g, ranks, n, m);
    case ALGO_DIRECT: return spread(c) || algo_is_p2p(c);
    case ALGO_PAT:
        return (c == PROG_COLL_ALL_GATHER || c == PROG_COLL_REDUCE_SCATTER) && m > 1 && m == n &&
               topo_nccl(g) >= NCCL_PAT;
    case ALGO_COLLNET:
        return c == PROG_COLL_ALL_REDUCE && m > 1 && topo_collnet(g) && topo_has_nvswitch(g) &&
               regular(g, ranks, n, m);
    default: return false;
    }
}

bool algo_proto_tunable(algo_kind algo, algo_proto p)
{
    return (algo != ALGO_NVLS && algo != ALGO_NVLS_TREE && algo != ALGO_PAT &&
            algo != ALGO_COLLNET) ||
           p == ALGO_P_SIMPLE;
}

static const char *why_not(algo_kind algo)
{
    switch (algo) {
    case ALGO_RING: return "ring does not run all_to_all, gather, scatter, send_recv or sends "
                           "(use direct)";
    case ALGO_TREE: return "tree runs all_reduce over a group spanning nodes with the same ranks "
                           "on each node";
    case ALGO_NVLS: return "nvls runs all_reduce inside one node whose GPUs share an NVLS-capable "
                           "nvswitch, with NCCL 2.17 or later";
    case ALGO_NVLS_TREE: return "nvls_tree runs all_reduce over a group spanning nodes, several "
                                "ranks on each (the same count), whose GPUs share an NVLS "
                                "nvswitch, with NCCL 2.18 or later";
    case ALGO_HIER: return "hierarchical runs all_reduce, all_gather and reduce_scatter over a "
                           "group spanning nodes with the same ranks on each node";
    case ALGO_DIRECT: return "direct runs all_to_all, gather, scatter, send_recv and sends only";
    case ALGO_PAT: return "pat runs all_gather and reduce_scatter over one GPU on each of two or "
                          "more nodes, with NCCL 2.23 or later";
    case ALGO_COLLNET: return "collnet runs all_reduce over a group spanning nodes with the same "
                              "ranks on each, whose GPUs share an nvswitch, on a fabric whose "
                              "switches reduce (fabric \"sharp\") with CollNet enabled "
                              "(network.collnet, coll --collnet)";
    default: return "auto is not an algorithm";
    }
}

/* Phases of the hierarchical algorithm, in run order. */
static int hier_phases(const topo *g, prog_coll c, const uint32_t *r, uint32_t n, uint32_t m,
                       acc ph[ALGO_MAX_PHASES], uint32_t *nph)
{
    uint32_t ppn = n / m;
    double fi = (double)(ppn - 1) / ppn, fo = (double)(m - 1) / m / ppn;
    if (c == PROG_COLL_ALL_REDUCE) {
        hier_intra(g, r, m, ppn, fi, &ph[0]);
        hier_inter(g, r, m, ppn, 2.0 * fo, &ph[1]);
        hier_intra(g, r, m, ppn, fi, &ph[2]);
        *nph = 3;
    } else if (c == PROG_COLL_ALL_GATHER) {
        hier_inter(g, r, m, ppn, fo, &ph[0]);
        hier_intra(g, r, m, ppn, fi, &ph[1]);
        *nph = 2;
    } else {
        hier_intra(g, r, m, ppn, fi, &ph[0]);
        hier_inter(g, r, m, ppn, fo, &ph[1]);
        *nph = 2;
    }
    if (ppn < 2) { /* one rank per node: only the inter-node ring is left */
        if (c == PROG_COLL_ALL_GATHER) {
            acc_free(&ph[1]);
        } else {
            acc_free(&ph[0]);
            ph[0] = ph[1];
        }
        ph[1] = (acc){0};
        if (c == PROG_COLL_ALL_REDUCE) {
            acc_free(&ph[2]);
            ph[2] = (acc){0};
        }
        *nph = 1;
    }
    return SS_OK;
}

/* floor(log2 x), NCCL's log2i; 0 for x <= 1 */
static uint32_t log2_floor(uint32_t x)
{
    uint32_t l = 0;
    while (x >>= 1) l++;
    return l;
}

static void set_steps(const topo *g, prog_coll c, const uint32_t *r, uint32_t n, uint32_t m,
                      algo_shape *s)
{
    bool chain = c == PROG_COLL_BROADCAST || c == PROG_COLL_REDUCE || c == PROG_COLL_ALL_TO_ALL;
    uint32_t steps = c == PROG_COLL_ALL_REDUCE ? 2 * (n - 1) : chain ? n : n - 1;
    uint32_t inter = c == PROG_COLL_ALL_REDUCE ? 2 * (m - 1) : chain ? m : m - 1;
    if (m == 1) inter = 0;
    if (s->algo == ALGO_TREE) { /* up and down a node's chain and the tree over nodes */
        inter = 2 * (uint32_t)ceil(log2((double)m));
        steps = 2 * (n / m - 1) + inter;
    } else if (s->algo == ALGO_NVLS_TREE) {
        steps = 1 + 2 * (uint32_t)ceil(log2((double)m));
        inter = steps - 1;
    } else if (s->algo == ALGO_NVLS || s->algo == ALGO_DIRECT) { /* one step, peers at once */
        steps = 1;
        inter = m > 1;
    } else if (s->algo == ALGO_COLLNET) { /* one network step, a fan-in per local rank */
        inter = 1;
        steps = n / m; /* the network step and ppn - 1 fan-in ones */
    } else if (s->algo == ALGO_PAT) { /* log2(nodes) network steps, a linear part per rank */
        inter = log2_floor(m);
        steps = inter + n;
    }
    s->steps_inter = inter;
    s->steps_intra = steps > inter ? steps - inter : 0;
    s->inter = m > 1;
    (void)g;
    (void)r;
}

int algo_scratch_init(algo_scratch *sc, const topo *g, ss_err *err)
{
    *sc = (algo_scratch){.nlinks = topo_nlinks(g)};
    for (uint32_t k = 0; k < ALGO_MAX_PHASES; k++)
        if (!(sc->pos[k] = calloc(sc->nlinks ? sc->nlinks : 1, sizeof *sc->pos[k]))) {
            algo_scratch_fini(sc);
            return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for a map of %u links",
                           sc->nlinks);
        }
    return SS_OK;
}

void algo_scratch_fini(algo_scratch *sc)
{
    for (uint32_t k = 0; k < ALGO_MAX_PHASES; k++) free(sc->pos[k]);
    *sc = (algo_scratch){0};
}

int algo_shape_build(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                     algo_kind algo, algo_shape *out, ss_err *err)
{
    return algo_shape_build_in(g, c, ranks, n, algo, NULL, out, err);
}

int algo_shape_build_in(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                        algo_kind algo, algo_scratch *sc, algo_shape *out, ss_err *err)
{
    if (!algo_applies(g, c, ranks, n, algo))
        return ss_fail(err, SS_E_INPUT, NULL, "algorithm %s cannot run %s over %u ranks: %s",
                       algo_kind_names[algo], prog_coll_name(c), n, why_not(algo));
    uint32_t m = count_nodes(g, ranks, n);
    nicmap nm;
    int rc = nicmap_init(&nm, g, ranks, n, err);
    if (rc) return rc;
    acc ph[ALGO_MAX_PHASES] = {{0}};
    for (uint32_t k = 0; k < ALGO_MAX_PHASES; k++) {
        ph[k].nm = &nm;
        ph[k].pos = sc && sc->nlinks == topo_nlinks(g) ? sc->pos[k] : NULL;
    }
    uint32_t nph = 1;
    switch (algo) {
    case ALGO_RING: /* fall through: PAT moves the ring's bytes through each NIC */
    case ALGO_PAT: ring(g, c, ranks, n, m == 1, &ph[0]); break;
    case ALGO_TREE: tree(g, ranks, n, m, &ph[0]); break;
    case ALGO_NVLS: nvls(g, ranks, n, &ph[0]); break;
    case ALGO_NVLS_TREE: nvls_tree(g, ranks, n, m, &ph[0]); break;
    case ALGO_COLLNET: collnet(g, ranks, n, m, &ph[0]); break;
    case ALGO_HIER: hier_phases(g, c, ranks, n, m, ph, &nph); break;
    default: direct_all(g, c, ranks, n, &ph[0]); break;
    }
    uint32_t nch = m > 1 ? node_nics(&nm) : 0;
    nicmap_fini(&nm);
    algo_shape s = {.algo = algo, .nphase = nph, .channels = nch, .nodes = m};
    for (uint32_t k = 0; k < nph; k++) {
        if (ph[k].wire > s.wire_ns) s.wire_ns = ph[k].wire;
        if (!rc) rc = acc_finish(&ph[k], &s.use[k], &s.nuse[k], err);
        else acc_free(&ph[k]);
    }
    if (rc) {
        algo_shape_fini(&s);
        return rc;
    }
    set_steps(g, c, ranks, n, m, &s);
    if (algo == ALGO_DIRECT) s.peer_cap = peer_cap(g, c, ranks, n, m);
    *out = s;
    return SS_OK;
}

void algo_shape_fini(algo_shape *s)
{
    for (uint32_t k = 0; k < ALGO_MAX_PHASES; k++) {
        free(s->use[k]);
        s->use[k] = NULL;
    }
}

/* ---- cost ---- */

static int hw_intra(const topo *g, const algo_shape *s)
{
    for (uint32_t k = 0; k < s->nphase; k++)
        for (uint32_t i = 0; i < s->nuse[k]; i++)
            if (topo_link_kind(g, s->use[k][i].link) == SPEC_L_NVLINK) return HW_NVLINK;
    return HW_PCI;
}

/* A network step's latency, us: the fabric's own where its topology gives
 * one ("step_latency_us"), else NCCL's constant `nccl` (measured where the
 * net plugin reports no latency of its own: InfiniBand). */
static double net_step_us(const topo *g, algo_proto p, double nccl)
{
    double own = topo_net_step_us(g, p == ALGO_P_SIMPLE);
    return own > 0 ? own : nccl;
}

static double latency_us(const topo *g, const algo_shape *s, algo_proto p)
{
    int pi = p - ALGO_P_LL;
    double lat = base_lat[s->algo][pi];
    if (s->algo == ALGO_NVLS) return lat + nvls_lat;
    if (s->algo == ALGO_PAT)
        return PAT_BASE_US + s->steps_inter * net_step_us(g, p, PAT_NET_STEP_US) / PAT_PIPELINE +
               s->steps_intra * PAT_RANK_US;
    if (s->algo == ALGO_NVLS_TREE)
        return lat + nvls_lat + s->steps_inter * net_step_us(g, p, hw_lat_tree[HW_NET][pi]);
    if (s->algo == ALGO_COLLNET)
        return 2.0 * ((s->steps_intra ? COLLNET_NVL_US : 0.0) + s->steps_intra * COLLNET_ARITY_US) +
               s->steps_inter * net_step_us(g, p, COLLNET_NET_US);
    const double (*hw)[3] = s->algo == ALGO_TREE ? hw_lat_tree : hw_lat_ring;
    double intra = hw[hw_intra(g, s)][pi], inter = net_step_us(g, p, hw[HW_NET][pi]);
    if (s->inter && p == ALGO_P_LL) intra *= 1.8; /* NCCL: LL across nodes */
    return lat + s->steps_intra * intra + s->steps_inter * inter;
}

/* Wire bytes per payload byte, by protocol (see algo.h). */
static double proto_scale(const topo *g, const algo_shape *s, prog_coll c, algo_proto p)
{
    double k = 1.0;
    if (p == ALGO_P_LL)
        k = (s->inter || c == PROG_COLL_ALL_REDUCE || c == PROG_COLL_REDUCE) ? 4.0 : 3.0;
    else if (p == ALGO_P_LL128) k = 1.0 / 0.92;
    if (s->algo == ALGO_TREE || s->algo == ALGO_NVLS_TREE) k /= TREE_BW_FACTOR;
    if (s->algo == ALGO_COLLNET && topo_cc(g) >= 90) k /= COLLNET_BW_FACTOR;
    if (s->algo == ALGO_PAT) k /= topo_nccl(g) >= NCCL_PAT_075 ? 0.75 : 0.85;
    return k;
}

static double iso_rate(const topo *g, const flow_use *u, uint32_t n, double scale)
{
    double r = INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        double x = topo_link_Bps(g, u[i].link) / (u[i].w * scale);
        if (x < r) r = x;
    }
    return r;
}

static double tree_correction(const algo_shape *s, prog_coll c, algo_proto p, ss_bytes bytes)
{
    if (s->algo != ALGO_TREE || c != PROG_COLL_ALL_REDUCE || bytes < 64) return 1.0;
    uint32_t lg = 0;
    for (ss_bytes b = bytes >> 6; b > 1; b >>= 1) lg++;
    return lg < TREE_CORR_N ? tree_corr[p - ALGO_P_LL][lg] : 1.0;
}

/* NVLS's algbw ceiling from the switch's own rate (algo.h, "NVLS switch
 * rate"): the bus bandwidth topo_nvls_Bps, as all_reduce converts it over
 * n ranks; 0: none. */
static double nvls_cap(const topo *g, const algo_shape *s, uint32_t n)
{
    double c = topo_nvls_Bps(g);
    return s->algo == ALGO_NVLS && c > 0 && n > 1 ? c * n / (2.0 * (n - 1)) : 0.0;
}

/* The row of NCCL's per-architecture tables: Volta, Ampere, Hopper,
 * Blackwell (cc x 10 from 70). */
static int arch_of(uint32_t cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

/* The speed NCCL's ring search settles on per channel for a NIC port of
 * `port` GB/s: the fastest of its list at or below the port. */
static double nccl_speed(uint32_t cc, double port)
{
    static const struct { const double *a; size_t n; } by_arch[4] = {
        {speeds_inter, NSPEEDS(speeds_inter)}, {speeds_inter, NSPEEDS(speeds_inter)},
        {speeds_sm90, NSPEEDS(speeds_sm90)},   {speeds_sm100, NSPEEDS(speeds_sm100)}};
    const double *a = by_arch[arch_of(cc)].a;
    size_t n = by_arch[arch_of(cc)].n, i = 0;
    while (i + 1 < n && a[i] > port) i++;
    return a[i];
}

/* The CTAs a ring across nodes runs (algo.h, "Ring CTAs across nodes"):
 * the search's channels, one per NIC the node's members use, doubled where
 * ncclTopoDupChannels doubles them (search.cc: a speed of 25 GB/s or more,
 * unless past Ampere with more than 4 channels under 50 GB/s), doubled
 * again as ncclTopoPostset connects them (connect.cc: min(MAXCHANNELS,
 * 2 x)), then at least NCCL_MIN_CTAS (copyChannels up to it). */
uint32_t algo_ring_ctas(const topo *g, uint32_t channels)
{
    uint32_t cc = topo_cc(g), ch = channels;
    uint32_t most = topo_nccl(g) >= NCCL_MAXCHANNELS_64 ? 64 : 32;
    double speed = nccl_speed(cc, topo_port_Bps(g) * 1e-9);
    if (speed >= 25.0 && !(cc > 80 && speed < 50.0 && ch > 4)) ch *= 2;
    ch = 2 * ch < most ? 2 * ch : most;
    uint32_t least = topo_min_ctas(g) < most ? topo_min_ctas(g) : most; /* NCCL limits it too */
    return ch > least ? ch : least;
}

double algo_ring_cta_Bps(const topo *g)
{
    uint32_t cc = topo_cc(g);
    if (topo_ring_cta_Bps(g) > 0) return topo_ring_cta_Bps(g);
    return cc < 70 ? 0.0 : ring_cta_GBps[arch_of(cc)] * 1e9;
}

/* The column of NCCL's per-channel tables for the shape's nodes: 1, 2,
 * more. */
static int nodes_col(const algo_shape *s) { return s->nodes <= 2 ? (int)s->nodes - 1 : 2; }

/* A tree all-reduce channel's bus bandwidth cap, GB/s (cc >= 70): the
 * tree's, or LL128's where lower. */
static double tree_ch_GBps(uint32_t cc, const algo_shape *s, algo_proto p)
{
    int arch = arch_of(cc), ni = nodes_col(s);
    double per = ch_tree[arch][ni];
    if (p == ALGO_P_LL128 && ch_tree_ll128[arch][ni] < per) per = ch_tree_ll128[arch][ni];
    return per;
}

/* The channel caps' algbw ceiling (algo.h, "Channel caps"), bytes/s of
 * payload; 0: none. */
static double channel_cap(const topo *g, const algo_shape *s, prog_coll c, uint32_t n,
                          algo_proto p)
{
    uint32_t cc = topo_cc(g);
    if (!s->inter || !s->channels || n < 2) return 0.0;
    double ring = c == PROG_COLL_ALL_REDUCE ? n / (2.0 * (n - 1)) : n / (double)(n - 1);
    if (s->algo == ALGO_RING && p == ALGO_P_SIMPLE) /* per CTA: the bus bandwidth of them all */
        return algo_ring_cta_Bps(g) * algo_ring_ctas(g, s->channels) * ring;
    if (cc < 70) return 0.0;
    double per = 0.0, ratio = 0.0;
    if (s->algo == ALGO_RING && p == ALGO_P_LL128) {
        per = ch_ring_ll128[arch_of(cc)][nodes_col(s)];
        ratio = ring;
    } else if (s->algo == ALGO_TREE && c == PROG_COLL_ALL_REDUCE) {
        per = tree_ch_GBps(cc, s, p);
        ratio = 0.5;
    }
    return per * 1e9 * s->channels * ratio;
}

/* NCCL's buffers and thread counts for the chunk a tree step moves
 * (src/include/device.h, src/enqueue.cc, 2.19 to 2.29): LL128's buffer of
 * 120 x 640 x 8 x 8 bytes in NCCL_STEPS = 8 steps, 120 of every 128 bytes
 * data; Simple's 4 MiB in 8 steps; the threads a channel runs and the bytes
 * per thread below which the tuner drops channels (NCCL_LL128_MAX_NTHREADS,
 * NCCL_SIMPLE_MAX_NTHREADS, NCCL_LL128_THREAD_THRESHOLD,
 * NCCL_SIMPLE_THREAD_THRESHOLD). */
#define LL128_CHUNK (120.0 * 640 * 8 * 8 / 8 * 120 / 128)
#define SIMPLE_CHUNK (4.0 * 1024 * 1024 / 8)

/* The channels a tree all-reduce of `bytes` runs on (topoGetAlgoInfo's
 * "Ring/Tree channel tuning": one fewer while bytes < nc x threads x
 * threshold), from the communicator's own. */
static uint32_t tree_channels(uint32_t nc, algo_proto p, ss_bytes bytes)
{
    double per = p == ALGO_P_LL128 ? 640.0 * 8 : 512.0 * 64;
    while (nc > 1 && (double)bytes < nc * per) nc--;
    return nc;
}

/* The data one channel's tree step moves (calcCollChunking): LL128 halves
 * its chunk while the channels' steps are few for the tree's depth,
 * nsteps = 1 + floor(log2(nodes)) + ppn / 10; Simple keeps its step. */
static double tree_chunk(algo_proto p, ss_bytes bytes, uint32_t nc, uint32_t nodes, double ppn)
{
    if (p != ALGO_P_LL128) return SIMPLE_CHUNK;
    double nsteps = 1 + log2_floor(nodes) + 0.1 * ppn, chunk = LL128_CHUNK;
    while (floor((double)bytes / (nc * chunk)) < nsteps * 64 / ppn && chunk > 131072) chunk /= 2;
    while (floor((double)bytes / (nc * chunk)) < nsteps * 16 / ppn && chunk > 32768) chunk /= 2;
    return chunk;
}

ss_ns algo_fill_ns(const topo *g, const algo_shape *s, prog_coll c, algo_proto p,
                   ss_bytes bytes)
{
    uint32_t cc = topo_cc(g);
    if (s->algo != ALGO_TREE || c != PROG_COLL_ALL_REDUCE || !s->inter || !s->channels ||
        p == ALGO_P_LL || cc < 70)
        return 0;
    double per = tree_ch_GBps(cc, s, p);
    uint32_t nc = tree_channels(algo_ring_ctas(g, s->channels), p, bytes);
    double ppn = (double)(s->steps_intra / 2 + 1);
    double chunk = tree_chunk(p, bytes, nc, s->nodes, ppn);
    if ((double)bytes / nc < chunk) chunk = (double)bytes / nc;
    uint32_t hops = s->steps_intra + s->steps_inter;
    return ss_ns_from_s((hops - 1) * chunk / (per * 0.5e9));
}

/* What NCCL's tuner adds to a choice's time and the run does not pay: the
 * net plugin's reported latency on every network step, twice with Simple
 * ("the flush extra latency"), a 3.5th of it on PAT's (tuning.cc,
 * graphs[a]->latencyInter, 2.12 to 2.29). */
static double tuner_extra_us(const topo *g, const algo_shape *s, algo_proto p)
{
    double r = topo_net_reported_us(g) * (p == ALGO_P_SIMPLE ? 2 : 1);
    return s->steps_inter * (s->algo == ALGO_PAT ? r / PAT_PIPELINE : r);
}

/* Lower *cap to c where c is a ceiling (above 0) and the tighter one. */
static void tighten(double *cap, double c)
{
    if (c > 0 && (*cap == 0 || c < *cap)) *cap = c;
}

algo_cost algo_cost_of(const topo *g, const algo_shape *s, prog_coll c, uint32_t n,
                       algo_proto p, ss_bytes bytes)
{
    algo_cost k = {.algo = s->algo, .proto = p};
    double lat = latency_us(g, s, p) * 1e-6 + (double)s->wire_ns * 1e-9;
    k.latency_ns = ss_ns_from_s(lat);
    k.wscale = proto_scale(g, s, c, p) / tree_correction(s, c, p, bytes);
    k.iso_s = lat;
    k.tune_s = tuner_extra_us(g, s, p) * 1e-6;
    k.wire_cap = s->peer_cap;
    /* a hard ceiling of the channels' CTAs, not corrected at medium sizes
     * like the links' rate (NCCL's tuner corrects both; the corpus's one
     * forced-tree log reaches the cap uncorrected: DECISIONS.md 95) */
    tighten(&k.wire_cap, channel_cap(g, s, c, n, p) * k.wscale);
    tighten(&k.wire_cap, nvls_cap(g, s, n) * k.wscale);
    for (uint32_t i = 0; i < s->nphase; i++) {
        k.iso_rate[i] = iso_rate(g, s->use[i], s->nuse[i], k.wscale);
        if (k.wire_cap > 0 && k.wire_cap / k.wscale < k.iso_rate[i])
            k.iso_rate[i] = k.wire_cap / k.wscale;
        if (isfinite(k.iso_rate[i])) k.iso_s += (double)bytes / k.iso_rate[i];
    }
    k.tune_s += k.iso_s;
    return k;
}

uint32_t algo_candidates(const topo *g, prog_coll c, const uint32_t *ranks, uint32_t n,
                         algo_kind out[ALGO_NKINDS])
{
    uint32_t k = 0;
    for (int a = ALGO_RING; a < ALGO_NKINDS; a++)
        if (a != ALGO_HIER && algo_applies(g, c, ranks, n, (algo_kind)a)) out[k++] = (algo_kind)a;
    return k;
}
