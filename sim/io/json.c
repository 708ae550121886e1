#include "json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXACT_MAX 9007199254740992.0 /* 2^53 */

/* ---- documents ---- */

static int read_file(const char *file, char **text, size_t *len, ss_err *err)
{
    FILE *f = fopen(file, "rb");
    if (!f) return ss_fail(err, SS_E_IO, file, "cannot read file: %s", strerror(errno));
    char *buf = malloc(JS_MAX_FILE_BYTES + 1);
    if (!buf) {
        fclose(f);
        return ss_fail(err, SS_E_NOMEM, file, "out of memory reading the file");
    }
    size_t n = fread(buf, 1, JS_MAX_FILE_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ss_fail(err, SS_E_IO, file, "cannot read file: read error");
    }
    if (n > JS_MAX_FILE_BYTES) {
        free(buf);
        return ss_fail(err, SS_E_INPUT, file, "file is larger than %u bytes",
                       JS_MAX_FILE_BYTES);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return SS_OK;
}

static void line_col(const char *text, const char *at, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (const char *c = text; c < at; c++) {
        if (*c == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int js_doc_parse(js_doc *d, const char *file, const char *text, size_t len, ss_err *err)
{
    d->root = NULL;
    snprintf(d->file, sizeof d->file, "%s", file);
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
        i++;
    if (i == len) return ss_fail(err, SS_E_INPUT, file, "file is empty: expected a JSON object");
    if (memchr(text, '\0', len))
        return ss_fail(err, SS_E_INPUT, file, "file contains NUL bytes: not JSON text");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    /* Trailing text is an error; the buffer need not end with a NUL. */
    while (end && root && end < text + len &&
           (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
        end++;
    if (!root || (end && end < text + len)) {
        unsigned line, col;
        line_col(text, end ? end : text, &line, &col);
        cJSON_Delete(root);
        return ss_fail(err, SS_E_INPUT, file, "malformed JSON at line %u, column %u", line, col);
    }
    d->root = root;
    return SS_OK;
}

int js_doc_load(js_doc *d, const char *file, ss_err *err)
{
    char *text = NULL;
    size_t len = 0;
    d->root = NULL;
    snprintf(d->file, sizeof d->file, "%s", file);
    int rc = read_file(file, &text, &len, err);
    if (rc) return rc;
    rc = js_doc_parse(d, file, text, len, err);
    free(text);
    return rc;
}

void js_doc_fini(js_doc *d)
{
    if (!d) return;
    cJSON_Delete(d->root);
    d->root = NULL;
}

js_node js_root(const js_doc *d)
{
    js_node n = {d->root, d->file, "$"};
    return n;
}

/* ---- nodes and messages ---- */

/* Keys that are not plain identifiers are quoted: $.expect["memory.fits"]. */
static void child_path(js_node *c, const char *parent, const char *key, long idx)
{
    bool plain = key && key[0] && strcspn(key, ".[]\" ") == strlen(key);
    int w = !key ? snprintf(c->path, sizeof c->path, "%s[%ld]", parent, idx)
            : plain ? snprintf(c->path, sizeof c->path, "%s.%s", parent, key)
                    : snprintf(c->path, sizeof c->path, "%s[\"%s\"]", parent, key);
    if (w >= (int)sizeof c->path) memcpy(c->path + sizeof c->path - 4, "...", 4);
}

int js_failf(js_node n, ss_err *err, const char *fmt, ...)
{
    if (!err || err->code != SS_OK) return SS_E_INPUT;
    char where[JS_FILE_MAX + JS_PATH_MAX + 4];
    snprintf(where, sizeof where, "%s: %s", n.file, n.path);
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ss_fail(err, SS_E_INPUT, where, "%s", msg);
}

static const char *type_name(const cJSON *j)
{
    if (!j) return "nothing";
    if (cJSON_IsObject(j)) return "an object";
    if (cJSON_IsArray(j)) return "an array";
    if (cJSON_IsString(j)) return "a string";
    if (cJSON_IsNumber(j)) return "a number";
    if (cJSON_IsBool(j)) return "a boolean";
    if (cJSON_IsNull(j)) return "null";
    return "an invalid value";
}

bool js_is_obj(js_node n) { return cJSON_IsObject(n.j); }
bool js_is_str(js_node n) { return cJSON_IsString(n.j); }

int js_want_obj(js_node n, ss_err *err)
{
    if (cJSON_IsObject(n.j)) return SS_OK;
    return js_failf(n, err, "expected an object, found %s", type_name(n.j));
}

int js_keys_check(js_node n, const char *const *allowed, size_t nallowed, ss_err *err)
{
    int rc = js_want_obj(n, err); /* array members have no keys to check */
    if (rc) return rc;
    for (const cJSON *c = n.j ? n.j->child : NULL; c; c = c->next) {
        bool ok = false;
        for (size_t i = 0; i < nallowed && !ok; i++) ok = strcmp(c->string, allowed[i]) == 0;
        for (const cJSON *d = n.j->child; d != c && ok; d = d->next)
            if (strcmp(d->string, c->string) == 0)
                return js_failf(n, err, "duplicate key \"%s\"", c->string);
        if (ok) continue;
        char list[400] = "";
        size_t used = 0;
        for (size_t i = 0; i < nallowed && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     allowed[i]);
        return js_failf(n, err, "unknown key \"%s\" (allowed: %s)", c->string, list);
    }
    return SS_OK;
}

bool js_get(js_node n, const char *key, js_node *child)
{
    const cJSON *c = cJSON_IsObject(n.j) ? cJSON_GetObjectItemCaseSensitive(n.j, key) : NULL;
    if (!c) return false;
    child->j = c;
    child->file = n.file;
    child_path(child, n.path, key, 0);
    return true;
}

int js_need(js_node n, const char *key, js_node *child, ss_err *err)
{
    if (js_get(n, key, child)) return SS_OK;
    return js_failf(n, err, "missing required key \"%s\"", key);
}

int js_arr(js_node n, const char *key, bool required, js_node *arr, size_t *len, ss_err *err)
{
    if (!js_get(n, key, arr)) {
        *len = 0;
        *arr = n;
        return required ? js_need(n, key, arr, err) : SS_OK;
    }
    if (!cJSON_IsArray(arr->j))
        return js_failf(*arr, err, "expected an array, found %s", type_name(arr->j));
    *len = (size_t)cJSON_GetArraySize(arr->j);
    return SS_OK;
}

size_t js_nmembers(js_node obj)
{
    return cJSON_IsObject(obj.j) ? (size_t)cJSON_GetArraySize(obj.j) : 0;
}

js_node js_member(js_node obj, size_t i, const char **key)
{
    const cJSON *c = cJSON_GetArrayItem(obj.j, (int)i);
    js_node n = {c, obj.file, ""};
    *key = c ? c->string : "";
    child_path(&n, obj.path, *key, 0);
    return n;
}

js_node js_at(js_node arr, size_t i)
{
    js_node c = {cJSON_GetArrayItem(arr.j, (int)i), arr.file, ""};
    child_path(&c, arr.path, NULL, (long)i);
    return c;
}

/* ---- scalars ---- */

int js_u64_val(js_node n, uint64_t min, uint64_t max, uint64_t *out, ss_err *err)
{
    if (!cJSON_IsNumber(n.j))
        return js_failf(n, err, "expected an integer, found %s", type_name(n.j));
    double v = n.j->valuedouble;
    if (!isfinite(v) || v != floor(v))
        return js_failf(n, err, "expected an integer, found %g", v);
    if (v < 0) return js_failf(n, err, "expected a non-negative integer, found %.17g", v);
    if (v > EXACT_MAX)
        return js_failf(n, err, "%.17g is too large to be exact (at most 2^53)", v);
    uint64_t u = (uint64_t)v;
    if (u < min || u > max)
        return js_failf(n, err, "expected an integer in [%llu, %llu], found %llu",
                        (unsigned long long)min, (unsigned long long)max,
                        (unsigned long long)u);
    *out = u;
    return SS_OK;
}

int js_u64(js_node n, const char *key, bool required, uint64_t def, uint64_t min,
           uint64_t max, uint64_t *out, ss_err *err)
{
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *out = def;
        return SS_OK;
    }
    return js_u64_val(c, min, max, out, err);
}

int js_num(js_node n, const char *key, bool required, double def, double min, double max,
           double *out, ss_err *err)
{
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *out = def;
        return SS_OK;
    }
    if (!cJSON_IsNumber(c.j)) return js_failf(c, err, "expected a number, found %s", type_name(c.j));
    double v = c.j->valuedouble;
    if (!isfinite(v) || v < min || v > max)
        return js_failf(c, err, "expected a number in [%g, %g], found %g", min, max, v);
    *out = v;
    return SS_OK;
}

int js_bool(js_node n, const char *key, bool required, bool def, bool *out, ss_err *err)
{
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *out = def;
        return SS_OK;
    }
    if (!cJSON_IsBool(c.j)) return js_failf(c, err, "expected true or false, found %s", type_name(c.j));
    *out = cJSON_IsTrue(c.j);
    return SS_OK;
}

int js_str_val(js_node n, const char **out, ss_err *err)
{
    if (!cJSON_IsString(n.j)) return js_failf(n, err, "expected a string, found %s", type_name(n.j));
    *out = n.j->valuestring;
    return SS_OK;
}

int js_str(js_node n, const char *key, bool required, const char *def, const char **out,
           ss_err *err)
{
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *out = def;
        return SS_OK;
    }
    return js_str_val(c, out, err);
}

int js_enum(js_node n, const char *key, bool required, int def, const char *const *names,
            size_t nnames, int *out, ss_err *err)
{
    const char *s = NULL;
    js_node c;
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        *out = def;
        return SS_OK;
    }
    int rc = js_str_val(c, &s, err);
    if (rc) return rc;
    for (size_t i = 0; i < nnames; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (int)i;
            return SS_OK;
        }
    char list[400] = "";
    size_t used = 0;
    for (size_t i = 0; i < nnames && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s\"%s\"", i ? ", " : "",
                                 names[i]);
    return js_failf(c, err, "expected one of %s; found \"%s\"", list, s);
}

/* ---- overrides ---- */

static cJSON *parse_value(const char *v)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(v, strlen(v), &end, 0);
    if (j && end && *end == '\0') return j;
    cJSON_Delete(j);
    return cJSON_CreateString(v);
}

