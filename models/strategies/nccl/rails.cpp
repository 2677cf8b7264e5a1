#include "models/strategies/nccl/rails.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/topology/topology.h"

namespace gradsync::models::nccl {

namespace {

// Whether two nodes hang off a common node (a GPU and a NIC under one PCIe switch).
bool neighbours_share(const Topology& t, std::size_t a, std::size_t b) {
  for (std::size_t la : t.incident_links(a)) {
    const std::size_t x = t.links()[la].a == a ? t.links()[la].b : t.links()[la].a;
    for (std::size_t lb : t.incident_links(b)) {
      if ((t.links()[lb].a == b ? t.links()[lb].b : t.links()[lb].a) == x) return true;
    }
  }
  return false;
}

struct RailMap {
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> rails;  // a device's first adapter -> its rails
  std::vector<std::vector<std::int32_t>> devices;                       // per host: its devices of several rails, by their first
  std::vector<int> host, local;  // per rank: its host, and its device there (-1: none beside it)
};

}  // namespace

void stripe_over_rails(Schedule& s, const StrategyContext& ctx, const Plan& plan) {
  auto map = std::make_shared<RailMap>();
  for (const auto& host : plan.host_nics) {
    std::vector<std::int32_t>& firsts = map->devices.emplace_back();
    for (const std::vector<std::size_t>& device : host) {
      if (device.size() < 2) continue;
      std::vector<std::int32_t>& r = map->rails[static_cast<std::int32_t>(device.front())];
      for (std::size_t nic : device) r.push_back(static_cast<std::int32_t>(nic));
      firsts.push_back(static_cast<std::int32_t>(device.front()));
    }
  }
  if (map->rails.empty()) return;
  // Each rank's device: the one whose adapters share its PCIe switch.
  const int n = ctx.N();
  map->host.assign(static_cast<std::size_t>(n), -1);
  map->local.assign(static_cast<std::size_t>(n), -1);
  for (int r = 0; r < n && static_cast<std::size_t>(r) < plan.rank_host.size(); ++r) {
    const int h = plan.rank_host[static_cast<std::size_t>(r)];
    map->host[static_cast<std::size_t>(r)] = h;
    if (h < 0 || static_cast<std::size_t>(h) >= map->devices.size()) continue;
    const std::vector<std::int32_t>& firsts = map->devices[static_cast<std::size_t>(h)];
    for (std::size_t d = 0; d < firsts.size() && map->local[static_cast<std::size_t>(r)] < 0; ++d) {
      for (std::int32_t nic : map->rails[firsts[d]]) {
        if (neighbours_share(ctx.topology, ctx.placement.ranks[static_cast<std::size_t>(r)], static_cast<std::size_t>(nic))) {
          map->local[static_cast<std::size_t>(r)] = static_cast<int>(d);
          break;
        }
      }
    }
  }
  const auto element = static_cast<std::uint64_t>(std::max(1, s.element_bytes));
  for (Round& round : s.rounds) {
    round.ops = [inner = std::move(round.ops), map, element, n](int p, std::vector<Op>& out) {
      const std::size_t start = out.size();
      inner(p, out);
      std::vector<Op> striped;
      bool any = false;
      for (std::size_t i = start; i < out.size(); ++i) {
        Op op = out[i];
        const bool plain = op.is_transfer() && !op.encoding && op.wire_bytes == 0;
        if (plain && op.via == kNoVia && p < n && op.peer >= 0 && op.peer < n) {
          // Point-to-point work between hosts: by the devices of the receiver's place on each
          // host (NCCL's PXN sends by the NIC of the peer's rail).
          const int from = op.kind == OpKind::send ? p : op.peer, to = op.kind == OpKind::send ? op.peer : p;
          const int hf = map->host[static_cast<std::size_t>(from)], ht = map->host[static_cast<std::size_t>(to)];
          const int d = map->local[static_cast<std::size_t>(to)];
          if (hf != ht && hf >= 0 && ht >= 0 && d >= 0 && static_cast<std::size_t>(d) < map->devices[static_cast<std::size_t>(hf)].size()) {
            op.via = {map->devices[static_cast<std::size_t>(hf)][static_cast<std::size_t>(d)], map->devices[static_cast<std::size_t>(ht)][static_cast<std::size_t>(d)]};
          }
        }
        const auto a = plain ? map->rails.find(op.via[0]) : map->rails.end();
        const auto b = plain ? map->rails.find(op.via[1]) : map->rails.end();
        const std::size_t ways = std::max(a == map->rails.end() ? 1 : a->second.size(), b == map->rails.end() ? 1 : b->second.size());
        const std::uint64_t elements = op.slice.bytes / element;
        const std::uint64_t pieces = std::min<std::uint64_t>(ways, elements);
        if (pieces < 2 || op.slice.bytes % element != 0) {
          striped.push_back(out[i]);
          continue;
        }
        any = true;
        std::uint64_t offset = op.slice.offset;
        for (std::uint64_t k = 0; k < pieces; ++k) {
          Op piece = op;
          const std::uint64_t count = elements / pieces + (k < elements % pieces ? 1 : 0);
          piece.slice = Slice{offset, count * element};
          offset += count * element;
          if (a != map->rails.end()) piece.via[0] = a->second[k % a->second.size()];
          if (b != map->rails.end()) piece.via[1] = b->second[k % b->second.size()];
          if (piece.max_Bps > 0) piece.max_Bps = op.max_Bps * static_cast<double>(count * element) / static_cast<double>(op.slice.bytes);
          striped.push_back(piece);
        }
      }
      if (!any) return;
      out.resize(start);
      out.insert(out.end(), striped.begin(), striped.end());
    };
  }
}

}  // namespace gradsync::models::nccl
