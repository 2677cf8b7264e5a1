#include "sim/platform.h"

#include "models/support/error.h"

namespace gradsync::sim {

namespace s4u = simgrid::s4u;

void set_network_model(s4u::Engine& engine, const std::string& model) {
  if (model != "CM02" && model != "LV08") {
    throw models::InputError("--network-model " + model + ": expected CM02 or LV08");
  }
  engine.set_config("network/model:" + model);
  // A transfer between a node and itself (a server on its rank's GPU) is a local copy, which
  // the schedules charge as local work; the analytic model gives it no link time
  // (models/topology/contention.h), and neither does the simulator: SimGrid's implicit loopback link
  // would otherwise run it at 10 GB/s.
  engine.set_config("network/loopback-bw:1e18");
  if (model == "CM02") {
    // No TCP-window cap and no cross-traffic: a lone flow gets latency + size / bandwidth.
    engine.set_config("network/crosstraffic:0");
    engine.set_config("network/TCP-gamma:0");
  }
}

void keep_transfer_rates(s4u::Engine& engine, const std::string& model) {
  if (model == "CM02") engine.set_config("network/TCP-gamma:1e30");
}

Platform build_platform(const models::Topology& t, const std::vector<std::pair<std::size_t, std::size_t>>& pairs,
                        const std::map<std::size_t, int>& cores, bool with_latency,
                        const std::vector<std::array<std::size_t, 4>>& through) {
  s4u::NetZone* zone = s4u::create_full_zone("gradsync");
  Platform platform;
  for (std::size_t i = 0; i < t.node_count(); ++i) {
    const auto kind = t.node(i).kind;
    // GPUs and host memories, and any other node a participant runs on (an NVSwitch that
    // reduces, as NVLS has it).
    if (kind == models::NodeKind::gpu || kind == models::NodeKind::host_memory || cores.count(i) > 0) {
      platform.hosts[i] = zone->create_host(t.node(i).id, kHostSpeed);
      if (auto c = cores.find(i); c != cores.end()) platform.hosts[i]->set_core_count(c->second);
    }
  }
  // One SimGrid link per topology link; a full-duplex link whose directions interfere gets
  // a second, shared link in series that both directions cross (2 x bandwidth x share).
  std::vector<s4u::Link*> links(t.links().size(), nullptr);
  std::vector<s4u::Link*> both_ways(t.links().size(), nullptr);
  for (std::size_t l = 0; l < t.links().size(); ++l) {
    const models::Link& link = t.links()[l];
    const std::string name = "link" + std::to_string(l) + ":" + t.node(link.a).id + "--" + t.node(link.b).id;
    const double latency = with_latency ? link.latency_s : 0.0;
    if (link.full_duplex) {
      links[l] = zone->create_split_duplex_link(name, link.bandwidth_Bps)->set_latency(latency);
    } else {
      links[l] = zone->create_link(name, link.bandwidth_Bps)
                     ->set_latency(latency)
                     ->set_sharing_policy(s4u::Link::SharingPolicy::SHARED);
    }
    links[l]->seal();
    if (link.full_duplex && link.duplex_share < 1) {
      both_ways[l] = zone->create_link(name + ":both-ways", 2 * link.bandwidth_Bps * link.duplex_share)
                         ->set_latency(0)
                         ->set_sharing_policy(s4u::Link::SharingPolicy::SHARED);
      both_ways[l]->seal();
    }
  }
  auto add_route = [&](s4u::Host* from, s4u::Host* to, const models::Route& hops) {
    std::vector<s4u::LinkInRoute> route;
    for (const models::Hop& h : hops) {
      const bool split = t.links()[h.link].full_duplex;
      route.emplace_back(links[h.link], split ? (h.forward ? s4u::LinkInRoute::Direction::UP
                                                           : s4u::LinkInRoute::Direction::DOWN)
                                              : s4u::LinkInRoute::Direction::NONE);
      if (both_ways[h.link]) route.emplace_back(both_ways[h.link]);
    }
    zone->add_route(from->get_netpoint(), to->get_netpoint(), nullptr, nullptr, route, false);
  };
  auto add = [&](std::size_t a, std::size_t b) { add_route(platform.hosts.at(a), platform.hosts.at(b), t.route(a, b)); };
  if (pairs.empty()) {
    for (const auto& [a, ha] : platform.hosts) {
      for (const auto& [b, hb] : platform.hosts) {
        if (a != b) add(a, b);
      }
    }
  } else {
    for (const auto& [a, b] : pairs) {
      if (a != b) add(a, b);
    }
  }
  for (const auto& [a, first, second, b] : through) {
    s4u::Host*& from = platform.through[{a, first, second}];
    if (from == nullptr) {
      std::string name = t.node(a).id + " via";
      for (const std::size_t v : {first, second}) {
        if (v != models::Topology::npos) name += " " + t.node(v).id;
      }
      from = zone->create_host(name, kHostSpeed);
    }
    add_route(from, platform.hosts.at(b), t.route_through(a, first, second, b));
  }
  zone->seal();
  return platform;
}

}  // namespace gradsync::sim
