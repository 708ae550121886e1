/* shardsim-bench: the simulator's own speed, as figures (not pass/fail).
 *
 *   engine   events per second of the engine on a synthetic program: R ranks,
 *            each a chain of compute ops with a cross-stream dependency and an
 *            all-reduce of every rank every 8 ops; bytes per op of the
 *            engine's own state at its peak and of the trace it returns;
 *   flows    max-min re-solves per second of the flow solver with N concurrent
 *            flows of 6 links each, after every end-and-start of a flow:
 *            "symmetric" (every link shared alike: one bottleneck level, as
 *            in a training step's collectives) and "random" (random links
 *            and capacities, fixed seed: many levels, the solver's worst
 *            realistic case);
 *   steps    wall time and peak RSS of whole runs (load, plan, schedule,
 *            engine, memory replay, summary) of shipped scenarios.
 *
 * Usage: shardsim-bench [SOURCE_DIR]. Wall-clock figures vary with the
 * machine and its load; compare them on one machine. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../sim/eng/eng.h"
#include "../sim/net/flow.h"
#include "../sim/io/scenario.h"
#include "../sim/run/run.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int flat_net(void *ctx, prog_coll c, prog_group g, ss_bytes bytes, ss_ns *out, ss_err *err)
{
    (void)ctx, (void)c, (void)g, (void)err;
    *out = 1000 + bytes / 100;
    return SS_OK;
}

static prog *synthetic(uint32_t ranks, uint32_t ops)
{
    prog *p;
    if (prog_new(&p, ranks, NULL)) return NULL;
    uint32_t *all = malloc(ranks * sizeof *all), g;
    for (uint32_t r = 0; r < ranks; r++) all[r] = r;
    prog_group_add(p, all, ranks, &g, NULL);
    free(all);
    for (uint32_t r = 0; r < ranks; r++)
        for (uint32_t i = 0; i < ops; i++) {
            uint32_t id, dep = i ? i - 1 : 0;
            bool coll = i % 8 == 7;
            prog_op_spec s = {.kind = coll ? PROG_OP_COLL : PROG_OP_COMPUTE,
                              .stream = coll ? PROG_REDUCE : (i % 3 ? PROG_COMPUTE : PROG_COPY),
                              .coll = PROG_COLL_ALL_REDUCE, .group = g, .name = coll ? "ar" : "mm",
                              .bytes = 1 << 20, .host_ns = 5, .dev_ns = 100 + (i % 7) * 10,
                              .deps = &dep, .ndeps = i ? 1 : 0};
            if (prog_op_add(p, r, &s, &id, NULL)) {
                prog_free(p);
                return NULL;
            }
        }
    return p;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

/* events/s over the whole eng_run (trace allocation, setup and loop) of
 * the first run, with its CPU time beside the wall time (they differ on a
 * loaded machine), and the best of three runs (later runs may reuse memory
 * the first one faulted in, which is what a sweep sees); then memory per
 * op: the engine's own peak (eng_stats) and the trace it returns, one
 * trc_op per op plus a pointer per rank. */
static void bench_engine(uint32_t ranks, uint32_t ops)
{
    prog *p = synthetic(ranks, ops);
    if (!p) return;
    eng_net net = {.ctx = NULL, .coll_ns = flat_net};
    eng_stats st = {0};
    double dt = 0, dc = 0, best = 0;
    uint64_t events = 0;
    int rc = SS_OK;
    for (int k = 0; k < 3 && !rc; k++) {
        trc *t = NULL;
        double c0 = cpu_s(), t0 = now();
        rc = eng_run_stats(p, &net, &t, &st, NULL);
        double w = now() - t0;
        if (k == 0) {
            dt = w;
            dc = cpu_s() - c0;
        }
        if (k == 0 || w < best) best = w;
        if (!rc) events = t->nevents;
        trc_free(t);
    }
    double nops = (double)ranks * ops;
    if (!rc)
        printf("  engine  %6u ranks x %7u ops  %10llu events  %8.3f s  %7.2f M events/s"
               "  cpu %6.3f s  best of 3 %7.2f M events/s  engine %5.1f B/op  trace %5.1f B/op\n",
               ranks, ops, (unsigned long long)events, dt, events / dt / 1e6, dc,
               events / best / 1e6, st.peak_bytes / nops,
               (sizeof(trc_op) * nops + ranks * sizeof(trc_op *)) / nops);
    prog_free(p);
}

