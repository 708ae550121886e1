/* rplan: one rank of a shipped scenario's program planned for replay, and
 * measured times reported back in the summary format.
 *
 * Expectations come from the program and from the scenario files:
 * seeds/002's model is 8 Linear layers 2048 x 2048 without bias, 32 rows
 * per micro-batch (models/seed002-mlp8.json), so every forward is one GEMM
 * m = 32, n = 2048, k = 2048 and every backward two (input and weight
 * gradient), except the first layer's, which needs no input gradient: 8 + 15
 * = 23 GEMMs. FULL_SHARD over 4 ranks gathers every unit in forward and in
 * backward (16 all-gathers of the padded 16 MiB FlatParameter) and
 * reduce-scatters 8 gradients. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "../../calib/harness/rplan.h"
#include "../../sim/io/scenario.h"
#include "../../sim/out/diff.h"
#include "../../sim/run/run.h"
#include "../../sim/sched/sched.h"

typedef struct fx {
    spec_scenario s;
    run_result r;
    rplan *rp;
} fx;

static void load(fx *f, const char *rel, uint32_t rank)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, rel);
    ss_err err;
    ss_err_clear(&err);
    memset(f, 0, sizeof *f);
    if (scn_load(path, NULL, 0, &f->s, &err)) fail_msg("%s: %s", err.where, err.msg);
    f->s.par.fold = false; /* as the harness's replay: every rank's program */
    if (run_step(&f->s, NULL, &f->r, &err)) fail_msg("%s: %s", err.where, err.msg);
    if (rplan_new(&f->rp, f->r.pl, f->r.p, rank, &err)) fail_msg("%s: %s", err.where, err.msg);
}

static void unload(fx *f)
{
    rplan_free(f->rp);
    run_fini(&f->r);
    spec_scenario_fini(&f->s);
}

static const char *opname(const fx *f, uint32_t i)
{
    return prog_str_get(f->r.p, prog_ops(f->r.p, f->rp->rank)[i].name);
}

static uint32_t find_op(const fx *f, const char *name)
{
    for (uint32_t i = 0; i < f->rp->nsteps; i++)
        if (!strcmp(opname(f, i), name)) return i;
    fail_msg("no op named %s", name);
    return UINT32_MAX;
}

/* Every dep of every op is accounted for exactly once: a wait (device op on
 * another stream), a sync (host op on a device op) or implied (same stream,
 * or a host op, whose completion the host order already guarantees). */
static void check_wiring(const fx *f)
{
    const prog_op *ops = prog_ops(f->r.p, f->rp->rank);
    const uint32_t *deps = prog_deps(f->r.p, f->rp->rank);
    uint32_t implied = 0;
    for (uint32_t i = 0; i < f->rp->nsteps; i++) {
        const rplan_step *st = &f->rp->steps[i];
        const prog_op *o = &ops[i];
        uint32_t wired = 0, mine = 0;
        if (o->kind == PROG_OP_HOST) {
            assert_int_equal(st->kind, RPLAN_HOST);
            assert_int_equal(st->stream, PROG_HOST);
            assert_int_equal(st->nwait, 0);
        } else {
            assert_int_equal(st->stream, o->stream);
            assert_int_equal(st->nsync, 0);
        }
        for (uint32_t k = 0; k < o->ndep; k++) {
            uint32_t d = deps[o->dep0 + k];
            bool same = ops[d].kind == PROG_OP_HOST ||
                        (o->kind != PROG_OP_HOST && ops[d].stream == o->stream);
            mine += same;
        }
        const uint32_t *w = f->rp->idx + (o->kind == PROG_OP_HOST ? st->sync0 : st->wait0);
        wired = o->kind == PROG_OP_HOST ? st->nsync : st->nwait;
        for (uint32_t k = 0; k < wired; k++) {
            assert_true(w[k] < i);
            assert_int_not_equal(ops[w[k]].kind, PROG_OP_HOST);
            if (o->kind != PROG_OP_HOST) assert_int_not_equal(ops[w[k]].stream, o->stream);
        }
        assert_int_equal(wired + mine, o->ndep);
        implied += mine;
    }
    assert_int_equal(implied, f->rp->implied);
}

