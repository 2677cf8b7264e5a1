// The training step as data-parallel frameworks run it (PyTorch DDP): the forward pass; the
// backward pass, producing each layer's gradient from the last layer to the first; the
// gradients gathered in buckets in that order, each synchronised as soon as it is full, one
// after another on the communication stream, beside the rest of the backward pass; the
// optimizer step once the last bucket is done. What a speed-up depends on is the
// communication left exposed after the backward pass, not its total.
#pragma once

#include <cstddef>
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

// The step's timeline, given each bucket's synchronisation time (in `buckets` order).
StepTime overlapped_step(const Workload& w, const std::vector<Bucket>& buckets, const std::vector<double>& sync_s,
                         const OverlapSettings& settings);

}  // namespace gradsync::models
