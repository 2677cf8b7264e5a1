#include "models/executors/analytic.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
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

  // What pricing a round needs of its own: one per thread that prices rounds.
  struct PairInfo {
    const Route* route;
    double latency;
  };
  // Per participant, the pairs it used last, kPeerSlots of them by peer (a tree node's parent
  // and children, a switch's GPUs): the map's lookups were a fifth of a large walk.
  static constexpr std::size_t kPeerSlots = 8;  // peer_slot() gives 3 bits
  struct LastPeer {
    int peer = -1;
    const PairInfo* info = nullptr;  // the map's nodes do not move
    std::uint64_t round = 0;         // the stamp of the round its group is in
    std::size_t group = 0;           // its flows' entry in routes in that round
  };
  // Fibonacci hashing: peers a multiple of 8 apart (the same GPU of other hosts) fall apart.
  static std::size_t peer_slot(int peer) { return (static_cast<std::uint32_t>(peer) * 2654435769u) >> 29; }
  struct Scratch {
    Scratch(const Topology& t, int participants)
        : contention(t), last(static_cast<std::size_t>(participants) * kPeerSlots), local(static_cast<std::size_t>(participants)) {}
    ContentionModel contention;
    std::unordered_map<std::uint64_t, PairInfo> pairs;
    std::vector<Op> ops;
    std::vector<const Route*> routes, previous_routes;
    std::vector<std::uint32_t> counts, previous_counts;  // flows each entry of routes stands for
    std::vector<LastPeer> last;
    std::uint64_t stamp = 0;  // one per round priced (0: none)
    std::vector<double> bytes, latency, bandwidth, local, cap;
    std::vector<int> limiting;
    // The round priced before on this scratch: its flows' figures, and where each participant's
    // flows begin among them (first[p], first[P] the end), for participants that repeat it.
    std::size_t priced = std::numeric_limits<std::size_t>::max();
    std::vector<double> previous_bytes, previous_latency, previous_cap, previous_local;
    std::vector<std::size_t> first, previous_first;
  };

  const PairInfo& info(Scratch& w, int from, int to) const {
    const std::size_t a = s_.participants[static_cast<std::size_t>(from)].node;
    const std::size_t b = s_.participants[static_cast<std::size_t>(to)].node;
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
    auto it = w.pairs.find(key);
    if (it == w.pairs.end()) {
      it = w.pairs.emplace(key, PairInfo{&t_.route(a, b), a == b ? 0.0 : t_.latency_s(a, b)}).first;
    }
    return it->second;
  }

  // Round r's cost walked: its transfers (their routes' shares while the round's others run)
  // and its busiest participant's local work; with `detail`, what each participant did.
  RoundCost price(std::size_t r, int focus, Scratch& w, Detail* detail) const {
    const Round& round = s_.rounds[r];
    ++w.stamp;
    w.routes.clear();
    w.counts.clear();
    w.bytes.clear();
    w.cap.clear();
    w.latency.clear();
    w.first.clear();
    std::fill(w.local.begin(), w.local.end(), 0.0);
    // Participants that do what they did in the round before, when this scratch priced it:
    // their flows and local work as then, without their ops.
    const bool repeat = round.same_ops_as_previous && !each_round_ && !detail && focus < 0 && r > 0 && w.priced == r - 1;
    for (int p = 0; p < s_.participant_count(); ++p) {
      w.first.push_back(w.routes.size());
      if (repeat && round.same_ops_as_previous(p)) {
        for (std::size_t i = w.previous_first[static_cast<std::size_t>(p)]; i < w.previous_first[static_cast<std::size_t>(p) + 1]; ++i) {
          w.routes.push_back(w.previous_routes[i]);
          w.counts.push_back(w.previous_counts[i]);
          w.latency.push_back(w.previous_latency[i]);
          w.bytes.push_back(w.previous_bytes[i]);
          w.cap.push_back(w.previous_cap[i]);
        }
        w.local[static_cast<std::size_t>(p)] = w.previous_local[static_cast<std::size_t>(p)];
        continue;
      }
      w.ops.clear();
      round.ops(p, w.ops);
      if (detail) {
        detail->first_send.push_back(w.routes.size());
        detail->ops.push_back(w.ops);
      }
      const LocalCosts& c = reduce_[static_cast<std::size_t>(p)];
      for (const Op& op : w.ops) {
        if (focus >= 0 && p != focus && !(op.is_transfer() && op.peer == focus)) continue;
        switch (op.kind) {
          case OpKind::send: {
            // Most participants talk to the same few peers round after round: check those first.
            auto& last = w.last[static_cast<std::size_t>(p) * kPeerSlots + peer_slot(op.peer)];
            if (last.peer != op.peer) last = {op.peer, &info(w, p, op.peer)};
            const PairInfo& pair = *last.info;
            const double latency = s_.latency_in_ops ? 0.0 : pair.latency, bytes = op.link_bytes();
            // A flow like an earlier one of this round between the same two participants (a
            // GPU's channels to its switch) joins it: the same route, bytes and engine get the
            // same share, and the round's slowest is still the first of them.
            if (!detail && last.round == w.stamp && w.bytes[last.group] == bytes && w.cap[last.group] == op.max_Bps &&
                w.latency[last.group] == latency) {
              ++w.counts[last.group];
            } else {
              last.round = w.stamp;
              last.group = w.routes.size();
              w.routes.push_back(pair.route);
              w.counts.push_back(1);
              w.latency.push_back(latency);
              w.bytes.push_back(bytes);
              w.cap.push_back(op.max_Bps);
            }
            w.local[static_cast<std::size_t>(p)] += op.local_seconds(c);  // encoding the payload, if it is
            break;
          }
          default: w.local[static_cast<std::size_t>(p)] += op.local_seconds(c); break;
        }
      }
    }
    w.first.push_back(w.routes.size());
    // Consecutive rounds often repeat the same flows (a ring's steps): share once.
    if (w.priced == std::numeric_limits<std::size_t>::max() || w.routes != w.previous_routes || w.counts != w.previous_counts) {
      w.contention.share(w.routes, w.bandwidth, &w.limiting, &w.counts);
    }
    if (detail) {
      detail->routes = w.routes;
      detail->latency = w.latency;
      detail->bandwidth = w.bandwidth;
      detail->limiting = w.limiting;
    }
    RoundCost cost;
    std::size_t slowest = w.routes.size();
    for (std::size_t i = 0; i < w.routes.size(); ++i) {
      const double rate = w.cap[i] > 0 ? std::min(w.cap[i], w.bandwidth[i]) : w.bandwidth[i];
      const double transfer = w.routes[i]->empty() ? 0.0 : w.latency[i] + w.bytes[i] / rate;
      if (transfer > cost.comm) {
        cost.comm = transfer;
        slowest = i;
      }
    }
    // A transfer its engine limits (max_Bps) is bounded by no link.
    if (slowest < w.routes.size() && w.limiting[slowest] >= 0 && !(w.cap[slowest] > 0 && w.cap[slowest] < w.bandwidth[slowest])) {
      const Hop& h = (*w.routes[slowest])[static_cast<std::size_t>(w.limiting[slowest])];
      cost.bounded = true;
      cost.bound = {h.link, h.forward};
    }
    cost.local = w.local.empty() ? 0.0 : *std::max_element(w.local.begin(), w.local.end());
    // This round's figures become the previous ones (w.bandwidth and w.limiting are theirs).
    std::swap(w.routes, w.previous_routes);
    std::swap(w.counts, w.previous_counts);
    std::swap(w.bytes, w.previous_bytes);
    std::swap(w.latency, w.previous_latency);
    std::swap(w.cap, w.previous_cap);
    std::swap(w.local, w.previous_local);
    std::swap(w.first, w.previous_first);
    w.local.resize(w.previous_local.size());
    w.priced = focus < 0 && !detail ? r : std::numeric_limits<std::size_t>::max();  // a focused walk's flows are a part
    return cost;
  }

  // Prices `rounds` into costs_ (and details_ where made): on this thread, or, for a large
  // walk, a few rounds at a time on as many threads as the machine has (each with its own
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
    // Rounds differ in cost (a pipeline's fill is cheaper than its drain): each thread takes the
    // next few rounds in order until none are left, so that the threads end together; a few
    // at a time, as consecutive rounds often share their flows (Scratch::previous_routes).
    const std::size_t n = rounds.size(), few = std::max<std::size_t>(1, n / (8 * static_cast<std::size_t>(threads)));
    std::atomic<std::size_t> next{0};
    auto block = [&](int k, Scratch& w) {
      try {
        for (std::size_t from = next.fetch_add(few); from < n; from = next.fetch_add(few)) {
          for (std::size_t i = from; i < std::min(n, from + few); ++i) costs_[rounds[i]] = price(rounds[i], focus, w, detail_of(rounds[i]));
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
