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

// A strategy that decides its own settings (NCCL: algorithm, protocol and channels by its cost
// model) was searched with each setting forced as well: the best choice against the others on
// the same GPUs, or, when a forced setting won, what the strategy's own pick takes there.
std::vector<std::string> against_own_settings(const Recommendation& r, const Choice& best) {
  auto own = [](const Choice& c) {
    return std::all_of(c.searched.begin(), c.searched.end(), [&](const auto& kv) {
      const models::ParamSpec* spec = models::find_param(*c.strategy, kv.first);
      return !spec || kv.second == spec->default_value;
    });
  };
  auto slower = [&](const Choice& c) {
    return format_seconds(c.analytic.time_per_sync_s) + " (" + format_fixed(100.0 * (c.score / best.score - 1), 0) + " % slower" +
           (c.analytic.busbw_GBps() ? ", busbw " + format_fixed(*c.analytic.busbw_GBps(), 1) + " GB/s" : "") + ")";
  };
  std::vector<const Choice*> others;
  for (const Choice& c : r.ranked) {
    if (&c != &best && c.strategy == best.strategy && c.rank_nodes == best.rank_nodes) others.push_back(&c);
  }
  if (others.empty() || best.score <= 0) return {};
  if (!own(best)) {
    const auto pick = std::find_if(others.begin(), others.end(), [&](const Choice* c) { return own(*c); });
    if (pick == others.end()) return {};
    return {"Forced (--param " + best.params_text() + "): faster here than " + best.strategy->name + "'s own pick on these GPUs, " +
            (*pick)->params_text() + ", at " + slower(**pick) + "."};
  }
  std::string line = "Against its other settings on these GPUs (each forced):";
  for (std::size_t i = 0; i < others.size(); ++i) line += (i ? ", " : " ") + others[i]->params_text() + " " + slower(*others[i]);
  if (best.analytic.busbw_GBps()) line += "; the pick's busbw " + format_fixed(*best.analytic.busbw_GBps(), 1) + " GB/s";
  return {line + "."};
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
  // A priced choice's figures: false when --exact-only leaves it out.
  auto keep_priced = [&](Choice& ch) {
    ch.changes_training = changes_training(*ch.strategy, ch.analytic);
    ch.score = score_of(ch.analytic);
    ch.unknown_target = !ch.analytic.no_time_to_target.empty();
    return !(o.exact_only && !ch.changes_training.empty());
  };
  auto priced = [&](Choice& ch, const models::PredictRequest& q) {
    ch.analytic = models::predict(q);
    ++rec.evaluated;
    return keep_priced(ch);
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
        ch.analytic = models::predict(q);
        ++out.evaluated;
        if (ch.analytic.one_gpu_epoch_s) out.one_gpu_epoch = ch.analytic.one_gpu_epoch_s;
        if (keep_priced(ch)) out.kept.push_back(std::move(ch));
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
      out.kept.clear();
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
          if (priced(ch, request_of(ch))) weighed.push_back(std::move(ch));
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
        priced(trial, request_of(trial));
        if (trial.score < c.score * (1 - 1e-9)) {
          trial.plan_bucket_iteration_s = c.plan_bucket_iteration_s ? c.plan_bucket_iteration_s : c.analytic.time_per_iteration_s;
          c = std::move(trial);
        }
      }
    }
    std::stable_sort(rec.ranked.begin(), rec.ranked.end(), ranks_before);
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

Choice::Bound Choice::bound() const {
  Bound b;
  if (!analytic.bounding_links.empty()) b = {analytic.bounding_links.front().first, analytic.bounding_links.front().second, false};
  if (analytic.engine_bound_s > b.seconds) b = {"its own transfer rate", analytic.engine_bound_s, true};
  if (analytic.staged_bound_s > b.seconds) b = {"copies staged through host memory (no peer access)", analytic.staged_bound_s, false};
  return b;
}

