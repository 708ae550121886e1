/* Every data-parallel runtime inside every layout axis (README's table):
 * each cell runs, and rank 0's state bytes and data-parallel collectives
 * (count and bytes, per kind) equal a derivation written here from the
 * runtime's contract, in terms of the stage's parameters on rank 0 (P dense,
 * E routed-expert elements: the plan's per-rank split, which test_layout
 * checks against the model's shapes), its units (U with dense parameters,
 * UE with experts), the micro-batches M, and the group sizes (D = dp x cp
 * dense ranks, S the HSDP shard group: shard_group_size dp ranks with their
 * cp ranks, X = tp cp dp / (ep etp) expert ranks).
 *
 * Dtypes: bf16 parameters and compute, fp32 gradients, reductions, master
 * weights and AdamW states: per element 2 + 4 + 4 + 8 bytes. The models'
 * sizes divide by every group size used, so no padding enters the bytes.
 * Sources of the contracts: canonical ZeRO (seeds/000 section 4: stage 1
 * shards optimizer states, 2 also gradients, 3 also parameters), FSDP
 * (reshards after backward: ZeRO-3 at the optimizer boundary; SHARD_GRAD_OP
 * keeps parameters from forward to backward), HSDP (reduce-scatter in the
 * shard group, all-reduce of the shard across it), Megatron's distributed
 * optimizer ("6 + 12/d bytes per parameter", one reduce-scatter and one
 * all-gather per bucket; bucket_size 1 makes every unit a bucket), DeepSpeed
 * (stage_1_and_2.py: ipg buckets of reduce_bucket_size reduce-scattered,
 * stage 1 once per step, stage 2 every micro-batch; the update all-gathered
 * in allgather_bucket_size pieces; stage 3 gathers per module; the pipeline
 * engine refuses stages 2 and 3). */
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

#define DENSE                                                                                  \
    "{\"name\": \"dense\", \"architecture\": {\"type\": \"transformer\", \"layers\": 8,"       \
    " \"hidden\": 1024, \"heads\": 16, \"kv_heads\": 4, \"ffn_hidden\": 4096,"                 \
    " \"activation\": \"swiglu\", \"vocab\": 1024, \"norm\": \"rmsnorm\"}}"
#define MOE                                                                                    \
    "{\"name\": \"moe\", \"architecture\": {\"type\": \"transformer\", \"layers\": 8,"         \
    " \"hidden\": 1024, \"heads\": 16, \"kv_heads\": 4, \"ffn_hidden\": 4096,"                 \
    " \"activation\": \"swiglu\", \"vocab\": 1024, \"norm\": \"rmsnorm\","                      \
    " \"moe\": {\"experts\": 4, \"top_k\": 2, \"expert_ffn_hidden\": 1024}}}"

typedef struct axis {
    const char *name, *model, *parallel;
    uint32_t accum;
} axis;

static const axis axes[] = {
    {"tp", DENSE, "{\"dp\": 4, \"tp\": 2}", 1},
    {"sp", DENSE, "{\"dp\": 4, \"tp\": 2, \"sequence_parallel\": true}", 1},
    {"cp", DENSE, "{\"dp\": 4, \"cp\": 2}", 1},
    {"pp", DENSE, "{\"dp\": 4, \"pp\": 2}", 4},
    {"uneven pp", DENSE, "{\"dp\": 4, \"pp\": 2, \"pipeline_layers\": [3, 5]}", 4},
    {"ep", MOE, "{\"dp\": 4, \"ep\": 2}", 1},
    {"etp", MOE, "{\"dp\": 4, \"tp\": 2, \"sequence_parallel\": true, \"ep\": 2, \"etp\": 2}", 1},
};

typedef enum {
    R_DDP, R_ZERO1, R_SGO, R_FULL, R_HSDP, R_HSDP2, R_FSDP2, R_MEGATRON, R_DS1, R_DS2, R_DS3, R_N
} rt;
#define DS(stage)                                                                              \
    "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": true}, \"data_types\":"           \
    " {\"grad_accum_dtype\": \"fp32\"}, \"communication_data_type\": \"fp32\","                \
    " \"zero_optimization\": {\"stage\": " #stage "}}"
