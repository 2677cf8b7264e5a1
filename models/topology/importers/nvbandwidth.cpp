// NVIDIA nvbandwidth (github.com/NVIDIA/nvbandwidth), plain-text output:
//
//   nvbandwidth Version: v0.8
//   ...
//   Running device_to_device_memcpy_write_ce.
//   memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
//              0         1
//    0       N/A     12.61
//    1     12.58       N/A
//
//   SUM device_to_device_memcpy_write_ce 25.19
//
// Directions. For the host tests the arrow is the data direction (CPU(row) -> GPU(column):
// host to device). For the device-to-device tests it is not: nvbandwidth's source
// (testcases_ce.cpp, testcases_sm.cpp) fills entry [row][column] of the *write* test with a
// copy from GPU row to GPU column, but prints "GPU(row) <- GPU(column)"; the *read* test
// fills [row][column] with a copy from GPU column to GPU row (using the row GPU's context)
// and prints "GPU(row) -> GPU(column)". So the direction is taken from the test case: write
// tables are kept as they are (row = sender), read tables are transposed.
//
// Bidirectional tests (device_to_device_bidirectional_memcpy_{read,write}_{ce,sm}) copy both
// ways between a pair at once. Since v0.6 they print three tables, Read1/Read2 (Write1/Write2:
// each direction) and Total (their sum), and Total is the pair's bidirectional figure. Before
// v0.6 they printed one table, "GPU(row) <-> GPU(column) bandwidth", each entry the rate of the
// measured copy (one direction) while the copy the other way ran: the pair's figure is then the
// sum of its two entries.
//
// All-to-one and one-to-all tests (all_to_one_{write,read}_{ce,sm}, one_to_all_*) run the copies
// between GPU k and every other GPU with peer access at once and print one row: per GPU k, the
// aggregate rate of those copies (testcase.cpp's allToOneHelper / oneToAllHelper, TOTAL_BW: all
// the bytes over the time of all). The data moves into k in all_to_one_write and one_to_all_read
// (the read test runs the copy from the peer with k's context), out of k in one_to_all_write and
// all_to_one_read. Each becomes a concurrent probe of the matrix form, one per GPU, its flows
// each the aggregate / their number (only the aggregate is printed).
#include <regex>
#include <set>

#include "models/support/error.h"
#include "models/topology/importers/parse_util.h"
#include "models/support/units.h"

