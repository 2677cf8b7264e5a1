// gradsync-run measure: the matrix-form topology of the ranks as the chosen backend sees
// them — pairwise unidirectional and bidirectional bandwidth and latency (host buffers
// over MPI, or device buffers over MPI or NCCL: a p2pBandwidthLatencyTest-like matrix),
// concurrent-flow probes that reveal links two pairs share, each device's copy and 1-bit
// rates alone and with the ranks at work at once, and on GPUs the host<->device rates.
#pragma once

#include <mpi.h>

#include <string>

namespace gradsync::runtime {

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend, double bytes, int iterations,
                const std::string& output);

}  // namespace gradsync::runtime
