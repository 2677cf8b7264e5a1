#include "models/executors/analytic.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "models/topology/contention.h"
#include "models/executors/executor.h"
#include "models/support/format.h"

namespace gradsync::models {

namespace {

class Walker {
 public:
  // What each participant did in a round others are turned from, and its flows' figures.
  struct ProfileCost {
    double comm = 0, local = 0;
    bool bounded = false;
    std::pair<std::size_t, bool> bound{};
    bool engine = false;  // its slowest transfer went at its engine's rate (Op::max_Bps), under what the links allow
    bool staged = false;  // ... or as a copy staged through host memory (Topology::staged_copy_Bps)
  };
  struct Detail {
    std::vector<std::vector<Op>> ops;
    std::vector<int> profile;  // per participant: which distinct set of op sizes it has
    std::size_t profiles = 0;
    std::vector<ProfileCost> costs;  // [participant x profiles + profile]
    std::vector<std::size_t> first_send;  // per participant: its first flow's index
    std::vector<const Route*> routes;
    std::vector<double> latency, bandwidth, cap;
    std::vector<std::uint8_t> cap_kind;
    std::vector<int> limiting;
  };
  // What a round cost: its transfers, its busiest participant's local work, and the link
  // that bounded it (when one did).
  struct RoundCost {
    double comm = 0, local = 0;
    bool bounded = false;
    std::pair<std::size_t, bool> bound{};
    bool engine = false;  // its slowest transfer went at its engine's rate (Op::max_Bps), under what the links allow
    bool staged = false;  // ... or as a copy staged through host memory (Topology::staged_copy_Bps)
  };

  Walker(const Topology& t, const Schedule& s, const std::vector<LocalCosts>& reduce, bool each_round, int threads)
      : t_(t), s_(s), reduce_(reduce), each_round_(each_round), threads_(threads), main_(t, s.participant_count()) {}

  // Sums the rounds; with focus >= 0 only what involves that worker counts (its own ops,
  // and other participants' transfers with it).
  double walk(int focus, std::vector<formulas::Phase>& phases) {
    std::map<std::string, std::size_t> index;
    for (const auto& p : phases) index[p.name] = static_cast<std::size_t>(&p - phases.data());
    auto add = [&](const std::string& name, double seconds) {
      auto it = index.find(name);
      if (it == index.end()) {
        it = index.emplace(name, phases.size()).first;
        phases.push_back({name, 0});
      }
      phases[it->second].seconds += seconds;
    };
    bound_.clear();
    engine_s_ = 0;
    staged_s_ = 0;
    costs_.assign(s_.rounds.size(), RoundCost{});
    // Rounds that later rounds turn along their cycles keep what each participant did.
    details_.clear();
    std::vector<bool> keep(s_.rounds.size(), false);
    for (const Round& r : s_.rounds) {
      if (r.rotated()) keep[static_cast<std::size_t>(r.same_as)] = !each_round_ && focus < 0;
    }
    // A round declared equal in cost to an earlier one costs what that one did (a ring of N
    // ranks evaluates 2 of its 2(N-1) steps); one turned along cycles of it, what its
    // participants' priced sizes say. The others are priced first, each on its own.
    auto turn = [&](const Round& round) { return round.rotated() && !each_round_ && focus < 0; };
    auto reused = [&](const Round& round) { return turn(round) || (!each_round_ && round.same_as >= 0 && !round.rotated()); };
    std::vector<std::size_t> fresh;
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      if (reused(s_.rounds[r])) continue;
      fresh.push_back(r);
      if (keep[r]) details_[r];  // made here: the pricing fills it, from any thread
    }
    price_all(fresh, focus);
    // Then summed in round order (the same additions, in the same order, however priced).
    double total = 0;
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const Round& round = s_.rounds[r];
      if (reused(round)) costs_[r] = turn(round) ? turned(round) : costs_[static_cast<std::size_t>(round.same_as)];
      const RoundCost& cost = costs_[r];
      add(round.phase, cost.comm);
      if (cost.local > 0) add(round.local_phase(), cost.local);
      if (cost.bounded) bound_[cost.bound] += cost.comm;
      if (cost.engine) engine_s_ += cost.comm;
      if (cost.staged) staged_s_ += cost.comm;
      total += cost.comm + cost.local;
    }
    return total;
  }

