// libFuzzer target gpu_counts: see fuzz/entries.h (fuzz_gpu_counts).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_gpu_counts(data, size);
  return 0;
}
