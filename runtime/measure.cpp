#include "runtime/measure.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "models/support/stats.h"
#include "models/support/error.h"
#include "models/topology/matrix_form.h"
#include "models/topology/matrix_inference.h"
#include "models/support/progress.h"
#include "models/schedule/kernels.h"
#include "runtime/backend.h"
#include "runtime/run_backends.h"
#include "runtime/watchdog.h"

namespace gradsync::runtime {

namespace {

constexpr int kTagData = 11, kTagAck = 12, kTagPing = 13, kTagShiftAck = 14;

// Waits for a collective without spinning: ranks that sit out a probe must leave the
// cores to the ranks being measured (several emulated hosts share few cores).
void wait_quietly(MPI_Request& request) {
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

// Everyone learns `value` from `root`; the ranks not in the probe wait quietly.
void share_from(MPI_Comm comm, double& value, int root) {
  MPI_Request request;
  MPI_Ibcast(&value, 1, MPI_DOUBLE, root, comm, &request);
  wait_quietly(request);
}

void quiet_barrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  wait_quietly(request);
}

using models::median;
using models::relative_spread;

// The spread below which a probe has been repeated enough.
constexpr double kSteadySpread = 0.03;
// Messages in a stream probe (below, run_measure), and the most bytes a stream moves.
constexpr int kStreamMessages = 4;
constexpr double kMostStreamBytes = 1.0e9;

// The buffers and the backend the probes move bytes with: device buffers and NCCL or
// MPI on GPUs, host buffers and MPI on host ranks. Acknowledgements and the results go
// over MPI on host bytes whatever the backend, but for the shift probes' acks on transports
// that complete each transfer on its own (the ping buffers, waited for beside the data).
struct Probes {
  MPI_Comm comm;
  int rank = 0, size = 0;
  Backend& backend;
  float* out = nullptr;
  float* in = nullptr;
  std::size_t bytes = 0;
  float* ping_out = nullptr;  // 8 bytes each
  float* ping_in = nullptr;

  Transport& transport() { return *backend.transport; }

  // One timed transfer of `bytes` from `a` to `b` (both directions when `both`), with the
  // other ranks idle; `messages` of them back to back, posted at once (`in` holds that many).
  // Returns the seconds `a` measured (send start to the receiver's ack).
  double pair(int a, int b, bool both, int messages = 1) {
    quiet_barrier(comm);
    double seconds = 0;
    char ack = 0;
    if (rank == a || rank == b) {
      const int peer = rank == a ? b : a;
      const double t0 = MPI_Wtime();
      // Sends posted first, as the runs' schedules post them: OpenMPI's TCP transport
      // serialises the two directions of a pair whose receives were posted first.
      transport().begin_round();
      for (int m = 0; m < messages; ++m) {
        if (rank == a || both) transport().post_send(out, bytes, peer, kTagData);
      }
      for (int m = 0; m < messages; ++m) {
        if (rank == b || both) transport().post_recv(in + static_cast<std::size_t>(m) * (bytes / 4), bytes, peer, kTagData);
      }
      transport().end_round();
      transport().wait_all();
      // The receiver's completion ends the transfer: b acknowledges to a.
      if (rank == b) MPI_Send(&ack, 1, MPI_BYTE, a, kTagAck, comm);
      if (rank == a) MPI_Recv(&ack, 1, MPI_BYTE, b, kTagAck, comm, MPI_STATUS_IGNORE);
      seconds = MPI_Wtime() - t0;
    }
    share_from(comm, seconds, a);
    return seconds;
  }

  // Half the median round trip of an 8-byte message, over `rounds` round trips.
  double ping_pong(int a, int b, int rounds) {
    quiet_barrier(comm);
    double one_way = 0;
    if (rank == a || rank == b) {
      const int peer = rank == a ? b : a;
      const auto move = [&](bool send) {
        transport().begin_round();
        if (send) {
          transport().post_send(ping_out, 8, peer, kTagPing);
        } else {
          transport().post_recv(ping_in, 8, peer, kTagPing);
        }
        transport().end_round();
        transport().wait_all();
      };
      // The median round trip: a rank descheduled for a moment on a busy host delays a few
      // round trips by milliseconds, which a mean would spread over all of them.
      std::vector<double> trips;
      for (int i = 0; i < rounds; ++i) {
        const double t0 = MPI_Wtime();
        move(rank == a);
        move(rank != a);
        trips.push_back(MPI_Wtime() - t0);
      }
      one_way = median(trips) / 2;
    }
    share_from(comm, one_way, a);
    return one_way;
  }

