// libFuzzer target strategy_params: see fuzz/entries.h (fuzz_strategy_params).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_strategy_params(data, size);
  return 0;
}
