// The analytic executor against the papers' closed forms: equal on uniform topologies
// (ring and hierarchical on a full mesh; PS and ring on a star), with the documented
// differences where the uniform assumption does not hold (server incast on a mesh,
// broadcast through one uplink on a star), and link sharing the closed forms ignore.
#include <gtest/gtest.h>


#include "models/strategies/formulas.h"
#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/topology/topology_io.h"
#include "models/support/units.h"
#include "support/topologies.h"
#include "support/workloads.h"

using namespace gradsync::models;

namespace {

constexpr double kB = 10e9;  // link bandwidth
constexpr double kA = 4e-6;  // pair latency
constexpr double kReduceGBps = 50;  // C = 1 / 50 GB/s
constexpr double kC = 1.0 / 50e9;

Topology full_mesh(int n) { return test_topologies::full_mesh(n, kB / 1e9, kA * 1e6); }
Topology star(int n) { return test_topologies::star(n, kB / 1e9, kA * 1e6); }

ResultRecord run(const Topology& t, const std::string& strategy, int n, double bytes,
                 std::vector<std::string> params, const std::string& executor = "analytic") {
  PredictRequest q;
  q.topology = &t;
  q.bytes = bytes;
  q.strategy = &find_strategy(strategy);
  params.push_back("reduce_GBps=" + std::to_string(kReduceGBps));
  q.params = SyncParams::parse(params);
  q.placement = first_gpus(t, n);
  return find_executor(executor).evaluate(q, ExecutorSettings{});
}

void expect_same(double analytic, double formula) { EXPECT_NEAR(analytic, formula, 1e-12 * formula + 1e-15); }

}  // namespace

TEST(Analytic, RingEqualsTheClosedFormOnAFullMesh) {
  for (int n : {2, 3, 4, 6, 8}) {
    const Topology t = full_mesh(n);
    const double S = 4.0 * n * 25'000;  // blocks of equal size
    const auto r = run(t, "ring", n, S, {"ring_order=given"});
    expect_same(r.time_per_sync_s, formulas::ring_allreduce({n, S, kB, kA, kC}).total());
    EXPECT_EQ(r.phases.size(), 3u);
  }
}

// Recursive halving-doubling on a full mesh: every exchange has its own link, so each step
// costs a + its bytes / B. Derived here from Thakur, Rabenseifner & Gropp (2005), P the
// largest power of two <= N: 2 lg P latencies, 2 (P-1)/P x S over the links, (P-1)/P x S
// reduced; N > P adds the folding in (S sent and reduced) and out (S sent).
TEST(Analytic, HalvingDoublingEqualsItsClosedFormOnAFullMesh) {
  for (int n : {2, 3, 4, 5, 6, 7, 8}) {
    const Topology t = full_mesh(n);
    int P = 1, steps = 0;
    while (P * 2 <= n) {
      P *= 2;
      ++steps;
    }
    const double S = 4.0 * 8 * 25'000;  // blocks of equal size for any P <= 8
    double expected = 2 * steps * kA + 2.0 * (P - 1) / P * S / kB + (P - 1.0) / P * S * kC;
    if (n > P) expected += 2 * (kA + S / kB) + S * kC;
    const auto r = run(t, "halving_doubling", n, S, {});
    expect_same(r.time_per_sync_s, expected);
    expect_same(run(t, "halving_doubling", n, S, {}, "formula").time_per_sync_s, expected);
  }
}

TEST(Analytic, HierarchicalEqualsTheClosedFormOnAFullMesh) {
  for (auto [n, k] : std::vector<std::pair<int, int>>{{4, 2}, {6, 2}, {6, 3}, {8, 2}, {8, 4}}) {
    const Topology t = full_mesh(n);
    const double S = 4.0 * n * 3'000;
    const auto r = run(t, "hierarchical", n, S, {"ring_order=given", "grouping=order", "k=" + std::to_string(k)});
    expect_same(r.time_per_sync_s, formulas::hierarchical_allreduce({n, S, kB, kA, kC, k}).total());
    // The formula executor agrees with itself on the same inputs.
    const auto f = run(t, "hierarchical", n, S, {"ring_order=given", "grouping=order", "k=" + std::to_string(k)}, "formula");
    expect_same(f.time_per_sync_s, r.time_per_sync_s);
  }
}

