// How NCCL 2.30.7 plans its channels on a host (src/graph/search.cc ncclTopoCompute), written
// for gradsync from that file's rules: for a pattern (ring, tree, NVLS, ...) it looks for the
// most channels at the highest per-channel bandwidth of its speed list that the host's links
// can carry — each channel takes its bandwidth from every link of every path it uses (between
// consecutive GPUs, and from and to a NIC when there are other hosts) — first with every
// channel alike, then letting them differ, farther path types, a NIC per direction; then it
// lowers the bandwidth, keeps the best, duplicates channels (ncclTopoDupChannels) and tries to
// raise the bandwidth again. The result is what NCCL's cost model (tuning.h) prices.
#pragma once

#include <array>
#include <vector>

#include "models/strategies/nccl/system.h"

namespace gradsync::models::nccl {

// NCCL_TOPO_PATTERN_*.
enum class Pattern { balanced_tree = 1, split_tree = 2, tree = 3, ring = 4, nvls = 5, collnet_direct = 6 };

struct Graph {
  Pattern pattern = Pattern::ring;
  bool collnet = false;
  int min_channels = 1, max_channels = 1;
  int n_channels = 0;
  double bw_intra = 0, bw_inter = 0;  // GB/s per channel
  double latency_inter = 0;           // us
  int type_intra = kPathLoc, type_inter = kPathPix;
  int same_channels = 1, cross_nic = 0, n_hops = 0;
  std::vector<std::vector<int>> intra;   // per channel: the ranks in order
  std::vector<std::array<int, 2>> inter;  // per channel: the NICs (index among the NICs) in and out
};

// The channel graph of `pattern` on `system` (whose links' bandwidth the search borrows and
// gives back). `inter`: the communicator spans hosts, so channels start and end at NICs.
// `rerun_failed`: run again every pass that repeats one which found nothing (NCCL does; the
// result is the same, and tests compare the two).
Graph compute_graph(System& system, Pattern pattern, int min_channels, int max_channels, bool inter, bool collnet = false,
                    bool rerun_failed = false);

}  // namespace gradsync::models::nccl
