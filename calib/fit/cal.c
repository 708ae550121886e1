/* cal.c - measured data to a calibration profile (contract in cal.h). */
#include "cal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *dup_or_null(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

/* "what: fit message" under where; the fitter's own code. */
static int refail(ss_err *err, const ss_err *e, const char *where, const char *what)
{
    return ss_fail(err, e->code, where, "%s: %s", what, e->msg);
}

/* Fit one curve and its cross-validation; e gets the fitter's error. */
static int fit_curve(const uint64_t *bytes, const double *t, size_t n, const fit_opts *o,
                     prof_curve *c, ss_err *e)
{
    fit_model m;
    double cv = NAN;
    int rc = fit_alpha_beta(bytes, t, n, o, &m, e);
    if (!rc) rc = fit_loso(bytes, t, n, o, &cv, e);
    if (rc) return rc;
    if (!(c->reg = malloc(m.nreg * sizeof *c->reg)))
        return ss_fail(e, SS_E_NOMEM, NULL, "out of memory");
    memcpy(c->reg, m.reg, m.nreg * sizeof *c->reg);
    c->nreg = m.nreg;
    c->points = m.npoints;
    c->cv_median_rel_err = cv;
    return SS_OK;
}

/* ---- nccl-tests ---- */

static bool label_match(const char *label, const char *want)
{
    return strcmp(label, want) == 0 || strcmp(base_name(label), want) == 0;
}

/* "a, b, c" of the tables' labels, cut with "..." when long. */
static void label_list(const ncclt_log *log, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ncclt_ntables(log); i++) {
        const ncclt_info *t = ncclt_table(log, i);
        int w = snprintf(buf + used, size - used, "%s%s (%s)", i ? ", " : "", t->label,
                         ncclt_op_names[t->op]);
        if (w < 0 || (size_t)w >= size - used) {
            memcpy(buf + size - 4, "...", 4);
            return;
        }
        used += (size_t)w;
    }
}

static int select_tables(const char *file, const ncclt_log *log, const cal_sel *sel, bool *keep,
                         ss_err *err)
{
    char list[400];
    label_list(log, list, sizeof list);
    ncclt_op op = NCCLT_ALL_REDUCE;
    if (sel->op && !ncclt_op_from_name(sel->op, &op))
        return ss_fail(err, SS_E_INPUT, file, "unknown collective \"%s\": expected all_reduce, "
                       "all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv", sel->op);
    for (size_t k = 0; k < sel->ntables; k++) {
        bool found = false;
        for (size_t i = 0; i < ncclt_ntables(log); i++)
            found |= label_match(ncclt_table(log, i)->label, sel->tables[k]);
        if (!found)
            return ss_fail(err, SS_E_INPUT, file, "no table labelled \"%s\" (tables: %s)",
                           sel->tables[k], list);
    }
    size_t nkeep = 0;
    for (size_t i = 0; i < ncclt_ntables(log); i++) {
        const ncclt_info *t = ncclt_table(log, i);
        bool by_label = sel->ntables == 0;
        for (size_t k = 0; k < sel->ntables; k++) by_label |= label_match(t->label, sel->tables[k]);
        keep[i] = by_label && (!sel->op || t->op == op);
        nkeep += keep[i];
    }
    if (!nkeep)
        return ss_fail(err, SS_E_INPUT, file, "no %s table among the selected ones (tables: %s)",
                       sel->op ? sel->op : "", list);
    return SS_OK;
}

static int group_size(const char *where, const char *what, uint32_t file_v, uint32_t given,
                      const char *flag, uint32_t *out, ss_err *err)
{
    if (file_v && given && file_v != given)
        return ss_fail(err, SS_E_INPUT, where,
                       "the file's rank lines give %u %s, but %s says %u", file_v, what, flag,
                       given);
    if (!file_v && !given)
        return ss_fail(err, SS_E_INPUT, where,
                       "the table does not say how many %s ran it (no \"#  Rank N ... on HOST\" "
                       "lines above it); give %s N", what, flag);
    *out = file_v ? file_v : given;
    return SS_OK;
}

/* Rows with bytes > 0 into bytes/t; a row with wrong results is an error. */
static int table_rows(const char *file, const ncclt_log *log, size_t i, uint64_t *bytes, double *t,
                      size_t *n, ss_err *err)
{
    *n = 0;
    for (size_t j = 0; j < ncclt_table(log, i)->nrows; j++) {
        const ncclt_row *r = ncclt_row_at(log, i, j);
        if (r->out.wrong > 0 || r->in.wrong > 0) {
            char where[1100];
            snprintf(where, sizeof where, "%s:%u", file, r->line);
            return ss_fail(err, SS_E_INPUT, where,
                           "nccl-tests counted wrong results at %llu bytes; the timings of a "
                           "failing run are not calibration data",
                           (unsigned long long)r->bytes);
        }
        if (r->bytes == 0) continue;
        bytes[*n] = r->bytes;
        t[(*n)++] = r->out.time_us;
    }
    return SS_OK;
}

