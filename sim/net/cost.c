#include "cost.h"

double cost_bus_factor(prog_coll coll, uint32_t n)
{
    if (n <= 1) return 0.0;
    double k = (double)(n - 1) / (double)n;
    switch (coll) {
    case PROG_COLL_ALL_REDUCE: return 2.0 * k;
    case PROG_COLL_BROADCAST:
    case PROG_COLL_REDUCE:
    case PROG_COLL_SEND_RECV:
    case PROG_COLL_SEND_UP:
    case PROG_COLL_SEND_DOWN: return 1.0;
    default: return k;
    }
}

static uint32_t ring_steps(prog_coll coll, uint32_t n)
{
    if (coll == PROG_COLL_SEND_RECV || coll == PROG_COLL_SEND_UP || coll == PROG_COLL_SEND_DOWN)
        return 1;
    return coll == PROG_COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
}

static int spans_nodes(const spec_topology *t, prog_group g)
{
    uint32_t k = spec_topo_rpn(t), node0 = g.ranks[0] / k;
    for (uint32_t i = 1; i < g.size; i++)
        if (g.ranks[i] / k != node0) return 1;
    return 0;
}

int cost_coll_ns(const spec_topology *t, prog_coll coll, prog_group g,
                 ss_bytes bytes, ss_ns *out, ss_err *err)
{
    (void)err;
    if (g.size <= 1) {
        *out = 0;
        return SS_OK;
    }
    const spec_link_level *lv = spans_nodes(t, g) ? &t->inter : &t->intra;
    double s = (double)bytes * cost_bus_factor(coll, g.size) / lv->bus_bw_Bps;
    *out = ss_ns_from_s(s) + (ss_ns)ring_steps(coll, g.size) * lv->latency_ns;
    return SS_OK;
}

static int cost_cb(void *ctx, prog_coll coll, prog_group g, ss_bytes bytes,
                   ss_ns *out, ss_err *err)
{
    const cost_net *c = ctx;
    return cost_coll_ns(c->topo, coll, g, bytes, out, err);
}

eng_net cost_eng_net(cost_net *c)
{
    eng_net n = {.ctx = c, .coll_ns = cost_cb};
    return n;
}
