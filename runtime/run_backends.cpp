#include "runtime/run_backends.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "gradsync/config.h"
#include "models/support/error.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

namespace {

std::map<std::string, BackendFactory>& factories() {
  static std::map<std::string, BackendFactory> registered;
  return registered;
}

}  // namespace

BackendRegistration::BackendRegistration(const std::string& name, BackendFactory make) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw std::logic_error("backend " + name + " registers but is not in runtime/backends/catalogue.cpp");
  }
  if (!factories().emplace(name, make).second) throw std::logic_error("backend " + name + " is registered twice");
}

std::vector<std::string> registered_backends() {
  std::vector<std::string> names;
  for (const auto& [name, make] : factories()) names.push_back(name);
  return names;
}

Backend make_backend(const std::string& name, MPI_Comm comm) {
  const BackendInfo& info = find_backend(name);
  if (!info.built) {
    std::vector<std::string> built;
    for (const BackendInfo& b : backend_catalogue()) {
      if (b.built) built.push_back(b.name);
    }
    throw models::InputError("--backend " + name + ": this gradsync was built without it (configure with the CUDA toolkit "
                             "and -DGRADSYNC_WITH_CUDA=ON); built backends: " + models::join(built, ", "));
  }
  const auto factory = factories().find(name);
  if (factory == factories().end()) throw std::logic_error("backend " + name + " is built but registered no factory");
  if (info.needs_gpu) {
    const GpuAvailability gpus = gpu_availability();
    if (gpus.count == 0) throw models::InputError("--backend " + name + ": " + gpus.reason + "; use --backend mpi_host");
  }
  return factory->second(comm);
}

const std::vector<std::string>& native_collectives() {
  static const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
  return names;
}

std::string nccl_function_of(const std::string& collective) {
  if (collective == "all_gather") return "ncclAllGather";
  if (collective == "reduce_scatter") return "ncclReduceScatter";
  if (collective == "broadcast") return "ncclBroadcast";
  if (collective == "reduce") return "ncclReduce";
  if (collective == "alltoall") return "ncclSend/ncclRecv";  // nccl-tests' alltoall_perf: a group of them
  return "ncclAllReduce";
}

std::unique_ptr<NativeCollective> make_nccl_collective(MPI_Comm comm, const std::string& collective) {
  const auto& names = native_collectives();
  if (std::find(names.begin(), names.end(), collective) == names.end()) {
    throw models::InputError("--param collective=" + collective + ": NCCL's own collectives here are " + models::join(names, ", "));
  }
#if GRADSYNC_HAVE_NCCL
  // Agreed by every rank, so that a rank without a GPU does not leave the others waiting
  // in NCCL's bootstrap.
  const GpuAvailability gpus = gpu_availability();
  const int mine = gpus.count > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (all == 0) {
    throw models::InputError("--strategy nccl --backend nccl: " + (mine ? std::string("another rank found no GPU") : gpus.reason) +
                             "; NCCL's own " + nccl_function_of(collective) + " needs a GPU per rank (--backend mpi_host runs "
                             "gradsync's model of NCCL's ring instead)");
  }
  return make_nccl_collective_on_gpu(comm, collective);
#else
  (void)comm;
  throw models::InputError("--strategy nccl --backend nccl: this gradsync was built without NCCL (configure with the CUDA "
                           "toolkit and NCCL, -DGRADSYNC_WITH_CUDA=ON); --backend mpi_host runs gradsync's model of "
                           "NCCL's ring instead");
#endif
}

}  // namespace gradsync::runtime
