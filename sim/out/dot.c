#include "dot.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "span.h"

/* ---- layout (points; rows are placed from the top edge down) ---- */

#define TOP_PT 10.0
#define TITLE_PT 26.0
#define LANE_H 16.0
#define LANE_PITCH 18.0
#define GAP_PT 8.0
#define EXP_H 10.0
#define EXP_PITCH 12.0
#define MEM_PT 60.0
#define AXIS_PT 28.0
#define LEG_PITCH 16.0
#define LEG_COL_PT 130.0
#define BOTTOM_PT 10.0
#define MEM_BARS 300 /* at most this many memory bars over the window */

typedef struct geo {
    ss_ns t_lo, t_hi;
    double ppn;                  /* points per ns */
    double left, plot_w, width;  /* plot area [left, left + plot_w] */
    double height;               /* of the whole drawing */
    double y_lanes, y_exp, y_mem, y_axis, y_leg; /* row tops */
    uint32_t rank_lo, rank_hi;   /* clamped to the trace */
} geo;

typedef struct lane {
    uint32_t rank;
    uint8_t stream;
} lane;

typedef struct dw {
    FILE *f;
    const sum_report *r;
    const trc *t;
    geo g;
    lane *lanes;
    uint32_t nlanes;
    uint32_t nid; /* anonymous node names, in drawing order */
} dw;

typedef struct swatch {
    const char *label, *fill;
} swatch;

enum { SW_FWD, SW_BWD, SW_OPT, SW_OTHER, SW_AG, SW_RS, SW_AR, SW_BC, SW_A2A, SW_HOST,
       SW_EXPOSED, SW_MEM, SW_N };

static const swatch swatches[SW_N] = {
    {"forward", "#81c784"},        {"backward", "#2e7d32"},
    {"optimizer", "#1e88e5"},      {"compute (other)", "#80cbc4"},
    {"all_gather", "#ffa726"},     {"reduce_scatter", "#ab47bc"},
    {"all_reduce", "#8d6e63"},     {"broadcast", "#fdd835"},
    {"all_to_all", "#26c6da"},     {"host", "#bdbdbd"},
    {"exposed communication", "#e53935"}, {"allocated, rank 0", "#5c6bc0"},
};

#define PEAK_FILL "#d50000"
#define INK "#424242"

static double ms(ss_ns t) { return (double)t * 1e-6; }
static double mib(ss_bytes b) { return (double)b / (double)SS_MIB; }

static int op_swatch(const prog_op *op)
{
    if (op->kind == PROG_OP_HOST) return SW_HOST;
    if (op->kind == PROG_OP_COLL) {
        switch (op->coll) {
        case PROG_COLL_ALL_GATHER: return SW_AG;
        case PROG_COLL_REDUCE_SCATTER: return SW_RS;
        case PROG_COLL_ALL_REDUCE: return SW_AR;
        case PROG_COLL_BROADCAST: return SW_BC;
        default: return SW_A2A;
        }
    }
    return op->phase == PROG_PH_FORWARD    ? SW_FWD
           : op->phase == PROG_PH_BACKWARD ? SW_BWD
           : op->phase == PROG_PH_OPTIMIZER ? SW_OPT : SW_OTHER;
}

/* ---- DOT primitives ---- */

/* A quote or a backslash would end or escape a DOT string; a newline
 * becomes DOT's \n, other control characters a space. Truncates to fit. */
static void esc(char *out, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s && k + 3 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') out[k++] = '\\';
        if (c == '\n') {
            out[k++] = '\\';
            c = 'n';
        }
        out[k++] = c < 0x20 ? ' ' : (char)c;
    }
    out[k] = '\0';
}

/* A filled box centred at (x, y) with y from the top edge: Graphviz's y
 * grows upward, so it is flipped here and nowhere else. id NULL: anonymous. */
static void box(dw *w, const char *id, double x, double y, double wpt, double hpt,
                const char *fill, const char *tip)
{
    char anon[24], e[1024];
    if (!id) {
        snprintf(anon, sizeof anon, "n%u", w->nid++);
        id = anon;
    }
    esc(e, sizeof e, tip);
    fprintf(w->f, "  %s [pos=\"%.2f,%.2f!\", width=%.5f, height=%.5f, fillcolor=\"%s\", "
                  "tooltip=\"%s\"];\n",
            id, x, w->g.height - y, wpt / 72.0, hpt / 72.0, fill, e);
}