std::vector<std::string> explain(const Plan& plan, const Recommendation& r) {
  std::vector<std::string> lines;
  if (r.ranked.empty()) return lines;
  const models::Topology& t = plan.topology.topology;
  (void)t;
  auto bound_text = [](const Choice& c) -> std::string {
    const Choice::Bound b = c.bound();
    if (b.what.empty() || c.analytic.time_per_sync_s <= 0) return "";
    if (c.analytic.asynchronous) {
      // The links were timed on the server's exchanges with every worker at once, not on one
      // worker's exchange (its synchronisation, which its own compute may hide): no share of it.
      std::string text = "its exchanges through the server, every worker's at once, are bound by " + b.what;
      for (const std::string& note : c.analytic.notes) {
        if (note.rfind("steady state bounded by the ", 0) == 0) text += " (the " + note + ")";
      }
      return text;
    }
    const double share = b.seconds / c.analytic.time_per_sync_s;
    const std::string rest = share < 0.9 ? " (the rest: latency, other links and local work — packing, reducing)" : "";
    const std::string head = "its synchronisation (" + format_seconds(c.analytic.time_per_sync_s) + ") is bound ";
    if (!b.own_rate) return head + "by " + b.what + " for " + models::format_percent(share, 0) + " of the time" + rest;
    // No link: the rate the strategy's engines move its transfers at (NCCL: its channels and
    // protocol as its cost model prices them), below what the links allow.
    std::string text = head + "for " + models::format_percent(share, 0) +
                       " of the time by its own transfer rate: what its engines move (NCCL's channels), below what the links allow";
    if (!c.analytic.bounding_links.empty() && c.analytic.bounding_links.front().second >= 0.01 * c.analytic.time_per_sync_s) {
      const auto& [link, seconds] = c.analytic.bounding_links.front();
      text += "; the busiest link, " + link + ", bounds it " + models::format_percent(seconds / c.analytic.time_per_sync_s, 0) + " of the time";
    }
    return text + rest;
  };
  auto figure = [&](const Choice& c) {
    std::string text = c.name() + (c.params_text().empty() ? "" : " (" + c.params_text() + ")") + " on " +
                       std::to_string(c.gpus) + (c.gpus == 1 ? " GPU" : " GPUs");
    if (r.with_workload && c.analytic.time_per_epoch_s) text += ", " + format_seconds(*c.analytic.time_per_epoch_s) + " per epoch";
    if (c.analytic.speedup_vs_1gpu) text += ", " + format_fixed(*c.analytic.speedup_vs_1gpu, 2) + "x one GPU";
    if (const auto& v = c.analytic.convergence) {
      text += "; " + format_seconds(v->time_s.value) + " to " + v->target + ", " + format_fixed(v->speedup.value, 2) +
              "x one GPU's time to it";
    }
    return text;
  };
  const Choice& best = r.ranked.front();
  // Time to target, where the workload's convergence facts allow it.
  if (r.with_workload && plan.workload && plan.workload->convergence) {
    const models::ConvergenceFacts& f = *plan.workload->convergence;
    std::set<std::string> unknown;
    for (const Choice& c : r.ranked) {
      if (c.unknown_target) unknown.insert(c.name());
    }
    std::string line = "Ranked by time to " + f.target + " (the workload's convergence facts), not by time per epoch";
    if (!unknown.empty()) {
      line += "; ranked after the rest by epoch time, since the facts give no cost in samples for how they change the training: " +
              models::join(std::vector<std::string>(unknown.begin(), unknown.end()));
    }
    lines.push_back(line + ".");
    if (!r.past_noise_scale.empty()) {
      std::vector<std::string> counts;
      for (int n : r.past_noise_scale) counts.push_back(std::to_string(n));
      lines.push_back("Not searched: " + models::join(counts) + " GPUs, whose global batch (" +
                      models::number_text(static_cast<double>(r.past_noise_scale.front()) * static_cast<double>(*plan.workload->samples_per_minibatch), 6) +
                      " samples and up) passes the noise scale (at most " + models::number_text(f.noise_scale.high, 6) +
                      " samples): there more GPUs hardly cut the steps to target.");
    }
  }
  auto first_exact_multi = std::find_if(r.ranked.begin(), r.ranked.end(), [](const Choice& c) {
    return !c.alone() && c.changes_training.empty();
  });
  auto first_exact = std::find_if(r.ranked.begin(), r.ranked.end(), [](const Choice& c) { return c.changes_training.empty(); });
  if (first_exact_multi == r.ranked.end() && std::none_of(r.ranked.begin(), r.ranked.end(), [](const Choice& c) { return !c.alone(); })) {
    lines.push_back("Only one GPU was considered (--gpus): training alone, nothing to synchronise.");
    return lines;
  }
  if (best.alone() || (first_exact != r.ranked.end() && first_exact->alone())) {
    lines.push_back(best.alone() ? "One GPU is best: every multi-GPU choice is slower than training alone."
                                 : "Among choices that keep the training exact, one GPU is best; only choices that change "
                                   "the training beat it.");
    if (first_exact_multi != r.ranked.end()) {
      const Choice& c = *first_exact_multi;
      lines.push_back("The fastest exact multi-GPU choice, " + figure(c) + ", synchronises " +
                      format_seconds(c.analytic.time_per_sync_s) + " per step against " +
                      format_seconds(c.analytic.compute_s_per_minibatch.value_or(0)) + " of compute; " +
                      std::to_string(c.gpus) + " GPUs beat one only when a step's synchronisation takes less than " +
                      std::to_string(c.gpus - 1) + " x compute = " +
                      format_seconds((c.gpus - 1) * c.analytic.compute_s_per_minibatch.value_or(0)) + ".");
      if (const auto b = bound_text(c); !b.empty()) lines.push_back("There " + b + ".");
    }
    if (!best.alone()) lines.push_back("Fastest overall: " + figure(best) + " — it " + best.changes_training + ".");
    return lines;
  }
  lines.push_back("Best: " + figure(best) + (best.changes_training.empty() ? "." : " — it " + best.changes_training + "."));
  if (const auto b = bound_text(best); !b.empty()) lines.push_back("Why: " + b + ".");
  if (!best.alone() && best.analytic.overlap) {
    const models::OverlapFigures& ov = *best.analytic.overlap;
    // A sharded strategy's own step: its collectives, over buckets or units of the cap.
    const bool own_step = static_cast<bool>(best.strategy->step_plan);
    std::string line = "Overlap: " + std::to_string(ov.buckets) + (own_step ? " collectives (buckets or units of " : " buckets of ") +
                       format_fixed(ov.bucket_cap_bytes / models::kMiB, 0) + (own_step ? " MiB)" : " MiB") +
                       " synchronised beside the " + format_seconds(ov.backward_s) + " backward pass (" + format_seconds(ov.bucket_sync_s) + " in all) leave " +
                       format_seconds(ov.exposed_s) + " exposed; without overlap the iteration would be " +
                       format_seconds(ov.iteration_without_s);
    if (best.plan_bucket_iteration_s) {
      line += "; the fastest bucket size of 1-250 MiB, against " + format_seconds(*best.plan_bucket_iteration_s) + " with " +
              format_fixed(plan.overlap->bucket_cap_bytes / models::kMiB, 0) + " MiB";
    }
    lines.push_back(line + ".");
  }
  if (!best.alone() && best.strategy->decided_by) {
    if (const std::string d = best.strategy->decided_by(best.analytic); !d.empty()) lines.push_back("How: " + d + ".");
    for (std::string& line : against_own_settings(r, best)) lines.push_back(std::move(line));
  }
  // How sure: the range over the facts the inputs leave open, and the fact that moves it most.
  if (!best.alone() && !best.analytic.open_facts.empty() && best.analytic.busbw_GBps()) {
    const auto range = best.analytic.busbw_range_GBps();
    const models::OpenFact* widest = nullptr;
    double spread = 0;
    for (const models::OpenFact& f : best.analytic.open_facts) {
      double lo = 1, hi = 1;
      for (const auto& [value, relative] : f.relative_time) {
        lo = std::min(lo, relative);
        hi = std::max(hi, relative);
      }
      if (hi / lo > spread) {
        spread = hi / lo;
        widest = &f;
      }
    }
    lines.push_back("How sure: busbw " + format_fixed(*best.analytic.busbw_GBps(), 1) + " GB/s, " + format_fixed(range->first, 1) + "-" +
                    format_fixed(range->second, 1) + " GB/s over what the inputs leave open (" + std::to_string(best.analytic.open_facts.size()) +
                    (best.analytic.open_facts.size() == 1 ? " fact" : " facts") + "; most: " + widest->name + ", " + widest->assumed +
                    " assumed).");
  }
  // The runner-up of another strategy, and what bounds it.
  const auto other = std::find_if(r.ranked.begin() + 1, r.ranked.end(), [&](const Choice& c) {
    return c.alone() || c.strategy->name != best.strategy->name;
  });
  if (other != r.ranked.end()) {
    std::string line = "Next other strategy: " + figure(*other);
    if (best.score > 0 && other->unknown_target == best.unknown_target) line += " (" + format_fixed(100.0 * (other->score / best.score - 1), 0) + " % slower)";
    if (const auto b = bound_text(*other); !b.empty()) line += "; " + b;
    lines.push_back(line + ".");
  }
  if (!best.changes_training.empty() && first_exact != r.ranked.end()) {
    lines.push_back("Best that keeps the training exact: " + figure(*first_exact) + ".");
  }
  return lines;
}

}  // namespace gradsync::experiments
