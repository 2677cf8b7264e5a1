#include "models/executors/result.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {

std::optional<double> ResultRecord::algbw_GBps() const {
  if (!(time_per_sync_s > 0)) return std::nullopt;
  return Bps_to_GBps(bytes / time_per_sync_s);
}

std::optional<double> ResultRecord::busbw_GBps() const {
  auto alg = algbw_GBps();
  if (!alg) return std::nullopt;
  return *alg * busbw_factor;
}

double ResultRecord::busbw_at(const OpenFact&, double relative_time) const {
  const auto bus = busbw_GBps();
  return bus && relative_time > 0 ? *bus / relative_time : 0.0;
}

std::optional<std::pair<double, double>> ResultRecord::busbw_range_GBps() const {
  const auto bus = busbw_GBps();
  if (!bus) return std::nullopt;
  // The product over independent facts (a group counts as one) of their most and least relative time.
  std::map<std::string, std::pair<double, double>> extremes;  // fact or group -> (most, least)
  for (const OpenFact& f : open_facts) {
    auto& [most, least] = extremes.try_emplace(f.group.empty() ? "fact: " + f.name : "group: " + f.group, 1.0, 1.0).first->second;
    for (const auto& [value, relative] : f.relative_time) {
      if (!(relative > 0)) continue;
      most = std::max(most, relative);
      least = std::min(least, relative);
    }
  }
  double slower = 1, faster = 1;
  for (const auto& [key, e] : extremes) {
    slower *= e.first;
    faster *= e.second;
  }
  return std::make_pair(*bus / slower, *bus / faster);
}

double ResultRecord::communication_share() const {
  if (!time_per_iteration_s || !(*time_per_iteration_s > 0)) return time_per_sync_s > 0 ? 1.0 : 0.0;
  if (compute_s_per_minibatch) return std::max(0.0, 1.0 - *compute_s_per_minibatch / *time_per_iteration_s);
  return time_per_sync_s / std::max(1, period_steps) / *time_per_iteration_s;
}

namespace {
ordered_json optional_number(const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); }


std::string csv_number(double v) { return number_text(v, 9); }

std::string optional_text(const std::optional<double>& v) { return v ? csv_number(*v) : ""; }
}  // namespace

