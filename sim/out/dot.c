#include "dot.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/utf8.h"
#include "label.h"
#include "span.h"

/* ---- layout (points; rows are placed from the top edge down) ---- */

#define TOP_PT 10.0
#define TITLE_PT 26.0
#define HEAD_PT 14.0  /* a group's heading row */
#define LANE_H 16.0
#define LANE_PITCH 18.0
#define GAP_PT 8.0
#define EXP_H 10.0
#define EXP_PITCH 12.0
#define MEM_PT 60.0
#define AXIS_PT 28.0
#define OP_FONT 7.0   /* op labels; their width follows label.h */
#define LEG_PITCH 16.0
#define LEG_COL_PT 130.0
#define BOTTOM_PT 10.0
#define MEM_BARS 300 /* at most this many memory bars over the window */

typedef struct geo {
    ss_ns t_lo, t_hi;
    double ppn;                  /* points per ns */
    double left, plot_w, width;  /* plot area [left, left + plot_w] */
    double height;               /* of the whole drawing */
    double y_top, y_lanes, y_mem, y_axis, y_leg; /* row tops */
    uint32_t rank_lo, rank_hi;   /* clamped to the trace */
    bool every_rank;             /* a block per rank, no headings */
    ss_bytes mem_top;            /* asked for: the memory band's least full height */
} geo;

/* The ranks drawn as one: the lowest is drawn, the others share its block. */
typedef struct group {
    uint32_t rep, n;
    uint64_t hash;
    double y, y_exp; /* tops of its block and of its exposed row */
} group;

typedef struct lane {
    uint32_t group;
    uint8_t stream;
    double y; /* top */
} lane;

typedef struct dw {
    FILE *f;
    const sum_report *r;
    const trc *t;
    geo g;
    group *groups;
    uint32_t ngroups;
    uint32_t *gof; /* gof[rank - rank_lo]: its group */
    lane *lanes;
    uint32_t nlanes;
    uint32_t nid; /* anonymous node names, in drawing order */
} dw;

#define PEAK_FILL "#d50000"
#define INK "#424242"

typedef struct swatch {
    const char *label, *fill, *ink; /* ink: of a label on the fill */
} swatch;

enum { SW_FWD, SW_BWD, SW_OPT, SW_OTHER, SW_AG, SW_RS, SW_AR, SW_BC, SW_A2A, SW_HOST,
       SW_EXPOSED, SW_MEM, SW_N };

static const swatch swatches[SW_N] = {
    {"forward", "#81c784", INK},        {"backward", "#2e7d32", "#ffffff"},
    {"optimizer", "#1e88e5", "#ffffff"}, {"compute (other)", "#80cbc4", INK},
    {"all_gather", "#ffa726", INK},     {"reduce_scatter", "#ab47bc", "#ffffff"},
    {"all_reduce", "#8d6e63", "#ffffff"}, {"broadcast", "#fdd835", INK},
    {"all_to_all", "#26c6da", INK},     {"host", "#bdbdbd", INK},
    {"exposed communication", "#e53935", "#ffffff"}, {"allocated, rank 0", "#5c6bc0", "#ffffff"},
};

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
    ss_utf8_trim(out);
}

/* A filled box centred at (x, y) with y from the top edge: Graphviz's y
 * grows upward, so it is flipped here and nowhere else. id NULL: anonymous.
 * label (NULL: none) is drawn inside at OP_FONT in ink; the caller fits it. */
static void box_label(dw *w, const char *id, double x, double y, double wpt, double hpt,
                      const char *fill, const char *tip, const char *label, const char *ink)
{
    char anon[24], e[1024];
    if (!id) {
        snprintf(anon, sizeof anon, "n%u", w->nid++);
        id = anon;
    }
    esc(e, sizeof e, tip);
    fprintf(w->f, "  %s [pos=\"%.2f,%.2f!\", width=%.5f, height=%.5f, fillcolor=\"%s\", "
                  "tooltip=\"%s\"",
            id, x, w->g.height - y, wpt / 72.0, hpt / 72.0, fill, e);
    if (label && *label) {
        esc(e, sizeof e, label);
        fprintf(w->f, ", label=\"%s\", fontsize=%.0f, fontcolor=\"%s\"", e, OP_FONT, ink);
    }
    fputs("];\n", w->f);
}

