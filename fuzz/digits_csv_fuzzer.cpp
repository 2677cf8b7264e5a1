// libFuzzer target digits_csv: see fuzz/entries.h (fuzz_digits_csv).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_digits_csv(data, size);
  return 0;
}
