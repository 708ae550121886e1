/* load_run.h - the e2e tests' load-and-run of a shipped scenario (path
 * relative to scenarios/, --set overrides); fails the running cmocka test
 * with the loader's or the run's message; load_run_opts with run options.
 * Include after <cmocka.h>,
 * sim/io/scenario.h and sim/run/run.h. */
#ifndef TEST_LOAD_RUN_H
#define TEST_LOAD_RUN_H

#include <stdio.h>

/* With run options (NULL: the defaults, as load_run). */
static inline void load_run_opts(const char *rel, const char **sets, size_t nsets,
                                 const run_opts *o, spec_scenario *s, run_result *r)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/scenarios/%s", SS_SOURCE_DIR, rel);
    ss_err err;
    ss_err_clear(&err);
    if (scn_load(path, sets, nsets, s, &err)) fail_msg("%s: %s", err.where, err.msg);
    if (run_step(s, o, r, &err)) fail_msg("%s: %s", err.where, err.msg);
}

static inline void load_run(const char *rel, const char **sets, size_t nsets, spec_scenario *s,
                            run_result *r)
{
    load_run_opts(rel, sets, nsets, NULL, s, r);
}

#endif
