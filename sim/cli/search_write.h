/* search_write.h - a search's point as the files users run: the scenario
 * (search --write-best), a torchtitan job TOML (--write-torchtitan) and
 * Megatron-LM arguments (--write-megatron).
 *
 * Each takes the search's scenario file and the overrides that make the
 * point (the search's --set, then search_point_sets), loads the point,
 * maps it (io/jobwrite.h: what does not map one to one is refused, naming
 * the setting and why) and writes the file whole (core/ofile.h); on error
 * nothing is written. The torchtitan TOML is read back before it is
 * written: the point's scenario with the TOML as its "trainer" in place of
 * the keys the import gives is simulated beside the point itself, and a
 * different step or peak reserved is refused (the TOML would not run the
 * point), so a written TOML is one torchtitan runs as the search predicted.
 * Two simulations of the point: the price of that promise.
 */
#ifndef CLI_SEARCH_WRITE_H
#define CLI_SEARCH_WRITE_H

#include <stddef.h>

#include "../core/err.h"

typedef struct sw_point {
    const char *scenario;      /* the search's file */
    const char *const *sets;   /* the search's --set and the point's overrides */
    size_t nsets;
    const char *title;         /* "NAME (search point N)" */
} sw_point;

int sw_scenario(const sw_point *p, const char *path, ss_err *err);
int sw_torchtitan(const sw_point *p, const char *path, ss_err *err);
int sw_megatron(const sw_point *p, const char *path, ss_err *err);

#endif
