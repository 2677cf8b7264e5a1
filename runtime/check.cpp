#include "runtime/check.h"

#include <algorithm>
#include <cstring>

#include "runtime/transports.h"

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
        if (op.kind == models::OpKind::quantize && op.bits < 32) return true;
      }
    }
  }
  return false;
}

std::vector<std::vector<float>> reference_run(const models::Schedule& s, const InputFn& input) {
  auto memory = make_host_memory();
  auto transport = make_local_transport();
  ScheduleExecutor executor(s, map_all_here(s), 0, *memory, *transport);
  executor.reset(input);
  executor.run();
  std::vector<std::vector<float>> out;
  for (int w = 0; w < s.participant_count(); ++w) out.push_back(executor.gradient(w));
  return out;
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
    std::vector<int> from;
    if (region.own_only) {
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

std::uint64_t count_wrong_asynchronous(const models::Schedule& s, int worker, const std::vector<float>& result,
                                       const InputFn& input) {
  const int n = s.workers;
  if (n > 12 || result.empty()) return 0;
  std::vector<int> others;
  for (int w = 0; w < n; ++w) {
    if (w != worker) others.push_back(w);
  }
  // The subsets consistent with the first elements, then every element of the best one.
  const std::size_t probe = std::min<std::size_t>(result.size(), 16);
  std::uint64_t best = result.size();
  for (std::uint32_t mask = 0; mask < (1u << others.size()); ++mask) {
    auto value = [&](std::size_t i) {
      double sum = input(worker, i);
      for (std::size_t k = 0; k < others.size(); ++k) {
        if (mask & (1u << k)) sum += input(others[k], i);
      }
      return static_cast<float>(sum);
    };
    bool fits = true;
    for (std::size_t i = 0; i < probe && fits; ++i) fits = result[i] == value(i);
    if (!fits) continue;
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < result.size(); ++i) wrong += result[i] == value(i) ? 0 : 1;
    best = std::min(best, wrong);
  }
  return best;
}

}  // namespace gradsync::runtime
