// CUDA samples p2pBandwidthLatencyTest (Samples/5_Domain_Specific/p2pBandwidthLatencyTest).
//
//   [P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
//   Device: 0, NVIDIA GeForce RTX 2080 Ti, pciBusID: b4, pciDeviceID: 0, pciDomainID:0
//   Device=0 CANNOT Access Peer Device=1
//   P2P Connectivity Matrix
//        D\D     0     1
//        0	     1     0
//   Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)
//      D\D     0      1
//        0 541.84   5.71
//   ... Unidirectional P2P=Enabled Bandwidth (P2P Writes), Bidirectional P2P=Disabled / Enabled,
//   P2P=Disabled Latency Matrix (us) and P2P=Enabled Latency (P2P Writes) Matrix (us), each
//   latency one "GPU" table and one "CPU" table. With --p2p_read there are also
//   "(P2P Reads)" variants. Entry [i][j] is a copy from device i to device j (row = sender).
#include <regex>

#include "models/support/error.h"
#include "models/topology/importers/parse_util.h"
#include "models/support/units.h"

namespace gradsync::models::importers {
namespace {

const std::regex kDevice(R"(^Device: (\d+), (.*), pciBusID: ([0-9a-fA-F]+),.*$)");
const std::regex kAccess(R"(^Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)$)");
const std::regex kBandwidthTitle(
    R"(^(Unidirectional|Bidirectional) P2P=(Enabled|Disabled) Bandwidth (?:\(P2P (Writes|Reads)\) )?Matrix \(GB/s\)$)");
const std::regex kLatencyTitle(R"(^P2P=(Enabled|Disabled) Latency (?:\(P2P (Writes|Reads)\) )?Matrix \(us\)$)");
const char* kBanner = "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]";

std::string set_key(const std::string& enabled, const std::string& method) {
  if (enabled == "Disabled") return "p2p_disabled";
  return method == "Reads" ? "p2p_enabled_reads" : "p2p_enabled";
}

P2pTestOutput& p2p_output(ParsedText& parsed, std::size_t line) {
  if (!parsed.p2p) {
    parsed.p2p.emplace();
    parsed.p2p->line = line;
    parsed.found(kP2pTool);
  }
  return *parsed.p2p;
}

// Table spec for one matrix; fixes the GPU count from the first table when no Device lines came first.
TableSpec spec_for(const P2pTestOutput& out, const std::string& title, std::vector<std::string> corners) {
  TableSpec spec;
  spec.title = title;
  spec.labels = TableLabels::index;
  spec.corners = std::move(corners);
  if (out.gpu_count) {
    spec.columns = out.gpu_count;
    spec.columns_origin = out.device_names.empty() ? "as in the tables before it"
                                                   : "one per GPU listed in the \"Device: N, ...\" lines";
  }
  return spec;
}

void remember_title(const ParsedText& parsed, P2pTestOutput& out, const std::string& title, std::size_t line) {
  auto [it, inserted] = out.table_lines.emplace(title, line);
  if (!inserted) {
    parsed.src.fail(line, "a second table \"" + title + "\" (the first is at line " + std::to_string(it->second + 1) +
                              "); expected one p2pBandwidthLatencyTest output per file");
  }
}

void set_count(P2pTestOutput& out, const Table& t) {
  if (!out.gpu_count) out.gpu_count = t.columns;
}

const NumberRules kBandwidth{"a bandwidth in GB/s", kGB, false, true, kMaxBandwidth_GBps, kMinBandwidth_GBps,
                             "between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"};
const NumberRules kLatency{"a latency in us", kUs, false, false, kMaxLatency_us, 0, "of at most 1e+09 (1000 s)"};

}  // namespace

bool consume_p2p_test(ParsedText& parsed, std::size_t& pos) {
  const SourceText& src = parsed.src;
  const std::string line(trim(src.lines[pos]));
  std::smatch m;

  if (line == kBanner) {
    if (parsed.p2p && !parsed.p2p->table_lines.empty()) {
      src.fail(pos, "a second p2pBandwidthLatencyTest output (the first starts at line " +
                        std::to_string(parsed.p2p->line + 1) + "); expected one per file");
    }
    p2p_output(parsed, pos);
    ++pos;
    return true;
  }
  if (std::regex_match(line, m, kDevice)) {
    auto& out = p2p_output(parsed, pos);
    const auto index = parse_index(m[1].str());
    if (!out.table_lines.empty()) {
      src.fail(pos, "a \"Device: N, ...\" line after the tables; expected the device list before them");
    }
    if (!index || *index != out.device_names.size()) {
      src.fail(pos, quote_token(m[1].str()) + " is out of order in the device list; expected device " +
                        std::to_string(out.device_names.size()));
    }
    out.device_names.push_back(std::string(trim(m[2].str())));
    out.gpu_count = out.device_names.size();
    ++pos;
    return true;
  }
  if (std::regex_match(line, m, kAccess)) {
    p2p_output(parsed, pos);  // checked in finish_p2p_test, once the GPU count is known
    ++pos;
    return true;
  }
  if (parsed.p2p && (line.rfind("***NOTE: In case a device doesn't have P2P access", 0) == 0 ||
                     line.rfind("So you can see lesser Bandwidth (GB/s)", 0) == 0 ||
                     line.rfind("NOTE: The CUDA Samples are not meant for performance", 0) == 0)) {
    ++pos;
    return true;
  }

  if (line == "P2P Connectivity Matrix") {
    auto& out = p2p_output(parsed, pos);
    remember_title(parsed, out, line, pos);
    ++pos;
    const Table t = read_table(src, pos, spec_for(out, line, {"D\\D"}));
    set_count(out, t);
    const auto values = table_numbers(src, t, {"1 (peer access) or 0 (none)", 1.0, false, false});
    std::vector<std::vector<bool>> access(t.columns, std::vector<bool>(t.columns, false));
    for (std::size_t i = 0; i < t.columns; ++i) {
      for (std::size_t j = 0; j < t.columns; ++j) {
        const double v = *values[i][j];
        if (v != 0 && v != 1) {
          src.fail(t.row_lines[i], quote_token(t.cells[i][j]) + " is not a connectivity flag; expected 1 (peer access) or 0 (none)");
        }
        access[i][j] = i == j || v == 1;
      }
    }
    out.connectivity = std::move(access);
    return true;
  }

  if (std::regex_match(line, m, kBandwidthTitle)) {
    auto& out = p2p_output(parsed, pos);
    remember_title(parsed, out, line, pos);
    const bool bidirectional = m[1] == "Bidirectional";
    const std::string key = set_key(m[2].str(), m[3].str());
    ++pos;
    const Table t = read_table(src, pos, spec_for(out, line, {"D\\D"}));
    set_count(out, t);
    auto numbers = square_numbers(src, t, kBandwidth);
    auto& set = out.sets[key];
    if (bidirectional) {
      set.bidirectional_Bps = std::move(numbers.pairs);
    } else {
      set.bandwidth_Bps = std::move(numbers.pairs);
      out.local_Bps[key] = std::move(numbers.diagonal);
    }
    return true;
  }

  if (std::regex_match(line, m, kLatencyTitle)) {
    auto& out = p2p_output(parsed, pos);
    remember_title(parsed, out, line, pos);
    const std::string key = set_key(m[1].str(), m[2].str());
    const std::size_t title_line = pos;
    ++pos;
    const Table gpu = read_table(src, pos, spec_for(out, line + ", GPU table", {"GPU"}));
    set_count(out, gpu);
    auto& set = out.sets[key];
    set.latency_s = square_numbers(src, gpu, kLatency).pairs;
    std::size_t next = pos;
    while (next < src.size() && is_blank(src.lines[next])) ++next;
    if (next < src.size() && looks_like_header(src.lines[next], TableLabels::index, {"CPU"}) &&
        tokens(src.lines[next]).front() == "CPU") {
      pos = next;
      const Table cpu = read_table(src, pos, spec_for(out, line + ", CPU table", {"CPU"}));
      set.cpu_latency_s = square_numbers(src, cpu, kLatency).pairs;
    } else {
      out.notes.push_back("\"" + line + "\" (line " + std::to_string(title_line + 1) +
                          ") has no CPU table after its GPU table; no CPU-side latency for that variant");
    }
    return true;
  }
  return false;
}

void finish_p2p_test(ParsedText& parsed) {
  if (!parsed.p2p) return;
  auto& out = *parsed.p2p;
  const SourceText& src = parsed.src;
  // The CAN / CANNOT lines: connectivity when the matrix is missing, a cross-check otherwise.
  std::smatch m;
  std::vector<std::tuple<std::size_t, std::size_t, bool, std::size_t>> access;  // i, j, can, line
  for (std::size_t k = out.line; k < src.size(); ++k) {
    const std::string line(trim(src.lines[k]));
    if (!std::regex_match(line, m, kAccess)) continue;
    const auto i = parse_index(m[1].str()), j = parse_index(m[3].str());
    if (!i || !j || (out.gpu_count && (*i >= out.gpu_count || *j >= out.gpu_count))) {
      src.fail(k, "\"" + line + "\" names a device outside 0.." + std::to_string(out.gpu_count ? out.gpu_count - 1 : 0) +
                      "; expected devices from the \"Device: N, ...\" list");
    }
    access.emplace_back(*i, *j, m[2] == "CAN", k);
  }
  if (!out.connectivity && !access.empty() && out.gpu_count) {
    std::vector<std::vector<bool>> c(out.gpu_count, std::vector<bool>(out.gpu_count, false));
    for (std::size_t i = 0; i < out.gpu_count; ++i) c[i][i] = true;
    for (const auto& [i, j, can, line] : access) c[i][j] = can;
    out.connectivity = std::move(c);
    out.notes.push_back("peer access taken from the \"Device=i CAN/CANNOT Access Peer Device=j\" lines (no P2P Connectivity Matrix)");
  } else if (out.connectivity) {
    for (const auto& [i, j, can, line] : access) {
      if (i < out.connectivity->size() && (*out.connectivity)[i][j] != can) {
        out.notes.push_back("line " + std::to_string(line + 1) + " says device " + std::to_string(i) +
                            (can ? " CAN" : " CANNOT") + " access device " + std::to_string(j) +
                            ", the P2P Connectivity Matrix says otherwise; the matrix was used");
      }
    }
  }
}

ToolMeasurements p2p_test_measurements(const ParsedText& parsed, bool p2p_enabled) {
  ToolMeasurements r;
  r.tool = kP2pTool;
  if (!parsed.p2p) return r;
  const auto& out = *parsed.p2p;
  const SourceText& src = parsed.src;
  const std::string chosen = p2p_enabled ? "p2p_enabled" : "p2p_disabled";
  const std::string other = p2p_enabled ? "p2p_disabled" : "p2p_enabled";
  const std::string chosen_text = p2p_enabled ? "P2P=Enabled (P2P Writes)" : "P2P=Disabled";
  const std::string other_text = p2p_enabled ? "P2P=Disabled" : "P2P=Enabled";

  const auto has_bandwidth = [&](const std::string& key) {
    auto it = out.sets.find(key);
    return it != out.sets.end() && it->second.bandwidth_Bps;
  };
  if (!has_bandwidth(chosen)) {
    if (has_bandwidth(other) || has_bandwidth("p2p_enabled_reads")) {
      throw InputError(src.name + ": the p2pBandwidthLatencyTest output (line " + std::to_string(out.line + 1) +
                       ") has no \"Unidirectional " +
                       (p2p_enabled ? "P2P=Enabled Bandwidth (P2P Writes)" : "P2P=Disabled Bandwidth") +
                       " Matrix (GB/s)\" table; expected it, or import the " + other_text + " tables instead (" +
                       (p2p_enabled ? "gradsync import --p2p disabled, ImportOptions::p2p_enabled = false"
                                    : "gradsync import --p2p enabled, ImportOptions::p2p_enabled = true") + ")");
    }
    r.no_bandwidth_reason = "its p2pBandwidthLatencyTest output (line " + std::to_string(out.line + 1) +
                            ") holds no \"Unidirectional P2P=... Bandwidth Matrix (GB/s)\" table";
  }

  if (auto it = out.sets.find(chosen); it != out.sets.end()) r.main = it->second;
  for (const auto& [key, set] : out.sets) {
    if (key != chosen) r.others[key] = set;
  }

  std::vector<std::string> used;
  if (r.main.bandwidth_Bps) used.push_back("bandwidth_GBps");
  if (r.main.bidirectional_Bps) used.push_back("bidirectional_GBps");
  if (r.main.latency_s) used.push_back("latency_us");
  if (r.main.cpu_latency_s) used.push_back("cpu_latency_us");
  if (!used.empty()) {
    r.notes.push_back("p2pBandwidthLatencyTest: " + join(used) + " from the " + chosen_text + " tables");
  }
  for (const auto& [key, set] : r.others) {
    r.notes.push_back("p2pBandwidthLatencyTest: the " +
                      std::string(key == "p2p_enabled_reads" ? "P2P=Enabled (P2P Reads)"
                                                             : (key == "p2p_disabled" ? "P2P=Disabled" : "P2P=Enabled")) +
                      " tables are kept in other_measurements." + key);
  }

  // The diagonal of the unidirectional table: copies within one GPU.
  if (auto it = out.local_Bps.find(chosen); it != out.local_Bps.end()) {
    std::vector<double> local;
    bool complete = true;
    for (const auto& v : it->second) {
      if (v && *v > 0) {
        local.push_back(*v);
      } else {
        complete = false;
      }
    }
    if (complete && !local.empty()) {
      r.device_local_Bps = std::move(local);
      r.notes.push_back("p2pBandwidthLatencyTest: the diagonal of the " + chosen_text +
                        " bandwidth table (copies within one GPU) became device_local_GBps; the diagonals of the other "
                        "tables were dropped");
    }
  }

  if (out.connectivity) {
    std::vector<std::string> without;
    for (std::size_t i = 0; i < out.connectivity->size(); ++i) {
      for (std::size_t j = i + 1; j < out.connectivity->size(); ++j) {
        if (!(*out.connectivity)[i][j] || !(*out.connectivity)[j][i]) {
          without.push_back("gpu" + std::to_string(i) + "-gpu" + std::to_string(j));
        }
      }
    }
    if (!without.empty() && p2p_enabled) {
      r.notes.push_back("p2pBandwidthLatencyTest: no peer access between " + join(without) +
                        "; their P2P=Enabled figures are ordinary copies through host memory");
    }
  }
  for (const auto& n : out.notes) r.notes.push_back("p2pBandwidthLatencyTest: " + n);
  return r;
}

}  // namespace gradsync::models::importers
