// Fuzz entries for the inputs added since the first campaign (issue 31): nccl-tests logs (as
// text, and generated with known figures), `topology generate` options, `compare` / `calibrate`
// inputs, sweep result files and PyTorch parameter listings (the training data's: entries_training.cpp).
// Contract: fuzz/entries.h.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "experiments/calibrate.h"
#include "experiments/compare.h"
#include "experiments/sweep.h"
#include "fuzz/entries.h"
#include "fuzz/support.h"
#include "models/support/json_input.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/importers/nccl_log.h"
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/importers/parse_util.h"
#include "models/topology/topology_io.h"
#include "models/workload/pytorch_listing.h"
#include "models/workload/workload.h"

namespace gradsync::fuzz {
namespace {

using namespace support;
using models::InputError;

// A token read as the C library reads a number, the whole token or nothing.
std::optional<double> c_number(const std::string& token) {
  if (token.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size()) return std::nullopt;
  return v;
}

// Does `line` hold a whitespace-separated token whose value is `v` (a fork's "[STAT]:" before a
// row's first token taken off)?
bool line_has_value(const std::string& line, double v) {
  for (auto token : models::importers::tokens(line)) {
    if (token.rfind("[STAT]:", 0) == 0) token.erase(0, 7);
    if (const auto x = c_number(token); x && (*x == v || (std::isnan(*x) && std::isnan(v)))) return true;
  }
  return false;
}

// Is the value on one of the row's lines (a row cut by NCCL INFO lines spans several)?
bool row_has_value(const models::importers::SourceText& src, const models::NcclTestsRow& row, double v) {
  for (std::size_t k = row.line; k <= row.last_line && k < src.size(); ++k) {
    if (line_has_value(src.lines[k], v)) return true;
  }
  return false;
}

// NCCL's NCCL_VERSION_CODE as a version (nccl.h: X * 1000 + Y * 100 + Z up to 2.8, X * 10000 +
// Y * 100 + Z from 2.9 on): the oracle for the version a run reports from nccl-library=<code>.
std::string version_of_code(unsigned long long code) {
  const unsigned long long major = code >= 10000 ? code / 10000 : code / 1000;
  const unsigned long long minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// Does the text state this NCCL version: an "NCCL version X.Y.Z" line, or an nccl-library code?
bool text_states_version(const models::importers::SourceText& src, const std::string& version) {
  for (const auto& line : src.lines) {
    if (line.find("NCCL version " + version) != std::string::npos) return true;
    for (std::size_t at = line.find("nccl-library="); at != std::string::npos; at = line.find("nccl-library=", at + 1)) {
      std::size_t end = at + 13;
      while (end < line.size() && end - at < 13 + 9 && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      if (end > at + 13 && version_of_code(std::stoull(line.substr(at + 13, end - at - 13))) == version) return true;
    }
  }
  return false;
}

// nccl-tests' bus factors, as its src/*.cu *GetBw functions define them: the oracle the reader's
// records are held to (written here from nccl-tests, not taken from the code under test).
double nccl_tests_factor(const std::string& collective, int n) {
  if (collective == "all_reduce") return 2.0 * (n - 1) / n;
  if (collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall") return static_cast<double>(n - 1) / n;
  return 1.0;  // broadcast, reduce, sendrecv
}

// The checks every accepted run meets, whatever the text: its figures are the text's own, its
// records are one per timing with the printed time.
void check_runs(const char* target, const std::vector<models::NcclTestsRun>& runs, const models::importers::SourceText& src) {
  for (const auto& run : runs) {
    if (run.line >= src.size()) violated(target, "a run starts at line " + std::to_string(run.line + 1) + " of " + std::to_string(src.size()));
    if (run.ranks() < 1) violated(target, run.where + ": a run of " + std::to_string(run.ranks()) + " ranks");
    (void)run.describe();
    (void)run.ranks_basis();
    if (!run.nccl_version.empty()) {
      std::size_t dots = 0;
      for (char ch : run.nccl_version) dots += ch == '.' ? 1 : 0;
      if (dots != 2 || run.nccl_version.find_first_not_of("0123456789.") != std::string::npos) {
        violated(target, run.where + ": NCCL version \"" + run.nccl_version + "\" is not MAJOR.MINOR.PATCH");
      }
      if (!text_states_version(src, run.nccl_version)) violated(target, run.where + ": NCCL version " + run.nccl_version + " is nowhere in the text");
    }
    std::size_t timings = 0;
    for (const auto& row : run.rows) {
      if (row.line >= src.size() || row.line <= run.line) violated(target, run.where + ": a row at line " + std::to_string(row.line + 1));
      if (row.last_line < row.line || row.last_line >= src.size()) {
        violated(target, src.where(row.line) + ": a row that ends at line " + std::to_string(row.last_line + 1));
      }
      const std::string& line = src.lines[row.line];
      if (!line_has_value(line, row.bytes)) violated(target, src.where(row.line) + ": size " + exact_number(row.bytes) + " is not on the line");
      for (const auto* t : {&row.out_of_place, &row.in_place}) {
        if (!*t) continue;
        ++timings;
        for (double v : {(*t)->time_us, (*t)->algbw_GBps, (*t)->busbw_GBps}) {
          if (!row_has_value(src, row, v)) violated(target, src.where(row.line) + ": " + exact_number(v) + " is not on the row's lines \"" + line + "\" ...");
        }
      }
    }
    const auto records = models::measured_records(run, "fuzz");
    if (records.size() != timings) {
      violated(target, run.where + ": " + std::to_string(records.size()) + " records for " + std::to_string(timings) + " timings");
    }
    for (const auto& r : records) {
      if (!(std::isfinite(r.time_per_sync_s) && r.time_per_sync_s >= 0)) violated(target, run.where + ": a record of " + exact_number(r.time_per_sync_s) + " s");
      (void)models::to_json(r);
    }
  }
}

// ---------------------------------------------------------------------------------------
// A generated nccl-tests log: runs of known figures, in the layouts the reader accepts

struct GeneratedRow {
  std::uint64_t bytes = 0, count = 0;
  std::string time[2], algbw[2], busbw[2], wrong[2];  // as printed: out-of-place, in-place
};

struct GeneratedRun {
  std::string collective;
  int ranks = 0;
  bool has_root = false;
  std::string nccl_version;  // the library's version the log states ("" when none)
  std::vector<GeneratedRow> rows;
  std::string avg_busbw;
};

const std::vector<std::string>& collectives() {
  static const std::vector<std::string> all = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
  return all;
}

std::string printed(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One run as nccl-tests prints it: the command (or "# Collective test starting"), the nThread
// line, device lines (or none, as multi-node logs are cut), the two header lines, the rows and
// the summary. Times are printed with fewer decimals as they grow, as nccl-tests prints them;
// algbw and busbw are those of the printed time, rounded to two decimals. As logs also come:
// NCCL_DEBUG=INFO lines, some cutting rows in pieces (glued to the piece before, the row going
// on after them); NCCL's version line; a fork's "[STAT]:" rows and "[SETTING]"/"[INIT]" lines;
// old tables with the redop cell left blank; a terminal's escape codes.
std::string render_run(Choices& c, GeneratedRun& g) {
  g.collective = c.pick(collectives());
  const bool devices = !c.one_in(3);
  const int threads = devices ? 1 : static_cast<int>(c.between(1, 2));
  const int gpus_per_thread = static_cast<int>(c.between(1, 8));
  const int processes = devices ? 1 : static_cast<int>(c.between(1, 64));
  g.ranks = threads * gpus_per_thread * processes;
  g.has_root = g.collective == "broadcast" || g.collective == "reduce" || c.one_in(2);
  const bool old_error_column = c.one_in(4);
  const bool blank_redop = old_error_column && c.one_in(2);
  const bool stat_rows = c.one_in(6);
  // NCCL_DEBUG=INFO: its host names may begin with digits, which a row's "-1" or "0" then touches.
  static const std::vector<std::string> hosts = {"38dcf168f605", "node7", "gpu-a100-01"};
  const std::string host = c.pick(hosts);
  const bool info = c.one_in(4);
  auto info_line = [&](const std::string& what) { return host + ":1343:1343 [0] NCCL INFO " + what + "\n"; };
  const bool escapes = c.one_in(6);
  std::string text;
  if (c.one_in(3)) {
    static const std::vector<std::pair<std::string, std::string>> codes = {
        {"21903", "2.19.3"}, {"22703", "2.27.3"}, {"22907", "2.29.7"}, {"2804", "2.8.4"}};
    const auto& code = c.pick(codes);
    text += "# nccl-tests version 2.13." + std::to_string(c.below(10)) + " nccl-headers=21903 nccl-library=" + code.first + "\n";
    g.nccl_version = code.second;
  }
  const std::string program = "./build/" + g.collective + "_perf";
  if (!devices) {
    // The launcher says how many processes: mpirun -np, srun -n, or mpirun -H with each host's slots.
    const std::string flags = " -b 8 -e 1G -f 2 -g " + std::to_string(gpus_per_thread) + (threads > 1 ? " -t " + std::to_string(threads) : "");
    switch (c.below(4)) {
      case 0: text += "mpirun -np " + std::to_string(processes) + " -x NCCL_DEBUG=WARN " + program + flags + "\n"; break;
      case 1: text += "$ srun -N 2 -n " + std::to_string(processes) + " --mpi=pmix " + program + flags + "\n"; break;
      case 2: {
        std::string hosts;
        for (int h = 0, left = processes; left > 0; ++h) {
          const int slots = std::min(left, static_cast<int>(c.between(1, 8)));
          hosts += (h ? "," : "") + std::string("node") + std::to_string(h) + ":" + std::to_string(slots);
          left -= slots;
        }
        text += "mpirun -H " + hosts + " " + program + flags + "\n";
        break;
      }
      default:
        text += "mpirun --np " + std::to_string(processes) + " \\\n    -x NCCL_ALGO=Ring \\\n    " + program + flags + "\n";
    }
  } else if (c.one_in(2)) {
    text += "root@box:~/nccl-tests# " + program + " -b 8 -e 1G -f 2 -g " + std::to_string(gpus_per_thread) + "\n";
  } else {
    text += "# Collective test starting: " + g.collective + "_perf\n";
  }
  text += "# nThread " + std::to_string(threads) + " nGpus " + std::to_string(gpus_per_thread) +
          " minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n";
  if (info) text += info_line("cudaDriverVersion 12090");
  if (devices) {
    text += "# Using devices\n";
    for (int r = 0; r < g.ranks; ++r) {
      text += "#  Rank " + printed("%2.0f", r) + " Group  0 Pid  31706 on box device " + printed("%2.0f", r) + " [0000:" +
              printed("%02.0f", 10 + r) + ":00] NVIDIA H100 80GB HBM3\n";
    }
    if (stat_rows) text += "[SETTING]: gpus[0]=0\n[INIT]: comms[0] is at 0x5622aea25510\n";
    text += "#\n";
  }
  if (g.nccl_version.empty() && c.one_in(3)) {
    g.nccl_version = "2." + std::to_string(c.below(30)) + "." + std::to_string(c.below(10));
    text += c.one_in(2) ? "NCCL version " + g.nccl_version + "+cuda12.2\n" : info_line("NCCL version " + g.nccl_version + "+cuda12.2");
  }
  const std::string wrong_name = old_error_column ? "error" : "#wrong";
  text += "#                                                              out-of-place                       in-place\n";
  text += std::string(escapes ? "\x1b[4m" : "") + "#       size         count      type   redop" + std::string(g.has_root ? "    root" : "") +
          "     time   algbw   busbw " + wrong_name + "     time   algbw   busbw " + wrong_name + (escapes ? "\x1b[0m" : "") + "\n";
  text += "#        (B)    (elements)                      " + std::string(g.has_root ? "        " : "") +
          "(us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  const double factor = nccl_tests_factor(g.collective, g.ranks);
  const int sizes = static_cast<int>(c.between(1, 12));
  double busbw_sum = 0;
  int busbw_n = 0;
  for (int k = 0; k < sizes; ++k) {
    GeneratedRow row;
    // all_gather, reduce_scatter and alltoall print the count of one rank's part (nccl-tests' *GetCollByteCount).
    const bool per_rank = g.collective == "all_gather" || g.collective == "reduce_scatter" || g.collective == "alltoall";
    row.count = c.between(1, 1u << 24);
    row.bytes = row.count * 4 * static_cast<std::uint64_t>(per_rank ? g.ranks : 1);
    std::string line = (stat_rows ? "[STAT]:" + printed("%5.0f", static_cast<double>(row.bytes)) : printed("%12.0f", static_cast<double>(row.bytes))) +
                       printed("%14.0f", static_cast<double>(row.count)) + "     float     " +
                       (blank_redop ? "    " : g.collective == "all_gather" || g.collective == "broadcast" || g.collective == "alltoall" ? "none" : " sum");
    if (g.has_root) line += printed("%8.0f", g.collective == "broadcast" || g.collective == "reduce" ? 0 : -1);
    if (info && c.one_in(3)) text += info_line("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC");
    for (int p = 0; p < 2; ++p) {
      // NCCL's lines printed while nccl-tests measures: glued to the row's text so far, the row
      // going on after them.
      if (info && c.one_in(2)) {
        line += info_line("AllReduce: " + std::to_string(row.bytes) + " Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}");
        for (std::size_t k = c.below(3); k > 0; --k) line += info_line("Connected all rings");
      }
      const double time_us = static_cast<double>(c.between(1, 100000000)) / 100;  // 0.01 us .. 1 s
      row.time[p] = printed(time_us < 1000 ? "%9.2f" : time_us < 10000 ? "%9.1f" : "%9.0f", time_us);
      // nccl-tests prints the time with fewer decimals as it grows: the printed time is what counts.
      const double shown_time = std::strtod(row.time[p].c_str(), nullptr);
      const double shown_algbw = static_cast<double>(row.bytes) / (shown_time * 1e3);
      row.algbw[p] = printed("%8.2f", shown_algbw);
      row.busbw[p] = printed("%8.2f", shown_algbw * factor);
      row.wrong[p] = p == 1 && c.one_in(4) ? "N/A" : std::to_string(c.one_in(8) ? c.below(5) : 0);
      line += " " + row.time[p] + " " + row.algbw[p] + " " + row.busbw[p] + "  " + row.wrong[p];
      busbw_sum += shown_algbw * factor;
      ++busbw_n;
    }
    g.rows.push_back(row);
    text += line + "\n";
  }
  g.avg_busbw = printed("%.6g", busbw_sum / busbw_n);
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : " + g.avg_busbw + "\n#\n\n";
  return text;
}

bool same_number(double parsed, const std::string& shown) { return parsed == std::strtod(shown.c_str(), nullptr); }

// ---------------------------------------------------------------------------------------
// Generated clusters

// A value for one cluster parameter: mostly valid, sometimes at or past its bounds, sometimes
// of the wrong type.
models::ordered_json cluster_value(Choices& c, const models::ClusterParam& p) {
  const auto words = models::cluster_param_words(p);
  const int shape = static_cast<int>(c.below(16));
  if (shape == 0) return models::ordered_json("x" + std::to_string(c.below(100)));
  if (shape == 1) return models::ordered_json(-static_cast<double>(c.below(3)));
  if (shape == 2) return models::ordered_json::array();
  if (!words.empty()) return models::ordered_json(c.pick(words));
  if (std::holds_alternative<int models::ClusterSpec::*>(p.field)) {
    if (shape == 3) return models::ordered_json(static_cast<std::int64_t>(c.u32()));
    return models::ordered_json(static_cast<std::int64_t>(c.between(0, 9)));
  }
  if (shape == 3) return models::ordered_json(c.unit() * 1e6);
  if (shape == 4) return models::ordered_json(0.0);
  return models::ordered_json(0.25 + c.unit() * 400);
}

std::size_t count_kind(const models::Topology& t, models::NodeKind kind) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.node_count(); ++i) n += t.node(i).kind == kind ? 1 : 0;
  return n;
}

// The sweep file the sweep_file target reads: one per process, rewritten for each input.
const std::string& sweep_scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/gradsync-fuzz-sweep-" + std::to_string(::getpid()) + ".out";
  }();
  return path;
}

}  // namespace

Outcome fuzz_nccl_tests_log(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("nccl_tests_log", [&] {
    const auto runs = models::read_nccl_tests(text, "fuzz.log");
    check_runs("nccl_tests_log", runs, models::importers::split_lines(text, "fuzz.log"));
  });
}

Outcome fuzz_nccl_log(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("nccl_log", [&] {
    const char* t = "nccl_log";
    const auto src = models::importers::split_lines(text, "fuzz.log");
    const models::NcclLogFacts facts = models::read_nccl_log(src);
    // Every fact stands on a line of NCCL's own log that says it, found here by plain search.
    auto some_line = [&](const std::string& a, const std::string& b) {
      return std::any_of(src.lines.begin(), src.lines.end(), [&](const std::string& l) {
        return l.find(" NCCL INFO ") != std::string::npos && l.find(a) != std::string::npos && l.find(b) != std::string::npos;
      });
    };
    static const std::set<std::string> vendors = {"", "intel", "amd", "arm", "zhaoxin"};
    if (!vendors.count(facts.cpu_vendor)) violated(t, "CPU vendor \"" + facts.cpu_vendor + "\"");
    if (!facts.cpu_vendor.empty() && !some_line("CPU/", "(")) violated(t, "a CPU vendor from no CPU line");
    if (facts.nvls && !some_line("NVLS multicast support is ", "available on dev ")) violated(t, "NVLS read from no NVLS line");
    for (const auto& [pair, path] : facts.gpu_paths) {
      const auto& [from, to] = pair;
      if (from < 0 || from > 255 || to < 0 || to > 255 || from == to) violated(t, "a GPU path between buses " + std::to_string(from) + " and " + std::to_string(to));
      const auto& [type, bw] = path;
      if (type.empty() || !std::all_of(type.begin(), type.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) violated(t, "path type \"" + type + "\"");
      if (!std::isfinite(bw) || bw < 0) violated(t, "path bandwidth " + std::to_string(bw));
      if (!some_line("GPU/", "/" + type + ")")) violated(t, "a " + type + " path from no GPU line");
    }
    if (facts.empty() && facts.line != 0) violated(t, "an empty reading with a line");
    if (!facts.empty() && (facts.line >= src.size() || src.lines[facts.line].find(" NCCL INFO ") == std::string::npos)) {
      violated(t, "facts from line " + std::to_string(facts.line + 1) + ", which is no NCCL INFO line");
    }
    // The line named is the first that says a fact: the text up to it says none, with it one.
    if (!facts.empty()) {
      models::importers::SourceText before = src;
      before.lines.resize(facts.line);
      if (!models::read_nccl_log(before).empty()) violated(t, "a fact before line " + std::to_string(facts.line + 1));
      before.lines.push_back(src.lines[facts.line]);
      if (models::read_nccl_log(before).empty()) violated(t, "line " + std::to_string(facts.line + 1) + " says no fact");
    }
    // A text's reading does not change when lines that are not NCCL's are added.
    models::importers::SourceText more = src;
    more.lines.insert(more.lines.begin(), "# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501");
    const models::NcclLogFacts again = models::read_nccl_log(more);
    if (again.cpu_vendor != facts.cpu_vendor || again.gpu_paths != facts.gpu_paths || again.nvls != facts.nvls ||
        (!facts.empty() && again.line != facts.line + 1)) {
      violated(t, "a line that is not NCCL's changed the reading");
    }
    // Bus ids as device lines print them ("0000:81:00", "0x81"): a bus number or -1. The words
    // that could be one, the first 32 (a regex a word is the cost; the rest of the text is read above).
    int looked = 0;
    for (const std::string& l : src.lines) {
      for (const std::string& w : models::importers::tokens(l)) {
        if (looked >= 32 || (w.find(':') == std::string::npos && w.rfind("0x", 0) != 0)) continue;
        ++looked;
        const int bus = models::pci_bus_of(w);
        if (bus < -1 || bus > 255) violated(t, "bus " + std::to_string(bus) + " from \"" + w + "\"");
      }
    }
  });
}

Outcome fuzz_nccl_tests_generated(const std::uint8_t* data, std::size_t size) {
  Choices c(data, size);
  std::vector<GeneratedRun> generated(1 + c.below(3));
  std::string text = c.one_in(2) ? "" : "Some notes before the log.\n\n";
  for (auto& g : generated) text += render_run(c, g);
  std::vector<models::NcclTestsRun> runs;
  try {
    runs = models::read_nccl_tests(text, "generated.log");
  } catch (const std::exception& e) {
    violated("nccl_tests_generated", std::string("a log as nccl-tests prints it is rejected: ") + e.what() + "\n--- log ---\n" + text);
  }
  const char* t = "nccl_tests_generated";
  const auto src = models::importers::split_lines(text, "generated.log");
  check_runs(t, runs, src);
  if (runs.size() != generated.size()) violated(t, std::to_string(runs.size()) + " runs read from " + std::to_string(generated.size()) + ":\n" + text);
  // A run that prints no NCCL version takes the file's, where every run that prints one prints
  // the same (nccl_tests.h).
  std::set<std::string> printed;
  for (const auto& g : generated) {
    if (!g.nccl_version.empty()) printed.insert(g.nccl_version);
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& run = runs[k];
    const auto& g = generated[k];
    const std::string where = run.where + " (" + g.collective + ", " + std::to_string(g.ranks) + " ranks)";
    if (run.collective != g.collective) violated(t, where + ": read as " + run.collective + "\n" + text);
    const std::string version = !g.nccl_version.empty() ? g.nccl_version : printed.size() == 1 ? *printed.begin() : "";
    if (run.nccl_version != version) violated(t, where + ": NCCL version read as \"" + run.nccl_version + "\", expected \"" + version + "\"\n" + text);
    if (g.ranks > 1 && run.ranks() != g.ranks) violated(t, where + ": read as " + std::to_string(run.ranks()) + " ranks (" + run.ranks_basis() + ")\n" + text);
    if (run.rows.size() != g.rows.size()) violated(t, where + ": " + std::to_string(run.rows.size()) + " rows read of " + std::to_string(g.rows.size()));
    if (!run.avg_busbw_GBps || !same_number(*run.avg_busbw_GBps, g.avg_busbw)) violated(t, where + ": average busbw not read as " + g.avg_busbw);
    for (std::size_t i = 0; i < g.rows.size(); ++i) {
      const auto& row = run.rows[i];
      const auto& want = g.rows[i];
      if (row.bytes != static_cast<double>(want.bytes) || row.count != want.count) violated(t, where + ": row " + std::to_string(i) + " size or count");
      if (g.has_root != row.root.has_value()) violated(t, where + ": row " + std::to_string(i) + " root column");
      const models::NcclTestsTiming* timing[2] = {row.out_of_place ? &*row.out_of_place : nullptr, row.in_place ? &*row.in_place : nullptr};
      for (int p = 0; p < 2; ++p) {
        if (!timing[p]) violated(t, where + ": row " + std::to_string(i) + " lost a timing");
        const auto& tm = *timing[p];
        if (!same_number(tm.time_us, want.time[p]) || !same_number(tm.algbw_GBps, want.algbw[p]) || !same_number(tm.busbw_GBps, want.busbw[p])) {
          violated(t, where + ": row " + std::to_string(i) + " read as " + exact_number(tm.time_us) + " us, " + exact_number(tm.algbw_GBps) +
                          " and " + exact_number(tm.busbw_GBps) + " GB/s; printed " + want.time[p] + want.algbw[p] + want.busbw[p]);
        }
        if ((want.wrong[p] == "N/A") != !tm.wrong.has_value()) violated(t, where + ": row " + std::to_string(i) + " #wrong " + want.wrong[p]);
      }
    }
    // The records give back the log's own algbw and busbw (to the two decimals it printed).
    const auto records = models::measured_records(run, "fuzz");
    std::size_t r = 0;
    for (std::size_t i = 0; i < g.rows.size(); ++i) {
      for (int p = 0; p < 2; ++p, ++r) {
        if (r >= records.size()) violated(t, where + ": too few records");
        const auto alg = records[r].algbw_GBps(), bus = records[r].busbw_GBps();
        const double a = std::strtod(g.rows[i].algbw[p].c_str(), nullptr), b = std::strtod(g.rows[i].busbw[p].c_str(), nullptr);
        const double slack = 0.005 + 1e-9 * std::max(a, b);
        if (!alg || !bus || std::fabs(*alg - a) > slack || std::fabs(*bus - b) > slack) {
          violated(t, where + ": record " + std::to_string(r) + " gives algbw " + (alg ? exact_number(*alg) : "none") + ", busbw " +
                          (bus ? exact_number(*bus) : "none") + "; the log printed " + g.rows[i].algbw[p] + " and " + g.rows[i].busbw[p]);
        }
      }
    }
  }
  return Outcome::accepted;
}

Outcome fuzz_topology_generate(const std::uint8_t* data, std::size_t size) {
  Choices c(data, size);
  models::ordered_json generate = models::ordered_json::object();
  for (const auto& p : models::cluster_params()) {
    if (c.one_in(2)) generate[p.key] = cluster_value(c, p);
  }
  if (c.byte() == 0x5A) generate["gpus_per_nod"] = 8;  // a misspelt key, now and then (not when the bytes run out)
  // Keep the clusters small enough to build many a second (the size limits are checked anyway).
  if (!generate.contains("nodes") || c.one_in(2)) generate["nodes"] = static_cast<std::int64_t>(c.between(1, 6));
  models::ordered_json doc = {{"name", "fuzz-cluster"}, {"generate", generate}};
  const std::string what = doc.dump();
  const char* t = "topology_generate";
  std::optional<models::ClusterSpec> spec;
  try {
    spec = models::cluster_spec_from_json(models::JsonView::wrap(doc, "fuzz.json"));
  } catch (const InputError& e) {
    // A rejection names where: the JSON path of the value (or the object whose key is unknown).
    const std::string message = e.what();
    if (message.find("fuzz.json") == std::string::npos || message.find("generate") == std::string::npos) {
      violated(t, "a rejection that does not name the file and the JSON path: " + message + "\n" + what);
    }
    if (show_rejections()) std::fprintf(stderr, "gradsync fuzz %s: rejected: %s\n", t, e.what());
    return Outcome::rejected;
  }
  const models::ClusterSpec& s = *spec;
  if (static_cast<double>(s.nodes) * s.gpus_per_node > 512 || static_cast<double>(s.nodes) * s.nics_per_node > 512) return Outcome::accepted;
  models::Topology topo = [&] {
    try {
      return models::generate_cluster(s);
    } catch (const std::exception& e) {
      violated(t, std::string("an accepted cluster cannot be generated: ") + e.what() + "\n" + what);
    }
  }();
  // The GPUs, NICs and links the options say.
  const std::size_t gpus = static_cast<std::size_t>(s.nodes) * static_cast<std::size_t>(s.gpus_per_node);
  if (topo.gpus().size() != gpus) violated(t, std::to_string(topo.gpus().size()) + " GPUs; the options say " + std::to_string(gpus) + "\n" + what);
  const std::size_t nics = s.nodes > 1 ? static_cast<std::size_t>(s.nodes) * static_cast<std::size_t>(s.nics_per_node) : 0;
  if (count_kind(topo, models::NodeKind::nic) != nics) {
    violated(t, std::to_string(count_kind(topo, models::NodeKind::nic)) + " NICs; the options say " + std::to_string(nics) + "\n" + what);
  }
  const std::size_t nvswitches = s.intra == models::IntraFabric::nvswitch ? static_cast<std::size_t>(s.nodes) : 0;
  if (count_kind(topo, models::NodeKind::nvswitch) != nvswitches) violated(t, "NVSwitches other than one per node with nvswitch\n" + what);
  std::size_t nvlinks = 0, nic_links = 0, c2c_links = 0;
  const double nvlink_Bps = (s.nvlink_GBps > 0 ? s.nvlink_GBps : models::default_nvlink_GBps(s)) * 1e9;
  for (const auto& l : topo.links()) {
    const bool gpu_pair = topo.node(l.a).kind == models::NodeKind::gpu && topo.node(l.b).kind == models::NodeKind::gpu;
    if (gpu_pair) {
      ++nvlinks;
      if (!close(l.bandwidth_Bps, nvlink_Bps)) violated(t, "an NVLink of " + exact_number(l.bandwidth_Bps) + " B/s; the options say " + exact_number(nvlink_Bps));
    }
    const bool nic_to_switch = (topo.node(l.a).kind == models::NodeKind::nic && topo.node(l.b).kind == models::NodeKind::net_switch) ||
                               (topo.node(l.b).kind == models::NodeKind::nic && topo.node(l.a).kind == models::NodeKind::net_switch);
    if (nic_to_switch) {
      ++nic_links;
      const double want = s.nic_GBps * s.ports_per_nic * 1e9;  // the NIC's ports' sum
      if (!close(l.bandwidth_Bps, want)) {
        violated(t, "a NIC link of " + exact_number(l.bandwidth_Bps) + " B/s; --nic-GBps " + exact_number(s.nic_GBps) + " x --ports-per-nic " +
                        std::to_string(s.ports_per_nic) + " say " + exact_number(want));
      }
      const models::Node& nic = topo.node(topo.node(l.a).kind == models::NodeKind::nic ? l.a : l.b);
      if (std::max(1, nic.facts.ports) != s.ports_per_nic) violated(t, "NIC " + nic.id + " says " + std::to_string(nic.facts.ports) + " ports; --ports-per-nic says " + std::to_string(s.ports_per_nic) + "\n" + what);
    }
    // A NIC's PCIe side: its GPUs' switch, or the root complex with --nic-attach cpu.
    for (const auto& [nic, other] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}}) {
      const models::NodeKind k = topo.node(other).kind;
      if (topo.node(nic).kind != models::NodeKind::nic || k == models::NodeKind::net_switch) continue;
      const models::NodeKind want = models::nic_attach_of(s) == "cpu" ? models::NodeKind::root_complex : models::NodeKind::pcie_switch;
      if (k != want) violated(t, "a NIC on a " + std::string(k == models::NodeKind::root_complex ? "root complex" : "node other than a PCIe switch") + " with --nic-attach " + s.nic_attach + "\n" + what);
    }
    // A GPU that carries its own CPU (GH200): NVLink-C2C to it at the model's rate; no other GPU has one.
    if (l.label == "nvlink-c2c") {
      ++c2c_links;
      const bool gpu_cpu = (topo.node(l.a).kind == models::NodeKind::gpu && topo.node(l.b).kind == models::NodeKind::root_complex) ||
                           (topo.node(l.b).kind == models::NodeKind::gpu && topo.node(l.a).kind == models::NodeKind::root_complex);
      if (!gpu_cpu || !close(l.bandwidth_Bps, models::superchip_c2c_GBps(s) * 1e9)) violated(t, "an NVLink-C2C link other than a GPU's to its CPU at the model's rate\n" + what);
    }
  }
  // The hosts' facts on their root complexes: as stated, unset where auto.
  const int vm = s.vm == "auto" ? -1 : s.vm == "true" ? 1 : 0;  // unset, true, false
  for (std::size_t i = 0; i < topo.node_count(); ++i) {
    const models::Node& n = topo.node(i);
    if (n.kind != models::NodeKind::root_complex) continue;
    if ((n.facts.vm ? (*n.facts.vm ? 1 : 0) : -1) != vm) violated(t, "root complex " + n.id + " says vm " + (n.facts.vm ? (*n.facts.vm ? "true" : "false") : "unset") + "; --vm says " + s.vm + "\n" + what);
    if (n.facts.cpu_vendor != (s.cpu == "auto" ? std::string() : s.cpu)) violated(t, "root complex " + n.id + " says vendor '" + n.facts.cpu_vendor + "'; --cpu says " + s.cpu + "\n" + what);
  }
  // The fabric's routing on every NIC: as stated, unset where auto.
  const int adaptive = s.adaptive_routing == "auto" ? -1 : s.adaptive_routing == "true" ? 1 : 0;
  for (std::size_t i = 0; i < topo.node_count(); ++i) {
    const models::Node& n = topo.node(i);
    if (n.kind != models::NodeKind::nic) continue;
    const auto& f = n.facts.adaptive_routing;
    if ((f ? (*f ? 1 : 0) : -1) != adaptive) violated(t, "NIC " + n.id + " says adaptive routing " + (f ? (*f ? "true" : "false") : "unset") + "; --adaptive-routing says " + s.adaptive_routing + "\n" + what);
  }
  const std::size_t g = static_cast<std::size_t>(s.gpus_per_node);
  const std::size_t want_nvlinks = s.intra == models::IntraFabric::nvlink ? static_cast<std::size_t>(s.nodes) * g * (g - 1) / 2 : 0;
  if (nvlinks != want_nvlinks) violated(t, std::to_string(nvlinks) + " GPU-to-GPU links; expected " + std::to_string(want_nvlinks) + "\n" + what);
  if (nic_links != nics) violated(t, std::to_string(nic_links) + " NIC-to-switch links for " + std::to_string(nics) + " NICs\n" + what);
  if (c2c_links != (models::superchip_c2c_GBps(s) > 0 ? gpus : 0)) violated(t, std::to_string(c2c_links) + " NVLink-C2C links for " + std::to_string(gpus) + " " + s.gpu + "\n" + what);
  // Every pair of GPUs is routed, and the generated form reads back as the same cluster.
  for (std::size_t a : {std::size_t{0}, gpus / 2, gpus - 1}) {
    for (std::size_t b : {std::size_t{0}, gpus - 1}) {
      const auto& ids = topo.gpus();
      if (a == b || a >= ids.size()) continue;
      if (topo.route(ids[a], ids[b]).empty() || !(topo.bottleneck_Bps(ids[a], ids[b]) > 0)) violated(t, "GPUs " + std::to_string(a) + " and " + std::to_string(b) + " are not joined\n" + what);
    }
  }
  const auto back = models::cluster_spec_from_json(models::JsonView::wrap(models::cluster_spec_to_json(s), "roundtrip.json"));
  if (models::cluster_name(back) != models::cluster_name(s)) violated(t, "the generated form reads back as " + models::cluster_name(back));
  return Outcome::accepted;
}

