#include "models/executors/analytic.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
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
  };
  struct Detail {
    std::vector<std::vector<Op>> ops;
    std::vector<int> profile;  // per participant: which distinct set of op sizes it has
    std::size_t profiles = 0;
    std::vector<ProfileCost> costs;  // [participant x profiles + profile]
    std::vector<std::size_t> first_send;  // per participant: its first flow's index
    std::vector<const Route*> routes;
    std::vector<double> latency, bandwidth;
    std::vector<int> limiting;
  };
  // What a round cost: its transfers, its busiest participant's local work, and the link
  // that bounded it (when one did).
  struct RoundCost {
    double comm = 0, local = 0;
    bool bounded = false;
    std::pair<std::size_t, bool> bound{};
  };

  Walker(const Topology& t, const Schedule& s, const std::vector<LocalCosts>& reduce, bool each_round)
      : t_(t), s_(s), reduce_(reduce), each_round_(each_round), contention_(t), last_(static_cast<std::size_t>(s.participant_count()) * kPeerSlots),
        local_(static_cast<std::size_t>(s.participant_count())) {}

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
    double total = 0;
    previous_routes_.clear();
    previous_counts_.clear();
    bound_.clear();
    costs_.assign(s_.rounds.size(), RoundCost{});
    // Rounds that later rounds turn along their cycles keep what each participant did.
    details_.clear();
    std::vector<bool> keep(s_.rounds.size(), false);
    for (const Round& r : s_.rounds) {
      if (r.rotated()) keep[static_cast<std::size_t>(r.same_as)] = !each_round_ && focus < 0;
    }
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const Round& round = s_.rounds[r];
      // A round declared equal in cost to an earlier one costs what that one did (a ring of
      // N ranks evaluates 2 of its 2(N-1) steps); one turned along cycles of it, what its
      // participants' priced sizes say.
      const bool turn = round.rotated() && !each_round_ && focus < 0;
      if (turn || (!each_round_ && round.same_as >= 0 && !round.rotated())) {
        const RoundCost cost = turn ? turned(round) : costs_[static_cast<std::size_t>(round.same_as)];
        costs_[r] = cost;
        add(round.phase, cost.comm);
        if (cost.local > 0) add(round.local_phase(), cost.local);
        if (cost.bounded) bound_[cost.bound] += cost.comm;
        total += cost.comm + cost.local;
        continue;
      }
      ++stamp_;
      routes_.clear();
      counts_.clear();
      bytes_.clear();
      cap_.clear();
      latency_.clear();
      std::fill(local_.begin(), local_.end(), 0.0);
      Detail* detail = keep[r] ? &details_[r] : nullptr;
      for (int p = 0; p < s_.participant_count(); ++p) {
        ops_.clear();
        round.ops(p, ops_);
        if (detail) {
          detail->first_send.push_back(routes_.size());
          detail->ops.push_back(ops_);
        }
        const LocalCosts& c = reduce_[static_cast<std::size_t>(p)];
        for (const Op& op : ops_) {
          if (focus >= 0 && p != focus && !(op.is_transfer() && op.peer == focus)) continue;
          switch (op.kind) {
            case OpKind::send: {
              // Most participants talk to the same few peers round after round: check those first.
              auto& last = last_[static_cast<std::size_t>(p) * kPeerSlots + peer_slot(op.peer)];
              if (last.peer != op.peer) last = {op.peer, &info(p, op.peer)};
              const PairInfo& pair = *last.info;
              const double latency = s_.latency_in_ops ? 0.0 : pair.latency, bytes = op.link_bytes();
              // A flow like an earlier one of this round between the same two participants (a
              // GPU's channels to its switch) joins it: the same route, bytes and engine get the
              // same share, and the round's slowest is still the first of them.
              if (!detail && last.round == stamp_ && bytes_[last.group] == bytes && cap_[last.group] == op.max_Bps &&
                  latency_[last.group] == latency) {
                ++counts_[last.group];
              } else {
                last.round = stamp_;
                last.group = routes_.size();
                routes_.push_back(pair.route);
                counts_.push_back(1);
                latency_.push_back(latency);
                bytes_.push_back(bytes);
                cap_.push_back(op.max_Bps);
              }
              local_[static_cast<std::size_t>(p)] += op.local_seconds(c);  // encoding the payload, if it is
              break;
            }
            default: local_[static_cast<std::size_t>(p)] += op.local_seconds(c); break;
          }
        }
      }
      // Consecutive rounds often repeat the same flows (a ring's steps): share once.
      if (routes_ != previous_routes_ || counts_ != previous_counts_) {
        contention_.share(routes_, bandwidth_, &limiting_, &counts_);
        previous_routes_ = routes_;
        previous_counts_ = counts_;
      }
      if (detail) {
        detail->routes = routes_;
        detail->latency = latency_;
        detail->bandwidth = bandwidth_;
        detail->limiting = limiting_;
      }
      double comm = 0;
      std::size_t slowest = routes_.size();
      for (std::size_t i = 0; i < routes_.size(); ++i) {
        const double rate = cap_[i] > 0 ? std::min(cap_[i], bandwidth_[i]) : bandwidth_[i];
        const double transfer = routes_[i]->empty() ? 0.0 : latency_[i] + bytes_[i] / rate;
        if (transfer > comm) {
          comm = transfer;
          slowest = i;
        }
      }
      RoundCost& cost = costs_[r];
      // A transfer its engine limits (max_Bps) is bounded by no link.
      if (slowest < routes_.size() && limiting_[slowest] >= 0 &&
          !(cap_[slowest] > 0 && cap_[slowest] < bandwidth_[slowest])) {
        const Hop& h = (*routes_[slowest])[static_cast<std::size_t>(limiting_[slowest])];
        cost.bounded = true;
        cost.bound = {h.link, h.forward};
        bound_[cost.bound] += comm;
      }
      const double local = local_.empty() ? 0.0 : *std::max_element(local_.begin(), local_.end());
      cost.comm = comm;
      cost.local = local;
      add(round.phase, comm);
      if (local > 0) add(round.local_phase(), local);
      total += comm + local;
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
        for (std::size_t t = 0; t < theirs.size(); ++t) {
          const Op& op = theirs[t];
          c.local += op.local_seconds(reduce_[p]);
          if (op.kind != OpKind::send) continue;
          const std::size_t i = flow++;
          const double cap = own[t].max_Bps;
          const double rate = cap > 0 ? std::min(cap, d.bandwidth[i]) : d.bandwidth[i];
          const double bytes = static_cast<double>(op.wire()) / own[t].payload_share;
          const double transfer = d.routes[i]->empty() ? 0.0 : d.latency[i] + bytes / rate;
          if (transfer > c.comm) {
            c.comm = transfer;
            slowest = i;
            slowest_cap = cap;
          }
        }
        if (slowest < d.routes.size() && d.limiting[slowest] >= 0 && !(slowest_cap > 0 && slowest_cap < d.bandwidth[slowest])) {
          const Hop& h = (*d.routes[slowest])[static_cast<std::size_t>(d.limiting[slowest])];
          c.bounded = true;
          c.bound = {h.link, h.forward};
        }
      }
    }
  }

  std::vector<BoundingLink> bounding_links() const {
    std::vector<BoundingLink> out;
    for (const auto& [key, seconds] : bound_) out.push_back({key.first, key.second, seconds});
    std::stable_sort(out.begin(), out.end(), [](const BoundingLink& a, const BoundingLink& b) { return a.seconds > b.seconds; });
    return out;
  }

 private:
  struct PairInfo {
    const Route* route;
    double latency;
  };
  const PairInfo& info(int from, int to) {
    const std::size_t a = s_.participants[static_cast<std::size_t>(from)].node;
    const std::size_t b = s_.participants[static_cast<std::size_t>(to)].node;
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
    auto it = pairs_.find(key);
    if (it == pairs_.end()) {
      it = pairs_.emplace(key, PairInfo{&t_.route(a, b), a == b ? 0.0 : t_.latency_s(a, b)}).first;
    }
    return it->second;
  }

  const Topology& t_;
  const Schedule& s_;
  const std::vector<LocalCosts>& reduce_;
  const bool each_round_;
  std::vector<RoundCost> costs_;
  std::unordered_map<std::size_t, Detail> details_;
  std::vector<int> source_;  // per participant, the profile it carries in the round being priced
  ContentionModel contention_;
  std::unordered_map<std::uint64_t, PairInfo> pairs_;
  std::vector<Op> ops_;
  std::vector<const Route*> routes_, previous_routes_;
  std::vector<std::uint32_t> counts_, previous_counts_;  // flows each entry of routes_ stands for
  // Per participant, the pairs it used last, kPeerSlots of them by peer (a tree node's parent
  // and children, a switch's GPUs): the map's lookups were a fifth of a large walk.
  static constexpr std::size_t kPeerSlots = 8;  // peer_slot() gives 3 bits
  struct LastPeer {
    int peer = -1;
    const PairInfo* info = nullptr;  // the map's nodes do not move
    std::uint64_t round = 0;         // the stamp_ of the round its group is in
    std::size_t group = 0;           // its flows' entry in routes_ in that round
  };
  std::uint64_t stamp_ = 0;  // one per round walked (0: none)
  std::vector<LastPeer> last_;
  // Fibonacci hashing: peers a multiple of 8 apart (the same GPU of other hosts) fall apart.
  static std::size_t peer_slot(int peer) { return (static_cast<std::uint32_t>(peer) * 2654435769u) >> 29; }
  std::vector<double> bytes_, latency_, bandwidth_, local_, cap_;
  std::vector<int> limiting_;
  std::map<std::pair<std::size_t, bool>, double> bound_;
};

}  // namespace

AnalyticResult run_analytic(const Topology& topology, const Schedule& schedule,
                            const std::vector<LocalCosts>& costs, double compute_s_per_step, bool each_round) {
  Walker walker(topology, schedule, costs, each_round);
  AnalyticResult r;
  const double period = static_cast<double>(std::max(1, schedule.period_steps));
  if (!schedule.asynchronous) {
    r.sync_s = walker.walk(-1, r.phases);
    r.iteration_s = compute_s_per_step + r.sync_s / period;
    r.bounding_links = walker.bounding_links();
    return r;
  }
  std::vector<formulas::Phase> all_phases;
  const double everyone = walker.walk(-1, all_phases);  // all workers' exchanges through the server at once
  r.bounding_links = walker.bounding_links();
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
  std::optional<double> iteration;
  if (schedule.asynchronous) {
    iteration = a.iteration_s;
    r.notes.push_back("steady state bounded by the " + a.bound);
  }
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
