// gradsync-run measure: the matrix-form topology of the ranks as the chosen backend sees
// them — pairwise unidirectional and bidirectional bandwidth and latency (host buffers
// over MPI, or device buffers over MPI or NCCL: a p2pBandwidthLatencyTest-like matrix),
// concurrent-flow probes that reveal links two pairs share, each device's copy and 1-bit
// rates alone and with the ranks at work at once, and on GPUs the host<->device rates.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::runtime {

// A probe that moved `moved` bytes at `rate` (bytes / its whole time) and paid one
// `latency` in that time: the rate of its bandwidth term, as the models take a transfer
// (latency + bytes / bandwidth). A probe no longer than its latency keeps its rate.
inline double rate_without_latency(double moved, double rate, double latency) {
  const double seconds = moved / rate;
  return seconds > latency ? moved / (seconds - latency) : rate;
}

// A pair probed on a busy machine, in passes: each pass a single probe of `bytes` that took
// single_s[p] seconds and then a stream of `messages` such probes at once that took
// stream_s[p]. A busy machine adds a delay to every probe while the ranks wait to be scheduled
// (a scheduler tick or two), which both probes of a pass pay alike, as they pay the latency and
// a token bucket's first frame: the difference leaves them out. The rate is (messages - 1) x
// bytes over the median difference; the overhead, what a single probe paid beside its bytes at
// that rate (its median time less bytes / rate, at least 0). Nothing where the stream took no
// longer than the single probe (no rate can be told).
struct StreamRate {
  double rate_Bps = 0;
  double overhead_s = 0;
};
std::optional<StreamRate> rate_from_streams(double bytes, int messages, const std::vector<double>& single_s,
                                            const std::vector<double>& stream_s);

// A probe of `moved` bytes that took `seconds` on a pair whose probes each paid `overhead`
// seconds beside their bytes: its rate without the overhead, at most `most` (what the probe
// can carry at best: the pair's rate alone). `most` where the overhead is the whole time.
inline double rate_without_overhead(double moved, double seconds, double overhead, double most) {
  return seconds > overhead ? std::min(most, moved / (seconds - overhead)) : most;
}

// Latency as a schedule's lockstep rounds meet it. Of n ranks, the pair i < j is a shift of j - i
// one way and of n - (j - i) the other; round_s[k] is the round of shift k (every rank sending to
// rank + k and receiving from rank - k at once; round_s[0] unused). Raises each pair's latency
// (latency[i * n + j], kept symmetric) to the larger of its two shifts' rounds where that is
// larger; returns how many pairs it raised.
int raise_to_rounds(std::vector<double>& latency, std::size_t n, const std::vector<double>& round_s);
// The round the pair i < j meets: the larger of its two shifts' (j - i and n - (j - i)).
double pair_round_s(std::size_t i, std::size_t j, std::size_t n, const std::vector<double>& round_s);

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend, double bytes, int iterations,
                const std::string& output);

}  // namespace gradsync::runtime
