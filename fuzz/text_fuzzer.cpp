// libFuzzer target text: see fuzz/entries.h (fuzz_text).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_text(data, size);
  return 0;
}
