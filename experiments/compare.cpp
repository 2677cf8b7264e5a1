#include "experiments/compare.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "models/support/stats.h"
#include "models/support/error.h"
#include "models/topology/placement.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments {
namespace {

// Whether the strategy's "collective" parameter offers `collective` for these ranks (some
// collectives only where the ranks' topology allows them).
bool offers(const models::Strategy& strategy, const std::string& collective, const models::ParamContext& context) {
  const models::ParamSpec* spec = models::find_param(strategy, "collective");
  if (!spec) return false;
  const auto& words = spec->domain.words;
  if (std::find(words.begin(), words.end(), collective) != words.end()) return true;
  if (!spec->domain.values) return false;
  const std::vector<std::string> here = spec->domain.values(context);
  return std::find(here.begin(), here.end(), collective) != here.end();
}

const models::NcclTestsTiming* timing_of(const models::NcclTestsRow& row, bool in_place) {
  const auto& t = in_place ? row.in_place : row.out_of_place;
  return t ? &*t : nullptr;
}

// The run's ranks on the GPUs its device lines name: on one host the GPU of each device index;
// across hosts (a generated cluster's "n<h>-gpu<d>") the hosts in the order the lines first name
// them, so that 10 ranks of one GPU a host sit on ten hosts, not on the first host's GPUs. Else the
// first GPUs.
models::Placement placement_of(const models::Topology& topology, const models::NcclTestsRun& run) {
  const int n = run.ranks();
  if (n > static_cast<int>(topology.gpus().size())) {
    throw models::InputError(run.where + ": the nccl-tests run has " + std::to_string(n) + " ranks but the topology " +
                             topology.name() + " has " + std::to_string(topology.gpus().size()) +
                             " GPUs; expected the log and the topology of one machine");
  }
  std::vector<std::string> hosts;
  for (const auto& d : run.devices) {
    if (std::find(hosts.begin(), hosts.end(), d.host) == hosts.end()) hosts.push_back(d.host);
  }
  std::vector<std::string> ids;
  for (const auto& d : run.devices) {
    const auto h = std::find(hosts.begin(), hosts.end(), d.host) - hosts.begin();
    ids.push_back((hosts.size() > 1 ? "n" + std::to_string(h) + "-" : std::string()) + "gpu" + std::to_string(d.device));
  }
  bool all_there = static_cast<int>(ids.size()) == n && std::set<std::string>(ids.begin(), ids.end()).size() == ids.size();
  for (const auto& id : ids) all_there = all_there && topology.find(id).has_value();
  return all_there ? models::named_gpus(topology, ids, run.where) : models::first_gpus(topology, n);
}

// All-reduce with any strategy; the other collectives where the strategy's collective parameter
// offers them for the run's ranks.
bool modelled(const models::NcclTestsRun& run, const models::Strategy& strategy, const models::Topology& topology) {
  if (run.collective == "all_reduce") return true;
  if (run.ranks() < 2 || run.ranks() > static_cast<int>(topology.gpus().size())) return false;
  const models::Placement placement = placement_of(topology, run);
  return offers(strategy, run.collective, models::ParamContext{topology, placement});
}

}  // namespace

double busbw_error(const models::ResultRecord& predicted, const models::ResultRecord& measured) {
  return measured.time_per_sync_s / predicted.time_per_sync_s - 1;
}

std::optional<ErrorSummary> summarize_errors(std::vector<double> abs_errors) {
  if (abs_errors.empty()) return std::nullopt;
  ErrorSummary s;
  s.sizes = static_cast<int>(abs_errors.size());
  s.max_abs = *std::max_element(abs_errors.begin(), abs_errors.end());
  s.p90_abs = models::percentile(abs_errors, 0.9);
  s.median_abs = models::median(std::move(abs_errors));
  return s;
}

std::optional<ErrorSummary> summarize_errors(std::vector<double> abs_errors, const std::vector<bool>& held, std::vector<double> widths) {
  auto s = summarize_errors(std::move(abs_errors));
  if (!s || widths.empty()) return s;
  s->ranges = static_cast<int>(widths.size());
  s->held = static_cast<int>(std::count(held.begin(), held.end(), true));
  s->median_width = models::median(std::move(widths));
  return s;
}

bool range_holds(const models::ResultRecord& predicted, const models::ResultRecord& measured) {
  const auto range = predicted.busbw_range_GBps();
  const auto bus = measured.busbw_GBps();
  if (!range || !bus) return false;
  return *bus >= range->first * (1 - 0.005) && *bus <= range->second * (1 + 0.005);
}

double range_width(const models::ResultRecord& predicted) {
  const auto range = predicted.busbw_range_GBps();
  return range && range->first > 0 ? range->second / range->first - 1 : 0.0;
}

