/* The machine graph. topo.h states the contract. */
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOLINK UINT16_MAX

/* One directed link of the node template. */
typedef struct tlink {
    uint16_t from, to; /* template vertices */
    double Bps;
    double net_w; /* bytes on the link per byte of network traffic (topo_link_net_weight) */
    ss_ns lat;
    spec_lkind kind;
} tlink;

struct topo {
    uint32_t nodes, gpn, nv, ntl, nnic;
    spec_vgroup vg[SPEC_TOPO_VGROUPS];
    uint32_t nvg, gbase[SPEC_TOPO_VGROUPS];
    tlink *tl;
    uint16_t *next;     /* [nv * nv]: first template link from s towards d */
    uint16_t *next_ng;  /* the same, never passing through a GPU (NIC legs) */
    uint16_t nic_v[SPEC_TOPO_VMAX];
    uint32_t *local;    /* [gpn]: bit i set when NIC i is local to the GPU */
    bool nvls;
    bool nvswitch;   /* every GPU links to one NVSwitch group */
    bool collnet;    /* CollNet enabled on a fabric whose switches reduce */
    double nvls_Bps; /* the NVLS switch group's bus bandwidth ceiling; 0: none */
    uint32_t nccl; /* NCCL version code (spec.h) */
    uint32_t cc;   /* the GPUs' compute capability x 10; 0: not given */
    double ring_cta_Bps; /* "nccl_ring_cta_GBps"; 0: the architecture's */
    uint32_t min_ctas;   /* NCCL_MIN_CTAS; 0: NCCL's default */
    spec_fabric fab;
    uint32_t fbase, nfl; /* fabric links [fbase, fbase + nfl) */
    uint32_t lbase, pods, leaves;
    double *fBps;        /* [nfl] */
};

/* ---- node template ---- */

static uint32_t member_of(const topo *g, uint32_t grp, uint32_t i) { return g->gbase[grp] + i; }

/* A PCIe link carries a NIC's GPUDirect RDMA traffic at NCCL's rate for
 * its lanes, 0.75 of the raw rate at every generation (src/graph/topo.cc,
 * kvDictPciGen: 240 x 100 Mb/s a lane at 32 GT/s, 120 at 16, 60 at 8, and
 * width x speed / 80 GB/s: 48 GB/s for Gen5 x16), where the link's own
 * efficiency (DMA copies) is higher: such a byte weighs efficiency / 0.75
 * on it. The one-GPU-per-node cluster01 logs meet it: 48.7-48.9 GB/s
 * all-reduce bus bandwidth at 4-16 GiB over a Gen5 x16 link with two
 * 400 Gb/s NICs behind it (tests/data/nccl-tests). */
#define GDR_PCIE_FRACTION 0.75

static double net_weight(const spec_lgroup *x)
{
    return x->kind == SPEC_L_PCIE && x->efficiency > GDR_PCIE_FRACTION
               ? x->efficiency / GDR_PCIE_FRACTION
               : 1.0;
}

static int add_pair(topo *g, uint32_t cap, uint32_t a, uint32_t b, const spec_lgroup *x)
{
    if (g->ntl + 2 > cap) return 0;
    double bps = x->Bps * x->efficiency, w = net_weight(x);
    g->tl[g->ntl++] = (tlink){(uint16_t)a, (uint16_t)b, bps, w, x->latency_ns, x->kind};
    g->tl[g->ntl++] = (tlink){(uint16_t)b, (uint16_t)a, bps, w, x->latency_ns, x->kind};
    return 1;
}

