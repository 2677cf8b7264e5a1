#include "models/workload/convergence.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "models/support/error.h"
#include "models/support/format.h"
#include "models/strategies/strategy.h"

namespace gradsync::models {

Estimate Estimate::between(double low, double high) { return {std::sqrt(low * high), low, high}; }

Estimate Estimate::operator*(const Estimate& o) const { return {value * o.value, low * o.low, high * o.high}; }

Estimate Estimate::operator*(double k) const { return k >= 0 ? Estimate{value * k, low * k, high * k} : Estimate{value * k, high * k, low * k}; }

const Estimate* StrategyConvergence::at_workers(int workers, int* measured_at) const {
  int best = 0;  // the nearest count listed (0: none)
  auto consider = [&](int n) {
    if (best == 0 || std::abs(n - workers) < std::abs(best - workers) || (std::abs(n - workers) == std::abs(best - workers) && n > best)) best = n;
  };
  for (const auto& entry : by_workers) consider(entry.first);
  for (const auto& entry : not_reached) consider(entry.first);
  if (measured_at) *measured_at = best;
  if (best == 0) return &relative_samples;
  const auto it = by_workers.find(best);
  return it == by_workers.end() ? nullptr : &it->second;
}

Estimate statistical_efficiency(const ConvergenceFacts& f, double b, double batch) {
  // Monotonic in the noise scale: its ends give the range's.
  auto at = [&](double noise) { return (1 + b / noise) / (1 + batch / noise); };
  const double a = at(f.noise_scale.low), c = at(f.noise_scale.high);
  return {at(f.noise_scale.value), std::min(a, c), std::max(a, c)};
}

Estimate samples_to_target(const ConvergenceFacts& f, double batch) {
  const Estimate e = statistical_efficiency(f, f.global_batch, batch);
  return f.samples_to_target * Estimate{1 / e.value, 1 / e.high, 1 / e.low};
}

namespace {
constexpr double kMaxSamples = 1e18;
constexpr double kMaxRelative = 1e6;
constexpr long kMaxWorkers = 1000000;

Estimate estimate_of(const JsonView& v, double minimum, double maximum, const std::string& what) {
  if (v.value().is_array()) {
    const auto ends = v.items(2, "[low, high]");
    const double low = ends[0].as_number_in(minimum, maximum, what);
    const double high = ends[1].as_number_in(minimum, maximum, what);
    if (high < low) ends[1].fail("a high end at least the low end, " + number_text(low));
    return Estimate::between(low, high);
  }
  return Estimate::exactly(v.as_number_in(minimum, maximum, what));
}

// A key of by_workers or not_reached: a worker count, as JSON keys are strings.
int worker_count(const JsonView& item, const std::string& count) {
  char* end = nullptr;
  const long n = std::strtol(count.c_str(), &end, 10);
  if (count.empty() || *end != '\0' || n < 1 || n > kMaxWorkers || std::to_string(n) != count) {
    item.fail_message("\"" + count + "\" is not a worker count; expected a whole number from 1 to " + std::to_string(kMaxWorkers));
  }
  return static_cast<int>(n);
}

ordered_json estimate_json(const Estimate& e) {
  if (e.is_range()) return ordered_json::array({e.low, e.high});
  return e.value;
}
}  // namespace

ConvergenceFacts convergence_from_json(const JsonView& v) {
  v.expect_object({"target", "source", "global_batch", "samples_to_target", "noise_scale", "strategies"});
  ConvergenceFacts f;
  f.target = v.at("target").as_string();
  if (f.target.empty()) v.at("target").fail("what the target is (\"test loss 0.5\")");
  f.source = v.at("source").as_string();
  if (f.source.empty()) v.at("source").fail("where the figures come from");
  f.global_batch = v.at("global_batch").as_number_in(1, kMaxSamples, "samples in a global batch");
  f.samples_to_target = estimate_of(v.at("samples_to_target"), 1, kMaxSamples, "samples");
  f.noise_scale = estimate_of(v.at("noise_scale"), 1e-3, kMaxSamples, "samples (the gradient noise scale)");
  if (auto s = v.get("strategies")) {
    if (!s->is_object()) s->fail("an object: each strategy's name and its samples to target");
    const std::vector<std::string> known = strategy_names();
    for (const auto& [name, item] : s->value().items()) {
      const JsonView sv = s->at(name);
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        sv.fail_message("\"" + name + "\" is not a strategy" + did_you_mean(name, known));
      }
      sv.expect_object({"relative_samples", "conditions", "params", "by_workers", "not_reached"});
      StrategyConvergence c;
      c.relative_samples = estimate_of(sv.at("relative_samples"), 1.0 / kMaxRelative, kMaxRelative,
                                       "samples to target relative to synchronous SGD's");
      c.conditions = sv.at("conditions").as_string();
      if (c.conditions.empty()) sv.at("conditions").fail("the conditions it was measured under");
      if (auto pv = sv.get("params")) {
        if (!pv->is_object()) pv->fail("an object of the strategy's parameters it was measured at ({\"T\": \"8\"})");
        for (const auto& [key, value] : pv->value().items()) c.params[key] = pv->at(key).as_string();
      }
      if (auto bv = sv.get("by_workers")) {
        if (!bv->is_object()) bv->fail("an object of worker counts and the multiple at each ({\"2\": 0.98, \"4\": [1.0, 1.11]})");
        for (const auto& [count, value] : bv->value().items()) {
          const JsonView item = bv->at(count);
          c.by_workers[worker_count(item, count)] = estimate_of(item, 1.0 / kMaxRelative, kMaxRelative,
                                                                "samples to target relative to synchronous SGD's at that count");
        }
        if (c.by_workers.empty()) bv->fail_message("an empty object; expected at least one worker count and its multiple");
      }
      if (auto nv = sv.get("not_reached")) {
        if (!nv->is_object()) nv->fail("an object of worker counts whose run did not reach the target and the samples it trained ({\"8\": 42240})");
        for (const auto& [count, value] : nv->value().items()) {
          const JsonView item = nv->at(count);
          const int n = worker_count(item, count);
          if (c.by_workers.count(n) != 0) item.fail_message("worker count " + count + " is in by_workers too; a run either reached the target or did not");
          c.not_reached[n] = item.as_number_in(1, kMaxSamples, "samples trained without reaching the target");
        }
        if (c.not_reached.empty()) nv->fail_message("an empty object; expected at least one worker count and its samples");
      }
      f.strategies[name] = c;
    }
  }
  return f;
}

