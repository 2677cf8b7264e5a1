// gradsync recommend: the ranked synchronisation choices for a topology and workload, why
// the winner wins, the best ones confirmed by the simulator, and the command that checks
// them on the emulated cluster.
#include <algorithm>
#include <iostream>
#include <limits>
#include <memory>
#include <unistd.h>

#include "experiments/cli/commands.h"
#include "runtime/cli_flags.h"
#include "experiments/cli/output.h"
#include "experiments/cli/selection.h"
#include "experiments/recommend.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/progress.h"
#include "models/topology/topology_io.h"
#include "runtime/testbed/testbed.h"

namespace gradsync::experiments::cli {

namespace {

// The GPUs in rank order; past 8, the first three and the last (a cluster's 1,024 ids would
// fill the screen; --format json and -o keep every one).
std::string rank_list(const std::vector<std::string>& nodes) {
  if (nodes.size() <= 8) return models::join(nodes, ",");
  return nodes[0] + "," + nodes[1] + "," + nodes[2] + ",...," + nodes.back();
}

struct RecommendFlags {
  SelectionOptions selection;
  RecommendOptions options;
  int top = 12;
  bool all = false;
  std::string gpu_memory;
};

std::string one_line(const Choice& c) {
  std::string text = c.name();
  if (!c.params_text().empty()) text += " " + c.params_text();
  return text;
}

// A validate --strategies item for a choice ("hierarchical:k=2"), when the testbed can run
// it as predicted: gradsync-run puts a synchronous server on rank 0's process. Values the
// search left at "auto" are given as they were resolved, so the run does what was predicted.
std::optional<std::string> validate_item(const Choice& c) {
  if (c.alone() || c.analytic.asynchronous) return std::nullopt;
  std::string item = c.strategy->name;
  for (const auto& [k, v] : c.searched) {
    if (k == "server") {
      if (v != c.rank_nodes.front()) return std::nullopt;
      continue;  // validate places it on rank 0
    }
    if (k != "inner" && !worth_showing(*c.strategy, k, v)) continue;
    const auto resolved = c.analytic.params.find(k);
    item += ":" + k + "=" + (resolved != c.analytic.params.end() && resolved->second != "-" ? resolved->second : v);
  }
  return item;
}

// Up to this many GPUs, recommend searches every count unless --gpus says otherwise.
constexpr int kEveryCountUpTo = 16;

int run_recommend(RecommendFlags& f) {
  SelectionOptions s = f.selection;
  if (!s.size.empty() && models::split_list(s.size, "--size").size() != 1) {
    throw models::InputError("--size " + s.size + ": recommend takes one size (rank choices for one gradient)");
  }
  s.strategies.clear();
  s.params.clear();
  s.gpus.clear();
  Plan plan = make_plan(experiment_from_flags(s, {}));
  // Parameters the user fixed: checked against the strategies searched (an unknown one is an error).
  f.options.fixed = models::SyncParams::parse(f.selection.params);
  if (!f.gpu_memory.empty()) {
    const double bytes = models::parse_bytes(f.gpu_memory, "--gpu-memory");
    if (!(bytes > 0)) throw models::InputError("--gpu-memory " + f.gpu_memory + ": expected a size above 0, e.g. 80GB or 24GiB");
    f.options.gpu_memory_bytes = bytes;
  }
  (void)choose_strategies(f.options.strategies, f.options.fixed, plan.executors);
  const models::Topology& t = plan.topology.topology;
  const int all = static_cast<int>(t.gpus().size());
  std::vector<int> counts;
  if (f.selection.gpus.empty()) {
    // Every count on a machine; on a cluster (more than 16 GPUs) the powers of two and all of
    // them: each count is a whole search of placements and parameters (1 to 128 of them on the
    // shipped 128-GPU cluster ran for more than five minutes on two cores; these eight, 19 s).
    for (int n = 1; n <= all; ++n) {
      if (all <= kEveryCountUpTo || (n & (n - 1)) == 0 || n == all) counts.push_back(n);
    }
    if (all > kEveryCountUpTo) {
      std::vector<std::string> shown;
      for (int n : counts) shown.push_back(std::to_string(n));
      std::cerr << "gradsync recommend: " << all << " GPUs: searching " << models::join(shown, ", ") << " of them (--gpus 1-" << all
                << " searches every count)\n";
    }
  } else {
    counts = parse_gpu_counts(f.selection.gpus);
  }
  plan.placements.clear();
  for (int n : counts) {
    if (n > all) throw models::InputError("--gpus " + f.selection.gpus + ": the topology has " + std::to_string(all) + " GPUs");
    plan.placements.push_back(models::first_gpus(t, n));
  }
  // The rows the table shows (every record written otherwise) carry the range over what the
  // inputs leave open.
  const std::string format = choose_format(f.selection.format, f.selection.output);
  f.options.restated = format != "table" || f.all ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(std::max(0, f.top));
  std::optional<models::Progress> progress;
  const Recommendation r = recommend(plan, f.options, [&](std::size_t done, std::size_t total) {
    if (!progress) progress.emplace(models::Progress::for_stderr(total, false));
    if (done < total) progress->step("searching candidates");
  });
  if (progress) progress->finish();
  if (r.ranked.empty() && r.smallest_not_fitting) {
    const Choice& c = *r.smallest_not_fitting;
    throw models::InputError("--gpu-memory " + f.gpu_memory + ": no choice fits; the one needing the least memory per GPU, " +
                             one_line(c) + " on " + std::to_string(c.gpus) + " GPUs, needs " +
                             format_bytes(c.analytic.memory->total_bytes()));
  }
  const bool any_multi = std::any_of(r.ranked.begin(), r.ranked.end(), [](const Choice& c) { return !c.alone(); });
  if (!any_multi && !r.with_workload) {
    throw models::InputError("recommend --gpus " + (f.selection.gpus.empty() ? std::string("1") : f.selection.gpus) +
                             " without a workload: one GPU synchronises nothing; give 2 or more GPUs, or a workload");
  }

  if (format != "table") {
    std::vector<models::ResultRecord> records;
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
      const Choice& c = r.ranked[i];
      const std::string note = "recommend: rank " + std::to_string(i + 1) + " of " + std::to_string(r.ranked.size()) +
                               (c.changes_training.empty() ? "" : "; changes training: " + c.changes_training);
      records.push_back(c.analytic);
      records.back().notes.push_back(note);
      if (c.sim) {
        records.push_back(*c.sim);
        records.back().notes.push_back(note);
      }
    }
    models::write_file_atomically(f.selection.output.empty() ? "-" : f.selection.output, records_text(records, format));
    if (!f.selection.output.empty()) std::cout << "wrote " << records.size() << " records to " << f.selection.output << "\n";
    return 0;
  }

