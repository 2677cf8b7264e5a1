#include "experiments/reproduce/common.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "models/support/error.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments::reproduce {

using models::ordered_json;

std::size_t Batch::add(const models::Topology& topology, const models::Workload* workload, std::optional<double> bytes,
                       const std::string& strategy, const std::map<std::string, std::string>& params,
                       const models::Placement& placement, const std::string& executor, ordered_json tag,
                       std::optional<models::OverlapSettings> overlap) {
  Job job;
  job.request.topology = &topology;
  job.request.workload = workload;
  job.request.bytes = bytes;
  job.request.strategy = &models::find_strategy(strategy);
  for (const auto& [k, v] : params) job.request.params.set(k, v);
  job.request.placement = placement;
  job.request.overlap = overlap;
  job.executor = &models::find_executor(executor);
  job.label = executor + " " + strategy + " N=" + std::to_string(placement.size()) + " on " + topology.name();
  if (overlap) job.label += ", overlapped";
  if (tag.contains("part")) job.label += " (" + tag.at("part").get<std::string>() + ")";
  jobs_.push_back(std::move(job));
  tags_.push_back(std::move(tag));
  return jobs_.size() - 1;
}

void Batch::run(int jobs) {
  std::vector<Job> todo(jobs_.begin() + static_cast<std::ptrdiff_t>(evaluated_), jobs_.end());
  const auto outcomes = evaluate_all(todo, jobs, true);
  outcomes_.insert(outcomes_.end(), outcomes.begin(), outcomes.end());
  evaluated_ = jobs_.size();
}

const models::ResultRecord& Batch::record(std::size_t id) const {
  const Outcome& o = outcomes_.at(id);
  if (!o.record) throw models::InputError(jobs_.at(id).label + ": " + o.error);
  return *o.record;
}

namespace {

std::string tag_text(const ordered_json& tag) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : tag.items()) parts.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  return models::join(parts, ";");
}
}  // namespace

void Batch::write(const std::string& dir, const std::string& stem) const {
  std::string jsonl, csv = models::csv_header();
  csv.pop_back();
  csv += ",reproduce\n";
  for (std::size_t i = 0; i < outcomes_.size(); ++i) {
    if (!outcomes_[i].record) continue;
    ordered_json j = models::to_json(*outcomes_[i].record);
    j["reproduce"] = tags_[i];
    jsonl += j.dump() + "\n";
    std::string row = models::to_csv_row(*outcomes_[i].record);
    row.pop_back();
    csv += row + "," + models::csv_escape(tag_text(tags_[i])) + "\n";
  }
  write_text(dir, stem + ".jsonl", jsonl);
  write_text(dir, stem + ".csv", csv);
}

double speedup_without_overlap(const models::ResultRecord& r) {
  if (!r.overlap || r.overlap->iteration_without_s <= 0 || !r.time_per_iteration_s) return r.speedup_vs_1gpu.value_or(0);
  return r.speedup_vs_1gpu.value_or(0) * *r.time_per_iteration_s / r.overlap->iteration_without_s;
}

double percent_error(double model, double paper) { return 100.0 * (model - paper) / paper; }

std::string ms(double seconds) { return models::format_fixed(seconds * 1e3, seconds < 0.01 ? 3 : 2) + " ms"; }

LineFit least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  LineFit f;
  const double d = n * sxx - sx * sx;
  f.slope = d != 0 ? (n * sxy - sx * sy) / d : 0;
  f.intercept = n > 0 ? (sy - f.slope * sx) / n : 0;
  return f;
}

models::Placement paper_placement(const models::Topology& topology, int n) {
  if (n == 2) return models::named_gpus(topology, {"gpu0", "gpu2"});
  return models::first_gpus(topology, n);
}

void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw models::InputError("-o " + dir + ": cannot create the folder (" + (ec ? ec.message() : "not a folder") + ")");
  }
}

void write_text(const std::string& dir, const std::string& name, const std::string& text) {
  models::write_file_atomically((std::filesystem::path(dir) / name).string(), text);
}

void write_outputs(const std::string& dir, const std::string& name, const Batch& batch,
                   const models::ordered_json& comparison, Report& report) {
  batch.write(dir, name);
  write_text(dir, name + "-comparison.json", comparison.dump(1) + "\n");
  report << "wrote " << dir << "/" << name << ".jsonl, " << name << ".csv (" << batch.size() << " records), " << name
         << "-comparison.json, " << name << ".txt\n";
  write_text(dir, name + ".txt", report.text());
}

}  // namespace gradsync::experiments::reproduce
