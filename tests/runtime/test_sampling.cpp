// Sampling combined with all-reduce (source A's future work) and per-rank sampling rates:
// the rows every rank ends with, run through the reference executor (the same ops
// gradsync-run executes), are compared element by element with sums computed here from
// the selection alone: a row is the sum over the ranks that sent it, a row nobody sent
// keeps each rank's own value.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "models/executors/predict.h"
#include "models/strategies/sampling.h"
#include "models/schedule/symbolic.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include "runtime/check.h"

using namespace gradsync;

namespace {

struct Case {
  models::Schedule schedule;
  std::vector<std::string> notes;
};

models::PredictRequest request(const models::Topology& t, int n, std::uint64_t elements, std::vector<std::string> params,
                               const models::Workload* w = nullptr) {
  models::PredictRequest q;
  q.topology = &t;
  q.workload = w;
  q.bytes = 4.0 * static_cast<double>(elements);
  q.strategy = &models::find_strategy("sampled");
  q.params = models::SyncParams::parse(params);
  q.placement = models::first_gpus(t, n);
  return q;
}

const models::Topology& flat() {
  static const models::Topology t = models::flat_topology(8);
  return t;
}

const models::Topology& source_a() {
  static const models::Topology t =
      std::move(models::load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json").topology);
  return t;
}

// Row `r` of a one-layer buffer of `elements` split into `rows` rows (the layout of models/sampling).
models::SamplingParams params_for(std::int64_t rows, std::int64_t base, std::vector<double> rates) {
  models::SamplingParams p;
  p.alpha = 0.05;
  p.beta = 0.1;
  p.base = base;
  p.seed = 7;
  p.rows = rows;
  p.rates = std::move(rates);
  return p;
}

// Which ranks sent each byte (from the selection), then every rank's every element checked.
void expect_rows_reconstructed(const models::Schedule& s, const models::SampledRows& rows, int n, std::uint64_t elements,
                               const std::string& what) {
  ASSERT_TRUE(models::check_schedule(s).ok) << what << ": " << models::check_schedule(s).message;
  std::vector<std::vector<int>> senders(elements);
  for (int r = 0; r < n; ++r) {
    for (const auto& slice : rows.per_rank[static_cast<std::size_t>(r)]) {
      for (std::uint64_t e = slice.offset / 4; e < slice.end() / 4; ++e) senders[e].push_back(r);
    }
  }
  const auto result = runtime::reference_run(s, runtime::check_input);
  std::uint64_t wrong = 0, sent_by_some = 0, sent_by_all = 0;
  for (int w = 0; w < n; ++w) {
    for (std::uint64_t e = 0; e < elements; ++e) {
      float want = 0;
      if (senders[e].empty()) {
        want = runtime::check_input(w, e);
      } else {
        for (int q : senders[e]) want += runtime::check_input(q, e);
      }
      if (result[static_cast<std::size_t>(w)][e] != want) ++wrong;
      if (w == 0 && !senders[e].empty()) ++(senders[e].size() == static_cast<std::size_t>(n) ? sent_by_all : sent_by_some);
    }
  }
  EXPECT_EQ(wrong, 0u) << what;
  // The cases exercise both paths: rows all-reduced densely and rows only some ranks sent.
  EXPECT_GT(sent_by_all, 0u) << what;
  if (n > 1) {
    EXPECT_GT(sent_by_some, 0u) << what;
  }
}

// The rates a schedule used, from its "rates: r0 r1 ..." note (empty: every rank at 1).
std::vector<double> rates_of(const models::Schedule& s) {
  for (const auto& note : s.notes) {
    if (note.rfind("rates: 1 for every rank", 0) == 0 || note.rfind("rates:", 0) != 0) continue;
    std::vector<double> rates;
    std::istringstream in(note.substr(6));
    for (double r; in >> r;) rates.push_back(r);
    return rates;
  }
  return {};
}

}  // namespace

TEST(SamplingWithAllReduce, EveryRankReconstructsEverySentRowExactly) {
  const std::uint64_t elements = 4000;  // 200 rows of 20 elements
  for (const std::string inner : {"ring", "hierarchical", "ps"}) {
    for (int n : {2, 3, 4, 6}) {
      for (const std::string rates : {"1", "list", "auto"}) {
        std::vector<std::string> params = {"inner=" + inner, "rows=200", "alpha=0.05", "beta=0.1", "base=12", "seed=7"};
        std::vector<double> list;
        if (rates == "list") {
          std::string text;
          for (int r = 0; r < n; ++r) {
            list.push_back(r % 2 ? 0.5 : 1.0);
            text += std::string(r ? "," : "") + (r % 2 ? "0.5" : "1");
          }
          params.push_back("rates=" + text);
        } else if (rates == "auto") {
          params.push_back("rates=auto");
        }
        if (inner == "hierarchical") params.push_back(n % 2 ? "k=1" : "k=2");
        if (inner == "hierarchical") params.push_back("grouping=order");
        const auto q = request(flat(), n, elements, params);
        const auto s = models::build_schedule(q).schedule;
        // The same selection the strategy made; auto: at the rates it chose (printed to 3 digits,
        // so the rows are compared only when the printed rates are the ones used: 1 or a list).
        if (rates == "auto") {
          list = rates_of(s);
          if (inner != "ps") {
            EXPECT_TRUE(list.empty()) << "a ring keeps one rate";
          }
          for (double r : list) EXPECT_TRUE(r >= 0 && r <= 1) << r;
          if (std::any_of(list.begin(), list.end(), [](double r) { return r != 1.0 && r != 0.0; })) {
            EXPECT_EQ(runtime::count_wrong(s, 0, runtime::reference_run(s, runtime::check_input)[0], runtime::check_input, nullptr), 0u);
            continue;
          }
        }
        const auto rows = models::sample_rows(elements, 4, nullptr, n, params_for(200, 12, list));
        expect_rows_reconstructed(s, rows, n, elements, inner + " N=" + std::to_string(n) + " rates=" + rates);
      }
    }
  }
}

TEST(SamplingWithAllReduce, RowsEveryRankSendsAreAllReducedTheRestAllGathered) {
  const auto rows = models::sample_rows(4000, 4, nullptr, 4, params_for(200, 12, {}));
  // alpha 5 % + beta 10 % of 200 rows, the same on every rank: at least 20 (they may overlap) and at most 30.
  EXPECT_GE(rows.rows_common, 20u);
  EXPECT_LE(rows.rows_common, 30u + 4 * 12);
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_GT(rows.extra_rows_per_rank[r], 0u);  // minibatch words outside V_α ∪ V_β
    EXPECT_EQ(rows.rows_per_rank[r], rows.rows_common + rows.extra_rows_per_rank[r]);
  }
  // The ring schedule moves the common rows once through an all-reduce and the extra rows
  // (with 4-byte indices) through an all-gather: fewer bytes than all-reducing the union.
  const auto q = request(flat(), 4, 4000, {"inner=ring", "rows=200", "alpha=0.05", "beta=0.1", "base=12", "seed=7"});
  const auto s = models::build_schedule(q).schedule;
  std::uint64_t all_gather = 0;
  for (const auto& round : s.rounds) {
    if (round.phase != "rows all-gather") continue;
    std::vector<models::Op> ops;
    for (int p = 0; p < 4; ++p) round.ops(p, ops);
    for (const auto& op : ops) {
      if (op.kind == models::OpKind::send) all_gather += op.slice.bytes;
    }
  }
  std::uint64_t extra_bytes = 0;
  for (std::size_t r = 0; r < 4; ++r) extra_bytes += 80 * rows.extra_rows_per_rank[r] + 4 * rows.extra_rows_per_rank[r];
  EXPECT_EQ(all_gather, 3 * extra_bytes);  // every block passes 3 of the 4 links
}

