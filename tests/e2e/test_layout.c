/* Model-parallel layouts: what one rank holds and moves, the pipeline
 * bubble, and activation memory per layer.
 *
 * Sources of the expected numbers:
 * - Parameter division: Megatron-LM's column/row-parallel linears (Shoeybi
 *   et al. 2019): every weight of a layer splits over tp, the norms are
 *   replicated; the embedding and head are vocab-parallel.
 * - Expert parallel with expert tensor parallel 1 (Megatron-core's default):
 *   a rank holds E / ep whole experts; its dispatch all-to-all sends each of
 *   its tokens to top_k experts, capacity factor cf: ts k cf h bytes/elem.
 * - The 1F1B bubble: (pp - 1) / (m + pp - 1) of the step (Narayanan et al.
 *   2021, section 2.2); interleaved with v chunks: (pp - 1) / (v m + pp - 1).
 * - Activations: Korthikanti et al. 2022 ("Reducing Activation
 *   Recomputation in Large Transformer Models"), table 2: per layer
 *   sbh (34 + 5as/h) without parallelism, sbh (10 + 24/t + 5as/(ht)) with
 *   tensor parallel, sbh/t (34 + 5as/h) with sequence parallel, and 2sbh
 *   with full recomputation. shardsim models FlashAttention and no dropout:
 *   the 5as^2b score terms become the 4-byte logsumexp per head and token
 *   (4sba), and the two sbh dropout masks are absent, so the expected
 *   figures are 34 - 2 = 32 sbh, 8 + 24/t, 32/t (sbh bytes with 2-byte
 *   activations, as the paper counts them). Korthikanti's "selective"
 *   recomputation drops exactly the s^2 terms, which FlashAttention never
 *   stores: it is shardsim's "none". shardsim's "selective" also recomputes
 *   the attention core's output (2sbh/t less).
 */
#include <math.h>
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
#include "plan_find.h"

/* A GPT-like layer as Korthikanti counts it: MHA, 4h GELU MLP, LayerNorm,
 * biases; a small vocabulary so that the first and last pipeline stages do
 * the same work as the others. */
static const char gpt_like[] =
    "{\"name\": \"gpt-like\", \"architecture\": {\"type\": \"transformer\", \"layers\": 8,"
    " \"hidden\": 4096, \"heads\": 32, \"ffn_hidden\": 16384, \"activation\": \"gelu\","
    " \"vocab\": 128, \"bias\": true, \"norm\": \"layernorm\"}}";

/* model: a JSON object, or a file under models/ by name; sharding: a
 * strategy's name, or the whole sharding object. */
static void load(const char *model, const char *topology, const char *parallel,
                 const char *training, const char *sharding, spec_scenario *s)
{
    char m[1024], sh[1024], text[4096];
    if (model[0] == '{') snprintf(m, sizeof m, "%s", model);
    else snprintf(m, sizeof m, "\"%s/models/%s.json\"", SS_SOURCE_DIR, model);
    if (sharding[0] == '{') snprintf(sh, sizeof sh, "%s", sharding);
    else snprintf(sh, sizeof sh, "{\"strategy\": \"%s\"}", sharding);
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": %s, \"topology\": %s, \"parallel\": %s,"
             " \"training\": %s, \"precision\": {\"param\": \"bf16\", \"master\": \"fp32\"},"
             " \"optimizer\": {\"type\": \"adamw\"}, \"sharding\": %s}",
             m, topology, parallel, training, sh);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load_text("t.json", text, strlen(text), NULL, 0, s, &err))
        fail_msg("%s: %s", err.where, err.msg);
}

static char topo_buf[512];

static const char *hgx(unsigned nodes)
{
    snprintf(topo_buf, sizeof topo_buf,
             "{\"file\": \"%s/topologies/h100-ib-fattree.json\", \"nodes\": %u}", SS_SOURCE_DIR,
             nodes);
    return topo_buf;
}

static plan *plan_of(spec_scenario *s)
{
    plan *p;
    ss_err err;
    ss_err_clear(&err);
    if (plan_new(&p, s, &err)) fail_msg("%s", err.msg);
    return p;
}

static void run_of(const spec_scenario *s, run_result *r)
{
    ss_err err;
    ss_err_clear(&err);
    if (run_step(s, NULL, r, &err)) fail_msg("%s: %s", err.where, err.msg);
}

/* Llama 3 8B, tp = 2: every weight halves, the 2 x 32 + 1 RMSNorm vectors
 * of 4096 stay whole. */
static void test_tp_parameters(void **state)
{
    (void)state;
    spec_scenario s;
    load("llama3-8b", hgx(1), "{\"dp\": 4, \"tp\": 2, \"sequence_parallel\": true}",
         "{\"micro_batch\": 1, \"seq_len\": 4096}", "zero1", &s);
    plan *p = plan_of(&s);
    uint64_t norms = (2 * 32 + 1) * 4096ull;
    assert_int_equal(p->model_numel, 8030261248ull);
    assert_int_equal(p->total_numel, (p->model_numel - norms) / 2 + norms);
    /* q and o 4096 x 4096, k and v 4096 x 1024 (8 KV heads, 4 per rank) */
    uint64_t attn = 4096 + (2 * 4096ull * 4096 + 2 * 4096ull * 1024) / 2;
    assert_int_equal(plan_find(p, "layers.7.attn")->numel, attn);
    assert_int_equal(p->dense_dp, 4);
    plan_free(p);
    spec_scenario_fini(&s);
}

/* Parameters per chunk into per[0 .. 4) (every test here has 4 chunks);
 * returns one llama3-8b layer's parameters (attention and MLP). */
static uint64_t chunk_numels(const plan *p, uint64_t per[4])
{
    for (uint32_t k = 0; k < 4; k++) per[k] = 0;
    for (uint32_t i = 0; i < p->nblocks; i++) per[p->blocks[i].chunk] += p->blocks[i].numel;
    return plan_find(p, "layers.0.attn")->numel + plan_find(p, "layers.0.mlp")->numel;
}

/* pp = 4 over 32 layers: 8 layers a stage; the embedding on the first, the
 * final norm and the head on the last. */
static void test_pp_parameters(void **state)
{
    (void)state;
    spec_scenario s;
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"pp\": 4}",
         "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}", "zero1", &s);
    plan *p = plan_of(&s);
    uint64_t per_stage[4];
    uint64_t layer = chunk_numels(p, per_stage);
    uint64_t vocab = 128256ull * 4096;
    assert_int_equal(per_stage[0], 8 * layer + vocab);
    assert_int_equal(per_stage[1], 8 * layer);
    assert_int_equal(per_stage[2], 8 * layer);
    assert_int_equal(per_stage[3], 8 * layer + 4096 + vocab);
    assert_int_equal(p->total_numel, p->model_numel);
    plan_free(p);
    spec_scenario_fini(&s);
}

/* Uneven stages, as Megatron-core spells them: pp = 4 over 32 layers with
 * num_layers_in_first_pipeline_stage 6 and _last_ 10 leaves 16 layers for
 * the two middle stages, 8 each; pipeline_layers gives every chunk. The
 * embedding stays on the first stage, the norm and head on the last. */
static void test_uneven_stages(void **state)
{
    (void)state;
    static const char *const par[] = {
        "{\"dp\": 2, \"pp\": 4, \"num_layers_in_first_pipeline_stage\": 6,"
        " \"num_layers_in_last_pipeline_stage\": 10}",
        "{\"dp\": 2, \"pp\": 4, \"pipeline_layers\": [6, 8, 8, 10]}",
        "{\"dp\": 1, \"pp\": 2, \"virtual_stages\": 2, \"pipeline_schedule\": \"interleaved\","
        " \"pipeline_layers\": [6, 8, 8, 10]}",
    };
    for (int k = 0; k < 3; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), par[k],
             "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}", "zero1", &s);
        plan *p = plan_of(&s);
        uint64_t per_chunk[4];
        uint64_t layer = chunk_numels(p, per_chunk);
        uint64_t vocab = 128256ull * 4096;
        assert_int_equal(per_chunk[0], 6 * layer + vocab);
        assert_int_equal(per_chunk[1], 8 * layer);
        assert_int_equal(per_chunk[2], 8 * layer);
        assert_int_equal(per_chunk[3], 10 * layer + 4096 + vocab);
        assert_int_equal(plan_find(p, "layers.5.mlp")->chunk, 0);
        assert_int_equal(plan_find(p, "layers.6.attn")->chunk, 1);
        assert_int_equal(plan_find(p, "layers.22.mlp")->chunk, 3);
        plan_free(p);
        /* and the step runs: stage 0 (or chunks 0 and 2) holds what it should */
        run_result r;
        run_of(&s, &r);
        assert_true(r.sum.step_ns > 0);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* The first and the last chunk may hold no layer: the embedding alone on
 * chunk 0 and the norm and head alone on the last, as Megatron-core's
 * pipeline_model_parallel_layout writes "E|t*16|t*16|L" (and Llama 3 405B's
 * 126 layers run on 16 x 8 chunks). pp 2 x 2 virtual stages over 32
 * layers: chunks 1 and 2 hold 16 each. A layer assigned to an empty chunk,
 * or a head left on a transformer chunk, would show in the sums. */
