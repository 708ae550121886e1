/* A search's point as scenario, torchtitan TOML, Megatron-LM arguments.
 * search_write.h states the contract. */
#include "search_write.h"

#include <stdlib.h>
#include <string.h>

#include "../core/ofile.h"
#include "../io/jobwrite.h"
#include "../io/scenario.h"
#include "../out/summary.h"
#include "../run/run.h"

int sw_scenario(const sw_point *p, const char *path, ss_err *err)
{
    char *text = NULL;
    int rc = scn_write_resolved(p->scenario, p->sets, p->nsets, p->title, &text, err);
    if (!rc) rc = of_write_text(path, text, err);
    free(text);
    return rc;
}

/* The step and peak reserved of a loaded scenario. */
static int step_of(const spec_scenario *s, uint64_t *step, uint64_t *peak, ss_err *err)
{
    run_result r = {0};
    int rc = run_step(s, NULL, &r, err);
    if (!rc) {
        *step = r.sum.step_ns;
        *peak = sum_max_peak_reserved(&r.sum);
    }
    run_fini(&r);
    return rc;
}

static double gib(uint64_t b) { return (double)b / (1024.0 * 1024.0 * 1024.0); }

/* The read-back scenario runs the point's step, or the TOML is refused. */
static int read_back(const sw_point *p, const spec_scenario *s, ss_err *err)
{
    char *resolved = NULL, *json = NULL;
    spec_scenario b;
    uint64_t step = 0, peak = 0, step2 = 0, peak2 = 0;
    int rc = scn_write_resolved(p->scenario, p->sets, p->nsets, p->title, &resolved, err);
    if (!rc) rc = jobw_torchtitan_readback(s, resolved, p->title, &json, err);
    free(resolved);
    if (rc) return rc;
    rc = scn_load_text(p->scenario, json, strlen(json), NULL, 0, &b, err);
    free(json);
    if (rc) return rc;
    rc = step_of(s, &step, &peak, err);
    if (!rc) rc = step_of(&b, &step2, &peak2, err);
    spec_scenario_fini(&b);
    if (!rc && (step != step2 || peak != peak2))
        rc = ss_fail(err, SS_E_INPUT, "--write-torchtitan",
                     "read back through the torchtitan import, the TOML runs a step of %.3f ms "
                     "with %.2f GiB peak reserved, the point %.3f ms with %.2f GiB: a setting "
                     "of the scenario has no torchtitan key, so no TOML was written",
                     step2 * 1e-6, gib(peak2), step * 1e-6, gib(peak));
    return rc;
}

int sw_torchtitan(const sw_point *p, const char *path, ss_err *err)
{
    spec_scenario s;
    char *text = NULL;
    int rc = scn_load(p->scenario, p->sets, p->nsets, &s, err);
    if (rc) return rc;
    rc = jobw_torchtitan(&s, "--write-torchtitan", p->title, &text, err);
    if (!rc) rc = read_back(p, &s, err);
    if (!rc) rc = of_write_text(path, text, err);
    free(text);
    spec_scenario_fini(&s);
    return rc;
}

int sw_megatron(const sw_point *p, const char *path, ss_err *err)
{
    spec_scenario s;
    char *text = NULL;
    int rc = scn_load(p->scenario, p->sets, p->nsets, &s, err);
    if (rc) return rc;
    rc = jobw_megatron(&s, "--write-megatron", p->title, &text, err);
    if (!rc) rc = of_write_text(path, text, err);
    free(text);
    spec_scenario_fini(&s);
    return rc;
}