std::optional<ErrorSummary> summarize(const CompareRun& run, const std::string& executor, double lo, double hi) {
  std::vector<double> errors, widths;
  std::vector<bool> held;
  for (const auto& p : run.points) {
    const auto it = p.predicted.find(executor);
    if (p.bytes < lo || p.bytes >= hi || it == p.predicted.end()) continue;
    errors.push_back(std::abs(busbw_error(it->second, p.measured)));
    if (!it->second.open_facts.empty()) {
      held.push_back(range_holds(it->second, p.measured));
      widths.push_back(range_width(it->second));
    }
  }
  if (widths.size() != errors.size()) widths.clear();
  return summarize_errors(std::move(errors), held, std::move(widths));
}

std::size_t comparison_count(const models::Topology& topology, const std::vector<models::NcclTestsRun>& runs,
                             const CompareOptions& options) {
  std::size_t n = 0;
  const models::Strategy& strategy = models::find_strategy(options.strategy);
  for (const auto& run : runs) {
    if (run.ranks() < 2 || !modelled(run, strategy, topology)) continue;  // as compare_runs skips them
    for (const auto& row : run.rows) n += row.bytes > 0 && timing_of(row, options.in_place) ? options.executors.size() : 0;
  }
  return n;
}

std::vector<CompareRun> compare_runs(const models::Topology& topology, const std::vector<models::NcclTestsRun>& runs,
                                     const CompareOptions& options, models::Progress* progress) {
  const models::Strategy& strategy = models::find_strategy(options.strategy);
  models::SyncParams params = models::SyncParams::parse(options.params);
  for (const auto& name : options.fitted) params.mark_fitted(name);
  std::vector<const models::Executor*> executors;
  for (const auto& name : options.executors) executors.push_back(&models::find_executor(name));
  std::vector<CompareRun> out;
  for (const auto& run : runs) {
    CompareRun c;
    c.run = &run;
    if (run.ranks() < 2) {
      c.skipped = "one rank: nothing to synchronise";
      out.push_back(std::move(c));
      continue;
    }
    if (!modelled(run, strategy, topology)) {
      const bool by_nccl = modelled(run, models::find_strategy("nccl"), topology);
      c.skipped = run.collective.empty() ? "the log does not name the collective"
                  : by_nccl ? run.collective + " needs a strategy that takes the collective (--strategy nccl)"
                            : run.collective + " is not modelled yet (gradsync predicts all-reduces, and with nccl "
                                               "all-gathers, reduce-scatters, broadcasts and reduces)";
      out.push_back(std::move(c));
      continue;
    }
    const models::Placement placement = placement_of(topology, run);
    // A strategy that models kernel launches learns from the log how many GPUs each
    // thread drove (nccl-tests -g N), unless the user said.
    models::SyncParams run_params = params;
    if (run.collective != "all_reduce" && !run_params.get("collective")) run_params.set("collective", run.collective);
    if (models::declares(strategy, "gpus_per_thread") && !run_params.get("gpus_per_thread")) {
      run_params.set("gpus_per_thread", std::to_string(std::max(1, run.gpus_per_thread)));
    }
    // The columns compared: in place, a strategy that models the out-of-place copy leaves it out.
    if (options.in_place && models::declares(strategy, "in_place") && !run_params.get("in_place")) run_params.set("in_place", "on");
    // The NCCL release the log states (major.minor), whose rules apply, unless the user said.
    if (models::declares(strategy, "nccl_version") && !run_params.get("nccl_version") && !run.nccl_version.empty()) {
      // "2.27.3" and "2.8" alike: the text up to a second dot.
      const std::size_t minor = run.nccl_version.find('.');
      const std::string release = run.nccl_version.substr(0, minor == std::string::npos ? minor : run.nccl_version.find('.', minor + 1));
      const models::ParamSpec* spec = models::find_param(strategy, "nccl_version");
      const auto& words = spec->domain.words;
      if (std::find(words.begin(), words.end(), release) != words.end()) run_params.set("nccl_version", release);
    }
    // And what the log's command set (NCCL_ALGO=Ring, NCCL_MIN_CTAS=24, ...), unless the user said.
    if (strategy.params_from_environment) {
      for (const auto& [name, value] : strategy.params_from_environment(run.environment)) {
        if (!run_params.get(name)) run_params.set(name, value);
      }
    }
    const auto measured = models::measured_records(run, topology.name());
    for (const auto& m : measured) {
      const bool in_place = std::find(m.notes.begin(), m.notes.end(), "in-place") != m.notes.end();
      if (in_place != options.in_place || !(m.bytes > 0)) continue;
      ComparePoint p;
      p.bytes = m.bytes;
      p.measured = m;
      models::PredictRequest q;
      q.topology = &topology;
      q.bytes = m.bytes;
      q.strategy = &strategy;
      q.params = run_params;
      q.placement = placement;
      for (const auto* e : executors) {
        p.predicted[e->name()] = e->evaluate(q, options.settings);
        if (progress) progress->step(e->name() + " " + models::format_bytes(m.bytes));
      }
      c.points.push_back(std::move(p));
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace gradsync::experiments
