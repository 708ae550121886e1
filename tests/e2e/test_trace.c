/* The Chrome/Perfetto trace of a seeds/002 FULL_SHARD step follows the Trace
 * Event Format's rules: a traceEvents array; every event has name, ph, ts,
 * pid, tid; an op is a begin/end pair ("B", "E" of the same name right
 * after it, not before it) or, of no duration, an instant ("i" with thread
 * scope), and, per thread, ops come in start order; flows come in s/f
 * pairs with one id; one op per simulated op; process names and memory
 * counters for every rank. And the nesting a viewer reconstructs from the
 * numbers as it reads them (doubles) is exact on small steps of every
 * kind: no two slices of a thread overlap unless one contains the other
 * (DECISIONS 86). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/out/chrome.h"
#include "../../sim/run/run.h"
#include "load_run.h"

/* The trace text of a shipped scenario's step (every rank's memory series),
 * with its op and rank counts; the caller frees the text. */
static char *trace_text(const char *file, uint64_t *nops, uint32_t *nranks)
{
    spec_scenario s;
    run_result r;
    load_run_opts(file, NULL, 0, &(run_opts){true}, &s, &r);
    char *txt = chrome_json(&r.sum, r.t);
    assert_non_null(txt);
    *nops = r.sum.nops;
    *nranks = r.sum.nranks;
    run_fini(&r);
    spec_scenario_fini(&s);
    return txt;
}

static cJSON *trace_of(const char *file, uint64_t *nops, uint32_t *nranks)
{
    char *txt = trace_text(file, nops, nranks);
    cJSON *root = cJSON_Parse(txt);
    free(txt);
    assert_non_null(root);
    return root;
}

static void test_trace_format(void **state)
{
    (void)state;
    uint64_t nops;
    uint32_t nranks;
    cJSON *root = trace_of("seed002/zero3_full_shard_pre.json", &nops, &nranks);
    const cJSON *evs = cJSON_GetObjectItem(root, "traceEvents");
    assert_true(cJSON_IsArray(evs));
    uint64_t nx = 0, ns = 0, nf = 0, ids = 0;
    uint32_t procs = 0, counters_of[64] = {0};
    double last_ts[64][8];
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 8; j++) last_ts[i][j] = -1;
    const cJSON *e, *open = NULL;
    cJSON_ArrayForEach(e, evs)
    {
        const char *req[] = {"name", "ph", "ts", "pid", "tid"};
        for (int k = 0; k < 5; k++) assert_non_null(cJSON_GetObjectItem(e, req[k]));
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        const char *name = cJSON_GetObjectItem(e, "name")->valuestring;
        int pid = cJSON_GetObjectItem(e, "pid")->valueint, tid = cJSON_GetObjectItem(e, "tid")->valueint;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        assert_true(pid >= 0 && pid < 64 && tid >= 0 && tid < 8 && ts >= 0);
        if (open) { /* the end of the op just begun, on its thread */
            assert_string_equal(ph, "E");
            assert_string_equal(name, cJSON_GetObjectItem(open, "name")->valuestring);
            assert_int_equal(tid, cJSON_GetObjectItem(open, "tid")->valueint);
            assert_true(ts > cJSON_GetObjectItem(open, "ts")->valuedouble);
            assert_null(cJSON_GetObjectItem(e, "dur"));
            open = NULL;
            continue;
        }
        if (!strcmp(ph, "B") || !strcmp(ph, "i")) { /* i: an op of no duration */
            nx++;
            assert_null(cJSON_GetObjectItem(e, "dur"));
            if (ph[0] == 'B') open = e;
            else assert_string_equal(cJSON_GetObjectItem(e, "s")->valuestring, "t");
            assert_true(ts >= last_ts[pid][tid]);
            last_ts[pid][tid] = ts;
        } else if (!strcmp(ph, "s")) {
            ns++;
            ids += (uint64_t)cJSON_GetObjectItem(e, "id")->valuedouble;
        } else if (!strcmp(ph, "f")) {
            nf++;
            ids -= (uint64_t)cJSON_GetObjectItem(e, "id")->valuedouble;
        } else if (!strcmp(ph, "M")) {
            procs += !strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "process_name");
        } else if (!strcmp(ph, "C")) {
            counters_of[pid]++;
        } else {
            fail_msg("unexpected phase %s", ph);
        }
    }
    assert_null(open);
    assert_int_equal(nx, nops);
    assert_int_equal(ns, nf);
    assert_true(ns > 0);
    assert_int_equal(ids, 0);
    assert_int_equal(procs, nranks);
    for (uint32_t k = 0; k < nranks; k++) assert_true(counters_of[k] > 0);
    cJSON_Delete(root);
}

