/* scenario.h - load a scenario file (and the model, topology and device
 * files it names) into a spec_scenario.
 *
 * A scenario refers to its model and topology by a path relative to the
 * scenario file, or inlines them as objects; a topology does the same for
 * its device. Validation is strict: unknown keys, wrong types, values out of
 * range, references that do not resolve are SS_E_INPUT errors whose `where`
 * names the file and JSON path. Overrides ("a.b=value", the CLI's --set) are
 * applied to the scenario document before validation, so they are checked
 * like the file itself.
 *
 * Ownership: on success *out is filled and owns its arrays (free with
 * spec_scenario_fini); on failure *out is untouched.
 */
#ifndef SCN_SCENARIO_H
#define SCN_SCENARIO_H

#include <stdbool.h>

#include "../plan/spec.h"
#include "../core/err.h"

/* If `file` is a JSON summary written by `shardsim run --json` (it has a
 * top-level "shardsim_version"), set *is_summary and return its text in
 * *text (caller frees with free()); otherwise *is_summary = false and
 * *text = NULL. Errors: unreadable or malformed file. */
int scn_read_summary(const char *file, char **text, bool *is_summary, ss_err *err);

int scn_load(const char *file, const char *const *overrides, size_t noverrides,
             spec_scenario *out, ss_err *err);

/* The same from text in memory; `name` stands for the file in messages and
 * is the base that relative references resolve against. */
int scn_load_text(const char *name, const char *text, size_t len, const char *const *overrides,
                  size_t noverrides, spec_scenario *out, ss_err *err);

/* The scenario file with the overrides applied, as JSON text (caller frees)
 * that runs from anywhere: every file it names (model, hf_config, topology
 * and its file and device, a DeepSpeed config as sharding, calibration) as
 * an absolute path. `name`, if not NULL, replaces its name. The text is
 * loaded back before it is returned, so it is a scenario the loader takes.
 * For `search --write-best`. */
int scn_write_resolved(const char *file, const char *const *overrides, size_t noverrides,
                       const char *name, char **text, ss_err *err);

#endif