  // A round turned along cycles of the round it names (Round::rotated): each participant's
  // transfers are its own flows of that round (routes, shares, latencies, engines) carrying
  // the bytes of the participant rotated_by further along its cycle; its local work is that
  // participant's ops at its own costs. The same arithmetic, in the same order, as walking it.
  RoundCost turned(const Round& round) {
    Detail& d = details_.at(static_cast<std::size_t>(round.same_as));
    if (d.costs.empty()) price_profiles(d);
    const std::size_t n = d.ops.size();
    source_.assign(d.profile.begin(), d.profile.end());  // participants on no cycle: their own
    for (const auto& cycle : *round.rotated_along) {
      const int len = static_cast<int>(cycle.size());
      std::size_t k = static_cast<std::size_t>(((round.rotated_by % len) + len) % len);
      for (std::size_t j = 0; j < cycle.size(); ++j) {
        source_[static_cast<std::size_t>(cycle[j])] = d.profile[static_cast<std::size_t>(cycle[k])];
        if (++k == cycle.size()) k = 0;
      }
    }
    RoundCost cost;
    const ProfileCost* slowest = nullptr;
    for (std::size_t p = 0; p < n; ++p) {
      const ProfileCost& c = d.costs[p * d.profiles + static_cast<std::size_t>(source_[p])];
      if (c.comm > cost.comm) {
        cost.comm = c.comm;
        slowest = &c;
      }
      cost.local = std::max(cost.local, c.local);
    }
    if (slowest && slowest->bounded) {
      cost.bounded = true;
      cost.bound = slowest->bound;
    }
    cost.engine = slowest && slowest->engine;
    cost.staged = slowest && slowest->staged;
    return cost;
  }

  // Each participant's transfer and local time were it to carry each distinct set of ops
  // sizes the round's participants have (a ring's: a block of q or of q + 1 values): the
  // arithmetic of walking the round, done once per (participant, set) instead of per round.
  void price_profiles(Detail& d) const {
    const std::size_t n = d.ops.size();
    std::map<std::vector<std::tuple<int, std::uint64_t, std::uint64_t, std::uint64_t, double, const void*, const void*>>, int> ids;
    d.profile.assign(n, 0);
    std::vector<std::size_t> example;  // a participant of each profile
    for (std::size_t q = 0; q < n; ++q) {
      std::vector<std::tuple<int, std::uint64_t, std::uint64_t, std::uint64_t, double, const void*, const void*>> key;
      for (const Op& op : d.ops[q]) {
        key.emplace_back(static_cast<int>(op.kind), op.slice.bytes, op.source.bytes, op.wire(), op.seconds,
                         op.encoding ? static_cast<const void*>(op.encoding->codec) : nullptr,
                         op.call ? static_cast<const void*>(op.call->kernel) : nullptr);
      }
      const auto [it, fresh] = ids.emplace(std::move(key), static_cast<int>(example.size()));
      if (fresh) example.push_back(q);
      d.profile[q] = it->second;
    }
    d.profiles = example.size();
    d.costs.assign(n * d.profiles, ProfileCost{});
    for (std::size_t p = 0; p < n; ++p) {
      const std::vector<Op>& own = d.ops[p];
      for (std::size_t v = 0; v < d.profiles; ++v) {
        const std::vector<Op>& theirs = d.ops[example[v]];
        if (theirs.size() != own.size()) continue;  // never p's (the checker holds declarations to that)
        ProfileCost& c = d.costs[p * d.profiles + v];
        std::size_t flow = d.first_send[p], slowest = d.routes.size();
        double slowest_cap = 0;
        std::uint8_t slowest_kind = kNoCap;
        for (std::size_t t = 0; t < theirs.size(); ++t) {
          const Op& op = theirs[t];
          c.local += op.local_seconds(reduce_[p]);
          if (op.kind != OpKind::send) continue;
          const std::size_t i = flow++;
          const double cap = d.cap[i];
          const double rate = cap > 0 ? std::min(cap, d.bandwidth[i]) : d.bandwidth[i];
          const double bytes = static_cast<double>(op.wire()) / own[t].payload_share;
          const double transfer = d.routes[i]->empty() ? 0.0 : d.latency[i] + bytes / rate;
          if (transfer > c.comm) {
            c.comm = transfer;
            slowest = i;
            slowest_cap = cap;
            slowest_kind = d.cap_kind[i];
          }
        }
        const bool capped = slowest < d.routes.size() && slowest_cap > 0 && slowest_cap < d.bandwidth[slowest];
        c.engine = capped && slowest_kind == kEngineCap;
        c.staged = capped && slowest_kind == kStagedCap;
        if (slowest < d.routes.size() && d.limiting[slowest] >= 0 && !capped) {
          const Hop& h = (*d.routes[slowest])[static_cast<std::size_t>(d.limiting[slowest])];
          c.bounded = true;
          c.bound = {h.link, h.forward};
        }
      }
    }
  }

