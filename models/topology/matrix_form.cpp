#include "models/topology/matrix_form.h"

#include <algorithm>
#include <regex>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {
namespace {

const std::vector<std::string> kSetKeys = {"bandwidth_GBps", "bidirectional_GBps", "latency_us", "cpu_latency_us"};

// Reads an N×N matrix of numbers or nulls. `scale` converts file units to SI.
// Diagonal entries may be anything numeric or null (tools print local figures there); they are dropped.
PairMatrix read_matrix(const JsonView& view, std::size_t n, double scale, bool positive, bool require_off_diagonal) {
  PairMatrix m(n);
  const auto rows = view.items(n, "rows (one per GPU)");
  for (std::size_t i = 0; i < n; ++i) {
    const auto cells = rows[i].items(n, "values (one per GPU)");
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        if (!cells[j].is_null()) cells[j].as_number();  // must at least be a number
        continue;
      }
      if (cells[j].is_null()) {
        if (require_off_diagonal) cells[j].fail("a measured value for the pair (" + std::to_string(i) + ", " + std::to_string(j) + ")");
        continue;
      }
      const double v = positive ? read_bandwidth_GBps(cells[j]) : read_latency_us(cells[j]);
      m.at(i, j) = v * scale;
    }
  }
  return m;
}

// A matrix of relative spreads (non-negative numbers or nulls; the diagonal dropped).
PairMatrix read_spread_matrix(const JsonView& view, std::size_t n) {
  PairMatrix m(n);
  const auto rows = view.items(n, "rows (one per GPU)");
  for (std::size_t i = 0; i < n; ++i) {
    const auto cells = rows[i].items(n, "values (one per GPU)");
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j || cells[j].is_null()) continue;
      m.at(i, j) = cells[j].as_number_in(0, 1e6, "a relative spread (0.03 = 3 %)");
    }
  }
  return m;
}

std::vector<double> read_vector(const JsonView& view, std::size_t n, double scale) {
  std::vector<double> out;
  for (const auto& item : view.items(n, "values (one per GPU)")) out.push_back(read_bandwidth_GBps(item) * scale);
  return out;
}

ordered_json matrix_to_json(const PairMatrix& m, double scale) {
  ordered_json rows = ordered_json::array();
  for (std::size_t i = 0; i < m.size(); ++i) {
    ordered_json row = ordered_json::array();
    for (std::size_t j = 0; j < m.size(); ++j) {
      const auto& v = m.at(i, j);
      row.push_back(v ? ordered_json(*v / scale) : ordered_json(nullptr));
    }
    rows.push_back(row);
  }
  return rows;
}

ordered_json vector_to_json(const std::vector<double>& v, double scale) {
  ordered_json out = ordered_json::array();
  for (double x : v) out.push_back(x / scale);
  return out;
}

MeasurementSet read_set(const JsonView& view, std::size_t n) {
  view.expect_object(kSetKeys);
  MeasurementSet set;
  if (auto v = view.get("bandwidth_GBps")) set.bandwidth_Bps = read_matrix(*v, n, kGB, true, false);
  if (auto v = view.get("bidirectional_GBps")) set.bidirectional_Bps = read_matrix(*v, n, kGB, true, false);
  if (auto v = view.get("latency_us")) set.latency_s = read_matrix(*v, n, kUs, false, false);
  if (auto v = view.get("cpu_latency_us")) set.cpu_latency_s = read_matrix(*v, n, kUs, false, false);
  return set;
}

}  // namespace

std::optional<double> PairMatrix::symmetric(std::size_t i, std::size_t j) const {
  const auto& a = at(i, j);
  const auto& b = at(j, i);
  if (a && b) return (*a + *b) / 2;
  return a ? a : b;
}

const std::vector<std::string>& matrix_form_keys() {
  static const std::vector<std::string> keys = {
      "name", "description", "source", "gpus", "bandwidth_GBps", "bidirectional_GBps", "latency_us", "cpu_latency_us",
      "bandwidth_spread", "bidirectional_spread", "topo_classes", "p2p_supported", "host_to_device_GBps", "device_to_host_GBps", "device_local_GBps", "device_quantize_GBps",
      "ranks_at_once", "other_measurements", "concurrent_probes", "nominal", "nvlink_sharp"};
  return keys;
}