static void box(dw *w, const char *id, double x, double y, double wpt, double hpt,
                const char *fill, const char *tip)
{
    box_label(w, id, x, y, wpt, hpt, fill, tip, NULL, NULL);
}

typedef enum { J_LEFT, J_CENTER, J_RIGHT } just;

/* Text in a transparent box of width wpt centred at (x, y); DOT's \l and
 * \r end a line flush left or right inside the box. id NULL: anonymous;
 * tip NULL: none. */
static void text_tip(dw *w, const char *id, double x, double y, double wpt, const char *s,
                     just j, int size, const char *tip)
{
    static const char *const term[] = {"\\l", "", "\\r"};
    char e[1024], anon[24];
    if (!id) {
        snprintf(anon, sizeof anon, "t%u", w->nid++);
        id = anon;
    }
    esc(e, sizeof e, s);
    fprintf(w->f, "  %s [pos=\"%.2f,%.2f!\", width=%.5f, height=%.5f, label=\"%s%s\", "
                  "fontsize=%d, fillcolor=\"#ffffff00\"",
            id, x, w->g.height - y, wpt / 72.0, (size + 4) / 72.0, e, term[j], size);
    if (tip) {
        esc(e, sizeof e, tip);
        fprintf(w->f, ", tooltip=\"%s\"", e);
    }
    fputs("];\n", w->f);
}

static void text(dw *w, double x, double y, double wpt, const char *s, just j, int size)
{
    text_tip(w, NULL, x, y, wpt, s, j, size, NULL);
}

static double xat(const geo *g, ss_ns t) { return g->left + (double)(t - g->t_lo) * g->ppn; }

/* [a, b) clipped to the window: its left edge and width in points, at
 * least DOT_MIN_W_PT wide. */
static double span_w(const geo *g, ss_ns *a, ss_ns b)
{
    if (*a < g->t_lo) *a = g->t_lo;
    if (b > g->t_hi) b = g->t_hi;
    if (b < *a) b = *a;
    double wpt = (double)(b - *a) * g->ppn;
    return wpt < DOT_MIN_W_PT ? DOT_MIN_W_PT : wpt;
}

/* A box over [a, b) clipped to the window. */
static void span_box(dw *w, const char *id, ss_ns a, ss_ns b, double y, double h,
                     const char *fill, const char *tip)
{
    double wpt = span_w(&w->g, &a, b);
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
               .rank_hi = o->rank_hi < t->nranks ? o->rank_hi : t->nranks - 1,
               .every_rank = o->every_rank, .mem_top = o->mem_top};
    g->ppn = plot / (double)(hi - o->t_lo);
    return SS_OK;
}

static int leg_cols(const geo *g)
{
    int c = (int)((g->width - 20.0) / LEG_COL_PT);
    return c > 0 ? c : 1;
}

/* Rows from the top: title, time axis, each group's block (a heading
 * unless every rank is drawn, its lanes, its exposed row), memory band,
 * time axis, legend. Sets each group's and lane's y. */
static void geo_rows(dw *w)
{
    geo *g = &w->g;
    int cols = leg_cols(g);
    g->y_top = TOP_PT + TITLE_PT + AXIS_PT / 2;
    double y = g->y_lanes = g->y_top + GAP_PT;
    uint32_t li = 0;
    for (uint32_t k = 0; k < w->ngroups; k++) {
        w->groups[k].y = y;
        if (!g->every_rank) y += HEAD_PT;
        for (; li < w->nlanes && w->lanes[li].group == k; li++) {
            w->lanes[li].y = y;
            y += LANE_PITCH;
        }
        w->groups[k].y_exp = y;
        y += EXP_PITCH + GAP_PT;
    }
    g->y_mem = y;
    g->y_axis = g->y_mem + MEM_PT + 4.0;
    g->y_leg = g->y_axis + AXIS_PT;
    g->height = g->y_leg + ((SW_N + cols - 1) / cols) * LEG_PITCH + BOTTOM_PT;
}

/* ---- groups of identical ranks ---- */