typedef enum { J_LEFT, J_CENTER, J_RIGHT } just;

/* Text in a transparent box of width wpt centred at (x, y); DOT's \l and
 * \r end a line flush left or right inside the box. */
static void text(dw *w, double x, double y, double wpt, const char *s, just j, int size)
{
    static const char *const term[] = {"\\l", "", "\\r"};
    char e[512];
    esc(e, sizeof e, s);
    fprintf(w->f, "  t%u [pos=\"%.2f,%.2f!\", width=%.5f, height=%.5f, label=\"%s%s\", "
                  "fontsize=%d, fillcolor=\"#ffffff00\"];\n",
            w->nid++, x, w->g.height - y, wpt / 72.0, (size + 4) / 72.0, e, term[j], size);
}

static double xat(const geo *g, ss_ns t) { return g->left + (double)(t - g->t_lo) * g->ppn; }

/* A box over [a, b) clipped to the window, at least DOT_MIN_W_PT wide. */
static void span_box(dw *w, const char *id, ss_ns a, ss_ns b, double y, double h,
                     const char *fill, const char *tip)
{
    if (a < w->g.t_lo) a = w->g.t_lo;
    if (b > w->g.t_hi) b = w->g.t_hi;
    if (b < a) b = a;
    double wpt = (double)(b - a) * w->g.ppn;
    if (wpt < DOT_MIN_W_PT) wpt = DOT_MIN_W_PT;
    box(w, id, xat(&w->g, a) + wpt / 2, y, wpt, h, fill, tip);
}

static bool in_window(const geo *g, ss_ns a, ss_ns b)
{
    if (a == b) return a >= g->t_lo && a <= g->t_hi;
    return a < g->t_hi && b > g->t_lo;
}

/* ---- geometry ---- */

static int geo_init(geo *g, const trc *t, const dot_opts *o, ss_err *err)
{
    ss_ns hi = o->t_hi ? o->t_hi : (t->step_ns ? t->step_ns : 1);
    if (t->nranks == 0 || o->rank_lo >= t->nranks || o->rank_lo > o->rank_hi)
        return ss_fail(err, SS_E_INPUT, NULL, "ranks %u..%u: the step has %u ranks",
                       o->rank_lo, o->rank_hi, t->nranks);
    if (hi <= o->t_lo)
        return ss_fail(err, SS_E_INPUT, NULL, "time window [%llu, %llu) ns is empty",
                       (unsigned long long)o->t_lo, (unsigned long long)hi);
    double width = o->width_in * 72.0, plot = width - DOT_LEFT_PT - DOT_RIGHT_PT;
    if (!(plot >= 72.0)) /* also rejects NaN */
        return ss_fail(err, SS_E_INPUT, NULL, "drawing width %.2f in: need at least %.2f in",
                       o->width_in, (DOT_LEFT_PT + DOT_RIGHT_PT + 72.0) / 72.0);
    *g = (geo){.t_lo = o->t_lo, .t_hi = hi, .left = DOT_LEFT_PT, .plot_w = plot,
               .width = width, .rank_lo = o->rank_lo,
               .rank_hi = o->rank_hi < t->nranks ? o->rank_hi : t->nranks - 1};
    g->ppn = plot / (double)(hi - o->t_lo);
    return SS_OK;
}

static int leg_cols(const geo *g)
{
    int c = (int)((g->width - 20.0) / LEG_COL_PT);
    return c > 0 ? c : 1;
}

static void geo_rows(geo *g, uint32_t nlanes)
{
    uint32_t nranks = g->rank_hi - g->rank_lo + 1;
    int cols = leg_cols(g);
    g->y_lanes = TOP_PT + TITLE_PT;
    g->y_exp = g->y_lanes + nlanes * LANE_PITCH + GAP_PT;
    g->y_mem = g->y_exp + nranks * EXP_PITCH + GAP_PT;
    g->y_axis = g->y_mem + MEM_PT + 4.0;
    g->y_leg = g->y_axis + AXIS_PT;
    g->height = g->y_leg + ((SW_N + cols - 1) / cols) * LEG_PITCH + BOTTOM_PT;
}

/* ---- op lanes ---- */

