#include "experiments/experiment.h"

#include <set>

#include "experiments/inputs.h"
#include "models/error.h"

namespace gradsync::experiments {

namespace {
const std::vector<std::string> kExecutors = {"formula", "analytic", "sim"};

void check_executor(const std::string& e, const std::string& where) {
  if (std::find(kExecutors.begin(), kExecutors.end(), e) == kExecutors.end()) {
    throw models::InputError(where + ": unknown executor \"" + e + "\"" + models::did_you_mean(e, kExecutors) +
                             "; expected one of " + models::join(kExecutors));
  }
}
}  // namespace

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> counts;
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

std::vector<StrategyChoice> choose_strategies(const std::vector<std::string>& names, const models::SyncParams& params,
                                              const std::vector<std::string>& executors) {
  std::vector<const models::Strategy*> chosen;
  if (names.empty()) {
    const bool formula_only = executors.size() == 1 && executors[0] == "formula";
    for (const models::Strategy* s : models::all_strategies()) {
      if (!formula_only || s->closed_form) chosen.push_back(s);
    }
  } else {
    for (const auto& item : names) {
      for (const auto& name : models::split_list(item, "--strategy")) chosen.push_back(&models::find_strategy(name));
    }
  }
  for (const auto& [key, value] : params.values()) {
    bool used = false;
    std::set<std::string> known;
    for (const auto* s : chosen) {
      for (const auto& spec : models::params_of(*s)) {
        used = used || spec.name == key;
        known.insert(spec.name);
      }
    }
    if (!used) {
      std::vector<std::string> list(known.begin(), known.end());
      throw models::InputError("--param " + key + "=" + value + ": no chosen strategy has a parameter '" + key + "'" +
                               models::did_you_mean(key, list) + "; their parameters: " + models::join(list));
    }
  }
  std::vector<StrategyChoice> out;
  for (const auto* s : chosen) {
    StrategyChoice c{s, {}};
    for (const auto& spec : models::params_of(*s)) {
      if (auto v = params.get(spec.name)) c.params.set(spec.name, *v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Experiment load_experiment(const std::string& path) {
  const models::JsonView doc = models::JsonView::load_file(path);
  doc.expect_object({"topology", "workload", "sizes_bytes", "gpus", "ranks", "strategies", "executors", "iterations",
                     "network_model", "latency_factor", "bandwidth_factor", "speeds", "jitter_cv", "seed", "description"});
  Experiment e;
  e.source = path;
  e.topology = doc.has("topology") ? doc.at("topology").as_string() : std::string(kDefaultTopology);
  if (auto v = doc.get("workload")) e.workload = v->as_string();
  if (auto v = doc.get("sizes_bytes")) {
    for (const auto& s : v->items()) e.sizes_bytes.push_back(s.as_non_negative());
    if (e.sizes_bytes.empty()) v->fail("at least one size in bytes");
    if (!e.workload.empty()) doc.fail_message("gives both \"workload\" and \"sizes_bytes\"; expected one of them");
  }
  if (auto v = doc.get("gpus")) {
    for (const auto& g : v->items()) e.gpus.push_back(static_cast<int>(g.as_integer_at_least(1)));
  }
  if (auto v = doc.get("ranks")) {
    for (const auto& r : v->items()) e.ranks.push_back(r.as_string());
    if (!e.gpus.empty()) doc.fail_message("gives both \"gpus\" and \"ranks\"; expected one of them");
  }
  if (auto v = doc.get("executors")) {
    e.executors.clear();
    for (const auto& x : v->items()) {
      const std::string name = x.as_string();
      if (std::find(kExecutors.begin(), kExecutors.end(), name) == kExecutors.end()) {
        x.fail("one of " + models::join(kExecutors) + models::did_you_mean(name, kExecutors));
      }
      e.executors.push_back(name);
    }
    if (e.executors.empty()) v->fail("at least one executor");
  }
  if (auto v = doc.get("strategies")) {
    for (const auto& sv : v->items()) {
      if (!sv.value().is_object()) sv.fail("an object like {\"name\": \"ring\"}");
      const std::string name = sv.at("name").as_string();
      const models::Strategy* strategy = nullptr;
      try {
        strategy = &models::find_strategy(name);
      } catch (const models::InputError& err) {
        sv.at("name").fail_message(err.what());
      }
      std::vector<std::string> allowed = {"name"};
      for (const auto& spec : models::params_of(*strategy)) allowed.push_back(spec.name);
      sv.expect_object(allowed);
      StrategyChoice c{strategy, {}};
      for (const auto& [key, member] : sv.value().items()) {
        if (key == "name") continue;
        const auto mv = sv.child(member, key);
        c.params.set(key, member.is_string() ? member.get<std::string>() : member.dump());
        if (!(member.is_string() || member.is_number() || member.is_boolean())) mv.fail("a number, string or boolean");
      }
      e.strategies.push_back(std::move(c));
    }
  }
  if (auto v = doc.get("iterations")) e.sim.iterations = static_cast<int>(v->as_integer_at_least(1));
  if (auto v = doc.get("network_model")) {
    e.sim.network.name = v->as_string();
    if (e.sim.network.name != "CM02" && e.sim.network.name != "LV08") v->fail("\"CM02\" or \"LV08\"");
  }
  if (auto v = doc.get("latency_factor")) e.sim.network.latency_factor = v->as_positive();
  if (auto v = doc.get("bandwidth_factor")) e.sim.network.bandwidth_factor = v->as_positive();
  if (auto v = doc.get("speeds")) {
    for (const auto& s : v->items()) e.sim.speeds.push_back(s.as_positive());
  }
  if (auto v = doc.get("jitter_cv")) e.sim.jitter_cv = v->as_non_negative();
  if (auto v = doc.get("seed")) e.sim.seed = static_cast<std::uint64_t>(v->as_integer_at_least(0));
  return e;
}

Plan make_plan(const Experiment& e) {
  for (const auto& x : e.executors) check_executor(x, e.source);
  Plan plan{load_topology_arg(e.topology.empty() ? std::string(kDefaultTopology) : e.topology), std::nullopt, {}, {}, {}, e.executors, e.sim};
  const models::Topology& t = plan.topology.topology;
  if (!e.sizes_bytes.empty()) {
    for (double s : e.sizes_bytes) plan.sizes.push_back(s);
  } else {
    plan.workload = models::load_workload(e.workload.empty() ? kDefaultWorkload : e.workload);
    plan.sizes.push_back(std::nullopt);
  }
  plan.strategies = e.strategies.empty() ? choose_strategies({}, {}, e.executors) : e.strategies;
  if (!e.ranks.empty()) {
    plan.placements.push_back(models::named_gpus(t, e.ranks));
  } else if (e.gpus.empty()) {
    plan.placements.push_back(models::first_gpus(t, static_cast<int>(t.gpus().size())));
  } else {
    for (int n : e.gpus) plan.placements.push_back(models::first_gpus(t, n));
  }
  if (!e.sim.speeds.empty()) {
    for (const auto& p : plan.placements) {
      if (e.sim.speeds.size() != static_cast<std::size_t>(p.size())) {
        throw models::InputError(e.source + ": \"speeds\" has " + std::to_string(e.sim.speeds.size()) + " values but a run has " +
                                 std::to_string(p.size()) + " ranks; expected one speed per rank (give a single GPU count)");
      }
    }
  }
  return plan;
}

}  // namespace gradsync::experiments
