// What the paper reproductions share: batches of tagged points evaluated together (in
// parallel, through experiments::evaluate), result files (JSON lines + CSV), a report
// that is printed and kept as text, and the small fitting steps (closed forms and least
// squares) whose inputs every reproduction prints.
//
// Result files of `gradsync reproduce`: DIR/<source>.jsonl and DIR/<source>.csv hold the
// ordinary records (models/executors/result.h) plus a "reproduce" member (CSV: column) saying which
// part of the reproduction a record belongs to and its swept value (latency_us,
// vocabulary, T, ...); DIR/<source>-comparison.json holds the paper-vs-model tables and
// the fits' inputs; DIR/<source>.txt the printed report.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/sweep.h"
#include "models/executors/result.h"
#include "models/topology/placement.h"
#include "models/topology/topology.h"
#include "models/workload/step.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::reproduce {

struct Options {
  std::string out_dir = "out/reproduce";
  int jobs = 1;
  bool quick = false;  // fewer points (tests)
};

// Points evaluated together. Topologies and workloads must outlive the batch.
class Batch {
 public:
  // Returns the point's id. With `overlap`, the workload's buckets are synchronised beside its
  // backward pass (models/workload/step.h).
  std::size_t add(const models::Topology& topology, const models::Workload* workload, std::optional<double> bytes,
                  const std::string& strategy, const std::map<std::string, std::string>& params,
                  const models::Placement& placement, const std::string& executor, models::ordered_json tag,
                  std::optional<models::OverlapSettings> overlap = std::nullopt);
  // Evaluates every point added since the last run (progress on stderr).
  void run(int jobs);
  bool ok(std::size_t id) const { return outcomes_.at(id).record.has_value(); }
  const std::string& error(std::size_t id) const { return outcomes_.at(id).error; }
  // The record; throws InputError with the point's error when it could not be evaluated.
  const models::ResultRecord& record(std::size_t id) const;
  std::size_t size() const { return jobs_.size(); }
  // DIR/stem.jsonl and DIR/stem.csv (evaluated points only).
  void write(const std::string& dir, const std::string& stem) const;

 private:
  std::vector<Job> jobs_;
  std::vector<models::ordered_json> tags_;
  std::vector<Outcome> outcomes_;
  std::size_t evaluated_ = 0;
};

// Text that goes to the terminal and into DIR/<source>.txt.
class Report {
 public:
  explicit Report(std::ostream& out) : out_(out) {}
  template <typename T>
  Report& operator<<(const T& v) {
    std::ostringstream s;
    s << v;
    out_ << s.str();
    text_ += s.str();
    return *this;
  }
  const std::string& text() const { return text_; }

 private:
  std::ostream& out_;
  std::string text_;
};

// The speed-up the record would have with compute, then one synchronisation of the whole
// gradient: its own speed-up without overlap figures, else rescaled by the iteration without.
double speedup_without_overlap(const models::ResultRecord& r);

// 100 * (model - paper) / paper
double percent_error(double model, double paper);
std::string ms(double seconds);  // "12.34 ms"

// y = intercept + slope * x, least squares.
struct LineFit {
  double slope = 0, intercept = 0;
};
LineFit least_squares(const std::vector<double>& x, const std::vector<double>& y);

// Source A's placement: two-GPU runs on GPUs 0 and 2 (both switches), else the first N.
models::Placement paper_placement(const models::Topology& topology, int n);

// Creates DIR (and parents); InputError when it cannot.
void make_dir(const std::string& dir);
void write_text(const std::string& dir, const std::string& name, const std::string& text);
// DIR/NAME.jsonl and .csv (the records), DIR/NAME-comparison.json, and DIR/NAME.txt (the report,
// ending with the list of what was written).
void write_outputs(const std::string& dir, const std::string& name, const Batch& batch,
                   const models::ordered_json& comparison, Report& report);

// Individual reproductions; each prints its report to `out` and writes its files.
void source_a(const Options& options, std::ostream& out);
void source_b(const Options& options, std::ostream& out);
void source_c(const Options& options, std::ostream& out);
// Sources C and D's convergence claims, and source A's about sampling on the language model, on
// real training (gradsync-train under a local mpirun).
void convergence(const Options& options, std::ostream& out);
// Source C's 3x / 5x / 9x shape: model averaging on 2 to 16 workers trained to the baseline's
// target (experiments/reproduce/convergence_scaling.cpp).
void convergence_scaling(const Options& options, std::ostream& out);

}  // namespace gradsync::experiments::reproduce