/* Expand one link group: a single member, block mapping or mesh. */
static int expand_group(topo *g, uint32_t cap, const spec_lgroup *x)
{
    uint32_t na = x->from_i >= 0 ? 1 : g->vg[x->from].count;
    uint32_t nb = x->to_i >= 0 ? 1 : g->vg[x->to].count;
    uint32_t a0 = member_of(g, x->from, x->from_i >= 0 ? (uint32_t)x->from_i : 0);
    uint32_t b0 = member_of(g, x->to, x->to_i >= 0 ? (uint32_t)x->to_i : 0);
    int ok = 1;
    if (x->mesh) {
        for (uint32_t i = 0; i < na && ok; i++)
            for (uint32_t j = i + 1; j < na && ok; j++) ok = add_pair(g, cap, a0 + i, a0 + j, x);
        return ok;
    }
    uint32_t n = na > nb ? na : nb;
    for (uint32_t i = 0; i < n && ok; i++) {
        uint32_t ia = na >= nb ? i : (uint32_t)((uint64_t)i * na / nb);
        uint32_t ib = nb >= na ? i : (uint32_t)((uint64_t)i * nb / na);
        if (a0 + ia != b0 + ib) ok = add_pair(g, cap, a0 + ia, b0 + ib, x);
    }
    return ok;
}

/* Capacity bound for the template: every group pair fully meshed is the
 * most a link group can expand to. */
static uint32_t template_cap(const spec_topology *t)
{
    uint64_t cap = 0;
    for (uint32_t k = 0; k < t->nlgroups; k++) {
        const spec_lgroup *x = &t->lg[k];
        uint64_t na = t->vg[x->from].count, nb = t->vg[x->to].count;
        cap += 2 * (x->mesh ? na * na : (na > nb ? na : nb));
    }
    return cap > NOLINK ? NOLINK : (uint32_t)cap;
}

static int build_template(topo *g, const spec_topology *t, ss_err *err)
{
    g->nv = 0;
    g->nvg = t->nvgroups;
    for (uint32_t k = 0; k < t->nvgroups; k++) {
        g->vg[k] = t->vg[k];
        g->gbase[k] = g->nv;
        for (uint32_t i = 0; i < t->vg[k].count; i++)
            if (t->vg[k].kind == SPEC_V_NIC) g->nic_v[g->nnic++] = (uint16_t)(g->nv + i);
        g->nv += t->vg[k].count;
    }
    uint32_t cap = template_cap(t);
    g->tl = calloc(cap ? cap : 1, sizeof *g->tl);
    if (!g->tl) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for topology %s", t->name);
    for (uint32_t k = 0; k < t->nlgroups; k++)
        if (!expand_group(g, cap, &t->lg[k]))
            return ss_fail(err, SS_E_INPUT, NULL, "topology %s: more than %u links in one node",
                           t->name, (unsigned)NOLINK - 1);
    return SS_OK;
}

/* The template's links by the vertex they enter: in[ino[u] .. ino[u + 1])
 * are u's, in ascending link order (route_to relaxes them in that order,
 * which decides between equal-cost routes). */
typedef struct inlinks {
    uint32_t *ino; /* [nv + 1] */
    uint32_t *in;  /* [ntl] */
} inlinks;

static bool inlinks_init(inlinks *x, const topo *g)
{
    x->ino = calloc(g->nv + 1, sizeof *x->ino);
    x->in = malloc((g->ntl ? g->ntl : 1) * sizeof *x->in);
    if (!x->ino || !x->in) return false;
    for (uint32_t l = 0; l < g->ntl; l++) x->ino[g->tl[l].to + 1]++;
    for (uint32_t v = 0; v < g->nv; v++) x->ino[v + 1] += x->ino[v];
    uint32_t *fill = x->ino; /* advanced per link, then shifted back */
    for (uint32_t l = 0; l < g->ntl; l++) x->in[fill[g->tl[l].to]++] = l;
    for (uint32_t v = g->nv; v > 0; v--) x->ino[v] = x->ino[v - 1];
    x->ino[0] = 0;
    return true;
}

static void inlinks_fini(inlinks *x)
{
    free(x->ino);
    free(x->in);
}

/* A min-heap of (distance, vertex), smallest distance first and, among
 * equal distances, the smaller vertex: the order the scan over every
 * vertex used to pick, so routes are the same. Entries go stale when a
 * vertex's distance drops; route_to skips them. */
typedef struct hent {
    double d;
    uint32_t v;
} hent;

static bool hless(hent a, hent b) { return a.d < b.d || (a.d == b.d && a.v < b.v); }

