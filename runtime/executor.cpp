#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "runtime/kernels/kernels.h"
#include "runtime/watchdog.h"

namespace gradsync::runtime {

using models::Op;
using models::OpKind;
using models::Role;

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool serves_asynchronously(const models::Schedule& s, int server) {
  // A server whose every transfer sits in asynchronous rounds.
  bool any = false;
  std::vector<Op> ops;
  for (const auto& round : s.rounds) {
    ops.clear();
    round.ops(server, ops);
    const bool async = s.asynchronous || round.asynchronous;
    for (const Op& op : ops) {
      if (!op.is_transfer()) continue;
      if (!async) return false;
      any = true;
    }
  }
  return any;
}
}  // namespace

ProcessMap map_participants(const models::Schedule& s, int processes) {
  ProcessMap m;
  const int n = s.participant_count();
  m.process_of.assign(static_cast<std::size_t>(n), 0);
  m.slot_of.assign(static_cast<std::size_t>(n), 0);
  m.event_loop.assign(static_cast<std::size_t>(n), false);
  std::vector<int> used(static_cast<std::size_t>(std::max(processes, 1)), 0);
  int next_free = s.workers;
  for (int p = 0; p < n; ++p) {
    int process = p;
    if (s.participants[static_cast<std::size_t>(p)].role == Role::server) {
      if (next_free < processes && serves_asynchronously(s, p)) {
        process = next_free++;
        m.event_loop[static_cast<std::size_t>(p)] = true;
      } else {
        process = 0;
      }
    }
    m.process_of[static_cast<std::size_t>(p)] = process;
    m.slot_of[static_cast<std::size_t>(p)] = used.at(static_cast<std::size_t>(process))++;
  }
  m.slots = std::max(1, *std::max_element(used.begin(), used.end()));
  return m;
}

ProcessMap map_all_here(const models::Schedule& s) {
  ProcessMap m;
  const int n = s.participant_count();
  for (int p = 0; p < n; ++p) {
    m.process_of.push_back(0);
    m.slot_of.push_back(p);
    m.event_loop.push_back(false);
  }
  m.slots = std::max(1, n);
  return m;
}

ScheduleExecutor::ScheduleExecutor(const models::Schedule& schedule, ProcessMap map, int process, Memory& memory,
                                   Transport& transport)
    : s_(schedule), map_(std::move(map)), process_(process), memory_(memory), transport_(transport),
      encoded_(memory, schedule.buffer_bytes()) {
  for (int p = 0; p < s_.participant_count(); ++p) {
    if (map_.process_of[static_cast<std::size_t>(p)] != process_) continue;
    hosted_.push_back(p);
    buffer_[p] = memory_.allocate(std::max<std::uint64_t>(4, s_.buffer_bytes()));
    version_and_pulled_[p].assign(static_cast<std::size_t>(s_.participant_count()) + 1, 0);
  }
}

float* ScheduleExecutor::at(int p, std::uint64_t byte_offset) { return buffer_.at(p) + byte_offset / 4; }

std::uint8_t* ScheduleExecutor::staging_buffer(int p, std::size_t index, std::size_t bytes) {
  auto& entry = staging_[{p, index}];
  if (entry.second < bytes) {
    entry.first = reinterpret_cast<std::uint8_t*>(memory_.allocate(std::max<std::size_t>(bytes, 4)));
    entry.second = std::max<std::size_t>(bytes, 4);
  }
  return entry.first;
}

void ScheduleExecutor::reset(const InputFn& input) {
  for (int p : hosted_) {
    std::vector<float> host(static_cast<std::size_t>(std::max<std::uint64_t>(4, s_.buffer_bytes()) / 4), 0.0f);
    if (s_.participants[static_cast<std::size_t>(p)].role == Role::worker) {
      for (std::uint64_t i = 0; i < s_.gradient_bytes / 4; ++i) host[i] = input(p, i);
      for (const auto& start : s_.state_starts) {
        std::copy_n(host.begin() + static_cast<long>(start.from.offset / 4), start.state.bytes / 4,
                    host.begin() + static_cast<long>(start.state.offset / 4));
      }
    }
    memory_.upload(buffer_.at(p), host.data(), host.size());
    encoded_.reset(p);
    std::fill(version_and_pulled_[p].begin(), version_and_pulled_[p].end(), 0);
  }
  memory_.synchronize();
}