  // Every rank sends 8 bytes to rank + shift and receives 8 from rank - shift, all at once, in
  // `rounds` lockstep rounds: the time a round of a schedule pays for a message when every rank
  // takes part (ranks that share cores or a NIC wait for each other's turn, which a pair alone
  // does not). Returns the median round (as ping_pong, a rank descheduled for a moment left
  // out), the slowest rank's, the same on every rank.
  double round_latency(int by, int rounds) {
    quiet_barrier(comm);
    const int to = (rank + by) % size, from = (rank - by + size) % size;
    std::vector<double> took;
    for (int i = 0; i < rounds; ++i) {
      const double t0 = MPI_Wtime();
      transport().begin_round();
      transport().post_send(ping_out, 8, to, kTagPing);
      transport().post_recv(ping_in, 8, from, kTagPing);
      transport().end_round();
      transport().wait_all();
      took.push_back(MPI_Wtime() - t0);
    }
    double mine = median(took);
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MAX, comm);
    return mine;
  }

  // Every rank sends to rank + shift and receives from rank - shift, all at once (the shift
  // pattern of bisection tests): each GPU link carries one flow per direction, so a flow
  // that slows down crosses a link it shares with another. Returns each sender's bandwidth.
  std::vector<double> shift(int by) {
    MPI_Barrier(comm);
    const int to = (rank + by) % size, from = (rank - by + size) % size;
    const double mine = transport().completes_separately() ? flow_rate(to, from) : round_rate(to, from);
    std::vector<double> all(static_cast<std::size_t>(size));
    MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm);
    return all;
  }

 private:
  // My flow ends when its receiver has it all: the receiver acknowledges as soon as its
  // receive completes (not when its own flow ends), and my flow's time is taken when that ack
  // comes, whether or not the flow into me is done. (Taken after my own receive, every flow of
  // a ring read as its slowest: on validate's two-switch box the flows of a ring two ranks
  // apart that stay within a switch read 50 % of their rate, like those crossing the uplinks,
  // and no switch groups were found.)
  double flow_rate(int to, int from) {
    const int acked = transport().post_recv(ping_in, 8, to, kTagShiftAck);
    const double t0 = MPI_Wtime();
    transport().post_send(out, bytes, to, kTagData);
    const int received = transport().post_recv(in, bytes, from, kTagData);
    double rate = 0;
    bool got_data = false, got_ack = false;
    while (!got_data || !got_ack) {
      std::vector<int> open;
      if (!got_data) open.push_back(received);
      if (!got_ack) open.push_back(acked);
      if (open.at(transport().wait_any(open)) == received) {
        got_data = true;
        transport().post_send(ping_out, 8, from, kTagShiftAck);
      } else {
        got_ack = true;
        rate = static_cast<double>(bytes) / (MPI_Wtime() - t0);
      }
    }
    transport().wait_all();
    return rate;
  }

  // NCCL completes a round's send and receive together: the ack waits for both.
  double round_rate(int to, int from) {
    char ack_out = 0, ack_in = 0;
    MPI_Request got_ack, sent_ack;
    MPI_Irecv(&ack_in, 1, MPI_BYTE, to, kTagAck, comm, &got_ack);
    const double t0 = MPI_Wtime();
    transport().begin_round();
    transport().post_send(out, bytes, to, kTagData);
    transport().post_recv(in, bytes, from, kTagData);
    transport().end_round();
    transport().wait_all();
    MPI_Isend(&ack_out, 1, MPI_BYTE, from, kTagAck, comm, &sent_ack);
    MPI_Wait(&got_ack, MPI_STATUS_IGNORE);
    const double rate = static_cast<double>(bytes) / (MPI_Wtime() - t0);
    MPI_Wait(&sent_ack, MPI_STATUS_IGNORE);
    return rate;
  }
};

