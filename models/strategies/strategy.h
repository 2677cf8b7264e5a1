// The strategy registry. A strategy is one file under models/strategies/ that defines a
// Strategy — every fact about it: its parameters (with their domains, the values a search
// tries, how tables show them), the inner strategies it may wrap, whether and how it
// changes the training, whether it needs a workload, its bus-bandwidth factor, the
// variants the test sweeps run, its closed form and the schedule it builds — and registers
// it with one line (`const Registration registered(definition());`). Search (recommend),
// fuzzing, help texts, tables and the test sweeps read the registry; nobody else lists
// strategies. Adding a strategy is its file plus one line in models/strategies/CMakeLists.txt.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "models/strategies/formulas.h"
#include "models/topology/placement.h"
#include "models/schedule/schedule.h"
#include "models/workload/memory.h"
#include "models/workload/step.h"

namespace gradsync::models {

class Topology;
struct Strategy;
struct StrategyContext;  // strategy_context.h
struct ResultRecord;  // result.h

// Where a parameter's topology-dependent values come from: the topology and the ranks'
// placement, and (for a wrapper's search) the inner strategy chosen.
struct ParamContext {
  const Topology& topology;
  const Placement& placement;
  const Strategy* inner = nullptr;
};

using ValuesFor = std::function<std::vector<std::string>(const ParamContext&)>;

// The values a parameter takes, as a generator or a help text needs them (the strategy
// still checks what it reads; integer and real bounds are checked here, see StrategyParams).
struct ParamDomain {
  enum class Kind {
    text,  // `words` and `values` (and auto) only: every text parameter declares its choices
    integer,  // a whole number in [min, max]
    real,  // a number in [min, max] (bounds inclusive or not)
    per_rank,  // a comma-separated list, one number in [min, max] per rank
    permutation,  // a comma-separated order of the rank positions 0..N-1
  };
  Kind kind = Kind::text;
  bool allows_auto = false;
  std::vector<std::string> words;  // fixed values: "switch", "order"; "true", "false"; "1", "32"
  // The values valid on this topology and placement (server nodes, divisors of N): with
  // `words` and auto, all of them — the numeric range then only bounds what is read.
  ValuesFor values;
  // How a message names `values` ("rank0 to rank3, host or a node id"); null: they are listed.
  std::function<std::string(const ParamContext&)> values_text;
  double min = 0, max = 0;
  bool min_inclusive = true, max_inclusive = true;
  // Generators (fuzzing) draw numbers up to here (0: up to max): larger values behave alike
  // but cost more to build and check (a sampled layer of 10^7 rows, a period of 10^6 steps).
  double typical_max = 0;
  bool rate = false;  // a rate in GB/s (checked against the bandwidth bounds of models/support/units.h)
};

// Domains used by several strategies.
ParamDomain word_domain(std::vector<std::string> words, bool allows_auto = false);
ParamDomain integer_domain(double min, double max, double typical_max = 0, bool allows_auto = false);
ParamDomain real_domain(double min, double max, bool min_inclusive = true, bool max_inclusive = true, double typical_max = 0,
                        bool allows_auto = false);
ParamDomain rate_domain(bool allows_auto);  // GB/s, 1 kB/s .. 1 PB/s

struct ParamSpec {
  ParamSpec(std::string name_, std::string default_value_, std::string help_, ParamDomain domain_ = {})
      : name(std::move(name_)), default_value(std::move(default_value_)), help(std::move(help_)), domain(std::move(domain_)) {}
  std::string name;
  std::string default_value;  // may be "auto": chosen from the topology
  std::string help;
  ParamDomain domain;
  // The values a search (gradsync recommend) tries, given the placement; nullptr or empty:
  // not searched (left at its default or what the user set).
  ValuesFor search;
  // Values a search then forces on the GPUs of the strategy's best choice alone, to weigh what
  // the strategy picks by itself against them (NCCL's algorithms against its cost model's pick).
  ValuesFor weigh;
  // The number of steps between synchronisations: a search tries the smallest that keeps
  // synchronisation under the share of a step it is asked for, besides "auto".
  bool period = false;
  // Records show what it became ("auto" -> k=2, server=host, T=625), or "-" where the
  // schedule did not use it (k of a wrapped ring); the builder says what it resolved
  // through StrategyContext::resolved_as.
  bool resolved = false;
  // The table's params column: always (inner), when resolved and used (k, server, T, step),
  // when the user gave it (the rest), or never (device rates: they are named under the table).
  enum class Shown { always, when_resolved, when_given, never };
  Shown shown = Shown::when_given;
  // Values that need another parameter given: {"speed", "speeds"} (grouping=speed needs speeds).
  std::vector<std::pair<std::string, std::string>> needs;
  // Values that cannot run with some values of another parameter (checked with the values,
  // in one place): {"NVLS", "protocol", {"LL", "LL128"}, "NCCL runs NVLS with Simple only"}.
  struct Exclusion {
    std::string value;
    std::string other;
    std::vector<std::string> other_values;
    std::string why;
  };
  std::vector<Exclusion> excludes;
};

// Parameters as the user gave them ("k=2" pairs), before any strategy checks them.
class SyncParams {
 public:
  // Parses "key=value" items; malformed items are InputErrors naming the item.
  static SyncParams parse(const std::vector<std::string>& items);
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  std::optional<std::string> get(const std::string& key) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  std::vector<std::string> items() const;  // "key=value", as parse() takes them
  // A value that stands for a constant being fitted (calibrate's grid): the model's fitted
  // constant at that value, not a fact the user knows (open facts still span its other values).
  void mark_fitted(const std::string& key) { fitted_.insert(key); }
  bool fitted(const std::string& key) const { return fitted_.count(key) > 0; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> fitted_;
};

// Parameters checked against one strategy, defaults filled in.
class StrategyParams {
 public:
  StrategyParams(const Strategy& strategy, std::map<std::string, std::string> values);
  const std::string& text(const std::string& name) const;
  bool is_auto(const std::string& name) const { return text(name) == "auto"; }
  // Typed readers, bounds from the parameter's domain: an unparsable or out-of-range value
  // is an InputError "--param name=value (strategy s): expected ...". Rates (domain.rate)
  // are checked against the bandwidth bounds of models/support/units.h.
  long integer(const std::string& name) const;
  double number(const std::string& name) const;
  // One of the domain's words: "--param name=value: expected a or b".
  const std::string& word(const std::string& name) const;
  const std::map<std::string, std::string>& values() const { return values_; }
  void set(const std::string& name, const std::string& value) { values_[name] = value; }
  const Strategy& strategy() const { return *strategy_; }
  // Whether the user stated this parameter (not its default, nor a value being fitted).
  bool stated(const std::string& name) const { return stated_.count(name) > 0; }

