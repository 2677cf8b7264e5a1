#include "experiments/cli/selection.h"

#include <unistd.h>

#include <iostream>

#include "experiments/cli/output.h"
#include "experiments/inputs.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/support/units.h"
#include "models/support/json_input.h"
#include "models/support/progress.h"

namespace gradsync::experiments::cli {

void add_selection_options(CLI::App* cmd, SelectionOptions& o) {
  cmd->add_option("--topology,-t", o.topology, "topology JSON file (graph, matrix or generated form), a shipped name, or a tool output")
      ->default_str(kDefaultTopology);
  cmd->add_option("--workload,-w", o.workload, "workload JSON file or preset (default: source-a-ffnn-lm)");
  cmd->add_option("--size,-s", o.size, "bytes to synchronise instead of a workload's gradient, e.g. 64MiB or 1MiB,16MiB");
  cmd->add_option("--strategy", o.strategies, "strategy name(s), comma-separated or repeated (default: all)");
  cmd->add_option("--param,-p", o.params, "strategy parameter key=value (repeatable), e.g. k=2, server=host");
  cmd->add_option("--gpus,-g", o.gpus, "GPU counts: 4, 1,2,4 or 1-4 (the first N GPUs; default: all)");
  cmd->add_option("--ranks", o.ranks, "explicit rank order as GPU ids, e.g. gpu0,gpu2");
  cmd->add_option("--ring-order", o.ring_order, "ring order for strategies with rings: auto, given, or positions i,j,k,...");
}

void add_overlap_options(CLI::App* cmd, SelectionOptions& o) {
  auto* overlap = cmd->add_flag("--overlap", o.overlap,
                                "the training step as PyTorch DDP runs it: the gradient in buckets, each synchronised as soon as "
                                "the backward pass has produced it, beside the rest of it (needs a workload)");
  cmd->add_option("--bucket-cap", o.bucket_cap, "with --overlap: a bucket is full at this many bytes (DDP's bucket_cap_mb)")
      ->default_str("25MiB")
      ->needs(overlap);
  cmd->add_option("--first-bucket", o.first_bucket, "with --overlap: the first bucket is full at this many bytes")
      ->default_str("1MiB")
      ->needs(overlap);
  cmd->add_option("--overlap-slowdown", o.overlap_slowdown,
                  "with --overlap: compute runs this share slower while a bucket is synchronised (e.g. 0.1)")
      ->check(CLI::Range(0.0, 10.0))
      ->default_str("0")
      ->needs(overlap);
}

void add_output_options(CLI::App* cmd, SelectionOptions& o, bool with_trace) {
  cmd->add_option("--format,-f", o.format, "table, json (JSON lines) or csv (default: table, or from -o's extension)")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("--output,-o", o.output, "write records to this file (.jsonl or .csv), atomically");
  if (with_trace) {
    cmd->add_option("--trace", o.trace, "write the simulated timeline (Chrome trace-event JSON, for Perfetto) to this file");
  }
}

std::string executor_help() {
  std::string text;
  for (const models::Executor* x : models::all_executors()) text += "  " + x->name() + ": " + x->summary() + "\n";
  return text;
}

Experiment experiment_from_flags(const SelectionOptions& o, const std::vector<std::string>& executors) {
  const auto chosen = find_executors(executors, "--executor");
  Experiment e;
  e.executors = executors;
  e.topology = o.topology.empty() ? std::string(kDefaultTopology) : o.topology;
  e.workload = o.workload;
  if (!o.size.empty()) {
    if (!o.workload.empty()) throw models::InputError("--size and --workload both given; expected one of them");
    for (const auto& item : models::split_list(o.size, "--size")) e.sizes_bytes.push_back(models::parse_bytes(item, "--size"));
  }
  if (!o.ranks.empty()) {
    if (!o.gpus.empty()) throw models::InputError("--ranks and --gpus both given; expected one of them");
    e.ranks = models::split_list(o.ranks, "--ranks");
  } else if (!o.gpus.empty()) {
    e.gpus = parse_gpu_counts(o.gpus);
  }
  models::SyncParams given = models::SyncParams::parse(o.params);
  if (!o.ring_order.empty()) {
    if (given.get("ring_order")) throw models::InputError("--ring-order and --param ring_order both given; expected one");
    given.set("ring_order", o.ring_order);
  }
  e.strategies = choose_strategies(o.strategies, given, chosen);
  if (o.overlap) {
    if (!o.size.empty()) throw models::InputError("--overlap needs a workload (its layers and their compute), not --size");
    models::OverlapSettings s;
    s.bucket_cap_bytes = models::parse_bytes(o.bucket_cap, "--bucket-cap");
    s.first_bucket_bytes = models::parse_bytes(o.first_bucket, "--first-bucket");
    if (!(s.bucket_cap_bytes > 0)) throw models::InputError("--bucket-cap " + o.bucket_cap + ": expected a size above 0");
    if (!(s.first_bucket_bytes > 0)) throw models::InputError("--first-bucket " + o.first_bucket + ": expected a size above 0");
    s.slowdown = o.overlap_slowdown;
    e.overlap = s;
  }
  return e;
}

void print_plan_heading(std::ostream& out, const std::string& verb, const Plan& plan) {
  const models::Topology& topology = plan.topology.topology;
  out << "gradsync " << verb << ": topology " << topology.name() << " (" << topology.gpus().size() << " GPUs), ";
  if (plan.workload && !plan.sizes[0]) {
    const auto& w = *plan.workload;
    out << "workload " << w.name << " (" << format_fixed(w.total_params() / 1e6, 1) << " M params, "
        << format_bytes(w.gradient_bytes()) << " per sync, " << format_seconds(w.compute_s())
        << " compute per minibatch, " << w.minibatches_per_epoch << " minibatches per epoch)";
  } else {
    out << "sizes given (no workload: no iteration or epoch figures)";
  }
  std::vector<std::string> names;
  for (const models::Executor* x : plan.executors) {
    const std::string more = x->describe(plan.settings);
    names.push_back(x->name() + (more.empty() ? "" : " (" + more + ")"));
  }
  out << ", executor " << models::join(names, ", ") << "\n\n";
}

// A record's busbw range over the facts the inputs left open ("" where nothing is open).
std::string range_text(const models::ResultRecord& r) {
  const auto range = r.busbw_range_GBps();
  if (r.open_facts.empty() || !range) return "";
  return format_fixed(range->first, 2) + "-" + format_fixed(range->second, 2);
}

int run_plan(const Plan& plan, const SelectionOptions& o, const std::string& verb) {
  const models::Topology& topology = plan.topology.topology;
  const std::string format = choose_format(o.format, o.output);
  // Nothing is written unless everything can be: check both files before the first point.
  check_output_path(o.output, "-o");
  check_output_path(o.trace, "--trace");
  const bool single = plan.points() == 1;
  const bool show_executor = plan.executors.size() > 1;
  // Progress for slow executors (sim, run), on a terminal only (tables follow on stdout).
  std::optional<models::Progress> progress;
  if (plan.points() > 1 && plan.has_slow_executor()) progress.emplace(models::Progress::for_stderr(plan.points(), false));
  std::vector<models::ResultRecord> records;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row_notes;
  bool any_async = false;
  bool any_overlap = false, any_sharded = false, any_range = false, any_target = false;
  std::optional<models::Trace> trace;
  for (const auto& size : plan.sizes) {
    for (const auto& choice : plan.strategies) {
      for (const auto& placement : plan.placements) {
        for (const auto& executor : plan.executors) {
          if (progress) progress->step(executor->name() + " " + choice.strategy->name + " on " + std::to_string(placement.size()) + " GPUs");
          models::PredictRequest q;
          q.topology = &topology;
          q.workload = size ? nullptr : (plan.workload ? &*plan.workload : nullptr);
          q.bytes = size;
          q.strategy = choice.strategy;
          q.params = choice.params;
          q.placement = placement;
          q.overlap = plan.overlap;
          models::Trace timeline;
          const bool want_trace = !o.trace.empty() && executor->traces() && !trace;
          models::ResultRecord r;
          try {
            models::ExecutorSettings settings = plan.settings;
            settings.sim.trace = want_trace;
            r = executor->evaluate(q, settings, want_trace ? &timeline : nullptr);
          } catch (const models::InputError& e) {
            if (single) throw models::InputError(located_error(choice, e.what()));
            rows.push_back({choice.strategy->name, std::to_string(placement.size()), executor->name(), "-", "skipped"});
            row_notes.push_back("^ " + located_error(choice, e.what()));
            continue;
          }
          if (want_trace) trace = timeline;
          auto opt = [](const std::optional<double>& v, int decimals) { return v ? format_fixed(*v, decimals) : "-"; };
          std::vector<std::string> row = {
              r.strategy, std::to_string(r.ranks), executor->name(), params_text(r, choice.params),
              size ? format_bytes(*size) : "", format_seconds(r.time_per_sync_s),
              r.time_per_iteration_s ? format_seconds(*r.time_per_iteration_s) : "-",
              r.overlap ? format_seconds(r.overlap->exposed_s) : "-",
              r.overlap && r.overlap->iteration_without_s > 0 ? format_seconds(r.overlap->iteration_without_s) : "-",
              r.time_per_epoch_s ? format_seconds(*r.time_per_epoch_s) : "-",
              r.speedup_vs_1gpu ? format_fixed(*r.speedup_vs_1gpu, 2) + "x" : "-",
              time_to_target_cell(r), convergence_speedup_cell(r),
              r.time_per_iteration_s ? format_fixed(100 * r.communication_share(), 0) + "%" : "-",
              r.memory ? format_bytes(r.memory->total_bytes()) : "-",
              opt(r.algbw_GBps(), 2), opt(r.busbw_GBps(), 2), range_text(r),
              r.updates_per_s ? format_fixed(*r.updates_per_s, 1) : "",
              r.mean_staleness ? format_fixed(*r.mean_staleness, 2) + " / " + std::to_string(*r.max_staleness) : ""};
          any_range = any_range || !r.open_facts.empty();
          any_async = any_async || r.updates_per_s.has_value();
          any_overlap = any_overlap || r.overlap.has_value();
          any_target = any_target || r.convergence.has_value() || !r.no_time_to_target.empty();
          any_sharded = any_sharded || (r.memory && r.memory->sharding != models::Sharding::none);
          rows.push_back(std::move(row));
          // What a strategy assumed where the inputs left a fact open, and how much it matters.
          std::string open;
          for (const std::string& note : r.notes) {
            if (note.rfind("open facts: ", 0) == 0) open = "^ " + note;
            if (note.rfind("time to target: ", 0) == 0) open += (open.empty() ? "^ " : "; ") + note;
          }
          if (!r.no_time_to_target.empty()) open += (open.empty() ? "^ " : "; ") + ("no time to target: " + r.no_time_to_target);
          row_notes.push_back(open);
          records.push_back(std::move(r));
        }
      }
    }
  }
  if (progress) progress->finish();

  if (!o.trace.empty()) {
    if (!trace) {
      throw models::InputError("--trace " + o.trace + ": no executor chosen writes a timeline (the simulator does: --executor sim)");
    }
    models::write_file_atomically(o.trace, trace->to_json().dump() + "\n");
    std::cerr << "wrote the timeline of the first simulated point to " << o.trace << " (open it in https://ui.perfetto.dev)\n";
  }

  if (format != "table") {
    models::write_file_atomically(o.output.empty() ? "-" : o.output, records_text(records, format));
    if (!o.output.empty() && o.output != "-") std::cerr << "wrote " << records.size() << " records to " << o.output << "\n";
    return 0;
  }

  // Columns: drop the ones that say nothing here.
  std::vector<std::string> headers = {"strategy", ">GPUs", "executor", "params", ">size", ">sync/step", ">iteration",
                                      ">exposed", ">no overlap", ">epoch", ">speed-up", ">to target", ">speed-up to target", ">comm", ">memory/GPU",
                                      ">algbw GB/s", ">busbw GB/s", ">busbw range", ">updates/s", ">staleness mean/max"};
  std::vector<bool> keep(headers.size(), true);
  keep[2] = show_executor;
  keep[4] = !plan.workload || plan.sizes.size() > 1 || plan.sizes[0].has_value();
  keep[7] = keep[8] = any_overlap;
  keep[11] = keep[12] = any_target;
  keep[14] = any_sharded;  // replicas all keep the same
  keep[17] = any_range;
  keep[18] = keep[19] = any_async;
  std::vector<std::string> kept_headers;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    if (keep[i]) kept_headers.push_back(headers[i]);
  }
  Table table(kept_headers);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string> cells;
    for (std::size_t i = 0; i < headers.size(); ++i) {
      if (keep[i]) cells.push_back(i < rows[r].size() ? rows[r][i] : "");
    }
    table.add_row(cells);
    if (!row_notes[r].empty()) table.add_note_row(row_notes[r]);
  }

  print_plan_heading(std::cout, verb, plan);
  std::cout << table.render() << "\n";
  if (plan.workload && !plan.sizes[0]) {
    const auto& w = *plan.workload;
    std::cout << "speed-up: one GPU training alone (" << format_seconds(w.compute_s() * w.minibatches_per_epoch)
              << " per epoch, no synchronisation) / epoch time; epoch = minibatches / N x iteration (source A, eqs. 5-8)\n";
    if (any_target) {
      for (const std::string& line : convergence_footnote(w)) std::cout << line << "\n";
    }
  }
  if (!records.empty()) {
    const auto& p = records.front().params;
    std::cout << "reduction: GPU " << p.at("reduce_GBps") << " GB/s, host " << p.at("host_reduce_GBps")
              << " GB/s (--param reduce_GBps=..., host_reduce_GBps=...)\n";
  }
  for (const models::Executor* x : plan.executors) {
    if (!x->footnote().empty()) std::cout << x->footnote() << "\n";
  }
  if (any_overlap) {
    const models::OverlapSettings& s = *plan.overlap;
    std::cout << "overlap: the gradient in buckets of " << format_bytes(s.bucket_cap_bytes) << " (the first "
              << format_bytes(s.first_bucket_bytes)
              << "), each synchronised once the backward pass has produced it, beside the rest (PyTorch DDP); exposed: "
                 "iteration - compute; no overlap: compute, then one synchronisation of the whole gradient"
              << (s.slowdown > 0 ? "; compute " + format_fixed(100 * s.slowdown, 0) + " % slower while a bucket synchronises" : "")
              << "\n";
  }
  if (any_sharded) {
    std::cout << "memory/GPU: parameters, gradients and Adam's state (fp32 momentum and variance, an fp32 master copy "
                 "below fp32) per GPU, by the ZeRO paper's accounting"
              << "; zero1 shards the optimizer state over the GPUs, zero2 the gradients too, fsdp the parameters too; "
                 "activations not counted\n";
  }
  if (any_overlap && any_sharded) {
    std::cout << "sharded steps: zero1 reduce-scatters after the backward pass, zero2 bucket by bucket beside it; both "
                 "all-gather the updated parameters after; fsdp all-gathers each unit's parameters (layers up to the "
                 "bucket cap) before its forward and its backward and reduce-scatters its gradients after\n";
  }
  if (any_async) {
    std::cout << "staleness: how many other updates the server applied between a worker's pull and its next push\n";
  }
  return 0;
}

}  // namespace gradsync::experiments::cli
