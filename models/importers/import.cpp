#include <algorithm>
#include "models/importers/import.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "models/error.h"
#include "models/importers/parse_util.h"

namespace gradsync::models {
namespace {

using namespace importers;

const char* kNoBandwidthHint =
    "expected also the output of p2pBandwidthLatencyTest or nvbandwidth (import them together: gradsync import "
    "topo.txt p2p.txt)";

// Tool outputs are ASCII / UTF-8 text; anything else (a binary file, a stray byte in a
// device name) is refused here, before it reaches the JSON written for the import.
void check_utf8(const SourceText& src) {
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::string& line = src.lines[i];
    for (std::size_t k = 0; k < line.size();) {
      const auto b = static_cast<unsigned char>(line[k]);
      std::size_t len = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
      bool ok = len > 0 && k + len <= line.size();
      for (std::size_t m = 1; ok && m < len; ++m) ok = (static_cast<unsigned char>(line[k + m]) & 0xC0) == 0x80;
      if (ok && len > 2) {  // no overlong forms, surrogates or code points above U+10FFFF
        const auto b1 = static_cast<unsigned char>(line[k + 1]);
        ok = !(b == 0xE0 && b1 < 0xA0) && !(b == 0xED && b1 > 0x9F) && !(b == 0xF0 && b1 < 0x90) && !(b == 0xF4 && b1 > 0x8F);
      }
      if (!ok) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(b));
        src.fail(i, std::string("byte ") + hex + " at column " + std::to_string(k + 1) +
                        " is not UTF-8 text; expected the text output of p2pBandwidthLatencyTest, nvbandwidth or "
                        "nvidia-smi topo (ASCII or UTF-8)");
      }
      k += len;
    }
  }
}

ParsedText parse_text(const std::string& text, const std::string& name) {
  ParsedText parsed;
  parsed.src = split_lines(text, name);
  check_utf8(parsed.src);
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

ImportResult merge(const std::vector<ParsedText>& texts, const ImportOptions& options) {
  ImportResult result;
  for (const auto& t : texts) {
    for (const auto& tool : t.tools) {
      bool seen = false;
      for (const auto& s : result.tools_found) seen = seen || s == tool;
      if (!seen) result.tools_found.push_back(tool);
    }
  }
  if (result.tools_found.empty()) {
    throw InputError(names_of(texts) +
                     ": no supported tool output found; expected the text output of p2pBandwidthLatencyTest (CUDA "
                     "samples), nvbandwidth, or nvidia-smi topo -m");
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
  if (!p2p_has && !nvb_has) {
    if (p2p || nvb) {
      const ParsedText* t = p2p ? p2p : nvb;
      const auto& reason = p2p ? p2pm.no_bandwidth_reason : nvbm.no_bandwidth_reason;
      throw InputError(t->src.name + ": no GPU-to-GPU bandwidth measurement: " +
                       reason.value_or("no bandwidth table was found") +
                       "; expected the bandwidth matrices of p2pBandwidthLatencyTest or nvbandwidth's "
                       "device_to_device_memcpy_* test cases");
    }
    std::vector<std::string> holders;
    for (const auto& t : texts) {
      if (t.topo || !t.topo_p2p.empty()) holders.push_back(t.src.name);
    }
    const std::string what = topo ? "\"nvidia-smi topo -m\" classes" : "\"nvidia-smi topo -p2p\" results";
    throw InputError(join(holders) + ": holds " + what + " but no bandwidth measurement; " + kNoBandwidthHint);
  }
  ToolMeasurements& main = p2p_has ? p2pm : nvbm;
  ToolMeasurements* secondary = nullptr;
  if (p2p_has && nvb) secondary = &nvbm;
  if (!p2p_has && p2p) secondary = &p2pm;
  if (main.missing_pair_error) throw InputError(*main.missing_pair_error);

  MatrixForm& form = result.form;
  const std::size_t n = main.main.bandwidth_Bps->size();
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
  std::vector<std::string> notes = main.notes;
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
  if (!form.host_to_device_Bps && !form.device_to_host_Bps) {
    notes.push_back("no host<->device bandwidth in the input (nvbandwidth's host_to_device_memcpy_ce and "
                    "device_to_host_memcpy_ce give it)");
  }

  if (topo) {
    form.topo_classes = topo->topo->classes;
    notes.push_back("topo_classes from nvidia-smi topo -m");
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
  if (p2p && !p2p->p2p->device_names.empty()) {
    const auto& names = p2p->p2p->device_names;
    bool same = true;
    for (const auto& d : names) same = same && d == names.front();
    form.description = same ? std::to_string(names.size()) + " x " + names.front() : join(names);
  } else {
    // nccl-tests' "Using devices" lines name the GPUs when no other tool did.
    std::vector<std::string> names;
    for (const auto& t : texts) {
      for (const auto& run : t.nccl_tests) {
        if (names.empty() && run.devices.size() == n) {
          for (const auto& d : run.devices) names.push_back(d.name);
        }
      }
    }
    const bool same = !names.empty() && std::all_of(names.begin(), names.end(), [&](const std::string& d) {
      return d == names.front();
    });
    form.description = same ? std::to_string(n) + " x " + names.front() : std::to_string(n) + " GPUs";
    if (same) notes.push_back("GPU model from nccl-tests' device lines: " + names.front());
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
