// The catalogue of numerics schedules may ask for — what executors need to know of each
// (its name, cost, operands, wire size) — for strategies to select. What each computes is
// documented and implemented with its CPU and CUDA implementations (runtime/kernels/kernels.h),
// found there by name (runtime/kernels/catalogue.h).
#pragma once

#include <cstdint>

#include "models/schedule/schedule.h"

namespace gradsync::models {

// "divide": target /= v[0] (a true division: an integer sum of N contributions divided by N
// is exact whenever the quotient is representable). One pass.
const Kernel& divide_kernel();
KernelCall divide_call(int divisor);

// "block_momentum": BMUF's block update (sources C, D) on the target, the freshly averaged
// model, with operands[0] the global model after the last block (updated) and operands[1]
// the last block update (updated); v[0] block momentum, v[1] block learning rate, v[2] 1 for
// the Nesterov form. Reads three buffers and writes three: four passes.
const Kernel& block_momentum_kernel();
KernelCall block_momentum_call(Slice previous, Slice delta, double momentum, double learning_rate, bool nesterov);

// "1bit": 1-bit quantisation with error feedback (source D): one bit per value (its sign
// after adding the residual) and, per group of values, two float scales (the means of the
// non-negative and of the negative values).
const Codec& one_bit_codec();
// Its size on the wire: ceil(values / 8) bytes of bits, then 8 bytes of scales per group.
std::uint64_t one_bit_wire_bytes(std::uint64_t values, std::uint64_t group);

}  // namespace gradsync::models
