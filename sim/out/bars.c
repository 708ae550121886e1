/* A sweep's points as bars on one time scale. bars.h states the contract. */
#include "bars.h"

#include <math.h>
#include <string.h>

#include "label.h"

#define TOP_PT 10.0
#define TITLE_PT 24.0
#define AXIS_PT 24.0
#define ROW_PITCH 20.0
#define BAR_H 14.0
#define STEP_TEXT_PT 150.0 /* room after the longest bar for its figure */
#define LEG_PT 22.0
#define BOTTOM_PT 8.0
#define INK "#424242"

typedef struct part {
    const char *name, *fill;
} part;

static const part parts[3] = {
    {"compute (rank 0 busy)", "#2e7d32"},
    {"exposed communication", "#e53935"},
    {"rest of the step (idle: bubble, host, waits)", "#bdbdbd"},
};

typedef struct geo {
    double left, plot_w, pps; /* plot area from left, points per second */
    double y_top, y_rows, y_bottom, height;
    double max_s;
} geo;

/* s with &, <, >, " and ' as XML entities, control characters as spaces. */
static void xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
        }
    }
}

static void text(FILE *f, double x, double y, const char *anchor, double size, const char *fill,
                 const char *s)
{
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" font-size=\"%.0f\" fill=\"%s\">", x,
            y, anchor, size, fill);
    xml(f, s);
    fputs("</text>\n", f);
}

static void rect(FILE *f, double x, double y, double w, double h, const char *fill,
                 const char *tip)
{
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">", x, y, w,
            h, fill);
    if (tip) {
        fputs("<title>", f);
        xml(f, tip);
        fputs("</title>", f);
    }
    fputs("</rect>\n", f);
}

static int geo_init(geo *g, const bars_row *rows, size_t n)
{
    double widest = 0;
    g->max_s = 0;
    for (size_t i = 0; i < n; i++) {
        double w = lbl_width(lbl_chars(rows[i].label), BARS_FONT);
        if (w > widest) widest = w;
        if (rows[i].ok && rows[i].step_s > g->max_s) g->max_s = rows[i].step_s;
    }
    g->left = 8.0 + (widest < BARS_LABEL_MAX_PT ? widest : BARS_LABEL_MAX_PT) + 6.0;
    g->plot_w = BARS_WIDTH_PT - g->left - STEP_TEXT_PT;
    g->pps = g->max_s > 0 ? g->plot_w / g->max_s : 0;
    g->y_top = TOP_PT + TITLE_PT + AXIS_PT - 6.0;
    g->y_rows = g->y_top + 6.0;
    g->y_bottom = g->y_rows + (double)n * ROW_PITCH + 4.0;
    g->height = g->y_bottom + AXIS_PT + LEG_PT + BOTTOM_PT;
    return SS_OK;
}

/* The smallest of 1, 2, 5 x 10^k seconds that gives at most ten ticks. */
static double nice_step(double span)
{
    double mag = pow(10.0, floor(log10(span / 10.0)));
    static const double m[] = {1, 2, 5};
    for (int i = 0; i < 3; i++)
        if (span / (m[i] * mag) <= 10.0 + 1e-9) return m[i] * mag;
    return 10.0 * mag;
}

/* A time axis as a line at y, its labels above it (top) or below. */
static void axis(FILE *f, const geo *g, double y, bool top, const char *id)
{
    fprintf(f, "<g id=\"%s\">\n", id);
    rect(f, g->left, y - 0.375, g->plot_w, 0.75, INK, "time");
    double ly = top ? y - 6.0 : y + 14.0;
    text(f, g->left - 6.0, ly, "end", BARS_FONT, INK, "time (ms)");
    if (g->max_s > 0) {
        double step = nice_step(g->max_s);
        int dec = 0;
        for (double s = step * 1e3; s < 1.0 - 1e-9 && dec < 6; s *= 10) dec++;
        char lab[32];
        for (int i = 0; i * step <= g->max_s * (1 + 1e-12); i++) {
            double x = g->left + i * step * g->pps;
            snprintf(lab, sizeof lab, "%.*f", dec, i * step * 1e3);
            rect(f, x - 0.375, top ? y - 3.0 : y, 0.75, 3.0, INK, NULL);
            text(f, x, ly, "middle", BARS_FONT, INK, lab);
        }
    }
    fputs("</g>\n", f);
}

