#include "models/strategies/strategy.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "models/support/error.h"
#include "models/support/units.h"

namespace gradsync::models {

// ---------------------------------------------------------------------------------
// Domains.

ParamDomain word_domain(std::vector<std::string> words, bool allows_auto) {
  ParamDomain d;
  d.words = std::move(words);
  d.allows_auto = allows_auto;
  return d;
}

ParamDomain real_domain(double min, double max, bool min_inclusive, bool max_inclusive, double typical_max, bool allows_auto) {
  ParamDomain d;
  d.kind = ParamDomain::Kind::real;
  d.min = min;
  d.max = max;
  d.min_inclusive = min_inclusive;
  d.max_inclusive = max_inclusive;
  d.typical_max = typical_max;
  d.allows_auto = allows_auto;
  return d;
}

ParamDomain integer_domain(double min, double max, double typical_max, bool allows_auto) {
  ParamDomain d = real_domain(min, max, true, true, typical_max, allows_auto);
  d.kind = ParamDomain::Kind::integer;
  return d;
}

ParamDomain rate_domain(bool allows_auto) {
  ParamDomain d = real_domain(kMinBandwidth_GBps, kMaxBandwidth_GBps, true, true, 1000, allows_auto);
  d.rate = true;
  return d;
}

// ---------------------------------------------------------------------------------
// Parameters as given.

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

std::vector<std::string> SyncParams::items() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : values_) out.push_back(k + "=" + v);
  return out;
}

// ---------------------------------------------------------------------------------
// Parameters checked against a strategy.

StrategyParams::StrategyParams(const Strategy& strategy, std::map<std::string, std::string> values)
    : strategy_(&strategy), values_(std::move(values)) {}

const ParamSpec& StrategyParams::spec(const std::string& name) const {
  const ParamSpec* p = find_param(*strategy_, name);
  if (!p) throw std::logic_error("strategy " + strategy_->name + " reads undeclared parameter " + name);
  return *p;
}

const std::string& StrategyParams::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("strategy " + strategy_->name + " reads undeclared parameter " + name);
  return it->second;
}

namespace {

std::string whole(double v) { return std::to_string(static_cast<long long>(v)); }

// "a, b or c".
std::string either(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// A number as the domain's bounds allow it, else what was expected.
std::optional<std::string> number_problem(const ParamDomain& d, const std::string& v, bool whole_number) {
  char* end = nullptr;
  errno = 0;
  const double x = whole_number ? static_cast<double>(std::strtol(v.c_str(), &end, 10)) : std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x)) return whole_number ? "an integer" : "a number";
  if (d.rate) {
    if (!(x > 0)) return std::string("a number greater than 0");
    if (x < d.min || x > d.max) return std::string("a rate in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)");
    return std::nullopt;
  }
  if (whole_number) {
    if (x < d.min) return "an integer of at least " + whole(d.min);
    if (x > d.max) return "an integer of at most " + whole(d.max);
    return std::nullopt;
  }
  if (d.min_inclusive ? x < d.min : x <= d.min) return std::string("a number ") + (d.min_inclusive ? "of at least " : "greater than ") + number_text(d.min);
  if (d.max_inclusive ? x > d.max : x >= d.max) return std::string("a number ") + (d.max_inclusive ? "of at most " : "below ") + number_text(d.max);
  return std::nullopt;
}

}  // namespace

long StrategyParams::integer(const std::string& name) const {
  const std::string& v = text(name);
  if (const auto problem = number_problem(spec(name).domain, v, true)) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_->name + "): expected " + *problem);
  }
  return std::strtol(v.c_str(), nullptr, 10);
}

double StrategyParams::number(const std::string& name) const {
  const std::string& v = text(name);
  if (const auto problem = number_problem(spec(name).domain, v, false)) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_->name + "): expected " + *problem);
  }
  return std::strtod(v.c_str(), nullptr);
}

const std::string& StrategyParams::word(const std::string& name) const {
  const ParamDomain& d = spec(name).domain;
  const std::string& v = text(name);
  if (std::find(d.words.begin(), d.words.end(), v) == d.words.end()) {
    throw InputError("--param " + name + "=" + v + " (strategy " + strategy_->name + "): expected " + either(d.words));
  }
  return v;
}

// ---------------------------------------------------------------------------------
// The registry.

