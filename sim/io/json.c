/* json.c - strict, path-aware reading of JSON input (contract in json.h). */
#include "json.h"

#include "../core/utf8.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define EXACT_MAX 9007199254740992.0 /* 2^53: above it doubles skip integers */
#define READ_CHUNK (64u * 1024u)
#define WHERE_MAX 512 /* sizeof ss_err.where: longer text is cut there anyway */

static js_node make_child(js_node parent, const cJSON *j, const char *key, size_t idx);

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

/* Shortest %g that reads back as v, so a message shows 0.1 as "0.1" and
 * 2^53 + 2 as "9007199254740994" rather than a rounded neighbour. */
static const char *fmt_num(double v, char buf[32])
{
    for (int prec = 15; prec < 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return buf;
    }
    snprintf(buf, 32, "%.17g", v);
    return buf;
}

/* "a, b, c" (or "\"a\", \"b\"") into buf; a list that does not fit ends in
 * "..." so the reader knows it was cut. size must be at least 4. */
static void join_names(char *buf, size_t size, const char *const *names, size_t n, bool quote)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + used, size - used, quote ? "%s\"%s\"" : "%s%s", i ? ", " : "",
                         names[i]);
        if (w < 0 || (size_t)w >= size - used) {
            memcpy(buf + size - 4, "...", 4);
            return;
        }
        used += (size_t)w;
    }
}

/* ---- documents ---- */

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void js_list_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

int js_list_dir(const char *dir, char ***paths, size_t *n, ss_err *err)
{
    *paths = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return ss_fail(err, SS_E_IO, dir, "cannot read the folder");
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--; /* "scenarios/x/" names its files once */
    int rc = SS_OK;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 5 || strcmp(e->d_name + len - 5, ".json") || e->d_name[0] == '.') continue;
        char **grown = realloc(*paths, (*n + 1) * sizeof **paths);
        char *path = malloc(dl + len + 2);
        if (grown) *paths = grown;
        if (!grown || !path) {
            free(path);
            rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
            break;
        }
        sprintf(path, "%.*s/%s", (int)dl, dir, e->d_name);
        (*paths)[(*n)++] = path;
    }
    closedir(d);
    if (rc) {
        js_list_free(*paths, *n);
        *paths = NULL, *n = 0;
    } else if (*n) qsort(*paths, *n, sizeof **paths, cmp_path);
    return rc;
}

/* Reads at most max + 1 bytes (one more than allowed, to tell "too large"
 * from "exactly the limit"), growing the buffer, so a small file costs a
 * small buffer and a pipe works like a file. */
int js_read_stream(FILE *f, const char *file, size_t max, char **text, size_t *len, ss_err *err)
{
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap > max) break; /* one byte too many: too large */
            size_t ncap = cap ? 2 * cap : READ_CHUNK;
            ncap = ncap > max + 1u ? max + 1u : ncap;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return ss_fail(err, SS_E_NOMEM, file, "out of memory reading the file");
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - n, got = fread(buf + n, 1, want, f);
        n += got;
        if (got < want) break; /* end of file, or an error (ferror below) */
    }
    int rc = SS_OK;
    if (ferror(f))
        rc = ss_fail(err, SS_E_IO, file, "cannot read file: %s", strerror(errno));
    else if (n > max)
        rc = ss_fail(err, SS_E_INPUT, file, "file is larger than %zu bytes", max);
    if (rc) {
        free(buf);
        return rc;
    }
    *text = buf;
    *len = n;
    return SS_OK;
}

/* Line and column (1-based) of `at`; the column counts characters, not
 * bytes, so it matches what an editor shows for UTF-8 text. */
static void line_col(const char *text, const char *at, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (const char *c = text; c < at; c++) {
        if (*c == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)*c & 0xC0u) != 0x80u) {
            (*col)++;
        }
    }
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* cJSON's arrays and objects are linked lists: the i-th member is i steps
 * from the first, so a loop over js_at(arr, i) was quadratic (a scenario
 * with 40,000 assumptions took 2 s to load, a 5 MB one minutes). The
 * document remembers where its last few walks stopped, one per container,
 * so a loop in order takes one step per member, nested loops included. */
#define JS_CURSORS 8

typedef struct js_cursor {
    const cJSON *container, *item;
    size_t idx;
} js_cursor;

struct js_cache {
    js_cursor c[JS_CURSORS];
    unsigned next; /* the cursor replaced next, round robin */
};

static const cJSON *nth(struct js_cache *k, const cJSON *container, size_t i)
{
    js_cursor *cur = NULL;
    for (unsigned u = 0; k && u < JS_CURSORS && !cur; u++)
        if (k->c[u].container == container) cur = &k->c[u];
    const cJSON *c = container ? container->child : NULL;
    size_t at = 0;
    if (cur && cur->idx <= i) c = cur->item, at = cur->idx;
    for (; c && at < i; at++) c = c->next;
    if (k && c) {
        if (!cur) cur = &k->c[k->next++ % JS_CURSORS];
        *cur = (js_cursor){container, c, i};
    }
    return c;
}