/* Row i: label, the three parts, the step; or why it has no figures. */
static void row(FILE *f, const geo *g, const bars_row *r, size_t i)
{
    double y = g->y_rows + (double)i * ROW_PITCH, mid = y + ROW_PITCH / 2 + 3.0;
    char lab[1024], tip[512];
    fprintf(f, "<g id=\"point_%zu\">\n<title>", i);
    xml(f, r->label);
    fputs("</title>\n", f);
    lbl_fit(lab, sizeof lab, r->label, g->left - 8.0, BARS_FONT);
    text(f, g->left - 6.0, mid, "end", BARS_FONT, INK, lab);
    if (!r->ok) {
        lbl_fit(lab, sizeof lab, r->why ? r->why : "no figures", g->plot_w + STEP_TEXT_PT, BARS_FONT);
        text(f, g->left + 2.0, mid, "start", BARS_FONT, "#9e9e9e", lab);
        fputs("</g>\n", f);
        return;
    }
    double step = r->step_s, c = r->compute_s < step ? r->compute_s : step;
    double e = r->exposed_s < step - c ? r->exposed_s : step - c;
    double v[3] = {c, e, step - c - e}, x = g->left;
    for (int k = 0; k < 3; k++) {
        double w = v[k] * g->pps;
        snprintf(tip, sizeof tip, "%s: %s %.3f ms of %.3f ms (%.1f%%)", r->label, parts[k].name,
                 v[k] * 1e3, step * 1e3, step > 0 ? 100.0 * v[k] / step : 0.0);
        if (w > 0) rect(f, x, y + (ROW_PITCH - BAR_H) / 2, w, BAR_H, parts[k].fill, tip);
        x += w;
    }
    snprintf(lab, sizeof lab, "%.3f ms%s", step * 1e3, r->fits ? "" : ", does not fit");
    text(f, x + 4.0, mid, "start", BARS_FONT, r->fits ? INK : "#c62828", lab);
    fputs("</g>\n", f);
}

static void legend(FILE *f, const geo *g)
{
    double x = g->left, y = g->y_bottom + AXIS_PT + LEG_PT / 2;
    for (int k = 0; k < 3; k++) {
        rect(f, x, y - 5.0, 10.0, 10.0, parts[k].fill, NULL);
        text(f, x + 14.0, y + 3.0, "start", BARS_FONT, INK, parts[k].name);
        x += 14.0 + lbl_width(lbl_chars(parts[k].name), BARS_FONT) + 16.0;
    }
}

int bars_write(const char *title, const bars_row *rows, size_t n, FILE *f, ss_err *err)
{
    if (!n) return ss_fail(err, SS_E_INPUT, NULL, "no points to draw");
    geo g;
    geo_init(&g, rows, n);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0fpt\" height=\"%.0fpt\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica,Arial,sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            BARS_WIDTH_PT, ceil(g.height), BARS_WIDTH_PT, ceil(g.height));
    char t[1024];
    lbl_fit(t, sizeof t, title ? title : "", BARS_WIDTH_PT - 20.0, 14.0);
    text(f, BARS_WIDTH_PT / 2, TOP_PT + 16.0, "middle", 14.0, INK, t);
    axis(f, &g, g.y_top, true, "axis_top");
    for (size_t i = 0; i < n; i++) row(f, &g, &rows[i], i);
    axis(f, &g, g.y_bottom, false, "axis_bottom");
    legend(f, &g);
    fputs("</svg>\n", f);
    if (fflush(f) != 0 || ferror(f))
        return ss_fail(err, SS_E_IO, NULL, "writing the sweep drawing failed");
    return SS_OK;
}
