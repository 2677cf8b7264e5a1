// gradsync-run: the strategies' schedules for real, under mpirun, one process per GPU (or
// per host rank). nccl-tests-style flags and table; every run can be checked exactly.
//
//   mpirun -np 4 gradsync-run --strategy ring -b 1MiB -e 64MiB -f 2 --check
//   mpirun -np 5 gradsync-run --strategy downpour --workers 4      (the server gets rank 4)
//   mpirun -np 4 gradsync-run measure -o measured.json
//   mpirun -np 8 gradsync-run --strategy nccl --backend nccl -b 8 -e 128M --check   (NCCL's own)
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "runtime/cli_flags.h"
#include "runtime/mpi_main.h"
#include "gradsync/config.h"
#include "models/support/error.h"
#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/executors/result.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include "models/support/units.h"
#include "runtime/check.h"
#include "runtime/executor.h"
#include "runtime/measure.h"
#include "runtime/mpi_text.h"
#include "runtime/native_run.h"
#include "runtime/run_backends.h"
#include "runtime/step_run.h"
#include "runtime/watchdog.h"

using namespace gradsync;
using runtime::cli::integer_in;
using runtime::cli::number_in;
using runtime::cli::one_of;
using runtime::cli::unknown_flag_message;

namespace {

// The transport the watchdog tears down before MPI_Abort (NCCL communicators).
std::atomic<runtime::Transport*> g_abort_transport{nullptr};
// The same for NCCL's own all-reduce (--strategy nccl --backend nccl).
std::atomic<runtime::NativeCollective*> g_abort_native{nullptr};

struct Options {
  std::string strategy;  // default: models::default_strategy()
  std::vector<std::string> params;
  std::string topology;
  std::string ranks;
  std::string backend = "mpi_host";
  std::string begin = "1MiB", end = "", factor = "2";
  int iterations = 20, warmup = 5;
  double timeout_s = 20;
  bool check = false;
  bool vs_mpi = false;
  int workers = 0;
  double compute_ms = 0;
  std::string output, trace;
  // the training step (--workload)
  std::string workload;
  double scale = 1;
  bool overlap = false;
  std::string bucket_cap = "25MiB", first_bucket = "1MiB";
  std::string compute_work = "busy";
  std::vector<std::string> size_flags_given;  // flags of the size sweep given with --workload: refused
  // measure
  std::string measure_size = "32MiB";
  int measure_iterations = 5;
};

// -f: a finite factor (above 1 when -e goes beyond -b).
double parse_factor(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) {
    throw models::InputError("-f \"" + text + "\": expected a size multiplication factor like 2");
  }
  return v;
}

