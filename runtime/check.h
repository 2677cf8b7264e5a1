// Checking a real run: every element a worker ends with is compared with what the
// schedule promises (sums of the integer inputs, exact in any order, divided where the
// strategy averages) and, bit for bit, with an in-process reference run of the same
// schedule on the CPU kernels (which also covers 1-bit quantisation and BMUF updates,
// whose results no closed form gives).
#pragma once

#include <cstdint>
#include <vector>

#include "models/schedule.h"
#include "runtime/executor.h"

namespace gradsync::runtime {

// The integer input pattern of the checks: element i of worker p.
float check_input(int participant, std::uint64_t element);

// Any quantisation below 32 bits: results then differ from exact sums.
bool is_lossy(const models::Schedule& schedule);

// Every participant's final gradient after one synchronisation from `input`, computed in
// this process (all participants, CPU kernels, lockstep rounds).
std::vector<std::vector<float>> reference_run(const models::Schedule& schedule, const InputFn& input);

// Mismatching elements of worker `w`'s `result`: against the closed form (when the
// schedule's results are exact sums) and against `reference` (bit for bit, when given).
std::uint64_t count_wrong(const models::Schedule& schedule, int worker, const std::vector<float>& result,
                          const InputFn& input, const std::vector<float>* reference);

// After an asynchronous exchange a worker holds what the server had applied when it
// answered: its own contribution plus those of some other workers (whoever pushed
// first). Finds a set of others that explains element 0.. and counts the elements it
// does not explain (all of them when no set does). Up to 12 workers; more: not checked (0).
std::uint64_t count_wrong_asynchronous(const models::Schedule& schedule, int worker, const std::vector<float>& result,
                                       const InputFn& input);

}  // namespace gradsync::runtime
