#include "runtime/transports.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "runtime/watchdog.h"

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

  // Polls with MPI_Testsome (MPI_Waitall spins the same way) so that every completion is
  // progress for the watchdog, and a wait that stalls can say which transfers are left.
  void wait_all() override {
    std::vector<std::size_t> open;
    for (std::size_t h = 0; h < transfers_.size(); ++h) {
      if (transfers_[h].left > 0) open.push_back(h);
    }
    wait_until([&] { return std::all_of(open.begin(), open.end(), [&](std::size_t h) { return transfers_[h].left == 0; }); },
               open);
    requests_.clear();
    owner_.clear();
    transfers_.clear();
  }

  std::size_t wait_any(const std::vector<int>& handles) override {
    std::vector<std::size_t> open;
    for (int h : handles) {
      if (transfers_.at(static_cast<std::size_t>(h)).left > 0 || !transfers_[static_cast<std::size_t>(h)].reported) {
        open.push_back(static_cast<std::size_t>(h));
      }
    }
    if (open.empty()) throw std::logic_error("wait_any: nothing left to wait for");
    std::size_t found = handles.size();
    wait_until(
        [&] {
          for (std::size_t i = 0; i < handles.size(); ++i) {
            Transfer& t = transfers_[static_cast<std::size_t>(handles[i])];
            if (t.left == 0 && !t.reported) {
              t.reported = true;
              found = i;
              return true;
            }
          }
          return false;
        },
        open);
    return found;
  }

 private:
  struct Transfer {
    int peer;
    std::size_t bytes;
    bool send;
    int left;  // messages not completed yet
    bool reported = false;  // wait_any returned it
  };

  int post(void* data, std::size_t bytes, int peer, int tag, bool send) {
    const int handle = static_cast<int>(transfers_.size());
    transfers_.push_back({peer, bytes, send, 0});
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
      requests_.push_back(r);
      owner_.push_back(handle);
      ++transfers_.back().left;
      offset += n;
    } while (offset < bytes);
    return handle;
  }

  // Polls every posted message until `done()`; completions are progress, and a wait that
  // has not moved for a moment tells the watchdog which of `open` are left.
  template <typename Done>
  void wait_until(Done done, const std::vector<std::size_t>& open) {
    indices_.resize(requests_.size());
    std::int64_t spins = 0;
    auto quiet_since = std::chrono::steady_clock::now();
    bool reported = false;
    while (!done()) {
      int count = 0;
      check_mpi(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices_.data(),
                             MPI_STATUSES_IGNORE),
                "MPI_Testsome");
      if (count == MPI_UNDEFINED) count = 0;
      for (int k = 0; k < count; ++k) --transfers_[static_cast<std::size_t>(owner_[static_cast<std::size_t>(indices_[static_cast<std::size_t>(k)])])].left;
      if (count > 0) {
        watchdog_progress();
        if (reported) {
          watchdog_stalled("");
          reported = false;
        }
        spins = 0;
        quiet_since = std::chrono::steady_clock::now();
      } else if (++spins % 1024 == 0 && !reported &&
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - quiet_since).count() > kStallReportSeconds) {
        report_pending(open);
        reported = true;
      }
    }
    if (reported) watchdog_stalled("");
  }

  // "pending: receive of 4194304 B from rank 1, send of 4194304 B to rank 3"
  void report_pending(const std::vector<std::size_t>& open) const {
    std::string text;
    for (std::size_t h : open) {
      const Transfer& t = transfers_[h];
      if (t.left == 0) continue;
      text += (text.empty() ? "" : ", ") + std::string(t.send ? "send of " : "receive of ") + std::to_string(t.bytes) +
              (t.send ? " B to rank " : " B from rank ") + std::to_string(t.peer);
    }
    watchdog_stalled(text.empty() ? "" : "pending: " + text);
  }

  MPI_Comm comm_;
  std::vector<MPI_Request> requests_;  // every posted message (MPI_REQUEST_NULL once complete)
  std::vector<int> owner_;  // message -> its transfer (handle)
  std::vector<Transfer> transfers_;  // per handle
  std::vector<int> indices_;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm) { return std::make_unique<MpiTransport>(comm); }

}  // namespace gradsync::runtime
