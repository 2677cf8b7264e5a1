// Source A's sampling: which rows of the row-structured layers (embedding and output:
// one row per vocabulary word) each rank sends. V_all = V_base ∪ V_α ∪ V_β:
//   V_base — the words of the rank's current minibatch (drawn from a Zipf law over the
//            rows, which are taken as sorted by word frequency; each rank its own seed),
//   V_α    — the most frequent words (the first alpha · rows rows),
//   V_β    — random words, the same for every rank (a shared seed), for robustness.
// Layers without rows (hidden layers) are sent in full. A bare buffer without a
// workload is one layer of `rows` rows.
//
// Per-rank rates (source A's proposal: a lower sampling rate behind slow links): rank r
// takes V_α and V_β at rate[r] x alpha and rate[r] x beta. The sets are nested (the most
// frequent rows first; the shared random order's first rows), so the rows every rank sends
// are those at the lowest rate. V_base is never scaled: a minibatch's own words always go.
//
// Two ways to exchange the rows, with the same result (`expected`: each row ends as the
// sum over the ranks that sent it; rows nobody sent keep each rank's own value):
//   through a server — each rank sends all its rows (`per_rank`), gets back `union_slices`;
//   all-reduce — the rows every rank sends (`common_slices`, whole layers included) are
//   all-reduced densely; the others (`extra_per_rank`: V_base rows, and V_α/V_β rows above
//   the lowest rate) go to every rank by an all-gather of indices and values, and each
//   rank adds up the contributions of each row (`extra_runs`).
#pragma once

#include <cstdint>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/workload/workload.h"

namespace gradsync::models {

struct SamplingParams {
  double alpha = 0.05;  // fraction of rows: the most frequent words
  double beta = 0.01;  // fraction of rows: random words (shared seed)
  std::int64_t base = 64;  // words drawn per minibatch per rank
  // Per rank: its minibatch's own rows (V_base, as a real run knows them), instead of `base`
  // drawn; empty: drawn. Rows past a layer's end are not in that layer.
  std::vector<std::vector<std::int64_t>> base_rows;
  std::uint64_t seed = 1;
  std::int64_t rows = 1000;  // rows of a bare buffer (no workload)
  std::vector<double> rates;  // per rank, in [0, 1], scaling alpha and beta; empty: 1 for every rank
};

struct SampledRows {
  // Per rank: the gradient slices it sends (sampled rows merged into ranges, plus whole
  // row-less layers), sorted by offset.
  std::vector<std::vector<Slice>> per_rank;
  std::vector<Slice> union_slices;  // rows some rank sends, plus row-less layers
  std::vector<Slice> common_slices;  // rows every rank sends, plus row-less layers
  std::vector<std::vector<Slice>> extra_per_rank;  // per rank: the rows it sends outside common_slices
  struct Run {
    Slice slice;  // consecutive rows outside common_slices sent by the same ranks
    std::vector<int> contributors;
    // Per contributor: where the run starts in its extra rows packed one after the other.
    std::vector<std::uint64_t> packed_at;
  };
  std::vector<Run> extra_runs;
  // Each row: the sum over the ranks that sent it (all of them: every worker); rows nobody sent: own.
  std::vector<ExpectedRegion> expected;
  std::uint64_t rows_total = 0;
  std::uint64_t rows_in_union = 0;
  std::uint64_t rows_common = 0;
  std::vector<std::uint64_t> rows_per_rank;
  std::vector<std::uint64_t> extra_rows_per_rank;
};

// `elements` and `element_bytes` describe the gradient; `workload` (optional) gives the
// layers when its parameter count equals `elements`.
SampledRows sample_rows(std::uint64_t elements, int element_bytes, const Workload* workload, int ranks,
                        const SamplingParams& params);

std::uint64_t total_bytes(const std::vector<Slice>& slices);

}  // namespace gradsync::models
