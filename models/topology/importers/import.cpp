#include <algorithm>
#include "models/topology/importers/import.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "models/support/error.h"
#include "models/topology/hardware.h"
#include "models/topology/importers/parse_util.h"
#include "models/support/units.h"

namespace gradsync::models {
namespace {

using namespace importers;

const char* kNoBandwidthHint =
    "expected also the output of p2pBandwidthLatencyTest or nvbandwidth (import them together: gradsync import "
    "topo.txt p2p.txt)";

ParsedText parse_text(const std::string& text, const std::string& name) {
  ParsedText parsed;
  parsed.src = split_lines(text, name);
  check_utf8(parsed.src, "the printed output of " + join(supported_tools(), ", ") + " or nccl-tests (ASCII or UTF-8)");
  bool bandwidth_test = false;
  for (std::size_t pos = 0; pos < parsed.src.size();) {
    if (consume_p2p_test(parsed, pos) || consume_nvbandwidth(parsed, pos) || consume_nvidia_smi_topo(parsed, pos)) {
      continue;
    }
    const std::string_view line = trim(parsed.src.lines[pos]);
    if (!bandwidth_test && line.rfind("[CUDA Bandwidth Test]", 0) == 0) {
      bandwidth_test = true;
      parsed.notes.push_back(name + ": bandwidthTest output (line " + std::to_string(pos + 1) +
                             ") ignored: it measures one GPU at a time, not GPU pairs");
    }
    ++pos;
  }
  parsed.nccl_tests = scan_nccl_tests(parsed.src);
  if (NcclLogFacts log = read_nccl_log(parsed.src); !log.empty()) parsed.nccl_log = std::move(log);
  for (const auto& run : parsed.nccl_tests) {
    parsed.notes.push_back("nccl-tests " + run.describe() +
                           ": measured collective times, kept as records of the measured executor, not used for links");
  }
  finish_p2p_test(parsed);
  return parsed;
}

std::string file_stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of("/\\") == std::string::npos ? 0 : path.find_last_of("/\\") + 1);
  const auto dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base;
}

// One file: its stem. Several: what their stems share at the end ("topo-4gpu-2switch" and
// "p2p-4gpu-2switch" -> "4gpu-2switch"), else the first stem.
std::string default_name(const std::vector<ParsedText>& texts) {
  std::vector<std::string> stems;
  for (const auto& t : texts) stems.push_back(file_stem(t.src.name));
  if (stems.size() == 1) return stems.front().empty() ? "imported" : stems.front();
  std::string common = stems.front();
  for (const auto& s : stems) {
    std::size_t k = 0;
    while (k < common.size() && k < s.size() && common[common.size() - 1 - k] == s[s.size() - 1 - k]) ++k;
    common = common.substr(common.size() - k);
  }
  bool whole = false;
  for (const auto& s : stems) whole = whole || s == common;
  if (!whole) {
    const auto sep = common.find_first_of("-_.");
    common = sep == std::string::npos ? std::string() : common.substr(sep + 1);
  }
  return common.empty() ? stems.front() : common;
}

struct CountSource {
  const ParsedText* text;
  std::size_t line;
  std::string tool;
  std::size_t count;
  std::string where() const { return text->src.where(line); }
};

std::string names_of(const std::vector<ParsedText>& texts) {
  std::vector<std::string> names;
  for (const auto& t : texts) names.push_back(t.src.name);
  return join(names);
}

template <typename Get>
const ParsedText* single_holder(const std::vector<ParsedText>& texts, const std::string& tool, Get get) {
  const ParsedText* holder = nullptr;
  for (const auto& t : texts) {
    if (!get(t)) continue;
    if (holder) {
      throw InputError(t.src.where(get(t)->line) + ": a second " + tool + " output (the first is in " +
                       holder->src.where(get(*holder)->line) + "); expected one per import");
    }
    holder = &t;
  }
  return holder;
}

std::string gpu_id(std::size_t i) { return "gpu" + std::to_string(i); }

std::string gbps_text(double Bps) { return number_text(Bps / kGB) + " GB/s"; }

