#include "models/strategies/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {

namespace {

struct RowLayer {
  std::uint64_t base_element = 0;
  std::uint64_t elements = 0;
  std::uint64_t rows = 0;  // 0: no rows, sent whole
  Slice row(std::uint64_t r, int eb) const { return block(base_element * eb, elements, static_cast<int>(rows), static_cast<int>(r), eb); }
};

std::vector<RowLayer> layers_of(std::uint64_t elements, const Workload* w, const SamplingParams& p) {
  std::vector<RowLayer> layers;
  if (w && static_cast<std::uint64_t>(w->total_params()) == elements) {
    std::uint64_t offset = 0;
    for (const auto& l : w->layers) {
      if (l.rows && *l.rows > kMaxSampledRows) {
        throw InputError("workload " + w->name + ": layer " + l.name + " has " + std::to_string(*l.rows) +
                         " rows; sampling handles at most " + std::to_string(kMaxSampledRows));
      }
      layers.push_back({offset, static_cast<std::uint64_t>(l.params), l.rows ? static_cast<std::uint64_t>(*l.rows) : 0});
      offset += static_cast<std::uint64_t>(l.params);
    }
  } else if (elements > 0) {
    layers.push_back({0, elements, std::min<std::uint64_t>(elements, static_cast<std::uint64_t>(std::max<std::int64_t>(1, p.rows)))});
  }
  return layers;
}

// Rows sorted by frequency: P(row r) ∝ 1 / (r + 1).
std::vector<double> zipf_cdf(std::uint64_t rows) {
  std::vector<double> cdf(rows);
  double total = 0;
  for (std::uint64_t r = 0; r < rows; ++r) cdf[r] = (total += 1.0 / static_cast<double>(r + 1));
  for (double& c : cdf) c /= total;
  return cdf;
}

void append_merged(std::vector<Slice>& out, Slice s) {
  if (!out.empty() && out.back().end() == s.offset) {
    out.back().bytes += s.bytes;
  } else {
    out.push_back(s);
  }
}

}  // namespace

std::uint64_t total_bytes(const std::vector<Slice>& slices) {
  std::uint64_t t = 0;
  for (const Slice& s : slices) t += s.bytes;
  return t;
}