ordered_json convergence_to_json(const ConvergenceFacts& f) {
  ordered_json out = {{"target", f.target},
                      {"source", f.source},
                      {"global_batch", f.global_batch},
                      {"samples_to_target", estimate_json(f.samples_to_target)},
                      {"noise_scale", estimate_json(f.noise_scale)}};
  if (!f.strategies.empty()) {
    ordered_json s = ordered_json::object();
    for (const auto& [name, c] : f.strategies) {
      s[name] = {{"relative_samples", estimate_json(c.relative_samples)}, {"conditions", c.conditions}};
      if (!c.params.empty()) s[name]["params"] = c.params;
      if (!c.by_workers.empty()) {
        ordered_json counts = ordered_json::object();
        for (const auto& [n, e] : c.by_workers) counts[std::to_string(n)] = estimate_json(e);
        s[name]["by_workers"] = counts;
      }
      if (!c.not_reached.empty()) {
        ordered_json counts = ordered_json::object();
        for (const auto& [n, samples] : c.not_reached) counts[std::to_string(n)] = samples;
        s[name]["not_reached"] = counts;
      }
    }
    out["strategies"] = s;
  }
  return out;
}

std::string estimate_text(const Estimate& e, int digits) {
  if (!e.is_range()) return number_text(e.value, digits);
  return number_text(e.value, digits) + " (" + number_text(e.low, digits) + "-" + number_text(e.high, digits) + ")";
}

std::string multiples_text(const StrategyConvergence& c) {
  if (c.by_workers.empty() && c.not_reached.empty()) return "x" + estimate_text(c.relative_samples);
  std::map<int, std::string> at;
  for (const auto& [n, e] : c.by_workers) at[n] = "x" + estimate_text(e);
  for (const auto& [n, samples] : c.not_reached) at[n] = "not reached in " + number_text(samples, 6) + " samples";
  std::string out;
  for (const auto& [n, text] : at) out += (out.empty() ? "" : ", ") + text + " on " + std::to_string(n) + (out.empty() ? " workers" : "");
  return out;
}

}  // namespace gradsync::models
