// libFuzzer target nccl_log: see fuzz/entries.h (fuzz_nccl_log).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_nccl_log(data, size);
  return 0;
}
