/* What the Trace Event Format writers share. tef.h states the contract. */
#include "tef.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "../core/vec.h"

static double us(ss_ns t) { return (double)t / 1000.0; }

/* A number as cJSON 1.7's printer writes it: an integer when the value
 * equals its int conversion (saturated at INT_MIN/INT_MAX), else the
 * shortest of %.15g and %.17g that reads back as the same double. */
void tef_num(FILE *f, double d)
{
    if (d == floor(d) && fabs(d) < 1e15) { /* both of cJSON's forms give the digits */
        fprintf(f, "%lld", (long long)d);
        return;
    }
    int vi = d >= (double)INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    if (isnan(d) || isinf(d)) {
        fputs("null", f);
    } else if (d == (double)vi) {
        fprintf(f, "%d", vi);
    } else {
        char buf[32];
        double back = 0;
        snprintf(buf, sizeof buf, "%1.15g", d);
        double m = fabs(d);
        if (sscanf(buf, "%lg", &back) != 1 || fabs(back - d) > (fabs(back) > m ? fabs(back) : m) * DBL_EPSILON)
            snprintf(buf, sizeof buf, "%1.17g", d);
        fputs(buf, f);
    }
}

/* us(t) as tef_num prints it, from the integer: the exact decimal t / 1000
 * has at most 15 significant digits below 10^15 ns, so it is what %.15g
 * prints of the double nearest to it (DBL_DIG), trailing zeros trimmed;
 * printing from the integer skips the float formatting, which was most of
 * the time of writing a large trace. */
void tef_us(FILE *f, ss_ns t)
{
    if (t >= 1000000000000000ull) {
        tef_num(f, us(t));
        return;
    }
    char buf[32], *p = buf + sizeof buf;
    unsigned frac = (unsigned)(t % 1000), digits = 3;
    while (frac && frac % 10 == 0) frac /= 10, digits--;
    if (frac) {
        for (unsigned i = 0; i < digits; i++, frac /= 10) *--p = (char)('0' + frac % 10);
        *--p = '.';
    }
    uint64_t whole = t / 1000;
    do *--p = (char)('0' + whole % 10); while (whole /= 10);
    fwrite(p, 1, (size_t)(buf + sizeof buf - p), f);
}

/* A string as cJSON escapes it: quote, backslash and the named control
 * characters by name, other bytes below 32 as \u00XX, the rest as is. */
void tef_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 32) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* ,"key":value  (sep is ',' or '{' for an object's first member) */
void tef_kv_str(FILE *f, char sep, const char *k, const char *v)
{
    fputc(sep, f);
    tef_str(f, k);
    fputc(':', f);
    tef_str(f, v);
}

void tef_kv_num(FILE *f, char sep, const char *k, double v)
{
    fputc(sep, f);
    tef_str(f, k);
    fputc(':', f);
    tef_num(f, v);
}

void tef_kv_us(FILE *f, char sep, const char *k, ss_ns t)
{
    fputc(sep, f);
    tef_str(f, k);
    fputc(':', f);
    tef_us(f, t);
}

int tef_lanes_rank(tef_lanes *l, const trc *t, uint32_t r, ss_err *err)
{
    uint32_t n = prog_nops(t->p, r);
    if (!ss_grow((void **)&l->lane, &l->cap, n, sizeof *l->lane))
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory dealing a trace's ops to lanes");
    const prog_op *ops = prog_ops(t->p, r);
    for (uint32_t s = 0; s < PROG_NSTREAMS; s++) {
        uint32_t nl = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (ops[i].stream != s) continue;
            const trc_op *x = &t->ops[r][i];
            uint32_t k = 0;
            while (k < nl && l->end[k] > x->start) k++;
            if (k == nl && !ss_grow((void **)&l->end, &l->capend, ++nl, sizeof *l->end))
                return ss_fail(err, SS_E_NOMEM, NULL, "out of memory dealing a trace's ops to lanes");
            l->end[k] = x->end;
            l->lane[i] = k;
        }
        l->nlanes[s] = nl;
    }
    return SS_OK;
}

void tef_lanes_fini(tef_lanes *l)
{
    free(l->lane);
    free(l->end);
    *l = (tef_lanes){0};
}
