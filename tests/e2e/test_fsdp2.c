/* End to end for strategy fsdp2 (FSDP2's fully_shard) on shipped scenarios
 * with --set overrides. Expected numbers are computed here from the model
 * files' shapes with FSDP2's per-parameter dim-0 padding (each parameter
 * padded to N * ceil(rows / N) rows; a rank holds ceil(rows / N) of them),
 * FSDP1's flat padding (N * ceil(numel / N)) where the two are compared,
 * and the bus factors of seeds/000 section 4 ((N-1)/N for all-gather and
 * reduce-scatter, 2 (N-1)/N for all-reduce); never from the plan code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/io/scenario.h"
#include "../../sim/run/run.h"
#include "load_run.h"

#define MLP7 "examples/mlp7-full-shard-per-block.json" /* 4 ranks, fp32, AdamW */
#define L8B "fsdp2/llama3-8b-fsdp2-sac-8xh100.json"     /* 8 ranks */
#define HSDP "fsdp2/llama3-8b-hsdp-2x16-raf8-4x8xh100.json"

/* models/mlp7-odd.json: (in, out), all with bias: weight [out, in], bias [out]. */
static const uint64_t shapes[7][2] = {{1001, 999}, {999, 1003}, {1003, 997}, {997, 1009},
                                      {1009, 991}, {991, 1013}, {1013, 10}};

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static uint64_t mlp_numel(int i) { return shapes[i][0] * shapes[i][1] + shapes[i][1]; }
/* FSDP2, N ranks: a rank's elements of layer i (out rows of in + 1 columns,
 * weight and bias together), and the all-gather's padded elements. */
static uint64_t mlp_shard(int i, uint64_t n) { return cdiv(shapes[i][1], n) * (shapes[i][0] + 1); }
static uint64_t mlp_real(int i, uint64_t n, uint64_t r)
{
    uint64_t c = cdiv(shapes[i][1], n), lo = c * r;
    return lo >= shapes[i][1] ? 0 : (shapes[i][1] - lo < c ? shapes[i][1] - lo : c) * (shapes[i][0] + 1);
}

/* Llama-3 8B (models/llama3-8b.json): per layer q [4096, 4096], k and v
 * [1024, 4096], o [4096, 4096], w1 and w3 [14336, 4096], w2 [4096, 14336],
 * two norms [4096]; embed and head [128256, 4096], final norm [4096]. Every
 * dim 0 divides by 8 and 16: no padding on 8 or 16 ranks. */
static const uint64_t L8B_NUMEL = 8030261248ull;

/* Op ids of rank 0 in program order, by name; UINT32_MAX if absent. */
static uint32_t op_index(const run_result *r, const char *name)
{
    const prog_op *ops = prog_ops(r->p, 0);
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++)
        if (!strcmp(prog_str_get(r->p, ops[i].name), name)) return i;
    return UINT32_MAX;
}

static void release(run_result *r, spec_scenario *s)
{
    run_fini(r);
    spec_scenario_fini(s);
}

/* Per-parameter padding on mlp7, 4 ranks: unit i's all-gather moves
 * 4 ceil(out/4) (in + 1) elements (fp32), a rank stores ceil(out/4) (in + 1)
 * of each; rank 3 holds out - 3 ceil(out/4) real rows (layers.6: 10 rows,
 * 3 per rank, rank 3 has 1), and its optimizer (AdamW, two fp32 moments)
 * steps only those. FSDP1's flat padding 4 ceil(numel / 4) differs. */
