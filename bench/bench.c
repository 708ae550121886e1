/* shardsim-bench: the simulator's own speed, as figures (not pass/fail).
 *
 *   engine   events per second of the engine on a synthetic program: R ranks,
 *            each a chain of compute ops with a cross-stream dependency and an
 *            all-reduce of every rank every 8 ops;
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

static void bench_engine(uint32_t ranks, uint32_t ops)
{
    prog *p = synthetic(ranks, ops);
    if (!p) return;
    eng_net net = {.ctx = NULL, .coll_ns = flat_net};
    trc *t = NULL;
    double t0 = now();
    int rc = eng_run(p, &net, &t, NULL);
    double dt = now() - t0;
    if (!rc)
        printf("  engine  %6u ranks x %7u ops  %10llu events  %8.3f s  %7.2f M events/s\n", ranks,
               ops, (unsigned long long)t->nevents, dt, t->nevents / dt / 1e6);
    trc_free(t);
    prog_free(p);
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
    const char *steps[] = {"scenarios/seed002/zero3_full_shard_pre.json",
                           "scenarios/transformers/llama3-8b-full-shard-8xh100.json",
                           "scenarios/transformers/llama3-70b-full-shard-8xh100.json",
                           "scenarios/transformers/mixtral-8x7b-full-shard-8xh200.json"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) bench_step(dir, steps[i]);
    return 0;
}
