/* Every allocation failure is an error, not a crash, a leak or a wrong
 * answer (the loop SQLite's and Lua's test suites run): the whole pipeline
 * (load, plan, schedule, engine, network, memory replay, summary, trace) is
 * run once per allocation, with that allocation made to fail. Each run must
 * either fail with SS_E_NOMEM, or succeed with the reference's summary and
 * trace byte for byte (a failure some code absorbs, e.g. a cache it can do
 * without). Leaks are the sanitizer's and valgrind's to find: the suite
 * runs this program under both. The allocator is wrapped at link time
 * (-Wl,--wrap=malloc,...), so only the simulator's own calls are counted;
 * cJSON's and libc's internal ones are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/out/chrome.h"
#include "../../sim/run/run.h"

static long calls, fail_at = -1;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);

static int inject(void) { return calls++ == fail_at; }
void *__wrap_malloc(size_t n) { return inject() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return inject() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return inject() ? NULL : __real_realloc(p, n); }

/* A scenario under scenarios/, with one --set (NULL: none). */
typedef struct {
    const char *rel, *set;
} scenario_ref;

/* Load, run and render; *json and *trace are the caller's (NULL on error). */
static int pipeline(scenario_ref sc, char **json, char **trace, ss_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, sc.rel);
    spec_scenario s;
    run_result r;
    *json = *trace = NULL;
    int rc = scn_load(path, &sc.set, sc.set ? 1 : 0, &s, err);
    if (rc) return rc;
    rc = run_step(&s, NULL, &r, err);
    if (!rc) {
        *json = sum_json(&r.sum);
        *trace = *json ? chrome_json(&r.sum, r.t) : NULL;
        if (!*trace) rc = ss_fail(err, SS_E_NOMEM, NULL, "out of memory rendering");
        run_fini(&r);
    }
    spec_scenario_fini(&s);
    if (rc) {
        free(*json);
        free(*trace);
        *json = *trace = NULL;
    }
    return rc;
}

/* Fail allocation k for every k the run makes, or for `runs` of them
 * spread evenly (0: all), to keep the loop short on larger scenarios. */
static void every_failure(scenario_ref sc, long runs)
{
    const char *rel = sc.rel;
    ss_err err;
    ss_err_clear(&err);
    char *ref_json, *ref_trace;
    calls = 0;
    fail_at = -1;
    if (pipeline(sc, &ref_json, &ref_trace, &err)) fail_msg("%s: %s", err.where, err.msg);
    long total = calls, failed = 0;
    long step = runs && total / runs > 1 ? total / runs : 1;
    for (long k = 0;; k += step) {
        char *json, *trace;
        calls = 0;
        fail_at = k;
        ss_err_clear(&err);
        int rc = pipeline(sc, &json, &trace, &err);
        fail_at = -1;
        if (calls <= k) { /* the run made fewer allocations: all were tried */
            assert_int_equal(rc, SS_OK);
            assert_int_equal(calls, total); /* the same run as the reference */
            free(json);
            free(trace);
            break;
        }
        if (rc) {
            if (rc != SS_E_NOMEM)
                fail_msg("%s: allocation %ld failed as %d, not out of memory: %s: %s", rel, k, rc,
                         err.where, err.msg);
            failed++;
        } else if (strcmp(json, ref_json) || strcmp(trace, ref_trace)) {
            fail_msg("%s: allocation %ld failed and the run went on with another answer", rel, k);
        }
        free(json);
        free(trace);
    }
    print_message("%s%s%.40s: %ld allocations, one in %ld made to fail: %ld runs ended in out of "
                  "memory\n",
                  rel, sc.set ? " --set " : "", sc.set ? sc.set : "", total, step, failed);
    assert_true(failed > 0); /* the injection reached the pipeline */
    free(ref_json);
    free(ref_trace);
}

/* A two-layer transformer 64 wide: the full-size scenarios' runtimes
 * (FSDP2 with selective AC, HSDP, DeepSpeed stage 3 and ZeRO++, offload)
 * on it make few enough allocations to fail each in turn, so a leak on
 * any of their paths is found whatever test_oom_full_size's sampling of
 * the full-size runs reaches. */
#define TINY                                                                                   \
    "model={\"name\": \"tiny\", \"architecture\": {\"type\": \"transformer\", \"layers\": 2, "   \
    "\"hidden\": 64, \"heads\": 2, \"kv_heads\": 2, \"ffn_hidden\": 128, \"activation\": "      \
    "\"swiglu\", \"vocab\": 512, \"norm\": \"rmsnorm\"}}"

