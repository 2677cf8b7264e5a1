// nccl: buffers on the GPU, CUDA kernels, NCCL send/recv. MPI only bootstraps the NCCL
// communicator (nccl-tests' way: rank 0 makes the unique id, MPI_Bcast shares it). Each
// round's transfers form one NCCL group on the stream the Memory's kernels use, so a
// round's sends see the kernels before them and the kernels after see its receives.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <cstddef>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/backends/cuda/cuda_memory.h"
#include "runtime/run_backends.h"

namespace gradsync::runtime {

namespace {

// Throws std::runtime_error("<call>: <NCCL error text>[: <last error of comm>]").
void check_nccl(ncclResult_t status, const char* call, ncclComm_t comm = nullptr) {
  if (status == ncclSuccess) return;
  std::string message = std::string(call) + ": " + ncclGetErrorString(status);
  const char* detail = comm ? ncclGetLastError(comm) : nullptr;
  if (detail && *detail) message += std::string(": ") + detail;
  throw std::runtime_error(message);
}

constexpr const char* kNoAsync =
    "the nccl backend runs every round in lockstep; asynchronous servers need --backend mpi_host or mpi_cuda";

class NcclTransport final : public Transport {
 public:
  NcclTransport(MPI_Comm comm, int device, std::shared_ptr<CUstream_st> stream) : stream_(std::move(stream)) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ncclUniqueId id{};
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm);
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    check_nccl(ncclCommInitRank(&nccl_, size, id, rank), "ncclCommInitRank");
  }
  ~NcclTransport() override {
    if (aborted_.load()) return;  // ncclCommAbort freed it
    const ncclResult_t status = ncclCommDestroy(nccl_);
    if (status != ncclSuccess) std::cerr << "gradsync: ncclCommDestroy: " << ncclGetErrorString(status) << "\n";
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  // Tags are not needed: NCCL matches the operations between two processes in the order
  // they are posted, which is the schedule's order on both sides.
  int post_send(const void* data, std::size_t bytes, int to, int /*tag*/) override {
    require_round();
    check_nccl(ncclSend(data, bytes, ncclChar, to, nccl_, stream_.get()), "ncclSend", nccl_);
    return posted_++;
  }
  int post_recv(void* data, std::size_t bytes, int from, int /*tag*/) override {
    require_round();
    check_nccl(ncclRecv(data, bytes, ncclChar, from, nccl_, stream_.get()), "ncclRecv", nccl_);
    return posted_++;
  }

  void begin_round() override {
    check_nccl(ncclGroupStart(), "ncclGroupStart", nccl_);
    in_round_ = true;
  }
  void end_round() override {
    in_round_ = false;
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", nccl_);
  }

  // Polls rather than blocking in cudaStreamSynchronize, so that an error NCCL reports
  // asynchronously (a peer gone) or an abort from the watchdog ends the wait (NCCL's
  // documented fault-handling pattern).
  void wait_all() override {
    while (true) {
      const cudaError_t state = cudaStreamQuery(stream_.get());
      if (state == cudaSuccess) break;
      if (state != cudaErrorNotReady) check_cuda(state, "cudaStreamQuery");
      if (aborted_.load()) throw std::runtime_error("NCCL communicator aborted");
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(nccl_, &async), "ncclCommGetAsyncError", nccl_);
      if (async != ncclSuccess && async != ncclInProgress) check_nccl(async, "NCCL (asynchronous error)", nccl_);
      std::this_thread::yield();
    }
    posted_ = 0;
  }

  void abort() override {
    if (!aborted_.exchange(true)) ncclCommAbort(nccl_);
  }

  std::size_t wait_any(const std::vector<int>& /*handles*/) override { throw std::runtime_error(kNoAsync); }

 private:
  // Transfers outside begin_round/end_round come only from an asynchronous server's
  // event loop: refuse them before anything reaches NCCL.
  void require_round() const {
    if (!in_round_) throw std::runtime_error(kNoAsync);
  }

  ncclComm_t nccl_ = nullptr;
  std::shared_ptr<CUstream_st> stream_;
  bool in_round_ = false;
  int posted_ = 0;  // handles: 0, 1, ... until wait_all
  std::atomic<bool> aborted_{false};
};

}  // namespace

Backend make_nccl_backend(MPI_Comm comm, int /*rank*/) {
  const int device = local_cuda_device(comm);
  std::shared_ptr<CUstream_st> stream = make_cuda_stream(device);  // one stream for kernels and transfers
  auto memory = make_cuda_memory(device, stream.get(), stream);
  auto transport = std::make_unique<NcclTransport>(comm, device, std::move(stream));
  return Backend{"nccl (NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                     std::to_string(NCCL_PATCH) + ")",
                 std::move(memory), std::move(transport)};
}

}  // namespace gradsync::runtime
