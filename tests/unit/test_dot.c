/* DOT timeline: a hand-built two-rank step drawn by dot_write, checked for
 * placement and size against figures worked out by hand, for determinism,
 * and (where Graphviz is installed) for being accepted by neato as is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../sim/out/dot.h"
#include "../../sim/out/label.h"

/* Per rank, in program order (times in ns; the step is 1 ms):
 *   0 host    "host.issue"        [0, 2000)
 *   1 compute "fwd.0"  forward    [2000, 302000)
 *   2 unshard "fsdp.all_gather.1" [302000, 602000), 1 MiB, group {0, 1}
 *   3 host    "fsdp.wait.ag"      [302000, 302000)  marker: not drawn
 *   4 compute "fwd.1"  forward    [602000, 1000000), depends on 2
 *   5 host    "tick"              [1000000, 1000000) zero length, drawn
 * Compute is idle while the all-gather runs: exposed [302000, 602000). */
typedef struct fixture {
    prog *p;
    trc *t;
    spec_scenario sc;
    sum_rank ranks[2];
    mem_point series[3];
    sum_report r;
} fixture;

static void add(prog *p, uint32_t rank, prog_op_spec s)
{
    uint32_t id;
    assert_int_equal(prog_op_add(p, rank, &s, &id, NULL), SS_OK);
}

static void build_rank(prog *p, uint32_t rank, uint32_t gid)
{
    static const uint32_t dep_ag[] = {2};
    add(p, rank, (prog_op_spec){.kind = PROG_OP_HOST, .stream = PROG_HOST, .name = "host.issue"});
    add(p, rank, (prog_op_spec){.kind = PROG_OP_COMPUTE, .stream = PROG_COMPUTE,
                                .phase = PROG_PH_FORWARD, .name = "fwd.0"});
    add(p, rank, (prog_op_spec){.kind = PROG_OP_COLL, .stream = PROG_UNSHARD,
                                .phase = PROG_PH_FORWARD, .coll = PROG_COLL_ALL_GATHER,
                                .group = gid, .name = "fsdp.all_gather.1", .bytes = SS_MIB});
    add(p, rank, (prog_op_spec){.kind = PROG_OP_HOST, .stream = PROG_HOST,
                                .name = "fsdp.wait.ag", .deps = dep_ag, .ndeps = 1});
    add(p, rank, (prog_op_spec){.kind = PROG_OP_COMPUTE, .stream = PROG_COMPUTE,
                                .phase = PROG_PH_FORWARD, .name = "fwd.1", .deps = dep_ag,
                                .ndeps = 1});
    add(p, rank, (prog_op_spec){.kind = PROG_OP_HOST, .stream = PROG_HOST, .name = "tick"});
}

static void build(fixture *f)
{
    memset(f, 0, sizeof *f);
    static const uint32_t both[] = {0, 1};
    uint32_t gid;
    assert_int_equal(prog_new(&f->p, 2, NULL), SS_OK);
    assert_int_equal(prog_group_add(f->p, both, 2, &gid, NULL), SS_OK);
    for (uint32_t k = 0; k < 2; k++) build_rank(f->p, k, gid);
    assert_int_equal(trc_new(&f->t, f->p, NULL), SS_OK);
    static const ss_ns se[6][2] = {{0, 2000},          {2000, 302000},   {302000, 602000},
                                   {302000, 302000},   {602000, 1000000}, {1000000, 1000000}};
    for (uint32_t k = 0; k < 2; k++)
        for (uint32_t i = 0; i < 6; i++)
            f->t->ops[k][i] = (trc_op){se[i][0], se[i][0], se[i][1], 2 * i, 2 * i + 1};
    f->t->step_ns = 1000000;
    snprintf(f->sc.name, sizeof f->sc.name, "tiny \"quoted\" \\ run");
    f->sc.shard.strategy = SPEC_FULL_SHARD;
    f->series[0] = (mem_point){0, SS_MIB, 2 * SS_MIB};
    f->series[1] = (mem_point){302000, 3 * SS_MIB, 4 * SS_MIB};
    f->series[2] = (mem_point){602000, 2 * SS_MIB, 4 * SS_MIB};
    f->ranks[0].mem = (mem_rank){.peak = 3 * SS_MIB, .peak_t = 302000, .series = f->series,
                                 .nseries = 3};
    f->ranks[1].mem = (mem_rank){.peak = 3 * SS_MIB, .peak_t = 302000};
    f->r = (sum_report){.s = &f->sc, .step_ns = 1000000, .nranks = 2, .ranks = f->ranks};
}

static void teardown(fixture *f)
{
    trc_free(f->t);
    prog_free(f->p);
}

