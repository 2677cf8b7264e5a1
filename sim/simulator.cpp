#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <stdexcept>

#include <simgrid/s4u.hpp>
#include <sys/resource.h>

#include "models/support/error.h"
#include "models/support/process.h"
#include "sim/platform.h"

namespace gradsync::sim {

namespace s4u = simgrid::s4u;
using models::Op;
using models::OpKind;
using models::Role;
using models::Schedule;

// ---------------------------------------------------------------------------------------
// Result serialisation (child -> parent)

models::json SimResult::to_json() const {
  models::json phases_json = models::json::array();
  for (const auto& p : phases) phases_json.push_back({p.name, p.seconds});
  models::json out = {{"total_s", total_s},
                      {"syncs", syncs},
                      {"first_sync_s", first_sync_s},
                      {"phases", phases_json},
                      {"compute_busy_s", compute_busy_s},
                      {"updates", updates},
                      {"staleness_histogram", staleness_histogram},
                      {"wall_s", wall_s},
                      {"rounds_fast_forwarded", rounds_fast_forwarded},
                      {"fast_forward_exact", fast_forward_exact},
                      {"fast_forward_after", fast_forward_after},
                      {"peak_rss_MB", peak_rss_MB}};
  if (trace) out["trace"] = models::json::parse(trace->to_json().dump());
  return out;
}

SimResult SimResult::from_json(const models::json& doc) {
  SimResult r;
  r.total_s = doc.at("total_s").get<double>();
  r.syncs = doc.at("syncs").get<int>();
  r.first_sync_s = doc.at("first_sync_s").get<double>();
  for (const auto& p : doc.at("phases")) r.phases.push_back({p.at(0).get<std::string>(), p.at(1).get<double>()});
  r.compute_busy_s = doc.at("compute_busy_s").get<double>();
  r.updates = doc.at("updates").get<std::uint64_t>();
  r.staleness_histogram = doc.at("staleness_histogram").get<std::vector<std::uint64_t>>();
  r.wall_s = doc.at("wall_s").get<double>();
  r.rounds_fast_forwarded = doc.at("rounds_fast_forwarded").get<std::uint64_t>();
  r.fast_forward_exact = doc.at("fast_forward_exact").get<bool>();
  r.fast_forward_after = doc.at("fast_forward_after").get<int>();
  r.peak_rss_MB = doc.at("peak_rss_MB").get<double>();
  if (doc.contains("trace")) r.trace = models::Trace::from_json(doc.at("trace"));
  return r;
}

double SimResult::mean_staleness() const {
  double sum = 0, count = 0;
  for (std::size_t s = 0; s < staleness_histogram.size(); ++s) {
    sum += static_cast<double>(s) * static_cast<double>(staleness_histogram[s]);
    count += static_cast<double>(staleness_histogram[s]);
  }
  return count > 0 ? sum / count : 0.0;
}

std::uint64_t SimResult::max_staleness() const {
  for (std::size_t s = staleness_histogram.size(); s > 0; --s) {
    if (staleness_histogram[s - 1] > 0) return s - 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// The simulation

namespace {

struct RoundTiming {
  double start = -1, comm_end = -1, local_end = -1, local_s = 0;
};

struct Message {
  std::uint64_t version = 0;
};
Message kSynchronous;  // the payload of every synchronous transfer (only servers' pulls carry a version)

// Per-participant vectors reused round after round, and when its last rounds started.
struct Scratch {
  std::vector<s4u::CommPtr> comms;
  std::vector<s4u::ActorPtr> routed;  // sends routed through chosen nodes (Op::via), each by an actor of its own
  std::vector<bool> is_send;
  std::vector<Message*> received;
  double started[2] = {-1, -1};  // the round before last, the last
  RoundTiming last;  // the last round's timing (start, ends, local work)
};

// One participant's jump over a run of rounds: the period it jumped by, and the one before.
struct Jump {
  std::size_t round = 0;
  int sync = 0;
  double period = 0, before = 0;
};

class Simulation {
 public:
  Simulation(const models::Topology& t, const Schedule& s, const SimOptions& o) : t_(t), s_(s), o_(o) {
    const std::size_t n = static_cast<std::size_t>(s.participant_count());
    first_sync_.assign(s.rounds.size(), RoundTiming{});
    scratch_.resize(n);
    version_.assign(n, 0);
    // Which version each worker last pulled from each server (servers only: N x N for every
    // participant would be 134 MB at 4096 ranks).
    last_pulled_.resize(n);
    for (std::size_t p = 0; p < n; ++p) {
      if (s.participants[p].role == Role::server) last_pulled_[p].assign(n, 0);
    }
    for (const Round& r : s.rounds) any_async_round_ = any_async_round_ || r.asynchronous || s.asynchronous;
    // Runs of rounds declared equal in cost to the run's first: after `after` of them, jump
    // to the run's end.
    const std::size_t after = static_cast<std::size_t>(std::max(0, o.fast_forward_after));
    if (after >= 3 && !o.trace && !s.asynchronous) {
      jump_to_.assign(s.rounds.size(), 0);
      for (std::size_t a = 0; a < s.rounds.size();) {
        std::size_t b = a + 1;
        while (b < s.rounds.size() && s.rounds[b].same_as == static_cast<int>(a) && !s.rounds[b].rotated() && !is_async(b)) ++b;
        if (!is_async(a) && b - a >= after + 2) jump_to_[a + after] = b;
        a = b;
      }
    }
  }

  using Round = models::Round;

  int syncs_per_worker() const {
    if (o_.sync_every_step) return o_.steps;
    return o_.steps / std::max(1, s_.period_steps);
  }
  bool is_async(std::size_t round) const { return s_.asynchronous || s_.rounds[round].asynchronous; }
  bool is_server(int p) const { return s_.participants[static_cast<std::size_t>(p)].role == Role::server; }

  s4u::Mailbox* mailbox(int from, int to) {
    const std::uint64_t key = (static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to);
    auto it = mailboxes_.find(key);
    if (it == mailboxes_.end()) {
      it = mailboxes_.emplace(key, s4u::Mailbox::by_name(std::to_string(from) + ">" + std::to_string(to))).first;
    }
    return it->second;
  }

  // Executes one participant's ops of one round. `server` >= 0: a handler acting for that
  // server (its local work is serialised by the server's mutex and versioned).
  // `w`: the calling actor's own scratch vectors.
  void run_round(Scratch& w, int p, std::size_t round, const std::vector<Op>& ops, int sync_index, int server = -1,
                 int peer = -1) {
    const double start = s4u::Engine::get_clock();
    w.comms.clear();
    w.routed.clear();
    w.is_send.clear();
    w.received.clear();
    w.received.reserve(ops.size());
    double local_s = 0;
    const models::LocalCosts& c = o_.costs[static_cast<std::size_t>(server >= 0 ? server : p)];
    std::uint64_t sent_bytes = 0, received_bytes = 0;
    int sends = 0, recvs = 0;
    for (const Op& op : ops) {
      switch (op.kind) {
        case OpKind::send: {
          const int owner = server >= 0 ? server : p;
          Message* m = &kSynchronous;
          if (server >= 0) {  // an asynchronous server tells the worker which version it pulls
            m = new Message{version_[static_cast<std::size_t>(server)]};
            last_pulled_[static_cast<std::size_t>(server)][static_cast<std::size_t>(op.peer)] = m->version;
          }
          // What crosses the links (a protocol's flags included), at most at the engine's rate,
          // or without one, between GPUs without peer access, at the staged copy's.
          double rate = op.max_Bps;
          if (rate <= 0) {
            rate = t_.staged_copy_Bps(s_.participants[static_cast<std::size_t>(owner)].node, s_.participants[static_cast<std::size_t>(op.peer)].node)
                       .value_or(0.0);
          }
          const auto bytes = static_cast<std::uint64_t>(op.link_bytes());
          s4u::Mailbox* to = mailbox(owner, op.peer);
          const auto via_host = op.via == models::kNoVia
                                  ? through_hosts_.end()
                                  : through_hosts_.find({s_.participants[static_cast<std::size_t>(owner)].node, models::via_node(op.via[0]), models::via_node(op.via[1])});
          if (via_host != through_hosts_.end()) {
            // Put from the sender node's host whose routes pass through the chosen nodes: an
            // actor there moves it, and this one waits for that actor below.
            w.routed.push_back(s4u::Actor::create("routed", via_host->second, [to, m, bytes, rate] {
              s4u::CommPtr comm = to->put_init(m, bytes);
              if (rate > 0) comm->set_rate(rate);
              comm->wait();
            }));
          } else {
            s4u::CommPtr comm = to->put_init(m, bytes);
            if (rate > 0) comm->set_rate(rate);
            w.comms.push_back(comm->start());
            w.is_send.push_back(true);
          }
          sent_bytes += op.wire();
          ++sends;
          local_s += op.local_seconds(c);  // encoding the payload, if it is
          break;
        }
        case OpKind::recv:
        case OpKind::recv_reduce: {
          w.received.push_back(nullptr);
          w.comms.push_back(mailbox(op.peer, server >= 0 ? server : p)->get_async<Message>(&w.received.back()));
          w.is_send.push_back(false);
          received_bytes += op.wire();
          ++recvs;
          local_s += op.local_seconds(c);
          break;
        }
        default: local_s += op.local_seconds(c); break;
      }
    }
    double send_end = start, recv_end = start;
    if (!o_.trace) {
      // One wait for all; only the timeline needs each transfer's end.
      if (!w.comms.empty()) s4u::Comm::wait_all(w.comms);
      for (const s4u::ActorPtr& a : w.routed) a->join();
      send_end = recv_end = s4u::Engine::get_clock();
    } else {
      std::vector<s4u::CommPtr> pending = w.comms;
      std::vector<bool> kind = w.is_send;
      while (!pending.empty()) {
        const auto k = static_cast<std::size_t>(s4u::Comm::wait_any(pending));
        (kind[k] ? send_end : recv_end) = s4u::Engine::get_clock();
        pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
        kind.erase(kind.begin() + static_cast<std::ptrdiff_t>(k));
      }
      for (const s4u::ActorPtr& a : w.routed) a->join();
      if (!w.routed.empty()) send_end = std::max(send_end, s4u::Engine::get_clock());
    }
    if (sends == 0) send_end = start;
    if (recvs == 0) recv_end = start;
    const double comm_end = std::max(send_end, recv_end);
    for (Message* m : w.received) {
      if (m != &kSynchronous) delete m;
    }

    // Local work; a server applies one update at a time.
    double local_start = comm_end;
    if (local_s > 0) {
      if (server >= 0) {
        std::unique_lock<s4u::Mutex> lock(*server_mutex(server));
        local_start = s4u::Engine::get_clock();
        s4u::this_actor::execute(local_s * kHostSpeed);
        record_update(server, peer);
      } else {
        s4u::this_actor::execute(local_s * kHostSpeed);
      }
    } else if (server >= 0 && recvs > 0) {
      record_update(server, peer);
    }
    const double end = s4u::Engine::get_clock();
    w.started[0] = w.started[1];
    w.started[1] = start;
    w.last = RoundTiming{start, comm_end, end, local_s};
    if (sync_index == 0) record_first_sync(round, w.last);
    if (o_.trace) {
      const int track_owner = p;
      const std::string& phase = s_.rounds[round].phase;
      const std::string who = server >= 0 ? " (for rank " + std::to_string(peer) + ")" : "";
      if (sends > 0) {
        trace_.add({track_owner, models::TraceTrack::send, phase + ": send " + std::to_string(sends) + who, "send", start,
                    send_end, {{"bytes", std::to_string(sent_bytes)}, {"round", std::to_string(round)}}});
      }
      if (recvs > 0) {
        trace_.add({track_owner, models::TraceTrack::recv, phase + ": recv " + std::to_string(recvs) + who, "recv", start,
                    recv_end, {{"bytes", std::to_string(received_bytes)}, {"round", std::to_string(round)}}});
      }
      if (local_s > 0) {
        trace_.add({track_owner, models::TraceTrack::local, s_.rounds[round].local_phase() + who, "reduce", local_start,
                    end, {{"round", std::to_string(round)}}});
      }
    }
  }

  // The first synchronisation, aggregated over participants.
  void record_first_sync(std::size_t round, const RoundTiming& t) {
    auto& timing = first_sync_[round];
    timing.start = timing.start < 0 ? t.start : std::min(timing.start, t.start);
    timing.comm_end = std::max(timing.comm_end, t.comm_end);
    timing.local_end = std::max(timing.local_end, t.local_end);
    timing.local_s = std::max(timing.local_s, t.local_s);
  }

  // Participant p, about to start round `from`, jumps to round `to`: each round between
  // takes what its last one took (the time since it started), as it does once every
  // participant's rounds follow one period (checked after the run: jumps_).
  void jump(int p, std::size_t from, std::size_t to, int sync_index) {
    Scratch& w = scratch_[static_cast<std::size_t>(p)];
    const double now = s4u::Engine::get_clock();
    const double period = now - w.started[1];
    jumps_.push_back({from, sync_index, period, w.started[0] >= 0 ? w.started[1] - w.started[0] : -1});
    if (sync_index == 0) {
      for (std::size_t r = from; r < to; ++r) {
        const double shift = static_cast<double>(r - from + 1) * period;
        record_first_sync(r, RoundTiming{w.last.start + shift, w.last.comm_end + shift, w.last.local_end + shift,
                                         w.last.local_s});
      }
    }
    jumped_ += to - from;
    s4u::this_actor::sleep_for(static_cast<double>(to - from) * period);
    // As if the rounds had run: the last one started a period before now.
    w.started[1] = s4u::Engine::get_clock() - period;
    w.started[0] = w.started[1] - period;
    w.last.start = w.started[1];
  }

  // Whether every jump was exact: each participant's period equal to its period before,
  // and all participants of a run jumping by one period.
  bool jumps_exact() const {
    constexpr double kTolerance = 1e-6;  // relative (SimGrid's own precision is finer)
    std::map<std::pair<std::size_t, int>, double> common;
    for (const Jump& j : jumps_) {
      const double scale = std::max(std::fabs(j.period), 1e-12);
      if (j.before < 0 || std::fabs(j.period - j.before) > kTolerance * scale) return false;
      auto [it, fresh] = common.emplace(std::make_pair(j.round, j.sync), j.period);
      if (!fresh && std::fabs(it->second - j.period) > kTolerance * scale) return false;
    }
    return true;
  }

  void record_update(int server, int peer) {
    auto& v = version_[static_cast<std::size_t>(server)];
    const std::uint64_t staleness = v - last_pulled_[static_cast<std::size_t>(server)][static_cast<std::size_t>(peer)];
    if (staleness_.size() <= staleness) staleness_.resize(staleness + 1, 0);
    ++staleness_[staleness];
    ++updates_;
    ++v;
  }

  s4u::MutexPtr server_mutex(int server) {
    auto it = mutexes_.find(server);
    if (it == mutexes_.end()) it = mutexes_.emplace(server, s4u::Mutex::create()).first;
    return it->second;
  }

  // All of participant p's synchronous rounds of one synchronisation (asynchronous rounds
  // of a server are left to its handlers).
  void run_sync(int p, int sync_index) {
    std::vector<Op> ops;
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      if (is_server(p) && is_async(r)) continue;
      ops.clear();
      s_.rounds[r].ops(p, ops);
      if (ops.empty()) continue;
      if (!jump_to_.empty() && jump_to_[r] > r) {
        jump(p, r, jump_to_[r], sync_index);
        r = jump_to_[r] - 1;
        continue;
      }
      run_round(scratch_[static_cast<std::size_t>(p)], p, r, ops, sync_index);
    }
  }

  double compute_time(int worker, std::mt19937_64& rng) {
    double t = o_.compute_s;
    if (!o_.speeds.empty()) t /= o_.speeds[static_cast<std::size_t>(worker)];
    if (o_.jitter_cv > 0 && t > 0) {
      // Log-normal with mean 1 and the requested coefficient of variation.
      const double sigma2 = std::log(1 + o_.jitter_cv * o_.jitter_cv);
      std::lognormal_distribution<double> noise(-sigma2 / 2, std::sqrt(sigma2));
      t *= noise(rng);
    }
    return t;
  }

  void worker(int p) {
    std::mt19937_64 rng(o_.seed * 7919 + static_cast<std::uint64_t>(p));
    int sync_index = 0;
    // Steps between two synchronisations touch nothing shared: without a trace (which shows
    // each step) they run as one computation of their summed time, not one each (a BMUF
    // period of 1,875 steps on 1,024 ranks was 3.8 M activities).
    double pending = 0;
    auto compute = [&](double c) {
      if (c > 0) {
        s4u::this_actor::execute(c * kHostSpeed);
        compute_busy_ += c;
      }
    };
    for (int step = 0; step < o_.steps; ++step) {
      const double c = compute_time(p, rng);
      if (o_.trace) {
        const double start = s4u::Engine::get_clock();
        compute(c);
        if (c > 0) {
          trace_.add({p, models::TraceTrack::local, "compute", "compute", start, s4u::Engine::get_clock(),
                      {{"step", std::to_string(step)}}});
        }
      } else {
        pending += c;
      }
      if (o_.sync_every_step || (step + 1) % std::max(1, s_.period_steps) == 0) {
        compute(pending);
        pending = 0;
        run_sync(p, sync_index++);
      }
    }
    compute(pending);
  }

  void server_main(int p) {
    for (int k = 0; k < syncs_per_worker(); ++k) run_sync(p, k);
  }

  // Serves one peer's asynchronous rounds, once per synchronisation of that peer.
  void handler(int server, int peer) {
    std::vector<Op> all, mine;
    Scratch scratch;
    for (int k = 0; k < syncs_per_worker(); ++k) {
      for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
        if (!is_async(r)) continue;
        all.clear();
        mine.clear();
        s_.rounds[r].ops(server, all);
        for (const Op& op : all) {
          if (op.is_transfer() && op.peer == peer) mine.push_back(op);
        }
        if (!mine.empty()) run_round(scratch, server, r, mine, k, server, peer);
      }
    }
  }

  SimResult run() {
    const auto wall_start = std::chrono::steady_clock::now();
    // Routes only for the pairs that talk.
    std::set<std::pair<std::size_t, std::size_t>> pairs;
    std::set<std::array<std::size_t, 4>> through;  // sends routed through chosen nodes (Op::via)
    std::vector<std::set<int>> async_peers(static_cast<std::size_t>(s_.participant_count()));
    std::vector<Op> ops;
    bool capped = false;  // a transfer with a rate of its own
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      if (s_.rounds[r].same_as >= 0) continue;  // the same peers as that earlier round
      for (int p = 0; p < s_.participant_count(); ++p) {
        ops.clear();
        s_.rounds[r].ops(p, ops);
        for (const Op& op : ops) {
          if (op.kind != OpKind::send && !op.is_transfer()) continue;
          const std::size_t a = s_.participants[static_cast<std::size_t>(p)].node;
          const std::size_t b = s_.participants[static_cast<std::size_t>(op.peer)].node;
          if (a != b) pairs.insert(op.kind == OpKind::send ? std::make_pair(a, b) : std::make_pair(b, a));
          if (op.kind == OpKind::send && op.via != models::kNoVia) through.insert({a, models::via_node(op.via[0]), models::via_node(op.via[1]), b});
          capped = capped || (op.kind == OpKind::send && (op.max_Bps > 0 || t_.staged_copy_Bps(a, b)));
          if (is_server(p) && is_async(r)) async_peers[static_cast<std::size_t>(p)].insert(op.peer);
        }
      }
    }
    // Enough cores that actors sharing a host (a server's handlers) never share a core.
    std::map<std::size_t, int> cores;
    for (const auto& part : s_.participants) cores[part.node] += 1;
    for (auto& [node, count] : cores) count += 1 + static_cast<int>(s_.participants.size());
    if (capped && !s_.latency_in_ops) keep_transfer_rates(*s4u::Engine::get_instance(), o_.network.name);
    const Platform platform = build_platform(t_, {pairs.begin(), pairs.end()}, cores, !s_.latency_in_ops, {through.begin(), through.end()});
    through_hosts_ = platform.through;

    for (int p = 0; p < s_.participant_count(); ++p) {
      const auto& part = s_.participants[static_cast<std::size_t>(p)];
      s4u::Host* host = platform.host(part.node);
      if (part.role == Role::worker) {
        s4u::Actor::create("rank" + std::to_string(p), host, [this, p] { worker(p); });
        if (o_.trace) trace_.name_participant(p, "rank " + std::to_string(p) + " (" + t_.node(part.node).id + ")");
      } else {
        s4u::Actor::create("server" + std::to_string(p), host, [this, p] { server_main(p); });
        for (int peer : async_peers[static_cast<std::size_t>(p)]) {
          s4u::Actor::create("server" + std::to_string(p) + "-for-" + std::to_string(peer), host,
                             [this, p, peer] { handler(p, peer); });
        }
        if (o_.trace) trace_.name_participant(p, "server (" + t_.node(part.node).id + ")");
      }
    }
    s4u::Engine::get_instance()->run();

    SimResult result;
    result.total_s = s4u::Engine::get_clock();
    result.syncs = syncs_per_worker();
    result.updates = updates_;
    result.staleness_histogram = staleness_;
    result.compute_busy_s = s_.workers > 0 ? compute_busy_ / s_.workers : 0;
    result.rounds_fast_forwarded = s_.participant_count() > 0 ? jumped_ / static_cast<std::uint64_t>(s_.participant_count()) : 0;
    result.fast_forward_exact = jumps_exact();
    result.fast_forward_after = jump_to_.empty() ? 0 : o_.fast_forward_after;
    // The first synchronisation, round by round: a round ends when its last participant
    // finishes; its span beyond the previous round's end splits into transfer time and the
    // busiest participant's local work.
    double first_start = -1, previous_end = -1;
    std::map<std::string, std::size_t> index;
    auto add = [&](const std::string& name, double seconds) {
      auto it = index.find(name);
      if (it == index.end()) {
        it = index.emplace(name, result.phases.size()).first;
        result.phases.push_back({name, 0});
      }
      result.phases[it->second].seconds += seconds;
    };
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const RoundTiming& t = first_sync_[r];
      if (t.start < 0) continue;
      const double start = t.start, end = t.local_end, local = t.local_s;
      if (first_start < 0) first_start = start;
      const double span = end - std::max(start, previous_end < 0 ? start : previous_end);
      const double local_part = std::min(local, std::max(0.0, span));
      add(s_.rounds[r].phase, std::max(0.0, span - local_part));
      if (local_part > 0) add(s_.rounds[r].local_phase(), local_part);
      previous_end = std::max(previous_end, end);
    }
    result.first_sync_s = first_start < 0 ? 0.0 : previous_end - first_start;
    if (o_.trace) result.trace = trace_;
    result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    result.peak_rss_MB = static_cast<double>(usage.ru_maxrss) / 1024.0;
    return result;
  }

