/* Symmetric folding: a scenario whose ranks run identical programs is
 * simulated once per role, and must give the every-rank answer exactly:
 * the JSON summaries of parallel.fold true and false are the same, byte for
 * byte, but for what the engine did (engine.*, layout.simulated_ranks).
 * Per-rank variation (stragglers, jitter) and per-rank programs
 * (ZeroRedundancyOptimizer's owners, FSDP's use_orig_params views) are
 * simulated on every rank whatever parallel.fold says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "../../sim/eng/eng.h"
#include "../../sim/mem/replay.h"
#include "../../sim/io/scenario.h"
#include "../../sim/net/net.h"
#include "../../sim/plan/plan.h"
#include "../../sim/run/run.h"
#include "../../sim/sched/sched.h"
#include "load_run.h"

/* The summary without what depends on how it was simulated. A layout's
 * (keep: the folded run's ranks; ALL for the others) also without its
 * rank count and host memory, its per-rank memory cut to the first keep
 * ranks (a folded layout reports replica 0's ranks, an every-rank one the
 * world's). */
#define ALL UINT32_MAX
static char *answer_of(const run_result *r, uint32_t keep)
{
    char *js = sum_json(&r->sum);
    assert_non_null(js);
    cJSON *root = cJSON_Parse(js);
    free(js);
    assert_non_null(root);
    cJSON_DeleteItemFromObject(root, "engine");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "layout"), "simulated_ranks");
    if (keep != ALL) {
        cJSON_DeleteItemFromObject(root, "ranks");
        cJSON *mem = cJSON_GetObjectItem(root, "memory");
        cJSON_DeleteItemFromObject(mem, "host_per_node");
        cJSON *pr = cJSON_GetObjectItem(mem, "per_rank");
        while (pr && (uint32_t)cJSON_GetArraySize(pr) > keep) cJSON_DeleteItemFromArray(pr, (int)keep);
    }
    char *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    assert_non_null(out);
    return out;
}

/* Folded and every-rank runs of rel; returns the folded run's simulated
 * ranks. */
static uint32_t compare(const char *rel, const char *extra)
{
    const char *sets[2][2] = {{"parallel.fold=true", extra}, {"parallel.fold=false", extra}};
    char *a[2];
    uint32_t sim[2], ranks[2];
    for (int k = 0; k < 2; k++) {
        spec_scenario s;
        run_result r;
        load_run(rel, sets[k], extra ? 2 : 1, &s, &r);
        a[k] = answer_of(&r, ALL);
        sim[k] = r.sum.nsim;
        ranks[k] = r.sum.nranks;
        run_fini(&r);
        spec_scenario_fini(&s);
    }
    print_message("  %-52s %s: %u simulated ranks folded, %u every rank\n", rel,
                  extra ? extra : "", sim[0], sim[1]);
    assert_int_equal(ranks[0], ranks[1]);
    assert_int_equal(sim[1], ranks[1]);
    assert_string_equal(a[0], a[1]);
    free(a[0]);
    free(a[1]);
    return sim[0];
}

/* DDP, NO_SHARD, SHARD_GRAD_OP and FULL_SHARD on seeds/002's 4 V100s (the
 * FSDP rows without use_orig_params), flat FSDP on 8 and 64 H100s, DDP
 * over two A3 Mega nodes: one rank simulated, the same summary. */