/* Two ranks are drawn as one when the drawing would show them the same:
 * as many ops, and op by op the same name, kind, collective, phase,
 * stream and bytes (the box's colour, lane and tooltip) and the same start
 * and end in ns (its place). Exposed communication follows from these. */
static bool same_op(const prog_op *a, const prog_op *b, const trc_op *x, const trc_op *y)
{
    return a->name == b->name && a->kind == b->kind && a->coll == b->coll &&
           a->phase == b->phase && a->stream == b->stream && a->bytes == b->bytes &&
           x->start == y->start && x->end == y->end;
}

static bool same_rank(const trc *t, uint32_t a, uint32_t b)
{
    uint32_t n = prog_nops(t->p, a);
    if (prog_nops(t->p, b) != n) return false;
    const prog_op *pa = prog_ops(t->p, a), *pb = prog_ops(t->p, b);
    for (uint32_t i = 0; i < n; i++)
        if (!same_op(&pa[i], &pb[i], &t->ops[a][i], &t->ops[b][i])) return false;
    return true;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8) h = (h ^ (v & 0xffu)) * 0x100000001b3ull;
    return h;
}

/* A hash of what same_rank compares: ranks that differ in it rarely
 * collide, and a collision costs one full comparison. */
static uint64_t rank_hash(const trc *t, uint32_t k)
{
    uint32_t n = prog_nops(t->p, k);
    const prog_op *ops = prog_ops(t->p, k);
    uint64_t h = fnv(0xcbf29ce484222325ull, n);
    for (uint32_t i = 0; i < n; i++) {
        const prog_op *o = &ops[i];
        h = fnv(h, (uint64_t)o->name << 32 | (uint64_t)o->kind << 24 | (uint64_t)o->coll << 16 |
                       (uint64_t)o->phase << 8 | o->stream);
        h = fnv(fnv(fnv(h, o->bytes), t->ops[k][i].start), t->ops[k][i].end);
    }
    return h;
}

/* Each rank of the range into the first group (in rank order) whose
 * lowest rank it equals, or a new one; with every_rank, one group each. */
static int groups_find(dw *w, ss_err *err)
{
    uint32_t n = w->g.rank_hi - w->g.rank_lo + 1;
    w->groups = malloc((size_t)n * sizeof *w->groups);
    w->gof = malloc((size_t)n * sizeof *w->gof);
    if (!w->groups || !w->gof) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t k = w->g.rank_lo; k <= w->g.rank_hi; k++) {
        uint64_t h = w->g.every_rank ? 0 : rank_hash(w->t, k);
        uint32_t g = w->ngroups;
        for (uint32_t i = 0; !w->g.every_rank && i < w->ngroups && g == w->ngroups; i++)
            if (w->groups[i].hash == h && same_rank(w->t, w->groups[i].rep, k)) g = i;
        if (g == w->ngroups) w->groups[w->ngroups++] = (group){.rep = k, .hash = h};
        w->groups[g].n++;
        w->gof[k - w->g.rank_lo] = g;
    }
    return SS_OK;
}

/* "rank 5", or "ranks 0-3,8-11 (8 identical)": the members as runs of
 * consecutive ranks, named by world rank (a program folded along tp and
 * cp holds every stride-th: no runs then); runs that do not fit in out
 * end in ",…". */
static void group_label(const dw *w, uint32_t k, char *out, size_t n)
{
    const group *gr = &w->groups[k];
    const prog *p = w->t->p;
    if (gr->n == 1) {
        snprintf(out, n, "rank %u", prog_rank_world(p, gr->rep));
        return;
    }
    uint32_t lo = w->g.rank_lo, hi = w->g.rank_hi;
    bool runs = prog_stride(p) == 1;
    size_t u = (size_t)snprintf(out, n, "ranks ");
    for (uint32_t r = gr->rep; r <= hi; r++) {
        if (w->gof[r - lo] != k) continue;
        uint32_t e = r;
        while (runs && e < hi && w->gof[e + 1 - lo] == k) e++;
        if (u + 64 > n) {
            u += (size_t)snprintf(out + u, n - u, ",\xe2\x80\xa6");
            break;
        }
        u += (size_t)snprintf(out + u, n - u, e > r ? "%s%u-%u" : "%s%u", r > gr->rep ? "," : "",
                              prog_rank_world(p, r), prog_rank_world(p, e));
        r = e;
    }
    snprintf(out + u, n - u, " (%u identical)", gr->n);
}