// nvidia-smi topo -m alone: each pair gets what NCCL's defaults credit the links its class
// crosses (topo.h / topo.cc, through models/topology/hardware.h), never a figure of this machine:
// PIX, PXB, PHB and NODE cross PCIe links only (the GPUs' own, a switch's uplink, a host
// bridge's), all at the GPUs' PCIe rate; SYS adds the link between CPU sockets; NV# is # NVLinks.
// `gpu` is the GPU model (nullptr: unknown), `gpu_origin` where it was named.
void make_nominal_form(MatrixForm& form, const hardware::GpuModel* gpu, const std::string& gpu_origin,
                       const ImportOptions& options, std::vector<std::string>& notes) {
  const auto& classes = *form.topo_classes;
  const std::size_t n = form.size();
  bool sys = false, nvlink = false;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      sys = sys || classes[i][j] == "SYS" || classes[i][j] == "SOC";
      nvlink = nvlink || nvlink_count(classes[i][j]) > 0;
    }
  }

  const std::string model = gpu ? std::string(gpu->name) + "'s" : "";
  int gen = 4;
  std::string gen_origin = "assumed";
  if (!options.pcie.empty()) {
    gen = options.pcie[3] - '0';
    gen_origin = "--pcie";
  } else if (gpu) {
    gen = gpu->pcie_gen;
    gen_origin = model;
  }
  int lanes = 16;
  std::string lanes_origin = "assumed";
  if (options.pcie_width) {
    lanes = *options.pcie_width;
    lanes_origin = "--pcie-width";
  } else if (gpu) {
    lanes = gpu->lanes;
    lanes_origin = model;
  }
  const std::string cpu = options.cpu.empty() ? "amd" : options.cpu;
  const int compute_capability = gpu ? gpu->compute_capability : 80;

  NominalRates rates;
  rates.pcie_Bps = hardware::pcie_GBps(gen, lanes) * kGB;
  rates.inter_socket_Bps = hardware::inter_socket_GBps(cpu) * kGB;
  rates.nvlink_Bps_per_link = hardware::nvlink_GBps_per_link(compute_capability) * kGB;

  form.bandwidth_Bps = PairMatrix(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j) form.bandwidth_Bps.at(i, j) = nominal_pair_Bps(rates, classes[i][j]);
    }
  }

  const std::string pcie_text = fmt::format("PCIe Gen{} x{} {}", gen, lanes, gbps_text(rates.pcie_Bps));
  const std::string cpu_name = cpu == "amd" ? "AMD" : cpu == "intel" ? "Intel" : "Arm";
  rates.basis = pcie_text + " per GPU link and switch uplink";
  if (sys) rates.basis += ", inter-socket " + gbps_text(rates.inter_socket_Bps) + " (" + cpu_name + ")";
  if (nvlink) {
    rates.basis += fmt::format(", NVLink {} per link (compute capability {}.{})", gbps_text(rates.nvlink_Bps_per_link),
                               compute_capability / 10, compute_capability % 10);
  }
  rates.basis += "; NCCL 2.30.7's figures (models/topology/hardware.h), not measured";

  notes.push_back("no bandwidth measured: every figure is NOMINAL, from the nvidia-smi topo -m classes (" + rates.basis + ")");
  std::string pcie_note = "nominal PCIe link of each GPU: " + pcie_text;
  if (gen_origin == lanes_origin) {
    pcie_note += gen_origin == "assumed" ? " assumed (GPU model unknown; --gpu-model, --pcie and --pcie-width give it)"
                                         : " (" + gen_origin + ", GPU model from " + gpu_origin + ")";
  } else {
    pcie_note += " (generation: " + gen_origin + ", width: " + lanes_origin + ")";
  }
  notes.push_back(pcie_note);
  if (sys) {
    notes.push_back("nominal link between CPU sockets (SYS pairs): " + gbps_text(rates.inter_socket_Bps) + ", " + cpu_name +
                    "'s" + (options.cpu.empty() ? " (CPU not given: NCCL's default; --cpu intel|arm)" : " (--cpu)"));
  }
  if (nvlink) {
    notes.push_back(fmt::format("nominal NVLink: {} per link, for compute capability {}.{}{}",
                                gbps_text(rates.nvlink_Bps_per_link), compute_capability / 10, compute_capability % 10,
                                gpu ? " (" + std::string(gpu->name) + ")" : " (GPU model unknown: assumed)"));
  }
  notes.push_back("nvidia-smi topo -m gives no latency: the links get the default latency (see the inference notes)");
  form.nominal = std::move(rates);
}

