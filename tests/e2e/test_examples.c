/* End to end on the shipped example scenarios: FlatParameter padding with a
 * 7-layer model of odd sizes wrapped per block, N = 1, overrides. The
 * expected numbers are computed here from the model file's shapes with the
 * formulas of seeds/002 (padding N * ceil(numel / N)), independently of the
 * plan code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <dirent.h>
#include <sys/stat.h>
#include <string.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"
#include "load_run.h"

/* models/mlp7-odd.json: (in, out), all with bias. */
static const uint64_t shapes[7][2] = {{1001, 999}, {999, 1003}, {1003, 997}, {997, 1009},
                                      {1009, 991}, {991, 1013}, {1013, 10}};

static uint64_t numel(int i) { return shapes[i][0] * shapes[i][1] + shapes[i][1]; }

/* FULL_SHARD per block on 4 ranks: 7 units, 7 forward and 7 backward
 * all-gathers of the padded units, 7 reduce-scatters; every rank stores
 * sum ceil(numel/4) elements; rank 3 holds fewer real ones. */
static void test_mlp7_full_shard(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-per-block.json", NULL, 0, &s, &r);
    uint64_t phys = 0, padded = 0, log3 = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t c = (numel(i) + 3) / 4;
        phys += c;
        padded += 4 * c;
        log3 += numel(i) > 3 * c ? numel(i) - 3 * c : 0;
    }
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].count, 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].bytes, 2 * padded * 4);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].bytes, padded * 4);
    for (uint32_t k = 0; k < 4; k++) assert_int_equal(sr->ranks[k].st.param.physical, phys * 4);
    assert_int_equal(sr->ranks[3].st.param.logical, log3 * 4);
    assert_true(sr->ranks[3].st.param.logical < sr->ranks[3].st.param.physical);
    /* The peak holds at least one unsharded unit beyond the steady state. */
    assert_true(sr->ranks[0].mem.peak >= sr->ranks[0].mem.end + 4 * ((numel(0) + 3) / 4) * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* N = 1: FSDP1 runs as NO_SHARD: no all-gather, one all-reduce per unit,
 * every state whole: P + G + 2P (AdamW) with G freed by zero_grad. */
static void test_one_rank(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-one-rank.json", NULL, 0, &s, &r);
    uint64_t total = 0;
    for (int i = 0; i < 7; i++) total += numel(i);
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->nranks, 1);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].count, 0);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, 7);
    assert_int_equal(sr->ranks[0].st.total_physical, total * 16);
    assert_int_equal(sr->exposed_comm_ns, 0);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* --set turns the DDP example into SHARD_GRAD_OP on 2 ranks: the
 * collectives and the state bytes follow the override. */
