/* A global constant fitted to the validation corpus, cross-validated by
 * leaving one source out. vfit.h states the contract. */
#include "vfit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- values ---- */

static int number(const char *s, const char *end, double *out)
{
    char buf[64];
    size_t n = (size_t)(end - s);
    if (!n || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e;
    errno = 0;
    *out = strtod(buf, &e);
    return *e || errno || !isfinite(*out) ? -1 : 0;
}

static int push(vfit *f, double v, const char *text, ss_err *err)
{
    if (f->nvalues == VFIT_MAX_VALUES)
        return ss_fail(err, SS_E_INPUT, NULL, "--fit %s: more than %d values", f->key,
                       VFIT_MAX_VALUES);
    double *vals = realloc(f->values, (f->nvalues + 1) * sizeof *vals);
    if (vals) f->values = vals;
    char(*txt)[32] = vals ? realloc(f->text, (f->nvalues + 1) * sizeof *txt) : NULL;
    if (!txt) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    f->text = txt;
    f->values[f->nvalues] = v;
    snprintf(f->text[f->nvalues++], sizeof *txt, "%s", text);
    return SS_OK;
}

/* The decimal places x needs (at most 12). */
static int decimals(double x)
{
    int d = 0;
    for (double s = x; d < 12 && fabs(s - nearbyint(s)) > 1e-9 * fmax(1, fabs(s)); s *= 10) d++;
    return d;
}

/* LO:HI:STEP. Each value is LO + k STEP, printed with the digits STEP and
 * LO need, so that "0.55:0.75:0.01" sets 0.55, 0.56, ... exactly as typed. */
static int range(vfit *f, const char *v, ss_err *err)
{
    const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    double lo, hi, step;
    if (!c2 || number(v, c1, &lo) || number(c1 + 1, c2, &hi) ||
        number(c2 + 1, c2 + strlen(c2), &step) || step <= 0 || hi < lo)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "--fit %s: expected LO:HI:STEP with LO <= HI and STEP > 0, not \"%s\"",
                       f->key, v);
    double count = floor((hi - lo) / step + 1e-3) + 1;
    if (count > VFIT_MAX_VALUES)
        return ss_fail(err, SS_E_INPUT, NULL, "--fit %s: %s gives %.0f values, more than %d",
                       f->key, v, count, VFIT_MAX_VALUES);
    int digits = decimals(step) > decimals(lo) ? decimals(step) : decimals(lo);
    int rc = SS_OK;
    for (size_t k = 0; k < (size_t)count && !rc; k++) {
        char text[32];
        snprintf(text, sizeof text, "%.*f", digits, lo + (double)k * step);
        rc = push(f, strtod(text, NULL), text, err);
    }
    return rc;
}

int vfit_values(vfit *f, const char *spec, ss_err *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof f->key)
        return ss_fail(err, SS_E_INPUT, NULL,
                       "--fit: expected KEY=V1,V2,... or KEY=LO:HI:STEP, not \"%s\"", spec);
    memcpy(f->key, spec, (size_t)(eq - spec));
    f->key[eq - spec] = '\0';
    const char *v = eq + 1;
    if (strchr(v, ':')) return range(f, v, err);
    int rc = SS_OK;
    for (const char *s = v; !rc;) {
        const char *end = strchr(s, ',');
        if (!end) end = s + strlen(s);
        double x;
        char text[32];
        if (number(s, end, &x) || (size_t)(end - s) >= sizeof text)
            return ss_fail(err, SS_E_INPUT, NULL, "--fit %s: \"%.*s\" is not a number", f->key,
                           (int)(end - s), s);
        memcpy(text, s, (size_t)(end - s));
        text[end - s] = '\0';
        rc = push(f, x, text, err);
        if (!*end) break;
        s = end + 1;
    }
    return rc;
}

/* ---- fit ---- */

/* Step medians of r's rows of source `only` (NULL: all) or, with skip,
 * of every other source's; buf has room for every row. */
static val_stat stat_of(const val_report *r, const char *only, bool skip, double *a, double *s)
{
    val_stat st = {0};
    for (size_t i = 0; i < r->nrows; i++) {
        const val_row *w = &r->rows[i];
        if (!w->step.has) continue;
        if (only && (strcmp(w->source, only) == 0) == skip) continue;
        a[st.n] = fabs(w->step.err_pct);
        s[st.n++] = w->step.err_pct;
    }
    st.med_abs = val_median(a, st.n);
    st.med_signed = val_median(s, st.n);
    return st;
}

/* The value with the least median |error| over `only`'s rows or (skip)
 * over every other source's. */
static size_t argmin(const vfit *f, const char *only, bool skip, double *a, double *s)
{
    size_t best = 0;
    double least = INFINITY;
    for (size_t k = 0; k < f->nvalues; k++) {
        val_stat st = stat_of(&f->reps[k], only, skip, a, s);
        if (st.n && st.med_abs < least) least = st.med_abs, best = k;
    }
    return best;
}

