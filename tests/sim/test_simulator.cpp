// The SimGrid executor: CM02 reproduces the analytic executor where links are not shared
// unevenly, captures contention the analytic model ignores, runs training loops with
// stragglers and asynchronous servers, writes timelines; golden times derived by hand
// pin a few runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "models/executors/analytic.h"
#include "models/executors/executor.h"
#include "models/strategies/formulas.h"
#include "models/executors/predict.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology_io.h"
#include "sim/simulator.h"
#include "support/nccl_planner.h"
#include "support/topologies.h"
#include "support/workloads.h"

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
  for (const char* id : {"gpu0", "gpu1", "gpu2", "gpu3"}) s.participants.push_back({Role::worker, *t.find(id), {}});
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

TEST(Simulator, StepsBetweenSynchronisationsRunAsOneComputationWithoutATrace) {
  // Without a trace the steps of a period are one computation of their summed time; with
  // one, each step is its own (the timeline shows them). Both give the same times, with a
  // straggler and jitter drawn per step.
  const Topology& t = source_a();
  const Built bmuf = build(t, "bmuf", 4, 16.0 * 1024 * 1024, {"T=8"});
  sim::SimOptions o;
  o.steps = 20;  // two periods and four steps more
  o.compute_s = 0.01;
  o.costs = bmuf.reduce;
  o.speeds = {1, 1, 0.5, 1};
  o.jitter_cv = 0.3;
  o.seed = 5;
  const auto merged = sim::simulate(t, bmuf.schedule, o);
  o.trace = true;
  const auto stepped = sim::simulate(t, bmuf.schedule, o);
  EXPECT_EQ(merged.syncs, 2);
  EXPECT_EQ(stepped.syncs, 2);
  expect_close(merged.total_s, stepped.total_s);
  expect_close(merged.first_sync_s, stepped.first_sync_s);
  expect_close(merged.compute_busy_s, stepped.compute_busy_s);
  std::size_t steps = 0;
  for (const auto& e : stepped.trace->events()) steps += e.category == "compute";
  EXPECT_EQ(steps, 4u * 20u);
  // The trailing steps after the last synchronisation count: more time than two periods.
  EXPECT_GT(merged.total_s, stepped.first_sync_s + 16 * 0.01);
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

// ---------------------------------------------------------------------------------------
// Golden times, derived by hand from the inputs (the topology file, the schedules, the
// reduction rates and SimGrid's network models), not recorded from a run.

namespace {

// Source A's machine as topologies/source-a-titanx-4gpu.json gives it (matrix form): gpu0
// and gpu1 behind one switch, gpu2 and gpu3 behind another; 5.96 GB/s within a switch, 4.46
// GB/s across, 4.46 GB/s to and from host memory; no latency measured.
// models/topology/matrix_inference.cpp explains the matrix by a tree: gpu -- switch links at the
// within-switch figure, switch -- root links at the across figure, root -- host at the
// host figure, every link full duplex with 1 us of latency (InferenceOptions::
// default_link_latency_s, used when no latency was measured). Hence:
//   a pair within a switch crosses 2 links: 2 us, 5.96 GB/s;
//   a pair across switches crosses 4 links: 4 us, bottleneck 4.46 GB/s (the uplinks);
//   a GPU and the host cross 3 links: 3 us, bottleneck 4.46 GB/s; the two switches'
//   routes to the host share one link, root -- host.
struct SourceAFigures {
  double within_Bps = 0, across_Bps = 0, host_Bps = 0;
  double link_s = 1e-6;
  double within_s() const { return 2 * link_s; }
  double across_s() const { return 4 * link_s; }
  double host_s() const { return 3 * link_s; }
};

SourceAFigures source_a_figures() {
  std::ifstream in(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  const auto doc = nlohmann::json::parse(in);
  const auto& bw = doc.at("bandwidth_GBps");
  SourceAFigures f;
  f.within_Bps = bw[0][1].get<double>() * 1e9;
  f.across_Bps = bw[0][2].get<double>() * 1e9;
  f.host_Bps = doc.at("host_to_device_GBps")[0].get<double>() * 1e9;
  // The derivation below takes the matrix to be this uniform: check it is.
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      if (i == j) continue;
      EXPECT_EQ(bw[i][j].get<double>() * 1e9, i / 2 == j / 2 ? f.within_Bps : f.across_Bps) << i << "," << j;
    }
    EXPECT_EQ(doc.at("host_to_device_GBps")[i].get<double>() * 1e9, f.host_Bps);
    EXPECT_EQ(doc.at("device_to_host_GBps")[i].get<double>() * 1e9, f.host_Bps);
  }
  EXPECT_TRUE(doc.at("latency_us").is_null());
  EXPECT_TRUE(doc.at("bidirectional_GBps").is_null());  // no duplex interference
  return f;
}

// Precondition: the loaded topology is the tree the derivation assumes (a failure here
// points at the importer, not at the simulator).
void expect_tree(const Topology& t, const SourceAFigures& f) {
  const std::size_t g0 = *t.find("gpu0"), g1 = *t.find("gpu1"), g2 = *t.find("gpu2");
  ASSERT_EQ(t.host_memories().size(), 1u);
  const std::size_t host = t.host_memories()[0];
  EXPECT_EQ(t.route(g0, g1).size(), 2u);
  EXPECT_EQ(t.route(g0, g2).size(), 4u);
  EXPECT_EQ(t.route(g0, host).size(), 3u);
  EXPECT_EQ(t.route_bottleneck_Bps(g0, g1), f.within_Bps);
  EXPECT_EQ(t.route_bottleneck_Bps(g0, g2), f.across_Bps);
  EXPECT_EQ(t.route_bottleneck_Bps(host, g0), std::min({f.within_Bps, f.across_Bps, f.host_Bps}));
  for (const Link& l : t.links()) {
    EXPECT_EQ(l.latency_s, f.link_s);
    EXPECT_TRUE(l.full_duplex);
    EXPECT_EQ(l.duplex_share, 1.0);
  }
}

constexpr double kReduceBps = 50e9;  // reduce_GBps=50, set by build()
constexpr double kHostReduceBps = 10e9;  // host_reduce_GBps=10, passed to ps_hra below

// SimGrid 3.32's LV08 model (src/surf/network_cm02.cpp, src/kernel/resource/NetworkModel.cpp):
// a flow pays latency_factor x its route's latency, then moves at bandwidth_factor x its
// max-min share, its share bounded by min(the route's slowest link, TCP-gamma / (2 x the
// route's latency, unscaled)).
constexpr double kLv08LatencyFactor = 13.01, kLv08BandwidthFactor = 0.97;
constexpr double kTcpGammaBytes = 4194304;  // network/TCP-gamma default

}  // namespace

