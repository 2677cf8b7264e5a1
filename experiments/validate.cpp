#include "experiments/validate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "experiments/inputs.h"
#include "experiments/reproduce/training_runs.h"
#include "experiments/table.h"
#include "models/support/stats.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/topology/topology_io.h"
#include "models/support/process.h"
#include "models/support/progress.h"
#include "runtime/testbed/testbed.h"

namespace gradsync::experiments {

namespace fs = std::filesystem;

std::vector<std::string> default_strategy_items() {
  std::vector<std::string> items;
  for (const models::Strategy* s : models::all_strategies()) {
    if (!s->needs_workload) items.push_back(s->name);
  }
  return items;
}

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::vector<std::string> local_mpirun(int n, const std::string& hostfile) {
  std::vector<std::string> command = {"mpirun", "--oversubscribe", "-np", std::to_string(n), "--bind-to", "none"};
  for (std::string& o : testbed::mpirun_job_options()) command.push_back(std::move(o));
  if (!hostfile.empty()) {
    command.push_back("--hostfile");
    command.push_back(hostfile);
  }
  return command;
}

std::vector<std::string> mpirun_environment() {
  if (::geteuid() == 0) return {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
  return {};
}

namespace {

using models::median;

// Probes that disagree by more than this (median over pairs) measured the load, not the links.
constexpr double kBusySpread = 0.10;

// The GPUs `nvidia-smi -L` lists (0 without nvidia-smi).
int listed_gpus() {
  try {
    const auto r = models::run_process({"nvidia-smi", "-L"});
    int listed = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) listed += line.rfind("GPU ", 0) == 0;
    return r.status == 0 ? listed : 0;
  } catch (const std::exception&) {
    return 0;  // no nvidia-smi: no GPU to use
  }
}

// --here's backend when none is given: NCCL when nvidia-smi lists a GPU for each of the
// most ranks asked for, mpi_cuda when fewer (ranks then share GPUs, which NCCL refuses),
// else host ranks.
std::string detect_backend(int ranks) {
  const int listed = listed_gpus();
  if (listed >= ranks) return "nccl";
  if (listed > 0) return "mpi_cuda";
  return "mpi_host";
}

// Is CUDA's Multi-Process Service up (its control daemon's pipe in CUDA_MPS_PIPE_DIRECTORY,
// by default /tmp/nvidia-mps)? Without it a GPU runs one process's context at a time.
bool mps_running() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  std::error_code ec;
  return fs::exists(fs::path(dir && *dir ? dir : "/tmp/nvidia-mps") / "control", ec);
}

}  // namespace

std::string percent(double predicted, double measured) {
  if (predicted < 0 || !(measured > 0)) return "-";
  return models::format_percent((predicted - measured) / measured, 1);
}

// Parameters that place the schedule as gradsync-run does: a synchronous server runs on
// rank 0's process, so the models put it on rank 0's endpoint too.
std::vector<std::string> params_for(const StrategyItem& item) {
  std::vector<std::string> params = item.params;
  const auto given = models::SyncParams::parse(item.params).get("server");
  const auto specs = models::params_of(models::find_strategy(item.name));
  const bool has_server =
      std::any_of(specs.begin(), specs.end(), [](const models::ParamSpec& p) { return p.name == "server"; });
  if (has_server && !given) params.push_back("server=rank0");
  return params;
}

std::uint64_t default_measure_size(const std::vector<double>& sizes, const std::vector<int>& gpus) {
  std::vector<double> messages;
  for (double bytes : sizes) {
    for (int n : gpus) messages.push_back(bytes / std::max(1, n));
  }
  constexpr double kSmallest = 64 * 1024;
  if (messages.empty()) return static_cast<std::uint64_t>(kSmallest);
  std::sort(messages.begin(), messages.end());
  return static_cast<std::uint64_t>(std::max(kSmallest, std::round(messages[messages.size() / 2])));
}

