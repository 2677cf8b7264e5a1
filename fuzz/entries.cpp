// Fuzz entry functions: see entries.h for the contract. Each entry runs one real public
// loader of gradsync on the input, then checks what an accepted input produced (routes,
// round trips through the JSON gradsync itself writes, the symbolic checker's verdict).
#include "fuzz/entries.h"
#include "fuzz/support.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <typeinfo>

#include "experiments/experiment.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/topology/uniform_topologies.h"
#include "models/support/units.h"
#include "models/topology/importers/import.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_form.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/placement.h"
#include "models/executors/predict.h"
#include "models/strategies/strategy.h"
#include "models/schedule/symbolic.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology_io.h"
#include "models/workload/workload.h"

namespace gradsync::fuzz {
namespace {

using models::InputError;
using namespace support;

// ---------------------------------------------------------------------------------------
// Checks shared by the topology targets

// An accepted topology: every GPU pair has a route with a positive, finite bottleneck
// and a finite, non-negative latency; the graph-form JSON gradsync writes for it loads back
// with the same nodes and links; the descriptions render.
void exercise_topology(const char* target, const models::Topology& t) {
  const auto gpus = t.gpus();
  if (gpus.empty()) violated(target, "accepted topology \"" + t.name() + "\" has no GPU");
  const std::size_t m = std::min<std::size_t>(gpus.size(), 8);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < m; ++j) {
      if (i == j) continue;
      const std::size_t a = gpus[i], b = gpus[j];
      const std::string pair = t.node(a).id + " -> " + t.node(b).id;
      if (t.route(a, b).empty()) violated(target, "no links on the route " + pair);
      const double bw = t.bottleneck_Bps(a, b);
      const double route_bw = t.route_bottleneck_Bps(a, b);
      if (!(std::isfinite(bw) && bw > 0) || !(std::isfinite(route_bw) && route_bw > 0)) {
        violated(target, "bottleneck of " + pair + " is " + exact_number(bw) + " B/s (route " + exact_number(route_bw) +
                             "); expected a positive finite bandwidth");
      }
      const double lat = t.latency_s(a, b);
      if (!(std::isfinite(lat) && lat >= 0)) {
        violated(target, "latency of " + pair + " is " + exact_number(lat) + " s; expected finite and >= 0");
      }
    }
  }
  for (std::size_t host : t.host_memories()) {
    for (std::size_t i = 0; i < std::min<std::size_t>(gpus.size(), 2); ++i) {
      const double bw = t.route_bottleneck_Bps(gpus[i], host);
      if (!(std::isfinite(bw) && bw > 0)) {
        violated(target, "bottleneck " + t.node(gpus[i]).id + " -> " + t.node(host).id + " is " + exact_number(bw) + " B/s");
      }
    }
  }
  (void)models::describe_links(t);

  const std::string text = models::pretty_json(models::topology_to_graph_json(t));
  try {
    const auto back = models::load_topology(models::JsonView::parse(text, "graph-roundtrip.json"));
    if (back.topology.node_count() != t.node_count() || back.topology.links().size() != t.links().size()) {
      violated(target, "the graph-form JSON of an accepted topology loads back with " +
                           std::to_string(back.topology.node_count()) + " nodes and " +
                           std::to_string(back.topology.links().size()) + " links instead of " +
                           std::to_string(t.node_count()) + " and " + std::to_string(t.links().size()));
    }
  } catch (const InputError& e) {
    violated(target, std::string("the graph-form JSON gradsync writes for an accepted topology is rejected: ") + e.what() +
                         "\n--- written JSON ---\n" + text);
  }
}