static const char *const sharding[R_N] = {
    "{\"strategy\": \"ddp\"}",
    "{\"strategy\": \"zero1\"}",
    "{\"strategy\": \"shard_grad_op\"}",
    "{\"strategy\": \"full_shard\"}",
    "{\"strategy\": \"hybrid_shard\", \"shard_group_size\": 2}",
    "{\"strategy\": \"hybrid_shard_zero2\", \"shard_group_size\": 2}",
    "{\"strategy\": \"fsdp2\"}",
    "{\"strategy\": \"megatron\", \"overlap_grad_reduce\": true, \"bucket_size\": 1}",
    DS(1), DS(2), DS(3),
};

/* 0, or the loader's error (DeepSpeed's pipeline engine refuses ZeRO-2/3). */
static int load(const axis *a, rt r, spec_scenario *s, ss_err *err)
{
    char text[4096];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": %s, \"topology\": {\"file\": \"%s/topologies/"
             "h100-ib-fattree.json\", \"nodes\": 2}, \"parallel\": %s, \"training\":"
             " {\"micro_batch\": 1, \"seq_len\": 1024, \"grad_accum\": %u}, \"precision\":"
             " {\"param\": \"bf16\", \"compute\": \"bf16\", \"grad\": \"fp32\", \"reduce\":"
             " \"fp32\", \"master\": \"fp32\", \"optimizer\": \"fp32\"}, \"optimizer\":"
             " {\"type\": \"adamw\", \"impl\": \"fused\"}, \"sharding\": %s}",
             a->model, SS_SOURCE_DIR, a->parallel, a->accum, sharding[r]);
    ss_err_clear(err);
    return scn_load_text("t.json", text, strlen(text), NULL, 0, s, err);
}

/* Rank 0's stage: P, E, U, UE, and the root units (not transformer layers). */
typedef struct stage {
    uint64_t P, E;
    uint32_t U, UE, roots;
} stage;

static stage stage0(const plan *pl)
{
    stage st = {0};
    const char *prev = "";
    uint64_t pp = pl->s->par.pp;
    for (uint32_t i = 0; i < pl->nblocks; i++) {
        const plan_block *b = &pl->blocks[i];
        if (b->chunk % pp) continue;
        st.P += b->numel - b->expert_numel, st.E += b->expert_numel;
        if (strcmp(prev, b->group)) {
            st.U += b->numel > b->expert_numel, st.roots += strncmp(b->group, "layers.", 7) != 0;
        }
        if (b->expert_numel) st.UE++; /* one MoE block per layer */
        prev = b->group;
    }
    return st;
}

/* Rank 0's data-parallel collectives (runtime-named ops), per kind. */
typedef struct dpc {
    uint64_t count[PROG_NCOLLS], bytes[PROG_NCOLLS];
} dpc;

