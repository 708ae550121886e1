/* libFuzzer target: the strict JSON layer. Any bytes either parse or give an
 * SS_E_INPUT message; typed getters and an override on what parsed must
 * never crash, leak or read out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../sim/io/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    js_doc d;
    ss_err err;
    ss_err_clear(&err);
    if (js_doc_parse(&d, "fuzz.json", (const char *)data, size, &err) != SS_OK) {
        if (err.code != SS_E_INPUT || !err.msg[0]) __builtin_trap();
        return 0;
    }
    js_node r = js_root(&d), c, arr;
    uint64_t u;
    double x;
    bool b;
    const char *s;
    size_t n;
    static const char *const keys[] = {"name", "model", "parallel"};
    js_keys_check(r, keys, 3, NULL);
    js_u64(r, "name", false, 0, 0, UINT64_MAX, &u, NULL);
    js_num(r, "model", false, 0, -1e9, 1e9, &x, NULL);
    js_bool(r, "parallel", false, false, &b, NULL);
    js_str(r, "name", false, "", &s, NULL);
    if (js_arr(r, "blocks", false, &arr, &n, NULL) == SS_OK)
        for (size_t i = 0; i < n && i < 64; i++) js_u64_val(js_at(arr, i), 0, 10, &u, NULL);
    for (size_t i = 0; i < js_nmembers(r) && i < 64; i++) js_member(r, i, &s);
    if (js_get(r, "model", &c)) js_want_obj(c, NULL);
    js_doc_set(&d, "a.b[0].c=1", NULL);
    js_doc_set(&d, "name={\"x\": [1, 2]}", NULL);
    js_doc_fini(&d);
    return 0;
}