TEST(Analytic, PsAndRingEqualTheClosedFormOnAStar) {
  for (int n : {1, 2, 4, 7}) {
    const Topology t = star(n);
    const double S = 4.0 * n * 10'000;
    // Host memory sums at host_reduce_GBps (C_server); the N flows share the server's one link.
    const auto ps = run(t, "ps", n, S, {"server=host", "host_reduce_GBps=5"});
    formulas::CostInputs in{n, S, kB, kA, kC, 1, 1.0 / 5e9};
    expect_same(ps.time_per_sync_s, formulas::parameter_server(in).total());
    const auto ring = run(t, "ring", n, S, {"ring_order=given"});
    expect_same(ring.time_per_sync_s, formulas::ring_allreduce({n, S, kB, kA, kC}).total());
  }
}

TEST(Analytic, DocumentedDifferencesFromTheClosedForms) {
  // PS with the server on rank 0's GPU of a full mesh: N-1 gradients arrive over N-1
  // separate links (no incast), and rank 0's own is local, so it beats 2(a + N·S/B) + N·S·C.
  const int n = 4;
  const double S = 4.0e6;
  const auto mesh_ps = run(full_mesh(n), "ps", n, S, {"server=rank0"});
  const double transfers = 2 * (kA + S / kB);
  EXPECT_NEAR(mesh_ps.time_per_sync_s, transfers + n * S * kC, 1e-12);
  EXPECT_LT(mesh_ps.time_per_sync_s, formulas::parameter_server({n, S, kB, kA, kC}).total());
  // Hierarchical on a star: a representative broadcasts to its m-1 group members over
  // its single link, (m-1)·S/B instead of the formula's S/B.
  const int k = 2, m = n / k;
  const auto star_h = run(star(n), "hierarchical", n, S, {"ring_order=given", "grouping=order", "k=2"});
  const double formula = formulas::hierarchical_allreduce({n, S, kB, kA, kC, k}).total();
  EXPECT_NEAR(star_h.time_per_sync_s, formula - (kA + S / kB) + (kA + (m - 1) * S / kB), 1e-12);
}

TEST(Analytic, SourceARingIsBoundedByTheCrossSwitchLink) {
  const auto loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  const Topology& t = loaded.topology;
  const double S = 4.0 * 4 * 1'000'000, N = 4;
  const double a = 4e-6;  // four links of 1 us (latency not measured)
  const double reduce = (N - 1) * (S / N) * kC;
  // Ring 0,1,2,3 crosses the inter-switch links once per direction: each step runs at 4.46 GB/s.
  const auto good = run(t, "ring", 4, S, {"ring_order=given"});
  EXPECT_NEAR(good.time_per_sync_s, 2 * (N - 1) * (a + S / (N * 4.46e9)) + reduce, 1e-12);
  // Ring 0,2,1,3 crosses them twice per direction: two flows share each, 2.23 GB/s.
  const auto bad = run(t, "ring", 4, S, {"ring_order=0,2,1,3"});
  EXPECT_NEAR(bad.time_per_sync_s, 2 * (N - 1) * (a + S / (N * 2.23e9)) + reduce, 1e-12);
  // auto finds the good order.
  EXPECT_NEAR(run(t, "ring", 4, S, {}).time_per_sync_s, good.time_per_sync_s, 1e-15);
}

