#include "experiments/cli/output.h"

#include "models/support/error.h"
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

}  // namespace gradsync::experiments::cli
