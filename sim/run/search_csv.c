/* A search's CSV: its key line, its own columns, reading it back.
 * search_csv.h states the contract. */
#include "search_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char scsv_extra_header[] = ",state_bytes,step_bound_s,step_ns,tokens_per_s_per_gpu,mfu";

#define NEXTRA 5           /* fields in scsv_extra_header */
#define NSWEEP 23          /* the sweep's fields: point, 9 keys, status .. error */
#define F_STATUS 10        /* field indices in a row */
#define F_RESERVED 15
#define F_FITS 17
#define KEY_PREFIX "# shardsim search: "

/* ---- the key ---- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a 64 offset basis and prime */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void list_text(const search_list *l, const char *const *names, char *buf, size_t cap)
{
    size_t u = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < l->n && u < cap; k++)
        u += names ? (size_t)snprintf(buf + u, cap - u, "%s%s", k ? "," : "", names[l->v[k]])
                   : (size_t)snprintf(buf + u, cap - u, "%s%u", k ? "," : "", l->v[k]);
}

void scsv_key(const search_space *sp, const char *resolved, char *out, size_t cap)
{
    char tp[256], cp[256], pp[256], ep[256], st[512], rc[128];
    list_text(&sp->tp, NULL, tp, sizeof tp);
    list_text(&sp->cp, NULL, cp, sizeof cp);
    list_text(&sp->pp, NULL, pp, sizeof pp);
    list_text(&sp->ep, NULL, ep, sizeof ep);
    list_text(&sp->strategy, spec_strategy_names, st, sizeof st);
    list_text(&sp->recompute, spec_recompute_names, rc, sizeof rc);
    snprintf(out, cap, KEY_PREFIX "version %s; scenario %016" PRIx64 "; world %u; tp %s; cp %s; "
             "pp %s; ep %s; strategy %s; recompute %s; global_batch %" PRIu64 "; micro_batch %"
             PRIu64, SHARDSIM_VERSION, fnv1a(resolved), sp->world, tp, cp, pp, ep, st, rc,
             sp->global_batch, sp->micro_batch);
}

/* Field k ("name value") of a key line after its prefix, fields split at
 * "; ": its name and value into the buffers; false past the last. */
static bool key_field(const char *line, size_t k, char *name, char *value, size_t cap)
{
    const char *p = line + strlen(KEY_PREFIX), *end;
    for (size_t i = 0; i < k; i++) {
        if (!(p = strstr(p, "; "))) return false;
        p += 2;
    }
    end = strstr(p, "; ");
    size_t len = end ? (size_t)(end - p) : strcspn(p, "\n");
    const char *sp = memchr(p, ' ', len);
    size_t nl = sp ? (size_t)(sp - p) : len;
    snprintf(name, cap, "%.*s", (int)(nl < cap ? nl : cap - 1), p);
    size_t vl = sp ? len - nl - 1 : 0;
    snprintf(value, cap, "%.*s", (int)(vl < cap ? vl : cap - 1), sp ? sp + 1 : "");
    return true;
}

int scsv_key_check(const char *file, const char *line, const char *key, ss_err *err)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: line 1", file);
    size_t len = strcspn(line, "\n");
    if (strncmp(line, KEY_PREFIX, strlen(KEY_PREFIX)))
        return ss_fail(err, SS_E_INPUT, where, "expected the key line a search's CSV starts with "
                       "(\"%s...\"); found \"%.*s\": not a search CSV, or one written without "
                       "it (--resume needs a CSV this search's --csv wrote)", KEY_PREFIX,
                       (int)(len < 80 ? len : 80), line);
    if (len == strlen(key) && !strncmp(line, key, len)) return SS_OK;
    for (size_t k = 0;; k++) {
        char fn[256], fv[1024], kn[256], kv[1024];
        bool fh = key_field(line, k, fn, fv, sizeof fv), kh = key_field(key, k, kn, kv, sizeof kv);
        if (!fh && !kh) break;
        if (fh && kh && !strcmp(fn, kn) && !strcmp(fv, kv)) continue;
        if (!strcmp(kn, "scenario") && !strcmp(fn, "scenario"))
            return ss_fail(err, SS_E_INPUT, where, "this CSV is from another search: its "
                           "scenario (the file with the search's --set, hash %s) is not this "
                           "one's (hash %s); --resume goes on with the same scenario, --set "
                           "and space", fv, kv);
        return ss_fail(err, SS_E_INPUT, where, "this CSV is from another search: its %s is "
                       "%s, this search's %s; --resume goes on with the same scenario, --set "
                       "and space", fh ? fn : kn, fh ? fv : "not given", kh ? kv : "none");
    }
    return ss_fail(err, SS_E_INPUT, where, "expected the key line \"%s\"; found \"%.*s\"", key,
                   (int)len, line);
}

