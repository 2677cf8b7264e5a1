// libFuzzer target topology_json: see fuzz/entries.h (fuzz_topology_json).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_topology_json(data, size);
  return 0;
}