/* ---- what cJSON's tree cannot show ----
 *
 * cJSON ends a string at a \u0000 escape (its strings are NUL-terminated),
 * copies bytes that are not UTF-8 as they are, and rounds integers past 2^53
 * to a neighbour. So a key "strategy\u0000junk" would read as "strategy", a
 * path would open another file and 2^53 + 1 would read as 2^53, all
 * silently. The parsed text is walked beside the tree (same shape, same
 * order) to refuse these with the node's path and the line and column. */

typedef struct tscan {
    const char *t;
    size_t len, i;
    const char *bad;  /* what is wrong; NULL while all is well */
    size_t bad_at;    /* its offset in t */
    bool bad_key;     /* in a member's key rather than a value */
    bool bad_int;     /* an inexact integer rather than a string */
    const char *key;  /* the last key scanned */
    js_node where;    /* the node (for a key: its object) */
} tscan;

static void ts_ws(tscan *s)
{
    while (s->i < s->len && is_space(s->t[s->i])) s->i++;
}

static bool ts_flag(tscan *s, size_t at, const char *what, js_node n, bool key)
{
    s->bad = what;
    s->bad_at = at;
    s->bad_key = key;
    s->where = n;
    return false;
}

/* The string opening at s->t[s->i]; on success s->i is past its quote. */
static bool ts_string(tscan *s, js_node n, bool key)
{
    size_t i = s->i + 1;
    while (i < s->len && s->t[i] != '"') {
        const unsigned char *u = (const unsigned char *)s->t + i;
        if (*u == '\\') {
            if (i + 6 <= s->len && u[1] == 'u' && memcmp(u + 2, "0000", 4) == 0)
                return ts_flag(s, i, "a NUL character (\\u0000), which would cut it short", n,
                               key);
            i += u[1] == 'u' ? 6 : 2;
            continue;
        }
        size_t k = ss_utf8_char(u, s->len - i);
        if (!k) return ts_flag(s, i, "bytes that are not UTF-8", n, key);
        i += k;
    }
    s->i = i + 1;
    return true;
}

/* An integer literal (no fraction, no exponent) must be the double cJSON
 * made of it; below 2^53 every integer is. "%.0f" prints a double's exact
 * decimal value (C11 7.21.6.1 with glibc), up to 309 digits. */
static bool ts_number(tscan *s, js_node n)
{
    size_t b = s->i;
    while (s->i < s->len && strchr("+-0123456789.eE", s->t[s->i]) && s->t[s->i]) s->i++;
    size_t len = s->i - b;
    const char *d = s->t + b;
    if (memchr(d, '.', len) || memchr(d, 'e', len) || memchr(d, 'E', len)) return true;
    double v = fabs(n.j->valuedouble);
    if (v < EXACT_MAX) return true;
    char exact[320];
    snprintf(exact, sizeof exact, "%.0f", v);
    if (*d == '-') d++, len--;
    if (strlen(exact) == len && memcmp(exact, d, len) == 0) return true;
    ts_flag(s, b, "an inexact integer", n, false);
    s->bad_int = true;
    return false;
}

static bool ts_value(tscan *s, js_node n)
{
    ts_ws(s);
    char c = s->i < s->len ? s->t[s->i] : '\0';
    if (c == '"') return ts_string(s, n, false);
    if (c == '-' || (c >= '0' && c <= '9')) return ts_number(s, n);
    if (c != '{' && c != '[') { /* true, false, null */
        while (s->i < s->len && s->t[s->i] >= 'a' && s->t[s->i] <= 'z') s->i++;
        return true;
    }
    s->i++;
    size_t k = 0;
    for (const cJSON *ch = n.j->child; ch; ch = ch->next, k++) {
        ts_ws(s);
        if (s->i < s->len && s->t[s->i] == ',') s->i++;
        ts_ws(s);
        js_node cn = make_child(n, ch, c == '{' ? ch->string : NULL, k);
        if (c == '{') {
            s->key = ch->string; /* as cJSON holds it: cut at a NUL */
            if (!ts_string(s, n, true)) return false;
            ts_ws(s);
            s->i++; /* ':' */
        }
        if (!ts_value(s, cn)) return false;
    }
    ts_ws(s);
    s->i++; /* the closing bracket */
    return true;
}

/* Walk text (which cJSON parsed into root's tree) and fail on the first
 * string holding a NUL or bytes that are not UTF-8, or inexact integer. */
