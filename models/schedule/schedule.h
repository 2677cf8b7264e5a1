// A Schedule: what every participant (the N worker ranks, plus parameter servers) does,
// round by round. A round is a set of ops each participant runs concurrently: sends and
// receives of slices of its buffer (their payload possibly encoded by a codec), local
// copies and reductions, kernels (named numeric operations), compute.
// Sends and receives between an ordered pair match in FIFO order; in a synchronous
// (lockstep) schedule every receive matches a send of the same round.
//
// Schedules stay compact for large N: a round holds a generator that produces one
// participant's ops on demand (a 4096-rank ring has 8190 rounds, not 67 M stored ops).
//
// Strategies build schedules (models/strategies/); executors run them: the symbolic
// checker (models/schedule/symbolic.h), the analytic model (models/executors/analytic.h), the simulator
// (sim/) and the real runtime (runtime/). No executor knows which strategy it runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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
  compute,      // local: busy for `seconds`
  kernel,       // local: run `kernel` on `slice` (with its operand slices and parameters)
};

// A local numeric operation, as executors see it: the name its implementations are found
// by (runtime/kernels/), what it costs, and how many operand slices it reads besides its
// target. What it computes is its implementations' business; the catalogue of kernels
// strategies select from is models/schedule/kernels.h.
struct Kernel {
  std::string name;
  double passes = 1;  // local work: passes x the target's bytes x the participant's reduction time per byte
  int operands = 0;  // operand slices besides the target, each of the target's size (at most 2)
};

// A kernel's small parameter block (its meaning is the kernel's: see models/schedule/kernels.h).
struct KernelParams {
  std::array<double, 3> v{};
};

// How a transfer's payload is encoded on the wire. The catalogue is models/schedule/kernels.h.
struct Codec {
  std::string name;  // its implementations are found by it (runtime/kernels/)
  // The sender keeps what encoding lost and adds it before its next encoding; values
  // forwarded exactly as a payload decoded them re-encode without loss, so without it.
  bool error_feedback = false;
  // Bytes on the wire for `values` values encoded in groups of `group` values: the one
  // size the schedule, the executors and the kernels all use.
  std::uint64_t (*wire_bytes)(std::uint64_t values, std::uint64_t group) = nullptr;
};

struct Encoding {
  const Codec* codec = nullptr;
  std::uint64_t group = 0;  // values sharing one set of scales (the codec's parameter)
  // A codec that keeps a residual keeps it only where this is set: off, what encoding loses is
  // lost (source D's 1-bit SGD without error feedback, the ablation it warns against).
  bool error_feedback = true;
};

// A kernel with its operand slices and parameters, as a schedule's ops refer to it (the
// builder keeps it alive, e.g. in the round's generator: ops stay small).
struct KernelCall {
  const Kernel* kernel = nullptr;
  std::array<Slice, 2> operands{};  // kernel->operands of them, each of the target's size
  KernelParams params{};
};

// What local work costs a participant, per byte: reductions (and copies, kernels), and
// encoding or decoding a payload (the codec's pass over the values).
struct LocalCosts {
  double reduce_s_per_byte = 0;
  double codec_s_per_byte = 0;
};

// The nodes a transfer's route passes through on its way, in order, where the strategy chooses
// them (NCCL: the NICs a channel leaves its host by and enters the peer's by); -1: none, the
// topology's own route. Executors that model time route the transfer through them; the runtime
// ignores them.
using Via = std::array<std::int32_t, 2>;
inline constexpr Via kNoVia{-1, -1};
// A Via entry as a topology node index (Topology::npos, the largest size_t, where none).
inline std::size_t via_node(std::int32_t v) { return v < 0 ? static_cast<std::size_t>(-1) : static_cast<std::size_t>(v); }

struct Op {
  OpKind kind = OpKind::compute;
  int peer = -1;  // participant index (send / recv / recv_reduce)
  Slice slice{};
  Slice source{};  // copy / reduce
  std::uint64_t wire_bytes = 0;  // bytes on the wire when they differ from slice.bytes (an encoding); 0: same
  double seconds = 0;  // compute
  const Encoding* encoding = nullptr;  // transfers: how the payload is encoded; nullptr: as it is
  const KernelCall* call = nullptr;  // kernel: what runs on `slice`
  // How the engine that moves a transfer uses the links (executors that model time read
  // these; the runtime just moves the bytes). `payload_share`: the share of what crosses
  // the links that is payload (NCCL's LL protocol writes a flag beside every 4 bytes: 0.5),
  // so the links carry wire() / payload_share. `max_Bps`: the engine moves it at most this
  // fast whatever the links allow (GPU threads copying through host memory); 0: no limit.
  double payload_share = 1;
  double max_Bps = 0;
  Via via = kNoVia;  // transfers: sender's side first, for the send and its receive alike

