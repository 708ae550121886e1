/* flow.h - max-min fair sharing of link capacity among concurrent transfers.
 *
 * A flow is one transfer in progress with a rate x (bytes of its own
 * progress per second) and a usage vector: on link l it puts w_l * x bytes
 * per second. A collective is one flow whose vector sums the links of all
 * its point-to-point pieces (a ring moves in lockstep, so its pieces share
 * one rate). Rates are the weighted max-min fair allocation: subject to
 * sum_f w_fl * x_f <= cap_l on every link and x_f <= max_f, no rate can grow
 * without lowering a rate that is not larger (progressive filling: raise all
 * unfrozen rates together, freeze the flows of the first link to saturate,
 * repeat), with the saturation levels in a heap so a solve touches each
 * usage entry once. Re-solved by the caller after flows start or end (once
 * per instant is enough: flow_solve takes every change since the last).
 *
 * A solve re-solves only the components (flows connected through shared
 * links) that an add or remove touched since the last solve: the other
 * components' rates cannot have moved, and keep their values
 * (flow_last_solved lists the flows that got new ones). A link that only
 * one flow uses is that flow's cap (cap / w) rather than a link to update.
 *
 * Determinism: a solve visits flows and links in the order its search
 * from the touched links (in touch order) reaches them; the same calls give
 * the same rates bit for bit. Ids are slots, reused last-freed first.
 *
 * Cost of flow_solve: O(C + U_C log U_C) for the C flows and U_C usage
 * entries of the touched components; flow_add and flow_remove are
 * O(n) and O(n x flows per link) for a flow of n links (each link keeps its
 * flows); no allocation once the arrays have grown. Knows nothing of
 * collectives or topologies.
 */
#ifndef NET_FLOW_H
#define NET_FLOW_H

#include "../core/err.h"

typedef struct flow_use {
    uint32_t link;
    double w; /* bytes on the link per byte of the flow's progress, > 0 */
} flow_use;

typedef struct flow_sys flow_sys;

/* Sort u[0..n) by link, links distinct (a usage vector's entries): a
 * radix sort by bytes of the link, O(n), where a comparison sort was
 * most of the setup of a 16,384-rank layout. SS_E_NOMEM (u unchanged)
 * when its scratch cannot be had. */
int flow_use_sort(flow_use *u, uint32_t n, ss_err *err);

/* A system over nlinks links with capacities cap[0..nlinks) in bytes/s
 * (copied). */
int flow_sys_new(uint32_t nlinks, const double *cap, flow_sys **out, ss_err *err);
void flow_sys_free(flow_sys *s);

/* Add an active flow using u[0..n) (copied; links must be < nlinks) with a
 * rate cap max_rate (0: none). Its rate is 0 until the next flow_solve.
 * SS_OK with *id, or SS_E_NOMEM with nothing added. */
int flow_add(flow_sys *s, const flow_use *u, uint32_t n, double max_rate, uint32_t *id,
             ss_err *err);

/* End flow id (it must be active). */
void flow_remove(flow_sys *s, uint32_t id);

/* Recompute every active flow's rate. A flow with no links and no cap
 * gets rate infinity. SS_E_NOMEM leaves the rates undefined until a
 * successful solve. */
int flow_solve(flow_sys *s, ss_err *err);

double flow_rate(const flow_sys *s, uint32_t id);
/* The rate flow_solve gives a flow of usage u[0..n) and cap max_rate (0:
 * none) while no other flow loads any of its links: the least of the cap
 * and cap_l / w_l, INFINITY with neither. A caller that knows a flow
 * stays alone can skip adding it (net.c, collectives that run alone). */
double flow_alone_rate(const flow_sys *s, const flow_use *u, uint32_t n, double max_rate);
/* The flows the last solve gave rates to (the components a flow_add or
 * flow_remove touched since the solve before), ascending; the others kept
 * theirs. Valid until the next add, remove or solve. */
uint32_t flow_last_solved(const flow_sys *s, const uint32_t **ids);
uint32_t flow_nactive(const flow_sys *s);
/* Iterations of the last solve (distinct bottleneck levels); for benches. */
uint32_t flow_last_rounds(const flow_sys *s);

#endif