  // What pricing a round needs of its own: one per thread that prices rounds.
  using SlotHop = ContentionModel::SlotHop;
  struct PairInfo {
    const Route* route;
    double latency;
    std::uint32_t first, hops;  // its route as the contention model reads it, in Scratch::arena
    double staged;  // a copy between them is staged through host memory at most this fast; 0: not staged
  };
  static constexpr std::uint8_t kNoCap = 0, kEngineCap = 1, kStagedCap = 2;
  // What moves a transfer at most how fast: its own engine (Op::max_Bps), else the driver's copy
  // staged through host memory between GPUs without peer access, else nothing but the links.
  static std::pair<double, std::uint8_t> cap_of(const Op& op, const PairInfo& pair) {
    if (op.max_Bps > 0) return {op.max_Bps, kEngineCap};
    if (pair.staged > 0) return {pair.staged, kStagedCap};
    return {0.0, kNoCap};
  }
  // Per participant, the pairs it used last, kPeerSlots of them by peer (a tree node's parent
  // and children, a switch's GPUs): the map's lookups were a fifth of a large walk.
  static constexpr std::size_t kPeerSlots = 8;  // peer_slot() gives 3 bits
  struct LastPeer {
    int peer = -1;
    const PairInfo* info = nullptr;  // the map's nodes do not move
    std::uint64_t round = 0;         // the stamp of the round its group is in
    std::size_t group = 0;           // its flows' entry in routes in that round
    Via via = kNoVia;
  };
  // Fibonacci hashing: peers a multiple of 8 apart (the same GPU of other hosts) fall apart.
  static std::size_t peer_slot(int peer) { return (static_cast<std::uint32_t>(peer) * 2654435769u) >> 29; }
  static constexpr std::size_t kNew = std::numeric_limits<std::size_t>::max();
  // A round's flows, grouped (a group: flows alike between the same two participants), and
  // each participant's local work. The scratch keeps the round it priced last beside the one
  // being priced.
  struct Flows {
    std::vector<const Route*> routes;
    std::vector<std::uint32_t> counts;  // flows each group stands for
    std::vector<double> bytes, latency, cap, bandwidth, local;
    std::vector<std::uint8_t> cap_kind;  // what sets cap: kNoCap, kEngineCap (Op::max_Bps), kStagedCap
    std::vector<int> limiting;
    std::vector<std::size_t> first;          // per participant, its first group (first[P]: the end)
    std::vector<SlotHop> hops;               // the groups' routes, one after another
    std::vector<std::uint32_t> hop_first;    // per group, its first hop (and the end)
    std::vector<std::size_t> source;         // per group, the same group in the round before (kNew: none)
    void clear() {
      routes.clear();
      counts.clear();
      bytes.clear();
      latency.clear();
      cap.clear();
      cap_kind.clear();
      first.clear();
      hops.clear();
      hop_first.clear();
      source.clear();
    }
  };
  struct Scratch {
    Scratch(const Topology& t, int participants)
        : contention(t), last(static_cast<std::size_t>(participants) * kPeerSlots), copied(static_cast<std::size_t>(participants)) {
      now.local.resize(static_cast<std::size_t>(participants));
      before.local.resize(static_cast<std::size_t>(participants));
    }
    // Holds the loads of before's flows once a round is priced (loaded).
    ContentionModel contention;
    bool loaded = false;
    std::unordered_map<std::uint64_t, PairInfo> pairs;
    std::map<std::array<std::size_t, 4>, PairInfo> through;  // transfers routed through chosen nodes (Op::via)
    std::vector<SlotHop> arena;  // the pairs' routes
    std::vector<Op> ops;
    std::vector<LastPeer> last;
    std::uint64_t stamp = 0;  // one per round priced (0: none)
    std::vector<char> copied;  // per participant: its flows copied from the round before
    Flows now, before;
    std::size_t priced = std::numeric_limits<std::size_t>::max();  // the round before is, when not max
  };