static int ncclt_curve(const char *file, const ncclt_log *log, size_t i, const cal_sel *sel,
                       const fit_opts *o, prof_coll *c, ss_err *err)
{
    const ncclt_info *t = ncclt_table(log, i);
    char where[1100], what[600];
    snprintf(where, sizeof where, "%s:%u", file, t->line);
    snprintf(what, sizeof what, "table \"%s\"", t->label);
    int rc = group_size(where, "ranks", t->nranks, sel->ranks, "--ranks", &c->ranks, err);
    if (!rc) rc = group_size(where, "nodes", t->nnodes, sel->nodes, "--nodes", &c->nodes, err);
    if (!rc && c->nodes > c->ranks)
        rc = ss_fail(err, SS_E_INPUT, where, "%u nodes for %u ranks", c->nodes, c->ranks);
    if (rc) return rc;
    c->op = t->op;
    c->c.cv_median_rel_err = NAN;
    if (!(c->label = dup_or_null(t->label))) return ss_fail(err, SS_E_NOMEM, file, "out of memory");
    uint64_t *bytes = malloc((t->nrows ? t->nrows : 1) * sizeof *bytes);
    double *tm = malloc((t->nrows ? t->nrows : 1) * sizeof *tm);
    size_t n = 0;
    rc = bytes && tm ? table_rows(file, log, i, bytes, tm, &n, err)
                     : ss_fail(err, SS_E_NOMEM, file, "out of memory");
    ss_err e;
    ss_err_clear(&e);
    if (!rc && (rc = fit_curve(bytes, tm, n, o, &c->c, &e)) != 0) refail(err, &e, where, what);
    free(bytes);
    free(tm);
    return rc;
}

static int check_unique(const char *file, const prof *p, ss_err *err)
{
    for (uint32_t i = 0; i < p->ncoll; i++)
        for (uint32_t j = 0; j < i; j++) {
            const prof_coll *a = &p->coll[j], *b = &p->coll[i];
            if (a->op == b->op && a->ranks == b->ranks && a->nodes == b->nodes)
                return ss_fail(err, SS_E_INPUT, file,
                               "tables \"%s\" and \"%s\" both measure %s on %u ranks, %u "
                               "node%s; a profile holds one curve for each: choose with --table",
                               a->label, b->label, ncclt_op_names[a->op], a->ranks, a->nodes,
                               a->nodes == 1 ? "" : "s");
        }
    return SS_OK;
}

/* NCCL's version code is major * 10000 + minor * 100 + patch since 2.9. */
static char *nccl_version(uint32_t v)
{
    if (!v) return NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
    return dup_or_null(buf);
}

static int ncclt_header(const char *file, const ncclt_info *first, prof *p, ss_err *err)
{
    char src[1100];
    snprintf(src, sizeof src, "nccl-tests: %s", base_name(file));
    p->source = dup_or_null(src);
    p->card = dup_or_null(first->device[0] ? first->device : "unknown");
    p->nccl = nccl_version(first->nccl_version);
    if (!p->source || !p->card || (first->nccl_version && !p->nccl))
        return ss_fail(err, SS_E_NOMEM, file, "out of memory");
    return SS_OK;
}