// An accepted matrix form reads back identically from the JSON gradsync writes for it
// (what `gradsync import -o x.json` followed by `--topology x.json` does).
void check_matrix_roundtrip(const char* target, const models::MatrixForm& form) {
  const std::string text = models::matrix_form_to_json(form).dump();
  std::optional<models::MatrixForm> back;
  try {
    back = models::matrix_form_from_json(models::JsonView::parse(text, "matrix-roundtrip.json"));
  } catch (const InputError& e) {
    violated(target, std::string("the matrix-form JSON gradsync writes for an accepted form is rejected: ") + e.what() +
                         "\n--- written JSON ---\n" + text);
  }
  if (back->gpus != form.gpus) violated(target, "matrix-form round trip changed the GPU ids");
  const std::size_t n = form.size();
  if (form.bandwidth_Bps.size() != n || back->bandwidth_Bps.size() != n) {
    violated(target, "bandwidth matrix of " + std::to_string(form.bandwidth_Bps.size()) + " rows for " +
                         std::to_string(n) + " GPUs");
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const auto& a = form.bandwidth_Bps.at(i, j);
      const auto& b = back->bandwidth_Bps.at(i, j);
      if (!a || !(std::isfinite(*a) && *a > 0)) {
        violated(target, "accepted form lacks a positive bandwidth for the pair (" + std::to_string(i) + ", " +
                             std::to_string(j) + ")");
      }
      if (!b || !close(*a, *b)) {
        violated(target, "matrix-form round trip changed bandwidth (" + std::to_string(i) + ", " + std::to_string(j) +
                             ") from " + exact_number(*a) + " to " + (b ? exact_number(*b) : std::string("null")));
      }
    }
  }
}

void infer_and_exercise(const char* target, const models::MatrixForm& form) {
  const models::InferredTopology inferred = models::infer_topology(form);  // InputError: rejected
  (void)inferred.report.text();
  if (inferred.report.pairs.empty() && form.size() > 1) {
    violated(target, "inference report lists no measured pair for " + std::to_string(form.size()) + " GPUs");
  }
  exercise_topology(target, inferred.topology);
}

// Topologies schedules are built on: the shipped ones, and generated ones written out as
// graph-form JSON and read back through the public loader, as a user's file would be.
std::string star_json(int gpus) {
  models::StarSpec s;
  s.name = "star" + std::to_string(gpus);
  s.gpus = gpus;
  s.hub_id = "sw";
  s.gpu_link = {10, 2};
  s.host = models::UniformLink{12, 1};
  return models::topology_to_graph_json(models::star_topology(s)).dump();
}

std::string tree_json(int switches, int per_switch) {
  models::TreeSpec s;
  s.switches = switches;
  s.per_switch = per_switch;
  s.gpu_link = {12, 1};
  s.uplink = {8, 1};
  s.host = models::UniformLink{20, 0.5};
  return models::topology_to_graph_json(models::tree_topology(s)).dump();
}

std::string mesh_json(int gpus) {
  const auto t = models::mesh_topology("mesh", gpus, [](int a, int b) { return models::UniformLink{10.0 + a + b, 3}; });
  return models::topology_to_graph_json(t).dump();
}

struct NamedTopology {
  std::string name;
  models::Topology topology;
};

const std::vector<NamedTopology>& schedule_topologies() {
  static const std::vector<NamedTopology> all = [] {
    std::vector<NamedTopology> out;
    auto add = [&](const std::string& name, const models::JsonView& doc) {
      try {
        out.push_back({name, std::move(models::load_topology(doc).topology)});
      } catch (const std::exception& e) {
        violated("schedule", "cannot load the topology " + name + " the schedule target builds on: " + e.what());
      }
    };
    for (const auto& name : models::shipped_topology_names()) {
      add(name, models::JsonView::load_file(models::topology_dir() + "/" + name + ".json"));
    }
    add("star16", models::JsonView::parse(star_json(16), "star16.json"));
    add("tree4x4", models::JsonView::parse(tree_json(4, 4), "tree4x4.json"));
    add("mesh8", models::JsonView::parse(mesh_json(8), "mesh8.json"));
    return out;
  }();
  return all;
}

std::string permutation(Choices& c, int n) {
  std::vector<int> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i) std::swap(p[static_cast<std::size_t>(i)], p[c.below(static_cast<std::size_t>(i) + 1)]);
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? "," : "") + std::to_string(p[static_cast<std::size_t>(i)]);
  return text;
}

// A number of a domain: sometimes an end of its range, else uniform up to its typical maximum.
double number_in(Choices& c, const models::ParamDomain& d) {
  const double top = d.typical_max > 0 ? std::min(d.typical_max, d.max) : d.max;
  if (d.kind == models::ParamDomain::Kind::integer) {
    const auto lo = static_cast<std::uint64_t>(d.min), hi = static_cast<std::uint64_t>(std::max(d.min, top));
    return static_cast<double>(c.one_in(8) ? (c.one_in(2) ? lo : hi) : c.between(lo, hi));
  }
  if (c.one_in(8)) {
    if (c.one_in(2) && d.min_inclusive) return d.min;
    if (d.max_inclusive && std::isfinite(d.max)) return d.max;
  }
  const double v = d.min + (top - d.min) * c.unit();
  if ((!d.min_inclusive && v <= d.min) || (!d.max_inclusive && v >= d.max)) return d.min + (top - d.min) / 2;
  return v;
}

