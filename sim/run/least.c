/* Least collective times for the step bound. least.h states the contract. */
#include "least.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../io/profile.h"
#include "../net/cost.h"
#include "../net/net.h"

/* A few sizes per (group, collective): a group often alternates between
 * two or three (a ring's steps and its last send, a pipelined chunk and
 * the rest), and each miss builds the collective's shapes anew. Replaced
 * round robin, so the contents depend on the call order alone. */
#define MEMO_WAYS 4

typedef struct memo {
    uint64_t bytes[MEMO_WAYS];
    ss_ns ns[MEMO_WAYS];
    uint8_t n, next; /* entries set; the one replaced next */
} memo;

struct least {
    const spec_scenario *s;
    net *n; /* NULL: a flat topology */
    prof pf;
    double link_Bps;
    memo *m; /* [group * PROG_NCOLLS + coll] */
    uint32_t nm;
};

/* The sum over the node's link groups that touch the GPU group of the
 * links one GPU can have there (a mesh: one per other GPU; a block: the
 * other side's members per GPU, rounded up; a link picked for one member:
 * all of the other side's), at full bandwidth (efficiency <= 1 only slows
 * them). Every byte a rank sends or receives crosses these links (the
 * fabric joins NICs, not GPUs). A calibration profile's curves may beat
 * the modelled links, and a flat topology has none: 0 there. */
static double gpu_link_Bps(const spec_scenario *s)
{
    const spec_topology *t = &s->topo;
    if (!t->graph || s->calibration[0]) return 0;
    double sum = 0;
    uint32_t gpus = t->vg[0].count;
    for (uint32_t k = 0; k < t->nlgroups; k++) {
        const spec_lgroup *l = &t->lg[k];
        if (l->from != 0 && l->to != 0) continue;
        bool gpu_from = l->from == 0;
        int32_t gpu_pick = gpu_from ? l->from_i : l->to_i, other_pick = gpu_from ? l->to_i : l->from_i;
        uint32_t other = t->vg[gpu_from ? l->to : l->from].count, links;
        if (l->from == 0 && l->to == 0) links = l->mesh ? (gpus ? gpus - 1 : 0) : 1;
        else if (other_pick >= 0) links = 1;
        else if (gpu_pick >= 0) links = other;
        else links = other > gpus && gpus ? (other + gpus - 1) / gpus : 1;
        sum += (double)links * l->Bps;
    }
    return sum;
}

int least_new(const spec_scenario *s, const prog *p, least **out, ss_err *err)
{
    least *l = calloc(1, sizeof *l);
    if (!l) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    prof_init(&l->pf);
    l->s = s;
    l->link_Bps = gpu_link_Bps(s);
    l->nm = prog_ngroups(p) * PROG_NCOLLS;
    int rc = (l->m = calloc(l->nm ? l->nm : 1, sizeof *l->m)) ? SS_OK
             : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    bool cal = s->calibration[0] != 0;
    if (!rc && s->topo.graph && cal) rc = prof_load(s->calibration, &l->pf, err);
    if (!rc && s->topo.graph) {
        net_opts o = net_opts_of(s, cal ? &l->pf : NULL);
        rc = net_new(&s->topo, &o, &l->n, err);
    }
    if (rc) {
        least_free(l);
        return rc;
    }
    *out = l;
    return SS_OK;
}

void least_free(least *l)
{
    if (!l) return;
    net_free(l->n);
    prof_fini(&l->pf);
    free(l->m);
    free(l);
}

/* The network's time alone less the engine's end tolerance: latency, then
 * phases summing to bw seconds at their rates alone, each ending within
 * 1 + 1e-9 bytes of its payload (net.c, on_wake), so at least
 * bw (1 - (1 + 1e-9 bytes) / bytes); 1e-8 and 2 ns more for rounding. */
static ss_ns alone_ns(const net_alone *a, uint64_t bytes)
{
    if (!bytes) return a->latency_ns;
    double bw = a->time_s - (double)a->latency_ns * 1e-9;
    double ns = bw * 1e9 * (1.0 - 2.0 / (double)bytes - 1e-8) - 2.0;
    return a->latency_ns + (ns > 0 && isfinite(ns) ? (ss_ns)ns : 0);
}

static int coll_ns(void *ctx, prog_coll c, uint32_t gid, prog_group g, uint64_t bytes,
                   ss_ns *out, ss_err *err)
{
    least *l = ctx;
    memo *m = gid < l->nm / PROG_NCOLLS ? &l->m[(size_t)gid * PROG_NCOLLS + c] : NULL;
    for (uint32_t i = 0; m && i < m->n; i++)
        if (m->bytes[i] == bytes) {
            *out = m->ns[i];
            return SS_OK;
        }
    ss_ns ns = bound_coll_ns(c, bytes, g.size, l->link_Bps);
    if (g.size > 1) {
        ss_ns t = 0;
        int rc;
        if (!l->n) {
            rc = cost_coll_ns(&l->s->topo, c, g, bytes, &t, err);
        } else {
            net_alone a;
            rc = net_coll_alone(l->n, c, g.ranks, g.size, bytes, &a, err);
            t = rc ? 0 : alone_ns(&a, bytes);
        }
        if (rc) return rc;
        if (t > ns) ns = t;
    }
    if (m) {
        m->bytes[m->next] = bytes, m->ns[m->next] = ns;
        m->next = (uint8_t)((m->next + 1) % MEMO_WAYS);
        if (m->n < MEMO_WAYS) m->n++;
    }
    *out = ns;
    return SS_OK;
}

bound_net least_net(least *l) { return (bound_net){.coll_ns = coll_ns, .ctx = l}; }