/* Walk one path segment: "key" or "key[3]". Creates missing object keys. */
static int set_step(cJSON **cur, const char *seg, size_t len, const char *where, ss_err *err)
{
    char key[256];
    const char *br = memchr(seg, '[', len);
    size_t klen = br ? (size_t)(br - seg) : len;
    if (klen == 0 || klen >= sizeof key)
        return ss_fail(err, SS_E_INPUT, where, "expected KEY or KEY[INDEX] in the path");
    memcpy(key, seg, klen);
    key[klen] = '\0';
    if (!cJSON_IsObject(*cur))
        return ss_fail(err, SS_E_INPUT, where, "the parent of \"%s\" is %s, not an object", key,
                       type_name(*cur));
    cJSON *next = cJSON_GetObjectItemCaseSensitive(*cur, key);
    if (!next && !(next = cJSON_AddObjectToObject(*cur, key)))
        return ss_fail(err, SS_E_NOMEM, where, "out of memory");
    while (br && br < seg + len) {
        char *e;
        long idx = strtol(br + 1, &e, 10);
        if (e == br + 1 || *e != ']' || idx < 0)
            return ss_fail(err, SS_E_INPUT, where, "bad array index in \"%.*s\"", (int)len, seg);
        if (!cJSON_IsArray(next) || idx >= cJSON_GetArraySize(next))
            return ss_fail(err, SS_E_INPUT, where, "\"%s\" has no element %ld", key, idx);
        next = cJSON_GetArrayItem(next, (int)idx);
        br = e + 1 < seg + len && e[1] == '[' ? e + 1 : NULL;
    }
    *cur = next;
    return SS_OK;
}

