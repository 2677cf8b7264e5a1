#include "runtime/native_run.h"

#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/json_input.h"
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/topology_io.h"
#include "runtime/mpi_text.h"
#include "runtime/nccl_tests_format.h"

namespace gradsync::runtime {

int run_native_command(const NativeCommand& o, MPI_Comm comm, int rank, int size, Watchdog& watch,
                       std::atomic<NativeCollective*>& abort_native) {
  const std::string topology_name =
      o.topology.empty() ? std::string() : models::load_topology_file(models::resolve_topology_path(o.topology)).topology.name();
  const std::vector<double>& sizes = o.sizes;
  const std::string& collective = o.collective;
  const std::string function = nccl_function_of(collective);
  std::unique_ptr<NativeCollective> nccl = make_nccl_collective(comm, collective);
  // nccl-tests' layout: an all-gather's, reduce-scatter's or alltoall's buffer is a whole number of shares.
  const bool shared = collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall";
  const bool reduces = collective != "all_gather" && collective != "broadcast" && collective != "alltoall";
  const int root = collective == "broadcast" || collective == "reduce" ? 0 : -1;
  abort_native.store(nccl.get());
  struct ClearOnExit {
    std::atomic<NativeCollective*>& slot;
    ~ClearOnExit() { slot.store(nullptr); }
  } clear_on_exit{abort_native};

  // Each rank's device line (nccl-tests prints one per rank: its pid, host, device, bus id).
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const std::string mine = std::to_string(static_cast<long>(getpid())) + "\t" + host + "\t" + std::to_string(nccl->device()) +
                           "\t" + nccl->bus_id() + "\t" + nccl->device_name();
  const auto lines = gather_text(mine, comm, rank, size);
  NcclTestsRunHeader h;
  if (rank == 0) {
    h.min_bytes = sizes.front();
    h.max_bytes = sizes.back();
    h.step_factor = o.step_factor;
    h.warmup = o.warmup;
    h.iterations = o.iterations;
    h.validation = o.check;
    h.program = collective + "_perf";
    for (int r = 0; r < size; ++r) {
      std::vector<std::string> fields;
      std::istringstream line(lines[static_cast<std::size_t>(r)]);
      for (std::string field; std::getline(line, field, '\t');) fields.push_back(field);
      NcclTestsDeviceLine d;
      d.rank = r;
      d.pid = std::stol(fields.at(0));
      d.host = fields.at(1).empty() ? "localhost" : fields.at(1);
      d.device = std::stoi(fields.at(2));
      d.bus_id = fields.at(3);
      d.name = fields.size() > 4 ? fields[4] : "";
      h.devices.push_back(d);
    }
    std::printf("# gradsync-run: %s of %s (float%s) on %d rank%s, one GPU each, timed as nccl-tests does\n", function.c_str(),
                nccl->library().c_str(), reduces ? " sum" : "", size, size == 1 ? "" : "s");
    std::fputs(nccl_tests_header(h).c_str(), stdout);
    std::fflush(stdout);
  }

  // What -o writes: the rows at full precision, as `compare` reads them from the printed table.
  models::NcclTestsRun run;
  run.collective = collective;
  for (const auto& d : h.devices) run.devices.push_back({d.rank, d.host, d.device, d.bus_id, d.name});
  const double bus_factor = models::nccl_tests_busbw_factor(run.collective, size).value_or(0);  // all-reduce: 2 (n - 1) / n
  std::uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int busbw_count = 0;
  for (const double asked : sizes) {
    std::size_t count = static_cast<std::size_t>(asked / 4);
    if (shared) count = std::max<std::size_t>(1, count / static_cast<std::size_t>(size)) * static_cast<std::size_t>(size);
    const double bytes = static_cast<double>(count) * 4;
    // nccl-tests' count column: a rank's share where the buffer is shared out, else the whole.
    const std::size_t shown_count = shared ? count / static_cast<std::size_t>(size) : count;
    NcclTestsTimingOut timing[2];
    models::NcclTestsRow row;
    row.bytes = bytes;
    row.count = shown_count;
    for (int placement = 0; placement < 2; ++placement) {
      const bool in_place = placement == 1;
      const std::string at = "size " + std::to_string(count * 4) + " B, " + function + " " + (in_place ? "in-place" : "out-of-place");
      watch.context(at + ", " + std::to_string(o.warmup) + " warm-up and " + std::to_string(o.iterations) + " timed calls");
      const double mine_s = nccl->seconds_per_call(count, in_place, o.warmup, o.iterations);
      double sum_s = 0;
      watch.step("averaging the ranks' times (MPI_Allreduce)");
      MPI_Allreduce(&mine_s, &sum_s, 1, MPI_DOUBLE, MPI_SUM, comm);  // nccl-tests' default: the ranks' mean
      const double seconds = sum_s / size;
      auto& t = timing[placement];
      t.time_us = seconds * 1e6;
      t.algbw_GBps = seconds > 0 ? bytes / seconds / 1e9 : 0;
      t.busbw_GBps = t.algbw_GBps * bus_factor;
      busbw_sum += t.busbw_GBps;
      ++busbw_count;
      // nccl-tests checks no in-place alltoall (its sends and receives share the buffer): N/A.
      if (o.check && !(in_place && collective == "alltoall")) {
        watch.context(at + ", checked call");
        std::uint64_t wrong = nccl->wrong_elements(count, in_place), all = 0;
        MPI_Allreduce(&wrong, &all, 1, MPI_UINT64_T, MPI_SUM, comm);
        t.wrong = all;
        total_wrong += all;
      }
      models::NcclTestsTiming measured{t.time_us, t.algbw_GBps, t.busbw_GBps, std::nullopt};
      if (t.wrong) measured.wrong = static_cast<double>(*t.wrong);
      (in_place ? row.in_place : row.out_of_place) = measured;
    }
    run.rows.push_back(row);
    if (rank == 0) {
      std::fputs(nccl_tests_row(bytes, shown_count, timing[0], timing[1], reduces ? "sum" : "none", root).c_str(), stdout);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::fputs(nccl_tests_footer(total_wrong, busbw_count ? busbw_sum / busbw_count : 0).c_str(), stdout);
    if (!o.output.empty()) {
      // The records `gradsync compare` makes of the printed table (strategy nccl, collective
      // all_reduce, ranks on gpu<device>), as a real run's: executor "run".
      std::vector<models::ResultRecord> records = models::measured_records(run, topology_name.empty() ? host : topology_name);
      std::string text;
      for (std::size_t i = 0; i < records.size(); ++i) {
        models::ResultRecord& r = records[i];
        r.executor = "run";
        r.notes = {i % 2 ? "in-place" : "out-of-place", "backend nccl: " + function + " of " + nccl->library()};
        text += models::to_json_line(r);
      }
      models::write_file_atomically(o.output, text);
      std::printf("# wrote %zu records to %s\n", records.size(), o.output.c_str());
    }
  }
  return total_wrong > 0 ? 1 : 0;
}

}  // namespace gradsync::runtime
