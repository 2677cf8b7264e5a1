// libFuzzer target tool_output: see fuzz/entries.h (fuzz_tool_output).
#include "fuzz/entries.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  gradsync::fuzz::fuzz_tool_output(data, size);
  return 0;
}
