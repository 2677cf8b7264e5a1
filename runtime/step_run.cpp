#include "runtime/step_run.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "models/support/error.h"
#include "runtime/check.h"
#include "runtime/executor.h"
#include "runtime/reference.h"

namespace gradsync::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// `seconds` of compute: a core spinning (busy) or the thread asleep.
void work(double seconds, bool busy) {
  if (seconds <= 0) return;
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  if (!busy) {
    std::this_thread::sleep_until(until);
    return;
  }
  while (Clock::now() < until) {
  }
}

// One bucket's synchronisation: its schedule and the executor that runs it here.
struct BucketRun {
  const models::Bucket* bucket;  // in the step's list, which outlives the runs
  models::BuiltSchedule built;
  std::unique_ptr<ScheduleExecutor> executor;
};

// Hands the buckets to the communication thread as the backward pass completes them.
class ReadyQueue {
 public:
  void mark(std::size_t count) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_ = count;
    }
    changed_.notify_one();
  }
  void wait_for(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return ready_ >= count; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t ready_ = 0;
};

}  // namespace

StepRunResult run_training_step(const StepRunOptions& o, MPI_Comm comm, int rank, int size, Backend& backend, Watchdog& watch) {
  const models::Workload& w = o.workload;
  if (static_cast<int>(o.base.placement.size()) != size) {
    throw models::InputError("the training step runs a worker on every process: " + std::to_string(o.base.placement.size()) +
                             " GPUs in the placement for " + std::to_string(size) + " processes");
  }
  // The buckets: the overlapped step's, or the whole gradient as one.
  std::vector<models::Bucket> buckets;
  if (o.overlap) {
    buckets = models::buckets_of(w, *o.overlap);
  } else {
    models::Bucket whole;
    for (std::size_t i = w.layers.size(); i-- > 0;) whole.layers.push_back(i);
    whole.gradient = w;
    buckets.push_back(std::move(whole));
  }
  std::vector<std::unique_ptr<BucketRun>> runs;
  for (const models::Bucket& b : buckets) {
    models::PredictRequest q = o.base;
    q.workload = &b.gradient;
    q.bytes.reset();
    q.overlap.reset();
    auto run = std::unique_ptr<BucketRun>(new BucketRun{&b, models::build_schedule(q), nullptr});
    const models::Schedule& s = run->built.schedule;
    if (s.asynchronous || s.period_steps > 1) {
      throw models::InputError("--workload: " + o.base.strategy->name +
                               (s.asynchronous ? " updates asynchronously" : " synchronises once every " + std::to_string(s.period_steps) + " steps") +
                               "; the training step runs strategies that synchronise every step, in step");
    }
    run->executor = std::make_unique<ScheduleExecutor>(s, map_participants(s, size), rank, *backend.memory, *backend.transport);
    run->executor->reset(check_input);
    runs.push_back(std::move(run));
  }
  // Which bucket each layer's gradient completes (its last layer in backward order).
  std::vector<int> completes(w.layers.size(), -1);
  for (std::size_t k = 0; k < runs.size(); ++k) completes[runs[k]->bucket->layers.back()] = static_cast<int>(k);
  const std::vector<models::LayerTimes> times = w.layer_times();
  double forward = 0;
  for (const auto& t : times) forward += t.forward_s;

  struct Mine {
    double iteration = 0, compute = 0, sync = 0;
  };
  auto step = [&]() {
    Mine m;
    ReadyQueue ready;
    double sync = 0;
    const auto t0 = Clock::now();
    std::thread comm_thread;
    if (o.overlap) {
      comm_thread = std::thread([&] {
        for (std::size_t k = 0; k < runs.size(); ++k) {
          ready.wait_for(k + 1);
          const auto s0 = Clock::now();
          runs[k]->executor->run();
          sync += since(s0);
        }
      });
    }
    const auto c0 = Clock::now();
    work(forward, o.busy);
    std::size_t done = 0;
    for (std::size_t i = w.layers.size(); i-- > 0;) {
      work(times[i].backward_s, o.busy);
      if (completes[i] >= 0) ready.mark(++done);
    }
    m.compute = since(c0);
    if (o.overlap) {
      comm_thread.join();
    } else {
      const auto s0 = Clock::now();
      runs.front()->executor->run();
      sync = since(s0);
    }
    m.iteration = since(t0);
    m.sync = sync;
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
    double mine[3] = {m.iteration, m.compute, m.sync}, slowest[3] = {0, 0, 0};
    watch.step("gathering the iteration's times (MPI_Allreduce)");
    MPI_Allreduce(mine, slowest, 3, MPI_DOUBLE, MPI_MAX, comm);
    result.iteration_s += slowest[0];
    result.compute_s += slowest[1];
    result.sync_s += slowest[2];
  }
  if (o.iterations > 0) {
    result.iteration_s /= o.iterations;
    result.compute_s /= o.iterations;
    result.sync_s /= o.iterations;
  }
  result.exposed_s = std::max(0.0, result.iteration_s - result.compute_s);

  if (o.check) {
    // One more step from inputs whose exact sums are known, every bucket's result checked.
    watch.context("training step, checked iteration");
    for (auto& r : runs) r->executor->reset(check_input);
    MPI_Barrier(comm);
    step();
    std::uint64_t wrong = 0;
    for (auto& r : runs) {
      const models::Schedule& s = r->built.schedule;
      const auto reference = reference_run(s, check_input);
      for (int p : r->executor->hosted()) {
        if (p >= s.workers) continue;
        wrong += count_wrong(s, p, r->executor->gradient(p), check_input, &reference[static_cast<std::size_t>(p)]);
      }
    }
    MPI_Allreduce(&wrong, &result.wrong, 1, MPI_UINT64_T, MPI_SUM, comm);
  }
  return result;
}

}  // namespace gradsync::runtime