void ScheduleExecutor::refill(const InputFn& input) {
  for (int p : hosted_) {
    if (s_.participants[static_cast<std::size_t>(p)].role != Role::worker) continue;
    std::vector<float> host(static_cast<std::size_t>(s_.gradient_bytes / 4));
    for (std::uint64_t i = 0; i < host.size(); ++i) host[i] = input(p, i);
    memory_.upload(buffer_.at(p), host.data(), host.size());
    encoded_.new_values(p);
  }
  memory_.synchronize();
}

std::vector<float> ScheduleExecutor::gradient(int participant) {
  std::vector<float> host(static_cast<std::size_t>(s_.gradient_bytes / 4));
  memory_.download(host.data(), buffer_.at(participant), host.size());
  memory_.synchronize();
  return host;
}

// Posts one transfer of participant p (ops_ holds the round's ops of p).
void ScheduleExecutor::post(int p, const Op& op, std::size_t index, std::vector<int>& handles,
                            std::vector<std::uint8_t*>& staging) {
  const int peer_process = map_.process_of.at(static_cast<std::size_t>(op.peer));
  if (op.kind == OpKind::send) {
    const void* data = at(p, op.slice.offset);
    if (staging[index]) data = staging[index];  // encoded, or a server's snapshot
    handles.push_back(transport_.post_send(data, op.wire(), peer_process, map_.tag(p, op.peer)));
  } else {
    // Plain receives land in place; reductions and encoded payloads go through staging.
    void* data = at(p, op.slice.offset);
    if (op.kind == OpKind::recv_reduce || staging[index]) {
      if (!staging[index]) staging[index] = staging_buffer(p, index, op.wire());
      data = staging[index];
    }
    handles.push_back(transport_.post_recv(data, op.wire(), peer_process, map_.tag(op.peer, p)));
  }
}

// Local work after the transfers, in op order.
void ScheduleExecutor::finish(int p, const std::vector<Op>& ops, const std::vector<std::uint8_t*>& staging) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    const std::size_t count = op.slice.bytes / 4;
    float* x = at(p, op.slice.offset);
    switch (op.kind) {
      case OpKind::recv:
        if (op.encoding) {
          encoded_.decode(p, *op.encoding, op.slice, staging[i], x, false);
        } else {
          encoded_.written(p, op.slice);
        }
        break;
      case OpKind::recv_reduce:
        if (op.encoding) {
          encoded_.decode(p, *op.encoding, op.slice, staging[i], x, true);
        } else {
          memory_.sum_into(x, reinterpret_cast<const float*>(staging[i]), count);
          encoded_.written(p, op.slice);
        }
        break;
      case OpKind::copy:
        memory_.copy(x, at(p, op.source.offset), count);
        encoded_.written(p, op.slice);
        break;
      case OpKind::reduce:
        memory_.sum_into(x, at(p, op.source.offset), count);
        encoded_.written(p, op.slice);
        break;
      case OpKind::kernel: {
        const models::KernelCall& call = *op.call;
        float* operands[2] = {at(p, call.operands[0].offset), at(p, call.operands[1].offset)};
        memory_.run_kernel(*call.kernel, x, operands, count, call.params);
        encoded_.written(p, op.slice);
        for (int k = 0; k < call.kernel->operands; ++k) encoded_.written(p, call.operands[static_cast<std::size_t>(k)]);
        break;
      }
      case OpKind::compute: std::this_thread::sleep_for(std::chrono::duration<double>(op.seconds)); break;
      case OpKind::send: break;  // encoded (if at all) before the transfers
    }
  }
}