static void test_overrides(void **state)
{
    (void)state;
    const char *sets[] = {"sharding.strategy=shard_grad_op", "parallel.dp=2"};
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-ddp-default-buckets.json", sets, 2, &s, &r);
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->nranks, 2);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, 0);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 0);
    uint64_t phys = 0;
    for (int i = 0; i < 7; i++) phys += (numel(i) + 1) / 2;
    assert_int_equal(sr->ranks[1].st.grad.physical, phys * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* Same scenario twice: the same JSON, byte for byte. */
static void test_json_deterministic(void **state)
{
    (void)state;
    char *txt[2];
    for (int i = 0; i < 2; i++) {
        spec_scenario s;
        run_result r;
        load_run("seed002/zero3_full_shard_pre.json", NULL, 0, &s, &r);
        txt[i] = sum_json(&r.sum);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_string_equal(txt[0], txt[1]);
    free(txt[0]);
    free(txt[1]);
}

/* Model setup on seeds/002 (8 x 16 MiB, 4 ranks): DDP holds the model and
 * its 128 MiB of buckets (the 250 MiB broadcast buffer is capped by the
 * model's 128): 256 MiB. FSDP built whole: 128 MiB of originals + the
 * first unit's 16 MiB flat copy + its 4 MiB shard = 148. Built per unit:
 * 7 shards (28) + the last unit whole (16), its flat copy (16) and shard (4)
 * = 64. */
static void test_init_peak(void **state)
{
    (void)state;
    const char *per_unit[] = {"init.mode=per_unit"};
    struct { const char *file; const char **sets; size_t n; double mib; } cases[] = {
        {"seed002/zero0_ddp.json", NULL, 0, 256},
        {"seed002/zero3_full_shard_pre.json", NULL, 0, 148},
        {"seed002/zero3_full_shard_pre.json", per_unit, 1, 64},
    };
    for (size_t i = 0; i < 3; i++) {
        spec_scenario s;
        run_result r;
        load_run(cases[i].file, cases[i].sets, cases[i].n, &s, &r);
        assert_true(r.sum.ranks[0].init_peak == (ss_bytes)(cases[i].mib * 1024 * 1024));
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Gradient accumulation on seeds/002 with 4 micro-batches. DDP under
 * no_sync all-reduces only the last micro-batch's buckets (2), without it
 * every micro-batch's (8). FULL_SHARD under no_sync gathers 4 x 16 times
 * but reduce-scatters 8 times, and keeps every unit's 16 MiB unsharded
 * gradient until then (8 x 16 = 128 MiB) where the syncing run holds the
 * 8 x 4 MiB shards and at most one 16 MiB gradient in flight: its peak is
 * at least 128 - 32 - 16 = 80 MiB higher. Tokens per step are 4 x 32. */
static void test_grad_accum(void **state)
{
    (void)state;
    const char *ddp_quiet[] = {"training.grad_accum=4"};
    const char *ddp_sync[] = {"training.grad_accum=4", "sharding.no_sync=false"};
    struct { const char *file; const char **sets; size_t n; uint64_t ar, ag, rs; } c[] = {
        {"seed002/zero0_ddp.json", ddp_quiet, 1, 2, 0, 0},
        {"seed002/zero0_ddp.json", ddp_sync, 2, 8, 0, 0},
        {"seed002/zero3_full_shard_pre.json", ddp_quiet, 1, 0, 64, 8},
        {"seed002/zero3_full_shard_pre.json", ddp_sync, 2, 0, 64, 32},
    };
    ss_bytes peak[4];
    for (size_t i = 0; i < 4; i++) {
        spec_scenario s;
        run_result r;
        load_run(c[i].file, c[i].sets, c[i].n, &s, &r);
        assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].count, c[i].ar);
        assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].count, c[i].ag);
        assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].count, c[i].rs);
        assert_int_equal(r.sum.tokens, 4 * 32);
        assert_int_equal(r.sum.ranks[0].mem.start, r.sum.ranks[0].mem.end);
        peak[i] = r.sum.ranks[0].mem.peak;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_true(peak[2] >= peak[3] + 80 * 1024 * 1024);
}