static void test_empty_end_chunks(void **state)
{
    (void)state;
    spec_scenario s;
    load("llama3-8b", hgx(1),
         "{\"dp\": 1, \"pp\": 2, \"virtual_stages\": 2, \"pipeline_schedule\": \"interleaved\","
         " \"pipeline_layers\": [0, 16, 16, 0]}",
         "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}", "zero1", &s);
    plan *p = plan_of(&s);
    uint64_t per_chunk[4];
    uint64_t layer = chunk_numels(p, per_chunk);
    uint64_t vocab = 128256ull * 4096;
    assert_int_equal(per_chunk[0], vocab);
    assert_int_equal(per_chunk[1], 16 * layer);
    assert_int_equal(per_chunk[2], 16 * layer);
    assert_int_equal(per_chunk[3], 4096 + vocab);
    assert_int_equal(plan_find(p, "layers.0.attn")->chunk, 1);
    assert_int_equal(plan_find(p, "layers.31.mlp")->chunk, 2);
    plan_free(p);
    /* The step runs, and is not the even split's [8, 8, 8, 8] (a zero
     * read as "split evenly" would give the same step). */
    run_result a, b;
    run_of(&s, &a);
    spec_scenario_fini(&s);
    load("llama3-8b", hgx(1),
         "{\"dp\": 1, \"pp\": 2, \"virtual_stages\": 2, \"pipeline_schedule\": \"interleaved\","
         " \"pipeline_layers\": [8, 8, 8, 8]}",
         "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}", "zero1", &s);
    run_of(&s, &b);
    assert_true(a.sum.step_ns > 0 && b.sum.step_ns > 0);
    assert_true(a.sum.step_ns != b.sum.step_ns);
    run_fini(&a);
    run_fini(&b);
    spec_scenario_fini(&s);
}

/* The 5T MoE, ep = 64: 512 / 64 = 8 whole experts (3 x 12288 x 4096 each)
 * per rank per layer; the router and the shared expert on every rank. One
 * rank's dispatch: its 131072 / 16 = 8192 tokens x top-16 x cf x 12288 x 2
 * bytes; the imbalance changes the busiest rank's compute, not the bytes a
 * rank sends. */
static void test_ep_parameters_and_dispatch(void **state)
{
    (void)state;
    const char *cfs[] = {"", ", \"capacity_factor\": 1.25"};
    double cf[] = {1.0, 1.25};
    for (int k = 0; k < 2; k++) {
        char model[1024];
        snprintf(model, sizeof model,
                 "{\"name\": \"moe\", \"architecture\": {\"type\": \"transformer\", \"layers\": 64,"
                 " \"hidden\": 12288, \"heads\": 96, \"kv_heads\": 8, \"head_dim\": 128,"
                 " \"ffn_hidden\": 49152, \"activation\": \"swiglu\", \"vocab\": 128000,"
                 " \"norm\": \"rmsnorm\", \"moe\": {\"experts\": 512, \"top_k\": 16,"
                 " \"shared_experts\": 1, \"expert_ffn_hidden\": 4096%s}}}",
                 cfs[k]);
        spec_scenario s;
        load(model, "{\"file\": \"" SS_SOURCE_DIR "/topologies/accel-torus.json\", \"nodes\": 4096}",
             "{\"dp\": 16, \"cp\": 16, \"pp\": 16, \"ep\": 64, \"expert_imbalance\": 1.5}",
             "{\"micro_batch\": 1, \"seq_len\": 131072, \"grad_accum\": 16}", "zero1", &s);
        plan *p = plan_of(&s);
        const plan_block *b = plan_find(p, "layers.5.moe");
        uint64_t expert = 3ull * 12288 * 4096;
        assert_int_equal(b->expert_numel, 8 * expert);
        assert_int_equal(b->numel, b->expert_numel + 12288 + 12288ull * 512 + expert);
        uint64_t sent = (uint64_t)(8192 * 16 * cf[k] + 0.5);
        assert_int_equal(b->ep_bytes, sent * 12288 * 2);
        assert_int_equal(p->expert_dp, 16 * 16 / 64);
        plan_free(p);
        spec_scenario_fini(&s);
    }
}

/* Activation bytes one layer keeps for backward on one rank: each block's
 * input (unless full recomputation re-runs it) and what it saves. */
static double layer_bytes(const plan *p, unsigned l)
{
    char a[32], m[32];
    snprintf(a, sizeof a, "layers.%u.attn", l);
    snprintf(m, sizeof m, "layers.%u.mlp", l);
    const plan_block *x = plan_find(p, a), *y = plan_find(p, m);
    return (double)(x->in_bytes + x->saved_bytes + y->saved_bytes +
                    (y->recompute_input ? 0 : y->in_bytes));
}

static double korthikanti_case(const char *parallel, const char *recompute, const char *strategy)
{
    char training[256];
    snprintf(training, sizeof training,
             "{\"micro_batch\": 2, \"seq_len\": 2048, \"recompute\": \"%s\","
             " \"kernels\": \"fused\"}", recompute);
    spec_scenario s;
    load(gpt_like, hgx(1), parallel, training, strategy, &s);
    plan *p = plan_of(&s);
    double v = layer_bytes(p, 3);
    plan_free(p);
    spec_scenario_fini(&s);
    return v;
}

static void test_korthikanti_activations(void **state)
{
    (void)state;
    const double s = 2048, b = 2, h = 4096, a = 32, t = 4, sbh = s * b * h, lse = 4 * s * b * a;
    /* Megatron's sequence parallel keeps each linear's input as the rank's
     * 1/t shard (the paper's formula); PyTorch's DTensor (zero1 here)
     * keeps the gathered input of the QKV and of the MLP's first linears,
     * 2 sbh each, where Megatron keeps 2 sbh / t: 4 sbh (1 - 1/t) more */
    struct {
        const char *par, *recompute, *strategy;
        double want;
    } rows[] = {
        {"{\"dp\": 8}", "none", "megatron", 32 * sbh + lse},
        {"{\"dp\": 2, \"tp\": 4}", "none", "megatron", (8 + 24 / t) * sbh + lse / t},
        {"{\"dp\": 2, \"tp\": 4, \"sequence_parallel\": true}", "none", "megatron",
         32 * sbh / t + lse / t},
        {"{\"dp\": 8}", "selective", "megatron", 30 * sbh + lse},
        {"{\"dp\": 8}", "full", "megatron", 2 * sbh},
        {"{\"dp\": 2, \"tp\": 4, \"sequence_parallel\": true}", "full", "megatron", 2 * sbh / t},
        {"{\"dp\": 2, \"tp\": 4, \"sequence_parallel\": true}", "none", "zero1",
         32 * sbh / t + 4 * sbh * (1 - 1 / t) + lse / t},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double got = korthikanti_case(rows[i].par, rows[i].recompute, rows[i].strategy);
        print_message("  %-50s %-9s %-8s %6.2f sbh (expected %6.2f)\n", rows[i].par,
                      rows[i].recompute, rows[i].strategy, got / sbh, rows[i].want / sbh);
        if (got != rows[i].want)
            fail_msg("%s %s: %.0f bytes, expected %.0f", rows[i].par, rows[i].recompute, got,
                     rows[i].want);
    }
}

/* The bubble on the first stage: 1 - (its forward and backward compute) /
 * (from its first op to its last backward). */
static double stage0_bubble(unsigned pp, unsigned m, unsigned v)
{
    char par[160], training[160];
    snprintf(par, sizeof par, "{\"dp\": 1, \"pp\": %u%s}", pp,
             v > 1 ? ", \"pipeline_schedule\": \"interleaved\", \"virtual_stages\": 2" : "");
    snprintf(training, sizeof training,
             "{\"micro_batch\": 1, \"seq_len\": 2048, \"grad_accum\": %u}", m);
    spec_scenario s;
    load(gpt_like, hgx(1), par, training, "zero1", &s);
    s.topo.device.op_host_ns = 0; /* the raw launch: the schedule's bubble, not the host's */
    run_result r;
    ss_err err;
    ss_err_clear(&err);
    if (run_step(&s, NULL, &r, &err)) fail_msg("%s", err.msg);
    const prog_op *ops = prog_ops(r.p, 0);
    ss_ns first = UINT64_MAX, last = 0, busy = 0;
    for (uint32_t i = 0; i < prog_nops(r.p, 0); i++) {
        const trc_op *o = &r.t->ops[0][i];
        if (ops[i].kind != PROG_OP_COMPUTE || ops[i].phase == PROG_PH_OPTIMIZER) continue;
        if (o->start < first) first = o->start;
        if (o->end > last) last = o->end;
        busy += o->end - o->start;
    }
    run_fini(&r);
    spec_scenario_fini(&s);
    return 1.0 - (double)busy / (double)(last - first);
}

