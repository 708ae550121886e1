/* State model: per-rank bytes of params, grads, master and optimizer states.
 * Reference numbers: seeds/002 (shared/validation/seed002-v100x4.md), the
 * canonical ZeRO table (P, G, O = 2P for FP32 AdamW without master weights,
 * N = 4, P = 128 MiB) and the FlatParameter padding N * ceil(numel / N). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/mem/states.h"

#define MIB (1024ull * 1024ull)
#define W 4194304ull /* one 2048 x 2048 weight = 16 MiB of FP32 */

static const spec_precision fp32 = {SPEC_DT_FP32, SPEC_DT_FP32, SPEC_DT_FP32,
                                    SPEC_DT_FP32, SPEC_DT_NONE, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
static const spec_optimizer_cfg adamw = {SPEC_OPT_ADAMW, SPEC_IMPL_FOREACH, false};
static const uint64_t eight[8] = {W, W, W, W, W, W, W, W};

static st_bytes run(st_kind k, uint32_t n, uint32_t rank, const uint64_t *numels,
                    uint32_t count, bool orig)
{
    st_input in = {.kind = k, .n = n, .rank = rank, .numels = numels, .count = count,
                   .prec = fp32, .opt = adamw, .use_orig_params = orig};
    st_bytes b;
    assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
    return b;
}

/* Canonical ZeRO, seeds/000 and /002: per rank P/G/O in MiB for P = 128. */
static void test_canonical_stages(void **state)
{
    (void)state;
    static const uint64_t want[4][3] = {
        {128, 128, 256}, {128, 128, 64}, {128, 32, 64}, {32, 32, 64}};
    st_kind kinds[4] = {ST_ZERO0, ST_ZERO1, ST_ZERO2, ST_ZERO3};
    for (int s = 0; s < 4; s++) {
        st_bytes b = run(kinds[s], 4, 3, eight, 8, false);
        assert_int_equal(b.param.physical, want[s][0] * MIB);
        assert_int_equal(b.grad.physical, want[s][1] * MIB);
        assert_int_equal(b.optim.physical, want[s][2] * MIB);
        assert_int_equal(b.master.physical, 0);
    }
}

/* seeds/002 measured rows: ZRO 128/128/64 on every rank (8 equal weights, 2
 * per rank); FSDP SHARD_GRAD_OP and FULL_SHARD 32/32/64 (parameters are
 * sharded at the optimizer boundary, unlike canonical ZeRO-2). */
static void test_seed002_rows(void **state)
{
    (void)state;
    for (uint32_t r = 0; r < 4; r++) {
        st_bytes z = run(ST_ZERO1_ZRO, 4, r, eight, 8, false);
        assert_int_equal(z.param.physical, 128 * MIB);
        assert_int_equal(z.grad.physical, 128 * MIB);
        assert_int_equal(z.optim.physical, 64 * MIB);
        st_bytes g = run(ST_FSDP_SHARD_GRAD_OP, 4, r, eight, 8, true);
        assert_int_equal(g.param.physical, 32 * MIB);
        assert_int_equal(g.grad.physical, 32 * MIB);
        assert_int_equal(g.optim.physical, 64 * MIB);
        st_bytes f = run(ST_FSDP_FULL_SHARD, 4, r, eight, 8, true);
        assert_int_equal(f.total_physical, 128 * MIB);
    }
}

/* 10 elements over 4 ranks: shard 3, padded 12; ranks hold 3, 3, 3, 1 real
 * elements. Physical grads/params are 3 elements each rank; the optimizer
 * of use_orig_params sees only the logical elements. */
static void test_padding(void **state)
{
    (void)state;
    uint64_t ten[1] = {10};
    uint64_t want_log[4] = {3, 3, 3, 1};
    for (uint32_t r = 0; r < 4; r++) {
        st_bytes b = run(ST_FSDP_FULL_SHARD, 4, r, ten, 1, true);
        assert_int_equal(b.param.physical, 3 * 4);
        assert_int_equal(b.param.logical, want_log[r] * 4);
        assert_int_equal(b.optim.physical, want_log[r] * 8);
        st_bytes c = run(ST_FSDP_FULL_SHARD, 4, r, ten, 1, false);
        assert_int_equal(c.optim.physical, 3 * 8);
        assert_int_equal(c.optim.logical, want_log[r] * 8);
    }
    /* Per unit padding adds up: units of 5 and 6 over 4 ranks pad to 8 each:
     * 2 + 2 elements per rank, while one flat buffer of 11 pads to 12 (3). */
    uint64_t two[2] = {5, 6};
    assert_int_equal(run(ST_FSDP_FULL_SHARD, 4, 0, two, 2, false).param.physical, 4 * 4);
    assert_int_equal(run(ST_ZERO3, 4, 0, two, 2, false).param.physical, 3 * 4);
    assert_int_equal(st_shard_logical(10, 4, 3), 1);
    assert_int_equal(st_shard_logical(2, 4, 3), 0);
}

/* N = 1: sharding changes nothing; every state is whole. */
static void test_single_rank(void **state)
{
    (void)state;
    st_kind kinds[] = {ST_ZERO0, ST_ZERO3, ST_ZERO1_ZRO, ST_FSDP_FULL_SHARD};
    for (size_t i = 0; i < 4; i++) {
        st_bytes b = run(kinds[i], 1, 0, eight, 8, false);
        assert_int_equal(b.total_physical, 512 * MIB);
    }
}

/* ZeroRedundancyOptimizer assigns largest first to the least loaded rank:
 * sizes 5, 4, 3, 3, 1 over 2 ranks -> 5:r0, 4:r1, 3:r1, 3:r0, 1:r1
 * (loads 8 and 8). */
static void test_zro_owners(void **state)
{
    (void)state;
    uint64_t sizes[5] = {3, 5, 1, 4, 3};
    uint32_t owner[5];
    assert_int_equal(st_zro_owners(sizes, 5, 2, owner), SS_OK);
    uint32_t want[5] = {1, 0, 1, 1, 0};
    assert_memory_equal(owner, want, sizeof want);
}

/* Mixed precision: bf16 params and grads, fp32 master and Adam moments:
 * per element 2 + 2 + 4 + 8 = 16 bytes under ZeRO-0 (the 16 bytes/param of
 * the ZeRO paper); ZeRO-3 on 4 ranks divides all of it. */
static void test_mixed_precision(void **state)
{
    (void)state;
    spec_precision mp = {SPEC_DT_BF16, SPEC_DT_BF16, SPEC_DT_BF16, SPEC_DT_BF16,
                         SPEC_DT_FP32, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
    uint64_t n[1] = {1000};
    st_input in = {.kind = ST_ZERO0, .n = 4, .rank = 0, .numels = n, .count = 1, .prec = mp, .opt = adamw};
    st_bytes b;
    assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
    assert_int_equal(b.total_physical, 16000);
    in.kind = ST_ZERO3;
    assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
    assert_int_equal(b.total_physical, 4000);
    spec_optimizer_cfg sgd = {SPEC_OPT_SGD, SPEC_IMPL_FOREACH, true};
    assert_int_equal(st_optim_elem_bytes(&sgd, SPEC_DT_FP32), 4);
    sgd.momentum = false;
    assert_int_equal(st_optim_elem_bytes(&sgd, SPEC_DT_FP32), 0);
}

/* A 5T-parameter model with 16 bytes of state per parameter (bf16 params
 * and grads, fp32 master and Adam moments): 8e13 bytes whole under ZeRO-0,
 * 5e12 * 16 / 16384 per rank under ZeRO-3 on 16k ranks, and 16k ranks of
 * it add up to 1.3e18, still inside 64 bits. */
static void test_five_trillion(void **state)
{
    (void)state;
    spec_precision mp = {SPEC_DT_BF16, SPEC_DT_BF16, SPEC_DT_BF16, SPEC_DT_BF16,
                         SPEC_DT_FP32, SPEC_DT_FP32, SPEC_FP8_TENSORWISE, false};
    uint64_t n[1] = {5000000000000ull};
    st_input in = {.kind = ST_ZERO0, .n = 16384, .rank = 0, .numels = n, .count = 1, .prec = mp, .opt = adamw};
    st_bytes b;
    assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
    assert_int_equal(b.total_physical, 80000000000000ull);
    in.kind = ST_ZERO3;
    assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
    uint64_t per = (5000000000000ull + 16383) / 16384;
    assert_int_equal(b.total_physical, per * 16);
    uint64_t all;
    assert_int_equal(ss_mul_u64(b.total_physical, 16384, &all), SS_OK);
    assert_true(all >= 80000000000000ull);
}

/* 2^62 elements x 4 bytes overflows: an error, not a wrapped number. */
static void test_overflow(void **state)
{
    (void)state;
    uint64_t huge[1] = {1ull << 62};
    st_input in = {.kind = ST_ZERO0, .n = 1, .rank = 0, .numels = huge, .count = 1, .prec = fp32, .opt = adamw};
    st_bytes b;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(st_compute(&in, &b, &err), SS_E_OVERFLOW);
    in.rank = 2;
    assert_int_equal(st_compute(&in, &b, NULL), SS_E_INPUT);
}

/* FSDP2: each parameter sharded on its own dim 0. A [10, 3] weight and a
 * [10] bias on 4 ranks: ceil(10 / 4) = 3 rows each, so every rank stores
 * 3 x 3 + 3 = 12 elements (48 B fp32); rank 3 holds 10 - 9 = 1 real row
 * (3 + 1 = 4 elements), and its AdamW states (2 x 4 B per element) cover
 * only those. FSDP1's flat unit of 40 would store 10 per rank. */
static void test_fsdp2_dim0(void **state)
{
    (void)state;
    static const uint64_t numels[2] = {30, 10}, rows[2] = {10, 10};
    for (uint32_t r = 0; r < 4; r++) {
        st_input in = {.kind = ST_FSDP2, .n = 4, .rank = r, .numels = numels, .count = 2,
                       .prec = fp32, .opt = adamw, .rows = rows};
        st_bytes b;
        assert_int_equal(st_compute(&in, &b, NULL), SS_OK);
        uint64_t real = r < 3 ? 12 : 4;
        assert_int_equal(b.param.physical, 12 * 4);
        assert_int_equal(b.grad.physical, 12 * 4);
        assert_int_equal(b.param.logical, real * 4);
        assert_int_equal(b.optim.physical, real * 8);
        assert_int_equal(b.optim.logical, real * 8);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical_stages), cmocka_unit_test(test_seed002_rows),
        cmocka_unit_test(test_padding),          cmocka_unit_test(test_single_rank),
        cmocka_unit_test(test_zro_owners),       cmocka_unit_test(test_mixed_precision),
        cmocka_unit_test(test_overflow),         cmocka_unit_test(test_five_trillion),
        cmocka_unit_test(test_fsdp2_dim0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
