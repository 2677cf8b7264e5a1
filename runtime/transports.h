// The transport backends share: MPI point-to-point (host buffers, or CUDA buffers with a
// CUDA-aware MPI).
#pragma once

#include <memory>

#include <mpi.h>

#include "runtime/backend.h"

namespace gradsync::runtime {

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm);

}  // namespace gradsync::runtime
