#include "models/topology/importers/nccl_tests.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <utility>
#include <variant>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/topology/importers/parse_util.h"

namespace gradsync::models {
namespace {

using namespace importers;

const std::regex kNcclThreads(R"(^nThread\s+(\d+)\s+nGpus\s+(\d+)\b.*)");
// "Group N" since nccl-tests 2.10 or so; older versions print "Rank  0 Pid 112424 on host device ...".
const std::regex kNcclDevice(R"(^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$)");
const std::regex kNcclStarting(R"(^Collective test starting:\s*(\S+?)(?:_perf(?:_mpi)?)?\s*$)");
const std::regex kNcclProgram(R"(^(?:.*/)?([a-z0-9_]+)_perf(?:_mpi)?$)");
// A section heading's name for one collective's output where it names no program: a saved log's
// file name, such as ALCF's "all_reduce_output.dat" or "### ...: all_gather_log".
const std::regex kHeadingOutput(
    R"(^(all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv|scatter|gather|hypercube)_(?:log|output)(?:\.[a-z0-9.]+)?$)");
const std::regex kNcclVersion(R"(^nccl-tests version\s+(.+)$)");
const std::regex kNcclOutOfBounds(R"(^Out of bounds values\s*:\s*(\d+)\b.*)");
const std::regex kNcclAvgBusbw(R"(^Avg bus bandwidth\s*:\s*(\S+).*)");
const std::regex kNcclLibraryCode(R"((?:^|\s)nccl-library=(\d{1,9})\b)");

// NCCL's own log lines: "host:pid:tid [dev] NCCL INFO ..." (WARN, TRACE; older WARN lines put
// "file.cc:123 " before NCCL). The tail from the pid on, to find one glued after a row's text.
// (Bounded repeats: the regex engine recurses once per character a repeat takes.)
const std::regex kNcclLogTail(R"(:\d{1,10}:\d{1,10} \[\d{1,6}\] (?:\S{1,128}:\d{1,6} )?NCCL (?:INFO|WARN|TRACE|ABORT)\b)");
const std::regex kNcclLogLine(
    R"(^([^\s:]{1,255}):\d{1,10}:\d{1,10} \[\d{1,6}\] (?:\S{1,128}:\d{1,6} )?NCCL (?:INFO|WARN|TRACE|ABORT)\b)");
// "NCCL version 2.16.5+cuda11.8": printed by NCCL itself, alone on its line or as an INFO line.
const std::regex kNcclLibraryLine(R"(^NCCL version (\d{1,4})\.(\d{1,4})\.(\d{1,4})\b)");
const std::regex kNcclLibraryInfo(R"(NCCL INFO NCCL version (\d{1,4})\.(\d{1,4})\.(\d{1,4})\b)");
// The prefix a fork of nccl-tests puts before every row ("[STAT]:1572864  393216 ..."), and
// the lines of its own it adds around the device lines.
constexpr std::string_view kStatPrefix = "[STAT]:";

// More ranks than any machine has: a log that says so is not one nccl-tests printed.
constexpr std::int64_t kMostRanks = 1 << 20;
constexpr double kMostBytes = 1125899906842624.0;  // 1 PiB

// A line's text after a leading '#', trimmed ("" for a line without one).
std::string comment_body(std::string_view line) {
  const std::string_view t = trim(line);
  if (t.empty() || t.front() != '#') return {};
  return std::string(trim(t.substr(1)));
}

// A comment's label: "Notes" of "Notes: ...", "Environment / command" of "Environment / command:
// ..." (a capital, then up to 40 letters, spaces, '/', '(', ')' or '-', then a colon); "" if none.
std::string comment_label(const std::string& body) {
  if (body.empty() || !std::isupper(static_cast<unsigned char>(body[0]))) return {};
  for (std::size_t k = 1; k < body.size() && k <= 41; ++k) {
    const char c = body[k];
    if (c == ':') return body.substr(0, k);
    if (!std::isalpha(static_cast<unsigned char>(c)) && std::string_view(" /()-").find(c) == std::string_view::npos) return {};
  }
  return {};
}

// A token without the punctuation prose puts around it: "all_reduce_perf," -> "all_reduce_perf".
std::string bare(const std::string& token) {
  std::size_t a = 0, b = token.size();
  while (a < b && std::string_view("(\"'`").find(token[a]) != std::string_view::npos) ++a;
  while (b > a && std::string_view(",.;:)\"'`").find(token[b - 1]) != std::string_view::npos) --b;
  return token.substr(a, b - a);
}

// The one name a line's tokens give by `pattern`'s first group (none where they give two).
std::optional<std::string> one_name(const std::string& line, const std::regex& pattern) {
  std::optional<std::string> found;
  for (const auto& tok : tokens(line)) {
    std::smatch m;
    const std::string t = bare(tok);
    if (!std::regex_match(t, m, pattern)) continue;
    if (found && *found != m[1].str()) return std::nullopt;  // a list of them, not one
    found = m[1].str();
  }
  return found;
}

// The collective a line names: the one token naming a *_perf program (a command, or a
// heading such as "### nccl-tests all_reduce_perf, default settings").
std::optional<std::string> program_of(const std::string& line) { return one_name(line, kNcclProgram); }

// The collective a section heading that names no program names by its output's name, if one.
std::optional<std::string> heading_output_of(const std::string& line) { return one_name(line, kHeadingOutput); }

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

// The NCCL_* settings prose names among a line's tokens ("NCCL_P2P_LEVEL=SYS," in a heading or a
// comment), added to `into` (a later one wins); a setting without a value is not one.
void add_nccl_settings(const std::vector<std::string>& toks, std::map<std::string, std::string>& into) {
  for (const auto& tok : toks) {
    const std::string t = bare(tok);
    const auto eq = t.find('=');
    if (is_assignment(t) && t.rfind("NCCL_", 0) == 0 && eq + 1 < t.size()) into[t.substr(0, eq)] = t.substr(eq + 1);
  }
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
  std::optional<int> threads, gpus;  // the program's own -t and -g (what its "# nThread" line would say)
  std::map<std::string, std::string> environment;
};

CommandFacts command_facts(const std::vector<std::string>& toks) {
  CommandFacts f;
  auto whole = [](const std::string& s) -> std::optional<int> {
    // A count of at least one: "-c 0" in a heading that quotes nccl-tests' own flags is no launcher's.
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int v = std::stoi(s);
    return v >= 1 ? std::optional<int>(v) : std::nullopt;
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
    if (std::regex_match(t, m, kNcclProgram)) {  // the program's own flags follow: -g 8 (or -g8), -t 2
      for (std::size_t q = k + 1; q < toks.size(); ++q) {
        const std::string& flag = toks[q];
        const bool gpus = flag.rfind("-g", 0) == 0 || flag == "--ngpus", threads = flag.rfind("-t", 0) == 0 || flag == "--nthreads";
        if (!gpus && !threads) continue;
        const std::string value = flag.size() > 2 && flag[1] != '-' ? flag.substr(2) : q + 1 < toks.size() ? toks[q + 1] : "";
        if (auto v = whole(value); v && *v >= 1) (gpus ? f.gpus : f.threads) = v;
      }
      break;
    }
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
    // The hosts of NCCL's log lines, to find where one starts when it is glued after a row's
    // text ("  sum  -1host:1343:1343 [0] NCCL INFO ...", host names may begin with digits).
    for (const auto& text : src_.lines) {
      std::smatch m;
      if (text.find(" NCCL ") != std::string::npos && std::regex_search(text, m, kNcclLogLine)) log_hosts_.insert(m[1].str());
    }
    for (std::size_t i = 0; i < src_.size(); ++i) line(i);
    if (partial_) finish_row("the file ends at line " + std::to_string(src_.size()));
    for (std::size_t k : table_only_) {
      const NcclTestsRun& run = runs_[k];
      if (run.command.empty() && run.ranks_basis() == "one process") {
        src_.fail(run.line, "an nccl-tests table without its \"# nThread ... nGpus ...\" line, and neither a launcher's "
                            "command (mpirun -np ...) nor the table's busbw / algbw says how many ranks ran; expected the "
                            "whole output of the *_perf program");
      }
    }
    // A file holds one machine's outputs: where every NCCL version it prints is the same one
    // (the INFO lines of one run, say, reproduced after the tables), the runs that print none
    // ran under that one too, unless a comment before them names theirs.
    std::set<std::string> stated;
    for (const NcclTestsRun& run : runs_) {
      if (!run.nccl_version.empty()) stated.insert(run.nccl_version);
    }
    if (!pending_library_.empty()) stated.insert(pending_library_);
    for (std::size_t k = 0; k < runs_.size(); ++k) {
      if (!runs_[k].nccl_version.empty()) continue;
      if (!described_versions_[k].empty()) {
        runs_[k].nccl_version = described_versions_[k];
      } else if (stated.size() == 1) {
        runs_[k].nccl_version = *stated.begin();
      }
    }
    return std::move(runs_);
  }

 private:
  // A row printed in pieces: nccl-tests prints a row's cells as it measures them, and NCCL's
  // INFO lines, printed meanwhile, cut it (the row goes on after them).
  struct Partial {
    std::size_t first = 0, last = 0;
    std::vector<std::string> cells;
    bool continues = false;  // its last piece was cut by an NCCL line
  };

  const SourceText& src_;
  std::vector<NcclTestsRun> runs_;
  bool open_ = false;  // the last run still takes device lines, a table, a summary
  std::string pending_collective_, pending_command_, pending_version_, pending_library_;
  CommandFacts pending_facts_;
  // NCCL_* settings a comment block says the runs after it ran with (a comment labelled
  // "Environment ..." and the comment lines that continue it); a run's own command or heading
  // overrides them, key by key.
  std::map<std::string, std::string> described_environment_;
  bool in_environment_ = false;
  // The NCCL release a comment labelled "NCCL" gives ("# NCCL: 2.4.8+cuda10.0", "# NCCL: NCCL
  // 2.21.5 (...)"; "2.8" where it names no patch level) for the runs after it that print none.
  std::string described_version_;
  std::vector<std::string> described_versions_;  // by run: what such a comment gave it
  std::string continued_;  // a command line ending in '\\', waiting for its next line
  std::optional<Layout> layout_;  // while reading a table's rows
  std::optional<Partial> partial_;
  std::set<std::string> log_hosts_;
  std::vector<std::size_t> table_only_;  // runs read from a table alone (no "# nThread" line)

  // A line's text before an NCCL log line glued to it, and that log line ("" when none).
  std::pair<std::string, std::string> split_log(const std::string& text) const {
    std::smatch m;
    if (text.find(" NCCL ") == std::string::npos || !std::regex_search(text, m, kNcclLogTail)) return {text, {}};
    const auto colon = static_cast<std::size_t>(m.position(0));
    std::size_t token = colon;
    while (token > 0 && text[token - 1] != ' ' && text[token - 1] != '\t') --token;
    // The longest known host that ends at the colon; else the whole token is the host.
    std::size_t host = token;
    for (std::size_t k = std::max(token, colon > 255 ? colon - 255 : 0); k < colon; ++k) {
      if (log_hosts_.count(text.substr(k, colon - k))) {
        host = k;
        break;
      }
    }
    return {text.substr(0, host), text.substr(host)};
  }

  // The NCCL library's version, printed inside a run (before its table) or just before it.
  void library_version(const std::smatch& m) {
    const std::string v = m[1].str() + "." + m[2].str() + "." + m[3].str();
    if (open_ && runs_.back().rows.empty() && !partial_) {
      if (runs_.back().nccl_version.empty()) runs_.back().nccl_version = v;
    } else {
      pending_library_ = v;
    }
  }

  void line(std::size_t i) {
    const auto [text, log] = split_log(src_.lines[i]);
    std::smatch m;
    if (!log.empty() && std::regex_search(log, m, kNcclLibraryInfo)) library_version(m);
    // NCCL's own lines are skipped wherever they are, inside a table too.
    if (!log.empty() && is_blank(text)) return;
    const std::string_view t = trim(text);
    // A fork's own lines ("[SETTING]: gpus[0]=0", "[INIT]: comms[0] is at 0x...").
    if (t.rfind("[SETTING]", 0) == 0 || t.rfind("[INIT]", 0) == 0) return;
    const std::string body = comment_body(text);
    if (layout_) {
      if (!t.empty() && t.front() == '#') {
        if (body.rfind("(B)", 0) == 0 && !partial_) return;  // the units line under the header
        end_table(i);
      } else if (!t.empty() && row_piece(i, t, !log.empty())) {
        return;
      } else {
        end_table(i);
      }
    }
    labelled_comment(body);  // after the table a comment may end
    if (t.rfind("NCCL version ", 0) == 0) {
      const std::string bare_line(t);
      if (std::regex_search(bare_line, m, kNcclLibraryLine)) {
        library_version(m);
        return;
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
      // nccl-tests runs at least one thread of at least one GPU; the ranks fit an int.
      auto count = [&](const std::string& digits, const char* what) {
        if (digits.size() > 7 || std::stoi(digits) < 1) {
          src_.fail(i, std::string(what) + " " + digits + "; expected a count of 1 or more, as nccl-tests prints it");
        }
        return std::stoi(digits);
      };
      const int threads = count(m[1].str(), "nThread");
      start_run(i, threads, count(m[2].str(), "nGpus"));
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
        if (!open_ || !runs_.back().rows.empty()) {
          // Published logs cut down to their table: a run of its own where a heading or a command
          // named its *_perf program, its ranks then from the command or busbw / algbw (checked
          // when the scan ends).
          if (pending_collective_.empty() && !open_) {
            src_.fail(i, "an nccl-tests table without its \"# nThread ... nGpus ...\" line; expected the whole output "
                         "of the *_perf program, which says how many ranks ran");
          }
          if (pending_collective_.empty()) {
            src_.fail(i, "a second nccl-tests table in the run that starts at line " + std::to_string(runs_.back().line + 1) +
                             "; expected one table per run");
          }
          start_run(i, pending_facts_.threads.value_or(1), pending_facts_.gpus.value_or(1));
          table_only_.push_back(runs_.size() - 1);
        }
        layout_ = *l;
        in_environment_ = false;  // a table ends an environment comment
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
    std::string command = body.empty() ? std::string(t) : body;
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
      } else if (body.rfind('#', 0) == 0) {
        // A heading that names the program and the NCCL_* settings it ran with
        // ("### nccl-tests all_reduce_perf, NCCL_P2P_LEVEL=SYS"): the settings are the run's.
        pending_facts_ = CommandFacts{};
        add_nccl_settings(toks, pending_facts_.environment);
      }
    } else if (body.rfind('#', 0) == 0) {
      // A section heading ("## ...", "### ...") that names no program starts another part of
      // the text: a program named before it (in prose above, say) is not its run's. One that
      // names a collective's output ("### ...: all_gather_log") names the run's collective.
      pending_collective_ = heading_output_of(body).value_or("");
    }
  }

  // What a labelled comment says of the runs after it. One labelled "NCCL" ("# NCCL:
  // 2.4.8+cuda10.0") names their release. One labelled "Environment ..." ("# Environment /
  // command: NCCL_ALGO=Ring ...", "# Environment printed by NCCL: ...") starts a block of NCCL_*
  // settings; the comment lines after it continue it until one with a label of its own ("# Notes:
  // ..."), a heading or any other line.
  void labelled_comment(const std::string& body) {
    const std::string label = comment_label(body);
    if (label == "NCCL") {
      // Its first version, major.minor[.patch], among the comment's first words.
      static const std::regex kRelease(R"((?:^|[\s(])(?:NCCL\s+)?(\d{1,2})\.(\d{1,3})(?:\.(\d{1,3}))?(?=[\s+,;)-]|$))");
      const std::string head = body.substr(label.size() + 1, 120);
      std::smatch m;
      described_version_.clear();
      if (std::regex_search(head, m, kRelease)) described_version_ = m[1].str() + "." + m[2].str() + (m[3].matched ? "." + m[3].str() : "");
    }
    if (label.rfind("Environment", 0) == 0) {
      described_environment_.clear();
      in_environment_ = true;
    } else if (!in_environment_ || body.empty() || body.front() == '#' || !label.empty()) {
      in_environment_ = false;  // a heading ("### ..."), a label of its own, a line not a comment
      return;
    }
    add_nccl_settings(tokens(body), described_environment_);
  }

  // A run starts at line `i` (its "# nThread" line, or its table's header where that is all
  // there is), with what was seen before it: the program, the command, the versions.
  void start_run(std::size_t i, int threads, int gpus_per_thread) {
    NcclTestsRun run;
    run.source = src_.name;
    run.line = i;
    run.where = src_.where(i);
    run.collective = std::exchange(pending_collective_, {});
    run.command = std::exchange(pending_command_, {});
    run.version = std::exchange(pending_version_, {});
    // The library's version: the run's own "nccl-library=" code, else NCCL's line just before.
    std::smatch code;
    if (std::regex_search(run.version, code, kNcclLibraryCode)) {
      run.nccl_version = nccl_version_of_code(std::stoull(code[1].str())).value_or("");
    }
    if (run.nccl_version.empty()) run.nccl_version = pending_library_;
    described_versions_.push_back(described_version_);
    pending_library_.clear();
    const CommandFacts facts = std::exchange(pending_facts_, {});
    run.processes = facts.processes;
    run.processes_per_host = facts.per_host;
    run.hosts_named = facts.hosts;
    run.environment = facts.environment;
    run.environment.insert(described_environment_.begin(), described_environment_.end());  // keeps the run's own
    run.threads = threads;
    run.gpus_per_thread = gpus_per_thread;
    const std::int64_t ranks = static_cast<std::int64_t>(run.processes.value_or(1)) * run.threads * run.gpus_per_thread;
    if (ranks > kMostRanks) {
      src_.fail(i, std::to_string(ranks) + " ranks (processes x nThread x nGpus); expected at most " + std::to_string(kMostRanks));
    }
    runs_.push_back(std::move(run));
    open_ = true;
  }

  // The table ends at line `i` (not a row): a row still waiting for its cells is an error.
  void end_table(std::size_t i) {
    if (partial_) finish_row("line " + std::to_string(i + 1) + " ends the table");
    layout_.reset();
  }

  // A piece of a row at line `i` (`text` without a glued NCCL line; `cut`: one followed it).
  // False when the line holds no row (the table ended).
  bool row_piece(std::size_t i, std::string_view text, bool cut) {
    if (!partial_ && text.rfind(kStatPrefix, 0) == 0) text.remove_prefix(kStatPrefix.size());
    auto cells = tokens(text);
    if (cells.empty() || !parse_number(cells[0])) return false;
    if (!partial_) partial_ = Partial{i, i, {}, false};
    partial_->last = i;
    partial_->cells.insert(partial_->cells.end(), std::make_move_iterator(cells.begin()), std::make_move_iterator(cells.end()));
    partial_->continues = cut && partial_->cells.size() < layout_->columns;
    if (!partial_->continues) finish_row({});
    return true;
  }

  // Reads the row gathered so far; `ended`: what ended it while it waited for its other pieces.
  void finish_row(const std::string& ended) {
    Partial p = std::move(*partial_);
    partial_.reset();
    if (p.continues) {
      src_.fail(p.first, "an nccl-tests row of " + std::to_string(p.cells.size()) + " fields cut by NCCL's log lines does not "
                         "go on: " + ended + "; expected the rest of its " + std::to_string(layout_->columns) +
                         " columns after the NCCL lines");
    }
    row(p.first, p.last, p.cells);
  }

  // Where each header column's cell is in a row's fields (nullopt: not printed).
  using Placement = std::vector<std::optional<std::size_t>>;

  // The row's cells read with `place`; the problem ("\"5.x\" is not ...; expected ...") when
  // one does not read. `names`: the text cells must be names, not numbers (when the row is
  // placed by what it leaves out, that is what says the placement is right).
  std::variant<NcclTestsRow, std::string> cells_of(const std::vector<std::string>& toks, const Placement& place,
                                                   bool names) const {
    const Layout& l = *layout_;
    NcclTestsRow r;
    std::optional<std::string> problem;
    auto at = [&](std::size_t column) -> const std::string& { return toks[*place[column]]; };
    auto number = [&](std::size_t column, const char* what) {
      const auto v = parse_number(at(column));
      if ((!v || *v < 0) && !problem) problem = quote_token(at(column)) + " is not " + what + "; expected a number >= 0";
      return v.value_or(0);
    };
    // Whole numbers in the ranges nccl-tests prints (sizes up to 1 PiB, as everywhere in gradsync).
    auto whole = [&](std::size_t column, const char* what, double lo, double hi, const char* range) {
      const auto v = parse_number(at(column));
      if ((!v || *v != std::floor(*v) || *v < lo || *v > hi) && !problem) {
        problem = quote_token(at(column)) + " is not " + what + "; expected a whole number " + range;
      }
      return problem ? 0.0 : *v;
    };
    auto name = [&](std::size_t column, const char* what, const char* example) {
      if (names && parse_number(at(column)) && !problem) {
        problem = quote_token(at(column)) + " is not " + what + "; expected a name such as " + example;
      }
      return at(column);
    };
    r.bytes = whole(l.size, "a size in bytes", 0, kMostBytes, "of bytes up to 1 PiB");
    r.count = static_cast<std::uint64_t>(whole(l.count, "an element count", 0, kMostBytes, "up to 2^50"));
    if (l.type) r.type = name(*l.type, "a data type", "float");
    if (l.redop && place[*l.redop]) r.redop = name(*l.redop, "a reduction", "sum");
    if (l.root && place[*l.root]) {
      r.root = static_cast<int>(whole(*l.root, "a root rank", -1, static_cast<double>(kMostRanks), "from -1 to 1048576"));
    }
    for (std::size_t g = 0; g < l.groups.size(); ++g) {
      const auto& group = l.groups[g];
      if (!place[group.time]) continue;  // trace replay: the out-of-place group left blank
      NcclTestsTiming t;
      t.time_us = number(group.time, "a time in microseconds");
      t.algbw_GBps = number(group.algbw, "a bandwidth in GB/s");
      t.busbw_GBps = number(group.busbw, "a bandwidth in GB/s");
      if (group.wrong && at(*group.wrong) != "N/A") t.wrong = number(*group.wrong, "a count of wrong elements");
      (g == 0 ? r.out_of_place : r.in_place) = t;
    }
    if (problem) return *problem;
    return r;
  }

  // A data row of the current table: its fields from line `first` to `last`.
  void row(std::size_t first, std::size_t last, const std::vector<std::string>& toks) {
    const Layout& l = *layout_;
    const std::string fields = "an nccl-tests row of " + std::to_string(toks.size()) + " fields; the table's header has " +
                               std::to_string(l.columns) + " columns";
    auto placed = [&](const std::vector<std::size_t>& blank) {  // header columns not printed in the row
      Placement place(l.columns);
      std::size_t next = 0;
      for (std::size_t c = 0; c < l.columns; ++c) {
        if (std::find(blank.begin(), blank.end(), c) == blank.end()) place[c] = next++;
      }
      return place;
    };
    std::variant<NcclTestsRow, std::string> read;
    if (l.groups.size() == 2 && toks.size() == l.columns - l.groups[0].width) {
      // Trace-replay rows leave the out-of-place group blank.
      std::vector<std::size_t> blank;
      for (std::size_t c = l.groups[0].time; c < l.groups[0].time + l.groups[0].width; ++c) blank.push_back(c);
      read = cells_of(toks, placed(blank), false);
    } else if (toks.size() >= l.columns) {
      if (!l.timestamp && toks.size() > l.columns) src_.fail(first, fields);
      read = cells_of(toks, placed({}), false);
    } else {
      // Old tables leave the redop cell (or root) blank where the collective has none
      // ("0  0  float  1.63 ..." under "size count type redop time ..."): read so where the
      // fields line up without those cells, and only there.
      std::vector<std::size_t> text;
      if (l.redop) text.push_back(*l.redop);
      if (l.root) text.push_back(*l.root);
      const std::size_t missing = l.columns - toks.size();
      if (missing > text.size()) src_.fail(first, fields);
      std::vector<std::vector<std::size_t>> choices;
      if (missing == text.size()) choices.push_back(text);
      else for (std::size_t c : text) choices.push_back({c});  // one of two left blank
      std::optional<std::string> first_problem;
      for (const auto& blank : choices) {
        read = cells_of(toks, placed(blank), true);
        if (std::holds_alternative<NcclTestsRow>(read)) break;
        if (!first_problem) {
          std::string cells;
          for (std::size_t c : blank) cells += std::string(cells.empty() ? "" : " and ") + (l.redop == c ? "redop" : "root");
          first_problem = fields + ", and without its " + cells + " cell" + (blank.size() > 1 ? "s " : " ") + std::get<std::string>(read);
        }
      }
      if (!std::holds_alternative<NcclTestsRow>(read)) src_.fail(first, *first_problem);
    }
    if (auto* problem = std::get_if<std::string>(&read)) src_.fail(first, *problem);
    NcclTestsRow r = std::get<NcclTestsRow>(std::move(read));
    r.line = first;
    r.last_line = last;
    runs_.back().rows.push_back(std::move(r));
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

std::optional<std::string> nccl_version_of_code(std::uint64_t code) {
  std::uint64_t major = 0, minor = 0, patch = code % 100;
  if (code >= 1000 && code < 2900) {  // NCCL_VERSION(X, Y, Z) = X * 1000 + Y * 100 + Z up to 2.8
    major = code / 1000;
    minor = code / 100 % 10;
  } else if (code >= 20900 && code < 1000000) {  // X * 10000 + Y * 100 + Z from 2.9 on
    major = code / 10000;
    minor = code / 100 % 100;
  } else {
    return std::nullopt;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
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
