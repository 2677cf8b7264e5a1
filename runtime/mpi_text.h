// Text from every rank of an MPI communicator, gathered at rank 0.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace gradsync::runtime {

// Every rank's text, in rank order, on rank 0 (empty elsewhere).
std::vector<std::string> gather_text(const std::string& mine, MPI_Comm comm, int rank, int size);

}  // namespace gradsync::runtime