static void test_symmetric_one_rank(void **state)
{
    (void)state;
    const char *flat = "sharding.use_orig_params=false";
    struct { const char *rel, *extra; } c[] = {
        {"seed002/zero0_ddp.json", NULL},
        {"seed002/zero2_fsdp_sgo.json", flat},
        {"seed002/zero3_full_shard_pre.json", flat},
        {"seed002/zero3_full_shard_none.json", flat},
        {"examples/mlp7-no-shard-sgd.json", NULL},
        {"examples/mlp7-full-shard-per-block.json", NULL},
        {"published/mpt-7b-fsdp1-2k-8xh100.json", NULL},
        {"published/mpt-70b-fsdp1-ac-2k-64xh100.json", NULL},
        {"multinode/llama3-8b-ddp-2x8-a3mega-calibrated.json", NULL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        assert_int_equal(compare(c[i].rel, c[i].extra), 1);
}

/* HSDP: the folded rank's shard group and replicate group carry their
 * copies (the other nodes' all-gathers, the other shard positions'
 * all-reduces over the same NICs and fabric), so that contention is the
 * whole job's: 4 x 8 H100s and IBM's 96. */
static void test_hybrid_copies(void **state)
{
    (void)state;
    assert_int_equal(compare("multinode/llama3-8b-hybrid-shard-4x8xh100.json",
                             "sharding.use_orig_params=false"), 1);
    assert_int_equal(compare("published/ibm-llama2-7b-hsdp-96xh100.json", NULL), 1);
    assert_int_equal(compare("published/ibm-llama2-13b-hsdp-sac-96xh100.json", NULL), 1);
}

/* A layout folds to one data-parallel replica whose groups carry the
 * other replicas' as copies: the 5T MoE on a 16 x 16 torus with cp 8, pp 4,
 * ep 32 and dp 8 (32 of 256 ranks simulated; an expert-parallel group
 * spans four replicas, and its all-to-all crosses the rows where the other
 * replicas' context-parallel rings run) gives the every-rank step within
 * 1e-8 (one flow for a group and its copies rounds differently) and the
 * same memory on every simulated rank. Without the copies the folded step
 * is 4% faster (218.76 s against 227.69 s). */
static void test_layout_copies(void **state)
{
    (void)state;
    const char *sets[2][6] = {{"topology.nodes=256", "parallel.dp=8", "parallel.ep=32", "parallel.pp=4",
                               "training.grad_accum=4", "parallel.fold=true"},
                              {"topology.nodes=256", "parallel.dp=8", "parallel.ep=32", "parallel.pp=4",
                               "training.grad_accum=4", "parallel.fold=false"}};
    run_result r[2];
    spec_scenario s[2];
    for (int k = 0; k < 2; k++) load_run("moe-5t/accel-4096-cp8-pp16-ep64.json", sets[k], 6, &s[k], &r[k]);
    assert_int_equal(r[0].sum.nsim, 32);
    assert_int_equal(r[1].sum.nsim, 256);
    double rel = ((double)r[0].sum.step_ns - (double)r[1].sum.step_ns) / (double)r[1].sum.step_ns;
    print_message("  5T cp8 pp4 ep32 dp8: folded %.9f s, every rank %.9f s (%+.2g)\n",
                  r[0].sum.step_ns * 1e-9, r[1].sum.step_ns * 1e-9, rel);
    assert_true(rel < 1e-8 && rel > -1e-8);
    for (uint32_t q = 0; q < r[0].sum.nranks; q++) {
        assert_int_equal(r[0].sum.ranks[q].mem.peak, r[1].sum.ranks[q].mem.peak);
        assert_int_equal(r[0].sum.ranks[q].mem.peak_reserved, r[1].sum.ranks[q].mem.peak_reserved);
    }
    for (int k = 0; k < 2; k++) {
        run_fini(&r[k]);
        spec_scenario_fini(&s[k]);
    }
}

/* Folded and every-rank runs of a layout; the summaries equal byte for
 * byte on the folded run's ranks. Returns the folded run's simulated
 * ranks; *pp, the layout's stages. */
static uint32_t compare_layout(const char *rel, const char **extra, size_t nextra, uint32_t *pp)
{
    const char *sets[2][16];
    assert_true(nextra < 16);
    sets[0][0] = "parallel.fold=true", sets[1][0] = "parallel.fold=false";
    for (size_t i = 0; i < nextra; i++) sets[0][i + 1] = sets[1][i + 1] = extra[i];
    run_result r[2];
    spec_scenario s[2];
    for (int k = 0; k < 2; k++) load_run(rel, sets[k], nextra + 1, &s[k], &r[k]);
    char *a = answer_of(&r[0], r[0].sum.nranks), *b = answer_of(&r[1], r[0].sum.nranks);
    uint32_t sim = r[0].sum.nsim;
    *pp = s[0].par.pp;
    if (strcmp(a, b)) {
        print_message("  %s:", rel);
        for (size_t i = 0; i < nextra; i++) print_message(" %s", extra[i]);
        print_message("\n  folded %.9f s, every rank %.9f s\n", r[0].sum.step_ns * 1e-9,
                      r[1].sum.step_ns * 1e-9);
    }
    assert_string_equal(a, b);
    free(a);
    free(b);
    for (int k = 0; k < 2; k++) {
        run_fini(&r[k]);
        spec_scenario_fini(&s[k]);
    }
    return sim;
}

/* One rank per stage: the tensor- and context-parallel peers of a stage
 * run the same program at the same times, so the program holds one of
 * them and their groups load the network as copies (docs/FOLD.md). The
 * shipped layouts with tp or cp on fat trees and NVSwitch nodes (8 x
 * H100, 8 x A100 with 8 NICs, Jean Zay's 4 NICs for 8 GPUs, B200): pp
 * ranks simulated, the every-rank summary byte for byte. BLOOM's 48 nodes
 * run under one leaf here: on Jean Zay's 32-node leaves its 6-node
 * replicas straddle a leaf boundary, their pipeline sends cross the core
 * where replica 0's do not, and the replica fold (which the tp fold
 * reproduces to the nanosecond) is 1.1e-6 slow (docs/FOLD.md). */
static void test_tp_cp_fold(void **state)
{
    (void)state;
    const char *one_leaf[] = {"topology.fabric.nodes_per_leaf=48"};
    const char *c[] = {
        "examples/tiny-gpt-megatron-tp2-pp2-overlap.json",
        "examples/tiny-gpt-fsdp2-tp2-cp2-ring.json",
        "published/nemo-24.07-llama3-70b-tp4-pp4-cp2-vp5-dp2-fp8-64xh100.json",
        "published/megatron-bridge-25.11-llama3.1-405b-tp4-pp8-vp8-cp2-ep1-dp2-fp8cs-128xb200.json",
        "published/bigscience-bloom-176b-tp4-pp12-dp8-384xa100.json",
        "published/megatron-lm-sc21-gpt-18b-tp8-dp32-256xa100.json",
        "published/torchtitan-llama3.1-70b-fsdp32-tp8-asynctp-256xh100.json",
        "published/megatron-bridge-25.11-qwen3-30b-a3b-tp1-pp2-vp24-cp1-ep8-dp8-fp8cs-16xh100.json",
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        bool bloom = strstr(c[i], "bloom") != NULL;
        uint32_t pp, sim = compare_layout(c[i], bloom ? one_leaf : NULL, bloom, &pp);
        print_message("  %-52.52s %u simulated ranks\n", c[i], sim);
        assert_int_equal(sim, pp);
    }
    /* HSDP inside a layout (FSDP2 x TP 2 x CP 2, shard groups of 2 of 4
     * replicas: its shard and replicate groups fold too) and DeepSpeed's
     * pipeline with uneven stages under TP 2, on two fat-tree nodes. */
    const char *hsdp[] = {"topology=../../topologies/h100-ib-fattree.json", "topology.nodes=2",
                          "parallel.dp=4", "sharding.shard_group_size=2"};
    const char *ds[] = {"topology=../../topologies/h100-ib-fattree.json", "topology.nodes=2",
                        "parallel.dp=4", "parallel.tp=2"};
    uint32_t pp, sim = compare_layout("examples/tiny-gpt-fsdp2-tp2-cp2-ring.json", hsdp, 4, &pp);
    assert_int_equal(sim, pp);
    sim = compare_layout("examples/tiny-gpt-deepspeed-zero1-pp2-uneven.json", ds, 4, &pp);
    assert_int_equal(sim, pp);
}

/* Small random layouts (tp 2-8, cp 1-4, pp 1-4, dp 1-4, sequence
 * parallel and its overlap, the CP ring, Megatron's or FSDP2's runtime) on the fat trees
 * and NVSwitch or PCIe nodes of topologies/, each folded and every rank:
 * the same summary. The seed is fixed: the same cases every run. */
/* n random layouts from seed, in shardsim's rank order or (megatron)
 * Megatron-core's tp-cp-ep-dp-pp, whose stage's ranks are consecutive;
 * returns how many folded to one rank per stage. */
static uint32_t random_layouts(uint64_t x, int n, bool megatron)
{
    static const char *topos[] = {"h100-ib-fattree", "dgx-a100-80gb-hdr", "jeanzay-a100-80gb-opa",
                                 "aws-p5-efa", "oci-bm-gpu4-a100", "gcp-a3mega", "pcie8-a100"};
    static const char *base[] = {"examples/tiny-gpt-megatron-tp2-pp2-overlap.json",
                                 "examples/tiny-gpt-fsdp2-tp2-cp2-ring.json"};
    uint32_t folded = 0;
    for (int i = 0; i < n; i++) {
        uint32_t v[8];
        for (int k = 0; k < 8; k++) { /* xorshift64 */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            v[k] = (uint32_t)(x >> 32);
        }
        uint32_t tp = 2u << v[0] % 3, cp = 1u << v[1] % 3, pp = 1u << v[2] % 3, dp = 1u << v[3] % 3;
        const char *tf = topos[v[4] % 7];
        if (!strcmp(tf, "pcie8-a100") && tp * cp * pp * dp > 8) tf = "h100-ib-fattree";
        uint32_t world = tp * cp * pp * dp, nodes = world < 8 ? 1 : world / 8;
        char a[11][128];
        snprintf(a[0], sizeof a[0], "topology=../../topologies/%s.json", tf);
        snprintf(a[1], sizeof a[1], "topology.nodes=%u", nodes);
        snprintf(a[2], sizeof a[2], "topology.gpus_per_node=%u", world < 8 ? world : 8);
        snprintf(a[3], sizeof a[3], "parallel.tp=%u", tp);
        snprintf(a[4], sizeof a[4], "parallel.cp=%u", cp);
        snprintf(a[5], sizeof a[5], "parallel.pp=%u", pp);
        snprintf(a[6], sizeof a[6], "parallel.dp=%u", dp);
        snprintf(a[7], sizeof a[7], "parallel.sequence_parallel=%s", v[5] % 2 ? "true" : "false");
        snprintf(a[8], sizeof a[8], "parallel.cp_comm_type=%s", v[6] % 2 ? "p2p" : "all_gather");
        snprintf(a[9], sizeof a[9], "parallel.tp_comm_overlap=%s",
                 v[5] % 2 && v[7] % 2 == 0 ? "true" : "false");
        snprintf(a[10], sizeof a[10], "parallel.order=\"tp-cp-ep-dp-pp\"");
        const char *e[11];
        for (int k = 0; k < 11; k++) e[k] = a[k];
        uint32_t p, sim = compare_layout(base[v[7] % 2], e, megatron ? 11 : 10, &p);
        print_message("  tp %u cp %u pp %u dp %u on %-22s %-8s%s: %u simulated\n", tp, cp, pp, dp,
                      tf, v[7] % 2 ? "fsdp2" : "megatron", megatron ? ", tp-cp-ep-dp-pp" : "",
                      sim);
        folded += sim == pp;
    }
    return folded;
}

static void test_tp_cp_fold_random(void **state)
{
    (void)state;
    assert_true(random_layouts(0x9e3779b97f4a7c15ull, 24, false) >= 12); /* most fold along tp and cp */
}

/* The same with experts: a 4-layer MoE (8 experts, top 2) under
 * Megatron's runtime, ep 2-8 and expert tensor parallel 1-2 inside tp x cp
 * x dp, on the H100 fat tree and Jean Zay's shared NICs; then each again
 * with the combined 1F1B schedule (parallel.moe_a2a_overlap, interleaved
 * over 2 virtual stages where pp is 2), whose forward and backward chunks
 * interleave layer by layer on every simulated rank alike. */
static void moe_fold_cases(bool overlap, bool megatron)
{
    const char *moe = "model={\"name\": \"tiny MoE\", \"architecture\": {\"type\": \"transformer\", "
                      "\"layers\": 4, \"hidden\": 512, \"heads\": 8, \"kv_heads\": 4, "
                      "\"ffn_hidden\": 1536, \"activation\": \"swiglu\", \"vocab\": 1024, "
                      "\"norm\": \"rmsnorm\", \"moe\": {\"experts\": 8, \"top_k\": 2, "
                      "\"expert_ffn_hidden\": 512}}}";
    static const struct { uint32_t tp, cp, pp, dp, ep, etp; const char *topo; } c[] = {
        {2, 1, 2, 2, 2, 1, "h100-ib-fattree"},  {4, 1, 1, 4, 8, 1, "h100-ib-fattree"},
        {2, 2, 2, 2, 4, 2, "jeanzay-a100-80gb-opa"}, {8, 1, 2, 2, 4, 2, "h100-ib-fattree"},
        {2, 4, 1, 2, 8, 1, "jeanzay-a100-80gb-opa"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint32_t world = c[i].tp * c[i].cp * c[i].pp * c[i].dp;
        char a[10][128];
        snprintf(a[0], sizeof a[0], "topology=../../topologies/%s.json", c[i].topo);
        snprintf(a[1], sizeof a[1], "topology.nodes=%u", world < 8 ? 1 : world / 8);
        snprintf(a[2], sizeof a[2], "parallel.tp=%u", c[i].tp);
        snprintf(a[3], sizeof a[3], "parallel.cp=%u", c[i].cp);
        snprintf(a[4], sizeof a[4], "parallel.pp=%u", c[i].pp);
        snprintf(a[5], sizeof a[5], "parallel.dp=%u", c[i].dp);
        snprintf(a[6], sizeof a[6], "parallel.ep=%u", c[i].ep);
        snprintf(a[7], sizeof a[7], "parallel.etp=%u", c[i].etp);
        snprintf(a[8], sizeof a[8], "training.grad_accum=%u", 2 * c[i].pp);
        const char *e[14] = {moe, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]};
        size_t ne = 10;
        if (megatron) e[ne++] = "parallel.order=\"tp-cp-ep-dp-pp\"";
        if (overlap) {
            e[ne++] = "parallel.moe_a2a_overlap=true";
            if (c[i].pp > 1) {
                e[ne++] = "parallel.pipeline_schedule=\"interleaved\"";
                e[ne++] = "parallel.virtual_stages=2";
            }
        }
        uint32_t p, sim = compare_layout("examples/tiny-gpt-megatron-tp2-pp2-overlap.json", e, ne, &p);
        print_message("  MoE tp %u cp %u pp %u dp %u ep %u etp %u on %s%s%s: %u simulated\n",
                      c[i].tp, c[i].cp, c[i].pp, c[i].dp, c[i].ep, c[i].etp, c[i].topo,
                      overlap ? ", moe_a2a_overlap" : "", megatron ? ", tp-cp-ep-dp-pp" : "", sim);
        assert_int_equal(sim, p);
    }
}

static void test_tp_cp_fold_moe(void **state)
{
    (void)state;
    moe_fold_cases(false, false);
    moe_fold_cases(true, false);
}

/* Megatron-core's own rank order (tp-cp-ep-dp-pp: pp outermost, a stage's
 * tp x cp x dp ranks consecutive) folds along all three at once, one rank
 * per stage, where the node allows: random layouts as above, the MoE
 * layouts with and without the combined 1F1B, and the Qwen3 235B-A22B row
 * of Megatron-Bridge 25.11 (256 ranks, 8 simulated), each byte for byte
 * against every rank. */
static void test_megatron_order_fold(void **state)
{
    (void)state;
    assert_true(random_layouts(0xd1b54a32d192ed03ull, 16, true) >= 8);
    moe_fold_cases(false, true);
    moe_fold_cases(true, true);
    const char *q[] = {"parallel.fold=true"};
    uint32_t pp, sim = compare_layout(
        "published/megatron-bridge-25.11-qwen3-235b-a22b-tp2-pp8-vp4-cp1-ep32-dp16-fp8cs-256xh100.json",
        q, 1, &pp);
    print_message("  Qwen3 235B-A22B, 256 ranks: %u simulated\n", sim);
    assert_int_equal(sim, pp);
}


/* A job on each node's first K GPUs (topology ranks_per_node, as Slurm's
 * segments place NeMo's GB200 jobs): a folded-away rank moves within its
 * node's K GPUs or by whole nodes (node_alike asks K, not the node's
 * GPUs), and the answer is the every-rank one. The GB200 Nemotron-4 340B
 * row (128 ranks, 64 of each rack's 72, Megatron's order) and a tiny
 * TP 2 x PP 2 x DP 2 layout on two 8-GPU nodes holding 4 ranks each, in
 * both rank orders. */
static void test_ranks_per_node_fold(void **state)
{
    (void)state;
    uint32_t pp, sim = compare_layout(
        "published/nemo-25.04-nemotron4-340b-tp8-pp4-cp1-vp12-dp4-fp8cs-128xgb200.json", NULL, 0,
        &pp);
    print_message("  GB200 Nemotron-4 340B, 64 ranks a rack: %u simulated\n", sim);
    assert_int_equal(sim, pp);
    const char *tiny[] = {"topology=../../topologies/h100-ib-fattree.json", "topology.nodes=2",
                          "topology.ranks_per_node=4", "parallel.dp=2",
                          "parallel.order=\"tp-cp-ep-dp-pp\""};
    for (size_t n = 4; n <= 5; n++) {
        sim = compare_layout("examples/tiny-gpt-megatron-tp2-pp2-overlap.json", tiny, n, &pp);
        print_message("  tiny tp 2 pp 2 dp 2, 4 ranks a node%s: %u simulated\n",
                      n == 5 ? ", tp-cp-ep-dp-pp" : "", sim);
        assert_int_equal(sim, pp);
    }
}

/* Per-rank programs are not folded: ZeroRedundancyOptimizer (each rank
 * steps the parameters it owns) and use_orig_params (each rank's views). */
/* Scenario `rel` (with `set`, if any) run twice on the network, with
 * options o[0] and o[1]: the traces into t[], the links the flows load and
 * the ones solved with classes into ld[] and sv[]. Asserts every op of
 * every rank issues, starts and ends at the same ns both times, the ends in
 * the same order, and the same step. */
typedef struct two_runs {
    trc *t[2];
    uint32_t ld[2], sv[2], nranks;
} two_runs;

static two_runs run_twice(const char *rel, const char *set, const net_opts o[2])
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, rel);
    spec_scenario s;
    plan *pl = NULL;
    prog *p = NULL;
    ss_err err;
    ss_err_clear(&err);
    if (scn_load(path, set ? &set : NULL, set ? 1 : 0, &s, &err) || plan_new(&pl, &s, &err) ||
        sched_build(pl, &p, &err))
        fail_msg("%s: %s", err.where, err.msg);
    two_runs w = {.nranks = prog_nranks(p)};
    for (int k = 0; k < 2; k++) {
        net_opts ok = o[k];
        ok.algo = (algo_kind)s.net_algo, ok.proto = (algo_proto)s.net_proto;
        net *n = NULL;
        assert_int_equal(net_new(&s.topo, &ok, &n, &err), SS_OK);
        eng_net e = net_eng(n, p);
        e.overlap_slowdown = s.topo.device.overlap_slowdown;
        if (eng_run(p, &e, &w.t[k], &err)) fail_msg("%s", err.msg);
        net_link_classes(n, &w.ld[k], &w.sv[k]);
        net_free(n);
    }
    assert_int_equal(w.t[0]->step_ns, w.t[1]->step_ns);
    for (uint32_t r = 0; r < w.t[0]->nranks; r++)
        for (uint32_t i = 0; i < prog_nops(p, r); i++) {
            const trc_op *a = &w.t[0]->ops[r][i], *b = &w.t[1]->ops[r][i];
            if (a->issue != b->issue || a->start != b->start || a->end != b->end ||
                a->seq_end != b->seq_end)
                fail_msg("%s rank %u op %u: [%llu, %llu) one way, [%llu, %llu) the other", rel, r,
                         i, (unsigned long long)a->start, (unsigned long long)a->end,
                         (unsigned long long)b->start, (unsigned long long)b->end);
        }
    prog_free(p);
    plan_free(pl);
    spec_scenario_fini(&s);
    return w;
}

