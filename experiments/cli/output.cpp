#include "experiments/cli/output.h"

#include <cmath>
#include <string>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/strategies/strategy.h"

namespace gradsync::experiments::cli {

std::string choose_format(const std::string& format, const std::string& output) {
  if (!format.empty()) return format;
  auto ends_with = [&](const std::string& suffix) {
    return output.size() >= suffix.size() && output.compare(output.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".jsonl") || ends_with(".json")) return "json";
  if (ends_with(".csv")) return "csv";
  if (!output.empty() && output != "-") {
    throw models::InputError("-o " + output + ": cannot tell the format from the extension; give --format json|csv "
                             "or name the file *.jsonl or *.csv");
  }
  return "table";
}

std::string params_text(const models::ResultRecord& r, const models::SyncParams& given) {
  const models::Strategy& strategy = models::find_strategy(r.strategy);
  std::vector<std::string> parts;
  for (const auto& [k, v] : r.params) {
    const models::ParamSpec* spec = models::find_param(strategy, k);
    if (!spec) continue;
    using Shown = models::ParamSpec::Shown;
    const bool shown = spec->shown == Shown::always || (spec->shown == Shown::when_resolved && v != "-") ||
                       (spec->shown != Shown::never && given.get(k));
    if (shown) parts.push_back(k + "=" + v);
  }
  return models::join(parts, " ");
}

std::string records_text(const std::vector<models::ResultRecord>& records, const std::string& format) {
  std::string text;
  if (format == "csv") {
    text = models::csv_header();
    for (const auto& r : records) text += models::to_csv_row(r);
  } else {
    for (const auto& r : records) text += models::to_json_line(r);
  }
  return text;
}

std::string time_to_target_cell(const models::ResultRecord& r) {
  if (!r.no_time_to_target.empty()) return "?";
  if (!r.convergence) return "-";
  const models::Estimate& t = r.convergence->time_s;
  if (!t.is_range()) return models::format_seconds(t.value);
  return models::format_seconds(t.value) + " (" + models::format_seconds(t.low) + "-" + models::format_seconds(t.high) + ")";
}

std::string convergence_speedup_cell(const models::ResultRecord& r) {
  if (!r.no_time_to_target.empty()) return "?";
  if (!r.convergence) return "-";
  const models::Estimate& x = r.convergence->speedup;
  if (!x.is_range()) return models::format_fixed(x.value, 2) + "x";
  return models::format_fixed(x.value, 2) + "x (" + models::format_fixed(x.low, 2) + "-" + models::format_fixed(x.high, 2) + "x)";
}

std::vector<std::string> convergence_footnote(const models::Workload& w) {
  if (!w.convergence || !w.samples_per_minibatch) return {};
  const models::ConvergenceFacts& f = *w.convergence;
  const auto b = static_cast<double>(*w.samples_per_minibatch);
  std::vector<std::string> lines;
  lines.push_back("to target: time to " + f.target + " — synchronous SGD's samples at a global batch of GPUs x " +
                  models::number_text(b, 6) + " from S(B) = S_min (1 + B_noise / B), B_noise = " +
                  models::estimate_text(f.noise_scale) + " samples, with " + models::estimate_text(f.samples_to_target) +
                  " samples measured at a global batch of " + models::number_text(f.global_batch, 6) + " (" + f.source + ")");
  std::string own;
  for (const auto& [name, c] : f.strategies) {
    own += (own.empty() ? "" : "; ") + name + " " + models::multiples_text(c) + " (" + c.conditions + ")";
  }
  lines.push_back("  a strategy that changes the training takes its own multiple of those samples" +
                  (own.empty() ? std::string(": the workload gives none (\"?\")") : ": " + own + "; others \"?\""));
  const double gpus = f.noise_scale.value / b;
  lines.push_back("  speed-up to target: one GPU alone to target / time to target; " +
                  (gpus < 1 ? "one GPU's batch already passes the noise scale: each GPU more cuts the steps to target less"
                            : "past " + std::to_string(static_cast<long long>(std::floor(gpus))) +
                                  " GPUs the global batch passes the noise scale and each GPU more cuts the steps to target less"));
  return lines;
}

}  // namespace gradsync::experiments::cli