int vfit_compute(vfit *f, ss_err *err)
{
    const val_report *r0 = &f->reps[0];
    size_t n = r0->nrows ? r0->nrows : 1;
    double *a = malloc(n * sizeof *a), *s = malloc(n * sizeof *s);
    double *ha = malloc(n * sizeof *ha), *hs = malloc(n * sizeof *hs);
    f->per_value = calloc(f->nvalues, sizeof *f->per_value);
    f->src = calloc(r0->ngroups ? r0->ngroups : 1, sizeof *f->src);
    int rc = a && s && ha && hs && f->per_value && f->src
                 ? SS_OK
                 : ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t k = 0; !rc && k < f->nvalues; k++)
        f->per_value[k] = stat_of(&f->reps[k], NULL, false, a, s);
    if (!rc && !f->per_value[0].n)
        rc = ss_fail(err, SS_E_INPUT, NULL, "--fit %s: no row has a measured step time", f->key);
    size_t nh = 0;
    for (size_t g = 0; !rc && g < r0->ngroups; g++) {
        const char *src = r0->groups[g].source;
        vfit_source *o = &f->src[f->nsrc];
        size_t n_src = stat_of(r0, src, false, a, s).n;
        if (!n_src) continue; /* memory rows only */
        snprintf(o->source, sizeof o->source, "%s", src);
        o->without = argmin(f, src, true, a, s);
        o->n = n_src;
        f->nsrc++;
        /* its held-out rows join every other source's */
        const val_report *rh = &f->reps[o->without];
        for (size_t i = 0; i < rh->nrows; i++)
            if (rh->rows[i].step.has && !strcmp(rh->rows[i].source, src))
                ha[nh] = fabs(rh->rows[i].step.err_pct), hs[nh++] = rh->rows[i].step.err_pct;
        o->held_out = stat_of(rh, src, false, a, s).med_abs;
    }
    if (!rc) {
        f->best = argmin(f, NULL, false, a, s);
        for (size_t g = 0; g < f->nsrc; g++)
            f->src[g].in_sample = stat_of(&f->reps[f->best], f->src[g].source, false, a, s).med_abs;
        f->held_out = (val_stat){nh, val_median(ha, nh), val_median(hs, nh)};
    }
    free(a);
    free(s);
    free(ha);
    free(hs);
    return rc;
}

int vfit_run(vfit *f, const char *const *paths, size_t npaths, const char *def,
             const char *const *sets, size_t nsets, unsigned threads, FILE *progress,
             ss_err *err)
{
    const char **all = malloc((nsets + 1) * sizeof *all);
    char *assign = malloc(sizeof f->key + 40);
    f->reps = calloc(f->nvalues, sizeof *f->reps);
    if (!all || !assign || !f->reps) {
        free(all);
        free(assign);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < nsets; i++) all[i] = sets[i];
    all[nsets] = assign;
    int rc = SS_OK;
    for (size_t k = 0; k < f->nvalues && !rc; k++) {
        snprintf(assign, sizeof f->key + 40, "%s=%s", f->key, f->text[k]);
        if (progress) fprintf(progress, "fit: %s (%zu of %zu)\n", assign, k + 1, f->nvalues);
        val_report *r = &f->reps[k];
        r->sets = all;
        r->nsets = nsets + 1;
        rc = val_collect(paths, npaths, def, r, err);
        if (!rc) rc = val_run(r, threads, err);
        if (!rc) rc = val_stats(r, err);
        r->sets = NULL, r->nsets = 0; /* not kept past this call */
    }
    free(all);
    free(assign);
    return rc ? rc : vfit_compute(f, err);
}

/* ---- output ---- */

void vfit_text(const vfit *f, FILE *out)
{
    fprintf(out, "fit of %s over %zu step-time rows of %zu sources, %zu values\n", f->key,
            f->per_value[0].n, f->nsrc, f->nvalues);
    fprintf(out, "(the fitted value has the least overall median |error|; each value simulates every row)\n\n");
    fprintf(out, "  %-14s %14s %15s\n", "value", "median |err|", "median signed");
    for (size_t k = 0; k < f->nvalues; k++)
        fprintf(out, "  %-14s %13.1f%% %+14.1f%%%s\n", f->text[k], f->per_value[k].med_abs,
                f->per_value[k].med_signed, k == f->best ? "   <- fitted" : "");
    const val_stat *b = &f->per_value[f->best];
    fprintf(out, "\nfitted, all sources:   %s = %s: median |err| %.1f%%, median signed %+.1f%%\n",
            f->key, f->text[f->best], b->med_abs, b->med_signed);
    fprintf(out, "leave one source out:  median |err| %.1f%%, median signed %+.1f%% (each source's rows "
                 "at the value fitted without them)\n\n",
            f->held_out.med_abs, f->held_out.med_signed);
    fprintf(out, "  %-34s %4s %16s %11s %10s\n", "source", "n", "fitted without", "in sample",
            "held out");
    for (size_t g = 0; g < f->nsrc; g++) {
        const vfit_source *o = &f->src[g];
        fprintf(out, "  %-34s %4zu %16s %10.1f%% %9.1f%%\n", o->source, o->n, f->text[o->without],
                o->in_sample, o->held_out);
    }
}

void vfit_fini(vfit *f)
{
    for (size_t k = 0; f->reps && k < f->nvalues; k++) val_fini(&f->reps[k]);
    free(f->reps);
    free(f->values);
    free(f->text);
    free(f->per_value);
    free(f->src);
    memset(f, 0, sizeof *f);
}