// A machine nccl-tests names but no tool measured: its GPUs from the "Using devices" lines (the run
// with the most devices on one host), and the classes between them that the GPU model's form
// factor documents. SXM modules are joined by NVLink: an 8-GPU (or larger) HGX board of A100 or
// later through NVSwitches (every GPU's links to the switches), a 4-GPU board directly (each pair
// a third of a GPU's links), V100's 8-GPU DGX-1 board as its hybrid cube mesh; PCIe cards by PCIe,
// their placement not known (taken as NODE: root ports of one CPU). Empty where no run names its GPUs.
struct NamedMachine {
  std::vector<std::vector<std::string>> classes;
  std::string gpu_name;
  std::string cpu_vendor;  // NCCL's log's, where it prints one
  std::vector<std::string> notes;
};

// The classes NCCL's own log gives the pairs of these devices (its path types by PCI bus), when it
// gives every pair: NVL as NV# (the links its bandwidth stands for at NCCL's per-link rate), PHB
// as NODE where it joins two host bridges of one CPU... NCCL prints PHB for both, topo -m's PHB is kept.
std::optional<std::vector<std::vector<std::string>>> classes_from_log(const std::vector<ParsedText>& texts, const NcclTestsRun& run,
                                                                       std::size_t n, int compute_capability) {
  const NcclLogFacts* log = nullptr;
  for (const auto& t : texts) {
    if (t.nccl_log && !t.nccl_log->gpu_paths.empty()) log = &*t.nccl_log;
  }
  if (!log || run.devices.size() != n) return std::nullopt;
  std::vector<int> bus;
  for (const auto& d : run.devices) bus.push_back(pci_bus_of(d.bus_id));
  std::vector<std::vector<std::string>> classes(n, std::vector<std::string>(n, "X"));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const auto it = log->gpu_paths.find({bus[i], bus[j]});
      if (it == log->gpu_paths.end()) return std::nullopt;
      const auto& [type, bw] = it->second;
      if (type == "NVL" || type == "NVB") {
        const double per_link = hardware::nvlink_GBps_per_link(compute_capability);
        classes[i][j] = "NV" + std::to_string(std::max(1L, std::lround(bw / per_link)));
      } else if (type == "PIX" || type == "PXB" || type == "PHB" || type == "SYS") {
        classes[i][j] = type;
      } else {
        return std::nullopt;
      }
    }
  }
  return classes;
}

