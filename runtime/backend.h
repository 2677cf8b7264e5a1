// A Backend is where a rank's buffers live and how its bytes travel: a Memory (host or
// GPU buffers, and the numeric kernels on them) plus a Transport (MPI on host memory,
// MPI on CUDA buffers, NCCL send/recv). The schedule executor (executor.h) drives any
// backend the same way; one folder per backend under runtime/backends/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"

namespace gradsync::runtime {

class Memory {
 public:
  virtual ~Memory() = default;
  virtual std::string kind() const = 0;  // "host" or "cuda"
  // Zero-filled float buffer of `bytes` (a multiple of 4); owned by the Memory.
  virtual float* allocate(std::size_t bytes) = 0;
  // Host memory that uploads and downloads move fastest (page-locked on a GPU, as the
  // bandwidth tools measure with); owned by the Memory.
  virtual float* allocate_host(std::size_t bytes) = 0;
  virtual void upload(float* dst, const float* host, std::size_t count) = 0;
  virtual void download(float* host, const float* src, std::size_t count) = 0;
  virtual void copy(float* dst, const float* src, std::size_t count) = 0;
  virtual void fill_zero(float* x, std::size_t count) = 0;
  virtual void sum_into(float* dst, const float* src, std::size_t count) = 0;
  // A schedule's kernel op (models/schedule/kernels.h): `kernel` on `target` with its operand buffers,
  // each of `count` floats, run by this memory's implementation (runtime/kernels/catalogue.h).
  virtual void run_kernel(const models::Kernel& kernel, float* target, float* const* operands, std::size_t count,
                          const models::KernelParams& params) = 0;
  // A codec's payload: encodes `count` values of x plus `residual` (updated) into `out`
  // (codec.wire_bytes(count, group) bytes), or decodes one into `out` (add: onto it).
  virtual void encode(const models::Codec& codec, std::uint64_t group, const float* x, float* residual, std::size_t count,
                      std::uint8_t* out) = 0;
  virtual void decode(const models::Codec& codec, std::uint64_t group, const std::uint8_t* in, std::size_t count, float* out,
                      bool add) = 0;
  virtual void synchronize() = 0;  // wait for queued kernels
  // `seconds` of a training step's compute on this memory's device, returning when it is done:
  // on a GPU a kernel of that duration on a stream of its own, beside the transfers' stream (`busy`
  // does not apply); on host memory a core spinning (busy) or the thread asleep.
  virtual void compute_for(double seconds, bool busy) = 0;
  // Lets the calling thread use this memory (a GPU: makes its device current there).
  virtual void bind_thread() {}
};

// Point-to-point transfers between processes. Handles identify posted operations.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual int post_send(const void* data, std::size_t bytes, int to_process, int tag) = 0;
  virtual int post_recv(void* data, std::size_t bytes, int from_process, int tag) = 0;
  virtual void wait_all() = 0;  // every posted operation
  // Waits until one of `handles` completes; returns its position in `handles`.
  virtual std::size_t wait_any(const std::vector<int>& handles) = 0;
  // Whether wait_any tells one transfer's completion from the others' (NCCL completes a
  // round's operations together, on its stream).
  virtual bool completes_separately() const { return true; }
  virtual void begin_round() {}  // NCCL groups a round's operations
  virtual void end_round() {}
  // Called from the watchdog's thread when the job is being aborted, before MPI_Abort:
  // tear down what MPI_Abort does not (NCCL communicators). Must be safe while another
  // thread waits in this transport.
  virtual void abort() {}
};

struct Backend {
  std::string name;
  std::unique_ptr<Memory> memory;
  std::unique_ptr<Transport> transport;
};

// Host memory with the CPU kernels (used by mpi_host and the in-process reference).
std::unique_ptr<Memory> make_host_memory();

}  // namespace gradsync::runtime
