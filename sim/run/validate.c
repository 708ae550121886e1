/* Simulated vs measured over the public corpus. validate.h states the
 * contract. */
#include "validate.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/par.h"
#include "../io/json.h"
#include "../io/scenario.h"
#include "../out/summary.h"
#include "run.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The thresholds, in percent. */
#define VAL_MAX_MED_ABS 10.0
#define VAL_MAX_MED_SIGNED 5.0
#define VAL_MAX_SOURCE_MED_ABS 20.0

double val_err_pct(double measured, double predicted)
{
    return 100.0 * (predicted - measured) / measured;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double val_median(double *v, size_t n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- collect ---- */

/* The split by sequence's group of a row: its source, the model's name up
 * to " (" (the rest names the sequence), recomputation, GPUs, layout (one
 * splits a GPU's work otherwise) and device. */
static void seq_key_of(val_row *w, const spec_scenario *s)
{
    char model[VAL_NAME_MAX], lay[64] = "";
    snprintf(model, sizeof model, "%s", s->model.name);
    size_t ml = strcspn(model, "(");
    while (ml && model[ml - 1] == ' ') ml--;
    model[ml] = '\0';
    const spec_parallel *x = &s->par;
    if (x->tp * x->cp * x->pp * x->ep > 1)
        snprintf(lay, sizeof lay, " (tp %u cp %u pp %u ep %u)", x->tp, x->cp, x->pp, x->ep);
    snprintf(w->seq_key, sizeof w->seq_key, "%.120s: %.120s, recompute %.16s, %llu GPUs%.64s, %.60s",
             w->source, model, spec_recompute_names[s->recompute],
             (unsigned long long)x->tp * x->cp * x->pp * s->dp, lay, s->topo.device.name);
}

static int row_add(val_report *r, const char *file, const spec_scenario *s, ss_err *err)
{
    val_row *rows = realloc(r->rows, (r->nrows + 1) * sizeof *rows);
    if (!rows) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    r->rows = rows;
    val_row *w = &rows[r->nrows++];
    memset(w, 0, sizeof *w);
    const spec_measured *m = &s->measured;
    snprintf(w->file, sizeof w->file, "%s", file);
    const char *base = strrchr(file, '/');
    snprintf(w->name, sizeof w->name, "%s", base ? base + 1 : file);
    size_t len = strlen(w->name);
    if (len > 5 && !strcmp(w->name + len - 5, ".json")) w->name[len - 5] = '\0';
    snprintf(w->source, sizeof w->source, "%s", m->source);
    snprintf(w->cls, sizeof w->cls, "%.60s %s %s", s->topo.device.name,
             spec_strategy_names[s->shard.strategy], spec_kernels_names[s->kernels]);
    w->step = (val_fig){m->has_step, m->step_s, 0, 0};
    w->alloc = (val_fig){m->has_alloc, m->alloc_gib, 0, 0};
    w->reserved = (val_fig){m->has_reserved, m->reserved_gib, 0, 0};
    w->mfu = (val_fig){m->has_mfu, m->mfu, 0, 0};
    w->seq = s->seq_len;
    seq_key_of(w, s);
    return SS_OK;
}

static int collect_file(val_report *r, const char *file, ss_err *err)
{
    spec_scenario s = {0};
    int rc = scn_load(file, NULL, 0, &s, err);
    if (!rc && s.measured.present) rc = row_add(r, file, &s, err);
    spec_scenario_fini(&s);
    return rc;
}

/* A folder's *.json files, in name order (the table's row order). */
static int collect_dir(val_report *r, const char *dir, ss_err *err)
{
    char **names;
    size_t n;
    int rc = js_list_dir(dir, &names, &n, err);
    for (size_t i = 0; i < n && !rc; i++) rc = collect_file(r, names[i], err);
    js_list_free(names, n);
    return rc;
}

int val_collect(const char *const *paths, size_t npaths, const char *def, val_report *r,
                ss_err *err)
{
    int rc = SS_OK;
    if (!npaths) {
        paths = &def;
        npaths = 1;
    }
    for (size_t i = 0; i < npaths && !rc; i++) {
        struct stat st;
        if (stat(paths[i], &st)) rc = ss_fail(err, SS_E_IO, paths[i], "no such file or folder");
        else if (S_ISDIR(st.st_mode)) rc = collect_dir(r, paths[i], err);
        else rc = collect_file(r, paths[i], err);
    }
    if (!rc && !r->nrows)
        rc = ss_fail(err, SS_E_INPUT, paths[0], "no scenario with a \"measured\" block");
    return rc;
}

/* ---- run ---- */

static void fig_set(val_fig *f, double predicted)
{
    if (!f->has) return;
    f->predicted = predicted;
    f->err_pct = val_err_pct(f->measured, predicted);
}

/* One row: simulate its scenario (with the report's assignments), read the
 * summary's figures. */
static int run_row(const val_report *r, val_row *w, ss_err *err)
{
    spec_scenario s = {0};
    run_result res = {0};
    int rc = scn_load(w->file, r->sets, r->nsets, &s, err);
    if (!rc) rc = run_step(&s, NULL, &res, err);
    if (!rc) {
        const sum_report *sr = &res.sum;
        double step = (double)sr->step_ns * 1e-9;
        fig_set(&w->step, step);
        /* A source that never reset its peak stats saw the setup too. */
        ss_bytes setup = s.measured.peak_from_start ? sum_max_init_peak(sr) : 0;
        ss_bytes alloc = sum_max_peak(sr), resv = sum_max_peak_reserved(sr);
        fig_set(&w->alloc, (double)(alloc > setup ? alloc : setup) / GIB);
        fig_set(&w->reserved, (double)(resv > setup ? resv : setup) / GIB);
        w->setup_counts = setup > alloc || setup > resv;
        double tps = step > 0 ? (double)sr->tokens / step : 0;
        if (w->mfu.has && sr->peak_flops > 0) w->mfu.predicted = tps * sr->flops_per_token / sr->peak_flops;
        w->compute_s = (double)sr->compute_ns * 1e-9;
        w->interference_s = (double)sr->interference_ns * 1e-9;
        w->exposed_comm_s = (double)sr->exposed_comm_ns * 1e-9;
        w->pipelined = s.par.pp > 1;
        w->tokens = sr->tokens;
        w->bubble_fraction = sum_bubble_fraction(&s.par, s.grad_accum);
    }
    run_fini(&res);
    spec_scenario_fini(&s);
    return rc;
}

typedef struct pool {
    val_report *r;
    pthread_mutex_t lock;
    size_t next;
    int rc;
    ss_err err; /* the first failure, in row order */
    size_t err_row;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        size_t i = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->r->nrows) return NULL;
        ss_err e = {0};
        int rc = run_row(p->r, &p->r->rows[i], &e);
        pthread_mutex_lock(&p->lock);
        if (rc && (!p->rc || i < p->err_row)) {
            p->rc = rc;
            p->err = e;
            p->err_row = i;
        }
        pthread_mutex_unlock(&p->lock);
    }
}