static void two_runs_fini(two_runs *w)
{
    trc_free(w->t[0]);
    trc_free(w->t[1]);
}

/* Link classes (net.h): flows load one link of each class of links every
 * flow loads alike. Runs scenario `rel` (with `set`, if any) with classes
 * and with every link solved (collectives all flows, so that the classes
 * alone are tested): each op of each rank issues, starts and ends at the
 * same ns, with the events in the same order. Fills the links the flows
 * load and the ones solved with classes. */
static void same_without_classes(const char *rel, const char *set, uint32_t *loaded,
                                 uint32_t *solved)
{
    const net_opts o[2] = {{.no_solo = true}, {.every_link = true, .no_solo = true}};
    two_runs w = run_twice(rel, set, o);
    print_message("  %s%s%s: %u ranks, %u links loaded, %u solved with classes; step %llu ns\n",
                  rel, set ? " " : "", set ? set : "", w.nranks, w.ld[0], w.sv[0],
                  (unsigned long long)w.t[0]->step_ns);
    assert_int_equal(w.ld[1], 0); /* every link: no classes made */
    assert_int_equal(w.t[0]->nevents, w.t[1]->nevents);
    *loaded = w.ld[0], *solved = w.sv[0];
    two_runs_fini(&w);
}

/* Collectives that run alone (net.c, find_solo) are worked out without a
 * flow: run scenario `rel` with them and with every collective a flow:
 * every op issues, starts and ends at the same ns, the ends in the same
 * order, and the run with them takes fewer events (it has some). */