static void test_pipeline_bubble(void **state)
{
    (void)state;
    struct { unsigned pp, m, v; } rows[] = {{4, 4, 1}, {4, 8, 1}, {4, 16, 1}, {2, 8, 1}, {4, 8, 2}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double want = (rows[i].pp - 1.0) / (rows[i].v * rows[i].m + rows[i].pp - 1.0);
        double got = stage0_bubble(rows[i].pp, rows[i].m, rows[i].v);
        print_message("  pp %u m %2u v %u: bubble %.4f (expected %.4f)\n", rows[i].pp, rows[i].m,
                      rows[i].v, got, want);
        /* The formula counts no communication; here the activation and
         * gradient sends between stages (16 MiB over NVLink, under 1% of a
         * stage's micro-batch each) and the host's wait after each receive
         * sit on the critical path of every cycle, twice as many with two
         * chunks: the bubble may exceed it by that, never undercut it. */
        if (got < want - 0.005 || got > want + 0.02)
            fail_msg("pp %u m %u v %u: bubble %.4f, expected %.4f", rows[i].pp, rows[i].m,
                     rows[i].v, got, want);
    }
}

/* Folding simulates one replica of tp x pp = 4 ranks instead of all 16; it
 * must give the every-rank answer on this symmetric layout: the same memory
 * exactly and the same step within 1e-8 (the other replicas' TP and
 * pipeline traffic rides on replica 0's groups as copies, so the network
 * sees the whole job; one flow carrying a group and its copies rounds its
 * sums in another order than their separate flows, a few ns in 0.57 s;
 * without the copies folding was 1e-5 optimistic here and 1 to 6% on the
 * 5T torus layouts). */
static void test_fold_matches_every_rank(void **state)
{
    (void)state;
    const char *pars[] = {"{\"dp\": 4, \"tp\": 2, \"pp\": 2, \"sequence_parallel\": true}",
                          "{\"dp\": 4, \"tp\": 2, \"pp\": 2, \"sequence_parallel\": true,"
                          " \"fold\": false}"};
    ss_ns step[2];
    ss_bytes peak[2];
    uint32_t ranks[2];
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(2), pars[k],
             "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}", "zero1", &s);
        run_result r;
        ss_err err;
        ss_err_clear(&err);
        if (run_step(&s, NULL, &r, &err)) fail_msg("%s", err.msg);
        step[k] = r.sum.step_ns;
        peak[k] = r.sum.ranks[0].mem.peak_reserved;
        for (uint32_t q = 0; q < r.sum.nranks; q++) { /* as test_examples for the others */
            const mem_rank *m = &r.sum.ranks[q].mem;
            assert_true(m->ideal_peak <= m->peak && m->peak <= m->peak_reserved);
        }
        ranks[k] = r.sum.nranks;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_int_equal(ranks[0], 4);
    assert_int_equal(ranks[1], 16);
    assert_int_equal(peak[0], peak[1]);
    double rel = ((double)step[0] - (double)step[1]) / (double)step[1];
    print_message("  folded %.9f s, every rank %.9f s (%+.2g)\n", step[0] * 1e-9, step[1] * 1e-9, rel);
    assert_true(fabs(rel) < 1e-8);
}

/* Megatron-core's distributed optimizer on Llama 3 8B, pp = 2, dp = 4,
 * bf16 parameters (models/llama3-8b.json; numbers derived here from the
 * shapes). A layer: q and o 4096 x 4096, k and v 1024 x 4096, w1, w2, w3
 * 4096 x 14336, two norms of 4096: 218,112,000 parameters. Stage 0 holds
 * layers 0-15 and the embedding (128256 x 4096): P0 = 4,015,128,576.
 * Megatron's states per parameter (Megatron-LM docs, distributed optimizer:
 * "6 + 12/d bytes" with bf16 parameters and fp32 gradients): bf16 param 2,
 * fp32 main_grad 4 (grad_reduce_in_fp32, on with bf16), and of the rank's
 * 1/dp shard fp32 main parameters 4 and Adam's two moments 8. */
static const uint64_t LAYER8B = 218112000ull, EMBED8B = 128256ull * 4096;
#define MC_PAR "{\"dp\": 4, \"pp\": 2}"
#define MC_TRAIN "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 4}"

static void test_megatron_states(void **state)
{
    (void)state;
    const uint64_t P0 = 16 * LAYER8B + EMBED8B, shard = (P0 + 3) / 4;
    static const char *const sh[] = {
        "{\"strategy\": \"megatron\"}",
        "{\"strategy\": \"megatron\", \"grad_reduce_in_fp32\": false}",
        "{\"strategy\": \"megatron\", \"use_distributed_optimizer\": false}",
    };
    /* {param, grad, master, optim} bytes of rank 0 */
    const uint64_t want[3][4] = {{2 * P0, 4 * P0, 4 * shard, 8 * shard},
                                 {2 * P0, 2 * P0, 4 * shard, 8 * shard},
                                 {2 * P0, 4 * P0, 4 * P0, 8 * P0}};
    for (int k = 0; k < 3; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), MC_PAR, MC_TRAIN, sh[k], &s);
        run_result r;
        run_of(&s, &r);
        const st_bytes *st = &r.sum.ranks[0].st;
        assert_int_equal(st->param.physical, want[k][0]);
        assert_int_equal(st->grad.physical, want[k][1]);
        assert_int_equal(st->master.physical, want[k][2]);
        assert_int_equal(st->optim.physical, want[k][3]);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Buckets: with overlap_grad_reduce and bucket_size 40M (Megatron's default
 * at dp = 4, max(40M, 1M x dp)), every unit of stage 0 (16 layers and the
 * embedding, each above 40M) closes a bucket: 17 reduce-scatters of fp32
 * gradients and 17 all-gathers of bf16 parameters, of P0 elements in all
 * (each bucket divides by 4: no padding). Without overlap_grad_reduce,
 * Megatron drops the bucketing: one bucket per model chunk. With
 * overlap_param_gather the gathers move from the optimizer into the next
 * forward. */
static void test_megatron_buckets(void **state)
{
    (void)state;
    const uint64_t P0 = 16 * LAYER8B + EMBED8B;
    static const char *const sh[] = {
        "{\"strategy\": \"megatron\", \"overlap_grad_reduce\": true}",
        "{\"strategy\": \"megatron\"}",
        "{\"strategy\": \"megatron\", \"overlap_grad_reduce\": true,"
        " \"overlap_param_gather\": true}",
    };
    const uint64_t buckets[3] = {17, 1, 17};
    ss_ns exposed[3];
    for (int k = 0; k < 3; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), MC_PAR, MC_TRAIN, sh[k], &s);
        run_result r;
        run_of(&s, &r);
        const sum_coll *rs = &r.sum.coll[PROG_COLL_REDUCE_SCATTER];
        const sum_coll *ag = &r.sum.coll[PROG_COLL_ALL_GATHER];
        assert_int_equal(rs->count, buckets[k]);
        assert_int_equal(ag->count, buckets[k]);
        assert_int_equal(rs->bytes, 4 * P0);
        assert_int_equal(ag->bytes, 2 * P0);
        assert_int_equal(ag->phase_count[k == 2 ? PROG_PH_FORWARD : PROG_PH_OPTIMIZER],
                         buckets[k]);
        assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].count, 0);
        exposed[k] = r.sum.exposed_comm_ns;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    /* Overlap hides communication that the plain schedule exposes. */
    assert_true(exposed[0] < exposed[1]);
    assert_true(exposed[2] < exposed[0]);
}

/* Only the model's first chunk is bucketed: Megatron-core's DDP sets
 * bucket_size None on every pipeline stage but the first
 * (distributed_data_parallel.py, core 0.7 to today: "Turn off bucketing if
 * we are on a pipeline stage that is not the first"). Stage 1 of Llama 3 8B
 * at pp = 2 (layers 16-31, the final norm, the 128256 x 4096 head: P1) is
 * one bucket, reduce-scattered once and gathered once. Under
 * overlap_param_gather the optimizer's zero_grad dispatches the first
 * bucket's gather as the step begins (distrib_optimizer.py, core 0.7-0.8),
 * so stage 1 gathers while it waits for its first activation: the gather
 * starts before the receive ends, and the forward does not wait for it. */
