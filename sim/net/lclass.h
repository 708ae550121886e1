/* lclass.h - classes of links that a set of flow shapes loads alike.
 *
 * Given every usage vector the flows of a run can carry (shapes, each in
 * phases of (link, weight) entries, algo.h), two links are in one class
 * when each shape's phase puts the same weights on both (the same sorted
 * list of (shape, phase, weight)) and they have the same capacity and
 * kind. Such links carry the same constraint at every instant, whatever
 * subset of the shapes is running: max-min sharing (flow.h) needs one of
 * them, and a flow may load only its class's first link. The classes come
 * from the entries alone (sorted and compared; a hash only buckets), not
 * from a symmetry of the topology: where none holds they are single links.
 *
 * Pure; O(U + L log L) for U usage entries over L links (the entries are
 * counted into link order, the loaded links sorted by their keys). Knows
 * nothing of collectives or programs.
 */
#ifndef NET_LCLASS_H
#define NET_LCLASS_H

#include "algo.h"
#include "topo.h"

/* rep[l] (caller frees; topo_nlinks(g) entries): the first link of l's
 * class (l itself when alone or unloaded), from the shapes sh[0..n).
 * *loaded: the links some shape loads; *classes: the classes among them. */
int lclass_make(const topo *g, const algo_shape *const *sh, uint32_t n, uint32_t **rep,
                uint32_t *loaded, uint32_t *classes, ss_err *err);

#endif
