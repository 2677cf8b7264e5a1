// From a measured bandwidth matrix to a topology graph.
//
// The importer explains the measured pairs with a tree of switches whose shared uplinks
// set the bandwidth between groups, built bottom-up (agglomerative clustering on the
// measured bandwidth): the pair of GPU groups with the highest mean bandwidth is joined
// under a new switch — together with every group within `tolerance` of that bandwidth —
// and each member's link to the new switch gets the bandwidth measured across it. Pairs
// that `nvidia-smi topo -m` classes as NVLink (NV#) get a direct link instead and do
// not shape the tree. Latencies, when measured, are split over the links so that the
// mean pair latency at each level is reproduced; otherwise each link gets a default.
// A measured bidirectional figure well below twice the unidirectional one marks the
// pair's bottleneck links half duplex, as do flows measured at once (concurrent_probes) that
// all ran slower across a link they load in both directions (a ring: every GPU sends and
// receives at once) than the tree gives them: the link keeps the duplex share that
// reproduces them. Host<->device figures add a host-memory node at the root of the tree.
//
// Every measured pair is then routed on the inferred graph and compared with its
// measurement; the report lists each pair, its error and whether it is explained.
//
// A nominal form (MatrixForm::nominal: nvidia-smi topo -m alone, nothing measured) is
// clustered by its classes instead, closest first as NCCL orders them (PIX, PXB, PHB, NODE,
// SYS): GPUs of one PIX group hang from one PCIe switch and share its uplink, PXB groups from a
// common switch, PHB from a root complex, NODE from a CPU; SYS joins the CPUs by the
// inter-socket link (a hub of such links for more than two). Every link gets its nominal rate
// (each GPU's PCIe link, uplinks at the same rate), NV# pairs # NVLinks.
#pragma once

#include <string>
#include <vector>

#include "models/topology/matrix_form.h"
#include "models/topology/topology.h"

namespace gradsync::models {

struct InferenceOptions {
  double tolerance = 0.02;  // relative: pairs within 2 % count as the same level, and as explained
  double default_link_latency_s = 1e-6;  // per link, when no latency was measured
};

struct PairCheck {
  std::string from, to;
  double measured_Bps = 0;
  double modeled_Bps = 0;
  double relative_error() const { return measured_Bps > 0 ? (modeled_Bps - measured_Bps) / measured_Bps : 0; }
  bool explained = true;
  // A pair without peer access: its figure is a copy staged through host memory, which the
  // links must allow (explained where they carry at least as much), not a link's rate.
  bool staged = false;
};

// A concurrent-flow probe against the inferred topology's sharing (contention.h).
struct ProbeCheck {
  std::string description;  // "gpu0->gpu2 with gpu1->gpu3"
  double measured_share[2] = {1, 1};  // bandwidth with the other flow / bandwidth alone (measured)
  double modeled_share[2] = {1, 1};  // the same on the inferred topology
  bool agrees = true;  // both shares within 15 % (absolute) of the model's
};

struct InferenceReport {
  std::vector<PairCheck> pairs;  // every measured GPU pair, then host pairs
  std::vector<ProbeCheck> probes;
  std::vector<std::string> notes;  // assumptions and decisions, in plain words
  bool nominal = false;  // the pairs' figures are nominal (MatrixForm::nominal), not measured
  std::size_t unexplained_count() const;
  double max_abs_error() const;
  std::string text() const;  // readable summary: tree, pairs, notes
};

struct InferredTopology {
  Topology topology;
  InferenceReport report;
};

InferredTopology infer_topology(const MatrixForm& form, const InferenceOptions& options = {});

// One line per link: "gpu0 -- switch0  5.96 GB/s  1.00 us  full"
std::string describe_links(const Topology& topology);

}  // namespace gradsync::models
