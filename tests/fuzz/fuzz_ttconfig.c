/* libFuzzer target: torchtitan TOML job configs (io/toml_shim.h, then
 * io/ttconfig.h), reached as a scenario reaches them: the input is the TOML
 * text, turned into JSON and mapped for 8 GPUs and a 32-layer model. Seeds
 * are configs/torchtitan. Contract as fuzz_scenario.c: any input gives an
 * error or sections, never a crash, a leak or a sanitizer report. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../../sim/io/json.h"
#include "../../sim/io/toml_shim.h"
#include "../../sim/io/ttconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    js_doc d = {0};
    ss_err err;
    cJSON *out = NULL;
    ss_err_clear(&err);
    strcpy(d.file, "fuzz.toml");
    if (toml_to_json(d.file, (const char *)data, size, &d.root, &err) == SS_OK &&
        ttc_sections(js_root(&d), 8, 32, &out, &err) == SS_OK)
        cJSON_Delete(out);
    js_doc_fini(&d);
    return 0;
}
