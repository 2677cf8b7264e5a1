#include "models/topology/importers/nccl_tests.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/topology/importers/parse_util.h"

namespace gradsync::models {
namespace {

using namespace importers;

const std::regex kNcclThreads(R"(^nThread\s+(\d+)\s+nGpus\s+(\d+)\b.*)");
const std::regex kNcclDevice(R"(^Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$)");
const std::regex kNcclStarting(R"(^Collective test starting:\s*(\S+?)(?:_perf(?:_mpi)?)?\s*$)");
const std::regex kNcclProgram(R"(^(?:.*/)?([a-z0-9_]+)_perf(?:_mpi)?$)");
const std::regex kNcclVersion(R"(^nccl-tests version\s+(.+)$)");
const std::regex kNcclOutOfBounds(R"(^Out of bounds values\s*:\s*(\d+)\b.*)");
const std::regex kNcclAvgBusbw(R"(^Avg bus bandwidth\s*:\s*(\S+).*)");

// More ranks than any machine has: a log that says so is not one nccl-tests printed.
constexpr std::int64_t kMostRanks = 1 << 20;
constexpr double kMostBytes = 1125899906842624.0;  // 1 PiB

// A line's text after a leading '#', trimmed ("" for a line without one).
std::string comment_body(std::string_view line) {
  const std::string_view t = trim(line);
  if (t.empty() || t.front() != '#') return {};
  return std::string(trim(t.substr(1)));
}

// A token without the punctuation prose puts around it: "all_reduce_perf," -> "all_reduce_perf".
std::string bare(const std::string& token) {
  std::size_t a = 0, b = token.size();
  while (a < b && std::string_view("(\"'`").find(token[a]) != std::string_view::npos) ++a;
  while (b > a && std::string_view(",.;:)\"'`").find(token[b - 1]) != std::string_view::npos) --b;
  return token.substr(a, b - a);
}

// The collective a line names: the one token naming a *_perf program (a command, or a
// heading such as "### nccl-tests all_reduce_perf, default settings").
std::optional<std::string> program_of(const std::string& line) {
  std::optional<std::string> found;
  for (const auto& tok : tokens(line)) {
    std::smatch m;
    const std::string t = bare(tok);
    if (!std::regex_match(t, m, kNcclProgram)) continue;
    if (found && *found != m[1].str()) return std::nullopt;  // a list of programs, not a command
    found = m[1].str();
  }
  return found;
}

std::vector<std::string> split_list_items(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

bool is_assignment(const std::string& token) {
  const auto eq = token.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (std::size_t k = 0; k < eq; ++k) {
    const char c = token[k];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(token[0]));
}

// Is the line a command (its program, a launcher, env or a VAR=value comes first), rather
// than prose that names the program?
bool is_command(const std::vector<std::string>& toks) {
  static const std::set<std::string> starters = {"mpirun", "mpiexec", "orterun", "srun", "env", "numactl", "sudo", "time",
                                                 "$",      "%",       ">"};
  for (const auto& tok : toks) {
    if (is_assignment(tok)) continue;
    const std::string base = tok.substr(tok.rfind('/') == std::string::npos ? 0 : tok.rfind('/') + 1);
    std::smatch m;
    return starters.count(base) > 0 || std::regex_match(tok, m, kNcclProgram);
  }
  return false;
}

// What a launcher's command line says: processes, processes per host, hosts, NCCL_* settings.
struct CommandFacts {
  std::optional<int> processes, per_host, hosts;
  std::map<std::string, std::string> environment;
};

CommandFacts command_facts(const std::vector<std::string>& toks) {
  CommandFacts f;
  auto whole = [](const std::string& s) -> std::optional<int> {
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(s);
  };
  auto keep = [&](const std::string& assignment) {
    const auto eq = assignment.find('=');
    if (eq != std::string::npos && assignment.rfind("NCCL_", 0) == 0) f.environment[assignment.substr(0, eq)] = assignment.substr(eq + 1);
  };
  bool srun = false;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const std::string& t = toks[k];
    const std::string base = t.substr(t.rfind('/') == std::string::npos ? 0 : t.rfind('/') + 1);
    if (base == "srun") srun = true;
    if (is_assignment(t)) {
      keep(t);
      continue;
    }
    std::smatch m;
    if (std::regex_match(t, m, kNcclProgram)) break;  // the program's own flags follow
    // "--flag=value" or "--flag value".
    std::string flag = t, value;
    if (const auto eq = t.find('='); t.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = t.substr(0, eq);
      value = t.substr(eq + 1);
    } else if (k + 1 < toks.size()) {
      value = toks[k + 1];
    }
    if (flag == "-x") {
      keep(value);
    } else if (flag == "--export") {
      for (const auto& item : split_list_items(value)) keep(item);
    } else if (flag == "-np" || flag == "--np" || (flag == "-n" && !srun) || flag == "-c" || flag == "--ntasks" ||
               (srun && flag == "-n")) {
      if (auto v = whole(value)) f.processes = v;
    } else if ((flag == "-N" && !srun) || flag == "--npernode" || flag == "-npernode" || flag == "--ntasks-per-node") {
      if (auto v = whole(value)) f.per_host = v;
    } else if ((flag == "-N" && srun) || flag == "--nodes") {
      if (auto v = whole(value)) f.hosts = v;
    } else if (flag == "--map-by" && value.rfind("ppr:", 0) == 0) {
      const auto colon = value.find(':', 4);
      if (colon != std::string::npos && value.substr(colon + 1).rfind("node", 0) == 0) {
        if (auto v = whole(value.substr(4, colon - 4))) f.per_host = v;
      }
    } else if (flag == "-H" || flag == "--host" || flag == "-host") {
      int hosts = 0;
      std::int64_t slots = 0;
      bool all_slots = true;
      for (const auto& item : split_list_items(value)) {
        ++hosts;
        const auto colon = item.rfind(':');
        const auto v = colon == std::string::npos ? std::nullopt : whole(item.substr(colon + 1));
        if (v) slots += *v;
        all_slots = all_slots && v.has_value();
      }
      if (hosts > 0) f.hosts = hosts;
      if (hosts > 0 && all_slots && !f.processes && slots <= kMostRanks) f.processes = static_cast<int>(slots);
    }
  }
  return f;
}

// Where each figure sits in a row, from the header's column names.
struct Layout {
  std::size_t columns = 0;  // without a trailing timestamp
  bool timestamp = false;
  std::size_t size = 0, count = 0;
  std::optional<std::size_t> type, redop, root;
  struct Group {
    std::size_t time = 0, algbw = 0, busbw = 0;
    std::optional<std::size_t> wrong;
    std::size_t width = 0;
  };
  std::vector<Group> groups;  // out-of-place, in-place
};

std::optional<Layout> header_layout(const std::vector<std::string>& names) {
  if (names.size() < 5 || names[0] != "size") return std::nullopt;
  Layout l;
  std::vector<std::size_t> starts;
  for (std::size_t k = 0; k < names.size(); ++k) {
    if (names[k] == "time" || names[k] == "cputime") starts.push_back(k);
  }
  if (starts.empty() || starts.size() > 2) return std::nullopt;
  std::size_t end = names.size();
  if (names.back() == "timestamp") {
    l.timestamp = true;
    --end;
  }
  l.columns = end;
  for (std::size_t k = 0; k < starts.front(); ++k) {
    const std::string& n = names[k];
    if (n == "size") l.size = k;
    else if (n == "count") l.count = k;
    else if (n == "type") l.type = k;
    else if (n == "redop" || n == "op") l.redop = k;
    else if (n == "root") l.root = k;
  }
  for (std::size_t g = 0; g < starts.size(); ++g) {
    const std::size_t from = starts[g], to = g + 1 < starts.size() ? starts[g + 1] : end;
    Layout::Group group;
    group.time = from;
    group.width = to - from;
    bool alg = false, bus = false;
    for (std::size_t k = from; k < to; ++k) {
      if (names[k] == "algbw") group.algbw = k, alg = true;
      if (names[k] == "busbw") group.busbw = k, bus = true;
      if (names[k] == "#wrong" || names[k] == "error" || names[k] == "res") group.wrong = k;
    }
    if (!alg || !bus) return std::nullopt;
    l.groups.push_back(group);
  }
  return l;
}

class Scanner {
 public:
  explicit Scanner(const SourceText& src) : src_(src) {}

