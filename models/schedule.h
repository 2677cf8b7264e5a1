// A Schedule: what every participant (the N worker ranks, plus parameter servers) does,
// round by round. A round is a set of ops each participant runs concurrently: sends and
// receives of slices of its buffer, local copies and reductions, quantisation, compute.
// Sends and receives between an ordered pair match in FIFO order; in a synchronous
// (lockstep) schedule every receive matches a send of the same round.
//
// Schedules stay compact for large N: a round holds a generator that produces one
// participant's ops on demand (a 4096-rank ring has 8190 rounds, not 67 M stored ops).
//
// Strategies build schedules (models/strategies/); executors run them: the symbolic
// checker (models/symbolic.h), the analytic model (models/analytic.h), the simulator
// (sim/) and the real runtime (runtime/). No executor knows which strategy it runs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gradsync::models {

// A region of a participant's buffer, in bytes. The buffer holds the gradient
// [0, gradient_bytes) followed by scratch space [gradient_bytes, gradient_bytes + scratch_bytes).
struct Slice {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t end() const { return offset + bytes; }
  bool operator==(const Slice&) const = default;
};

enum class OpKind : std::uint8_t {
  send,         // send `slice` to `peer`
  recv,         // receive from `peer` into `slice` (overwrite)
  recv_reduce,  // receive from `peer` and add into `slice`
  copy,         // local: slice <- source
  reduce,       // local: slice += source
  quantize,     // local: encode `slice` to `bits` per value (in place, with error feedback)
  dequantize,   // local: decode `slice`
  compute,      // local: busy for `seconds`
};

struct Op {
  OpKind kind = OpKind::compute;
  int peer = -1;  // participant index (send / recv / recv_reduce)
  Slice slice;
  Slice source;  // copy / reduce
  std::uint64_t wire_bytes = 0;  // bytes on the wire when they differ from slice.bytes (compression); 0: same
  int bits = 32;  // quantize / dequantize
  double seconds = 0;  // compute

  std::uint64_t wire() const { return wire_bytes ? wire_bytes : slice.bytes; }
  bool is_transfer() const { return kind == OpKind::send || kind == OpKind::recv || kind == OpKind::recv_reduce; }

  static Op send(int peer, Slice s, std::uint64_t wire = 0) { return Op{OpKind::send, peer, s, {}, wire}; }
  static Op recv(int peer, Slice s, std::uint64_t wire = 0) { return Op{OpKind::recv, peer, s, {}, wire}; }
  static Op recv_reduce(int peer, Slice s, std::uint64_t wire = 0) { return Op{OpKind::recv_reduce, peer, s, {}, wire}; }
  static Op copy(Slice from, Slice to) { return Op{OpKind::copy, -1, to, from}; }
  static Op reduce(Slice from, Slice into) { return Op{OpKind::reduce, -1, into, from}; }
  static Op quantize(Slice s, int bits) { return Op{OpKind::quantize, -1, s, {}, 0, bits}; }
  static Op dequantize(Slice s, int bits) { return Op{OpKind::dequantize, -1, s, {}, 0, bits}; }
  static Op compute(double seconds) { return Op{OpKind::compute, -1, {}, {}, 0, 32, seconds}; }
};

// Produces participant `p`'s ops for one round (appends to `out`; none means idle).
using RoundOps = std::function<void(int p, std::vector<Op>& out)>;

struct Round {
  std::string phase;  // where its communication time is reported ("reduce-scatter", ...)
  std::string compute_phase;  // where its local work (reduce, quantise, copy) is reported; "" = `phase`
  RoundOps ops;
  // Its exchanges need not wait for each other (PS-HRA's representatives talk to the
  // server on their own): a simulator or runtime may run them without a barrier; the
  // analytic model and the symbolic checker take them in lockstep.
  bool asynchronous = false;
  const std::string& local_phase() const { return compute_phase.empty() ? phase : compute_phase; }
};

enum class Role : std::uint8_t { worker, server };

struct Participant {
  Role role = Role::worker;
  std::size_t node = 0;  // topology node it runs on
};

// What every worker must hold at the end (the symbolic checker's oracle). Each region
// of the gradient lists the workers whose contribution it must hold exactly once:
// `all_workers` (a full all-reduce), `own_only` (left untouched: each worker keeps its
// own), or an explicit set (e.g. the workers that sampled a row).
struct ExpectedRegion {
  Slice slice;
  bool all_workers = true;
  bool own_only = false;
  std::vector<int> contributors;  // when neither flag is set
};

struct Schedule {
  std::string strategy;
  std::vector<Participant> participants;  // workers first, in rank order, then servers
  int workers = 0;
  std::uint64_t gradient_bytes = 0;
  std::uint64_t scratch_bytes = 0;
  int element_bytes = 4;
  std::vector<Round> rounds;
  // Synchronisation happens once every `period_steps` local steps (model averaging, BMUF,
  // Downpour); time per iteration = compute + sync / period.
  int period_steps = 1;
  // Workers do not wait for each other: the rounds describe one worker's exchange with
  // the server(s); executors compute steady-state throughput instead of lockstep time.
  bool asynchronous = false;
  std::vector<ExpectedRegion> expected;  // empty: the whole gradient, all workers
  std::vector<std::string> notes;  // what the strategy decided (ring order, groups, rows sampled)

  std::uint64_t buffer_bytes() const { return gradient_bytes + scratch_bytes; }
  int participant_count() const { return static_cast<int>(participants.size()); }
  // All ops of one participant in one round (convenience; executors reuse a vector instead).
  std::vector<Op> ops(std::size_t round, int participant) const;
};

// The i-th of `parts` nearly equal blocks of `elements` elements (sizes differ by at
// most one element), as a byte slice starting at `base`.
Slice block(std::uint64_t base, std::uint64_t elements, int parts, int i, int element_bytes);

}  // namespace gradsync::models
