/* profile.c - calibration profiles (contract in profile.h). */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define PROF_NAME_(id, name) name,
const char *const prof_copy_names[PROF_NCOPY] = {PROF_COPIES(PROF_NAME_)};
#undef PROF_NAME_

/* Bounds wide enough for any machine and narrow enough to catch unit
 * mistakes (ms for us, MB/s for GB/s) in hand-edited files. */
#define MAX_BYTES 9007199254740992ull /* 2^53, the exact-integer limit of json.h */
#define MAX_ALPHA_US 1e9
#define MAX_GBPS 1e6
#define MAX_RANKS (1u << 24)

void prof_init(prof *p)
{
    memset(p, 0, sizeof *p);
    p->launch_us = NAN;
    for (int k = 0; k < PROF_NCOPY; k++) p->copy[k].cv_median_rel_err = NAN;
}

static void curve_fini(prof_curve *c)
{
    free(c->reg);
    c->reg = NULL;
    c->nreg = 0;
}

void prof_fini(prof *p)
{
    if (!p) return;
    char **s[] = {&p->source, &p->card, &p->nccl, &p->cuda, &p->driver, &p->date, &p->host};
    for (size_t i = 0; i < SS_ARRAY_LEN(s); i++) free(*s[i]);
    for (uint32_t i = 0; i < p->ncoll; i++) {
        free(p->coll[i].label);
        curve_fini(&p->coll[i].c);
    }
    free(p->coll);
    for (int k = 0; k < PROF_NCOPY; k++) curve_fini(&p->copy[k]);
    prof_init(p);
}

/* ---- loading ---- */

static int dup_str(js_node n, const char *key, bool required, char **out, ss_err *err)
{
    const char *s = NULL;
    int rc = js_str(n, key, required, NULL, &s, err);
    if (rc || !s) return rc;
    size_t len = strlen(s);
    if (!(*out = malloc(len + 1))) return ss_fail(err, SS_E_NOMEM, n.file, "out of memory");
    memcpy(*out, s, len + 1);
    return SS_OK;
}

/* An optional statistic: NAN when absent. */
static int opt_stat(js_node n, const char *key, double max, double *out, ss_err *err)
{
    *out = NAN;
    return js_num(n, key, false, NAN, 0, max, out, err);
}