ordered_json to_json(const ResultRecord& r) {
  ordered_json phases = ordered_json::object();
  for (const auto& p : r.phases) phases[p.name] = p.seconds;
  ordered_json out = {{"executor", r.executor},
              {"topology", r.topology},
              {"strategy", r.strategy},
              {"params", r.params},
              {"ranks", r.ranks},
              {"rank_nodes", r.rank_nodes},
              {"workload", r.workload},
              {"bytes", r.bytes},
              {"time_per_sync_s", r.time_per_sync_s},
              {"phases_s", phases},
              {"compute_s_per_minibatch", optional_number(r.compute_s_per_minibatch)},
              {"time_per_iteration_s", optional_number(r.time_per_iteration_s)},
              {"time_per_epoch_s", optional_number(r.time_per_epoch_s)},
              {"one_gpu_epoch_s", optional_number(r.one_gpu_epoch_s)},
              {"speedup_vs_1gpu", optional_number(r.speedup_vs_1gpu)},
              {"algbw_GBps", optional_number(r.algbw_GBps())},
              {"busbw_GBps", optional_number(r.busbw_GBps())}};
  const auto range = r.busbw_range_GBps();
  if (range && !r.open_facts.empty()) out["busbw_range_GBps"] = {range->first, range->second};  // only where a fact is open
  if (!r.open_facts.empty()) {
    ordered_json facts = ordered_json::array();
    for (const OpenFact& f : r.open_facts) {
      ordered_json values = ordered_json::object();
      values[f.assumed] = r.busbw_GBps() ? *r.busbw_GBps() : 0.0;
      for (const auto& [value, relative] : f.relative_time) values[value] = r.busbw_at(f, relative);
      ordered_json fact = {{"name", f.name}, {"assumed", f.assumed}, {"busbw_GBps", values}};
      if (!f.group.empty()) fact["group"] = f.group;
      if (f.measured_in_band) fact["measured_in_band"] = true;
      facts.push_back(std::move(fact));
    }
    out["open_facts"] = facts;
  }
  if (!r.server.empty()) out["server"] = r.server;
  out["period_steps"] = r.period_steps;
  out["asynchronous"] = r.asynchronous;
  out["notes"] = r.notes;
  if (!r.bounding_links.empty()) {
    ordered_json links = ordered_json::array();
    for (const auto& [link, seconds] : r.bounding_links) links.push_back({{"link", link}, {"seconds", seconds}});
    out["bounding_links"] = links;
  }
  if (r.engine_bound_s > 0) out["engine_bound_s"] = r.engine_bound_s;
  if (r.staged_bound_s > 0) out["staged_bound_s"] = r.staged_bound_s;
  if (r.overlap) {
    const OverlapFigures& o = *r.overlap;
    out["overlap"] = {{"buckets", o.buckets},
                      {"bucket_cap_bytes", o.bucket_cap_bytes},
                      {"first_bucket_bytes", o.first_bucket_bytes},
                      {"slowdown", o.slowdown},
                      {"exposed_s", o.exposed_s},
                      {"bucket_sync_s", o.bucket_sync_s},
                      {"backward_s", o.backward_s},
                      {"iteration_without_overlap_s", o.iteration_without_s}};
  }
  if (r.memory) {
    const MemoryPerGpu& m = *r.memory;
    out["memory_per_gpu"] = {{"sharding", sharding_word(m.sharding)},
                             {"parameters_bytes", m.parameters_bytes},
                             {"gradients_bytes", m.gradients_bytes},
                             {"optimizer_bytes", m.optimizer_bytes},
                             {"total_bytes", m.total_bytes()}};
  }
  if (r.convergence) {
    const ConvergenceFigures& c = *r.convergence;
    auto estimate = [](const Estimate& e) { return ordered_json{{"value", e.value}, {"low", e.low}, {"high", e.high}}; };
    out["time_to_target"] = {{"target", c.target},
                             {"global_batch", c.global_batch},
                             {"samples", estimate(c.samples)},
                             {"steps", estimate(c.steps)},
                             {"time_s", estimate(c.time_s)},
                             {"one_gpu_time_s", estimate(c.one_gpu_time_s)},
                             {"speedup", estimate(c.speedup)},
                             {"relative_samples", estimate(c.relative_samples)},
                             {"conditions", c.conditions}};
  }
  if (!r.no_time_to_target.empty()) out["no_time_to_target"] = r.no_time_to_target;
  if (!r.network_model.empty()) out["network_model"] = r.network_model;
  if (r.simulated_steps) out["simulated_steps"] = *r.simulated_steps;
  if (r.updates_per_s) out["updates_per_s"] = *r.updates_per_s;
  if (r.mean_staleness) out["mean_staleness"] = *r.mean_staleness;
  if (r.max_staleness) out["max_staleness"] = *r.max_staleness;
  if (!r.staleness_histogram.empty()) out["staleness_histogram"] = r.staleness_histogram;
  if (r.sim_wall_s) out["sim_wall_s"] = *r.sim_wall_s;
  if (r.wrong_elements) out["wrong_elements"] = *r.wrong_elements;
  return out;
}

std::string to_json_line(const ResultRecord& r) { return to_json(r).dump() + "\n"; }