static void same_without_solo(const char *rel)
{
    const net_opts o[2] = {{0}, {.no_solo = true}};
    two_runs w = run_twice(rel, NULL, o);
    print_message("  %s: %llu events with collectives alone, %llu with every one a flow\n", rel,
                  (unsigned long long)w.t[0]->nevents, (unsigned long long)w.t[1]->nevents);
    assert_true(w.t[0]->nevents < w.t[1]->nevents);
    two_runs_fini(&w);
}

/* Tensor-parallel groups of a whole 8-GPU node whose pipeline sends leave
 * through the NICs (SC21 145B on A100, Megatron-core's 70B on H100), and
 * torchtitan's FSDP x TP: their TP collectives run alone. */
static void test_solo_changes_nothing(void **state)
{
    (void)state;
    same_without_solo("published/megatron-lm-sc21-gpt-145b-tp8-pp8-dp24-1536xa100.json");
    same_without_solo("published/megatron-core-r0.8-gpt-70b-tp8-pp2-dp48-768xh100.json");
    same_without_solo("published/torchtitan-llama3.1-70b-fsdp32-tp8-256xh100.json");
}

/* The classes change no time and do leave links out: the 5T MoE folded
 * over its 16 replicas (one replica's links of the ones its flows and
 * copies load); the 70B FSDP step folded to one rank, whose one group of
 * 64 has no copies (a ring loads every member's links alike); the same
 * step with every rank simulated (64 programs, one group). */
