// gradsync-run measure: the matrix-form topology of the ranks as the chosen backend sees
// them — pairwise unidirectional and bidirectional bandwidth and latency (host buffers
// over MPI, or device buffers over MPI or NCCL: a p2pBandwidthLatencyTest-like matrix),
// concurrent-flow probes that reveal links two pairs share, each device's copy and 1-bit
// rates alone and with the ranks at work at once, and on GPUs the host<->device rates.
#pragma once

#include <mpi.h>

#include <string>

namespace gradsync::runtime {

// A probe that moved `moved` bytes at `rate` (bytes / its whole time) and paid one
// `latency` in that time: the rate of its bandwidth term, as the models take a transfer
// (latency + bytes / bandwidth). A probe no longer than its latency keeps its rate.
inline double rate_without_latency(double moved, double rate, double latency) {
  const double seconds = moved / rate;
  return seconds > latency ? moved / (seconds - latency) : rate;
}

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend, double bytes, int iterations,
                const std::string& output);

}  // namespace gradsync::runtime
