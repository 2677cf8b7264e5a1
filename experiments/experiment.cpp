#include "experiments/experiment.h"

#include <filesystem>
#include <set>

#include "experiments/inputs.h"
#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::experiments {

namespace {
// Bounds that keep counts in an int and simulations finite.
constexpr int kMaxGpuCount = 65536;
constexpr int kMaxIterations = 1000000;
}  // namespace

std::vector<const models::Executor*> find_executors(const std::vector<std::string>& names, const std::string& where) {
  std::vector<const models::Executor*> out;
  for (const auto& name : names) out.push_back(&models::find_executor(name, where));
  if (out.empty()) out.push_back(&models::default_executor());
  return out;
}

bool Plan::has_slow_executor() const {
  return std::any_of(executors.begin(), executors.end(), [](const models::Executor* x) { return x->slow(); });
}

std::vector<int> parse_gpu_counts(const std::string& text) {
  std::vector<int> counts;
  for (const auto& item : models::split_list(text, "--gpus")) {
    const auto dash = item.find('-');
    try {
      std::size_t used = 0;
      if (dash != std::string::npos && dash > 0) {  // a range "1-4"
        const int lo = std::stoi(item.substr(0, dash), &used);
        if (used != dash) throw std::invalid_argument(item);
        const std::string high = item.substr(dash + 1);
        const int hi = std::stoi(high, &used);
        if (used != high.size() || lo > hi) throw std::invalid_argument(item);
        if (lo < 1 || hi > kMaxGpuCount) {
          throw models::InputError("--gpus \"" + text + "\": the range \"" + item + "\" goes outside 1.." +
                                   std::to_string(kMaxGpuCount) + "; expected GPU counts between 1 and " +
                                   std::to_string(kMaxGpuCount));
        }
        for (int n = lo; n <= hi; ++n) counts.push_back(n);
      } else {
        const int n = std::stoi(item, &used);
        if (used != item.size()) throw std::invalid_argument(item);
        if (n < 1 || n > kMaxGpuCount) {
          throw models::InputError("--gpus \"" + text + "\": \"" + item + "\" is outside 1.." +
                                   std::to_string(kMaxGpuCount) + "; expected GPU counts between 1 and " +
                                   std::to_string(kMaxGpuCount));
        }
        counts.push_back(n);
      }
    } catch (const std::logic_error&) {
      throw models::InputError("--gpus \"" + text + "\": \"" + item +
                               "\" is not a GPU count; expected counts like 4, 1,2,4 or 1-4");
    }
  }
  std::set<int> seen;
  for (int n : counts) {
    if (!seen.insert(n).second) {
      throw models::InputError("--gpus \"" + text + "\": " + std::to_string(n) + " GPUs is listed twice; expected each count once");
    }
  }
  return counts;
}

