#include "models/analytic.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "models/contention.h"
#include "models/executor.h"
#include "models/format.h"

namespace gradsync::models {

namespace {

class Walker {
 public:
  Walker(const Topology& t, const Schedule& s, const std::vector<LocalCosts>& reduce, bool each_round)
      : t_(t), s_(s), reduce_(reduce), each_round_(each_round), contention_(t), last_(static_cast<std::size_t>(s.participant_count())),
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
    bound_.clear();
    costs_.assign(s_.rounds.size(), RoundCost{});
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const Round& round = s_.rounds[r];
      // A round declared equal in cost to an earlier one costs what that one did: a ring of
      // N ranks evaluates 2 of its 2(N-1) steps.
      if (!each_round_ && round.same_as >= 0) {
        const RoundCost& like = costs_[static_cast<std::size_t>(round.same_as)];
        costs_[r] = like;
        add(round.phase, like.comm);
        if (like.local > 0) add(round.local_phase(), like.local);
        if (like.bounded) bound_[like.bound] += like.comm;
        total += like.comm + like.local;
        continue;
      }
      routes_.clear();
      bytes_.clear();
      cap_.clear();
      latency_.clear();
      std::fill(local_.begin(), local_.end(), 0.0);
      for (int p = 0; p < s_.participant_count(); ++p) {
        ops_.clear();
        round.ops(p, ops_);
        const LocalCosts& c = reduce_[static_cast<std::size_t>(p)];
        for (const Op& op : ops_) {
          if (focus >= 0 && p != focus && !(op.is_transfer() && op.peer == focus)) continue;
          switch (op.kind) {
            case OpKind::send: {
              // Most participants talk to the same peer round after round: check that first.
              auto& last = last_[static_cast<std::size_t>(p)];
              if (last.peer != op.peer) last = {op.peer, &info(p, op.peer)};
              const PairInfo& pair = *last.info;
              routes_.push_back(pair.route);
              latency_.push_back(s_.latency_in_ops ? 0.0 : pair.latency);
              bytes_.push_back(op.link_bytes());
              cap_.push_back(op.max_Bps);
              local_[static_cast<std::size_t>(p)] += op.local_seconds(c);  // encoding the payload, if it is
              break;
            }
            default: local_[static_cast<std::size_t>(p)] += op.local_seconds(c); break;
          }
        }
      }
      // Consecutive rounds often repeat the same flows (a ring's steps): share once.
      if (routes_ != previous_routes_) {
        contention_.share(routes_, bandwidth_, &limiting_);
        previous_routes_ = routes_;
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

  // What a round cost: its transfers, its busiest participant's local work, and the link
  // that bounded it (when one did).
  struct RoundCost {
    double comm = 0, local = 0;
    bool bounded = false;
    std::pair<std::size_t, bool> bound{};
  };

  const Topology& t_;
  const Schedule& s_;
  const std::vector<LocalCosts>& reduce_;
  const bool each_round_;
  std::vector<RoundCost> costs_;
  ContentionModel contention_;
  std::unordered_map<std::uint64_t, PairInfo> pairs_;
  std::vector<Op> ops_;
  std::vector<const Route*> routes_, previous_routes_;
  struct LastPeer {
    int peer = -1;
    const PairInfo* info = nullptr;
  };
  std::vector<LastPeer> last_;
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