  std::uint64_t wire() const { return wire_bytes ? wire_bytes : slice.bytes; }
  // What crosses the links for it (wire() over payload_share).
  double link_bytes() const { return static_cast<double>(wire()) / payload_share; }
  bool is_transfer() const { return kind == OpKind::send || kind == OpKind::recv || kind == OpKind::recv_reduce; }

  static Op send(int peer, Slice s, std::uint64_t wire = 0) {
    return Op{.kind = OpKind::send, .peer = peer, .slice = s, .wire_bytes = wire};
  }
  static Op recv(int peer, Slice s, std::uint64_t wire = 0) {
    return Op{.kind = OpKind::recv, .peer = peer, .slice = s, .wire_bytes = wire};
  }
  static Op recv_reduce(int peer, Slice s, std::uint64_t wire = 0) {
    return Op{.kind = OpKind::recv_reduce, .peer = peer, .slice = s, .wire_bytes = wire};
  }
  static Op copy(Slice from, Slice to) { return Op{.kind = OpKind::copy, .slice = to, .source = from}; }
  static Op reduce(Slice from, Slice into) { return Op{.kind = OpKind::reduce, .slice = into, .source = from}; }
  static Op compute(double seconds) { return Op{.kind = OpKind::compute, .seconds = seconds}; }
  static Op run(const KernelCall& call, Slice target) { return Op{.kind = OpKind::kernel, .slice = target, .call = &call}; }
  // Encodes this transfer's payload as `encoding` says (values of `element_bytes`).
  void encode_with(const Encoding& encoding, int element_bytes);
  // Seconds of local work on a participant with these costs: compute ops their seconds;
  // reductions, copies and kernels at its reduction rate; encoding a sent payload and
  // decoding a received one at its codec rate.
  double local_seconds(const LocalCosts& costs) const;
};

// Produces participant `p`'s ops for one round (appends to `out`; none means idle). Executors
// may call it from several threads at once (the analytic one prices large walks on every core):
// it must not change what it captures.
using RoundOps = std::function<void(int p, std::vector<Op>& out)>;

struct Round {
  std::string phase;  // where its communication time is reported ("reduce-scatter", ...)
  std::string compute_phase;  // where its local work (reduce, encode, copy, kernels) is reported; "" = `phase`
  RoundOps ops;
  // Its exchanges need not wait for each other (PS-HRA's representatives talk to the
  // server on their own): a simulator or runtime may run them without a barrier; the
  // analytic model and the symbolic checker take them in lockstep.
  bool asynchronous = false;
  // An earlier round (its index in Schedule::rounds) this one equals in cost: each
  // participant has the same transfers with the same peers (same wire bytes, encoding and
  // engine) and the same local work; only which slices move differs (a ring's steps when
  // its blocks are equal). Executors that model time may evaluate it once. -1: none
  // declared. The symbolic checker verifies every declaration.
  int same_as = -1;
  // With same_as: the round is that one turned along cycles of participants (a ring's steps
  // when its blocks differ by an element): the participant at position j of a cycle has the
  // op kinds, byte counts and encodings that position (j + rotated_by) mod length had there,
  // with the peers and engines (payload_share, max_Bps) it had there itself. Participants
  // on no cycle: as there.
  std::shared_ptr<const std::vector<std::vector<int>>> rotated_along{};
  int rotated_by = 0;
  bool rotated() const { return same_as >= 0 && rotated_along && rotated_by != 0; }
  // Participants whose ops are those of the round just before this one (rounds[r - 1]) op by
  // op, in kinds, peers, sizes, encodings and engines (only which slices move may differ):
  // true for them (a pipeline's fill and drain, where most nodes move chunks as they did the
  // round before). Executors that model time may reuse such a participant's figures from that
  // round instead of asking for its ops. The symbolic checker verifies every declaration.
  // Empty: none declared.
  std::function<bool(int p)> same_ops_as_previous{};
  const std::string& local_phase() const { return compute_phase.empty() ? phase : compute_phase; }
};

// A fact the inputs left open that the strategy had to assume (NCCL's version, the CPU's maker,
// whether the driver allows peer access): the value taken, and each other plausible value with
// the time it would give relative to the assumed value's (its closed form under each). Records
// turn them into bus bandwidths and a range (ResultRecord::busbw_range_GBps).
struct OpenFact {
  std::string name;     // "NCCL version"
  std::string assumed;  // "2.30: P2P stops at PXB"
  std::vector<std::pair<std::string, double>> relative_time;  // {"2.22: P2P across SYS", 0.62}
  // Facts of one group (non-empty) are alternatives of one another, each value a whole case (on
  // one host, NCCL's version, the driver's peer access and the CPU all decide one thing: which
  // transport each hop takes): the range spans the most and least over their values together,
  // where independent facts multiply.
  std::string group;
  // The model's own error (calibrate's bands) is measured with this fact at its assumed value: a
  // fitted constant every prediction of its kind leaves open (the launch cost, at small and mid
  // sizes), whose points the bands cannot do without; its other values widen the range besides.
  bool measured_in_band = false;
};

