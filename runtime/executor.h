// Runs a schedule for real: each process hosts some participants (workers, and servers),
// keeps their buffers in its backend's memory, and executes their rounds. A round: encode
// what is sent encoded (the transfer's codec, through EncodedTransfers), post every send
// and receive (one MPI tag per pair of participants, so messages match in FIFO order),
// wait, then do the local work in op order — decode or reduce what arrived, copies, and
// kernels (whatever numeric operation the op names, run by the memory's implementation).
// It names no strategy and no strategy's numerics: the schedule says everything.
//
// Asynchronous rounds served by a server on its own process run as an event loop: the
// server applies each peer's push as soon as it arrives and answers with its current
// model, counting the staleness of every push (updates applied since that peer last
// pulled). Without a process of its own, a server takes asynchronous rounds in lockstep.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/executors/trace.h"
#include "runtime/backend.h"
#include "runtime/encoded_transfers.h"

namespace gradsync::runtime {

// Which process runs each participant, and the MPI tag of each ordered pair.
struct ProcessMap {
  std::vector<int> process_of;  // participant -> process
  std::vector<int> slot_of;  // participant -> its index among its process's participants
  std::vector<bool> event_loop;  // participant -> a server serving asynchronous rounds as they come
  int slots = 1;  // participants per process at most
  int tag(int from, int to) const { return slot_of[static_cast<std::size_t>(from)] * slots + slot_of[static_cast<std::size_t>(to)]; }
};

// Workers 0..N-1 on processes 0..N-1. A server that serves asynchronously gets a process of
// its own (N, N+1, ..., as long as there are processes; it then serves its rounds as an event
// loop); every other server runs on process 0.
ProcessMap map_participants(const models::Schedule& s, int processes);

struct SyncStats {
  double seconds = 0;
  std::map<std::string, double> comm_s;  // per phase: waiting for transfers
  std::map<std::string, double> local_s;  // per phase: reductions, encoding, copies, kernels
  std::uint64_t updates = 0;  // asynchronous pushes this process's servers applied
  std::vector<std::uint64_t> staleness;  // histogram
};

// Input value of element i of participant p's gradient: integers, so that sums are exact
// in any order (and divisible by N, for averages).
using InputFn = std::function<float(int participant, std::uint64_t element)>;

class ScheduleExecutor {
 public:
  ScheduleExecutor(const models::Schedule& schedule, ProcessMap map, int process, Memory& memory, Transport& transport);

  const std::vector<int>& hosted() const { return hosted_; }
  // Gradients of hosted workers from `input`; scratch and codec state zeroed.
  void reset(const InputFn& input);
  // New gradients for the next step; scratch and codec state carry over (training goes on).
  void refill(const InputFn& input);
  // One synchronisation of every hosted participant. `trace` (optional) gets its slices,
  // times relative to `origin` (seconds on the steady clock).
  SyncStats run(models::Trace* trace = nullptr, double origin = 0);
  // A hosted participant's gradient, in host memory.
  std::vector<float> gradient(int participant);

 private:
  struct Hosted;
  void run_lockstep_round(std::size_t round, SyncStats& stats, models::Trace* trace, double origin);
  void run_event_loop(int server, SyncStats& stats, models::Trace* trace, double origin);
  void post(int p, const models::Op& op, std::size_t index, std::vector<int>& handles, std::vector<std::uint8_t*>& staging);
  void finish(int p, const std::vector<models::Op>& ops, const std::vector<std::uint8_t*>& staging);
  float* at(int p, std::uint64_t byte_offset);
  std::uint8_t* staging_buffer(int p, std::size_t index, std::size_t bytes);

  const models::Schedule& s_;
  ProcessMap map_;
  int process_;
  Memory& memory_;
  Transport& transport_;
  std::vector<int> hosted_;
  std::map<int, float*> buffer_;  // hosted participant -> its buffer
  EncodedTransfers encoded_;  // codecs' residuals and what holds decoded payloads
  std::map<std::pair<int, std::size_t>, std::pair<std::uint8_t*, std::size_t>> staging_;  // (participant, slot) -> buffer, size
  std::map<int, std::vector<std::uint64_t>> version_and_pulled_;  // server -> [version, last pulled per peer...]
  std::vector<models::Op> ops_;
};

}  // namespace gradsync::runtime
