/* vary.h - per-rank variation of a built program: stragglers and jitter.
 *
 * Stragglers (runtime.stragglers) scale every COMPUTE op of a rank by its
 * factor, once, before the step is simulated. Jitter (runtime.jitter) gives
 * every COMPUTE op of every rank its own lognormal factor exp(cv z - cv^2/2)
 * (mean 1), z from a xorshift64* stream seeded by (seed, sample), so a
 * sample is the same on every run; vary_jitter applies sample k on top of
 * the saved device times and vary_restore puts them back. The engine then
 * simulates every rank: variation breaks the symmetry between ranks.
 *
 * Ownership: vary_save returns an array the caller frees. Knows nothing of
 * the engine or the summary.
 */
#ifndef RUN_VARY_H
#define RUN_VARY_H

#include "../plan/prog.h"
#include "../plan/spec.h"

void vary_stragglers(const spec_scenario *s, prog *p);

/* Every op's device time, ranks in order; NULL when out of memory. */
ss_ns *vary_save(const prog *p);
void vary_jitter(const spec_scenario *s, prog *p, const ss_ns *base, uint32_t sample);
void vary_restore(prog *p, const ss_ns *base);

#endif
