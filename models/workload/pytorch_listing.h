// A workload from the parameter listing PyTorch prints:
//   for name, p in model.named_parameters(): print(name, p.shape)
// one parameter a line, `NAME SHAPE` with SHAPE as torch.Size([a, b]), (a, b) or [a, b]; a
// dtype (torch.bfloat16, ...) and requires_grad (True/False) may follow the name or the shape.
// Parameters of one module (the name up to its last dot), listed together, form a layer, in the
// listing's order (the order the module registered them, normally the forward order).
#pragma once

#include <optional>
#include <string>

#include "models/workload/workload.h"

namespace gradsync::models {

struct ListingOptions {
  std::string name;                      // default: the file's stem
  std::optional<int> dtype_bytes;        // default: the listing's dtypes, else 4
  std::optional<std::int64_t> tokens;    // what each weight is applied to per minibatch: FLOPs by the dense rule
  std::optional<double> device_TFLOPS;   // with tokens
  std::optional<double> compute_s;       // a measured minibatch, shared by FLOPs or parameters
  std::int64_t minibatches_per_epoch = 1;
};

// `source` names the text in errors ("FILE:LINE: ..."). Frozen parameters (requires_grad False)
// have no gradient and are left out.
Workload workload_from_listing(const std::string& text, const std::string& source, const ListingOptions& options);

}  // namespace gradsync::models
