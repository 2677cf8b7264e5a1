#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

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
  out.per_rank.resize(static_cast<std::size_t>(ranks));
  out.rows_per_rank.assign(static_cast<std::size_t>(ranks), 0);
  for (const RowLayer& layer : layers_of(elements, workload, p)) {
    const Slice whole{layer.base_element * eb, layer.elements * eb};
    if (layer.rows == 0) {
      for (auto& slices : out.per_rank) append_merged(slices, whole);
      append_merged(out.union_slices, whole);
      out.expected_for_union_exchange.push_back({whole, true, false, {}});
      out.expected_for_server_exchange.push_back({whole, true, false, {}});
      continue;
    }
    const std::uint64_t R = layer.rows;
    out.rows_total += R;
    // Shared rows: V_α (most frequent) and V_β (random, shared seed).
    std::vector<char> shared(R, 0);
    const auto alpha_rows = static_cast<std::uint64_t>(std::llround(p.alpha * static_cast<double>(R)));
    for (std::uint64_t r = 0; r < std::min(alpha_rows, R); ++r) shared[r] = 1;
    std::mt19937_64 shared_rng(p.seed);
    const auto beta_rows = static_cast<std::uint64_t>(std::llround(p.beta * static_cast<double>(R)));
    {
      std::vector<std::uint64_t> all(R);
      std::iota(all.begin(), all.end(), 0);
      for (std::uint64_t i = 0; i < std::min(beta_rows, R); ++i) {  // partial Fisher-Yates
        std::uniform_int_distribution<std::uint64_t> pick(i, R - 1);
        std::swap(all[i], all[pick(shared_rng)]);
        shared[all[i]] = 1;
      }
    }
    // V_base per rank.
    const auto cdf = zipf_cdf(R);
    std::vector<std::vector<char>> has(static_cast<std::size_t>(ranks), shared);
    for (int rank = 0; rank < ranks; ++rank) {
      std::mt19937_64 rng(p.seed * 1000003ULL + static_cast<std::uint64_t>(rank) + 1);
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (std::int64_t d = 0; d < p.base; ++d) {
        const auto it = std::lower_bound(cdf.begin(), cdf.end(), u(rng));
        has[static_cast<std::size_t>(rank)][static_cast<std::size_t>(std::min<std::ptrdiff_t>(it - cdf.begin(), static_cast<std::ptrdiff_t>(R - 1)))] = 1;
      }
    }
    // Slices per rank and the union; expected regions per run of rows with equal membership.
    std::vector<int> members, previous;
    Slice run{};
    bool run_open = false;
    auto close_run = [&] {
      if (!run_open) return;
      if (previous.empty()) {
        out.expected_for_union_exchange.push_back({run, false, true, {}});
        out.expected_for_server_exchange.push_back({run, false, true, {}});
      } else {
        out.expected_for_union_exchange.push_back({run, true, false, {}});
        out.expected_for_server_exchange.push_back({run, false, false, previous});
      }
      run_open = false;
    };
    for (std::uint64_t r = 0; r < R; ++r) {
      members.clear();
      for (int rank = 0; rank < ranks; ++rank) {
        if (has[static_cast<std::size_t>(rank)][r]) members.push_back(rank);
      }
      const Slice row = layer.row(r, eb);
      for (int rank : members) {
        append_merged(out.per_rank[static_cast<std::size_t>(rank)], row);
        ++out.rows_per_rank[static_cast<std::size_t>(rank)];
      }
      if (!members.empty()) {
        append_merged(out.union_slices, row);
        ++out.rows_in_union;
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