void ScheduleExecutor::run_lockstep_round(std::size_t round, SyncStats& stats, models::Trace* trace, double origin) {
  const auto& r = s_.rounds[round];
  struct Work {
    int p;
    std::vector<Op> ops;
    std::vector<std::uint8_t*> staging;
  };
  std::vector<Work> work;
  for (int p : hosted_) {
    if (map_.event_loop[static_cast<std::size_t>(p)]) continue;
    Work w{p, {}, {}};
    r.ops(p, w.ops);
    if (w.ops.empty()) continue;
    w.staging.assign(w.ops.size(), nullptr);
    work.push_back(std::move(w));
  }
  if (work.empty()) return;
  watchdog_round(round, s_.rounds.size(), &r.phase);
  const double start = now_s();
  // Encode what goes out encoded; staging for what comes in encoded.
  for (auto& w : work) {
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
      const Op& op = w.ops[i];
      if (!op.is_transfer() || !op.encoding) continue;
      if (op.kind == OpKind::send) {
        // A slice sent to several peers is encoded once: all of them get the same payload.
        bool reused = false;
        for (std::size_t j = 0; j < i && !reused; ++j) {
          if (w.ops[j].kind == OpKind::send && w.ops[j].slice == op.slice && w.staging[j]) {
            w.staging[i] = w.staging[j];
            reused = true;
          }
        }
        if (reused) continue;
      }
      w.staging[i] = staging_buffer(w.p, i, op.wire());
      if (op.kind == OpKind::send) encoded_.encode(w.p, *op.encoding, op.slice, at(w.p, op.slice.offset), w.staging[i]);
    }
  }
  memory_.synchronize();
  const double posted = now_s();
  std::vector<int> handles;
  transport_.begin_round();
  for (auto& w : work) {
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
      if (w.ops[i].is_transfer()) post(w.p, w.ops[i], i, handles, w.staging);
    }
  }
  transport_.end_round();
  transport_.wait_all();
  const double arrived = now_s();
  for (auto& w : work) finish(w.p, w.ops, w.staging);
  memory_.synchronize();
  const double end = now_s();
  stats.comm_s[r.phase] += arrived - posted;
  stats.local_s[r.local_phase()] += (posted - start) + (end - arrived);
  if (trace) {
    for (const auto& w : work) {
      trace->add({w.p, models::TraceTrack::send, r.phase, "send", posted - origin, arrived - origin, {{"round", std::to_string(round)}}});
      if (end - arrived > 0) {
        trace->add({w.p, models::TraceTrack::local, r.local_phase(), "reduce", arrived - origin, end - origin,
                    {{"round", std::to_string(round)}}});
      }
    }
  }
}

