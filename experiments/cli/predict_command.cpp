// gradsync predict: time per synchronisation, per iteration and per epoch, speed-up over
// one GPU, algbw/busbw — per strategy and GPU count, from the papers' formulas.
#include <iostream>
#include <memory>
#include <set>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "experiments/inputs.h"
#include "experiments/table.h"
#include "models/error.h"
#include "models/json_input.h"
#include "models/predict.h"
#include "models/units.h"

namespace gradsync::experiments::cli {

namespace {

struct PredictOptions {
  std::string topology = kDefaultTopology;
  std::string workload;
  std::string size;
  std::vector<std::string> strategies;
  std::vector<std::string> params;
  std::string gpus;
  std::string ranks;
  std::string executor = "analytic";
  std::string format;
  std::string output;
  std::string ring_order;
};

std::vector<int> parse_gpu_counts(const std::string& text, int available) {
  std::vector<int> counts;
  if (text.empty()) return {available};
  for (const auto& item : models::split_list(text, "--gpus")) {
    const auto dash = item.find('-');
    try {
      std::size_t used = 0;
      if (dash != std::string::npos && dash > 0) {  // a range "1-4"
        const int lo = std::stoi(item.substr(0, dash), &used);
        const int hi = std::stoi(item.substr(dash + 1));
        if (lo > hi) throw std::invalid_argument(item);
        for (int n = lo; n <= hi; ++n) counts.push_back(n);
      } else {
        const int n = std::stoi(item, &used);
        if (used != item.size()) throw std::invalid_argument(item);
        counts.push_back(n);
      }
    } catch (const std::logic_error&) {
      throw models::InputError("--gpus \"" + text + "\": \"" + item +
                               "\" is not a GPU count; expected counts like 4, 1,2,4 or 1-4");
    }
  }
  return counts;
}

// The parameters worth a column: what "auto" became for the ones that shape the result,
// and whatever the user set. The rest is in the JSON / CSV records.
std::string params_text(const models::ResultRecord& r, const models::SyncParams& given) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : r.params) {
    const bool resolved = (k == "k" || k == "server" || k == "T" || k == "step" || k == "inner") && v != "-";
    if (resolved || (given.get(k) && k != "reduce_GBps" && k != "host_reduce_GBps")) parts.push_back(k + "=" + v);
  }
  return models::join(parts, " ");
}

int run_predict(const PredictOptions& o) {
  const auto loaded = load_topology_arg(o.topology);
  const models::Topology& topology = loaded.topology;

  std::optional<models::Workload> workload;
  std::optional<double> bytes;
  if (!o.size.empty()) bytes = parse_size(o.size, "--size");
  if (!o.workload.empty() || !bytes) workload = models::load_workload(o.workload.empty() ? kDefaultWorkload : o.workload);

  std::vector<const models::Strategy*> strategies;
  if (o.strategies.empty()) {
    for (const models::Strategy* s : models::all_strategies()) {
      if (o.executor != "formula" || s->closed_form) strategies.push_back(s);
    }
  } else {
    for (const auto& item : o.strategies) {
      for (const auto& name : models::split_list(item, "--strategy")) strategies.push_back(&models::find_strategy(name));
    }
  }
  models::SyncParams given = models::SyncParams::parse(o.params);
  if (!o.ring_order.empty()) {
    if (given.get("ring_order")) throw models::InputError("--ring-order and --param ring_order both given; expected one");
    given.set("ring_order", o.ring_order);
  }
  // A --param must mean something to at least one chosen strategy.
  for (const auto& [key, value] : given.values()) {
    bool used = false;
    std::vector<std::string> known;
    for (const auto* s : strategies) {
      for (const auto& spec : models::params_of(*s)) {
        used = used || spec.name == key;
        known.push_back(spec.name);
      }
    }
    if (!used) {
      std::set<std::string> unique(known.begin(), known.end());
      std::vector<std::string> names(unique.begin(), unique.end());
      throw models::InputError("--param " + key + "=" + value + ": no chosen strategy has a parameter '" + key + "'" +
                               models::did_you_mean(key, names) + "; their parameters: " + models::join(names));
    }
  }

  std::vector<models::Placement> placements;
  if (!o.ranks.empty()) {
    if (!o.gpus.empty()) throw models::InputError("--ranks and --gpus both given; expected one of them");
    placements.push_back(models::named_gpus(topology, models::split_list(o.ranks, "--ranks")));
  } else {
    for (int n : parse_gpu_counts(o.gpus, static_cast<int>(topology.gpus().size()))) {
      placements.push_back(models::first_gpus(topology, n));
    }
  }

  const bool single = strategies.size() == 1 && placements.size() == 1;
  std::vector<models::ResultRecord> records;
  Table table({"strategy", ">GPUs", "params", ">sync/step", ">iteration", ">epoch", ">speed-up", ">comm", ">algbw GB/s",
               ">busbw GB/s"});
  for (const auto* s : strategies) {
    models::SyncParams own;
    for (const auto& spec : models::params_of(*s)) {
      if (auto v = given.get(spec.name)) own.set(spec.name, *v);
    }
    for (const auto& placement : placements) {
      models::PredictRequest q;
      q.topology = &topology;
      q.workload = workload ? &*workload : nullptr;
      q.bytes = bytes;
      q.strategy = s;
      q.params = own;
      q.placement = placement;
      q.executor = o.executor;
      models::ResultRecord r;
      try {
        r = models::predict(q);
      } catch (const models::InputError& e) {
        if (single) throw;
        table.add_row({s->name, std::to_string(placement.size()), "-", "skipped"});
        table.add_note_row(std::string("^ ") + e.what());
        continue;
      }
      auto opt = [](const std::optional<double>& v, int decimals) { return v ? format_fixed(*v, decimals) : "-"; };
      table.add_row({r.strategy, std::to_string(r.ranks), params_text(r, own), format_seconds(r.time_per_sync_s),
                     r.time_per_iteration_s ? format_seconds(*r.time_per_iteration_s) : "-",
                     r.time_per_epoch_s ? format_seconds(*r.time_per_epoch_s) : "-",
                     r.speedup_vs_1gpu ? format_fixed(*r.speedup_vs_1gpu, 2) + "x" : "-",
                     r.time_per_iteration_s ? format_fixed(100 * r.communication_share(), 0) + "%" : "-",
                     opt(r.algbw_GBps(), 2), opt(r.busbw_GBps(), 2)});
      records.push_back(std::move(r));
    }
  }

  const std::string format = choose_format(o.format, o.output);
  if (format != "table") {
    models::write_file_atomically(o.output.empty() ? "-" : o.output, records_text(records, format));
    if (!o.output.empty() && o.output != "-") std::cerr << "wrote " << records.size() << " records to " << o.output << "\n";
    return 0;
  }

  std::cout << "gradsync predict: topology " << topology.name() << " (" << topology.gpus().size() << " GPUs), ";
  if (workload) {
    std::cout << "workload " << workload->name << " (" << format_fixed(workload->total_params() / 1e6, 1)
              << " M params, " << format_bytes(bytes ? *bytes : workload->gradient_bytes()) << " per sync, "
              << format_seconds(workload->compute_s()) << " compute per minibatch, " << workload->minibatches_per_epoch
              << " minibatches per epoch)";
  } else {
    std::cout << "size " << format_bytes(*bytes) << " per sync (no workload: no iteration or epoch figures)";
  }
  std::cout << ", executor " << o.executor << "\n\n" << table.render() << "\n";
  if (workload) {
    std::cout << "speed-up: one GPU training alone (" << format_seconds(workload->compute_s() * workload->minibatches_per_epoch)
              << " per epoch, no synchronisation) / epoch time; epoch = minibatches / N x iteration (source A, eqs. 5-8)\n";
  }
  if (!records.empty()) {
    const auto& p = records.front().params;
    std::cout << "reduction: GPU " << p.at("reduce_GBps") << " GB/s, host " << p.at("host_reduce_GBps")
              << " GB/s (--param reduce_GBps=..., host_reduce_GBps=...)\n";
  }
  if (o.executor == "formula") {
    std::cout << "formula executor: the papers' closed forms with B = the slowest path a strategy uses and a = its "
                 "largest latency\n";
  }
  return 0;
}

}  // namespace