  const PairInfo& info(Scratch& w, int from, int to, const Via& via) const {
    const std::size_t a = s_.participants[static_cast<std::size_t>(from)].node;
    const std::size_t b = s_.participants[static_cast<std::size_t>(to)].node;
    const bool through = via != kNoVia;
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
    const std::array<std::size_t, 4> through_key{a, via_node(via[0]), via_node(via[1]), b};
    if (!through) {
      if (auto it = w.pairs.find(key); it != w.pairs.end()) return it->second;
    } else if (auto it = w.through.find(through_key); it != w.through.end()) {
      return it->second;
    }
    const Route& route = through ? t_.route_through(a, through_key[1], through_key[2], b) : t_.route(a, b);
    const auto first = static_cast<std::uint32_t>(w.arena.size());
    w.contention.compile(route, w.arena);
    const PairInfo made{&route, a == b ? 0.0 : through ? t_.latency_s(route) : t_.latency_s(a, b), first,
                        static_cast<std::uint32_t>(w.arena.size()) - first, t_.staged_copy_Bps(a, b).value_or(0.0)};
    return through ? w.through.emplace(through_key, made).first->second : w.pairs.emplace(key, made).first->second;
  }

  // Round r's cost walked: its transfers (their routes' shares while the round's others run)
  // and its busiest participant's local work; with `detail`, what each participant did.
  RoundCost price(std::size_t r, int focus, Scratch& w, Detail* detail) const {
    const Round& round = s_.rounds[r];
    Flows& f = w.now;
    const Flows& b = w.before;
    ++w.stamp;
    f.clear();
    std::fill(f.local.begin(), f.local.end(), 0.0);
    // Participants that do what they did in the round before (or the round after does what
    // they do here), when this scratch priced that round: their flows and local work as then,
    // without their ops.
    const std::function<bool(int)>* repeats = nullptr;
    if (!each_round_ && !detail && focus < 0) {
      if (r > 0 && w.priced == r - 1 && round.same_ops_as_previous) repeats = &round.same_ops_as_previous;
      if (r + 1 < s_.rounds.size() && w.priced == r + 1 && s_.rounds[r + 1].same_ops_as_previous) {
        repeats = &s_.rounds[r + 1].same_ops_as_previous;
      }
    }
    for (int p = 0; p < s_.participant_count(); ++p) {
      const auto pi = static_cast<std::size_t>(p);
      f.first.push_back(f.routes.size());
      w.copied[pi] = repeats && (*repeats)(p);
      if (w.copied[pi]) {
        const std::size_t g0 = b.first[pi], g1 = b.first[pi + 1];
        f.routes.insert(f.routes.end(), b.routes.begin() + g0, b.routes.begin() + g1);
        f.counts.insert(f.counts.end(), b.counts.begin() + g0, b.counts.begin() + g1);
        f.latency.insert(f.latency.end(), b.latency.begin() + g0, b.latency.begin() + g1);
        f.bytes.insert(f.bytes.end(), b.bytes.begin() + g0, b.bytes.begin() + g1);
        f.cap.insert(f.cap.end(), b.cap.begin() + g0, b.cap.begin() + g1);
        f.cap_kind.insert(f.cap_kind.end(), b.cap_kind.begin() + g0, b.cap_kind.begin() + g1);
        const std::uint32_t shift = static_cast<std::uint32_t>(f.hops.size()) - b.hop_first[g0];
        for (std::size_t g = g0; g < g1; ++g) {
          f.source.push_back(g);
          f.hop_first.push_back(b.hop_first[g] + shift);
        }
        f.hops.insert(f.hops.end(), b.hops.begin() + b.hop_first[g0], b.hops.begin() + b.hop_first[g1]);
        f.local[pi] = b.local[pi];
        continue;
      }
      w.ops.clear();
      round.ops(p, w.ops);
      if (detail) {
        detail->first_send.push_back(f.routes.size());
        detail->ops.push_back(w.ops);
      }
      const LocalCosts& c = reduce_[pi];
      for (const Op& op : w.ops) {
        if (focus >= 0 && p != focus && !(op.is_transfer() && op.peer == focus)) continue;
        switch (op.kind) {
          case OpKind::send: {
            // Most participants talk to the same few peers round after round: check those first.
            auto& last = w.last[pi * kPeerSlots + peer_slot(op.peer)];
            if (last.peer != op.peer || last.via != op.via) last = {op.peer, &info(w, p, op.peer, op.via), 0, 0, op.via};
            const PairInfo& pair = *last.info;
            const double latency = s_.latency_in_ops ? 0.0 : pair.latency, bytes = op.link_bytes();
            const auto [cap, cap_kind] = cap_of(op, pair);
            // A flow like an earlier one of this round between the same two participants (a
            // GPU's channels to its switch) joins it: the same route, bytes and engine get the
            // same share, and the round's slowest is still the first of them.
            if (!detail && last.round == w.stamp && f.bytes[last.group] == bytes && f.cap[last.group] == cap &&
                f.latency[last.group] == latency) {
              ++f.counts[last.group];
            } else {
              last.round = w.stamp;
              last.group = f.routes.size();
              f.routes.push_back(pair.route);
              f.counts.push_back(1);
              f.latency.push_back(latency);
              f.bytes.push_back(bytes);
              f.cap.push_back(cap);
              f.cap_kind.push_back(cap_kind);
              f.source.push_back(kNew);
              f.hop_first.push_back(static_cast<std::uint32_t>(f.hops.size()));
              f.hops.insert(f.hops.end(), w.arena.begin() + pair.first, w.arena.begin() + pair.first + pair.hops);
            }
            f.local[pi] += op.local_seconds(c);  // encoding the payload, if it is
            break;
          }
          default: f.local[pi] += op.local_seconds(c); break;
        }
      }
    }
    f.first.push_back(f.routes.size());
    f.hop_first.push_back(static_cast<std::uint32_t>(f.hops.size()));
    share(w);
    if (detail) {
      detail->routes = f.routes;
      detail->latency = f.latency;
      detail->bandwidth = f.bandwidth;
      detail->cap = f.cap;
      detail->cap_kind = f.cap_kind;
      detail->limiting = f.limiting;
    }
    RoundCost cost;
    std::size_t slowest = f.routes.size();
    for (std::size_t i = 0; i < f.routes.size(); ++i) {
      const double rate = f.cap[i] > 0 ? std::min(f.cap[i], f.bandwidth[i]) : f.bandwidth[i];
      const double transfer = f.hop_first[i] == f.hop_first[i + 1] ? 0.0 : f.latency[i] + f.bytes[i] / rate;
      if (transfer > cost.comm) {
        cost.comm = transfer;
        slowest = i;
      }
    }
    // A transfer its engine limits (max_Bps) is bounded by no link.
    const bool capped = slowest < f.routes.size() && f.cap[slowest] > 0 && f.cap[slowest] < f.bandwidth[slowest];
    cost.engine = capped && f.cap_kind[slowest] == kEngineCap;
    cost.staged = capped && f.cap_kind[slowest] == kStagedCap;
    if (slowest < f.routes.size() && f.limiting[slowest] >= 0 && !capped) {
      const Hop& h = (*f.routes[slowest])[static_cast<std::size_t>(f.limiting[slowest])];
      cost.bounded = true;
      cost.bound = {h.link, h.forward};
    }
    cost.local = f.local.empty() ? 0.0 : *std::max_element(f.local.begin(), f.local.end());
    // This round's flows become the ones before (and the contention model holds their loads).
    std::swap(w.now, w.before);
    w.priced = focus < 0 && !detail ? r : std::numeric_limits<std::size_t>::max();  // a focused walk's flows are a part
    return cost;
  }

