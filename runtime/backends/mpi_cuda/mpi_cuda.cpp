// mpi_cuda: buffers on the GPU, CUDA kernels, MPI point-to-point. A CUDA-aware MPI
// moves device buffers itself; any other MPI gets host copies staged through pinned
// memory by the StagingTransport below.
#include <cuda_runtime.h>
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support
#endif

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/backends/cuda/cuda_memory.h"
#include "runtime/run_backends.h"
#include "runtime/transports.h"

namespace gradsync::runtime {

namespace {

// Whether MPI can read and write device buffers (OpenMPI built with CUDA support: asked
// at run time, since the library in use may differ from the one compiled against).
bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

// Page-locked host memory, reused from transfer to transfer.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  void reserve(std::size_t bytes) {
    if (bytes <= capacity_) return;
    if (data_) check_cuda(cudaFreeHost(data_), "cudaFreeHost");
    data_ = nullptr;
    capacity_ = 0;
    check_cuda(cudaMallocHost(&data_, bytes), "cudaMallocHost");
    capacity_ = bytes;
  }
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// MPI on host buffers for device data: a send is copied device -> pinned host before it
// is posted; a receive lands in pinned host memory and is copied host -> device when it
// completes (in wait_all or wait_any). Handles are the wrapped transport's handles
// (0, 1, ... until wait_all); each one borrows a pinned buffer from a pool until it
// completes, so the pool grows to the most transfers ever in flight at once.
class StagingTransport final : public Transport {
 public:
  StagingTransport(std::unique_ptr<Transport> mpi, std::shared_ptr<CUstream_st> stream)
      : mpi_(std::move(mpi)), stream_(std::move(stream)) {}

  int post_send(const void* data, std::size_t bytes, int to, int tag) override {
    const std::size_t buffer = borrow(bytes);
    void* host = pool_[buffer]->data();
    if (bytes) {
      // On the Memory's stream: after the kernels that produced the data.
      check_cuda(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync (stage send)");
      check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    }
    return track(mpi_->post_send(host, bytes, to, tag), {buffer, nullptr, 0});
  }

  int post_recv(void* data, std::size_t bytes, int from, int tag) override {
    const std::size_t buffer = borrow(bytes);
    return track(mpi_->post_recv(pool_[buffer]->data(), bytes, from, tag), {buffer, data, bytes});
  }

  void wait_all() override {
    mpi_->wait_all();
    for (std::size_t h = 0; h < posted_.size(); ++h) complete(h);
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    posted_.clear();  // the wrapped transport starts its handles again at 0
  }

  std::size_t wait_any(const std::vector<int>& handles) override {
    const std::size_t k = mpi_->wait_any(handles);
    complete(static_cast<std::size_t>(handles.at(k)));
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    return k;
  }

  void begin_round() override { mpi_->begin_round(); }
  void end_round() override { mpi_->end_round(); }

 private:
  struct Posted {
    std::size_t buffer;         // index into pool_
    void* device = nullptr;     // a receive's destination (nullptr for a send)
    std::size_t bytes = 0;
    bool done = false;
  };

  // A free pinned buffer of at least `bytes` (grown or added if needed).
  std::size_t borrow(std::size_t bytes) {
    std::size_t pick = pool_.size();
    for (std::size_t i = 0; i < pool_.size(); ++i) {
      if (in_use_[i]) continue;
      pick = i;
      break;
    }
    if (pick == pool_.size()) {
      pool_.push_back(std::make_unique<PinnedBuffer>());
      in_use_.push_back(false);
    }
    pool_[pick]->reserve(bytes);
    in_use_[pick] = true;
    return pick;
  }

  int track(int handle, Posted posted) {
    if (handle != static_cast<int>(posted_.size())) {
      in_use_[posted.buffer] = false;
      throw std::logic_error("mpi_cuda staging: the MPI transport's handles are not 0, 1, 2, ...");
    }
    posted_.push_back(posted);
    return handle;
  }

  // A transfer finished: a receive's bytes go to the device; the buffer is free again
  // (the copy is ordered before any later reuse of the buffer on the same stream, and
  // callers synchronise before returning).
  void complete(std::size_t handle) {
    Posted& p = posted_.at(handle);
    if (p.done) return;
    p.done = true;
    if (p.device && p.bytes) {
      check_cuda(cudaMemcpyAsync(p.device, pool_[p.buffer]->data(), p.bytes, cudaMemcpyHostToDevice, stream_.get()),
                 "cudaMemcpyAsync (unstage receive)");
    }
    in_use_[p.buffer] = false;
  }

  std::unique_ptr<Transport> mpi_;
  std::shared_ptr<CUstream_st> stream_;
  std::vector<std::unique_ptr<PinnedBuffer>> pool_;
  std::vector<bool> in_use_;
  std::vector<Posted> posted_;  // per handle
};


Backend make_mpi_cuda_backend(MPI_Comm comm) {
  const int device = local_cuda_device(comm);
  std::shared_ptr<CUstream_st> stream = make_cuda_stream(device);
  auto memory = make_cuda_memory(device, stream.get(), stream);
  if (mpi_is_cuda_aware()) {
    return Backend{"mpi_cuda (CUDA-aware MPI)", std::move(memory), make_mpi_transport(comm)};
  }
  return Backend{"mpi_cuda (staged through pinned host memory)", std::move(memory),
                 std::make_unique<StagingTransport>(make_mpi_transport(comm), std::move(stream))};
}

const BackendRegistration registered_mpi_cuda{"mpi_cuda", make_mpi_cuda_backend};

}  // namespace

}  // namespace gradsync::runtime
