// gradsync-bench: speed figures of the models (a benchmark, not a test: it reports,
// it does not assert). Targets from the schedule issue: >= 1e6 formula evaluations per
// second; the analytic executor on a 1024-rank ring in <= 0.1 s; a 4096-rank ring too.
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "models/analytic.h"
#include "models/formulas.h"
#include "models/predict.h"
#include "models/topology_io.h"
#include "models/uniform_topologies.h"
#include "sim/simulator.h"
#include <sys/resource.h>

using namespace gradsync::models;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A two-level tree: `switches` PCIe switches of `per_switch` GPUs under one root.
Topology tree(int switches, int per_switch) {
  TreeSpec s;
  s.name = "tree-" + std::to_string(switches * per_switch);
  s.switches = switches;
  s.per_switch = per_switch;
  s.gpu_link = {12.5, 1};
  s.uplink = {12.5, 1};
  return tree_topology(s);
}

void bench_formulas() {
  const int n = 5'000'000;
  double sink = 0;
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    const formulas::CostInputs in{4 + (i & 63) * 4, 1e8 + i, 1e10, 1e-6, 1e-11, 4};
    switch (i & 3) {
      case 0: sink += formulas::parameter_server(in).total(); break;
      case 1: sink += formulas::ring_allreduce(in).total(); break;
      case 2: sink += formulas::hierarchical_allreduce(in).total(); break;
      default: sink += formulas::ps_hra(in).total(); break;
    }
  }
  const double t = seconds_since(start);
  std::printf("formula evaluations:        %.2e per second (%d evaluations in %.3f s; target >= 1e6/s)   [checksum %.3g]\n",
              n / t, n, t, sink);
}

// The default strategy (models/strategy.h) in rank order: an order search over a thousand
// ranks would be timed instead of the executor.
SyncParams rank_order_params(const Strategy& s) {
  return declares(s, "ring_order") ? SyncParams::parse({"ring_order=given"}) : SyncParams{};
}

// Transfers in a schedule (sends of every participant in every round).
std::size_t transfers(const Schedule& s) {
  std::size_t n = 0;
  std::vector<Op> ops;
  for (const auto& round : s.rounds) {
    for (int p = 0; p < s.participant_count(); ++p) {
      ops.clear();
      round.ops(p, ops);
      for (const Op& op : ops) n += op.kind == OpKind::send ? 1 : 0;
    }
  }
  return n;
}

// The default strategy on every GPU of `t`, 64 Mi values.
PredictRequest request_on(const Topology& t) {
  PredictRequest q;
  q.topology = &t;
  q.bytes = 4.0 * 64 * 1024 * 1024;
  q.strategy = &default_strategy();
  q.params = rank_order_params(*q.strategy);
  q.placement = first_gpus(t, static_cast<int>(t.gpus().size()));
  return q;
}

void bench_ring(int switches, int per_switch, double target_s) {
  const int n = switches * per_switch;
  const auto t0 = Clock::now();
  const Topology t = tree(switches, per_switch);
  const double topology_s = seconds_since(t0);
  const PredictRequest q = request_on(t);
  const auto t1 = Clock::now();
  const ResultRecord r = predict(q);
  const double analytic_s = seconds_since(t1);
  std::printf("analytic %4d-rank %s:     %.3f s (schedule: %zu rounds; topology build %.3f s; predicted sync %.1f ms, busbw %.2f GB/s)%s\n",
              n, q.strategy->name.c_str(), analytic_s, build_schedule(q).schedule.rounds.size(), topology_s, 1e3 * r.time_per_sync_s,
              r.busbw_GBps().value_or(0), target_s > 0 ? (analytic_s <= target_s ? "  target <= 0.1 s: met" : "  target <= 0.1 s: MISSED") : "");
}

double baseline_mb = 0;  // peak memory of the smallest simulation

void bench_sim_ring(int switches, int per_switch) {
  const int n = switches * per_switch;
  const Topology t = tree(switches, per_switch);
  const PredictRequest q = request_on(t);
  const BuiltSchedule built = build_schedule(q);
  gradsync::sim::SimOptions o;
  o.steps = 1;
  o.sync_every_step = true;
  o.costs.assign(static_cast<std::size_t>(built.schedule.participant_count()), gradsync::models::LocalCosts{1e-11, 1e-11});
  const auto start = Clock::now();
  const auto r = gradsync::sim::simulate(t, built.schedule, o);
  const double wall = seconds_since(start);
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  const double peak_mb = usage.ru_maxrss / 1024.0;
  if (baseline_mb == 0) baseline_mb = peak_mb;
  std::printf("simulated %4d-rank %s:    %.2f s wall (%.2f s inside SimGrid; %zu transfers; simulated %.1f ms; peak memory "
              "%.0f MB, %.0f KB per actor above the 8-rank run)\n",
              n, q.strategy->name.c_str(), wall, r.wall_s, transfers(built.schedule), 1e3 * r.first_sync_s, peak_mb,
              n > 8 ? (peak_mb - baseline_mb) * 1024 / (n - 8) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  if (only != "" && only != "models" && only != "sim") {
    std::fprintf(stderr, "usage: gradsync-bench [models|sim]\n");
    return 2;
  }
  if (only != "sim") {
    std::printf("gradsync-bench: models\n");
    bench_formulas();
    bench_ring(64, 16, 0.1);
    bench_ring(256, 16, 0);
  }
  if (only != "models") {
    std::printf("gradsync-bench: simulator (two-level trees of 16-GPU switches; target: 1024 ranks <= 5 s)\n");
    for (auto [switches, per] : std::vector<std::pair<int, int>>{{1, 8}, {4, 16}, {16, 16}, {64, 16}}) bench_sim_ring(switches, per);
  }
  return 0;
}