  // The share each of the round's groups gets (now.bandwidth, now.limiting). The contention
  // model holds the loads of the round before; only the participants whose flows were not
  // copied change them, and a copied group keeps its share unless a link on its route changed
  // load. Walking every round (the reference) loads each round afresh.
  void share(Scratch& w) const {
    Flows& f = w.now;
    const Flows& b = w.before;
    ContentionModel& m = w.contention;
    const SlotHop* hops = f.hops.data();
    const std::size_t groups = f.routes.size();
    f.bandwidth.resize(groups);
    f.limiting.resize(groups);
    // Consecutive rounds often repeat the same flows (a ring's steps): the same shares.
    if (w.loaded && f.routes == b.routes && f.counts == b.counts) {
      f.bandwidth = b.bandwidth;
      f.limiting = b.limiting;
      return;
    }
    if (each_round_ || !w.loaded) {
      m.clear();
      for (std::size_t g = 0; g < groups; ++g) m.add(hops + f.hop_first[g], hops + f.hop_first[g + 1], f.counts[g]);
      for (std::size_t g = 0; g < groups; ++g) f.bandwidth[g] = m.bandwidth(hops + f.hop_first[g], hops + f.hop_first[g + 1], &f.limiting[g]);
      w.loaded = true;
      return;
    }
    m.begin_changes();
    const SlotHop* old = b.hops.data();
    for (std::size_t p = 0; p + 1 < f.first.size(); ++p) {
      if (w.copied[p]) continue;
      for (std::size_t g = b.first[p]; g < b.first[p + 1]; ++g) m.add(old + b.hop_first[g], old + b.hop_first[g + 1], -static_cast<std::int64_t>(b.counts[g]));
      for (std::size_t g = f.first[p]; g < f.first[p + 1]; ++g) m.add(hops + f.hop_first[g], hops + f.hop_first[g + 1], f.counts[g]);
    }
    m.end_changes();
    for (std::size_t g = 0; g < groups; ++g) {
      const SlotHop* from = hops + f.hop_first[g];
      const SlotHop* to = hops + f.hop_first[g + 1];
      if (f.source[g] != kNew && std::none_of(from, to, [&m](const SlotHop& h) { return m.changed(h.link); })) {
        f.bandwidth[g] = b.bandwidth[f.source[g]];
        f.limiting[g] = b.limiting[f.source[g]];
      } else {
        f.bandwidth[g] = m.bandwidth(from, to, &f.limiting[g]);
      }
    }
  }