int nvlink_count(const std::string& topo_class) {
  static const std::regex nv("^NV([0-9]{1,3})$");  // no NV<n> beyond 999 links (and no int overflow)
  std::smatch m;
  if (std::regex_match(topo_class, m, nv)) return std::stoi(m[1]);
  return 0;
}

double nominal_pair_Bps(const NominalRates& rates, const std::string& c) {
  if (const int links = nvlink_count(c); links > 0) return links * rates.nvlink_Bps_per_link;
  if (c == "SYS" || c == "SOC") return std::min(rates.pcie_Bps, rates.inter_socket_Bps);
  return rates.pcie_Bps;
}

bool is_known_topo_class(const std::string& c) {
  return c == "X" || c == "PIX" || c == "PXB" || c == "PHB" || c == "NODE" || c == "SYS" || c == "SOC" ||
         nvlink_count(c) > 0;
}

MatrixForm matrix_form_from_json(const JsonView& doc) {
  doc.expect_object(matrix_form_keys());
  MatrixForm form;
  form.name = doc.at("name").as_string();
  if (form.name.empty()) doc.at("name").fail("a non-empty name");
  if (auto v = doc.get("description")) form.description = v->as_string();
  if (auto v = doc.get("source")) form.source = v->as_string();

  const auto gpus = doc.at("gpus").items();
  if (gpus.empty()) doc.at("gpus").fail("at least one GPU id");
  for (const auto& g : gpus) {
    std::string id = g.as_string();
    if (id.empty()) g.fail("a non-empty GPU id");
    for (const auto& seen : form.gpus) {
      if (seen == id) g.fail("a GPU id not used before in \"gpus\"");
    }
    form.gpus.push_back(std::move(id));
  }
  const std::size_t n = form.gpus.size();
  form.bandwidth_Bps = read_matrix(doc.at("bandwidth_GBps"), n, kGB, true, true);
  if (auto v = doc.get("bidirectional_GBps")) form.bidirectional_Bps = read_matrix(*v, n, kGB, true, false);
  if (auto v = doc.get("latency_us")) form.latency_s = read_matrix(*v, n, kUs, false, false);
  if (auto v = doc.get("cpu_latency_us")) form.cpu_latency_s = read_matrix(*v, n, kUs, false, false);
  if (auto v = doc.get("bandwidth_spread")) form.bandwidth_spread = read_spread_matrix(*v, n);
  if (auto v = doc.get("bidirectional_spread")) form.bidirectional_spread = read_spread_matrix(*v, n);
  if (auto v = doc.get("topo_classes")) {
    std::vector<std::vector<std::string>> classes;
    const auto rows = v->items(n, "rows (one per GPU)");
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::string> row;
      const auto cells = rows[i].items(n, "classes (one per GPU)");
      for (std::size_t j = 0; j < n; ++j) {
        std::string c = cells[j].as_string();
        if (i == j && c != "X") cells[j].fail("\"X\" on the diagonal");
        if (i != j && (c == "X" || !is_known_topo_class(c))) {
          cells[j].fail("one of PIX, PXB, PHB, NODE, SYS, SOC, NV<n> (nvidia-smi topo -m classes)");
        }
        row.push_back(std::move(c));
      }
      classes.push_back(std::move(row));
    }
    form.topo_classes = std::move(classes);
  }
  if (auto v = doc.get("p2p_supported")) {
    std::vector<std::vector<bool>> p2p;
    const auto rows = v->items(n, "rows (one per GPU)");
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<bool> row;
      for (const auto& cell : rows[i].items(n, "true/false values (one per GPU)")) row.push_back(cell.as_bool());
      p2p.push_back(std::move(row));
    }
    form.p2p_supported = std::move(p2p);
  }
  if (auto v = doc.get("nvlink_sharp")) form.nvlink_sharp = v->as_bool();
  if (auto v = doc.get("host_to_device_GBps")) form.host_to_device_Bps = read_vector(*v, n, kGB);
  if (auto v = doc.get("device_to_host_GBps")) form.device_to_host_Bps = read_vector(*v, n, kGB);
  if (auto v = doc.get("device_local_GBps")) form.device_local_Bps = read_vector(*v, n, kGB);
  if (auto v = doc.get("device_quantize_GBps")) form.device_quantize_Bps = read_vector(*v, n, kGB);
  if (auto v = doc.get("ranks_at_once")) {
    v->expect_object({"copy_GBps", "quantize_GBps"});
    MatrixForm::AtOnce at_once;
    const auto copy = v->at("copy_GBps").items();
    if (copy.empty() || copy.size() > n) v->at("copy_GBps").fail("1 to " + std::to_string(n) + " rates (one per number of ranks at once)");
    for (const auto& x : copy) at_once.copy_Bps.push_back(read_bandwidth_GBps(x) * kGB);
    for (const auto& x : v->at("quantize_GBps").items(copy.size(), "rates, as many as copy_GBps")) {
      at_once.quantize_Bps.push_back(read_bandwidth_GBps(x) * kGB);
    }
    form.ranks_at_once = std::move(at_once);
  }
  if (auto v = doc.get("other_measurements")) {
    if (!v->value().is_object()) v->fail("an object of named measurement sets");
    for (const auto& [key, member] : v->value().items()) {
      form.other_measurements[key] = read_set(v->child(member, key), n);
    }
  }
  if (auto v = doc.get("concurrent_probes")) {
    for (const auto& pv : v->items()) {
      pv.expect_object({"flows", "bandwidth_GBps", "spread"});
      ConcurrentProbe probe;
      const auto flows = pv.at("flows").items();
      if (flows.size() < 2) pv.at("flows").fail("at least two flows [from, to] measured at once");
      for (const auto& fv : flows) {
        const auto ends = fv.items(2, "GPU ids [from, to]");
        std::pair<std::string, std::string> flow{ends[0].as_string(), ends[1].as_string()};
        for (const auto* id : {&flow.first, &flow.second}) {
          if (std::find(form.gpus.begin(), form.gpus.end(), *id) == form.gpus.end()) fv.fail("GPU ids listed in \"gpus\"");
        }
        if (flow.first == flow.second) fv.fail("two different GPUs");
        probe.flows.push_back(flow);
      }
      for (const auto& bv : pv.at("bandwidth_GBps").items(flows.size(), "bandwidths, one per flow")) {
        probe.bandwidth_Bps.push_back(read_bandwidth_GBps(bv) * kGB);
      }
      if (auto sv = pv.get("spread")) {
        for (const auto& x : sv->items(flows.size(), "relative spreads, one per flow")) {
          probe.spread.push_back(x.as_number_in(0, 1e6, "a relative spread (0.03 = 3 %)"));
        }
      }
      form.concurrent_probes.push_back(std::move(probe));
    }
  }
  if (auto v = doc.get("nominal")) {
    v->expect_object({"pcie_GBps", "inter_socket_GBps", "nvlink_GBps_per_link", "basis"});
    // The topology of a nominal form is built from its classes: without them there is none.
    if (!form.topo_classes) {
      v->fail_message("nominal figures without \"topo_classes\"; expected the nvidia-smi topo -m classes the nominal "
                      "topology is built from");
    }
    NominalRates rates;
    rates.pcie_Bps = read_bandwidth_GBps(v->at("pcie_GBps")) * kGB;
    rates.inter_socket_Bps = read_bandwidth_GBps(v->at("inter_socket_GBps")) * kGB;
    rates.nvlink_Bps_per_link = read_bandwidth_GBps(v->at("nvlink_GBps_per_link")) * kGB;
    if (auto b = v->get("basis")) rates.basis = b->as_string();
    form.nominal = std::move(rates);
  }
  return form;
}