namespace gradsync::models::importers {
namespace {

const std::regex kVersion(R"(^nvbandwidth Version: (.+)$)");
const std::regex kRunning(R"(^Running (?:benchmark )?([A-Za-z0-9_]+)\.$)");
const std::regex kTestcaseName(R"(^(host|device|all|one)_[a-z0-9_]+$)");
const std::regex kWaived(R"(^(?:Waiving|WAIVED|Waived)\b[: ]*(.*)$)");
const std::regex kTitle(R"(^(?:memcpy|memory latency|Device to Device Latency)\b.*\((?:GB/s|ns)\)$)");
const std::regex kVariant(R"(\(column\) (Read1|Read2|Write1|Write2|Total) bandwidth)");

NvbandwidthOutput& nvbandwidth_output(ParsedText& parsed, std::size_t line) {
  if (!parsed.nvbandwidth) {
    parsed.nvbandwidth.emplace();
    parsed.nvbandwidth->line = line;
    parsed.found(kNvbandwidthTool);
  }
  return *parsed.nvbandwidth;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

bool consume_nvbandwidth(ParsedText& parsed, std::size_t& pos) {
  const SourceText& src = parsed.src;
  const std::string line(trim(src.lines[pos]));
  std::smatch m;

  if (std::regex_match(line, m, kVersion)) {
    auto& out = nvbandwidth_output(parsed, pos);
    if (!out.version.empty() || !out.tables.empty()) {
      src.fail(pos, "a second nvbandwidth output (the first starts at line " + std::to_string(out.line + 1) +
                        "); expected one per file");
    }
    out.version = std::string(trim(m[1].str()));
    ++pos;
    return true;
  }
  if (std::regex_match(line, m, kRunning) &&
      (parsed.nvbandwidth || std::regex_match(m[1].str(), kTestcaseName) || m[1] == "device_local_copy")) {
    auto& out = nvbandwidth_output(parsed, pos);
    out.current_testcase = m[1].str();
    out.testcases_run.push_back(out.current_testcase);
    ++pos;
    return true;
  }
  if (std::regex_match(line, kTitle)) {
    auto& out = nvbandwidth_output(parsed, pos);
    const std::size_t title_line = pos;
    const std::string testcase = out.current_testcase;
    const bool latency = line.size() >= 4 && line.substr(line.size() - 4) == "(ns)";
    // The unit must fit the test case: a (ns) table read as a bandwidth matrix would give 0 GB/s links.
    if (!testcase.empty() && (testcase.find("latency") != std::string::npos) != latency) {
      src.fail(pos, "the table \"" + line + "\" of test case " + testcase + " is in " + (latency ? "ns" : "GB/s") +
                        "; expected " + (latency ? "GB/s, as in every bandwidth test case" : "ns, as in every latency test case"));
    }
    TableSpec spec;
    spec.title = line;
    spec.labels = TableLabels::index;
    if (out.gpu_count) {
      spec.columns = out.gpu_count;
      spec.columns_origin = "one per GPU, as in the table at line " + std::to_string(out.gpu_count_line + 1);
    }
    // Square tables for GPU-to-GPU tests; one row (CPU or the device itself) otherwise. The test
    // case decides where it is known: some versions print "CPU(row)" on device-to-device tables.
    const bool square = starts_with(testcase, "device_to_device") ||
                        (testcase.empty() && line.find("GPU(row)") != std::string::npos);
    spec.rows = square ? 0 : 1;
    ++pos;
    Table t = read_table(src, pos, spec);
    if (!out.gpu_count) {
      out.gpu_count = t.columns;
      out.gpu_count_line = t.header_line;
    }
    NumberRules rules{latency ? "a latency in ns" : "a bandwidth in GB/s", 1.0, true, !latency};
    rules.maximum = latency ? kMaxLatency_us * 1e3 : kMaxBandwidth_GBps;
    rules.minimum_positive = latency ? 0 : kMinBandwidth_GBps;
    rules.bounds = latency ? "of at most 1e+12 (1000 s)" : "between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)";
    NvbandwidthTable table;
    table.values = table_numbers(src, t, rules);
    table.testcase = testcase;
    table.title = line;
    table.title_line = title_line;
    if (std::regex_search(line, m, kVariant)) table.variant = m[1].str();
    table.table = std::move(t);
    if (testcase.empty()) {
      out.notes.push_back("the table \"" + line + "\" at line " + std::to_string(title_line + 1) +
                          " has no \"Running <testcase>.\" line before it; ignored");
      return true;
    }
    for (const auto& other : out.tables) {
      if (other.testcase == testcase && other.variant == table.variant) {
        src.fail(title_line, "a second \"" + line + "\" table for " + testcase + " (the first is at line " +
                                 std::to_string(other.title_line + 1) + "); expected one per test case");
      }
    }
    out.tables.push_back(std::move(table));
    return true;
  }
  if (!parsed.nvbandwidth) return false;
  auto& out = *parsed.nvbandwidth;
  if (std::regex_match(line, m, kWaived)) {
    std::string what(trim(m[1].str()));
    if (!what.empty() && what.back() == '.') what.pop_back();
    out.waived.push_back(what.empty() ? out.current_testcase : what);
    ++pos;
    return true;
  }
  if (starts_with(line, "SUM ") || starts_with(line, "&&&& PERF ") || starts_with(line, "Built from Git version:") ||
      starts_with(line, "CUDA Runtime Version:") || starts_with(line, "CUDA Driver Version:") ||
      starts_with(line, "Driver Version:") || starts_with(line, "NOTE: This tool reports") ||
      starts_with(line, "Additional system-specific tuning")) {
    ++pos;
    return true;
  }
  return false;
}

ToolMeasurements nvbandwidth_measurements(const ParsedText& parsed) {
  ToolMeasurements r;
  r.tool = kNvbandwidthTool;
  if (!parsed.nvbandwidth) return r;
  const auto& out = *parsed.nvbandwidth;
  const SourceText& src = parsed.src;
  const std::size_t n = out.gpu_count;
  std::set<std::string> used;

  auto find = [&](const std::string& testcase, const std::string& variant) -> const NvbandwidthTable* {
    for (const auto& t : out.tables) {
      if (t.testcase == testcase && t.variant == variant) return &t;
    }
    return nullptr;
  };
  auto first_of = [&](const std::vector<std::string>& testcases, const std::string& variant) -> const NvbandwidthTable* {
    for (const auto& name : testcases) {
      if (const auto* t = find(name, variant)) return t;
    }
    return nullptr;
  };

  // GPU-to-GPU bandwidth.
  const std::vector<std::string> d2d = {"device_to_device_memcpy_write_ce", "device_to_device_memcpy_read_ce",
                                        "device_to_device_memcpy_write_sm", "device_to_device_memcpy_read_sm"};
  if (const auto* t = first_of(d2d, "")) {
    used.insert(t->testcase);
    const bool read = t->testcase.find("_read_") != std::string::npos;
    PairMatrix bw(n);
    for (std::size_t row = 0; row < n; ++row) {
      for (std::size_t col = 0; col < n; ++col) {
        if (row == col) continue;
        const auto& v = t->values[row][col];
        const std::size_t from = read ? col : row, to = read ? row : col;
        if (!v) {
          if (!r.missing_pair_error) {
            r.missing_pair_error = src.where(t->table.row_lines[row]) + ": \"N/A\" in row " + std::to_string(row) +
                                   ", column " + std::to_string(col) + " of nvbandwidth " + t->testcase +
                                   ": no bandwidth measured from gpu" + std::to_string(from) + " to gpu" +
                                   std::to_string(to) +
                                   " (no peer access); expected every GPU pair measured (p2pBandwidthLatencyTest "
                                   "measures pairs without peer access through host memory: import its output too)";
          }
          continue;
        }
        bw.at(from, to) = *v * kGB;
      }
    }
    r.main.bandwidth_Bps = std::move(bw);
    r.notes.push_back(std::string("nvbandwidth: bandwidth_GBps from ") + t->testcase +
                      (read ? " (read test: entry [row][column] is a copy from GPU column to GPU row, so the table was "
                              "transposed into row = sender)"
                            : " (write test: entry [row][column] is a copy from GPU row to GPU column)"));
    for (const auto& name : d2d) {
      if (name != t->testcase && find(name, "")) {
        r.notes.push_back("nvbandwidth: " + name + " not used (" + t->testcase + " preferred)");
        used.insert(name);
      }
    }
  } else {
    r.no_bandwidth_reason = "its nvbandwidth output (line " + std::to_string(out.line + 1) +
                            ") has none of the test cases " + join(d2d) +
                            (out.waived.empty() ? std::string() : " (waived: " + join(out.waived) + ")") +
                            (out.notes.empty() ? std::string() : " (" + join(out.notes, "; ") + ")");
  }

  // Bidirectional: the "Total" table (both directions together); before v0.6, the one table
  // of each direction's rate under the other's load, summed per pair.
  const std::vector<std::string> bidir = {
      "device_to_device_bidirectional_memcpy_write_ce", "device_to_device_bidirectional_memcpy_read_ce",
      "device_to_device_bidirectional_memcpy_ce", "device_to_device_bidirectional_memcpy_write_sm",
      "device_to_device_bidirectional_memcpy_read_sm"};
  const NvbandwidthTable* bidir_total = first_of(bidir, "Total");
  const NvbandwidthTable* bidir_single = bidir_total ? nullptr : first_of(bidir, "");
  if (const auto* t = bidir_total ? bidir_total : bidir_single) {
    used.insert(t->testcase);
    PairMatrix bi(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i == j) continue;
        if (bidir_total) {
          if (t->values[i][j]) bi.at(i, j) = *t->values[i][j] * kGB;
        } else if (t->values[i][j] && t->values[j][i]) {
          bi.at(i, j) = (*t->values[i][j] + *t->values[j][i]) * kGB;
        }
      }
    }
    r.main.bidirectional_Bps = std::move(bi);
    r.notes.push_back(bidir_total ? "nvbandwidth: bidirectional_GBps from the Total table of " + t->testcase
                                  : "nvbandwidth: bidirectional_GBps from " + t->testcase +
                                        " (one table, as nvbandwidth printed before v0.6: each entry one direction's "
                                        "rate while the other direction ran, so a pair's figure is the sum of its two "
                                        "entries)");
    for (const auto& name : bidir) {
      if (name != t->testcase && (find(name, "Total") || find(name, ""))) {
        r.notes.push_back("nvbandwidth: " + name + " not used (" + t->testcase + " preferred)");
        used.insert(name);
      }
    }
  }