static void test_link_classes_change_nothing_heavy(void **state)
{
    (void)state;
    uint32_t loaded, solved;
    same_without_classes("moe-5t/accel-4096-cp16-pp16-ep64.json", NULL, &loaded, &solved);
    assert_true(solved > 0 && solved * 4 < loaded);
    same_without_classes("transformers/llama3-70b-full-shard-64xh100.json", NULL, &loaded, &solved);
    assert_true(solved > 0 && solved * 4 < loaded);
    same_without_classes("transformers/llama3-70b-full-shard-64xh100.json", "parallel.fold=false",
                         &loaded, &solved);
    assert_true(solved > 0 && solved * 4 < loaded);
}

static void test_per_rank_programs_not_folded(void **state)
{
    (void)state;
    assert_int_equal(compare("seed002/zero1_zro.json", NULL), 4);
    assert_int_equal(compare("seed002/zero3_full_shard_pre.json", "sharding.use_orig_params=true"), 4);
}

/* FSDP2 folds where every parameter's dim 0 divides by the shard group
 * (each rank then holds the same real rows), HSDP and the
 * reshard_after_forward = 8 groups carrying their copies; mlp7 on 4 ranks
 * (layers.6: 10 rows, rank 3 holds 1 real row) stays every rank. */
static void test_fsdp2_even_folds(void **state)
{
    (void)state;
    assert_int_equal(compare("fsdp2/llama3-8b-fsdp2-sac-8xh100.json", NULL), 1);
    assert_int_equal(compare("fsdp2/llama3-8b-hsdp-2x16-raf8-4x8xh100.json", NULL), 1);
    assert_int_equal(compare("examples/mlp7-full-shard-per-block.json", "sharding.strategy=fsdp2"),
                     4);
}

