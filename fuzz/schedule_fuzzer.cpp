// libFuzzer target schedule: see fuzz/entries.h (fuzz_schedule).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_schedule(data, size);
  return 0;
}
