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

// The platform's own collective on floats on this rank's device, timed as nccl-tests times
// it: gradsync-run --strategy nccl on the nccl backend calls NCCL's collective itself. Sizes
// are nccl-tests': `count` the elements of the whole buffer (an all-gather's received one, a
// reduce-scatter's sent one), each rank's share count / ranks; broadcast and reduce from and to
// rank 0, their default root.
class NativeCollective {
 public:
  virtual ~NativeCollective() = default;
  // Mean seconds per call over `iterations` calls issued back to back (after `warmup`), this rank's.
  virtual double seconds_per_call(std::size_t count, bool in_place, int warmup, int iterations) = 0;
  // One call on inputs whose result is exact in float: the elements of this rank's result that
  // differ from it (none checked where the collective leaves this rank nothing: reduce off the root).
  virtual std::uint64_t wrong_elements(std::size_t count, bool in_place) = 0;
  virtual int device() const = 0;
  virtual std::string bus_id() const = 0;       // "0x01"
  virtual std::string device_name() const = 0;  // "NVIDIA H100 80GB HBM3"
  virtual std::string library() const = 0;     // "NCCL 2.27.3"
  // From the watchdog's thread, before MPI_Abort: ends a wait on a peer that is gone.
  virtual void abort() {}
};
// The collectives it runs, by nccl-tests' names, and NCCL's function for each.
const std::vector<std::string>& native_collectives();  // all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall
std::string nccl_function_of(const std::string& collective);  // "ncclAllGather"
// NCCL's `collective` over every rank of `comm`, one GPU per rank. InputError (exit 2, on
// every rank alike) when this build has no NCCL, a rank has no GPU, or two ranks got one GPU.
std::unique_ptr<NativeCollective> make_nccl_collective(MPI_Comm comm, const std::string& collective);

#if GRADSYNC_HAVE_NCCL
std::unique_ptr<NativeCollective> make_nccl_collective_on_gpu(MPI_Comm comm, const std::string& collective);  // runtime/backends/nccl/
#endif

}  // namespace gradsync::runtime
