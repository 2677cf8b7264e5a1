#include "runtime/backends/catalogue.h"

#include "gradsync/config.h"
#include "models/support/error.h"

namespace gradsync::runtime {

const std::vector<BackendInfo>& backend_catalogue() {
  static const std::vector<BackendInfo> backends = {
      {"mpi_host", "host memory over MPI", false, true},
      {"mpi_cuda", "CUDA buffers over MPI", true, GRADSYNC_HAVE_CUDA != 0},
      {"nccl", "CUDA buffers over NCCL send/recv", true, GRADSYNC_HAVE_NCCL != 0},
  };
  return backends;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const BackendInfo& b : backend_catalogue()) names.push_back(b.name);
  return names;
}

std::string backends_help() {
  std::string text;
  const auto& all = backend_catalogue();
  for (std::size_t i = 0; i < all.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == all.size() ? " or " : ", ") + all[i].name + " (" + all[i].summary +
            (all[i].built ? "" : "; not built here") + ")";
  }
  return text;
}

const BackendInfo& find_backend(const std::string& name, const std::string& flag) {
  for (const BackendInfo& b : backend_catalogue()) {
    if (b.name == name) return b;
  }
  throw models::InputError(flag + " " + name + ": unknown backend" + models::did_you_mean(name, backend_names()) +
                           "; expected " + models::join(backend_names(), ", "));
}

}  // namespace gradsync::runtime