/* A straggler or jitter makes ranks differ: every rank is simulated, and
 * the straggler does slow the step (rank 3 at 1.5x: FULL_SHARD waits for
 * it at every collective). A layout falls back to every rank the same way. */
static void test_variation_simulates_every_rank(void **state)
{
    (void)state;
    const char *slow[] = {"runtime.stragglers=[{\"rank\": 3, \"factor\": 1.5}]"};
    const char *jit[] = {"runtime.jitter={\"cv\": 0.05, \"seed\": 7, \"samples\": 2}"};
    spec_scenario s;
    run_result r;
    load_run("seed002/zero3_full_shard_pre.json", NULL, 0, &s, &r);
    ss_ns base = r.sum.step_ns;
    run_fini(&r);
    spec_scenario_fini(&s);
    load_run("seed002/zero3_full_shard_pre.json", slow, 1, &s, &r);
    assert_int_equal(r.sum.nsim, 4);
    assert_true(r.sum.step_ns > base);
    run_fini(&r);
    spec_scenario_fini(&s);
    load_run("seed002/zero3_full_shard_pre.json", jit, 1, &s, &r);
    assert_int_equal(r.sum.nsim, 4);
    run_fini(&r);
    spec_scenario_fini(&s);
    load_run("published/torchtitan-llama3.1-70b-fsdp32-tp8-256xh100.json", NULL, 0, &s, &r);
    uint32_t folded = r.sum.nsim;
    run_fini(&r);
    spec_scenario_fini(&s);
    const char *small[] = {"topology.nodes=4", "parallel.dp=4", "runtime.stragglers=[{\"rank\": 1, \"factor\": 1.2}]"};
    load_run("published/torchtitan-llama3.1-70b-fsdp32-tp8-256xh100.json", small, 3, &s, &r);
    assert_int_equal(folded, 1); /* tp 8 folded: one rank per stage */
    assert_int_equal(r.sum.nsim, 32);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* The ranks of a layout's stage run one program; where the allocator sees
 * a rank's events at its source's times, the summary copies the source's
 * figures instead of replaying (summary.c, mem_view_same). Each simulated
 * rank's figures equal its own replay, field by field and tensor by
 * tensor, and the copy is taken: on the 405B Megatron-Bridge B200 row
 * every rank (tp 4, cp 2, pp 8, dp 2: 128 simulated ranks, 8 programs)
 * most ranks' views match. */
static void test_memory_copies_equal_replays_heavy(void **state)
{
    (void)state;
    spec_scenario s;
    run_result r;
    const char *every[] = {"parallel.fold=false"};
    load_run("published/megatron-bridge-25.11-llama3.1-405b-tp4-pp8-vp8-cp2-ep1-dp2-fp8cs-128xb200.json",
             every, 1, &s, &r);
    const trc *t = r.t;
    uint32_t same = 0;
    ss_err err;
    for (uint32_t k = 0; k < t->nranks; k++) {
        mem_cfg mc = {(mem_model)s.alloc_model, s.expandable_segments, sum_alloc_limit(&s), false, NULL};
        mem_rank m;
        assert_int_equal(mem_replay(t, k, &mc, &m, &err), SS_OK);
        const mem_rank *x = &r.sum.ranks[k].mem;
        assert_int_equal(m.start, x->start);
        assert_int_equal(m.end, x->end);
        assert_int_equal(m.peak, x->peak);
        assert_int_equal(m.peak_reserved, x->peak_reserved);
        assert_int_equal(m.ideal_peak, x->ideal_peak);
        assert_int_equal(m.peak_t, x->peak_t);
        assert_int_equal(m.peak_op, x->peak_op);
        assert_int_equal(m.ooms, x->ooms);
        assert_memory_equal(m.peak_by_cat, x->peak_by_cat, sizeof m.peak_by_cat);
        assert_int_equal(m.npeak_live, x->npeak_live);
        assert_memory_equal(m.peak_live, x->peak_live, m.npeak_live * sizeof *m.peak_live);
        mem_rank_fini(&m);
        uint32_t src = prog_rank_source(t->p, k);
        if (src == k) continue;
        mem_view *a = NULL, *b = NULL;
        assert_int_equal(mem_view_new(t, src, &a, &err), SS_OK);
        assert_int_equal(mem_view_new(t, k, &b, &err), SS_OK);
        same += mem_view_same(a, b);
        assert_false(mem_view_same(a, b) && k == 0);
        mem_view_free(a);
        mem_view_free(b);
    }
    print_message("  405B tp4 cp2 pp8 dp2: %u of %u simulated ranks copy their source's figures\n",
                  same, t->nranks);
    assert_int_equal(t->nranks, 128);
    assert_true(same >= t->nranks / 2);
    run_fini(&r);
    spec_scenario_fini(&s);
}

/* SS_SKIP_TESTS (a cmocka pattern, e.g. "*_heavy"): the tests the suite's
 * valgrind pass leaves to the plain and sanitizer passes (scripts/test.sh). */
int main(void)
{
    cmocka_set_skip_filter(getenv("SS_SKIP_TESTS"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symmetric_one_rank),
        cmocka_unit_test(test_hybrid_copies),
        cmocka_unit_test(test_layout_copies),
        cmocka_unit_test(test_tp_cp_fold),
        cmocka_unit_test(test_tp_cp_fold_random),
        cmocka_unit_test(test_megatron_order_fold),
        cmocka_unit_test(test_ranks_per_node_fold),
        cmocka_unit_test(test_tp_cp_fold_moe),
        cmocka_unit_test(test_per_rank_programs_not_folded),
        cmocka_unit_test(test_fsdp2_even_folds),
        cmocka_unit_test(test_solo_changes_nothing),
        cmocka_unit_test(test_link_classes_change_nothing_heavy),
        cmocka_unit_test(test_variation_simulates_every_rank),
        cmocka_unit_test(test_memory_copies_equal_replays_heavy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