static void test_megatron_stage_buckets(void **state)
{
    (void)state;
    const uint64_t P1 = 16 * LAYER8B + 4096 + EMBED8B;
    spec_scenario s;
    load("llama3-8b", hgx(1), MC_PAR, MC_TRAIN,
         "{\"strategy\": \"megatron\", \"overlap_grad_reduce\": true,"
         " \"overlap_param_gather\": true}", &s);
    run_result r;
    run_of(&s, &r);
    bool seen[2] = {false, false};
    for (uint32_t q = 0; q < r.sum.nranks; q++) {
        const prog_op *ops = prog_ops(r.p, q);
        uint32_t rs = 0, ag = 0, ag_op = 0, recv = UINT32_MAX;
        uint64_t rs_bytes = 0, ag_bytes = 0;
        bool first_stage = false;
        for (uint32_t i = 0; i < prog_nops(r.p, q); i++) {
            const char *name = prog_str_get(r.p, ops[i].name);
            if (!strcmp(name, "fwd.embed")) first_stage = true;
            if (!strncmp(name, "pp.recv_act", 11) && recv == UINT32_MAX) recv = i;
            if (ops[i].kind != PROG_OP_COLL) continue;
            if (!strncmp(name, "dp.reduce_scatter", 17)) rs++, rs_bytes += ops[i].bytes;
            if (!strncmp(name, "dp.all_gather_params", 20)) {
                if (!ag++) ag_op = i;
                ag_bytes += ops[i].bytes;
            }
        }
        seen[first_stage] = true;
        if (first_stage) { /* 17 buckets, as test_megatron_buckets */
            assert_int_equal(rs, 17);
            assert_int_equal(ag, 17);
            continue;
        }
        assert_int_equal(rs, 1);
        assert_int_equal(ag, 1);
        assert_int_equal(rs_bytes, 4 * P1);
        assert_int_equal(ag_bytes, 2 * P1);
        assert_true(recv != UINT32_MAX);
        const trc_op *g = &r.t->ops[q][ag_op], *rv = &r.t->ops[q][recv];
        print_message("  stage 1: gather [%.3f, %.3f] ms, first receive ends %.3f ms\n",
                      g->start * 1e-6, g->end * 1e-6, rv->end * 1e-6);
        assert_true(g->start < rv->end);
    }
    assert_true(seen[0] && seen[1]);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* Megatron-FSDP (use_megatron_fsdp, optim_grads_params by default), Llama
 * 3 8B over dp = 8 in one node, 2 micro-batches, bf16 gradients; worked
 * from Megatron-core's custom_fsdp / megatron_fsdp (sched/mp_mfsdp.c):
 * - states sharded as ZeRO-3 over 8: P / 8 = 1,003,782,656 parameters a
 *   rank (no padding), in bf16, with bf16 gradient, fp32 master and Adam;
 * - the embedding and the output layer gathered once a step, each of the
 *   32 layers before its forward and its backward in both micro-batches:
 *   2 + 128 all-gathers, the layers' of 2 x 128 x LAYER8B bytes;
 * - every unit's gradients reduce-scattered in every micro-batch (no_sync
 *   does not hold them): 34 x 2 reduce-scatters;
 * - prefetch one layer ahead: layer 1's gather is issued before layer 0's
 *   first kernel, layer 0's only after the embedding's (it waits for it on
 *   the device: exposed), and no more than two layers are unsharded at
 *   once in the host's order (the allocator's);
 * - at most two reductions in flight: the 68th and every one after the
 *   first two waits, the two left are waited for at the end (66 + 2);
 * - the bf16 gradient shard copied to fp32 once for the optimizer.
 * optim_grads gathers nothing and keeps the parameters whole. */
