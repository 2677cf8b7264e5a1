// The SimGrid executor: CM02 reproduces the analytic executor where links are not shared
// unevenly, captures contention the analytic model ignores, runs training loops with
// stragglers and asynchronous servers, writes timelines; golden values pin a few runs.
#include <gtest/gtest.h>


#include "models/analytic.h"
#include "models/predict.h"
#include "models/topology_io.h"
#include "sim/simulator.h"
#include "support/topologies.h"

using namespace gradsync;
using namespace gradsync::models;

namespace {

constexpr double kB = 10e9, kA = 4e-6, kC = 1.0 / 50e9;

using test_topologies::full_mesh;
using test_topologies::star;

const Topology& source_a() {
  static const Topology t =
      std::move(load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json").topology);
  return t;
}

struct Built {
  Schedule schedule;
  std::vector<LocalCosts> reduce;
};

Built build(const Topology& t, const std::string& strategy, int n, double bytes, std::vector<std::string> params) {
  PredictRequest q;
  q.topology = &t;
  q.bytes = bytes;
  q.strategy = &find_strategy(strategy);
  params.push_back("reduce_GBps=50");
  q.params = SyncParams::parse(params);
  q.placement = first_gpus(t, n);
  BuiltSchedule built = build_schedule(q);
  auto reduce = participant_costs(built.schedule);
  return Built{std::move(built.schedule), std::move(reduce)};
}

sim::SimResult one_sync(const Topology& t, const Built& run, const std::string& model = "CM02") {
  sim::SimOptions o;
  o.network.name = model;
  o.sync_every_step = true;
  o.costs = run.reduce;
  return sim::simulate(t, run.schedule, o);
}

double analytic(const Topology& t, const Built& run) { return run_analytic(t, run.schedule, run.reduce, 0).sync_s; }

void expect_close(double a, double b) { EXPECT_NEAR(a, b, 1e-7 * b + 1e-9); }

}  // namespace

TEST(Simulator, Cm02EqualsTheAnalyticModelWhereLinksAreSharedEvenly) {
  for (int n : {2, 3, 4, 6}) {
    const double S = 4.0 * n * 50'000;
    const Topology mesh = full_mesh(n);
    const Built ring = build(mesh, "ring", n, S, {"ring_order=given"});
    expect_close(one_sync(mesh, ring).first_sync_s, analytic(mesh, ring));
    const Topology st = star(n);
    const Built ps = build(st, "ps", n, S, {"server=host"});
    expect_close(one_sync(st, ps).first_sync_s, analytic(st, ps));  // incast: n equal flows share the host link
    const Built ring_star = build(st, "ring", n, S, {"ring_order=given"});
    expect_close(one_sync(st, ring_star).first_sync_s, analytic(st, ring_star));
  }
  const Topology mesh = full_mesh(6);
  const Built h = build(mesh, "hierarchical", 6, 4.0 * 6 * 1000, {"ring_order=given", "grouping=order", "k=2"});
  const auto sim = one_sync(mesh, h);
  expect_close(sim.first_sync_s, analytic(mesh, h));
  // The per-phase breakdown adds up to the synchronisation.
  double sum = 0;
  for (const auto& p : sim.phases) sum += p.seconds;
  expect_close(sum, sim.first_sync_s);
  // Source A's machine: the ring crossing each uplink once per direction.
  const Built a = build(source_a(), "ring", 4, 64.0 * 1024 * 1024, {"ring_order=given"});
  expect_close(one_sync(source_a(), a).first_sync_s, analytic(source_a(), a));
}

TEST(Simulator, ATransferBetweenANodeAndItselfTakesNoLinkTime) {
  // A server on rank 0's GPU: rank 0's exchange with it is a local copy in both models
  // (SimGrid's implicit loopback link would run it at 10 GB/s).
  for (int n : {1, 2, 3}) {
    const Topology mesh = full_mesh(n);
    const Built ps = build(mesh, "ps", n, 4.0 * 1'000'000, {"server=rank0"});
    expect_close(one_sync(mesh, ps).first_sync_s, analytic(mesh, ps));
  }
}

TEST(Simulator, CapturesBandwidthFreedWhenAFlowEnds) {
  // gpu0 -> gpu2 sends 1 MB while gpu1 -> gpu3 sends 4 MB, both up switch A's 4.46 GB/s
  // uplink. The analytic model gives both half the link for the whole round (the 4 MB
  // flow takes 8 MB / B); in the simulation the 4 MB flow gets the whole link once the
  // 1 MB one is done (2 MB / B + 3 MB / B).
  const Topology& t = source_a();
  Schedule s;
  s.strategy = "two-flows";
  s.workers = 4;
  s.gradient_bytes = 4'000'000;
  for (const char* id : {"gpu0", "gpu1", "gpu2", "gpu3"}) s.participants.push_back({Role::worker, *t.find(id)});
  s.rounds.push_back(Round{"share", "", [](int p, std::vector<Op>& out) {
                             if (p == 0) out.push_back(Op::send(2, Slice{0, 1'000'000}));
                             if (p == 1) out.push_back(Op::send(3, Slice{0, 4'000'000}));
                             if (p == 2) out.push_back(Op::recv(0, Slice{0, 1'000'000}));
                             if (p == 3) out.push_back(Op::recv(1, Slice{0, 4'000'000}));
                           }});
  s.expected = {{Slice{0, 4'000'000}, false, true, {}}};
  const std::vector<LocalCosts> reduce(4, LocalCosts{0, 0});
  const double latency = t.route_latency_s(*t.find("gpu1"), *t.find("gpu3"));
  const double B = 4.46e9;
  EXPECT_NEAR(run_analytic(t, s, reduce, 0).sync_s, latency + 8e6 / B, 1e-12);
  sim::SimOptions o;
  o.sync_every_step = true;
  o.costs = reduce;
  EXPECT_NEAR(sim::simulate(t, s, o).first_sync_s, latency + 5e6 / B, 1e-8);
}

TEST(Simulator, TrainingLoopWithAStraggler) {
  const Topology& t = source_a();
  const Built ring = build(t, "ring", 4, 64.0 * 1024 * 1024, {"ring_order=given"});
  const double sync = one_sync(t, ring).first_sync_s;
  sim::SimOptions o;
  o.steps = 10;
  o.compute_s = 0.02;
  o.costs = ring.reduce;
  expect_close(sim::simulate(t, ring.schedule, o).total_s, 10 * (0.02 + sync));
  // One GPU at half speed: every step waits for it.
  o.speeds = {1, 1, 0.5, 1};
  expect_close(sim::simulate(t, ring.schedule, o).total_s, 10 * (0.04 + sync));
}

TEST(Simulator, AsynchronousServerStalenessAndThroughput) {
  const Topology& t = source_a();
  const Built downpour = build(t, "downpour", 4, 16.0 * 1024 * 1024, {"step=2"});
  sim::SimOptions o;
  o.steps = 40;
  o.compute_s = 0.01;
  o.costs = downpour.reduce;
  const auto even = sim::simulate(t, downpour.schedule, o);
  EXPECT_EQ(even.updates, 4u * 20u);  // every worker pushes every 2 of its 40 steps
  EXPECT_LE(even.max_staleness(), 3u);  // at most the other three workers' updates
  std::uint64_t counted = 0;
  for (auto c : even.staleness_histogram) counted += c;
  EXPECT_EQ(counted, even.updates);
  // A straggler at quarter speed: the others push several times between its pull and push.
  o.speeds = {1, 1, 1, 0.25};
  const auto straggler = sim::simulate(t, downpour.schedule, o);
  EXPECT_GT(straggler.max_staleness(), 3u);
  // Deterministic for a seed; the jitter changes with it.
  o.jitter_cv = 0.2;
  o.seed = 3;
  const auto a = sim::simulate(t, downpour.schedule, o);
  const auto b = sim::simulate(t, downpour.schedule, o);
  EXPECT_EQ(a.total_s, b.total_s);
  EXPECT_EQ(a.staleness_histogram, b.staleness_histogram);
  o.seed = 4;
  EXPECT_NE(sim::simulate(t, downpour.schedule, o).total_s, a.total_s);
}

TEST(Simulator, TimelineHasEveryKindOfSlice) {
  const Topology& t = source_a();
  const Built ps = build(t, "ps", 4, 4.0e6, {});
  sim::SimOptions o;
  o.steps = 2;
  o.compute_s = 0.001;
  o.costs = ps.reduce;
  o.trace = true;
  const auto r = sim::simulate(t, ps.schedule, o);
  ASSERT_TRUE(r.trace);
  std::set<std::string> categories;
  std::set<int> participants;
  for (const auto& e : r.trace->events()) {
    categories.insert(e.category);
    participants.insert(e.participant);
    EXPECT_GE(e.end_s, e.start_s);
    EXPECT_LE(e.end_s, r.total_s + 1e-12);
  }
  EXPECT_EQ(categories, (std::set<std::string>{"compute", "send", "recv", "reduce"}));
  EXPECT_EQ(participants.size(), 5u);  // four ranks and the server
  const auto json = r.trace->to_json();
  EXPECT_TRUE(json.contains("traceEvents"));
}

// Ring, 64 MiB on 4 GPUs: 6 x (4 us + 16.78 MB / 4.46 GB/s) + 3 x 16.78 MB / 50 GB/s.
constexpr double GOLDEN_RING_CM02 = 0.0236008786999;
// LV08: latency x 13.01 and bandwidth x 0.97 (and its TCP window).
constexpr double GOLDEN_RING_LV08 = 0.0245871675372;
// PS-HRA and hierarchical, 16 MiB, k = 2 (one group per switch), server in host memory.
constexpr double GOLDEN_PS_HRA_CM02 = 0.0225342625083;
constexpr double GOLDEN_HIERARCHICAL_CM02 = 0.00974119019835;

TEST(Simulator, GoldenTimes) {
  // Pinned simulated times (seconds). A change here is a change in the simulator or the
  // schedules: check it is meant, then update the numbers.
  const Topology& t = source_a();
  const Built ring = build(t, "ring", 4, 64.0 * 1024 * 1024, {"ring_order=given"});
  EXPECT_NEAR(one_sync(t, ring).first_sync_s, GOLDEN_RING_CM02, 1e-9);
  EXPECT_NEAR(one_sync(t, ring, "LV08").first_sync_s, GOLDEN_RING_LV08, 1e-9);
  const Built ps_hra = build(t, "ps_hra", 4, 16.0 * 1024 * 1024, {});
  EXPECT_NEAR(one_sync(t, ps_hra).first_sync_s, GOLDEN_PS_HRA_CM02, 1e-9);
  const Built h = build(t, "hierarchical", 4, 16.0 * 1024 * 1024, {});
  EXPECT_NEAR(one_sync(t, h).first_sync_s, GOLDEN_HIERARCHICAL_CM02, 1e-9);
}