/* ---- the search's own columns ---- */

void scsv_extra(const search_check *chk, const sweep_fig *fig, char *buf, size_t cap)
{
    char states[32] = "", bound[32] = "", step[32] = "", tok[40] = "", mfu[40] = "";
    if (chk->checked) snprintf(states, sizeof states, "%" PRIu64, chk->states);
    if (chk->checked && !chk->rejected) snprintf(bound, sizeof bound, "%.9g", chk->bound_ns * 1e-9);
    if (fig->ok) {
        snprintf(step, sizeof step, "%" PRIu64, fig->step_ns);
        snprintf(tok, sizeof tok, "%.17g", fig->tokens_per_s);
        snprintf(mfu, sizeof mfu, "%.17g", fig->mfu);
    }
    snprintf(buf, cap, ",%s,%s,%s,%s,%s", states, bound, step, tok, mfu);
}

/* ---- reading back ---- */

/* Split line (no newline) in place at commas outside double quotes; at
 * most max fields. Returns how many there are (possibly more than max). */
static size_t split(char *line, char **f, size_t max)
{
    size_t n = 0;
    bool q = false;
    char *start = line;
    for (char *p = line;; p++) {
        if (*p == '"') q = !q;
        if (*p && (*p != ',' || q)) continue;
        bool end = !*p;
        *p = '\0';
        if (n < max) f[n] = start;
        n++;
        if (end) return n;
        start = p + 1;
    }
}

static bool read_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-' || *s == '+') return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    *out = v;
    return !*end && !errno;
}

static bool read_double(const char *s, double *out)
{
    char *end;
    if (!*s) return false;
    *out = strtod(s, &end);
    return !*end;
}

typedef struct reader {
    const char *file;
    size_t line;        /* 1-based, for messages */
    const search_point *pts;
    size_t n;
    size_t *seen_at;    /* point -> line that gave it, 0 none */
} reader;