namespace {

struct Registry {
  std::deque<Strategy> strategies;  // deque: pointers stay valid as strategies register
  bool read = false;  // the index below was built: registering now would not be seen
};

Registry& registry() {
  static Registry r;
  return r;
}

// Built once, after every static registration: the listing order and each strategy's
// parameters (its own, then its inners', then the common ones).
struct Index {
  std::vector<const Strategy*> listed;
  std::map<const Strategy*, std::vector<ParamSpec>> params;
};

const Strategy* lookup(const std::string& name) {
  for (const Strategy& s : registry().strategies) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Index& index() {
  static const Index idx = [] {
    registry().read = true;
    Index x;
    for (const Strategy& s : registry().strategies) x.listed.push_back(&s);
    std::stable_sort(x.listed.begin(), x.listed.end(), [](const Strategy* a, const Strategy* b) { return a->order < b->order; });
    for (const Strategy* s : x.listed) {
      std::vector<ParamSpec> all = s->params;
      for (ParamSpec& p : all) {
        if (p.name != "inner") continue;
        p.domain.words.clear();
        for (const InnerChoice& inner : s->inners) p.domain.words.push_back(inner.name);
      }
      std::set<std::string> seen;
      for (const auto& p : all) seen.insert(p.name);
      for (const auto& [name, values] : s->sets_inner_params) seen.insert(name);
      for (const InnerChoice& inner : s->inners) {
        const Strategy* in = lookup(inner.name);
        if (!in) throw std::logic_error("strategy " + s->name + " wraps " + inner.name + ", which is not registered");
        if (!in->inners.empty()) throw std::logic_error("strategy " + s->name + " wraps the wrapper " + inner.name);
        for (const auto& p : in->params) {
          if (seen.insert(p.name).second) all.push_back(p);
          // What the inner's parameter excludes with a value the wrapper sets: excluded with this inner.
          const auto set = s->sets_inner_params.find(p.name);
          if (set == s->sets_inner_params.end()) continue;
          for (const ParamSpec::Exclusion& x : p.excludes) {
            if (std::find(set->second.begin(), set->second.end(), x.value) == set->second.end()) continue;
            for (ParamSpec& own : all) {
              if (own.name != "inner") continue;
              const bool known = std::any_of(own.excludes.begin(), own.excludes.end(), [&](const ParamSpec::Exclusion& e) {
                return e.value == inner.name && e.other == x.other && e.other_values == x.other_values;
              });
              if (!known) own.excludes.push_back({inner.name, x.other, x.other_values, x.why});
            }
          }
        }
      }
      for (const auto& p : common_params()) {
        if (seen.insert(p.name).second) all.push_back(p);
      }
      for (const auto& p : all) {
        if (p.domain.kind == ParamDomain::Kind::text && p.domain.words.empty() && !p.domain.values) {
          throw std::logic_error("strategy " + s->name + ": text parameter " + p.name + " declares no choices");
        }
      }
      x.params[s] = std::move(all);
    }
    return x;
  }();
  return idx;
}

}  // namespace

Registration::Registration(const Strategy& strategy) {
  if (registry().read) {
    throw std::logic_error("strategy " + strategy.name + " registers after the registry was read (by a static initialiser)");
  }
  if (lookup(strategy.name)) throw std::logic_error("strategy " + strategy.name + " is registered twice");
  if (!strategy.build) throw std::logic_error("strategy " + strategy.name + " registers no schedule builder");
  Strategy s = strategy;
  if (!s.busbw_factor) s.busbw_factor = [](int ranks, const std::map<std::string, std::string>&) { return allreduce_busbw_factor(ranks); };
  registry().strategies.push_back(std::move(s));
}

double allreduce_busbw_factor(int ranks) { return ranks > 0 ? 2.0 * (ranks - 1) / ranks : 0.0; }

const std::vector<ParamSpec>& common_params() {
  static const std::vector<ParamSpec> params = [] {
    ParamSpec gpu{"reduce_GBps", "auto",
                  "rate at which a GPU sums gradients, in GB/s of input; auto: 2/3 of the measured device-local copy "
                  "bandwidth (a sum reads two buffers and writes one), else 100",
                  rate_domain(true)};
    gpu.resolved = true;
    gpu.shown = ParamSpec::Shown::never;
    ParamSpec host{"host_reduce_GBps", "10", "rate at which the CPU sums gradients in host memory (a server there), in GB/s",
                   rate_domain(false)};
    host.shown = ParamSpec::Shown::never;
    return std::vector<ParamSpec>{gpu, host};
  }();
  return params;
}

const std::vector<ParamSpec>& params_of(const Strategy& s) {
  const auto& p = index().params;
  auto it = p.find(&s);
  if (it == p.end()) throw std::logic_error("strategy " + s.name + " is not registered");
  return it->second;
}

const ParamSpec* find_param(const Strategy& s, const std::string& name) {
  for (const auto& p : params_of(s)) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool declares(const Strategy& s, const std::string& name) { return find_param(s, name) != nullptr; }

const std::vector<const Strategy*>& all_strategies() { return index().listed; }

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

const Strategy& default_strategy() {
  const Strategy* found = nullptr;
  for (const Strategy* s : all_strategies()) {
    if (!s->is_default) continue;
    if (found) throw std::logic_error("strategies " + found->name + " and " + s->name + " both say they are the default");
    found = s;
  }
  if (!found) throw std::logic_error("no strategy is the default");
  return *found;
}

std::vector<const Strategy*> inner_strategies(const Strategy& s, bool searched_only) {
  std::vector<const Strategy*> out;
  for (const InnerChoice& c : s.inners) {
    if (!searched_only || c.searched) out.push_back(&find_strategy(c.name));
  }
  return out;
}

namespace {

// The one check of a parameter's value against its declared choices: words and auto, the
// values valid on the topology when it is known (server places, the k that divide N), numbers
// within bounds, lists of them. Structure the value's reader still checks (a permutation of
// the ranks, one rate per rank) is left to it. nullopt: accepted; else what was expected.
std::optional<std::string> value_problem(const ParamSpec& spec, const std::string& v, const ParamContext* context) {
  const ParamDomain& d = spec.domain;
  std::vector<std::string> words = d.words;
  if (d.allows_auto) words.insert(words.begin(), "auto");
  if (std::find(words.begin(), words.end(), v) != words.end()) return std::nullopt;
  // The values valid here, each once, in the domain's order (a cluster's: thousands of nodes).
  std::vector<std::string> values;
  if (d.values && context) {
    std::unordered_set<std::string> seen;
    for (std::string& x : d.values(*context)) {
      if (seen.insert(x).second) values.push_back(std::move(x));
    }
  }
  if (std::find(values.begin(), values.end(), v) != values.end()) return std::nullopt;
  // The declared words, then one more alternative: "auto, given or a list of ...".
  const auto or_words = [&](const std::string& last) {
    std::vector<std::string> all = words;
    all.push_back(last);
    return either(all);
  };
  // The values valid here, as the domain describes them or listed.
  const auto valid_here = [&] {
    if (d.values_text) return d.values_text(*context);
    constexpr std::size_t kListed = 12;
    std::vector<std::string> listed = values;
    if (listed.size() > kListed) {
      const std::size_t more = listed.size() - kListed;
      listed.resize(kListed);
      listed.push_back("(" + std::to_string(more) + " more)");
    }
    return either(listed);
  };
  switch (d.kind) {
    case ParamDomain::Kind::text: {
      if (d.values && !context) return std::nullopt;  // checked once the topology is known
      std::vector<std::string> all = words;
      all.insert(all.end(), values.begin(), values.end());
      if (values.empty()) return either(all) + did_you_mean(v, all);
      return or_words(valid_here()) + did_you_mean(v, all);
    }
    case ParamDomain::Kind::integer:
    case ParamDomain::Kind::real: {
      const bool whole_number = d.kind == ParamDomain::Kind::integer;
      const auto problem = number_problem(d, v, whole_number);
      if (problem) return or_words(*problem);
      if (!values.empty()) return or_words(valid_here());
      return std::nullopt;
    }
    case ParamDomain::Kind::per_rank:
    case ParamDomain::Kind::permutation: {
      const bool positions = d.kind == ParamDomain::Kind::permutation;
      std::size_t start = 0;
      while (true) {
        const std::size_t comma = v.find(',', start);
        const std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        ParamDomain element = d;
        if (positions) element = integer_domain(0, 2147483647);
        const auto problem = number_problem(element, item, positions);
        if (problem) {
          return or_words(positions ? "a comma-separated list of rank positions (0, 1, ...)"
                                    : "a comma-separated list, one number per rank") +
                 "; its item \"" + item + "\" is not " + *problem;
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

StrategyParams resolve_params(const Strategy& s, const SyncParams& given, const ParamContext* context) {
  std::vector<std::string> names;
  std::map<std::string, std::string> values;
  for (const auto& spec : params_of(s)) {
    names.push_back(spec.name);
    values[spec.name] = spec.default_value;
  }
  for (const auto& [key, value] : given.values()) {
    if (!values.count(key)) {
      throw InputError("--param " + key + "=" + value + ": strategy " + s.name + " has no parameter '" + key + "'" +
                       did_you_mean(key, names) + "; its parameters: " + join(names));
    }
    if (const auto problem = value_problem(*find_param(s, key), value, context)) {
      throw InputError("--param " + key + "=" + value + " (strategy " + s.name + "): expected " + *problem);
    }
    values[key] = value;
  }
  for (const auto& spec : params_of(s)) {
    for (const auto& x : spec.excludes) {
      if (values[spec.name] != x.value) continue;
      const std::string& other = values[x.other];
      if (std::find(x.other_values.begin(), x.other_values.end(), other) != x.other_values.end()) {
        throw InputError("--param " + spec.name + "=" + x.value + " (strategy " + s.name + ") cannot run with " + x.other + "=" + other +
                         ": " + x.why);
      }
    }
  }
  StrategyParams resolved(s, std::move(values));
  for (const auto& [key, value] : given.values()) {
    if (!given.fitted(key)) resolved.stated_.insert(key);
  }
  return resolved;
}

}  // namespace gradsync::models