TEST(Analytic, NamesTheLinkThatBoundsTheSynchronisation) {
  const auto loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  const Topology& t = loaded.topology;
  const double S = 16e6;
  // The ring's transfer rounds all run at the 4.46 GB/s of a switch uplink: its rounds' transfer
  // time, i.e. the whole synchronisation less the reductions, goes to one uplink.
  const auto ring = run(t, "ring", 4, S, {"ring_order=given"});
  ASSERT_FALSE(ring.bounding_links.empty());
  EXPECT_NE(ring.bounding_links.front().first.find("(4.46 GB/s)"), std::string::npos) << ring.bounding_links.front().first;
  EXPECT_NE(ring.bounding_links.front().first.find("root"), std::string::npos) << ring.bounding_links.front().first;
  const double reduce = 3 * (S / 4) * kC;
  EXPECT_NEAR(ring.bounding_links.front().second, ring.time_per_sync_s - reduce, 1e-12);
  // Two GPUs on one switch: the GPU's own 5.96 GB/s link bounds it, no uplink is used.
  const auto pair = run(t, "ring", 2, S, {});
  ASSERT_FALSE(pair.bounding_links.empty());
  EXPECT_NE(pair.bounding_links.front().first.find("(5.96 GB/s)"), std::string::npos) << pair.bounding_links.front().first;
  // On a star with equal links every flow crosses two links, both shared alike: the first hop
  // on the route is named, and the bounded time never exceeds the synchronisation.
  const auto ps = run(star(4), "ps", 4, S, {"server=gpu0"});
  double bounded = 0;
  for (const auto& [link, seconds] : ps.bounding_links) bounded += seconds;
  EXPECT_LE(bounded, ps.time_per_sync_s * (1 + 1e-12));
  EXPECT_GT(bounded, 0);
}

TEST(Analytic, PeriodicAndAsynchronousStrategies) {
  const auto loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  const Topology& t = loaded.topology;
  const Workload w = *workload_preset("source-a-ffnn-lm");
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.placement = first_gpus(t, 4);
  // Model averaging every T steps: iteration = compute + (one ring all-reduce) / T.
  q.strategy = &find_strategy("model_avg");
  q.params = SyncParams::parse({"T=10", "ring_order=given"});
  const auto ma = predict(q);
  q.strategy = &find_strategy("ring");
  q.params = SyncParams::parse({"ring_order=given"});
  const auto ring = predict(q);
  const double average = w.gradient_bytes() / 100e9;  // dividing the sum by N, once per sync
  EXPECT_NEAR(ma.time_per_sync_s, ring.time_per_sync_s + average, 1e-12);
  EXPECT_NEAR(*ma.time_per_iteration_s, w.compute_s() + ma.time_per_sync_s / 10, 1e-12);
  EXPECT_EQ(ma.period_steps, 10);
  // Downpour with 4 workers pushing 419 MB each through host memory's 4.46 GB/s link
  // every 2 steps: the server's link is the bound.
  q.strategy = &find_strategy("downpour");
  q.params = SyncParams::parse({"step=2"});
  const auto busy = predict(q);
  EXPECT_TRUE(busy.asynchronous);
  const double one_way = 4 * w.gradient_bytes() / 4.46e9;  // four pushes through one link
  EXPECT_GT(*busy.time_per_iteration_s * 2, 2 * one_way);
  // With one step of compute per hour, the workers are the bound: iteration ≈ compute.
  q.params = SyncParams::parse({"step=1000000"});
  const auto idle = predict(q);
  EXPECT_NEAR(*idle.time_per_iteration_s, w.compute_s(), w.compute_s() * 1e-3);
}

