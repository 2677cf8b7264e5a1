// The gradient noise scale (McCandlish, Kaplan, Amodei et al., "An Empirical Model of
// Large-Batch Training", 2018, appendix A.1), from what data parallelism gives nearly for free:
// each rank's gradient over its b rows and the all-reduced one over all B = N x b rows. With
// |G_b|^2 and |G_B|^2 their squared norms (the first averaged over the ranks), unbiased
// estimates of the true gradient's squared norm and of the per-example covariance's trace are
//   |G|^2 = (B |G_B|^2 - b |G_b|^2) / (B - b),   tr(S) = (|G_b|^2 - |G_B|^2) / (1/b - 1/B),
// and the simple noise scale B_simple = tr(S) / |G|^2: the batch about which steps to a target
// stop falling as 1/B (S(B) = S_min (1 + B_noise / B)). Each estimate is noisy; as the paper
// does, the ratio is taken of the two estimates averaged over many steps.
#pragma once

#include <cstddef>

namespace gradsync::training {

class NoiseScale {
 public:
  // One step: the ranks' mean squared norm of their own gradients over `small` rows each, and
  // the squared norm of the synchronised gradient over `big` rows (big > small).
  void add(double small_norm_sq, double big_norm_sq, double small, double big);
  std::size_t steps() const { return steps_; }
  double gradient_norm_sq() const;  // |G|^2, averaged over the steps
  double trace() const;             // tr(S), averaged over the steps
  double simple() const;            // tr(S) / |G|^2; 0 before any step or where |G|^2 <= 0

 private:
  double norm_sum_ = 0, trace_sum_ = 0;
  std::size_t steps_ = 0;
};

}  // namespace gradsync::training
