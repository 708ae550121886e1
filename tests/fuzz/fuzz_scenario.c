/* libFuzzer target: scenario loading (with inline or referenced model,
 * topology and device files). Bad input must give SS_E_INPUT or SS_E_IO
 * with a message; nothing else may happen. */
#include <stddef.h>
#include <stdint.h>

#include "../../sim/io/scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    spec_scenario s;
    ss_err err;
    ss_err_clear(&err);
    int rc = scn_load_text("scenarios/fuzz/fuzz.json", (const char *)data, size, NULL, 0, &s, &err);
    if (rc == SS_OK) {
        spec_scenario_fini(&s);
    } else if ((rc != SS_E_INPUT && rc != SS_E_IO && rc != SS_E_OVERFLOW) || !err.msg[0]) {
        __builtin_trap();
    }
    return 0;
}
