// What an executor keeps for transfers whose payload a codec encodes (models/schedule/kernels.h),
// per participant: the codec's error-feedback residual (codecs that keep one: what an
// encoding lost is added before the next), and which bytes hold values exactly as a
// payload decoded them. Those are re-encoded without feedback — the same values give the
// same payload — so a value forwarded around a ring (all-gather) reaches every rank
// unchanged, and every copy of it agrees. The sender keeps what its receivers decode.
// Residuals carry over from one synchronisation to the next (training goes on).
#pragma once

#include <cstdint>
#include <map>

#include "models/schedule/schedule.h"
#include "runtime/backend.h"

namespace gradsync::runtime {

class EncodedTransfers {
 public:
  // `buffer_bytes`: the size of each participant's buffer (residuals cover it all).
  EncodedTransfers(Memory& memory, std::uint64_t buffer_bytes) : memory_(memory), buffer_bytes_(buffer_bytes) {}

  // Residual zeroed, decoded marks dropped (a new run).
  void reset(int participant);
  // Decoded marks dropped (new gradients in the buffer; residuals stay).
  void new_values(int participant);

  // Encodes `slice` of the participant's buffer (`values` points at its first value) into
  // `out`, then leaves in the buffer what the receivers will decode.
  void encode(int participant, const models::Encoding& encoding, const models::Slice& slice, float* values,
              std::uint8_t* out);
  // Decodes a received payload into the slice (add: onto it).
  void decode(int participant, const models::Encoding& encoding, const models::Slice& slice, const std::uint8_t* in,
              float* values, bool add);
  // Any other write to the slice (a copy, a reduction, a kernel, a plain receive).
  void written(int participant, const models::Slice& slice) { mark(participant, slice, false); }

 private:
  float* residual(int participant, const models::Slice& slice, bool forwarding);
  void mark(int participant, const models::Slice& slice, bool decoded);
  bool holds_decoded(int participant, const models::Slice& slice);

  Memory& memory_;
  std::uint64_t buffer_bytes_;
  std::map<int, float*> residual_;  // participant -> residual of its whole buffer (allocated on first use)
  float* zero_ = nullptr;  // a residual of zeros, for forwarded values
  std::map<int, std::map<std::uint64_t, std::uint64_t>> decoded_;  // participant -> offset -> bytes holding decoded values
};

}  // namespace gradsync::runtime
