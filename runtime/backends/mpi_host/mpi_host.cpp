// mpi_host: buffers in host memory, CPU kernels, MPI point-to-point.
#include "runtime/run_backends.h"
#include "runtime/transports.h"

namespace gradsync::runtime {

Backend make_mpi_host_backend(MPI_Comm comm) { return Backend{"mpi_host", make_host_memory(), make_mpi_transport(comm)}; }

}  // namespace gradsync::runtime
