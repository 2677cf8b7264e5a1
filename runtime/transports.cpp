#include "runtime/transports.h"

#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace gradsync::runtime {

namespace {

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string(what) + ": " + std::string(text, static_cast<std::size_t>(length)));
  }
}

// MPI counts are ints: large transfers go as several messages of at most 1 GiB.
constexpr std::size_t kChunk = std::size_t{1} << 30;

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm) : comm_(comm) {}
  int post_send(const void* data, std::size_t bytes, int to, int tag) override {
    return post(const_cast<void*>(data), bytes, to, tag, true);
  }
  int post_recv(void* data, std::size_t bytes, int from, int tag) override { return post(data, bytes, from, tag, false); }
  void wait_all() override {
    std::vector<MPI_Request> live;
    for (auto& group : requests_) live.insert(live.end(), group.begin(), group.end());
    if (!live.empty()) check_mpi(MPI_Waitall(static_cast<int>(live.size()), live.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    requests_.clear();
    done_.clear();
  }
  std::size_t wait_any(const std::vector<int>& handles) override {
    // Usual case, one message per transfer: block in MPI_Waitany.
    std::vector<MPI_Request> single;
    std::vector<std::size_t> position;
    bool all_single = true;
    for (std::size_t i = 0; i < handles.size(); ++i) {
      const auto h = static_cast<std::size_t>(handles[i]);
      if (done_.at(h)) continue;
      if (requests_.at(h).size() != 1) all_single = false;
      single.push_back(requests_[h][0]);
      position.push_back(i);
    }
    if (single.empty()) throw std::logic_error("wait_any: nothing left to wait for");
    if (all_single) {
      int index = MPI_UNDEFINED;
      check_mpi(MPI_Waitany(static_cast<int>(single.size()), single.data(), &index, MPI_STATUS_IGNORE), "MPI_Waitany");
      const std::size_t i = position.at(static_cast<std::size_t>(index));
      const auto h = static_cast<std::size_t>(handles[i]);
      requests_[h][0] = MPI_REQUEST_NULL;
      done_[h] = true;
      return i;
    }
    while (true) {
      for (std::size_t i = 0; i < handles.size(); ++i) {
        auto& group = requests_.at(static_cast<std::size_t>(handles[i]));
        if (done_.at(static_cast<std::size_t>(handles[i]))) continue;
        int flag = 0;
        check_mpi(MPI_Testall(static_cast<int>(group.size()), group.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
        if (flag) {
          done_[static_cast<std::size_t>(handles[i])] = true;
          return i;
        }
      }
    }
  }

 private:
  int post(void* data, std::size_t bytes, int peer, int tag, bool send) {
    std::vector<MPI_Request> group;
    auto* p = static_cast<char*>(data);
    std::size_t offset = 0;
    do {
      const std::size_t n = std::min(kChunk, bytes - offset);
      MPI_Request r;
      if (send) {
        check_mpi(MPI_Isend(p + offset, static_cast<int>(n), MPI_BYTE, peer, tag, comm_, &r), "MPI_Isend");
      } else {
        check_mpi(MPI_Irecv(p + offset, static_cast<int>(n), MPI_BYTE, peer, tag, comm_, &r), "MPI_Irecv");
      }
      group.push_back(r);
      offset += n;
    } while (offset < bytes);
    requests_.push_back(std::move(group));
    done_.push_back(false);
    return static_cast<int>(requests_.size()) - 1;
  }

  MPI_Comm comm_;
  std::vector<std::vector<MPI_Request>> requests_;  // per handle: the messages of one transfer
  std::vector<bool> done_;
};

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
      if (q.empty()) throw std::runtime_error("reference executor: a receive has no matching send (tag " + std::to_string(r.tag) + ")");
      if (q.front().size() != r.bytes) throw std::runtime_error("reference executor: message size mismatch");
      if (r.bytes) std::memcpy(r.data, q.front().data(), r.bytes);
      q.pop_front();
    }
    pending_.clear();
  }
  std::size_t wait_any(const std::vector<int>&) override {
    throw std::logic_error("the reference executor runs every round in lockstep");
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

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm) { return std::make_unique<MpiTransport>(comm); }
std::unique_ptr<Transport> make_local_transport() { return std::make_unique<LocalTransport>(); }

}  // namespace gradsync::runtime
