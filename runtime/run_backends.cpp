#include "runtime/run_backends.h"

#include "gradsync/config.h"
#include "models/support/error.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

std::vector<std::string> backend_names() { return {"mpi_host", "mpi_cuda", "nccl"}; }

bool backend_built(const std::string& name) {
  if (name == "mpi_host") return true;
  if (name == "mpi_cuda") return GRADSYNC_HAVE_CUDA;
  if (name == "nccl") return GRADSYNC_HAVE_NCCL;
  return false;
}

Backend make_backend(const std::string& name, MPI_Comm comm, int rank) {
  if (name == "mpi_host") return make_mpi_host_backend(comm);
  if (!backend_built(name)) {
    throw models::InputError("--backend " + name + ": this gradsync was built without it (configure with the CUDA toolkit "
                             "and -DGRADSYNC_WITH_CUDA=ON); built backends: mpi_host");
  }
  const GpuAvailability gpus = gpu_availability();
  if (gpus.count == 0) throw models::InputError("--backend " + name + ": " + gpus.reason + "; use --backend mpi_host");
#if GRADSYNC_HAVE_CUDA
  if (name == "mpi_cuda") return make_mpi_cuda_backend(comm, rank);
#endif
#if GRADSYNC_HAVE_NCCL
  if (name == "nccl") return make_nccl_backend(comm, rank);
#endif
  (void)rank;
  throw models::InputError("--backend " + name + ": unknown backend");
}

std::unique_ptr<NativeAllReduce> make_nccl_allreduce(MPI_Comm comm) {
#if GRADSYNC_HAVE_NCCL
  // Agreed by every rank, so that a rank without a GPU does not leave the others waiting
  // in NCCL's bootstrap.
  const GpuAvailability gpus = gpu_availability();
  const int mine = gpus.count > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all == 0) {
    throw models::InputError("--strategy nccl --backend nccl: " + (mine ? std::string("another rank found no GPU") : gpus.reason) +
                             "; NCCL's own all-reduce needs a GPU per rank (--backend mpi_host runs gradsync's model of "
                             "NCCL's ring instead)");
  }
  return make_nccl_allreduce_on_gpu(comm);
#else
  (void)comm;
  throw models::InputError("--strategy nccl --backend nccl: this gradsync was built without NCCL (configure with the CUDA "
                           "toolkit and NCCL, -DGRADSYNC_WITH_CUDA=ON); --backend mpi_host runs gradsync's model of "
                           "NCCL's ring instead");
#endif
}

}  // namespace gradsync::runtime