static dpc dp_colls(const run_result *r)
{
    dpc c = {0};
    const prog_op *ops = prog_ops(r->p, 0);
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++) {
        const char *n = prog_str_get(r->p, ops[i].name);
        if (ops[i].kind != PROG_OP_COLL) continue;
        if (strncmp(n, "dp.", 3) && strncmp(n, "zero3.", 6) && strncmp(n, "fsdp.", 5) &&
            strncmp(n, "ds.", 3))
            continue;
        c.count[ops[i].coll]++, c.bytes[ops[i].coll] += ops[i].bytes;
    }
    return c;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static void check_cell(const axis *a, rt r)
{
    spec_scenario s;
    run_result res;
    ss_err err;
    int rc = load(a, r, &s, &err);
    if ((r == R_DS2 || r == R_DS3) && strstr(a->name, "pp")) {
        assert_int_equal(rc, SS_E_INPUT);
        assert_non_null(strstr(err.msg, "incompatible with pipeline parallelism"));
        return;
    }
    if (rc) fail_msg("%s x %s: %s: %s", a->name, sharding[r], err.where, err.msg);
    ss_err_clear(&err);
    if (run_step(&s, NULL, &res, &err))
        fail_msg("%s x %s: %s: %s", a->name, sharding[r], err.where, err.msg);
    stage st = stage0(res.pl);
    /* shard_group_size 2 counts dp ranks; each brings its cp ranks */
    uint64_t D = res.pl->dense_dp, X = res.pl->expert_dp;
    uint64_t S = r == R_HSDP || r == R_HSDP2 ? 2ull * s.par.cp : D;
    uint64_t M = a->accum, all = st.P + st.E, units = st.U + st.UE;
    uint64_t shard = cdiv(st.P, S) + (st.E ? cdiv(st.E, X) : 0);
    bool sharded_params = (r >= R_SGO && r <= R_FSDP2) || r == R_DS3;
    bool sharded_grads = sharded_params || r == R_DS2;
    bool sharded_optim = r != R_DDP;
    /* states: bf16 params, fp32 grads, fp32 master, AdamW fp32 (two moments) */
    uint64_t p_el = sharded_params ? shard : all, o_el = sharded_optim ? shard : all;
    uint64_t g_el = sharded_grads ? shard : all;
    uint64_t parts = (uint64_t)(st.P > 0) + (st.E > 0);
    const st_bytes *b = &res.sum.ranks[0].st;
    print_message("  %-9s x %-18s P %llu E %llu U %u UE %u: states %llu %llu %llu %llu\n",
                  a->name, s.shard.strategy < SPEC_NSTRATEGIES ?
                  spec_strategy_names[s.shard.strategy] : "?", (unsigned long long)st.P,
                  (unsigned long long)st.E, st.U, st.UE, (unsigned long long)b->param.physical,
                  (unsigned long long)b->grad.physical, (unsigned long long)b->master.physical,
                  (unsigned long long)b->optim.physical);
    assert_int_equal(b->param.physical, 2 * p_el);
    assert_int_equal(b->grad.physical, 4 * g_el);
    assert_int_equal(b->master.physical, 4 * o_el);
    assert_int_equal(b->optim.physical, 8 * o_el);
    dpc c = dp_colls(&res);
    uint64_t *n = c.count, *by = c.bytes;
    const int AR = PROG_COLL_ALL_REDUCE, RS = PROG_COLL_REDUCE_SCATTER, AG = PROG_COLL_ALL_GATHER;
    switch (r) {
    case R_DDP:
        assert_int_equal(n[AR], units), assert_int_equal(by[AR], 4 * all);
        assert_int_equal(n[RS] + n[AG], 0);
        break;
    case R_ZERO1:
    case R_MEGATRON: /* every unit a bucket; the update gathered after the step */
        assert_int_equal(n[RS], units), assert_int_equal(by[RS], 4 * all);
        assert_int_equal(n[AG], r == R_ZERO1 ? (uint64_t)(st.P > 0) + (st.E > 0) : units);
        assert_int_equal(by[AG], 2 * all);
        assert_int_equal(n[AR], 0);
        break;
    case R_FULL: /* every unit gathered in each micro-batch's forward and backward */
    case R_HSDP:
        assert_int_equal(n[AG], 2 * M * units), assert_int_equal(by[AG], 2 * M * 2 * all);
        assert_int_equal(n[RS], units), assert_int_equal(by[RS], 4 * all);
        assert_int_equal(n[AR], r == R_HSDP ? st.U : 0);
        assert_int_equal(by[AR], r == R_HSDP ? 4 * st.P / S : 0u);
        break;
    case R_SGO: /* kept from forward to backward: one gather while micro-batches are in flight */
    case R_HSDP2:
        assert_int_equal(n[AG], units), assert_int_equal(by[AG], 2 * all);
        assert_int_equal(n[RS], units), assert_int_equal(by[RS], 4 * all);
        assert_int_equal(n[AR], r == R_HSDP2 ? st.U : 0);
        break;
    case R_FSDP2: /* layers resharded after forward; the root units kept. Under a
                   * pipeline the stage keeps a unit unsharded after each backward
                   * but the last (PyTorch's PipelineStage.backward_maybe_with_nosync:
                   * set_reshard_after_backward(False)), so the next micro-batch's
                   * forward finds it gathered: M backward gathers and one forward */
        assert_int_equal(n[AG], (s.par.pp > 1 ? M + 1 : 2 * M) * (units - st.roots) + st.roots);
        assert_int_equal(n[RS], units), assert_int_equal(by[RS], 4 * all);
        assert_int_equal(n[AR], 0);
        break;
    case R_DS1: /* one ipg bucket per part (5e8 elements hold the stage), once per step, */
    case R_DS2: /* in every micro-batch; all-reduced (use_multi_rank_bucket_allreduce,
                 * DeepSpeed's default from v0.13.0: stage_1_and_2.py allreduce_and_scatter) */
        assert_int_equal(n[AR], (r == R_DS2 ? M : 1) * parts);
        assert_int_equal(by[AR], (r == R_DS2 ? M : 1) * 4 * all);
        assert_int_equal(n[AG], parts), assert_int_equal(by[AG], 2 * all);
        assert_int_equal(n[RS], 0);
        break;
    case R_DS3: /* gathered per unit like ZeRO-3; reduced every micro-batch */
        assert_int_equal(n[AG], 2 * M * units), assert_int_equal(by[AG], 2 * M * 2 * all);
        assert_int_equal(n[RS], M * parts), assert_int_equal(by[RS], M * 4 * all);
        assert_int_equal(n[AR], 0);
        break;
    default: fail();
    }
    run_fini(&res);
    spec_scenario_fini(&s);
}

