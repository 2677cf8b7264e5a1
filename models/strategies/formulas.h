// The source documents' closed-form formulas, exactly as seeds-digest.md gives them.
// Notation: N workers, S bytes to synchronise per worker, B link bandwidth (bytes/s),
// a per-message latency (s), C time to reduce one byte (s/byte), k groups.
//
// Source B's four cost formulas come with their phases spelled out; a Breakdown keeps
// them apart so that reports show where the time goes. total() is the paper's formula.
// Source A's equations are kept as written; with a = 0 and C = 0 they coincide with
// source B's PS and ring formulas (the tests check it).
#pragma once

#include <string>
#include <vector>

namespace gradsync::models::formulas {

struct CostInputs {
  int N = 1;       // workers
  double S = 0;    // bytes per worker
  double B = 1;    // bytes per second
  double a = 0;    // seconds per message
  double C = 0;    // seconds per byte reduced
  int k = 1;       // groups (hierarchical, PS-HRA)
  // The papers use one C. A parameter server in host memory sums at the CPU's rate, so
  // gradsync lets the server's own reduction (PS "update", PS-HRA "server exchange") use
  // C_server; negative means "same as C", which is the papers' formula exactly.
  double C_server = -1;
  double server_C() const { return C_server < 0 ? C : C_server; }
};

struct Phase {
  std::string name;
  double seconds = 0;
};

struct Breakdown {
  std::vector<Phase> phases;
  double total() const;
};

// Checks N >= 1, S >= 0, B > 0, a >= 0, C >= 0, 1 <= k <= N and k divides N when
// `grouped`; throws InputError naming the bad value.
void check_inputs(const CostInputs& in, bool grouped);

// --- Source B (PS-HRA paper) -------------------------------------------------
// PS:            2·(a + N·S/B) + N·S·C
Breakdown parameter_server(const CostInputs& in);
// Ring:          2·(N−1)·(a + S/(N·B)) + (N−1)·(S/N)·C
Breakdown ring_allreduce(const CostInputs& in);
// Hierarchical:  2·(N/k−1)·(a + k·S/(N·B)) + 2·(k−1)·(a + S/(k·B))
//                + (N/k−1)·(k·S/N)·C + (k−1)·(S/k)·C + (a + S/B)
Breakdown hierarchical_allreduce(const CostInputs& in);
// PS-HRA:        2·(N/k−1)·(a + k·S/(N·B)) + (N/k−1)·(k·S/N)·C + 3·(a + S/B) + S·C
Breakdown ps_hra(const CostInputs& in);

// --- Source A (multi-GPU language models) --------------------------------------
// Eq. (3): t_allreduce = 2·(N−1)·S / (N·B)
double allreduce(int N, double S, double B);
// Eqs. (5), (6): time per minibatch = t_cal&update + t_communication
double minibatch_time(double t_cal_update, double t_communication);
// Eqs. (7), (8): time per epoch T = (bn / N) · t
double epoch_time(double minibatches_per_epoch, int N, double t_minibatch);

}  // namespace gradsync::models::formulas