Outcome fuzz_compare_inputs(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  const char* t = "compare_inputs";
  return guarded(t, [&] {
    // Line 1: a calibrate grid item (NAME=LO:HI:STEP or NAME=V1,V2,...); the rest: nccl-tests output.
    const std::size_t eol = std::min(text.find('\n'), text.size());
    const models::Strategy& nccl = models::find_strategy("nccl");
    experiments::GridAxis axis = experiments::parse_grid_axis(text.substr(0, eol), nccl);
    if (axis.values.empty()) violated(t, "a grid axis of no value: " + text.substr(0, eol));
    for (double v : axis.values) {
      if (!std::isfinite(v)) violated(t, "a grid value " + exact_number(v));
      (void)models::resolve_params(nccl, models::SyncParams::parse({axis.param + "=" + models::number_text(v, 17)}));
    }
    const std::string log = eol < text.size() ? text.substr(eol + 1) : std::string();
    const auto runs = models::read_nccl_tests(log, "fuzz.log");
    static const models::Topology machine =
        std::move(models::load_topology(models::JsonView::load_file(models::topology_dir() + "/pcie-8gpu-2switch.json")).topology);
    experiments::CompareOptions options;
    options.executors = {"analytic"};
    const auto compared = experiments::compare_runs(machine, runs, options);
    std::size_t predictions = 0;
    for (const auto& run : compared) {
      for (const auto& point : run.points) {
        for (const auto& [executor, predicted] : point.predicted) {
          ++predictions;
          const auto p = predicted.busbw_GBps(), m = point.measured.busbw_GBps();
          if (!p || !(std::isfinite(*p) && *p > 0)) violated(t, run.run->where + ": a predicted busbw that is not positive");
          // The prediction is for whole elements (a size that is not one rounds up); the error
          // is the busbw ratio's where the sizes agree.
          if (predicted.bytes < point.measured.bytes || predicted.bytes >= point.measured.bytes + 8) {
            violated(t, run.run->where + ": predicted " + exact_number(predicted.bytes) + " B for " + exact_number(point.measured.bytes));
          }
          if (m && *m > 0 && predicted.bytes == point.measured.bytes) {
            const double error = experiments::busbw_error(predicted, point.measured);
            if (!close(error, *p / *m - 1) && std::fabs(error - (*p / *m - 1)) > 1e-9) {
              violated(t, run.run->where + ": error " + exact_number(error) + " for " + exact_number(*p) + " against " + exact_number(*m) +
                              " GB/s (predicted " + exact_number(predicted.bytes) + " B in " + exact_number(predicted.time_per_sync_s) +
                              " s, factor " + exact_number(predicted.busbw_factor) + "; measured " + exact_number(point.measured.bytes) +
                              " B in " + exact_number(point.measured.time_per_sync_s) + " s, factor " +
                              exact_number(point.measured.busbw_factor) + ")");
            }
          }
        }
      }
    }
    if (predictions != experiments::comparison_count(machine, runs, options)) {
      violated(t, std::to_string(predictions) + " predictions made; comparison_count says " +
                      std::to_string(experiments::comparison_count(machine, runs, options)));
    }
    // calibrate on the axis (its first three values) with this one machine.
    if (axis.values.size() > 3) axis.values.resize(3);
    experiments::CalibrateOptions co;
    co.grid = {axis};
    experiments::CalibrationMachine m{"fuzz", &machine, runs};
    const auto cal = experiments::calibrate({m}, co);
    if (cal.points.size() != axis.values.size() || cal.best >= cal.points.size()) violated(t, "calibrate's points do not follow its grid");
    const auto fig = cal.figures(cal.best, {true});
    if (fig.large && !(std::isfinite(fig.large->median_abs) && fig.large->max_abs >= fig.large->median_abs)) violated(t, "calibrate's figures are not finite");
  });
}