  print_plan_heading(std::cout, "recommend", plan);
  std::cout << "searched " << r.evaluated << " candidates with the analytic model"
            << (f.options.exact_only ? " (exact strategies only)" : "")
            << (f.options.confirm == 0   ? "; none simulated (--confirm 0)"
                : f.options.confirm == 1 ? "; the best multi-GPU choice simulated"
                                         : "; the best " + std::to_string(f.options.confirm) + " multi-GPU choices simulated")
            << "\n\n";
  const bool epochs = r.with_workload;
  const bool memory = f.options.gpu_memory_bytes.has_value();
  std::vector<std::string> headers = {">#", ">GPUs", "ranks", "choice", ">sync/step"};
  if (epochs) headers.insert(headers.end(), {">iteration", ">epoch", ">speed-up"});
  const bool target = epochs && plan.workload && plan.workload->convergence.has_value();
  if (target) headers.insert(headers.end(), {">to target", ">speed-up to target"});
  if (memory) headers.push_back(">memory/GPU");
  const std::size_t shown = f.all ? r.ranked.size() : std::min<std::size_t>(r.ranked.size(), static_cast<std::size_t>(f.top));
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < shown; ++i) rows.push_back(i);
  // The best exact choice and one GPU alone are always shown.
  for (std::size_t i = shown; i < r.ranked.size(); ++i) {
    const Choice& c = r.ranked[i];
    const bool first_exact = c.changes_training.empty() &&
        std::none_of(r.ranked.begin(), r.ranked.begin() + static_cast<std::ptrdiff_t>(i), [&](const Choice& b) {
          return b.changes_training.empty() && b.alone() == c.alone();
        });
    if (first_exact) rows.push_back(i);
  }
  // A choice whose prediction states what the inputs leave open: its synchronisation's range.
  auto sync_range = [](const Choice& c) -> std::string {
    const auto range = c.analytic.busbw_range_GBps();
    const auto busbw = c.analytic.busbw_GBps();
    if (c.alone() || c.analytic.open_facts.empty() || !range || !busbw || !(range->first > 0)) return "";
    const double t = c.analytic.time_per_sync_s;
    return format_seconds(t * *busbw / range->second) + " - " + format_seconds(t * *busbw / range->first);
  };
  const bool ranged = std::any_of(rows.begin(), rows.end(), [&](std::size_t i) { return !sync_range(r.ranked[i]).empty(); });
  if (ranged) headers.push_back(">sync range");
  headers.insert(headers.end(), {">sim sync", "bound by", "changes training"});
  Table table(headers);
  for (std::size_t i : rows) {
    const Choice& c = r.ranked[i];
    std::vector<std::string> row = {std::to_string(i + 1), std::to_string(c.gpus), rank_list(c.rank_nodes), one_line(c),
                                    c.alone() ? "-" : format_seconds(c.analytic.time_per_sync_s)};
    if (epochs) {
      row.push_back(c.analytic.time_per_iteration_s ? format_seconds(*c.analytic.time_per_iteration_s) : "-");
      row.push_back(c.analytic.time_per_epoch_s ? format_seconds(*c.analytic.time_per_epoch_s) : "-");
      row.push_back(c.analytic.speedup_vs_1gpu ? format_fixed(*c.analytic.speedup_vs_1gpu, 2) + "x" : "-");
    }
    if (target) {
      row.push_back(time_to_target_cell(c.analytic));
      row.push_back(convergence_speedup_cell(c.analytic));
    }
    if (memory) row.push_back(c.analytic.memory ? format_bytes(c.analytic.memory->total_bytes()) : "-");
    if (ranged) row.push_back(sync_range(c));
    row.push_back(c.sim ? format_seconds(c.sim->time_per_sync_s) : "");
    row.push_back(c.bound().what);
    row.push_back(c.changes_training.empty() ? "no" : c.changes_training);
    table.add_row(row);
  }
  std::cout << table.render();
  if (rows.size() < r.ranked.size()) std::cout << "(" << r.ranked.size() - rows.size() << " more: --all)\n";
  std::cout << "\n";
  if (memory) {
    if (r.not_fitting > 0) {
      const Choice& c = *r.smallest_not_fitting;
      std::cout << "Left out " << r.not_fitting << " choices needing more than " << format_bytes(*f.options.gpu_memory_bytes)
                << " per GPU (the least of them: " << one_line(c) << " on " << c.gpus << " GPU" << (c.gpus > 1 ? "s" : "")
                << ", " << format_bytes(c.analytic.memory->total_bytes()) << ").\n";
    } else {
      std::cout << "Every choice fits in " << format_bytes(*f.options.gpu_memory_bytes) << " per GPU.\n";
    }
    std::cout << "memory/GPU: parameters, gradients and Adam's state per GPU by the ZeRO paper's accounting (activations "
                 "not counted).\n";
  }
  if (target) {
    for (const std::string& line : convergence_footnote(*plan.workload)) std::cout << line << "\n";
  }
  for (const auto& line : explain(plan, r)) std::cout << line << "\n";