static int text_check(const char *text, size_t len, js_node root, ss_err *err)
{
    tscan s = {.t = text, .len = len};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) s.i = 3; /* cJSON skips a BOM */
    if (ts_value(&s, root)) return SS_OK;
    unsigned line, col;
    line_col(text, text + s.bad_at, &line, &col);
    if (s.bad_key && text[s.bad_at] == '\\') { /* a NUL: the key before it was checked */
        char head[61];
        ss_utf8_copy(head, sizeof head, s.key ? s.key : "");
        return js_failf(s.where, err, "the key \"%s\" at line %u, column %u holds %s: "
                        "expected UTF-8 text without NUL", head, line, col, s.bad);
    }
    if (s.bad_key)
        return js_failf(s.where, err, "a key at line %u, column %u holds %s: expected "
                        "UTF-8 text without NUL", line, col, s.bad);
    if (s.bad_int) {
        /* Counted within len: the text need not end with a NUL, and the
         * integer may be its last byte. */
        size_t n = 0;
        while (s.bad_at + n < len && (text[s.bad_at + n] == '-' ||
                                      (text[s.bad_at + n] >= '0' && text[s.bad_at + n] <= '9')))
            n++;
        char exact[32];
        return js_failf(s.where, err, "%.*s is too large to be exact (integers may be at most "
                        "2^53 = 9007199254740992; a double reads this one as %s)",
                        (int)n, text + s.bad_at, fmt_num(s.where.j->valuedouble, exact));
    }
    return js_failf(s.where, err, "the string at line %u, column %u holds %s: expected UTF-8 "
                    "text without NUL", line, col, s.bad);
}

/* Offset of the first '{' or '[' that opens level JS_MAX_DEPTH + 1, or len
 * when the text nests no deeper. Brackets inside strings do not count. Run
 * before cJSON, whose own limit (1000) fails as plain "malformed". */
static size_t too_deep_at(const char *t, size_t len)
{
    unsigned depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = t[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > JS_MAX_DEPTH) return i;
        } else if ((c == '}' || c == ']') && depth) {
            depth--;
        }
    }
    return len;
}