std::optional<NamedMachine> machine_from_device_lines(const std::vector<ParsedText>& texts) {
  const NcclTestsRun* widest = nullptr;
  for (const auto& t : texts) {
    for (const auto& run : t.nccl_tests) {
      if (run.devices.empty() || run.devices.front().name.empty()) continue;
      bool one_host = true;
      for (const auto& d : run.devices) one_host = one_host && d.host == run.devices.front().host;
      if (one_host && (!widest || run.devices.size() > widest->devices.size())) widest = &run;
    }
  }
  if (!widest) return std::nullopt;
  std::size_t n = 0;
  for (const auto& d : widest->devices) n = std::max<std::size_t>(n, static_cast<std::size_t>(std::max(0, d.device)) + 1);
  if (n < 1 || n > 64) return std::nullopt;
  NamedMachine m;
  m.gpu_name = widest->devices.front().name;
  const hardware::GpuModel* gpu = hardware::gpu_model_of(m.gpu_name);
  m.classes.assign(n, std::vector<std::string>(n, "X"));
  const int links = gpu ? gpu->nvlinks : 0;
  const bool sxm = gpu && links != 0 && gpu->compute_capability >= 70;
  const int per_gpu = links > 0 ? links : gpu ? hardware::nvlinks_per_gpu(gpu->compute_capability) : 0;
  static const int kDgx1[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0},
                                  {2, 1, 2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                                  {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  std::string layout;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      std::string c = "NODE";
      if (sxm && gpu->compute_capability < 80 && n == 8) {
        c = kDgx1[i][j] > 0 ? "NV" + std::to_string(kDgx1[i][j]) : "SYS";
        layout = "DGX-1's hybrid cube mesh of NVLink (NV1 and NV2 pairs; the others across the CPUs)";
      } else if (sxm && n > 4) {
        c = "NV" + std::to_string(per_gpu);
        layout = "an HGX board: every GPU's " + std::to_string(per_gpu) + " NVLinks to the NVSwitches";
      } else if (sxm && n > 1) {
        c = "NV" + std::to_string(std::max(1, per_gpu / static_cast<int>(std::max<std::size_t>(n - 1, 1))));
        layout = "a " + std::to_string(n) + "-GPU board of direct NVLinks, " + c + " between each pair (no NVSwitch)";
      }
      m.classes[i][j] = c;
    }
  }
  if (layout.empty()) layout = "PCIe cards, each on its own root port of one CPU (NODE): their placement is not known";
  if (auto logged = classes_from_log(texts, *widest, n, gpu ? gpu->compute_capability : 80)) {
    m.classes = std::move(*logged);
    layout = "the paths NCCL's own log prints between them (its topology dump)";
  }
  for (const auto& t : texts) {
    if (t.nccl_log && !t.nccl_log->cpu_vendor.empty()) m.cpu_vendor = t.nccl_log->cpu_vendor;
  }
  m.notes.push_back("no tool measured this machine: " + std::to_string(n) + " GPUs named " + m.gpu_name + " by nccl-tests' device lines (" +
                    widest->where + "), taken as " + layout + (links < 0 ? " (the name does not say SXM or PCIe: SXM assumed)" : ""));
  return m;
}

