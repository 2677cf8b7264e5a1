// The schedule executor in one process, for tests that run it step after step without MPI:
// every participant on process 0, and a transport whose sends are copied into per-tag FIFO
// queues when posted and matched by the receives in wait_all(). Host memory only.
#pragma once

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/backend.h"
#include "runtime/executor.h"

namespace test_in_process {

using gradsync::runtime::Transport;

class LocalTransport final : public Transport {
 public:
  int post_send(const void* data, std::size_t bytes, int to, int tag) override {
    const auto* p = static_cast<const char*>(data);
    queues_[{self_, to, tag}].emplace_back(p, p + bytes);  // a process sends to itself here: from = to's sender
    return next_++;
  }
  int post_recv(void* data, std::size_t bytes, int from, int tag) override {
    pending_.push_back({data, bytes, from, tag});
    return next_++;
  }
  void wait_all() override {
    for (const auto& r : pending_) {
      auto& q = queues_[{self_, self_, r.tag}];
      if (q.empty()) throw std::runtime_error("in-process transport: a receive has no matching send (tag " + std::to_string(r.tag) + ")");
      if (q.front().size() != r.bytes) throw std::runtime_error("in-process transport: message size mismatch");
      if (r.bytes) std::memcpy(r.data, q.front().data(), r.bytes);
      q.pop_front();
    }
    pending_.clear();
  }
  std::size_t wait_any(const std::vector<int>&) override {
    throw std::logic_error("the in-process transport runs every round in lockstep");
  }

 private:
  struct Pending {
    void* data;
    std::size_t bytes;
    int from, tag;
  };
  // Everything lives in process 0: the tag alone names the (sender, receiver) pair.
  const int self_ = 0;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> queues_;
  std::vector<Pending> pending_;
  int next_ = 0;
};



inline std::unique_ptr<Transport> make_transport() { return std::make_unique<LocalTransport>(); }

// Every participant on process 0.
inline gradsync::runtime::ProcessMap map_all_here(const gradsync::models::Schedule& s) {
  gradsync::runtime::ProcessMap m;
  const int n = s.participant_count();
  for (int p = 0; p < n; ++p) {
    m.process_of.push_back(0);
    m.slot_of.push_back(p);
    m.event_loop.push_back(false);
  }
  m.slots = std::max(1, n);
  return m;
}

}  // namespace test_in_process