/* The drawing as a string (caller frees); asserts dot_write succeeded. */
static char *draw(fixture *f, const dot_opts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    ss_err err = {0};
    int rc = dot_write(&f->r, f->t, o, m, &err);
    fclose(m);
    if (rc) fprintf(stderr, "dot_write: %s\n", err.msg);
    assert_int_equal(rc, SS_OK);
    return buf;
}

/* The value of key= on the line of node id, or -1 if there is none. */
static double attr(const char *dot, const char *id, const char *key)
{
    char head[64], k[32];
    snprintf(head, sizeof head, "\n  %s [", id);
    snprintf(k, sizeof k, "%s=", key);
    const char *line = strstr(dot, head);
    if (!line) return -1;
    const char *eol = strchr(line + 1, '\n'), *v = line;
    do v = strstr(v + 1, k); /* the key, not the end of another one */
    while (v && v[-1] != ' ' && v[-1] != '[');
    if (!v || (eol && v > eol)) return -1;
    v += strlen(k);
    if (*v == '"') v++;
    return strtod(v, NULL);
}

static const dot_opts wide = {0, 1, 0, 0, 16.0, true, 0};

static void test_structure(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide);
    assert_int_equal(strncmp(d, "digraph", 7), 0);
    char id[32];
    for (uint32_t k = 0; k < 2; k++)
        for (uint32_t i = 0; i < 6; i++) {
            snprintf(id, sizeof id, "op_%u_%u", k, i);
            if (i == 3) assert_true(attr(d, id, "width") < 0); /* the wait marker */
            else assert_true(attr(d, id, "width") > 0);
        }
    assert_non_null(strstr(d, "\n  op_0_1 [pos=\""));
    assert_non_null(strstr(d, "\"rank 0 compute\\r\""));
    assert_non_null(strstr(d, "\"rank 1 unshard\\r\""));
    assert_non_null(strstr(d, "\"rank 1 host\\r\""));
    assert_null(strstr(d, "rank 0 reduce"));
    assert_non_null(strstr(d, "tiny \\\"quoted\\\" \\\\ run  |  full_shard  |  2 ranks"));
    assert_non_null(strstr(d, "fsdp.all_gather.1\\nstart 0.302 ms, end 0.602 ms\\n"
                              "all_gather, 1048576 bytes (1.00 MiB)"));
    assert_non_null(strstr(d, "peak 3.00 MiB"));
    assert_non_null(strstr(d, "label=\"1.0\""));
    assert_non_null(strstr(d, "label=\"0.5\""));
    free(d);
    teardown(&f);
}

/* 16 in = 1152 pt; the plot is 1152 - 132 - 20 = 1000 pt for 1 ms, so
 * 0.001 pt/ns. fwd.0 lasts 300 us: 300 pt = 300 / 72 in = 4.16667 in,
 * centred at 132 + (2000 + 150000) * 0.001 = 284.00 pt. fwd.1 lasts
 * 398 us: 398 / 72 = 5.52778 in. host.issue: 2 pt = 0.02778 in. tick has
 * no length: the minimum 0.75 pt = 0.01042 in. */
static void test_scale(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide);
    assert_float_equal(attr(d, "op_0_1", "width"), 4.16667, 1e-9);
    assert_float_equal(attr(d, "op_0_1", "pos"), 284.00, 1e-9);
    assert_float_equal(attr(d, "op_1_4", "width"), 5.52778, 1e-9);
    assert_float_equal(attr(d, "op_0_0", "width"), 0.02778, 1e-9);
    assert_float_equal(attr(d, "op_0_5", "width"), 0.01042, 1e-9);
    assert_float_equal(attr(d, "op_0_1", "height"), 16.0 / 72.0, 1e-5);
    free(d);
    teardown(&f);
}

/* The all-gather [302, 602) us runs with compute idle: one red box of
 * 300 pt per rank, centred at 132 + 302 + 150 = 584.00 pt; nothing else. */
static void test_exposed(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide);
    assert_float_equal(attr(d, "exp_0_0", "width"), 4.16667, 1e-9);
    assert_float_equal(attr(d, "exp_0_0", "pos"), 584.00, 1e-9);
    assert_true(attr(d, "exp_1_0", "width") > 0);
    assert_true(attr(d, "exp_0_1", "width") < 0);
    const char *e = strstr(d, "\n  exp_0_0 [");
    assert_non_null(e);
    assert_non_null(strstr(e, "fillcolor=\"#e53935\""));
    free(d);
    /* Once compute covers the collective, nothing is exposed. */
    f.t->ops[0][1].end = 700000;
    d = draw(&f, &wide);
    assert_true(attr(d, "exp_0_0", "width") < 0);
    assert_true(attr(d, "exp_1_0", "width") > 0);
    free(d);
    teardown(&f);
}

