// libFuzzer target compare_inputs: see fuzz/entries.h (fuzz_compare_inputs).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_compare_inputs(data, size);
  return 0;
}
