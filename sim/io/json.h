/* json.h - strict, path-aware reading of JSON input files.
 *
 * A thin layer over cJSON that every loader uses, so that every error names
 * the file and the JSON path ("scenarios/a.json: $.sharding.bucket_cap_mb")
 * and says what was expected and what was found. Nothing outside sim/io/ sees
 * cJSON.
 *
 * Strictness: js_keys_check rejects unknown keys (listing the allowed ones);
 * typed getters reject wrong types and out-of-range values; nothing is
 * clamped. Integers must be exact (no fraction, |v| <= 2^53). At load, what
 * cJSON's tree would hide is refused: a string (key or value) holding a
 * \u0000 escape or bytes that are not UTF-8, an integer literal above 2^53
 * that its double rounds, nesting deeper than JS_MAX_DEPTH. Paths in
 * messages quote keys that are not plain ($.expect["memory.fits"]), in the
 * form js_doc_set accepts.
 *
 * Ownership: a js_doc owns its parsed tree (js_doc_fini frees it); js_node
 * values are cheap copies that point into a doc and carry their path; they are
 * valid until the doc is finished. Getters that fail leave *out untouched.
 * Getters for an optional key return SS_OK with *out = default when the key
 * is absent.
 */
#ifndef JS_JSON_H
#define JS_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "../core/err.h"

#define JS_PATH_MAX 384
#define JS_FILE_MAX 1024
#define JS_MAX_FILE_BYTES (64u * 1024u * 1024u) /* larger input is refused */
#define JS_MAX_DEPTH 64 /* objects and arrays nested deeper are refused */

struct cJSON;

struct js_cache; /* where the last walks through arrays stopped (json.c) */

typedef struct js_doc {
    struct cJSON *root;
    char file[JS_FILE_MAX]; /* as given by the caller, for messages */
    struct js_cache *cache; /* owned; NULL when it could not be allocated */
} js_doc;

typedef struct js_node {
    const struct cJSON *j;
    const char *file;       /* points into the js_doc */
    char path[JS_PATH_MAX]; /* "$", "$.a", "$.a[3].b" */
    struct js_cache *cache; /* the js_doc's */
} js_node;

/* Read and parse a file. Errors: missing/unreadable file (SS_E_IO), empty
 * file, file over JS_MAX_FILE_BYTES, NUL bytes, nesting past JS_MAX_DEPTH,
 * malformed JSON with line and column of the first bad character, and the
 * text checks above with the node's path, line and column (SS_E_INPUT). */
int js_doc_load(js_doc *d, const char *file, ss_err *err);
/* Parse text (len bytes) under the display name `file`. */
int js_doc_parse(js_doc *d, const char *file, const char *text, size_t len,
                 ss_err *err);
void js_doc_fini(js_doc *d); /* NULL root is fine */

/* The whole of an open file into a malloc'd *text (not NUL-terminated) of
 * *len bytes; more than max bytes is an error (SS_E_INPUT), as is a read
 * error (SS_E_IO), both naming `file`. The loaders of other text formats
 * share it. */
int js_read_stream(FILE *f, const char *file, size_t max, char **text, size_t *len, ss_err *err);

/* The *.json files of folder `dir` (not recursive, no hidden files) as
 * "dir/name" paths in name order, in a malloc'd array of malloc'd strings
 * the caller frees with js_list_free. An unreadable folder is SS_E_IO
 * naming it. */
int js_list_dir(const char *dir, char ***paths, size_t *n, ss_err *err);
void js_list_free(char **paths, size_t n);

/* Apply one command-line override "a.b[2].c=value" to the tree. The path
 * may start with "$." and name a key as ["k.e y"] (\" and \\ escaped), as
 * messages print paths; an '=' inside ["..."] belongs to the key. value is
 * parsed as JSON when it is valid JSON (number, true, false, null, "string",
 * object, array), else taken as a plain string, and checked as file text
 * is (NUL, UTF-8, exact integers, depth). Missing object keys on the
 * path are created (so the strict loader later rejects unknown ones); array
 * indexes must exist. Errors name the override text. */
int js_doc_set(js_doc *d, const char *assignment, ss_err *err);

js_node js_root(const js_doc *d);

