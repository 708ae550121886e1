/* libFuzzer target: the DeepSpeed config reader (io/dsconfig.h), reached as
 * it is in use, through a scenario whose "sharding" is the input. Seeds are
 * the files of configs/deepspeed with "strategy": "deepspeed" added (the inline
 * form; without it the input is read as another runtime's sharding
 * section, which the fuzzer also reaches). Contract as fuzz_scenario.c. */
#include "fuzz_splice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_splice_load(FUZZ_DS_PREFIX, data, size, FUZZ_DS_SUFFIX);
}