/* xorshift64: a fixed-seed sequence, the same on every machine */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void flow_uses(flow_use *u, uint32_t i, uint32_t nlinks, bool random, uint64_t *seed)
{
    for (uint32_t k = 0; k < 6; k++)
        u[k] = (flow_use){random ? (uint32_t)(rnd(seed) % nlinks) : (i * 3 + k) % nlinks, 1.0};
}

static void bench_flows(uint32_t nflows, bool random)
{
    uint32_t nlinks = nflows * 2;
    double *cap = malloc(nlinks * sizeof *cap);
    uint32_t *id = malloc(nflows * sizeof *id);
    uint64_t seed = 88172645463325252ull;
    flow_sys *fs = NULL;
    if (!cap || !id) goto out;
    for (uint32_t l = 0; l < nlinks; l++) cap[l] = random ? 1e9 * (1 + rnd(&seed) % 1000 / 1e3) : 1e9;
    if (flow_sys_new(nlinks, cap, &fs, NULL)) goto out;
    flow_use u[6];
    for (uint32_t i = 0; i < nflows; i++) {
        flow_uses(u, i, nlinks, random, &seed);
        if (flow_add(fs, u, 6, 0, &id[i], NULL)) goto out;
    }
    if (flow_solve(fs, NULL)) goto out;
    uint32_t rounds = flow_last_rounds(fs), n = 0;
    double t0 = now(), dt = 0;
    for (; dt < 1.0 && n < 100000; n++) { /* about a second of re-solves */
        uint32_t k = n % nflows;
        flow_remove(fs, id[k]);
        flow_uses(u, k + n, nlinks, random, &seed);
        if (flow_add(fs, u, 6, 0, &id[k], NULL)) goto out;
        if (flow_solve(fs, NULL)) goto out;
        if ((n & 7) == 7) dt = now() - t0;
    }
    dt = now() - t0;
    printf("  flows   %6u concurrent, %-9s  %6u bottleneck levels  %9.0f re-solves/s  %8.3f ms each\n",
           nflows, random ? "random" : "symmetric", rounds, n / dt, dt / n * 1e3);
out:
    flow_sys_free(fs);
    free(cap);
    free(id);
}

static void bench_step(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    spec_scenario s;
    run_result r;
    ss_err err;
    ss_err_clear(&err);
    double t0 = now();
    if (scn_load(path, NULL, 0, &s, &err) || run_step(&s, NULL, &r, &err)) {
        printf("  step    %-52s error: %s\n", file, err.msg);
        return;
    }
    double dt = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  step    %-52s %8.3f s  %8llu ops  process peak RSS so far %ld MiB\n", file, dt,
           (unsigned long long)r.sum.nops, ru.ru_maxrss / 1024);
    run_fini(&r);
    spec_scenario_fini(&s);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    printf("shardsim-bench\n");
    bench_engine(8, 100000);
    bench_engine(1024, 1000);
    bench_engine(16384, 64);
    bench_flows(1024, false);
    bench_flows(1024, true);
    bench_flows(16384, false);
    bench_flows(16384, true);
    const char *steps[] = {"scenarios/seed002/zero3_full_shard_pre.json",
                           "scenarios/transformers/llama3-8b-full-shard-8xh100.json",
                           "scenarios/transformers/llama3-70b-full-shard-8xh100.json",
                           "scenarios/transformers/mixtral-8x7b-full-shard-8xh200.json"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) bench_step(dir, steps[i]);
    return 0;
}
