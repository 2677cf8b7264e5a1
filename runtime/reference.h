// The oracle of `gradsync-run --check` for results no closed form gives (1-bit SGD, BMUF):
// an independent reference. It interprets the schedule's dataflow element by element on
// plain float arrays, in the order a real run applies it (senders encode first; plain
// receives land during the transfer; then each participant's local work in op order), and
// computes the numerics itself, written from the source documents' definitions
// (seeds-digest.md) — it shares no code with the executor, memories, kernels or transports
// a real run uses:
//   1-bit SGD (source D): v = x + residual; one bit per value (v >= 0); per group of values,
//     the means of the non-negative and of the negative v (sums in double) as the two
//     decoded values; the residual keeps v minus what was sent. Values that are exactly a
//     received payload are forwarded without feedback (they re-encode to the same payload).
//   block momentum (BMUF, sources C, D): G = average - previous; delta = momentum x delta +
//     learning rate x G; previous += delta; model = previous (+ momentum x delta, Nesterov);
//     every product and sum rounded to float.
//   divide: x / N, a true division.
#pragma once

#include <vector>

#include "models/schedule/schedule.h"
#include "runtime/executor.h"

namespace gradsync::runtime {

// Every participant's buffer after one synchronisation from `input` (gradient, then scratch).
// std::logic_error for a kernel or codec the reference does not know.
std::vector<std::vector<float>> reference_run(const models::Schedule& schedule, const InputFn& input);

}  // namespace gradsync::runtime
