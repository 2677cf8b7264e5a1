// nccl: buffers on the GPU, CUDA kernels, NCCL send/recv. MPI only bootstraps the NCCL
// communicator (nccl-tests' way: rank 0 makes the unique id, MPI_Bcast shares it). Each
// round's transfers form one NCCL group on the stream the Memory's kernels use, so a
// round's sends see the kernels before them and the kernels after see its receives.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
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

// NCCL's ncclAllReduce on float sums with its own communicator, stream and buffers (what
// nccl-tests' all_reduce_perf times).
class NcclAllReduce final : public NativeAllReduce {
 public:
  explicit NcclAllReduce(MPI_Comm comm) : mpi_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    device_ = local_cuda_device(comm);
    stream_ = make_cuda_stream(device_);
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm);
    check_nccl(ncclCommInitRank(&nccl_, size_, id, rank_), "ncclCommInitRank");
    check_cuda(cudaGetDeviceProperties(&props_, device_), "cudaGetDeviceProperties");
  }
  ~NcclAllReduce() override {
    free_buffers();
    ncclCommDestroy(nccl_);
  }
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  double seconds_per_call(std::size_t count, bool in_place, int warmup, int iterations) override {
    reserve(count);
    for (int i = 0; i < warmup; ++i) launch(count, in_place);
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    MPI_Barrier(mpi_);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) launch(count, in_place);
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    return iterations > 0 ? (MPI_Wtime() - t0) / iterations : 0.0;
  }

  std::uint64_t wrong_elements(std::size_t count, bool in_place) override {
    reserve(count);
    // Rank r holds (r + 1) x (i % 13 + 1): every sum is an integer below 2^24, exact in float.
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>((rank_ + 1) * static_cast<int>(i % 13 + 1));
    check_cuda(cudaMemcpy(send_, host.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemset(recv_, 0, count * sizeof(float)), "cudaMemset");
    launch(count, in_place);
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    check_cuda(cudaMemcpy(host.data(), in_place ? send_ : recv_, count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const long ranks_sum = static_cast<long>(size_) * (size_ + 1) / 2;
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += host[i] != static_cast<float>(ranks_sum * static_cast<long>(i % 13 + 1));
    return wrong;
  }

  int device() const override { return device_; }
  std::string bus_id() const override {
    char text[16];
    std::snprintf(text, sizeof text, "0x%02x", props_.pciBusID);
    return text;
  }
  std::string device_name() const override { return props_.name; }
  std::string library() const override {
    int version = 0;
    ncclGetVersion(&version);
    return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
           std::to_string(version % 100);
  }

 private:
  void launch(std::size_t count, bool in_place) {
    check_nccl(ncclAllReduce(send_, in_place ? send_ : recv_, count, ncclFloat, ncclSum, nccl_, stream_.get()),
               "ncclAllReduce", nccl_);
  }
  void reserve(std::size_t count) {
    if (count <= capacity_) return;
    free_buffers();
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaMalloc(&send_, std::max<std::size_t>(count, 1) * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMalloc(&recv_, std::max<std::size_t>(count, 1) * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMemset(send_, 0, std::max<std::size_t>(count, 1) * sizeof(float)), "cudaMemset");
    capacity_ = count;
  }
  void free_buffers() {
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
    send_ = recv_ = nullptr;
    capacity_ = 0;
  }

  MPI_Comm mpi_;
  int rank_ = 0, size_ = 1, device_ = 0;
  std::shared_ptr<CUstream_st> stream_;
  ncclComm_t nccl_ = nullptr;
  cudaDeviceProp props_{};
  float* send_ = nullptr;
  float* recv_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace

std::unique_ptr<NativeAllReduce> make_nccl_allreduce_on_gpu(MPI_Comm comm) { return std::make_unique<NcclAllReduce>(comm); }

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
