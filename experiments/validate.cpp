#include "experiments/validate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <iostream>
#include <sstream>
#include <thread>

#include "experiments/evaluate.h"
#include "experiments/inputs.h"
#include "experiments/table.h"
#include "models/error.h"
#include "models/topology_io.h"
#include "models/process.h"
#include "runtime/testbed/testbed.h"

namespace gradsync::experiments {

namespace fs = std::filesystem;

namespace {

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string percent(double predicted, double measured) {
  if (predicted < 0 || !(measured > 0)) return "-";
  return format_fixed(100 * (predicted - measured) / measured, 1) + "%";
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

}  // namespace

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
  if (!testbed::running_as_root()) throw models::InputError("validate: needs root (it builds the emulated cluster)");
  const std::string bin = self_dir();
  const std::string run = o.run_binary.empty() ? bin + "/gradsync-run" : o.run_binary;
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  if (ec) throw models::InputError("validate -o " + o.output_dir + ": cannot create the folder: " + ec.message());

  // 1. The testbed.
  const auto loaded = load_topology_arg(o.topology);
  const auto plan = testbed::plan_testbed(loaded.topology, o.scale);
  std::vector<std::string> gpus;
  for (std::size_t g : loaded.topology.gpus()) gpus.push_back(loaded.topology.node(g).id);
  const int max_gpus = *std::max_element(o.gpus.begin(), o.gpus.end());
  if (max_gpus > static_cast<int>(gpus.size())) {
    throw models::InputError("validate --gpus: topology " + o.topology + " has " + std::to_string(gpus.size()) + " GPUs");
  }
  // Taken down at the end, also when validate is interrupted or killed (unless kept).
  std::optional<models::Guardian> guard;
  if (!(o.keep_testbed || o.reuse_testbed)) guard.emplace(std::vector<std::string>{bin + "/gradsync", "testbed", "down"});
  if (!o.reuse_testbed) {
    std::cerr << "validate: building the testbed of " << plan.name << " (bandwidths x " << o.scale << ")\n";
    testbed::testbed_up(plan);
  }

  // 2. Measure the GPUs' endpoints.
  const std::string measured = o.output_dir + "/measured.json";
  std::cerr << "validate: measuring " << gpus.size() << " endpoints (" << o.measure_size << " probes)\n";
  {
    auto command = testbed::testbed_mpirun(0, gpus);
    for (const std::string& a : {run, std::string("measure"), std::string("-o"), measured, std::string("--size"),
                                 o.measure_size, std::string("-n"), std::to_string(o.measure_iterations)}) {
      command.push_back(a);
    }
    const auto r = models::run_process(command);
    if (r.status != 0) {
      throw models::InputError("validate: the measurement failed (`" + models::join(command, " ") + "`):\n" + r.out);
    }
  }
  const auto topo = models::load_topology_file(measured);
  const models::Topology& t = topo.topology;

  // 3. Every point: predictions, simulation, the real run.
  std::vector<ValidationPoint> points;
  std::vector<models::ResultRecord> records;
  const std::size_t total = o.gpus.size() * o.strategies.size() * o.sizes.size();
  const bool tty = ::isatty(STDERR_FILENO);
  std::size_t done = 0;
  for (int n : o.gpus) {
    const std::vector<std::string> nodes(gpus.begin(), gpus.begin() + n);
    for (const auto& strategy : o.strategies) {
      const StrategyItem item = parse_strategy_item(strategy);
      for (double bytes : o.sizes) {
        ++done;
        std::cerr << (tty ? "\r[" : "[") << done << "/" << total << "] " << strategy << " on " << n << " GPUs, "
                  << format_bytes(bytes) << (tty ? " ...          " : "\n") << std::flush;
        ValidationPoint p{strategy, n, bytes};
        models::PredictRequest q;
        q.topology = &t;
        q.bytes = bytes;
        q.strategy = &models::find_strategy(item.name);
        q.params = models::SyncParams::parse(params_for(item));
        q.placement = models::first_gpus(t, n);
        for (const std::string executor : {"formula", "analytic", "sim"}) {
          try {
            auto r = evaluate(q, executor, SimSettings{});
            (executor == std::string("formula") ? p.formula_s : executor == std::string("analytic") ? p.analytic_s : p.sim_s) =
                r.time_per_sync_s;
            records.push_back(std::move(r));
          } catch (const models::InputError&) {
            // no closed form for this strategy
          }
        }
        // The real run, on the same measured topology (so ring order and groups agree).
        const std::string run_records = o.output_dir + "/run-point.jsonl";
        // A rank waiting in a barrier sees no progress of its own while the others transfer:
        // the watchdog's limit must exceed the longest step the models predict, by far.
        const double timeout_s = std::ceil(std::max(20.0, 20 * std::max(p.sim_s, p.analytic_s)));
        auto command = testbed::testbed_mpirun(0, nodes);
        for (const std::string& a : {run, std::string("--strategy"), item.name}) command.push_back(a);
        for (const auto& kv : params_for(item)) {
          command.push_back("--param");
          command.push_back(kv);
        }
        for (const std::string& a :
             {std::string("--topology"), measured, std::string("-b"), std::to_string(static_cast<long long>(bytes)),
              std::string("-n"), std::to_string(o.iterations), std::string("-w"), std::string("1"), std::string("--check"),
              std::string("--timeout"), format_fixed(timeout_s, 0), std::string("-o"), run_records}) {
          command.push_back(a);
        }
        const auto r = models::run_process(command);
        std::ifstream in(run_records);
        std::string line;
        if (r.status != 0 || !std::getline(in, line)) {
          throw models::InputError("validate: the real run failed (`" + models::join(command, " ") + "`):\n" + r.out);
        }
        auto record = models::json::parse(line);
        p.measured_s = record.at("time_per_sync_s").get<double>();
        const std::string checked = r.out.find("Out of bounds values : 0 OK") != std::string::npos ? "0" : "?";
        p.wrong = checked == "0" ? 0 : 1;
        models::ResultRecord measured_record;
        measured_record.executor = "run";
        measured_record.topology = t.name();
        measured_record.strategy = item.name;
        measured_record.params = q.params.values();
        measured_record.ranks = n;
        measured_record.rank_nodes = nodes;
        measured_record.bytes = bytes;
        measured_record.time_per_sync_s = p.measured_s;
        measured_record.notes = {"measured on the emulated cluster (bandwidths x " + std::to_string(o.scale) + ")"};
        records.push_back(std::move(measured_record));
        points.push_back(p);
      }
    }
  }
  if (tty) std::cerr << "\r" << std::string(70, ' ') << "\r";
  fs::remove(o.output_dir + "/run-point.jsonl", ec);