void ScheduleExecutor::run_event_loop(int server, SyncStats& stats, models::Trace* trace, double origin) {
  // Per peer: its exchange with the server, round by round (only the asynchronous rounds).
  struct Peer {
    std::vector<std::size_t> rounds;
    std::vector<std::vector<Op>> ops;
    std::size_t next = 0;  // index into rounds being served
    std::vector<int> pending;  // handles of the current round
    std::vector<std::uint8_t*> staging;
    double started = 0;
  };
  std::map<int, Peer> peers;
  std::vector<Op> all;
  for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
    all.clear();
    s_.rounds[r].ops(server, all);
    std::map<int, std::vector<Op>> by_peer;
    for (const Op& op : all) {
      if (op.is_transfer()) by_peer[op.peer].push_back(op);
    }
    for (auto& [peer, ops] : by_peer) {
      peers[peer].rounds.push_back(r);
      peers[peer].ops.push_back(std::move(ops));
    }
  }
  auto& versions = version_and_pulled_[server];  // [0] = version, [1 + peer] = version it last pulled
  std::vector<int> handle_peer;  // handle -> peer
  std::vector<int> live;
  auto start_round = [&](int peer_id, Peer& peer) {
    const auto& ops = peer.ops[peer.next];
    peer.staging.assign(ops.size(), nullptr);
    peer.pending.clear();
    peer.started = now_s();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::send) {
        // A snapshot of the model as it is now: other peers' pushes may land while this goes out.
        peer.staging[i] = staging_buffer(server, 1000 + static_cast<std::size_t>(peer_id) * 16 + i, ops[i].wire());
        memory_.copy(reinterpret_cast<float*>(peer.staging[i]), at(server, ops[i].slice.offset), ops[i].slice.bytes / 4);
        versions[1 + static_cast<std::size_t>(peer_id)] = versions[0];
      } else {
        peer.staging[i] = staging_buffer(server, 1000 + static_cast<std::size_t>(peer_id) * 16 + i, ops[i].wire());
      }
    }
    memory_.synchronize();
    std::vector<int> handles;
    for (std::size_t i = 0; i < ops.size(); ++i) post(server, ops[i], i, handles, peer.staging);
    for (int h : handles) {
      if (static_cast<std::size_t>(h) >= handle_peer.size()) handle_peer.resize(static_cast<std::size_t>(h) + 1, -1);
      handle_peer[static_cast<std::size_t>(h)] = peer_id;
      peer.pending.push_back(h);
      live.push_back(h);
    }
  };
  for (auto& [id, peer] : peers) start_round(id, peer);
  watchdog_step("serving asynchronous pushes");
  while (!live.empty()) {
    const std::size_t k = transport_.wait_any(live);
    watchdog_progress();
    const int h = live[k];
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    const int peer_id = handle_peer[static_cast<std::size_t>(h)];
    Peer& peer = peers[peer_id];
    peer.pending.erase(std::find(peer.pending.begin(), peer.pending.end(), h));
    if (!peer.pending.empty()) continue;
    // The peer's round is complete: apply what it pushed.
    const auto& ops = peer.ops[peer.next];
    const double applied = now_s();
    bool pushed = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == OpKind::recv_reduce) {
        memory_.sum_into(at(server, ops[i].slice.offset), reinterpret_cast<const float*>(peer.staging[i]), ops[i].slice.bytes / 4);
        pushed = true;
      } else if (ops[i].kind == OpKind::recv) {
        memory_.copy(at(server, ops[i].slice.offset), reinterpret_cast<const float*>(peer.staging[i]), ops[i].slice.bytes / 4);
        pushed = true;
      }
    }
    memory_.synchronize();
    const double end = now_s();
    const auto& r = s_.rounds[peer.rounds[peer.next]];
    stats.comm_s[r.phase] += applied - peer.started;
    stats.local_s[r.local_phase()] += end - applied;
    if (pushed) {
      const std::uint64_t staleness = versions[0] - versions[1 + static_cast<std::size_t>(peer_id)];
      if (stats.staleness.size() <= staleness) stats.staleness.resize(staleness + 1, 0);
      ++stats.staleness[staleness];
      ++stats.updates;
      ++versions[0];
    }
    if (trace) {
      trace->add({server, models::TraceTrack::recv, r.phase + " (rank " + std::to_string(peer_id) + ")", "recv",
                  peer.started - origin, applied - origin, {}});
    }
    if (++peer.next < peer.rounds.size()) start_round(peer_id, peer);
  }
  transport_.wait_all();  // resets the transport's handles
}

SyncStats ScheduleExecutor::run(models::Trace* trace, double origin) {
  SyncStats stats;
  const double start = now_s();
  // A synchronous server sums this step's gradients: it starts every synchronisation from
  // zero. A server of asynchronous rounds holds the model and keeps applying pushes.
  for (int p : hosted_) {
    if (s_.participants[static_cast<std::size_t>(p)].role == Role::server && !s_.asynchronous &&
        !serves_asynchronously(s_, p)) {
      memory_.fill_zero(buffer_.at(p), static_cast<std::size_t>(s_.gradient_bytes / 4));
    }
  }
  for (int p : hosted_) {
    if (map_.event_loop[static_cast<std::size_t>(p)]) run_event_loop(p, stats, trace, origin);
  }
  for (std::size_t r = 0; r < s_.rounds.size(); ++r) run_lockstep_round(r, stats, trace, origin);
  watchdog_step("after the synchronisation");  // (the round's phase belongs to the schedule)
  stats.seconds = now_s() - start;
  return stats;
}

}  // namespace gradsync::runtime
