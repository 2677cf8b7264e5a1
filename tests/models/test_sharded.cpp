// Sharded data parallel: the step as two streams of tasks (run by hand here), the plans of zero1,
// zero2 and fsdp (each timeline worked out by hand), memory per GPU against the ZeRO paper's own
// figures, and the sharded synchronisation against source B's ring closed form on a full mesh.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/strategies/formulas.h"
#include "models/strategies/strategy.h"
#include "models/workload/memory.h"
#include "models/workload/step.h"
#include "support/topologies.h"
#include "support/workloads.h"

using namespace gradsync::models;

namespace {

// Three layers of 1 M fp32 parameters, each 1 s forward and 2 s backward.
Workload three_unit_layers() {
  Workload w;
  w.name = "w";
  w.dtype_bytes = 4;
  for (const char* name : {"a", "b", "c"}) {
    Layer l;
    l.name = name;
    l.params = 1'000'000;
    l.forward_s = 1;
    l.backward_s = 2;
    w.layers.push_back(l);
  }
  return w;
}

OverlapSettings one_layer_each() {
  OverlapSettings o;
  o.first_bucket_bytes = 1;
  o.bucket_cap_bytes = 1;
  return o;
}

// Every synchronisation `per_layer` seconds per layer it moves.
std::vector<double> by_layers(const StepPlan& plan, double per_layer) {
  std::vector<double> s;
  for (const StepSync& sync : plan.syncs) s.push_back(per_layer * static_cast<double>(sync.moved.layers.size()));
  return s;
}

// The end of the sync task called `what`.
double end_of(const StepPlan& plan, const PlanTime& t, const std::string& what) {
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const StepTask& task = plan.tasks[i];
    if (!task.on_compute() && plan.syncs[static_cast<std::size_t>(task.sync)].what == what) return t.tasks[i].end_s;
  }
  ADD_FAILURE() << "no sync task " << what;
  return -1;
}

}  // namespace

TEST(StepPlan, EachStreamRunsInOrderAndWaitsForWhatItNeeds) {
  StepPlan plan;
  plan.tasks.push_back({StepTask::Kind::forward, 2, -1, {}});      // 0: 0-2
  plan.tasks.push_back({StepTask::Kind::sync, 0, 0, {}});          // 1: 0-4
  plan.tasks.push_back({StepTask::Kind::backward, 3, -1, {1}});    // 2: waits for 1: 4-7
  plan.tasks.push_back({StepTask::Kind::sync, 0, 1, {0}});         // 3: after 1 on its stream: 4-5
  plan.syncs.resize(2);
  const PlanTime t = run_plan(plan, {4, 1}, 0);
  EXPECT_DOUBLE_EQ(t.tasks[2].start_s, 4);
  EXPECT_DOUBLE_EQ(t.tasks[2].ready_s, 4);
  EXPECT_DOUBLE_EQ(t.tasks[3].ready_s, 2);
  EXPECT_DOUBLE_EQ(t.tasks[3].start_s, 4);
  EXPECT_DOUBLE_EQ(t.iteration_s, 7);
  EXPECT_DOUBLE_EQ(t.compute_s, 5);
  EXPECT_DOUBLE_EQ(t.sync_s, 5);
  // Compute at half speed while a sync runs: task 2 runs beside task 3 for 1 s (0.5 s of work).
  const PlanTime slowed = run_plan(plan, {4, 1}, 1.0);
  EXPECT_DOUBLE_EQ(slowed.tasks[0].end_s, 4);  // beside sync 0 the whole time
  EXPECT_DOUBLE_EQ(slowed.tasks[3].start_s, 4);
  EXPECT_DOUBLE_EQ(slowed.tasks[2].end_s, 5 + 2.5);
  // Streams that wait for each other are a programming error, not a hang.
  plan.tasks[1].after = {2};
  EXPECT_THROW(run_plan(plan, {4, 1}, 0), std::logic_error);
}

