// gloo-style sweep: every strategy (and every inner strategy a wrapper takes) x ranks
// 1..9 x sizes {0, 1, 7, N-1, N+1, 1 Mi + 3} elements x every k dividing N, each schedule
// proved correct by the symbolic executor: every worker ends holding every worker's
// contribution exactly once (or, for sampling, the documented rows).
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "models/predict.h"
#include "models/symbolic.h"
#include "models/topology_io.h"

using namespace gradsync::models;

namespace {

// 12 GPUs behind 3 switches, host memory at the root: enough for 9 ranks, groups, a server.
const Topology& machine() {
  static const Topology t = [] {
    std::ostringstream j;
    j << R"({"name": "sweep", "nodes": [{"id": "root", "kind": "root_complex"}, {"id": "host", "kind": "host_memory"})";
    for (int s = 0; s < 3; ++s) j << R"(, {"id": "sw)" << s << R"(", "kind": "pcie_switch"})";
    for (int g = 0; g < 12; ++g) j << R"(, {"id": "gpu)" << g << R"(", "kind": "gpu"})";
    j << R"(], "links": [{"a": "root", "b": "host", "bandwidth_GBps": 20, "latency_us": 0.5})";
    for (int s = 0; s < 3; ++s) j << R"(, {"a": "root", "b": "sw)" << s << R"(", "bandwidth_GBps": 8, "latency_us": 1})";
    for (int g = 0; g < 12; ++g) {
      j << R"(, {"a": "sw)" << g / 4 << R"(", "b": "gpu)" << g << R"(", "bandwidth_GBps": 12, "latency_us": 1})";
    }
    j << "]}";
    return std::move(load_topology(JsonView::parse(j.str(), "sweep.json")).topology);
  }();
  return t;
}

struct Variant {
  std::string strategy;
  std::vector<std::string> params;
  bool grouped;  // takes k
};

std::vector<Variant> variants() {
  return {
      {"ps", {}, false},
      {"ps", {"server=rank0"}, false},
      {"ring", {}, false},
      {"ring", {"ring_order=given"}, false},
      {"hierarchical", {"grouping=order"}, true},
      {"hierarchical", {"grouping=switch"}, true},
      {"ps_hra", {"grouping=order"}, true},
      {"sampled", {"inner=ps", "rows=50"}, false},
      {"sampled", {"inner=ring", "rows=50", "alpha=0.1", "beta=0.1"}, false},
      {"onebit", {"inner=ring"}, false},
      {"onebit", {"inner=ps"}, false},
      {"onebit", {"inner=hierarchical", "grouping=order"}, true},
      {"onebit", {"inner=ps_hra", "grouping=order"}, true},
      {"model_avg", {"inner=ring", "T=5"}, false},
      {"model_avg", {"inner=hierarchical", "grouping=order"}, true},
      {"bmuf", {"inner=ps"}, false},
      {"downpour", {"step=3"}, false},
      {"asgd", {}, false},
  };
}

}  // namespace

TEST(ScheduleSweep, EveryStrategyRanksSizesAndGroupsIsCorrect) {
  const Topology& t = machine();
  int checked = 0;
  for (const Variant& v : variants()) {
    for (int n = 1; n <= 9; ++n) {
      std::set<std::uint64_t> sizes = {0, 1, 7, static_cast<std::uint64_t>(n - 1), static_cast<std::uint64_t>(n + 1),
                                       1024 * 1024 + 3};
      std::vector<int> ks = {0};  // 0: no k parameter
      if (v.grouped) {
        ks.clear();
        for (int k = 1; k <= n; ++k) {
          if (n % k == 0) ks.push_back(k);
        }
      }
      for (std::uint64_t elements : sizes) {
        for (int k : ks) {
          PredictRequest q;
          q.topology = &t;
          q.bytes = 4.0 * static_cast<double>(elements);
          q.strategy = &find_strategy(v.strategy);
          auto params = v.params;
          if (k > 0) params.push_back("k=" + std::to_string(k));
          q.params = SyncParams::parse(params);
          q.placement = first_gpus(t, n);
          const Schedule s = build_schedule(q).schedule;
          const SymbolicResult r = check_schedule(s);
          ASSERT_TRUE(r.ok) << v.strategy << " " << ::testing::PrintToString(params) << " N=" << n
                            << " elements=" << elements << ": " << r.message;
          ++checked;
        }
      }
    }
  }
  std::printf("symbolic sweep: %d schedules proved correct\n", checked);
}

TEST(ScheduleSweep, WireBytesOfTheClassicSchedules) {
  // Source C: ring traffic per worker stays just under 2 x model size; PS moves 2·N·size in total.
  const Topology& t = machine();
  const std::uint64_t elements = 9 * 1000;
  const double S = 4.0 * elements;
  for (int n : {2, 3, 9}) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = S;
    q.placement = first_gpus(t, n);
    q.strategy = &find_strategy("ring");
    const auto ring = check_schedule(build_schedule(q).schedule);
    EXPECT_DOUBLE_EQ(static_cast<double>(ring.bytes_on_wire) / n, 2.0 * (n - 1) / n * S);
    q.strategy = &find_strategy("ps");
    const auto ps = check_schedule(build_schedule(q).schedule);
    EXPECT_DOUBLE_EQ(static_cast<double>(ps.bytes_on_wire), 2.0 * n * S);
    // 1-bit: one bit per value plus two 4-byte scales per column (1024 values without a workload).
    q.strategy = &find_strategy("onebit");
    const auto onebit = check_schedule(build_schedule(q).schedule);
    EXPECT_LT(onebit.bytes_on_wire * 20, ring.bytes_on_wire);
    EXPECT_GT(onebit.bytes_on_wire * 40, ring.bytes_on_wire);
  }
}

TEST(ScheduleSweep, SamplingSendsOnlyTheChosenRows) {
  const Topology& t = machine();
  const Workload w = *workload_preset("source-a-ffnn-lm");
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.placement = first_gpus(t, 4);
  q.strategy = &find_strategy("sampled");
  q.params = SyncParams::parse({"inner=ring"});
  const Schedule s = build_schedule(q).schedule;
  const auto r = check_schedule(s);
  ASSERT_TRUE(r.ok) << r.message;
  // The hidden layer goes whole; of the 2 x 49,036 vocabulary rows, alpha 5 % + beta 1 % +
  // each rank's minibatch words: well under a tenth of the bytes of a full ring.
  const double full_ring = 2.0 * 3 / 4 * w.gradient_bytes() * 4;
  EXPECT_LT(static_cast<double>(r.bytes_on_wire), full_ring / 5);
  EXPECT_GT(static_cast<double>(r.bytes_on_wire), 2.0 * 3 / 4 * 4 * 4'195'328 * 4);  // at least the hidden layer
}