int val_run(val_report *r, unsigned threads, ss_err *err)
{
    pool p = {.r = r};
    unsigned nt = threads;
    if (nt > r->nrows) nt = r->nrows ? (unsigned)r->nrows : 1;
    pthread_mutex_init(&p.lock, NULL);
    par_run(nt, worker, &p);
    pthread_mutex_destroy(&p.lock);
    if (p.rc && err) *err = p.err;
    return p.rc;
}

/* ---- statistics ---- */

static const char *row_key(const val_row *w, bool cls)
{
    return cls ? w->cls : w->source;
}

/* The step and memory errors of the rows whose source (or class, with cls)
 * is `key` (every row when NULL) into g. */
static int group_stats(const val_report *r, bool cls, const char *key, val_group *g, ss_err *err)
{
    double *st = malloc((r->nrows + 1) * sizeof *st), *mem = malloc((2 * r->nrows + 1) * sizeof *mem);
    size_t ns = 0, nm = 0;
    if (!st || !mem) {
        free(st);
        free(mem);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < r->nrows; i++) {
        const val_row *w = &r->rows[i];
        if (key && strcmp(row_key(w, cls), key)) continue;
        if (w->step.has) st[ns++] = w->step.err_pct;
        if (w->alloc.has) mem[nm++] = w->alloc.err_pct;
        if (w->reserved.has) mem[nm++] = w->reserved.err_pct;
    }
    g->step.n = ns;
    g->mem.n = nm;
    g->step.med_signed = val_median(st, ns);
    g->mem.med_signed = val_median(mem, nm);
    for (size_t i = 0; i < ns; i++) st[i] = fabs(st[i]);
    for (size_t i = 0; i < nm; i++) mem[i] = fabs(mem[i]);
    g->step.med_abs = val_median(st, ns);
    g->mem.med_abs = val_median(mem, nm);
    free(st);
    free(mem);
    return SS_OK;
}