enum class Role : std::uint8_t { worker, server };

struct Participant {
  Role role = Role::worker;
  std::size_t node = 0;  // topology node it runs on
  LocalCosts costs;  // what its local work costs there (the strategy's builder sets them)
};

// What the workers must hold at the end (the symbolic checker's oracle, and --check's). Each
// region of the gradient lists the workers whose contribution it must hold exactly once:
// `all_workers` (a full all-reduce), `own_only` (left untouched: each worker keeps its
// own), or an explicit set of workers; and which workers must hold it: every worker, or only
// `holders` (a reduce-scatter's shard, a reduce's root). The other workers' bytes of a region
// with holders are left unspecified. A contribution is the contributor's bytes at the same
// place of its gradient, except in an all-to-all's region (`transposed_blocks`). Together the
// result kinds of the collectives:
//   all-reduce      one region, all_workers;
//   reduce-scatter  a region per shard, all_workers, holders {the shard's owner};
//   all-gather      a region per shard, contributors {its owner}, every worker;
//   broadcast       one region, contributors {the root}, every worker;
//   reduce          one region, all_workers, holders {the root};
//   all-to-all      one region of N equal blocks (transposed_blocks = N, the workers): worker
//                   r's block s holds worker s's block r;
//   send-receive    one region (from_previous = 1): worker r holds worker r - 1's bytes
//                   (nccl-tests' sendrecv, each rank sending to the next).
struct ExpectedRegion {
  Slice slice{};
  bool all_workers = true;
  bool own_only = false;
  std::vector<int> contributors;  // when neither flag is set
  int divisor = 1;  // the values are the contributions' sum divided by this (an average)
  bool numeric_only = false;  // values follow a numeric update: only a reference computation can check them
  std::vector<int> holders{};  // workers that must hold the region; empty: every worker
  // An all-to-all's region: this many equal blocks, one per worker, worker r's block s holding
  // worker s's block r (all_workers, own_only false; no contributors or holders). 0: none.
  int transposed_blocks = 0;
  // A send-receive's region: worker r holds worker (r - from_previous) mod N's bytes at the same
  // place (all_workers, own_only false; no contributors or holders). 0: none.
  int from_previous = 0;
};

struct Schedule {
  std::string strategy;
  std::vector<Participant> participants;  // workers first, in rank order, then servers
  int workers = 0;
  std::uint64_t gradient_bytes = 0;
  std::uint64_t scratch_bytes = 0;
  int element_bytes = 4;
  std::vector<Round> rounds;
  // Synchronisation happens once every `period_steps` local steps (periodic and
  // asynchronous strategies); time per iteration = compute + sync / period.
  int period_steps = 1;
  // Workers do not wait for each other: the rounds describe one worker's exchange with
  // the server(s); executors compute steady-state throughput instead of lockstep time.
  bool asynchronous = false;
  // What is synchronised is the model after the optimizer step (model averaging, BMUF), not
  // the gradients as the backward pass produces them: nothing to overlap with that pass.
  bool averages_models = false;
  // After each synchronisation the workers' local optimiser state (SGD's momentum) starts afresh
  // (BMUF: CNTK's resetSGDMomentum, on by default). Only real training has that state.
  bool resets_local_momentum = false;
  std::vector<ExpectedRegion> expected;  // empty: the whole gradient, all workers
  // State a worker keeps from one synchronisation to the next that starts, when its buffer is
  // filled the first time, as a copy of another region (BMUF: the global model starts as the
  // model the workers begin with); other scratch starts at zero.
  struct StateStart {
    Slice state;
    Slice from;
  };
  std::vector<StateStart> state_starts;
  std::vector<std::string> notes;  // what the strategy decided (ring order, groups, ...)
  std::vector<OpenFact> open_facts;  // what it assumed where the inputs say nothing, and how much it matters
  // The strategy charges every latency itself, as local work in its rounds (NCCL's per-step
  // protocol latencies): executors that model time give transfers none of the links'.
  bool latency_in_ops = false;

  std::uint64_t buffer_bytes() const { return gradient_bytes + scratch_bytes; }
  // Why this synchronisation cannot run bucket by bucket beside the backward pass ("" when it can).
  std::string not_overlapped_because() const;
  int participant_count() const { return static_cast<int>(participants.size()); }
  // All ops of one participant in one round (convenience; executors reuse a vector instead).
  std::vector<Op> ops(std::size_t round, int participant) const;
};

// The i-th of `parts` nearly equal blocks of `elements` elements (sizes differ by at
// most one element), as a byte slice starting at `base`.
Slice block(std::uint64_t base, std::uint64_t elements, int parts, int i, int element_bytes);

}  // namespace gradsync::models