/* Zero-length FSDP bookkeeping ops (reshard, wait) carry no time: skip. */
static bool op_drawn(const dw *w, uint32_t rank, uint32_t i)
{
    const prog_op *op = &prog_ops(w->t->p, rank)[i];
    const trc_op *x = &w->t->ops[rank][i];
    if (!in_window(&w->g, x->start, x->end)) return false;
    if (x->end > x->start) return true;
    const char *n = prog_str_get(w->t->p, op->name);
    return strncmp(n, "fsdp.reshard", 12) != 0 && strncmp(n, "fsdp.wait", 9) != 0;
}

static int lanes_find(dw *w, ss_err *err)
{
    uint32_t n = w->g.rank_hi - w->g.rank_lo + 1;
    w->lanes = malloc((size_t)n * PROG_NSTREAMS * sizeof *w->lanes);
    if (!w->lanes) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t k = w->g.rank_lo; k <= w->g.rank_hi; k++) {
        bool used[PROG_NSTREAMS] = {false};
        const prog_op *ops = prog_ops(w->t->p, k);
        for (uint32_t i = 0; i < prog_nops(w->t->p, k); i++)
            if (ops[i].stream < PROG_NSTREAMS && op_drawn(w, k, i)) used[ops[i].stream] = true;
        for (int s = 0; s < PROG_NSTREAMS; s++)
            if (used[s]) w->lanes[w->nlanes++] = (lane){k, (uint8_t)s};
    }
    geo_rows(&w->g, w->nlanes);
    return SS_OK;
}

static void draw_op(dw *w, uint32_t rank, uint32_t i, double y)
{
    const prog_op *op = &prog_ops(w->t->p, rank)[i];
    const trc_op *x = &w->t->ops[rank][i];
    char id[48], tip[640];
    snprintf(id, sizeof id, "op_%u_%u", rank, i);
    int n = snprintf(tip, sizeof tip, "%s\nstart %.3f ms, end %.3f ms",
                     prog_str_get(w->t->p, op->name), ms(x->start), ms(x->end));
    if (op->kind == PROG_OP_COLL && n > 0 && (size_t)n < sizeof tip)
        snprintf(tip + n, sizeof tip - (size_t)n, "\n%s, %llu bytes (%.2f MiB)",
                 prog_coll_name((prog_coll)op->coll), (unsigned long long)op->bytes,
                 mib(op->bytes));
    span_box(w, id, x->start, x->end, y, LANE_H, swatches[op_swatch(op)].fill, tip);
}

static void draw_lane(dw *w, uint32_t li)
{
    const lane *l = &w->lanes[li];
    double y = w->g.y_lanes + li * LANE_PITCH + LANE_H / 2;
    char lab[64];
    snprintf(lab, sizeof lab, "rank %u %s", l->rank, prog_stream_name((prog_stream)l->stream));
    text(w, w->g.left / 2, y, w->g.left - 8.0, lab, J_RIGHT, 9);
    const prog_op *ops = prog_ops(w->t->p, l->rank);
    for (uint32_t i = 0; i < prog_nops(w->t->p, l->rank); i++)
        if (ops[i].stream == l->stream && op_drawn(w, l->rank, i)) draw_op(w, l->rank, i, y);
}

/* ---- exposed communication: collective time not covered by compute ---- */

/* buf: room for 4 * nops spans of this rank. */
static void draw_exposed_rank(dw *w, uint32_t k, span *buf)
{
    size_t n = prog_nops(w->t->p, k);
    size_t nc = span_rank(w->t, k, SPAN_COMPUTE, buf);
    size_t nm = span_rank(w->t, k, SPAN_COMM, buf + n);
    size_t ne = span_minus(buf + n, nm, buf, nc, buf + 2 * n);
    double y = w->g.y_exp + (k - w->g.rank_lo) * EXP_PITCH + EXP_H / 2;
    char lab[64], id[48], tip[160];
    snprintf(lab, sizeof lab, "rank %u exposed comm", k);
    text(w, w->g.left / 2, y, w->g.left - 8.0, lab, J_RIGHT, 8);
    for (size_t i = 0, drawn = 0; i < ne; i++) {
        const span *s = &buf[2 * n + i];
        if (!in_window(&w->g, s->a, s->b)) continue;
        snprintf(id, sizeof id, "exp_%u_%zu", k, drawn++);
        snprintf(tip, sizeof tip, "rank %u exposed communication\n%.3f - %.3f ms (%.3f ms)", k,
                 ms(s->a), ms(s->b), ms(s->b - s->a));
        span_box(w, id, s->a, s->b, y, EXP_H, swatches[SW_EXPOSED].fill, tip);
    }
}