  // The simulator's verdict on the simulated choices.
  std::vector<const Choice*> simulated;
  for (const auto& c : r.ranked) {
    if (c.sim) simulated.push_back(&c);
  }
  if (simulated.size() > 1) {
    const auto fastest = *std::min_element(simulated.begin(), simulated.end(), [](const Choice* a, const Choice* b) {
      const double ta = a->sim->time_per_epoch_s.value_or(a->sim->time_per_sync_s / std::max(1, a->sim->period_steps));
      const double tb = b->sim->time_per_epoch_s.value_or(b->sim->time_per_sync_s / std::max(1, b->sim->period_steps));
      return ta < tb;
    });
    std::cout << (fastest == simulated.front()
                      ? "Simulator: agrees — " + one_line(*fastest) + " is also the fastest of the " +
                            std::to_string(simulated.size()) + " simulated.\n"
                      : "Simulator: disagrees — of the " + std::to_string(simulated.size()) + " simulated, " +
                            one_line(*fastest) + " on " + std::to_string(fastest->gpus) + " GPUs is fastest.\n");
  }
  // The command that checks the best runnable choices on the emulated cluster.
  std::vector<std::string> items;
  const int gpus = [&] {
    for (const auto& c : r.ranked) {
      if (!c.alone()) return c.gpus;
    }
    return 0;
  }();
  for (const auto& c : r.ranked) {
    if (c.gpus != gpus || items.size() >= 3) continue;
    const auto item = validate_item(c);
    if (item && std::find(items.begin(), items.end(), *item) == items.end()) items.push_back(*item);
  }
  if (!items.empty() && !plan.sizes.empty() && plan.sizes.front()) {
    std::string why_not;
    try {
      (void)testbed::plan_testbed(t, 0.002);  // the emulated cluster builds trees of switches only
    } catch (const models::InputError& e) {
      why_not = e.what();
    }
    if (why_not.empty()) {
      std::cout << "Check on the emulated cluster (root): gradsync validate --topology " << f.selection.topology
                << " --gpus " << gpus << " --sizes " << f.selection.size << " --strategies " << models::join(items, ",")
                << "\n";
    } else {
      std::cout << "(the emulated cluster cannot check this topology: " << why_not << ")\n";
    }
  }
  if (!r.left_out.empty()) {
    std::cout << "Not searched without a workload: " << models::join(r.left_out, ", ")
              << " (they space synchronisations over training steps; give --workload, or --strategy to include them)\n";
  }
  if (!r.sharded_left_out.empty()) {
    std::cout << "Not searched without --gpu-memory: " << models::join(r.sharded_left_out, ", ")
              << " (sharding saves memory, never time; give --gpu-memory to weigh them, or --strategy to include them)\n";
  }
  if (!r.skipped.empty()) std::cout << r.skipped.size() << " candidates could not be built (e.g. " << r.skipped.front() << ")\n";
  return 0;
}

}  // namespace

