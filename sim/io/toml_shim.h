/* toml_shim.h - a TOML file as the JSON tree every loader reads.
 *
 * torchtitan's job configs are TOML; the loaders of sim/io/ read JSON
 * (json.h). toml_to_json parses TOML text with toml++ (Debian's
 * libtomlplusplus-dev, a C++17 library; toml_shim.cpp is the only C++ in the
 * project) and builds the equivalent cJSON tree: tables are objects, arrays
 * arrays, strings, booleans and numbers themselves, dates and times their
 * TOML text as strings. What JSON and json.h would hide is refused: an
 * integer beyond 2^53 (its double would round) and a float that is inf or
 * nan, naming the key's dotted path. Keys come out in toml++'s order
 * (sorted), not the file's.
 *
 * Built without toml++ (the package absent at configure time),
 * toml_to_json fails with a message that names the package to install, and
 * toml_available says false; nothing else changes.
 *
 * Errors: SS_E_INPUT naming `file`, with line:column for malformed TOML
 * and the key path otherwise; SS_E_NOMEM. Ownership: *out is a new cJSON
 * tree the caller deletes (cJSON_Delete); on error *out is untouched.
 */
#ifndef TOML_SHIM_H
#define TOML_SHIM_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../core/err.h" /* C declarations, also from the C++ shim */

struct cJSON;

/* text: len bytes of TOML (not NUL-terminated); file: for messages. */
int toml_to_json(const char *file, const char *text, size_t len, struct cJSON **out, ss_err *err);

/* Whether this build parses TOML. */
bool toml_available(void);

#ifdef __cplusplus
}
#endif

#endif
