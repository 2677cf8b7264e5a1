#include "models/schedule/schedule.h"

#include <stdexcept>

namespace gradsync::models {

std::string Schedule::not_overlapped_because() const {
  const std::string every = std::to_string(period_steps) + (period_steps == 1 ? " step" : " steps");
  if (asynchronous) return "workers push and pull on their own, not in step with the backward pass";
  if (averages_models) return "it averages the models after the optimizer step, once every " + every;
  if (period_steps > 1) return "it synchronises once every " + every + ", after the step that ends a period";
  return "";
}

std::vector<Op> Schedule::ops(std::size_t round, int participant) const {
  std::vector<Op> out;
  rounds.at(round).ops(participant, out);
  return out;
}

void Op::encode_with(const Encoding& e, int element_bytes) {
  if (!is_transfer()) throw std::logic_error("encode_with: only transfers carry an encoded payload");
  encoding = &e;
  wire_bytes = e.codec->wire_bytes(slice.bytes / static_cast<std::uint64_t>(element_bytes), e.group);
}

double Op::local_seconds(const LocalCosts& costs) const {
  const double bytes = static_cast<double>(slice.bytes);
  const double coding = encoding ? bytes * costs.codec_s_per_byte : 0.0;
  switch (kind) {
    case OpKind::compute: return seconds;
    case OpKind::send:
    case OpKind::recv: return coding;
    case OpKind::recv_reduce: return bytes * costs.reduce_s_per_byte + coding;
    case OpKind::copy:
    case OpKind::reduce: return bytes * costs.reduce_s_per_byte;
    case OpKind::kernel: return call->kernel->passes * bytes * costs.reduce_s_per_byte;
  }
  return 0;
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
