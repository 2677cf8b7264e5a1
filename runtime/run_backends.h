// Backends at run time: each backend's file registers its factory under its name in the
// catalogue (runtime/backends/catalogue.h), as executors register themselves:
//   const BackendRegistration registered{"mpi_host", make_mpi_host_backend};
// make_backend finds it; a backend not built, or one that needs a GPU where there is none,
// is a clear error (exit status 2).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gradsync/config.h"
#include "runtime/backend.h"
#include "runtime/backends/catalogue.h"

namespace gradsync::runtime {

using BackendFactory = Backend (*)(MPI_Comm comm);
struct BackendRegistration {
  BackendRegistration(const std::string& name, BackendFactory make);  // the name must be in the catalogue
};
Backend make_backend(const std::string& name, MPI_Comm comm);
std::vector<std::string> registered_backends();  // the names with a factory in this build, sorted

// The platform's own all-reduce (sum of floats) on this rank's device, timed as nccl-tests
// times it: gradsync-run --strategy nccl on the nccl backend calls NCCL's collective itself.
class NativeAllReduce {
 public:
  virtual ~NativeAllReduce() = default;
  // Mean seconds per call over `iterations` calls issued back to back (after `warmup`), this rank's.
  virtual double seconds_per_call(std::size_t count, bool in_place, int warmup, int iterations) = 0;
  // One call on inputs whose sum is exact in float: the elements of this rank's result that differ.
  virtual std::uint64_t wrong_elements(std::size_t count, bool in_place) = 0;
  virtual int device() const = 0;
  virtual std::string bus_id() const = 0;       // "0x01"
  virtual std::string device_name() const = 0;  // "NVIDIA H100 80GB HBM3"
  virtual std::string library() const = 0;     // "NCCL 2.27.3"
  // From the watchdog's thread, before MPI_Abort: ends a wait on a peer that is gone.
  virtual void abort() {}
};
// NCCL's ncclAllReduce over every rank of `comm`, one GPU per rank. InputError (exit 2, on
// every rank alike) when this build has no NCCL, a rank has no GPU, or two ranks got one GPU.
std::unique_ptr<NativeAllReduce> make_nccl_allreduce(MPI_Comm comm);

#if GRADSYNC_HAVE_NCCL
std::unique_ptr<NativeAllReduce> make_nccl_allreduce_on_gpu(MPI_Comm comm);  // runtime/backends/nccl/
#endif

}  // namespace gradsync::runtime
