// gradsync compare: measured nccl-tests tables vs predictions for the same machine.
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "experiments/compare.h"
#include "experiments/inputs.h"
#include "experiments/table.h"
#include "models/support/error.h"

namespace gradsync::experiments::cli {

namespace {

struct CompareFlags {
  std::string topology;
  std::vector<std::string> logs;
  CompareOptions options;
  std::string executors = "analytic,sim";
  std::string output;
};

std::string percent(double error) { return models::format_percent(error, 0, true); }

std::string summary_line(const CompareRun& c, const std::string& executor) {
  std::string s = executor + ":";
  const auto large = summarize(c, executor, kLargeFrom, 1e300);
  const auto small = summarize(c, executor, kSmallFrom, kLargeFrom);
  auto ranges = [](const ErrorSummary& e) {
    return e.ranges > 0 ? fmt::format(", range held {} of {} (median width {:.0f} %)", e.held, e.ranges, 100 * e.median_width) : std::string();
  };
  if (large) {
    s += fmt::format(" sizes >= 1 MiB: median |error| {:.0f} %, p90 {:.0f} %, max {:.0f} % ({} sizes{});", 100 * large->median_abs,
                     100 * large->p90_abs, 100 * large->max_abs, large->sizes, ranges(*large));
  }
  if (small) {
    s += fmt::format(" 64 KiB - 1 MiB: median |error| {:.0f} %, max {:.0f} % ({} sizes{})", 100 * small->median_abs,
                     100 * small->max_abs, small->sizes, ranges(*small));
  }
  if (!large && !small) s += " no size of 64 KiB or more in the log";
  return s;
}

int run_compare(const CompareFlags& f) {
  CompareOptions options = f.options;
  options.executors = models::split_list(f.executors, "--executor");
  for (const auto& e : options.executors) {
    if (models::find_executor(e).measures()) {
      throw models::InputError("--executor " + e + ": it measures this machine; expected executors that predict (" +
                               "analytic, sim, formula)");
    }
  }
  if (!f.output.empty()) check_output_path(f.output, "--output");
  const auto loaded = load_topology_arg(f.topology);
  const auto runs = models::read_nccl_tests_files(f.logs);
  if (runs.empty()) {
    throw models::InputError(models::join(f.logs) +
                             ": no nccl-tests output found; expected the printed output of all_reduce_perf (nccl-tests)");
  }
  models::Progress progress = models::Progress::for_stderr(comparison_count(loaded.topology, runs, options), false);
  const auto compared = compare_runs(loaded.topology, runs, options, &progress);
  progress.finish();

  std::vector<models::ResultRecord> records;
  for (const auto& c : compared) {
    std::cout << "nccl-tests " << c.run->describe() << "\n";
    if (!c.skipped.empty()) {
      std::cout << "  not compared: " << c.skipped << "\n\n";
      continue;
    }
    // The algorithm and protocol a strategy chose for each size (NCCL's change with the size).
    const bool protocols = !c.points.empty() && c.points.front().predicted.begin()->second.params.count("protocol");
    const bool algorithms = protocols && c.points.front().predicted.begin()->second.params.count("algorithm");
    std::vector<std::string> headers = {">size", ">measured busbw"};
    if (protocols) headers.push_back(algorithms ? "algorithm/protocol" : "protocol");
    // The first executor's range over the open facts, where its records have one.
    bool ranged = false;
    for (const auto& p : c.points) ranged = ranged || !p.predicted.at(options.executors.front()).open_facts.empty();
    for (const auto& e : options.executors) {
      headers.push_back(">" + e + " busbw");
      headers.push_back(">error");
      if (ranged && e == options.executors.front()) headers.push_back(">range");
    }
    Table table(headers);
    for (const auto& p : c.points) {
      std::vector<std::string> row = {format_bytes(p.bytes), format_fixed(*p.measured.busbw_GBps(), 2)};
      if (protocols) {
        const auto& params = p.predicted.begin()->second.params;
        row.push_back((algorithms ? params.at("algorithm") + "/" : std::string()) + params.at("protocol"));
      }
      for (const auto& e : options.executors) {
        const auto& pred = p.predicted.at(e);
        row.push_back(format_fixed(*pred.busbw_GBps(), 2));
        row.push_back(percent(busbw_error(pred, p.measured)));
        if (ranged && e == options.executors.front()) {
          const auto range = pred.busbw_range_GBps();
          row.push_back(range ? format_fixed(range->first, 2) + "-" + format_fixed(range->second, 2) + (range_holds(pred, p.measured) ? "" : " !")
                              : "-");
        }
      }
      table.add_row(std::move(row));
      records.push_back(p.measured);
      for (const auto& e : options.executors) records.push_back(p.predicted.at(e));
    }
    std::cout << "measured (" << (options.in_place ? "in-place" : "out-of-place") << ") vs predicted busbw in GB/s on "
              << loaded.topology.name() << ", strategy " << options.strategy
              << (options.params.empty() ? "" : " " + models::join(options.params, " ")) << " on "
              << c.run->ranks() << " GPUs; error = predicted / measured - 1\n";
    std::cout << table.render();
    for (const auto& e : options.executors) std::cout << "  " << summary_line(c, e) << "\n";
    if (!c.points.empty()) {
      const auto& last = c.points.back().predicted.begin()->second;
      if (!last.notes.empty()) std::cout << "  assumed (largest size): " << models::join(last.notes, "; ") << "\n";
    }
    std::cout << "\n";
  }
  if (!f.output.empty()) {
    models::write_file_atomically(f.output, records_text(records, choose_format("", f.output)));
    std::cout << "wrote " << records.size() << " records (measured and predicted) to " << f.output << "\n";
  }
  return 0;
}

}  // namespace

Action add_compare(CLI::App& app) {
  auto f = std::make_shared<CompareFlags>();
  auto* cmd = app.add_subcommand("compare", "Compare a machine's nccl-tests tables with gradsync's predictions for it");
  cmd->footer(
      "TOPOLOGY is a topology name or file, or the machine's tool outputs (nvidia-smi topo -m,\n"
      "p2pBandwidthLatencyTest, nvbandwidth: what gradsync import reads). NCCL-TESTS-LOG holds the printed output\n"
      "of nccl-tests (all_reduce_perf ...); one file may hold both, as the published machines' files do.\n"
      "Per size: measured busbw, each executor's predicted busbw and its error (predicted / measured - 1); then\n"
      "the median and max |error| over sizes >= 1 MiB and over 64 KiB - 1 MiB. The default strategy, nccl,\n"
      "models NCCL itself (protocol per size, channels, P2P/SHM/NET per hop, named under each table) and\n"
      "learns from the log how many GPUs one thread drove (-g N); `--strategy ring` shows a plain ring.\n"
      "Examples:\n"
      "  gradsync compare tests/data/published/rtx4090-8gpu-dualepyc-p2pon.txt "
      "tests/data/published/rtx4090-8gpu-dualepyc-p2pon.txt\n"
      "  gradsync compare mybox.json all_reduce.log --strategy ring -x analytic -o compare.jsonl");
  cmd->add_option("topology", f->topology, "topology name or file, or tool outputs")->required();
  cmd->add_option("logs", f->logs, "files holding nccl-tests output")->required()->check(CLI::ExistingFile);
  cmd->add_option("--strategy,-s", f->options.strategy, "the strategy that predicts the tables (default: nccl, which also predicts all_gather and reduce_scatter tables; other strategies all_reduce ones)")
      ->check(CLI::IsMember(models::strategy_names()))
      ->default_val("nccl");
  cmd->add_option("--param,-p", f->options.params, "strategy parameter key=value (repeatable)");
  cmd->add_option("--executor,-x", f->executors, "executors that predict, comma-separated (analytic, sim, formula)")
      ->default_val("analytic,sim");
  cmd->add_flag("--in-place", f->options.in_place, "compare with nccl-tests' in-place columns (default: out-of-place)");
  cmd->add_option("--output,-o", f->output, "also write the measured and predicted records (.jsonl or .csv)");
  return [f] { return run_compare(*f); };
}

}  // namespace gradsync::experiments::cli
