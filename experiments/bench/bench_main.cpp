// gradsync-bench: speed figures of the models (a benchmark, not a test: it reports, it
// does not assert). Targets (issue 16): >= 1e6 formula evaluations per second; the analytic
// executor on a 1024-rank ring in <= 10 ms, 65,536 ranks in <= 5 s within 2 GB; the
// simulator on a 1024-rank ring >= 5x faster than a plain SimGrid simulation of the same
// schedule on the same platform (one actor per rank, one put per transfer) and <= 5 s,
// 4096 ranks <= 60 s; ring and hierarchical on the shipped 8,192-GPU cluster <= 1 s together;
// gradsync recommend on the shipped 1,024-GPU cluster (every strategy, k, ring order,
// placement, the best three simulated) within a minute.
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "experiments/experiment.h"
#include "experiments/recommend.h"
#include "models/executors/analytic.h"
#include "models/strategies/formulas.h"
#include "models/executors/predict.h"
#include "models/schedule/symbolic.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include "models/support/process.h"
#include "sim/platform.h"
#include "sim/simulator.h"

#include <CLI/CLI.hpp>
#include <simgrid/s4u.hpp>
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

// The default strategy (models/strategies/strategy.h) in rank order: an order search over a thousand
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

double peak_rss_MB() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

const char* verdict(bool met) { return met ? "met" : "MISSED"; }

void bench_ring(int switches, int per_switch, double target_s) {
  const int n = switches * per_switch;
  const auto t0 = Clock::now();
  const Topology t = tree(switches, per_switch);
  const double topology_s = seconds_since(t0);
  const PredictRequest q = request_on(t);
  const auto t1 = Clock::now();
  const ResultRecord r = predict(q);
  const double analytic_s = seconds_since(t1);
  char target[64] = "";
  if (target_s > 0) std::snprintf(target, sizeof target, "  target <= %g s: %s", target_s, verdict(analytic_s <= target_s));
  std::printf("analytic %5d-rank %s:    %.4f s (schedule: %zu rounds; topology build %.3f s; predicted sync %.1f ms, busbw "
              "%.2f GB/s; peak memory %.0f MB)%s\n",
              n, q.strategy->name.c_str(), analytic_s, build_schedule(q).schedule.rounds.size(), topology_s,
              1e3 * r.time_per_sync_s, r.busbw_GBps().value_or(0), peak_rss_MB(), target);
}

// Ring and hierarchical all-reduce (their default parameters: the ring order and groups
// gradsync picks) on a shipped cluster, 64 Mi values; the file is read first, untimed.
// The symbolic checker on the ring's schedule (rank order) over a star of `ranks` GPUs.
void bench_symbolic(int ranks, std::uint64_t elements, double target_s) {
  const Topology t = flat_topology(ranks);
  PredictRequest q;
  q.topology = &t;
  q.bytes = 4.0 * static_cast<double>(elements);
  q.strategy = &find_strategy("ring");
  q.params = SyncParams::parse({"ring_order=given"});
  q.placement = first_gpus(t, ranks);
  const Schedule s = build_schedule(q).schedule;
  const auto start = Clock::now();
  const SymbolicResult r = check_schedule(s);
  const double took = seconds_since(start);
  std::printf("symbolic check %4d-rank ring, %llu floats: %.3f s (%zu rounds, %s)  target <= %g s: %s\n", ranks,
              static_cast<unsigned long long>(elements), took, s.rounds.size(), r.ok ? "proved" : "NOT PROVED", target_s,
              verdict(r.ok && took <= target_s));
}

void bench_cluster(const std::string& name, double target_s) {
  const auto t0 = Clock::now();
  const LoadedTopology loaded = load_topology_file(resolve_topology_path(name));
  const double read_s = seconds_since(t0);
  const Topology& t = loaded.topology;
  double total = 0;
  std::string each;
  for (const char* strategy : {"ring", "hierarchical"}) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = 4.0 * 64 * 1024 * 1024;
    q.strategy = &find_strategy(strategy);
    q.placement = first_gpus(t, static_cast<int>(t.gpus().size()));
    const auto start = Clock::now();
    const ResultRecord r = predict(q);
    const double s = seconds_since(start);
    total += s;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s %.3f s (sync %.2f ms)", each.empty() ? "" : ", ", strategy, s, 1e3 * r.time_per_sync_s);
    each += buf;
  }
  std::printf("analytic %zu GPUs of %s: ring + hierarchical %.3f s (%s; loading it %.2f s; peak memory %.0f MB)  "
              "target <= %g s: %s\n",
              t.gpus().size(), name.c_str(), total, each.c_str(), read_s, peak_rss_MB(), target_s, verdict(total <= target_s));
}