static int draw_exposed(dw *w, ss_err *err)
{
    size_t most = 0;
    for (uint32_t k = w->g.rank_lo; k <= w->g.rank_hi; k++)
        if (prog_nops(w->t->p, k) > most) most = prog_nops(w->t->p, k);
    span *buf = malloc((4 * most + 1) * sizeof *buf);
    if (!buf) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t k = w->g.rank_lo; k <= w->g.rank_hi; k++) draw_exposed_rank(w, k, buf);
    free(buf);
    return SS_OK;
}

/* ---- memory band of rank 0 ---- */

static size_t bucket(const geo *g, ss_ns t, size_t nb)
{
    size_t k = (size_t)((t - g->t_lo) * nb / (g->t_hi - g->t_lo));
    return k < nb ? k : nb - 1;
}

/* Each series point holds until the next one; a bucket keeps the largest
 * value that holds anywhere in it, so the peak always survives thinning. */
static void mem_fill(const geo *g, const mem_rank *m, ss_bytes *v, size_t nb)
{
    for (size_t i = 0; i < m->nseries; i++) {
        ss_ns a = m->series[i].t;
        ss_ns b = i + 1 < m->nseries ? m->series[i + 1].t : g->t_hi;
        if (b < a) b = a;
        if (a > g->t_hi || b < g->t_lo || (b == g->t_lo && a < b)) continue;
        if (a < g->t_lo) a = g->t_lo;
        if (b > g->t_hi) b = g->t_hi;
        size_t k1 = bucket(g, b > a ? b - 1 : a, nb);
        for (size_t k = bucket(g, a, nb); k <= k1; k++)
            if (m->series[i].allocated > v[k]) v[k] = m->series[i].allocated;
    }
}

static void mem_bars(dw *w, const ss_bytes *v, size_t nb, ss_bytes top)
{
    const geo *g = &w->g;
    double bw = g->plot_w / (double)nb;
    char tip[160];
    for (size_t k = 0; k < nb && top; k++) {
        if (!v[k]) continue;
        double h = (double)v[k] / (double)top * MEM_PT;
        ss_ns a = g->t_lo + (g->t_hi - g->t_lo) * k / nb;
        ss_ns b = g->t_lo + (g->t_hi - g->t_lo) * (k + 1) / nb;
        snprintf(tip, sizeof tip, "rank 0 allocated, at most %.2f MiB\n%.3f - %.3f ms",
                 mib(v[k]), ms(a), ms(b));
        box(w, NULL, g->left + bw * (double)k + bw / 2, g->y_mem + MEM_PT - h / 2, bw, h,
            swatches[SW_MEM].fill, tip);
    }
}

static void mem_peak(dw *w, const mem_rank *m)
{
    const geo *g = &w->g;
    if (m->peak_t < g->t_lo || m->peak_t > g->t_hi) return;
    double x = xat(g, m->peak_t), h = g->y_mem + MEM_PT - g->y_lanes;
    char lab[64], tip[96];
    snprintf(lab, sizeof lab, "peak %.2f MiB", mib(m->peak));
    snprintf(tip, sizeof tip, "rank 0 peak allocated %.2f MiB at %.3f ms", mib(m->peak),
             ms(m->peak_t));
    box(w, "mem_peak", x, g->y_lanes + h / 2, 1.0, h, PEAK_FILL, tip);
    text(w, x + 3.0 + 50.0, g->y_mem + 6.0, 100.0, lab, J_LEFT, 9);
}

static int draw_memory(dw *w, ss_err *err)
{
    if (!w->r->ranks || w->r->nranks == 0) return SS_OK;
    const mem_rank *m = &w->r->ranks[0].mem;
    ss_ns span_ns = w->g.t_hi - w->g.t_lo;
    size_t nb = span_ns < MEM_BARS ? (size_t)span_ns : MEM_BARS;
    ss_bytes *v = calloc(nb, sizeof *v);
    if (!v) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    mem_fill(&w->g, m, v, nb);
    ss_bytes top = m->peak;
    for (size_t k = 0; k < nb; k++)
        if (v[k] > top) top = v[k];
    char lab[64];
    snprintf(lab, sizeof lab, "rank 0 memory, %.0f MiB", mib(top));
    text(w, w->g.left / 2, w->g.y_mem + 6.0, w->g.left - 8.0, lab, J_RIGHT, 8);
    mem_bars(w, v, nb, top);
    free(v);
    mem_peak(w, m);
    return SS_OK;
}