static void test_padding(void **state)
{
    (void)state;
    const char *sets[] = {"sharding.strategy=fsdp2"};
    spec_scenario s, s1;
    run_result r, r1;
    load_run(MLP7, sets, 1, &s, &r);
    load_run(MLP7, NULL, 0, &s1, &r1); /* FSDP1 FULL_SHARD */
    uint64_t phys = 0, real3 = 0, ag = 0, flat = 0;
    const prog_op *ops = prog_ops(r.p, 0);
    int u = 0;
    for (uint32_t k = 0; k < prog_nops(r.p, 0); k++) {
        if (ops[k].kind != PROG_OP_COLL || ops[k].coll != PROG_COLL_ALL_GATHER ||
            ops[k].phase != PROG_PH_FORWARD)
            continue;
        assert_true(u < 7);
        assert_int_equal(ops[k].bytes, 4 * mlp_shard(u, 4) * 4); /* unit u's all-gather */
        u++;
    }
    assert_int_equal(u, 7);
    for (int i = 0; i < 7; i++) {
        phys += mlp_shard(i, 4);
        real3 += mlp_real(i, 4, 3);
        ag += 4 * mlp_shard(i, 4);
        flat += 4 * cdiv(mlp_numel(i), 4);
    }
    const sum_report *sr = &r.sum;
    assert_int_equal(sr->coll[PROG_COLL_ALL_GATHER].bytes, 2 * ag * 4);
    assert_int_equal(sr->coll[PROG_COLL_REDUCE_SCATTER].bytes, ag * 4);
    for (uint32_t k = 0; k < 4; k++) {
        assert_int_equal(sr->ranks[k].st.param.physical, phys * 4);
        assert_int_equal(sr->ranks[k].st.grad.physical, phys * 4);
    }
    assert_int_equal(sr->ranks[3].st.param.logical, real3 * 4);
    assert_int_equal(sr->ranks[3].st.optim.physical, real3 * 8); /* local (unpadded) shards */
    assert_true(real3 < phys);
    /* FSDP1 pads the flat unit, not each parameter's rows. */
    assert_int_equal(r1.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes, flat * 4);
    assert_true(flat != ag);
    assert_true(r1.sum.ranks[0].st.param.physical != sr->ranks[0].st.param.physical);
    release(&r, &s);
    release(&r1, &s1);
}

/* reshard_after_forward=false is SHARD_GRAD_OP's pattern: one forward
 * all-gather per unit (34: embed, 32 layers, output), none in backward, one
 * reduce-scatter per unit; with no padding on 8 ranks the bytes are the
 * same too (2 B all-gather, 4 B reduce-scatter per element). Keeping the
 * unsharded parameters costs memory: a higher peak than true. */
static void test_reshard_false(void **state)
{
    (void)state;
    const char *no[] = {"sharding.reshard_after_forward=false"};
    const char *sgo[] = {"sharding.strategy=shard_grad_op"};
    spec_scenario s, s2, s3;
    run_result r, r2, r3;
    load_run(L8B, no, 1, &s, &r);
    load_run(L8B, sgo, 1, &s2, &r2);
    load_run(L8B, NULL, 0, &s3, &r3);
    const sum_coll *ag = &r.sum.coll[PROG_COLL_ALL_GATHER], *rs = &r.sum.coll[PROG_COLL_REDUCE_SCATTER];
    const sum_coll *ag2 = &r2.sum.coll[PROG_COLL_ALL_GATHER];
    const sum_coll *rs2 = &r2.sum.coll[PROG_COLL_REDUCE_SCATTER];
    assert_int_equal(ag->phase_count[PROG_PH_FORWARD], 34);
    assert_int_equal(ag->phase_count[PROG_PH_BACKWARD], 0);
    assert_int_equal(rs->count, 34);
    for (int ph = 0; ph < PROG_NPHASES; ph++) {
        assert_int_equal(ag->phase_count[ph], ag2->phase_count[ph]);
        assert_int_equal(ag->phase_bytes[ph], ag2->phase_bytes[ph]);
        assert_int_equal(rs->phase_count[ph], rs2->phase_count[ph]);
        assert_int_equal(rs->phase_bytes[ph], rs2->phase_bytes[ph]);
    }
    assert_int_equal(ag->bytes, L8B_NUMEL * 2);
    assert_int_equal(rs->bytes, L8B_NUMEL * 4);
    assert_true(r.sum.ranks[0].mem.peak > r3.sum.ranks[0].mem.peak);
    release(&r, &s);
    release(&r2, &s2);
    release(&r3, &s3);
}

/* The object form, fully_shard called per module with its own value (as
 * torchtitan keeps its last block unsharded): {"default": true,
 * "layers.31": false} drops that block's backward all-gather, whose bytes
 * are one Llama 3 8B layer in bf16: q and o 4096 x 4096, k and v
 * 4096 x 1024, the MLP 3 x 4096 x 14336, two norms of 4096 (218,112,000
 * elements; every dim 0 divides by 8, no padding). With "default": false
 * only the named unit is gathered again. */
