#include "runtime/step_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "models/executors/executor.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/json_input.h"
#include "models/support/units.h"
#include "models/topology/topology_io.h"
#include "models/topology/uniform_topologies.h"
#include "models/workload/workload.h"
#include "runtime/run_backends.h"
#include "runtime/check.h"
#include "runtime/executor.h"
#include "runtime/reference.h"

namespace gradsync::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One synchronisation of the step's plan: its schedule and the executor that runs it here.
struct SyncRun {
  models::BuiltSchedule built;
  std::unique_ptr<ScheduleExecutor> executor;  // null: nothing to move (layers without parameters)
};

// Which of the plan's tasks are done, for the two threads that run them.
class TaskBoard {
 public:
  explicit TaskBoard(std::size_t tasks) : done_(tasks, false) {}
  void finish(int task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[static_cast<std::size_t>(task)] = true;
    }
    changed_.notify_all();
  }
  // Returns whether it had to wait.
  bool wait_for(const std::vector<int>& tasks) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto all_done = [&] {
      for (int t : tasks) {
        if (!done_[static_cast<std::size_t>(t)]) return false;
      }
      return true;
    };
    if (all_done()) return false;
    changed_.wait(lock, all_done);
    return true;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> done_;
};

}  // namespace

StepRunResult run_training_step(const StepRunOptions& o, MPI_Comm comm, int rank, int size, Backend& backend, Watchdog& watch) {
  const models::Workload& w = o.workload;
  if (static_cast<int>(o.base.placement.size()) != size) {
    throw models::InputError("the training step runs a worker on every process: " + std::to_string(o.base.placement.size()) +
                             " GPUs in the placement for " + std::to_string(size) + " processes");
  }
  // The step's plan: the strategy's own with overlap (DDP's buckets, zero2's, fsdp's units), else
  // the compute, then the strategy's whole synchronisation.
  models::StepPlan plan;
  if (o.overlap) {
    plan = models::step_plan_of(*o.base.strategy, w, *o.overlap);
  } else {
    const models::LayerTasks layers = models::add_layer_tasks(plan, w);
    std::vector<int> after;
    if (!layers.backward.empty()) after.push_back(layers.backward.front());
    models::add_sync(plan, w, "", "the whole gradient", after);
  }
  std::vector<SyncRun> runs;
  runs.reserve(plan.syncs.size());  // an executor keeps a reference to its schedule: no reallocation
  for (const models::StepSync& sync : plan.syncs) {
    SyncRun& run = runs.emplace_back(SyncRun{models::build_schedule(models::request_for(o.base, sync)), nullptr});
    const models::Schedule& s = run.built.schedule;
    if (const std::string why = s.not_overlapped_because(); !why.empty()) {
      throw models::InputError("--workload: " + o.base.strategy->name + ": " + why +
                               "; the training step runs strategies that synchronise the gradients every step, in step");
    }
    if (s.gradient_bytes > 0) {
      run.executor = std::make_unique<ScheduleExecutor>(s, map_participants(s, size), rank, *backend.memory, *backend.transport);
      run.executor->reset(check_input);
    }
  }

  struct Mine {
    double iteration = 0, compute = 0, sync = 0, forward_end = 0, backward_end = 0;
  };
  // The compute stream on this thread, the communication stream on another (each in its order,
  // each task once what it waits for is done).
  auto step = [&]() {
    Mine m;
    TaskBoard board(plan.tasks.size());
    const auto t0 = Clock::now();
    std::thread comm_thread([&] {
      backend.memory->bind_thread();
      for (std::size_t k = 0; k < plan.tasks.size(); ++k) {
        const models::StepTask& task = plan.tasks[k];
        if (task.on_compute()) continue;
        board.wait_for(task.after);
        const auto s0 = Clock::now();
        if (const auto& e = runs[static_cast<std::size_t>(task.sync)].executor) e->run();
        m.sync += since(s0);
        board.finish(static_cast<int>(k));
      }
    });
    // Each compute task ends at its planned end: the previous one's planned end (or, after a
    // wait, the moment it could start) plus its time. A layer that overran (a sleep woken late)
    // does not delay the ones after it: overruns do not add up over a hundred layers.
    double planned_end = 0;
    for (std::size_t k = 0; k < plan.tasks.size(); ++k) {
      const models::StepTask& task = plan.tasks[k];
      if (!task.on_compute()) continue;
      const bool waited = board.wait_for(task.after);
      const auto c0 = Clock::now();
      const double now = since(t0);
      planned_end = (waited ? now : planned_end) + task.seconds;
      backend.memory->compute_for(std::max(0.0, planned_end - now), o.busy);
      m.compute += since(c0);
      (task.kind == models::StepTask::Kind::forward ? m.forward_end : m.backward_end) = since(t0);
      board.finish(static_cast<int>(k));
    }
    comm_thread.join();
    m.iteration = since(t0);
    return m;
  };

  StepRunResult result;
  result.buckets = static_cast<int>(runs.size());
  for (int i = 0; i < o.warmup; ++i) {
    watch.context("training step, warm-up iteration " + std::to_string(i + 1) + "/" + std::to_string(o.warmup));
    step();
  }
  for (int i = 0; i < o.iterations; ++i) {
    watch.context("training step, timed iteration " + std::to_string(i + 1) + "/" + std::to_string(o.iterations));
    watch.step("barrier before the iteration");
    MPI_Barrier(comm);
    const Mine m = step();
    double mine[4] = {m.iteration, m.compute, m.sync, std::max(0.0, m.backward_end - m.forward_end)}, slowest[4] = {0, 0, 0, 0};
    watch.step("gathering the iteration's times (MPI_Allreduce)");
    MPI_Allreduce(mine, slowest, 4, MPI_DOUBLE, MPI_MAX, comm);
    result.iteration_s += slowest[0];
    result.compute_s += slowest[1];
    result.sync_s += slowest[2];
    result.backward_s += slowest[3];
  }
  if (o.iterations > 0) {
    result.iteration_s /= o.iterations;
    result.compute_s /= o.iterations;
    result.backward_s /= o.iterations;
    result.sync_s /= o.iterations;
  }
  result.exposed_s = std::max(0.0, result.iteration_s - result.compute_s);

  if (o.check) {
    // One more step from inputs whose exact sums are known, every bucket's result checked.
    watch.context("training step, checked iteration");
    for (auto& r : runs) {
      if (r.executor) r.executor->reset(check_input);
    }
    MPI_Barrier(comm);
    step();
    std::uint64_t wrong = 0;
    for (auto& r : runs) {
      if (!r.executor) continue;
      const models::Schedule& s = r.built.schedule;
      const auto reference = reference_run(s, check_input);
      for (int p : r.executor->hosted()) {
        if (p >= s.workers) continue;
        wrong += count_wrong(s, p, r.executor->gradient(p), check_input, &reference[static_cast<std::size_t>(p)]);
      }
    }
    MPI_Allreduce(&wrong, &result.wrong, 1, MPI_UINT64_T, MPI_SUM, comm);
  }
  return result;
}