TEST(Simulator, GoldenTimes) {
  const Topology& t = source_a();
  const SourceAFigures f = source_a_figures();
  expect_tree(t, f);

  // Ring all-reduce, 64 MiB on the 4 GPUs in rank order (ring_order=given): blocks of
  // b = S/4 bytes, 3 reduce-scatter rounds then 3 all-gather rounds. In a round every
  // rank sends a block to the next rank and receives one from the previous; the four
  // flows use distinct link directions (gpu1->gpu2 goes up switch 0's uplink and down
  // switch 1's, gpu3->gpu0 the other way round), so no two share a link and each moves
  // at its route's bottleneck. CM02: a flow takes latency + size / bandwidth. Every rank
  // has one across-switch flow (gpu0 receives from gpu3, gpu1 sends to gpu2, gpu2
  // receives from gpu1, gpu3 sends to gpu0) and waits for its send and its receive, so
  // all ranks end a round together, after 4 us + b / 4.46 GB/s. A reduce-scatter round
  // then adds the received block (b / 50 GB/s); an all-gather round only overwrites.
  //   6 x (4 us + b / 4.46 GB/s) + 3 x b / 50 GB/s
  const double S_ring = 64.0 * 1024 * 1024, b = S_ring / 4;
  const double ring_cm02 = 6 * (f.across_s() + b / f.across_Bps) + 3 * b / kReduceBps;
  // LV08, same rounds: latency x 13.01; TCP-gamma / (2 x 4 us) = 524 GB/s does not bind,
  // so an across-switch flow moves at 0.97 x 4.46 GB/s (within-switch flows stay faster:
  // 26 us + b / 5.78 GB/s). weight-S only changes how competing flows share, and none
  // compete. LV08's cross-traffic (5 % of a flow charged on its reverse route) adds
  // nothing: sim/platform.cpp declares routes only for the pairs that talk, and in a
  // 4-rank ring no pair talks both ways, so SimGrid finds no reverse route.
  //   6 x (13.01 x 4 us + b / (0.97 x 4.46 GB/s)) + 3 x b / 50 GB/s
  const double lv08_rate = kLv08BandwidthFactor * std::min(f.across_Bps, kTcpGammaBytes / (2 * f.across_s()));
  const double ring_lv08 = 6 * (kLv08LatencyFactor * f.across_s() + b / lv08_rate) + 3 * b / kReduceBps;
  const Built ring = build(t, "ring", 4, S_ring, {"ring_order=given"});
  EXPECT_NEAR(one_sync(t, ring).first_sync_s, ring_cm02, 1e-9);
  EXPECT_NEAR(one_sync(t, ring, "LV08").first_sync_s, ring_lv08, 1e-9);

  // Hierarchical, 16 MiB, k = auto: one group per switch, {gpu0 gpu1} and {gpu2 gpu3},
  // one member of each its representative. With 2 members a ring round is an exchange of
  // h = S/2 bytes both ways over the same links (full duplex: no sharing), the two groups
  // on disjoint links:
  //   group reduce-scatter:  2 us + h / 5.96 GB/s + h / 50 GB/s (reduce)
  //   group all-gather:      2 us + h / 5.96 GB/s
  //   representatives' ring: 2 x (4 us + h / 4.46 GB/s) + h / 50 GB/s (reduce-scatter's)
  //   broadcast of S bytes to the other member: 2 us + S / 5.96 GB/s
  // (the other members wait in the broadcast while the representatives exchange).
  const double S = 16.0 * 1024 * 1024, h = S / 2;
  const double groups = 2 * (f.within_s() + h / f.within_Bps) + h / kReduceBps;  // group all-reduce
  const double broadcast = f.within_s() + S / f.within_Bps;
  const double hierarchical = groups + 2 * (f.across_s() + h / f.across_Bps) + h / kReduceBps + broadcast;
  const Built hier = build(t, "hierarchical", 4, S, {});
  EXPECT_NEAR(one_sync(t, hier).first_sync_s, hierarchical, 1e-9);

  // PS-HRA, 16 MiB, k = auto (as above), server in host memory (server=auto: the topology
  // has one), summing at 10 GB/s. After the group all-reduce both representatives push
  // S bytes to the server at the same moment. Their routes share only root -- host
  // (4.46 GB/s, the routes' slowest link); CM02 weighs flows by their route latency, 3 us
  // for both, so max-min splits that link evenly and both pushes end together:
  //   push: 3 us + 2S / 4.46 GB/s
  // The server has one handler per representative; the two sum one update at a time (a
  // mutex), S / 10 GB/s each, and each handler sends its pull as soon as its sum is done:
  // the first pull starts d = S / 10 GB/s after the pushes end, the second 2d after.
  // Both pulls cross host -> root (4.46 GB/s, their only shared link and bottleneck). The
  // second starts moving bytes d after the first, before the first would be done alone
  // (d < S / 4.46 GB/s), so from the first pull's first byte on, host -> root is busy at
  // full rate until both pulls' 2S bytes are through:
  //   pulls: d + 3 us + 2S / 4.46 GB/s after the pushes end (the second representative)
  // That representative then broadcasts to its group member: 2 us + S / 5.96 GB/s.
  const double d = S / kHostReduceBps;
  // The premises: root -- host is the pushes' and pulls' bottleneck, and the second pull
  // starts before the first would end alone.
  ASSERT_LE(f.host_Bps, std::min(f.across_Bps, f.within_Bps));
  ASSERT_LT(d, S / f.host_Bps);
  const double push = f.host_s() + 2 * S / f.host_Bps;
  const double pulls = d + f.host_s() + 2 * S / f.host_Bps;
  const double ps_hra = groups + push + pulls + broadcast;
  const Built hra = build(t, "ps_hra", 4, S, {"host_reduce_GBps=10"});
  EXPECT_NEAR(one_sync(t, hra).first_sync_s, ps_hra, 1e-9);
}