Action add_recommend(CLI::App& app) {
  auto f = std::make_shared<RecommendFlags>();
  auto* cmd = app.add_subcommand("recommend", "Search strategies, parameters and placements; rank them and say why the best wins");
  cmd->footer(
      "Searches GPU counts and which GPUs, every strategy and its parameters (server placement, ring order, k and\n"
      "grouping, inner all-reduce, sampling over ps/ring/hierarchical at one rate or per-link rates, the sync period\n"
      "T of model averaging and BMUF: the smallest keeping synchronisation under --max-sync-share), predicts each with\n"
      "the analytic model, ranks them (by epoch time with a workload, else synchronisation time per step), simulates\n"
      "the best ones, and explains the winner by the link that bounds it. With a workload, training alone on one GPU\n"
      "is a choice: when every multi-GPU choice is slower, it says so. \"changes training\" marks choices whose\n"
      "result is not the exact synchronous sum (sampling, 1-bit, periodic averaging, asynchronous updates).\n"
      "--overlap ranks by the step with its buckets beside the backward pass, and for the best choices (as many as\n"
      "--confirm, at least one) also searches the bucket size (1-250 MiB).\n"
      "Examples:\n"
      "  gradsync recommend                                  # source-A machine, FFNN LM\n"
      "  gradsync recommend --exact-only --workload source-a-rnn-lm\n"
      "  gradsync recommend --topology p2p-output.txt --size 64MiB   # a p2pBandwidthLatencyTest output, read directly\n"
      "  gradsync recommend --topology dgx1-v100-hybrid-cube-mesh --size 256MiB --gpus 8\n"
      "  gradsync recommend --strategy sampled,ring --param alpha=0.02 --format json -o choices.jsonl\n"
      "  gradsync recommend -t dgx1-v100-hybrid-cube-mesh -w resnet50 --overlap --gpus 8   # and the bucket size\n"
      "  gradsync recommend -t dgx1-v100-hybrid-cube-mesh -w decoder-7b --gpu-memory 32GB --overlap   # what fits");
  cmd->add_option("--topology,-t", f->selection.topology,
                  "topology: JSON (graph, matrix or generated form), a shipped name, or a tool output (p2pBandwidthLatencyTest, "
                  "nvbandwidth, nvidia-smi topo -m)")
      ->default_val("source-a-titanx-4gpu");
  cmd->add_option("--workload,-w", f->selection.workload, "workload JSON file or preset (default: source-a-ffnn-lm)");
  cmd->add_option("--size,-s", f->selection.size, "rank for this gradient size instead of a workload (e.g. 64MiB)");
  cmd->add_option("--gpus,-g", f->selection.gpus, "GPU counts to consider: 4, 2,4 or 1-4 (default: 1 to all; above 16 GPUs, the powers of two and all)");
  cmd->add_option("--strategy", f->options.strategies, "strategies to search (default: all)")->delimiter(',');
  cmd->add_option("--param,-p", f->selection.params, "fix a parameter instead of searching it (repeatable), e.g. alpha=0.02");
  cmd->add_flag("--exact-only", f->options.exact_only,
                "only choices that give the exact synchronous sum (no sampling, 1-bit, periodic or asynchronous)");
  cmd->add_option("--confirm", f->options.confirm, "how many of the best multi-GPU choices to simulate (0: none)")
      ->default_val(3)
      ->check(integer_in(0, 100));
  cmd->add_option("--max-sync-share", f->options.max_sync_share,
                  "model averaging / BMUF: pick the smallest period T with synchronisation under this share of a step")
      ->default_val(0.10)
      ->check(number_in(0, 1, true));
  add_overlap_options(cmd, f->selection);
  cmd->add_option("--gpu-memory", f->gpu_memory,
                  "memory of one GPU (e.g. 80GB): leave out choices that do not fit (parameters, gradients and optimizer "
                  "state per GPU, by the ZeRO paper's accounting) and weigh the sharded strategies zero1, zero2 and fsdp");
  cmd->add_option("--top", f->top, "rows to show")->default_val(12)->check(integer_in(1, 100000));
  cmd->add_flag("--all", f->all, "show every ranked choice");
  cmd->add_option("--format,-f", f->selection.format, "table, json (JSON lines) or csv (default: table, or from -o's extension)")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("--output,-o", f->selection.output, "write the ranked records (analytic, then sim) to this file, atomically");
  return [f] {
    check_output_path(f->selection.output, "--output");
    return run_recommend(*f);
  };
}

}  // namespace gradsync::experiments::cli
