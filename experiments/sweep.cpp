#include "experiments/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "models/support/error.h"
#include "models/support/process.h"

namespace gradsync::experiments {

using models::ordered_json;

// ---------------------------------------------------------------------------------
// Points of a plan.

std::vector<Point> plan_points(const Plan& plan) {
  std::vector<Point> points;
  for (const auto& size : plan.sizes) {
    for (const auto& choice : plan.strategies) {
      for (const auto& placement : plan.placements) {
        for (const auto& executor : plan.executors) {
          points.push_back(Point{points.size(), size, &choice, &placement, executor});
        }
      }
    }
  }
  return points;
}

models::PredictRequest point_request(const Plan& plan, const Point& p) {
  models::PredictRequest q;
  q.topology = &plan.topology.topology;
  q.workload = p.size ? nullptr : (plan.workload ? &*plan.workload : nullptr);
  q.bytes = p.size;
  q.strategy = p.choice->strategy;
  q.params = p.choice->params;
  q.placement = *p.placement;
  q.overlap = plan.overlap;
  return q;
}

namespace {
std::string given_params(const StrategyChoice& c) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : c.params.values()) parts.push_back(k + "=" + v);
  return models::join(parts, ";");
}
}  // namespace

std::string point_key(const Plan& plan, const Point& p) {
  const models::Topology& t = plan.topology.topology;
  std::vector<std::string> ranks;
  for (std::size_t node : p.placement->ranks) ranks.push_back(t.node(node).id);
  std::string key = "topology=" + t.name() + " executor=" + p.executor->name() + " strategy=" + p.choice->strategy->name;
  const std::string params = given_params(*p.choice);
  if (!params.empty()) key += " params=" + params;
  key += " ranks=" + models::join(ranks, ",");
  if (p.size) {
    key += " bytes=" + models::number_text(*p.size, 17);
  } else {
    key += " workload=" + (plan.workload ? plan.workload->name : std::string("-"));
  }
  return key;
}

std::string point_label(const Point& p) {
  std::string label = p.executor->name() + " " + p.choice->strategy->name + " N=" + std::to_string(p.placement->size());
  for (const auto& [k, v] : p.choice->params.values()) label += " " + k + "=" + v;
  return label;
}

// ---------------------------------------------------------------------------------
// Parallel evaluation.

void evaluate_jobs(const std::vector<Job>& jobs, const std::vector<std::size_t>& indices, int workers,
                   const OnResult& on_result) {
  models::run_task_pool(
      indices, workers,
      [&](std::size_t i) { return models::to_json(jobs[i].executor->evaluate(jobs[i].request, jobs[i].settings)).dump(); },
      [&](std::size_t i, const models::TaskOutcome& done) {
        Outcome out;
        if (done.input_error) {
          out.error = *done.input_error;
        } else {
          out.record = record_from_json(ordered_json::parse(done.text));
        }
        on_result(i, out);
      },
      [&](std::size_t i) { return jobs[i].label; });
}

std::vector<Outcome> evaluate_all(const std::vector<Job>& jobs, int workers, bool progress) {
  std::vector<Outcome> out(jobs.size());
  std::vector<std::size_t> indices(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) indices[i] = i;
  std::optional<Progress> bar;
  if (progress) bar.emplace(Progress::for_stderr(jobs.size()));
  evaluate_jobs(jobs, indices, workers, [&](std::size_t index, const Outcome& o) {
    out[index] = o;
    if (bar) bar->step(jobs[index].label);
  });
  if (bar) bar->finish();
  return out;
}

// ---------------------------------------------------------------------------------
// Sweep result files.

namespace {

// A CSV row split into raw field texts (quotes kept), so the row can be rebuilt exactly.
struct CsvRow {
  std::vector<std::string> raw;
  std::string text;
  int line = 0;
};

std::vector<CsvRow> split_csv(const std::string& text) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  bool quoted = false;
  int line = 1;
  row.line = 1;
  std::size_t row_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') quoted = !quoted;
    if (!quoted && c == ',') {
      row.raw.push_back(field);
      field.clear();
      continue;
    }
    if (!quoted && c == '\n') {
      row.raw.push_back(field);
      row.text = text.substr(row_start, i - row_start);
      if (!row.text.empty()) rows.push_back(row);
      row = CsvRow{};
      field.clear();
      row_start = i + 1;
      row.line = ++line;
      continue;
    }
    if (c == '\n') ++line;
    field += c;
  }
  if (row_start < text.size()) {
    row.raw.push_back(field);
    row.text = text.substr(row_start);
    rows.push_back(row);
  }
  return rows;
}

