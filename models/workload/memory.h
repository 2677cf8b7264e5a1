// Memory per GPU of data-parallel training, by the ZeRO paper's accounting (Rajbhandari et al.,
// "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC'20, section 3 and
// Figure 1): Ψ parameters kept in the workload's element size b (2 in mixed-precision training),
// their gradients (b each), and Adam's optimizer state: momentum and variance in fp32, plus an
// fp32 master copy of the parameters where they are kept in fewer bytes — K = 12 bytes per
// parameter in mixed precision (the paper's K), 8 in fp32. Stage 1 (P_os) shards the optimizer
// state over the N ranks, stage 2 (P_os+g) the gradients too, stage 3 (P_os+g+p) the parameters
// too. Activations, temporary buffers and fragmentation (the paper's residual states) are not
// counted, nor a sharded layer's parameters while they are gathered.
#pragma once

#include <optional>
#include <string>

#include "models/workload/workload.h"

namespace gradsync::models {

enum class Sharding { none, optimizer_state, gradients, parameters };

// What a sentence says: "replicated", "optimizer state sharded (ZeRO-1)", ...
std::string sharding_name(Sharding s);
// What a record stores: "none", "optimizer_state", "gradients", "parameters" (what is sharded, up to).
std::string sharding_word(Sharding s);
std::optional<Sharding> sharding_from_word(const std::string& word);

struct MemoryPerGpu {
  Sharding sharding = Sharding::none;
  double parameters_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double total_bytes() const { return parameters_bytes + gradients_bytes + optimizer_bytes; }
};

MemoryPerGpu memory_per_gpu(const Workload& w, Sharding sharding, int ranks);

}  // namespace gradsync::models
