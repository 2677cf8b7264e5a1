// nccl-tests (github.com/NVIDIA/nccl-tests) output as measurements: every `*_perf` run
// found in a text — one process with -g N, threads, or MPI ranks — with its device lines,
// its table (out-of-place and in-place time, algbw, busbw, #wrong per size) and its summary.
//
// What is recognised (as nccl-tests 2.x prints it, and as people paste it):
//   ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8        the command (a shell prompt, "# " or
//                                                         nothing before it): names the collective
//   # Collective test starting: all_reduce_perf           the same, in newer versions
//   # nThread 1 nGpus 8 minBytes 8 maxBytes ...           starts a run
//   #  Rank  0 Group  0 Pid 1756513 on host device  0 [0x01] NVIDIA GeForce RTX 4090
//   #       size   count   type   redop   root   time   algbw   busbw #wrong   time ...
//           8       2      float  sum     -1     38.83  0.00    0.00   0       40.43 ...
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 4.85265
// The table is read by its header's column names, so versions without a root column, with
// the old "error" column, with per-iteration (i_min, ...) or timestamp columns all read. Old
// tables whose rows leave the redop (or root) cell blank read where the figures line up
// without it. A malformed row is an InputError naming the file, the line and the token.
//
// Also read as printed:
//   host:1343:1343 [0] NCCL INFO ...                      NCCL_DEBUG=INFO lines, anywhere: skipped,
//                                                         also where one cuts a row in pieces
//                                                         ("... sum  -1host:1343:1343 [0] NCCL INFO ...",
//                                                         the row going on after the INFO lines)
//   NCCL version 2.16.5+cuda11.8                          (or in an INFO line): the library's version
//   [STAT]:1572864  393216  float  sum  -1  57.68 ...     a fork's row prefix; its [SETTING] and
//                                                         [INIT] lines are skipped
//   #   Rank  0 Pid 112424 on host device  0 [0x00] ...  old device lines without "Group"
// Terminal escape sequences (colours, underline) are removed first (importers::split_lines).
//
// Multi-node logs often lack the "#  Rank ..." lines (cut for length) and sometimes the
// command: the ranks then come from the launcher's command line (mpirun -np 32, srun -n 32),
// else from the table itself (busbw / algbw is the collective's bus factor, which fixes the
// rank count), and the collective from a heading that names the *_perf program (a heading
// that names none starts another section: a program named above it is not its run's). The
// command's NCCL_* settings (mpirun -x NCCL_ALGO=Ring, NCCL_ALGO=Ring before it) are kept.
// Logs published as their table alone (no "# nThread" line) read as a run where a heading or
// a command names the program, as long as the command or busbw / algbw gives the ranks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/executors/result.h"

namespace gradsync::models {

struct NcclTestsDevice {
  int rank = 0;
  std::string host;
  int device = 0;       // CUDA device index on its host
  std::string bus_id;   // as printed: "0000:b4:00" or "0x01"
  std::string name;     // "NVIDIA GeForce RTX 4090"
};

struct NcclTestsTiming {
  double time_us = 0;
  double algbw_GBps = 0;   // as printed
  double busbw_GBps = 0;   // as printed
  std::optional<double> wrong;  // #wrong elements (or the old "error" column); none for "N/A"
};

struct NcclTestsRow {
  std::size_t line = 0;  // 0-based line index in its text
  std::size_t last_line = 0;  // where it ends: a row cut by NCCL INFO lines goes on below them
  double bytes = 0;      // the size column
  std::uint64_t count = 0;
  std::string type;      // float, half, ...
  std::string redop;     // sum, none, ...
  std::optional<int> root;
  std::optional<NcclTestsTiming> out_of_place;  // blank in trace-replay runs
  std::optional<NcclTestsTiming> in_place;
};

struct NcclTestsRun {
  std::string source;      // the file (or name) it was read from
  std::size_t line = 0;    // 0-based index of its "# nThread" line
  std::string where;       // "file:line" of that line
  std::string collective;  // all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, ... ("" unnamed)
  std::string command;     // the command line, when shown
  int threads = 1;
  int gpus_per_thread = 1;
  std::vector<NcclTestsDevice> devices;  // the "Using devices" lines, rank order
  std::vector<NcclTestsRow> rows;
  std::optional<std::uint64_t> out_of_bounds;  // "# Out of bounds values : N"
  std::optional<double> avg_busbw_GBps;
  std::string version;  // "# nccl-tests version ..." when printed
  // The NCCL library's version, "2.27.3": from the run's "# nccl-tests version ... nccl-library=22703"
  // line, else from an "NCCL version 2.27.3+cuda12.9" line (NCCL's own, or an NCCL INFO line)
  // inside the run or just before it; else the file's one version where every version line in
  // it says the same (one machine's outputs); "" when the log does not say.
  std::string nccl_version;
  // From the launcher's command line, when shown: processes (mpirun -np, srun -n), processes
  // per host (mpirun -N / --npernode / --map-by ppr:K:node, srun --ntasks-per-node), hosts
  // (mpirun -H a:8,b:8, srun -N).
  std::optional<int> processes, processes_per_host, hosts_named;
  std::map<std::string, std::string> environment;  // NCCL_* settings of the command

  // Ranks: one per device line; else the command's processes x threads x GPUs per thread;
  // else what the table's busbw / algbw gives; else threads x GPUs per thread (one process).
  int ranks() const;
  // How ranks() knows: "device lines", "the command line (-np 32)", "busbw / algbw", "one process".
  std::string ranks_basis() const;
  // Hosts: those of the device lines; else the command's (-np / -N, -H, srun -N); else unknown.
  std::optional<int> hosts() const;
  // "all_reduce_perf, 8 ranks, 25 sizes (8 B - 128 MiB), rtx4090.txt:126"
  std::string describe() const;
};

// Every nccl-tests run in a text, in order. Throws InputError on a malformed table.
std::vector<NcclTestsRun> read_nccl_tests(const std::string& text, const std::string& source_name);
// The same over files (a missing file: "<path>: no such file").
std::vector<NcclTestsRun> read_nccl_tests_files(const std::vector<std::string>& paths);

// NCCL's version code (NCCL_VERSION_CODE, as nccl-tests prints it in nccl-library=...) as
// "MAJOR.MINOR.PATCH": 22703 -> "2.27.3" (MAJOR*10000 + MINOR*100 + PATCH from 2.9 on), 2804 ->
// "2.8.4" (MAJOR*1000 + MINOR*100 + PATCH before); nullopt for a number that is neither.
std::optional<std::string> nccl_version_of_code(std::uint64_t code);

// nccl-tests' bus-bandwidth factor of a collective on n ranks (busbw = algbw x factor), as
// its *GetBw functions define it; nullopt for a collective it does not know.
std::optional<double> nccl_tests_busbw_factor(const std::string& collective, int ranks);

// A run's rows as records of the `measured` executor: one per size and placement (out-of-place
// first, then in-place; the note says which), strategy "nccl" with param collective=<name>,
// time, bytes, ranks (rank_nodes gpu<device>, host-qualified across hosts), #wrong.
// `topology` names the machine in the records.
std::vector<ResultRecord> measured_records(const NcclTestsRun& run, const std::string& topology);

}  // namespace gradsync::models