/* Every shipped scenario, sorted, walked recursively. */
static size_t list_scenarios(const char *dir, char (*out)[512], size_t max, size_t n)
{
    struct dirent **ents;
    int k = scandir(dir, &ents, NULL, alphasort);
    for (int i = 0; i < k; i++) {
        const char *nm = ents[i]->d_name;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        size_t len = strlen(nm);
        struct stat st;
        /* The 5T layouts take seconds each (minutes under valgrind);
         * test_layout checks the same bound on a layout. The published
         * rows are production-size runs (up to 16k GPUs) that e2e.scenarios
         * and e2e.validate run; the invariants here hold for any program
         * and are checked on the other folders, every runtime among them. */
        if (!strcmp(nm, "moe-5t") || !strcmp(nm, "published")) {
            free(ents[i]);
            continue;
        }
        if (nm[0] != '.' && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            n = list_scenarios(path, out, max, n);
        else if (len > 5 && !strcmp(nm + len - 5, ".json") && n < max)
            snprintf(out[n++], 512, "%s", path);
        free(ents[i]);
    }
    free(ents);
    return n;
}

/* The ideal model is a lower bound of the caching model on every scenario,
 * rank by rank, and allocated never exceeds reserved; running the ideal
 * model itself gives exactly that bound. */
static void test_ideal_is_lower_bound(void **state)
{
    (void)state;
    static char files[256][512];
    char dir[512];
    snprintf(dir, sizeof dir, "%s/scenarios", SS_SOURCE_DIR);
    size_t n = list_scenarios(dir, files, 256, 0);
    assert_true(n >= 12);
    for (size_t i = 0; i < n; i++) {
        spec_scenario s[2];
        run_result r[2];
        const char *ideal[] = {"allocator.model=ideal"};
        ss_err err;
        ss_err_clear(&err);
        for (int m = 0; m < 2; m++)
            if (scn_load(files[i], ideal, (size_t)m, &s[m], &err) || run_step(&s[m], NULL, &r[m], &err))
                fail_msg("%s: %s: %s", files[i], err.where, err.msg);
        for (uint32_t k = 0; k < r[0].sum.nranks; k++) {
            const mem_rank *c = &r[0].sum.ranks[k].mem, *id = &r[1].sum.ranks[k].mem;
            if (!(c->ideal_peak <= c->peak && c->peak <= c->peak_reserved &&
                  id->peak == c->ideal_peak))
                fail_msg("%s rank %u: ideal %llu, caching %llu, reserved %llu, ideal run %llu",
                         files[i], k, (unsigned long long)c->ideal_peak,
                         (unsigned long long)c->peak, (unsigned long long)c->peak_reserved,
                         (unsigned long long)id->peak);
        }
        for (int m = 0; m < 2; m++) {
            run_fini(&r[m]);
            spec_scenario_fini(&s[m]);
        }
    }
}

/* HYBRID_SHARD on 8 ranks in shard groups of 4 (FSDP1 HSDP): inside a
 * group it is FULL_SHARD over 4, so the all-gathers and reduce-scatters and
 * every rank's shard are those of test_mlp7_full_shard; each reduced shard
 * is then all-reduced over its 2 replicas: 7 all-reduces of the shard,
 * sum ceil(numel / 4) elements. _HYBRID_SHARD_ZERO2 keeps the parameters
 * unsharded after forward: no backward all-gathers. */
static void test_hybrid_shard(void **state)
{
    (void)state;
    const char *sets[] = {"topology={\"file\": \"../../topologies/h100x8-hgx.json\"}",
                          "parallel.dp=8", "sharding.strategy=hybrid_shard",
                          "sharding.shard_group_size=4"};
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-per-block.json", sets, 4, &s, &r);
    uint64_t phys = 0, padded = 0, log3 = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t c = (numel(i) + 3) / 4;
        phys += c;
        padded += 4 * c;
        log3 += numel(i) > 3 * c ? numel(i) - 3 * c : 0;
    }
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_FORWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].bytes, 2 * padded * 4);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].bytes, padded * 4);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].count, 7);
    assert_int_equal(sr->coll[PROG_COLL_ALL_REDUCE].bytes, phys * 4);
    for (uint32_t k = 0; k < 8; k++) assert_int_equal(sr->ranks[k].st.param.physical, phys * 4);
    assert_int_equal(sr->ranks[3].st.param.logical, log3 * 4);
    assert_int_equal(sr->ranks[7].st.param.logical, log3 * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
    sets[2] = "sharding.strategy=hybrid_shard_zero2";
    load_run("examples/mlp7-full-shard-per-block.json", sets, 4, &s, &r);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 0);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].bytes, phys * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
    /* groups that do not divide the ranks are refused */
    sets[3] = "sharding.shard_group_size=3";
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/examples/mlp7-full-shard-per-block.json",
             SS_SOURCE_DIR);
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scn_load(path, sets, 4, &s, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "do not divide dp = 8"));
}

/* seeds/000's rule of thumb: at equal dtype, FULL_SHARD moves about 1.5x
 * DDP's bytes: all-gather twice and reduce-scatter once, (n-1)/n of the
 * payload each on the bus, against one all-reduce at 2(n-1)/n. */
