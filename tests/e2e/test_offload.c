/* Offload as its own axis: where the states go, what the host holds, and
 * what the copies and the CPU optimizer cost, for FSDP1's CPUOffload and
 * DeepSpeed's offload_optimizer / offload_param. Expected numbers are
 * derived here from the model's parameter count (Llama 3 8B, 8,030,261,248
 * parameters, models/llama3-8b.json) and the state dtypes. */
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
#include "../../sim/run/run.h"
#include "load_run.h"

#define LLAMA8B 8030261248ull
#define FSDP1 "transformers/llama3-8b-full-shard-8xh100.json"

static uint64_t node_host(const sum_report *r)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k < r->nranks; k++) n += r->ranks[k].st.host;
    return n;
}

/* FSDP1 CPUOffload and FSDP2 CPUOffloadPolicy: every state on the host
 * (fp32 shards, gradients and AdamW's two moments: 16 bytes per element,
 * padded shards), none on the device at the step's end; the optimizer runs
 * on the host thread at the configured rate. */
static void check_cpu_offload(const char *scenario)
{
    spec_scenario s0, s1;
    run_result base, off;
    load_run(scenario, NULL, 0, &s0, &base);
    const char *sets[] = {"offload.params=cpu", "offload.pin_memory=true",
                          "offload.cpu_optimizer_Gelems_per_s=2"};
    load_run(scenario, sets, 3, &s1, &off);
    const st_bytes *st = &off.sum.ranks[0].st;
    assert_int_equal(st->host, st->total_physical);
    assert_int_equal(st->total_physical, base.sum.ranks[0].st.total_physical);
    assert_true(node_host(&off.sum) >= LLAMA8B * 16);
    assert_true(node_host(&off.sum) < LLAMA8B * 16 + 8 * 16 * 64 * 1024 * 1024ull); /* padding */
    /* The device keeps no states: what the base keeps between steps less
     * its parameters and optimizer states (within the allocator's rounding). */
    uint64_t kept = st->param.physical + st->master.physical + st->optim.physical;
    assert_true(off.sum.ranks[0].mem.end + kept <= base.sum.ranks[0].mem.end + (1u << 20));
    /* The CPU optimizer: the rank's shard at 2e9 elements per second. */
    double cpu_s = (double)(st->optim.physical / 8) / 2e9;
    assert_true((double)off.sum.host_ns * 1e-9 >= cpu_s);
    assert_true(off.sum.step_ns > base.sum.step_ns);
    run_fini(&base);
    run_fini(&off);
    spec_scenario_fini(&s0);
    spec_scenario_fini(&s1);
}

static void test_fsdp1_cpu_offload(void **state)
{
    (void)state;
    check_cpu_offload(FSDP1);
}

static void test_fsdp2_cpu_offload(void **state)
{
    (void)state;
    check_cpu_offload("fsdp2/llama3-8b-fsdp2-sac-8xh100.json");
}

/* Pageable buffers copy at half the pinned rate: a slower step. */
static void test_pinned_faster(void **state)
{
    (void)state;
    spec_scenario a, b;
    run_result pinned, pageable;
    const char *p[] = {"offload.params=cpu", "offload.pin_memory=true", "offload.pcie_GBps=4"};
    const char *q[] = {"offload.params=cpu", "offload.pin_memory=false", "offload.pcie_GBps=4"};
    load_run(FSDP1, p, 3, &a, &pinned);
    load_run(FSDP1, q, 3, &b, &pageable);
    assert_true(pageable.sum.step_ns > pinned.sum.step_ns);
    run_fini(&pinned);
    run_fini(&pageable);
    spec_scenario_fini(&a);
    spec_scenario_fini(&b);
}

/* DeepSpeed ZeRO-Offload (stage 2): bf16 parameters stay on the device
 * (2 bytes per element), the fp32 master, moments and gradient partition
 * go to the host (16 bytes per element of the rank's partition), and the
 * node's host memory is checked against offload.host_memory_gib. */
static void test_deepspeed_host_capacity(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run("deepspeed/llama3-8b-zero2-offload-8xh100.json", NULL, 0, &s, &r);
    uint64_t part = (LLAMA8B + 7) / 8;
    assert_int_equal(r.sum.ranks[0].st.host, part * 16);
    assert_int_equal(r.sum.ranks[0].st.total_physical - r.sum.ranks[0].st.host, LLAMA8B * 2);
    assert_true(r.sum.s->off.host_bytes >= node_host(&r.sum));
    run_fini(&r);
    spec_scenario_fini(&s);
    const char *small[] = {"offload.host_memory_gib=64"};
    load_run("deepspeed/llama3-8b-zero2-offload-8xh100.json", small, 1, &s, &r);
    char *json = sum_json(&r.sum);
    cJSON *root = cJSON_Parse(json);
    const cJSON *fits = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "memory"), "host_fits");
    assert_true(cJSON_IsFalse(fits));
    cJSON_Delete(root);
    free(json);
    run_fini(&r);
    spec_scenario_fini(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp1_cpu_offload),
        cmocka_unit_test(test_fsdp2_cpu_offload),
        cmocka_unit_test(test_pinned_faster),
        cmocka_unit_test(test_deepspeed_host_capacity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
