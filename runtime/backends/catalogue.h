// The runtime's backends as the command lines know them: one list, without MPI or CUDA, that
// gradsync-run's --backend flags, gradsync validate and their help texts read. Each backend's
// code registers its factory under the same name from its own file (run_backends.h); a
// backend listed here but not built (the CUDA ones without the toolkit) says so.
#pragma once

#include <string>
#include <vector>

namespace gradsync::runtime {

struct BackendInfo {
  std::string name;  // "mpi_host"
  std::string summary;  // "host memory over MPI"
  bool needs_gpu = false;
  bool built = false;  // compiled into this gradsync
};

// Every backend, built or not, in the order help texts list them.
const std::vector<BackendInfo>& backend_catalogue();
std::vector<std::string> backend_names();
// "mpi_host (host memory over MPI), mpi_cuda (...) or nccl (...)", for help texts.
std::string backends_help();
// The entry, or an InputError naming `flag`, the value and the backends (with a suggestion).
const BackendInfo& find_backend(const std::string& name, const std::string& flag = "--backend");

}  // namespace gradsync::runtime