static void test_full_shard_bus_bytes(void **state)
{
    (void)state;
    const char *ddp[] = {"sharding.strategy=ddp"};
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-per-block.json", NULL, 0, &s, &r);
    double k = 3.0 / 4.0;
    double fs = k * (double)(r.sum.coll[PROG_COLL_ALL_GATHER].bytes +
                             r.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes);
    run_fini(&r);
    spec_scenario_fini(&s);
    load_run("examples/mlp7-full-shard-per-block.json", ddp, 1, &s, &r);
    double dd = 2 * k * (double)r.sum.coll[PROG_COLL_ALL_REDUCE].bytes;
    print_message("FULL_SHARD / DDP bus bytes: %.4f\n", fs / dd);
    assert_true(fabs(fs / dd - 1.5) < 0.01); /* padding adds a little */
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* runtime.stragglers: rank 0 computing 2x slower doubles its compute busy
 * time (every compute op scaled, rounding to the ns per op); the others
 * wait for it at every collective, so the step is at least that long.
 * runtime.jitter: cv 0 gives the step itself in every sample; the same seed
 * gives the same samples, another seed others. */
static void test_variation(void **state)
{
    (void)state;
    spec_scenario s;
    run_result base, slow;
    load_run("seed002/zero0_ddp.json", NULL, 0, &s, &base);
    const char *sl[] = {"runtime.stragglers=[{\"rank\": 0, \"factor\": 2}]"};
    spec_scenario s2;
    load_run("seed002/zero0_ddp.json", sl, 1, &s2, &slow);
    assert_true(llabs((long long)slow.sum.compute_ns - 2 * (long long)base.sum.compute_ns) <=
                (long long)slow.sum.nops);
    assert_true(slow.sum.step_ns >= slow.sum.compute_ns);
    assert_true(slow.sum.step_ns > base.sum.step_ns);
    run_fini(&slow);
    spec_scenario_fini(&s2);
    const char *j0[] = {"runtime.jitter={\"cv\": 0, \"samples\": 3}"};
    load_run("seed002/zero0_ddp.json", j0, 1, &s2, &slow);
    assert_int_equal(slow.sum.nsamples, 3);
    for (uint32_t k = 0; k < 3; k++) assert_int_equal(slow.sum.samples[k], base.sum.step_ns);
    run_fini(&slow);
    spec_scenario_fini(&s2);
    const char *ja[] = {"runtime.jitter={\"cv\": 0.1, \"samples\": 4, \"seed\": 5}"};
    const char *jb[] = {"runtime.jitter={\"cv\": 0.1, \"samples\": 4, \"seed\": 6}"};
    run_result a1, a2, b;
    spec_scenario sa1, sa2, sb;
    load_run("seed002/zero0_ddp.json", ja, 1, &sa1, &a1);
    load_run("seed002/zero0_ddp.json", ja, 1, &sa2, &a2);
    load_run("seed002/zero0_ddp.json", jb, 1, &sb, &b);
    int differ = 0;
    for (uint32_t k = 0; k < 4; k++) {
        assert_int_equal(a1.sum.samples[k], a2.sum.samples[k]);
        differ += a1.sum.samples[k] != b.sum.samples[k];
    }
    assert_true(differ > 0);
    assert_int_equal(a1.sum.step_ns, base.sum.step_ns); /* the step itself is unperturbed */
    run_fini(&a1);
    run_fini(&a2);
    run_fini(&b);
    spec_scenario_fini(&sa1);
    spec_scenario_fini(&sa2);
    spec_scenario_fini(&sb);
    run_fini(&base);
    spec_scenario_fini(&s);
}

/* Per-state dtypes (seeds/000 section 4): with bf16 compute and an fp32
 * reduce dtype, the all-gathers move the padded units in bf16 and the
 * reduce-scatters in fp32, while the stored shards stay fp32. */
static void test_collective_dtypes(void **state)
{
    (void)state;
    const char *mp[] = {"topology={\"file\": \"../../topologies/h100x8-hgx.json\"}",
                        "precision={\"param\": \"fp32\", \"compute\": \"bf16\", "
                        "\"grad\": \"fp32\", \"reduce\": \"fp32\"}"};
    spec_scenario s;
    run_result r;
    load_run("examples/mlp7-full-shard-per-block.json", mp, 2, &s, &r);
    uint64_t padded = 0, phys = 0;
    for (int i = 0; i < 7; i++) {
        padded += 4 * ((numel(i) + 3) / 4);
        phys += (numel(i) + 3) / 4;
    }
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].bytes, 2 * padded * 2);
    assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes, padded * 4);
    assert_int_equal(r.sum.ranks[0].st.param.physical, phys * 4);
    run_fini(&r);
    spec_scenario_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp7_full_shard), cmocka_unit_test(test_one_rank),
        cmocka_unit_test(test_overrides), cmocka_unit_test(test_json_deterministic),
        cmocka_unit_test(test_ideal_is_lower_bound), cmocka_unit_test(test_init_peak),
        cmocka_unit_test(test_grad_accum), cmocka_unit_test(test_hybrid_shard),
        cmocka_unit_test(test_full_shard_bus_bytes), cmocka_unit_test(test_variation),
        cmocka_unit_test(test_collective_dtypes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
