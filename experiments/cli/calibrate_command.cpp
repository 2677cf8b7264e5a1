// gradsync calibrate: fit a strategy's constants once across machines' nccl-tests tables,
// with a leave-one-machine-out check of how the fit generalises.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "experiments/calibrate.h"
#include "experiments/cli/commands.h"
#include "experiments/inputs.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments::cli {

namespace {

struct CalibrateFlags {
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<std::string> grid;
  CalibrateOptions options;
};

std::string pct(const std::optional<ErrorSummary>& s, double ErrorSummary::*figure) {
  if (!s) return "-";
  return models::format_percent(*s.*figure, 1);
}

// The stated ranges at >= 1 MiB: the share that held the measurement, and their median width.
std::string held_share(const std::optional<ErrorSummary>& s) {
  if (!s || s->ranges == 0) return "-";
  return models::format_percent(static_cast<double>(s->held) / s->ranges, 0);
}

std::vector<std::string> figure_cells(const PooledFigures& f) {
  return {pct(f.large, &ErrorSummary::median_abs), pct(f.large, &ErrorSummary::p90_abs), pct(f.large, &ErrorSummary::max_abs),
          f.large ? std::to_string(f.large->sizes) : "0", held_share(f.large), f.large && f.large->ranges ? pct(f.large, &ErrorSummary::median_width) : "-",
          pct(f.small, &ErrorSummary::median_abs), f.small ? std::to_string(f.small->sizes) : "0"};
}

std::vector<std::string> figure_headers(std::vector<std::string> first) {
  for (const char* h : {">>=1MiB median", ">p90", ">max", ">sizes", ">range held", ">width", ">64K-1M median", ">sizes"}) first.push_back(h);
  return first;
}

// Whether pooled figures meet the accuracy targets; the figures that miss are named.
std::string verdict(const PooledFigures& f) {
  std::vector<std::string> missed;
  if (f.large && f.large->median_abs > kTargetLargeMedian) missed.push_back("median at >= 1 MiB");
  if (f.large && f.large->p90_abs > kTargetLargeP90) missed.push_back("90th percentile at >= 1 MiB");
  if (f.small && f.small->median_abs > kTargetSmallMedian) missed.push_back("median at 64 KiB - 1 MiB");
  if (f.large && f.large->ranges > 0 && static_cast<double>(f.large->held) / f.large->ranges < kTargetRangeHeld) {
    missed.push_back("range held at >= 1 MiB");
  }
  if (f.large && f.large->ranges > 0 && f.large->median_width > kTargetRangeWidth) missed.push_back("range width at >= 1 MiB");
  return missed.empty() ? "met" : "missed (" + models::join(missed) + ")";
}

int run_calibrate(const CalibrateFlags& f) {
  if (f.files.empty() && f.pairs.empty()) {
    throw models::InputError("no machines given; expected files holding a machine's tool outputs and its nccl-tests "
                             "log, or --machine TOPOLOGY LOG");
  }
  CalibrateOptions options = f.options;
  const models::Strategy& strategy = models::find_strategy(options.strategy);
  if (models::find_executor(options.executor).measures()) {
    throw models::InputError("--executor " + options.executor + ": it measures this machine; expected analytic, sim "
                             "or formula");
  }
  for (const auto& item : f.grid) options.grid.push_back(parse_grid_axis(item, strategy));

  std::vector<std::pair<std::string, std::string>> sources;
  for (const auto& file : f.files) sources.emplace_back(file, file);
  sources.insert(sources.end(), f.pairs.begin(), f.pairs.end());
  std::vector<models::LoadedTopology> loaded;
  loaded.reserve(sources.size());
  std::vector<CalibrationMachine> machines;
  // Logs given with the same topology file are one machine's runs: left out together.
  std::map<std::string, std::size_t> machine_of;
  for (const auto& [topology, log] : sources) {
    std::error_code ec;
    const std::string key = std::filesystem::weakly_canonical(topology, ec).string();
    if (const auto it = machine_of.find(key); it != machine_of.end() && topology != log) {
      for (auto& run : models::read_nccl_tests_files({log})) machines[it->second].runs.push_back(std::move(run));
      continue;
    }
    loaded.push_back(load_topology_arg(topology));
    CalibrationMachine m;
    m.name = loaded.back().topology.name();
    m.topology = &loaded.back().topology;
    m.runs = models::read_nccl_tests_files({log});
    machine_of.emplace(key, machines.size());
    machines.push_back(std::move(m));
  }

  std::size_t points = 1;
  std::vector<std::string> axes;
  for (const auto& a : options.grid) {
    points *= a.values.size();
    axes.push_back(fmt::format("{} {} values {:g}..{:g}", a.param, a.values.size(),
                               *std::min_element(a.values.begin(), a.values.end()),
                               *std::max_element(a.values.begin(), a.values.end())));
  }
  models::Progress progress = models::Progress::for_stderr(calibration_count(machines, options), false);
  const Calibration c = calibrate(machines, options, &progress);
  progress.finish();

  std::vector<std::string> defaults;
  for (const auto& a : options.grid) defaults.push_back(a.param + "=" + models::find_param(strategy, a.param)->default_value);
  const std::string fixed = options.params.empty() ? "" : ", fixed " + models::join(options.params, " ");
  std::cout << "calibrate " << options.strategy << " on " << c.machines.size() << " machines (" << c.tables
            << (options.all_reduce_only ? " all-reduce tables" : " tables") << ", one size per octave from 64 KiB), executor "
            << options.executor << fixed << "\n"
            << "grid: " << models::join(axes, "; ") << " (" << points << " points)\n"
            << "objective: median + 90th percentile of |error| of busbw at sizes >= 1 MiB plus the median at 64 KiB - 1 MiB, "
               "over each machine's tables, the fit its least mean over the machines; error = predicted / measured - 1; range held: the share of sizes >= 1 MiB whose "
               "stated busbw range held the measurement (held out: with the model's error bands "
               "of the other machines' held-out errors; held as stated: with the bands the strategy states), width its median hi / lo - 1\n\n";

  const std::vector<bool> all(c.machines.size(), true);
  auto machine_table = [&](const std::vector<MachineErrors>& per_machine) {
    Table t(figure_headers({"machine"}));
    for (std::size_t m = 0; m < c.machines.size(); ++m) {
      auto row = figure_cells(pool({&per_machine[m]}));
      row.insert(row.begin(), c.machines[m]);
      t.add_row(std::move(row));
    }
    std::vector<const MachineErrors*> every;
    for (const auto& e : per_machine) every.push_back(&e);
    const PooledFigures pooled = pool(every);
    auto row = figure_cells(pooled);
    row.insert(row.begin(), "all tables pooled");
    t.add_row(std::move(row));
    std::cout << t.render() << "  targets (median <= 10 %, 90th percentile <= 25 % at >= 1 MiB; median <= 20 % at 64 KiB - 1 MiB; "
                               "range holds >= 90 % at >= 1 MiB, median width <= 50 %): "
              << verdict(pooled) << "\n\n";
  };
  std::cout << "the parameters' defaults (" << models::join(defaults, " ") << "):\n";
  machine_table(c.default_errors);
  std::cout << "fitted on every machine: " << models::join(c.items(options, c.best), " ") << " (objective "
            << format_fixed(c.objective(c.best, all), 3) << ")\n";
  machine_table(c.errors[c.best]);

  if (!c.best_without.empty()) {
    std::cout << "leave one machine out: each machine predicted with the point fitted on the others only, its ranges with the "
                 "model's error bands of the others' held-out errors\n";
    // The last column: the ranges as stated, with the bands the strategy ships (fitted on every
    // machine, this one too).
    auto headers = figure_headers({"held out", "fitted on the others"});
    headers.push_back(">held as stated");
    Table t(headers);
    const std::vector<MachineErrors> restated = c.held_out_with_others_bands();
    std::vector<const MachineErrors*> held, stated;
    for (std::size_t m = 0; m < c.machines.size(); ++m) {
      const std::size_t p = c.best_without[m];
      held.push_back(&restated[m]);
      stated.push_back(&c.errors[p][m]);
      auto row = figure_cells(pool({held.back()}));
      row.insert(row.begin(), models::join(c.items(options, p), " "));
      row.insert(row.begin(), c.machines[m]);
      row.push_back(held_share(pool({stated.back()}).large));
      t.add_row(std::move(row));
    }
    const PooledFigures pooled = pool(held);
    auto row = figure_cells(pooled);
    row.insert(row.begin(), "");
    row.insert(row.begin(), "held out, pooled");
    row.push_back(held_share(pool(stated).large));
    t.add_row(std::move(row));
    std::cout << t.render() << "  targets on the held-out machines: " << verdict(pooled) << "\n";
    // The model's own error where every fact was known: what a range must hold besides the open facts.
    if (!pooled.bands.empty()) {
      std::cout << "\nthe model's own error where every fact was known, by the band each prediction states (held out, all machines, each "
                   "weighing alike; 5th .. 95th percentile of predicted / measured - 1):\n";
      Table b({"band", ">sizes", ">5th", ">95th", ">width"});
      for (const auto& [name, f] : pooled.bands) {
        b.add_row({name, std::to_string(f.sizes), models::format_percent(f.low, 0, true), models::format_percent(f.high, 0, true),
                   models::format_percent((1 + f.high) / (1 + f.low) - 1, 0)});
      }
      std::cout << b.render();
    }
  } else {
    std::cout << "leave one machine out: needs two machines or more\n";
  }
  return 0;
}

}  // namespace