/* The heading of group k: its members, and for a folded step (fewer
 * ranks simulated than reported) the ranks its simulation stands for. */
static void heading(const dw *w, uint32_t k, char *out, size_t n)
{
    group_label(w, k, out, n);
    size_t u = strlen(out);
    if (w->r->nranks > w->t->nranks && u + 1 < n)
        snprintf(out + u, n - u, "; the step is folded: %u of its %u ranks simulated",
                 w->t->nranks, w->r->nranks);
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
    int rc = groups_find(w, err);
    if (rc) return rc;
    w->lanes = malloc((size_t)w->ngroups * PROG_NSTREAMS * sizeof *w->lanes);
    if (!w->lanes) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t g = 0; g < w->ngroups; g++) {
        uint32_t k = w->groups[g].rep;
        bool used[PROG_NSTREAMS] = {false};
        const prog_op *ops = prog_ops(w->t->p, k);
        for (uint32_t i = 0; i < prog_nops(w->t->p, k); i++)
            if (ops[i].stream < PROG_NSTREAMS && op_drawn(w, k, i)) used[ops[i].stream] = true;
        for (int s = 0; s < PROG_NSTREAMS; s++)
            if (used[s]) w->lanes[w->nlanes++] = (lane){.group = g, .stream = (uint8_t)s};
    }
    geo_rows(w);
    return SS_OK;
}

/* The name as its box shows it: the runtime's prefix dropped (the title
 * names the runtime), then the long words abbreviated (dot.h). */
static void short_name(char *out, size_t n, const char *name)
{
    static const char *const drop[] = {"fsdp.", "ds.", "ddp.", "zero."};
    static const struct {
        const char *from, *to;
    } abbrev[] = {{"all_gather", "AG"}, {"reduce_scatter", "RS"}, {"all_reduce", "AR"},
                  {"all_to_all", "A2A"}, {"layers.", "L"}};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++)
        if (!strncmp(name, drop[i], strlen(drop[i]))) {
            name += strlen(drop[i]);
            break;
        }
    size_t k = 0;
    while (*name && k + 4 < n) {
        size_t j = 0, m = sizeof abbrev / sizeof *abbrev;
        while (j < m && strncmp(name, abbrev[j].from, strlen(abbrev[j].from))) j++;
        if (j == m) {
            out[k++] = *name++;
            continue;
        }
        k += (size_t)snprintf(out + k, n - k, "%s", abbrev[j].to);
        name += strlen(abbrev[j].from);
    }
    out[k < n ? k : n - 1] = '\0';
    ss_utf8_trim(out);
}

static void draw_op(dw *w, uint32_t rank, uint32_t i, double y)
{
    const prog_op *op = &prog_ops(w->t->p, rank)[i];
    const trc_op *x = &w->t->ops[rank][i];
    const char *name = prog_str_get(w->t->p, op->name);
    char id[48], tip[640], shrt[160], lab[200];
    snprintf(id, sizeof id, "op_%u_%u", rank, i);
    int n = snprintf(tip, sizeof tip, "%s\nstart %.3f ms, end %.3f ms", name, ms(x->start),
                     ms(x->end));
    if (op->kind == PROG_OP_COLL && n > 0 && (size_t)n < sizeof tip)
        snprintf(tip + n, sizeof tip - (size_t)n, "\n%s, %llu bytes (%.2f MiB)",
                 prog_coll_name((prog_coll)op->coll), (unsigned long long)op->bytes,
                 mib(op->bytes));
    ss_ns a = x->start;
    double wpt = span_w(&w->g, &a, x->end);
    short_name(shrt, sizeof shrt, name);
    lbl_fit(lab, sizeof lab, shrt, wpt, OP_FONT);
    const swatch *sw = &swatches[op_swatch(op)];
    box_label(w, id, xat(&w->g, a) + wpt / 2, y, wpt, LANE_H, sw->fill, tip, lab, sw->ink);
}

