/* Other frameworks' names for scenario keys (sim/io/alias.h): each alias
 * lands on its key, in a file and in a --set, with dashes or underscores;
 * a key given twice is an error naming both spellings; everything else is
 * left alone. The names are Megatron-LM's arguments and NeMo's config keys
 * (the sources are listed beside the table in sim/io/alias.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "../../sim/io/alias.h"
#include "../../sim/io/scenario.h"

/* Every alias, in a file, renamed to its key with its value kept; the
 * dashed spelling too. */
static void test_every_alias_lands_on_its_key(void **state)
{
    (void)state;
    assert_true(alias_count() >= 10);
    for (int i = 0; i < alias_count(); i++) {
        const alias_entry *a = alias_at(i);
        for (int dashed = 0; dashed < 2; dashed++) {
            char name[64];
            snprintf(name, sizeof name, "%s", a->name);
            for (char *c = name; dashed && *c; c++)
                if (*c == '_') *c = '-';
            cJSON *root = cJSON_CreateObject(), *sec = cJSON_AddObjectToObject(root, a->section);
            cJSON_AddNumberToObject(sec, name, 7 + i);
            ss_err err;
            ss_err_clear(&err);
            assert_int_equal(alias_doc(root, "t.json", &err), SS_OK);
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(sec, a->key);
            assert_non_null(k);
            assert_int_equal(k->valueint, 7 + i);
            assert_null(cJSON_GetObjectItemCaseSensitive(sec, name));
            cJSON_Delete(root);
        }
    }
    assert_null(alias_at(alias_count()));
}

/* A key and its alias, or two aliases of one key: an error naming the
 * file, the section and both spellings. */
static void test_both_spellings_fail(void **state)
{
    (void)state;
    static const char *const docs[][2] = {
        {"{\"parallel\": {\"tp\": 2, \"tensor_model_parallel_size\": 2}}", "\"tp\""},
        {"{\"training\": {\"seq_length\": 8, \"encoder_seq_length\": 8}}", "\"seq_length\""},
    };
    for (size_t i = 0; i < 2; i++) {
        cJSON *root = cJSON_Parse(docs[i][0]);
        ss_err err;
        ss_err_clear(&err);
        assert_int_equal(alias_doc(root, "t.json", &err), SS_E_INPUT);
        assert_string_equal(err.where, "t.json");
        assert_non_null(strstr(err.msg, docs[i][1]));
        assert_non_null(strstr(err.msg, "expected one of them"));
        cJSON_Delete(root);
    }
}

static void test_assignment(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"parallel.tensor_model_parallel_size=4", "parallel.tp=4"},
        {"$.training.seq-length=8192", "$.training.seq_len=8192"},
        {"training.recompute_granularity=\"full\"", "training.recompute=\"full\""},
        {"parallel.tp=4", "parallel.tp=4"},                              /* a key */
        {"parallel.tensor_model_parallel_sizes=4", "parallel.tensor_model_parallel_sizes=4"},
        {"model.micro_batch_size=4", "model.micro_batch_size=4"},      /* not its section */
        {"tensor_model_parallel_size=4", "tensor_model_parallel_size=4"}, /* no section */
    };
    char buf[128];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_string_equal(alias_assignment(cases[i][0], buf, sizeof buf), cases[i][1]);
    assert_null(alias_assignment("parallel.tensor_model_parallel_size=4", buf, 8));
}

/* The whole loader: a Megatron scenario whose layout is set through the
 * aliases equals the one set through the keys, and differs from the file's
 * own (so each alias reached something). */
static void test_scenario_through_aliases(void **state)
{
    (void)state;
    static const char *file = SS_SOURCE_DIR
        "/scenarios/published/megatron-core-r0.8-gpt-7.1b-tp2-pp1-dp48-96xh100.json";
    static const char *const keys[] = {"parallel.tp=4", "parallel.pp=2", "parallel.dp=12",
                                       "training.micro_batch=2", "training.seq_len=2048",
                                       "training.recompute=\"selective\""};
    static const char *const names[] = {
        "parallel.tensor_model_parallel_size=4", "parallel.pipeline-model-parallel-size=2",
        "parallel.data_parallel_size=12", "training.micro_batch_size=2",
        "training.seq_length=2048", "training.recompute_granularity=\"selective\""};
    spec_scenario a, b, base;
    ss_err err;
    ss_err_clear(&err);
    assert_int_equal(scn_load(file, keys, 6, &a, &err), SS_OK);
    assert_int_equal(scn_load(file, names, 6, &b, &err), SS_OK);
    assert_int_equal(scn_load(file, NULL, 0, &base, &err), SS_OK);
    assert_int_equal(b.par.tp, 4), assert_int_equal(a.par.tp, b.par.tp);
    assert_int_equal(b.par.pp, 2), assert_int_equal(a.par.pp, b.par.pp);
    assert_int_equal(b.dp, 12), assert_int_equal(a.dp, b.dp);
    assert_int_equal(b.micro_batch, 2), assert_int_equal(a.micro_batch, b.micro_batch);
    assert_int_equal(b.seq_len, 2048), assert_int_equal(a.seq_len, b.seq_len);
    assert_int_equal(b.recompute, SPEC_RECOMP_SELECTIVE), assert_int_equal(a.recompute, b.recompute);
    assert_true(base.par.tp != 4 && base.par.pp != 2 && base.dp != 12 && base.micro_batch != 2 &&
                base.seq_len != 2048 && base.recompute != SPEC_RECOMP_SELECTIVE);
    spec_scenario_fini(&a);
    spec_scenario_fini(&b);
    spec_scenario_fini(&base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_alias_lands_on_its_key),
        cmocka_unit_test(test_both_spellings_fail),
        cmocka_unit_test(test_assignment),
        cmocka_unit_test(test_scenario_through_aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