int cal_from_ncclt(const char *file, const ncclt_log *log, const cal_sel *sel, const fit_opts *o,
                   prof *out, ss_err *err)
{
    size_t nt = ncclt_ntables(log);
    bool *keep = calloc(nt ? nt : 1, sizeof *keep);
    prof p;
    prof_init(&p);
    int rc = keep ? select_tables(file, log, sel, keep, err) : ss_fail(err, SS_E_NOMEM, file, "out of memory");
    if (!rc && !(p.coll = calloc(nt, sizeof *p.coll))) rc = ss_fail(err, SS_E_NOMEM, file, "out of memory");
    const ncclt_info *first = NULL;
    for (size_t i = 0; i < nt && !rc; i++) {
        if (!keep[i]) continue;
        if (!first) first = ncclt_table(log, i);
        rc = ncclt_curve(file, log, i, sel, o, &p.coll[p.ncoll++], err);
    }
    if (!rc) rc = check_unique(file, &p, err);
    if (!rc) rc = ncclt_header(file, first, &p, err);
    free(keep);
    if (rc) {
        prof_fini(&p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

/* ---- harness measurements ---- */

static bool coll_same(const mf_data *m, size_t i, const mf_coll *b)
{
    const mf_coll *a = &m->coll[i];
    return a->op == b->op && a->ranks == b->ranks && a->nodes == b->nodes;
}

static int from_mf_colls(const char *file, const mf_data *m, const fit_opts *o, prof *p,
                      uint64_t *bytes, double *t, ss_err *err)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: $.collectives", file);
    if (m->ncoll && !(p->coll = calloc(m->ncoll, sizeof *p->coll)))
        return ss_fail(err, SS_E_NOMEM, file, "out of memory");
    for (size_t i = 0; i < m->ncoll; i++) {
        const mf_coll *k = &m->coll[i];
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen |= coll_same(m, j, k);
        if (seen) continue;
        size_t n = 0;
        for (size_t j = i; j < m->ncoll; j++)
            if (coll_same(m, j, k)) {
                bytes[n] = m->coll[j].bytes;
                t[n++] = m->coll[j].time_us;
            }
        prof_coll *c = &p->coll[p->ncoll++];
        *c = (prof_coll){k->op, k->ranks, k->nodes, NULL, {NULL, 0, 0, NAN}};
        char what[160];
        snprintf(what, sizeof what, "%s on %u ranks, %u node%s", ncclt_op_names[k->op],
                 k->ranks, k->nodes, k->nodes == 1 ? "" : "s");
        ss_err e;
        ss_err_clear(&e);
        int rc = fit_curve(bytes, t, n, o, &c->c, &e);
        if (rc) return refail(err, &e, where, what);
    }
    return SS_OK;
}

static int from_mf_copies(const char *file, const mf_data *m, const fit_opts *o, prof *p,
                       uint64_t *bytes, double *t, ss_err *err)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: $.copy", file);
    for (int k = 0; k < PROF_NCOPY; k++) {
        size_t n = 0;
        for (size_t j = 0; j < m->ncopy; j++)
            if (m->copy[j].kind == (prof_copy_kind)k) {
                bytes[n] = m->copy[j].bytes;
                t[n++] = m->copy[j].time_us;
            }
        if (!n) continue;
        ss_err e;
        ss_err_clear(&e);
        p->has_copy[k] = true;
        int rc = fit_curve(bytes, t, n, o, &p->copy[k], &e);
        if (rc) return refail(err, &e, where, prof_copy_names[k]);
    }
    return SS_OK;
}

static int from_mf_gemm_dtype(const char *file, const mf_data *m, spec_dtype d, double peak,
                           double *dim, double *eff, prof_gemm *g, ss_err *err)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: $.gemm", file);
    size_t n = 0;
    for (size_t j = 0; j < m->ngemm; j++) {
        const mf_gemm *q = &m->gemm[j];
        if (q->dtype != d) continue;
        /* The geometric mean: one size that grows with every side of the
         * problem, whatever its shape. */
        dim[n] = cbrt((double)q->m * (double)q->n * (double)q->k);
        eff[n++] = q->tflops / peak;
    }
    fit_gemm f;
    ss_err e;
    ss_err_clear(&e);
    if (fit_gemm_curve(dim, eff, n, &f, &e)) return refail(err, &e, where, spec_dtype_names[d]);
    *g = (prof_gemm){true, peak, f.e_max, f.d_half, f.p, f.e_max_se, f.d_half_se, f.p_se,
                     f.npoints};
    return SS_OK;
}

static int from_mf_gemms(const char *file, const mf_data *m, const double *peak, prof *p, double *dim,
                      double *eff, ss_err *err)
{
    for (int d = 0; d < SPEC_NDT; d++) {
        bool any = false;
        for (size_t j = 0; j < m->ngemm; j++) any |= m->gemm[j].dtype == (spec_dtype)d;
        if (!any) continue;
        double pk = peak && peak[d] > 0 ? peak[d] : m->peak_tflops[d];
        if (!(pk > 0)) {
            char where[1100];
            snprintf(where, sizeof where, "%s: $.gemm", file);
            return ss_fail(err, SS_E_INPUT, where,
                           "no peak rate for %s, so no efficiency: add \"peak_tflops\": "
                           "{\"%s\": TFLOPS} to the file or pass --peak %s=TFLOPS",
                           spec_dtype_names[d], spec_dtype_names[d], spec_dtype_names[d]);
        }
        int rc = from_mf_gemm_dtype(file, m, (spec_dtype)d, pk, dim, eff, &p->gemm[d], err);
        if (rc) return rc;
    }
    return SS_OK;
}

