// libFuzzer target topology_generate: see fuzz/entries.h (fuzz_topology_generate).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_topology_generate(data, size);
  return 0;
}