/* ---- the nesting a viewer sees ----
 * A viewer reads ts and dur as doubles (cJSON: strtod, as JSON.parse),
 * ends an "X" event at ts + dur computed in double, pairs each "E" with
 * the thread's last open "B", and stacks the slices of a thread by those
 * numbers. Slices nest when, per (pid, tid), every two are disjoint or one
 * contains the other. */
typedef struct slice {
    int pid, tid;
    double b, e;
} slice;

typedef struct viewer {
    slice *s; /* closed slices */
    size_t n, cap;
    slice *open; /* begun, not ended, any thread */
    size_t nopen, capopen;
    char why[256];
} viewer;

static void push(slice **a, size_t *n, size_t *cap, slice x)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *a = realloc(*a, *cap * sizeof **a);
        assert_non_null(*a);
    }
    (*a)[(*n)++] = x;
}

static int slice_cmp(const void *x, const void *y)
{
    const slice *p = x, *q = y;
    if (p->pid != q->pid) return p->pid - q->pid;
    if (p->tid != q->tid) return p->tid - q->tid;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return p->e > q->e ? -1 : p->e < q->e; /* the outer one first */
}

/* An event into the viewer; returns 1 (and says why) when it is malformed
 * for nesting: an X of no duration, an E with no open B or before it. */
static int viewer_event(viewer *v, const cJSON *e)
{
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    int pid = cJSON_GetObjectItem(e, "pid")->valueint, tid = cJSON_GetObjectItem(e, "tid")->valueint;
    double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
    if (!strcmp(ph, "X")) {
        double dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        if (!(dur > 0)) return snprintf(v->why, sizeof v->why, "X of no duration at %.17g", ts), 1;
        push(&v->s, &v->n, &v->cap, (slice){pid, tid, ts, ts + dur});
    } else if (!strcmp(ph, "B")) {
        push(&v->open, &v->nopen, &v->capopen, (slice){pid, tid, ts, ts});
    } else if (!strcmp(ph, "E")) {
        size_t k = v->nopen;
        while (k && (v->open[k - 1].pid != pid || v->open[k - 1].tid != tid)) k--;
        if (!k || v->open[k - 1].b > ts)
            return snprintf(v->why, sizeof v->why, "E at %.17g (%d/%d) closes nothing", ts, pid, tid), 1;
        slice x = v->open[k - 1];
        x.e = ts;
        memmove(&v->open[k - 1], &v->open[k], (v->nopen - k) * sizeof *v->open);
        v->nopen--;
        push(&v->s, &v->n, &v->cap, x);
    }
    return 0;
}

/* Slices of a thread that overlap without one containing the other, plus
 * malformed events; 0 for a trace that nests exactly. */
static size_t nesting_violations(const char *text, char *why, size_t len)
{
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    viewer v = {0};
    size_t bad = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, "traceEvents")) bad += (size_t)viewer_event(&v, e);
    bad += v.nopen;
    if (v.n) qsort(v.s, v.n, sizeof *v.s, slice_cmp); /* v.s is NULL when there are none */
    size_t *stack = malloc((v.n ? v.n : 1) * sizeof *stack), depth = 0;
    assert_non_null(stack);
    for (size_t i = 0; i < v.n; i++) {
        const slice *c = &v.s[i];
        while (depth && (v.s[stack[depth - 1]].pid != c->pid || v.s[stack[depth - 1]].tid != c->tid ||
                         v.s[stack[depth - 1]].e <= c->b))
            depth--;
        if (depth && c->e > v.s[stack[depth - 1]].e) {
            bad++;
            snprintf(v.why, sizeof v.why, "%d/%d: [%.17g, %.17g) overlaps [%.17g, %.17g)", c->pid,
                     c->tid, c->b, c->e, v.s[stack[depth - 1]].b, v.s[stack[depth - 1]].e);
        }
        stack[depth++] = i;
    }
    snprintf(why, len, "%s", v.why);
    free(stack);
    free(v.s);
    free(v.open);
    cJSON_Delete(root);
    return bad;
}