static int from_mf_header(const char *file, const mf_data *m, prof *p, ss_err *err)
{
    char src[1100];
    snprintf(src, sizeof src, "measurements: %s", base_name(file));
    p->source = dup_or_null(src);
    p->card = dup_or_null(m->card);
    const char *in[] = {m->nccl, m->cuda, m->driver, m->date, m->host};
    char **to[] = {&p->nccl, &p->cuda, &p->driver, &p->date, &p->host};
    bool ok = p->source && p->card;
    for (size_t i = 0; i < SS_ARRAY_LEN(in); i++) {
        *to[i] = dup_or_null(in[i]);
        ok &= !in[i] || *to[i];
    }
    p->launch_us = m->launch_us;
    return ok ? SS_OK : ss_fail(err, SS_E_NOMEM, file, "out of memory");
}

int cal_from_meas(const char *file, const mf_data *m, const double *peak, const fit_opts *o,
                  prof *out, ss_err *err)
{
    size_t most = m->ncoll > m->ncopy ? m->ncoll : m->ncopy;
    most = most > m->ngemm ? most : m->ngemm;
    uint64_t *bytes = malloc((most ? most : 1) * sizeof *bytes);
    double *t = malloc((most ? most : 1) * sizeof *t), *t2 = malloc((most ? most : 1) * sizeof *t2);
    prof p;
    prof_init(&p);
    int rc = bytes && t && t2 ? SS_OK : ss_fail(err, SS_E_NOMEM, file, "out of memory");
    if (!rc) rc = from_mf_header(file, m, &p, err);
    if (!rc) rc = from_mf_colls(file, m, o, &p, bytes, t, err);
    if (!rc) rc = from_mf_copies(file, m, o, &p, bytes, t, err);
    if (!rc) rc = from_mf_gemms(file, m, peak, &p, t, t2, err);
    free(bytes);
    free(t);
    free(t2);
    if (rc) {
        prof_fini(&p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

/* ---- for people ---- */

static void print_curve(const prof_curve *c, FILE *f)
{
    fprintf(f, "  %u sizes; leave-one-size-out median |relative error| ", c->points);
    if (isnan(c->cv_median_rel_err)) fprintf(f, "n/a (too few sizes)\n");
    else fprintf(f, "%.2f%%\n", 100 * c->cv_median_rel_err);
    fprintf(f, "  %14s %14s %10s %9s %10s %9s %8s %6s\n", "from bytes", "to bytes", "alpha us",
            "+-SE", "beta GB/s", "+-SE", "R^2", "points");
    for (uint32_t i = 0; i < c->nreg; i++) {
        const prof_regime *r = &c->reg[i];
        fprintf(f, "  %14llu %14llu %10.4g %9.3g %10.4g %9.3g %8.4f %6u\n",
                (unsigned long long)r->min_bytes, (unsigned long long)r->max_bytes, r->alpha_us,
                r->alpha_se_us, r->beta_GBps, r->beta_se_GBps, r->r2, r->points);
    }
}

static void print_gemm(const prof *p, FILE *f)
{
    bool head = false;
    for (int d = 0; d < SPEC_NDT; d++) {
        const prof_gemm *g = &p->gemm[d];
        if (!g->present) continue;
        if (!head)
            fprintf(f, "gemm efficiency e_max d^p / (d^p + d_half^p), d = (m n k)^(1/3)\n"
                       "  %5s %12s %8s %8s %9s %9s %6s %6s %6s\n",
                    "dtype", "peak TFLOP/s", "e_max", "+-SE", "d_half", "+-SE", "p", "+-SE",
                    "points");
        head = true;
        fprintf(f, "  %5s %12.4g %8.4f %8.2g %9.4g %9.2g %6.3f %6.2g %6u\n", spec_dtype_names[d],
                g->peak_tflops, g->e_max, g->e_max_se, g->d_half, g->d_half_se, g->p, g->p_se,
                g->points);
    }
}

void cal_print(const prof *p, FILE *f)
{
    fprintf(f, "%s (%s)\n", p->source, p->card);
    for (uint32_t i = 0; i < p->ncoll; i++) {
        const prof_coll *c = &p->coll[i];
        fprintf(f, "%s on %u ranks, %u node%s%s%s%s\n", ncclt_op_names[c->op], c->ranks, c->nodes,
                c->nodes == 1 ? "" : "s", c->label ? " (" : "", c->label ? c->label : "",
                c->label ? ")" : "");
        print_curve(&c->c, f);
    }
    for (int k = 0; k < PROF_NCOPY; k++) {
        if (!p->has_copy[k]) continue;
        fprintf(f, "copy %s\n", prof_copy_names[k]);
        print_curve(&p->copy[k], f);
    }
    print_gemm(p, f);
    if (!isnan(p->launch_us)) fprintf(f, "kernel launch %.3g us\n", p->launch_us);
}