int js_doc_parse(js_doc *d, const char *file, const char *text, size_t len, ss_err *err)
{
    d->root = NULL;
    d->cache = NULL;
    snprintf(d->file, sizeof d->file, "%s", file);
    size_t i = 0;
    while (i < len && is_space(text[i])) i++;
    if (i == len) return ss_fail(err, SS_E_INPUT, file, "file is empty: expected a JSON object");
    if (memchr(text, '\0', len))
        return ss_fail(err, SS_E_INPUT, file, "file contains NUL bytes: not JSON text");
    size_t deep = too_deep_at(text, len);
    if (deep < len) {
        unsigned line, col;
        line_col(text, text + deep, &line, &col);
        return ss_fail(err, SS_E_INPUT, file,
                       "objects and arrays nested deeper than %d levels at line %u, column %u "
                       "(inputs may nest at most %d levels)", JS_MAX_DEPTH, line, col,
                       JS_MAX_DEPTH);
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    /* Trailing text is an error; the buffer need not end with a NUL, so the
     * scan is bounded by len. */
    while (end && root && end < text + len && is_space(*end)) end++;
    if (!root || (end && end < text + len)) {
        unsigned line, col;
        line_col(text, end ? end : text, &line, &col);
        cJSON_Delete(root);
        return ss_fail(err, SS_E_INPUT, file, "malformed JSON at line %u, column %u", line, col);
    }
    d->root = root;
    d->cache = calloc(1, sizeof *d->cache); /* NULL: walks from the start */
    int rc = text_check(text, len, js_root(d), err);
    if (rc) js_doc_fini(d);
    return rc;
}

int js_doc_load(js_doc *d, const char *file, ss_err *err)
{
    char *text = NULL;
    size_t len = 0;
    d->root = NULL;
    d->cache = NULL;
    snprintf(d->file, sizeof d->file, "%s", file);
    FILE *f = fopen(file, "rb");
    if (!f) return ss_fail(err, SS_E_IO, file, "cannot read file: %s", strerror(errno));
    int rc = js_read_stream(f, file, JS_MAX_FILE_BYTES, &text, &len, err);
    fclose(f);
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
    free(d->cache);
    d->cache = NULL;
}

js_node js_root(const js_doc *d)
{
    js_node n = {d->root, d->file, "$", d->cache};
    return n;
}

/* ---- nodes and messages ---- */

/* key with '"' and '\\' escaped into buf[size] (cut when it does not fit;
 * the caller's "..." then says so). */
static void escape_key(char *buf, size_t size, const char *key)
{
    size_t w = 0;
    for (size_t i = 0; key[i] && w + 2 < size; i++) {
        if (key[i] == '"' || key[i] == '\\') buf[w++] = '\\';
        buf[w++] = key[i];
    }
    buf[w] = '\0';
}

/* Path of a member (key) or an element (key NULL, index idx). Keys that are
 * not plain identifiers are quoted, $.expect["memory.fits"] (with \" and
 * \\ escaped), which is also how --set names them, so a path in a message
 * can be pasted into --set. A path that does not fit ends in "...". */
static void child_path(char *out, const char *parent, const char *key, size_t idx)
{
    bool plain = key && key[0] && strcspn(key, ".[]\"\\ =") == strlen(key);
    char esc[JS_PATH_MAX];
    if (key && !plain) escape_key(esc, sizeof esc, key);
    int w = !key  ? snprintf(out, JS_PATH_MAX, "%s[%zu]", parent, idx)
            : plain ? snprintf(out, JS_PATH_MAX, "%s.%s", parent, key)
                    : snprintf(out, JS_PATH_MAX, "%s[\"%s\"]", parent, esc);
    if (w >= 0 && w < JS_PATH_MAX) return;
    /* "..." replaces the tail, backing off to a character's first byte. */
    size_t k = JS_PATH_MAX - 4;
    while (k > 0 && ((unsigned char)out[k] & 0xC0u) == 0x80u) k--;
    memcpy(out + k, "...", 4);
}

static js_node make_child(js_node parent, const cJSON *j, const char *key, size_t idx)
{
    js_node c;
    c.j = j;
    c.file = parent.file;
    c.cache = parent.cache;
    child_path(c.path, parent.path, key, idx);
    return c;
}

int js_failf(js_node n, ss_err *err, const char *fmt, ...)
{
    if (!err || err->code != SS_OK) return SS_E_INPUT; /* the first error wins */
    char where[JS_FILE_MAX + JS_PATH_MAX + 4];
    snprintf(where, sizeof where, "%s: %s", n.file, n.path);
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ss_fail(err, SS_E_INPUT, where, "%s", msg);
}

bool js_is_obj(js_node n) { return cJSON_IsObject(n.j); }
bool js_is_str(js_node n) { return cJSON_IsString(n.j); }
bool js_is_bool(js_node n) { return cJSON_IsBool(n.j); }
bool js_is_num(js_node n) { return cJSON_IsNumber(n.j); }

int js_want_obj(js_node n, ss_err *err)
{
    if (cJSON_IsObject(n.j)) return SS_OK;
    return js_failf(n, err, "expected an object, found %s", type_name(n.j));
}

static bool key_allowed(const char *key, const char *const *allowed, size_t nallowed)
{
    for (size_t i = 0; i < nallowed; i++)
        if (strcmp(key, allowed[i]) == 0) return true;
    return false;
}

/* cJSON keeps every duplicate and lookups find the first, so a repeated key
 * would silently drop the user's later value: it is an error instead. Only
 * allowed keys reach the duplicate scan, so it is bounded by nallowed^2. */
/* ---- key recording ---- */

static _Thread_local js_key_fn rec_fn;
static _Thread_local void *rec_ctx;

void js_record(js_key_fn fn, void *ctx)
{
    rec_fn = fn;
    rec_ctx = ctx;
}

static void note(js_node n, const char *key, const char *kind, bool required,
                 const char *accepts, const char *def)
{
    if (!rec_fn) return;
    js_key k = {.file = n.file, .kind = kind, .required = required, .in_object = cJSON_IsObject(n.j)};
    child_path(k.path, n.path, key, 0);
    snprintf(k.accepts, sizeof k.accepts, "%s", accepts ? accepts : "");
    snprintf(k.def, sizeof k.def, "%s", required || !def ? "" : def);
    rec_fn(rec_ctx, &k);
}

int js_keys_check(js_node n, const char *const *allowed, size_t nallowed, ss_err *err)
{
    int rc = js_want_obj(n, err); /* array members have no keys to check */
    if (rc) return rc;
    for (size_t i = 0; rec_fn && i < nallowed; i++) note(n, allowed[i], "key", false, "", NULL);
    for (const cJSON *c = n.j->child; c; c = c->next) {
        if (!key_allowed(c->string, allowed, nallowed)) {
            char list[400];
            join_names(list, sizeof list, allowed, nallowed, false);
            return js_failf(n, err, "unknown key \"%s\" (allowed: %s)", c->string, list);
        }
        for (const cJSON *p = n.j->child; p != c; p = p->next)
            if (strcmp(p->string, c->string) == 0)
                return js_failf(n, err, "duplicate key \"%s\"", c->string);
    }
    return SS_OK;
}

bool js_get(js_node n, const char *key, js_node *child)
{
    const cJSON *c = cJSON_IsObject(n.j) ? cJSON_GetObjectItemCaseSensitive(n.j, key) : NULL;
    if (!c) return false;
    *child = make_child(n, c, key, 0);
    return true;
}

int js_need(js_node n, const char *key, js_node *child, ss_err *err)
{
    if (js_get(n, key, child)) return SS_OK;
    if (!cJSON_IsObject(n.j)) return js_want_obj(n, err); /* "missing" would mislead */
    return js_failf(n, err, "missing required key \"%s\"", key);
}

size_t js_nmembers(js_node obj)
{
    return cJSON_IsObject(obj.j) ? (size_t)cJSON_GetArraySize(obj.j) : 0;
}

js_node js_member(js_node obj, size_t i, const char **key)
{
    const cJSON *c = cJSON_IsObject(obj.j) ? nth(obj.cache, obj.j, i) : NULL;
    *key = c && c->string ? c->string : "";
    return make_child(obj, c, c && c->string ? c->string : NULL, i);
}

int js_arr(js_node n, const char *key, bool required, js_node *arr, size_t *len, ss_err *err)
{
    js_node c;
    note(n, key, "array", required, "", "empty");
    if (!js_get(n, key, &c)) {
        if (required) return js_need(n, key, &c, err);
        /* An absent optional array is an empty one that still has a path. */
        *arr = make_child(n, NULL, key, 0);
        *len = 0;
        return SS_OK;
    }
    if (!cJSON_IsArray(c.j)) return js_failf(c, err, "expected an array, found %s", type_name(c.j));
    *arr = c;
    *len = (size_t)cJSON_GetArraySize(c.j);
    return SS_OK;
}

js_node js_at(js_node arr, size_t i)
{
    const cJSON *c = cJSON_IsArray(arr.j) ? nth(arr.cache, arr.j, i) : NULL;
    return make_child(arr, c, NULL, i);
}

/* ---- scalars ---- */

/* n[key] into *c; false when absent, with *rc = SS_OK (use the default) or
 * the "missing required key" error. */
static bool lookup(js_node n, const char *key, bool required, js_node *c, int *rc, ss_err *err)
{
    *rc = SS_OK;
    if (js_get(n, key, c)) return true;
    if (required) *rc = js_need(n, key, c, err);
    return false;
}

int js_u64_val(js_node n, uint64_t min, uint64_t max, uint64_t *out, ss_err *err)
{
    char b[32];
    if (!cJSON_IsNumber(n.j))
        return js_failf(n, err, "expected an integer, found %s", type_name(n.j));
    double v = n.j->valuedouble;
    if (!isfinite(v))
        return js_failf(n, err, "expected an integer, found a number too large to represent");
    if (v != floor(v)) return js_failf(n, err, "expected an integer, found %s", fmt_num(v, b));
    if (v < 0) return js_failf(n, err, "expected a non-negative integer, found %s", fmt_num(v, b));
    if (v > EXACT_MAX)
        return js_failf(n, err, "%s is too large to be exact (integers may be at most 2^53)",
                        fmt_num(v, b));
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
    int rc;
    if (rec_fn) {
        char a[64], d[32];
        snprintf(a, sizeof a, "[%llu, %llu]", (unsigned long long)min, (unsigned long long)max);
        snprintf(d, sizeof d, "%llu", (unsigned long long)def);
        note(n, key, "integer", required, a, d);
    }
    if (lookup(n, key, required, &c, &rc, err)) return js_u64_val(c, min, max, out, err);
    if (!rc) *out = def;
    return rc;
}

int js_num(js_node n, const char *key, bool required, double def, double min, double max,
           double *out, ss_err *err)
{
    js_node c;
    int rc;
    char b0[32], b1[32], b2[32];
    if (rec_fn) {
        char a[72];
        snprintf(a, sizeof a, "[%s, %s]", fmt_num(min, b0), fmt_num(max, b1));
        note(n, key, "number", required, a, fmt_num(def, b2));
    }
    if (!lookup(n, key, required, &c, &rc, err)) {
        if (!rc) *out = def;
        return rc;
    }
    if (!cJSON_IsNumber(c.j)) return js_failf(c, err, "expected a number, found %s", type_name(c.j));
    double v = c.j->valuedouble;
    if (!isfinite(v) || v < min || v > max)
        return js_failf(c, err, "expected a number in [%s, %s], found %s", fmt_num(min, b0),
                        fmt_num(max, b1), fmt_num(v, b2));
    *out = v;
    return SS_OK;
}

int js_bool(js_node n, const char *key, bool required, bool def, bool *out, ss_err *err)
{
    js_node c;
    int rc;
    note(n, key, "boolean", required, "true or false", def ? "true" : "false");
    if (!lookup(n, key, required, &c, &rc, err)) {
        if (!rc) *out = def;
        return rc;
    }
    if (!cJSON_IsBool(c.j))
        return js_failf(c, err, "expected true or false, found %s", type_name(c.j));
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
    int rc;
    note(n, key, "string", required, "", def);
    if (lookup(n, key, required, &c, &rc, err)) return js_str_val(c, out, err);
    if (!rc) *out = def;
    return rc;
}

/* Another spelling of the enum name `name` that users write because their
 * framework does: any case (PyTorch's ShardingStrategy.FULL_SHARD,
 * "NO_SHARD"), and torch's dtype names (torch.bfloat16 as "bfloat16", with
 * or without "torch."). */
static bool spelled_as(const char *s, const char *name)
{
    static const struct { const char *torch, *ours; } dtypes[] = {
        {"bfloat16", "bf16"}, {"float16", "fp16"}, {"half", "fp16"}, {"float32", "fp32"},
        {"float", "fp32"},    {"float8_e4m3fn", "fp8"}};
    if (strcasecmp(s, name) == 0) return true;
    if (strncmp(s, "torch.", 6) == 0) s += 6;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (strcmp(s, dtypes[i].torch) == 0 && strcmp(name, dtypes[i].ours) == 0) return true;
    return false;
}

int js_enum(js_node n, const char *key, bool required, int def, const char *const *names,
            size_t nnames, int *out, ss_err *err)
{
    js_node c;
    int rc;
    const char *s = NULL;
    if (rec_fn) {
        char list[400];
        join_names(list, sizeof list, names, nnames, true);
        note(n, key, "enum", required, list, def >= 0 && (size_t)def < nnames ? names[def] : "");
    }
    if (!lookup(n, key, required, &c, &rc, err)) {
        if (!rc) *out = def;
        return rc;
    }
    if ((rc = js_str_val(c, &s, err))) return rc;
    for (size_t i = 0; i < nnames; i++)
        if (strcmp(s, names[i]) == 0 || spelled_as(s, names[i])) {
            *out = (int)i;
            return SS_OK;
        }
    char list[400];
    join_names(list, sizeof list, names, nnames, true);
    return js_failf(c, err, "expected one of %s; found \"%s\"", list, s);
}

/* ---- overrides ---- */

/* One piece of an override's key path: a member key, or an array index. */
typedef struct set_tok {
    char key[JS_PATH_MAX]; /* "" for an index */
    long idx;              /* -1 for a key */
    size_t end;            /* offset just past the token in the path */
} set_tok;

static int read_index(const char *path, size_t pos, set_tok *t, const char *where, ss_err *err)
{
    const char *p = path + pos + 1;
    char *e = NULL;
    long v = -1;
    errno = 0;
    if (isdigit((unsigned char)*p)) v = strtol(p, &e, 10); /* digits only: no sign, no space */
    if (v < 0 || errno || v > INT_MAX || *e != ']')
        return ss_fail(err, SS_E_INPUT, where,
                       "bad path: expected a non-negative index and ']' after '[' at "
                       "character %zu", pos + 1);
    t->key[0] = '\0';
    t->idx = v;
    t->end = (size_t)(e + 1 - path);
    return SS_OK;
}

/* Offset just past the closing quote of the quoted key opening at q (a
 * '"'), or 0 when it is not closed. Backslash escapes the next character. */
static size_t quoted_end(const char *q)
{
    for (size_t i = 1; q[i]; i++) {
        if (q[i] == '\\' && q[i + 1]) i++;
        else if (q[i] == '"') return i + 1;
    }
    return 0;
}

/* ["key"]: a key as error messages print one that holds '.', '[', ']',
 * '"', '\\' or a space (child_path), \" and \\ unescaped. */
static int read_quoted(const char *path, size_t pos, set_tok *t, const char *where, ss_err *err)
{
    const char *q = path + pos + 1;
    size_t qe = quoted_end(q);
    if (!qe || q[qe] != ']')
        return ss_fail(err, SS_E_INPUT, where,
                       "bad path: expected a quoted key and '\"]' after '[\"' at character %zu",
                       pos + 1);
    size_t k = 0;
    for (size_t i = 1; i + 1 < qe; i++) {
        if (q[i] == '\\') i++;
        t->key[k++] = q[i];
    }
    t->key[k] = '\0';
    t->idx = -1;
    t->end = pos + 1 + qe + 1;
    return SS_OK;
}

/* The token at path[pos]: "[N]", or a key (after a '.' unless it is first).
 * The whole path is shorter than JS_PATH_MAX, so any key fits t->key. */
static int next_tok(const char *path, size_t pos, set_tok *t, const char *where, ss_err *err)
{
    if (path[pos] == '[' && path[pos + 1] == '"') return read_quoted(path, pos, t, where, err);
    if (path[pos] == '[') return read_index(path, pos, t, where, err);
    size_t k = pos;
    if (pos > 0 && path[k++] != '.')
        return ss_fail(err, SS_E_INPUT, where,
                       "bad path: expected '.' or '[' at character %zu, found '%c'", pos + 1,
                       path[pos]);
    size_t klen = strcspn(path + k, ".[]");
    if (klen == 0 || path[k + klen] == ']')
        return ss_fail(err, SS_E_INPUT, where, "bad path: %s at character %zu",
                       klen ? "unexpected ']'" : "empty key", k + klen + 1);
    memcpy(t->key, path + k, klen);
    t->key[klen] = '\0';
    t->idx = -1;
    t->end = k + klen;
    return SS_OK;
}

/* Copy the key path of "PATH=VALUE" into path and check its syntax, so a bad
 * path fails before the tree is touched. */
static int split_assignment(const char *assignment, char path[JS_PATH_MAX], const char **value,
                            const char *where, ss_err *err)
{
    /* The path as messages print it may start "$." or "$[". */
    if (assignment[0] == '$' && (assignment[1] == '.' || assignment[1] == '['))
        assignment += assignment[1] == '.' ? 2 : 1;
    const char *eq = assignment;
    for (; *eq && *eq != '='; eq++) /* an '=' inside ["..."] is part of the key */
        if (eq[0] == '[' && eq[1] == '"') {
            size_t qe = quoted_end(eq + 1);
            if (!qe) break;
            eq += qe;
        }
    if (*eq != '=' || eq == assignment)
        return ss_fail(err, SS_E_INPUT, where,
                       "expected PATH=VALUE, e.g. sharding.strategy=full_shard");
    *value = eq + 1;
    size_t plen = (size_t)(eq - assignment);
    if (plen >= JS_PATH_MAX)
        return ss_fail(err, SS_E_INPUT, where, "the path is longer than %d characters",
                       JS_PATH_MAX - 1);
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    set_tok t;
    for (size_t pos = 0; pos < plen; pos = t.end) {
        int rc = next_tok(path, pos, &t, where, err);
        if (rc) return rc;
    }
    return SS_OK;
}

/* VALUE as JSON when all of it is JSON, else as a plain string, so
 * strategy=full_shard needs no shell-quoted quotes. */
static cJSON *parse_value(const char *v, bool *json)
{
    const char *end = NULL;
    *json = false;
    cJSON *j = cJSON_ParseWithLengthOpts(v, strlen(v), &end, 0);
    if (j && end) {
        end += strspn(end, " \t\r\n"); /* v is NUL-terminated */
        *json = *end == '\0';
        if (*json) return j;
    }
    cJSON_Delete(j);
    return cJSON_CreateString(v);
}

/* The same checks as a file's text gets (text_check), for the value of an
 * override, named by `where` and the key path it sets. A plain-string value cannot hold a NUL (it
 * comes from argv) but may hold bytes that are not UTF-8. */
static int value_check(const cJSON *v, bool json, const char *path, const char *text,
                       const char *where, ss_err *err)
{
    js_node n = {v, where, "", NULL};
    int w = snprintf(n.path, sizeof n.path, "$%s%.*s", path[0] == '[' ? "" : ".",
                     JS_PATH_MAX - 3, path);
    if (w >= JS_PATH_MAX) memcpy(n.path + JS_PATH_MAX - 4, "...", 4); /* ASCII or cut */
    if (json) return text_check(text, strlen(text), n, err);
    for (size_t i = 0, k, len = strlen(text); i < len; i += k)
        if (!(k = ss_utf8_char((const unsigned char *)text + i, len - i)))
            return ss_fail(err, SS_E_INPUT, where,
                           "the value holds bytes that are not UTF-8 at byte %zu", i + 1);
    return SS_OK;
}

/* "the document" or "\"a.b[2]\"": the part of the path that names node. */
static int not_a(const char *path, size_t prefix, const cJSON *node, const char *want,
                 const char *where, ss_err *err)
{
    if (prefix == 0)
        return ss_fail(err, SS_E_INPUT, where, "the document is %s, not %s", type_name(node),
                       want);
    return ss_fail(err, SS_E_INPUT, where, "\"%.*s\" is %s, not %s", (int)prefix, path,
                   type_name(node), want);
}

/* path[pos..] starts with a key that obj lacks: build the missing objects
 * detached, with v at the end, and attach them in one step, so a failure
 * leaves the tree as it was. Array indexes are never created. */
static int add_chain(cJSON *obj, const char *path, size_t pos, cJSON *v, const char *where,
                     ss_err *err)
{
    set_tok first, t;
    next_tok(path, pos, &first, NULL, NULL); /* the syntax was checked */
    for (size_t p = first.end; path[p]; p = t.end) {
        next_tok(path, p, &t, NULL, NULL);
        if (t.idx >= 0)
            return ss_fail(err, SS_E_INPUT, where,
                           "\"%.*s\" does not exist, so it has no index %ld (arrays are not "
                           "created)", (int)p, path, t.idx);
    }
    cJSON *top = path[first.end] ? cJSON_CreateObject() : v, *deep = top;
    for (size_t p = first.end; top && path[p]; p = t.end) {
        next_tok(path, p, &t, NULL, NULL);
        if (!path[t.end]) break; /* the last key holds v */
        if (!(deep = cJSON_AddObjectToObject(deep, t.key))) break;
    }
    bool ok = top && deep && (top == v || cJSON_AddItemToObject(deep, t.key, v));
    if (ok && cJSON_AddItemToObject(obj, first.key, top)) return SS_OK;
    if (ok && top != v) cJSON_DetachItemViaPointer(deep, v); /* the caller frees v */
    if (top != v) cJSON_Delete(top);
    return ss_fail(err, SS_E_NOMEM, where, "out of memory");
}

/* Stores v under t->key / t->idx of node, replacing what is there. */
static int store(cJSON *node, const set_tok *t, cJSON *v, const char *where, ss_err *err)
{
    bool ok = t->idx < 0 ? cJSON_ReplaceItemInObjectCaseSensitive(node, t->key, v)
                         : cJSON_ReplaceItemInArray(node, (int)t->idx, v);
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, where, "out of memory");
}

