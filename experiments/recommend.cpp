#include "experiments/recommend.h"

#include "models/support/units.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "experiments/table.h"
#include "models/support/error.h"
#include "models/executors/executor.h"
#include "models/executors/predict.h"
#include "models/support/units.h"
#include "sim/simulator.h"

namespace gradsync::experiments {

namespace {

using ParamGrid = std::vector<std::map<std::string, std::string>>;

// Every choice of `n` of the topology's GPUs when there are at most `max` of them;
// otherwise the first n, and n chosen greedily for the widest bottleneck among them.
std::vector<models::Placement> placements_for(const models::Topology& t, int n, std::size_t max) {
  const auto gpus = t.gpus();
  std::vector<models::Placement> out;
  std::set<std::vector<std::size_t>> seen;
  auto add = [&](std::vector<std::size_t> nodes) {
    auto key = nodes;
    std::sort(key.begin(), key.end());
    if (!seen.insert(key).second) return;
    models::Placement p;
    p.ranks = std::move(nodes);
    out.push_back(std::move(p));
  };
  // C(N, n) as C(N, min(n, N - n)), stopping once past `max` (the product for all 1,024 of
  // 1,024 GPUs overflowed to infinity and sent one placement to the greedy search).
  double combinations = 1;
  const int smaller = std::min(n, static_cast<int>(gpus.size()) - n);
  for (int i = 0; i < smaller && combinations <= static_cast<double>(max); ++i) {
    combinations = combinations * static_cast<double>(gpus.size() - static_cast<std::size_t>(i)) / (i + 1);
  }
  if (combinations <= static_cast<double>(max)) {
    std::vector<char> pick(gpus.size(), 0);
    std::fill(pick.begin(), pick.begin() + n, 1);
    do {
      std::vector<std::size_t> nodes;
      for (std::size_t i = 0; i < gpus.size(); ++i) {
        if (pick[i]) nodes.push_back(gpus[i]);
      }
      add(nodes);
    } while (std::prev_permutation(pick.begin(), pick.end()));
    return out;
  }
  add(models::first_gpus(t, n).ranks);
  // Greedy from each GPU: add the GPU whose narrowest path to the chosen ones is widest. Each
  // GPU's narrowest path to the chosen ones is kept and narrowed as one joins (a GPU's paths to
  // the others are looked up once per start, not once per step and chosen GPU: all counts of a
  // 128-GPU cluster took minutes here before anything was predicted).
  const std::size_t count = gpus.size();
  // Each pair's narrower direction, looked up once: every start asks the same pairs again (on
  // 1,024 GPUs, a hundred million lookups in the topology's route cache). Kept for up to
  // 4,096 GPUs (64 MB); larger clusters ask the topology each time.
  constexpr std::size_t kKeptPairsUpTo = 4096;
  std::vector<double> pair_bw(count <= kKeptPairsUpTo ? count * (count - 1) / 2 : 0, -1.0);
  auto narrower = [&](std::size_t a, std::size_t b) {
    auto ask = [&] { return std::min(t.bottleneck_Bps(gpus[a], gpus[b]), t.bottleneck_Bps(gpus[b], gpus[a])); };
    if (pair_bw.empty()) return ask();
    const std::size_t lo = std::min(a, b), hi = std::max(a, b);
    double& kept = pair_bw[hi * (hi - 1) / 2 + lo];
    if (kept < 0) kept = ask();
    return kept;
  };
  std::vector<double> narrowest(count);
  std::vector<char> taken(count);
  for (std::size_t start = 0; start < count && out.size() < max; ++start) {
    std::fill(narrowest.begin(), narrowest.end(), INFINITY);
    std::fill(taken.begin(), taken.end(), 0);
    std::vector<std::size_t> chosen;
    std::size_t joining = start;
    while (true) {
      taken[joining] = 1;
      chosen.push_back(gpus[joining]);
      if (static_cast<int>(chosen.size()) == n) break;
      std::size_t best = count;
      double best_bw = -1;
      for (std::size_t i = 0; i < count; ++i) {
        if (taken[i]) continue;
        narrowest[i] = std::min(narrowest[i], narrower(joining, i));
        if (narrowest[i] > best_bw) {
          best_bw = narrowest[i];
          best = i;
        }
      }
      joining = best;
    }
    std::sort(chosen.begin(), chosen.end());
    add(chosen);
  }
  return out;
}

// `values` of `spec` less those that the parameters fixed or left at their defaults exclude
// (NVLS with nvls=off, CollNet without collnet=on): they would only fail.
std::vector<std::string> allowed(const models::Strategy& s, const models::ParamSpec& spec, std::vector<std::string> values,
                                 const models::SyncParams& fixed) {
  std::erase_if(values, [&](const std::string& v) {
    return std::any_of(spec.excludes.begin(), spec.excludes.end(), [&](const models::ParamSpec::Exclusion& x) {
      if (x.value != v) return false;
      const models::ParamSpec* other = models::find_param(s, x.other);
      const std::string value = fixed.get(x.other) ? *fixed.get(x.other) : other ? other->default_value : "";
      return std::find(x.other_values.begin(), x.other_values.end(), value) != x.other_values.end();
    });
  });
  return values;
}

// Every combination of the values a search tries for the parameters of `s` (wrapping
// `inner`, when it is a wrapper): the inner strategy's own parameters first, then the
// wrapper's. Parameters the user fixed, and the sync period (searched on its own), stay out.
ParamGrid grid_for(const models::Strategy& s, const models::Topology& t, const models::Placement& p,
                   const models::SyncParams& fixed) {
  ParamGrid grid;
  auto expand = [&](std::map<std::string, std::string> start, const models::Strategy* inner) {
    const models::ParamContext context{t, p, inner};
    std::vector<const models::ParamSpec*> specs;
    if (inner) {
      for (const auto& spec : inner->params) specs.push_back(&spec);
    }
    for (const auto& spec : s.params) specs.push_back(&spec);
    ParamGrid combos = {std::move(start)};
    for (const models::ParamSpec* spec : specs) {
      if (!spec->search || spec->period || fixed.get(spec->name) || !models::declares(s, spec->name)) continue;
      const auto options = allowed(s, *spec, spec->search(context), fixed);
      if (options.empty()) continue;
      ParamGrid next;
      for (const auto& c : combos) {
        for (const auto& v : options) {
          auto d = c;
          d[spec->name] = v;
          next.push_back(std::move(d));
        }
      }
      combos = std::move(next);
    }
    grid.insert(grid.end(), combos.begin(), combos.end());
  };
  // The inners a search tries, and those it tries on their own on this topology (nccl where
  // NCCL's planner models it: sharded strategies over NCCL's collectives on a cluster).
  auto inners = models::inner_strategies(s, true);
  for (const models::Strategy* inner : models::inner_strategies(s, false)) {
    if (std::find(inners.begin(), inners.end(), inner) == inners.end() && inner->searched_on && inner->searched_on(t)) {
      inners.push_back(inner);
    }
  }
  if (inners.empty() || fixed.get("inner")) {
    expand({}, fixed.get("inner") ? &models::find_strategy(*fixed.get("inner")) : nullptr);
  } else {
    for (const models::Strategy* inner : inners) expand({{"inner", inner->name}}, inner);
  }
  return grid;
}

// The strategy's period parameter (steps between synchronisations), if it has one.
const models::ParamSpec* period_param(const models::Strategy& s) {
  for (const auto& spec : models::params_of(s)) {
    if (spec.period) return &spec;
  }
  return nullptr;
}

std::string changes_training(const models::Strategy& s, const models::ResultRecord& r) {
  return s.changes_training ? s.changes_training(r) : "";
}

double score_of(const models::ResultRecord& r) {
  if (r.convergence) return r.convergence->time_s.value;
  if (r.time_per_epoch_s) return *r.time_per_epoch_s;
  return r.time_per_sync_s / std::max(1, r.period_steps);
}

// Best first: choices whose time to target is unknown (a change to the training with no measured
// cost in samples) after the rest, each group by its score.
bool ranks_before(const Choice& a, const Choice& b) {
  if (a.unknown_target != b.unknown_target) return !a.unknown_target;
  return a.score < b.score;
}

}  // namespace

std::string Choice::name() const {
  if (alone()) return "one GPU alone";
  const auto inner = searched.find("inner");
  const auto fixed_inner = params.get("inner");
  if (inner != searched.end()) return strategy->name + " inner=" + inner->second;
  if (fixed_inner) return strategy->name + " inner=" + *fixed_inner;
  return strategy->name;
}

bool worth_showing(const models::Strategy& s, const std::string& key, const std::string& value) {
  const models::ParamSpec* spec = models::find_param(s, key);
  // The inner strategy is part of the choice's name; a default that resolves to nothing
  // visible (ring_order=auto, grouping=switch, rates=1) says nothing.
  return spec && key != "inner" && (spec->resolved || value != spec->default_value);
}

std::string Choice::params_text() const {
  // What the search chose, "auto" shown as what it became (k=2, T=1875); the defaults that
  // change nothing visible (ring_order=auto, grouping=switch, rates=1) left out.
  std::string text;
  for (const auto& [k, v] : searched) {
    if (!worth_showing(*strategy, k, v)) continue;
    const auto resolved = analytic.params.find(k);
    const std::string shown = resolved != analytic.params.end() && resolved->second != "-" ? resolved->second : v;
    text += (text.empty() ? "" : " ") + k + "=" + shown;
  }
  if (bucket_cap_bytes) text += (text.empty() ? "" : " ") + std::string("buckets=") + format_fixed(*bucket_cap_bytes / models::kMiB, 0) + "MiB";
  return text;
}

Recommendation recommend(const Plan& plan, const RecommendOptions& o,
                         const std::function<void(std::size_t, std::size_t)>& progress) {
  const models::Topology& t = plan.topology.topology;
  const models::Workload* workload = plan.workload ? &*plan.workload : nullptr;
  const std::optional<double> bytes = plan.sizes.empty() ? std::nullopt : plan.sizes.front();
  Recommendation rec;
  rec.with_workload = workload != nullptr && !bytes;

  if (o.gpu_memory_bytes && !rec.with_workload) {
    throw models::InputError("--gpu-memory: needs a workload (its parameters decide the memory per GPU), not --size");
  }
  std::vector<const models::Strategy*> strategies;
  if (o.strategies.empty()) {
    for (const auto* s : models::all_strategies()) {
      if (!s->searched && !(s->searched_on && s->searched_on(t))) continue;  // named with --strategies only
      // Sharding saves memory, never time: searched where memory is the question.
      if (s->sharding != models::Sharding::none && !o.gpu_memory_bytes) {
        rec.sharded_left_out.push_back(s->name);
        continue;
      }
      // A bare size has no steps to space synchronisations over nor compute to overlap: the
      // periodic and asynchronous strategies need a workload (or to be asked for).
      if (s->needs_workload && !rec.with_workload) {
        rec.left_out.push_back(s->name);
        continue;
      }
      strategies.push_back(s);
    }
  } else {
    for (const auto& name : o.strategies) strategies.push_back(&models::find_strategy(name));
  }
  // The candidates: (placement, strategy, searched parameters).
  struct Candidate {
    const models::Placement* placement;
    const models::Strategy* strategy;
    std::map<std::string, std::string> searched;
  };
  std::vector<models::Placement> placements;
  std::vector<int> counts;
  for (const auto& p : plan.placements) counts.push_back(p.size());
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  // With convergence facts, GPUs stop being added where the global batch passes the noise scale
  // (its high end): steps to target hardly fall there. The fewest multi-GPU count is kept.
  if (rec.with_workload && workload->convergence && workload->samples_per_minibatch) {
    const double noise = workload->convergence->noise_scale.high;
    const auto b = static_cast<double>(*workload->samples_per_minibatch);
    bool kept_one = false;
    std::vector<int> kept;
    for (int n : counts) {
      if (n >= 2 && kept_one && n * b > noise) {
        rec.past_noise_scale.push_back(n);
        continue;
      }
      kept_one = kept_one || n >= 2;
      kept.push_back(n);
    }
    counts = std::move(kept);
  }
  for (int n : counts) {
    if (n < 2) continue;  // one rank synchronises nothing: the "alone" choice stands for it
    for (auto& p : placements_for(t, n, o.max_placements)) placements.push_back(std::move(p));
  }
  std::vector<Candidate> candidates;
  for (const auto& p : placements) {
    for (const auto* s : strategies) {
      for (auto& params : grid_for(*s, t, p, o.fixed)) candidates.push_back({&p, s, std::move(params)});
    }
  }

  auto request_for = [&](const Candidate& c, const std::map<std::string, std::string>& extra) {
    models::PredictRequest q;
    q.topology = &t;
    q.workload = workload;
    q.bytes = bytes;
    q.strategy = c.strategy;
    for (const auto& [k, v] : o.fixed.values()) {
      if (models::declares(*c.strategy, k)) q.params.set(k, v);
    }
    for (const auto& [k, v] : c.searched) q.params.set(k, v);
    for (const auto& [k, v] : extra) q.params.set(k, v);
    q.placement = *c.placement;
    q.explain = false;  // no candidate's notes beyond its schedule's are shown (predict gives nccl's open facts)
    q.overlap = plan.overlap;
    return q;
  };
  auto describe = [&](const Candidate& c) {
    std::string text = c.strategy->name + " on";
    for (std::size_t g : c.placement->ranks) text += " " + t.node(g).id;
    for (const auto& [k, v] : c.searched) text += " " + k + "=" + v;
    return text;
  };

  // A choice's request (its strategy, parameters and GPUs).
  auto request_of = [&](const Choice& c) {
    models::PredictRequest q;
    q.topology = &t;
    q.workload = workload;
    q.bytes = bytes;
    q.strategy = c.strategy;
    q.params = c.params;
    q.placement = models::named_gpus(t, c.rank_nodes);
    q.explain = false;
    q.overlap = plan.overlap;
    if (q.overlap && c.bucket_cap_bytes) q.overlap->bucket_cap_bytes = *c.bucket_cap_bytes;
    return q;
  };
  // A choice's analytic figures (counted in `evaluated`): false when --exact-only leaves it out.
  auto priced = [&](Choice& ch, const models::PredictRequest& q, std::size_t& evaluated) {
    ch.analytic = models::predict(q);
    ++evaluated;
    ch.changes_training = changes_training(*ch.strategy, ch.analytic);
    ch.score = score_of(ch.analytic);
    ch.unknown_target = !ch.analytic.no_time_to_target.empty();
    return !(o.exact_only && !ch.changes_training.empty());
  };
  // What one candidate gives: its choices (two for a periodic strategy with a workload: the
  // period asked for and the smallest that keeps synchronisation under its share), or why it
  // was skipped.
  struct Outcome {
    std::vector<Choice> kept;
    std::optional<std::string> skipped;
    std::optional<double> one_gpu_epoch;
    std::size_t evaluated = 0;
  };
  auto evaluate = [&](const Candidate& c) {
    Outcome out;
    try {
      auto add_choice = [&](const models::PredictRequest& q, std::map<std::string, std::string> searched) {
        Choice ch;
        ch.gpus = q.placement.size();
        for (std::size_t g : q.placement.ranks) ch.rank_nodes.push_back(t.node(g).id);
        ch.strategy = c.strategy;
        ch.searched = std::move(searched);
        ch.params = q.params;
        const bool kept = priced(ch, q, out.evaluated);
        if (ch.analytic.one_gpu_epoch_s) out.one_gpu_epoch = ch.analytic.one_gpu_epoch_s;
        if (kept) out.kept.push_back(std::move(ch));
      };
      const models::ParamSpec* period = period_param(*c.strategy);
      if (period && !o.fixed.get(period->name)) {
        // The sync period: the smallest T keeping synchronisation under the share asked for
        // (with a workload), and the source's default.
        const std::string& key = period->name;
        add_choice(request_for(c, {{key, "auto"}}), [&] { auto s = c.searched; s[key] = "auto"; return s; }());
        if (rec.with_workload) {
          for (int T = 1; T <= 65536; T *= 2) {
            const auto q = request_for(c, {{key, std::to_string(T)}});
            const auto r = models::predict(q);
            ++out.evaluated;
            if (r.communication_share() <= o.max_sync_share || T == 65536) {
              add_choice(q, [&] { auto s = c.searched; s[key] = std::to_string(T); return s; }());
              break;
            }
          }
        }
      } else {
        add_choice(request_for(c, {}), c.searched);
      }
    } catch (const models::InputError& e) {
      out.skipped = describe(c) + ": " + e.what();
    }
    return out;
  };
  // The candidates are independent: priced on every core, then taken in their order (the
  // ranking and its ties are as one thread gives them).
  std::vector<Outcome> outcomes(candidates.size());
  {
    std::atomic<std::size_t> next{0};
    std::mutex progress_mutex;
    std::size_t done = 0;
    std::vector<std::exception_ptr> failed;
    auto work = [&] {
      for (std::size_t i = next++; i < candidates.size(); i = next++) {
        try {
          outcomes[i] = evaluate(candidates[i]);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(progress_mutex);
          failed.push_back(std::current_exception());
        }
        const std::lock_guard<std::mutex> lock(progress_mutex);
        if (progress) progress(done, candidates.size());
        ++done;
      }
    };
    const std::size_t cores = o.threads > 0 ? static_cast<std::size_t>(o.threads) : std::thread::hardware_concurrency();
    const auto threads = std::clamp<std::size_t>(cores, 1, std::max<std::size_t>(1, candidates.size()));
    std::vector<std::thread> others;
    for (std::size_t k = 1; k < threads; ++k) others.emplace_back(work);
    work();
    for (std::thread& th : others) th.join();
    if (!failed.empty()) std::rethrow_exception(failed.front());
  }
  std::vector<Choice> choices;
  std::optional<double> one_gpu_epoch;
  for (Outcome& out : outcomes) {
    rec.evaluated += out.evaluated;
    if (out.skipped) rec.skipped.push_back(*out.skipped);
    if (out.one_gpu_epoch) one_gpu_epoch = out.one_gpu_epoch;
    for (Choice& ch : out.kept) choices.push_back(std::move(ch));
  }
  if (progress) progress(candidates.size(), candidates.size());
  if (rec.with_workload) {
    Choice alone;
    alone.gpus = 1;
    alone.rank_nodes = {t.node(t.gpus().front()).id};
    alone.analytic.executor = models::default_executor().name();
    alone.analytic.topology = t.name();
    alone.analytic.strategy = "alone";
    alone.analytic.ranks = 1;
    alone.analytic.workload = workload->name;
    alone.analytic.rank_nodes = alone.rank_nodes;
    models::add_training_times(alone.analytic, *workload, workload->compute_s_per_minibatch);
    alone.analytic.memory = models::memory_per_gpu(*workload, models::Sharding::none, 1);
    alone.score = alone.analytic.convergence ? score_of(alone.analytic) : alone.analytic.time_per_epoch_s.value_or(one_gpu_epoch.value_or(0));
    choices.push_back(std::move(alone));
  }
  // --gpu-memory: what does not fit is no choice.
  if (o.gpu_memory_bytes) {
    const auto needs = [](const Choice& c) { return c.analytic.memory ? c.analytic.memory->total_bytes() : 0.0; };
    std::vector<Choice> fitting;
    for (Choice& c : choices) {
      if (needs(c) <= *o.gpu_memory_bytes) {
        fitting.push_back(std::move(c));
        continue;
      }
      ++rec.not_fitting;
      if (!rec.smallest_not_fitting || needs(c) < needs(*rec.smallest_not_fitting)) rec.smallest_not_fitting = c;
    }
    choices = std::move(fitting);
  }
  // Best first; equal figures keep the order of generation (defaults and fewer GPUs first),
  // and only the first of a strategy at a GPU count with the same figure is kept.
  auto rank = [&] {
    std::stable_sort(choices.begin(), choices.end(), ranks_before);
    rec.ranked.clear();
    for (auto& c : choices) {
      const bool duplicate = std::any_of(rec.ranked.begin(), rec.ranked.end(), [&](const Choice& k) {
        return k.gpus == c.gpus && k.name() == c.name() && std::fabs(k.score - c.score) <= 1e-6 * std::max(k.score, c.score);
      });
      if (!duplicate) rec.ranked.push_back(c);
    }
  };
  rank();
  // A strategy that picks its own settings (ParamSpec::weigh: NCCL's algorithm) against each
  // of them forced, on the GPUs of its best choice.
  std::vector<Choice> weighed;
  for (const auto* s : strategies) {
    const auto best = std::find_if(rec.ranked.begin(), rec.ranked.end(), [&](const Choice& c) { return c.strategy == s; });
    if (best == rec.ranked.end()) continue;
    const models::Placement placement = models::named_gpus(t, best->rank_nodes);
    for (const auto& spec : models::params_of(*s)) {
      if (!spec.weigh || o.fixed.get(spec.name) || best->searched.count(spec.name) == 0) continue;
      const models::ParamContext context{t, placement, nullptr};
      for (const std::string& v : allowed(*s, spec, spec.weigh(context), o.fixed)) {
        Choice ch = *best;
        ch.searched[spec.name] = v;
        ch.params.set(spec.name, v);
        try {
          if (priced(ch, request_of(ch), rec.evaluated)) weighed.push_back(std::move(ch));
        } catch (const models::InputError&) {
          // the strategy would not run it here (NCCL's NVLS on hosts of uneven GPU counts)
        }
      }
    }
  }
  if (!weighed.empty()) {
    for (Choice& c : weighed) choices.push_back(std::move(c));
    rank();
  }
  // --overlap: the bucket size, for the best multi-GPU choices (as many as the simulator
  // confirms, at least one): each of a range of sizes around DDP's 25 MiB, the fastest kept.
  if (plan.overlap && rec.with_workload) {
    static const double kCaps[] = {1, 2, 5, 10, 25, 50, 100, 250};
    int searched = 0;
    for (auto& c : rec.ranked) {
      if (searched >= std::max(1, o.confirm)) break;
      if (c.alone() || !c.analytic.overlap) continue;
      ++searched;
      for (double mib : kCaps) {
        Choice trial = c;
        trial.bucket_cap_bytes = mib * models::kMiB;
        if (*trial.bucket_cap_bytes == plan.overlap->bucket_cap_bytes) continue;
        priced(trial, request_of(trial), rec.evaluated);
        if (trial.score < c.score * (1 - 1e-9)) {
          trial.plan_bucket_iteration_s = c.plan_bucket_iteration_s ? c.plan_bucket_iteration_s : c.analytic.time_per_iteration_s;
          c = std::move(trial);
        }
      }
    }
    std::stable_sort(rec.ranked.begin(), rec.ranked.end(), ranks_before);
  }
  // The best choices of a strategy that states what the inputs leave open, with it.
  for (std::size_t i = 0; i < rec.ranked.size() && i < o.restated; ++i) {
    Choice& c = rec.ranked[i];
    if (c.alone() || !c.strategy->states_open_facts) continue;
    models::PredictRequest q = request_of(c);
    q.explain = true;
    try {
      c.analytic = models::predict(q);
    } catch (const models::InputError&) {
      // a fact's other value the strategy refuses here: the choice keeps its figures, unranged
    }
  }
  // The simulator on the best multi-GPU choices.
  int confirmed = 0;
  for (auto& c : rec.ranked) {
    if (confirmed >= o.confirm) break;
    if (c.alone()) continue;
    c.sim = sim::executor().evaluate(request_of(c), plan.settings);
    ++confirmed;
  }
  return rec;
}

}  // namespace gradsync::experiments