  // All-to-one / one-to-all: GPU k and every other GPU at once, one probe per GPU and
  // direction. The peers are those with peer access: the pairs the GPU-to-GPU table measured
  // (where there is one; every other GPU otherwise).
  const auto* d2d_table = first_of(d2d, "");
  const auto peer_access = [&](std::size_t from, std::size_t to) {
    if (!d2d_table) return true;
    const bool read = d2d_table->testcase.find("_read_") != std::string::npos;
    return d2d_table->values[read ? to : from][read ? from : to].has_value();
  };
  const auto aggregate_probes = [&](const std::vector<std::string>& testcases, bool into) {
    const auto* t = first_of(testcases, "");
    if (!t) return;
    used.insert(t->testcase);
    std::vector<std::string> skipped;
    std::size_t made = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const auto& total = t->values[0][k];
      ConcurrentProbe probe;
      for (std::size_t j = 0; j < n; ++j) {
        if (j == k || !(into ? peer_access(j, k) : peer_access(k, j))) continue;
        probe.flows.push_back(into ? std::pair{"gpu" + std::to_string(j), "gpu" + std::to_string(k)}
                                   : std::pair{"gpu" + std::to_string(k), "gpu" + std::to_string(j)});
      }
      if (!total || *total <= 0 || probe.flows.size() < 2) {
        skipped.push_back("gpu" + std::to_string(k));
        continue;
      }
      probe.bandwidth_Bps.assign(probe.flows.size(), *total * kGB / static_cast<double>(probe.flows.size()));
      r.concurrent_probes.push_back(std::move(probe));
      ++made;
    }
    if (made > 0) {
      r.notes.push_back("nvbandwidth: concurrent_probes from " + t->testcase + " (every other GPU's copy " +
                        (into ? "into" : "out of") + " each GPU at once; only their aggregate is printed, so each "
                        "flow's rate is the aggregate / the number of flows)");
    }
    if (!skipped.empty()) {
      r.notes.push_back("nvbandwidth: " + t->testcase + " gives no probe for " + join(skipped) +
                        " (N/A, or fewer than two peers with peer access)");
    }
    for (const auto& name : testcases) {
      if (name != t->testcase && find(name, "")) {
        r.notes.push_back("nvbandwidth: " + name + " not used (" + t->testcase + " preferred)");
        used.insert(name);
      }
    }
  };
  aggregate_probes({"all_to_one_write_ce", "one_to_all_read_ce", "all_to_one_write_sm", "one_to_all_read_sm"}, true);
  aggregate_probes({"one_to_all_write_ce", "all_to_one_read_ce", "one_to_all_write_sm", "all_to_one_read_sm"}, false);