/* One step of the walk at token t (which starts at path[pos]): descend into
 * *cur, or, at the last token or a missing key, store v. Returns 1 when v
 * was stored, 0 to go on, or an error. */
static int set_step(cJSON **cur, const char *path, size_t pos, const set_tok *t, cJSON *v,
                    const char *where, ss_err *err)
{
    cJSON *next;
    if (t->idx < 0) {
        if (!cJSON_IsObject(*cur)) return not_a(path, pos, *cur, "an object", where, err);
        next = cJSON_GetObjectItemCaseSensitive(*cur, t->key);
        if (!next) {
            int rc = add_chain(*cur, path, pos, v, where, err);
            return rc ? rc : 1;
        }
    } else {
        if (!cJSON_IsArray(*cur)) return not_a(path, pos, *cur, "an array", where, err);
        int n = cJSON_GetArraySize(*cur);
        if (t->idx >= n)
            return ss_fail(err, SS_E_INPUT, where, "\"%.*s\" has %d element%s, no index %ld",
                           (int)pos, path, n, n == 1 ? "" : "s", t->idx);
        next = cJSON_GetArrayItem(*cur, (int)t->idx);
    }
    if (path[t->end] == '\0') {
        int rc = store(*cur, t, v, where, err);
        return rc ? rc : 1;
    }
    *cur = next;
    return 0;
}

