// libFuzzer target nccl_tests_generated: see fuzz/entries.h (fuzz_nccl_tests_generated).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_nccl_tests_generated(data, size);
  return 0;
}