// All 17 digits: a value just below an open end (block_momentum < 1) printed with 6 read back
// as the end itself ("1"), which the strategy rightly refuses.
std::string number_text_of(const models::ParamDomain& d, double v) {
  return d.kind == models::ParamDomain::Kind::integer ? std::to_string(static_cast<long long>(v)) : exact_number(v);
}

// A valid value of one strategy parameter, drawn from its declared domain (models/strategies/strategy.h):
// auto, one of its words or topology-dependent values, a number in its range, a list with
// one number per rank, or an order of the ranks.
std::string valid_value(Choices& c, const models::ParamSpec& spec, const models::ParamContext& context) {
  using Kind = models::ParamDomain::Kind;
  const models::ParamDomain& d = spec.domain;
  const int n = context.placement.size();
  // Searching ring orders of more than 8 ranks (2-opt) would take most of the target's time.
  const bool auto_is_costly = d.kind == Kind::permutation && n > 8;
  if (d.allows_auto && (auto_is_costly ? c.one_in(16) : c.one_in(3))) return "auto";
  std::vector<std::string> listed = d.words;
  if (d.values) {
    for (auto& v : d.values(context)) listed.push_back(std::move(v));
  }
  // Topology-dependent values (server nodes, divisors of N) are the only valid ones there.
  const bool has_numbers = d.kind != Kind::text && !d.values;
  if (!listed.empty() && (!has_numbers || c.one_in(3))) return c.pick(listed);
  switch (d.kind) {
    case Kind::text: return spec.default_value;  // free text without words: keep the default
    case Kind::integer:
    case Kind::real: return number_text_of(d, number_in(c, d));
    case Kind::per_rank: {
      std::string text;
      for (int i = 0; i < n; ++i) text += (i ? "," : "") + number_text_of(d, number_in(c, d));
      return text;
    }
    case Kind::permutation: return permutation(c, n);
  }
  return spec.default_value;
}

// Gradient bytes: empty, tiny, odd, around N, ordinary and large (up to 1 GiB: NCCL's planned
// pipelines cut a buffer into chunks, so a 44 GB case built and proved thousands of rounds of
// the same shape, 16 s under the sanitizers; the shape is the same a few chunks in).
double gradient_bytes(Choices& c, int n) {
  switch (c.below(7)) {
    case 0: return 0;
    case 1: return static_cast<double>(c.between(1, 16));
    case 2: return 4.0 * static_cast<double>(std::max<std::int64_t>(0, n + static_cast<int>(c.below(3)) - 1));
    case 3: return static_cast<double>(c.between(1, 4096));
    case 4: return 4.0 * static_cast<double>(c.between(0, (1u << 20) + 3));
    case 5: {
      const double p = std::ldexp(1.0, static_cast<int>(c.below(31)));
      return std::max(0.0, p + static_cast<double>(static_cast<int>(c.below(9)) - 4));
    }
    default: return static_cast<double>(c.between(1, std::uint64_t{1} << 30));
  }
}

struct ScheduleCase {
  const NamedTopology* topology = nullptr;
  models::Placement placement;
  const models::Strategy* strategy = nullptr;
  std::vector<std::string> params;
  std::optional<double> bytes;
  std::optional<models::Workload> workload;
  // The notes that cost more than the schedule (PredictRequest::explain): NCCL's plan for every
  // open fact of a cluster, several graph searches, were 77 % of the target's time, and still 55 %
  // when one case in eight asked for them (perf, 2026-11-27): one case in 32 does.
  bool explain = false;

  std::string describe() const {
    std::string text = "strategy " + strategy->name + " on " + topology->name + ", ranks";
    for (std::size_t node : placement.ranks) text += " " + topology->topology.node(node).id;
    text += bytes ? ", " + exact_number(*bytes) + " bytes" : ", workload " + workload->name;
    text += ", params {";
    for (std::size_t i = 0; i < params.size(); ++i) text += (i ? " " : "") + params[i];
    return text + "}" + (explain ? ", with the notes that cost more (explain)" : "");
  }
};