int js_doc_set(js_doc *d, const char *assignment, ss_err *err)
{
    char where[WHERE_MAX], path[JS_PATH_MAX];
    snprintf(where, sizeof where, "--set %s", assignment);
    const char *text = NULL;
    int rc = split_assignment(assignment, path, &text, where, err);
    if (rc) return rc;
    bool json;
    if (too_deep_at(text, strlen(text)) < strlen(text))
        return ss_fail(err, SS_E_INPUT, where,
                       "the value nests objects and arrays deeper than %d levels", JS_MAX_DEPTH);
    cJSON *v = parse_value(text, &json);
    if (!v) return ss_fail(err, SS_E_NOMEM, where, "out of memory");
    if ((rc = value_check(v, json, path, text, where, err))) {
        cJSON_Delete(v);
        return rc;
    }
    if (d->cache) memset(d->cache, 0, sizeof *d->cache); /* items may be replaced */
    cJSON *cur = d->root;
    set_tok t;
    for (size_t pos = 0; rc == 0; pos = t.end) {
        next_tok(path, pos, &t, NULL, NULL); /* the syntax was checked */
        rc = set_step(&cur, path, pos, &t, v, where, err);
    }
    if (rc < 0) cJSON_Delete(v); /* on success the tree owns v */
    return rc < 0 ? rc : SS_OK;
}

