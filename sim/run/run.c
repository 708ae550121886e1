#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../eng/eng.h"
#include "../net/cost.h"
#include "../io/profile.h"
#include "../net/net.h"
#include "../sched/sched.h"
#include "vary.h"

void run_fini(run_result *r)
{
    if (!r) return;
    sum_fini(&r->sum);
    free(r->st);
    trc_free(r->t);
    prog_free(r->p);
    plan_free(r->pl);
    memset(r, 0, sizeof *r);
}

static int states(run_result *r, ss_err *err)
{
    r->st = calloc(r->pl->n, sizeof *r->st);
    if (!r->st) return ss_fail(err, SS_E_NOMEM, NULL, "out of memory");
    for (uint32_t k = 0; k < r->pl->n; k++) {
        int rc = sched_states(r->pl, k, &r->st[k], err);
        if (rc) return rc;
    }
    return SS_OK;
}

/* The engine run over the topology's network: the graph with contention
 * when the topology has one, else the flat ring model. pf: the scenario's
 * calibration profile, loaded once per run_step (NULL without one). */
static int simulate(const spec_scenario *s, const prof *pf, const prog *p, trc **out,
                    ss_err *err)
{
    if (!s->topo.graph) {
        cost_net cn = {&s->topo};
        eng_net e = cost_eng_net(&cn);
        e.overlap_slowdown = s->topo.device.overlap_slowdown;
        return eng_run(p, &e, out, err);
    }
    net_opts no = net_opts_of(s, pf);
    net *n = NULL;
    int rc = net_new(&s->topo, &no, &n, err);
    if (rc == SS_E_INPUT && err && !err->where[0]) /* the graph is the topology's */
        snprintf(err->where, sizeof err->where, "%.480s: $.topology", s->file);
    if (!rc) {
        eng_net e = net_eng(n, p);
        e.overlap_slowdown = s->topo.device.overlap_slowdown;
        rc = eng_run(p, &e, out, err);
    }
    net_free(n);
    return rc;
}

/* runtime.jitter: the step again per sample, with every compute op
 * perturbed (vary.h); only the step times are kept. */
static int jitter_samples(const spec_scenario *s, const prof *pf, run_result *r, ss_err *err)
{
    if (!s->jitter_samples) return SS_OK;
    ss_ns *base = vary_save(r->p);
    r->sum.samples = calloc(s->jitter_samples, sizeof *r->sum.samples);
    if (!base || !r->sum.samples) {
        free(base);
        return ss_fail(err, SS_E_NOMEM, NULL, "out of memory for %u jitter samples",
                       s->jitter_samples);
    }
    int rc = SS_OK;
    for (uint32_t k = 0; k < s->jitter_samples && !rc; k++) {
        trc *t = NULL;
        vary_jitter(s, r->p, base, k);
        rc = simulate(s, pf, r->p, &t, err);
        if (!rc) r->sum.samples[r->sum.nsamples++] = t->step_ns;
        trc_free(t);
    }
    vary_restore(r->p, base);
    free(base);
    return rc;
}

double run_wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int run_step(const spec_scenario *s, const run_opts *o, run_result *out, ss_err *err)
{
    run_result r = {0};
    double t0 = run_wall_s();
    prof pf;
    prof_init(&pf);
    int rc = s->calibration[0] && s->topo.graph ? prof_load(s->calibration, &pf, err) : SS_OK;
    const prof *cal = s->calibration[0] && s->topo.graph ? &pf : NULL;
    if (!rc) rc = plan_new(&r.pl, s, err);
    if (!rc) rc = sched_build(r.pl, &r.p, err);
    if (!rc) vary_stragglers(s, r.p);
    double t1 = run_wall_s();
    if (!rc) rc = simulate(s, cal, r.p, &r.t, err);
    double t2 = run_wall_s();
    if (!rc) rc = states(&r, err);
    if (!rc) rc = sum_build(s, r.t, r.st, r.pl->n, o && o->series_all, &r.sum, err);
    if (!rc) {
        /* per GPU: a replica's tokens shared by its tp cp pp GPUs */
        r.sum.tokens = r.pl->tokens * s->grad_accum / r.pl->replica;
        r.sum.flops_per_token = r.pl->flops_per_token;
        /* MFU against the 16-bit dense peak under fp8 compute too, as
         * torchtitan and Megatron report Float8 runs */
        r.sum.peak_flops = s->topo.device.peak_flops[s->prec.compute == SPEC_DT_FP8 ? r.pl->dt16
                                                                                    : s->prec.compute];
        r.sum.parameters = r.pl->model_numel;
        r.sum.active_parameters = r.pl->active_numel;
        r.sum.moe = s->model.is_arch && s->model.arch.experts > 0;
    }
    if (!rc) rc = jitter_samples(s, cal, &r, err);
    prof_fini(&pf);
    for (uint32_t k = 0; !rc && k < r.pl->n; k++)
        rc = sched_init_peak(r.pl, k, &r.sum.ranks[k].init_peak, err);
    r.wall_s[RUN_T_BUILD] = t1 - t0;
    r.wall_s[RUN_T_SIMULATE] = t2 - t1;
    r.wall_s[RUN_T_SUMMARY] = run_wall_s() - t2; /* with the jitter samples' runs, if any */
    if (rc) {
        run_fini(&r);
        memset(out, 0, sizeof *out);
        return rc;
    }
    *out = r;
    return SS_OK;
}
