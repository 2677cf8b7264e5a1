#include "models/schedule/kernels.h"

#include <stdexcept>

namespace gradsync::models {

const Kernel& divide_kernel() {
  static const Kernel k{"divide", 1, 0};
  return k;
}

KernelCall divide_call(int divisor) { return KernelCall{&divide_kernel(), {}, KernelParams{{static_cast<double>(divisor), 0, 0}}}; }

const Kernel& block_momentum_kernel() {
  static const Kernel k{"block_momentum", 4, 2};
  return k;
}

KernelCall block_momentum_call(Slice previous, Slice delta, double momentum, double learning_rate, bool nesterov) {
  return KernelCall{&block_momentum_kernel(), {previous, delta}, KernelParams{{momentum, learning_rate, nesterov ? 1.0 : 0.0}}};
}

std::uint64_t one_bit_wire_bytes(std::uint64_t values, std::uint64_t group) {
  if (group == 0) throw std::invalid_argument("one_bit_wire_bytes: a group must hold at least one value");
  return (values + 7) / 8 + 8 * ((values + group - 1) / group);
}

const Codec& one_bit_codec() {
  static const Codec c{"1bit", true, one_bit_wire_bytes};
  return c;
}

}  // namespace gradsync::models