static int set_leaf(cJSON *parent, const char *seg, const char *value, const char *where,
                    ss_err *err)
{
    cJSON *v = parse_value(value);
    if (!v) return ss_fail(err, SS_E_NOMEM, where, "out of memory");
    const char *br = strchr(seg, '[');
    if (br) {
        /* KEY[i]: walk to the array, replace element i. */
        const char *lb = strrchr(seg, '[');
        cJSON *arr = parent;
        int rc = set_step(&arr, seg, (size_t)(lb - seg), where, err);
        long idx = strtol(lb + 1, NULL, 10);
        if (!rc && (!cJSON_IsArray(arr) || idx < 0 || idx >= cJSON_GetArraySize(arr)))
            rc = ss_fail(err, SS_E_INPUT, where, "no element %ld to replace", idx);
        if (!rc && !cJSON_ReplaceItemInArray(arr, (int)idx, v)) rc = SS_E_NOMEM;
        if (rc) cJSON_Delete(v);
        return rc;
    }
    if (!cJSON_IsObject(parent)) {
        cJSON_Delete(v);
        return ss_fail(err, SS_E_INPUT, where, "the parent of \"%s\" is %s, not an object", seg,
                       type_name(parent));
    }
    if (cJSON_GetObjectItemCaseSensitive(parent, seg))
        cJSON_ReplaceItemInObjectCaseSensitive(parent, seg, v);
    else
        cJSON_AddItemToObject(parent, seg, v);
    return SS_OK;
}

int js_doc_set(js_doc *d, const char *assignment, ss_err *err)
{
    char where[600];
    snprintf(where, sizeof where, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return ss_fail(err, SS_E_INPUT, where, "expected PATH=VALUE, e.g. sharding.strategy=full_shard");
    char path[512];
    size_t plen = (size_t)(eq - assignment);
    if (plen >= sizeof path) return ss_fail(err, SS_E_INPUT, where, "path too long");
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    cJSON *cur = d->root;
    char *seg = path;
    for (char *dot; (dot = strchr(seg, '.')) != NULL; seg = dot + 1) {
        int rc = set_step(&cur, seg, (size_t)(dot - seg), where, err);
        if (rc) return rc;
    }
    if (!*seg) return ss_fail(err, SS_E_INPUT, where, "the path ends with '.'");
    return set_leaf(cur, seg, eq + 1, where, err);
}

int js_path_resolve(const char *base_file, const char *rel, char *out, size_t outlen,
                    ss_err *err)
{
    int w;
    const char *slash = strrchr(base_file, '/');
    if (rel[0] == '/' || !slash)
        w = snprintf(out, outlen, "%s", rel);
    else
        w = snprintf(out, outlen, "%.*s/%s", (int)(slash - base_file), base_file, rel);
    if (w < 0 || (size_t)w >= outlen)
        return ss_fail(err, SS_E_INPUT, base_file, "path \"%s\" is too long", rel);
    return SS_OK;
}
