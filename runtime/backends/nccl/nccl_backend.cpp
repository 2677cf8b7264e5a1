// nccl: buffers on the GPU, CUDA kernels, NCCL send/recv. MPI only bootstraps the NCCL
// communicator (nccl-tests' way: rank 0 makes the unique id, MPI_Bcast shares it). Each
// round's transfers form one NCCL group on the stream the Memory's kernels use, so a
// round's sends see the kernels before them and the kernels after see its receives.
// Also NCCL's own collectives (NcclCollective), which gradsync-run --strategy nccl times
// on this backend in place of gradsync's model of it.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstddef>
#include <exception>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "models/support/error.h"
#include "runtime/backends/cuda/cuda_memory.h"
#include "runtime/run_backends.h"
#include "runtime/watchdog.h"

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

// Polls `query` (a stream's or an event's state) until the work is done, rather than
// blocking in a synchronize: an error NCCL reports asynchronously (a peer gone) or an abort
// from the watchdog then ends the wait (NCCL's documented fault-handling pattern).
template <class Query>
void poll_until_done(Query query, const char* what, ncclComm_t comm, const std::atomic<bool>& aborted) {
  while (true) {
    const cudaError_t state = query();
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) check_cuda(state, what);
    if (aborted.load()) throw std::runtime_error("NCCL communicator aborted");
    ncclResult_t async = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError", comm);
    if (async != ncclSuccess && async != ncclInProgress) check_nccl(async, "NCCL (asynchronous error)", comm);
    std::this_thread::yield();
  }
}

// NCCL fails its init with a terse "invalid usage" when two ranks drive one GPU (more
// processes on a host than it has GPUs): say so, on every rank alike, before it starts.
void refuse_shared_gpus(MPI_Comm comm, int device, const std::string& option, const std::string& what) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  cudaDeviceProp props{};
  check_cuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  constexpr std::size_t kUuid = sizeof props.uuid.bytes;
  std::vector<char> uuids(static_cast<std::size_t>(size) * kUuid);
  MPI_Allgather(props.uuid.bytes, static_cast<int>(kUuid), MPI_BYTE, uuids.data(), static_cast<int>(kUuid), MPI_BYTE, comm);
  const auto uuid = [&](int r) { return std::string(uuids.data() + static_cast<std::size_t>(r) * kUuid, kUuid); };
  for (int a = 0; a < size; ++a) {
    for (int b = a + 1; b < size; ++b) {
      if (uuid(a) != uuid(b)) continue;
      throw models::InputError(option + ": ranks " + std::to_string(a) + " and " + std::to_string(b) + " got the same GPU; " +
                               what + " needs one GPU per rank: start at most as many processes per host as it has GPUs "
                               "(mpirun -np N), or --backend mpi_cuda, whose ranks may share a GPU");
    }
  }
}

constexpr const char* kNoAsync =
    "the nccl backend runs every round in lockstep; asynchronous servers need --backend mpi_host or mpi_cuda";

class NcclTransport final : public Transport {
 public:
  NcclTransport(MPI_Comm comm, int device, std::shared_ptr<CUstream_st> stream) : stream_(std::move(stream)) {
    refuse_shared_gpus(comm, device, "--backend nccl", "NCCL");
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

  bool completes_separately() const override { return false; }

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
    poll_until_done([&] { return cudaStreamQuery(stream_.get()); }, "cudaStreamQuery", nccl_, aborted_);
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

// NCCL's collective on floats (sums where it reduces) with a communicator, stream and buffers of
// its own, called as nccl-tests' *_perf calls it: warm-up calls, a barrier, the timed calls
// issued back to back on one stream, the clock stopped when the last has completed. Buffers as
// nccl-tests lays them out: an all-gather's rank r sends its share, in place from share r of the
// received buffer; a reduce-scatter's rank r receives its share, in place into share r of the
// sent buffer; broadcast and reduce from and to rank 0.
class NcclCollective final : public NativeCollective {
 public:
  NcclCollective(MPI_Comm comm, std::string collective) : mpi_(comm), collective_(std::move(collective)) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    device_ = local_cuda_device(comm);
    stream_ = make_cuda_stream(device_);  // also makes device_ current
    check_cuda(cudaGetDeviceProperties(&props_, device_), "cudaGetDeviceProperties");
    refuse_shared_gpus(comm, device_, "--strategy nccl --backend nccl", "NCCL's " + nccl_function_of(collective_));
    for (auto& e : events_) check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm);
    check_nccl(ncclCommInitRank(&nccl_, size_, id, rank_), "ncclCommInitRank");
    // NCCL connects its rings on the first call; with NCCL_DEBUG=INFO that prints to stdout,
    // which should land above the table, not between its lines.
    reserve(static_cast<std::size_t>(size_));
    run_calls(static_cast<std::size_t>(size_), false, 1);
  }
  ~NcclCollective() override {
    // Left by an error, other ranks may be anywhere: abort rather than wait for them.
    if (std::uncaught_exceptions() > 0) abort();
    if (!aborted_.load() && nccl_) {
      const ncclResult_t status = ncclCommDestroy(nccl_);
      if (status != ncclSuccess) std::cerr << "gradsync: ncclCommDestroy: " << ncclGetErrorString(status) << "\n";
    }
    for (auto& e : events_) {
      if (e) cudaEventDestroy(e);
    }
    if (send_) cudaFree(send_);
    if (recv_) cudaFree(recv_);
  }
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  double seconds_per_call(std::size_t count, bool in_place, int warmup, int iterations) override {
    reserve(count);
    run_calls(count, in_place, warmup);
    MPI_Barrier(mpi_);
    const double t0 = MPI_Wtime();
    run_calls(count, in_place, iterations);
    return iterations > 0 ? (MPI_Wtime() - t0) / iterations : 0.0;
  }

