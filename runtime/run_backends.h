// Choosing a backend at run time: mpi_host is always built; mpi_cuda and nccl when the
// toolkit was found, and they need a GPU (without one: a clear error, exit status 2).
#pragma once

#include <mpi.h>

#include <string>

#include "gradsync/config.h"
#include "runtime/backend.h"

namespace gradsync::runtime {

Backend make_backend(const std::string& name, MPI_Comm comm, int rank);

// Implemented under runtime/backends/<name>/ (CUDA ones only in CUDA builds).
Backend make_mpi_host_backend(MPI_Comm comm);
#if GRADSYNC_HAVE_CUDA
Backend make_mpi_cuda_backend(MPI_Comm comm, int rank);
#endif
#if GRADSYNC_HAVE_NCCL
Backend make_nccl_backend(MPI_Comm comm, int rank);
#endif

}  // namespace gradsync::runtime