ResultRecord record_from_json(const ordered_json& d) {
  auto opt = [&](const char* key) -> std::optional<double> {
    if (!d.contains(key) || d.at(key).is_null()) return std::nullopt;
    return d.at(key).get<double>();
  };
  ResultRecord r;
  r.executor = d.at("executor").get<std::string>();
  r.topology = d.at("topology").get<std::string>();
  r.strategy = d.at("strategy").get<std::string>();
  for (const auto& [k, v] : d.at("params").items()) r.params[k] = v.get<std::string>();
  r.ranks = d.at("ranks").get<int>();
  for (const auto& n : d.at("rank_nodes")) r.rank_nodes.push_back(n.get<std::string>());
  if (d.contains("server")) r.server = d.at("server").get<std::string>();
  r.workload = d.at("workload").get<std::string>();
  r.bytes = d.at("bytes").get<double>();
  r.time_per_sync_s = d.at("time_per_sync_s").get<double>();
  for (const auto& [name, seconds] : d.at("phases_s").items()) r.phases.push_back({name, seconds.get<double>()});
  r.compute_s_per_minibatch = opt("compute_s_per_minibatch");
  r.time_per_iteration_s = opt("time_per_iteration_s");
  r.time_per_epoch_s = opt("time_per_epoch_s");
  r.one_gpu_epoch_s = opt("one_gpu_epoch_s");
  r.speedup_vs_1gpu = opt("speedup_vs_1gpu");
  if (d.contains("period_steps")) r.period_steps = d.at("period_steps").get<int>();
  if (d.contains("asynchronous")) r.asynchronous = d.at("asynchronous").get<bool>();
  if (d.contains("bounding_links")) {
    for (const auto& b : d.at("bounding_links")) r.bounding_links.emplace_back(b.at("link").get<std::string>(), b.at("seconds").get<double>());
  }
  if (d.contains("engine_bound_s")) r.engine_bound_s = d.at("engine_bound_s").get<double>();
  if (d.contains("staged_bound_s")) r.staged_bound_s = d.at("staged_bound_s").get<double>();
  if (d.contains("notes")) {
    for (const auto& n : d.at("notes")) r.notes.push_back(n.get<std::string>());
  }
  if (d.contains("open_facts")) {
    const double busbw = d.contains("busbw_GBps") && d.at("busbw_GBps").is_number() ? d.at("busbw_GBps").get<double>() : 0.0;
    for (const auto& f : d.at("open_facts")) {
      OpenFact fact;
      fact.name = f.at("name").get<std::string>();
      fact.assumed = f.at("assumed").get<std::string>();
      if (f.contains("group")) fact.group = f.at("group").get<std::string>();
      if (f.contains("measured_in_band")) fact.measured_in_band = f.at("measured_in_band").get<bool>();
      for (const auto& [value, b] : f.at("busbw_GBps").items()) {
        if (value != fact.assumed && b.get<double>() > 0) fact.relative_time.emplace_back(value, busbw / b.get<double>());
      }
      r.open_facts.push_back(std::move(fact));
    }
  }
  if (d.contains("overlap")) {
    const auto& v = d.at("overlap");
    OverlapFigures o;
    o.buckets = v.at("buckets").get<int>();
    o.bucket_cap_bytes = v.at("bucket_cap_bytes").get<double>();
    o.first_bucket_bytes = v.at("first_bucket_bytes").get<double>();
    o.slowdown = v.at("slowdown").get<double>();
    o.exposed_s = v.at("exposed_s").get<double>();
    o.bucket_sync_s = v.at("bucket_sync_s").get<double>();
    o.backward_s = v.at("backward_s").get<double>();
    o.iteration_without_s = v.at("iteration_without_overlap_s").get<double>();
    r.overlap = o;
  }
  if (d.contains("time_to_target")) {
    const auto& v = d.at("time_to_target");
    auto estimate = [&](const char* key) {
      const auto& e = v.at(key);
      return Estimate{e.at("value").get<double>(), e.at("low").get<double>(), e.at("high").get<double>()};
    };
    ConvergenceFigures c;
    c.target = v.at("target").get<std::string>();
    c.global_batch = v.at("global_batch").get<double>();
    c.samples = estimate("samples");
    c.steps = estimate("steps");
    c.time_s = estimate("time_s");
    c.one_gpu_time_s = estimate("one_gpu_time_s");
    c.speedup = estimate("speedup");
    c.relative_samples = estimate("relative_samples");
    c.conditions = v.at("conditions").get<std::string>();
    r.convergence = c;
  }
  if (d.contains("no_time_to_target")) r.no_time_to_target = d.at("no_time_to_target").get<std::string>();
  if (d.contains("memory_per_gpu")) {
    const auto& v = d.at("memory_per_gpu");
    MemoryPerGpu m;
    m.sharding = sharding_from_word(v.at("sharding").get<std::string>()).value_or(Sharding::none);
    m.parameters_bytes = v.at("parameters_bytes").get<double>();
    m.gradients_bytes = v.at("gradients_bytes").get<double>();
    m.optimizer_bytes = v.at("optimizer_bytes").get<double>();
    r.memory = m;
  }
  if (d.contains("network_model")) r.network_model = d.at("network_model").get<std::string>();
  if (d.contains("simulated_steps")) r.simulated_steps = d.at("simulated_steps").get<int>();
  r.updates_per_s = opt("updates_per_s");
  r.mean_staleness = opt("mean_staleness");
  if (d.contains("max_staleness")) r.max_staleness = d.at("max_staleness").get<std::uint64_t>();
  if (d.contains("staleness_histogram")) {
    for (const auto& n : d.at("staleness_histogram")) r.staleness_histogram.push_back(n.get<std::uint64_t>());
  }
  r.sim_wall_s = opt("sim_wall_s");
  if (d.contains("wrong_elements")) r.wrong_elements = d.at("wrong_elements").get<std::uint64_t>();
  // The bus factor is not stored: it is busbw / algbw.
  const auto alg = opt("algbw_GBps"), bus = opt("busbw_GBps");
  if (alg && bus && *alg > 0) r.busbw_factor = *bus / *alg;
  return r;
}


