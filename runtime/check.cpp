#include "runtime/check.h"

#include <algorithm>
#include <cstring>


namespace gradsync::runtime {

using models::ExpectedRegion;

float check_input(int participant, std::uint64_t element) {
  // Integers in [-500, 500): sums of a few thousand ranks stay exact in float32.
  return static_cast<float>(static_cast<std::int64_t>((element * 7 + static_cast<std::uint64_t>(participant) * 13) % 1000) - 500);
}

bool is_lossy(const models::Schedule& s) {
  std::vector<models::Op> ops;
  for (const auto& round : s.rounds) {
    for (int p = 0; p < s.participant_count(); ++p) {
      ops.clear();
      round.ops(p, ops);
      for (const auto& op : ops) {
        if (op.is_transfer() && op.encoding) return true;
      }
    }
  }
  return false;
}

std::uint64_t count_wrong(const models::Schedule& s, int worker, const std::vector<float>& result, const InputFn& input,
                          const std::vector<float>* reference) {
  std::uint64_t wrong = 0;
  if (reference) {
    for (std::size_t i = 0; i < result.size(); ++i) {
      if (std::memcmp(&result[i], &(*reference)[i], sizeof(float)) != 0) ++wrong;
    }
  }
  if (is_lossy(s)) return wrong;
  std::vector<ExpectedRegion> regions = s.expected;
  if (regions.empty()) regions.push_back({models::Slice{0, s.gradient_bytes}, true, false, {}});
  for (const auto& region : regions) {
    if (region.numeric_only) continue;
    if (!region.holders.empty() && std::find(region.holders.begin(), region.holders.end(), worker) == region.holders.end()) {
      continue;  // this worker's bytes of the region are unspecified (a reduce-scatter's other shards, a reduce's non-roots)
    }
    if (region.transposed_blocks > 0) {
      // An all-to-all: block k of this worker holds worker k's block `worker`.
      const std::uint64_t first = region.slice.offset / 4, per = region.slice.bytes / 4 / static_cast<std::uint64_t>(region.transposed_blocks);
      for (std::uint64_t i = first; i < region.slice.end() / 4; ++i) {
        const std::uint64_t k = (i - first) / per;
        const float expected = input(static_cast<int>(k), i + (static_cast<std::uint64_t>(worker) - k) * per);
        if (result[i] != expected && (!reference || std::memcmp(&result[i], &(*reference)[i], sizeof(float)) == 0)) ++wrong;
      }
      continue;
    }
    std::vector<int> from;
    if (region.from_previous > 0) {
      from = {(worker - region.from_previous % s.workers + s.workers) % s.workers};
    } else if (region.own_only) {
      from = {worker};
    } else if (region.all_workers) {
      for (int w = 0; w < s.workers; ++w) from.push_back(w);
    } else {
      from = region.contributors;
    }
    for (std::uint64_t i = region.slice.offset / 4; i < region.slice.end() / 4; ++i) {
      double sum = 0;
      for (int w : from) sum += input(w, i);
      const float expected = static_cast<float>(sum) / static_cast<float>(region.divisor);
      if (result[i] != expected && !reference) ++wrong;
      else if (result[i] != expected && reference && std::memcmp(&result[i], &(*reference)[i], sizeof(float)) == 0) ++wrong;
    }
  }
  return wrong;
}

InputFn asynchronous_check_input(int workers) {
  const auto n = static_cast<std::uint64_t>(std::max(1, workers));
  return [n](int participant, std::uint64_t element) {
    return element % n == static_cast<std::uint64_t>(participant) ? static_cast<float>((element / n) % 1000 + 1) : 0.0f;
  };
}

std::uint64_t count_wrong_asynchronous(const models::Schedule& s, int worker, const std::vector<float>& result) {
  const auto n = static_cast<std::uint64_t>(std::max(1, s.workers));
  const InputFn input = asynchronous_check_input(s.workers);
  // Whether each worker's push is in the result: decided by its first element, then held to.
  std::vector<int> included(static_cast<std::size_t>(n), -1);
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < result.size(); ++i) {
    const auto owner = static_cast<int>(i % n);
    const float value = input(owner, i);
    int in = result[i] == value ? 1 : result[i] == 0.0f ? 0 : -1;
    if (in < 0 || (owner == worker && in == 0)) {
      ++wrong;  // neither its owner's value nor nothing, or the worker's own push is missing
      continue;
    }
    int& decided = included[static_cast<std::size_t>(owner)];
    if (decided < 0) decided = in;
    if (in != decided) ++wrong;
  }
  return wrong;
}

}  // namespace gradsync::runtime
