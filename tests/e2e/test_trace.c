/* The Chrome/Perfetto trace of a seeds/002 FULL_SHARD step follows the Trace
 * Event Format's rules: a traceEvents array; every event has name, ph, ts,
 * pid, tid; complete events have a positive dur (an op of none is an
 * instant event, "i" with thread scope) and, per thread, come
 * in start order; flows come in s/f pairs with one id; one complete event
 * per simulated op; process names and memory counters for every rank. */
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

/* The trace text of a shipped scenario's step (every rank's memory series),
 * with its op and rank counts; the caller frees the text. */
static char *trace_text(const char *file, uint64_t *nops, uint32_t *nranks)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, file);
    ss_err err;
    ss_err_clear(&err);
    spec_scenario s;
    run_result r;
    run_opts o = {true};
    if (scn_load(path, NULL, 0, &s, &err) || run_step(&s, &o, &r, &err))
        fail_msg("%s: %s", err.where, err.msg);
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
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        const char *req[] = {"name", "ph", "ts", "pid", "tid"};
        for (int k = 0; k < 5; k++) assert_non_null(cJSON_GetObjectItem(e, req[k]));
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        int pid = cJSON_GetObjectItem(e, "pid")->valueint, tid = cJSON_GetObjectItem(e, "tid")->valueint;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        assert_true(pid >= 0 && pid < 64 && tid >= 0 && tid < 8 && ts >= 0);
        if (!strcmp(ph, "X") || !strcmp(ph, "i")) { /* i: an op of no duration */
            nx++;
            const cJSON *dur = cJSON_GetObjectItem(e, "dur");
            if (ph[0] == 'X') assert_true(dur && dur->valuedouble > 0);
            else assert_true(!dur && !strcmp(cJSON_GetObjectItem(e, "s")->valuestring, "t"));
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
    assert_int_equal(nx, nops);
    assert_int_equal(ns, nf);
    assert_true(ns > 0);
    assert_int_equal(ids, 0);
    assert_int_equal(procs, nranks);
    for (uint32_t k = 0; k < nranks; k++) assert_true(counters_of[k] > 0);
    cJSON_Delete(root);
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
                                       cmocka_unit_test(test_trace_canonical)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