static int row_fail(const reader *r, ss_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int row_fail(const reader *r, ss_err *err, const char *fmt, ...)
{
    char where[1100], msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(where, sizeof where, "%s: line %zu", r->file, r->line);
    return ss_fail(err, SS_E_INPUT, where, "%s", msg);
}

/* The figures of an ok row (fields f). */
static int ok_figures(const reader *r, char **f, sweep_fig *fig, ss_err *err)
{
    *fig = (sweep_fig){.ok = true};
    bool good = read_u64(f[F_RESERVED], &fig->peak_reserved) &&
                read_u64(f[NSWEEP + 2], &fig->step_ns) &&
                read_double(f[NSWEEP + 3], &fig->tokens_per_s) &&
                read_double(f[NSWEEP + 4], &fig->mfu);
    if (!good)
        return row_fail(r, err, "a row with status ok: expected max_peak_reserved_bytes, "
                        "step_ns, tokens_per_s_per_gpu and mfu as numbers; found \"%s\", \"%s\", "
                        "\"%s\", \"%s\"", f[F_RESERVED], f[NSWEEP + 2], f[NSWEEP + 3],
                        f[NSWEEP + 4]);
    if (strcmp(f[F_FITS], "true") && strcmp(f[F_FITS], "false"))
        return row_fail(r, err, "fits: expected true or false; found \"%s\"", f[F_FITS]);
    fig->fits = !strcmp(f[F_FITS], "true");
    fig->step_s = fig->step_ns * 1e-9; /* as the sweep makes it */
    return SS_OK;
}

/* One row (len bytes at s, no newline): its point's given row and figures
 * when it was simulated. */
static int read_row(reader *r, const char *s, size_t len, char **given, sweep_fig *figs,
                    size_t *nreused, ss_err *err)
{
    char *copy = malloc(len + 1), *f[NSWEEP + NEXTRA];
    if (!copy) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    memcpy(copy, s, len);
    copy[len] = '\0';
    size_t nf = split(copy, f, NSWEEP + NEXTRA);
    uint64_t i = 0;
    int rc = SS_OK;
    if (nf != NSWEEP + NEXTRA)
        rc = row_fail(r, err, "expected %d fields, as the header has; found %zu",
                      NSWEEP + NEXTRA, nf);
    else if (!read_u64(f[0], &i) || i >= r->n)
        rc = row_fail(r, err, "expected a point from 0 to %zu; found \"%s\"", r->n - 1, f[0]);
    else if (r->seen_at[i])
        rc = row_fail(r, err, "point %" PRIu64 " again (line %zu has it)", i, r->seen_at[i]);
    for (size_t k = 0; !rc && k < SEARCH_NKEYS; k++) {
        char want[64];
        search_point_value(&r->pts[i], k, want, sizeof want);
        if (strcmp(want, f[1 + k]))
            rc = row_fail(r, err, "point %" PRIu64 " has %s = %s in this search; found %s",
                          i, search_keys[k], want, f[1 + k]);
    }
    bool ok = !rc && !strcmp(f[F_STATUS], "ok"), error = !rc && !strcmp(f[F_STATUS], "error");
    if (!rc && !ok && !error && strcmp(f[F_STATUS], "pruned") && strcmp(f[F_STATUS], "rejected"))
        rc = row_fail(r, err, "status: expected ok, error, pruned or rejected; found \"%s\"",
                      f[F_STATUS]);
    if (!rc && ok) rc = ok_figures(r, f, &figs[i], err);
    if (!rc) r->seen_at[i] = r->line;
    free(copy);
    if (rc || (!ok && !error)) return rc; /* verdicts are made again */
    /* the sweep's part of the row: all but the search's own fields */
    size_t cut = len;
    for (int k = 0; k < NEXTRA; k++)
        while (cut > 0 && s[--cut] != ',') {}
    if (!(given[i] = malloc(cut + 2))) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    memcpy(given[i], s, cut);
    memcpy(given[i] + cut, "\n", 2);
    (*nreused)++;
    return SS_OK;
}

static int read_rows(reader *r, const char *text, const char *key, const char *header,
                     char **given, sweep_fig *figs, size_t *nreused, ss_err *err)
{
    int rc = scsv_key_check(r->file, text, key, err);
    const char *s = strchr(text, '\n');
    if (rc) return rc;
    r->line = 2;
    size_t hl = s ? strcspn(s + 1, "\n") : 0;
    if (!s || s[1 + hl] != '\n' || hl != strlen(header) || strncmp(s + 1, header, hl))
        return row_fail(r, err, "expected the header \"%s\"; found \"%.*s\"", header,
                        (int)(hl < 300 ? hl : 300), s ? s + 1 : "");
    for (s += 2 + hl, r->line = 3; *s && !rc; r->line++) {
        const char *nl = strchr(s, '\n');
        if (!nl) break; /* cut by the kill: that point runs again */
        rc = read_row(r, s, (size_t)(nl - s), given, figs, nreused, err);
        s = nl + 1;
    }
    return rc;
}

int scsv_read(const char *file, const char *text, const char *key, const char *header,
              const search_point *pts, size_t n, char **given, sweep_fig *figs, size_t *nreused,
              ss_err *err)
{
    reader r = {.file = file, .line = 1, .pts = pts, .n = n,
                .seen_at = calloc(n ? n : 1, sizeof *r.seen_at)};
    *nreused = 0;
    if (!r.seen_at) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    int rc = read_rows(&r, text, key, header, given, figs, nreused, err);
    free(r.seen_at);
    if (!rc) return SS_OK;
    for (size_t i = 0; i < n; i++) {
        free(given[i]);
        given[i] = NULL;
        figs[i] = (sweep_fig){0};
    }
    *nreused = 0;
    return rc;
}
