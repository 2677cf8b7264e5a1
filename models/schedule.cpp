#include "models/schedule.h"

namespace gradsync::models {

std::vector<Op> Schedule::ops(std::size_t round, int participant) const {
  std::vector<Op> out;
  rounds.at(round).ops(participant, out);
  return out;
}

double Op::local_cost_bytes() const {
  switch (kind) {
    case OpKind::recv_reduce:
    case OpKind::copy:
    case OpKind::reduce:
    case OpKind::quantize:
    case OpKind::dequantize:
    case OpKind::scale: return static_cast<double>(slice.bytes);
    case OpKind::block_update: return 4.0 * static_cast<double>(slice.bytes);  // reads model, previous, delta; writes three
    default: return 0;
  }
}

double Op::local_seconds(const LocalCosts& costs) const {
  if (kind == OpKind::compute) return seconds;
  if (kind == OpKind::quantize || kind == OpKind::dequantize) return static_cast<double>(slice.bytes) * costs.quantize_s_per_byte;
  return local_cost_bytes() * costs.reduce_s_per_byte;
}

Slice block(std::uint64_t base, std::uint64_t elements, int parts, int i, int element_bytes) {
  const auto eb = static_cast<std::uint64_t>(element_bytes);
  const auto p = static_cast<std::uint64_t>(parts);
  const auto k = static_cast<std::uint64_t>(i);
  std::uint64_t first, last;
  if (elements < (1ULL << 40) && p < (1ULL << 22)) {  // no overflow in 64 bits
    first = elements * k / p;
    last = elements * (k + 1) / p;
  } else {
    first = static_cast<std::uint64_t>((static_cast<unsigned __int128>(elements) * k) / p);
    last = static_cast<std::uint64_t>((static_cast<unsigned __int128>(elements) * (k + 1)) / p);
  }
  return Slice{base + first * eb, (last - first) * eb};
}

}  // namespace gradsync::models