static int load_regime_values(js_node r, prof_regime *g, ss_err *err)
{
    static const char *const keys[] = {"min_bytes", "max_bytes", "alpha_us", "beta_GBps",
                                       "alpha_se_us", "beta_se_GBps", "r2", "points"};
    uint64_t pts = 0;
    int rc = js_keys_check(r, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_u64(r, "min_bytes", true, 0, 0, MAX_BYTES, &g->min_bytes, err);
    if (!rc) rc = js_u64(r, "max_bytes", true, 0, 0, MAX_BYTES, &g->max_bytes, err);
    if (!rc) rc = js_num(r, "alpha_us", true, 0, -MAX_ALPHA_US, MAX_ALPHA_US, &g->alpha_us, err);
    /* 1e-9 GB/s: positive, and still a finite time for 2^53 bytes. */
    if (!rc) rc = js_num(r, "beta_GBps", true, 0, 1e-9, MAX_GBPS, &g->beta_GBps, err);
    if (!rc) rc = opt_stat(r, "alpha_se_us", MAX_ALPHA_US, &g->alpha_se_us, err);
    if (!rc) rc = opt_stat(r, "beta_se_GBps", MAX_GBPS, &g->beta_se_GBps, err);
    if (!rc) rc = js_num(r, "r2", false, NAN, -1e9, 1, &g->r2, err);
    if (!rc) rc = js_u64(r, "points", false, 0, 0, UINT32_MAX, &pts, err);
    g->points = (uint32_t)pts;
    return rc;
}

static double regime_time(const prof_regime *g, uint64_t bytes)
{
    return g->alpha_us + (double)bytes / (g->beta_GBps * 1e3);
}

/* Ranges in order, without gaps; a time that is positive at both ends. */
static int check_regime(js_node r, const prof_regime *g, const prof_regime *prev, ss_err *err)
{
    js_node c;
    if (g->max_bytes < g->min_bytes) {
        js_get(r, "max_bytes", &c);
        return js_failf(c, err, "expected at least min_bytes (%llu), found %llu",
                        (unsigned long long)g->min_bytes, (unsigned long long)g->max_bytes);
    }
    if (prev && g->min_bytes != prev->max_bytes + 1) {
        js_get(r, "min_bytes", &c);
        return js_failf(c, err,
                        "expected %llu (the previous regime's max_bytes + 1: regimes tile the "
                        "sizes without gaps or overlaps), found %llu",
                        (unsigned long long)prev->max_bytes + 1,
                        (unsigned long long)g->min_bytes);
    }
    if (regime_time(g, g->min_bytes) <= 0 || regime_time(g, g->max_bytes) <= 0)
        return js_failf(r, err,
                        "alpha_us %g and beta_GBps %g give a time <= 0 within [%llu, %llu] bytes",
                        g->alpha_us, g->beta_GBps, (unsigned long long)g->min_bytes,
                        (unsigned long long)g->max_bytes);
    return SS_OK;
}

static int load_curve(js_node n, prof_curve *c, ss_err *err)
{
    js_node arr;
    size_t len;
    uint64_t pts = 0;
    int rc = js_arr(n, "regimes", true, &arr, &len, err);
    if (!rc && (len == 0 || len > PROF_MAX_REGIMES))
        rc = js_failf(arr, err, "expected 1 to %d regimes, found %zu", PROF_MAX_REGIMES, len);
    if (!rc) rc = js_u64(n, "points", false, 0, 0, UINT32_MAX, &pts, err);
    if (!rc) rc = opt_stat(n, "cv_median_rel_err", 1e9, &c->cv_median_rel_err, err);
    if (rc) return rc;
    c->points = (uint32_t)pts;
    if (!(c->reg = calloc(len, sizeof *c->reg))) return ss_fail(err, SS_E_NOMEM, n.file, "out of memory");
    for (size_t i = 0; i < len && !rc; i++) {
        js_node r = js_at(arr, i);
        rc = load_regime_values(r, &c->reg[i], err);
        if (!rc) rc = check_regime(r, &c->reg[i], i ? &c->reg[i - 1] : NULL, err);
        c->nreg = (uint32_t)i + 1;
    }
    return rc;
}

static int load_coll(js_node n, prof_coll *o, ss_err *err)
{
    static const char *const keys[] = {"op", "ranks", "nodes", "label", "points",
                                       "cv_median_rel_err", "regimes"};
    int op = 0;
    uint64_t ranks = 0, nodes = 0;
    int rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_enum(n, "op", true, 0, ncclt_op_names, NCCLT_NOPS, &op, err);
    if (!rc) rc = js_u64(n, "ranks", true, 0, 1, MAX_RANKS, &ranks, err);
    if (!rc) rc = js_u64(n, "nodes", true, 0, 1, ranks, &nodes, err);
    if (!rc) rc = dup_str(n, "label", false, &o->label, err);
    o->op = (ncclt_op)op;
    o->ranks = (uint32_t)ranks;
    o->nodes = (uint32_t)nodes;
    o->c.cv_median_rel_err = NAN;
    if (!rc) rc = load_curve(n, &o->c, err);
    return rc;
}

static int load_colls(js_node root, prof *p, ss_err *err)
{
    js_node arr;
    size_t len;
    int rc = js_arr(root, "collectives", false, &arr, &len, err);
    if (rc || !len) return rc;
    if (!(p->coll = calloc(len, sizeof *p->coll)))
        return ss_fail(err, SS_E_NOMEM, root.file, "out of memory");
    for (size_t i = 0; i < len && !rc; i++) {
        js_node n = js_at(arr, i);
        prof_coll *o = &p->coll[i];
        p->ncoll = (uint32_t)i + 1;
        rc = load_coll(n, o, err);
        for (size_t j = 0; j < i && !rc; j++) {
            const prof_coll *q = &p->coll[j];
            if (q->op == o->op && q->ranks == o->ranks && q->nodes == o->nodes)
                rc = js_failf(n, err,
                              "%s on %u ranks, %u node%s is already given by "
                              "$.collectives[%zu]: a profile has one curve per collective and "
                              "group",
                              ncclt_op_names[o->op], o->ranks, o->nodes, o->nodes == 1 ? "" : "s",
                              j);
        }
    }
    return rc;
}

static int load_gemm_one(js_node n, prof_gemm *g, ss_err *err)
{
    static const char *const keys[] = {"peak_tflops", "e_max", "d_half", "p", "e_max_se",
                                       "d_half_se", "p_se", "points"};
    uint64_t pts = 0;
    int rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = js_num(n, "peak_tflops", true, 0, 1e-6, 1e6, &g->peak_tflops, err);
    /* Boost clocks can lift a measured rate a little above the data-sheet
     * peak, hence up to 2 rather than 1. */
    if (!rc) rc = js_num(n, "e_max", true, 0, 1e-9, 2, &g->e_max, err);
    if (!rc) rc = js_num(n, "d_half", true, 0, 1e-9, 1e9, &g->d_half, err);
    if (!rc) rc = js_num(n, "p", true, 0, 1e-6, 100, &g->p, err);
    if (!rc) rc = opt_stat(n, "e_max_se", 1e9, &g->e_max_se, err);
    if (!rc) rc = opt_stat(n, "d_half_se", 1e12, &g->d_half_se, err);
    if (!rc) rc = opt_stat(n, "p_se", 1e9, &g->p_se, err);
    if (!rc) rc = js_u64(n, "points", false, 0, 0, UINT32_MAX, &pts, err);
    g->points = (uint32_t)pts;
    g->present = rc == SS_OK;
    return rc;
}

static int load_gemm(js_node root, prof *p, ss_err *err)
{
    js_node g;
    if (!js_get(root, "gemm", &g)) return SS_OK;
    int rc = js_keys_check(g, spec_dtype_names, SPEC_NDT, err);
    for (int d = 0; d < SPEC_NDT && !rc; d++) {
        js_node n;
        if (js_get(g, spec_dtype_names[d], &n)) rc = load_gemm_one(n, &p->gemm[d], err);
    }
    return rc;
}

static int load_copy(js_node root, prof *p, ss_err *err)
{
    static const char *const keys[] = {"points", "cv_median_rel_err", "regimes"};
    js_node c;
    if (!js_get(root, "copy", &c)) return SS_OK;
    int rc = js_keys_check(c, prof_copy_names, PROF_NCOPY, err);
    for (int k = 0; k < PROF_NCOPY && !rc; k++) {
        js_node n;
        if (!js_get(c, prof_copy_names[k], &n)) continue;
        rc = js_keys_check(n, keys, SS_ARRAY_LEN(keys), err);
        if (!rc) rc = load_curve(n, &p->copy[k], err);
        p->has_copy[k] = true;
    }
    return rc;
}

static bool has_any(js_node root)
{
    static const char *const parts[] = {"collectives", "gemm", "launch_us", "copy"};
    js_node c;
    for (size_t i = 0; i < SS_ARRAY_LEN(parts); i++)
        if (js_get(root, parts[i], &c)) return true;
    return false;
}

static int load_root(js_node root, prof *p, ss_err *err)
{
    static const char *const keys[] = {"source", "card", "nccl", "cuda", "driver", "date",
                                       "host", "collectives", "gemm", "launch_us", "copy"};
    int rc = js_keys_check(root, keys, SS_ARRAY_LEN(keys), err);
    if (!rc) rc = dup_str(root, "source", true, &p->source, err);
    if (!rc) rc = dup_str(root, "card", true, &p->card, err);
    char **opt[] = {&p->nccl, &p->cuda, &p->driver, &p->date, &p->host};
    for (size_t i = 0; i < SS_ARRAY_LEN(opt) && !rc; i++)
        rc = dup_str(root, keys[2 + i], false, opt[i], err);
    if (!rc && !has_any(root))
        rc = js_failf(root, err,
                      "the profile calibrates nothing: expected at least one of \"collectives\", "
                      "\"gemm\", \"launch_us\", \"copy\"");
    if (!rc) rc = load_colls(root, p, err);
    if (!rc) rc = load_gemm(root, p, err);
    if (!rc) rc = js_num(root, "launch_us", false, NAN, 0, 1e6, &p->launch_us, err);
    if (!rc) rc = load_copy(root, p, err);
    return rc;
}

static int load_doc(js_doc *d, prof *out, ss_err *err)
{
    prof p;
    prof_init(&p);
    int rc = load_root(js_root(d), &p, err);
    js_doc_fini(d);
    if (rc) {
        prof_fini(&p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

int prof_load(const char *file, prof *out, ss_err *err)
{
    js_doc d;
    int rc = js_doc_load(&d, file, err);
    return rc ? rc : load_doc(&d, out, err);
}

int prof_load_text(const char *file, const char *text, size_t len, prof *out, ss_err *err)
{
    js_doc d;
    int rc = js_doc_parse(&d, file, text, len, err);
    return rc ? rc : load_doc(&d, out, err);
}

/* ---- queries ---- */

double prof_time_us(const prof_regime *reg, uint32_t nreg, uint64_t bytes)
{
    if (!nreg) return 0;
    uint32_t i = 0;
    while (i + 1 < nreg && bytes > reg[i].max_bytes) i++;
    double t = regime_time(&reg[i], bytes);
    return t > 0 ? t : 0;
}

const prof_coll *prof_coll_find(const prof *p, ncclt_op op, uint32_t ranks, uint32_t nodes)
{
    for (uint32_t i = 0; i < p->ncoll; i++)
        if (p->coll[i].op == op && p->coll[i].ranks == ranks && p->coll[i].nodes == nodes)
            return &p->coll[i];
    return NULL;
}

/* e_max / (1 + (d_half / d)^p): the same curve without d^p, which
 * overflows for large d and p. */
double prof_gemm_eff(const prof_gemm *g, double d)
{
    if (!(d > 0)) return 0;
    return g->e_max / (1 + pow(g->d_half / d, g->p));
}

/* ---- rendering ---- */

/* Writes go to an open_memstream buffer, whose only failure is out of memory
 * (fclose reports it). `first`: no member written yet in the current object,
 * so the next key needs no comma. */
typedef struct wr {
    FILE *f;
    bool first;
    bool bad; /* a required value was not finite */
} wr;

static void w_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

/* A key on a new line indented by `indent`, or on the same line (-1). */
static void w_key(wr *w, const char *key, int indent)
{
    if (!w->first) fputc(',', w->f);
    if (indent >= 0) fprintf(w->f, "\n%*s", indent, "");
    else if (!w->first) fputc(' ', w->f);
    w->first = false;
    fprintf(w->f, "\"%s\": ", key);
}

/* 6 significant digits: more than any timing carries, few enough that the
 * last bits of a platform's arithmetic do not change the file. Non-finite
 * optional values are left out. */
static void w_num(wr *w, const char *key, double v, bool required, int indent)
{
    if (!isfinite(v)) {
        w->bad |= required;
        return;
    }
    w_key(w, key, indent);
    fprintf(w->f, "%.6g", v == 0 ? 0 : v); /* no "-0" */
}

static void w_u64(wr *w, const char *key, uint64_t v, int indent)
{
    w_key(w, key, indent);
    fprintf(w->f, "%llu", (unsigned long long)v);
}

static void w_text(wr *w, const char *key, const char *s, int indent)
{
    if (!s) return;
    w_key(w, key, indent);
    w_str(w->f, s);
}

static void w_regime(wr *w, const prof_regime *g)
{
    fputc('{', w->f);
    w->first = true;
    w_u64(w, "min_bytes", g->min_bytes, -1);
    w_u64(w, "max_bytes", g->max_bytes, -1);
    w_num(w, "alpha_us", g->alpha_us, true, -1);
    w_num(w, "beta_GBps", g->beta_GBps, true, -1);
    w_num(w, "alpha_se_us", g->alpha_se_us, false, -1);
    w_num(w, "beta_se_GBps", g->beta_se_GBps, false, -1);
    w_num(w, "r2", g->r2, false, -1);
    if (g->points) w_u64(w, "points", g->points, -1);
    fputc('}', w->f);
}

/* A curve's members inside an object already open at `indent`. */
static void w_curve(wr *w, const prof_curve *c, int indent)
{
    if (c->points) w_u64(w, "points", c->points, indent);
    w_num(w, "cv_median_rel_err", c->cv_median_rel_err, false, c->points ? -1 : indent);
    w_key(w, "regimes", indent);
    fputc('[', w->f);
    for (uint32_t i = 0; i < c->nreg; i++) {
        fprintf(w->f, "%s\n%*s", i ? "," : "", indent + 2, "");
        w_regime(w, &c->reg[i]);
    }
    fprintf(w->f, "\n%*s]", indent, "");
    w->first = false;
}

static void w_colls(wr *w, const prof *p)
{
    if (!p->ncoll) return;
    w_key(w, "collectives", 2);
    fputc('[', w->f);
    for (uint32_t i = 0; i < p->ncoll; i++) {
        const prof_coll *o = &p->coll[i];
        fprintf(w->f, "%s\n    {", i ? "," : "");
        w->first = true;
        w_text(w, "op", ncclt_op_names[o->op], -1);
        w_u64(w, "ranks", o->ranks, -1);
        w_u64(w, "nodes", o->nodes, -1);
        w_text(w, "label", o->label, 6);
        w_curve(w, &o->c, 6);
        fputc('}', w->f);
    }
    fputs("\n  ]", w->f);
    w->first = false;
}

static void w_gemm(wr *w, const prof *p)
{
    bool any = false;
    for (int d = 0; d < SPEC_NDT; d++) any |= p->gemm[d].present;
    if (!any) return;
    w_key(w, "gemm", 2);
    fputc('{', w->f);
    bool first = true;
    for (int d = 0; d < SPEC_NDT; d++) {
        const prof_gemm *g = &p->gemm[d];
        if (!g->present) continue;
        fprintf(w->f, "%s\n    \"%s\": {", first ? "" : ",", spec_dtype_names[d]);
        first = false;
        w->first = true;
        w_num(w, "peak_tflops", g->peak_tflops, true, -1);
        w_num(w, "e_max", g->e_max, true, -1);
        w_num(w, "d_half", g->d_half, true, -1);
        w_num(w, "p", g->p, true, -1);
        w_num(w, "e_max_se", g->e_max_se, false, 6);
        w_num(w, "d_half_se", g->d_half_se, false, -1);
        w_num(w, "p_se", g->p_se, false, -1);
        if (g->points) w_u64(w, "points", g->points, -1);
        fputc('}', w->f);
    }
    fputs("\n  }", w->f);
    w->first = false;
}

static void w_copy(wr *w, const prof *p)
{
    bool any = false;
    for (int k = 0; k < PROF_NCOPY; k++) any |= p->has_copy[k];
    if (!any) return;
    w_key(w, "copy", 2);
    fputc('{', w->f);
    bool first = true;
    for (int k = 0; k < PROF_NCOPY; k++) {
        if (!p->has_copy[k]) continue;
        fprintf(w->f, "%s\n    \"%s\": {", first ? "" : ",", prof_copy_names[k]);
        first = false;
        w->first = true;
        w_curve(w, &p->copy[k], 6);
        fputc('}', w->f);
    }
    fputs("\n  }", w->f);
    w->first = false;
}

int prof_json(const prof *p, char **out, ss_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    wr w = {open_memstream(&buf, &len), true, false};
    if (!w.f) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory rendering the profile");
    fputc('{', w.f);
    w_text(&w, "source", p->source ? p->source : "", 2);
    w_text(&w, "card", p->card ? p->card : "", 2);
    w_text(&w, "nccl", p->nccl, 2);
    w_text(&w, "cuda", p->cuda, 2);
    w_text(&w, "driver", p->driver, 2);
    w_text(&w, "date", p->date, 2);
    w_text(&w, "host", p->host, 2);
    w_colls(&w, p);
    w_gemm(&w, p);
    w_num(&w, "launch_us", p->launch_us, false, 2);
    w_copy(&w, p);
    fputs("\n}\n", w.f);
    if (fclose(w.f) != 0 || !buf) {
        free(buf);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory rendering the profile");
    }
    if (w.bad) {
        free(buf);
        return ss_fail(err, SS_E_INTERNAL, NULL,
                       "a fitted value is not a finite number; the profile was not written");
    }
    *out = buf;
    return SS_OK;
}
