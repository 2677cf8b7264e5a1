// Matrix form of a topology: what a measurement tool reports. N GPUs, an N×N measured
// unidirectional bandwidth matrix (row = sender, column = receiver), and optionally the
// bidirectional bandwidth (sum of both directions, as p2pBandwidthLatencyTest and
// nvbandwidth's "Total" report it), pair latencies, `nvidia-smi topo -m` classes,
// host<->device bandwidths and each GPU's local copy bandwidth.
//
// JSON (units in the keys; null where not measured):
//   { "name": "...", "gpus": ["gpu0", ...],
//     "bandwidth_GBps": [[null, 5.96, ...], ...],
//     "bidirectional_GBps": null, "latency_us": null, "cpu_latency_us": null,
//     "bandwidth_spread": null, "bidirectional_spread": null,   (relative, 0.03 = 3 %)
//     "topo_classes": null, "p2p_supported": null,
//     "host_to_device_GBps": null, "device_to_host_GBps": null, "device_local_GBps": null,
//     "ranks_at_once": { "copy_GBps": [r1, r2, ...], "quantize_GBps": [q1, q2, ...] },
//     "other_measurements": { "p2p_disabled": { "bandwidth_GBps": ..., ... } },
//     "concurrent_probes": [ {"flows": [["gpu0", "gpu2"], ["gpu1", "gpu3"]], "bandwidth_GBps": [2.3, 2.2],
//                             "spread": [0.01, 0.02]} ],   (spread optional)
//     "nominal": { "pcie_GBps": 24, "inter_socket_GBps": 16, "nvlink_GBps_per_link": 20.6, "basis": "..." },
//     "description": "...", "source": "..." }
//
// "nominal" marks a form that measured nothing: built from `nvidia-smi topo -m` alone, its
// bandwidth_GBps are the documented rates of the links each pair's class crosses
// (models/topology/hardware.h), and the topology is built from topo_classes with these rates.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/support/json_input.h"

namespace gradsync::models {

// N×N optional values; the diagonal is normally empty.
class PairMatrix {
 public:
  PairMatrix() = default;
  explicit PairMatrix(std::size_t n) : n_(n), values_(n * n) {}
  std::size_t size() const { return n_; }
  const std::optional<double>& at(std::size_t row, std::size_t column) const { return values_.at(row * n_ + column); }
  std::optional<double>& at(std::size_t row, std::size_t column) { return values_.at(row * n_ + column); }
  // Mean of the two directions where both are known, else the one that is.
  std::optional<double> symmetric(std::size_t i, std::size_t j) const;

 private:
  std::size_t n_ = 0;
  std::vector<std::optional<double>> values_;
};

struct MeasurementSet {
  std::optional<PairMatrix> bandwidth_Bps;
  std::optional<PairMatrix> bidirectional_Bps;
  std::optional<PairMatrix> latency_s;
  std::optional<PairMatrix> cpu_latency_s;
};

// Transfers measured at the same time: a link they share shows as them slowing down.
struct ConcurrentProbe {
  std::vector<std::pair<std::string, std::string>> flows;  // (from, to) GPU ids, two or more
  std::vector<double> bandwidth_Bps;  // what each got
  // How much each flow's repeated measurements disagreed, relative (gradsync-run measure);
  // empty when not measured. A slowdown within it says nothing about shared links.
  std::vector<double> spread;
};

// The documented link rates a nominal form was built with (bytes/s), and where they come
// from in words ("PCIe Gen4 x16 (RTX 4090's), ...").
struct NominalRates {
  double pcie_Bps = 0;             // each GPU's PCIe link, and a switch's uplink
  double inter_socket_Bps = 0;     // the link between CPU sockets (SYS)
  double nvlink_Bps_per_link = 0;  // one NVLink of an NV# pair
  std::string basis;
};

// What a pair of the class `topo_class` carries at these rates: NV# links, a PCIe link, and
// the slower of a PCIe link and the inter-socket link across sockets (SYS).
double nominal_pair_Bps(const NominalRates& rates, const std::string& topo_class);

struct MatrixForm {
  std::string name;
  std::string description;
  std::string source;  // where the figures come from (tool, file)
  std::vector<std::string> gpus;
  PairMatrix bandwidth_Bps;  // required, off-diagonal entries all present
  std::optional<PairMatrix> bidirectional_Bps;
  std::optional<PairMatrix> latency_s;
  std::optional<PairMatrix> cpu_latency_s;
  // How much the repeated probes of bandwidth_Bps / bidirectional_Bps disagreed, relative
  // to their median (gradsync-run measure: 1.4826 x the median absolute deviation / the
  // median, a robust standard deviation); a difference smaller than this says nothing.
  std::optional<PairMatrix> bandwidth_spread;
  std::optional<PairMatrix> bidirectional_spread;
  // "X", "PIX", "PXB", "PHB", "NODE", "SYS", "NV1", "NV2", ...; diagonal "X".
  std::optional<std::vector<std::vector<std::string>>> topo_classes;
  std::optional<std::vector<std::vector<bool>>> p2p_supported;
  std::optional<std::vector<double>> host_to_device_Bps;
  std::optional<std::vector<double>> device_to_host_Bps;
  std::optional<std::vector<double>> device_local_Bps;
  std::optional<std::vector<double>> device_quantize_Bps;  // 1-bit encode + decode rate (gradsync-run measure)
  // Local work under co-location (gradsync-run measure): entry k-1 is a rank's copy (or
  // 1-bit) rate while the first k ranks all work at once — ranks sharing cores or one GPU
  // slow each other down, ranks on GPUs of their own do not. A run of k ranks does its
  // local work at device_local_Bps x copy_Bps[k-1] / copy_Bps[0].
  struct AtOnce {
    std::vector<double> copy_Bps;
    std::vector<double> quantize_Bps;
  };
  std::optional<AtOnce> ranks_at_once;
  std::map<std::string, MeasurementSet> other_measurements;
  std::vector<ConcurrentProbe> concurrent_probes;
  std::optional<NominalRates> nominal;  // set: the figures are nominal, not measured
  // NVLink SHARP on the GPUs' NVSwitch, where NCCL's log says ("NVLS multicast support is (not)
  // available"): the inferred NVSwitch's fact (NCCL's NVLS); unset where no input says.
  std::optional<bool> nvlink_sharp;

  std::size_t size() const { return gpus.size(); }
};

// The keys a matrix-form document may hold (for form detection and messages).
const std::vector<std::string>& matrix_form_keys();

// Reads and validates a matrix-form document: square matrices matching "gpus", positive
// finite bandwidths, non-negative latencies, every off-diagonal bandwidth present.
MatrixForm matrix_form_from_json(const JsonView& doc);
ordered_json matrix_form_to_json(const MatrixForm& form);

// Number of NVLinks in a topo class ("NV4" -> 4, at most "NV999"), or 0 when it is not an NVLink class.
int nvlink_count(const std::string& topo_class);
// Is this one of the classes `nvidia-smi topo -m` prints?
bool is_known_topo_class(const std::string& topo_class);

}  // namespace gradsync::models