static int cmp_group(const void *a, const void *b)
{
    return strcmp(((const val_group *)a)->source, ((const val_group *)b)->source);
}

/* One group per distinct key (source, or class with cls), first-seen order;
 * *out is the caller's. */
static int groups_by(const val_report *r, bool cls, val_group **out, size_t *nout, ss_err *err)
{
    val_group *g = calloc(r->nrows ? r->nrows : 1, sizeof *g);
    size_t ng = 0;
    int rc = SS_OK;
    if (!g) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < r->nrows; i++) {
        const char *key = row_key(&r->rows[i], cls);
        size_t k = 0;
        while (k < ng && strcmp(g[k].source, key)) k++;
        if (k == ng) snprintf(g[ng++].source, sizeof g->source, "%s", key);
    }
    for (size_t k = 0; k < ng && !rc; k++) rc = group_stats(r, cls, g[k].source, &g[k], err);
    if (rc) {
        free(g);
        return rc;
    }
    *out = g;
    *nout = ng;
    return SS_OK;
}

/* ---- split by sequence ---- */

/* Least squares y = a + b x over n points; false when x does not vary. */
static bool line_fit(const double *x, const double *y, size_t n, double *a, double *b)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n, my /= (double)n;
    for (size_t i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    if (!(sxx > 0)) return false;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return true;
}

static double term_err(double meas, double pred) { return meas > 0 ? val_err_pct(meas, pred) : NAN; }

/* The rows of one seq_key (rows with a step time and tokens only) as one
 * val_seq, when they hold three or more distinct sequence lengths. */
static bool seq_group(const val_report *r, const char *key, double *buf, val_seq *q)
{
    double *x = buf, *ym = buf + r->nrows, *yp = buf + 2 * r->nrows;
    size_t n = 0, distinct = 0;
    memset(q, 0, sizeof *q);
    for (size_t i = 0; i < r->nrows; i++) {
        const val_row *w = &r->rows[i];
        if (strcmp(w->seq_key, key) || !w->step.has || !w->tokens) continue;
        bool seen = false;
        for (size_t k = 0; k < n; k++) seen |= x[k] == (double)w->seq;
        distinct += !seen;
        x[n] = (double)w->seq;
        ym[n] = w->step.measured / (double)w->tokens;
        yp[n] = w->step.predicted / (double)w->tokens;
        if (!n || w->seq < q->seq_min) q->seq_min = w->seq;
        if (w->seq > q->seq_max) q->seq_max = w->seq;
        n++;
    }
    if (distinct < 3 || !line_fit(x, ym, n, &q->rest_meas, &q->ctx_meas) ||
        !line_fit(x, yp, n, &q->rest_pred, &q->ctx_pred))
        return false;
    snprintf(q->label, sizeof q->label, "%s", key);
    q->n = n;
    q->rest_err_pct = term_err(q->rest_meas, q->rest_pred);
    q->ctx_err_pct = term_err(q->ctx_meas, q->ctx_pred);
    return true;
}

static int seq_split(const val_report *r, val_seq **out, size_t *nout, ss_err *err)
{
    val_seq *q = calloc(r->nrows ? r->nrows : 1, sizeof *q);
    double *buf = malloc((3 * r->nrows + 1) * sizeof *buf);
    size_t nq = 0;
    if (!q || !buf) {
        free(q);
        free(buf);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < r->nrows; i++) {
        bool first = true; /* the key's first row: each key once */
        for (size_t k = 0; k < i && first; k++) first = strcmp(r->rows[k].seq_key, r->rows[i].seq_key);
        if (first && seq_group(r, r->rows[i].seq_key, buf, &q[nq])) nq++;
    }
    free(buf);
    if (!nq) free(q), q = NULL;
    *out = q;
    *nout = nq;
    return SS_OK;
}

