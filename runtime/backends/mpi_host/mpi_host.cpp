// mpi_host: buffers in host memory, CPU kernels, MPI point-to-point.
#include "runtime/run_backends.h"
#include "runtime/transports.h"

namespace gradsync::runtime {

namespace {

Backend make_mpi_host_backend(MPI_Comm comm) { return Backend{"mpi_host", make_host_memory(), make_mpi_transport(comm)}; }

const BackendRegistration registered_mpi_host{"mpi_host", make_mpi_host_backend};

}  // namespace

}  // namespace gradsync::runtime
