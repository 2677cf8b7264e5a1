// libFuzzer target byte_size: see fuzz/entries.h (fuzz_byte_size).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_byte_size(data, size);
  return 0;
}