int run_step_command(const StepCommand& o, MPI_Comm comm, int rank, int size, Watchdog& watch,
                     std::atomic<Transport*>& abort_transport) {
  if (!o.refused_flags.empty()) {
    throw models::InputError(models::join(o.refused_flags) + " with --workload: the training step synchronises the workload's "
                             "gradient (its buckets with --overlap), not a sweep of sizes");
  }
  Backend backend = make_backend(o.backend, comm);
  abort_transport.store(backend.transport.get());
  struct ClearOnExit {
    std::atomic<Transport*>& slot;
    ~ClearOnExit() { slot.store(nullptr); }
  } clear_on_exit{abort_transport};
  models::LoadedTopology loaded = o.topology.empty() ? models::LoadedTopology{models::flat_topology(size), std::nullopt}
                                                     : models::load_topology_file(models::resolve_topology_path(o.topology));
  const models::Topology& topology = loaded.topology;
  const models::Workload full = models::load_workload(o.workload);
  StepRunOptions s;
  s.workload = models::scaled(full, o.scale);
  if (o.overlap) {
    models::OverlapSettings ov;
    ov.bucket_cap_bytes = models::parse_bytes(o.bucket_cap, "--bucket-cap");
    ov.first_bucket_bytes = models::parse_bytes(o.first_bucket, "--first-bucket");
    if (!(ov.bucket_cap_bytes > 0) || !(ov.first_bucket_bytes > 0)) throw models::InputError("--bucket-cap, --first-bucket: expected sizes above 0");
    s.overlap = ov;
  }
  s.base.topology = &topology;
  s.base.strategy = &models::find_strategy(o.strategy);
  s.base.params = models::SyncParams::parse(o.params);
  s.base.placement = o.ranks.empty() ? models::first_gpus(topology, size) : models::named_gpus(topology, models::split_list(o.ranks, "--ranks"));
  s.busy = o.compute_work == "busy";
  // Host ranks spin or sleep; a GPU runs a kernel of each layer's time beside the transfers.
  const std::string compute_text = backend.memory->kind() == "cuda" ? "a GPU kernel of each layer's time"
                                   : s.busy                          ? "busy work"
                                                                     : "sleep";
  s.warmup = o.warmup;
  s.iterations = o.iterations;
  s.check = o.check;
  const models::Workload& w = s.workload;
  if (rank == 0) {
    std::printf("# gradsync-run: training step of %s, strategy %s, %d ranks, backend %s, topology %s\n", w.name.c_str(),
                s.base.strategy->name.c_str(), size, backend.name.c_str(), topology.name().c_str());
    if (o.scale != 1) {
      std::printf("# scaled by %s: the same %zu layers, %s of gradients and %s of compute per step (the preset: %s and %s)\n",
                  models::number_text(o.scale, 3).c_str(), w.layers.size(), models::format_bytes(w.gradient_bytes()).c_str(),
                  models::format_seconds(w.compute_s()).c_str(), models::format_bytes(full.gradient_bytes()).c_str(),
                  models::format_seconds(full.compute_s()).c_str());
    }
    std::printf("# compute: %s of %s per step (forward, then the backward pass a layer at a time)\n", compute_text.c_str(),
                models::format_seconds(w.compute_s()).c_str());
    if (s.overlap && s.base.strategy->step_plan) {
      std::printf("# overlap: %s's step, its collectives (buckets or units of %s) on a thread beside the compute, in its plan's order\n",
                  s.base.strategy->name.c_str(), models::format_bytes(s.overlap->bucket_cap_bytes).c_str());
    } else if (s.overlap) {
      std::printf("# overlap: buckets of %s (the first %s) synchronised on a thread beside the backward pass, one after another\n",
                  models::format_bytes(s.overlap->bucket_cap_bytes).c_str(), models::format_bytes(s.overlap->first_bucket_bytes).c_str());
    } else {
      std::printf("# no overlap: the whole gradient synchronised after the compute\n");
    }
    std::printf("# iterations %d, warm-up %d, check %s\n#\n", o.iterations, o.warmup, o.check ? "on" : "off");
  }
  const StepRunResult r = run_training_step(s, comm, rank, size, backend, watch);
  if (rank == 0) {
    std::printf("# %7s  %14s  %12s  %12s  %14s  %6s\n", "buckets", "iteration (ms)", "compute (ms)", "exposed (ms)", "bucket syncs (ms)",
                "#wrong");
    std::printf("  %7d  %14.3f  %12.3f  %12.3f  %14.3f  %6s\n", r.buckets, r.iteration_s * 1e3, r.compute_s * 1e3, r.exposed_s * 1e3,
                r.sync_s * 1e3, o.check ? std::to_string(r.wrong).c_str() : "N/A");
    std::printf("# iteration, compute, synchronisations: each the slowest rank's, the mean over the timed iterations\n");
    if (o.check) std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(r.wrong), r.wrong ? "FAILED" : "OK");
    if (!o.output.empty()) {
      models::PredictRequest q = s.base;
      q.workload = &w;
      const models::BuiltSchedule whole = models::build_schedule(q);
      models::ResultRecord rec = models::record_header(q, whole, "run");
      rec.time_per_sync_s = r.sync_s;
      if (s.overlap) {
        models::OverlapFigures f;
        f.buckets = r.buckets;
        f.bucket_cap_bytes = s.overlap->bucket_cap_bytes;
        f.first_bucket_bytes = s.overlap->first_bucket_bytes;
        f.exposed_s = r.exposed_s;
        f.bucket_sync_s = r.sync_s;
        f.backward_s = r.backward_s;
        rec.overlap = f;
      }
      models::add_training_times(rec, w, r.iteration_s);
      rec.compute_s_per_minibatch = r.compute_s;
      rec.notes.push_back("backend " + backend.name + ", compute as " + compute_text);
      if (o.scale != 1) rec.notes.push_back("workload scaled by " + models::number_text(o.scale, 3));
      if (o.check) {
        rec.notes.push_back("checked: " + std::to_string(r.wrong) + " wrong elements");
        rec.wrong_elements = r.wrong;
      }
      models::write_file_atomically(o.output, models::to_json_line(rec));
      std::printf("# wrote 1 record to %s\n", o.output.c_str());
    }
  }
  return r.wrong > 0 ? 1 : 0;
}

}  // namespace gradsync::runtime
