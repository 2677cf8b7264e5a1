// CUDA pieces shared by the GPU backends (mpi_cuda, nccl): error checks, the choice of
// device per process, a stream shared by a backend's Memory and Transport, and the
// Memory on device buffers. Only compiled in CUDA builds.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <memory>

#include "runtime/backend.h"

namespace gradsync::runtime {

// Throws std::runtime_error("<call>: <CUDA error text>") unless `status` is cudaSuccess.
void check_cuda(cudaError_t status, const char* call);

// The device of this process: its rank among the processes of `comm` on the same host
// (MPI_COMM_TYPE_SHARED) modulo the number of visible GPUs, as nccl-tests does.
int local_cuda_device(MPI_Comm comm);

// A new stream on `device`, destroyed when the last copy of the pointer goes away: a
// backend's Memory and Transport both hold one, so their work is ordered on one stream.
std::shared_ptr<CUstream_st> make_cuda_stream(int device);

// Memory on `device`: buffers from cudaMalloc (zero-filled, freed with the Memory), the
// `_cuda` kernels enqueued on `stream` (nullptr = the legacy default stream). upload and
// download return when the copy is done; copy and the kernels are asynchronous until
// synchronize(). `stream` is not owned; pass `keep_alive` (e.g. make_cuda_stream's
// result) to keep it alive as long as the Memory.
std::unique_ptr<Memory> make_cuda_memory(int device, void* stream, std::shared_ptr<void> keep_alive = nullptr);

}  // namespace gradsync::runtime
