// libFuzzer target workload_json: see fuzz/entries.h (fuzz_workload_json).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_workload_json(data, size);
  return 0;
}