  std::vector<NcclTestsRun> scan() {
    for (std::size_t i = 0; i < src_.size(); ++i) line(i);
    return std::move(runs_);
  }

 private:
  const SourceText& src_;
  std::vector<NcclTestsRun> runs_;
  bool open_ = false;  // the last run still takes device lines, a table, a summary
  std::string pending_collective_, pending_command_, pending_version_;
  CommandFacts pending_facts_;
  std::string continued_;  // a command line ending in '\\', waiting for its next line
  std::optional<Layout> layout_;  // while reading a table's rows

  void line(std::size_t i) {
    const std::string& text = src_.lines[i];
    const std::string body = comment_body(text);
    std::smatch m;
    if (layout_) {
      const std::string_view t = trim(text);
      if (!t.empty() && t.front() == '#') {
        if (body.rfind("(B)", 0) == 0) return;  // the units line under the header
        layout_.reset();
      } else if (!t.empty() && row(i)) {
        return;
      } else {
        layout_.reset();
      }
    }
    if (std::regex_match(body, m, kNcclVersion)) {
      pending_version_ = m[1].str();
      return;
    }
    if (std::regex_match(body, m, kNcclStarting)) {
      pending_collective_ = m[1].str();
      return;
    }
    if (std::regex_match(body, m, kNcclThreads)) {
      NcclTestsRun run;
      run.source = src_.name;
      run.line = i;
      run.where = src_.where(i);
      run.collective = std::exchange(pending_collective_, {});
      run.command = std::exchange(pending_command_, {});
      run.version = std::exchange(pending_version_, {});
      const CommandFacts facts = std::exchange(pending_facts_, {});
      run.processes = facts.processes;
      run.processes_per_host = facts.per_host;
      run.hosts_named = facts.hosts;
      run.environment = facts.environment;
      // nccl-tests runs at least one thread of at least one GPU; the ranks fit an int.
      auto count = [&](const std::string& digits, const char* what) {
        if (digits.size() > 7 || std::stoi(digits) < 1) {
          src_.fail(i, std::string(what) + " " + digits + "; expected a count of 1 or more, as nccl-tests prints it");
        }
        return std::stoi(digits);
      };
      run.threads = count(m[1].str(), "nThread");
      run.gpus_per_thread = count(m[2].str(), "nGpus");
      const std::int64_t ranks = static_cast<std::int64_t>(run.processes.value_or(1)) * run.threads * run.gpus_per_thread;
      if (ranks > kMostRanks) {
        src_.fail(i, std::to_string(ranks) + " ranks (processes x nThread x nGpus); expected at most " + std::to_string(kMostRanks));
      }
      runs_.push_back(std::move(run));
      open_ = true;
      return;
    }
    if (open_ && std::regex_match(body, m, kNcclDevice)) {
      NcclTestsDevice d;
      if (m[1].length() > 7 || m[3].length() > 7) {
        src_.fail(i, "a device line of rank " + m[1].str() + ", device " + m[3].str() + "; expected numbers below 10^7");
      }
      d.rank = std::stoi(m[1].str());
      d.host = m[2].str();
      d.device = std::stoi(m[3].str());
      d.bus_id = m[4].str();
      d.name = std::string(trim(m[5].str()));
      runs_.back().devices.push_back(std::move(d));
      return;
    }
    if (!body.empty()) {
      if (auto l = header_layout(tokens(body))) {
        if (!open_) {
          src_.fail(i, "an nccl-tests table without its \"# nThread ... nGpus ...\" line; expected the whole output "
                       "of the *_perf program, which says how many ranks ran");
        }
        if (!runs_.back().rows.empty()) {
          src_.fail(i, "a second nccl-tests table in the run that starts at line " + std::to_string(runs_.back().line + 1) +
                           "; expected one table per run");
        }
        layout_ = *l;
        return;
      }
    }
    if (open_ && std::regex_match(body, m, kNcclOutOfBounds)) {
      if (m[1].length() > 15) src_.fail(i, "out of bounds values " + m[1].str() + "; expected a count up to 10^15");
      runs_.back().out_of_bounds = std::stoull(m[1].str());
      return;
    }
    if (open_ && std::regex_match(body, m, kNcclAvgBusbw)) {
      runs_.back().avg_busbw_GBps = parse_number(m[1].str());
      open_ = false;  // the summary's last figure ends the run
      return;
    }
    std::string command = body.empty() ? std::string(trim(text)) : body;
    // A command continued over lines ("mpirun --np 16 \\" then its flags, then the program).
    if (body.empty() && !command.empty() && command.back() == '\\') {
      command.pop_back();
      continued_ += command + " ";
      return;
    }
    if (!continued_.empty()) {
      command = std::exchange(continued_, {}) + command;
    }
    if (auto program = program_of(command)) {
      pending_collective_ = *program;
      const auto toks = tokens(command);
      if (is_command(toks)) {
        pending_command_ = command;
        pending_facts_ = command_facts(toks);
      }
    }
  }