int val_stats(val_report *r, ss_err *err)
{
    val_group *g = NULL, *c = NULL, all;
    val_seq *q = NULL;
    size_t ng = 0, nc = 0, nq = 0;
    memset(&all, 0, sizeof all);
    int rc = groups_by(r, false, &g, &ng, err);
    if (!rc) rc = groups_by(r, true, &c, &nc, err);
    if (!rc) rc = group_stats(r, false, NULL, &all, err);
    if (!rc) rc = seq_split(r, &q, &nq, err);
    if (rc) {
        free(g);
        free(c);
        free(q);
        return rc;
    }
    qsort(c, nc, sizeof *c, cmp_group);
    free(r->groups);
    free(r->classes);
    r->groups = g;
    r->ngroups = ng;
    r->classes = c;
    r->nclasses = nc;
    free(r->seqs);
    r->seqs = q;
    r->nseqs = nq;
    r->all = all;
    return SS_OK;
}

/* ---- thresholds ---- */

/* The checks of one kind (step or memory): overall |median| and median
 * |error|, then every source. Prints to f when f is not NULL. */
static bool check_kind(const val_report *r, bool mem, FILE *f)
{
    const char *what = mem ? "memory" : "step time";
    const val_stat *a = mem ? &r->all.mem : &r->all.step;
    if (!a->n) return true;
    bool ok1 = a->med_abs <= VAL_MAX_MED_ABS, ok2 = fabs(a->med_signed) <= VAL_MAX_MED_SIGNED;
    bool ok3 = true;
    for (size_t k = 0; k < r->ngroups; k++) {
        const val_stat *g = mem ? &r->groups[k].mem : &r->groups[k].step;
        if (g->n && g->med_abs > VAL_MAX_SOURCE_MED_ABS) ok3 = false;
    }
    if (f) {
        fprintf(f, "%s  %-9s overall median |error| %.1f%% (at most %.0f%%)\n", ok1 ? "PASS" : "FAIL", what,
                a->med_abs, VAL_MAX_MED_ABS);
        fprintf(f, "%s  %-9s overall |median signed error| %.1f%% (at most %.0f%%)\n",
                ok2 ? "PASS" : "FAIL", what, fabs(a->med_signed), VAL_MAX_MED_SIGNED);
        fprintf(f, "%s  %-9s every source's median |error| at most %.0f%%", ok3 ? "PASS" : "FAIL", what,
                VAL_MAX_SOURCE_MED_ABS);
        const char *sep = " (over:";
        for (size_t k = 0; k < r->ngroups; k++) {
            const val_stat *g = mem ? &r->groups[k].mem : &r->groups[k].step;
            if (g->n && g->med_abs > VAL_MAX_SOURCE_MED_ABS) {
                fprintf(f, "%s %s %.1f%%", sep, r->groups[k].source, g->med_abs);
                sep = ",";
            }
        }
        fprintf(f, "%s\n", ok3 ? "" : ")");
    }
    return ok1 && ok2 && ok3;
}

bool val_pass(const val_report *r)
{
    return check_kind(r, false, NULL) && check_kind(r, true, NULL);
}

/* ---- text ---- */

static void text_fig(const val_fig *f, const char *fmt_num, FILE *out)
{
    if (!f->has) {
        fprintf(out, " %9s %9s %8s", "-", "-", "-");
        return;
    }
    fprintf(out, " ");
    fprintf(out, fmt_num, f->measured);
    fprintf(out, " ");
    fprintf(out, fmt_num, f->predicted);
    fprintf(out, " %+7.1f%%", f->err_pct);
}

/* One kind's figures of a group, as "n=3  median |err| 12.0%  median
 * signed -4.0%" (or "n=0"). */
static void stat_str(const char *kind, const val_stat *s, char *buf, size_t len)
{
    if (s->n)
        snprintf(buf, len, "%s n=%-2zu median |err| %5.1f%%  median signed %+6.1f%%", kind, s->n,
                 s->med_abs, s->med_signed);
    else
        snprintf(buf, len, "%s n=0", kind);
}

static void text_stat(const char *label, int wl, const val_group *g, FILE *f)
{
    char st[128], mem[128];
    stat_str("step", &g->step, st, sizeof st);
    stat_str("memory", &g->mem, mem, sizeof mem);
    fprintf(f, "  %-*s %-54s %s\n", wl, label, st, mem);
}

/* The widest of `head` and the rows' names (sources): columns are never
 * cut, so two sources that share a prefix stay apart. */