// What `gradsync recommend --topology NAME --gpus N` does (the default workload), timed.
void bench_recommend(const std::string& name, int gpus, double target_s) {
  gradsync::experiments::Experiment e;
  e.topology = name;
  e.workload = "source-a-ffnn-lm";
  e.gpus = {gpus};
  const auto t0 = Clock::now();
  const gradsync::experiments::Plan plan = gradsync::experiments::make_plan(e);
  const auto r = gradsync::experiments::recommend(plan, {});
  const double s = seconds_since(t0);
  const auto& best = r.ranked.front();
  std::printf("recommend %d GPUs of %s: %.1f s (%zu candidates predicted, the best 3 simulated; best: %s %s; peak "
              "memory %.0f MB)  target <= %g s: %s\n",
              gpus, name.c_str(), s, r.evaluated, best.name().c_str(), best.params_text().c_str(), peak_rss_MB(), target_s,
              verdict(s <= target_s));
}

namespace s4u = simgrid::s4u;

// A plain SimGrid simulation of the same schedule on the same platform, to measure the
// simulator against: one actor per rank; in each round one put per transfer and one get
// per receive, started together (a ring's send and receive overlap) and waited for, then
// the round's local work; no jumps, no timing records. Returns the simulated time, the
// wall time and the peak memory of its process.
struct BaselineResult {
  double simulated_s = 0, wall_s = 0, peak_MB = 0;
};
BaselineResult plain_simgrid(const Topology& t, const Schedule& s, const std::vector<LocalCosts>& costs) {
  const std::string text = run_in_child(
      [&] {
        std::vector<std::string> args = {"plain-simgrid", "--log=root.thres:critical"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        int argc = static_cast<int>(argv.size());
        argv.push_back(nullptr);
        s4u::Engine engine(&argc, argv.data());
        gradsync::sim::set_network_model(engine, "CM02");
        const auto platform = gradsync::sim::build_platform(t);
        static int payload = 0;
        for (int p = 0; p < s.participant_count(); ++p) {
          s4u::Host* host = platform.host(s.participants[static_cast<std::size_t>(p)].node);
          s4u::Actor::create("rank" + std::to_string(p), host, [&s, &costs, p] {
            std::vector<Op> ops;
            for (const Round& round : s.rounds) {
              ops.clear();
              round.ops(p, ops);
              std::vector<s4u::CommPtr> comms;
              std::vector<int*> got(ops.size(), nullptr);
              double local = 0;
              for (std::size_t i = 0; i < ops.size(); ++i) {
                const Op& op = ops[i];
                local += op.local_seconds(costs[static_cast<std::size_t>(p)]);
                if (op.kind == OpKind::send) {
                  auto* box = s4u::Mailbox::by_name(std::to_string(p) + ">" + std::to_string(op.peer));
                  comms.push_back(box->put_async(&payload, static_cast<std::uint64_t>(op.link_bytes())));
                } else if (op.is_transfer()) {
                  auto* box = s4u::Mailbox::by_name(std::to_string(op.peer) + ">" + std::to_string(p));
                  comms.push_back(box->get_async<int>(&got[i]));
                }
              }
              if (!comms.empty()) s4u::Comm::wait_all(comms);
              if (local > 0) s4u::this_actor::execute(local * gradsync::sim::kHostSpeed);
            }
          });
        }
        const auto start = Clock::now();
        engine.run();
        const double wall = seconds_since(start);
        return std::to_string(s4u::Engine::get_clock()) + " " + std::to_string(wall) + " " + std::to_string(peak_rss_MB());
      },
      "the plain SimGrid baseline");
  BaselineResult r;
  std::istringstream in(text);
  in >> r.simulated_s >> r.wall_s >> r.peak_MB;
  return r;
}

double smallest_peak_MB = 0;  // peak memory of the smallest simulation (the per-actor figure's base)

void bench_sim_ring(int switches, int per_switch, bool baseline) {
  const int n = switches * per_switch;
  const Topology t = tree(switches, per_switch);
  const PredictRequest q = request_on(t);
  const BuiltSchedule built = build_schedule(q);
  gradsync::sim::SimOptions o;
  o.steps = 1;
  o.sync_every_step = true;
  o.costs = participant_costs(built.schedule);
  const auto start = Clock::now();
  const auto r = gradsync::sim::simulate(t, built.schedule, o);
  const double wall = seconds_since(start);
  if (smallest_peak_MB == 0) smallest_peak_MB = r.peak_rss_MB;
  const double per_actor_KB = n > 8 ? (r.peak_rss_MB - smallest_peak_MB) * 1024 / (n - 8) : 0.0;
  std::printf("simulated %5d-rank %s:   %6.2f s wall (%zu transfers, %llu of %zu rounds jumped%s; simulated %.3f ms; peak "
              "memory %.0f MB, %.1f KB per actor above the 8-rank run)",
              n, q.strategy->name.c_str(), wall, transfers(built.schedule),
              static_cast<unsigned long long>(r.rounds_fast_forwarded), built.schedule.rounds.size(),
              r.fast_forward_exact ? "" : ", NOT exact", 1e3 * r.first_sync_s, r.peak_rss_MB, per_actor_KB);
  if (n == 1024) std::printf("  target <= 5 s: %s", verdict(wall <= 5));
  if (n == 4096) std::printf("  target <= 60 s: %s", verdict(wall <= 60));
  std::printf("\n");
  if (!baseline) return;
  const BaselineResult b = plain_simgrid(t, built.schedule, o.costs);
  const double ratio = b.wall_s / wall;
  std::printf("  plain SimGrid, same schedule and platform: %6.2f s wall (simulated %.3f ms, %+.2e relative to ours; "
              "peak memory %.0f MB): ours %.1fx faster%s\n",
              b.wall_s, 1e3 * b.simulated_s, r.first_sync_s > 0 ? b.simulated_s / r.first_sync_s - 1 : 0.0, b.peak_MB, ratio,
              n == 1024 ? (ratio >= 5 ? "  target >= 5x: met" : "  target >= 5x: MISSED") : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gradsync-bench: speed of the models, the simulator and recommend at scale, each against its target "
               "(speed targets live here, never in the tests). With no part named: models, then sim."};
  std::string only;
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"models", "formulas and the analytic executor, up to 65,536 ranks and the 8,192-GPU cluster"},
      {"sim", "the simulator and a plain SimGrid baseline, up to 1,024 ranks"},
      {"sim-4096", "the simulator on 4,096 ranks (no baseline: minutes)"},
      {"recommend-1024", "gradsync recommend on the 1,024-GPU cluster (half a minute)"}};
  for (const auto& [name, help] : parts) {
    app.add_subcommand(name, help)->callback([&only, name = name] { only = name; });
  }
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (only == "" || only == "models") {
    std::printf("gradsync-bench: models\n");
    bench_formulas();
    bench_symbolic(9, (1u << 20) + 3, 1);
    bench_symbolic(64, 4096 + 5, 2);
    bench_ring(64, 16, 0.01);
    bench_ring(256, 16, 0);
    bench_ring(4096, 16, 5);
    bench_cluster("cluster-8192gpu-nvswitch-rail", 1);
  }
  if (only == "" || only == "sim") {
    std::printf("gradsync-bench: simulator (two-level trees of 16-GPU switches), against plain SimGrid at 64 and 1024\n");
    for (auto [switches, per] : std::vector<std::pair<int, int>>{{1, 8}, {4, 16}, {16, 16}, {64, 16}}) {
      bench_sim_ring(switches, per, switches * per == 64 || switches * per == 1024);
    }
  }
  if (only == "recommend-1024") {
    std::printf("gradsync-bench: recommend at 1024 GPUs\n");
    bench_recommend("cluster-1024gpu-fat-tree-2to1", 1024, 60);
  }
  if (only == "sim-4096") {
    std::printf("gradsync-bench: simulator, 4096 ranks\n");
    bench_sim_ring(1, 8, false);
    bench_sim_ring(256, 16, false);
  }
  return 0;
}
