// gradsync-run --strategy nccl --backend nccl: NCCL's own collective (ncclAllReduce, or with
// --param collective=... ncclAllGather, ncclReduceScatter, ncclBroadcast, ncclReduce), timed and
// printed as nccl-tests' *_perf prints it (out-of-place, then in-place; one device line per
// rank), so that `gradsync compare` reads it back against the nccl strategy's prediction.
#pragma once

#include <mpi.h>

#include <atomic>
#include <string>
#include <vector>

#include "runtime/run_backends.h"
#include "runtime/watchdog.h"

namespace gradsync::runtime {

struct NativeCommand {
  std::string collective = "all_reduce";  // nccl-tests' name
  std::vector<double> sizes;              // bytes, as -b, -e, -f give them
  double step_factor = 2;                 // -f, for the header
  int warmup = 5, iterations = 20;
  bool check = false;
  std::string topology;  // names the records' topology ("": this host's name)
  std::string output;    // -o: the records compare makes of the table
};

// Runs it on every rank, prints the table on rank 0 and writes the records (-o);
// `abort_native` holds the collective while it runs (what the watchdog aborts). Returns the exit
// status (1 when a checked element is wrong).
int run_native_command(const NativeCommand& command, MPI_Comm comm, int rank, int size, Watchdog& watch,
                       std::atomic<NativeCollective*>& abort_native);

}  // namespace gradsync::runtime