/* One scenario per runtime family, with and without a layout: small
 * models, so every allocation is tried (a few hundred runs each, a few
 * seconds in all). FSDP2 without a layout (sched.c's states) takes another
 * path than inside one (mp.c), so each gets a run. */
static void test_oom_runtimes(void **state)
{
    (void)state;
    static const scenario_ref files[] = {
        {"seed002/zero3_full_shard_pre.json", NULL},
        {"seed002/zero0_ddp.json", NULL},
        {"examples/mlp7-zero1-bucket-view.json", NULL},
        {"examples/mlp7-shard-grad-op-size-wrap.json", NULL},
        {"examples/mlp7-full-shard-per-block.json", "sharding.strategy=fsdp2"},
        {"examples/tiny-gpt-megatron-tp2-pp2-overlap.json", NULL},
        {"examples/tiny-gpt-fsdp2-tp2-cp2-ring.json", NULL},
        {"examples/tiny-gpt-deepspeed-zero1-pp2-uneven.json", NULL}};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) every_failure(files[k], 0);
}

/* Full-size scenarios of the runtimes with their own code paths (FSDP2,
 * HSDP, DeepSpeed stage 3 and ZeRO++, offload). */
static const char *const full_size[] = {
    "fsdp2/llama3-8b-fsdp2-sac-8xh100.json", "fsdp2/llama3-8b-hsdp-2x16-raf8-4x8xh100.json",
    "deepspeed/llama3-8b-zero3-8xh100.json", "deepspeed/llama3-8b-zeropp-4x8xh100.json",
    "offload/llama3-70b-fsdp1-cpu-offload-8xh100.json"};

static void each_full_size(const char *set, long runs)
{
    for (size_t k = 0; k < sizeof full_size / sizeof *full_size; k++)
        every_failure((scenario_ref){full_size[k], set}, runs);
}

/* Their runtimes on TINY, every allocation: about 3,000 runs, three
 * minutes under valgrind, so the suite's valgrind pass leaves it to the
 * sanitizer pass (LeakSanitizer finds the same leaks). */
static void test_oom_full_size_runtimes_heavy(void **state)
{
    (void)state;
    each_full_size(TINY, 0);
}

/* The scenarios themselves: 12 allocations each, spread over the run (the
 * suite runs this under valgrind too). */
static void test_oom_full_size(void **state)
{
    (void)state;
    each_full_size(NULL, 12);
}

/* A scenario naming a torchtitan TOML (io/ttconfig.c and the import in
 * scenario.c), with --set on both sides of the import: every allocation of
 * the load fails in turn, and each load fails with SS_E_NOMEM or loads the
 * reference scenario (its step compared through the summary of one run).
 * toml++'s own allocations (operator new) are not wrapped. */
static void test_oom_torchtitan_load(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/torchtitan/llama3-8b-toml-8xh100.json", SS_SOURCE_DIR);
    const char *sets[] = {"trainer.torchtitan.training.local_batch_size=2",
                          "training.recompute=full"};
    ss_err err;
    spec_scenario s;
    ss_err_clear(&err);
    calls = 0;
    fail_at = -1;
    if (scn_load(path, sets, 2, &s, &err)) fail_msg("%s: %s", err.where, err.msg);
    long total = calls, failed = 0;
    assert_int_equal(s.micro_batch, 2); /* the --set into the TOML */
    assert_int_equal(s.recompute, SPEC_RECOMP_FULL); /* the --set over the TOML's selective_op */
    spec_scenario_fini(&s);
    for (long k = 0; k < total; k++) {
        calls = 0;
        fail_at = k;
        ss_err_clear(&err);
        int rc = scn_load(path, sets, 2, &s, &err);
        fail_at = -1;
        if (rc) {
            if (rc != SS_E_NOMEM)
                fail_msg("allocation %ld failed as %d, not out of memory: %s: %s", k, rc,
                         err.where, err.msg);
            failed++;
            continue;
        }
        assert_int_equal(s.micro_batch, 2);
        spec_scenario_fini(&s);
    }
    print_message("torchtitan load: %ld allocations, %ld loads ended in out of memory\n", total,
                  failed);
    assert_true(failed > 0);
}

/* SS_SKIP_TESTS: see scripts/test.sh (its valgrind pass skips *_heavy). */
int main(void)
{
    cmocka_set_skip_filter(getenv("SS_SKIP_TESTS"));
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_oom_runtimes),
                                       cmocka_unit_test(test_oom_full_size_runtimes_heavy),
                                       cmocka_unit_test(test_oom_full_size),
                                       cmocka_unit_test(test_oom_torchtitan_load)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