  // A data row of the current table; false when the line is not one (the table ended).
  bool row(std::size_t i) {
    const auto toks = tokens(src_.lines[i]);
    const Layout& l = *layout_;
    if (toks.empty() || !parse_number(toks[0])) return false;
    // Trace-replay rows leave the out-of-place group blank.
    const bool no_out = l.groups.size() == 2 && toks.size() == l.columns - l.groups[0].width;
    if (!no_out && (toks.size() < l.columns || (!l.timestamp && toks.size() > l.columns))) {
      src_.fail(i, "an nccl-tests row of " + std::to_string(toks.size()) + " fields; the table's header has " +
                       std::to_string(l.columns) + " columns");
    }
    auto at = [&](std::size_t column) -> const std::string& {
      if (no_out && column >= l.groups[0].time) return toks[column - l.groups[0].width];
      return toks[column];
    };
    auto number = [&](std::size_t column, const char* what) {
      const auto v = parse_number(at(column));
      if (!v || *v < 0) src_.fail(i, quote_token(at(column)) + " is not " + what + "; expected a number >= 0");
      return *v;
    };
    NcclTestsRow r;
    r.line = i;
    // Whole numbers in the ranges nccl-tests prints (sizes up to 1 PiB, as everywhere in gradsync).
    auto whole = [&](std::size_t column, const char* what, double lo, double hi, const char* range) {
      const auto v = parse_number(at(column));
      if (!v || *v != std::floor(*v) || *v < lo || *v > hi) {
        src_.fail(i, quote_token(at(column)) + " is not " + what + "; expected a whole number " + range);
      }
      return *v;
    };
    r.bytes = whole(l.size, "a size in bytes", 0, kMostBytes, "of bytes up to 1 PiB");
    r.count = static_cast<std::uint64_t>(whole(l.count, "an element count", 0, kMostBytes, "up to 2^50"));
    if (l.type) r.type = at(*l.type);
    if (l.redop) r.redop = at(*l.redop);
    if (l.root) r.root = static_cast<int>(whole(*l.root, "a root rank", -1, static_cast<double>(kMostRanks), "from -1 to 1048576"));
    for (std::size_t g = 0; g < l.groups.size(); ++g) {
      if (g == 0 && no_out) continue;
      const auto& group = l.groups[g];
      NcclTestsTiming t;
      t.time_us = number(group.time, "a time in microseconds");
      t.algbw_GBps = number(group.algbw, "a bandwidth in GB/s");
      t.busbw_GBps = number(group.busbw, "a bandwidth in GB/s");
      if (group.wrong && at(*group.wrong) != "N/A") t.wrong = number(*group.wrong, "a count of wrong elements");
      (g == 0 ? r.out_of_place : r.in_place) = t;
    }
    runs_.back().rows.push_back(std::move(r));
    return true;
  }
};

}  // namespace

namespace importers {
std::vector<NcclTestsRun> scan_nccl_tests(const SourceText& src) { return Scanner(src).scan(); }
}  // namespace importers

namespace {

// The rank count that the collective's bus factor gives for the table's busbw / algbw (the row
// with the largest algbw, where two printed decimals say the most); nullopt where the factor
// does not depend on the ranks (broadcast, reduce) or no row tells.
std::optional<int> ranks_from_bandwidths(const NcclTestsRun& run) {
  const NcclTestsTiming* best = nullptr;
  for (const auto& row : run.rows) {
    for (const auto* t : {&row.out_of_place, &row.in_place}) {
      if (*t && (*t)->algbw_GBps >= 0.1 && (!best || (*t)->algbw_GBps > best->algbw_GBps)) best = &**t;
    }
  }
  if (!best) return std::nullopt;
  const auto two = nccl_tests_busbw_factor(run.collective, 2), four = nccl_tests_busbw_factor(run.collective, 4);
  if (!two || !four || *two == *four) return std::nullopt;
  // factor = k (n - 1) / n with k = 1 or 2: n = k / (k - factor).
  const double k = *two * 2;
  const double ratio = best->busbw_GBps / best->algbw_GBps;
  if (!(ratio < k) || !(ratio >= 0)) return std::nullopt;
  const double n = k / (k - ratio);
  const double rounded = std::round(n);
  if (rounded < 2 || rounded > 1 << 20 || std::abs(n - rounded) > 0.25) return std::nullopt;
  return static_cast<int>(rounded);
}

}  // namespace

int NcclTestsRun::ranks() const {
  if (!devices.empty()) return static_cast<int>(devices.size());
  if (processes) return *processes * threads * gpus_per_thread;
  if (const auto n = ranks_from_bandwidths(*this)) return *n;
  return threads * gpus_per_thread;
}

std::string NcclTestsRun::ranks_basis() const {
  if (!devices.empty()) return "device lines";
  if (processes) return "the command line (" + std::to_string(*processes) + " processes)";
  if (ranks_from_bandwidths(*this)) return "busbw / algbw";
  return "one process";
}

std::optional<int> NcclTestsRun::hosts() const {
  if (!devices.empty()) {
    std::set<std::string> names;
    for (const auto& d : devices) names.insert(d.host);
    return static_cast<int>(names.size());
  }
  if (hosts_named) return hosts_named;
  if (processes && processes_per_host && *processes_per_host > 0) return (*processes + *processes_per_host - 1) / *processes_per_host;
  if (!processes && ranks_basis() == "one process") return 1;
  return std::nullopt;
}

std::string NcclTestsRun::describe() const {
  std::string s = (collective.empty() ? std::string("unnamed collective") : collective + "_perf") + ", " +
                  std::to_string(ranks()) + (ranks() == 1 ? " rank" : " ranks");
  if (devices.empty() && ranks_basis() != "one process") s += " (from " + ranks_basis() + ")";
  if (const auto h = hosts(); h && *h > 1) s += " on " + std::to_string(*h) + " hosts";
  s += ", " + std::to_string(rows.size()) + " sizes";
  if (!rows.empty()) s += " (" + format_bytes(rows.front().bytes) + " - " + format_bytes(rows.back().bytes) + ")";
  return s + ", " + where;
}

std::vector<NcclTestsRun> read_nccl_tests(const std::string& text, const std::string& source_name) {
  const importers::SourceText src = importers::split_lines(text, source_name);
  importers::check_utf8(src, "the printed output of nccl-tests (ASCII or UTF-8)");
  return importers::scan_nccl_tests(src);
}

std::vector<NcclTestsRun> read_nccl_tests_files(const std::vector<std::string>& paths) {
  std::vector<NcclTestsRun> runs;
  for (const auto& path : paths) {
    auto found = read_nccl_tests(importers::read_text_file(path), path);
    runs.insert(runs.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  }
  return runs;
}

std::optional<double> nccl_tests_busbw_factor(const std::string& collective, int n) {
  if (n < 1) return std::nullopt;
  const double spread = static_cast<double>(n - 1) / n;
  static const std::map<std::string, int> kind = {
      {"all_reduce", 2}, {"all_gather", 1}, {"reduce_scatter", 1}, {"alltoall", 1}, {"gather", 1},
      {"scatter", 1},    {"broadcast", 0},  {"reduce", 0},         {"sendrecv", 0}};
  const auto it = kind.find(collective);
  if (it == kind.end()) return std::nullopt;
  return it->second == 0 ? 1.0 : it->second * spread;
}

std::vector<ResultRecord> measured_records(const NcclTestsRun& run, const std::string& topology) {
  std::set<std::string> hosts;
  for (const auto& d : run.devices) hosts.insert(d.host);
  std::vector<std::string> nodes;
  for (const auto& d : run.devices) {
    nodes.push_back((hosts.size() > 1 ? d.host + "/" : std::string()) + "gpu" + std::to_string(d.device));
  }
  const double factor = nccl_tests_busbw_factor(run.collective, run.ranks()).value_or(0);
  std::vector<ResultRecord> out;
  for (const auto& row : run.rows) {
    for (const auto& [timing, placement] : {std::pair{&row.out_of_place, "out-of-place"}, std::pair{&row.in_place, "in-place"}}) {
      if (!*timing) continue;
      ResultRecord r;
      r.executor = "measured";
      r.topology = topology;
      r.strategy = "nccl";
      if (!run.collective.empty()) r.params["collective"] = run.collective;
      for (const auto& [name, value] : run.environment) r.params[name] = value;  // what the command set: NCCL_ALGO, ...
      r.ranks = run.ranks();
      r.rank_nodes = nodes;
      r.bytes = row.bytes;
      r.time_per_sync_s = (*timing)->time_us * 1e-6;
      r.busbw_factor = factor;
      r.notes = {std::string(placement), "nccl-tests " + run.source + ":" + std::to_string(row.line + 1)};
      const auto& wrong = (*timing)->wrong;
      // A count of wrong elements (the old "error" column holds an error's size instead).
      if (wrong && *wrong == std::floor(*wrong) && *wrong <= kMostBytes) r.wrong_elements = static_cast<std::uint64_t>(*wrong);
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace gradsync::models