std::string csv_unquote(const std::string& raw) {
  if (raw.size() < 2 || raw.front() != '"') return raw;
  std::string out;
  for (std::size_t i = 1; i + 1 < raw.size(); ++i) {
    out += raw[i];
    if (raw[i] == '"') ++i;  // "" -> "
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw models::InputError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

std::string sweep_csv_header() {
  std::string h = models::csv_header();
  if (!h.empty() && h.back() == '\n') h.pop_back();
  return h + ",point_index,point\n";
}

std::string sweep_line(const models::ResultRecord& r, std::size_t index, const std::string& key,
                       const std::string& format) {
  if (format == "csv") {
    std::string row = models::to_csv_row(r);
    if (!row.empty() && row.back() == '\n') row.pop_back();
    return row + "," + std::to_string(index) + "," + models::csv_escape(key);
  }
  ordered_json j = models::to_json(r);
  j["point_index"] = index;
  j["point"] = key;
  return j.dump();
}

std::vector<StoredRecord> read_sweep_file(const std::string& path, const std::string& format) {
  const std::string text = read_text(path);
  std::vector<StoredRecord> out;
  if (format == "csv") {
    const auto rows = split_csv(text);
    if (rows.empty()) return out;
    std::string header = sweep_csv_header();
    header.pop_back();
    if (rows[0].text != header) {
      throw models::InputError(path + ":1: not a CSV file written by gradsync sweep; expected the header \"" + header +
                               "\" (with the point_index and point columns; a sweep written before the time-to-target columns were added cannot be "
                               "continued: start it afresh)");
    }
    const std::size_t columns = rows[0].raw.size();
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const CsvRow& row = rows[r];
      if (row.raw.size() != columns) {
        throw models::InputError(path + ":" + std::to_string(row.line) + ": got " + std::to_string(row.raw.size()) +
                                 " fields; expected " + std::to_string(columns));
      }
      StoredRecord s;
      s.line = row.line;
      s.text = row.text;
      s.key = csv_unquote(row.raw[columns - 1]);
      const std::string& index = row.raw[columns - 2];
      char* end = nullptr;
      const unsigned long long v = std::strtoull(index.c_str(), &end, 10);
      if (index.empty() || *end != '\0') {
        throw models::InputError(path + ":" + std::to_string(row.line) + ": point_index \"" + index +
                                 "\" is not a point number");
      }
      s.index = static_cast<std::size_t>(v);
      out.push_back(std::move(s));
    }
    return out;
  }
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    ordered_json doc;
    try {
      doc = ordered_json::parse(line);
    } catch (const std::exception& e) {
      throw models::InputError(path + ":" + std::to_string(number) + ": not a JSON record (" + e.what() + ")");
    }
    if (!doc.is_object() || !doc.contains("point") || !doc.at("point").is_string() || !doc.contains("point_index") ||
        !doc.at("point_index").is_number_unsigned()) {
      throw models::InputError(path + ":" + std::to_string(number) +
                               ": a record without \"point\" and \"point_index\"; expected a file written by gradsync "
                               "sweep (--resume and --merge continue only those)");
    }
    out.push_back(StoredRecord{doc.at("point_index").get<std::size_t>(), doc.at("point").get<std::string>(), line, number});
  }
  return out;
}

std::string with_index(const StoredRecord& r, std::size_t index, const std::string& format) {
  if (r.index == index) return r.text;
  if (format == "csv") {
    auto rows = split_csv(r.text + "\n");
    auto& raw = rows.at(0).raw;
    raw[raw.size() - 2] = std::to_string(index);
    return models::join(raw, ",");
  }
  ordered_json doc = ordered_json::parse(r.text);
  doc["point_index"] = index;
  return doc.dump();
}

MpiRank mpi_rank_from_environment() {
  MpiRank m;
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!size && !rank) return m;
  auto parse = [](const char* name, const char* text, int minimum) {
    if (!text) throw models::InputError(std::string(name) + " is not set while the other OMPI_COMM_WORLD_* variable is");
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < minimum || v > 1'000'000) {
      throw models::InputError(std::string(name) + "=\"" + text + "\": expected an integer of at least " +
                               std::to_string(minimum));
    }
    return static_cast<int>(v);
  };
  m.size = parse("OMPI_COMM_WORLD_SIZE", size, 1);
  m.rank = parse("OMPI_COMM_WORLD_RANK", rank, 0);
  if (m.rank >= m.size) {
    throw models::InputError("OMPI_COMM_WORLD_RANK=" + std::to_string(m.rank) + " is not below OMPI_COMM_WORLD_SIZE=" +
                             std::to_string(m.size));
  }
  return m;
}

