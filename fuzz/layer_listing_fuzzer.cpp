// libFuzzer target layer_listing: see fuzz/entries.h (fuzz_layer_listing).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_layer_listing(data, size);
  return 0;
}