ordered_json matrix_form_to_json(const MatrixForm& form) {
  ordered_json out = ordered_json::object();
  out["name"] = form.name;
  if (!form.description.empty()) out["description"] = form.description;
  if (!form.source.empty()) out["source"] = form.source;
  out["gpus"] = form.gpus;
  out["bandwidth_GBps"] = matrix_to_json(form.bandwidth_Bps, kGB);
  out["bidirectional_GBps"] = form.bidirectional_Bps ? matrix_to_json(*form.bidirectional_Bps, kGB) : ordered_json(nullptr);
  out["latency_us"] = form.latency_s ? matrix_to_json(*form.latency_s, kUs) : ordered_json(nullptr);
  if (form.cpu_latency_s) out["cpu_latency_us"] = matrix_to_json(*form.cpu_latency_s, kUs);
  if (form.bandwidth_spread) out["bandwidth_spread"] = matrix_to_json(*form.bandwidth_spread, 1.0);
  if (form.bidirectional_spread) out["bidirectional_spread"] = matrix_to_json(*form.bidirectional_spread, 1.0);
  out["topo_classes"] = form.topo_classes ? ordered_json(*form.topo_classes) : ordered_json(nullptr);
  if (form.p2p_supported) out["p2p_supported"] = *form.p2p_supported;
  if (form.nvlink_sharp) out["nvlink_sharp"] = *form.nvlink_sharp;
  if (form.host_to_device_Bps) out["host_to_device_GBps"] = vector_to_json(*form.host_to_device_Bps, kGB);
  if (form.device_to_host_Bps) out["device_to_host_GBps"] = vector_to_json(*form.device_to_host_Bps, kGB);
  if (form.device_local_Bps) out["device_local_GBps"] = vector_to_json(*form.device_local_Bps, kGB);
  if (form.device_quantize_Bps) out["device_quantize_GBps"] = vector_to_json(*form.device_quantize_Bps, kGB);
  if (form.ranks_at_once) {
    out["ranks_at_once"] = {{"copy_GBps", vector_to_json(form.ranks_at_once->copy_Bps, kGB)},
                            {"quantize_GBps", vector_to_json(form.ranks_at_once->quantize_Bps, kGB)}};
  }
  if (!form.other_measurements.empty()) {
    ordered_json others = ordered_json::object();
    for (const auto& [name, set] : form.other_measurements) {
      ordered_json s = ordered_json::object();
      if (set.bandwidth_Bps) s["bandwidth_GBps"] = matrix_to_json(*set.bandwidth_Bps, kGB);
      if (set.bidirectional_Bps) s["bidirectional_GBps"] = matrix_to_json(*set.bidirectional_Bps, kGB);
      if (set.latency_s) s["latency_us"] = matrix_to_json(*set.latency_s, kUs);
      if (set.cpu_latency_s) s["cpu_latency_us"] = matrix_to_json(*set.cpu_latency_s, kUs);
      others[name] = s;
    }
    out["other_measurements"] = others;
  }
  if (!form.concurrent_probes.empty()) {
    ordered_json probes = ordered_json::array();
    for (const auto& p : form.concurrent_probes) {
      ordered_json flows = ordered_json::array();
      for (const auto& [a, b] : p.flows) flows.push_back({a, b});
      ordered_json bw = ordered_json::array();
      for (double x : p.bandwidth_Bps) bw.push_back(x / kGB);
      ordered_json probe = {{"flows", flows}, {"bandwidth_GBps", bw}};
      if (!p.spread.empty()) probe["spread"] = p.spread;
      probes.push_back(probe);
    }
    out["concurrent_probes"] = probes;
  }
  if (form.nominal) {
    out["nominal"] = {{"pcie_GBps", form.nominal->pcie_Bps / kGB},
                      {"inter_socket_GBps", form.nominal->inter_socket_Bps / kGB},
                      {"nvlink_GBps_per_link", form.nominal->nvlink_Bps_per_link / kGB},
                      {"basis", form.nominal->basis}};
  }
  return out;
}

}  // namespace gradsync::models