/* Types. */
bool js_is_obj(js_node n);
bool js_is_str(js_node n);
bool js_is_bool(js_node n);
bool js_is_num(js_node n);
/* Fail unless n is an object / array. */
int js_want_obj(js_node n, ss_err *err);

/* Fail on the first key of object n that is not in allowed[0..nallowed). */
int js_keys_check(js_node n, const char *const *allowed, size_t nallowed,
                  ss_err *err);

/* Child lookup: returns true and fills *child when key is present. */
bool js_get(js_node n, const char *key, js_node *child);
/* Like js_get, but a missing key is an error ("missing required key"). */
int js_need(js_node n, const char *key, js_node *child, ss_err *err);

/* Object members in file order: js_nmembers counts them, js_member gives
 * member i and its key (pointing into the doc). */
size_t js_nmembers(js_node obj);
js_node js_member(js_node obj, size_t i, const char **key);

/* Arrays: js_arr fails unless n[key] is an array (required) or absent
 * (optional: *len = 0). js_at gives element i. */
int js_arr(js_node n, const char *key, bool required, js_node *arr,
           size_t *len, ss_err *err);
js_node js_at(js_node arr, size_t i);

/* Scalars at n[key]. min/max are inclusive bounds. */
int js_u64(js_node n, const char *key, bool required, uint64_t def,
           uint64_t min, uint64_t max, uint64_t *out, ss_err *err);
int js_num(js_node n, const char *key, bool required, double def, double min,
           double max, double *out, ss_err *err);
int js_bool(js_node n, const char *key, bool required, bool def, bool *out,
            ss_err *err);
/* *out points into the doc. */
int js_str(js_node n, const char *key, bool required, const char *def,
           const char **out, ss_err *err);
/* A string that must be one of names[0..nnames); *out = its index. def is an
 * index used when the key is absent and not required. The error lists the
 * accepted names. */
int js_enum(js_node n, const char *key, bool required, int def,
            const char *const *names, size_t nnames, int *out, ss_err *err);

/* The node's own value (for array elements): same rules as above. */
int js_u64_val(js_node n, uint64_t min, uint64_t max, uint64_t *out,
               ss_err *err);
int js_str_val(js_node n, const char **out, ss_err *err);

/* Key recording, for the key table (`shardsim keys`): while a recorder is
 * installed on the calling thread, every typed getter above and
 * js_keys_check report each key they are asked for, present or not, with
 * what they accept, so the table is the loaders' own reading of a file and
 * cannot drift from it. js_record(NULL, NULL) stops. The js_key and its
 * strings are valid during the call only. */
typedef struct js_key {
    const char *file;       /* the doc's file, as given */
    char path[JS_PATH_MAX]; /* "$.parallel.tp", "$.runtime.stragglers[0].rank" */
    const char *kind;       /* "integer", "number", "boolean", "string", "enum",
                               "array", or "key" (allowed by js_keys_check) */
    bool required;
    bool in_object;         /* the object asked exists (a --set there lands) */
    char accepts[400];      /* "[1, 1024]", "one of \"1f1b\", ...", or "" */
    char def[48];           /* the default when absent and optional, or "" */
} js_key;
typedef void (*js_key_fn)(void *ctx, const js_key *k);
void js_record(js_key_fn fn, void *ctx);

/* Fail with "file: path" as where and a formatted message. */
int js_failf(js_node n, ss_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Resolve `rel` against the directory of `base_file` into out (absolute
 * paths are kept). Fails with SS_E_INPUT if it does not fit. */
int js_path_resolve(const char *base_file, const char *rel, char *out,
                    size_t outlen, ss_err *err);

/* A sub-document at parent[key]: either the object inline, or a file named
 * relative to parent's file, loaded into `doc` (which the caller finishes,
 * loaded or not). *out is the object. */
int js_load_ref(js_node parent, const char *key, js_doc *doc, js_node *out,
                ss_err *err);

/* Copy the string at n[key] (or "" when absent and not required) into a
 * buffer of SPEC_NAME_MAX (128) bytes, cutting a longer one at 127 bytes or
 * less, on a character boundary (core/utf8.h). */
int js_copy_name(js_node n, const char *key, bool required, char *dst,
                 ss_err *err);

/* An inline list of allowed keys for js_keys_check: JS_KEYS("a", "b"). */
#define JS_KEYS(...)                                                           \
    (const char *const[]){__VA_ARGS__},                                        \
        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

#endif