Outcome fuzz_sweep_file(const std::uint8_t* data, std::size_t size) {
  // First byte: the format (even: json lines, odd: csv); the rest: the file.
  const std::string format = size > 0 && data[0] % 2 ? "csv" : "json";
  const std::string text = size > 0 ? text_of(data + 1, size - 1) : std::string();
  const std::string& path = sweep_scratch_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) violated("sweep_file", "cannot write the scratch file " + path);
  }
  const Outcome outcome = guarded("sweep_file", [&] {
    const auto stored = experiments::read_sweep_file(path, format);
    for (const auto& r : stored) {
      if (r.line < 1) violated("sweep_file", "a record at line " + std::to_string(r.line));
      (void)experiments::with_index(r, r.index + 1, format);
    }
  });
  std::remove(path.c_str());
  return outcome;
}

Outcome fuzz_layer_listing(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  const char* t = "layer_listing";
  return guarded(t, [&] {
    // The compute one of the two ways `workload from-pytorch` insists on (by the input's length).
    models::ListingOptions options;
    options.name = "fuzz";
    if (size % 2) {
      options.compute_s = 0.25;
    } else {
      options.tokens = 8192;
      options.device_TFLOPS = 150;
    }
    const models::Workload w = models::workload_from_listing(text, "fuzz.txt", options);
    std::int64_t params = 0;
    for (const auto& l : w.layers) {
      if (l.params <= 0) violated(t, "a layer of " + std::to_string(l.params) + " parameters");
      if (__builtin_add_overflow(params, l.params, &params)) violated(t, "parameters overflow");
    }
    if (!(w.gradient_bytes() >= 0 && std::isfinite(w.gradient_bytes()))) violated(t, "gradient bytes " + exact_number(w.gradient_bytes()));
    // The workload JSON gradsync writes for it reads back with the same layers.
    const models::Workload back = models::workload_from_json(models::JsonView::wrap(models::workload_to_json(w), "roundtrip.json"));
    if (back.layers.size() != w.layers.size() || !close(back.gradient_bytes(), w.gradient_bytes())) {
      violated(t, "the listing's workload changed in a round trip through workload_to_json");
    }
  });
}

}  // namespace gradsync::fuzz
