// libFuzzer target sweep_file: see fuzz/entries.h (fuzz_sweep_file).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_sweep_file(data, size);
  return 0;
}
