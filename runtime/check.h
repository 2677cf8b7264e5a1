// Checking a real run: every element a worker ends with is compared with what the
// schedule promises (sums of the integer inputs, exact in any order, divided where the
// strategy averages) and, bit for bit, with the independent reference (reference.h: the
// schedule's dataflow on plain arrays with numerics written from the source documents),
// which also covers 1-bit quantisation and BMUF updates, whose results no closed form gives.
#pragma once

#include <cstdint>
#include <vector>

#include "models/schedule/schedule.h"
#include "runtime/executor.h"
#include "runtime/reference.h"

namespace gradsync::runtime {

// The integer input pattern of the checks: element i of worker p.
float check_input(int participant, std::uint64_t element);

// Any transfer whose payload a codec encodes: results then differ from exact sums.
bool is_lossy(const models::Schedule& schedule);

// Mismatching elements of worker `w`'s `result`: against the closed form (when the
// schedule's results are exact sums) and against `reference` (bit for bit, when given).
std::uint64_t count_wrong(const models::Schedule& schedule, int worker, const std::vector<float>& result,
                          const InputFn& input, const std::vector<float>* reference);

// The inputs of an asynchronous check, made so that every element of a result says whose
// contribution it holds: element i belongs to worker i mod N and is (i / N) mod 1000 + 1
// there, 0 on every other worker. A sum of any set of workers' contributions then holds,
// at element i, worker i mod N's value or 0 — whether that worker's push is in it.
InputFn asynchronous_check_input(int workers);

// After an asynchronous exchange a worker holds what the server had applied when it
// answered: its own contribution plus those of some other workers (whoever pushed first).
// With asynchronous_check_input, counts the elements that are neither their owner's value
// nor 0, that leave out the worker's own contribution, or that disagree with the other
// elements of their owner about whether its push is included. Any number of workers.
std::uint64_t count_wrong_asynchronous(const models::Schedule& schedule, int worker, const std::vector<float>& result);

}  // namespace gradsync::runtime
