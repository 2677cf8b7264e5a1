#include "runtime/encoded_transfers.h"

#include <algorithm>
#include <iterator>
#include <vector>

namespace gradsync::runtime {

void EncodedTransfers::reset(int p) {
  if (auto it = residual_.find(p); it != residual_.end()) memory_.fill_zero(it->second, buffer_bytes_ / 4);
  decoded_[p].clear();
}

void EncodedTransfers::new_values(int p) { decoded_[p].clear(); }

float* EncodedTransfers::residual(int p, const models::Slice& slice, bool forwarding) {
  const std::size_t words = std::max<std::uint64_t>(4, buffer_bytes_) / 4;
  if (forwarding) {
    // Forwarding a payload as received: no error feedback, so the encoding is exact.
    if (!zero_) zero_ = memory_.allocate(words * 4);
    memory_.fill_zero(zero_, slice.bytes / 4);
    return zero_;
  }
  float*& r = residual_[p];
  if (!r) r = memory_.allocate(words * 4);  // zero-filled
  return r + slice.offset / 4;
}

void EncodedTransfers::encode(int p, const models::Encoding& e, const models::Slice& slice, float* values, std::uint8_t* out) {
  const std::size_t count = slice.bytes / 4;
  const bool forwarding = !e.codec->error_feedback || !e.error_feedback || holds_decoded(p, slice);
  memory_.encode(*e.codec, e.group, values, residual(p, slice, forwarding), count, out);
  // The sender keeps what the receivers will decode.
  memory_.decode(*e.codec, e.group, out, count, values, false);
  mark(p, slice, true);
}

void EncodedTransfers::decode(int p, const models::Encoding& e, const models::Slice& slice, const std::uint8_t* in,
                              float* values, bool add) {
  memory_.decode(*e.codec, e.group, in, slice.bytes / 4, values, add);
  mark(p, slice, !add);  // a sum of payloads is no payload
}

bool EncodedTransfers::holds_decoded(int p, const models::Slice& s) {
  const auto& marks = decoded_[p];
  std::uint64_t reached = s.offset;
  auto it = marks.upper_bound(s.offset);
  if (it != marks.begin()) --it;
  for (; it != marks.end() && it->first <= reached && reached < s.end(); ++it) reached = std::max(reached, it->first + it->second);
  return s.bytes > 0 && reached >= s.end();
}

void EncodedTransfers::mark(int p, const models::Slice& s, bool decoded) {
  if (s.bytes == 0) return;
  auto& marks = decoded_[p];
  // The written bytes lose their marks (the parts of a mark outside them keep theirs); then
  // the slice is marked if it now holds a decoded payload.
  auto it = marks.lower_bound(s.offset);
  if (it != marks.begin()) {
    auto before = std::prev(it);
    if (before->first + before->second > s.offset) it = before;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kept;
  while (it != marks.end() && it->first < s.end()) {
    const std::uint64_t start = it->first, end = it->first + it->second;
    if (start < s.offset) kept.emplace_back(start, s.offset - start);
    if (end > s.end()) kept.emplace_back(s.end(), end - s.end());
    it = marks.erase(it);
  }
  for (const auto& [start, bytes] : kept) marks[start] = bytes;
  if (decoded) marks[s.offset] = s.bytes;
}

}  // namespace gradsync::runtime