// --overlap in the simulator: each bucket's ring simulated, on the step's timeline. On a full
// mesh the ring's time is its closed form (10 GB/s links, 4 us, reduction at 50 GB/s), so the
// timeline can be drawn by hand: three 1.6 MB buckets, 2 ms of backward each, the last exposed.
TEST(Simulator, OverlappedBucketsOnTheClosedFormsTimeline) {
  const int n = 4;
  const Topology t = full_mesh(n);
  const Workload w = test_workloads::three_layers();
  const double sync = formulas::ring_allreduce({n, 1.6e6, 10e9, 4e-6, 1.0 / 50e9}).total();
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.strategy = &find_strategy("ring");
  q.params = SyncParams::parse({"ring_order=given", "reduce_GBps=50"});
  q.placement = first_gpus(t, n);
  OverlapSettings o;
  o.first_bucket_bytes = 1e6;
  o.bucket_cap_bytes = 1e6;
  q.overlap = o;
  const ResultRecord r = find_executor("sim").evaluate(q, ExecutorSettings{});
  ASSERT_TRUE(r.overlap);
  EXPECT_EQ(r.overlap->buckets, 3);
  EXPECT_NEAR(*r.time_per_iteration_s, 0.009 + sync, 1e-8);
  EXPECT_NEAR(r.overlap->exposed_s, sync, 1e-8);
}

TEST(Simulator, EfaAdaptersListedOneByOneRunAsTheirDevicesRails) {
  // 32 EFA adapters a host, 4 beside each GPU: aws-ofi-nccl stripes each transfer over a
  // device's four, each a link of its own here; they move what 8 NICs of 4 ports do.
  const Topology adapters = test_nccl_planner::stated_hosts(32, 1, 12.5, "efa"), ported = test_nccl_planner::stated_hosts(8, 4, 12.5, "efa");
  for (const char* collective : {"all_reduce", "alltoall"}) {
    const Built a = build(adapters, "nccl", 16, 64.0 * 1048576, {std::string("collective=") + collective});
    const Built p = build(ported, "nccl", 16, 64.0 * 1048576, {std::string("collective=") + collective});
    const double at = one_sync(adapters, a).first_sync_s, pt = one_sync(ported, p).first_sync_s;
    EXPECT_NEAR(at, pt, 0.02 * pt) << collective;
  }
}