ImportResult merge(const std::vector<ParsedText>& texts, const ImportOptions& options) {
  check_import_options(options);
  ImportResult result;
  for (const auto& t : texts) {
    for (const auto& tool : t.tools) {
      bool seen = false;
      for (const auto& s : result.tools_found) seen = seen || s == tool;
      if (!seen) result.tools_found.push_back(tool);
    }
  }
  std::optional<NamedMachine> named;
  if (result.tools_found.empty()) {
    named = machine_from_device_lines(texts);
    if (!named) {
      throw InputError(names_of(texts) +
                       ": no supported tool output found; expected the text output of p2pBandwidthLatencyTest (CUDA "
                       "samples), nvbandwidth, or nvidia-smi topo -m (or nccl-tests output whose device lines name the GPUs)");
    }
    result.tools_found.push_back("nccl-tests device lines");
  }

  const ParsedText* p2p = single_holder(texts, kP2pTool, [](const ParsedText& t) { return t.p2p ? &*t.p2p : nullptr; });
  const ParsedText* nvb = single_holder(texts, kNvbandwidthTool,
                                        [](const ParsedText& t) { return t.nvbandwidth ? &*t.nvbandwidth : nullptr; });
  const ParsedText* topo =
      single_holder(texts, kTopoTool, [](const ParsedText& t) { return t.topo ? &*t.topo : nullptr; });
  std::vector<std::pair<const ParsedText*, const SmiP2pOutput*>> topo_p2p;
  for (const auto& t : texts) {
    for (const auto& table : t.topo_p2p) {
      for (const auto& [other_text, other] : topo_p2p) {
        if (other->capability == table.capability) {
          throw InputError(t.src.where(table.line) + ": a second nvidia-smi topo -p2p " + table.capability +
                           " table (the first is in " + other_text->src.where(other->line) +
                           "); expected one per capability");
        }
      }
      topo_p2p.emplace_back(&t, &table);
    }
  }

  // Every tool must have seen the same number of GPUs.
  std::vector<CountSource> counts;
  if (p2p && p2p->p2p->gpu_count) counts.push_back({p2p, p2p->p2p->line, kP2pTool, p2p->p2p->gpu_count});
  if (nvb && nvb->nvbandwidth->gpu_count) {
    counts.push_back({nvb, nvb->nvbandwidth->gpu_count_line, kNvbandwidthTool, nvb->nvbandwidth->gpu_count});
  }
  if (topo) counts.push_back({topo, topo->topo->line, kTopoTool, topo->topo->gpu_count});
  for (const auto& [t, table] : topo_p2p) {
    counts.push_back({t, table->line, kTopoP2pTool + std::string(table->capability.empty() ? "" : " ") + table->capability,
                      table->gpu_count});
  }
  for (const auto& c : counts) {
    const auto& first = counts.front();
    if (c.count != first.count) {
      throw InputError(c.where() + ": " + c.tool + " shows " + std::to_string(c.count) + " GPUs, but " + first.tool +
                       " (" + first.where() + ") shows " + std::to_string(first.count) +
                       "; expected the outputs of one machine, which agree on the number of GPUs");
    }
  }

  // Bandwidth: p2pBandwidthLatencyTest, else nvbandwidth.
  ToolMeasurements p2pm = p2p ? p2p_test_measurements(*p2p, options.p2p_enabled) : ToolMeasurements{};
  ToolMeasurements nvbm = nvb ? nvbandwidth_measurements(*nvb) : ToolMeasurements{};
  const bool p2p_has = p2p && p2pm.main.bandwidth_Bps;
  const bool nvb_has = nvb && nvbm.main.bandwidth_Bps;
  const bool nominal = !p2p_has && !nvb_has;
  if (nominal) {
    if (p2p || nvb) {
      const ParsedText* t = p2p ? p2p : nvb;
      const auto& reason = p2p ? p2pm.no_bandwidth_reason : nvbm.no_bandwidth_reason;
      throw InputError(t->src.name + ": no GPU-to-GPU bandwidth measurement: " +
                       reason.value_or("no bandwidth table was found") +
                       "; expected the bandwidth matrices of p2pBandwidthLatencyTest or nvbandwidth's "
                       "device_to_device_memcpy_* test cases");
    }
    if (!topo && !named) {
      std::vector<std::string> holders;
      for (const auto& t : texts) {
        if (!t.topo_p2p.empty()) holders.push_back(t.src.name);
      }
      throw InputError(join(holders) + ": holds \"nvidia-smi topo -p2p\" results but no bandwidth measurement nor "
                       "nvidia-smi topo -m classes; " + kNoBandwidthHint);
    }
  }

  MatrixForm& form = result.form;
  std::vector<std::string> notes;
  std::size_t n = 0;
  if (nominal) {
    // The bandwidth matrix comes once the GPU model is known (below, with the names).
    n = topo ? topo->topo->gpu_count : named->classes.size();
    for (std::size_t i = 0; i < n; ++i) form.gpus.push_back(gpu_id(i));
  } else {
    ToolMeasurements& main = p2p_has ? p2pm : nvbm;
    ToolMeasurements* secondary = nullptr;
    if (p2p_has && nvb) secondary = &nvbm;
    if (!p2p_has && p2p) secondary = &p2pm;
    if (main.missing_pair_error) throw InputError(*main.missing_pair_error);

    n = main.main.bandwidth_Bps->size();
    for (std::size_t i = 0; i < n; ++i) form.gpus.push_back(gpu_id(i));
    form.bandwidth_Bps = *main.main.bandwidth_Bps;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j && !form.bandwidth_Bps.at(i, j)) {
          throw InputError((p2p_has ? p2p : nvb)->src.name + ": " + main.tool + " gives no bandwidth from " + gpu_id(i) +
                           " to " + gpu_id(j) + "; expected every GPU pair measured");
        }
      }
    }
    notes = main.notes;
    if (secondary) notes.insert(notes.end(), secondary->notes.begin(), secondary->notes.end());
    notes.push_back("bandwidth_GBps (the matrix the topology is inferred from) comes from " + main.tool);

    // Fill what the main tool lacks from the other one.
    auto pick_matrix = [&](std::optional<PairMatrix> MeasurementSet::*field, const char* name) {
      if (main.main.*field) return main.main.*field;
      if (secondary && secondary->main.*field) {
        notes.push_back(std::string(name) + " comes from " + secondary->tool + " (" + main.tool + " has none)");
        return secondary->main.*field;
      }
      return std::optional<PairMatrix>{};
    };
    form.bidirectional_Bps = pick_matrix(&MeasurementSet::bidirectional_Bps, "bidirectional_GBps");
    form.latency_s = pick_matrix(&MeasurementSet::latency_s, "latency_us");
    form.cpu_latency_s = pick_matrix(&MeasurementSet::cpu_latency_s, "cpu_latency_us");
    auto pick_vector = [&](std::optional<std::vector<double>> ToolMeasurements::*field, const char* name) {
      if (main.*field) return main.*field;
      if (secondary && secondary->*field) {
        notes.push_back(std::string(name) + " comes from " + secondary->tool);
        return secondary->*field;
      }
      return std::optional<std::vector<double>>{};
    };
    form.host_to_device_Bps = pick_vector(&ToolMeasurements::host_to_device_Bps, "host_to_device_GBps");
    form.device_to_host_Bps = pick_vector(&ToolMeasurements::device_to_host_Bps, "device_to_host_GBps");
    form.device_local_Bps = pick_vector(&ToolMeasurements::device_local_Bps, "device_local_GBps");
    form.other_measurements = main.others;
    if (secondary) {
      for (const auto& [key, set] : secondary->others) form.other_measurements[key] = set;
      const MeasurementSet& s = secondary->main;
      if (s.bandwidth_Bps || s.bidirectional_Bps || s.latency_s || s.cpu_latency_s) {
        form.other_measurements[secondary->tool] = s;
        notes.push_back("the " + secondary->tool + " matrices are kept in other_measurements." + secondary->tool);
      }
    }
    // Flows at once: nvbandwidth's all-to-one / one-to-all probes, against the pairs alone of
    // the main tool.
    for (const ToolMeasurements* m : {&main, secondary}) {
      if (!m || m->concurrent_probes.empty()) continue;
      form.concurrent_probes.insert(form.concurrent_probes.end(), m->concurrent_probes.begin(), m->concurrent_probes.end());
      if (m != &main) {
        notes.push_back("concurrent_probes come from " + m->tool + ", compared with " + main.tool + "'s pairs measured alone");
      }
    }
    if (!form.host_to_device_Bps && !form.device_to_host_Bps) {
      notes.push_back("no host<->device bandwidth in the input (nvbandwidth's host_to_device_memcpy_ce and "
                      "device_to_host_memcpy_ce give it)");
    }

    std::vector<std::string> unused;
    if (!options.pcie.empty()) unused.push_back("--pcie");
    if (options.pcie_width) unused.push_back("--pcie-width");
    if (!options.cpu.empty()) unused.push_back("--cpu");
    if (!unused.empty()) {
      notes.push_back(join(unused) + " not used: the links come from measurements (nominal figures are for nvidia-smi "
                      "topo -m alone)");
    }
  }

  if (named) {
    form.topo_classes = named->classes;
    notes.insert(notes.end(), named->notes.begin(), named->notes.end());
  }
  if (topo) {
    form.topo_classes = topo->topo->classes;
    notes.push_back("topo_classes from nvidia-smi topo -m");
    for (std::size_t d = 0; d < topo->topo->other_devices.size(); ++d) {
      const auto& pairs = topo->topo->device_pair_classes;
      result.devices.push_back({topo->topo->other_devices[d], topo->topo->device_classes[d],
                                pairs ? (*pairs)[d] : std::vector<std::string>{}});
    }
    notes.insert(notes.end(), topo->topo->notes.begin(), topo->topo->notes.end());
  }

  // Peer access: the p2p test's connectivity matrix, else nvidia-smi topo -p2p (p, r, w).
  if (p2p && p2p->p2p->connectivity) {
    form.p2p_supported = *p2p->p2p->connectivity;
    notes.push_back("p2p_supported from p2pBandwidthLatencyTest's P2P Connectivity Matrix");
    if (!topo_p2p.empty()) notes.push_back("nvidia-smi topo -p2p not used for p2p_supported (the p2p test's own matrix wins)");
  } else if (!topo_p2p.empty()) {
    std::vector<std::vector<bool>> ok(n, std::vector<bool>(n, true));
    std::vector<std::string> used, ignored;
    for (const auto& [t, table] : topo_p2p) {
      const std::string name = std::string(kTopoP2pTool) + (table->capability.empty() ? "" : " " + table->capability);
      if (table->capability == "n" || table->capability == "a") {
        ignored.push_back(name);
        continue;
      }
      used.push_back(name);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          if (i != j && table->status[i][j] != "OK") ok[i][j] = false;
        }
      }
    }
    if (!used.empty()) {
      form.p2p_supported = std::move(ok);
      notes.push_back("p2p_supported from " + join(used) + " (OK = supported)");
    }
    if (!ignored.empty()) {
      notes.push_back(join(ignored) + " ignored (NVLink / atomics capability, not peer access in general)");
    }
  }

  // Names.
  form.name = options.name.empty() ? default_name(texts) : options.name;
  std::vector<std::string> parts;
  for (const auto& t : texts) {
    if (t.tools.empty()) continue;
    parts.push_back(join(t.tools, " + ") + " from " + t.src.name);
  }
  form.source = join(parts, " + ");
  std::string gpu_origin;
  if (p2p && !p2p->p2p->device_names.empty()) {
    const auto& names = p2p->p2p->device_names;
    bool same = true;
    for (const auto& d : names) same = same && d == names.front();
    form.description = same ? std::to_string(names.size()) + " x " + names.front() : join(names);
    gpu_origin = "p2pBandwidthLatencyTest's device names";
  } else {
    // nccl-tests' "Using devices" lines name the GPUs when no other tool did.
    // A run on every GPU names them in order; else runs on some of them, all of one model, name it.
    std::vector<std::string> names;
    for (const auto& t : texts) {
      for (const auto& run : t.nccl_tests) {
        if (names.empty() && run.devices.size() == n) {
          for (const auto& d : run.devices) names.push_back(d.name);
        }
      }
    }
    if (names.empty()) {
      std::vector<std::string> seen;
      for (const auto& t : texts) {
        for (const auto& run : t.nccl_tests) {
          for (const auto& d : run.devices) {
            if (!d.name.empty()) seen.push_back(d.name);
          }
        }
      }
      const bool one_model = !seen.empty() && std::all_of(seen.begin(), seen.end(), [&](const std::string& d) { return d == seen.front(); });
      if (one_model) names.assign(n, seen.front());
    }
    const bool same = !names.empty() && std::all_of(names.begin(), names.end(), [&](const std::string& d) {
      return d == names.front();
    });
    form.description = same ? std::to_string(n) + " x " + names.front() : std::to_string(n) + " GPUs";
    if (same) {
      notes.push_back("GPU model from nccl-tests' device lines: " + names.front());
      gpu_origin = "nccl-tests' device lines";
    }
  }
  if (!options.gpu_model.empty()) {
    // The user's word wins over the files' (the description is what the models read the GPU from).
    const hardware::GpuModel* named = hardware::gpu_model_of(form.description);
    const hardware::GpuModel* given = hardware::gpu_model_of(options.gpu_model);
    notes.push_back("GPU model from --gpu-model: " + options.gpu_model +
                    (named && named != given ? std::string(" (the files name ") + named->name + ")" : ""));
    form.description = std::to_string(n) + " x " + options.gpu_model;
    gpu_origin = "--gpu-model";
  }

  if (nominal) {
    // NCCL's log names the CPU maker where the options do not (its link between sockets).
    ImportOptions nominal_options = options;
    if (named && nominal_options.cpu.empty() && (named->cpu_vendor == "amd" || named->cpu_vendor == "intel" || named->cpu_vendor == "arm")) {
      nominal_options.cpu = named->cpu_vendor;
      notes.push_back("CPU maker from NCCL's log: " + named->cpu_vendor);
    }
    make_nominal_form(form, hardware::gpu_model_of(form.description), gpu_origin, nominal_options, notes);
    // Every place a topology is named says it: the name (predict's and compare's headers,
    // the records), the description and the source.
    if (options.name.empty()) form.name += "-nominal";
    form.description += named ? " (nominal: classes the GPU model documents, at NCCL's documented link rates)"
                              : " (nominal: nvidia-smi topo -m classes at NCCL's documented link rates)";
    form.source += " (nominal figures: " + form.nominal->basis + ")";
    if (!form.p2p_supported) {
      notes.push_back("peer access unknown (no P2P Connectivity Matrix of p2pBandwidthLatencyTest, no nvidia-smi topo "
                      "-p2p p): p2p_supported left out, the models assume the driver allows it");
    }
  }

  // NCCL's log says whether the GPUs' NVSwitch offers NVLink SHARP (NVLS): every GPU's line must.
  for (const auto& t : texts) {
    if (!t.nccl_log || !t.nccl_log->nvls) continue;
    form.nvlink_sharp = form.nvlink_sharp ? (*form.nvlink_sharp && *t.nccl_log->nvls) : *t.nccl_log->nvls;
  }
  if (form.nvlink_sharp) {
    notes.push_back(std::string("NVLink SHARP from NCCL's log: NVLS multicast ") + (*form.nvlink_sharp ? "available" : "not available") +
                    " (an NVSwitch's fact; nvlink_sharp)");
  }
  for (const auto& t : texts) {
    notes.insert(notes.end(), t.notes.begin(), t.notes.end());
    if (t.tools.empty()) notes.push_back(t.src.name + ": no supported tool output in this file");
  }
  result.notes = std::move(notes);
  for (const auto& t : texts) result.nccl_tests.insert(result.nccl_tests.end(), t.nccl_tests.begin(), t.nccl_tests.end());
  return result;
}

}  // namespace

