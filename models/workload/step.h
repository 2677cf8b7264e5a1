// The training step as data-parallel frameworks run it (PyTorch DDP): the forward pass; the
// backward pass, producing each layer's gradient from the last layer to the first; the
// gradients gathered in buckets in that order, each synchronised as soon as it is full, one
// after another on the communication stream, beside the rest of the backward pass; the
// optimizer step once the last bucket is done. What a speed-up depends on is the
// communication left exposed after the backward pass, not its total.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "models/workload/workload.h"

namespace gradsync::models {

struct OverlapSettings {
  // DDP's defaults: bucket_cap_mb 25, and a first bucket of 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES)
  // so that communication starts early.
  double bucket_cap_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1024.0 * 1024;
  // Compute runs this share slower while a bucket is being synchronised (kernels and copies
  // sharing the GPU's memory bandwidth and SMs); 0: not at all.
  double slowdown = 0;
};

// A bucket: layers whose gradients are synchronised together.
struct Bucket {
  std::vector<std::size_t> layers;  // indices of the workload's layers, in the order the backward pass reaches them
  Workload gradient;                // the workload with those layers only, in forward order: what one synchronisation moves
};

// DDP's assignment (Reducer's compute_bucket_assignment_by_size), a layer at a time: the layers
// in backward order fill a bucket until it holds at least its cap (the first bucket's cap for
// the first); a layer of another dtype starts a new bucket. Layers are not split.
std::vector<Bucket> buckets_of(const Workload& w, const OverlapSettings& settings);

struct BucketSpan {
  double ready_s = 0;  // from the start of the backward pass: its last gradient produced
  double start_s = 0;  // its synchronisation started (the previous one done)
  double end_s = 0;
};

struct StepTime {
  double forward_s = 0;
  double backward_s = 0;   // as it ran: longer than its compute when communication slowed it
  double iteration_s = 0;  // forward, then the backward pass and the buckets' synchronisations, whichever ends last
  double exposed_s = 0;    // iteration - the compute alone: the communication the backward pass did not hide
  double sync_s = 0;       // the buckets' synchronisations added up
  std::vector<BucketSpan> buckets;
};

// A training step as two streams of tasks, as a framework issues them on a GPU: the compute
// stream (each layer's forward and backward) and the communication stream (synchronisations).
// Each stream runs its tasks in order; a task starts once the one before it on its stream and
// every task it waits for are done. DDP's step is such a plan (ddp_plan); sharded data parallel
// strategies build theirs (all-gathering parameters before the layers that need them,
// reduce-scattering gradients after). The models time a plan (run_plan); gradsync-run runs one.
struct StepSync {
  Workload moved;  // the layers whose gradients (or parameters) it moves, in forward order
  // "": one synchronisation of the strategy's own; else the collective ("reduce_scatter",
  // "all_gather") the strategy runs through the strategy it wraps (its "inner" parameter).
  std::string collective;
  std::string what;  // "bucket 2", "all-gather unit 3 (forward)"
};

struct StepTask {
  enum class Kind { forward, backward, sync };
  Kind kind = Kind::forward;
  double seconds = 0;  // compute: seconds at full speed
  int sync = -1;  // sync: its index in StepPlan::syncs (each sync task has its own)
  std::vector<int> after;  // tasks that must be done before it starts, besides the one before it on its stream
  bool on_compute() const { return kind != Kind::sync; }
};

struct StepPlan {
  std::vector<StepTask> tasks;  // each stream's tasks in the order they are issued
  std::vector<StepSync> syncs;
};

struct TaskSpan {
  double ready_s = 0;  // from the step's start: the tasks it waits for done (besides its stream)
  double start_s = 0;
  double end_s = 0;
};

struct PlanTime {
  std::vector<TaskSpan> tasks;
  double forward_end_s = 0;   // the last forward task done
  double backward_end_s = 0;  // the last backward task done
  double iteration_s = 0;     // every task done
  double compute_s = 0;       // the compute tasks at full speed, added up
  double sync_s = 0;          // the synchronisations added up
};

// A plan's compute tasks: every layer's forward in forward order, then every layer's backward
// from the last layer; returns their task indices by layer.
struct LayerTasks {
  std::vector<int> forward, backward;
};
LayerTasks add_layer_tasks(StepPlan& plan, const Workload& w);
// A sync task moving `moved`, after the one before it on the communication stream and `after`;
// returns its task index.
int add_sync(StepPlan& plan, Workload moved, std::string collective, std::string what, std::vector<int> after);

// FSDP's units (size_based_auto_wrap_policy): consecutive layers in forward order until a unit
// holds at least `cap_bytes` of parameters; a layer of another dtype starts a new unit (a flat
// parameter has one dtype). Bucket::layers in forward order here.
std::vector<Bucket> units_of(const Workload& w, double cap_bytes);

// DDP's plan: the forward pass, the backward pass layer by layer from the last, and each bucket
// synchronised (StepSync::collective "") once its last layer's gradient is produced.
StepPlan ddp_plan(const Workload& w, const std::vector<Bucket>& buckets);

// The plan's timeline, given each sync's time (in StepPlan::syncs order); compute runs
// `slowdown` slower while a synchronisation runs. A plan whose streams wait for each other in a
// cycle is a programming error (std::logic_error).
PlanTime run_plan(const StepPlan& plan, const std::vector<double>& sync_s, double slowdown);

// A plan's timeline as the step's figures: `buckets` spans (from the start of the backward pass)
// are the sync tasks'.
StepTime step_time(const StepPlan& plan, const PlanTime& t);

// The step's timeline, given each bucket's synchronisation time (in `buckets` order): DDP's plan, run.
StepTime overlapped_step(const Workload& w, const std::vector<Bucket>& buckets, const std::vector<double>& sync_s,
                         const OverlapSettings& settings);

}  // namespace gradsync::models
