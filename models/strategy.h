// The strategy registry: every synchronisation strategy by name, with its parameters,
// where it comes from, and the closed-form formula the source documents give for it.
// One strategy = one file under models/strategies/ plus one line in registry.cpp.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/formulas.h"
#include "models/schedule.h"

namespace gradsync::models {

class Topology;
struct Placement;

struct ParamSpec {
  std::string name;
  std::string default_value;  // may be "auto": chosen from the topology
  std::string help;
};

// Parameters as the user gave them ("k=2" pairs), before any strategy checks them.
class SyncParams {
 public:
  // Parses "key=value" items; malformed items are InputErrors naming the item.
  static SyncParams parse(const std::vector<std::string>& items);
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  std::optional<std::string> get(const std::string& key) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Parameters checked against one strategy, defaults filled in.
class StrategyParams {
 public:
  StrategyParams(std::string strategy, std::map<std::string, std::string> values)
      : strategy_(std::move(strategy)), values_(std::move(values)) {}
  const std::string& text(const std::string& name) const;
  bool is_auto(const std::string& name) const { return text(name) == "auto"; }
  // Typed readers: an unparsable or out-of-range value is an InputError "--param name=value: expected ...".
  // Integers stay within an int unless a larger `maximum` is given; numbers whose name ends in
  // _GBps are rates, checked against the bandwidth bounds of models/units.h.
  long integer(const std::string& name, long minimum, long maximum = 2147483647) const;
  double number(const std::string& name, double minimum, bool inclusive) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  void set(const std::string& name, const std::string& value) { values_[name] = value; }

 private:
  std::string strategy_;
  std::map<std::string, std::string> values_;
};

struct StrategyContext;  // strategy_context.h

struct Strategy {
  std::string name;
  std::string summary;
  std::string source;  // which source documents describe it
  std::vector<ParamSpec> params;  // strategy-specific; the common ones are added by params_of()
  bool uses_server = false;
  // The papers' closed form on a uniform network; empty when the documents give none.
  std::function<formulas::Breakdown(const StrategyContext&)> closed_form;
  // The schedule every executor runs.
  std::function<Schedule(const StrategyContext&)> build;
};

// Parameters every strategy accepts (device reduction rates).
const std::vector<ParamSpec>& common_params();
std::vector<ParamSpec> params_of(const Strategy& s);

const std::vector<const Strategy*>& all_strategies();
std::vector<std::string> strategy_names();
// Throws InputError listing the strategies (with a suggestion) for an unknown name.
const Strategy& find_strategy(const std::string& name);
// Checks names (unknown ones list the valid ones) and fills in defaults.
StrategyParams resolve_params(const Strategy& s, const SyncParams& given);

}  // namespace gradsync::models