// Bytes per second of `work` (moving `bytes` each call) on this rank's device, after one
// untimed call (pages touched, caches and kernels warm): at least `iterations` calls and at
// least kLocalSeconds, in batches that double (one wait for the device per batch).
constexpr double kLocalSeconds = 0.05;
double rate_of(Memory& memory, double bytes, int iterations, const std::function<void()>& work) {
  work();
  memory.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long long calls = 0;
  for (long long batch = 1; calls < iterations || elapsed() < kLocalSeconds; batch *= 2) {
    for (long long k = 0; k < batch; ++k) work();
    memory.synchronize();
    calls += batch;
  }
  return static_cast<double>(calls) * bytes / elapsed();
}

}  // namespace

std::optional<StreamRate> rate_from_streams(double bytes, int messages, const std::vector<double>& single_s,
                                            const std::vector<double>& stream_s) {
  std::vector<double> longer;
  for (std::size_t p = 0; p < single_s.size() && p < stream_s.size(); ++p) longer.push_back(stream_s[p] - single_s[p]);
  if (messages < 2 || longer.empty() || !(median(longer) > 0)) return std::nullopt;
  StreamRate r;
  r.rate_Bps = (messages - 1) * bytes / median(longer);
  r.overhead_s = std::max(0.0, median(single_s) - bytes / r.rate_Bps);
  return r;
}

double pair_round_s(std::size_t i, std::size_t j, std::size_t n, const std::vector<double>& round_s) {
  return std::max(round_s.at(j - i), round_s.at(n - (j - i)));
}