// --overlap: each bucket synchronised by the ring beside the backward pass. On a full mesh the
// ring's time is its closed form, so the step's timeline can be drawn by hand from it: the
// oracle is the closed form and the timeline of the bucket times, not the executor.
TEST(Analytic, OverlappedBucketsOnTheClosedFormsTimeline) {
  const int n = 4;
  const Topology t = full_mesh(n);
  // Three layers, 1.6 MB each (fp32; blocks of equal size for the ring), a bucket each;
  // backward 2 ms a layer: the ring's 1.6 MB take about 0.5 ms, so only the last is exposed.
  const Workload w = test_workloads::three_layers();
  const double S = 1.6e6;
  const double sync = formulas::ring_allreduce({n, S, kB, kA, kC}).total();
  ASSERT_LT(sync, 0.002);
  for (const std::string executor : {"formula", "analytic"}) {
    PredictRequest q;
    q.topology = &t;
    q.workload = &w;
    q.strategy = &find_strategy("ring");
    q.params = SyncParams::parse({"ring_order=given", "reduce_GBps=" + std::to_string(kReduceGBps)});
    q.placement = first_gpus(t, n);
    OverlapSettings o;
    o.first_bucket_bytes = 1e6;
    o.bucket_cap_bytes = 1e6;
    q.overlap = o;
    const ResultRecord r = find_executor(executor).evaluate(q, ExecutorSettings{});
    ASSERT_TRUE(r.overlap) << executor;
    EXPECT_EQ(r.overlap->buckets, 3) << executor;
    EXPECT_NEAR(*r.time_per_iteration_s, 0.003 + 0.006 + sync, 1e-9) << executor;
    EXPECT_NEAR(r.overlap->exposed_s, sync, 1e-9) << executor;
    EXPECT_NEAR(r.overlap->bucket_sync_s, 3 * sync, 1e-9) << executor;
    // Unoverlapped: compute, then the whole 4.8 MB gradient's ring.
    EXPECT_NEAR(r.overlap->iteration_without_s, 0.009 + formulas::ring_allreduce({n, 3 * S, kB, kA, kC}).total(), 1e-9) << executor;
  }
  // A strategy that synchronises every T steps is not overlapped, and says so.
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.strategy = &find_strategy("model_avg");
  q.params = SyncParams::parse({"T=10"});
  q.placement = first_gpus(t, n);
  q.overlap = OverlapSettings{};
  const ResultRecord ma = predict(q);
  EXPECT_FALSE(ma.overlap);
  EXPECT_NEAR(*ma.time_per_iteration_s, 0.009 + ma.time_per_sync_s / 10, 1e-12);
  EXPECT_NE(std::find_if(ma.notes.begin(), ma.notes.end(), [](const std::string& s) { return s.rfind("not overlapped: ", 0) == 0; }),
            ma.notes.end());
  // Even with T = 1: what it averages is the model after the optimizer step, which the backward
  // pass cannot overlap.
  q.params = SyncParams::parse({"T=1"});
  const ResultRecord every_step = predict(q);
  EXPECT_FALSE(every_step.overlap);
  EXPECT_NEAR(*every_step.time_per_iteration_s, 0.009 + every_step.time_per_sync_s, 1e-12);
}

// A transfer its engine moves slower than the links allow (Op::max_Bps: NCCL's channels) is
// bounded by no link: its time is the engine's, and the record carries it (engine_bound_s), in
// JSON too. The plain ring has no engine limit: no such time.
TEST(Analytic, TimeAtTheTransfersOwnRateIsNoLinksTime) {
  const auto loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/cluster-128gpu-nvswitch-rail.json");
  const Topology& t = loaded.topology;
  const auto nccl = run(t, "nccl", 2, 256.0 * 1024 * 1024, {});
  // Besides its transfers, a ring's reduction on one host copies a block within each GPU.
  double copy_s = 0;
  for (const auto& ph : nccl.phases) copy_s += ph.name == "copy within the GPU" ? ph.seconds : 0.0;
  EXPECT_GT(copy_s, 0.0);
  EXPECT_GT(nccl.engine_bound_s, 0.9 * (nccl.time_per_sync_s - copy_s));
  EXPECT_LE(nccl.engine_bound_s, nccl.time_per_sync_s * (1 + 1e-12));
  double links = 0;
  for (const auto& [link, seconds] : nccl.bounding_links) links += seconds;
  EXPECT_LE(links + nccl.engine_bound_s, nccl.time_per_sync_s * (1 + 1e-12));
  const ResultRecord back = record_from_json(to_json(nccl));
  EXPECT_DOUBLE_EQ(back.engine_bound_s, nccl.engine_bound_s);
  const auto ring = run(t, "ring", 2, 256.0 * 1024 * 1024, {});
  EXPECT_EQ(ring.engine_bound_s, 0.0);
  EXPECT_FALSE(ring.bounding_links.empty());
}