/* Memory actions: each one appears in exactly one list of its op. */
static void check_memory(const fx *f)
{
    const prog_op *ops = prog_ops(f->r.p, f->rp->rank);
    const prog_mem *mems = prog_mems(f->r.p, f->rp->rank);
    for (uint32_t i = 0; i < f->rp->nsteps; i++) {
        const rplan_step *st = &f->rp->steps[i];
        uint32_t n[3] = {0, 0, 0};
        for (uint32_t k = 0; k < ops[i].nmem; k++) n[mems[ops[i].mem0 + k].act]++;
        assert_int_equal(st->nalloc, n[PROG_ALLOC_AT_ISSUE]);
        assert_int_equal(st->nfreei, n[PROG_FREE_AT_ISSUE]);
        assert_int_equal(st->nfreee, n[PROG_FREE_AT_END]);
        for (uint32_t k = 0; k < st->nalloc; k++) {
            const rplan_tensor *t = &f->rp->tensors[f->rp->idx[st->alloc0 + k]];
            uint8_t want = ops[i].kind == PROG_OP_HOST ? PROG_COMPUTE : ops[i].stream;
            assert_int_equal(t->stream, want);
        }
    }
}

/* FULL_SHARD BACKWARD_PRE, rank 0: GEMMs with the model's shapes, the
 * collectives on their streams, the forward waiting on its all-gather, the
 * rate limiter syncing on a reshard marker. */
static void test_fsdp_steps(void **state)
{
    (void)state;
    fx f;
    load(&f, "seed002/zero3_full_shard_pre.json", 0);
    const rplan *rp = f.rp;
    assert_int_equal(rp->nsteps, prog_nops(f.r.p, 0));
    assert_int_equal(rp->count[RPLAN_GEMM], 16);
    assert_int_equal(rp->ngemms, 23);
    assert_int_equal(rp->count[RPLAN_COLL], 24);
    assert_int_equal(rp->count[RPLAN_COPY], 0);
    uint32_t ag = 0, rs = 0;
    for (uint32_t i = 0; i < rp->nsteps; i++) {
        const rplan_step *st = &rp->steps[i];
        if (st->kind == RPLAN_GEMM) {
            const rplan_gemm *g = &rp->gemms[st->gemm0];
            assert_int_equal(st->dtype, SPEC_DT_FP32);
            assert_int_equal(st->stream, PROG_COMPUTE);
            if (!strncmp(opname(&f, i), "fwd.", 4)) {
                assert_int_equal(st->ngemm, 1);
                assert_true(g->m == 32 && g->n == 2048 && g->k == 2048);
            } else {
                bool first = !strcmp(opname(&f, i), "bwd.layers.0");
                assert_int_equal(st->ngemm, first ? 1 : 2);
                const rplan_gemm *w = &g[st->ngemm - 1]; /* weight gradient: k = tokens */
                assert_true(w->m == 2048 && w->n == 2048 && w->k == 32);
            }
        }
        if (st->kind != RPLAN_COLL) continue;
        assert_int_equal(st->group_size, 4);
        assert_true(st->flags & RPLAN_F_ONE_RANK);
        assert_true(st->bytes == 16ull << 20);
        if (st->coll == PROG_COLL_ALL_GATHER) ag++, assert_int_equal(st->stream, PROG_UNSHARD);
        if (st->coll == PROG_COLL_REDUCE_SCATTER) rs++, assert_int_equal(st->stream, PROG_REDUCE);
    }
    assert_int_equal(ag, 16);
    assert_int_equal(rs, 8);
    assert_true(rp->max_coll_bytes == 16ull << 20);
    assert_true(rp->max_a == 32 * 2048 && rp->max_c == 2048 * 2048);

    /* fwd.layers.3 waits on exactly one thing: its unit's all-gather. */
    const rplan_step *fw = &rp->steps[find_op(&f, "fwd.layers.3")];
    assert_int_equal(fw->nwait, 1);
    const rplan_step *agst = &rp->steps[rp->idx[fw->wait0]];
    assert_int_equal(agst->kind, RPLAN_COLL);
    assert_int_equal(agst->coll, PROG_COLL_ALL_GATHER);
    assert_string_equal(opname(&f, rp->idx[fw->wait0]), "fsdp.all_gather.u4");

    /* limit_all_gathers: the host syncs on the oldest reshard's end. */
    uint32_t rl = find_op(&f, "fsdp.rate_limit");
    assert_int_equal(rp->steps[rl].kind, RPLAN_HOST);
    assert_int_equal(rp->steps[rl].nsync, 1);
    uint32_t target = rp->idx[rp->steps[rl].sync0];
    assert_int_equal(rp->steps[target].kind, RPLAN_MARKER);
    assert_string_equal(opname(&f, target), "fsdp.reshard");

    /* Host hooks of 500 us are busy waits, flagged. */
    uint32_t hook = find_op(&f, "fsdp.pre_forward");
    assert_true(rp->steps[hook].ns == 500000);
    assert_true(rp->steps[hook].flags & RPLAN_F_HOST_WAIT);
    check_wiring(&f);
    check_memory(&f);
    unload(&f);
}

