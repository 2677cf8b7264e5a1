#include "runtime/measure.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "models/error.h"
#include "models/matrix_form.h"
#include "models/matrix_inference.h"
#include "runtime/run_backends.h"

namespace gradsync::runtime {

namespace {

constexpr int kTagData = 11, kTagAck = 12, kTagPing = 13;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One timed transfer of `bytes` from `a` to `b` (both directions when `both`), with the
// other ranks idle. Returns the seconds `a` measured (send start to the receiver's ack).
double probe_pair(MPI_Comm comm, int rank, int a, int b, std::vector<char>& out, std::vector<char>& in, bool both) {
  MPI_Barrier(comm);
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
  MPI_Bcast(&seconds, 1, MPI_DOUBLE, a, comm);
  return seconds;
}

double ping_pong(MPI_Comm comm, int rank, int a, int b, int rounds) {
  MPI_Barrier(comm);
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
  MPI_Bcast(&one_way, 1, MPI_DOUBLE, a, comm);
  return one_way;
}

// Two transfers at once (a->b and c->d); returns both bandwidths (bytes/s).
std::pair<double, double> probe_two(MPI_Comm comm, int rank, int a, int b, int c, int d, std::vector<char>& out,
                                    std::vector<char>& in) {
  MPI_Barrier(comm);
  double t_ab = 0, t_cd = 0;
  const int n = static_cast<int>(out.size());
  char ack = 0;
  const double t0 = MPI_Wtime();
  auto flow = [&](int from, int to, double& t) {
    if (rank == from) {
      MPI_Send(out.data(), n, MPI_BYTE, to, kTagData, comm);
      MPI_Recv(&ack, 1, MPI_BYTE, to, kTagAck, comm, MPI_STATUS_IGNORE);
      t = MPI_Wtime() - t0;
    } else if (rank == to) {
      MPI_Recv(in.data(), n, MPI_BYTE, from, kTagData, comm, MPI_STATUS_IGNORE);
      MPI_Send(&ack, 1, MPI_BYTE, from, kTagAck, comm);
    }
  };
  flow(a, b, t_ab);
  flow(c, d, t_cd);
  MPI_Bcast(&t_ab, 1, MPI_DOUBLE, a, comm);
  MPI_Bcast(&t_cd, 1, MPI_DOUBLE, c, comm);
  return {static_cast<double>(n) / t_ab, static_cast<double>(n) / t_cd};
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

  const auto progress = [&](const char* what, int i, int total) {
    if (rank == 0) std::fprintf(stderr, "\rmeasure: %s %d/%d ...   ", what, i, total);
  };
  // Each ordered pair: transfers of the probe size and of a sixteenth of it. Their times
  // give the pair's Hockney model t(n) = a + n / B: B from the difference, a from the
  // intercept — the latency a large message really pays (protocol handshakes included),
  // which an 8-byte ping-pong (kept in other_measurements) understates.
  const std::size_t small = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 16);
  std::vector<char> small_out(small, 1), small_in(small, 0);
  models::MeasurementSet ping;
  ping.latency_s = models::PairMatrix(n);
  int step = 0;
  const int pairs = size * (size - 1);
  for (int a = 0; a < size; ++a) {
    for (int b = 0; b < size; ++b) {
      if (a == b) continue;
      progress("pairs", ++step, pairs);
      std::vector<double> t_large, t_small, bi;
      for (int k = 0; k < iterations; ++k) {
        t_large.push_back(probe_pair(comm, rank, a, b, out, in, false));
        t_small.push_back(probe_pair(comm, rank, a, b, small_out, small_in, false));
        if (a < b) bi.push_back(2 * bytes / probe_pair(comm, rank, a, b, out, in, true));
      }
      const double tl = median(t_large), ts = median(t_small);
      const double slope = (tl - ts) / (bytes - static_cast<double>(small));
      const double bandwidth = slope > 0 ? 1.0 / slope : bytes / tl;
      const double intercept = std::max(0.0, tl - bytes * (slope > 0 ? slope : 0.0));
      const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
      form.bandwidth_Bps.at(i, j) = bandwidth;
      form.latency_s->at(i, j) = intercept;
      if (a < b) {
        form.bidirectional_Bps->at(i, j) = median(bi);
        form.bidirectional_Bps->at(j, i) = median(bi);
        const double lat = ping_pong(comm, rank, a, b, 200);
        ping.latency_s->at(i, j) = lat;
        ping.latency_s->at(j, i) = lat;
      }
    }
  }
  form.other_measurements["ping_pong_8_bytes"] = ping;
  // Local copy rate of each rank (what a reduction can use).
  std::vector<double> local(n, 0);
  {
    std::vector<char> copy(static_cast<std::size_t>(bytes));
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < iterations; ++k) std::memcpy(copy.data(), out.data(), copy.size());
    const double mine = iterations * bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MPI_Gather(&mine, 1, MPI_DOUBLE, local.data(), 1, MPI_DOUBLE, 0, comm);
    MPI_Bcast(local.data(), size, MPI_DOUBLE, 0, comm);
  }
  form.device_local_Bps = local;

  // Concurrent-flow probes: two disjoint transfers at once; a shared link shows as both
  // slowing down. All disjoint pairs of flows for up to 6 ranks.
  std::vector<models::ConcurrentProbe> probes;
  if (size <= 6 && size >= 4) {
    int total = 0;
    for (int a = 0; a < size; ++a) for (int b = 0; b < size; ++b) for (int c = a + 1; c < size; ++c) for (int d = 0; d < size; ++d)
      if (a != b && c != d && c != b && d != a && d != b) ++total;
    int k = 0;
    for (int a = 0; a < size; ++a) {
      for (int b = 0; b < size; ++b) {
        for (int c = a + 1; c < size; ++c) {
          for (int d = 0; d < size; ++d) {
            if (a == b || c == d || c == b || d == a || d == b) continue;
            progress("concurrent flows", ++k, total);
            std::vector<double> x, y;
            for (int i = 0; i < iterations; ++i) {
              const auto [bx, by] = probe_two(comm, rank, a, b, c, d, out, in);
              x.push_back(bx);
              y.push_back(by);
            }
            models::ConcurrentProbe p;
            p.flows = {{form.gpus[static_cast<std::size_t>(a)], form.gpus[static_cast<std::size_t>(b)]},
                       {form.gpus[static_cast<std::size_t>(c)], form.gpus[static_cast<std::size_t>(d)]}};
            p.bandwidth_Bps = {median(x), median(y)};
            probes.push_back(p);
          }
        }
      }
    }
  }
  form.concurrent_probes = probes;
  if (rank == 0) std::fprintf(stderr, "\r%60s\r", "");
  form.description = "Measured by gradsync-run measure over " + backend + " on " + std::to_string(size) + " ranks (" +
                     std::string(hostname, static_cast<std::size_t>(length)) + "), " + std::to_string(static_cast<long long>(bytes)) +
                     "- and " + std::to_string(small) + "-byte probes (bandwidth and latency from their Hockney fit), median of " +
                     std::to_string(iterations) + ".";
  form.source = "gradsync-run measure";
  if (rank == 0) {
    models::write_file_atomically(output, models::pretty_json(models::matrix_form_to_json(form)));
    const auto inferred = models::infer_topology(form);
    std::printf("measured %d ranks; wrote %s\n\ninferred topology:\n%s\n%s", size, output.c_str(),
                models::describe_links(inferred.topology).c_str(), inferred.report.text().c_str());
  }
  return 0;
}

}  // namespace gradsync::runtime