ScheduleCase schedule_case(Choices& c) {
  ScheduleCase sc;
  const auto& tops = schedule_topologies();
  sc.topology = &tops[c.below(tops.size())];
  const models::Topology& t = sc.topology->topology;
  const auto gpus = t.gpus();
  const int n = 1 + static_cast<int>(c.below(std::min<std::size_t>(gpus.size(), 16)));
  if (c.one_in(2)) {
    sc.placement = models::first_gpus(t, n);
  } else {  // any n GPUs in any order
    std::vector<std::size_t> pool = gpus;
    for (int i = 0; i < n; ++i) {
      std::swap(pool[static_cast<std::size_t>(i)], pool[static_cast<std::size_t>(i) + c.below(pool.size() - static_cast<std::size_t>(i))]);
    }
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back(t.node(pool[static_cast<std::size_t>(i)]).id);
    sc.placement = models::named_gpus(t, ids);
  }
  const auto& strategies = models::all_strategies();
  sc.strategy = strategies[c.below(strategies.size())];
  // No workload presets here: they are real models (source A's 49,036-word vocabulary) whose
  // sampled schedules take 0.3-3.5 s each to build and prove under the sanitizers, and a corpus
  // that keeps them runs ~50 inputs/s. The small workloads below have the same shape (layers
  // with rows, which sampling selects); the presets' schedules are proved in the test suite
  // (tests/models/test_schedules.cpp).
  if (c.one_in(8)) {
    // A small workload of the shape of the presets: 1-3 layers, some with rows (what sampling selects).
    models::Workload w;
    w.name = "fuzz-small";
    w.compute_s_per_minibatch = 0.01;
    w.minibatches_per_epoch = static_cast<std::int64_t>(c.between(1, 1000));
    const int layers = static_cast<int>(c.between(1, 3));
    for (int i = 0; i < layers; ++i) {
      models::Layer l;
      l.name = "layer" + std::to_string(i);
      const auto cols = static_cast<std::int64_t>(c.between(1, 16));
      if (c.one_in(2)) {
        l.rows = static_cast<std::int64_t>(c.between(1, 256));
        l.params = *l.rows * cols;
      } else {
        l.params = static_cast<std::int64_t>(c.between(1, 4096));
      }
      l.set_flops(1e6);
      w.layers.push_back(l);
    }
    sc.workload = w;
  } else {
    sc.bytes = gradient_bytes(c, n);
  }
  std::map<std::string, std::string> chosen;
  const models::ParamContext context{t, sc.placement, nullptr};
  for (const auto& spec : models::params_of(*sc.strategy)) {
    // Keep the default a third of the time — unless the default costs like the largest values
    // (sampling's 1000 rows: every row is a transfer per rank to build and prove).
    const double as_number = std::strtod(spec.default_value.c_str(), nullptr);
    const bool costly_default = spec.domain.typical_max > 0 && as_number > spec.domain.typical_max;
    if (!costly_default && c.one_in(3)) continue;
    chosen[spec.name] = valid_value(c, spec, context);
  }
  // Values that need another parameter (grouping=speed needs speeds) get it.
  for (const auto& spec : models::params_of(*sc.strategy)) {
    for (const auto& [value, needed] : spec.needs) {
      if (chosen.count(spec.name) && chosen[spec.name] == value && !chosen.count(needed)) {
        chosen[needed] = valid_value(c, *models::find_param(*sc.strategy, needed), context);
      }
    }
  }
  // Values that cannot run with another's value (algorithm=NVLS with protocol=LL): the other
  // parameter keeps its default, or where its default is the value excluded
  // (algorithm=CollnetChain with collnet=off), takes the first of its words that is not.
  for (const auto& spec : models::params_of(*sc.strategy)) {
    for (const auto& x : spec.excludes) {
      if (!chosen.count(spec.name) || chosen[spec.name] != x.value) continue;
      const auto excluded = [&](const std::string& v) {
        return std::find(x.other_values.begin(), x.other_values.end(), v) != x.other_values.end();
      };
      if (chosen.count(x.other) && excluded(chosen[x.other])) chosen.erase(x.other);
      const models::ParamSpec* other = models::find_param(*sc.strategy, x.other);
      if (!chosen.count(x.other) && other && excluded(other->default_value)) {
        for (const std::string& w : other->domain.words) {
          if (!excluded(w)) {
            chosen[x.other] = w;
            break;
          }
        }
      }
    }
  }
  for (const auto& [key, value] : chosen) sc.params.push_back(key + "=" + value);
  sc.explain = c.below(32) == 31;  // not when the bytes have run out (they read as 0)
  return sc;
}