static int width(const val_report *r, const char *head, bool source)
{
    size_t w = strlen(head);
    for (size_t i = 0; i < r->nrows; i++) {
        size_t n = strlen(source ? r->rows[i].source : r->rows[i].name);
        if (n > w) w = n;
    }
    return (int)w;
}

/* What-if runs say so first: their errors are not the shipped model's. */
static void sets_line(const val_report *r, const char *lead, FILE *f)
{
    if (!r->nsets) return;
    fprintf(f, "%schanged with", lead);
    for (size_t i = 0; i < r->nsets; i++) fprintf(f, " --set %s", r->sets[i]);
    fprintf(f, " (every scenario)\n\n");
}

/* A term's error, or why there is none. */
static void pct_str(double v, char *buf, size_t len)
{
    if (isnan(v)) snprintf(buf, len, "n/a");
    else snprintf(buf, len, "%+.1f%%", v);
}

/* One group of the split in fmt, whose conversions take, in order: the
 * label, n, the least and the largest sequence, the rest measured and
 * predicted (us/token) and its error, the context term measured and
 * predicted (ns/token/token) and its error. */
__attribute__((format(printf, 2, 0))) static void seq_line(const val_seq *q, const char *fmt,
                                                           FILE *f)
{
    char a[32], b[32];
    pct_str(q->rest_err_pct, a, sizeof a);
    pct_str(q->ctx_err_pct, b, sizeof b);
    fprintf(f, fmt, q->label, q->n, (unsigned long long)q->seq_min, (unsigned long long)q->seq_max,
            q->rest_meas * 1e6, q->rest_pred * 1e6, a, q->ctx_meas * 1e9, q->ctx_pred * 1e9, b);
}

static void text_seqs(const val_report *r, FILE *f)
{
    if (!r->nseqs) return;
    fprintf(f, "\nthe same rows split by sequence (one model at three or more lengths: time per token "
               "= rest + context x seq,\nleast squares, measured and predicted apart; the context "
               "term is the attention core's):\n");
    for (size_t k = 0; k < r->nseqs; k++)
        seq_line(&r->seqs[k], "  %s\n      n=%zu, seq %llu..%llu: rest %.3g -> %.3g us/token (%s), "
                              "context %.4g -> %.4g ns/token/token (%s)\n", f);
}

void val_text(const val_report *r, FILE *f)
{
    int wn = width(r, "scenario", false), ws = width(r, "source", true);
    sets_line(r, "", f);
    fprintf(f, "%-*s %-*s %9s %9s %8s %9s %8s %9s %7s %9s %9s %8s %9s %9s %8s\n", wn, "scenario",
            ws, "source", "meas s", "pred s", "err", "compute s", "interf.", "exp.comm", "bubble",
            "alloc m", "alloc p", "err", "resv m", "resv p", "err");
    for (size_t i = 0; i < r->nrows; i++) {
        const val_row *w = &r->rows[i];
        fprintf(f, "%-*s %-*s", wn, w->name, ws, w->source);
        text_fig(&w->step, "%9.3f", f);
        fprintf(f, " %9.3f %8.3f %9.3f", w->compute_s, w->interference_s, w->exposed_comm_s);
        if (w->pipelined) fprintf(f, " %6.1f%%", 100.0 * w->bubble_fraction);
        else fprintf(f, " %7s", "-");
        text_fig(&w->alloc, "%9.2f", f);
        text_fig(&w->reserved, "%9.2f", f);
        fprintf(f, "%s\n", w->setup_counts ? "  setup peak" : "");
    }
    fprintf(f, "\nerror = (predicted - measured) / measured; memory in GiB, the largest over ranks"
               "\n(\"setup peak\": the source never reset its peak stats, measured.peak_since \"start\", "
               "and the model's setup peaks above its step)\n");
    int wl = 28; /* the groups' labels, at least the width it always had */
    for (size_t k = 0; k < r->ngroups; k++)
        if ((int)strlen(r->groups[k].source) > wl) wl = (int)strlen(r->groups[k].source);
    for (size_t k = 0; k < r->nclasses; k++)
        if ((int)strlen(r->classes[k].source) > wl) wl = (int)strlen(r->classes[k].source);
    for (size_t k = 0; k < r->ngroups; k++) text_stat(r->groups[k].source, wl, &r->groups[k], f);
    text_stat("overall", wl, &r->all, f);
    if (r->nclasses) fprintf(f, "\nthe same rows by device, runtime and kernels:\n");
    for (size_t k = 0; k < r->nclasses; k++) text_stat(r->classes[k].source, wl, &r->classes[k], f);
    text_seqs(r, f);
    fprintf(f, "\n");
    check_kind(r, false, f);
    check_kind(r, true, f);
}