// Where results go, checked by rank 0 before any work and agreed by every rank (so that no rank
// runs on while the others stop). Throws the same InputError on every rank.
void check_output_files(const Options& o, MPI_Comm comm, int rank) {
  std::string problem;
  if (rank == 0) {
    try {
      models::check_output_path(o.output, "-o");
      models::check_output_path(o.trace, "--trace");
    } catch (const models::InputError& e) {
      problem = e.what();
    }
  }
  int length = static_cast<int>(problem.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  problem.resize(static_cast<std::size_t>(length));
  if (length > 0) MPI_Bcast(problem.data(), length, MPI_CHAR, 0, comm);
  if (!problem.empty()) throw models::InputError(problem);
}

std::string format_table_row(double bytes, double count, double time_us, double algbw, double busbw, std::uint64_t wrong,
                             bool checked, double mpi_us) {
  char line[240];
  std::snprintf(line, sizeof line, "%12.0f  %12.0f  %6s  %8s  %10.1f  %7.2f  %7.2f  %6s", bytes, count, "float", "sum",
                time_us, algbw, busbw, checked ? std::to_string(wrong).c_str() : "N/A");
  std::string out = line;
  if (mpi_us > 0) {
    std::snprintf(line, sizeof line, "  %10.1f  %7.2f", mpi_us, mpi_us / time_us);
    out += line;
  }
  return out + "\n";
}

// Mean time of MPI_Allreduce (MPI_SUM of floats, in place) over `iterations`, the slowest rank's.
double time_mpi_allreduce(MPI_Comm comm, std::size_t count, int warmup, int iterations) {
  std::vector<float> buffer(std::max<std::size_t>(count, 1), 1.0f);
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
  double total = 0;
  for (int i = 0; i < iterations; ++i) {
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    total += slowest;
  }
  return iterations ? total / iterations : 0;
}

// The sizes of -b, -e, -f (checked as nccl-tests would: -e at least -b, a factor above 1).
std::vector<double> sizes_of(const Options& o) {
  const double first = models::parse_bytes(o.begin, "-b");
  const double last = o.end.empty() ? first : models::parse_bytes(o.end, "-e");
  const double factor = parse_factor(o.factor);
  if (!(factor > 1) && last > first) throw models::InputError("-f " + o.factor + ": expected a factor above 1");
  if (last < first) {
    throw models::InputError("-e " + o.end + ": the last size (" + std::to_string(static_cast<std::uint64_t>(last)) +
                             " B) is below the first (-b " + o.begin + " = " + std::to_string(static_cast<std::uint64_t>(first)) +
                             " B); expected -e at least -b");
  }
  std::vector<double> sizes;
  for (double bytes = first;; bytes *= factor) {
    sizes.push_back(std::floor(bytes / 4) * 4);
    if (bytes * factor > last || !(factor > 1) || last == 0) break;
    if (bytes == 0) bytes = 4.0 / factor;  // from 0 bytes on to one element
  }
  return sizes;
}

// The collective NCCL's own run calls: --param collective=... (all_reduce by default), the one
// parameter it takes.
std::string native_collective_of(const Options& o) {
  std::string collective = "all_reduce";
  for (const std::string& p : o.params) {
    if (p.rfind("collective=", 0) == 0) collective = p.substr(std::string("collective=").size());
  }
  return collective;
}

// Options that shape gradsync's schedules or its own timings, which NCCL's own collective
// has none of: refused rather than silently ignored.
void refuse_schedule_options(const Options& o, int size) {
  const auto refuse = [](const std::string& flag, const std::string& instead) {
    throw models::InputError(flag + ": NCCL's own collective (--strategy nccl --backend nccl) does not take it; " + instead);
  };
  for (const std::string& p : o.params) {
    if (p.rfind("collective=", 0) != 0) {
      refuse("--param " + p, "it takes collective=... alone; NCCL reads its settings from the environment (NCCL_ALGO, NCCL_PROTO, ...)");
    }
  }
  if (!o.ranks.empty()) refuse("--ranks", "every process drives the GPU mpirun's placement gives it");
  if (o.workers > 0 && o.workers != size) refuse("--workers", "every process is a rank of the all-reduce");
  if (o.compute_ms > 0) refuse("--compute-ms", "it times the collective alone, as nccl-tests does");
  if (o.vs_mpi) refuse("--vs-mpi-allreduce", "run it with --backend mpi_cuda or mpi_host");
  if (!o.trace.empty()) refuse("--trace", "NCCL's internals have no gradsync timeline (NCCL_DEBUG=INFO tells what NCCL chose)");
}

// --strategy nccl --backend nccl: NCCL's own collective, as nccl-tests prints it (runtime/native_run.h).
int run_native_nccl(const Options& o, MPI_Comm comm, int rank, int size, runtime::Watchdog& watch) {
  refuse_schedule_options(o, size);
  runtime::NativeCommand c;
  c.collective = native_collective_of(o);
  c.sizes = sizes_of(o);
  c.step_factor = parse_factor(o.factor);
  c.warmup = o.warmup;
  c.iterations = o.iterations;
  c.check = o.check;
  c.topology = o.topology;
  c.output = o.output;
  return runtime::run_native_command(c, comm, rank, size, watch, g_abort_native);
}

// --workload: the training step for real (runtime/step_run.h).
int run_step(const Options& o, MPI_Comm comm, int rank, int size, runtime::Watchdog& watch) {
  runtime::StepCommand c;
  c.workload = o.workload;
  c.scale = o.scale;
  c.overlap = o.overlap;
  c.bucket_cap = o.bucket_cap;
  c.first_bucket = o.first_bucket;
  c.compute_work = o.compute_work;
  c.strategy = o.strategy;
  c.params = o.params;
  c.topology = o.topology;
  c.ranks = o.ranks;
  c.backend = o.backend;
  c.warmup = o.warmup;
  c.iterations = o.iterations;
  c.check = o.check;
  c.output = o.output;
  c.refused_flags = o.size_flags_given;
  return runtime::run_step_command(c, comm, rank, size, watch, g_abort_transport);
}

int run_sweep(const Options& o, MPI_Comm comm, int rank, int size, runtime::Watchdog& watch) {
  const int workers = o.workers > 0 ? o.workers : size;
  if (workers > size) {
    throw models::InputError("--workers " + std::to_string(workers) + ": only " + std::to_string(size) +
                             " processes; expected at most as many workers as processes");
  }
  runtime::Backend backend = runtime::make_backend(o.backend, comm);
  g_abort_transport.store(backend.transport.get());
  struct ClearOnExit {
    ~ClearOnExit() { g_abort_transport.store(nullptr); }
  } clear_on_exit;

  models::LoadedTopology loaded = o.topology.empty()
                                      ? models::LoadedTopology{models::flat_topology(std::max(workers, 1)), std::nullopt}
                                      : models::load_topology_file(models::resolve_topology_path(o.topology));
  const models::Topology& topology = loaded.topology;
  const models::Strategy& strategy = models::find_strategy(o.strategy);
  const models::Placement placement = o.ranks.empty() ? models::first_gpus(topology, workers)
                                                      : models::named_gpus(topology, models::split_list(o.ranks, "--ranks"));
  if (placement.size() != workers) {
    throw models::InputError("--ranks names " + std::to_string(placement.size()) + " GPUs for " + std::to_string(workers) +
                             " workers; expected one per worker");
  }
  const std::vector<double> sizes = sizes_of(o);

  if (rank == 0) {
    std::printf("# gradsync-run: strategy %s, %d workers on %d processes, backend %s, topology %s\n", strategy.name.c_str(),
                workers, size, backend.name.c_str(), topology.name().c_str());
    std::printf("# iterations %d, warm-up %d, check %s\n#\n", o.iterations, o.warmup, o.check ? "on" : "off");
    std::printf("# %10s  %12s  %6s  %8s  %10s  %7s  %7s  %6s%s\n", "size (B)", "count", "type", "redop", "time (us)",
                "algbw", "busbw", "#wrong", o.vs_mpi ? "  MPI_Allreduce (us)  ratio" : "");
    std::printf("# %10s  %12s  %6s  %8s  %10s  %7s  %7s  %6s\n", "", "(elements)", "", "", "", "(GB/s)", "(GB/s)", "");
  }

  std::vector<models::ResultRecord> records;
  models::Trace trace;
  std::uint64_t total_wrong = 0;
  runtime::SyncStats last_stats;
  int last_processes_hosting = 0;
  for (std::size_t size_index = 0; size_index < sizes.size(); ++size_index) {
    const double aligned = sizes[size_index];
    models::PredictRequest q;
    q.topology = &topology;
    q.bytes = aligned;
    q.strategy = &strategy;
    q.params = models::SyncParams::parse(o.params);
    q.placement = placement;
    models::BuiltSchedule built = models::build_schedule(q);
    const models::Schedule& schedule = built.schedule;
    const runtime::ProcessMap map = runtime::map_participants(schedule, size);
    runtime::ScheduleExecutor executor(schedule, map, rank, *backend.memory, *backend.transport);
    const auto input = runtime::check_input;
    executor.reset(input);

    const int period = schedule.asynchronous ? std::max(1, schedule.period_steps) : 1;
    auto one_iteration = [&](models::Trace* t, double origin) {
      if (o.compute_ms > 0) {  // emulated compute of the steps between synchronisations
        const bool worker = std::any_of(executor.hosted().begin(), executor.hosted().end(), [&](int p) { return p < schedule.workers; });
        if (worker) std::this_thread::sleep_for(std::chrono::duration<double>(period * o.compute_ms / 1e3));
      }
      return executor.run(t, origin);
    };
    const std::string at_size = "size " + std::to_string(static_cast<std::uint64_t>(aligned)) + " B";
    for (int i = 0; i < o.warmup; ++i) {
      watch.context(at_size + ", warm-up iteration " + std::to_string(i + 1) + "/" + std::to_string(o.warmup));
      one_iteration(nullptr, 0);
    }
    double total = 0;
    runtime::SyncStats stats;
    for (int i = 0; i < o.iterations; ++i) {
      watch.context(at_size + ", timed iteration " + std::to_string(i + 1) + "/" + std::to_string(o.iterations));
      watch.step("barrier before the iteration");
      MPI_Barrier(comm);
      const double origin = MPI_Wtime();
      const bool last_iteration = i + 1 == o.iterations && size_index + 1 == sizes.size();
      const auto t0 = std::chrono::steady_clock::now();
      const double steady_origin = std::chrono::duration<double>(t0.time_since_epoch()).count();
      runtime::SyncStats s = one_iteration(last_iteration && !o.trace.empty() ? &trace : nullptr, steady_origin);
      double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double slowest = 0;
      watch.step("gathering the iteration's time (MPI_Allreduce)");
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      total += slowest;
      (void)origin;
      for (const auto& [k, v] : s.comm_s) stats.comm_s[k] += v;
      for (const auto& [k, v] : s.local_s) stats.local_s[k] += v;
      stats.updates += s.updates;
      if (stats.staleness.size() < s.staleness.size()) stats.staleness.resize(s.staleness.size(), 0);
      for (std::size_t k = 0; k < s.staleness.size(); ++k) stats.staleness[k] += s.staleness[k];
    }
    const double time = o.iterations > 0 ? total / o.iterations : 0;

    std::uint64_t wrong = 0;
    if (o.check) {
      watch.context(at_size + ", checked run");
      const bool asynchronous_server = std::find(map.event_loop.begin(), map.event_loop.end(), true) != map.event_loop.end();
      if (asynchronous_server) {
        // Workers hold what the server had applied when it answered them (their own push
        // and whoever pushed before); the server ends with every push. Inputs that say,
        // element by element, whose push a result holds.
        const auto decodable = runtime::asynchronous_check_input(schedule.workers);
        executor.reset(decodable);
        executor.run();
        for (int p : executor.hosted()) {
          if (p < schedule.workers) {
            wrong += runtime::count_wrong_asynchronous(schedule, p, executor.gradient(p));
          } else {
            wrong += runtime::count_wrong(schedule, 0, executor.gradient(p), decodable, nullptr);
          }
        }
      } else {
        executor.reset(input);
        executor.run();
        const auto reference = runtime::reference_run(schedule, input);
        for (int p : executor.hosted()) {
          if (p >= schedule.workers) continue;
          wrong += runtime::count_wrong(schedule, p, executor.gradient(p), input, &reference[static_cast<std::size_t>(p)]);
        }
      }
      std::uint64_t all = 0;
      MPI_Allreduce(&wrong, &all, 1, MPI_UINT64_T, MPI_SUM, comm);
      wrong = all;
      total_wrong += wrong;
    }
    const double algbw = time > 0 ? aligned / time / 1e9 : 0;
    const double busbw = algbw * strategy.busbw_factor(schedule.workers, built.params.values());
    double mpi_time = 0;
    if (o.vs_mpi) {
      if (workers != size) throw models::InputError("--vs-mpi-allreduce: every process must be a worker (no --workers)");
      mpi_time = time_mpi_allreduce(comm, static_cast<std::size_t>(aligned / 4), o.warmup, o.iterations);
    }
    if (rank == 0) {
      std::fputs(format_table_row(aligned, aligned / 4, time * 1e6, algbw, busbw, wrong, o.check, mpi_time * 1e6).c_str(), stdout);
      std::fflush(stdout);
    }
    models::ResultRecord r = models::record_header(q, built, "run");
    r.time_per_sync_s = time;
    for (const auto& [phase, seconds] : stats.comm_s) r.phases.push_back({phase, o.iterations ? seconds / o.iterations : 0});
    r.notes.push_back("backend " + backend.name);
    if (o.check) {
      r.notes.push_back("checked: " + std::to_string(wrong) + " wrong elements");
      r.wrong_elements = wrong;
    }
    records.push_back(r);
    if (o.vs_mpi) {
      // The platform's own collective at the same size, as a record of its own (validate
      // --here shows it as the reference row).
      models::ResultRecord m = r;
      m.strategy = "MPI_Allreduce";
      m.params.clear();
      m.phases.clear();
      m.time_per_sync_s = mpi_time;
      m.wrong_elements.reset();
      m.notes = {"backend " + backend.name, "MPI_Allreduce (sum of floats, in place) of this MPI"};
      records.push_back(m);
    }
    last_stats = stats;
    last_processes_hosting = static_cast<int>(executor.hosted().size());
  }
  (void)last_processes_hosting;

  // Communication vs local work per phase (source D's syncPerfStats), rank 0's view of the last size.
  if (rank == 0) {
    std::printf("#\n# per phase, last size, rank 0 (communication = waiting for transfers; local = reduce, quantise, copy):\n");
    std::map<std::string, std::pair<double, double>> phases;
    for (const auto& [k, v] : last_stats.comm_s) phases[k].first = v;
    for (const auto& [k, v] : last_stats.local_s) phases[k].second = v;
    double sum = 0;
    for (const auto& [k, v] : phases) sum += v.first + v.second;
    for (const auto& [k, v] : phases) {
      std::printf("#   %-24s communication %9.1f us  local %9.1f us  (%4.1f %% of the synchronisation)\n", k.c_str(),
                  1e6 * v.first / std::max(1, o.iterations), 1e6 * v.second / std::max(1, o.iterations),
                  sum > 0 ? 100 * (v.first + v.second) / sum : 0.0);
    }
    if (o.check) std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(total_wrong), total_wrong ? "FAILED" : "OK");
  }
  // Asynchronous servers report from their processes.
  std::uint64_t updates = last_stats.updates, all_updates = 0;
  MPI_Reduce(&updates, &all_updates, 1, MPI_UINT64_T, MPI_SUM, 0, comm);
  if (rank == 0 && all_updates > 0) std::printf("# asynchronous updates applied in the timed iterations of the last size: %llu\n", static_cast<unsigned long long>(all_updates));
  // Staleness histogram of the servers' pushes (how many other updates since that worker's pull).
  std::vector<std::uint64_t> histogram(64, 0), all_histogram(64, 0);
  for (std::size_t k = 0; k < last_stats.staleness.size(); ++k) histogram[std::min<std::size_t>(k, 63)] += last_stats.staleness[k];
  MPI_Reduce(histogram.data(), all_histogram.data(), 64, MPI_UINT64_T, MPI_SUM, 0, comm);
  if (rank == 0 && all_updates > 0) {
    std::printf("# staleness of the pushes:");
    for (std::size_t k = 0; k < all_histogram.size(); ++k) {
      if (all_histogram[k]) std::printf(" %zu: %llu", k, static_cast<unsigned long long>(all_histogram[k]));
    }
    std::printf("\n");
  }

  if (!o.trace.empty()) {
    const auto parts = runtime::gather_text(trace.to_json().dump(), comm, rank, size);
    if (rank == 0) {
      models::Trace merged;
      for (const auto& text : parts) {
        const models::Trace part = models::Trace::from_json(models::json::parse(text));
        for (const auto& e : part.events()) merged.add(e);
      }
      for (int p = 0; p < workers; ++p) merged.name_participant(p, "rank " + std::to_string(p));
      models::write_file_atomically(o.trace, merged.to_json().dump() + "\n");
      std::printf("# wrote the timeline of the last iteration to %s\n", o.trace.c_str());
    }
  }
  if (rank == 0 && !o.output.empty()) {
    std::string text;
    for (const auto& r : records) text += models::to_json_line(r);
    models::write_file_atomically(o.output, text);
    std::printf("# wrote %zu records to %s\n", records.size(), o.output.c_str());
  }
  return total_wrong > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const runtime::MpiWorld world = runtime::join_mpi(argc, argv);
  MPI_Comm comm = world.comm;
  const int rank = world.rank, size = world.size;

  Options o;
  o.strategy = models::default_strategy().name;
  CLI::App app{"gradsync-run: run a synchronisation strategy's schedule for real under mpirun (one process per GPU or "
               "host rank), time it like nccl-tests, and check every element.",
               "gradsync-run"};
  app.footer("Examples:\n"
             "  mpirun -np 4 gradsync-run --strategy ring -b 1M -e 64M -f 2 --check\n"
             "  mpirun -np 4 gradsync-run --strategy ring -b 64M --vs-mpi-allreduce      # against OpenMPI's own\n"
             "  mpirun -np 4 gradsync-run --strategy hierarchical --param k=2 --topology source-a-titanx-4gpu\n"
             "  mpirun -np 5 gradsync-run --strategy downpour --workers 4 --compute-ms 5   # server on rank 4\n"
             "  mpirun -np 4 gradsync-run measure -o measured.json\n"
             "  mpirun -np 4 gradsync-run --workload resnet50 --scale 0.1 --overlap --strategy ring   # a training step\n"
             "  mpirun -np 8 gradsync-run --strategy nccl --backend nccl -b 8 -e 128M -f 2 --check > nccl.log\n"
             "  gradsync compare MACHINE nccl.log      # the nccl strategy's prediction against that log\n"
             "--strategy nccl on --backend nccl calls NCCL's own ncclAllReduce (one process per GPU; --param\n"
             "collective=all_gather|reduce_scatter|broadcast|reduce for the others) and prints nccl-tests' *_perf\n"
             "table (out-of-place and in-place); MACHINE is a topology or the box's\n"
             "tool outputs (nvidia-smi topo -m, p2pBandwidthLatencyTest). On other backends --strategy nccl runs\n"
             "gradsync's own schedule of NCCL's ring, like every other strategy.\n"
             "Sizes take B, K/KiB, M/MiB, G/GiB (powers of 2) or kB, MB, GB (powers of 10).");
  app.add_option("--strategy", o.strategy, "strategy to run: " + models::join(models::strategy_names()) +
                                              " (nccl on --backend nccl: NCCL's own collective, nccl-tests' table)")
      ->default_val(o.strategy);
  app.add_option("--param,-p", o.params, "strategy parameter key=value (repeatable)");
  app.add_option("--topology,-t", o.topology, "topology the schedule is built for (file or shipped name; default: all ranks "
                                             "alike); NCCL's own all-reduce: names the machine in -o records");
  app.add_option("--ranks", o.ranks, "GPU ids of the workers in rank order (default: the first N GPUs)");
  app.add_option("--backend", o.backend, runtime::backends_help() + "; with --strategy nccl, nccl runs NCCL's own all-reduce")
      ->check(one_of(runtime::backend_names()))
      ->default_val("mpi_host");
  app.add_option("-b,--minbytes", o.begin, "first size")->default_val("1MiB");
  app.add_option("-e,--maxbytes", o.end, "last size (default: the first)");
  app.add_option("-f,--stepfactor", o.factor, "size multiplication factor")->default_val("2");
  app.add_option("-n,--iters", o.iterations, "timed iterations per size")->check(integer_in(0, 1000000))->default_val(20);
  app.add_option("-w,--warmup_iters", o.warmup, "warm-up iterations per size")->check(integer_in(0, 1000000))->default_val(5);
  app.add_flag("--check,-c", o.check, "fill inputs whose exact result is known and count wrong elements (exit 1 if any)");
  app.add_flag("--vs-mpi-allreduce", o.vs_mpi, "also time MPI_Allreduce (sum of floats) at every size, and print the ratio");
  app.add_option("--workers", o.workers, "worker ranks (default: every process); extra processes host servers of "
                                         "asynchronous strategies")->check(integer_in(1, 65536));
  app.add_option("--compute-ms", o.compute_ms, "emulated compute per step before each synchronisation (ms)")
      ->check(number_in(0, 1e7));
  app.add_option("--timeout", o.timeout_s, "seconds without any transfer completing before a rank declares the job "
                                         "stuck (a rank died or hangs), names where it waits, and aborts it; 0: never")
      ->check(number_in(0, 1e7))->default_val(20);
  auto* workload = app.add_option("--workload,-W", o.workload,
                                  "run the training step of this workload (preset or JSON) instead of a sweep of sizes: "
                                  "forward and backward as timed work, then (or, with --overlap, beside it) the gradient's "
                                  "synchronisation");
  app.add_option("--scale", o.scale, "with --workload: shrink it (the same layers, fewer bytes and less compute, in proportion)")
      ->check(number_in(1e-6, 1))
      ->needs(workload);
  auto* overlap = app.add_flag("--overlap", o.overlap, "with --workload: synchronise the gradient in buckets beside the backward "
                                                       "pass (PyTorch DDP's way)")
                      ->needs(workload);
  app.add_option("--bucket-cap", o.bucket_cap, "with --overlap: a bucket is full at this many bytes")->default_str("25MiB")->needs(overlap);
  app.add_option("--first-bucket", o.first_bucket, "with --overlap: the first bucket is full at this many bytes")
      ->default_str("1MiB")
      ->needs(overlap);
  app.add_option("--compute-work", o.compute_work, "with --workload on host ranks: busy (a core spins for each layer's time) or sleep; GPU backends run a kernel of each layer's time")
      ->check(CLI::IsMember({"busy", "sleep"}))
      ->default_str("busy")
      ->needs(workload);
  app.add_option("-o,--output", o.output, "write result records (JSON lines) here");
  app.add_option("--trace", o.trace, "write the last iteration's timeline (Chrome trace JSON) here");
  auto* measure = app.add_subcommand("measure", "Measure pairwise bandwidth and latency between ranks; write a matrix-form topology");
  measure->add_option("-o,--output", o.output, "the topology JSON to write")->required();
  measure->add_option("--size", o.measure_size, "bytes per bandwidth probe")->default_val("32MiB");
  measure->add_option("-n,--iters", o.measure_iterations, "repetitions per probe (the median is kept)")
      ->check(integer_in(1, 1000000))->default_val(5);
  measure->add_option("--backend", o.backend, "the buffers and transport probed: " + runtime::backends_help())
      ->check(one_of(runtime::backend_names()))
      ->default_val("mpi_host");
  measure->add_option("--timeout", o.timeout_s, "seconds without progress before the job is declared stuck and aborted; 0: never")
      ->check(number_in(0, 1e7))->default_val(20);

  if (const auto done = runtime::parse_flags_or_exit(app, argc, argv, rank, "gradsync-run")) return *done;
  int status = 0;
  runtime::Watchdog watch(rank, o.timeout_s, [](const std::string&) {
    if (runtime::Transport* t = g_abort_transport.load()) t->abort();
    if (runtime::NativeCollective* n = g_abort_native.load()) n->abort();
    MPI_Abort(MPI_COMM_WORLD, 3);
  });
  runtime::WatchdogScope watch_scope(watch);
  try {
    check_output_files(o, comm, rank);
    if (measure->parsed()) {
      status = runtime::run_measure(comm, rank, size, o.backend, models::parse_bytes(o.measure_size, "--size"), o.measure_iterations, o.output);
    } else {
      for (const char* flag : {"-b", "-e", "-f", "--vs-mpi-allreduce", "--compute-ms", "--workers", "--trace"}) {
        if (!o.workload.empty() && app.count(flag) > 0) o.size_flags_given.push_back(flag);
      }
      status = !o.workload.empty()                           ? run_step(o, comm, rank, size, watch)
               : o.strategy == "nccl" && o.backend == "nccl" ? run_native_nccl(o, comm, rank, size, watch)
                                                              : run_sweep(o, comm, rank, size, watch);
    }
  } catch (const models::InputError& e) {
    if (rank == 0) std::cerr << "gradsync-run: error: " << e.what() << "\n";
    status = 2;
  } catch (const std::exception& e) {
    std::cerr << "gradsync-run: " << watch.where() << ": error: " << e.what() << std::endl;
    if (runtime::Transport* t = g_abort_transport.load()) t->abort();
    if (runtime::NativeCollective* n = g_abort_native.load()) n->abort();
    MPI_Abort(comm, 1);
  }
  MPI_Finalize();
  return status;
}