// Builds the schedule as every executor does (models/executors/predict.h) and proves it with the
// symbolic checker; also runs the analytic executor on it.
void build_and_check(const char* target, const models::PredictRequest& q, const std::string& what) {
  const models::BuiltSchedule built = models::build_schedule(q);
  const models::SymbolicResult r = models::check_schedule(built.schedule);
  if (!r.ok) violated(target, "the symbolic checker refutes the schedule of " + what + ": " + r.message);
  const models::ResultRecord record = models::predict(q);
  if (!(std::isfinite(record.time_per_sync_s) && record.time_per_sync_s >= 0)) {
    violated(target, "analytic time per sync of " + what + " is " + exact_number(record.time_per_sync_s) +
                         " s; expected finite and >= 0");
  }
}

// The fixed machine of the strategy_params target: 12 GPUs behind 3 switches, host memory at the root.
const models::Topology& params_machine() {
  static const models::Topology t = std::move(models::load_topology(models::JsonView::parse(tree_json(3, 4), "tree3x4.json")).topology);
  return t;
}

}  // namespace

const char* to_string(Outcome outcome) { return outcome == Outcome::accepted ? "accepted" : "rejected"; }

// ---------------------------------------------------------------------------------------
// The entries

Outcome fuzz_topology_json(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("topology_json", [&] {
    const models::JsonView doc = models::JsonView::parse(text, "fuzz.json");
    if (models::is_generated_form(doc)) {
      // A generated cluster is checked in full, but built only while small: a million GPUs, or
      // thousands of NICs a node (each a rail of switches), is a valid request that takes
      // minutes under the sanitizers and gigabytes, not a finding.
      const models::ClusterSpec spec = models::cluster_spec_from_json(doc);
      if (static_cast<double>(spec.nodes) * (static_cast<double>(spec.gpus_per_node) + spec.nics_per_node) > 4096) return;
    }
    const models::LoadedTopology loaded = models::load_topology(doc);
    if (loaded.inference) (void)loaded.inference->text();
    exercise_topology("topology_json", loaded.topology);
  });
}

Outcome fuzz_matrix_form_json(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("matrix_form_json", [&] {
    const models::MatrixForm form = models::matrix_form_from_json(models::JsonView::parse(text, "fuzz.json"));
    check_matrix_roundtrip("matrix_form_json", form);
    infer_and_exercise("matrix_form_json", form);
  });
}

