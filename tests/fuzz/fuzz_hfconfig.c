/* libFuzzer target: the Hugging Face config importer (io/hfconfig.h),
 * reached as it is in use: a scenario whose model is {"hf_config": INPUT},
 * so hf_arch reads the input and the architecture it builds is read in
 * turn. Seeds are the files of models/hf. Contract as fuzz_scenario.c. */
#include "fuzz_splice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_splice_load(FUZZ_HF_PREFIX, data, size, FUZZ_HF_SUFFIX);
}