static void test_megatron_fsdp(void **state)
{
    (void)state;
    const uint64_t P = 32 * LAYER8B + 4096 + 2 * EMBED8B, shard = P / 8;
    static const char *const sh[2] = {
        "{\"strategy\": \"megatron\", \"use_megatron_fsdp\": true, \"grad_reduce_in_fp32\": false}",
        "{\"strategy\": \"megatron\", \"use_mcore_fsdp\": true, \"grad_reduce_in_fp32\": false,"
        " \"data_parallel_sharding_strategy\": \"optim_grads\"}"};
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), "{\"dp\": 8}",
             "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 2}", sh[k], &s);
        run_result r;
        run_of(&s, &r);
        const st_bytes *st = &r.sum.ranks[0].st;
        assert_int_equal(P % 8, 0);
        assert_int_equal(st->param.physical, k ? 2 * P : 2 * shard);
        assert_int_equal(st->grad.physical, 2 * shard);
        assert_int_equal(st->master.physical, 4 * shard);
        assert_int_equal(st->optim.physical, 8 * shard);
        const prog_op *ops = prog_ops(r.p, 0);
        const prog_mem *mem = prog_mems(r.p, 0);
        const prog_tensor *ts = prog_tensors(r.p, 0);
        uint32_t ag = 0, rs = 0, waits = 0, drains = 0, upd = 0, live = 0, most = 0;
        uint32_t ag0 = UINT32_MAX, ag1 = UINT32_MAX, fwd0 = UINT32_MAX, embed = UINT32_MAX;
        uint64_t layer_bytes = 0;
        for (uint32_t i = 0; i < prog_nops(r.p, 0); i++) {
            const char *name = prog_str_get(r.p, ops[i].name);
            if (!strncmp(name, "fsdp.all_gather.", 16)) {
                ag++;
                if (!strncmp(name + 16, "layers.", 7)) layer_bytes += ops[i].bytes;
                if (!strcmp(name + 16, "layers.0") && ag0 == UINT32_MAX) ag0 = i;
                if (!strcmp(name + 16, "layers.1") && ag1 == UINT32_MAX) ag1 = i;
            }
            if (!strncmp(name, "fsdp.reduce_scatter.", 20)) rs++;
            waits += !strcmp(name, "fsdp.wait_reduce");
            drains += !strcmp(name, "fsdp.finish_grad_sync");
            upd += !strcmp(name, "fsdp.update_main_grads");
            if (!strcmp(name, "fwd.embed") && embed == UINT32_MAX) embed = i;
            if (!strncmp(name, "fwd.layers.0.", 13) && fwd0 == UINT32_MAX) fwd0 = i;
            for (uint32_t j = 0; j < ops[i].nmem; j++) {
                const prog_mem *pm = &mem[ops[i].mem0 + j];
                if (strncmp(prog_str_get(r.p, ts[pm->tensor].name), "fsdp.unsharded.layers.", 22))
                    continue;
                live += pm->act == PROG_ALLOC_AT_ISSUE ? 1 : -1;
                if (live > most) most = live;
            }
        }
        print_message("  %s: %u all-gathers, %u reduce-scatters, %u waits, at most %u layers "
                      "unsharded\n", k ? "optim_grads" : "optim_grads_params", ag, rs, waits, most);
        assert_int_equal(rs, 34 * 2);
        assert_int_equal(waits, 66);
        assert_int_equal(drains, 2);
        assert_int_equal(upd, 1);
        if (k) {
            assert_int_equal(ag, 0);
        } else {
            assert_int_equal(ag, 2 + 128);
            assert_int_equal(layer_bytes, 128 * 2 * LAYER8B);
            assert_true(embed < ag0 && ag1 < fwd0 && ag0 < ag1);
            const trc_op *e = &r.t->ops[0][embed], *g = &r.t->ops[0][ag0];
            assert_true(g->start >= e->end);
            assert_int_equal(most, 2);
        }
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Transformer Engine's CPU activation offloading (training.
 * cpu_offloading_num_layers), Llama 3 8B, 32 layers, 16 offloaded, dp 8,
 * one micro-batch; worked from TE 2.7's AsyncDoubleBufferGroupOffloadHandler
 * (sched/mp_offload.c): the window map is w(i) = (32 / 16)(i + 1) - 1 =
 * 2i + 1, so group 0's copy starts after layer 0, and at the end of layer
 * 2i + 1 the compute waits for copy i, drops group i and starts copy i + 1
 * (16 copies out, 16 waits); in backward each w(i) starts reload i (16
 * copies in, 16 waits, and one more before layer 0). Every group is off the
 * device when backward begins and group 15 comes back at once, so the peak
 * drops by 15 groups at least (a group: the layer's saved tensors and its
 * blocks' inputs) and by 16 at most. With the host link at 1000 GB/s the
 * copies hide under two layers' compute (the step within 0.5%); at 2 GB/s
 * they do not. */
static void test_cpu_offload(void **state)
{
    (void)state;
    static const char *const sh = "{\"strategy\": \"megatron\"}";
    const char *train[2] = {"{\"micro_batch\": 1, \"seq_len\": 4096}",
                            "{\"micro_batch\": 1, \"seq_len\": 4096, \"cpu_offloading_num_layers\": 16,"
                            " \"cpu_offloading_impl\": \"double_buffer\"}"};
    run_result r[4];
    spec_scenario s[4];
    for (int k = 0; k < 4; k++) {
        load("llama3-8b", hgx(1), "{\"dp\": 8}", train[k > 0], sh, &s[k]);
        s[k].off.pcie_Bps = k == 3 ? 2e9 : 1000e9;
        run_of(&s[k], &r[k]);
    }
    const prog_op *ops = prog_ops(r[1].p, 0);
    uint32_t d2h = 0, h2d = 0, waits = 0, rwaits = 0, first = UINT32_MAX, fwd1 = UINT32_MAX;
    for (uint32_t i = 0; i < prog_nops(r[1].p, 0); i++) {
        const char *name = prog_str_get(r[1].p, ops[i].name);
        if (!strncmp(name, "offload.d2h.", 12) && !d2h++) first = i;
        h2d += !strncmp(name, "offload.h2d.", 12);
        waits += !strcmp(name, "offload.wait");
        rwaits += !strcmp(name, "offload.reload_wait");
        if (!strncmp(name, "fwd.layers.1.", 13) && fwd1 == UINT32_MAX) fwd1 = i;
    }
    assert_int_equal(d2h, 16);
    assert_int_equal(h2d, 16);
    assert_int_equal(waits, 16);
    assert_int_equal(rwaits, 17);
    assert_true(first < fwd1);
    /* a group: attention's and the MLP's saved tensors and their inputs */
    const plan_block *at = NULL, *ml = NULL;
    plan *p = plan_of(&s[1]);
    at = plan_find(p, "layers.0.attn"), ml = plan_find(p, "layers.0.mlp");
    uint64_t group = at->saved_bytes + ml->saved_bytes + at->in_bytes + ml->in_bytes;
    uint64_t off = r[0].sum.ranks[0].mem.peak, on = r[1].sum.ranks[0].mem.peak;
    print_message("  peak %.2f GiB without, %.2f GiB with 16 of 32 layers offloaded (a group "
                  "%.2f GiB); step %.3f / %.3f / %.3f s\n", off / 1073741824.0, on / 1073741824.0,
                  group / 1073741824.0, r[0].sum.step_ns * 1e-9, r[2].sum.step_ns * 1e-9,
                  r[3].sum.step_ns * 1e-9);
    assert_true(off - on >= 15 * group && off - on <= 16 * group);
    assert_true(r[2].sum.step_ns < r[0].sum.step_ns * 1.005);
    assert_true(r[3].sum.step_ns > r[0].sum.step_ns * 1.1);
    plan_free(p);
    for (int k = 0; k < 4; k++) {
        run_fini(&r[k]);
        spec_scenario_fini(&s[k]);
    }
}

/* The same step under TE 2.10+'s DefaultOffloadSynchronizer (training.
 * cpu_offloading_impl synchronizer, the default), worked from its
 * _init_offload_synchronization_dicts (TE v2.12): layer i's copy starts
 * before layer i + 1's forward and must be done before layer 32 - 16 + i =
 * 16 + i's (16 copies out, 16 waits, the last before layer 31); layer i's
 * reload starts before layer 15 + i's backward and layer i's backward
 * waits for it (16 copies in, 16 waits). No group is on the device at the
 * end of forward: the peak drops by 15 to 16 groups, as above. */
static void test_cpu_offload_synchronizer(void **state)
{
    (void)state;
    spec_scenario s[2];
    run_result r[2];
    const char *train[2] = {"{\"micro_batch\": 1, \"seq_len\": 4096}",
                            "{\"micro_batch\": 1, \"seq_len\": 4096, \"cpu_offloading_num_layers\": 16}"};
    for (int k = 0; k < 2; k++) {
        load("llama3-8b", hgx(1), "{\"dp\": 8}", train[k], "{\"strategy\": \"megatron\"}", &s[k]);
        s[k].off.pcie_Bps = 1000e9;
        run_of(&s[k], &r[k]);
    }
    assert_int_equal(s[1].cpu_offload_impl, SPEC_OFFL_SYNCHRONIZER);
    const prog_op *ops = prog_ops(r[1].p, 0);
    uint32_t d2h = 0, h2d = 0, waits = 0, rwaits = 0, last_wait = UINT32_MAX, fwd31 = UINT32_MAX;
    uint32_t h2d0 = UINT32_MAX, bwd31 = UINT32_MAX, bwd30 = UINT32_MAX;
    for (uint32_t i = 0; i < prog_nops(r[1].p, 0); i++) {
        const char *name = prog_str_get(r[1].p, ops[i].name);
        d2h += !strncmp(name, "offload.d2h.", 12);
        if (!strncmp(name, "offload.h2d.", 12) && !h2d++) h2d0 = i;
        if (!strcmp(name, "offload.wait")) waits++, last_wait = i;
        rwaits += !strcmp(name, "offload.reload_wait");
        if (!strncmp(name, "fwd.layers.31.", 14) && fwd31 == UINT32_MAX) fwd31 = i;
        if (!strncmp(name, "bwd.layers.31.", 14) && bwd31 == UINT32_MAX) bwd31 = i;
        if (!strncmp(name, "bwd.layers.30.", 14) && bwd30 == UINT32_MAX) bwd30 = i;
    }
    assert_int_equal(d2h, 16);
    assert_int_equal(h2d, 16);
    assert_int_equal(waits, 16);
    assert_int_equal(rwaits, 16);
    assert_true(last_wait < fwd31);
    assert_true(bwd31 < h2d0 && h2d0 < bwd30); /* layer 15's reload, before layer 30's backward */
    plan *p = plan_of(&s[1]);
    const plan_block *at = plan_find(p, "layers.0.attn"), *ml = plan_find(p, "layers.0.mlp");
    uint64_t group = at->saved_bytes + ml->saved_bytes + at->in_bytes + ml->in_bytes;
    uint64_t off = r[0].sum.ranks[0].mem.peak, on = r[1].sum.ranks[0].mem.peak;
    assert_true(off - on >= 15 * group && off - on <= 16 * group);
    assert_true(r[1].sum.step_ns < r[0].sum.step_ns * 1.005);
    plan_free(p);
    for (int k = 0; k < 2; k++) {
        run_fini(&r[k]);
        spec_scenario_fini(&s[k]);
    }
}

/* FSDP under a pipeline schedule (torch.distributed.pipelining) waits for a
 * receive on the stream (Work.wait() on an NCCL receive), not on the host as
 * Megatron's batch_p2p_sync does: the host runs on into the stage's forward,
 * whose pre-forward hook issues the first unit's all-gather while the
 * activation is still on its way. Llama 3 8B, pp = 2, dp = 4, FSDP2: on
 * stage 1 the first gather starts before the first receive ends; Megatron's
 * schedule holds the host until the receive is done, so there the receive
 * ends before any compute of the stage is issued. */
static void test_fsdp_pipeline_recv(void **state)
{
    (void)state;
    static const char *const sh[2] = {"fsdp2", "{\"strategy\": \"megatron\"}"};
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), MC_PAR, MC_TRAIN, sh[k], &s);
        run_result r;
        run_of(&s, &r);
        uint32_t q = r.sum.nranks - 1; /* the last stage */
        const prog_op *ops = prog_ops(r.p, q);
        ss_ns recv_end = 0, gather_start = UINT64_MAX, compute_issue = UINT64_MAX;
        for (uint32_t i = 0; i < prog_nops(r.p, q); i++) {
            const char *name = prog_str_get(r.p, ops[i].name);
            const trc_op *o = &r.t->ops[q][i];
            if (!recv_end && !strncmp(name, "pp.recv_act", 11)) recv_end = o->end;
            if (!strncmp(name, "fsdp.all_gather", 15) && o->start < gather_start)
                gather_start = o->start;
            if (ops[i].kind == PROG_OP_COMPUTE && o->issue < compute_issue)
                compute_issue = o->issue;
        }
        assert_true(recv_end > 0);
        print_message("  %s: first receive ends %.3f ms, first gather starts %.3f ms, first "
                      "compute issued %.3f ms\n", k ? "megatron" : "fsdp2", recv_end * 1e-6,
                      gather_start == UINT64_MAX ? -1.0 : gather_start * 1e-6,
                      compute_issue * 1e-6);
        if (!k) assert_true(gather_start < recv_end);
        else assert_true(compute_issue >= recv_end);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Without the distributed optimizer Megatron all-reduces each bucket and
 * gathers nothing. */
static void test_megatron_ddp(void **state)
{
    (void)state;
    const uint64_t P0 = 16 * LAYER8B + EMBED8B;
    spec_scenario s;
    load("llama3-8b", hgx(1), MC_PAR, MC_TRAIN,
         "{\"strategy\": \"megatron\", \"use_distributed_optimizer\": false,"
         " \"overlap_grad_reduce\": true}", &s);
    run_result r;
    run_of(&s, &r);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].count, 17);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_REDUCE].bytes, 4 * P0);
    assert_int_equal(r.sum.coll[PROG_COLL_ALL_GATHER].count, 0);
    assert_int_equal(r.sum.coll[PROG_COLL_REDUCE_SCATTER].count, 0);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* Rank 0's collectives of kind c whose op names start with `prefix`. */
static uint64_t count_ops(const run_result *r, prog_coll c, const char *prefix, uint64_t *bytes)
{
    uint64_t n = 0, b = 0;
    const prog_op *ops = prog_ops(r->p, 0);
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++) {
        if (ops[i].kind != PROG_OP_COLL || ops[i].coll != c) continue;
        if (strncmp(prog_str_get(r->p, ops[i].name), prefix, strlen(prefix))) continue;
        n++, b += ops[i].bytes;
    }
    if (bytes) *bytes = b;
    return n;
}

/* Full recomputation re-runs each layer block's forward, so its TP
 * all-reduce too (Megatron's f/g operators run again inside the
 * checkpointed forward: a 48-layer TP step issues 2 x 48 more). Per
 * micro-batch on tp = 2 without SP, over L = 32 layers of two blocks:
 * forward, the embedding's and every block's (g); backward, the head's and
 * every block's (f); recompute, every block's again, or with PyTorch's
 * early-stopping checkpoint (the default for this PyTorch-native runtime,
 * DECISIONS 203) the attention blocks' only: the recomputation ends before
 * the MLP's down projection, whose all-reduce goes with it. */
