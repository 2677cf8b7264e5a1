// Choosing a backend at run time: mpi_host is always built; mpi_cuda and nccl when the
// toolkit was found, and they need a GPU (without one: a clear error, exit status 2).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gradsync/config.h"
#include "runtime/backend.h"

namespace gradsync::runtime {

Backend make_backend(const std::string& name, MPI_Comm comm, int rank);

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

// Implemented under runtime/backends/<name>/ (CUDA ones only in CUDA builds).
Backend make_mpi_host_backend(MPI_Comm comm);
#if GRADSYNC_HAVE_CUDA
Backend make_mpi_cuda_backend(MPI_Comm comm, int rank);
#endif
#if GRADSYNC_HAVE_NCCL
Backend make_nccl_backend(MPI_Comm comm, int rank);
std::unique_ptr<NativeAllReduce> make_nccl_allreduce_on_gpu(MPI_Comm comm);
#endif

}  // namespace gradsync::runtime
