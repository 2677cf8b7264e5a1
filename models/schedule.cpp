#include "models/schedule.h"

namespace gradsync::models {

std::vector<Op> Schedule::ops(std::size_t round, int participant) const {
  std::vector<Op> out;
  rounds.at(round).ops(participant, out);
  return out;
}

Slice block(std::uint64_t base, std::uint64_t elements, int parts, int i, int element_bytes) {
  const auto eb = static_cast<std::uint64_t>(element_bytes);
  const auto p = static_cast<std::uint64_t>(parts);
  const auto k = static_cast<std::uint64_t>(i);
  const std::uint64_t first = static_cast<std::uint64_t>((static_cast<unsigned __int128>(elements) * k) / p);
  const std::uint64_t last = static_cast<std::uint64_t>((static_cast<unsigned __int128>(elements) * (k + 1)) / p);
  return Slice{base + first * eb, (last - first) * eb};
}

}  // namespace gradsync::models
