// Executors: the ways gradsync gets a time for one strategy on a placement of a topology —
// the papers' closed forms (formula), the analytic model of the strategy's schedule
// (analytic), a SimGrid simulation of it (sim, in sim/), a real run of it under mpirun
// (run, in runtime/testbed/). Each implements Executor and registers itself from its own
// file; predict, simulate, sweep, the reproductions and validate iterate the registry.
// Every record's header (strategy, placement, resolved parameters, notes) comes from
// record_header(), whichever executor fills in the times.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/executors/result.h"
#include "models/executors/trace.h"

namespace gradsync::models {

// The simulator's settings (experiment JSON and `gradsync simulate` flags).
struct SimSettings {
  std::string network_model = "CM02";  // CM02 (figures as given) or LV08 (SimGrid's default TCP model)
  std::optional<double> latency_factor;  // override the network model's factors (e.g. calibrated from a run)
  std::optional<double> bandwidth_factor;
  int iterations = 0;  // training steps to simulate; 0: enough for two synchronisations (at least 10)
  std::vector<double> speeds;  // per rank
  double jitter_cv = 0;
  std::uint64_t seed = 1;
  bool trace = false;
};

// A real run's settings: gradsync-run under mpirun, here or in the emulated cluster.
struct RunSettings {
  // The command that starts one process per rank; the program and its arguments follow.
  // Empty: mpirun --oversubscribe -np N with testbed::mpirun_job_options() (as root, with
  // OpenMPI's consent variables set).
  std::vector<std::string> launcher;
  std::string program;  // gradsync-run; empty: the one next to this program
  std::string topology_file;  // what gradsync-run builds the schedule for; empty: the request's topology, written out
  int iterations = 5;
  int warmup = 1;
  bool check = true;  // every element checked; a wrong one fails the point
  double timeout_s = 0;  // gradsync-run --timeout; 0: its default
  std::string note;  // added to every record ("measured on the emulated cluster ...")
  std::string backend;  // gradsync-run --backend; empty: its default (mpi_host)
  std::string compute_work = "busy";  // a workload's step: gradsync-run --compute-work (busy or sleep)
};

struct ExecutorSettings {
  SimSettings sim;
  RunSettings run;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;  // "analytic"
  virtual std::string summary() const = 0;  // one line for help texts
  // Its place in listings and tables (formula, analytic, sim, run).
  virtual int order() const = 0;
  // A measurement (run) rather than a prediction: validation compares predictions with it.
  virtual bool measures() const { return false; }
  // Whether it can time this strategy at all (formula: only strategies with a closed form).
  virtual bool covers(const Strategy&) const { return true; }
  // Seconds or more per point (sim, run): commands show progress.
  virtual bool slow() const { return false; }
  // It can write a timeline (Chrome trace) of a point.
  virtual bool traces() const { return false; }
  // After its name in a table's heading: "SimGrid, network model CM02"; "" for nothing.
  virtual std::string describe(const ExecutorSettings&) const { return ""; }
  // A line under tables that show its figures; "" for none.
  virtual std::string footnote() const { return ""; }
  // One point. InputError when the request cannot be evaluated (bad parameters, no closed
  // form, a failed real run); `trace` (optional) receives a timeline where it makes one.
  virtual ResultRecord evaluate(const PredictRequest& request, const ExecutorSettings& settings,
                                Trace* trace = nullptr) const = 0;
};

// Registers an executor (from a static object in its file).
struct ExecutorRegistration {
  explicit ExecutorRegistration(std::unique_ptr<Executor> executor);
};

// Every registered executor, in listing order; those a binary links (gradsync has all four).
const std::vector<const Executor*>& all_executors();
std::vector<std::string> executor_names();
// The analytic model: what commands use when no executor is named, and what searches rank by.
const Executor& default_executor();
// Throws InputError "WHERE: unknown executor ... expected one of ..." for an unknown name.
const Executor& find_executor(const std::string& name, const std::string& where = "--executor");

// The header every record starts from: executor, topology, strategy, its parameters as
// resolved ("auto" replaced by what the build chose; "-" for resolved parameters the
// schedule did not use), ranks and their nodes, server, workload, bytes, period,
// asynchrony, the strategy's notes, and the bus-bandwidth factor.
ResultRecord record_header(const PredictRequest& request, const BuiltSchedule& built, const std::string& executor);

}  // namespace gradsync::models
