/* plan_find.h - the e2e tests' lookup of a plan block by name; fails the
 * running cmocka test when there is none. Include after <cmocka.h> and
 * sim/plan/plan.h. */
#ifndef TEST_PLAN_FIND_H
#define TEST_PLAN_FIND_H

#include <string.h>

static inline const plan_block *plan_find(const plan *p, const char *name)
{
    for (uint32_t i = 0; i < p->nblocks; i++)
        if (!strcmp(p->blocks[i].name, name)) return &p->blocks[i];
    fail_msg("no block %s", name);
    return NULL;
}

#endif