void check_import_options(const ImportOptions& o) {
  if (!o.pcie.empty() && !(o.pcie.size() == 4 && o.pcie.rfind("gen", 0) == 0 && o.pcie[3] >= '3' && o.pcie[3] <= '6')) {
    throw InputError("--pcie " + quote_token(o.pcie) + ": not a PCIe generation gradsync knows; expected gen3, gen4, gen5 "
                     "or gen6 (the generation of the GPUs' PCIe links)");
  }
  if (o.pcie_width) {
    const int w = *o.pcie_width;
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16 && w != 32) {
      throw InputError("--pcie-width " + std::to_string(w) + ": not a PCIe link width; expected 1, 2, 4, 8, 16 or 32 "
                       "(lanes of each GPU's link)");
    }
  }
  if (!o.cpu.empty() && o.cpu != "amd" && o.cpu != "intel" && o.cpu != "arm") {
    throw InputError("--cpu " + quote_token(o.cpu) + ": not a CPU maker gradsync knows; expected amd, intel or arm (whose "
                     "inter-socket link the SYS pairs cross)");
  }
  if (!o.gpu_model.empty() && !hardware::gpu_model_of(o.gpu_model)) {
    throw InputError("--gpu-model " + quote_token(o.gpu_model) + ": not a GPU model gradsync knows (models/topology/hardware.cpp); "
                     "expected a name such as \"RTX 4090\", \"A100\" or \"H100\" (for a GPU not listed, leave "
                     "--gpu-model out and give --pcie and --pcie-width)");
  }
}

const std::vector<std::string>& supported_tools() {
  static const std::vector<std::string> tools = {"p2pBandwidthLatencyTest (CUDA samples)", "nvbandwidth",
                                                 "nvidia-smi topo -m (and -p2p)"};
  return tools;
}

ImportResult import_tool_output(const std::string& text, const std::string& source_name, const ImportOptions& options) {
  std::vector<ParsedText> texts;
  texts.push_back(parse_text(text, source_name));
  return merge(texts, options);
}

ImportResult import_tool_files(const std::vector<std::string>& paths, const ImportOptions& options) {
  if (paths.empty()) {
    throw InputError("no input files; expected one or more files holding the output of p2pBandwidthLatencyTest, "
                     "nvbandwidth or nvidia-smi topo -m");
  }
  std::vector<ParsedText> texts;
  for (const auto& path : paths) texts.push_back(parse_text(read_text_file(path), path));
  return merge(texts, options);
}

}  // namespace gradsync::models
