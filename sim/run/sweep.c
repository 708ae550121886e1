#include "sweep.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/par.h"
#include "../core/utf8.h"
#include "../io/scenario.h"
#include "../out/bars.h"
#include "run.h"

/* ---- --vary parsing ---- */

static int add_value(sweep_vary *v, const char *s, size_t n, ss_err *err)
{
    char **vals = realloc(v->values, (v->nvalues + 1) * sizeof *vals);
    char *copy = malloc(n + 1);
    if (!vals || !copy) {
        free(copy);
        if (vals) v->values = vals;
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    v->values = vals;
    v->values[v->nvalues++] = copy;
    return SS_OK;
}

int sweep_vary_parse(const char *arg, sweep_vary *v, ss_err *err)
{
    memset(v, 0, sizeof *v);
    char where[300];
    snprintf(where, sizeof where, "--vary %.280s", arg);
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof v->key || !eq[1])
        return ss_fail(err, SS_E_INPUT, where, "expected KEY=VALUE1,VALUE2,...");
    memcpy(v->key, arg, (size_t)(eq - arg));
    int depth = 0, rc = SS_OK;
    bool quoted = false;
    const char *start = eq + 1;
    for (const char *p = start;; p++) {
        if (*p == '"') quoted = !quoted;
        else if (!quoted && (*p == '{' || *p == '[')) depth++;
        else if (!quoted && (*p == '}' || *p == ']')) depth--;
        if (*p == '\0' || (*p == ',' && !depth && !quoted)) {
            if (p == start) rc = ss_fail(err, SS_E_INPUT, where, "an empty value");
            if (!rc) rc = add_value(v, start, (size_t)(p - start), err);
            if (rc || !*p) break;
            start = p + 1;
        }
    }
    if (rc) sweep_vary_fini(v);
    return rc;
}

void sweep_vary_fini(sweep_vary *v)
{
    for (size_t i = 0; i < v->nvalues; i++) {
        free(v->values[i]);
        if (v->sets) free(v->sets[i]);
    }
    free(v->values);
    free(v->sets);
    v->values = NULL;
    v->sets = NULL;
    v->nvalues = 0;
}

size_t sweep_points(const sweep_cfg *c)
{
    if (c->zip) {
        size_t n = c->nvary ? c->vary[0].nvalues : 0;
        for (size_t k = 1; k < c->nvary; k++)
            if (c->vary[k].nvalues != n) return 0;
        return n;
    }
    size_t n = 1;
    for (size_t k = 0; k < c->nvary; k++) {
        if (c->vary[k].nvalues && n > SIZE_MAX / c->vary[k].nvalues) return 0;
        n *= c->vary[k].nvalues;
    }
    return n;
}

/* ---- rows ---- */

static const char *const columns =
    "status,step_time_s,compute_s,exposed_communication_s,max_peak_allocated_bytes,"
    "max_peak_reserved_bytes,max_steady_bytes,fits,all_reduce_count,all_gather_count,"
    "reduce_scatter_count,broadcast_count,error";

/* Append s to a CSV line, quoted when it holds a comma, quote or newline. */
static void csv_field(char *line, size_t cap, const char *s)
{
    size_t u = strlen(line);
    bool q = strpbrk(s, ",\"\n") != NULL;
    if (q && u + 1 < cap) line[u++] = '"';
    for (; *s && u + 2 < cap; s++) {
        if (*s == '"') line[u++] = '"';
        line[u++] = *s == '\n' ? ' ' : *s;
    }
    if (q && u + 1 < cap) line[u++] = '"';
    if (u + 1 < cap) line[u++] = ',';
    line[u] = '\0';
}

char *sweep_header(const sweep_cfg *c)
{
    char *h = calloc(1, 4096);
    if (!h) return NULL;
    csv_field(h, 4096, "point");
    for (size_t k = 0; k < c->nvary; k++) csv_field(h, 4096, c->vary[k].key);
    snprintf(h + strlen(h), 4096 - strlen(h), "%s\n", columns);
    return h;
}

