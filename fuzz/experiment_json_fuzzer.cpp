// libFuzzer target experiment_json: see fuzz/entries.h (fuzz_experiment_json).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_experiment_json(data, size);
  return 0;
}