static void draw_lane(dw *w, uint32_t li)
{
    const lane *l = &w->lanes[li];
    uint32_t rank = w->groups[l->group].rep;
    double y = l->y + LANE_H / 2;
    char lab[64];
    const char *s = prog_stream_name((prog_stream)l->stream);
    if (w->g.every_rank) snprintf(lab, sizeof lab, "rank %u %s", prog_rank_world(w->t->p, rank), s);
    else snprintf(lab, sizeof lab, "%s", s);
    text(w, w->g.left / 2, y, w->g.left - 8.0, lab, J_RIGHT, 9);
    const prog_op *ops = prog_ops(w->t->p, rank);
    for (uint32_t i = 0; i < prog_nops(w->t->p, rank); i++)
        if (ops[i].stream == l->stream && op_drawn(w, rank, i)) draw_op(w, rank, i, y);
}

/* ---- exposed communication: collective time not covered by compute ---- */

/* buf: room for 4 * nops spans of this rank. */
static void draw_exposed_rank(dw *w, const group *gr, span *buf)
{
    uint32_t k = gr->rep;
    size_t n = prog_nops(w->t->p, k);
    size_t nc = span_rank(w->t, k, SPAN_COMPUTE, buf);
    size_t nm = span_rank(w->t, k, SPAN_COMM, buf + n);
    size_t ne = span_minus(buf + n, nm, buf, nc, buf + 2 * n);
    double y = gr->y_exp + EXP_H / 2;
    char lab[64], id[48], tip[160];
    uint32_t world = prog_rank_world(w->t->p, k);
    if (w->g.every_rank) snprintf(lab, sizeof lab, "rank %u exposed comm", world);
    else snprintf(lab, sizeof lab, "exposed comm");
    text(w, w->g.left / 2, y, w->g.left - 8.0, lab, J_RIGHT, 8);
    for (size_t i = 0, drawn = 0; i < ne; i++) {
        const span *s = &buf[2 * n + i];
        if (!in_window(&w->g, s->a, s->b)) continue;
        snprintf(id, sizeof id, "exp_%u_%zu", k, drawn++);
        snprintf(tip, sizeof tip, "rank %u exposed communication\n%.3f - %.3f ms (%.3f ms)", world,
                 ms(s->a), ms(s->b), ms(s->b - s->a));
        span_box(w, id, s->a, s->b, y, EXP_H, swatches[SW_EXPOSED].fill, tip);
    }
}

/* A group's heading, unless every rank is drawn: its members, fitted to
 * the drawing's width, the whole list as tooltip. */
static void draw_heading(dw *w, uint32_t k)
{
    if (w->g.every_rank) return;
    char full[1024], fit[1024], id[32];
    heading(w, k, full, sizeof full);
    double wpt = w->g.width - 8.0;
    lbl_fit(fit, sizeof fit, full, wpt, 9.0);
    snprintf(id, sizeof id, "group_%u", k);
    text_tip(w, id, 4.0 + wpt / 2, w->groups[k].y + HEAD_PT / 2, wpt, fit, J_LEFT, 9, full);
}

static int draw_groups(dw *w, ss_err *err)
{
    size_t most = 0;
    for (uint32_t g = 0; g < w->ngroups; g++)
        if (prog_nops(w->t->p, w->groups[g].rep) > most) most = prog_nops(w->t->p, w->groups[g].rep);
    span *buf = malloc((4 * most + 1) * sizeof *buf);
    if (!buf) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t g = 0, li = 0; g < w->ngroups; g++) {
        draw_heading(w, g);
        for (; li < w->nlanes && w->lanes[li].group == g; li++) draw_lane(w, li);
        draw_exposed_rank(w, &w->groups[g], buf);
    }
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

/* The smallest of 1, 2, 5 x 10^k GiB that gives at most MEM_TICKS steps up to top. */
#define MEM_TICKS 4
static double gib_step(double top)
{
    double mag = pow(10.0, floor(log10(top / MEM_TICKS)));
    static const double m[] = {1, 2, 5, 10};
    for (int i = 0; i < 3; i++)
        if (top / (m[i] * mag) <= MEM_TICKS) return m[i] * mag;
    return m[3] * mag;
}

/* The band's vertical axis: a line its full height (tooltip: the scale),
 * a tick and a label at each step of GiB. */