SampledRows sample_rows(std::uint64_t elements, int eb, const Workload* workload, int ranks, const SamplingParams& p) {
  SampledRows out;
  const auto n = static_cast<std::size_t>(ranks);
  out.per_rank.resize(n);
  out.extra_per_rank.resize(n);
  out.rows_per_rank.assign(n, 0);
  out.extra_rows_per_rank.assign(n, 0);
  std::vector<std::uint64_t> extra_packed(n, 0);  // extra bytes of each rank so far
  auto rate = [&](int rank) { return p.rates.empty() ? 1.0 : p.rates[static_cast<std::size_t>(rank)]; };
  for (const RowLayer& layer : layers_of(elements, workload, p)) {
    const Slice whole{layer.base_element * eb, layer.elements * eb};
    if (layer.rows == 0) {
      for (auto& slices : out.per_rank) append_merged(slices, whole);
      append_merged(out.union_slices, whole);
      append_merged(out.common_slices, whole);
      out.expected.push_back({whole, true, false, {}});
      continue;
    }
    const std::uint64_t R = layer.rows;
    out.rows_total += R;
    auto count = [&](double fraction) {
      return std::min(R, static_cast<std::uint64_t>(std::llround(std::clamp(fraction, 0.0, 1.0) * static_cast<double>(R))));
    };
    // V_α: the most frequent rows; V_β: the first rows of an order drawn with the shared seed.
    // Both nested, so a rank at a lower rate sends a subset of what a higher rate sends.
    std::vector<std::uint64_t> beta_order(R);
    std::iota(beta_order.begin(), beta_order.end(), 0);
    {
      std::mt19937_64 shared_rng(p.seed);
      const std::uint64_t most = count(p.beta);
      for (std::uint64_t i = 0; i < most; ++i) {  // partial Fisher-Yates
        std::uniform_int_distribution<std::uint64_t> pick(i, R - 1);
        std::swap(beta_order[i], beta_order[pick(shared_rng)]);
      }
    }
    // Which ranks send row r: those whose V_α or V_β holds it (thresholds per rank: every
    // rank when r is under the smallest, none over the largest), and those that drew it
    // into their minibatch (sparse: `drawn`, by row then rank).
    std::vector<std::uint64_t> alpha_rows(n), beta_rows(n);
    std::uint64_t alpha_lo = n ? R : 0, alpha_hi = 0, beta_lo = n ? R : 0, beta_hi = 0;
    for (std::size_t i = 0; i < n; ++i) {
      alpha_rows[i] = count(p.alpha * rate(static_cast<int>(i)));
      beta_rows[i] = count(p.beta * rate(static_cast<int>(i)));
      alpha_lo = std::min(alpha_lo, alpha_rows[i]);
      alpha_hi = std::max(alpha_hi, alpha_rows[i]);
      beta_lo = std::min(beta_lo, beta_rows[i]);
      beta_hi = std::max(beta_hi, beta_rows[i]);
    }
    constexpr std::uint64_t kNotDrawn = ~std::uint64_t{0};
    std::vector<std::uint64_t> beta_position(R, kNotDrawn);
    for (std::uint64_t i = 0; i < beta_hi; ++i) beta_position[beta_order[i]] = i;
    const auto cdf = zipf_cdf(R);
    std::vector<std::pair<std::uint64_t, int>> drawn;  // (row, rank): V_base, each rank's minibatch words (own seed)
    drawn.reserve(n * static_cast<std::size_t>(std::max<std::int64_t>(0, p.base)));
    for (int rank = 0; rank < ranks && !p.base_rows.empty(); ++rank) {
      for (const std::int64_t row : p.base_rows[static_cast<std::size_t>(rank)]) {
        if (row >= 0 && static_cast<std::uint64_t>(row) < R) drawn.emplace_back(static_cast<std::uint64_t>(row), rank);
      }
    }
    for (int rank = 0; rank < ranks && p.base_rows.empty(); ++rank) {
      std::mt19937_64 rng(p.seed * 1000003ULL + static_cast<std::uint64_t>(rank) + 1);
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (std::int64_t d = 0; d < p.base; ++d) {
        const auto it = std::lower_bound(cdf.begin(), cdf.end(), u(rng));
        drawn.emplace_back(std::min<std::uint64_t>(static_cast<std::uint64_t>(it - cdf.begin()), R - 1), rank);
      }
    }
    std::sort(drawn.begin(), drawn.end());
    drawn.erase(std::unique(drawn.begin(), drawn.end()), drawn.end());
    auto next_drawn = drawn.begin();
    auto members_of = [&](std::uint64_t r, std::vector<int>& members) {
      members.clear();
      const std::uint64_t b = beta_position[r];
      auto drawn_end = next_drawn;
      while (drawn_end != drawn.end() && drawn_end->first == r) ++drawn_end;
      if (r < alpha_lo || b < beta_lo) {
        for (int rank = 0; rank < ranks; ++rank) members.push_back(rank);
      } else if (r >= alpha_hi && b >= beta_hi) {
        for (auto it = next_drawn; it != drawn_end; ++it) members.push_back(it->second);
      } else {
        auto it = next_drawn;
        for (int rank = 0; rank < ranks; ++rank) {
          const auto i = static_cast<std::size_t>(rank);
          while (it != drawn_end && it->second < rank) ++it;
          const bool by_draw = it != drawn_end && it->second == rank;
          if (r < alpha_rows[i] || b < beta_rows[i] || by_draw) members.push_back(rank);
        }
      }
      next_drawn = drawn_end;
    };
    // Slices per rank, the union, the common rows; expected regions and extra runs per run
    // of rows with equal membership.
    std::vector<int> members, previous;
    Slice run{};
    bool run_open = false;
    auto close_run = [&] {
      if (!run_open) return;
      if (previous.empty()) {
        out.expected.push_back({run, false, true, {}});
      } else if (previous.size() == n) {
        out.expected.push_back({run, true, false, {}});
      } else {
        out.expected.push_back({run, false, false, previous});
        SampledRows::Run extra{run, previous, {}};
        for (int rank : previous) {
          extra.packed_at.push_back(extra_packed[static_cast<std::size_t>(rank)]);
          extra_packed[static_cast<std::size_t>(rank)] += run.bytes;
        }
        out.extra_runs.push_back(std::move(extra));
      }
      run_open = false;
    };
    for (std::uint64_t r = 0; r < R; ++r) {
      members_of(r, members);
      const Slice row = layer.row(r, eb);
      const bool common = members.size() == n;
      for (int rank : members) {
        const auto i = static_cast<std::size_t>(rank);
        append_merged(out.per_rank[i], row);
        ++out.rows_per_rank[i];
        if (!common) {
          append_merged(out.extra_per_rank[i], row);
          ++out.extra_rows_per_rank[i];
        }
      }
      if (!members.empty()) {
        append_merged(out.union_slices, row);
        ++out.rows_in_union;
      }
      if (common && n > 0) {
        append_merged(out.common_slices, row);
        ++out.rows_common;
      }
      if (run_open && members == previous) {
        run.bytes += row.bytes;
      } else {
        close_run();
        run = row;
        run_open = true;
        previous = members;
      }
    }
    close_run();
  }
  return out;
}

}  // namespace gradsync::models