std::vector<StrategyChoice> choose_strategies(const std::vector<std::string>& names, const models::SyncParams& params,
                                              const std::vector<const models::Executor*>& executors) {
  std::vector<const models::Strategy*> chosen;
  if (names.empty()) {
    for (const models::Strategy* s : models::all_strategies()) {
      const bool covered = std::all_of(executors.begin(), executors.end(), [&](const models::Executor* x) { return x->covers(*s); });
      if (covered) chosen.push_back(s);
    }
  } else {
    for (const auto& item : names) {
      for (const auto& name : models::split_list(item, "--strategy")) {
        const models::Strategy* s = &models::find_strategy(name);
        if (std::find(chosen.begin(), chosen.end(), s) != chosen.end()) {
          throw models::InputError("--strategy " + name + ": listed twice; expected each strategy once");
        }
        chosen.push_back(s);
      }
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
    StrategyChoice c{s, {}, {}};
    for (const auto& spec : models::params_of(*s)) {
      if (auto v = params.get(spec.name)) c.params.set(spec.name, *v);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Experiment load_experiment(const std::string& path) { return load_experiment(models::JsonView::load_file(path)); }

Experiment load_experiment(const models::JsonView& doc) {
  doc.expect_object({"topology", "workload", "sizes_bytes", "gpus", "ranks", "strategies", "executors", "iterations",
                     "network_model", "latency_factor", "bandwidth_factor", "speeds", "jitter_cv", "seed", "description",
                     "overlap"});
  Experiment e;
  e.source = doc.source();
  e.topology = doc.has("topology") ? doc.at("topology").as_string() : std::string(kDefaultTopology);
  if (auto v = doc.get("workload")) e.workload = v->as_string();
  if (auto v = doc.get("description")) v->as_string();  // free text, but text
  // A list given must hold something, and no item twice (a repeated point would be computed
  // twice and collide in sweep files).
  auto non_empty = [](const models::JsonView& v, const std::vector<models::JsonView>& items, const std::string& what) {
    if (items.empty()) v.fail("at least one " + what);
    return items;
  };
  auto once = [](const models::JsonView& item, const models::json& value, std::set<std::string>& seen, const std::string& what) {
    if (!seen.insert(value.dump()).second) item.fail(what + " not listed before");
  };
  std::set<std::string> seen;
  if (auto v = doc.get("sizes_bytes")) {
    for (const auto& s : non_empty(*v, v->items(), "size in bytes")) {
      e.sizes_bytes.push_back(static_cast<double>(s.as_integer_in(0, static_cast<std::int64_t>(models::kMaxBytes))));
      once(s, models::json(e.sizes_bytes.back()), seen, "a size");
    }
    if (!e.workload.empty()) doc.fail_message("gives both \"workload\" and \"sizes_bytes\"; expected one of them");
  }
  if (auto v = doc.get("gpus")) {
    seen.clear();
    for (const auto& g : non_empty(*v, v->items(), "GPU count")) {
      const std::int64_t n = g.as_integer_at_least(1);
      if (n > kMaxGpuCount) g.fail("a GPU count of at most " + std::to_string(kMaxGpuCount));
      e.gpus.push_back(static_cast<int>(n));
      once(g, models::json(e.gpus.back()), seen, "a GPU count");
    }
  }
  if (auto v = doc.get("ranks")) {
    seen.clear();
    for (const auto& r : non_empty(*v, v->items(), "GPU id")) {
      e.ranks.push_back(r.as_string());
      once(r, r.value(), seen, "a GPU id");
    }
    if (!e.gpus.empty()) doc.fail_message("gives both \"gpus\" and \"ranks\"; expected one of them");
  }
  if (auto v = doc.get("executors")) {
    e.executors.clear();
    seen.clear();
    for (const auto& x : non_empty(*v, v->items(), "executor")) {
      const std::string name = x.as_string();
      const auto known = models::executor_names();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        x.fail("one of " + models::join(known) + models::did_you_mean(name, known));
      }
      once(x, x.value(), seen, "an executor");
      e.executors.push_back(name);
    }
  }
  if (auto v = doc.get("strategies")) {
    seen.clear();
    for (const auto& sv : non_empty(*v, v->items(), "strategy (or leave \"strategies\" out for all of them)")) {
      if (!sv.value().is_object()) sv.fail("an object like {\"name\": \"ring\"}");
      const std::string name = sv.at("name").as_string();
      const models::Strategy* strategy = nullptr;
      try {
        strategy = &models::find_strategy(name);
      } catch (const models::InputError& err) {
        sv.at("name").fail_message(err.what());
      }
      once(sv, sv.value(), seen, "a strategy with parameters");
      std::vector<std::string> allowed = {"name"};
      for (const auto& spec : models::params_of(*strategy)) allowed.push_back(spec.name);
      sv.expect_object(allowed);
      StrategyChoice c{strategy, {}, sv.where()};
      for (const auto& [key, member] : sv.value().items()) {
        if (key == "name") continue;
        const auto mv = sv.child(member, key);
        c.params.set(key, member.is_string() ? member.get<std::string>() : member.dump());
        if (!(member.is_string() || member.is_number() || member.is_boolean())) mv.fail("a number, string or boolean");
      }
      e.strategies.push_back(std::move(c));
    }
  }
  if (auto v = doc.get("iterations")) e.sim.iterations = static_cast<int>(v->as_integer_in(1, kMaxIterations));
  if (auto v = doc.get("network_model")) {
    e.sim.network_model = v->as_string();
    if (e.sim.network_model != "CM02" && e.sim.network_model != "LV08") v->fail("\"CM02\" or \"LV08\"");
  }
  if (auto v = doc.get("latency_factor")) e.sim.latency_factor = v->as_number_in(1e-6, 1e6, "a factor");
  if (auto v = doc.get("bandwidth_factor")) e.sim.bandwidth_factor = v->as_number_in(1e-6, 1e6, "a factor");
  if (auto v = doc.get("speeds")) {
    for (const auto& s : non_empty(*v, v->items(), "relative speed (one per rank)")) {
      e.sim.speeds.push_back(s.as_number_in(1e-3, 1e3, "a relative speed"));
    }
  }
  if (auto v = doc.get("jitter_cv")) e.sim.jitter_cv = v->as_number_in(0, 10, "a coefficient of variation");
  if (auto v = doc.get("seed")) e.sim.seed = static_cast<std::uint64_t>(v->as_integer_at_least(0));
  // "overlap": true (DDP's buckets) or {"bucket_cap_bytes"?, "first_bucket_bytes"?, "slowdown"?}.
  if (auto v = doc.get("overlap")) {
    models::OverlapSettings o;
    if (v->is_object()) {
      v->expect_object({"bucket_cap_bytes", "first_bucket_bytes", "slowdown"});
      if (auto c = v->get("bucket_cap_bytes")) o.bucket_cap_bytes = c->as_number_in(1, models::kMaxBytes, "bytes");
      if (auto c = v->get("first_bucket_bytes")) o.first_bucket_bytes = c->as_number_in(1, models::kMaxBytes, "bytes");
      if (auto c = v->get("slowdown")) o.slowdown = c->as_number_in(0, 10, "a share");
      e.overlap = o;
    } else if (v->as_bool()) {
      e.overlap = o;
    }
    if (e.overlap && !doc.has("workload") && doc.has("sizes_bytes")) {
      v->fail_message("needs a workload (its layers and their compute), not sizes_bytes");
    }
  }
  return e;
}

std::string located_error(const StrategyChoice& c, const std::string& message) {
  const std::string flag = "--param ";
  if (c.origin.empty() || message.rfind(flag, 0) != 0) return message;
  std::string where = c.origin;
  const std::string key = message.substr(flag.size(), message.find_first_of("= :,", flag.size()) - flag.size());
  if (c.params.get(key)) where += "/" + key;
  return where + ": " + message;
}

Plan make_plan(const Experiment& e) {
  const auto executors = find_executors(e.executors, e.source);
  // An experiment file's values are named by their JSON path (the flags name themselves).
  const bool from_file = e.source != Experiment{}.source;
  const std::string topology = e.topology.empty() ? std::string(kDefaultTopology) : e.topology;
  if (from_file) {
    try {
      models::resolve_topology_path(topology);
    } catch (const models::InputError&) {
      const auto names = models::shipped_topology_names();
      throw models::InputError(e.source + ": /topology: got \"" + topology +
                               "\"; expected a topology file or a shipped topology" + models::did_you_mean(topology, names) +
                               ": " + models::join(names));
    }
  }
  Plan plan{load_topology_arg(topology), std::nullopt, {}, {}, {}, executors, {}, std::nullopt};
  plan.settings.sim = e.sim;
  plan.overlap = e.overlap;
  const models::Topology& t = plan.topology.topology;
  if (!e.sizes_bytes.empty()) {
    for (double s : e.sizes_bytes) plan.sizes.push_back(s);
  } else {
    const std::string workload = e.workload.empty() ? kDefaultWorkload : e.workload;
    std::error_code ec;
    if (from_file && !models::workload_preset(workload) && !std::filesystem::exists(workload, ec)) {
      const auto presets = models::workload_preset_names();
      throw models::InputError(e.source + ": /workload: got \"" + workload + "\"; expected a workload file or a preset" +
                               models::did_you_mean(workload, presets) + ": " + models::join(presets));
    }
    plan.workload = models::load_workload(workload);
    plan.sizes.push_back(std::nullopt);
  }
  plan.strategies = e.strategies.empty() ? choose_strategies({}, {}, executors) : e.strategies;
  const int gpus = static_cast<int>(t.gpus().size());
  if (!e.ranks.empty()) {
    plan.placements.push_back(models::named_gpus(t, e.ranks, from_file ? e.source + ": /ranks" : "--ranks"));
  } else if (e.gpus.empty()) {
    plan.placements.push_back(models::first_gpus(t, gpus));
  } else {
    for (std::size_t i = 0; i < e.gpus.size(); ++i) {
      const int n = e.gpus[i];
      if (from_file && (n < 1 || n > gpus)) {
        throw models::InputError(e.source + ": /gpus/" + std::to_string(i) + ": got " + std::to_string(n) +
                                 "; expected a GPU count between 1 and " + std::to_string(gpus) + " (topology \"" + t.name() +
                                 "\" has " + std::to_string(gpus) + " GPUs)");
      }
      plan.placements.push_back(models::first_gpus(t, n));
    }
  }
  if (!e.sim.speeds.empty()) {
    for (const auto& p : plan.placements) {
      if (e.sim.speeds.size() != static_cast<std::size_t>(p.size())) {
        throw models::InputError(e.source + (from_file ? ": /speeds: " : ": \"speeds\" ") + "has " +
                                 std::to_string(e.sim.speeds.size()) + " values but a run has " + std::to_string(p.size()) +
                                 " ranks; expected one speed per rank (give a single GPU count)");
      }
    }
  }
  return plan;
}

}  // namespace gradsync::experiments
