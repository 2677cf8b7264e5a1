#include "models/strategy.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "models/error.h"
#include "models/units.h"

namespace gradsync::models {

SyncParams SyncParams::parse(const std::vector<std::string>& items) {
  SyncParams p;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw InputError("--param \"" + item + "\": expected key=value (e.g. k=2)");
    }
    const std::string key = item.substr(0, eq);
    if (p.values_.count(key)) throw InputError("--param " + key + " is given twice; expected it once");
    p.values_[key] = item.substr(eq + 1);
  }
  return p;
}

std::optional<std::string> SyncParams::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

const std::string& StrategyParams::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("strategy " + strategy_ + " reads undeclared parameter " + name);
  return it->second;
}

long StrategyParams::integer(const std::string& name, long minimum, long maximum) const {
  const std::string& v = text(name);
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ + "): expected an integer");
  }
  if (x < minimum) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ + "): expected at least " + std::to_string(minimum));
  }
  if (x > maximum) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ + "): expected at most " + std::to_string(maximum));
  }
  return x;
}

double StrategyParams::number(const std::string& name, double minimum, bool inclusive) const {
  const std::string& v = text(name);
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x)) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ + "): expected a number");
  }
  if (inclusive ? x < minimum : x <= minimum) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ + "): expected a number " +
                     (inclusive ? "of at least " : "greater than ") + number_text(minimum));
  }
  const std::string rate = "_GBps";
  if (name.size() > rate.size() && name.compare(name.size() - rate.size(), rate.size(), rate) == 0 &&
      (x < kMinBandwidth_GBps || x > kMaxBandwidth_GBps)) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_ +
                     "): expected a rate in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)");
  }
  return x;
}

const std::vector<ParamSpec>& common_params() {
  static const std::vector<ParamSpec> params = {
      {"reduce_GBps", "auto",
       "rate at which a GPU sums gradients, in GB/s of input; auto: 2/3 of the measured device-local copy bandwidth "
       "(a sum reads two buffers and writes one), else 100"},
      {"host_reduce_GBps", "10", "rate at which the CPU sums gradients in host memory (a server there), in GB/s"},
      {"quantize_GBps", "auto",
       "rate of 1-bit quantisation or dequantisation, in GB/s of values; auto: the measured rate when the topology has "
       "one (device_quantize_GBps), else the reduction rate"},
  };
  return params;
}

std::vector<ParamSpec> params_of(const Strategy& s) {
  std::vector<ParamSpec> all = s.params;
  all.insert(all.end(), common_params().begin(), common_params().end());
  return all;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Strategy* s : all_strategies()) names.push_back(s->name);
  return names;
}

const Strategy& find_strategy(const std::string& name) {
  for (const Strategy* s : all_strategies()) {
    if (s->name == name) return *s;
  }
  throw InputError("--strategy " + name + ": unknown strategy" + did_you_mean(name, strategy_names()) +
                   "; valid strategies: " + join(strategy_names()));
}

StrategyParams resolve_params(const Strategy& s, const SyncParams& given) {
  const auto specs = params_of(s);
  std::vector<std::string> names;
  std::map<std::string, std::string> values;
  for (const auto& spec : specs) {
    names.push_back(spec.name);
    values[spec.name] = spec.default_value;
  }
  for (const auto& [key, value] : given.values()) {
    if (!values.count(key)) {
      throw InputError("--param " + key + "=" + value + ": strategy " + s.name + " has no parameter '" + key + "'" +
                       did_you_mean(key, names) + "; its parameters: " + join(names));
    }
    values[key] = value;
  }
  return StrategyParams(s.name, std::move(values));
}

}  // namespace gradsync::models
