// Transports shared by backends: MPI point-to-point (host buffers, or CUDA buffers with
// a CUDA-aware MPI), and an in-process transport for the reference executor.
#pragma once

#include <memory>

#include <mpi.h>

#include "runtime/backend.h"

namespace gradsync::runtime {

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm);
// Every "process" lives in this one: sends are copied into per-(from, to, tag) FIFO
// queues when posted, receives are matched in wait_all(). Host memory only.
std::unique_ptr<Transport> make_local_transport();

}  // namespace gradsync::runtime