static void test_reshard_per_unit(void **state)
{
    (void)state;
    const char *last[] = {"sharding.reshard_after_forward={\"default\": true, \"layers.31\": false}"};
    const char *one[] = {"sharding.reshard_after_forward={\"default\": false, \"layers.0\": true}"};
    spec_scenario s, s2, s3;
    run_result r, r2, r3;
    load_run(L8B, NULL, 0, &s, &r);
    load_run(L8B, last, 1, &s2, &r2);
    load_run(L8B, one, 1, &s3, &r3);
    const sum_coll *ag = &r.sum.coll[PROG_COLL_ALL_GATHER], *ag2 = &r2.sum.coll[PROG_COLL_ALL_GATHER];
    const uint64_t layer = 2ull * 4096 * 4096 + 2ull * 4096 * 1024 + 3ull * 4096 * 14336 + 2 * 4096;
    assert_int_equal(ag2->phase_count[PROG_PH_FORWARD], ag->phase_count[PROG_PH_FORWARD]);
    assert_int_equal(ag2->phase_count[PROG_PH_BACKWARD], ag->phase_count[PROG_PH_BACKWARD] - 1);
    assert_int_equal(ag->phase_bytes[PROG_PH_BACKWARD] - ag2->phase_bytes[PROG_PH_BACKWARD],
                     layer * 2);
    assert_int_equal(r3.sum.coll[PROG_COLL_ALL_GATHER].phase_count[PROG_PH_BACKWARD], 1);
    release(&r, &s);
    release(&r2, &s2);
    release(&r3, &s3);
}

/* reshard_after_forward=8 on 16 ranks over 2 nodes: forward all-gathers
 * over all 16 ranks, backward ones over ranks 0..7 (rank 0's node); between
 * forward and backward every unit keeps 1/8 of its unsharded bf16
 * parameters: 8030261248 x 2 / 8 bytes at the end of forward, where the
 * peak is, on top of what reshard_after_forward=true holds. */
static void test_reshard_k(void **state)
{
    (void)state;
    /* every rank: the test reads rank 9's groups (folded runs: test_fold.c) */
    const char *k8[] = {"parallel.dp=16", "topology.nodes=2", "sharding.shard_group_size=16",
                        "sharding.reshard_after_forward=8", "parallel.fold=false"};
    const char *kt[] = {"parallel.dp=16", "topology.nodes=2", "sharding.shard_group_size=16",
                        "sharding.reshard_after_forward=true", "parallel.fold=false"};
    spec_scenario s, s2;
    run_result r, r2;
    load_run(HSDP, k8, 5, &s, &r);
    load_run(HSDP, kt, 5, &s2, &r2);
    const prog_op *ops = prog_ops(r.p, 0);
    uint32_t nf = 0, nb = 0;
    for (uint32_t i = 0; i < prog_nops(r.p, 0); i++) {
        if (ops[i].kind != PROG_OP_COLL || ops[i].coll != PROG_COLL_ALL_GATHER) continue;
        prog_group g = prog_group_get(r.p, prog_op_group(r.p, 0, i));
        if (ops[i].phase == PROG_PH_FORWARD) {
            assert_int_equal(g.size, 16);
            nf++;
        } else {
            assert_int_equal(g.size, 8);
            assert_int_equal(g.ranks[0], 0);
            assert_int_equal(g.ranks[7], 7);
            nb++;
        }
    }
    assert_int_equal(nf, 34);
    assert_int_equal(nb, 34);
    /* Rank 9's backward all-gathers run over the second node's first half: ranks 8..15. */
    const prog_op *o9 = prog_ops(r.p, 9);
    for (uint32_t i = 0; i < prog_nops(r.p, 9); i++)
        if (o9[i].kind == PROG_OP_COLL && o9[i].coll == PROG_COLL_ALL_GATHER &&
            o9[i].phase == PROG_PH_BACKWARD)
            assert_int_equal(prog_group_get(r.p, prog_op_group(r.p, 9, i)).ranks[0], 8);
    double kept = (double)L8B_NUMEL * 2 / 8;
    double extra = (double)r.sum.ranks[0].mem.peak - (double)r2.sum.ranks[0].mem.peak;
    assert_true(extra > 0.95 * kept && extra < 1.05 * kept);
    assert_int_equal(r.sum.ranks[0].mem.peak_by_cat[PROG_MEM_PARAM_UNSHARDED] >= (uint64_t)kept, 1);
    release(&r, &s);
    release(&r2, &s2);
}

