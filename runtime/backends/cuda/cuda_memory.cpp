// Device buffers and the CUDA kernels: the Memory of the mpi_cuda and nccl backends.
#include "runtime/backends/cuda/cuda_memory.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernels/catalogue.h"
#include "runtime/kernels/kernels.h"

namespace gradsync::runtime {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
}

int local_cuda_device(MPI_Comm comm) {
  MPI_Comm host;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int local_rank = 0;
  MPI_Comm_rank(host, &local_rank);
  MPI_Comm_free(&host);
  int devices = 0;
  check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices <= 0) throw std::runtime_error("cudaGetDeviceCount: no GPU");
  return local_rank % devices;
}

std::shared_ptr<CUstream_st> make_cuda_stream(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
  return {stream, [](cudaStream_t s) { cudaStreamDestroy(s); }};
}

namespace {

class CudaMemory final : public Memory {
 public:
  CudaMemory(int device, void* stream, std::shared_ptr<void> keep_alive)
      : device_(device), stream_(static_cast<cudaStream_t>(stream)), keep_alive_(std::move(keep_alive)) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~CudaMemory() override {
    // cudaFree waits for the device; errors cannot be reported from a destructor.
    for (void* p : buffers_) cudaFree(p);
    for (void* p : host_buffers_) cudaFreeHost(p);
  }
  CudaMemory(const CudaMemory&) = delete;
  CudaMemory& operator=(const CudaMemory&) = delete;

  std::string kind() const override { return "cuda"; }

  float* allocate(std::size_t bytes) override {
    const std::size_t size = std::max<std::size_t>(4, (bytes + 3) / 4 * 4);  // whole floats, as host memory
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, size), "cudaMalloc");
    buffers_.push_back(p);
    // Zero it before anyone else (an MPI receive, say) can write into it.
    check_cuda(cudaMemsetAsync(p, 0, size, stream_), "cudaMemsetAsync");
    synchronize();
    return static_cast<float*>(p);
  }

  float* allocate_host(std::size_t bytes) override {
    const std::size_t size = std::max<std::size_t>(4, (bytes + 3) / 4 * 4);
    void* p = nullptr;
    check_cuda(cudaMallocHost(&p, size), "cudaMallocHost");
    host_buffers_.push_back(p);
    std::memset(p, 0, size);
    return static_cast<float*>(p);
  }

  // Host <-> device copies return when done: the host side may go away right after.
  void upload(float* dst, const float* host, std::size_t count) override {
    if (count == 0) return;
    check_cuda(cudaMemcpyAsync(dst, host, count * sizeof(float), cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (upload)");
    synchronize();
  }
  void download(float* host, const float* src, std::size_t count) override {
    if (count == 0) return;
    check_cuda(cudaMemcpyAsync(host, src, count * sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (download)");
    synchronize();
  }
  // The executor's copies never overlap (cudaMemcpy does not promise memmove semantics).
  void copy(float* dst, const float* src, std::size_t count) override {
    if (count == 0 || dst == src) return;
    check_cuda(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync (copy)");
  }

  // The kernels check their own launches and throw std::runtime_error.
  void sum_into(float* dst, const float* src, std::size_t count) override { sum_into_cuda(dst, src, count, stream_); }
  void run_kernel(const models::Kernel& kernel, float* target, float* const* operands, std::size_t count,
                  const models::KernelParams& params) override {
    implementation(kernel).cuda(target, operands, count, params, stream_);
  }
  void encode(const models::Codec& codec, std::uint64_t group, const float* x, float* residual, std::size_t count,
              std::uint8_t* out) override {
    implementation(codec).encode_cuda(x, residual, count, group, out, stream_);
  }
  void decode(const models::Codec& codec, std::uint64_t group, const std::uint8_t* in, std::size_t count, float* out,
              bool add) override {
    implementation(codec).decode_cuda(in, count, group, out, add, stream_);
  }

  void fill_zero(float* x, std::size_t count) override {
    if (count) check_cuda(cudaMemsetAsync(x, 0, count * sizeof(float), stream_), "cudaMemsetAsync");
  }

  void synchronize() override { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  void compute_for(double seconds, bool) override {
    if (!(seconds > 0)) return;
    if (!compute_stream_) {
      // Non-blocking: the compute runs beside the transfers' stream, as a framework's does.
      cudaStream_t s = nullptr;
      check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      compute_stream_.reset(s, [](cudaStream_t x) { cudaStreamDestroy(x); });
    }
    spin_for_cuda(seconds, compute_stream_.get());
    check_cuda(cudaStreamSynchronize(compute_stream_.get()), "cudaStreamSynchronize (compute)");
  }

  void bind_thread() override { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }

 private:
  int device_;
  cudaStream_t stream_;
  std::shared_ptr<CUstream_st> compute_stream_;  // the step's compute (compute_for), made on first use
  std::shared_ptr<void> keep_alive_;  // owner of stream_, if the caller passed one
  std::vector<void*> buffers_;
  std::vector<void*> host_buffers_;  // page-locked
};

}  // namespace

std::unique_ptr<Memory> make_cuda_memory(int device, void* stream, std::shared_ptr<void> keep_alive) {
  return std::make_unique<CudaMemory>(device, stream, std::move(keep_alive));
}

}  // namespace gradsync::runtime