 private:
  friend StrategyParams resolve_params(const Strategy& s, const SyncParams& given, const ParamContext* context);
  const ParamSpec& spec(const std::string& name) const;
  const Strategy* strategy_;
  std::map<std::string, std::string> values_;
  std::set<std::string> stated_;
};

// A strategy another one may wrap ("inner" parameter), and whether a search tries it.
struct InnerChoice {
  std::string name;
  bool searched = true;
};

// A configuration the test sweeps run: the symbolic proof over ranks, sizes and every k
// (when the schedule forms groups), and the real runs under mpirun.
struct TestVariant {
  std::vector<std::string> params;  // key=value
};

struct Strategy {
  std::string name;
  std::string summary;
  std::string source;  // which source documents describe it
  int order = 0;  // its place in listings (tables, help texts): the order of the sources' presentation
  std::vector<ParamSpec> params;  // its own; the inner strategies' and the common ones are added by params_of()
  std::vector<InnerChoice> inners;  // the strategies it may wrap; empty: it wraps none
  // Parameters of those strategies it sets itself when it runs them, with the values it sets
  // (sharded strategies: collective = reduce_scatter, all_gather): not offered to the user; what
  // the inner's parameter excludes with those values the wrapper's "inner" excludes for that inner.
  std::map<std::string, std::vector<std::string>> sets_inner_params;
  bool uses_server = false;
  // It spaces synchronisations over training steps or runs asynchronously: without a
  // workload (steps to space them over, compute to overlap) a search leaves it out.
  bool needs_workload = false;
  // How its result differs from the exact synchronous sum, for this record ("" when it is
  // exact): "sends 1-bit gradients (error feedback)".
  std::function<std::string(const ResultRecord&)> changes_training;
  // The learning rate each worker trains at on N workers: one worker's x N (Goyal et al. 2017;
  // model averaging needs it, since averaging divides each sample's step by N: sources C and D),
  // or, where the strategy puts back what averaging divides itself, one worker's (BMUF's block
  // momentum 1 - 1/N, source C).
  bool keeps_one_workers_learning_rate = false;
  // It chooses each step's rows from the words in each rank's minibatch (Workload::
  // minibatch_rows, source A's V_base) where the workload's layers have rows: a training loop
  // gives them and builds its schedule again every step; rows no rank sent are dropped.
  bool samples_minibatch_rows = false;
  // What decides its time, in words, for this record (recommend's explanation of a pick; "":
  // the bounding link says it): nccl names the algorithm NCCL's cost model chose and why.
  std::function<std::string(const ResultRecord&)> decided_by;
  // Its predictions, asked to explain (PredictRequest::explain), name the facts the inputs leave
  // open and the busbw range they span (ResultRecord::open_facts): a search that skips the
  // explanation while it weighs its candidates restates its best choices of this strategy so.
  bool states_open_facts = false;
  // nccl-tests' bus bandwidth = algbw x this (all-reduce: 2(N-1)/N), for these resolved parameters.
  std::function<double(int ranks, const std::map<std::string, std::string>& params)> busbw_factor;
  std::vector<TestVariant> test_variants;  // empty: its defaults only
  // A search (gradsync recommend) tries it unless strategies are named: false for a model of
  // a library's own collective (nccl), whose engine (fused reduction, its protocols) is not
  // the one the other schedules are costed with; predict, compare and --strategies use it.
  bool searched = true;
  // Where a search tries it although `searched` is false (nccl: where NCCL's own planner models
  // it, across hosts and on NVSwitch hosts).
  std::function<bool(const Topology&)> searched_on;
  // The strategy commands run when none is named (gradsync-run, gradsync-bench): exactly one
  // strategy says so — the ring all-reduce, what nccl-tests' all_reduce_perf times.
  bool is_default = false;
  // The parameters a measured run's environment set (a log's NCCL_ALGO=Ring as algorithm=Ring),
  // values the strategy would refuse left out; empty: none are read.
  std::function<std::map<std::string, std::string>(const std::map<std::string, std::string>& environment)> params_from_environment;
  // What each GPU keeps of the model's training state (models/workload/memory.h): a replica of
  // everything, or the optimizer state, gradients and parameters sharded over the ranks (ZeRO).
  Sharding sharding = Sharding::none;
  // Its training step (models/workload/step.h) for a workload, with these bucket caps; null:
  // DDP's (ddp_plan: the whole synchronisation, bucket by bucket beside the backward pass).
  std::function<StepPlan(const Workload&, const OverlapSettings&)> step_plan;
  // The papers' closed form on a uniform network; empty when the documents give none.
  std::function<formulas::Breakdown(const StrategyContext&)> closed_form;
  // The schedule every executor runs.
  std::function<Schedule(const StrategyContext&)> build;
};

// Registers a strategy (from a static object in its file); a second one of the same name
// is a programming error reported at start-up.
struct Registration {
  explicit Registration(const Strategy& strategy);
};

// nccl-tests' all-reduce factor 2(N-1)/N, the default of every strategy.
double allreduce_busbw_factor(int ranks);

// Parameters every strategy accepts (device reduction rates).
const std::vector<ParamSpec>& common_params();
// Its own parameters, then those of the strategies it may wrap (first mention), then the
// common ones. A wrapper's "inner" parameter takes the names of its `inners` as its words.
const std::vector<ParamSpec>& params_of(const Strategy& s);
const ParamSpec* find_param(const Strategy& s, const std::string& name);  // nullptr: not declared
bool declares(const Strategy& s, const std::string& name);

// Every registered strategy, in listing order.
const std::vector<const Strategy*>& all_strategies();
std::vector<std::string> strategy_names();
// Throws InputError listing the strategies (with a suggestion) for an unknown name.
const Strategy& find_strategy(const std::string& name);
// The one with is_default.
const Strategy& default_strategy();
// The strategies `s` may wrap (its InnerChoices), resolved; `searched_only`: those a search tries.
std::vector<const Strategy*> inner_strategies(const Strategy& s, bool searched_only = false);
// Checks names (unknown ones list the valid ones) and every value against its parameter's
// declared choices (the one place that does: words and auto, numbers within bounds, lists of
// numbers, and with `context` the values valid on that topology and placement), and fills in
// defaults. An unknown value is an InputError naming the parameter, the value and the choices.
StrategyParams resolve_params(const Strategy& s, const SyncParams& given, const ParamContext* context = nullptr);

}  // namespace gradsync::models