/* seeds/000 section 4: at equal dtype full sharding moves 3 (N-1)/N Psi bus
 * bytes (two all-gathers and a reduce-scatter of the parameters) against
 * DDP's 2 (N-1)/N Psi (one all-reduce): 1.5x, up to mlp7's padding; with a
 * bf16 all-gather and an fp32 reduce-scatter the bytes follow the dtypes:
 * 2 x 2 B + 4 B per padded element. */
static void test_bytes_table(void **state)
{
    (void)state;
    const char *f2[] = {"sharding.strategy=fsdp2"};
    const char *ddp[] = {"sharding.strategy=ddp"};
    /* bf16 needs a device that computes in it: mlp7 on 4 of an HGX node's H100s. */
    const char *mixed[] = {"sharding.strategy=fsdp2", "precision.param=fp32",
                           "precision.compute=bf16", "precision.reduce=fp32", "precision.grad=fp32",
                           "topology=../../topologies/h100x8-hgx.json"};
    spec_scenario s, s2, s3;
    run_result r, r2, r3;
    load_run(MLP7, f2, 1, &s, &r);
    load_run(MLP7, ddp, 1, &s2, &r2);
    load_run(MLP7, mixed, 6, &s3, &r3);
    double n = 4, bus = (n - 1) / n;
    double fs = bus * (double)(r.sum.coll[PROG_COLL_ALL_GATHER].bytes +
                               r.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes);
    double dp = 2 * bus * (double)r2.sum.coll[PROG_COLL_ALL_REDUCE].bytes;
    assert_true(fs / dp > 1.49 && fs / dp < 1.51);
    uint64_t padded = 0;
    for (int i = 0; i < 7; i++) padded += 4 * mlp_shard(i, 4);
    assert_int_equal(r3.sum.coll[PROG_COLL_ALL_GATHER].bytes, 2 * padded * 2);
    assert_int_equal(r3.sum.coll[PROG_COLL_REDUCE_SCATTER].bytes, padded * 4);
    release(&r, &s);
    release(&r2, &s2);
    release(&r3, &s3);
}

/* HSDP on a (2, 16) mesh: after each of the 34 reduce-scatters one
 * all-reduce of the fp32 shard (numel / 16 elements in all) over the
 * replicate group {r, r + 16}. */
static void test_hsdp(void **state)
{
    (void)state;
    const char *every[] = {"parallel.fold=false"}; /* reads rank 3's groups */
    spec_scenario s;
    run_result r;
    load_run(HSDP, every, 1, &s, &r);
    const sum_coll *ar = &r.sum.coll[PROG_COLL_ALL_REDUCE];
    assert_int_equal(ar->count, 34);
    assert_int_equal(ar->bytes, L8B_NUMEL / 16 * 4);
    const prog_op *ops = prog_ops(r.p, 3);
    for (uint32_t i = 0; i < prog_nops(r.p, 3); i++) {
        if (ops[i].kind != PROG_OP_COLL || ops[i].coll != PROG_COLL_ALL_REDUCE) continue;
        prog_group g = prog_group_get(r.p, prog_op_group(r.p, 3, i));
        assert_int_equal(g.size, 2);
        assert_int_equal(g.ranks[0], 3);
        assert_int_equal(g.ranks[1], 19);
    }
    assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].count, 34);
    release(&r, &s);
}

/* Gradient accumulation over 3 micro-batches on mlp7 (7 units): no_sync
 * (set_requires_gradient_sync(False) but on the last) reduce-scatters 7
 * times, without it 3 x 7; both gather 3 x 14 times. */
static void test_no_sync(void **state)
{
    (void)state;
    const char *yes[] = {"sharding.strategy=fsdp2", "training.grad_accum=3"};
    const char *no[] = {"sharding.strategy=fsdp2", "training.grad_accum=3", "sharding.no_sync=false"};
    spec_scenario s, s2;
    run_result r, r2;
    load_run(MLP7, yes, 2, &s, &r);
    load_run(MLP7, no, 3, &s2, &r2);
    assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].count, 7);
    assert_int_equal(r2.sum.coll[PROG_COLL_REDUCE_SCATTER].count, 21);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].count, 42);
    assert_int_equal(r2.sum.coll[PROG_COLL_ALL_GATHER].count, 42);
    /* Accumulating unsharded gradients costs memory no_sync=false does not hold. */
    assert_true(r.sum.ranks[0].mem.peak > r2.sum.ranks[0].mem.peak);
    release(&r, &s);
    release(&r2, &s2);
}