TEST(SamplingRates, LowerRatesSendSubsetsAndNeverDropMinibatchWords) {
  const auto full = models::sample_rows(4000, 4, nullptr, 3, params_for(200, 12, {1, 1, 1}));
  const auto half = models::sample_rows(4000, 4, nullptr, 3, params_for(200, 12, {1, 0.5, 0}));
  auto rows_of = [](const models::SampledRows& s, std::size_t r) {
    std::set<std::uint64_t> out;
    for (const auto& slice : s.per_rank[r]) {
      for (std::uint64_t b = slice.offset; b < slice.end(); b += 80) out.insert(b / 80);
    }
    return out;
  };
  EXPECT_EQ(rows_of(full, 0), rows_of(half, 0));  // rate 1 is the default selection
  const auto a = rows_of(full, 1), b = rows_of(half, 1);
  EXPECT_TRUE(std::includes(a.begin(), a.end(), b.begin(), b.end()));
  EXPECT_LT(b.size(), a.size());
  // Rate 0: only the rank's minibatch words — the ones drawn with alpha = beta = 0.
  auto base_only = params_for(200, 12, {});
  base_only.alpha = base_only.beta = 0;
  EXPECT_EQ(rows_of(half, 2), rows_of(models::sample_rows(4000, 4, nullptr, 3, base_only), 2));
  // The rows every rank sends are those of the lowest rate.
  EXPECT_EQ(half.rows_common, 0u + [&] {
    std::set<std::uint64_t> common = rows_of(half, 0);
    for (std::size_t r = 1; r < 3; ++r) {
      const auto mine = rows_of(half, r);
      std::set<std::uint64_t> both;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.begin()));
      common = both;
    }
    return static_cast<std::uint64_t>(common.size());
  }());
}

TEST(SamplingRates, AutoLowersTheRanksBehindTheSlowLinkToTheQuickestRanksTime) {
  // Source A's machine with the server on gpu0: gpu1 shares its switch (5.96 GB/s), gpu2 and
  // gpu3 reach it across the CPU side (4.46 GB/s) through one uplink.
  const models::Workload w = *models::workload_preset("source-a-ffnn-lm");
  auto q = request(source_a(), 4, 0, {"inner=ps", "server=gpu0", "rates=auto"}, &w);
  q.bytes = static_cast<double>(w.gradient_bytes());
  const auto built = models::build_schedule(q);
  std::string rates_note;
  for (const auto& note : built.schedule.notes) {
    if (note.rfind("rates:", 0) == 0) rates_note = note;
  }
  ASSERT_FALSE(rates_note.empty());
  double r[4] = {0, 0, 0, 0};
  ASSERT_EQ(std::sscanf(rates_note.c_str(), "rates: %lf %lf %lf %lf", &r[0], &r[1], &r[2], &r[3]), 4) << rates_note;
  EXPECT_EQ(r[1], 1.0) << rates_note;  // the least-loaded rank keeps the full rate
  EXPECT_LT(r[2], 1.0) << rates_note;
  EXPECT_NEAR(r[2], r[3], 0.01) << rates_note;  // the same path; their minibatch words differ a little
  // The analytic gather: the slow ranks' exchange takes no longer than the fast rank's.
  auto uniform = q;
  uniform.params = models::SyncParams::parse({"inner=ps", "server=gpu0"});
  EXPECT_LT(models::predict(q).time_per_sync_s, models::predict(uniform).time_per_sync_s);
}