static void test_recompute_collectives(void **state)
{
    (void)state;
    const uint64_t L = 32, M = 2;
    static const char *const train[] = {
        "{\"micro_batch\": 1, \"seq_len\": 1024, \"grad_accum\": 2, \"recompute\": \"none\"}",
        "{\"micro_batch\": 1, \"seq_len\": 1024, \"grad_accum\": 2, \"recompute\": \"full\","
        " \"recompute_early_stop\": false}",
        "{\"micro_batch\": 1, \"seq_len\": 1024, \"grad_accum\": 2, \"recompute\": \"full\"}",
    };
    for (int k = 0; k < 3; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), "{\"dp\": 4, \"tp\": 2}", train[k], "zero1", &s);
        run_result r;
        run_of(&s, &r);
        uint64_t want = M * ((1 + 2 * L) + (1 + 2 * L) + (k == 1 ? 2 * L : k == 2 ? L : 0));
        assert_int_equal(count_ops(&r, PROG_COLL_ALL_REDUCE, "tp.", NULL) +
                             count_ops(&r, PROG_COLL_ALL_REDUCE, "recompute.tp.", NULL),
                         want);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
}

/* Rank 0's first op named `name` (its trace record), or fail. */
static const trc_op *op_named(const run_result *r, const char *name)
{
    const prog_op *ops = prog_ops(r->p, 0);
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++)
        if (!strcmp(prog_str_get(r->p, ops[i].name), name)) return &r->t->ops[0][i];
    fail_msg("no op %s on rank 0", name);
    return NULL;
}

/* tp_comm_overlap moves the same bytes (each gather and scatter cut into a
 * first or last chunk of 1/tp and the rest) and exposes less: the rest runs
 * while the block computes, and the block does not wait for the gather at
 * all (Transformer Engine computes on the rank's own chunk first): the
 * first layer's attention starts before its gather's first chunk ends;
 * without the overlap it starts after the whole gather. */
static void test_tp_comm_overlap(void **state)
{
    (void)state;
    uint64_t bytes[2][2];
    ss_ns exposed[2], tp_exposed[2];
    static const char *const par[] = {
        "{\"dp\": 2, \"tp\": 4, \"sequence_parallel\": true}",
        "{\"dp\": 2, \"tp\": 4, \"sequence_parallel\": true, \"tp_comm_overlap\": true}",
    };
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), par[k], "{\"micro_batch\": 1, \"seq_len\": 4096}", "zero1", &s);
        /* the raw launch: the order the device may run them in, not the
         * host's issue of the ops between (test_models.c, test_host_dispatch) */
        s.topo.device.op_host_ns = 0;
        run_result r;
        run_of(&s, &r);
        count_ops(&r, PROG_COLL_ALL_GATHER, "tp.", &bytes[k][0]);
        count_ops(&r, PROG_COLL_REDUCE_SCATTER, "tp.", &bytes[k][1]);
        exposed[k] = r.sum.exposed_comm_ns;
        /* the exposed time by stream: each within the total, together at
         * least it (time.exposed_by_stream_s); the overlap cuts the TP
         * stream's */
        ss_ns sum = 0, most = 0;
        for (int q = 0; q < PROG_NSTREAMS; q++) {
            sum += r.sum.exposed_by_stream[q];
            if (r.sum.exposed_by_stream[q] > most) most = r.sum.exposed_by_stream[q];
        }
        assert_true(most <= exposed[k] && sum >= exposed[k]);
        tp_exposed[k] = r.sum.exposed_by_stream[PROG_TP];
        const trc_op *attn = op_named(&r, "fwd.layers.0.attn");
        const trc_op *gather = op_named(&r, "tp.all_gather.layers.0.attn");
        if (k == 0) assert_true(attn->start >= gather->end);
        else assert_true(attn->start < gather->end);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_int_equal(bytes[0][0], bytes[1][0]);
    assert_int_equal(bytes[0][1], bytes[1][1]);
    print_message("  exposed communication %.3f ms -> %.3f ms with tp_comm_overlap\n",
                  exposed[0] * 1e-6, exposed[1] * 1e-6);
    assert_true(exposed[1] < exposed[0]);
    assert_true(tp_exposed[0] > 0 && tp_exposed[1] < tp_exposed[0]);
}

/* A forward all-to-all (ep.dispatch or ep.combine, phase forward) and a
 * backward compute op (bwd.layers.*) of rank 0 that run at once. */
static bool fwd_a2a_under_bwd(const run_result *r)
{
    const prog_op *ops = prog_ops(r->p, 0);
    const trc_op *t = r->t->ops[0];
    uint32_t n = prog_nops(r->p, 0);
    for (uint32_t i = 0; i < n; i++) {
        if (ops[i].kind != PROG_OP_COLL || ops[i].coll != PROG_COLL_ALL_TO_ALL ||
            ops[i].phase != PROG_PH_FORWARD)
            continue;
        for (uint32_t j = 0; j < n; j++)
            if (ops[j].kind == PROG_OP_COMPUTE && ops[j].stream == PROG_COMPUTE &&
                !strncmp(prog_str_get(r->p, ops[j].name), "bwd.layers.", 11) &&
                t[j].start < t[i].end && t[i].start < t[j].end && t[j].end > t[j].start)
                return true;
    }
    return false;
}

/* A MoE of 8 layers, 32 experts of 1024 top 8 (the MoE tests' model). */
static const char *const moe = "{\"name\": \"moe\", \"architecture\": {\"type\": "
                               "\"transformer\", \"layers\": 8, \"hidden\": 2048, \"heads\": 16, "
                               "\"kv_heads\": 4, \"ffn_hidden\": 4096, \"activation\": \"swiglu\", "
                               "\"vocab\": 32000, \"norm\": \"rmsnorm\", \"moe\": {\"experts\": 32, "
                               "\"top_k\": 8, \"expert_ffn_hidden\": 1024}}}";

/* parallel.moe_a2a_overlap (Megatron-core's combined 1F1B) reorders, it
 * moves nothing more: the same all-to-alls and bytes, now on the "ep"
 * stream, and in 1F1B's steady state a forward's all-to-all runs under
 * another micro-batch's backward computation, which the plain schedule
 * never does (a forward there starts after the previous backward). The
 * step gets shorter, the exposed communication less, and never below the
 * compute stream's busy time. A MoE of 8 layers, 32 experts top 8, ep 16
 * over two H100 nodes (so the all-to-alls cross the network), without a
 * pipeline and with pp 2 x 2 virtual stages. */
static void test_moe_a2a_overlap(void **state)
{
    (void)state;
    static const char *const par[2][2] = {
        {"{\"dp\": 16, \"ep\": 16}", "{\"dp\": 16, \"ep\": 16, \"moe_a2a_overlap\": true}"},
        {"{\"dp\": 8, \"ep\": 8, \"pp\": 2, \"pipeline_schedule\": \"interleaved\", "
         "\"virtual_stages\": 2}",
         "{\"dp\": 8, \"ep\": 8, \"pp\": 2, \"pipeline_schedule\": \"interleaved\", "
         "\"virtual_stages\": 2, \"moe_a2a_overlap\": true}"}};
    for (int c = 0; c < 2; c++) {
        uint64_t n[2], bytes[2];
        ss_ns step[2], exposed[2];
        for (int k = 0; k < 2; k++) {
            spec_scenario s;
            load(moe, hgx(2), par[c][k], "{\"micro_batch\": 1, \"seq_len\": 4096, "
                 "\"grad_accum\": 8}", "megatron", &s);
            run_result r;
            run_of(&s, &r);
            n[k] = count_ops(&r, PROG_COLL_ALL_TO_ALL, "ep.", &bytes[k]);
            uint64_t on_ep = 0, on_tp = 0;
            const prog_op *ops = prog_ops(r.p, 0);
            for (uint32_t i = 0; i < prog_nops(r.p, 0); i++)
                if (ops[i].kind == PROG_OP_COLL && ops[i].coll == PROG_COLL_ALL_TO_ALL) {
                    on_ep += ops[i].stream == PROG_EP;
                    on_tp += ops[i].stream == PROG_TP;
                }
            assert_int_equal(k ? on_ep : on_tp, n[k]);
            assert_int_equal(k ? on_tp : on_ep, 0);
            assert_true(fwd_a2a_under_bwd(&r) == (k == 1));
            step[k] = r.sum.step_ns;
            exposed[k] = r.sum.exposed_comm_ns;
            assert_true(step[k] >= r.sum.compute_ns);
            run_fini(&r);
            spec_scenario_fini(&s);
        }
        print_message("  %s: step %.3f -> %.3f ms, exposed %.3f -> %.3f ms with moe_a2a_overlap\n",
                      c ? "pp 2 x vp 2" : "no pipeline", step[0] * 1e-6, step[1] * 1e-6,
                      exposed[0] * 1e-6, exposed[1] * 1e-6);
        assert_true(n[0] > 0);
        assert_int_equal(n[0], n[1]);
        assert_int_equal(bytes[0], bytes[1]);
        assert_true(step[1] < step[0]);
        assert_true(exposed[1] < exposed[0]);
    }
}