/* Explicit prefetch changes the issue order. mlp7's units: root (empty),
 * then layers.0 .. layers.6 as units 1 .. 7. Without a list the second
 * unit's all-gather is issued in its own pre-forward, after layers.0's
 * forward; with modules_to_forward_prefetch=2 (or a list naming it) it is
 * issued in layers.0's pre-forward, before that forward. */
static void test_prefetch_order(void **state)
{
    (void)state;
    const char *none[] = {"sharding.strategy=fsdp2"};
    const char *two[] = {"sharding.strategy=fsdp2", "sharding.modules_to_forward_prefetch=2"};
    const char *list[] = {"sharding.strategy=fsdp2",
                          "sharding.modules_to_forward_prefetch={\"layers.0\": [\"layers.3\"]}"};
    const char *bwd[] = {"sharding.strategy=fsdp2",
                         "sharding.modules_to_backward_prefetch={\"layers.6\": [\"layers.4\"]}"};
    spec_scenario s[4];
    run_result r[4];
    load_run(MLP7, none, 1, &s[0], &r[0]);
    load_run(MLP7, two, 2, &s[1], &r[1]);
    load_run(MLP7, list, 2, &s[2], &r[2]);
    load_run(MLP7, bwd, 2, &s[3], &r[3]);
    assert_true(op_index(&r[0], "fsdp2.all_gather.u2") > op_index(&r[0], "fwd.layers.0"));
    assert_true(op_index(&r[1], "fsdp2.all_gather.u2") < op_index(&r[1], "fwd.layers.0"));
    assert_true(op_index(&r[1], "fsdp2.all_gather.u3") < op_index(&r[1], "fwd.layers.0"));
    assert_true(op_index(&r[1], "fsdp2.all_gather.u4") > op_index(&r[1], "fwd.layers.0"));
    assert_true(op_index(&r[2], "fsdp2.all_gather.u4") < op_index(&r[2], "fwd.layers.0"));
    assert_true(op_index(&r[2], "fsdp2.all_gather.u2") > op_index(&r[2], "fwd.layers.0"));
    /* Backward: the first op named for a unit is its forward one; find the
     * backward all-gathers by position after the loss. With the list,
     * layers.6 (unit 7) prefetches layers.4 (unit 5) instead of layers.5. */
    uint32_t loss = op_index(&r[3], "loss.backward");
    const prog_op *ops = prog_ops(r[3].p, 0);
    uint32_t first = UINT32_MAX, second = UINT32_MAX;
    for (uint32_t i = loss; i < prog_nops(r[3].p, 0); i++) {
        if (ops[i].kind != PROG_OP_COLL || ops[i].coll != PROG_COLL_ALL_GATHER) continue;
        if (first == UINT32_MAX) first = i;
        else if (second == UINT32_MAX) second = i;
    }
    assert_string_equal(prog_str_get(r[3].p, ops[first].name), "fsdp2.all_gather.u7");
    assert_string_equal(prog_str_get(r[3].p, ops[second].name), "fsdp2.all_gather.u5");
    for (int i = 0; i < 4; i++) release(&r[i], &s[i]);
}

/* FSDP2 defers the free of forward's last all-gather output to the next
 * forward (all_gather_state): at the optimizer boundary a rank holds its
 * parameters and optimizer states plus the gathered bf16 output unit (final norm [4096] and head
 * [128256, 4096]), up to the allocator's 512-byte rounding. */
static void test_deferred_all_gather(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run(L8B, NULL, 0, &s, &r);
    double out_unit = (4096.0 + 128256.0 * 4096.0) * 2;
    const st_bytes *st = &r.sum.ranks[0].st; /* zero_grad(set_to_none) dropped the gradients */
    double kept = (double)(st->param.physical + st->master.physical + st->optim.physical);
    double extra = (double)r.sum.ranks[0].mem.end - kept;
    assert_true(extra >= out_unit && extra < out_unit + 1024 * 1024);
    release(&r, &s);
}