/* DDP: the bucket all-reduce on the reduce stream waits on the copy into
 * the bucket (compute stream); the copy back waits on the all-reduce. The
 * copies are elementwise kernels without GEMM shapes: spins, flagged. */
static void test_ddp_wiring(void **state)
{
    (void)state;
    fx f;
    load(&f, "seed002/zero0_ddp.json", 1);
    const rplan *rp = f.rp;
    assert_int_equal(rp->count[RPLAN_COLL], 2);
    uint32_t ar = find_op(&f, "ddp.all_reduce.bucket0");
    const rplan_step *st = &rp->steps[ar];
    assert_int_equal(st->stream, PROG_REDUCE);
    assert_true(st->bytes == 64ull << 20);
    assert_int_equal(st->nwait, 1);
    uint32_t copy = rp->idx[st->wait0];
    assert_int_equal(rp->steps[copy].kind, RPLAN_SPIN);
    assert_true(rp->steps[copy].flags & RPLAN_F_PREDICTED);
    assert_non_null(strstr(opname(&f, copy), "ddp.copy_to_bucket"));
    uint32_t back = find_op(&f, "ddp.copy_from_bucket.p0");
    assert_int_equal(rp->steps[back].nwait, 1);
    assert_string_equal(opname(&f, rp->idx[rp->steps[back].wait0]), "ddp.all_reduce.bucket1");
    check_wiring(&f);
    check_memory(&f);
    unload(&f);
}

/* Two distinct shapes in seeds/002 (forward = input gradient for square
 * layers; weight gradient k = 32). */
static void test_unique_gemms(void **state)
{
    (void)state;
    fx f;
    load(&f, "seed002/zero2_fsdp_sgo.json", 0);
    rplan_gemm *g = NULL;
    uint32_t n = 0;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(rplan_unique_gemms(f.rp, &g, &n, &err), SS_OK);
    assert_int_equal(n, 2);
    assert_true(g[0].m == 32 && g[0].n == 2048 && g[0].k == 2048);
    assert_true(g[1].m == 2048 && g[1].n == 2048 && g[1].k == 32);
    free(g);
    unload(&f);
}

/* A transformer's blocks carry no GEMM shapes in the plan: every compute op
 * with device time is a spin of its predicted duration. */
static void test_arch_spins(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/transformers/llama3-8b-full-shard-8xh100.json",
             SS_SOURCE_DIR);
    spec_scenario s;
    plan *pl = NULL;
    prog *p = NULL;
    rplan *rp = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scn_load(path, NULL, 0, &s, &err), SS_OK);
    assert_int_equal(plan_new(&pl, &s, &err), SS_OK);
    assert_int_equal(sched_build(pl, &p, &err), SS_OK);
    assert_int_equal(rplan_new(&rp, pl, p, 7, &err), SS_OK);
    uint32_t busy = 0;
    const prog_op *ops = prog_ops(p, 7);
    for (uint32_t i = 0; i < prog_nops(p, 7); i++)
        busy += ops[i].kind == PROG_OP_COMPUTE && ops[i].dev_ns > 0;
    assert_int_equal(rp->count[RPLAN_GEMM], 0);
    assert_int_equal(rp->ngemms, 0);
    assert_int_equal(rp->count[RPLAN_SPIN], busy);
    assert_true(busy > 64); /* 32 layers forward and backward at least */
    assert_int_equal(rp->steps[find_op(&(fx){.r.p = p, .rp = rp}, "fwd.layers.0.attn")].dtype,
                     SPEC_DT_BF16);
    rplan_free(rp);
    prog_free(p);
    plan_free(pl);
    spec_scenario_fini(&s);
}

static void test_bad_rank(void **state)
{
    (void)state;
    fx f;
    load(&f, "seed002/zero0_ddp.json", 0);
    rplan *rp = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(rplan_new(&rp, f.r.pl, f.r.p, 4, &err), SS_E_INPUT);
    assert_null(rp);
    assert_non_null(strstr(err.msg, "4 ranks"));
    unload(&f);
}

