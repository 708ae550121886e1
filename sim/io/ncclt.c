/* ncclt.c - nccl-tests text output to tables (contract in ncclt.h). */
#include "ncclt.h"

#include "../core/utf8.h"

#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/vec.h"

#define NCCLT_NAME_(id, name) name,
const char *const ncclt_op_names[NCCLT_NOPS] = {NCCLT_OPS(NCCLT_NAME_)};
#undef NCCLT_NAME_

#define MAX_TOKENS 24

bool ncclt_op_from_name(const char *name, ncclt_op *out)
{
    for (int i = 0; i < NCCLT_NOPS; i++) {
        if (strcmp(name, ncclt_op_names[i]) == 0) {
            *out = (ncclt_op)i;
            return true;
        }
    }
    return false;
}

typedef struct tbl {
    ncclt_info info;
    bool has_root;
    ncclt_row *rows;
    uint32_t cap;
} tbl;

struct ncclt_log {
    tbl *t;
    uint32_t n, cap;
};

/* Where a table's op came from, weakest first. */
typedef enum { SRC_NONE, SRC_MENTION, SRC_AMBIG, SRC_HEADER } op_src;

/* What the lines since the last table said about the next one. The label
 * belongs to the "===== file:" marker and outlives a table; the rest is reset
 * when a table ends, because it describes one test run. */
typedef struct ctx {
    char *label;
    op_src src;
    ncclt_op op, other; /* other: the second op named, when ambiguous */
    uint32_t op_line;
    uint32_t nranks, nthreads, ngpus, nccl_version;
    uint32_t top; /* the highest rank number seen + 1 */
    char device[128];
    char **hosts;
    uint32_t nhosts, hcap;
} ctx;

typedef struct parser {
    const char *file;
    bool has_hint;
    ncclt_op hint;
    ctx c;
    ncclt_log *log;
    int64_t open; /* index of the table rows go to, or -1 */
    uint32_t line;
    ss_err *err;
} parser;