/* Rank 0's collectives of one kind named `what`.BLOCK: count and bytes. */
static void named(const run_result *r, const char *what, prog_coll k, uint64_t *n, uint64_t *by)
{
    const prog_op *ops = prog_ops(r->p, 0);
    size_t l = strlen(what);
    *n = *by = 0;
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++) {
        const char *nm = prog_str_get(r->p, ops[i].name);
        if (ops[i].kind == PROG_OP_COLL && ops[i].coll == k && !strncmp(nm, what, l) &&
            nm[l] == '.')
            (*n)++, *by += ops[i].bytes;
    }
}

/* Member i of the world group of rank 0's first collective named
 * `what`.BLOCK on a MoE block (or `what`.*.experts); UINT32_MAX if none. */
static uint32_t group_of(const run_result *r, const char *what, uint32_t i)
{
    const prog_op *ops = prog_ops(r->p, 0);
    size_t l = strlen(what);
    for (uint32_t k = 0; k < prog_nops(r->p, 0); k++) {
        const char *nm = prog_str_get(r->p, ops[k].name);
        if (ops[k].kind != PROG_OP_COLL || strncmp(nm, what, l) || nm[l] != '.' ||
            (!strstr(nm, ".moe") && !strstr(nm, "experts")))
            continue;
        prog_group g = prog_group_net(r->p, ops[k].group);
        return i < g.size ? g.ranks[i] : UINT32_MAX;
    }
    return UINT32_MAX;
}

/* Expert tensor parallel (the etp axis: tp 2 with SP, ep 2, etp 2, dp 4;
 * Megatron-core's expert grid etp x ep x edp over a stage's 8 ranks): a
 * rank holds E / ep = 2 experts, each 1 / etp of its SwiGLU FFN (3 h fe /
 * etp elements), on 8 layers; the expert data-parallel group has
 * 8 / (ep etp) = 2 ranks. Per MoE layer and micro-batch the ETP group
 * all-gathers the dispatched tokens and reduce-scatters the outputs, in
 * forward and again in backward: the tokens a rank sends are its sequence
 * share under SP (1024 / tp) times top_k 2 (capacity factor 1), so each
 * collective moves etp x 1024 tokens x h 1024 x 2 bytes (bf16). */
static void test_etp(void **state)
{
    (void)state;
    spec_scenario s;
    run_result res;
    ss_err err;
    const axis *a = &axes[sizeof axes / sizeof *axes - 1];
    assert_string_equal(a->name, "etp");
    if (load(a, R_MEGATRON, &s, &err)) fail_msg("%s: %s", err.where, err.msg);
    if (run_step(&s, NULL, &res, &err)) fail_msg("%s: %s", err.where, err.msg);
    assert_int_equal(res.pl->expert_dp, 2);
    assert_int_equal(stage0(res.pl).E, 8ull * 2 * 3 * 1024 * 1024 / 2);
    uint64_t n, by, per = 2ull * 1024 * 1024 * 2;
    named(&res, "etp.all_gather", PROG_COLL_ALL_GATHER, &n, &by);
    assert_int_equal(n, 8), assert_int_equal(by, 8 * per);
    named(&res, "etp.reduce_scatter", PROG_COLL_REDUCE_SCATTER, &n, &by);
    assert_int_equal(n, 8), assert_int_equal(by, 8 * per);
    named(&res, "etp.all_gather_grad", PROG_COLL_ALL_GATHER, &n, &by);
    assert_int_equal(n, 8), assert_int_equal(by, 8 * per);
    named(&res, "etp.reduce_scatter_grad", PROG_COLL_REDUCE_SCATTER, &n, &by);
    assert_int_equal(n, 8), assert_int_equal(by, 8 * per);
    /* Groups of world rank 0 (rank = t + tp d here): ETP {0, 1}, EP the
     * same place in the next ETP group {0, 2}, expert data parallel the
     * same place in the next etp x ep block {0, 4}. */
    assert_int_equal(group_of(&res, "etp.all_gather", 1), 1);
    assert_int_equal(group_of(&res, "ep.dispatch", 1), 2);
    assert_int_equal(group_of(&res, "dp.reduce_scatter", 1), 4);
    run_fini(&res);
    spec_scenario_fini(&s);
}

