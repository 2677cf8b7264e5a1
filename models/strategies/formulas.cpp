#include "models/strategies/formulas.h"

#include <cmath>

#include "models/support/error.h"

namespace gradsync::models::formulas {

double Breakdown::total() const {
  double t = 0;
  for (const auto& p : phases) t += p.seconds;
  return t;
}

void check_inputs(const CostInputs& in, bool grouped) {
  // Messages are built only on failure: this runs on every evaluation.
  if (!(in.N >= 1)) throw InputError("N = " + std::to_string(in.N) + ": expected at least 1 worker");
  if (!(std::isfinite(in.S) && in.S >= 0)) {
    throw InputError("S = " + std::to_string(in.S) + ": expected a size of at least 0 bytes");
  }
  if (!(std::isfinite(in.B) && in.B > 0)) throw InputError("B = " + std::to_string(in.B) + ": expected a bandwidth greater than 0");
  if (!(std::isfinite(in.a) && in.a >= 0)) throw InputError("a = " + std::to_string(in.a) + ": expected a latency of at least 0");
  if (!(std::isfinite(in.C) && in.C >= 0)) {
    throw InputError("C = " + std::to_string(in.C) + ": expected a reduction cost of at least 0");
  }
  if (!std::isfinite(in.C_server)) throw InputError("C_server = " + std::to_string(in.C_server) + ": expected a finite reduction cost");
  if (grouped) {
    if (!(in.k >= 1 && in.k <= in.N)) {
      throw InputError("k = " + std::to_string(in.k) + ": expected between 1 and N = " + std::to_string(in.N) + " groups");
    }
    if (in.N % in.k != 0) {
      throw InputError("N = " + std::to_string(in.N) + " is not divisible by k = " + std::to_string(in.k) +
                       "; expected k to divide the number of workers");
    }
  }
}

Breakdown parameter_server(const CostInputs& in) {
  check_inputs(in, false);
  const double N = in.N, S = in.S, B = in.B, a = in.a, C = in.server_C();
  return {{{"gather", a + N * S / B}, {"update", N * S * C}, {"send back", a + N * S / B}}};
}

Breakdown ring_allreduce(const CostInputs& in) {
  check_inputs(in, false);
  const double N = in.N, S = in.S, B = in.B, a = in.a, C = in.C;
  return {{{"reduce-scatter", (N - 1) * (a + S / (N * B))},
           {"reduce", (N - 1) * (S / N) * C},
           {"all-gather", (N - 1) * (a + S / (N * B))}}};
}

Breakdown hierarchical_allreduce(const CostInputs& in) {
  check_inputs(in, true);
  const double N = in.N, S = in.S, B = in.B, a = in.a, C = in.C, k = in.k;
  const double group_step = a + k * S / (N * B);
  const double inter_step = a + S / (k * B);
  return {{{"group reduce-scatter", (N / k - 1) * group_step},
           {"group reduce", (N / k - 1) * (k * S / N) * C},
           {"group all-gather", (N / k - 1) * group_step},
           {"inter-group ring", 2 * (k - 1) * inter_step},
           {"inter-group reduce", (k - 1) * (S / k) * C},
           {"broadcast", a + S / B}}};
}

Breakdown ps_hra(const CostInputs& in) {
  check_inputs(in, true);
  const double N = in.N, S = in.S, B = in.B, a = in.a, C = in.C, k = in.k;
  const double group_step = a + k * S / (N * B);
  return {{{"group reduce-scatter", (N / k - 1) * group_step},
           {"group reduce", (N / k - 1) * (k * S / N) * C},
           {"group all-gather", (N / k - 1) * group_step},
           {"server exchange", 2 * (a + S / B) + S * in.server_C()},
           {"broadcast", a + S / B}}};
}

double allreduce(int N, double S, double B) { return 2.0 * (N - 1) * S / (N * B); }

double minibatch_time(double t_cal_update, double t_communication) { return t_cal_update + t_communication; }

double epoch_time(double minibatches_per_epoch, int N, double t_minibatch) {
  return minibatches_per_epoch / N * t_minibatch;
}

}  // namespace gradsync::models::formulas