/* An input error at "file:line". */
static int fail_at(parser *p, uint32_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_at(parser *p, uint32_t line, const char *fmt, ...)
{
    char where[1200], msg[512];
    snprintf(where, sizeof where, "%s:%u", p->file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ss_fail(p->err, SS_E_INPUT, where, "%s", msg);
}

static int nomem(parser *p) { return ss_fail(p->err, SS_E_NOMEM, p->file, "out of memory"); }

static void ctx_reset_run(ctx *c)
{
    for (uint32_t i = 0; i < c->nhosts; i++) free(c->hosts[i]);
    c->nhosts = 0;
    c->src = SRC_NONE;
    c->op_line = 0;
    c->nranks = c->nthreads = c->ngpus = c->nccl_version = c->top = 0;
    c->device[0] = '\0';
}

static void ctx_fini(ctx *c)
{
    ctx_reset_run(c);
    free(c->hosts);
    free(c->label);
}

/* ---- comment lines ---- */

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static bool is_word_char(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* Record every "<op>_perf" the line names (not preceded by a word
 * character, so "reduce_perf" inside "all_reduce_perf" does not count). */
static void scan_mentions(ctx *c, const char *line, uint32_t lineno)
{
    if (c->src == SRC_HEADER) return;
    for (int i = 0; i < NCCLT_NOPS; i++) {
        char pat[32];
        snprintf(pat, sizeof pat, "%s_perf", ncclt_op_names[i]);
        for (const char *s = strstr(line, pat); s; s = strstr(s + 1, pat)) {
            if (s > line && is_word_char(s[-1])) continue;
            if (c->src == SRC_NONE) {
                c->src = SRC_MENTION;
                c->op = (ncclt_op)i;
                c->op_line = lineno;
            } else if (c->src == SRC_MENTION && c->op != (ncclt_op)i) {
                c->src = SRC_AMBIG;
                c->other = (ncclt_op)i;
            }
        }
    }
}

/* "# ===== file: NAME =====": a new file, so a new label and a fresh run. */
static int on_file_marker(parser *p, const char *name)
{
    ctx_reset_run(&p->c);
    free(p->c.label);
    p->c.label = NULL;
    name = skip_ws(name);
    size_t n = strlen(name);
    while (n && (name[n - 1] == '=' || name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
    if (!n) return SS_OK;
    p->c.label = malloc(n + 1);
    if (!p->c.label) return nomem(p);
    memcpy(p->c.label, name, n);
    p->c.label[n] = '\0';
    return SS_OK;
}

/* "# Collective test starting: all_gather_perf": the op, for certain. */
static int on_test_start(parser *p, const char *rest)
{
    char name[64] = "";
    sscanf(rest, "%63s", name);
    size_t n = strlen(name);
    if (n > 5 && strcmp(name + n - 5, "_perf") == 0) name[n - 5] = '\0';
    ncclt_op op;
    if (!ncclt_op_from_name(name, &op))
        return fail_at(p, p->line,
                       "unknown collective test \"%s\": expected all_reduce_perf, all_gather_perf, "
                       "reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf or "
                       "sendrecv_perf",
                       name);
    p->c.src = SRC_HEADER;
    p->c.op = op;
    p->c.op_line = p->line;
    return SS_OK;
}

static int add_host(parser *p, const char *host)
{
    for (uint32_t i = 0; i < p->c.nhosts; i++)
        if (strcmp(p->c.hosts[i], host) == 0) return SS_OK;
    if (!ss_grow((void **)&p->c.hosts, &p->c.hcap, p->c.nhosts + 1, sizeof *p->c.hosts))
        return nomem(p);
    size_t n = strlen(host);
    char *h = malloc(n + 1);
    if (!h) return nomem(p);
    memcpy(h, host, n + 1);
    p->c.hosts[p->c.nhosts++] = h;
    return SS_OK;
}

/* "#  Rank  3 Group  0 Pid 1595114 on HOST device  3 [0000:3b:00] NAME".
 * Older versions have no Group; so find " on " and "]" rather than match
 * the whole format. */
static int on_rank_line(parser *p, const char *line)
{
    p->c.nranks++;
    const char *r = strstr(line, "Rank");
    unsigned k;
    if (r && sscanf(r + 4, "%u", &k) == 1 && k < UINT32_MAX && k + 1 > p->c.top) p->c.top = k + 1;
    const char *on = strstr(line, " on ");
    if (on) {
        char host[256] = "";
        sscanf(on + 4, "%255s", host);
        if (host[0]) {
            int rc = add_host(p, host);
            if (rc) return rc;
        }
    }
    const char *br = strchr(line, ']');
    if (br && !p->c.device[0]) {
        ss_utf8_copy(p->c.device, sizeof p->c.device, skip_ws(br + 1));
        size_t n = strlen(p->c.device);
        while (n && isspace((unsigned char)p->c.device[n - 1])) p->c.device[--n] = '\0';
    }
    return SS_OK;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Any '#' line ends the table being read; some also describe the next. */
static int on_comment(parser *p, const char *line)
{
    p->open = -1;
    const char *s = skip_ws(line + 1);
    const char *m;
    if ((m = strstr(line, "===== file:")) != NULL) {
        int rc = on_file_marker(p, m + strlen("===== file:"));
        if (rc) return rc;
        scan_mentions(&p->c, line, p->line);
        return SS_OK;
    }
    if (starts_with(s, "Collective test starting:"))
        return on_test_start(p, s + strlen("Collective test starting:"));
    if (starts_with(s, "Collective test concluded:")) return SS_OK; /* names the last test */
    if (starts_with(s, "Rank ")) return on_rank_line(p, s);
    unsigned t, g;
    if (sscanf(s, "nThread %u nGpus %u", &t, &g) == 2) {
        p->c.nthreads = t;
        p->c.ngpus = g;
    }
    if ((m = strstr(s, "nccl-library=")) != NULL)
        p->c.nccl_version = (uint32_t)strtoul(m + strlen("nccl-library="), NULL, 10);
    scan_mentions(&p->c, line, p->line);
    return SS_OK;
}

/* ---- data rows ---- */

static bool all_digits(const char *s, size_t n)
{
    if (!n) return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return false;
    return true;
}

/* A data row starts with two unsigned integers (size, count); prose that
 * happens to do so is reported as a malformed row rather than skipped, so a
 * truncated table never passes silently. */
static bool looks_like_row(const char *s)
{
    for (int k = 0; k < 2; k++) {
        s = skip_ws(s);
        size_t n = strcspn(s, " \t");
        if (!all_digits(s, n)) return false;
        s += n;
    }
    return *s == ' ' || *s == '\t' || *s == '\0';
}

static size_t tokenize(char *s, char **tok)
{
    size_t n = 0;
    char *save = NULL;
    for (char *t = strtok_r(s, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (n < MAX_TOKENS) tok[n] = t;
        n++;
    }
    return n;
}

static const char *const col_names[] = {"time", "algbw", "busbw", "#wrong"};

/* "column 6 (out-of-place time): expected a non-negative number, found "x"". */
static int bad_col(parser *p, size_t col, const char *what, const char *group, const char *tok)
{
    const char *want = what == col_names[3]          ? "a count, N/A or an error such as 5e-07"
                       : strcmp(what, "root") == 0 ? "-1 or a rank number"
                                                   : "a non-negative number";
    return fail_at(p, p->line, "column %zu (%s%s%s): expected %s, found \"%s\"", col + 1, group,
                   *group ? " " : "", what, want, tok);
}

/* A plain decimal number: digits, one '.', an exponent; no "nan", "inf" or
 * hex, which strtod would also take. */
static bool parse_num(const char *s, double *out)
{
    if (strspn(s, "0123456789.eE+-") != strlen(s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    if (!all_digits(s, strlen(s))) return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno) return false;
    *out = v;
    return true;
}

static int parse_side(parser *p, char **tok, size_t col, const char *group, ncclt_side *out)
{
    double *v[3] = {&out->time_us, &out->algbw_GBps, &out->busbw_GBps};
    for (size_t k = 0; k < 3; k++)
        if (!parse_num(tok[col + k], v[k])) return bad_col(p, col + k, col_names[k], group, tok[col + k]);
    /* A collective takes time: 0 (or a time printed as 0.00) would fit
     * anything, and a comparison against it reads "median error 0.0%". */
    if (out->time_us <= 0)
        return fail_at(p, p->line, "column %zu (%s%stime): expected a positive time in us, found "
                       "\"%s\" (nccl-tests prints the measured time; a log of zeros was not "
                       "measured)", col + 1, group, *group ? " " : "", tok[col]);
    const char *w = tok[col + 3];
    uint64_t u;
    double e;
    if (strcmp(w, "N/A") == 0) out->wrong = -1;
    else if (parse_u64(w, &u) && u <= INT64_MAX) out->wrong = (int64_t)u;
    else if (parse_num(w, &e) && e >= 0) out->wrong = -1; /* older: the largest error, "5e-07" */
    else return bad_col(p, col + 3, col_names[3], group, w);
    return SS_OK;
}

typedef struct rowshape {
    ncclt_row r;
    char dtype[16], redop[16];
    int64_t root;
    bool has_root, in_place;
} rowshape;

static int copy_name(parser *p, char *dst, const char *tok, size_t col, const char *what)
{
    if (strlen(tok) >= 16)
        return fail_at(p, p->line,
                       "column %zu (%s): expected a name of at most 15 characters, found \"%s\"",
                       col + 1, what, tok);
    strcpy(dst, tok);
    return SS_OK;
}

/* nccl-tests' -T timestamp after the in-place group: "%Y-%m-%d %H:%M:%S". */
static bool is_stamp(const char *date, const char *clock)
{
    return strlen(date) == 10 && date[4] == '-' && date[7] == '-' && strlen(clock) == 8 &&
           clock[2] == ':' && clock[5] == ':' && all_digits(date, 4) && all_digits(clock, 2);
}

static int parse_row(parser *p, char *line, rowshape *out)
{
    char *tok[MAX_TOKENS];
    size_t n = tokenize(line, tok);
    if (n == 15 && is_stamp(tok[13], tok[14])) n = 13; /* nccl-tests 2.17+ with -T */
    /* nccl-tests 2.19+ with per-iteration timing: each group is time algbw
     * busbw #wrong and four figures of the iterations' spread, not read */
    size_t side = n == 21 ? 8 : 4;
    if (n != 8 && n != 9 && n != 12 && n != 13 && n != 21)
        return fail_at(p, p->line,
                       "expected the 13 columns of a nccl-tests row (size count type redop root "
                       "time algbw busbw #wrong time algbw busbw #wrong), or 9 without the "
                       "in-place group, or 12 or 8 without root, or 21 with per-iteration "
                       "figures; found %zu columns",
                       n);
    /* 8 or 12 columns are the versions without root; a "-1" where their
     * time would be is a row of the newer format that lost a column. */
    if ((n == 8 || n == 12) && strcmp(tok[4], "-1") == 0)
        return fail_at(p, p->line,
                       "found %zu columns with a root column (-1): expected 13 (size count "
                       "type redop root time algbw busbw #wrong time algbw busbw #wrong) or 9",
                       n);
    memset(out, 0, sizeof *out);
    out->r.line = p->line;
    out->has_root = n == 9 || n == 13 || n == 21;
    out->in_place = n >= 12;
    /* looks_like_row checked both are digits; they must also fit 64 bits
     * (strtoull saturates, and a row of 0 bytes would follow silently). */
    if (!parse_u64(tok[0], &out->r.bytes))
        return fail_at(p, p->line, "column 1 (size): expected a byte count below 2^64, found "
                       "\"%s\"", tok[0]);
    if (!parse_u64(tok[1], &out->r.count))
        return fail_at(p, p->line, "column 2 (count): expected an element count below 2^64, "
                       "found \"%s\"", tok[1]);
    int rc = copy_name(p, out->dtype, tok[2], 2, "type");
    if (!rc) rc = copy_name(p, out->redop, tok[3], 3, "redop");
    if (rc) return rc;
    size_t col = 4;
    out->root = -1;
    if (out->has_root) {
        char *end;
        long long r = strtoll(tok[4], &end, 10);
        if (*end || end == tok[4] || r < -1) return bad_col(p, 4, "root", "", tok[4]);
        out->root = r;
        col = 5;
    }
    rc = parse_side(p, tok, col, "out-of-place", &out->r.out);
    if (!rc && out->in_place) rc = parse_side(p, tok, col + side, "in-place", &out->r.in);
    return rc;
}

/* Reduction tests always print their reduction; "none" under one of them
 * means the op came from the wrong place (a hint, a stray mention). */
static int check_redop(parser *p, ncclt_op op, const char *redop)
{
    bool reduces = op == NCCLT_ALL_REDUCE || op == NCCLT_REDUCE_SCATTER || op == NCCLT_REDUCE;
    if (!reduces || strcmp(redop, "none") != 0) return SS_OK;
    return fail_at(p, p->line,
                   "the table's redop is \"none\", which %s_perf never prints: this table does "
                   "not measure %s",
                   ncclt_op_names[op], ncclt_op_names[op]);
}

static int resolve_op(parser *p, ncclt_op *op)
{
    if (p->c.src == SRC_HEADER || p->c.src == SRC_MENTION) *op = p->c.op;
    else if (p->has_hint) *op = p->hint;
    else if (p->c.src == SRC_AMBIG)
        return fail_at(p, p->line,
                       "cannot tell which collective this table measures: the text above names "
                       "both %s_perf and %s_perf and there is no \"# Collective test starting:\" "
                       "line; name the collective (the op hint, shardsim-calib fit --op OP)",
                       ncclt_op_names[p->c.op], ncclt_op_names[p->c.other]);
    else
        return fail_at(p, p->line,
                       "cannot tell which collective this table measures: no \"# Collective "
                       "test starting:\" line and no \"<op>_perf\" name above it; name the "
                       "collective (the op hint, shardsim-calib fit --op OP)");
    return SS_OK;
}

static int open_table(parser *p, const rowshape *rs)
{
    ncclt_op op = NCCLT_ALL_REDUCE;
    int rc = resolve_op(p, &op);
    if (!rc) rc = check_redop(p, op, rs->redop);
    if (rc) return rc;
    ncclt_log *L = p->log;
    if (!ss_grow((void **)&L->t, &L->cap, L->n + 1, sizeof *L->t)) return nomem(p);
    tbl *t = &L->t[L->n];
    memset(t, 0, sizeof *t);
    const char *label = p->c.label ? p->c.label : ncclt_op_names[op];
    size_t n = strlen(label);
    char *lab = malloc(n + 1);
    if (!lab) return nomem(p);
    memcpy(lab, label, n + 1);
    ncclt_info *in = &t->info;
    in->op = op;
    in->label = lab;
    memcpy(in->dtype, rs->dtype, sizeof in->dtype);
    memcpy(in->redop, rs->redop, sizeof in->redop);
    in->root = rs->root;
    in->in_place = rs->in_place;
    /* rank lines numbered past their count are an excerpt: neither the
     * ranks nor their hosts are known, only a floor */
    bool excerpt = p->c.top > p->c.nranks;
    in->nranks = excerpt ? 0 : p->c.nranks;
    in->nnodes = excerpt ? 0 : p->c.nhosts;
    in->min_ranks = p->c.top;
    in->nthreads = p->c.nthreads;
    in->ngpus = p->c.ngpus;
    in->nccl_version = p->c.nccl_version;
    memcpy(in->device, p->c.device, sizeof in->device);
    in->line = p->line;
    t->has_root = rs->has_root;
    p->open = L->n++;
    /* The run's header lines are used up; an op found here is kept for a
     * table split off this one (a new type or redop in the same run). */
    p->c.src = SRC_HEADER;
    p->c.op = op;
    return SS_OK;
}

static bool same_kind(const tbl *t, const rowshape *rs)
{
    return strcmp(t->info.dtype, rs->dtype) == 0 && strcmp(t->info.redop, rs->redop) == 0 &&
           t->info.root == rs->root;
}

static int append_row(parser *p, const rowshape *rs)
{
    tbl *t = &p->log->t[p->open];
    if (t->has_root != rs->has_root || t->info.in_place != rs->in_place)
        return fail_at(p, p->line,
                       "this row has a different set of columns than the table's first row "
                       "(line %u)",
                       t->info.line);
    const ncclt_row *last = &t->rows[t->info.nrows - 1];
    if (rs->r.bytes < last->bytes)
        return fail_at(p, p->line,
                       "sizes must not shrink within a table: %llu bytes after %llu bytes on "
                       "line %u",
                       (unsigned long long)rs->r.bytes, (unsigned long long)last->bytes,
                       last->line);
    if (!ss_grow((void **)&t->rows, &t->cap, t->info.nrows + 1, sizeof *t->rows)) return nomem(p);
    t->rows[t->info.nrows++] = rs->r;
    return SS_OK;
}

static int on_row(parser *p, char *line)
{
    rowshape rs;
    int rc = parse_row(p, line, &rs);
    if (rc) return rc;
    if (p->open >= 0 && !same_kind(&p->log->t[p->open], &rs)) p->open = -1;
    if (p->open < 0) {
        rc = open_table(p, &rs);
        if (rc) return rc;
        tbl *t = &p->log->t[p->open];
        if (!ss_grow((void **)&t->rows, &t->cap, 1, sizeof *t->rows)) return nomem(p);
        t->rows[t->info.nrows++] = rs.r;
        return SS_OK;
    }
    return append_row(p, &rs);
}

/* ---- whole text ---- */

/* NCCL's own banner, "NCCL version 2.26.2+cuda12.8" (NCCL_DEBUG=VERSION or
 * WARN prints it bare, INFO after its prefix): the library's version where
 * nccl-tests' header does not give it ("nccl-library=", which wins). The
 * code is NCCL's, major x 10000 + minor x 100 + patch. */
static void nccl_banner(ctx *c, const char *s)
{
    const char *m = strstr(s, "NCCL version ");
    unsigned a, b, d;
    if (!m || c->nccl_version || sscanf(m + 13, "%u.%u.%u", &a, &b, &d) != 3) return;
    if (a == 2 && b < 100 && d < 100) c->nccl_version = a * 10000 + b * 100 + d;
}

/* The length of an Open MPI output tag at s ("[1,0]<stdout>:", mpirun
 * --tag-output: job, rank and stream), else 0. */
static size_t mpi_tag(const char *s)
{
    const char *q = s;
    if (*q++ != '[' || !isdigit((unsigned char)*q)) return 0;
    while (isdigit((unsigned char)*q)) q++;
    if (*q++ != ',' || !isdigit((unsigned char)*q)) return 0;
    while (isdigit((unsigned char)*q)) q++;
    if (*q++ != ']' || *q++ != '<') return 0;
    while (isalpha((unsigned char)*q)) q++;
    if (*q++ != '>' || *q++ != ':') return 0;
    return (size_t)(q - s);
}

/* What launchers put around nccl-tests' lines, removed in place: Open MPI's
 * tags wherever they are (it tags each write, so one row can carry three,
 * as AWS's p5 logs show), and Slurm's rank label at the start of a line
 * ("0: ", srun --label). A data row never starts with "N:", so prose is
 * all such a label can be taken from. */
static void strip_launcher(char *line)
{
    char *w = line;
    for (const char *r = line; *r;) {
        size_t k = *r == '[' ? mpi_tag(r) : 0;
        if (k) r += k;
        else *w++ = *r++;
    }
    *w = '\0';
    char *s = line;
    while (*s == ' ') s++;
    char *d = s;
    while (isdigit((unsigned char)*d)) d++;
    if (d > s && d[0] == ':' && d[1] == ' ') memmove(line, d + 2, strlen(d + 2) + 1);
}

static int on_line(parser *p, char *line)
{
    size_t n = strlen(line);
    if (n && line[n - 1] == '\r') line[--n] = '\0';
    strip_launcher(line);
    const char *s = skip_ws(line);
    if (*s == '#') {
        /* The first '#' line after a table ends that test's run: whatever
         * follows describes the next one. */
        if (p->open >= 0) ctx_reset_run(&p->c);
        return on_comment(p, s);
    }
    if (!*s) return SS_OK;
    if (looks_like_row(s)) return on_row(p, line);
    nccl_banner(&p->c, s);
    scan_mentions(&p->c, s, p->line); /* prose: a command line, a title */
    return SS_OK;
}

/* Labels that repeat become "label#k", k counting in file order. The new
 * names are made first and swapped in after, so counting sees the old ones. */
static int dedup_labels(parser *p)
{
    ncclt_log *L = p->log;
    if (!L->n) return SS_OK;
    char **nl = calloc(L->n, sizeof *nl);
    if (!nl) return nomem(p);
    int rc = SS_OK;
    for (uint32_t i = 0; i < L->n && !rc; i++) {
        const char *lab = L->t[i].info.label;
        uint32_t k = 0, total = 0;
        for (uint32_t j = 0; j < L->n; j++) {
            if (strcmp(L->t[j].info.label, lab) != 0) continue;
            total++;
            k += j < i;
        }
        if (total < 2) continue;
        size_t n = strlen(lab) + 16;
        if (!(nl[i] = malloc(n))) rc = nomem(p);
        else snprintf(nl[i], n, "%s#%u", lab, k + 1);
    }
    for (uint32_t i = 0; i < L->n; i++) {
        if (!nl[i]) continue;
        if (rc) {
            free(nl[i]);
            continue;
        }
        free((char *)L->t[i].info.label);
        L->t[i].info.label = nl[i];
    }
    free(nl);
    return rc;
}

void ncclt_free(ncclt_log *log)
{
    if (!log) return;
    for (uint32_t i = 0; i < log->n; i++) {
        free((char *)log->t[i].info.label);
        free(log->t[i].rows);
    }
    free(log->t);
    free(log);
}

static int parse_lines(parser *p, char *buf, size_t len)
{
    int rc = SS_OK;
    for (char *s = buf; s < buf + len && !rc;) {
        char *nl = memchr(s, '\n', (size_t)(buf + len - s));
        if (nl) *nl = '\0';
        p->line++;
        rc = on_line(p, s);
        s = nl ? nl + 1 : buf + len;
    }
    return rc;
}

int ncclt_parse(const char *file, const char *text, size_t len, const char *op_hint,
                ncclt_log **out, ss_err *err)
{
    parser p = {.file = file, .open = -1, .err = err};
    if (op_hint && !ncclt_op_from_name(op_hint, &p.hint))
        return ss_fail(err, SS_E_INPUT, file,
                       "unknown collective \"%s\" given as the op: expected all_reduce, "
                       "all_gather, reduce_scatter, broadcast, reduce, alltoall or sendrecv",
                       op_hint);
    p.has_hint = op_hint != NULL;
    if (len && memchr(text, '\0', len))
        return ss_fail(err, SS_E_INPUT, file, "file contains NUL bytes: not nccl-tests text");
    char *buf = malloc(len + 1);
    p.log = calloc(1, sizeof *p.log);
    int rc = !buf || !p.log ? nomem(&p) : SS_OK;
    if (!rc) {
        memcpy(buf, text, len);
        buf[len] = '\0';
        rc = parse_lines(&p, buf, len);
    }
    if (!rc && p.log->n == 0)
        rc = ss_fail(err, SS_E_INPUT, file,
                     "no nccl-tests table found: expected data rows such as \"1048576 262144 "
                     "float sum -1 44.38 23.63 41.35 0 43.46 24.13 42.23 0\"");
    if (!rc) rc = dedup_labels(&p);
    ctx_fini(&p.c);
    free(buf);
    if (rc) {
        ncclt_free(p.log);
        return rc;
    }
    *out = p.log;
    return SS_OK;
}

int ncclt_load(const char *file, const char *op_hint, ncclt_log **out, ss_err *err)
{
    FILE *f = fopen(file, "rb");
    if (!f) return ss_fail(err, SS_E_IO, file, "cannot read file: %s", strerror(errno));
    char *text = NULL;
    size_t len = 0;
    int rc = js_read_stream(f, file, NCCLT_MAX_FILE_BYTES, &text, &len, err);
    fclose(f);
    if (!rc) rc = ncclt_parse(file, text ? text : "", len, op_hint, out, err);
    free(text);
    return rc;
}

size_t ncclt_ntables(const ncclt_log *log) { return log ? log->n : 0; }

const ncclt_info *ncclt_table(const ncclt_log *log, size_t i)
{
    return log && i < log->n ? &log->t[i].info : NULL;
}

const ncclt_row *ncclt_row_at(const ncclt_log *log, size_t i, size_t j)
{
    if (!log || i >= log->n || j >= log->t[i].info.nrows) return NULL;
    return &log->t[i].rows[j];
}
