#include "models/strategies/strategy_context.h"

#include "models/topology/ring_order.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "models/support/error.h"
#include "models/support/units.h"
#include "models/topology/hardware.h"

namespace gradsync::models {
namespace {
constexpr double kDefaultGpuReduceGBps = 100.0;
}

double StrategyContext::slowest_rank_pair_Bps() const {
  double bw = std::numeric_limits<double>::infinity();
  for (std::size_t i : placement.ranks) {
    for (std::size_t j : placement.ranks) {
      if (i != j) bw = std::min(bw, topology.bottleneck_Bps(i, j));
    }
  }
  return bw;
}

double StrategyContext::largest_rank_pair_latency_s() const {
  double lat = 0;
  for (std::size_t i : placement.ranks) {
    for (std::size_t j : placement.ranks) {
      if (i != j) lat = std::max(lat, topology.latency_s(i, j));
    }
  }
  return lat;
}

std::size_t StrategyContext::server_node() const {
  std::size_t node = 0;
  if (placement.server) {
    node = *placement.server;
  } else {
    std::string spec = params.text("server");
    if (spec == "auto") spec = topology.host_memories().empty() ? "rank0" : "host";
    node = resolve_server(topology, placement, spec, "--param server");
  }
  resolved_as("server", topology.node(node).id);
  return node;
}

double StrategyContext::server_Bps() const {
  const std::size_t s = server_node();
  double bw = std::numeric_limits<double>::infinity();
  for (std::size_t r : placement.ranks) {
    if (r == s) continue;
    bw = std::min({bw, topology.bottleneck_Bps(r, s), topology.bottleneck_Bps(s, r)});
  }
  return bw;
}

double StrategyContext::server_latency_s() const {
  const std::size_t s = server_node();
  double lat = 0;
  for (std::size_t r : placement.ranks) {
    if (r != s) lat = std::max({lat, topology.latency_s(r, s), topology.latency_s(s, r)});
  }
  return lat;
}

double StrategyContext::gpu_reduce_s_per_byte() const {
  if (!params.is_auto("reduce_GBps")) {
    resolved_as("reduce_GBps", params.text("reduce_GBps"));
    return 1.0 / GBps_to_Bps(params.number("reduce_GBps"));
  }
  // auto: 2/3 of the slowest measured device-local copy rate among the ranks' GPUs.
  double Bps = GBps_to_Bps(kDefaultGpuReduceGBps);
  const auto& m = topology.measured();
  if (m && m->device_local_Bps) {
    double local = std::numeric_limits<double>::infinity();
    for (std::size_t r : placement.ranks) {
      const auto& id = topology.node(r).id;
      for (std::size_t i = 0; i < m->gpus.size(); ++i) {
        if (m->gpus[i] == id) local = std::min(local, (*m->device_local_Bps)[i]);
      }
    }
    if (std::isfinite(local)) Bps = local * 2.0 / 3.0 / colocation_slowdown(false);
  }
  resolved_as("reduce_GBps", number_text(Bps_to_GBps(Bps), 4));
  return 1.0 / Bps;
}

double StrategyContext::gpu_copy_Bps() const {
  const auto& m = topology.measured();
  double Bps = std::numeric_limits<double>::infinity();
  for (std::size_t r : placement.ranks) {
    double rank = 0;
    if (m && m->device_local_Bps) {
      for (std::size_t i = 0; i < m->gpus.size(); ++i) {
        if (m->gpus[i] == topology.node(r).id) rank = (*m->device_local_Bps)[i] / 2.0;
      }
    }
    if (rank <= 0) {
      const hardware::GpuModel* g = hardware::find_gpu_model(topology.node(r).facts.gpu_model);
      if (!g) g = hardware::gpu_model_of(topology.description());
      if (g) rank = GBps_to_Bps(g->memory_GBps) / 2.0;
    }
    if (rank <= 0) return 0.0;
    Bps = std::min(Bps, rank);
  }
  return std::isfinite(Bps) ? Bps : 0.0;
}

double StrategyContext::colocation_slowdown(bool quantize) const {
  const auto& m = topology.measured();
  if (!m || !m->ranks_at_once || placement.ranks.empty()) return 1.0;
  const auto& rates = quantize ? m->ranks_at_once->quantize_Bps : m->ranks_at_once->copy_Bps;
  const std::size_t k = std::min(placement.ranks.size(), rates.size());
  return rates.front() / rates[k - 1];
}

double StrategyContext::reduce_s_per_byte_at(std::size_t node) const {
  if (topology.node(node).kind == NodeKind::host_memory) {
    return 1.0 / GBps_to_Bps(params.number("host_reduce_GBps"));
  }
  return gpu_reduce_s_per_byte();
}

double StrategyContext::server_reduce_s_per_byte() const { return reduce_s_per_byte_at(server_node()); }

std::int64_t StrategyContext::samples_per_minibatch() const {
  if (workload && workload->samples_per_minibatch) return *workload->samples_per_minibatch;
  return 64;
}

std::size_t parent_switch(const Topology& t, std::size_t gpu) {
  std::optional<std::size_t> best;
  double best_bw = -1;
  for (std::size_t link : t.incident_links(gpu)) {
    const Link& l = t.links()[link];
    const std::size_t other = l.a == gpu ? l.b : l.a;
    if (!forwards_traffic(t.node(other).kind)) continue;
    if (l.bandwidth_Bps > best_bw) {
      best_bw = l.bandwidth_Bps;
      best = other;
    }
  }
  return best ? *best : gpu;
}

int StrategyContext::groups() const {
  const int k = choose_groups();
  resolved_as("k", std::to_string(k));
  return k;
}

int StrategyContext::choose_groups() const {
  if (params.is_auto("k")) return groups_by_switch(topology, placement.ranks);
  const long k = params.integer("k");
  if (k > N()) {
    throw InputError("--param k=" + std::to_string(k) + ": expected at most N = " + std::to_string(N()) + " groups");
  }
  if (N() % k != 0) {
    throw InputError("--param k=" + std::to_string(k) + ": N = " + std::to_string(N()) +
                     " GPUs cannot be split into " + std::to_string(k) + " equal groups; expected k to divide N");
  }
  return static_cast<int>(k);
}

formulas::CostInputs StrategyContext::rank_inputs() const {
  formulas::CostInputs in;
  in.N = N();
  in.S = bytes();
  const double bw = slowest_rank_pair_Bps();
  in.B = std::isfinite(bw) ? bw : std::numeric_limits<double>::max();  // one rank: B never matters
  in.a = largest_rank_pair_latency_s();
  in.C = gpu_reduce_s_per_byte();
  return in;
}

formulas::CostInputs StrategyContext::server_inputs() const {
  formulas::CostInputs in;
  in.N = N();
  in.S = bytes();
  const double bw = server_Bps();
  in.B = std::isfinite(bw) ? bw : std::numeric_limits<double>::max();  // the only rank is the server
  in.a = server_latency_s();
  in.C = gpu_reduce_s_per_byte();
  in.C_server = server_reduce_s_per_byte();
  return in;
}

formulas::CostInputs StrategyContext::combined_inputs() const {
  formulas::CostInputs in = server_inputs();
  const formulas::CostInputs ranks = rank_inputs();
  in.B = std::min(in.B, ranks.B);
  in.a = std::max(in.a, ranks.a);
  return in;
}

}  // namespace gradsync::models