int rank_of_point(std::size_t index, int size) {
  const auto n = static_cast<std::size_t>(std::max(1, size));
  const std::size_t round = index / n, position = index % n;
  return static_cast<int>(round % 2 == 0 ? position : n - 1 - position);
}

std::size_t point_of_rank(std::size_t round, int rank, int size) {
  const auto n = static_cast<std::size_t>(std::max(1, size));
  const auto r = static_cast<std::size_t>(rank);
  return round * n + (round % 2 == 0 ? r : n - 1 - r);
}

std::size_t merge_rank_files(const std::string& output, const std::string& format, std::ostream& log) {
  namespace fs = std::filesystem;
  const fs::path target(output);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".rank";
  std::map<int, fs::path> parts;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw models::InputError("--merge " + output + ": the folder " + folder.string() + " does not exist");
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    parts[std::stoi(digits)] = target.has_parent_path() ? entry.path() : fs::path(name);
  }
  if (parts.empty()) {
    throw models::InputError("--merge " + output + ": no rank files " + (folder / prefix).string() +
                             "<r> found; expected the parts a sweep under mpirun wrote with -o " + output);
  }
  std::vector<std::string> missing;
  const int n = parts.rbegin()->first + 1;
  for (int r = 0; r < n; ++r) {
    if (!parts.count(r)) missing.push_back(prefix + std::to_string(r));
  }
  if (!missing.empty()) {
    throw models::InputError("--merge " + output + ": found " + std::to_string(parts.size()) + " rank files up to rank " +
                             std::to_string(n - 1) + " but not " + models::join(missing) +
                             "; expected one file per rank (did every rank finish?)");
  }
  // Rank r computed the points rank_of_point gives it: a record that breaks this with size =
  // the number of files found means that some rank's file is missing.
  std::vector<StoredRecord> all;
  for (const auto& [rank, path] : parts) {
    for (auto& r : read_sweep_file(path.string(), format)) {
      if (rank_of_point(r.index, n) != rank) {
        throw models::InputError(path.string() + ":" + std::to_string(r.line) + ": point " + std::to_string(r.index) +
                                 " is not one rank " + std::to_string(rank) + " of " + std::to_string(n) +
                                 " computes: the sweep ran on more ranks than the " + std::to_string(n) +
                                 " files found (is " + prefix + std::to_string(n) + " missing?)");
      }
      all.push_back(std::move(r));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const StoredRecord& a, const StoredRecord& b) { return a.index < b.index; });
  // Every point up to the last one found: a rank whose file is missing altogether (the highest
  // ones leave no gap in the file names) leaves a gap here.
  constexpr std::size_t kNamed = 8;
  std::vector<std::string> gaps;
  std::size_t expected = 0;
  for (const auto& r : all) {
    for (; expected < r.index && gaps.size() <= kNamed; ++expected) gaps.push_back(std::to_string(expected));
    expected = std::max(expected, r.index + 1);
  }
  if (!gaps.empty()) {
    const bool more = gaps.size() > kNamed;
    if (more) gaps.resize(kNamed);
    throw models::InputError("--merge " + output + ": points " + models::join(gaps) + (more ? ", ..." : "") +
                             " are in none of the " + std::to_string(parts.size()) +
                             " rank files found; expected every point (did the sweep run on more ranks, or did a rank "
                             "not finish?)");
  }
  std::string text = format == "csv" ? sweep_csv_header() : "";
  std::set<std::string> seen;
  std::size_t duplicates = 0, count = 0;
  for (const auto& r : all) {
    if (!seen.insert(r.key).second) {
      ++duplicates;
      continue;
    }
    text += r.text + "\n";
    ++count;
  }
  models::write_file_atomically(output, text);
  for (const auto& [rank, path] : parts) fs::remove(path, ec);
  log << "merged " << count << " records from " << parts.size() << " rank files into " << output;
  if (duplicates) log << " (" << duplicates << " duplicate points dropped)";
  log << "\n";
  return count;
}

}  // namespace gradsync::experiments
