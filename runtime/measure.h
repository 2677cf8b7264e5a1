// gradsync-run measure: the matrix-form topology of the ranks as the chosen backend sees
// them — pairwise unidirectional and bidirectional bandwidth and latency, plus
// concurrent-flow probes that reveal links two pairs share.
#pragma once

#include <mpi.h>

#include <string>

namespace gradsync::runtime {

int run_measure(MPI_Comm comm, int rank, int size, const std::string& backend, double bytes, int iterations,
                const std::string& output);

}  // namespace gradsync::runtime