static uint64_t count_named(const run_result *r, prog_opkind kind, const char *prefix)
{
    uint64_t n = 0;
    const prog_op *ops = prog_ops(r->p, 0);
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++)
        n += ops[i].kind == kind &&
             !strncmp(prog_str_get(r->p, ops[i].name), prefix, strlen(prefix));
    return n;
}

/* Rank 0's dispatches against its counts all-gathers, in program order:
 * each HOST wait depends on the all-gather before it, and the host issues
 * the tokens' all-to-all that follows only once that all-gather ended (a
 * dependency alone would hold its start back, not its issue). */
static void host_waits_for_counts(const run_result *r)
{
    const prog_op *ops = prog_ops(r->p, 0);
    const uint32_t *deps = prog_deps(r->p, 0);
    uint32_t gather = UINT32_MAX, waits = 0, checked = 0;
    for (uint32_t i = 0; i < prog_nops(r->p, 0); i++) {
        const char *name = prog_str_get(r->p, ops[i].name);
        if (!strncmp(name, "ep.counts.all_gather.", 21)) gather = i;
        if (!strncmp(name, "ep.counts.synchronize.", 22)) {
            assert_int_equal(ops[i].kind, PROG_OP_HOST);
            assert_int_equal(ops[i].ndep, 1);
            assert_int_equal(deps[ops[i].dep0], gather);
            waits++;
        }
        if (!strncmp(name, "ep.dispatch.", 12) && gather != UINT32_MAX) {
            assert_true(r->t->ops[0][i].issue >= r->t->ops[0][gather].end);
            checked++;
        }
    }
    assert_true(waits > 0 && checked == waits);
}

/* Megatron-core's alltoall token dispatcher (DECISIONS 146), 8 MoE layers
 * of 32 experts top 8, 4096 tokens, ep 16 over 2 nodes, 8 micro-batches:
 * dropless, each forward dispatch all-gathers the per-expert counts over
 * the EP group (32 experts x 8 bytes from each of 16 ranks) and the host
 * waits for them (a HOST op on the all-gather); padded to capacity
 * (moe_pad_to_capacity) neither. Both dispatch the fp32 routing
 * probabilities beside the tokens (4 bytes a routed row, 4096 x 8 rows:
 * the dispatch's bytes less the combine's) and return their gradient in
 * backward. Another runtime's layout
 * (zero1) has none of these. The host waits for the all-gather: its op
 * depends on it, and no dispatch is issued before that all-gather ends. */
static void test_moe_dispatcher(void **state)
{
    (void)state;
    const char *tr = "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 8}";
    static const char *const par[3] = {"{\"dp\": 16, \"ep\": 16}",
                                       "{\"dp\": 16, \"ep\": 16, \"moe_pad_to_capacity\": true}",
                                       "{\"dp\": 16, \"ep\": 16}"};
    static const char *const strategy[3] = {"megatron", "megatron", "zero1"};
    const uint64_t dispatches = 8 * 8, probs = 4096 * 8 * 4;
    ss_ns step[3];
    for (int k = 0; k < 3; k++) {
        spec_scenario s;
        load(moe, hgx(2), par[k], tr, strategy[k], &s);
        run_result r;
        run_of(&s, &r);
        uint64_t gathered, df, db, cf, cb;
        uint64_t ng = count_ops(&r, PROG_COLL_ALL_GATHER, "ep.counts.", &gathered);
        uint64_t nw = count_named(&r, PROG_OP_HOST, "ep.counts.synchronize.");
        uint64_t nd = count_ops(&r, PROG_COLL_ALL_TO_ALL, "ep.dispatch.", &df);
        count_ops(&r, PROG_COLL_ALL_TO_ALL, "ep.dispatch_grad.", &db);
        count_ops(&r, PROG_COLL_ALL_TO_ALL, "ep.combine.", &cf);
        count_ops(&r, PROG_COLL_ALL_TO_ALL, "ep.combine_grad.", &cb);
        assert_int_equal(ng, k == 0 ? dispatches : 0);
        assert_int_equal(nw, ng);
        if (ng) assert_int_equal(gathered, dispatches * 32 * 8 * 16);
        assert_int_equal(nd, dispatches);
        /* the dispatches carry the probabilities beside the tokens, the
         * combines the tokens alone */
        assert_int_equal(df - cf, k < 2 ? dispatches * probs : 0);
        assert_int_equal(db - cb, df - cf);
        if (ng) host_waits_for_counts(&r);
        step[k] = r.sum.step_ns;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    print_message("  step: dropless %.3f ms, padded %.3f ms\n", step[0] * 1e-6, step[1] * 1e-6);
    assert_true(step[0] > step[1]);
}

/* Ring attention (cp_comm_type p2p) over cp = 4: each attention block
 * passes the other 3 of 4 KV chunks round the ring (forward) and KV with
 * its gradients (backward: twice), by send/recv; no all-gather or
 * reduce-scatter of KV. */
static void test_cp_ring(void **state)
{
    (void)state;
    spec_scenario s[2];
    run_result r[2];
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4}", "{\"micro_batch\": 1, \"seq_len\": 8192}",
         "megatron", &s[0]);
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4, \"cp_comm_type\": \"p2p\"}",
         "{\"micro_batch\": 1, \"seq_len\": 8192}", "megatron", &s[1]);
    run_of(&s[0], &r[0]);
    run_of(&s[1], &r[1]);
    uint64_t gathered, ring;
    uint64_t ng = count_ops(&r[0], PROG_COLL_ALL_GATHER, "cp.", &gathered);
    uint64_t nr = count_ops(&r[1], PROG_COLL_SEND_RECV, "cp.", &ring);
    assert_int_equal(ng, 2 * 32);
    assert_int_equal(nr, 2 * 32);
    /* all_gather bytes are the gathered K and V (cp chunks); the ring
     * passes cp - 1 chunks forward and twice that backward */
    assert_int_equal(ring, gathered / 2 / 4 * 3 * 3);
    assert_int_equal(count_ops(&r[1], PROG_COLL_ALL_GATHER, "cp.", NULL), 0);
    assert_int_equal(count_ops(&r[1], PROG_COLL_REDUCE_SCATTER, "cp.", NULL), 0);
    for (int k = 0; k < 2; k++) {
        run_fini(&r[k]);
        spec_scenario_fini(&s[k]);
    }
}

/* PyTorch's context_parallel (strategy zero1, eager: training.repeat_kv on
 * by default; torch's _templated_ring_attention) against the same layer
 * under DeepSpeed, whose
 * CP keeps the generic model. Llama 3 8B, cp 4, 8192 tokens: 2048 local,
 * 32 query heads of 128, K and V repeated to 32 heads before SDPA: qn = on
 * = 2048 x 32 x 128 = 8,388,608, kvn = 16,777,216, c = 2 bytes.
 *   forward  2 kvn c 4 + on (c + 4) 4 + 32 on 3 + on (4 + c)
 *            = 268,435,456 + 201,326,592 + 805,306,368 + 50,331,648
 *            = 1,325,400,064 bytes in 3 + 27 + 4 = 34 kernels;
 *   backward 4 (qn + kvn) + 2 kvn c 4 + qn (8 + c) 4 + kvn (8 + c)
 *            + 3 (kvn (8 + c) / 2 + 8 kvn) + 8 kvn 4 + (qn + kvn)(4 + c)
 *            = 100,663,296 + 268,435,456 + 335,544,320 + 167,772,160
 *            + 654,311,424 + 536,870,912 + 150,994,944
 *            = 2,214,592,512 bytes in 9 + 24 + 8 = 41 kernels.
 * The exchanges: K and V gathered at 32 heads (4x the 8 KV heads the
 * generic model gathers), forward and backward; dK and dV round the ring in
 * fp32 (kvn x 4 = 67,108,864 bytes a step), three steps beside the block
 * and the last after it; no reduce-scatter. Full recomputation's exchange
 * and the backward's are one collective of twice the bytes. */