StrategyItem parse_strategy_item(const std::string& text) {
  StrategyItem item;
  std::stringstream in(text);
  std::string part;
  std::getline(in, item.name, ':');
  const models::Strategy& s = models::find_strategy(item.name);
  const auto specs = models::params_of(s);
  while (std::getline(in, part, ':')) {
    const auto eq = part.find('=');
    const std::string key = part.substr(0, eq);
    if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
      throw models::InputError("--strategies " + text + ": \"" + part + "\" is not key=value (expected e.g. hierarchical:k=2)");
    }
    if (std::none_of(specs.begin(), specs.end(), [&](const models::ParamSpec& p) { return p.name == key; })) {
      std::vector<std::string> names;
      for (const auto& p : specs) names.push_back(p.name);
      throw models::InputError("--strategies " + text + ": " + item.name + " has no parameter \"" + key + "\"" +
                               models::did_you_mean(key, names));
    }
    if (key == "server" && part.substr(eq + 1) != "rank0") {
      throw models::InputError("--strategies " + text + ": the real run puts a synchronous server on rank 0's process; "
                               "expected server=rank0 or no server");
    }
    item.params.push_back(part);
  }
  return item;
}

std::vector<ValidationPoint> run_validation(const ValidateOptions& o) {
  if (!o.here && !testbed::running_as_root()) {
    throw models::InputError("validate: needs root (it builds the emulated cluster); --here validates on this machine's "
                             "own devices without one");
  }
  if (!o.here && !o.backend.empty()) {
    throw models::InputError("validate --backend " + o.backend + ": only with --here (the emulated cluster runs host ranks)");
  }
  if (!o.here && !o.hostfile.empty()) throw models::InputError("validate --hostfile: only with --here");
  if (o.to_target) (void)target_test_loss(models::load_workload(o.target_workload), o.target_workload);  // before the testbed
  const std::string bin = self_dir();
  const std::string run = o.run_binary.empty() ? bin + "/gradsync-run" : o.run_binary;
  const int max_gpus = *std::max_element(o.gpus.begin(), o.gpus.end());
  const std::string backend = o.here ? (o.backend.empty() ? detect_backend(max_gpus) : o.backend) : "";
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  if (ec) throw models::InputError("validate -o " + o.output_dir + ": cannot create the folder: " + ec.message());

  // 1. The testbed (not --here), and the endpoints to measure.
  std::string where;
  std::vector<std::string> gpus;
  std::optional<models::Guardian> guard;
  std::vector<std::string> measure_command;
  models::ProcessOptions process;
  process.env = mpirun_environment();
  if (o.here) {
    if (max_gpus < 2) throw models::InputError("validate --here --gpus: expected counts of 2 ranks or more");
    where = "this machine (" + std::to_string(max_gpus) + " ranks, backend " + backend +
            (o.hostfile.empty() ? "" : ", hosts of " + o.hostfile) + ")";
    measure_command = local_mpirun(max_gpus, o.hostfile);
    if (backend == "mpi_cuda" && o.hostfile.empty()) {
      const int listed = listed_gpus();
      if (listed > 0 && listed < max_gpus && !mps_running()) {
        std::cerr << "validate: note: up to " << max_gpus << " ranks share " << listed << " GPU" << (listed == 1 ? "" : "s")
                  << " without MPS: the GPU runs one process at a time, so a kernel or copy may wait for other "
                     "ranks' time slices, which no model here includes (start nvidia-cuda-mps-control -d to share "
                     "it at once)\n";
      }
    }
  } else {
    const auto loaded = load_topology_arg(o.topology);
    const auto plan = testbed::plan_testbed(loaded.topology, o.scale);
    for (std::size_t g : loaded.topology.gpus()) gpus.push_back(loaded.topology.node(g).id);
    if (max_gpus > static_cast<int>(gpus.size())) {
      throw models::InputError("validate --gpus: topology " + o.topology + " has " + std::to_string(gpus.size()) + " GPUs");
    }
    // Taken down at the end, also when validate is interrupted or killed (unless kept).
    if (!(o.keep_testbed || o.reuse_testbed)) guard.emplace(std::vector<std::string>{bin + "/gradsync", "testbed", "down"});
    if (!o.reuse_testbed) {
      std::cerr << "validate: building the testbed of " << plan.name << " (bandwidths x " << o.scale << ")\n";
      testbed::testbed_up(plan);
    }
    std::ostringstream text;
    text << "testbed of " << plan.name << " (bandwidths x " << o.scale << ")";
    where = text.str();
    measure_command = testbed::testbed_mpirun(0, gpus);
  }

  // 2. Measure the endpoints.
  const std::string measured = o.output_dir + "/measured.json";
  // What each point synchronises: a size, or a workload's training step.
  struct Case {
    double bytes = 0;
    std::optional<models::Workload> workload;
  };
  std::vector<Case> cases;
  std::vector<double> case_bytes;
  // A workload keeps its layers with workload_scale of their bytes and compute. On the testbed the
  // links run at `scale` of the machine's, so the compute runs 1/scale slower as well: the step's
  // compute : communication stays the machine's. DDP's bucket sizes shrink with the bytes, so the
  // buckets hold the layers they would hold at full size.
  const double compute_factor = o.here ? o.workload_scale : o.workload_scale / o.scale;
  std::optional<models::OverlapSettings> overlap = o.overlap;
  if (overlap) {
    overlap->bucket_cap_bytes *= o.workload_scale;
    overlap->first_bucket_bytes *= o.workload_scale;
  }
  // The emulated GPUs' compute occupies no host core (sleep); host ranks compute on theirs (busy).
  const std::string compute_work = !o.compute_work.empty() ? o.compute_work : o.here && backend == "mpi_host" ? "busy" : "sleep";
  if (o.workloads.empty()) {
    for (double b : o.sizes) cases.push_back({b, std::nullopt});
  } else {
    for (const std::string& name : o.workloads) {
      const models::Workload w = models::scaled(models::load_workload(name), o.workload_scale, compute_factor);
      cases.push_back({w.gradient_bytes(), w});
    }
  }
  for (const Case& c : cases) case_bytes.push_back(c.workload && overlap ? std::min(c.bytes, overlap->bucket_cap_bytes) : c.bytes);
  const std::string probe_size =
      o.measure_size.empty() ? std::to_string(default_measure_size(case_bytes, o.gpus)) : o.measure_size;
  std::cerr << "validate: measuring " << (o.here ? max_gpus : static_cast<int>(gpus.size())) << " endpoints ("
            << (o.measure_size.empty() ? models::format_bytes(std::stod(probe_size)) + " probes, the runs' typical message"
                                       : o.measure_size + " probes")
            << ")\n";
  const auto measure = [&](std::vector<std::string> command, const std::string& file) {
    for (const std::string& a : {run, std::string("measure"), std::string("-o"), file, std::string("--size"), probe_size,
                                 std::string("-n"), std::to_string(o.measure_iterations)}) {
      command.push_back(a);
    }
    if (o.here) {
      command.push_back("--backend");
      command.push_back(backend);
    }
    const auto r = models::run_process(command, process);
    if (r.status != 0) {
      throw models::InputError("validate: the measurement failed (`" + models::join(command, " ") + "`):\n" + r.out);
    }
  };
  measure(measure_command, measured);
  const auto topo = models::load_topology_file(measured);
  const models::Topology& t = topo.topology;
  if (o.here) {
    for (std::size_t g : t.gpus()) gpus.push_back(t.node(g).id);
  }
  // How much the measurement's repeated probes disagreed: on a busy machine the links'
  // figures (and every prediction made from them) are less sure, and validate says so.
  std::string spread_line;
  bool too_busy = false;
  if (t.measured() && t.measured()->bandwidth_spread) {
    std::vector<double> spreads;
    const auto& m = *t.measured()->bandwidth_spread;
    for (std::size_t i = 0; i < m.size(); ++i) {
      for (std::size_t j = 0; j < m.size(); ++j) {
        if (m.at(i, j)) spreads.push_back(*m.at(i, j));
      }
    }
    if (!spreads.empty()) {
      const double med = median(spreads), most = *std::max_element(spreads.begin(), spreads.end());
      too_busy = med > kBusySpread;
      spread_line = "measurement: the repeated probes of a pair disagreed by " + models::format_percent(med, 1) +
                    " (median over pairs, robust), " + models::format_percent(most, 1) + " at most";
      if (too_busy) {
        spread_line += "; above " + format_fixed(100 * kBusySpread, 0) +
                       " %: the machine was too busy to measure, so the errors below say more about the load than "
                       "about the models";
      }
      std::cerr << "validate: " << spread_line << "\n";
    }
  }

  if (o.to_target) {
    auto launcher = [&](int n) {
      return o.here ? local_mpirun(n, o.hostfile)
                    : testbed::testbed_mpirun(0, std::vector<std::string>(gpus.begin(), gpus.begin() + n));
    };
    const int measured_ranks = o.here ? max_gpus : static_cast<int>(gpus.size());
    std::set<int> done;
    auto measured_for = [&](int n) {
      if (n == measured_ranks) return measured;
      const std::string file = o.output_dir + "/measured-" + std::to_string(n) + "ranks.json";
      if (done.insert(n).second) {
        std::cerr << "validate: measuring the first " << n << " endpoints, for the runs of " << n << " GPUs\n";
        measure(launcher(n), file);
      }
      return file;
    };
    return validate_to_target(o, measured_for, where, spread_line, launcher);
  }

  // 3. Every point: every predicting executor, then the real run (the measuring one).
  std::vector<const models::Executor*> predictors;
  const models::Executor* measuring = nullptr;
  for (const models::Executor* x : models::all_executors()) {
    if (x->measures()) {
      if (!measuring) measuring = x;
    } else {
      predictors.push_back(x);
    }
  }
  if (!measuring) throw std::logic_error("validate: no measuring executor is registered");
  const std::vector<std::string> items = o.strategies.empty() ? default_strategy_items() : o.strategies;
  std::vector<ValidationPoint> points;
  std::vector<models::ResultRecord> records;
  std::vector<std::string> skipped;
  const std::size_t total = o.gpus.size() * items.size() * cases.size();
  models::Progress progress = models::Progress::for_stderr(total);
  for (int n : o.gpus) {
    const std::vector<std::string> nodes(gpus.begin(), gpus.begin() + n);
    for (const auto& strategy : items) {
      const StrategyItem item = parse_strategy_item(strategy);
      for (const Case& c : cases) {
        const double bytes = c.bytes;
        progress.step(strategy + " on " + std::to_string(n) + " GPUs, " + (c.workload ? c.workload->name : format_bytes(bytes)));
        ValidationPoint p;
        p.strategy = strategy;
        p.ranks = n;
        p.bytes = bytes;
        models::PredictRequest q;
        q.topology = &t;
        if (c.workload) {
          p.workload = c.workload->name;
          q.workload = &*c.workload;
          q.overlap = overlap;
        } else {
          q.bytes = bytes;
        }
        q.strategy = &models::find_strategy(item.name);
        q.params = models::SyncParams::parse(params_for(item));
        q.placement = models::first_gpus(t, n);
        // NCCL runs every round in lockstep: an asynchronous server cannot run on it.
        if (backend == "nccl" && models::build_schedule(q).schedule.asynchronous) {
          const std::string why = strategy + " on " + std::to_string(n) + " GPUs: asynchronous, which the nccl backend "
                                  "cannot run (--backend mpi_cuda can)";
          if (std::find(skipped.begin(), skipped.end(), why) == skipped.end()) skipped.push_back(why);
          continue;
        }
        double longest = 0;
        for (const models::Executor* x : predictors) {
          if (!x->covers(*q.strategy)) continue;
          auto r = x->evaluate(q, models::ExecutorSettings{});
          const double time = c.workload ? r.time_per_iteration_s.value_or(0) : r.time_per_sync_s;
          p.predicted_s[x->name()] = time;
          longest = std::max(longest, time);
          records.push_back(std::move(r));
        }
        // The real run, on the same measured topology (so ring order and groups agree). A
        // rank waiting in a barrier sees no progress of its own while the others transfer:
        // the watchdog's limit must exceed the longest step the models predict, by far.
        models::ExecutorSettings settings;
        settings.run.launcher = o.here ? local_mpirun(n, o.hostfile) : testbed::testbed_mpirun(0, nodes);
        settings.run.backend = backend;
        settings.run.program = run;
        settings.run.topology_file = measured;
        settings.run.iterations = o.iterations;
        settings.run.warmup = 1;
        settings.run.check = true;
        settings.run.compute_work = compute_work;
        settings.run.timeout_s = std::ceil(std::max(20.0, 20 * longest));
        settings.run.note = o.here ? "measured on " + where : "measured on the emulated cluster (bandwidths x " + std::to_string(o.scale) + ")";
        models::ResultRecord r = measuring->evaluate(q, settings);
        p.measured_s = c.workload ? r.time_per_iteration_s.value_or(0) : r.time_per_sync_s;
        p.wrong = r.wrong_elements.value_or(0);
        records.push_back(std::move(r));
        points.push_back(p);
      }
    }
  }
  progress.finish();

  // The platform's own collective at every GPU count and size (--here): MPI_Allreduce on host
  // ranks and mpi_cuda, NCCL's ncclAllReduce on the nccl backend (predicted by the nccl
  // strategy). A reference row: no error summary or ranking counts it.
  std::vector<ValidationPoint> references;
  if (o.here && o.workloads.empty()) {
    const bool nccl = backend == "nccl";
    for (int n : o.gpus) {
      for (double bytes : o.sizes) {
        const std::string file = o.output_dir + "/reference.jsonl";
        auto command = local_mpirun(n, o.hostfile);
        const std::string size = std::to_string(static_cast<long long>(bytes));
        for (const std::string& a : {run, std::string("--backend"), backend, std::string("-b"), size, std::string("-n"),
                                     std::to_string(o.iterations), std::string("-w"), std::string("1"), std::string("-o"), file}) {
          command.push_back(a);
        }
        for (const std::string& a : nccl ? std::vector<std::string>{"--strategy", "nccl"}
                                         : std::vector<std::string>{"--strategy", models::default_strategy().name,
                                                                    "--vs-mpi-allreduce"}) {
          command.push_back(a);
        }
        const auto r = models::run_process(command, process);
        std::ifstream in(file);
        std::optional<models::ResultRecord> found;
        for (std::string line; std::getline(in, line) && !found;) {
          models::ResultRecord rec = models::record_from_json(models::ordered_json::parse(line));
          if (nccl || rec.strategy == "MPI_Allreduce") found = std::move(rec);
        }
        std::error_code ignored;
        fs::remove(file, ignored);
        if (r.status != 0 || !found) {
          throw models::InputError("validate: the reference run failed (`" + models::join(command, " ") + "`):\n" + r.out);
        }
        ValidationPoint p;
        p.strategy = nccl ? "ncclAllReduce" : "MPI_Allreduce";
        p.ranks = n;
        p.bytes = bytes;
        p.measured_s = found->time_per_sync_s;
        if (nccl) {
          models::PredictRequest q;
          q.topology = &t;
          q.bytes = bytes;
          q.strategy = &models::find_strategy("nccl");
          q.placement = models::first_gpus(t, n);
          for (const models::Executor* x : predictors) {
            auto pr = x->evaluate(q, models::ExecutorSettings{});
            p.predicted_s[x->name()] = pr.time_per_sync_s;
            records.push_back(std::move(pr));
          }
        }
        found->notes.push_back("reference: the platform's own collective, measured on " + where);
        records.push_back(std::move(*found));
        references.push_back(p);
      }
    }
  }

  // 4. The table and the summary: a time and an error column per predicting executor.
  const bool steps = !o.workloads.empty();
  std::vector<std::string> headers = {"strategy", ">GPUs", steps ? "workload" : ">size", ">measured"};
  for (const models::Executor* x : predictors) {
    headers.push_back(">" + x->name());
    headers.push_back(">error");
  }
  headers.push_back(">#wrong");
  Table table(headers);
  std::map<std::string, std::vector<double>> errors;
  for (const auto& p : points) {
    std::vector<std::string> row = {p.strategy, std::to_string(p.ranks), steps ? p.workload : format_bytes(p.bytes),
                                    format_seconds(p.measured_s)};
    for (const models::Executor* x : predictors) {
      const auto it = p.predicted_s.find(x->name());
      const double predicted = it == p.predicted_s.end() ? -1 : it->second;
      row.push_back(predicted < 0 ? std::string("-") : format_seconds(predicted));
      row.push_back(percent(predicted, p.measured_s));
      if (predicted >= 0 && (steps || p.bytes >= (1 << 20))) errors[x->name()].push_back(std::fabs(predicted - p.measured_s) / p.measured_s);
    }
    row.push_back(std::to_string(p.wrong));
    table.add_row(row);
  }
  for (const auto& p : references) {
    std::vector<std::string> row = {p.strategy + " (reference)", std::to_string(p.ranks), format_bytes(p.bytes),
                                    format_seconds(p.measured_s)};
    for (const models::Executor* x : predictors) {
      const auto it = p.predicted_s.find(x->name());
      const double predicted = it == p.predicted_s.end() ? -1 : it->second;
      row.push_back(predicted < 0 ? std::string("-") : format_seconds(predicted));
      row.push_back(percent(predicted, p.measured_s));
    }
    row.push_back("-");
    table.add_row(row);
  }
  std::cout << "gradsync validate: " << where << ", measured topology " << measured << "\n";
  if (!spread_line.empty()) std::cout << spread_line << "\n";
  if (steps) {
    std::cout << "times: the training step (iteration) of each workload"
              << (o.workload_scale != 1 ? " scaled by " + models::number_text(o.workload_scale, 3) + " (the same layers)" : "")
              << (compute_factor != o.workload_scale
                      ? ", its compute " + models::number_text(compute_factor / o.workload_scale, 3) + "x slower like the links"
                      : "")
              << ", " << (overlap ? "its buckets synchronised beside the backward pass" : "compute, then the gradient's synchronisation")
              << (overlap && o.workload_scale != 1 ? " (buckets of " + models::format_bytes(overlap->bucket_cap_bytes) + ", the first " +
                                                         models::format_bytes(overlap->first_bucket_bytes) + ": DDP's scaled alike)"
                                                   : "")
              << "; the real step's compute as " << (compute_work == "busy" ? "busy work" : "sleep") << "\n";
  }
  std::cout << "\n" << table.render() << "\n";
  if (backend.empty() || backend == "mpi_host") {
    std::cout << "note: the " << (o.here ? "host ranks" : "emulated GPUs") << " are " << max_gpus << " processes sharing "
              << std::thread::hardware_concurrency()
              << " cores; the models give each its own links, and local work the rate measured with as many ranks "
                 "at work at once\n";
  }
  for (const auto& line : skipped) std::cout << "not run: " << line << "\n";
  for (const models::Executor* x : predictors) {
    const auto& e = errors[x->name()];
    if (e.empty()) continue;
    std::cout << x->name() << ": median |error| " << models::format_percent(median(e), 1) << ", max "
              << models::format_percent(*std::max_element(e.begin(), e.end()), 1) << " over " << e.size()
              << (steps ? " training steps" : " points of at least 1 MiB") << (x->traces() ? " (targets: median <= 5 %, max <= 15 %)" : "") << "\n";
  }
  // Which strategy is fastest at each GPU count and size: measured, and by each model.
  if (items.size() > 1) {
    std::map<std::pair<int, double>, std::vector<const ValidationPoint*>> groups;
    for (const auto& p : points) groups[{p.ranks, p.bytes}].push_back(&p);
    for (const auto& [key, points_here] : groups) {
      const auto& group = points_here;  // a plain reference: clang 14 lets no lambda capture a structured binding
      auto fastest = [&](const std::function<double(const ValidationPoint&)>& time) {
        const ValidationPoint* best = nullptr;
        for (const auto* p : group) {
          if (time(*p) >= 0 && (!best || time(*p) < time(*best))) best = p;
        }
        return best;
      };
      const auto* measured_best = fastest([](const ValidationPoint& p) { return p.measured_s; });
      std::cout << "fastest at " << key.first << " GPUs, " << (steps ? group.front()->workload : format_bytes(key.second)) << ": measured "
                << measured_best->strategy << " (" << format_seconds(measured_best->measured_s) << ")";
      for (const models::Executor* x : predictors) {
        // An executor ranks the strategies only when it times every one of them.
        const bool all = std::all_of(group.begin(), group.end(), [&](const ValidationPoint* p) { return p->predicted_s.count(x->name()) > 0; });
        if (!all) continue;
        const auto* b = fastest([&](const ValidationPoint& p) {
          const auto it = p.predicted_s.find(x->name());
          return it == p.predicted_s.end() ? -1.0 : it->second;
        });
        if (b) std::cout << "; " << x->name() << " " << b->strategy << (b == measured_best ? " (agrees)" : " (differs)");
      }
      std::cout << "\n";
    }
  }
  std::string text;
  for (const auto& r : records) text += models::to_json_line(r);
  models::write_file_atomically(o.output_dir + "/validation.jsonl", text);
  std::string csv = models::csv_header();
  for (const auto& r : records) csv += models::to_csv_row(r);
  models::write_file_atomically(o.output_dir + "/validation.csv", csv);
  std::cout << "wrote " << o.output_dir << "/validation.jsonl and .csv (" << records.size() << " records); plot: "
            << "/usr/bin/python3 plots/predicted_vs_measured.py " << o.output_dir << "/validation.jsonl -o " << o.output_dir
            << "/predicted-vs-measured.png\n";
  return points;
}

}  // namespace gradsync::experiments