/* Figures of a run; throughput as the summary's "throughput" section has it. */
static sweep_fig fig_of(const sum_report *r)
{
    sweep_fig f = {.ok = true, .fits = sum_fits(r), .step_ns = r->step_ns,
                   .step_s = r->step_ns * 1e-9,
                   .compute_s = r->compute_ns * 1e-9, .exposed_s = r->exposed_comm_ns * 1e-9,
                   .peak_reserved = sum_max_peak_reserved(r)};
    f.tokens_per_s = f.step_s > 0 ? (double)r->tokens / f.step_s : 0;
    f.mfu = r->peak_flops > 0 ? f.tokens_per_s * r->flops_per_token / r->peak_flops : 0;
    return f;
}

static void figures(const sum_report *r, const sweep_fig *f, char *buf, size_t cap)
{
    ss_bytes peak = 0, steady = 0;
    for (uint32_t k = 0; k < r->nranks; k++) {
        const mem_rank *m = &r->ranks[k].mem;
        if (m->peak > peak) peak = m->peak;
        if (m->end > steady) steady = m->end;
    }
    snprintf(buf, cap, "ok,%.9g,%.9g,%.9g,%llu,%llu,%llu,%s,%llu,%llu,%llu,%llu,", f->step_s,
             r->compute_ns * 1e-9, r->exposed_comm_ns * 1e-9, (unsigned long long)peak,
             (unsigned long long)f->peak_reserved, (unsigned long long)steady,
             f->fits ? "true" : "false",
             (unsigned long long)r->coll[PROG_COLL_ALL_REDUCE].count,
             (unsigned long long)r->coll[PROG_COLL_ALL_GATHER].count,
             (unsigned long long)r->coll[PROG_COLL_REDUCE_SCATTER].count,
             (unsigned long long)r->coll[PROG_COLL_BROADCAST].count);
}

#define ROW_MAX 4096

/* Row i's leading fields (the point and its values) into row, and the
 * overrides that make the point into sets (n of them, after the sweep's
 * own); sets point into sets_buf. */
static size_t lead(const sweep_cfg *c, size_t i, char *row, const char **sets,
                   char sets_buf[SWEEP_MAX_VARY][600])
{
    size_t n = 0, rest = i;
    for (size_t k = 0; k < c->nsets && n < 256; k++) sets[n++] = c->sets[k];
    snprintf(row, ROW_MAX, "%zu,", i);
    const char *vals[SWEEP_MAX_VARY];
    for (size_t k = c->nvary; k-- > 0;) {
        size_t at = c->zip ? i : rest % c->vary[k].nvalues;
        vals[k] = c->vary[k].values[at];
        rest /= c->vary[k].nvalues;
        const char *own = c->vary[k].sets ? c->vary[k].sets[at] : NULL;
        if (own) snprintf(sets_buf[k], sizeof sets_buf[k], "%s", own);
        else snprintf(sets_buf[k], sizeof sets_buf[k], "%s=%s", c->vary[k].key, vals[k]);
    }
    for (size_t k = 0; k < c->nvary; k++) {
        csv_field(row, ROW_MAX, vals[k]);
        sets[n++] = sets_buf[k];
    }
    return n;
}

void sweep_point_label(const sweep_cfg *c, size_t i, char *buf, size_t n)
{
    size_t at[SWEEP_MAX_VARY], rest = i, u = 0;
    for (size_t k = c->nvary; k-- > 0;) {
        at[k] = c->zip ? i : rest % c->vary[k].nvalues;
        rest /= c->vary[k].nvalues;
    }
    if (n) buf[0] = '\0';
    for (size_t k = 0; k < c->nvary && u < n; k++) {
        const char *key = strrchr(c->vary[k].key, '.');
        key = key ? key + 1 : c->vary[k].key;
        int w = snprintf(buf + u, n - u, "%s%s=%s", k ? ", " : "", key, c->vary[k].values[at[k]]);
        u = w < 0 ? n : u + (size_t)w;
    }
    ss_utf8_trim(buf);
}