  std::uint64_t wrong_elements(std::size_t count, bool in_place) override {
    reserve(count);
    // Rank r's value at position i is (r % 16 + 1) x (i % 13 + 1): every partial sum is an
    // integer below 2^24 (up to 80,000 ranks), so a sum is exact in float whatever order NCCL
    // adds in. Positions are in the whole buffer (an all-gather's share r starts at r x share).
    const auto value = [](int r, std::size_t i) { return static_cast<float>(static_cast<std::int64_t>(r % 16 + 1) * static_cast<std::int64_t>(i % 13 + 1)); };
    std::int64_t ranks_sum = 0;
    for (int r = 0; r < size_; ++r) ranks_sum += r % 16 + 1;
    const auto summed = [&](std::size_t i) { return static_cast<float>(ranks_sum * static_cast<std::int64_t>(i % 13 + 1)); };
    const std::size_t share = count / static_cast<std::size_t>(size_);
    const std::size_t mine = static_cast<std::size_t>(rank_) * share;
    std::vector<float> whole(count);
    for (std::size_t i = 0; i < count; ++i) whole[i] = value(rank_, i);
    check_cuda(cudaMemsetAsync(send_, 0, count * sizeof(float), stream_.get()), "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(recv_, 0, count * sizeof(float), stream_.get()), "cudaMemsetAsync");  // a result not written shows
    // The input where the call reads it, the result where it writes it.
    float* result = in_place ? send_ : recv_;
    std::size_t result_count = count;
    if (collective_ == "all_gather") {
      float* input = in_place ? send_ + mine : send_;
      check_cuda(cudaMemcpyAsync(input, whole.data() + mine, share * sizeof(float), cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync");
    } else {
      check_cuda(cudaMemcpyAsync(send_, whole.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream_.get()), "cudaMemcpyAsync");
    }
    if (collective_ == "reduce_scatter") {
      result = in_place ? send_ + mine : recv_;
      result_count = share;
    }
    run_calls(count, in_place, 1);
    std::vector<float> got(result_count);
    check_cuda(cudaMemcpyAsync(got.data(), result, result_count * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    std::uint64_t wrong = 0;
    for (std::size_t i = 0; i < result_count; ++i) {
      float expected = 0;
      if (collective_ == "all_reduce") expected = summed(i);
      if (collective_ == "all_gather") expected = value(static_cast<int>(i / std::max<std::size_t>(share, 1)), i);
      if (collective_ == "reduce_scatter") expected = summed(mine + i);
      if (collective_ == "broadcast") expected = value(0, i);
      // Alltoall: share q holds rank q's share `rank_`.
      if (collective_ == "alltoall") expected = value(static_cast<int>(i / std::max<std::size_t>(share, 1)), mine + i % std::max<std::size_t>(share, 1));
      if (collective_ == "reduce") {
        if (rank_ != 0) break;  // only the root's result is defined
        expected = summed(i);
      }
      wrong += got[i] != expected;
    }
    return wrong;
  }

  int device() const override { return device_; }
  std::string bus_id() const override {
    char text[16];
    std::snprintf(text, sizeof text, "0x%02x", props_.pciBusID);  // as nccl-tests prints it
    return text;
  }
  std::string device_name() const override { return props_.name; }
  std::string library() const override {
    int version = 0;
    check_nccl(ncclGetVersion(&version), "ncclGetVersion");
    // Since NCCL 2.9 the code is major x 10000 + minor x 100 + patch (before: x 1000, x 100).
    const int major = version >= 10000 ? version / 10000 : version / 1000;
    const int minor = version >= 10000 ? version / 100 % 100 : version / 100 % 10;
    return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
  }

  void abort() override {
    if (!aborted_.exchange(true)) ncclCommAbort(nccl_);
  }

 private:
  // `calls` all-reduces back to back on the stream, then a wait for the last. The host
  // keeps at most kInFlight calls queued ahead of the one it waits for (plenty to keep the
  // GPU busy), so that each completed call can count as progress for the watchdog.
  void run_calls(std::size_t count, bool in_place, int calls) {
    for (int i = 0; i < calls; ++i) {
      cudaEvent_t done = events_[static_cast<std::size_t>(i) % kInFlight];
      if (static_cast<std::size_t>(i) >= kInFlight) wait_for(done);
      call(count, in_place);
      check_cuda(cudaEventRecord(done, stream_.get()), "cudaEventRecord");
    }
    if (calls > 0) wait_for(events_[static_cast<std::size_t>(calls - 1) % kInFlight]);
  }

  // One call of the collective on `count` elements of the whole buffer (nccl-tests' layout).
  void call(std::size_t count, bool in_place) {
    const std::size_t share = count / static_cast<std::size_t>(size_);
    const std::size_t mine = static_cast<std::size_t>(rank_) * share;
    const std::string name = nccl_function_of(collective_);
    ncclResult_t status = ncclSuccess;
    if (collective_ == "all_gather") {
      status = ncclAllGather(in_place ? send_ + mine : send_, in_place ? send_ : recv_, share, ncclFloat, nccl_, stream_.get());
    } else if (collective_ == "reduce_scatter") {
      status = ncclReduceScatter(send_, in_place ? send_ + mine : recv_, share, ncclFloat, ncclSum, nccl_, stream_.get());
    } else if (collective_ == "broadcast") {
      status = ncclBroadcast(send_, in_place ? send_ : recv_, count, ncclFloat, 0, nccl_, stream_.get());
    } else if (collective_ == "reduce") {
      status = ncclReduce(send_, in_place ? send_ : recv_, count, ncclFloat, ncclSum, 0, nccl_, stream_.get());
    } else if (collective_ == "alltoall") {
      // As nccl-tests' alltoall_perf: share r of the send buffer to rank r, rank r's into share r.
      float* into = in_place ? send_ : recv_;
      status = ncclGroupStart();
      for (int r = 0; r < size_ && status == ncclSuccess; ++r) {
        const std::size_t at = static_cast<std::size_t>(r) * share;
        status = ncclSend(send_ + at, share, ncclFloat, r, nccl_, stream_.get());
        if (status == ncclSuccess) status = ncclRecv(into + at, share, ncclFloat, r, nccl_, stream_.get());
      }
      const ncclResult_t ended = ncclGroupEnd();
      if (status == ncclSuccess) status = ended;
    } else {
      status = ncclAllReduce(send_, in_place ? send_ : recv_, count, ncclFloat, ncclSum, nccl_, stream_.get());
    }
    check_nccl(status, name.c_str(), nccl_);
  }

  // Polls rather than blocking, so that an error NCCL reports asynchronously (a peer gone)
  // or an abort from the watchdog ends the wait (NCCL's fault-handling pattern; nccl-tests
  // polls so too).
  void wait_for(cudaEvent_t event) {
    poll_until_done([&] { return cudaEventQuery(event); }, "cudaEventQuery", nccl_, aborted_);
    watchdog_progress();
  }

  // Device buffers for `count` floats (at least one), kept for smaller sizes.
  void reserve(std::size_t count) {
    const std::size_t floats = std::max<std::size_t>(count, 1);
    if (floats <= capacity_) return;
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
    if (send_) check_cuda(cudaFree(send_), "cudaFree");
    if (recv_) check_cuda(cudaFree(recv_), "cudaFree");
    send_ = recv_ = nullptr;
    capacity_ = 0;
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&send_), floats * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&recv_), floats * sizeof(float)), "cudaMalloc");
    check_cuda(cudaMemset(send_, 0, floats * sizeof(float)), "cudaMemset");
    check_cuda(cudaMemset(recv_, 0, floats * sizeof(float)), "cudaMemset");
    capacity_ = floats;
  }

  static constexpr std::size_t kInFlight = 16;

  MPI_Comm mpi_;
  std::string collective_;
  int rank_ = 0, size_ = 1, device_ = 0;
  std::shared_ptr<CUstream_st> stream_;
  cudaDeviceProp props_{};
  ncclComm_t nccl_ = nullptr;
  std::array<cudaEvent_t, kInFlight> events_{};
  float* send_ = nullptr;
  float* recv_ = nullptr;
  std::size_t capacity_ = 0;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<NativeCollective> make_nccl_collective_on_gpu(MPI_Comm comm, const std::string& collective) {
  return std::make_unique<NcclCollective>(comm, collective);
}

namespace {

Backend make_nccl_backend(MPI_Comm comm) {
  const int device = local_cuda_device(comm);
  std::shared_ptr<CUstream_st> stream = make_cuda_stream(device);  // one stream for kernels and transfers
  auto memory = make_cuda_memory(device, stream.get(), stream);
  auto transport = std::make_unique<NcclTransport>(comm, device, std::move(stream));
  return Backend{"nccl (NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                     std::to_string(NCCL_PATCH) + ")",
                 std::move(memory), std::move(transport)};
}

const BackendRegistration registered_nccl{"nccl", make_nccl_backend};

}  // namespace

}  // namespace gradsync::runtime