/* ---- axis, legend, title ---- */

/* The smallest of 1, 2, 5 x 10^k ns that gives at most about ten ticks. */
static ss_ns nice_step(ss_ns span_ns)
{
    ss_ns raw = span_ns / 10 ? span_ns / 10 : 1, mag = 1;
    while (mag <= raw / 10) mag *= 10;
    if (mag >= raw) return mag;
    return 2 * mag >= raw ? 2 * mag : 5 * mag >= raw ? 5 * mag : 10 * mag;
}

static void draw_axis(dw *w)
{
    const geo *g = &w->g;
    ss_ns step = nice_step(g->t_hi - g->t_lo);
    int dec = 0;
    for (ss_ns s = step; s < 1000000 && dec < 6; s *= 10) dec++;
    box(w, NULL, g->left + g->plot_w / 2, g->y_axis, g->plot_w, 0.75, INK, "time");
    text(w, g->left / 2, g->y_axis + 14.0, g->left - 8.0, "time (ms)", J_RIGHT, 9);
    char lab[32];
    for (ss_ns t = ss_div_ceil(g->t_lo, step) * step; t <= g->t_hi; t += step) {
        snprintf(lab, sizeof lab, "%.*f", dec, ms(t));
        box(w, NULL, xat(g, t), g->y_axis + 3.0, 0.75, 6.0, INK, lab);
        text(w, xat(g, t), g->y_axis + 14.0, 60.0, lab, J_CENTER, 9);
    }
}

static void draw_legend(dw *w)
{
    int cols = leg_cols(&w->g);
    for (int i = 0; i < SW_N; i++) {
        double x = 10.0 + (i % cols) * LEG_COL_PT;
        double y = w->g.y_leg + (i / cols) * LEG_PITCH + LEG_PITCH / 2;
        box(w, NULL, x + 5.0, y, 10.0, 10.0, swatches[i].fill, swatches[i].label);
        text(w, x + 14.0 + (LEG_COL_PT - 18.0) / 2, y, LEG_COL_PT - 18.0, swatches[i].label,
             J_LEFT, 9);
    }
}

static void draw_title(dw *w)
{
    const spec_scenario *s = w->r->s;
    const char *strat = s && s->shard.strategy < SPEC_NSTRATEGIES
                            ? spec_strategy_names[s->shard.strategy] : "?";
    char lab[320];
    snprintf(lab, sizeof lab, "%s  |  %s  |  %u ranks  |  step %.3f ms", s ? s->name : "?",
             strat, w->r->nranks, ms(w->r->step_ns));
    text(w, w->g.width / 2, TOP_PT + TITLE_PT / 2, w->g.width - 20.0, lab, J_CENTER, 14);
}

static int draw(dw *w, ss_err *err)
{
    fprintf(w->f, "digraph shardsim {\n"
                  "  graph [bgcolor=\"white\", pad=\"0.2\"];\n"
                  "  node [shape=box, fixedsize=true, style=filled, penwidth=0, label=\"\", "
                  "fontname=\"Helvetica\", fontsize=9, fontcolor=\"%s\"];\n",
            INK);
    draw_title(w);
    for (uint32_t i = 0; i < w->nlanes; i++) draw_lane(w, i);
    int rc = draw_exposed(w, err);
    if (!rc) rc = draw_memory(w, err);
    if (rc) return rc;
    draw_axis(w);
    draw_legend(w);
    fputs("}\n", w->f);
    return SS_OK;
}

int dot_write(const sum_report *r, const trc *t, const dot_opts *o, FILE *f, ss_err *err)
{
    const dot_opts all = {0, UINT32_MAX, 0, 0, 16.0};
    dw w = {.f = f, .r = r, .t = t};
    int rc = geo_init(&w.g, t, o ? o : &all, err);
    if (!rc) rc = lanes_find(&w, err);
    if (!rc) rc = draw(&w, err);
    free(w.lanes);
    if (!rc && (fflush(f) != 0 || ferror(f)))
        rc = ss_fail(err, SS_E_IO, NULL, "writing the DOT drawing failed");
    return rc;
}