Outcome fuzz_workload_json(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("workload_json", [&] {
    const models::Workload w = models::workload_from_json(models::JsonView::parse(text, "fuzz.json"));
    const double bytes = w.gradient_bytes();
    const double compute = w.compute_s();
    if (!(std::isfinite(bytes) && bytes >= 0) || !(std::isfinite(compute) && compute >= 0)) {
      violated("workload_json", "accepted workload has " + exact_number(bytes) + " gradient bytes and " + exact_number(compute) +
                                    " s of compute per minibatch; expected finite and >= 0");
    }
    std::optional<models::Workload> back;
    try {
      back = models::workload_from_json(models::JsonView::wrap(models::workload_to_json(w), "workload-roundtrip.json"));
    } catch (const InputError& e) {
      violated("workload_json", std::string("the JSON gradsync writes for an accepted workload is rejected: ") + e.what());
    }
    bool same = back->name == w.name && back->dtype_bytes == w.dtype_bytes && back->layers.size() == w.layers.size() &&
                back->minibatches_per_epoch == w.minibatches_per_epoch && close(back->compute_s(), compute) &&
                back->samples_per_minibatch == w.samples_per_minibatch;
    for (std::size_t i = 0; same && i < w.layers.size(); ++i) {
      same = back->layers[i].name == w.layers[i].name && back->layers[i].params == w.layers[i].params &&
             back->layers[i].rows == w.layers[i].rows && close(back->layers[i].forward_flops, w.layers[i].forward_flops) &&
             close(back->layers[i].backward_flops, w.layers[i].backward_flops) && back->layers[i].dtype_bytes == w.layers[i].dtype_bytes;
    }
    if (!same) violated("workload_json", "workload changed in a round trip through workload_to_json");
    if (w.convergence.has_value() != back->convergence.has_value() ||
        (w.convergence && models::convergence_to_json(*w.convergence) != models::convergence_to_json(*back->convergence))) {
      violated("workload_json", "convergence facts changed in a round trip through workload_to_json");
    }
    // Samples to target at any batch: finite, positive, the value within its range.
    if (w.convergence) {
      for (double batch : {1.0, w.convergence->global_batch, 1e6}) {
        const models::Estimate e = models::samples_to_target(*w.convergence, batch);
        if (!(std::isfinite(e.low) && std::isfinite(e.high) && e.low > 0 && e.low <= e.value * (1 + 1e-12) &&
              e.value <= e.high * (1 + 1e-12))) {
          violated("workload_json", "samples to target at a batch of " + exact_number(batch) + ": " + exact_number(e.value) + " (" +
                                        exact_number(e.low) + "-" + exact_number(e.high) + "); expected finite, > 0, within its range");
        }
      }
    }
  });
}

Outcome fuzz_experiment_json(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("experiment_json", [&] {
    const experiments::Experiment e = experiments::load_experiment(models::JsonView::parse(text, "fuzz.json"));
    for (const auto& choice : e.strategies) {
      if (!choice.strategy) violated("experiment_json", "accepted experiment has a strategy without a definition");
      (void)models::resolve_params(*choice.strategy, choice.params);
    }
    // The plan reads the topology (and workload) it names: only shipped topologies and
    // presets here, so that fuzz inputs never make the target open arbitrary paths.
    const auto shipped = models::shipped_topology_names();
    const auto presets = models::workload_preset_names();
    const bool shipped_topology = std::find(shipped.begin(), shipped.end(), e.topology) != shipped.end();
    const bool known_workload = e.workload.empty() || std::find(presets.begin(), presets.end(), e.workload) != presets.end();
    if (shipped_topology && known_workload) {
      const experiments::Plan plan = experiments::make_plan(e);
      if (plan.placements.empty() || plan.sizes.empty() || plan.executors.empty()) {
        violated("experiment_json", "accepted plan has no point");
      }
    }
  });
}

Outcome fuzz_tool_output(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("tool_output", [&] {
    const models::ImportResult imported = models::import_tool_output(text, "fuzz.txt");
    if (imported.tools_found.empty()) violated("tool_output", "import accepted a text without any tool output");
    if (imported.form.size() == 0) violated("tool_output", "import accepted a text without any GPU");
    check_matrix_roundtrip("tool_output", imported.form);
    infer_and_exercise("tool_output", imported.form);
  });
}

Outcome fuzz_gpu_counts(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("gpu_counts", [&] {
    const std::vector<int> counts = experiments::parse_gpu_counts(text);
    if (counts.empty()) violated("gpu_counts", "\"" + text + "\" was accepted as no GPU count at all");
    for (int n : counts) {
      if (n < 1) violated("gpu_counts", "\"" + text + "\" was accepted with the GPU count " + std::to_string(n) + "; expected >= 1");
    }
  });
}

Outcome fuzz_byte_size(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("byte_size", [&] {
    const double bytes = models::parse_bytes(text, "--size");
    if (!(std::isfinite(bytes) && bytes >= 0)) {
      violated("byte_size", "\"" + text + "\" was accepted as " + exact_number(bytes) + " bytes; expected finite and >= 0");
    }
  });
}

Outcome fuzz_strategy_params(const std::uint8_t* data, std::size_t size) {
  const std::string text = text_of(data, size);
  return guarded("strategy_params", [&] {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    if (lines.size() > 1 && lines.back().empty()) lines.pop_back();  // a final newline
    const models::Strategy& strategy = models::find_strategy(lines.front());
    const std::vector<std::string> items(lines.begin() + 1, lines.end());
    models::PredictRequest q;
    q.topology = &params_machine();
    q.strategy = &strategy;
    q.params = models::SyncParams::parse(items);
    q.placement = models::first_gpus(params_machine(), 6);
    q.bytes = 4003;
    std::string what = "strategy " + strategy.name + " with";
    for (const auto& item : items) what += " " + item;
    build_and_check("strategy_params", q, what + " (6 of 12 GPUs, 4003 bytes)");
  });
}

