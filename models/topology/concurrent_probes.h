// What flows measured at once (MatrixForm::concurrent_probes) tell the inference of a topology
// from a bandwidth matrix (matrix_inference.h), that pairs measured alone cannot:
//  - switch groups: in a probe where every GPU sends and receives at most one flow, no GPU link
//    is shared, so a flow that slows down crosses a shared uplink, and its ends sit behind
//    different switches (find_probe_groups);
//  - what a group's uplink carries when shared: the most its members sent or received across it
//    at once (probe_uplink_Bps);
//  - duplex shares: a link whose flows in both directions all ran slower than the tree gives
//    them cannot carry both at full rate (apply_probe_duplex);
//  - whether an inferred tree shares links where the measurement did (check_probes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/topology/matrix_form.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/topology.h"

namespace gradsync::models {

struct ProbeGroups {
  std::vector<int> of;  // each GPU's group, -1 where the probes show none
  std::optional<std::string> note;  // the groups found, in plain words
  // The slowest pair between two groups measured alone (GPU pairs of the tree, not `direct`).
  std::optional<double> across_Bps;
  // Whether every GPU of a and b is in one group (true where the probes show none).
  bool one_group(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) const;
};

// `direct[i][j]`: the pair is joined by its own link (NVLink), outside the switch tree.
ProbeGroups find_probe_groups(const MatrixForm& form, const std::vector<std::vector<bool>>& direct);

// The most the GPUs `members` sent (or received) at once across their group's boundary in one probe.
double probe_uplink_Bps(const MatrixForm& form, const std::vector<std::size_t>& members);

// The fastest pair between GPUs a and GPUs b measured alone, either way (0 where all are direct).
double fastest_pair_Bps(const MatrixForm& form, const std::vector<std::size_t>& a, const std::vector<std::size_t>& b,
                        const std::vector<std::vector<bool>>& direct);

// Lowers the duplex share of links (or makes them half duplex) where the probes that load them
// both ways all ran slower than the tree `nodes`/`links` gives them; returns a note per link changed.
std::vector<std::string> apply_probe_duplex(const MatrixForm& form, const std::string& name, const std::vector<Node>& nodes,
                                            std::vector<Link>& links, double tolerance);

// Each probe against `topology`'s sharing: the least and most shared flow, measured and modeled.
std::vector<ProbeCheck> check_probes(const MatrixForm& form, const Topology& topology);

}  // namespace gradsync::models