static void mem_axis(dw *w, ss_bytes top)
{
    const geo *g = &w->g;
    double x = g->left - 2.0, gib = (double)top / (double)(1024 * SS_MIB);
    char tip[160], lab[32];
    snprintf(tip, sizeof tip, "memory scale: 0 to %.3f GiB (%llu bytes) over the band's height",
             gib, (unsigned long long)top);
    box(w, "mem_scale", x, g->y_mem + MEM_PT / 2, 0.75, MEM_PT, INK, tip);
    if (!(gib > 0)) return;
    double step = gib_step(gib);
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    for (int i = 0; i * step <= gib * (1 + 1e-12); i++) {
        double y = g->y_mem + MEM_PT - i * step / gib * MEM_PT;
        snprintf(lab, sizeof lab, "%.*f GiB", dec, i * step);
        box(w, NULL, x - 2.0, y, 4.0, 0.75, INK, lab);
        text(w, x - 4.0 - 20.0, y, 40.0, lab, J_RIGHT, 7);
    }
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
    ss_bytes top = m->peak > w->g.mem_top ? m->peak : w->g.mem_top;
    for (size_t k = 0; k < nb; k++)
        if (v[k] > top) top = v[k];
    text(w, 4.0 + 40.0, w->g.y_mem + MEM_PT / 2, 80.0, "rank 0 allocated", J_LEFT, 8);
    mem_axis(w, top);
    mem_bars(w, v, nb, top);
    free(v);
    mem_peak(w, m);
    return SS_OK;
}

/* ---- axes, legend, title ---- */

/* The smallest of 1, 2, 5 x 10^k ns that gives at most about ten ticks. */
static ss_ns nice_step(ss_ns span_ns)
{
    ss_ns raw = span_ns / 10 ? span_ns / 10 : 1, mag = 1;
    while (mag <= raw / 10) mag *= 10;
    if (mag >= raw) return mag;
    return 2 * mag >= raw ? 2 * mag : 5 * mag >= raw ? 5 * mag : 10 * mag;
}

/* The time axis as a line at y: labels above it at the top of the
 * drawing, below it at the bottom. */
static void draw_axis(dw *w, double y, bool top)
{
    const geo *g = &w->g;
    ss_ns step = nice_step(g->t_hi - g->t_lo);
    int dec = 0;
    for (ss_ns s = step; s < 1000000 && dec < 6; s *= 10) dec++;
    double ly = top ? y - 10.0 : y + 14.0, ty = top ? y - 3.0 : y + 3.0;
    box(w, top ? "axis_top" : "axis_bottom", g->left + g->plot_w / 2, y, g->plot_w, 0.75, INK,
        "time");
    text(w, g->left / 2, ly, g->left - 8.0, "time (ms)", J_RIGHT, 9);
    char lab[32];
    for (ss_ns t = ss_div_ceil(g->t_lo, step) * step; t <= g->t_hi; t += step) {
        snprintf(lab, sizeof lab, "%.*f", dec, ms(t));
        box(w, NULL, xat(g, t), ty, 0.75, 6.0, INK, lab);
        text(w, xat(g, t), ly, 60.0, lab, J_CENTER, 9);
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
    draw_axis(w, w->g.y_top, true);
    int rc = draw_groups(w, err);
    if (!rc) rc = draw_memory(w, err);
    if (rc) return rc;
    draw_axis(w, w->g.y_axis, false);
    draw_legend(w);
    fputs("}\n", w->f);
    return SS_OK;
}

int dot_write(const sum_report *r, const trc *t, const dot_opts *o, FILE *f, ss_err *err)
{
    const dot_opts all = {0, UINT32_MAX, 0, 0, 16.0, false, 0};
    dw w = {.f = f, .r = r, .t = t};
    int rc = geo_init(&w.g, t, o ? o : &all, err);
    if (!rc) rc = lanes_find(&w, err);
    if (!rc) rc = draw(&w, err);
    free(w.lanes);
    free(w.groups);
    free(w.gof);
    if (!rc && (fflush(f) != 0 || ferror(f)))
        rc = ss_fail(err, SS_E_IO, NULL, "writing the DOT drawing failed");
    return rc;
}
