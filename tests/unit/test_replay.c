/* Memory replay: allocated bytes over a hand-written trace, checked against
 * sums done by hand (requests rounded up to 512 bytes, as
 * torch.cuda.memory_allocated counts them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../sim/mem/replay.h"

static const mem_cfg ideal = {MEM_MODEL_IDEAL, false, 0, false, NULL};

typedef struct fixture {
    prog *p;
    trc *t;
    uint32_t a, b, c;
} fixture;

static uint32_t add_op(prog *p, prog_opkind k, const prog_mem *m, uint32_t nm)
{
    prog_op_spec s = {.kind = k, .stream = k == PROG_OP_HOST ? PROG_HOST : PROG_COMPUTE,
                      .name = "op", .mem = m, .nmem = nm};
    uint32_t id;
    assert_int_equal(prog_op_add(p, 0, &s, &id, NULL), SS_OK);
    return id;
}

/* a: 1000 B live at start (1024 counted); b: 600 B (1024); c: 512 B.
 * op0 (issue t=0) allocates b; op1 (issue t=5) allocates c and frees b when
 * it ends (t=20); op2 (host, t=30) frees c and, at its issue, nothing else.
 * Peak: a + b + c = 2560 when op1 is issued (t = 5), caused by op1; shown
 * at t = 10, when op1 starts on its stream (the step's time base). End: 1024. */
static void build(fixture *f)
{
    assert_int_equal(prog_new(&f->p, 1, NULL), SS_OK);
    assert_int_equal(prog_tensor_add(f->p, 0, "a", PROG_MEM_PARAM, 1000, 1, &f->a, NULL), 0);
    assert_int_equal(prog_tensor_add(f->p, 0, "b", PROG_MEM_ACTIVATION, 600, 0, &f->b, NULL), 0);
    assert_int_equal(prog_tensor_add(f->p, 0, "c", PROG_MEM_GRAD, 512, 0, &f->c, NULL), 0);
    prog_mem m0[] = {{f->b, PROG_ALLOC_AT_ISSUE}};
    prog_mem m1[] = {{f->c, PROG_ALLOC_AT_ISSUE}, {f->b, PROG_FREE_AT_END}};
    prog_mem m2[] = {{f->c, PROG_FREE_AT_ISSUE}};
    add_op(f->p, PROG_OP_COMPUTE, m0, 1);
    add_op(f->p, PROG_OP_COMPUTE, m1, 2);
    add_op(f->p, PROG_OP_HOST, m2, 1);
    assert_int_equal(trc_new(&f->t, f->p, NULL), SS_OK);
    trc_op ops[3] = {{0, 0, 10, 0, 2}, {5, 10, 20, 3, 5}, {30, 30, 30, 6, 8}};
    memcpy(f->t->ops[0], ops, sizeof ops);
}

static void teardown(fixture *f)
{
    trc_free(f->t);
    prog_free(f->p);
}

static void test_peak_and_end(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    mem_rank m;
    assert_int_equal(mem_replay(f.t, 0, &ideal, &m, NULL), SS_OK);
    assert_int_equal(m.start, 1024);
    assert_int_equal(m.peak, 2560);
    assert_int_equal(m.peak_t, 10);
    assert_int_equal(m.peak_op, 1);
    assert_int_equal(m.end, 1024);
    assert_int_equal(m.peak_by_cat[PROG_MEM_PARAM], 1024);
    assert_int_equal(m.peak_by_cat[PROG_MEM_ACTIVATION], 1024);
    assert_int_equal(m.peak_by_cat[PROG_MEM_GRAD], 512);
    mem_rank_fini(&m);
    teardown(&f);
}

/* If op1's deferred free of b lands before op1 is even issued (b freed at
 * t = 3), the peak is a + b = 2048 from op0, then a + c = 1536. */
static void test_free_before_alloc(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    f.t->ops[0][1].end = 3;
    f.t->ops[0][1].seq_end = 1;
    mem_rank m;
    assert_int_equal(mem_replay(f.t, 0, &ideal, &m, NULL), SS_OK);
    assert_int_equal(m.peak, 2048);
    assert_int_equal(m.peak_op, 0);
    mem_rank_fini(&m);
    teardown(&f);
}

/* Freeing a tensor twice is a scheduler bug, reported with its name. */
static void test_double_free(void **state)
{
    (void)state;
    fixture f;
    build(&f);
    prog_mem m3[] = {{f.c, PROG_FREE_AT_ISSUE}};
    add_op(f.p, PROG_OP_HOST, m3, 1);
    trc_free(f.t);
    assert_int_equal(trc_new(&f.t, f.p, NULL), SS_OK);
    trc_op ops[4] = {{0, 0, 10, 0, 2}, {5, 10, 20, 3, 5}, {30, 30, 30, 6, 8},
                     {31, 31, 31, 9, 11}};
    memcpy(f.t->ops[0], ops, sizeof ops);
    mem_rank m;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(mem_replay(f.t, 0, &ideal, &m, &err), SS_E_INTERNAL);
    assert_non_null(strstr(err.msg, "tensor c freed twice"));
    teardown(&f);
}

static void test_round(void **state)
{
    (void)state;
    assert_int_equal(mem_round(0), 0);
    assert_int_equal(mem_round(1), 512);
    assert_int_equal(mem_round(512), 512);
    assert_int_equal(mem_round(513), 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_and_end), cmocka_unit_test(test_free_before_alloc),
        cmocka_unit_test(test_double_free), cmocka_unit_test(test_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
