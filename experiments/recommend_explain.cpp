// Why recommend's winner wins: what bounds each choice, and the lines `gradsync recommend` prints
// under its table (recommend.h explain()).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "experiments/recommend.h"
#include "experiments/table.h"
#include "models/support/units.h"

namespace gradsync::experiments {

namespace {

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

// How sure: a choice's busbw range over the facts the inputs leave open, and the fact that
// moves it most ("" where its prediction states none).
std::string how_sure(const Choice& c) {
  if (c.alone() || c.analytic.open_facts.empty() || !c.analytic.busbw_GBps()) return "";
  const auto range = c.analytic.busbw_range_GBps();
  if (!range) return "";
  const models::OpenFact* widest = nullptr;
  double spread = 0;
  for (const models::OpenFact& f : c.analytic.open_facts) {
    double lo = 1, hi = 1;
    for (const auto& [value, relative] : f.relative_time) {
      lo = std::min(lo, relative);
      hi = std::max(hi, relative);
    }
    if (!widest || hi / lo > spread) {
      spread = hi / lo;
      widest = &f;
    }
  }
  return "How sure: busbw " + format_fixed(*c.analytic.busbw_GBps(), 1) + " GB/s, " + format_fixed(range->first, 1) + "-" +
         format_fixed(range->second, 1) + " GB/s over what the inputs leave open (" + std::to_string(c.analytic.open_facts.size()) +
         (c.analytic.open_facts.size() == 1 ? " fact" : " facts") + "; most: " + widest->name + " (" + widest->assumed + ")).";
}

}  // namespace

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
      if (const auto sure = how_sure(c); !sure.empty()) lines.push_back(sure);
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
  if (const auto sure = how_sure(best); !sure.empty()) lines.push_back(sure);
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