  // Prices `rounds` into costs_ (and details_ where made): on this thread, or, for a large
  // walk, on as many threads as the machine has (each with its own
  // scratch; a round's cost does not depend on which thread prices it).
  void price_all(const std::vector<std::size_t>& rounds, int focus) {
    auto detail_of = [&](std::size_t r) {
      const auto it = details_.find(r);
      return it == details_.end() ? nullptr : &it->second;
    };
    const double work = static_cast<double>(rounds.size()) * s_.participant_count();
    int threads = threads_ > 0 ? threads_ : work >= kParallelWork ? static_cast<int>(std::thread::hardware_concurrency()) : 1;
    threads = std::clamp(threads, 1, std::max(1, std::min<int>(kMaxThreads, static_cast<int>(rounds.size()))));
    if (threads == 1) {
      for (std::size_t r : rounds) costs_[r] = price(r, focus, main_, detail_of(r));
      return;
    }
    std::vector<std::exception_ptr> failed(static_cast<std::size_t>(threads));
    // Rounds differ in cost (a pipeline's fill is cheaper than its drain), and a round priced
    // right after a neighbour costs less (the participants that repeat it keep their flows).
    // So the rounds are cut into one stretch per two threads; in each, one thread prices from
    // the front forward and the other from the back backward, a round at a time, until they
    // meet: the threads end together, and only each thread's first round is priced whole.
    struct Stretch {
      std::mutex m;
      std::size_t front = 0, back = 0;  // [front, back): not yet taken
    };
    const std::size_t n = rounds.size(), stretches = (static_cast<std::size_t>(threads) + 1) / 2;
    std::vector<Stretch> stretch(stretches);
    for (std::size_t k = 0; k < stretches; ++k) {
      stretch[k].front = n * k / stretches;
      stretch[k].back = n * (k + 1) / stretches;
    }
    auto block = [&](int k, Scratch& w) {
      try {
        Stretch& mine = stretch[static_cast<std::size_t>(k) / 2];
        const bool backward = k % 2 == 1;
        for (;;) {
          std::size_t i = 0;
          {
            const std::lock_guard<std::mutex> lock(mine.m);
            if (mine.front == mine.back) break;
            i = backward ? --mine.back : mine.front++;
          }
          costs_[rounds[i]] = price(rounds[i], focus, w, detail_of(rounds[i]));
        }
      } catch (...) {
        failed[static_cast<std::size_t>(k)] = std::current_exception();
      }
    };
    std::vector<std::thread> others;
    std::vector<std::unique_ptr<Scratch>> scratch;
    for (int k = 1; k < threads; ++k) {
      scratch.push_back(std::make_unique<Scratch>(t_, s_.participant_count()));
      others.emplace_back(block, k, std::ref(*scratch.back()));
    }
    block(0, main_);
    for (std::thread& th : others) th.join();
    for (const std::exception_ptr& e : failed) {
      if (e) std::rethrow_exception(e);
    }
  }