static void hpush(hent *h, uint32_t *n, hent e)
{
    uint32_t i = (*n)++;
    while (i && hless(e, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static hent hpop(hent *h, uint32_t *n)
{
    hent top = h[0], e = h[--*n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && hless(h[c + 1], h[c])) c++;
        if (!hless(h[c], e)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = e;
    return top;
}

/* First hops towards d for every source: Dijkstra from d over reversed
 * links, cost 1 / capacity; O((V + E) log E) per destination, the heap
 * (room for one entry per link and one) from the caller. */
static void route_to(topo *g, const inlinks *x, uint16_t *next, bool no_gpu, uint32_t d,
                     double *dist, uint8_t *done, hent *heap)
{
    uint32_t nv = g->nv, n = 0;
    for (uint32_t v = 0; v < nv; v++) {
        dist[v] = -1.0;
        done[v] = 0;
        next[(size_t)v * nv + d] = NOLINK;
    }
    dist[d] = 0.0;
    hpush(heap, &n, (hent){0.0, d});
    while (n) {
        hent e = hpop(heap, &n);
        uint32_t u = e.v;
        if (done[u] || e.d != dist[u]) continue; /* stale */
        done[u] = 1;
        if (no_gpu && u != d && u < g->gpn) continue; /* a GPU is no transit */
        for (uint32_t i = x->ino[u]; i < x->ino[u + 1]; i++) {
            uint32_t l = x->in[i], s = g->tl[l].from;
            double c = dist[u] + 1.0 / g->tl[l].Bps;
            if (done[s] || (dist[s] >= 0.0 && dist[s] <= c)) continue;
            dist[s] = c;
            next[(size_t)s * nv + d] = (uint16_t)l;
            hpush(heap, &n, (hent){c, s});
        }
    }
}

static const char *vname(const topo *g, uint32_t v, char *buf, size_t n)
{
    uint32_t k = g->nvg - 1;
    while (k > 0 && g->gbase[k] > v) k--;
    if (g->vg[k].count == 1) snprintf(buf, n, "%s", g->vg[k].name);
    else snprintf(buf, n, "%s[%u]", g->vg[k].name, v - g->gbase[k]);
    return buf;
}

static int check_reach(const topo *g, const char *name, ss_err *err)
{
    char a[48], b[48];
    for (uint32_t s = 0; s < g->gpn; s++) {
        for (uint32_t d = 0; d < g->gpn; d++)
            if (s != d && g->next[(size_t)s * g->nv + d] == NOLINK)
                return ss_fail(err, SS_E_INPUT, NULL,
                               "topology %s: %s cannot reach %s inside a node; add a link group "
                               "that joins them", name, vname(g, s, a, sizeof a),
                               vname(g, d, b, sizeof b));
        for (uint32_t i = 0; i < g->nnic; i++)
            if (g->next[(size_t)s * g->nv + g->nic_v[i]] == NOLINK ||
                g->next[(size_t)g->nic_v[i] * g->nv + s] == NOLINK)
                return ss_fail(err, SS_E_INPUT, NULL,
                               "topology %s: %s and %s are not joined inside a node", name,
                               vname(g, s, a, sizeof a), vname(g, g->nic_v[i], b, sizeof b));
    }
    return SS_OK;
}

/* Links on the GPU-free path from s to d (UINT32_MAX: none). */
static uint32_t ng_hops(const topo *g, uint32_t s, uint32_t d)
{
    uint32_t k = 0;
    while (s != d) {
        uint16_t l = g->next_ng[(size_t)s * g->nv + d];
        if (l == NOLINK) return UINT32_MAX;
        s = g->tl[l].to;
        k++;
    }
    return k;
}

/* A GPU's local NICs: those the fewest links away without passing through
 * another GPU, as NCCL ranks NICs by PCIe path type (PIX, PXB before PHB
 * before SYS; src/graph/topo.cc) and uses the best ones. */
static void find_local_nics(topo *g)
{
    for (uint32_t s = 0; s < g->gpn; s++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t i = 0; i < g->nnic && i < 32; i++) {
            uint32_t h = ng_hops(g, s, g->nic_v[i]);
            if (h < best) best = h, g->local[s] = 0;
            if (h == best && h != UINT32_MAX) g->local[s] |= 1u << i;
        }
    }
}

static int build_routes(topo *g, const char *name, ss_err *err)
{
    size_t vv = (size_t)g->nv * g->nv;
    g->next = malloc(vv * sizeof *g->next);
    g->next_ng = malloc(vv * sizeof *g->next_ng);
    g->local = calloc(g->gpn ? g->gpn : 1, sizeof *g->local);
    double *dist = malloc(g->nv * sizeof *dist);
    uint8_t *done = malloc(g->nv);
    hent *heap = malloc(((size_t)g->ntl + 1) * sizeof *heap);
    inlinks x = {0};
    int rc = SS_OK;
    if (!g->next || !g->next_ng || !g->local || !dist || !done || !heap || !inlinks_init(&x, g))
        rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t d = 0; d < g->nv && !rc; d++) {
        route_to(g, &x, g->next, false, d, dist, done, heap);
        route_to(g, &x, g->next_ng, true, d, dist, done, heap);
    }
    inlinks_fini(&x);
    free(heap);
    free(dist);
    free(done);
    if (!rc) find_local_nics(g);
    return rc ? rc : check_reach(g, name, err);
}

/* A switch group every GPU links to (NVLS-capable when nvls): NVLS needs
 * one, NCCL's CollNet Direct an NVSwitch of any kind. */
static bool find_switch(topo *g, bool nvls)
{
    for (uint32_t k = 1; k < g->nvg; k++) {
        if (g->vg[k].kind != SPEC_V_NVSWITCH || (nvls && !g->vg[k].nvls)) continue;
        uint32_t linked = 0;
        for (uint32_t s = 0; s < g->gpn; s++)
            for (uint32_t l = 0; l < g->ntl; l++)
                if (g->tl[l].from == s && g->tl[l].to >= g->gbase[k] &&
                    g->tl[l].to < g->gbase[k] + g->vg[k].count) {
                    linked++;
                    break;
                }
        if (linked == g->gpn) {
            if (nvls) g->nvls_Bps = g->vg[k].nvls_Bps;
            return true;
        }
    }
    return false;
}

/* ---- fabric ---- */

static uint32_t leaf_of(const topo *g, uint32_t node, uint32_t nic)
{
    uint32_t pod = node / g->fab.nodes_per_leaf;
    return g->fab.rail_optimized ? pod * g->nnic + nic : pod;
}

/* NICs attached to a leaf: its pod's nodes, one (rail) or all NICs each. */
static uint32_t leaf_ports(const topo *g, uint32_t leaf)
{
    uint32_t pod = g->fab.rail_optimized ? leaf / g->nnic : leaf;
    uint32_t first = pod * g->fab.nodes_per_leaf, n = g->fab.nodes_per_leaf;
    if (first + n > g->nodes) n = g->nodes - first;
    return g->fab.rail_optimized ? n : n * g->nnic;
}

static int build_fabric(topo *g, ss_err *err)
{
    const spec_fabric *f = &g->fab;
    double port = f->Bps * f->efficiency;
    g->fbase = g->nodes * g->ntl;
    switch (f->kind) {
    case SPEC_FAB_NONE: g->nfl = 0; break;
    case SPEC_FAB_TORUS2D: g->nfl = 4 * g->nodes; break;
    case SPEC_FAB_STAR: g->nfl = 2 * g->nodes * g->nnic; break;
    case SPEC_FAB_FAT_TREE:
        g->pods = (g->nodes + f->nodes_per_leaf - 1) / f->nodes_per_leaf;
        g->leaves = f->rail_optimized ? g->pods * g->nnic : g->pods;
        g->lbase = 2 * g->nodes * g->nnic;
        g->nfl = g->lbase + 2 * g->leaves;
        break;
    default: break;
    }
    if ((uint64_t)g->fbase + g->nfl > UINT32_MAX - 1)
        return ss_fail(err, SS_E_INPUT, NULL, "the topology has more than 2^32 links");
    g->fBps = calloc(g->nfl ? g->nfl : 1, sizeof *g->fBps);
    if (!g->fBps) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for the fabric");
    for (uint32_t i = 0; i < g->nfl; i++) g->fBps[i] = port;
    if (f->kind == SPEC_FAB_FAT_TREE)
        for (uint32_t j = 0; j < g->leaves; j++)
            g->fBps[g->lbase + 2 * j] = g->fBps[g->lbase + 2 * j + 1] =
                port * leaf_ports(g, j) / f->oversubscription;
    return SS_OK;
}

int topo_new(const spec_topology *t, topo **out, ss_err *err)
{
    if (!t->graph)
        return ss_fail(err, SS_E_INTERNAL, NULL, "topology %s has no graph (flat form)", t->name);
    topo *g = calloc(1, sizeof *g);
    if (!g) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for topology %s", t->name);
    g->nodes = t->nodes;
    g->gpn = t->gpus_per_node;
    g->fab = t->fabric;
    g->nccl = t->nccl ? t->nccl : SPEC_NCCL_DEFAULT;
    g->cc = t->device.cc;
    g->ring_cta_Bps = t->ring_cta_Bps;
    g->min_ctas = t->min_ctas;
    int rc = build_template(g, t, err);
    if (!rc) rc = build_routes(g, t->name, err);
    if (!rc && (uint64_t)g->nodes * g->ntl > UINT32_MAX / 2)
        rc = ss_fail(err, SS_E_INPUT, NULL, "topology %s: too many links", t->name);
    if (!rc) rc = build_fabric(g, err);
    if (rc) {
        topo_free(g);
        return rc;
    }
    g->nvls = find_switch(g, true);
    g->nvswitch = find_switch(g, false);
    g->collnet = t->collnet && t->fabric.sharp;
    *out = g;
    return SS_OK;
}

void topo_free(topo *g)
{
    if (!g) return;
    free(g->tl);
    free(g->next);
    free(g->next_ng);
    free(g->local);
    free(g->fBps);
    free(g);
}

uint32_t topo_ngpus(const topo *g) { return g->nodes * g->gpn; }
uint32_t topo_nodes(const topo *g) { return g->nodes; }
uint32_t topo_gpus_per_node(const topo *g) { return g->gpn; }
uint32_t topo_nics_per_node(const topo *g) { return g->nnic; }
uint32_t topo_nlinks(const topo *g) { return g->fbase + g->nfl; }
uint32_t topo_node_of(const topo *g, uint32_t gpu) { return gpu / g->gpn; }
bool topo_has_nvls(const topo *g) { return g->nvls; }
bool topo_has_nvswitch(const topo *g) { return g->nvswitch; }
bool topo_collnet(const topo *g) { return g->collnet; }
double topo_nvls_Bps(const topo *g) { return g->nvls ? g->nvls_Bps : 0.0; }
uint32_t topo_nccl(const topo *g) { return g->nccl; }
uint32_t topo_cc(const topo *g) { return g->cc; }
double topo_ring_cta_Bps(const topo *g) { return g->ring_cta_Bps; }
double topo_net_reported_us(const topo *g) { return g->fab.reported_us; }
double topo_net_step_us(const topo *g, bool simple)
{
    return simple ? g->fab.step_simple_us : g->fab.step_us;
}
uint32_t topo_min_ctas(const topo *g) { return g->min_ctas; }
double topo_port_Bps(const topo *g) { return g->fab.kind == SPEC_FAB_NONE ? 0.0 : g->fab.Bps; }

uint32_t topo_nic_of(const topo *g, uint32_t local)
{
    return g->nnic ? (uint32_t)((uint64_t)local * g->nnic / g->gpn) : 0;
}

uint32_t topo_local_nics(const topo *g, uint32_t local, uint32_t *nics)
{
    uint32_t k = 0, m = g->local[local % g->gpn]; /* its set bits, lowest first */
    if (g->nnic < 32) m &= (1u << g->nnic) - 1;
    for (; m; m &= m - 1) nics[k++] = (uint32_t)__builtin_ctz(m);
    return k;
}

bool topo_rail_optimized(const topo *g)
{
    return g->fab.kind == SPEC_FAB_FAT_TREE && g->fab.rail_optimized;
}

double topo_link_Bps(const topo *g, uint32_t l)
{
    return l < g->fbase ? g->tl[l % g->ntl].Bps : g->fBps[l - g->fbase];
}

ss_ns topo_link_latency(const topo *g, uint32_t l)
{
    return l < g->fbase ? g->tl[l % g->ntl].lat : g->fab.latency_ns;
}

double topo_link_net_weight(const topo *g, uint32_t l)
{
    return l < g->fbase ? g->tl[l % g->ntl].net_w : 1.0;
}

spec_lkind topo_link_kind(const topo *g, uint32_t l)
{
    return l < g->fbase ? g->tl[l % g->ntl].kind : SPEC_L_NET;
}

static const char *torus_dir[4] = {"+x", "-x", "+y", "-y"};

static void fabric_name(const topo *g, uint32_t f, char *buf, size_t n)
{
    if (g->fab.kind == SPEC_FAB_TORUS2D) {
        snprintf(buf, n, "node%u.torus%s", f / 4, torus_dir[f % 4]);
        return;
    }
    const char *sw = g->fab.kind == SPEC_FAB_STAR ? "switch" : "leaf";
    if (f < g->lbase || g->fab.kind == SPEC_FAB_STAR) {
        uint32_t port = f / 2, node = port / g->nnic, nic = port % g->nnic;
        char l[24];
        snprintf(l, sizeof l, g->fab.kind == SPEC_FAB_STAR ? "switch" : "leaf[%u]",
                 leaf_of(g, node, nic));
        if (f % 2 == 0) snprintf(buf, n, "node%u.nic[%u]->%s", node, nic, l);
        else snprintf(buf, n, "%s->node%u.nic[%u]", l, node, nic);
        return;
    }
    uint32_t leaf = (f - g->lbase) / 2;
    if ((f - g->lbase) % 2 == 0) snprintf(buf, n, "%s[%u]->core", sw, leaf);
    else snprintf(buf, n, "core->%s[%u]", sw, leaf);
}

const char *topo_link_name(const topo *g, uint32_t l, char *buf, size_t n)
{
    if (l >= g->fbase) {
        fabric_name(g, l - g->fbase, buf, n);
        return buf;
    }
    const tlink *t = &g->tl[l % g->ntl];
    char a[48], b[48];
    snprintf(buf, n, "node%u.%s->%s", l / g->ntl, vname(g, t->from, a, sizeof a),
             vname(g, t->to, b, sizeof b));
    return buf;
}

/* ---- routes ---- */

/* Template path s -> d inside node `node`, appended at path[n]. */
static uint32_t route_in(const topo *g, uint32_t node, uint32_t s, uint32_t d, uint32_t *path,
                         uint32_t n)
{
    while (s != d && n < TOPO_PATH_MAX) {
        uint16_t l = g->next[(size_t)s * g->nv + d];
        path[n++] = node * g->ntl + l;
        s = g->tl[l].to;
    }
    return n;
}

static uint32_t push(uint32_t *path, uint32_t n, uint32_t link)
{
    if (n < TOPO_PATH_MAX) path[n++] = link;
    return n;
}

/* One torus dimension: steps from a to b on a ring of k, the shorter way
 * (ties increasing); appends the links leaving each node passed. */
static uint32_t torus_dim(const topo *g, uint32_t *node, uint32_t dim, uint32_t to, uint32_t *path,
                          uint32_t n)
{
    /* one division per dimension, none per hop: routes are built for every
     * copy of every group, and a hop's % was a twentieth of a torus layout */
    uint32_t X = g->fab.dims[0], k = g->fab.dims[dim];
    uint32_t col = *node % X, row = *node / X, c = dim == 0 ? col : row;
    uint32_t up = to >= c ? to - c : to + k - c, down = up ? k - up : 0;
    bool inc = up <= down;
    for (uint32_t s = 0; s < (inc ? up : down); s++) {
        n = push(path, n, g->fbase + 4 * *node + 2 * dim + (inc ? 0 : 1));
        c = inc ? (c + 1 == k ? 0 : c + 1) : (c ? c - 1 : k - 1);
        *node = dim == 0 ? row * X + c : c * X + col;
    }
    return n;
}

static uint32_t route_fabric(const topo *g, uint32_t na, uint32_t ra, uint32_t nb, uint32_t rb,
                             uint32_t *path, uint32_t n)
{
    if (g->fab.kind == SPEC_FAB_TORUS2D) {
        uint32_t cur = na, X = g->fab.dims[0];
        n = torus_dim(g, &cur, 0, nb % X, path, n);
        return torus_dim(g, &cur, 1, nb / X, path, n);
    }
    n = push(path, n, g->fbase + 2 * (na * g->nnic + ra));
    if (g->fab.kind == SPEC_FAB_FAT_TREE) {
        uint32_t la = leaf_of(g, na, ra), lb = leaf_of(g, nb, rb);
        if (la != lb) {
            n = push(path, n, g->fbase + g->lbase + 2 * la);
            n = push(path, n, g->fbase + g->lbase + 2 * lb + 1);
        }
    }
    return push(path, n, g->fbase + 2 * (nb * g->nnic + rb) + 1);
}

uint32_t topo_route(const topo *g, uint32_t a, uint32_t b, int rail, uint32_t *path)
{
    uint32_t na = a / g->gpn, nb = b / g->gpn, la = a % g->gpn, lb = b % g->gpn;
    if (a == b) return 0;
    if (na == nb) return route_in(g, na, la, lb, path, 0);
    bool torus = g->fab.kind == SPEC_FAB_TORUS2D;
    uint32_t ra = torus ? 0 : rail >= 0 ? (uint32_t)rail % g->nnic : topo_nic_of(g, la);
    uint32_t rb = torus ? 0 : g->fab.kind == SPEC_FAB_FAT_TREE && g->fab.rail_optimized
                                  ? ra : rail >= 0 ? ra : topo_nic_of(g, lb);
    uint32_t n = route_in(g, na, la, g->nic_v[ra], path, 0);
    n = route_fabric(g, na, ra, nb, rb, path, n);
    return route_in(g, nb, g->nic_v[rb], lb, path, n);
}

/* Template path s -> d never passing through a GPU, appended at path[n];
 * the general route where there is none (a NIC reached only through a
 * GPU). */
static uint32_t route_ng(const topo *g, uint32_t node, uint32_t s, uint32_t d, uint32_t *path,
                         uint32_t n)
{
    if (ng_hops(g, s, d) == UINT32_MAX) return route_in(g, node, s, d, path, n);
    while (s != d && n < TOPO_PATH_MAX) {
        uint16_t l = g->next_ng[(size_t)s * g->nv + d];
        path[n++] = node * g->ntl + l;
        s = g->tl[l].to;
    }
    return n;
}

uint32_t topo_route_nics(const topo *g, const topo_hop *h, uint32_t *path)
{
    uint32_t na = h->a / g->gpn, nb = h->b / g->gpn;
    if (h->a == h->b) return 0;
    if (na == nb || g->fab.kind == SPEC_FAB_TORUS2D || g->nnic == 0)
        return topo_route(g, h->a, h->b, -1, path);
    uint32_t pa = h->via_a % g->gpn, pb = h->via_b % g->gpn, ra = h->nic_a % g->nnic,
             rb = h->nic_b % g->nnic;
    uint32_t n = route_in(g, na, h->a % g->gpn, pa, path, 0);
    n = route_ng(g, na, pa, g->nic_v[ra], path, n);
    n = route_fabric(g, na, ra, nb, rb, path, n);
    n = route_ng(g, nb, g->nic_v[rb], pb, path, n);
    return route_in(g, nb, pb, h->b % g->gpn, path, n);
}

ss_ns topo_path_latency(const topo *g, const uint32_t *path, uint32_t n)
{
    ss_ns t = 0;
    for (uint32_t i = 0; i < n; i++) t += topo_link_latency(g, path[i]);
    return t;
}