TEST(StepPlan, Zero1ScattersAfterTheBackwardPassZero2BesideIt) {
  const Workload w = three_unit_layers();
  const OverlapSettings o = one_layer_each();
  // zero1: forward 0-3, backward 3-9; the whole gradient reduce-scattered 9-12, gathered 12-15.
  const StepPlan z1 = find_strategy("zero1").step_plan(w, o);
  ASSERT_EQ(z1.syncs.size(), 2u);
  EXPECT_EQ(z1.syncs[0].collective, "reduce_scatter");
  EXPECT_EQ(z1.syncs[1].collective, "all_gather");
  const PlanTime t1 = run_plan(z1, by_layers(z1, 1), 0);
  EXPECT_DOUBLE_EQ(end_of(z1, t1, "reduce-scatter of the gradients"), 12);
  EXPECT_DOUBLE_EQ(t1.iteration_s, 15);
  // zero2: a bucket per layer, each scattered as its backward ends (5-6, 7-8, 9-10), then the
  // parameters gathered 10-13.
  const StepPlan z2 = find_strategy("zero2").step_plan(w, o);
  ASSERT_EQ(z2.syncs.size(), 4u);
  const PlanTime t2 = run_plan(z2, by_layers(z2, 1), 0);
  EXPECT_DOUBLE_EQ(end_of(z2, t2, "reduce-scatter of bucket 0"), 6);
  EXPECT_DOUBLE_EQ(end_of(z2, t2, "reduce-scatter of bucket 2"), 10);
  EXPECT_DOUBLE_EQ(t2.iteration_s, 13);
  // DDP's plan with the same buckets and times: no all-gather after.
  const StepPlan ddp = ddp_plan(w, buckets_of(w, o));
  EXPECT_DOUBLE_EQ(run_plan(ddp, by_layers(ddp, 1), 0).iteration_s, 10);
}

TEST(StepPlan, FsdpGathersEachUnitBeforeItsPassesAndScattersAfter) {
  const Workload w = three_unit_layers();
  const StepPlan plan = find_strategy("fsdp").step_plan(w, one_layer_each());
  // Worked by hand, every sync 1 s, a unit per layer: forward all-gathers 0-1, 1-2 and (once unit
  // 0's forward is done: two units at most) 2-3; forwards 1-2, 2-3, 3-4. Backward: unit 2 gathered
  // 4-5, its backward 5-7; unit 1 gathered 5-6 while it runs; unit 2 scattered 7-8; unit 1's
  // backward 7-9; unit 0 gathered 8-9, its backward 9-11; unit 1 scattered 9-10, unit 0 11-12.
  ASSERT_EQ(plan.syncs.size(), 9u);
  const PlanTime t = run_plan(plan, by_layers(plan, 1), 0);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "all-gather (forward) of unit 2"), 3);
  EXPECT_DOUBLE_EQ(t.forward_end_s, 4);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "all-gather (backward) of unit 2"), 5);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "all-gather (backward) of unit 1"), 6);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "reduce-scatter of unit 2"), 8);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "all-gather (backward) of unit 0"), 9);
  EXPECT_DOUBLE_EQ(end_of(plan, t, "reduce-scatter of unit 1"), 10);
  EXPECT_DOUBLE_EQ(t.backward_end_s, 11);
  EXPECT_DOUBLE_EQ(t.iteration_s, 12);
  // Faster all-gathers (0.5 s) wait for the limit of two gathered units: unit 2's waits for unit
  // 0's forward (0.5-1.5), not for the stream (free at 1).
  const PlanTime fast = run_plan(plan, by_layers(plan, 0.5), 0);
  EXPECT_DOUBLE_EQ(end_of(plan, fast, "all-gather (forward) of unit 2"), 2);
  // Units hold layers up to the cap: one unit of all three layers gathers and scatters once each way.
  OverlapSettings whole;
  whole.bucket_cap_bytes = 1e12;
  const StepPlan one = find_strategy("fsdp").step_plan(w, whole);
  ASSERT_EQ(one.syncs.size(), 3u);
  // Gathered 0-3, forward 3-6, gathered again 6-9, backward 9-15, scattered 15-18.
  EXPECT_DOUBLE_EQ(run_plan(one, by_layers(one, 1), 0).iteration_s, 18);
}