  // 4. The table and the summary.
  Table table({"strategy", ">GPUs", ">size", ">measured", ">formula", ">error", ">analytic", ">error", ">sim", ">error", ">#wrong"});
  std::map<std::string, std::vector<double>> errors;
  for (const auto& p : points) {
    auto cell = [](double s) { return s < 0 ? std::string("-") : format_seconds(s); };
    table.add_row({p.strategy, std::to_string(p.ranks), format_bytes(p.bytes), format_seconds(p.measured_s), cell(p.formula_s),
                   percent(p.formula_s, p.measured_s), cell(p.analytic_s), percent(p.analytic_s, p.measured_s),
                   cell(p.sim_s), percent(p.sim_s, p.measured_s), std::to_string(p.wrong)});
    if (p.bytes >= (1 << 20)) {
      if (p.formula_s >= 0) errors["formula"].push_back(std::fabs(p.formula_s - p.measured_s) / p.measured_s);
      if (p.analytic_s >= 0) errors["analytic"].push_back(std::fabs(p.analytic_s - p.measured_s) / p.measured_s);
      if (p.sim_s >= 0) errors["sim"].push_back(std::fabs(p.sim_s - p.measured_s) / p.measured_s);
    }
  }
  std::cout << "gradsync validate: testbed of " << plan.name << " (bandwidths x " << o.scale << "), measured topology "
            << measured << "\n\n" << table.render() << "\n";
  std::cout << "note: the emulated GPUs are " << max_gpus << " processes sharing " << std::thread::hardware_concurrency()
            << " cores; the models give each its own device (local work at the rate measured for one rank alone)\n";
  for (const std::string executor : {"formula", "analytic", "sim"}) {
    const auto& e = errors[executor];
    if (e.empty()) continue;
    std::cout << executor << ": median |error| " << format_fixed(100 * median(e), 1) << " %, max "
              << format_fixed(100 * *std::max_element(e.begin(), e.end()), 1) << " % over " << e.size()
              << " points of at least 1 MiB" << (executor == std::string("sim") ? " (targets: median <= 5 %, max <= 15 %)" : "")
              << "\n";
  }
  // Which strategy is fastest at each GPU count and size: measured, and by each model.
  if (o.strategies.size() > 1) {
    std::map<std::pair<int, double>, std::vector<const ValidationPoint*>> groups;
    for (const auto& p : points) groups[{p.ranks, p.bytes}].push_back(&p);
    for (const auto& entry : groups) {
      const auto& key = entry.first;
      const auto& group = entry.second;
      auto fastest = [&](auto time) {
        const ValidationPoint* best = nullptr;
        for (const auto* p : group) {
          if (time(*p) >= 0 && (!best || time(*p) < time(*best))) best = p;
        }
        return best;
      };
      const auto* measured_best = fastest([](const ValidationPoint& p) { return p.measured_s; });
      std::cout << "fastest at " << key.first << " GPUs, " << format_bytes(key.second) << ": measured "
                << measured_best->strategy << " (" << format_seconds(measured_best->measured_s) << ")";
      for (const std::string executor : {"analytic", "sim"}) {
        const auto* b = executor == "sim" ? fastest([](const ValidationPoint& p) { return p.sim_s; })
                                          : fastest([](const ValidationPoint& p) { return p.analytic_s; });
        if (b) std::cout << "; " << executor << " " << b->strategy << (b == measured_best ? " (agrees)" : " (differs)");
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
  std::cout << "wrote " << o.output_dir << "/validation.jsonl and .csv (" << records.size() << " records)\n";
  return points;
}

}  // namespace gradsync::experiments
