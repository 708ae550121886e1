/* Plan: parameters, wrap units with FlatParameter padding, DDP buckets and
 * roofline costs, from hand-built specs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/plan/plan.h"

static spec_block blocks[7];

/* 7 linear blocks with odd sizes: block i is (1001 + i) x 999 with bias. */
static spec_scenario make(uint32_t dp, spec_wrap wrap)
{
    for (int i = 0; i < 7; i++)
        blocks[i] = (spec_block){.type = SPEC_BLK_LINEAR, .in = 1001 + (uint64_t)i,
                                 .out = 999, .bias = true};
    for (int i = 0; i < 7; i++) snprintf(blocks[i].name, SPEC_NAME_MAX, "layers.%d", i);
    spec_scenario s = {0};
    snprintf(s.name, sizeof s.name, "t");
    s.model.blocks = blocks;
    s.model.nblocks = 7;
    s.dp = dp;
    s.micro_batch = 16;
    s.seq_len = 1;
    s.prec = (spec_precision){SPEC_DT_FP32, SPEC_DT_FP32, SPEC_DT_FP32, SPEC_DT_FP32,
                              SPEC_DT_NONE, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
    s.opt = (spec_optimizer_cfg){SPEC_OPT_ADAMW, SPEC_IMPL_FOREACH, false};
    s.shard.strategy = SPEC_FULL_SHARD;
    s.shard.wrap = wrap;
    s.shard.bucket_cap_bytes = 8 * 1024 * 1024;
    s.shard.first_bucket_bytes = 1024 * 1024;
    s.topo.device.peak_flops[SPEC_DT_FP32] = 10e12;
    s.topo.device.hbm_bw_Bps = 1e12;
    s.topo.device.gemm_efficiency = 0.5;
    s.topo.device.mem_efficiency = 1.0;
    s.topo.nodes = 1;
    s.topo.gpus_per_node = 8;
    return s;
}

/* Per block: each unit pads its numel (1001+i)*999 + 999 to 4*ceil(x/4). */
static void test_units_padded(void **state)
{
    (void)state;
    spec_scenario s = make(4, SPEC_WRAP_PER_BLOCK);
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_int_equal(p->nunits, 8); /* root (empty) + 7 */
    assert_true(p->units[0].is_root);
    assert_int_equal(p->units[0].numel, 0);
    for (int i = 0; i < 7; i++) {
        uint64_t numel = (1001 + (uint64_t)i) * 999 + 999;
        const plan_unit *u = &p->units[i + 1];
        assert_int_equal(u->numel, numel);
        assert_int_equal(u->shard, (numel + 3) / 4);
        assert_int_equal(u->padded, 4 * ((numel + 3) / 4));
        assert_int_equal(p->blocks[i].unit, (uint32_t)i + 1);
    }
    /* (1001*999 + 999) = 1000998 is not divisible by 4: padding 2. */
    assert_int_equal(p->units[1].padded - p->units[1].numel, 2);
    assert_int_equal(p->nparams, 14);
    plan_free(p);
}

/* Size policy: only blocks with >= 1,003,000 params (blocks 3..6: 1004*999
 * + 999 = 1003995) get their own unit; blocks 0..2 go to the root. */
static void test_size_policy(void **state)
{
    (void)state;
    spec_scenario s = make(2, SPEC_WRAP_SIZE);
    s.shard.wrap_min_params = 1003000;
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_int_equal(p->nunits, 5);
    uint64_t root = 0;
    for (int i = 0; i < 3; i++) root += (1001 + (uint64_t)i) * 999 + 999;
    assert_int_equal(p->units[0].numel, root);
    assert_int_equal(p->blocks[2].unit, 0);
    assert_int_equal(p->blocks[3].unit, 1);
    plan_free(p);
}

/* Modules policy with a name that matches nothing is an input error. */
static void test_modules_policy(void **state)
{
    (void)state;
    char mods[2][SPEC_NAME_MAX] = {"layers.1", "decoder"};
    spec_scenario s = make(2, SPEC_WRAP_MODULES);
    s.shard.wrap_modules = mods;
    s.shard.nwrap_modules = 1;
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_int_equal(p->nunits, 2);
    assert_int_equal(p->units[1].block0, 1);
    plan_free(p);
    s.shard.nwrap_modules = 2;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(plan_new(&p, &s, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "decoder"));
}

/* DDP buckets in reverse parameter order (param 13 = bias of block 6, 12 =
 * its weight): the first bucket (1 MiB cap) takes bias6 (4 KB, below the
 * cap) and weight6 (4 MB, crossing it) and closes: {13, 12}. The others
 * close once they reach 8 MiB. */
static void test_buckets(void **state)
{
    (void)state;
    spec_scenario s = make(4, SPEC_WRAP_PER_BLOCK);
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_int_equal(p->buckets[0].first, 13);
    assert_int_equal(p->buckets[0].last, 12);
    /* Every parameter is in exactly one bucket and buckets are contiguous
     * in reverse order. */
    uint32_t next = 13;
    uint64_t total = 0;
    for (uint32_t b = 0; b < p->nbuckets; b++) {
        assert_int_equal(p->buckets[b].first, next);
        next = p->buckets[b].last - 1;
        total += p->buckets[b].numel;
        /* a bucket that closed reached its cap */
        if (b + 1 < p->nbuckets)
            assert_true(p->buckets[b].numel * 4 >= (b ? s.shard.bucket_cap_bytes
                                                      : s.shard.first_bucket_bytes));
    }
    assert_int_equal(p->buckets[p->nbuckets - 1].last, 0);
    assert_int_equal(total, p->total_numel);
    plan_free(p);
}

/* Roofline: block 0 forward is 2 * 16 * 1000998 flops at 5 TFLOP/s
 * effective = 6.4 us; its memory side is (16*1001 + 1001*999 + 16*999)*4
 * bytes at 1 TB/s = 4.1 us: compute bound. The first block skips dgrad. */
static void test_costs(void **state)
{
    (void)state;
    spec_scenario s = make(4, SPEC_WRAP_PER_BLOCK);
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    ss_ns want = (ss_ns)(2.0 * 16 * 1001 * 999 / 5e12 * 1e9 + 0.5);
    assert_int_equal(p->blocks[0].fwd_ns, want);
    assert_false(p->blocks[0].dgrad);
    assert_int_equal(p->blocks[0].bwd_ns, p->blocks[0].fwd_ns);
    assert_true(p->blocks[1].dgrad);
    assert_int_equal(p->blocks[1].bwd_ns, 2 * p->blocks[1].fwd_ns);
    assert_int_equal(p->blocks[3].in_bytes, 16 * 1004 * 4);
    plan_free(p);
}

/* The attention table: linear in log(seq) between points, the end values
 * outside (the last held where the table gives no non-causal rates), only
 * for 16-bit compute (fp32 falls back to the GEMM curve). Past the end of
 * a table with non-causal rates, the causal shortfall keeps shrinking at
 * its last doubling's ratio: worked by hand below. */
static void test_attention_rate(void **state)
{
    (void)state;
    spec_scenario s = make(4, SPEC_WRAP_PER_BLOCK);
    spec_device *d = &s.topo.device;
    d->attn.pt[0] = (spec_attn_point){1024, 100e12, 80e12, 0};
    d->attn.pt[1] = (spec_attn_point){4096, 300e12, 200e12, 0};
    d->attn.pt[2] = (spec_attn_point){16384, 340e12, 240e12, 0};
    d->attn.n = 3;
    s.prec.compute = SPEC_DT_BF16;
    d->peak_flops[SPEC_DT_BF16] = 1000e12;
    plan *p;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_float_equal(plan_attn_rate(p, 2048, 64, false), 200e12, 1e6); /* halfway in log */
    assert_float_equal(plan_attn_rate(p, 2048, 64, true), 140e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 8192, 64, false), 320e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 4096, 64, true), 200e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 256, 64, false), 100e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 1 << 20, 64, true), 240e12, 1e6);
    plan_free(p);
    /* non-causal 400 at 4k and 16k: shortfalls 25% and 15%, a ratio of 0.6
     * per two doublings (the points' spacing); at 64k (one more such step)
     * 15% x 0.6 = 9%: the forward 400 x 0.91 = 364, the backward 240 x
     * 0.91 / 0.85; below and inside the table nothing changes */
    d->attn.pt[1].full_flops = d->attn.pt[2].full_flops = 400e12;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_float_equal(plan_attn_rate(p, 65536, 64, false), 364e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 65536, 64, true), 240e12 * 0.91 / 0.85, 1e6);
    assert_float_equal(plan_attn_rate(p, 16384, 64, false), 340e12, 1e6);
    assert_float_equal(plan_attn_rate(p, 8192, 64, false), 320e12, 1e6);
    plan_free(p);
    d->attn.pt[1].full_flops = d->attn.pt[2].full_flops = 0;
    s.prec.compute = SPEC_DT_FP32;
    assert_int_equal(plan_new(&p, &s, NULL), SS_OK);
    assert_float_equal(plan_attn_rate(p, 2048, 64, false), plan_gemm_rate(p, 64), 1.0);
    plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_padded), cmocka_unit_test(test_size_policy),
        cmocka_unit_test(test_modules_policy), cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_costs), cmocka_unit_test(test_attention_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