Outcome fuzz_schedule(const std::uint8_t* data, std::size_t size) {
  Choices c(data, size);
  std::optional<ScheduleCase> sc;
  try {
    sc = schedule_case(c);
  } catch (const std::exception& e) {
    violated("schedule", std::string("cannot set up a valid case: ") + e.what());
  }
  const std::string what = sc->describe();
  if (show_cases()) std::fprintf(stderr, "gradsync fuzz schedule: %s\n", what.c_str());
  try {
    models::PredictRequest q;
    q.topology = &sc->topology->topology;
    q.workload = sc->workload ? &*sc->workload : nullptr;
    q.bytes = sc->bytes;
    q.strategy = sc->strategy;
    q.params = models::SyncParams::parse(sc->params);
    q.placement = sc->placement;
    q.explain = sc->explain;
    build_and_check("schedule", q, what);
  } catch (const InputError& e) {
    violated("schedule", "a valid combination was rejected: " + what + ": " + e.what());
  } catch (const std::exception& e) {
    violated("schedule", "uncaught " + type_name_of_current_exception(abi::__cxa_current_exception_type()) + " for " +
                             what + ": " + e.what());
  }
  return Outcome::accepted;
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"topology_json", fuzz_topology_json, "topology JSON, graph, matrix or generated form (models::load_topology)", true},
      {"matrix_form_json", fuzz_matrix_form_json, "matrix-form JSON and switch-tree inference (matrix_form_from_json, infer_topology)", true},
      {"workload_json", fuzz_workload_json, "workload JSON (models::workload_from_json)", true},
      {"experiment_json", fuzz_experiment_json, "experiment JSON (experiments::load_experiment, make_plan)", true},
      {"tool_output", fuzz_tool_output, "p2pBandwidthLatencyTest / nvbandwidth / nvidia-smi topo text (models::import_tool_output)", true},
      {"gpu_counts", fuzz_gpu_counts, "--gpus values (experiments::parse_gpu_counts)", true},
      {"byte_size", fuzz_byte_size, "size values of both front ends (models::parse_bytes)", true},
      {"strategy_params", fuzz_strategy_params, "--param key=value text for a strategy, built and checked", true},
      {"schedule", fuzz_schedule, "schedules from valid random parameters, proved by the symbolic checker", false},
      {"nccl_tests_log", fuzz_nccl_tests_log, "nccl-tests output as text (models::read_nccl_tests): each figure is the line's own, one record per timing", true},
      {"nccl_log", fuzz_nccl_log, "NCCL's own INFO log (models::read_nccl_log): CPU vendor, GPU paths and NVLS, each from a line that says it", true},
      {"nccl_tests_generated", fuzz_nccl_tests_generated, "nccl-tests logs generated with known figures in every layout the reader accepts: read back exactly, records give back algbw / busbw", false},
      {"topology_generate", fuzz_topology_generate, "topology generate options (the generated form): the GPUs, NICs and links the options say, or an error naming the JSON path", true},
      {"compare_inputs", fuzz_compare_inputs, "compare / calibrate inputs: a grid axis, then nccl-tests output, compared and calibrated on pcie-8gpu-2switch", true},
      {"sweep_file", fuzz_sweep_file, "sweep result files (experiments::read_sweep_file, JSON lines or CSV) as --resume and --merge read them", true},
      {"layer_listing", fuzz_layer_listing, "PyTorch parameter listings (models::workload_from_listing), round trip through workload JSON", true},
      {"digits_csv", fuzz_digits_csv, "the training data's CSV (training::parse_digits_csv): pixels 0..1 in sixteenths, digits 0..9, the same through CSV again", true},
      {"text", fuzz_text, "the language model's text (training::parse_text, make_ngrams): words of a-z and inner apostrophes or </s>, the same words through text again, rows of in-vocabulary ids", true},
  };
  return all;
}

}  // namespace gradsync::fuzz
