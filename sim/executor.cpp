// The "sim" executor: one synchronisation alone in SimGrid for its time and phases, then
// (with a workload) a training loop for the iteration time, stragglers and, for
// asynchronous strategies, update throughput and staleness.
#include <algorithm>

#include "models/executors/executor.h"
#include "sim/simulator.h"

namespace gradsync::sim {

namespace {

class SimExecutor final : public models::Executor {
 public:
  std::string name() const override { return "sim"; }
  std::string summary() const override {
    return "a SimGrid simulation of the schedule (actors on the topology's links, max-min sharing), then a training loop";
  }
  int order() const override { return 30; }
  bool slow() const override { return true; }
  bool traces() const override { return true; }
  std::string describe(const models::ExecutorSettings& settings) const override {
    return "SimGrid, network model " + settings.sim.network_model;
  }

  models::ResultRecord evaluate(const models::PredictRequest& q, const models::ExecutorSettings& settings,
                                models::Trace* trace) const override {
    const models::SimSettings& ss = settings.sim;
    // The bounding links are the analytic model's; the simulator gives the times.
    const models::BuiltSchedule built = models::build_schedule(q);
    const models::Schedule& schedule = built.schedule;
    models::ResultRecord r = models::record_header(q, built, name());

    SimOptions one;
    one.network = NetworkModel{ss.network_model, ss.latency_factor, ss.bandwidth_factor};
    one.steps = 1;
    one.sync_every_step = true;
    one.costs = models::participant_costs(schedule);
    const SimResult sync = simulate(*q.topology, schedule, one);
    r.time_per_sync_s = sync.first_sync_s;
    r.phases = sync.phases;
    r.network_model = ss.network_model;
    r.sim_wall_s = sync.wall_s;

    // The step with its buckets beside the backward pass: each kind of bucket's synchronisation
    // simulated alone, composed on the step's timeline (models/workload/step.h).
    models::add_overlap(r, q, schedule, [&](const models::PredictRequest& part) {
      const models::BuiltSchedule b = models::build_schedule(part);
      SimOptions alone = one;
      alone.costs = models::participant_costs(b.schedule);
      const SimResult s = simulate(*part.topology, b.schedule, alone);
      r.sim_wall_s = *r.sim_wall_s + s.wall_s;
      return s.first_sync_s;
    });
    if (r.overlap) {
      r.notes.push_back("overlap: each bucket's synchronisation simulated alone, on the step's timeline (no training loop: "
                        "stragglers and jitter are not simulated with --overlap)");
      models::add_training_times(r, *q.workload);
    } else if (q.workload) {
      SimOptions loop = one;
      loop.sync_every_step = false;
      loop.compute_s = q.workload->compute_s();
      loop.speeds = ss.speeds;
      loop.jitter_cv = ss.jitter_cv;
      loop.seed = ss.seed;
      loop.trace = trace != nullptr;
      const int period = std::max(1, schedule.period_steps);
      loop.steps = ss.iterations > 0 ? ss.iterations : std::max(10, 2 * period);
      const SimResult run = simulate(*q.topology, schedule, loop);
      r.simulated_steps = loop.steps;
      if (loop.steps < period) {
        r.notes.push_back(std::to_string(loop.steps) + " steps simulated, fewer than the " + std::to_string(period) +
                          " between synchronisations: the iteration time is compute only (raise --iterations)");
      }
      r.sim_wall_s = *r.sim_wall_s + run.wall_s;
      models::add_training_times(r, *q.workload, run.total_s / loop.steps);
      if (run.updates > 0) {
        r.updates_per_s = static_cast<double>(run.updates) / run.total_s;
        r.mean_staleness = run.mean_staleness();
        r.max_staleness = run.max_staleness();
        r.staleness_histogram = run.staleness_histogram;
      }
      if (trace && run.trace) *trace = *run.trace;
    } else if (trace && ss.trace) {
      one.trace = true;
      const SimResult traced = simulate(*q.topology, schedule, one);
      if (traced.trace) *trace = *traced.trace;
    }
    return r;
  }
};

const models::ExecutorRegistration sim_registered(std::make_unique<SimExecutor>());

}  // namespace

const models::Executor& executor() { return models::find_executor("sim"); }

}  // namespace gradsync::sim