/* Rank 1 only, a window on the all-gather alone: only its unshard lane
 * remains (the wait marker at the left edge is skipped), and 300 us now
 * span the whole 1000 pt plot: 1000 / 72 = 13.88889 in. rank_hi past the
 * last rank is clamped; a first rank past it, or an empty window, is an
 * input error. */
static void test_window(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    dot_opts o = {1, 7, 302000, 602000, 16.0, true, 0};
    char *d = draw(&f, &o);
    assert_float_equal(attr(d, "op_1_2", "width"), 13.88889, 1e-9);
    assert_null(strstr(d, "rank 0 unshard"));
    assert_null(strstr(d, "exp_0_"));
    assert_null(strstr(d, "rank 1 compute"));
    assert_true(attr(d, "op_1_1", "width") < 0);
    free(d);
    ss_err err = {0};
    FILE *m = tmpfile();
    assert_non_null(m);
    o = (dot_opts){2, 3, 0, 0, 16.0, true, 0};
    assert_int_equal(dot_write(&f.r, f.t, &o, m, &err), SS_E_INPUT);
    o = (dot_opts){0, 1, 5000, 5000, 16.0, true, 0};
    assert_int_equal(dot_write(&f.r, f.t, &o, m, &err), SS_E_INPUT);
    fclose(m);
    teardown(&f);
}

/* The label= of node id's line into out ("" when it has none). */
static void label_of(const char *dot, const char *id, char *out, size_t n)
{
    char head[64];
    snprintf(head, sizeof head, "\n  %s [", id);
    const char *line = strstr(dot, head), *eol = line ? strchr(line + 1, '\n') : NULL;
    const char *v = line ? strstr(line, " label=\"") : NULL;
    out[0] = '\0';
    if (!v || (eol && v > eol)) return;
    v += 8;
    size_t k = 0;
    while (v[k] && v[k] != '"' && k + 1 < n) out[k] = v[k], k++;
    out[k] = '\0';
}

/* The two ranks run the same ops at the same ns: by default one block,
 * headed "ranks 0-1 (2 identical)", drawn from rank 0 (no op_1_ node).
 * Rank 1's fwd.1 ending 1 us later makes it differ: two blocks, "rank 0"
 * and "rank 1", each with its own lanes. */
static void test_groups(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    dot_opts o = wide;
    o.every_rank = false;
    char *d = draw(&f, &o), lab[256];
    label_of(d, "group_0", lab, sizeof lab);
    assert_string_equal(lab, "ranks 0-1 (2 identical)\\l");
    assert_true(attr(d, "group_1", "pos") < 0);
    assert_true(attr(d, "op_0_1", "width") > 0);
    assert_true(attr(d, "op_1_1", "width") < 0);
    assert_null(strstr(d, "rank 0 compute")); /* lanes say the stream only */
    assert_non_null(strstr(d, "\"compute\\r\""));
    free(d);
    f.t->ops[1][4].end += 1000;
    d = draw(&f, &o);
    label_of(d, "group_0", lab, sizeof lab);
    assert_string_equal(lab, "rank 0\\l");
    label_of(d, "group_1", lab, sizeof lab);
    assert_string_equal(lab, "rank 1\\l");
    assert_true(attr(d, "op_1_4", "width") > 0);
    assert_true(attr(d, "exp_1_0", "width") > 0);
    free(d);
    /* every_rank draws both even when identical, and has no headings. */
    f.t->ops[1][4].end -= 1000;
    d = draw(&f, &wide);
    assert_true(attr(d, "op_1_1", "width") > 0);
    assert_true(attr(d, "group_0", "pos") < 0);
    free(d);
    teardown(&f);
}

/* Short names inside boxes: fwd.0 (300 pt) holds "fwd.0"; the all-gather
 * (300 pt) "fsdp.all_gather.1" -> "AG.1"; host.issue (2 pt) holds none.
 * At 0.5 in (36 pt) wide, fwd.0 is 10.8 pt: (10.8 - 4) / 4.2 = 1.6
 * characters, so none fits with an ellipsis: no label. Every label drawn
 * fits its box by label.h's estimate at 7 pt. */
static void test_op_labels(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide), lab[256], id[32];
    label_of(d, "op_0_1", lab, sizeof lab);
    assert_string_equal(lab, "fwd.0");
    label_of(d, "op_0_2", lab, sizeof lab);
    assert_string_equal(lab, "AG.1");
    label_of(d, "op_0_0", lab, sizeof lab);
    assert_string_equal(lab, "");
    assert_non_null(strstr(d, "tooltip=\"fsdp.all_gather.1\\nstart"));
    free(d);
    dot_opts narrow = wide;
    narrow.width_in = (DOT_LEFT_PT + DOT_RIGHT_PT + 72.0) / 72.0; /* a 72 pt plot */
    d = draw(&f, &narrow);
    for (uint32_t i = 0; i < 6; i++) {
        snprintf(id, sizeof id, "op_0_%u", i);
        label_of(d, id, lab, sizeof lab);
        if (lab[0]) assert_true(lbl_width(lbl_chars(lab), 7.0) <= attr(d, id, "width") * 72.0 + 1e-6);
    }
    label_of(d, "op_0_1", lab, sizeof lab); /* 72 * 0.3 = 21.6 pt: 3 characters and the ellipsis */
    assert_string_equal(lab, "fwd\xe2\x80\xa6");
    free(d);
    teardown(&f);
}