/* The row of a point with no figures: status, empty figures, message. */
static void row_without_figures(char *row, const char *status, const char *msg)
{
    snprintf(row + strlen(row), ROW_MAX - strlen(row), "%s,,,,,,,,,,,,", status);
    csv_field(row, ROW_MAX, msg);
    row[strlen(row) - 1] = '\n';
}

/* Point i left out by the sweep's skip hook: its row. */
static char *skipped_point(const sweep_cfg *c, size_t i, const sweep_skip *why)
{
    char *row = calloc(1, ROW_MAX), sets_buf[SWEEP_MAX_VARY][600];
    const char *sets[256 + SWEEP_MAX_VARY];
    if (!row) return NULL;
    lead(c, i, row, sets, sets_buf);
    row_without_figures(row, why->status, why->why);
    return row;
}

/* Simulate point i, format its row and fill *fig. Only out-of-memory fails
 * the sweep. */
static char *run_point(const sweep_cfg *c, size_t i, sweep_fig *fig)
{
    char *row = calloc(1, ROW_MAX), sets_buf[SWEEP_MAX_VARY][600];
    const char *sets[256 + SWEEP_MAX_VARY];
    *fig = (sweep_fig){0};
    if (!row) return NULL;
    size_t n = lead(c, i, row, sets, sets_buf);
    ss_err err;
    ss_err_clear(&err);
    spec_scenario s;
    run_result r = {0};
    int rc = scn_load(c->scenario, sets, n, &s, &err);
    if (!rc) {
        rc = run_step(&s, NULL, &r, &err);
        spec_scenario_fini(&s);
    }
    char line[512], msg[1200];
    if (!rc) {
        *fig = fig_of(&r.sum);
        figures(&r.sum, fig, line, sizeof line);
        snprintf(row + strlen(row), ROW_MAX - strlen(row), "%s\n", line);
    } else {
        row_without_figures(row, "error", ss_err_str(&err, msg, sizeof msg));
    }
    run_fini(&r);
    return row;
}

/* A point simulated before (resume): its row and figures as given. */
static char *given_point(const sweep_cfg *c, size_t slot, sweep_fig *fig)
{
    *fig = c->given_figs[slot];
    return strdup(c->given[slot]);
}

/* ---- threads ---- */

typedef struct pool {
    const sweep_cfg *c;
    pthread_mutex_t lock;
    size_t next, done, count; /* local slots */
    char **rows;
    bool nomem;
} pool;

/* The next slot to run, and whether the skip hook leaves it out (*left
 * then holds why); SIZE_MAX when none is left. Under the lock. */
static size_t take(pool *p, sweep_skip *left, bool *skip)
{
    *skip = false;
    if (p->next >= p->count || p->nomem) return SIZE_MAX;
    size_t k = p->next++, slot = p->c->order ? p->c->order[k] : k;
    if (p->c->skip) *skip = p->c->skip(p->c->skip_ctx, slot, false, left) == SWEEP_SKIP;
    return slot;
}

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        sweep_skip left;
        bool skip;
        pthread_mutex_lock(&p->lock);
        size_t slot = take(p, &left, &skip);
        pthread_mutex_unlock(&p->lock);
        if (slot == SIZE_MAX) return NULL;
        sweep_fig fig = {0};
        size_t point = p->c->first + slot * p->c->stride;
        const char *had = p->c->given ? p->c->given[slot] : NULL;
        char *row = skip  ? skipped_point(p->c, point, &left)
                    : had ? given_point(p->c, slot, &fig)
                          : run_point(p->c, point, &fig);
        if (p->c->figs) p->c->figs[slot] = fig; /* slots are distinct: no lock */
        pthread_mutex_lock(&p->lock);
        p->rows[slot] = row;
        p->nomem = p->nomem || !row;
        p->done++;
        if (p->c->progress) p->c->progress(p->c->progress_ctx, p->done, p->count, slot, &fig);
        if (row && p->c->on_row) p->c->on_row(p->c->row_ctx, slot, row, &fig);
        pthread_mutex_unlock(&p->lock);
    }
}

