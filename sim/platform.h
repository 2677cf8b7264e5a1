// A SimGrid platform built in code from a Topology, with exactly the routes the model
// uses: the same links (full-duplex links become split-duplex links, one direction
// each; half-duplex links are shared), bandwidths and latencies.
//
// Only endpoints that can run an actor — GPUs and host memories — become SimGrid hosts;
// switches are implicit in the explicit routes of a "full" zone. Routes are added for
// the ordered endpoint pairs asked for (a schedule knows which pairs talk), so that
// large topologies do not pay for N² routes.
#pragma once

#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "models/topology/topology.h"

namespace gradsync::sim {

// "CM02" (bandwidth and latency exactly as given: closed forms hold) or "LV08"
// (SimGrid's default TCP model: latency x 13.01, bandwidth x 0.97).
void set_network_model(simgrid::s4u::Engine& engine, const std::string& model);
// With CM02's TCP window off (gamma 0), SimGrid drops a transfer's own rate (Comm::set_rate: an
// engine's Op::max_Bps, a copy staged through host memory) wherever its route has latency; a
// boundless window keeps it. Every flow then carries a bound, which slows the solver (the
// 1,024-GPU recommend bench by a fifth), so only simulations whose capped transfers cross links
// with latency call it, before the platform is built.
void keep_transfer_rates(simgrid::s4u::Engine& engine, const std::string& model);

struct Platform {
  std::unordered_map<std::size_t, simgrid::s4u::Host*> hosts;  // topology node -> host
  simgrid::s4u::Host* host(std::size_t node) const { return hosts.at(node); }
  // A transfer routed through chosen nodes (Op::via) leaves from a host of its own at the
  // sender's node, whose routes pass through them: (sender node, first, second) -> that host.
  std::map<std::array<std::size_t, 3>, simgrid::s4u::Host*> through;
};

// Endpoint host speed: actors compute by executing seconds x kHostSpeed flops.
inline constexpr double kHostSpeed = 1e9;

// `pairs` lists the ordered (source, destination) node pairs that need a route; empty
// means every ordered pair of endpoints.
// `cores` gives hosts more cores than 1 (several actors on one host compute without
// slowing each other down).
// `with_latency` false: links without latency (a schedule that charges latency itself).
// `through`: (sender node, first, second, receiver node) of the transfers routed through chosen
// nodes (Topology::route_through; npos: none), each given a host at the sender's node
// (Platform::through) and a route from it to the receiver.
Platform build_platform(const models::Topology& topology,
                        const std::vector<std::pair<std::size_t, std::size_t>>& pairs = {},
                        const std::map<std::size_t, int>& cores = {}, bool with_latency = true,
                        const std::vector<std::array<std::size_t, 4>>& through = {});

}  // namespace gradsync::sim