// ZeRO's Figure 1: a 7.5 B-parameter model in mixed precision (K = 12) on 64 GPUs: 120 GB per
// GPU replicated, 31.4 GB with P_os, 16.6 GB with P_os+g, 1.9 GB with P_os+g+p.
TEST(Memory, TheZeroPapersFigureOne) {
  Workload w;
  w.dtype_bytes = 2;
  Layer l;
  l.params = 7'500'000'000;
  w.layers = {l};
  const double psi = 7.5e9;
  const MemoryPerGpu none = memory_per_gpu(w, Sharding::none, 64);
  EXPECT_DOUBLE_EQ(none.total_bytes(), (2 + 2 + 12) * psi);
  EXPECT_NEAR(none.total_bytes() / 1e9, 120, 0.05);
  const MemoryPerGpu os = memory_per_gpu(w, Sharding::optimizer_state, 64);
  EXPECT_DOUBLE_EQ(os.total_bytes(), 2 * psi + 2 * psi + 12 * psi / 64);
  EXPECT_NEAR(os.total_bytes() / 1e9, 31.4, 0.05);
  const MemoryPerGpu g = memory_per_gpu(w, Sharding::gradients, 64);
  EXPECT_DOUBLE_EQ(g.total_bytes(), 2 * psi + (2 + 12) * psi / 64);
  EXPECT_NEAR(g.total_bytes() / 1e9, 16.6, 0.05);
  const MemoryPerGpu p = memory_per_gpu(w, Sharding::parameters, 64);
  EXPECT_DOUBLE_EQ(p.total_bytes(), (2 + 2 + 12) * psi / 64);
  EXPECT_NEAR(p.total_bytes() / 1e9, 1.9, 0.05);
  // In fp32 Adam needs no master copy: 4 + 4 + 8 bytes per parameter.
  w.dtype_bytes = 4;
  EXPECT_DOUBLE_EQ(memory_per_gpu(w, Sharding::none, 8).optimizer_bytes, 8 * psi);
  EXPECT_DOUBLE_EQ(memory_per_gpu(w, Sharding::gradients, 8).gradients_bytes, 4 * psi / 8);
}

// On a full mesh the ring's steps are source B's: a sharded synchronisation is its reduce-scatter
// (with the reductions) plus one all-gather per pass, each (N-1)(a + S/(NB)).
TEST(Sharded, SynchronisationIsTheRingsHalvesOnAFullMesh) {
  const double B = 10e9, a = 4e-6;
  const Topology t = test_topologies::full_mesh(4, B / 1e9, a * 1e6);
  for (const auto& [name, gathers] : {std::pair<const char*, int>{"zero1", 1}, {"zero2", 1}, {"fsdp", 2}}) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = 64e6;
    q.strategy = &find_strategy(name);
    q.params = SyncParams::parse({"reduce_GBps=50"});
    q.placement = first_gpus(t, 4);
    const ResultRecord r = find_executor("analytic").evaluate(q, ExecutorSettings{});
    formulas::CostInputs in;
    in.N = 4;
    in.S = 64e6;
    in.B = B;
    in.a = a;
    in.C = 1 / 50e9;
    const formulas::Breakdown ring = formulas::ring_allreduce(in);
    const double expected = ring.phases[0].seconds + ring.phases[1].seconds + gathers * ring.phases[2].seconds;
    EXPECT_NEAR(r.time_per_sync_s, expected, 1e-9 * expected) << name;
    EXPECT_NEAR(r.busbw_factor, (1 + gathers) * 3.0 / 4, 1e-12) << name;
    const ResultRecord f = find_executor("formula").evaluate(q, ExecutorSettings{});
    EXPECT_NEAR(f.time_per_sync_s, expected, 1e-9 * expected) << name;
  }
}

// A step's collective is timed as the wrapped strategy's, with that one's parameters.
TEST(Sharded, EachCollectiveOfTheStepIsTheInnerStrategysWithItsParameters) {
  const Topology t = test_topologies::full_mesh(4);
  const Workload w = three_unit_layers();
  PredictRequest q;
  q.topology = &t;
  q.workload = &w;
  q.strategy = &find_strategy("fsdp");
  q.params = SyncParams::parse({"inner=ring", "ring_order=given", "reduce_GBps=50"});
  q.placement = first_gpus(t, 4);
  StepSync sync{w, "all_gather", "x"};
  const PredictRequest part = request_for(q, sync);
  EXPECT_EQ(part.strategy->name, "ring");
  EXPECT_EQ(part.params.values(), (std::map<std::string, std::string>{
                                      {"collective", "all_gather"}, {"reduce_GBps", "50"}, {"ring_order", "given"}}));
  // The strategy's own synchronisation (DDP's buckets) stays its own.
  q.strategy = &find_strategy("ring");
  q.params = SyncParams::parse({"ring_order=given"});
  EXPECT_EQ(request_for(q, StepSync{w, "", "bucket 0"}).strategy->name, "ring");
  // With --overlap the step's time is its plan's, each collective timed by the analytic executor.
  q.strategy = &find_strategy("zero1");
  q.params = SyncParams::parse({"reduce_GBps=50"});
  q.overlap = OverlapSettings{};
  const ResultRecord r = predict(q);
  ASSERT_TRUE(r.overlap);
  EXPECT_NEAR(*r.time_per_iteration_s, w.compute_s() + r.time_per_sync_s, 1e-9);  // nothing hidden
  ASSERT_TRUE(r.memory);
  EXPECT_DOUBLE_EQ(r.memory->optimizer_bytes, 3e6 * 8 / 4);
}