std::string csv_header() {
  return "executor,topology,strategy,params,ranks,rank_nodes,server,workload,bytes,time_per_sync_s,phases_s,"
         "compute_s_per_minibatch,time_per_iteration_s,time_per_epoch_s,one_gpu_epoch_s,speedup_vs_1gpu,algbw_GBps,"
         "busbw_GBps,samples_to_target,time_to_target_s,time_to_target_low_s,time_to_target_high_s,speedup_to_target,"
         "speedup_to_target_low,speedup_to_target_high\n";
}

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string to_csv_row(const ResultRecord& r) {
  std::vector<std::string> params;
  for (const auto& [k, v] : r.params) params.push_back(k + "=" + v);
  std::vector<std::string> phases;
  for (const auto& p : r.phases) phases.push_back(p.name + "=" + csv_number(p.seconds));
  std::ostringstream out;
  out << csv_escape(r.executor) << ',' << csv_escape(r.topology) << ',' << csv_escape(r.strategy) << ','
      << csv_escape(join(params, ";")) << ',' << r.ranks << ',' << csv_escape(join(r.rank_nodes, ";")) << ','
      << csv_escape(r.server) << ',' << csv_escape(r.workload) << ',' << csv_number(r.bytes) << ','
      << csv_number(r.time_per_sync_s) << ',' << csv_escape(join(phases, ";")) << ','
      << optional_text(r.compute_s_per_minibatch) << ',' << optional_text(r.time_per_iteration_s) << ','
      << optional_text(r.time_per_epoch_s) << ',' << optional_text(r.one_gpu_epoch_s) << ','
      << optional_text(r.speedup_vs_1gpu) << ',' << optional_text(r.algbw_GBps()) << ','
      << optional_text(r.busbw_GBps());
  // Time to target (a workload with convergence facts): empty cells where the record has none.
  if (r.convergence) {
    const ConvergenceFigures& c = *r.convergence;
    out << ',' << csv_number(c.samples.value);
    for (const Estimate* e : {&c.time_s, &c.speedup}) out << ',' << csv_number(e->value) << ',' << csv_number(e->low) << ',' << csv_number(e->high);
  } else {
    out << ",,,,,,,";
  }
  out << '\n';
  return out.str();
}

}  // namespace gradsync::models