/* FSDP under a pipeline on every stage, not only the first: with 1F1B the
 * last stage runs each micro-batch's backward right after its forward, so
 * no micro-batch is in flight between them; PyTorch's PipelineStage still
 * keeps the unit unsharded after every backward but the last
 * (backward_maybe_with_nosync: set_reshard_after_backward(False) and
 * set_requires_gradient_sync(False), post-backward once after the last),
 * so a unit kept from forward to backward (SHARD_GRAD_OP, FSDP2
 * reshard_after_forward false) is gathered once per step on every stage,
 * and reduce-scattered once. */
static void test_pipeline_keeps_units(void **state)
{
    (void)state;
    static const char *const kept[] = {"{\"strategy\": \"shard_grad_op\"}",
                                       "{\"strategy\": \"fsdp2\", \"reshard_after_forward\": false}"};
    const axis *pp = &axes[3];
    assert_string_equal(pp->name, "pp");
    for (size_t k = 0; k < 2; k++) {
        char text[4096];
        spec_scenario s;
        run_result res;
        ss_err err;
        snprintf(text, sizeof text,
                 "{\"name\": \"t\", \"model\": %s, \"topology\": {\"file\": \"%s/topologies/"
                 "h100-ib-fattree.json\", \"nodes\": 2}, \"parallel\": %s, \"training\":"
                 " {\"micro_batch\": 1, \"seq_len\": 1024, \"grad_accum\": 8}, \"optimizer\":"
                 " {\"type\": \"adamw\"}, \"sharding\": %s}",
                 pp->model, SS_SOURCE_DIR, pp->parallel, kept[k]);
        ss_err_clear(&err);
        if (scn_load_text("t.json", text, strlen(text), NULL, 0, &s, &err) ||
            run_step(&s, NULL, &res, &err))
            fail_msg("%s: %s: %s", kept[k], err.where, err.msg);
        assert_int_equal(prog_nranks(res.p), 2); /* one replica: the two stages */
        for (uint32_t rank = 0; rank < 2; rank++) {
            const prog_op *ops = prog_ops(res.p, rank);
            uint32_t ag = 0, rs = 0, units = 0;
            const char *prev = "";
            for (uint32_t i = 0; i < res.pl->nblocks; i++) {
                const plan_block *b = &res.pl->blocks[i];
                if (b->chunk % 2 != rank || !strcmp(prev, b->group)) continue;
                units += b->numel > 0;
                prev = b->group;
            }
            for (uint32_t i = 0; i < prog_nops(res.p, rank); i++) {
                const char *n = prog_str_get(res.p, ops[i].name);
                ag += ops[i].kind == PROG_OP_COLL && !strncmp(n, "fsdp.all_gather.", 16);
                rs += ops[i].kind == PROG_OP_COLL && !strncmp(n, "fsdp.reduce_scatter.", 20);
            }
            print_message("  %s stage %u: %u units, %u all-gathers, %u reduce-scatters\n",
                          kept[k], rank, units, ag, rs);
            assert_true(units > 0);
            assert_int_equal(ag, units);
            assert_int_equal(rs, units);
        }
        run_fini(&res);
        spec_scenario_fini(&s);
    }
}

static void test_every_cell(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof axes / sizeof *axes; i++)
        for (int r = 0; r < R_N; r++) check_cell(&axes[i], (rt)r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_cell),
        cmocka_unit_test(test_etp),
        cmocka_unit_test(test_pipeline_keeps_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