int raise_to_rounds(std::vector<double>& latency, std::size_t n, const std::vector<double>& round_s) {
  int raised = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double round = pair_round_s(i, j, n, round_s);
      if (round > latency[i * n + j]) {
        latency[i * n + j] = latency[j * n + i] = round;
        ++raised;
      }
    }
  }
  return raised;
}

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend_name, double bytes, int iterations,
                const std::string& output) {
  if (size < 2) throw models::InputError("measure: needs at least 2 ranks (mpirun -np 2 or more)");
  if (bytes < 4 || bytes > 1.0e9) throw models::InputError("measure --size: expected between 4 bytes and 1 GB");
  if (iterations < 1) throw models::InputError("measure -n: expected at least 1 repetition");
  Backend backend = make_backend(backend_name, comm);  // the clear "no GPU" / "not built" error first
  Memory& memory = *backend.memory;
  const bool gpu = memory.kind() != "host";
  // Whole floats: the backends' buffers hold floats.
  const std::size_t probe_bytes = static_cast<std::size_t>(bytes) / 4 * 4;
  bytes = static_cast<double>(probe_bytes);
  Probes probe{comm, rank, size, backend};
  probe.bytes = probe_bytes;
  probe.out = memory.allocate(probe_bytes);
  const int stream = bytes * kStreamMessages <= kMostStreamBytes ? kStreamMessages : 1;
  probe.in = memory.allocate(probe_bytes * static_cast<std::size_t>(stream));
  probe.ping_out = memory.allocate(8);
  probe.ping_in = memory.allocate(8);
  const std::size_t count = probe_bytes / 4;
  {
    // Values like a gradient's (the 1-bit rate does not depend on them; the copies' bytes do not matter).
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(static_cast<int>(i % 1000) - 500) / 256.0f;
    memory.upload(probe.out, values.data(), count);
  }
  const std::size_t n = static_cast<std::size_t>(size);
  models::MatrixForm form;
  char hostname[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(hostname, &length);
  form.name = "measured-" + std::to_string(size) + "ranks";
  for (int r = 0; r < size; ++r) form.gpus.push_back("rank" + std::to_string(r));
  form.bandwidth_Bps = models::PairMatrix(n);
  form.bidirectional_Bps = models::PairMatrix(n);
  form.latency_s = models::PairMatrix(n);
  form.bandwidth_spread = models::PairMatrix(n);
  form.bidirectional_spread = models::PairMatrix(n);
  int pair_probes = 0, unsteady = 0;  // pair probes, and those still spread after the most repetitions
  constexpr int kMaxRepeats = 4;

  // Rank 0 shows progress over every probe: the pairs, the local rates, the shifts, the rounds.
  std::optional<models::Progress> shown;
  if (rank == 0) shown.emplace(models::Progress::for_stderr(static_cast<std::size_t>(iterations + 2 * size + (size > 2 ? 2 : 1) * (size - 1))));
  const auto progress = [&](const std::string& what, int i, int total) {
    const std::string text = "measure: " + what + " " + std::to_string(i) + "/" + std::to_string(total);
    if (shown) shown->step(text);
    watchdog_context(text);
  };
  // Each ordered pair alone: a transfer of the probe size (its median rate is the pair's
  // bandwidth, per-message overheads of large messages included), both directions at
  // once, and an 8-byte ping-pong (the latency a message pays). The repetitions come in
  // passes over every pair, not back to back: a load that comes and goes on a busy host
  // then slows one sample of a pair, not all of them, and shows in its spread. After
  // `iterations` passes, pairs whose spread is still above kSteadySpread are probed again,
  // up to kMaxRepeats x `iterations` samples. One untimed transfer both ways first: NCCL
  // (and some MPI transports) connect a pair on its first message.
  const std::size_t cells = n * n;
  std::vector<std::vector<double>> uni(cells), streamed(cells), bi(cells), lat(cells);  // samples per ordered pair (bi, lat: a < b)
  const auto unsteady_pair = [&](std::size_t i, std::size_t j) {
    return relative_spread(uni[i * n + j]) > kSteadySpread || relative_spread(streamed[i * n + j]) > kSteadySpread ||
           (i < j && relative_spread(bi[i * n + j]) > kSteadySpread);
  };
  for (int pass = 0; pass < kMaxRepeats * iterations; ++pass) {
    if (pass < iterations) progress("pairs, pass", pass + 1, iterations);
    bool any = false;
    for (int a = 0; a < size; ++a) {
      for (int b = 0; b < size; ++b) {
        if (a == b) continue;
        const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
        if (pass >= iterations && !unsteady_pair(i, j)) continue;  // every rank decides alike
        any = true;
        if (pass == 0 && a < b) probe.pair(a, b, true);
        uni[i * n + j].push_back(bytes / probe.pair(a, b, false));
        if (stream > 1) streamed[i * n + j].push_back(stream * bytes / probe.pair(a, b, false, stream));
        if (a < b) bi[i * n + j].push_back(2 * bytes / probe.pair(a, b, true));
        // Latency in every pass too: a pair whose two ranks share a core with a busy
        // process for a few seconds (the scheduler's placement holds that long) pays
        // milliseconds per round trip then, not in every pass.
        if (a < b) lat[i * n + j].push_back(probe.ping_pong(a, b, pass < iterations ? 100 : 20));
      }
    }
    if (!any) break;
    if (pass >= iterations) watchdog_context("measure: pass " + std::to_string(pass + 1) + " over the pairs still spread");
  }

  // A busy machine (another process on the cores, the kernel's network work put off) adds a
  // delay to every probe while its ranks wait to be scheduled: a scheduler tick or two (4-8
  // ms), every time. Beside one or two other busy processes on two cores a 32 KiB probe of a
  // 12 MB/s link read it at a third of its rate, every repetition alike, and an 8-byte round
  // trip took 4-8 ms instead of 20 us. A pair is taken for busy when its samples still
  // disagree after every pass, or when its latency (half that round trip) is a quarter of a
  // probe's time or more. Busy pairs are probed again in `iterations` passes (at least
  // kMinBusyPasses), each a single probe and then a long stream of them, long enough to last
  // kBusyStreamSeconds (at most kMaxBusyMessages messages and kMostBusyStreamBytes): the
  // pair's rate is the stream's extra messages over how much longer it took than the single
  // probe of its pass (rate_from_streams). The delay both pay once drops out, with the latency
  // and a token bucket's burst; what they add up to is the pair's overhead, taken off its
  // both-ways and shift-probe times too (rate_without_overhead).
  constexpr double kBusyLatencyShare = 0.25, kBusyStreamSeconds = 0.1;
  constexpr int kMaxBusyMessages = 64, kMinBusyPasses = 5;
  constexpr double kMostBusyStreamBytes = 2.5e8;
  const auto median_seconds = [](const std::vector<double>& rates, double moved) {
    std::vector<double> seconds;
    for (double r : rates) seconds.push_back(moved / r);
    return median(seconds);
  };
  std::vector<bool> busy(cells, false);
  int long_stream = 0;  // messages in the busy pairs' streams
  for (std::size_t i = 0; i < n && stream > 1; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const std::size_t k = i * n + j;
      const double latency = median(lat[std::min(i, j) * n + std::max(i, j)]);
      busy[k] = relative_spread(uni[k]) > kSteadySpread || relative_spread(streamed[k]) > kSteadySpread ||
                latency > kBusyLatencyShare * median_seconds(uni[k], bytes);
      if (!busy[k]) continue;
      const double messages = std::ceil(kBusyStreamSeconds * median(streamed[k]) / bytes);
      long_stream = std::max(long_stream, static_cast<int>(std::clamp(messages, 2.0 * stream, 1.0 * kMaxBusyMessages)));
    }
  }
  long_stream = std::min(long_stream, static_cast<int>(kMostBusyStreamBytes / bytes));
  std::vector<std::vector<double>> busy_single(cells), busy_stream(cells);  // per pass: the single probe's seconds, the stream's
  if (long_stream > stream) {
    float* const regular_in = probe.in;
    probe.in = memory.allocate(probe_bytes * static_cast<std::size_t>(long_stream));
    const int passes = std::max(iterations, kMinBusyPasses);
    for (int pass = 0; pass < passes; ++pass) {
      watchdog_context("measure: busy pairs, pass " + std::to_string(pass + 1) + "/" + std::to_string(passes));
      for (int a = 0; a < size; ++a) {
        for (int b = 0; b < size; ++b) {
          const auto k = static_cast<std::size_t>(a) * n + static_cast<std::size_t>(b);
          if (a == b || !busy[k]) continue;
          busy_single[k].push_back(probe.pair(a, b, false));
          busy_stream[k].push_back(probe.pair(a, b, false, long_stream));
        }
      }
    }
    probe.in = regular_in;
  }
  // Each pair's figures from its samples: medians and spreads, with two corrections.
  //
  // The models take a transfer as latency + bytes / bandwidth: each probe's time holds one
  // latency, which is not bandwidth (at 4 MiB over an H100's staged copies, 75 of 800 us).
  //
  // A link's first bytes after a pause can pass faster than its rate: a token bucket's burst
  // (the emulated cluster's tc links let their first 9 KB frame through at once, so a lone
  // 32 KiB probe read an 11.9 MB/s link at 16 MB/s), which a run's back-to-back rounds do not
  // get. So each pair's one-way rate is also taken from a stream of kStreamMessages messages
  // posted at once; where the stream is slower, the pair's figures are scaled down to it: one
  // way, both ways and its shift-probe flows alike, keeping what single messages say of
  // duplex and shared links (streams read the links between switches closer to full duplex
  // than the runs get: the 4-GPU ring on the emulated source-A machine then predicted 16 %
  // fast). A stream faster than single messages hides per-message costs that a run's rounds
  // pay: no change then.
  std::vector<double> slower(cells, 1.0);  // per ordered pair, the stream's rate over the single message's
  std::vector<double> overhead(cells, -1.0);  // per busy ordered pair: the seconds every probe paid (-1: not busy)
  int busy_pairs = 0;
  const auto one_way = [&](std::size_t from, std::size_t to, double latency) {
    const std::size_t k = from * n + to;
    form.bandwidth_spread->at(from, to) = relative_spread(uni[k]);
    unsteady += relative_spread(uni[k]) > kSteadySpread;
    ++pair_probes;
    const double rate = rate_without_latency(bytes, median(uni[k]), latency);
    if (stream > 1) slower[k] = std::min(1.0, rate_without_latency(stream * bytes, median(streamed[k]), latency) / rate);
    form.bandwidth_Bps.at(from, to) = rate * slower[k];
    if (const auto r = rate_from_streams(bytes, long_stream, busy_single[k], busy_stream[k])) {
      overhead[k] = r->overhead_s;
      form.bandwidth_Bps.at(from, to) = r->rate_Bps;
      ++busy_pairs;
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double latency = median(lat[i * n + j]);
      form.latency_s->at(i, j) = form.latency_s->at(j, i) = latency;
      one_way(i, j, latency);
      one_way(j, i, latency);
      const auto& v = bi[i * n + j];
      const double both = rate_without_latency(2 * bytes, median(v), latency) * (slower[i * n + j] + slower[j * n + i]) / 2;
      form.bidirectional_Bps->at(i, j) = form.bidirectional_Bps->at(j, i) = both;
      const double paid_ij = overhead[i * n + j], paid_ji = overhead[j * n + i];
      if (paid_ij >= 0 || paid_ji >= 0) {
        const double paid = paid_ij >= 0 && paid_ji >= 0 ? (paid_ij + paid_ji) / 2 : std::max(paid_ij, paid_ji);
        const double alone = *form.bandwidth_Bps.at(i, j) + *form.bandwidth_Bps.at(j, i);
        form.bidirectional_Bps->at(i, j) = form.bidirectional_Bps->at(j, i) =
            rate_without_overhead(2 * bytes, median_seconds(v, 2 * bytes), paid, alone);
      }
      form.bidirectional_spread->at(i, j) = form.bidirectional_spread->at(j, i) = relative_spread(v);
      unsteady += relative_spread(v) > kSteadySpread;
      ++pair_probes;
    }
  }

  // Local work on each rank's device: the copy rate (reductions use 2/3 of it), the 1-bit
  // quantisation rate (encode + decode), and on GPUs the host<->device rates.
  const auto& codec = models::one_bit_codec();
  constexpr std::uint64_t kGroup = 1024;
  float* copy = memory.allocate(probe_bytes);
  float* residual = memory.allocate(probe_bytes);
  float* decoded = memory.allocate(probe_bytes);
  auto* payload = reinterpret_cast<std::uint8_t*>(memory.allocate(codec.wire_bytes(count, kGroup)));
  float* host = gpu ? memory.allocate_host(probe_bytes) : nullptr;
  const auto copy_rate = [&] { return rate_of(memory, bytes, iterations, [&] { memory.copy(copy, probe.out, count); }); };
  const auto quantize_rate = [&] {
    return rate_of(memory, 2.0 * bytes, iterations, [&] {
      memory.encode(codec, kGroup, probe.out, residual, count, payload);
      memory.decode(codec, kGroup, payload, count, decoded, false);
    });
  };
  // First each rank alone (what its device does), then the first k ranks at once for k = 1
  // .. N: ranks that share cores (host ranks) or a GPU slow each other down, as they do in
  // the runs, where every rank works at once.
  std::vector<double> local(n, 0), quantize(n, 0), h2d(n, 0), d2h(n, 0);
  models::MatrixForm::AtOnce at_once;
  for (int r = 0; r < size; ++r) {
    progress("local rates of rank", r + 1, size);
    quiet_barrier(comm);
    if (rank != r) continue;
    const auto me = static_cast<std::size_t>(r);
    local[me] = copy_rate();
    quantize[me] = quantize_rate();
    if (host) {
      h2d[me] = rate_of(memory, bytes, iterations, [&] { memory.upload(copy, host, count); });
      d2h[me] = rate_of(memory, bytes, iterations, [&] { memory.download(host, copy, count); });
    }
  }
  for (int k = 1; k <= size; ++k) {
    progress("local rates, ranks at once", k, size);
    quiet_barrier(comm);
    double rates[2] = {0, 0};  // this rank's copy and 1-bit rates, while the first k work
    if (rank < k) {
      rates[0] = copy_rate();
      rates[1] = quantize_rate();
    }
    std::vector<double> all(2 * n);
    MPI_Allgather(rates, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm);
    std::vector<double> copies, codings;
    for (int r = 0; r < k; ++r) {
      copies.push_back(all[2 * static_cast<std::size_t>(r)]);
      codings.push_back(all[2 * static_cast<std::size_t>(r) + 1]);
    }
    at_once.copy_Bps.push_back(median(copies));
    at_once.quantize_Bps.push_back(median(codings));
  }
  for (auto* v : {&local, &quantize, &h2d, &d2h}) MPI_Allreduce(MPI_IN_PLACE, v->data(), size, MPI_DOUBLE, MPI_SUM, comm);
  form.device_local_Bps = local;
  form.device_quantize_Bps = quantize;
  form.ranks_at_once = at_once;
  if (gpu) {
    form.host_to_device_Bps = h2d;
    form.device_to_host_Bps = d2h;
  }

  // Shift probes: reveal links that pairs measured one at a time cannot (a switch uplink as
  // fast as a GPU link, shared by the GPUs behind it). Shift 1 is the ring an all-reduce runs
  // (every rank sends to the next and receives from the one before, all at once) and shift
  // N-1 the reverse ring: every GPU's link carries both directions at once, which bounds
  // what a ring gets where a pair alone cannot show it (the inference reads a ring slower than
  // its pairs as links that cannot carry both directions at full rate).
  // Of two ranks, shift 1 is the pair's both-ways probe again, which the passes over the pairs
  // took more often and with their corrections for a busy machine: no shift probes then (one
  // core kept busy beside 2 emulated ranks read their flows at 5.5 MB/s where the pair's both-ways
  // probe and the runs got 9.2 each way).
  std::vector<models::ConcurrentProbe> probes;
  for (int shift = 1; shift < size && size > 2; ++shift) {
    progress("concurrent flows, shift", shift, size - 1);
    probe.shift(shift);  // untimed: the pairs of this shift connected
    // Repeated like the pairs, until every flow's spread is small (every rank has every
    // flow's figures, so all decide alike) or the most repetitions were taken.
    std::vector<std::vector<double>> flows(n);  // per flow, its samples
    const auto widest = [&] {
      double most = 0;
      for (const auto& v : flows) most = std::max(most, relative_spread(v));
      return most;
    };
    for (int k = 0; k < iterations || (k < kMaxRepeats * iterations && widest() > kSteadySpread); ++k) {
      const auto run = probe.shift(shift);
      for (std::size_t r = 0; r < n; ++r) flows[r].push_back(run[r]);
    }
    models::ConcurrentProbe p;
    for (int r = 0; r < size; ++r) {
      p.flows.push_back({form.gpus[static_cast<std::size_t>(r)], form.gpus[static_cast<std::size_t>((r + shift) % size)]});
      const auto to = static_cast<std::size_t>((r + shift) % size);
      const std::size_t k = static_cast<std::size_t>(r) * n + to;
      p.bandwidth_Bps.push_back(overhead[k] >= 0 ? rate_without_overhead(bytes, median_seconds(flows[static_cast<std::size_t>(r)], bytes),
                                                                    overhead[k], *form.bandwidth_Bps.at(static_cast<std::size_t>(r), to))
                                                 : median(flows[static_cast<std::size_t>(r)]) * slower[k]);
      p.spread.push_back(relative_spread(flows[static_cast<std::size_t>(r)]));
    }
    probes.push_back(p);
  }
  form.concurrent_probes = probes;

  // Latency as a schedule's rounds meet it: every rank exchanging 8 bytes with the ranks a
  // shift away, all at once, round after round. Where ranks share cores (host ranks on a small
  // machine, the emulated cluster's kernel work beside them) a round waits for the ranks'
  // turns, which a ping-pong of one pair with the others idle does not see: on the emulated
  // source-A box (4 ranks on 2 cores) 16 us one way by ping-pong, 65 us a round. Each shift's
  // round is the median of 100 (the slowest rank's), the median over `iterations` passes. A
  // pair's latency is the larger of its ping-pong's and its shifts' rounds (both directions of
  // it); on a machine whose ranks each have their own core and NIC the two agree.
  std::vector<double> round_s(n, 0.0);  // per shift
  for (int shift = 1; shift < size; ++shift) {
    progress("rounds of every rank at once, shift", shift, size - 1);
    probe.round_latency(shift, 20);  // untimed: connected and warm
    std::vector<double> passes;
    for (int k = 0; k < iterations; ++k) passes.push_back(probe.round_latency(shift, 100));
    round_s[static_cast<std::size_t>(shift)] = median(passes);
  }
  std::vector<double> latency(n * n, 0.0), pings, rounds;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      latency[i * n + j] = latency[j * n + i] = *form.latency_s->at(i, j);
      pings.push_back(latency[i * n + j]);
      rounds.push_back(pair_round_s(i, j, n, round_s));
    }
  }
  const int raised = raise_to_rounds(latency, n, round_s);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j) form.latency_s->at(i, j) = latency[i * n + j];
    }
  }
  if (shown) shown->finish();
  form.description = "Measured by gradsync-run measure over " + backend.name + " on " + std::to_string(size) + " ranks (" +
                     std::string(hostname, static_cast<std::size_t>(length)) + "), " + std::to_string(probe_bytes) +
                     "-byte probes (median of " + std::to_string(iterations) + " to " + std::to_string(kMaxRepeats * iterations) +
                     " taken in passes over the pairs, repeated until their spread is at most 3 %" +
                     (stream > 1 ? "; where " + std::to_string(stream) + " probes back to back ran slower, a pair's rates scaled down to theirs; "
                                   "where the machine was busy (a pair's probes still disagreeing, or its latency a quarter of a probe's time), "
                                   "its rates from how much longer a long stream of probes took than one, the delay every probe paid left out"
                                 : std::string()) +
                     "), latency the median of 8-byte ping-pongs in every pass, or where larger the median of lockstep rounds in which every "
                     "rank exchanges 8 bytes with the ranks a shift away; local rates of " +
                     (gpu ? "each GPU" : "each rank") + " alone and of the first k ranks at once" +
                     (gpu ? ", host<->device rates from page-locked host memory." : ".");
  form.source = "gradsync-run measure";
  if (rank == 0) {
    models::write_file_atomically(output, models::pretty_json(models::matrix_form_to_json(form)));
    const auto inferred = models::infer_topology(form);
    std::vector<double> one_way, both_ways;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j) one_way.push_back(*form.bandwidth_spread->at(i, j));
        if (i < j) both_ways.push_back(*form.bidirectional_spread->at(i, j));
      }
    }
    std::sort(one_way.begin(), one_way.end());
    std::sort(both_ways.begin(), both_ways.end());
    std::printf("probe spread (robust, relative): one way median %.1f %%, max %.1f %%; both ways median %.1f %%, max %.1f %%; "
                "%d of %d pair probes still above %.0f %% after %d repetitions%s\n",
                100 * one_way[one_way.size() / 2], 100 * one_way.back(), 100 * both_ways[both_ways.size() / 2],
                100 * both_ways.back(), unsteady, pair_probes, 100 * kSteadySpread, kMaxRepeats * iterations,
                unsteady * 4 > pair_probes ? " (a busy machine: figures less sure)" : "");
    if (busy_pairs > 0) {
      std::vector<double> paid;
      for (double o : overhead) {
        if (o >= 0) paid.push_back(o);
      }
      std::printf("%d of %d ordered pairs probed again (samples still spread, or latency a quarter of a probe's time: a "
                  "busy machine): their rates from how much longer %d probes at once took than one, the delay every probe "
                  "paid (median %.2f ms) left out\n",
                  busy_pairs, size * (size - 1), long_stream, 1e3 * median(paid));
    }
    if (stream > 1) {
      std::vector<double> kept;
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          if (i != j) kept.push_back(slower[i * n + j]);
        }
      }
      std::sort(kept.begin(), kept.end());
      std::printf("streams of %d probes: pair rates scaled to %.1f %% of a single probe's (median; least %.1f %%)\n", stream,
                  100 * kept[kept.size() / 2], 100 * kept.front());
    }
    std::printf("local rates: copy %.2f GB/s, 1-bit %.2f GB/s (rank 0 alone); with all %d ranks at once %.2f and %.2f "
                "GB/s a rank%s\n",
                local[0] / 1e9, quantize[0] / 1e9, size, at_once.copy_Bps.back() / 1e9, at_once.quantize_Bps.back() / 1e9,
                at_once.copy_Bps.back() < 0.8 * at_once.copy_Bps.front() ? " (the ranks share cores or a device)" : "");
    std::printf("latency: 8-byte ping-pongs %.1f us one way, rounds of every rank at once %.1f us (medians over pairs); %d of "
                "%zu pairs take their rounds'%s\n",
                1e6 * median(pings), 1e6 * median(rounds), raised, pings.size(),
                median(rounds) > 1.5 * median(pings) ? " (the ranks wait for each other's turn: they share cores or a link)" : "");
    if (gpu) std::printf("host<->device (rank 0): %.2f GB/s up, %.2f GB/s down\n", h2d[0] / 1e9, d2h[0] / 1e9);
    std::printf("measured %d ranks over %s; wrote %s\n\ninferred topology:\n%s\n%s", size, backend.name.c_str(),
                output.c_str(), models::describe_links(inferred.topology).c_str(), inferred.report.text().c_str());
  }
  return 0;
}

}  // namespace gradsync::runtime