/* Time axes above the lanes and below the memory band (Graphviz y grows
 * upward: the top axis has the largest y), with the same ticks. */
static void test_axes(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide);
    double top = attr(d, "axis_top", "pos"), bottom = attr(d, "axis_bottom", "pos");
    assert_true(top > 0 && bottom > 0);
    const char *p = strstr(d, "\n  axis_top ["), *q = strstr(d, "\n  axis_bottom [");
    double ytop = strtod(strchr(strchr(p, '"') + 1, ',') + 1, NULL);
    double ybot = strtod(strchr(strchr(q, '"') + 1, ',') + 1, NULL);
    p = strstr(d, "\n  op_0_1 [");
    double yop = strtod(strchr(strchr(p, '"') + 1, ',') + 1, NULL);
    assert_true(ytop > yop && yop > ybot);
    size_t ticks = 0;
    for (const char *s = d; (s = strstr(s, "label=\"0.5\"")); s++) ticks++;
    assert_int_equal(ticks, 2);
    free(d);
    teardown(&f);
}

/* Rank 0 peaks at 3 MiB: the band's full height (60 pt) is 3 MiB, so the
 * 3 MiB bar is 60 pt tall; with mem_top 6 MiB it is 30 pt, and the scale's
 * tooltip names 6291456 bytes. A mem_top below the peak changes nothing. */
static double bar_height(const char *d)
{
    const char *tip = strstr(d, "at most 3.00 MiB"), *line = tip;
    assert_non_null(tip);
    while (line > d && line[-1] != '\n') line--;
    const char *h = strstr(line, "height=");
    assert_true(h && h < tip);
    return strtod(h + 7, NULL) * 72.0;
}

static void test_mem_scale(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *d = draw(&f, &wide);
    assert_float_equal(bar_height(d), 60.0, 1e-3);
    assert_non_null(strstr(d, "memory scale: 0 to 0.003 GiB (3145728 bytes)"));
    free(d);
    dot_opts o = wide;
    o.mem_top = 6 * SS_MIB;
    d = draw(&f, &o);
    assert_float_equal(bar_height(d), 30.0, 1e-3);
    assert_non_null(strstr(d, "(6291456 bytes)"));
    free(d);
    o.mem_top = SS_MIB;
    d = draw(&f, &o);
    assert_float_equal(bar_height(d), 60.0, 1e-3);
    free(d);
    teardown(&f);
}

static void test_deterministic(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    char *a = draw(&f, NULL), *b = draw(&f, NULL);
    assert_int_equal(strlen(a), strlen(b));
    assert_memory_equal(a, b, strlen(a));
    free(a);
    free(b);
    teardown(&f);
}

static void test_neato(void **state)
{
    (void)state;
    if (access("/usr/bin/neato", X_OK) != 0) {
        printf("test_dot: /usr/bin/neato missing, not checking the drawing with Graphviz\n");
        return;
    }
    fixture f;
    build(&f);
    char dot[] = "/tmp/test_dot_XXXXXX", errp[] = "/tmp/test_dot_err_XXXXXX";
    int fd = mkstemp(dot), fe = mkstemp(errp);
    assert_true(fd >= 0 && fe >= 0);
    close(fe);
    FILE *out = fdopen(fd, "w");
    assert_non_null(out);
    assert_int_equal(dot_write(&f.r, f.t, &wide, out, NULL), SS_OK);
    fclose(out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "/usr/bin/neato -n2 -Tsvg '%s' -o /dev/null 2>'%s'", dot, errp);
    int rc = system(cmd);
    struct stat st;
    assert_int_equal(stat(errp, &st), 0);
    if (st.st_size) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", errp);
        assert_int_equal(system(cmd), 0);
    }
    unlink(dot);
    unlink(errp);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
    assert_int_equal(st.st_size, 0);
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure), cmocka_unit_test(test_scale),
        cmocka_unit_test(test_exposed),   cmocka_unit_test(test_window),
        cmocka_unit_test(test_groups),    cmocka_unit_test(test_op_labels),
        cmocka_unit_test(test_axes),      cmocka_unit_test(test_mem_scale),
        cmocka_unit_test(test_deterministic), cmocka_unit_test(test_neato),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