Action add_calibrate(CLI::App& app) {
  auto f = std::make_shared<CalibrateFlags>();
  auto* cmd = app.add_subcommand("calibrate", "Fit a strategy's constants once across machines' nccl-tests tables, "
                                              "with a leave-one-machine-out check");
  cmd->footer(
      "Each FILE holds one machine's tool outputs (nvidia-smi topo -m, p2pBandwidthLatencyTest, nvbandwidth) and\n"
      "its nccl-tests output, as the files of tests/data/published do (a file of nccl-tests alone is a machine its\n"
      "device lines name); --machine TOPOLOGY LOG gives them apart, and logs given with the same TOPOLOGY file are\n"
      "one machine's runs. Every point of the grid predicts every table the strategy models (every collective;\n"
      "--all-reduce-only: all-reduce), each at one size per octave from 64 KiB; the point with the least median +\n"
      "90th percentile of |error| at >= 1 MiB plus median at 64 KiB - 1 MiB over each machine's tables, averaged over\n"
      "the machines (each weighs alike), is the fit.\n"
      "Then each machine is predicted with the point fitted on the others only (leave one machine out), so the\n"
      "figures show how the fit carries to a machine it has not seen, and how often the stated ranges held.\n"
      "Examples (the nccl strategy's fitted constants):\n"
      "  gradsync calibrate tests/data/published/*.txt --grid shm_efficiency=0.5:0.9:0.02 \\\n"
      "      --grid ll_channel_GBps=2:4:0.2 --grid launch_us=0:6:1\n"
      "  gradsync calibrate --machine 2node.json 2node-run-a.txt --machine 2node.json 2node-run-b.txt \\\n"
      "      --machine 4node.json 4node-run.txt --grid net_window_MiB=2:8:0.5");
  cmd->add_option("files", f->files, "files holding a machine's tool outputs and its nccl-tests log")
      ->check(CLI::ExistingFile);
  cmd->add_option("--machine", f->pairs, "a machine as TOPOLOGY LOG (a topology or tool outputs, and its nccl-tests "
                                         "log; repeatable; the same TOPOLOGY again adds a log of that machine)");
  cmd->add_option("--grid,-g", f->grid, "a parameter to fit and its values: name=lo:hi:step or name=v1,v2,... "
                                        "(repeatable)")
      ->required();
  cmd->add_option("--strategy,-s", f->options.strategy, "the strategy whose parameters are fitted (default: nccl)")
      ->check(CLI::IsMember(models::strategy_names()))
      ->default_val("nccl");
  cmd->add_option("--param,-p", f->options.params, "a fixed strategy parameter key=value (repeatable)");
  cmd->add_option("--executor,-x", f->options.executor, "the executor that predicts (analytic, sim, formula)")
      ->default_val("analytic");
  cmd->add_flag("--in-place", f->options.in_place, "fit nccl-tests' in-place columns (default: out-of-place)");
  cmd->add_flag("--all-reduce-only", f->options.all_reduce_only, "only the all-reduce tables count (default: every collective)");
  return [f] { return run_calibrate(*f); };
}

}  // namespace gradsync::experiments::cli
