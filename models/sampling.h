// Source A's sampling: which rows of the row-structured layers (embedding and output:
// one row per vocabulary word) each rank sends. V_all = V_base ∪ V_α ∪ V_β:
//   V_base — the words of the rank's current minibatch (drawn from a Zipf law over the
//            rows, which are taken as sorted by word frequency; each rank its own seed),
//   V_α    — the most frequent words (the first alpha · rows rows),
//   V_β    — random words, the same for every rank (a shared seed), for robustness.
// Layers without rows (hidden layers) are sent in full. A bare buffer without a
// workload is one layer of `rows` rows.
#pragma once

#include <cstdint>
#include <vector>

#include "models/schedule.h"
#include "models/workload.h"

namespace gradsync::models {

struct SamplingParams {
  double alpha = 0.05;  // fraction of rows: the most frequent words
  double beta = 0.01;  // fraction of rows: random words (shared seed)
  std::int64_t base = 64;  // words drawn per minibatch per rank
  std::uint64_t seed = 1;
  std::int64_t rows = 1000;  // rows of a bare buffer (no workload)
};

struct SampledRows {
  // Per rank: the gradient slices it sends (sampled rows merged into ranges, plus whole
  // row-less layers), sorted by offset.
  std::vector<std::vector<Slice>> per_rank;
  std::vector<Slice> union_slices;  // rows some rank sends, plus row-less layers
  // Every row-structured region with the ranks that sampled it (expected results).
  std::vector<ExpectedRegion> expected_for_union_exchange;  // rows of the union: all workers; others: own
  std::vector<ExpectedRegion> expected_for_server_exchange;  // each row: the ranks that sent it; unsent: own
  std::uint64_t rows_total = 0;
  std::uint64_t rows_in_union = 0;
  std::vector<std::uint64_t> rows_per_rank;
};

// `elements` and `element_bytes` describe the gradient; `workload` (optional) gives the
// layers when its parameter count equals `elements`.
SampledRows sample_rows(std::uint64_t elements, int element_bytes, const Workload* workload, int ranks,
                        const SamplingParams& params);

std::uint64_t total_bytes(const std::vector<Slice>& slices);

}  // namespace gradsync::models
