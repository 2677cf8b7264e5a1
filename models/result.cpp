#include "models/result.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "models/error.h"
#include "models/units.h"

namespace gradsync::models {

double busbw_factor(int ranks) { return ranks > 0 ? 2.0 * (ranks - 1) / ranks : 0.0; }

std::optional<double> ResultRecord::algbw_GBps() const {
  if (!(time_per_sync_s > 0)) return std::nullopt;
  return Bps_to_GBps(bytes / time_per_sync_s);
}

std::optional<double> ResultRecord::busbw_GBps() const {
  auto alg = algbw_GBps();
  if (!alg) return std::nullopt;
  return *alg * busbw_factor(ranks);
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
  if (!r.server.empty()) out["server"] = r.server;
  out["period_steps"] = r.period_steps;
  out["asynchronous"] = r.asynchronous;
  out["notes"] = r.notes;
  if (!r.bounding_links.empty()) {
    ordered_json links = ordered_json::array();
    for (const auto& [link, seconds] : r.bounding_links) links.push_back({{"link", link}, {"seconds", seconds}});
    out["bounding_links"] = links;
  }
  if (!r.network_model.empty()) out["network_model"] = r.network_model;
  if (r.simulated_steps) out["simulated_steps"] = *r.simulated_steps;
  if (r.updates_per_s) out["updates_per_s"] = *r.updates_per_s;
  if (r.mean_staleness) out["mean_staleness"] = *r.mean_staleness;
  if (r.max_staleness) out["max_staleness"] = *r.max_staleness;
  if (!r.staleness_histogram.empty()) out["staleness_histogram"] = r.staleness_histogram;
  if (r.sim_wall_s) out["sim_wall_s"] = *r.sim_wall_s;
  return out;
}

std::string to_json_line(const ResultRecord& r) { return to_json(r).dump() + "\n"; }

std::string csv_header() {
  return "executor,topology,strategy,params,ranks,rank_nodes,server,workload,bytes,time_per_sync_s,phases_s,"
         "compute_s_per_minibatch,time_per_iteration_s,time_per_epoch_s,one_gpu_epoch_s,speedup_vs_1gpu,algbw_GBps,"
         "busbw_GBps\n";
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
      << optional_text(r.busbw_GBps()) << '\n';
  return out.str();
}

}  // namespace gradsync::models