/* The checker sees what a viewer sees: two complete events that meet at
 * 0.3 us end and begin at different doubles, 0.1 + 0.2 =
 * 0.30000000000000004 > 0.3 (IEEE 754 binary64), and overlap; written as
 * B/E from the same text they do not; and an X of no duration is refused. */
static void test_nesting_checker(void **state)
{
    (void)state;
    char why[256];
    const char *stair = "{\"traceEvents\":["
                        "{\"name\":\"a\",\"ph\":\"X\",\"ts\":0.1,\"dur\":0.2,\"pid\":0,\"tid\":0},"
                        "{\"name\":\"b\",\"ph\":\"X\",\"ts\":0.3,\"dur\":1,\"pid\":0,\"tid\":0}]}";
    assert_int_equal(nesting_violations(stair, why, sizeof why), 1);
    const char *pairs = "{\"traceEvents\":["
                        "{\"name\":\"a\",\"ph\":\"B\",\"ts\":0.1,\"pid\":0,\"tid\":0},"
                        "{\"name\":\"a\",\"ph\":\"E\",\"ts\":0.3,\"pid\":0,\"tid\":0},"
                        "{\"name\":\"b\",\"ph\":\"B\",\"ts\":0.3,\"pid\":0,\"tid\":0},"
                        "{\"name\":\"b\",\"ph\":\"E\",\"ts\":1.3,\"pid\":0,\"tid\":0}]}";
    assert_int_equal(nesting_violations(pairs, why, sizeof why), 0);
    const char *empty = "{\"traceEvents\":["
                        "{\"name\":\"a\",\"ph\":\"X\",\"ts\":0.1,\"dur\":0,\"pid\":0,\"tid\":0}]}";
    assert_int_equal(nesting_violations(empty, why, sizeof why), 1);
}

/* Shipped small steps nest exactly: FSDP (ops meeting at fractional
 * microseconds), the two pipelined layouts whose p2p sends run out of
 * program order and need a second lane (which they do use), and the CP
 * ring. Written as complete events, the last three had ops whose X end
 * passed the next start (30, 5 and 16 of them, counted with this checker
 * before the begin/end pairs). */
static void test_trace_nesting(void **state)
{
    (void)state;
    const char *files[] = {"seed002/zero3_full_shard_pre.json",
                           "examples/tiny-gpt-megatron-tp2-pp2-overlap.json",
                           "examples/tiny-gpt-deepspeed-zero1-pp2-uneven.json",
                           "examples/tiny-gpt-fsdp2-tp2-cp2-ring.json"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        uint64_t nops;
        uint32_t nranks;
        char *txt = trace_text(files[k], &nops, &nranks);
        char why[256] = "";
        size_t bad = nesting_violations(txt, why, sizeof why);
        if (bad) fail_msg("%s: %zu nesting violations, e.g. %s", files[k], bad, why);
        if (k == 1 || k == 2) assert_non_null(strstr(txt, "\"name\":\"p2p 2\""));
        free(txt);
    }
}

/* The streamed trace is the canonical text cJSON prints: parsed and printed
 * again by cJSON (an independent printer), it comes back byte for byte.
 * Checked on steps with fractional microseconds, byte counts above 2^31,
 * FLOP counts above 2^53 and op names of every runtime in a layout. */
static void test_trace_canonical(void **state)
{
    (void)state;
    const char *files[] = {"seed002/zero3_full_shard_pre.json",
                           "examples/tiny-gpt-megatron-tp2-pp2-overlap.json",
                           "examples/tiny-gpt-fsdp2-tp2-cp2-ring.json",
                           "published/torchtitan-llama3.1-8b-fsdp2-sac-8xh100.json"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        uint64_t nops;
        uint32_t nranks;
        char *txt = trace_text(files[k], &nops, &nranks);
        cJSON *root = cJSON_Parse(txt);
        assert_non_null(root);
        char *again = cJSON_PrintUnformatted(root);
        assert_non_null(again);
        if (strcmp(txt, again)) {
            size_t i = 0;
            while (txt[i] == again[i]) i++;
            fail_msg("%s: differs at byte %zu: \"%.40s\" vs \"%.40s\"", files[k], i, txt + i, again + i);
        }
        free(again);
        free(txt);
        cJSON_Delete(root);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_trace_format),
                                       cmocka_unit_test(test_nesting_checker),
                                       cmocka_unit_test(test_trace_nesting),
                                       cmocka_unit_test(test_trace_canonical)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
