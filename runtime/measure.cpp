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

#include "models/error.h"
#include "models/matrix_form.h"
#include "models/matrix_inference.h"
#include "models/progress.h"
#include "runtime/kernels/kernels.h"
#include "runtime/run_backends.h"
#include "runtime/watchdog.h"

namespace gradsync::runtime {

namespace {

constexpr int kTagData = 11, kTagAck = 12, kTagPing = 13;

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// How much samples disagree, relative to their median: 1.4826 x the median absolute
// deviation / the median (a standard deviation that one outlier does not move).
double relative_spread(const std::vector<double>& v) {
  const double m = median(v);
  if (v.size() < 2 || !(m > 0)) return 0;
  std::vector<double> deviation;
  for (double x : v) deviation.push_back(std::fabs(x - m));
  return 1.4826 * median(deviation) / m;
}

// The spread below which a probe has been repeated enough.
constexpr double kSteadySpread = 0.03;

// `probe` (the same value on every rank, so that every rank decides alike) `minimum` times,
// then again until the samples' spread is at most kSteadySpread or `maximum` were taken.
std::vector<double> repeat_until_steady(const std::function<double()>& probe, int minimum, int maximum) {
  std::vector<double> samples;
  while (static_cast<int>(samples.size()) < minimum ||
         (static_cast<int>(samples.size()) < maximum && relative_spread(samples) > kSteadySpread)) {
    samples.push_back(probe());
  }
  return samples;
}

// One timed transfer of `bytes` from `a` to `b` (both directions when `both`), with the
// other ranks idle. Returns the seconds `a` measured (send start to the receiver's ack).
double probe_pair(MPI_Comm comm, int rank, int a, int b, std::vector<char>& out, std::vector<char>& in, bool both) {
  quiet_barrier(comm);
  double seconds = 0;
  const int n = static_cast<int>(out.size());
  char ack = 0;
  if (rank == a || rank == b) {
    const int peer = rank == a ? b : a;
    const double t0 = MPI_Wtime();
    MPI_Request r[2];
    int count = 0;
    if (rank == a || both) MPI_Isend(out.data(), n, MPI_BYTE, peer, kTagData, comm, &r[count++]);
    if (rank == b || both) MPI_Irecv(in.data(), n, MPI_BYTE, peer, kTagData, comm, &r[count++]);
    MPI_Waitall(count, r, MPI_STATUSES_IGNORE);
    // The receiver's completion ends the transfer: b acknowledges to a.
    if (rank == b) MPI_Send(&ack, 1, MPI_BYTE, a, kTagAck, comm);
    if (rank == a) MPI_Recv(&ack, 1, MPI_BYTE, b, kTagAck, comm, MPI_STATUS_IGNORE);
    seconds = MPI_Wtime() - t0;
  }
  share_from(comm, seconds, a);
  return seconds;
}

double ping_pong(MPI_Comm comm, int rank, int a, int b, int rounds) {
  quiet_barrier(comm);
  double one_way = 0;
  char byte[8] = {};
  if (rank == a || rank == b) {
    const double t0 = MPI_Wtime();
    for (int i = 0; i < rounds; ++i) {
      if (rank == a) {
        MPI_Send(byte, 8, MPI_BYTE, b, kTagPing, comm);
        MPI_Recv(byte, 8, MPI_BYTE, b, kTagPing, comm, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(byte, 8, MPI_BYTE, a, kTagPing, comm, MPI_STATUS_IGNORE);
        MPI_Send(byte, 8, MPI_BYTE, a, kTagPing, comm);
      }
    }
    one_way = (MPI_Wtime() - t0) / (2.0 * rounds);
  }
  share_from(comm, one_way, a);
  return one_way;
}

// Every rank sends to rank + shift and receives from rank - shift, all at once (the shift
// pattern of bisection tests): each GPU link carries one flow per direction, so a flow
// that slows down crosses a link it shares with another. Returns each sender's bandwidth.
std::vector<double> probe_shift(MPI_Comm comm, int rank, int size, int shift, std::vector<char>& out, std::vector<char>& in) {
  MPI_Barrier(comm);
  const int n = static_cast<int>(out.size());
  const int to = (rank + shift) % size, from = (rank - shift + size) % size;
  char ack_out = 0, ack_in = 0;
  const double t0 = MPI_Wtime();
  MPI_Request data_in, data_out, got_ack, sent_ack;
  MPI_Irecv(in.data(), n, MPI_BYTE, from, kTagData, comm, &data_in);
  MPI_Irecv(&ack_in, 1, MPI_BYTE, to, kTagAck, comm, &got_ack);
  MPI_Isend(out.data(), n, MPI_BYTE, to, kTagData, comm, &data_out);
  // My flow ends when its receiver has it all: the receiver acknowledges as soon as its
  // receive completes (not when its own flow ends, which would chain the flows together).
  MPI_Wait(&data_in, MPI_STATUS_IGNORE);
  MPI_Isend(&ack_out, 1, MPI_BYTE, from, kTagAck, comm, &sent_ack);
  MPI_Wait(&got_ack, MPI_STATUS_IGNORE);
  const double mine = static_cast<double>(n) / (MPI_Wtime() - t0);
  MPI_Wait(&data_out, MPI_STATUS_IGNORE);
  MPI_Wait(&sent_ack, MPI_STATUS_IGNORE);
  std::vector<double> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm);
  return all;
}

}  // namespace

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend, double bytes, int iterations,
                const std::string& output) {
  if (backend != "mpi_host") {
    // The probes move host buffers; GPU backends would need device probes.
    make_backend(backend, comm, rank);  // the clear "no GPU" / "not built" error first
    throw models::InputError("measure --backend " + backend + ": only mpi_host probes are implemented");
  }
  if (size < 2) throw models::InputError("measure: needs at least 2 ranks (mpirun -np 2 or more)");
  if (bytes < 1 || bytes > 1.0e9) throw models::InputError("measure --size: expected between 1 byte and 1 GB");
  std::vector<char> out(static_cast<std::size_t>(bytes), 1), in(static_cast<std::size_t>(bytes), 0);
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

  // Rank 0 shows progress over every probe: the pairs, then the shifts.
  std::optional<models::Progress> shown;
  if (rank == 0) shown.emplace(models::Progress::for_stderr(static_cast<std::size_t>(size * (size - 1) + size - 1)));
  const auto progress = [&](const char* what, int i, int total) {
    if (shown) shown->step(std::string("measure: ") + what + " " + std::to_string(i) + "/" + std::to_string(total));
    watchdog_context(std::string("measure: ") + what + " " + std::to_string(i) + "/" + std::to_string(total));
  };
  // Each ordered pair alone: a transfer of the probe size (its median rate is the pair's
  // bandwidth, per-message overheads of large messages included), both directions at
  // once, and an 8-byte ping-pong (the latency a message pays).
  int step = 0;
  const int pairs = size * (size - 1);
  for (int a = 0; a < size; ++a) {
    for (int b = 0; b < size; ++b) {
      if (a == b) continue;
      progress("pairs", ++step, pairs);
      const auto uni = repeat_until_steady([&] { return bytes / probe_pair(comm, rank, a, b, out, in, false); },
                                           iterations, kMaxRepeats * iterations);
      const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
      form.bandwidth_Bps.at(i, j) = median(uni);
      form.bandwidth_spread->at(i, j) = relative_spread(uni);
      unsteady += relative_spread(uni) > kSteadySpread;
      ++pair_probes;
      if (a < b) {
        const auto bi = repeat_until_steady([&] { return 2 * bytes / probe_pair(comm, rank, a, b, out, in, true); },
                                            iterations, kMaxRepeats * iterations);
        form.bidirectional_Bps->at(i, j) = median(bi);
        form.bidirectional_Bps->at(j, i) = median(bi);
        form.bidirectional_spread->at(i, j) = relative_spread(bi);
        form.bidirectional_spread->at(j, i) = relative_spread(bi);
        unsteady += relative_spread(bi) > kSteadySpread;
        ++pair_probes;
        const double lat = ping_pong(comm, rank, a, b, 200);
        form.latency_s->at(i, j) = lat;
        form.latency_s->at(j, i) = lat;
      }
    }
  }
  // Local work rates of each rank, one rank at a time (what one device does alone): the
  // copy rate (reductions use 2/3 of it) and the 1-bit quantisation rate.
  std::vector<double> local(n, 0), quantize(n, 0);
  {
    const std::size_t count = static_cast<std::size_t>(bytes) / 4;
    std::vector<char> copy(static_cast<std::size_t>(bytes));
    std::vector<float> values(count), residual(count, 0.0f), decoded(count);
    for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<float>(static_cast<int>(i % 1000) - 500);
    std::vector<std::uint8_t> payload(onebit_bytes(count, 1024));
    for (int r = 0; r < size; ++r) {
      watchdog_context("measure: local rates of rank " + std::to_string(r));
      quiet_barrier(comm);
      if (rank != r) continue;
      // One untimed pass first: the buffers' pages are touched, caches warm.
      std::memcpy(copy.data(), out.data(), copy.size());
      onebit_encode_cpu(values.data(), residual.data(), count, 1024, payload.data());
      onebit_decode_cpu(payload.data(), count, 1024, decoded.data());
      auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < iterations; ++k) std::memcpy(copy.data(), out.data(), copy.size());
      local[static_cast<std::size_t>(r)] =
          iterations * bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < iterations; ++k) {
        onebit_encode_cpu(values.data(), residual.data(), count, 1024, payload.data());
        onebit_decode_cpu(payload.data(), count, 1024, decoded.data());
      }
      quantize[static_cast<std::size_t>(r)] = 2.0 * iterations * 4.0 * static_cast<double>(count) /
                                              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    MPI_Allreduce(MPI_IN_PLACE, local.data(), size, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, quantize.data(), size, MPI_DOUBLE, MPI_SUM, comm);
  }
  form.device_local_Bps = local;
  form.device_quantize_Bps = quantize;

  // Shift probes: reveal links that pairs measured one at a time cannot (a switch uplink as
  // fast as a GPU link, shared by the GPUs behind it).
  std::vector<models::ConcurrentProbe> probes;
  for (int shift = 1; shift < size; ++shift) {
    progress("concurrent flows, shift", shift, size - 1);
    std::vector<std::vector<double>> runs;
    for (int k = 0; k < iterations; ++k) runs.push_back(probe_shift(comm, rank, size, shift, out, in));
    models::ConcurrentProbe p;
    for (int r = 0; r < size; ++r) {
      p.flows.push_back({form.gpus[static_cast<std::size_t>(r)], form.gpus[static_cast<std::size_t>((r + shift) % size)]});
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run[static_cast<std::size_t>(r)]);
      p.bandwidth_Bps.push_back(median(values));
    }
    probes.push_back(p);
  }
  form.concurrent_probes = probes;
  if (shown) shown->finish();
  form.description = "Measured by gradsync-run measure over " + backend + " on " + std::to_string(size) + " ranks (" +
                     std::string(hostname, static_cast<std::size_t>(length)) + "), " + std::to_string(static_cast<long long>(bytes)) +
                     "-byte probes (median of " + std::to_string(iterations) + " to " + std::to_string(kMaxRepeats * iterations) +
                     ", repeated until their spread is at most 3 %), latency from 8-byte ping-pongs.";
  form.source = "gradsync-run measure";
  if (rank == 0) {
    models::write_file_atomically(output, models::pretty_json(models::matrix_form_to_json(form)));
    const auto inferred = models::infer_topology(form);
    std::vector<double> spreads;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j) spreads.push_back(*form.bandwidth_spread->at(i, j));
      }
    }
    std::sort(spreads.begin(), spreads.end());
    std::printf("probe spread (robust, relative): median %.1f %%, max %.1f %%; %d of %d pair probes still above %.0f %% "
                "after %d repetitions%s\n",
                100 * spreads[spreads.size() / 2], 100 * spreads.back(), unsteady, pair_probes, 100 * kSteadySpread,
                kMaxRepeats * iterations, unsteady * 4 > pair_probes ? " (a busy machine: figures less sure)" : "");
    std::printf("measured %d ranks; wrote %s\n\ninferred topology:\n%s\n%s", size, output.c_str(),
                models::describe_links(inferred.topology).c_str(), inferred.report.text().c_str());
  }
  return 0;
}

}  // namespace gradsync::runtime