/* An unknown unit name is an input error naming the JSON path. */
static void test_prefetch_unknown(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, MLP7);
    const char *sets[] = {"sharding.strategy=fsdp2",
                          "sharding.modules_to_backward_prefetch={\"layers.0\": [\"layers.70\"]}"};
    spec_scenario s;
    run_result r = {0};
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scn_load(path, sets, 2, &s, &err), SS_OK);
    assert_int_equal(run_step(&s, NULL, &r, &err), SS_E_INPUT);
    assert_non_null(strstr(err.msg, "$.sharding.modules_to_backward_prefetch[\"layers.0\"][0]"));
    assert_non_null(strstr(err.msg, "layers.70"));
    spec_scenario_fini(&s);
}

/* Defect fixed in issue 19 (a): the host issues FSDP2's whole step in a few
 * milliseconds, far ahead of the GPU. The peak's time and the memory series
 * are on the step's time base: the peak is shown no earlier than the start
 * of its op on the GPU, the series never goes back in time and reaches the
 * second half of the step. */
static void test_peak_time_base(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    load_run(L8B, NULL, 0, &s, &r);
    const mem_rank *m = &r.sum.ranks[0].mem;
    assert_true(m->peak_op != UINT32_MAX);
    const trc_op *o = &r.t->ops[0][m->peak_op];
    assert_true(o->issue < o->start); /* the host ran ahead: the case that went wrong */
    assert_true(m->peak_t >= o->start && m->peak_t <= r.t->step_ns);
    assert_true(m->nseries > 0);
    for (size_t i = 1; i < m->nseries; i++) assert_true(m->series[i].t >= m->series[i - 1].t);
    assert_true(m->series[m->nseries - 1].t > r.t->step_ns / 2);
    release(&r, &s);
}

/* Tensors of rank 0 live at its peak whose name ends with `suffix`. */
static uint32_t live_at_peak(const run_result *r, const char *suffix)
{
    const mem_rank *m = &r->sum.ranks[0].mem;
    const prog_tensor *ts = prog_tensors(r->p, 0);
    size_t n = strlen(suffix);
    uint32_t k = 0;
    for (uint32_t i = 0; i < m->npeak_live; i++) {
        const char *nm = prog_str_get(r->p, ts[m->peak_live[i]].name);
        size_t l = strlen(nm);
        k += l >= n && !strcmp(nm + l - n, suffix);
    }
    return k;
}

/* Defect fixed in issue 19 (b): CPUOffloadPolicy drops a unit's device copy
 * of its shard once the copy-in has used it, and each reduced gradient
 * shard once its copy to the host is issued (torch/distributed/fsdp/
 * _fully_shard/_fsdp_collectives.py: no record_stream, the stream orders
 * the reuse). So at the peak at most the units being gathered (the current
 * one and one prefetched) hold a device shard, no reduced gradient shard
 * piles up, and offload lowers the peak by at least the fp32 parameter
 * shards it moves off the device (8,030,261,248 x 4 / 8 bytes). */
static void test_offload_frees_device_copies(void **state)
{
    (void)state;
    const char *sets[] = {"offload.params=\"cpu\"", "offload.host_memory_gib=2048",
                          "precision.param=\"fp32\"", "precision.master=\"none\""};
    spec_scenario s, s0;
    run_result r, r0;
    load_run(L8B, sets, 4, &s, &r);
    load_run(L8B, sets + 2, 2, &s0, &r0);
    assert_true(live_at_peak(&r, ".shard.device") <= 2);
    assert_int_equal(live_at_peak(&r, ".grad_shard.device"), 0);
    double shard = (double)L8B_NUMEL * 4 / 8;
    assert_true((double)r.sum.ranks[0].mem.peak <= (double)r0.sum.ranks[0].mem.peak - shard);
    release(&r, &s);
    release(&r0, &s0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_padding),       cmocka_unit_test(test_reshard_false),
        cmocka_unit_test(test_reshard_k),     cmocka_unit_test(test_bytes_table),
        cmocka_unit_test(test_hsdp),          cmocka_unit_test(test_no_sync),
        cmocka_unit_test(test_prefetch_order), cmocka_unit_test(test_prefetch_unknown),
        cmocka_unit_test(test_deferred_all_gather),
        cmocka_unit_test(test_reshard_per_unit),
        cmocka_unit_test(test_peak_time_base),
        cmocka_unit_test(test_offload_frees_device_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