/* The predicted times of rank 2 fed back as a "measurement": the report's
 * times must be exactly rank 2's (busy times from the same intervals), its
 * memory the pool figures given, model-only keys gone, and `shardsim diff`
 * must read it. One op moved before its issue is clamped and counted. */
static void test_report(void **state)
{
    (void)state;
    fx f;
    load(&f, "seed002/zero3_full_shard_pre.json", 2);
    uint32_t n = f.rp->nsteps;
    ss_ns *t = calloc(3 * (size_t)n, sizeof *t);
    assert_non_null(t);
    ss_ns step = 0;
    for (uint32_t i = 0; i < n; i++) {
        const trc_op *o = &f.r.t->ops[2][i];
        t[i] = o->issue, t[n + i] = o->start, t[2 * n + i] = o->end;
        if (o->end > step) step = o->end;
    }
    uint32_t moved = find_op(&f, "fwd.layers.5");
    t[n + moved] = t[moved] - 1; /* starts 1 ns before its issue */
    mem_point series[2] = {{0, 100 << 20, 120 << 20}, {1000, 180 << 20, 200 << 20}};
    double ms[3] = {20.5, 20.0, 21.0};
    rplan_meas m = {t, t + n, t + 2 * n, series, 2, 100u << 20, 190u << 20, 220u << 20,
                    150u << 20, moved, 1000, "test GPU", 3, ms, 64u << 20, true};
    char *js = NULL, *tr = NULL;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(rplan_report(f.rp, &f.s, &m, &js, &tr, &err), SS_OK);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    cJSON *sv = cJSON_GetObjectItem(root, "shardsim_version");
    assert_true(cJSON_IsString(sv));
    /* cJSON prints 15 significant digits: equal to a relative 1e-14. */
    double st = cJSON_GetObjectItem(root, "step_time_s")->valuedouble;
    assert_true(fabs(st - (double)step * 1e-9) <= 1e-14 * st);
    cJSON *mem = cJSON_GetObjectItem(root, "memory");
    assert_true(cJSON_GetObjectItem(mem, "max_peak_allocated_bytes")->valuedouble == 190 << 20);
    assert_true(cJSON_GetObjectItem(mem, "max_peak_reserved_bytes")->valuedouble == 220 << 20);
    assert_true(cJSON_GetObjectItem(mem, "max_steady_bytes")->valuedouble == 150 << 20);
    assert_null(cJSON_GetObjectItem(mem, "max_init_peak_bytes"));
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(mem, "per_rank"), 0);
    assert_true(cJSON_GetObjectItem(r0, "rank")->valuedouble == 2);
    assert_string_equal(cJSON_GetObjectItem(r0, "peak_op")->valuestring, "fwd.layers.5");
    assert_null(cJSON_GetObjectItem(r0, "peak_breakdown"));
    cJSON *ag = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "collectives"), "all_gather");
    assert_true(cJSON_GetObjectItem(ag, "count")->valuedouble == 16);
    cJSON *meas = cJSON_GetObjectItem(root, "measured");
    assert_true(cJSON_GetObjectItem(meas, "clamped_ops")->valuedouble == 1);
    assert_true(cJSON_GetObjectItem(meas, "ranks_in_program")->valuedouble == 4);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(meas, "limitations")) >= 3);
    cJSON_Delete(root);

    /* The same intervals, so the same compute busy time as the prediction
     * (rank 0 of the prediction; FULL_SHARD ranks are symmetric). */
    char *pred = sum_json(&f.r.sum);
    assert_non_null(pred);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(diff_text(pred, "predicted", js, "measured", out, &err), SS_OK);
    fclose(out);
    const char *row = strstr(buf, "compute busy");
    assert_non_null(row);
    assert_non_null(strstr(row, " +0.000 "));
    assert_non_null(strstr(buf, "model setup peak"));

    cJSON *trace = cJSON_Parse(tr);
    assert_non_null(cJSON_GetObjectItem(trace, "traceEvents"));
    cJSON_Delete(trace);
    free(buf);
    free(pred);
    free(js);
    free(tr);
    free(t);
    unload(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsdp_steps),   cmocka_unit_test(test_ddp_wiring),
        cmocka_unit_test(test_unique_gemms), cmocka_unit_test(test_arch_spins),
        cmocka_unit_test(test_bad_rank),     cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
