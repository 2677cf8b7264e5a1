#include "training/noise_scale.h"

#include <stdexcept>

namespace gradsync::training {

void NoiseScale::add(double small_norm_sq, double big_norm_sq, double small, double big) {
  if (!(small > 0 && big > small)) throw std::invalid_argument("NoiseScale::add: expected 0 < small < big rows");
  norm_sum_ += (big * big_norm_sq - small * small_norm_sq) / (big - small);
  trace_sum_ += (small_norm_sq - big_norm_sq) / (1.0 / small - 1.0 / big);
  ++steps_;
}

double NoiseScale::gradient_norm_sq() const { return steps_ ? norm_sum_ / static_cast<double>(steps_) : 0.0; }

double NoiseScale::trace() const { return steps_ ? trace_sum_ / static_cast<double>(steps_) : 0.0; }

double NoiseScale::simple() const {
  const double g = gradient_norm_sq();
  return g > 0 ? trace() / g : 0.0;
}

}  // namespace gradsync::training