  // Latency: pointer chase by GPU row through GPU column's memory.
  if (const auto* t = find("device_to_device_latency_sm", "")) {
    used.insert(t->testcase);
    PairMatrix lat(n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j && t->values[i][j]) lat.at(i, j) = *t->values[i][j] * 1e-9;
      }
    }
    r.main.latency_s = std::move(lat);
    r.notes.push_back("nvbandwidth: latency_us from device_to_device_latency_sm (ns; GPU row reading GPU column's memory)");
  }

  // One-row tables: host <-> device and local copies.
  auto vector_of = [&](const std::vector<std::string>& testcases, const std::string& field)
      -> std::optional<std::vector<double>> {
    const auto* t = first_of(testcases, "");
    if (!t) return std::nullopt;
    used.insert(t->testcase);
    std::vector<double> v;
    for (std::size_t j = 0; j < n; ++j) {
      const auto& x = t->values[0][j];
      if (!x || *x <= 0) {
        r.notes.push_back("nvbandwidth: " + t->testcase + " has no figure for GPU " + std::to_string(j) + " (line " +
                          std::to_string(t->table.row_lines[0] + 1) + "); " + field + " left out");
        return std::nullopt;
      }
      v.push_back(*x * kGB);
    }
    r.notes.push_back("nvbandwidth: " + field + " from " + t->testcase);
    return v;
  };
  r.host_to_device_Bps = vector_of({"host_to_device_memcpy_ce", "host_to_device_memcpy_sm"}, "host_to_device_GBps");
  r.device_to_host_Bps = vector_of({"device_to_host_memcpy_ce", "device_to_host_memcpy_sm"}, "device_to_host_GBps");
  r.device_local_Bps = vector_of({"device_local_copy"}, "device_local_GBps");

  std::vector<std::string> ignored;
  auto add_ignored = [&](const std::string& name) {
    if (name.empty() || used.count(name)) return;
    for (const auto& i : ignored) {
      if (i == name) return;
    }
    ignored.push_back(name);
  };
  for (const auto& name : out.testcases_run) add_ignored(name);
  for (const auto& t : out.tables) add_ignored(t.testcase);
  std::vector<std::string> waived;
  for (const auto& w : out.waived) {
    waived.push_back(w);
  }
  if (!waived.empty()) r.notes.push_back("nvbandwidth: waived by the tool (no result): " + join(waived));
  std::vector<std::string> ignored_with_results;
  for (const auto& name : ignored) {
    bool is_waived = false;
    for (const auto& w : waived) is_waived = is_waived || w == name;
    if (!is_waived) ignored_with_results.push_back(name);
  }
  if (!ignored_with_results.empty()) {
    r.notes.push_back("nvbandwidth: ignored test cases (not part of the matrix form): " + join(ignored_with_results));
  }
  if (!out.version.empty()) r.notes.push_back("nvbandwidth: version " + out.version);
  for (const auto& note : out.notes) r.notes.push_back("nvbandwidth: " + note);
  return r;
}

}  // namespace gradsync::models::importers