int js_path_resolve(const char *base_file, const char *rel, char *out, size_t outlen,
                    ss_err *err)
{
    const char *slash = strrchr(base_file, '/');
    size_t dir = rel[0] == '/' || !slash ? 0 : (size_t)(slash - base_file) + 1;
    size_t rlen = strlen(rel);
    if (dir + rlen >= outlen)
        return ss_fail(err, SS_E_INPUT, base_file,
                       "path \"%s\" resolved against this file's directory is longer than "
                       "%zu characters", rel, outlen ? outlen - 1 : 0);
    memmove(out + dir, rel, rlen + 1); /* rel first: out may be rel's buffer */
    memmove(out, base_file, dir);
    return SS_OK;
}

int js_load_ref(js_node parent, const char *key, js_doc *doc, js_node *out,
                ss_err *err)
{
    js_node n;
    int rc = js_need(parent, key, &n, err);
    if (rc) return rc;
    if (js_is_obj(n)) {
        *out = n;
        return SS_OK;
    }
    if (!js_is_str(n))
        return js_failf(n, err, "expected a file path (string) or an inline object");
    const char *rel = NULL;
    char path[JS_FILE_MAX];
    if ((rc = js_str_val(n, &rel, err)) ||
        (rc = js_path_resolve(parent.file, rel, path, sizeof path, err)))
        return rc;
    /* A file that names itself would be read as the other kind and blamed
     * for its own keys ("unknown key \"model\"" from a scenario read as a
     * topology): the error belongs to the key that names it. */
    struct stat a, b;
    if (stat(path, &a) == 0 && stat(parent.file, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return js_failf(n, err, "\"%s\" names this file itself: expected the file of the "
                        "%s (or the %s inline, as an object)", rel, key, key);
    if ((rc = js_doc_load(doc, path, err))) {
        if (err && !strstr(err->msg, "referenced"))
            snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                     " (referenced from %s: %s)", parent.file, n.path);
        return rc;
    }
    *out = js_root(doc);
    return js_want_obj(*out, err);
}

int js_copy_name(js_node n, const char *key, bool required, char *dst, ss_err *err)
{
    const char *s;
    int rc = js_str(n, key, required, "", &s, err);
    if (rc) return rc;
    ss_utf8_copy(dst, 128, s);
    return SS_OK;
}