Action add_predict(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict", "Predict the time of synchronisation strategies on a topology");
  cmd->footer(
      "Examples:\n"
      "  gradsync predict                                   # source-A machine, FFNN LM, every strategy\n"
      "  gradsync predict --gpus 1,2,3,4 --strategy ring,ps\n"
      "  gradsync predict --topology dgx1-v100-hybrid-cube-mesh --strategy hierarchical --param k=4\n"
      "  gradsync predict --topology my-cluster.json --size 256MiB --format csv -o out.csv\n"
      "Strategies: ps, ring, hierarchical, ps_hra (see DESIGN.md). Workload presets: source-a-ffnn-lm, "
      "source-a-rnn-lm, source-c-nmt.");
  cmd->add_option("--topology,-t", o->topology, "topology JSON file (graph or matrix form) or a shipped name")
      ->default_val(kDefaultTopology);
  cmd->add_option("--workload,-w", o->workload, "workload JSON file or preset (default: source-a-ffnn-lm)");
  cmd->add_option("--size,-s", o->size, "bytes to synchronise instead of a workload's gradient (e.g. 64MiB)");
  cmd->add_option("--strategy", o->strategies, "strategy name(s), comma-separated or repeated (default: all)");
  cmd->add_option("--param,-p", o->params, "strategy parameter key=value (repeatable), e.g. k=2, server=host");
  cmd->add_option("--gpus,-g", o->gpus, "GPU counts: 4, 1,2,4 or 1-4 (the first N GPUs; default: all)");
  cmd->add_option("--ranks", o->ranks, "explicit rank order as GPU ids, e.g. gpu0,gpu2");
  cmd->add_option("--executor,-x", o->executor,
                  "analytic (the strategy's schedule on the topology, with link sharing) or formula (the papers' "
                  "closed forms on the slowest path)")
      ->check(CLI::IsMember({"analytic", "formula"}))
      ->default_val("analytic");
  cmd->add_option("--ring-order", o->ring_order, "ring order for strategies with rings: auto, given, or positions i,j,k,...");
  cmd->add_option("--format,-f", o->format, "table, json (JSON lines) or csv (default: table, or from -o's extension)")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  cmd->add_option("--output,-o", o->output, "write records to this file (.jsonl or .csv), atomically");
  return [o] { return run_predict(*o); };
}

}  // namespace gradsync::experiments::cli