  // The time its rounds' slowest transfers went at their engines' own rate, no link bounding them.
  double engine_bound_s() const { return engine_s_; }
  // ... went as copies staged through host memory (GPUs without peer access).
  double staged_bound_s() const { return staged_s_; }

  std::vector<BoundingLink> bounding_links() const {
    std::vector<BoundingLink> out;
    for (const auto& [key, seconds] : bound_) out.push_back({key.first, key.second, seconds});
    std::stable_sort(out.begin(), out.end(), [](const BoundingLink& a, const BoundingLink& b) { return a.seconds > b.seconds; });
    return out;
  }

 private:
  // Walks with at least this many participant-rounds to price use every core (a fill and drain
  // of the 8,192-GPU cluster's NVLS trees: 450,000); fewer are priced on this thread.
  static constexpr double kParallelWork = 200000;
  static constexpr int kMaxThreads = 16;

  const Topology& t_;
  const Schedule& s_;
  const std::vector<LocalCosts>& reduce_;
  const bool each_round_;
  const int threads_;  // 0: by the walk's size
  std::vector<RoundCost> costs_;
  std::unordered_map<std::size_t, Detail> details_;
  std::vector<int> source_;  // per participant, the profile it carries in the round being priced
  Scratch main_;
  std::map<std::pair<std::size_t, bool>, double> bound_;
  double engine_s_ = 0;
  double staged_s_ = 0;
};

}  // namespace