/* ---- Markdown ---- */

static void md_fig(const val_fig *x, const char *fmt_num, FILE *f)
{
    if (!x->has) {
        fprintf(f, " - | - | - |");
        return;
    }
    fprintf(f, " ");
    fprintf(f, fmt_num, x->measured);
    fprintf(f, " | ");
    fprintf(f, fmt_num, x->predicted);
    fprintf(f, " | %+.1f%% |", x->err_pct);
}

static void md_stat(const val_stat *s, FILE *f)
{
    if (s->n) fprintf(f, " %zu | %.1f%% | %+.1f%% |", s->n, s->med_abs, s->med_signed);
    else fprintf(f, " 0 | - | - |");
}

static void md_write(const val_report *r, FILE *f)
{
    sets_line(r, "", f);
    fprintf(f, "| scenario | source | measured s | predicted s | error | compute s | of which "
               "interference s | exposed comm. s | bubble | allocated GiB measured | predicted | error | "
               "reserved GiB measured | predicted | error |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < r->nrows; i++) {
        const val_row *w = &r->rows[i];
        fprintf(f, "| %s%s | %s |", w->name, w->setup_counts ? " (setup peak)" : "", w->source);
        md_fig(&w->step, "%.3f", f);
        fprintf(f, " %.3f | %.3f | %.3f |", w->compute_s, w->interference_s, w->exposed_comm_s);
        if (w->pipelined) fprintf(f, " %.1f%% |", 100.0 * w->bubble_fraction);
        else fprintf(f, " - |");
        md_fig(&w->alloc, "%.2f", f);
        md_fig(&w->reserved, "%.2f", f);
        fprintf(f, "\n");
    }
    fprintf(f, "\n| source | step n | median abs error | median signed | memory n | median abs "
               "error | median signed |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k <= r->ngroups; k++) {
        const val_group *g = k < r->ngroups ? &r->groups[k] : &r->all;
        fprintf(f, "| %s |", k < r->ngroups ? g->source : "**overall**");
        md_stat(&g->step, f);
        md_stat(&g->mem, f);
        fprintf(f, "\n");
    }
    if (r->nclasses)
        fprintf(f, "\n| device, runtime, kernels | step n | median abs error | median signed | "
                   "memory n | median abs error | median signed |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < r->nclasses; k++) {
        fprintf(f, "| %s |", r->classes[k].source);
        md_stat(&r->classes[k].step, f);
        md_stat(&r->classes[k].mem, f);
        fprintf(f, "\n");
    }
    if (r->nseqs)
        fprintf(f, "\n| one model at three or more sequence lengths | n | sequences | rest, measured "
                   "us/token | predicted | error | context, measured ns/token/token | predicted | "
                   "error |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < r->nseqs; k++)
        seq_line(&r->seqs[k], "| %s | %zu | %llu-%llu | %.3g | %.3g | %s | %.4g | %.4g | %s |\n", f);
    fprintf(f, "\n```\n");
    check_kind(r, false, f);
    check_kind(r, true, f);
    fprintf(f, "```\n");
}

char *val_markdown(const val_report *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    md_write(r, f);
    if (fclose(f)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- JSON ---- */

static void json_fig(cJSON *o, const char *key, const val_fig *f, const char *unit)
{
    if (!f->has) return;
    char m[32], p[32];
    snprintf(m, sizeof m, "measured_%s", unit);
    snprintf(p, sizeof p, "predicted_%s", unit);
    cJSON *x = cJSON_AddObjectToObject(o, key);
    cJSON_AddNumberToObject(x, m, f->measured);
    cJSON_AddNumberToObject(x, p, f->predicted);
    cJSON_AddNumberToObject(x, "error_pct", f->err_pct);
}

static void json_stat(cJSON *o, const char *key, const val_stat *s)
{
    cJSON *x = cJSON_AddObjectToObject(o, key);
    cJSON_AddNumberToObject(x, "n", (double)s->n);
    cJSON_AddNumberToObject(x, "median_abs_error_pct", s->med_abs);
    cJSON_AddNumberToObject(x, "median_signed_error_pct", s->med_signed);
}

static cJSON *json_row(const val_row *w)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "scenario", w->name);
    cJSON_AddStringToObject(o, "file", w->file);
    cJSON_AddStringToObject(o, "source", w->source);
    cJSON_AddStringToObject(o, "class", w->cls);
    json_fig(o, "step_time", &w->step, "s");
    cJSON *sp = cJSON_AddObjectToObject(o, "split");
    cJSON_AddNumberToObject(sp, "compute_s", w->compute_s);
    cJSON_AddNumberToObject(sp, "interference_s", w->interference_s);
    cJSON_AddNumberToObject(sp, "exposed_communication_s", w->exposed_comm_s);
    if (w->pipelined) cJSON_AddNumberToObject(sp, "bubble_fraction_analytic", w->bubble_fraction);
    json_fig(o, "peak_allocated", &w->alloc, "gib");
    json_fig(o, "peak_reserved", &w->reserved, "gib");
    if (w->setup_counts) cJSON_AddBoolToObject(o, "setup_peak", true);
    if (w->mfu.has) {
        cJSON *x = cJSON_AddObjectToObject(o, "mfu");
        cJSON_AddNumberToObject(x, "measured", w->mfu.measured);
        cJSON_AddNumberToObject(x, "predicted", w->mfu.predicted);
    }
    return o;
}

static cJSON *json_group(const val_group *g, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (g->source[0]) cJSON_AddStringToObject(o, key, g->source);
    json_stat(o, "step_time", &g->step);
    json_stat(o, "memory", &g->mem);
    return o;
}

char *val_json(const val_report *r)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    if (r->nsets) {
        cJSON *sets = cJSON_AddArrayToObject(root, "sets");
        for (size_t i = 0; i < r->nsets; i++)
            cJSON_AddItemToArray(sets, cJSON_CreateString(r->sets[i]));
    }
    cJSON *rows = cJSON_AddArrayToObject(root, "rows");
    for (size_t i = 0; i < r->nrows; i++) cJSON_AddItemToArray(rows, json_row(&r->rows[i]));
    cJSON *src = cJSON_AddArrayToObject(root, "sources");
    for (size_t k = 0; k < r->ngroups; k++)
        cJSON_AddItemToArray(src, json_group(&r->groups[k], "source"));
    cJSON_AddItemToObject(root, "overall", json_group(&r->all, "source"));
    cJSON *cls = cJSON_AddArrayToObject(root, "classes");
    for (size_t k = 0; k < r->nclasses; k++)
        cJSON_AddItemToArray(cls, json_group(&r->classes[k], "class"));
    cJSON *seqs = cJSON_AddArrayToObject(root, "by_sequence");
    for (size_t k = 0; k < r->nseqs; k++) {
        const val_seq *q = &r->seqs[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "group", q->label);
        cJSON_AddNumberToObject(o, "n", (double)q->n);
        cJSON_AddNumberToObject(o, "seq_min", (double)q->seq_min);
        cJSON_AddNumberToObject(o, "seq_max", (double)q->seq_max);
        cJSON_AddNumberToObject(o, "rest_measured_s_per_token", q->rest_meas);
        cJSON_AddNumberToObject(o, "rest_predicted_s_per_token", q->rest_pred);
        cJSON_AddNumberToObject(o, "context_measured_s_per_token2", q->ctx_meas);
        cJSON_AddNumberToObject(o, "context_predicted_s_per_token2", q->ctx_pred);
        if (!isnan(q->rest_err_pct)) cJSON_AddNumberToObject(o, "rest_error_pct", q->rest_err_pct);
        if (!isnan(q->ctx_err_pct)) cJSON_AddNumberToObject(o, "context_error_pct", q->ctx_err_pct);
        cJSON_AddItemToArray(seqs, o);
    }
    cJSON_AddBoolToObject(root, "step_time_pass", check_kind(r, false, NULL));
    cJSON_AddBoolToObject(root, "memory_pass", check_kind(r, true, NULL));
    cJSON_AddBoolToObject(root, "pass", val_pass(r));
    char *txt = cJSON_Print(root);
    cJSON_Delete(root);
    return txt;
}

void val_fini(val_report *r)
{
    if (!r) return;
    free(r->rows);
    free(r->groups);
    free(r->classes);
    free(r->seqs);
    memset(r, 0, sizeof *r);
}
