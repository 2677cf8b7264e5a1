// The `_cuda` entry points of kernels.h in builds without CUDA: they exist (so callers
// need no #if) and always throw. In CUDA builds this file compiles to nothing and the
// .cu files provide them.
#include "gradsync/config.h"
#include "runtime/kernels/kernels.h"

#if !GRADSYNC_HAVE_CUDA
#include <stdexcept>
#include <string>

namespace gradsync::runtime {

namespace {
constexpr const char* kNoCuda = "gradsync was built without CUDA (GRADSYNC_WITH_CUDA=OFF or no toolkit)";

[[noreturn]] void no_cuda(const char* function) { throw std::runtime_error(std::string(function) + ": " + kNoCuda); }
}  // namespace

GpuAvailability gpu_availability() { return {0, kNoCuda}; }

void sum_into_cuda(float*, const float*, std::size_t, void*) { no_cuda("sum_into_cuda"); }
void spin_for_cuda(double, void*) { no_cuda("spin_for_cuda"); }
void divide_cuda(float*, std::size_t, float, void*) { no_cuda("divide_cuda"); }
void onebit_encode_cuda(const float*, float*, std::size_t, std::size_t, std::uint8_t*, void*) {
  no_cuda("onebit_encode_cuda");
}
void onebit_decode_cuda(const std::uint8_t*, std::size_t, std::size_t, float*, void*) { no_cuda("onebit_decode_cuda"); }
void onebit_decode_add_cuda(const std::uint8_t*, std::size_t, std::size_t, float*, void*) {
  no_cuda("onebit_decode_add_cuda");
}
void block_momentum_update_cuda(float*, float*, float*, std::size_t, float, float, bool, void*) {
  no_cuda("block_momentum_update_cuda");
}
void gather_slices_cuda(const float*, const std::uint64_t*, const std::uint64_t*, std::size_t, float*, void*) {
  no_cuda("gather_slices_cuda");
}
void scatter_slices_cuda(const float*, const std::uint64_t*, const std::uint64_t*, std::size_t, float*, void*) {
  no_cuda("scatter_slices_cuda");
}

}  // namespace gradsync::runtime
#endif