AnalyticResult run_analytic(const Topology& topology, const Schedule& schedule,
                            const std::vector<LocalCosts>& costs, double compute_s_per_step, bool each_round, int threads) {
  Walker walker(topology, schedule, costs, each_round, threads);
  AnalyticResult r;
  const double period = static_cast<double>(std::max(1, schedule.period_steps));
  if (!schedule.asynchronous) {
    r.sync_s = walker.walk(-1, r.phases);
    r.iteration_s = compute_s_per_step + r.sync_s / period;
    r.bounding_links = walker.bounding_links();
    r.engine_bound_s = walker.engine_bound_s();
    r.staged_bound_s = walker.staged_bound_s();
    return r;
  }
  std::vector<formulas::Phase> all_phases;
  const double everyone = walker.walk(-1, all_phases);  // all workers' exchanges through the server at once
  r.bounding_links = walker.bounding_links();
  r.engine_bound_s = walker.engine_bound_s();
  r.staged_bound_s = walker.staged_bound_s();
  const double alone = schedule.workers > 0 ? walker.walk(0, r.phases) : 0.0;  // worker 0's exchange on its own
  const double by_worker = period * compute_s_per_step + alone;
  const double cycle = std::max(by_worker, everyone);
  r.bound = everyone > by_worker ? "server links" : "workers";
  r.sync_s = cycle - period * compute_s_per_step;
  if (r.sync_s > alone) r.phases.push_back({"waiting for the server", r.sync_s - alone});
  r.iteration_s = cycle / period;
  return r;
}

std::string describe_link(const Topology& topology, const BoundingLink& link) {
  const Link& l = topology.links()[link.link];
  const std::string& a = topology.node(link.forward ? l.a : l.b).id;
  const std::string& b = topology.node(link.forward ? l.b : l.a).id;
  return a + " -> " + b + " (" + format_rate(l.bandwidth_Bps) + ")";
}

ResultRecord predict(const PredictRequest& q) {
  const BuiltSchedule built = build_schedule(q);
  const Schedule& schedule = built.schedule;
  ResultRecord r = record_header(q, built, "analytic");
  const double compute = q.workload ? q.workload->compute_s() : 0.0;
  const AnalyticResult a = run_analytic(*q.topology, schedule, participant_costs(schedule), compute);
  r.phases = a.phases;
  r.time_per_sync_s = a.sync_s;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, a.bounding_links.size()); ++i) {
    r.bounding_links.emplace_back(describe_link(*q.topology, a.bounding_links[i]), a.bounding_links[i].seconds);
  }
  r.engine_bound_s = a.engine_bound_s;
  r.staged_bound_s = a.staged_bound_s;
  std::optional<double> iteration;
  if (schedule.asynchronous) {
    iteration = a.iteration_s;
    r.notes.push_back("steady state bounded by the " + a.bound);
  }
  add_overlap(r, q, schedule, [](const PredictRequest& part) {
    const BuiltSchedule b = build_schedule(part);
    return run_analytic(*part.topology, b.schedule, participant_costs(b.schedule), 0.0).sync_s;
  });
  if (q.workload) add_training_times(r, *q.workload, iteration);
  return r;
}

namespace {

class AnalyticExecutor final : public Executor {
 public:
  std::string name() const override { return "analytic"; }
  std::string summary() const override {
    return "the strategy's schedule walked on the topology: latency + bytes over the bandwidth each transfer gets while "
           "the round's transfers share the links";
  }
  int order() const override { return 20; }
  ResultRecord evaluate(const PredictRequest& q, const ExecutorSettings&, Trace*) const override { return predict(q); }
};

const ExecutorRegistration analytic_registered(std::make_unique<AnalyticExecutor>());

}  // namespace

const Executor& default_executor() {
  for (const Executor* e : all_executors()) {
    if (dynamic_cast<const AnalyticExecutor*>(e)) return *e;
  }
  throw std::logic_error("the analytic executor is not registered");
}

}  // namespace gradsync::models