static void test_cp_torch(void **state)
{
    (void)state;
    spec_scenario s[3];
    const char *tr = "{\"micro_batch\": 1, \"seq_len\": 8192}";
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4}", tr, "zero1", &s[0]);
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4}", tr,
         "{\"strategy\": \"deepspeed\", \"bf16\": {\"enabled\": true},"
         " \"zero_optimization\": {\"stage\": 1}}", &s[1]);
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4}",
         "{\"micro_batch\": 1, \"seq_len\": 8192, \"recompute\": \"full\"}", "zero1", &s[2]);
    assert_true(spec_cp_torch(&s[0]) && !spec_cp_torch(&s[1]));
    plan *pt = plan_of(&s[0]), *pd = plan_of(&s[1]);
    const plan_block *t = plan_find(pt, "layers.0.attn"), *d = plan_find(pd, "layers.0.attn");
    assert_int_equal(t->fwd_kernels - d->fwd_kernels, 34);
    assert_int_equal(t->bwd_kernels - d->bwd_kernels, 41);
    assert_int_equal(t->fwd_ns - d->fwd_ns, plan_kernels_ns(pt, 1325400064ull, 34));
    assert_int_equal(t->bwd_ns - d->bwd_ns, plan_kernels_ns(pt, 2214592512ull, 41));
    assert_int_equal(t->fwd_flops, d->fwd_flops);
    assert_int_equal(t->cp_bytes, 4 * d->cp_bytes);
    assert_int_equal(t->cp_dkv_bytes, 67108864ull);
    assert_int_equal(d->cp_dkv_bytes, 0);
    const ss_bytes gathered = t->cp_bytes;
    plan_free(pt);
    /* K and V at their own 8 heads (training.repeat_kv false): the bytes
     * the generic model gathers, and a quarter of the fp32 ring's */
    spec_scenario g;
    load("llama3-8b", hgx(1), "{\"dp\": 2, \"cp\": 4}",
         "{\"micro_batch\": 1, \"seq_len\": 8192, \"repeat_kv\": false}", "zero1", &g);
    pt = plan_of(&g);
    const plan_block *own = plan_find(pt, "layers.0.attn");
    assert_int_equal(own->cp_bytes, d->cp_bytes);
    assert_int_equal(own->cp_dkv_bytes, 67108864ull / 4);
    plan_free(pt);
    plan_free(pd);
    spec_scenario_fini(&g);
    run_result r;
    uint64_t bytes;
    run_of(&s[0], &r);
    assert_int_equal(count_ops(&r, PROG_COLL_ALL_GATHER, "cp.", &bytes), 2 * 32);
    assert_int_equal(bytes, 2 * 32 * gathered);
    assert_int_equal(count_ops(&r, PROG_COLL_SEND_RECV, "cp.ring_dkv.", &bytes), 32);
    assert_int_equal(bytes, 32 * 3 * 67108864ull);
    assert_int_equal(count_ops(&r, PROG_COLL_SEND_RECV, "cp.ring_dkv_last", &bytes), 32);
    assert_int_equal(bytes, 32 * 67108864ull);
    assert_int_equal(count_ops(&r, PROG_COLL_REDUCE_SCATTER, "cp.", NULL), 0);
    run_fini(&r);
    /* recomputation's exchange and the backward's, one collective of both */
    run_of(&s[2], &r);
    assert_int_equal(count_ops(&r, PROG_COLL_ALL_GATHER, "cp.", &bytes), 2 * 32);
    assert_int_equal(bytes, 3 * 32 * gathered);
    assert_int_equal(count_ops(&r, PROG_COLL_ALL_GATHER, "recompute.cp.", NULL), 0);
    run_fini(&r);
    for (int k = 0; k < 3; k++) spec_scenario_fini(&s[k]);
}

/* PyTorch's DTensor sequence parallel (zero1) against Megatron's, Llama 3
 * 8B at tp 2 on one micro-batch without recomputation: Megatron gathers
 * each block's input again in backward (2 x 32 more gathers), DTensor
 * keeps it; under torchao's tensorwise Float8 every DTensor all-gather of
 * a layer moves half the bytes of its reduce-scatter (fp8 against bf16). */
static void test_tp_dtensor(void **state)
{
    (void)state;
    const char *par = "{\"dp\": 4, \"tp\": 2, \"sequence_parallel\": true}";
    const char *tr = "{\"micro_batch\": 1, \"seq_len\": 4096, \"kernels\": \"fused\"}";
    spec_scenario s[2];
    load("llama3-8b", hgx(1), par, tr, "megatron", &s[0]);
    load("llama3-8b", hgx(1), par, tr, "zero1", &s[1]);
    uint64_t n[2];
    for (int k = 0; k < 2; k++) {
        run_result r;
        run_of(&s[k], &r);
        n[k] = count_ops(&r, PROG_COLL_ALL_GATHER, "tp.all_gather.layers", NULL);
        run_fini(&r);
    }
    assert_int_equal(n[0], n[1] + 2 * 32);
    /* fp8: the layers' gathers at one byte an element */
    spec_scenario f;
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"model\": \"%s/models/llama3-8b.json\", \"topology\": %s,"
             " \"parallel\": %s, \"training\": %s, \"precision\": {\"param\": \"bf16\","
             " \"compute\": \"fp8\", \"master\": \"fp32\", \"fp8\": {\"recipe\": \"tensorwise\"}},"
             " \"optimizer\": {\"type\": \"adamw\"}, \"sharding\": {\"strategy\": \"zero1\"}}",
             SS_SOURCE_DIR, hgx(1), par, tr);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load_text("t.json", text, strlen(text), NULL, 0, &f, &err)) fail_msg("%s", err.msg);
    run_result r;
    run_of(&f, &r);
    uint64_t ag, rs;
    uint64_t nag = count_ops(&r, PROG_COLL_ALL_GATHER, "tp.all_gather.layers", &ag);
    uint64_t nrs = count_ops(&r, PROG_COLL_REDUCE_SCATTER, "tp.reduce_scatter.layers", &rs);
    /* forward gathers only (64); reduce-scatters forward and backward (128) */
    assert_int_equal(2 * nag, nrs);
    assert_int_equal(2 * (ag / nag), rs / nrs);
    run_fini(&r);
    for (int k = 0; k < 2; k++) spec_scenario_fini(&s[k]);
    spec_scenario_fini(&f);
}

/* Rank order: with tp = 2, pp = 2, dp = 2 the default order (tp-cp-pp-dp)
 * puts rank 0's data-parallel peer at 4 (tp pp ranks on); Megatron's
 * tp-cp-ep-dp-pp at 2 (tp on), with stage 1 on ranks 4-7. Pipeline
 * scatter-gather sends 1/tp of the activation. */
static void test_rank_order(void **state)
{
    (void)state;
    static const char *const par[] = {
        "{\"dp\": 2, \"tp\": 2, \"pp\": 2}",
        "{\"dp\": 2, \"tp\": 2, \"pp\": 2, \"order\": \"tp-cp-ep-dp-pp\","
        " \"p2p_scatter_gather\": true}",
    };
    const uint32_t peer[2] = {4, 2}, next_stage[2] = {2, 4};
    uint64_t sent[2];
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        load("llama3-8b", hgx(1), par[k],
             "{\"micro_batch\": 1, \"seq_len\": 4096, \"grad_accum\": 2}", "zero1", &s);
        run_result r;
        run_of(&s, &r);
        const prog_op *ops = prog_ops(r.p, 0);
        bool dp_seen = false, pp_seen = false;
        for (uint32_t i = 0; i < prog_nops(r.p, 0); i++) {
            const char *n = prog_str_get(r.p, ops[i].name);
            if (ops[i].kind != PROG_OP_COLL) continue;
            prog_group g = prog_group_net(r.p, ops[i].group);
            if (!strncmp(n, "dp.", 3) && !dp_seen) {
                assert_int_equal(g.size, 2);
                assert_int_equal(g.ranks[1], peer[k]);
                dp_seen = true;
            }
            if (!strcmp(n, "pp.send_act") && !pp_seen) {
                assert_int_equal(g.ranks[1], next_stage[k]);
                sent[k] = ops[i].bytes;
                pp_seen = true;
            }
        }
        assert_true(dp_seen && pp_seen);
        /* stage 0 receives only gradients, one per micro-batch, gathered over tp */
        assert_int_equal(count_ops(&r, PROG_COLL_ALL_GATHER, "pp.", NULL), k ? 2 : 0);
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    assert_int_equal(sent[1] * 2, sent[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tp_parameters),
        cmocka_unit_test(test_pp_parameters),
        cmocka_unit_test(test_uneven_stages),
        cmocka_unit_test(test_empty_end_chunks),
        cmocka_unit_test(test_ep_parameters_and_dispatch),
        cmocka_unit_test(test_korthikanti_activations),
        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_fold_matches_every_rank),
        cmocka_unit_test(test_megatron_states),
        cmocka_unit_test(test_megatron_buckets),
        cmocka_unit_test(test_megatron_stage_buckets),
        cmocka_unit_test(test_fsdp_pipeline_recv),
        cmocka_unit_test(test_megatron_ddp),
        cmocka_unit_test(test_recompute_collectives),
        cmocka_unit_test(test_tp_comm_overlap),
        cmocka_unit_test(test_moe_a2a_overlap),
        cmocka_unit_test(test_moe_dispatcher),
        cmocka_unit_test(test_cp_ring),
        cmocka_unit_test(test_cp_torch),
        cmocka_unit_test(test_tp_dtensor),
        cmocka_unit_test(test_rank_order),
        cmocka_unit_test(test_megatron_fsdp),
        cmocka_unit_test(test_cpu_offload),
        cmocka_unit_test(test_cpu_offload_synchronizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