 private:
  const models::Topology& t_;
  const Schedule& s_;
  const SimOptions& o_;
  std::unordered_map<std::uint64_t, s4u::Mailbox*> mailboxes_;
  std::map<std::array<std::size_t, 3>, s4u::Host*> through_hosts_;  // Platform::through
  std::vector<Scratch> scratch_;
  std::map<int, s4u::MutexPtr> mutexes_;
  std::vector<RoundTiming> first_sync_;  // per round of the first synchronisation
  std::vector<std::size_t> jump_to_;  // [r] > r: a participant about to start round r jumps to that round
  std::vector<Jump> jumps_;
  std::uint64_t jumped_ = 0;  // rounds jumped over, summed over participants
  std::vector<std::uint64_t> version_;
  std::vector<std::vector<std::uint64_t>> last_pulled_;
  std::vector<std::uint64_t> staleness_;
  std::uint64_t updates_ = 0;
  double compute_busy_ = 0;
  bool any_async_round_ = false;
  models::Trace trace_;
};

}  // namespace

SimResult simulate_here(const models::Topology& topology, const Schedule& schedule, const SimOptions& options) {
  if (options.costs.size() != static_cast<std::size_t>(schedule.participant_count())) {
    throw std::logic_error("simulate: one reduction cost per participant is required");
  }
  if (!options.speeds.empty() && options.speeds.size() != static_cast<std::size_t>(schedule.workers)) {
    throw models::InputError("--speeds: " + std::to_string(options.speeds.size()) + " values for " +
                             std::to_string(schedule.workers) + " ranks; expected one per rank");
  }
  // Small actor stacks; selective max-min updates (only the flows a change touches are
  // recomputed: 20 % faster on a 1024-rank ring).
  std::vector<std::string> args = {"gradsync-sim", "--log=root.thres:critical", "--cfg=contexts/stack-size:256",
                                   "--cfg=network/maxmin-selective-update:yes"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);
  s4u::Engine engine(&argc, argv.data());
  set_network_model(engine, options.network.name);
  if (options.network.latency_factor) engine.set_config("network/latency-factor", *options.network.latency_factor);
  if (options.network.bandwidth_factor) engine.set_config("network/bandwidth-factor", *options.network.bandwidth_factor);
  Simulation simulation(topology, schedule, options);
  return simulation.run();
}

SimResult simulate(const models::Topology& topology, const Schedule& schedule, const SimOptions& options) {
  SimOptions o = options;
  double wall = 0;
  for (;;) {
    const std::string text = models::run_in_child([&] { return simulate_here(topology, schedule, o).to_json().dump(); }, "simulate");
    SimResult r = SimResult::from_json(models::json::parse(text));
    wall += r.wall_s;
    // A jump taken before the rounds settled into one period: again, settling longer.
    if (r.fast_forward_exact || o.fast_forward_after <= 0) {
      r.wall_s = wall;
      return r;
    }
    const auto longer = static_cast<std::size_t>(o.fast_forward_after) * 8;
    o.fast_forward_after = longer >= schedule.rounds.size() ? 0 : static_cast<int>(longer);
  }
}

}  // namespace gradsync::sim