static char *join(char **rows, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(rows[i]);
    char *out = malloc(len), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(rows[i]);
        memcpy(w, rows[i], k);
        w += k;
    }
    *w = '\0';
    return out;
}

int sweep_run(const sweep_cfg *c, char **csv, ss_err *err)
{
    size_t total = sweep_points(c), stride = c->stride ? c->stride : 1;
    if (!total) return ss_fail(err, SS_E_INPUT, NULL, "the sweep has no points or too many");
    pool p = {.c = c, .count = c->first < total ? (total - c->first + stride - 1) / stride : 0};
    p.rows = calloc(p.count ? p.count : 1, sizeof *p.rows);
    if (!p.rows) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    pthread_mutex_init(&p.lock, NULL);
    par_run(c->threads, worker, &p);
    pthread_mutex_destroy(&p.lock);
    for (size_t i = 0; c->skip && !p.nomem && i < p.count; i++) {
        sweep_skip left;
        if (c->skip(c->skip_ctx, i, true, &left) != SWEEP_SKIP) continue;
        free(p.rows[i]);
        p.rows[i] = skipped_point(c, c->first + i * stride, &left);
        p.nomem = !p.rows[i];
        if (c->figs) c->figs[i] = (sweep_fig){0};
    }
    int rc = SS_OK;
    *csv = p.nomem ? NULL : join(p.rows, p.count);
    if (!*csv) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < p.count; i++) free(p.rows[i]);
    free(p.rows);
    return rc;
}

/* ---- the picture ---- */

/* The fields of one CSV line (csv_field's quoting): the status (after
 * the point and its nvary values) and the last field, unquoted, into
 * status[ns] and last[nl]. Returns the start of the next line. */
static const char *csv_fields(const char *s, size_t nvary, char *status, size_t ns, char *last,
                              size_t nl)
{
    for (size_t f = 0;; f++) {
        char *out = f == nvary + 1 ? status : last;
        size_t n = f == nvary + 1 ? ns : nl, k = 0;
        bool q = *s == '"';
        for (s += q; *s && (q || (*s != ',' && *s != '\n')); s++) {
            if (q && *s == '"' && s[1] == '"') s++;
            else if (q && *s == '"') {
                q = false;
                continue;
            }
            if (k + 1 < n) out[k++] = *s;
        }
        out[k] = '\0';
        if (*s != ',') return *s ? s + 1 : s;
        s++;
    }
}

int sweep_svg(const sweep_cfg *c, const sweep_fig *figs, const char *csv, FILE *f, ss_err *err)
{
    size_t n = sweep_points(c);
    bars_row *rows = calloc(n ? n : 1, sizeof *rows);
    char (*labels)[512] = calloc(n ? n : 1, sizeof *labels);
    char (*why)[600] = calloc(n ? n : 1, sizeof *why);
    int rc = SS_OK;
    if (!rows || !labels || !why) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    const char *line = csv;
    for (size_t i = 0; !rc && i < n; i++) {
        char status[32], last[560];
        line = csv_fields(line ? line : "", c->nvary, status, sizeof status, last, sizeof last);
        sweep_point_label(c, i, labels[i], sizeof labels[i]);
        snprintf(why[i], sizeof why[i], "%s%s%s", status, last[0] ? ": " : "", last);
        ss_utf8_trim(why[i]);
        const sweep_fig *g = &figs[i];
        rows[i] = (bars_row){.label = labels[i], .ok = g->ok, .why = why[i], .fits = g->fits,
                             .step_s = g->step_s, .compute_s = g->compute_s,
                             .exposed_s = g->exposed_s};
    }
    char title[600];
    snprintf(title, sizeof title, "sweep of %s: %zu points, rank 0's step", c->scenario, n);
    ss_utf8_trim(title);
    if (!rc) rc = bars_write(title, rows, n, f, err);
    free(rows);
    free(labels);
    free(why);
    return rc;
}
