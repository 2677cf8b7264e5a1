// Sampling-based transfer (source A), and its proposed future work: only the rows
// V_base ∪ V_α ∪ V_β of the row-structured layers are synchronised (models/strategies/sampling.h),
//   inner=ps           through a parameter server (each rank sends its own rows, the server
//                      sends back every row anyone sent) — source A's own scheme;
//   inner=ring         the rows every rank sends (V_α ∪ V_β, the same for all ranks thanks to
//                      the shared seed, and the row-less layers) are all-reduced densely
//                      around a ring; the rest (V_base, the minibatch words, different on
//                      each rank) goes to every rank by a ring all-gather of row indices
//                      and values, and each rank adds up the contributions of each row;
//   inner=hierarchical the same with source B's hierarchical all-reduce for the dense part.
// Per-rank rates (`rates`): a rank behind a slow link samples V_α and V_β at a lower rate;
// `auto` picks them so that every rank's exchange with the server over its own path takes
// as long as the quickest rank's (a ring carries every rank's rows over every link, so
// there auto keeps one rate). Rows are packed into scratch space before sending and unpacked after,
// as a real implementation must.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "models/support/error.h"
#include "models/strategies/sampling.h"
#include "models/support/units.h"
#include "models/strategies/common.h"
#include "models/executors/result.h"

namespace gradsync::models::strategies {

namespace sampled_strategy {

SamplingParams sampling_params(const StrategyContext& ctx) {
  SamplingParams p;
  p.alpha = ctx.params.number("alpha");
  p.beta = ctx.params.number("beta");
  if (ctx.params.is_auto("base")) {
    p.base = ctx.samples_per_minibatch();
    if (p.base > kMaxSampledWords) {
      throw InputError("--param base=auto: the workload's minibatch of " + std::to_string(p.base) + " words is more than " +
                       std::to_string(kMaxSampledWords) + " (sampling draws every word); give --param base=N");
    }
  } else {
    p.base = ctx.params.integer("base");
  }
  p.seed = static_cast<std::uint64_t>(ctx.params.integer("seed"));
  p.rows = ctx.params.integer("rows");
  // A real run's minibatches (gradsync-train): each rank's own words, not drawn.
  if (ctx.workload && !ctx.workload->minibatch_rows.empty()) {
    if (ctx.workload->minibatch_rows.size() != static_cast<std::size_t>(ctx.N())) {
      throw InputError("workload " + ctx.workload->name + ": minibatch rows of " + std::to_string(ctx.workload->minibatch_rows.size()) +
                       " ranks; expected " + std::to_string(ctx.N()));
    }
    p.base_rows = ctx.workload->minibatch_rows;
  }
  return p;
}

std::vector<double> given_rates(const StrategyContext& ctx, const std::string& text) {
  std::vector<double> rates;
  for (const auto& item : split_list(text, "--param rates")) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(v >= 0 && v <= 1)) {
      throw InputError("--param rates=" + text + ": \"" + item + "\" is not a sampling rate between 0 and 1");
    }
    rates.push_back(v);
  }
  if (rates.size() != static_cast<std::size_t>(ctx.N())) {
    throw InputError("--param rates=" + text + ": expected one rate per rank (" + std::to_string(ctx.N()) + "), got " +
                     std::to_string(rates.size()));
  }
  return rates;
}

// rates=auto over a server (source A: "a slow link under point-to-point only slows that
// device's own exchange"): rank r sends fixed_r bytes (V_base and row-less layers) plus
// rate_r x optional_r (V_α ∪ V_β) over its path to the server, whose narrowest link gives
// it B_r. The rank whose exchange would be quickest at rate 1 keeps rate 1; every other
// rank's rate is lowered until its exchange over its own path takes no longer:
// (fixed_r + rate_r optional_r) / B_r = t* (rate 0 when V_base alone takes longer).
std::vector<double> balanced_rates(const StrategyContext& ctx, SamplingParams p) {
  const int n = ctx.N();
  p.rates.assign(static_cast<std::size_t>(n), 0.0);
  const SampledRows low = sample_rows(ctx.elements, ctx.element_bytes, ctx.workload, n, p);
  p.rates.assign(static_cast<std::size_t>(n), 1.0);
  const SampledRows high = sample_rows(ctx.elements, ctx.element_bytes, ctx.workload, n, p);
  const std::size_t server = ctx.server_node();
  std::vector<double> fixed(static_cast<std::size_t>(n)), optional(static_cast<std::size_t>(n)), path(static_cast<std::size_t>(n));
  double quickest = std::numeric_limits<double>::infinity();
  for (std::size_t r = 0; r < fixed.size(); ++r) {
    fixed[r] = static_cast<double>(total_bytes(low.per_rank[r]));
    optional[r] = static_cast<double>(total_bytes(high.per_rank[r])) - fixed[r];
    const std::size_t node = ctx.placement.ranks[r];
    path[r] = node == server ? std::numeric_limits<double>::infinity() : ctx.topology.route_bottleneck_Bps(node, server);
    if (std::isfinite(path[r])) quickest = std::min(quickest, (fixed[r] + optional[r]) / path[r]);
  }
  std::vector<double> rates(static_cast<std::size_t>(n), 1.0);
  if (!std::isfinite(quickest)) return rates;  // every rank sits with the server
  for (std::size_t r = 0; r < rates.size(); ++r) {
    if (std::isfinite(path[r]) && optional[r] > 0) rates[r] = std::clamp((quickest * path[r] - fixed[r]) / optional[r], 0.0, 1.0);
  }
  return rates;
}

std::string rates_note(const std::vector<double>& rates) {
  std::string text = "rates:";
  for (double r : rates) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.3g", r);
    text += buf;
  }
  return text;
}

// Copies each slice of `from` into consecutive bytes starting at `packed` (or back).
void pack(const std::vector<Slice>& slices, std::uint64_t packed, bool unpack, std::vector<Op>& out) {
  std::uint64_t at = packed;
  for (const Slice& s : slices) {
    const Slice place{at, s.bytes};
    out.push_back(unpack ? Op::copy(place, s) : Op::copy(s, place));
    at += s.bytes;
  }
}

Schedule build_over_ps(const StrategyContext& ctx, std::shared_ptr<const SampledRows> rows) {
  Schedule s = start_schedule("sampled", ctx);
  const int server = add_server(s, ctx);
  const int n = s.workers;
  const std::uint64_t S = s.gradient_bytes;
  auto packed = std::make_shared<std::vector<std::uint64_t>>();  // bytes each worker packs
  auto incoming = std::make_shared<std::vector<std::uint64_t>>();  // where the server puts each worker's rows
  std::uint64_t at = S;
  for (const auto& slices : rows->per_rank) {
    packed->push_back(total_bytes(slices));
    incoming->push_back(at);
    at += packed->back();
  }
  const std::uint64_t outgoing = at;
  const std::uint64_t union_bytes = total_bytes(rows->union_slices);
  s.scratch_bytes = outgoing - S + union_bytes;

  s.rounds.push_back(Round{"pack", "pack", [rows, S, n](int p, std::vector<Op>& out) {
                             if (p < n) pack(rows->per_rank[static_cast<std::size_t>(p)], S, false, out);
                           }});
  s.rounds.push_back(Round{"gather", "", [=](int p, std::vector<Op>& out) {
                             if (p < n) {
                               out.push_back(Op::send(server, Slice{S, (*packed)[static_cast<std::size_t>(p)]}));
                             } else if (p == server) {
                               for (int w = 0; w < n; ++w) {
                                 const auto i = static_cast<std::size_t>(w);
                                 out.push_back(Op::recv(w, Slice{(*incoming)[i], (*packed)[i]}));
                               }
                             }
                           }});
  s.rounds.push_back(Round{"update", "update", [=](int p, std::vector<Op>& out) {
                             if (p != server) return;
                             for (int w = 0; w < n; ++w) {
                               std::uint64_t from = (*incoming)[static_cast<std::size_t>(w)];
                               for (const Slice& row : rows->per_rank[static_cast<std::size_t>(w)]) {
                                 out.push_back(Op::reduce(Slice{from, row.bytes}, row));
                                 from += row.bytes;
                               }
                             }
                           }});
  // Ops of one round run concurrently: packing the updated rows needs a round of its own.
  s.rounds.push_back(Round{"pack", "pack", [=](int p, std::vector<Op>& out) {
                             if (p == server) pack(rows->union_slices, outgoing, false, out);
                           }});
  s.rounds.push_back(Round{"send back", "", [=](int p, std::vector<Op>& out) {
                             if (p == server) {
                               for (int w = 0; w < n; ++w) out.push_back(Op::send(w, Slice{outgoing, union_bytes}));
                             } else if (p < n) {
                               out.push_back(Op::recv(server, Slice{S, union_bytes}));
                             }
                           }});
  s.rounds.push_back(Round{"unpack", "unpack", [rows, S, n](int p, std::vector<Op>& out) {
                             if (p < n) pack(rows->union_slices, S, true, out);
                           }});
  s.expected = rows->expected;
  s.notes.push_back("server on " + ctx.topology.node(ctx.server_node()).id);
  return s;
}

// inner=ring or hierarchical: dense all-reduce of the common rows, all-gather of the rest.
Schedule build_over_allreduce(const StrategyContext& ctx, std::shared_ptr<const SampledRows> rows, bool hierarchical) {
  Schedule s = start_schedule("sampled", ctx);
  const int n = s.workers;
  s.expected = rows->expected;
  if (n == 1) return s;  // one rank: nothing to exchange
  const std::uint64_t S = s.gradient_bytes;
  const std::uint64_t common_bytes = total_bytes(rows->common_slices);
  const std::vector<int> order = ring_of_ranks(ctx);

  // Scratch: the packed common rows, then one block per rank: its extra rows' values, then
  // their indices (4 bytes a row).
  auto block_at = std::make_shared<std::vector<std::uint64_t>>();
  auto block_bytes = std::make_shared<std::vector<std::uint64_t>>();
  std::uint64_t at = S + common_bytes;
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    block_at->push_back(at);
    block_bytes->push_back(total_bytes(rows->extra_per_rank[i]) + 4 * rows->extra_rows_per_rank[i]);
    at += block_bytes->back();
  }
  s.scratch_bytes = at - S;

  s.rounds.push_back(Round{"pack", "pack", [rows, S, n, block_at](int p, std::vector<Op>& out) {
                             if (p >= n) return;
                             pack(rows->common_slices, S, false, out);
                             pack(rows->extra_per_rank[static_cast<std::size_t>(p)], (*block_at)[static_cast<std::size_t>(p)], false, out);
                           }});
  // 1. The common rows, densely.
  if (common_bytes > 0) {
    const Region region{S, common_bytes / static_cast<std::uint64_t>(ctx.element_bytes), ctx.element_bytes};
    if (hierarchical) {
      const Rings groups = groups_of_ranks(ctx);
      add_hierarchical_allreduce(s, groups, region);
      s.notes.push_back(describe_groups(ctx, groups));
    } else {
      add_ring_allreduce(s, {order}, region);
    }
  }
  // 2. Every rank's extra rows (values and indices) to every rank: a ring all-gather of
  //    blocks of different lengths.
  auto ring = std::make_shared<const std::vector<int>>(order);
  auto position = std::make_shared<std::vector<int>>(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) (*position)[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])] = j;
  for (int i = 0; i + 1 < n; ++i) {
    s.rounds.push_back(Round{"rows all-gather", "", [=](int p, std::vector<Op>& out) {
                               if (p >= n) return;
                               const int j = (*position)[static_cast<std::size_t>(p)];
                               const int next = (*ring)[static_cast<std::size_t>((j + 1) % n)];
                               const int prev = (*ring)[static_cast<std::size_t>((j + n - 1) % n)];
                               const auto mine = static_cast<std::size_t>((*ring)[static_cast<std::size_t>((j - i + n) % n)]);
                               const auto theirs = static_cast<std::size_t>((*ring)[static_cast<std::size_t>((j - i - 1 + 2 * n) % n)]);
                               if ((*block_bytes)[mine] > 0) out.push_back(Op::send(next, Slice{(*block_at)[mine], (*block_bytes)[mine]}));
                               if ((*block_bytes)[theirs] > 0) out.push_back(Op::recv(prev, Slice{(*block_at)[theirs], (*block_bytes)[theirs]}));
                             }});
  }
  // 3. Unpack the common rows; rows this rank did not send start from the first sender's
  //    values (same round: different bytes). Then add the other senders' values. Every rank
  //    walks every run, so the runs are laid out flat once (each sender's place in the scratch
  //    beside it) and each rank keeps the runs it sent in order: the walk reads memory in
  //    sequence instead of two small vectors a run.
  struct FlatRuns {
    std::vector<Slice> slice;           // per run
    std::vector<std::size_t> first;     // per run, and one past the last: its senders in `who` / `from`
    std::vector<int> who;               // the senders, ascending within a run
    std::vector<std::uint64_t> from;    // where each sender's values of the run lie in the scratch
    std::vector<std::vector<std::size_t>> sent;  // per rank: the runs it sent, ascending
  };
  auto flat = std::make_shared<FlatRuns>();
  flat->sent.resize(static_cast<std::size_t>(n));
  for (std::size_t r = 0; r < rows->extra_runs.size(); ++r) {
    const auto& run = rows->extra_runs[r];
    flat->slice.push_back(run.slice);
    flat->first.push_back(flat->who.size());
    for (std::size_t c = 0; c < run.contributors.size(); ++c) {
      const auto rank = static_cast<std::size_t>(run.contributors[c]);
      flat->who.push_back(run.contributors[c]);
      flat->from.push_back((*block_at)[rank] + run.packed_at[c]);
      flat->sent[rank].push_back(r);
    }
  }
  flat->first.push_back(flat->who.size());
  s.rounds.push_back(Round{"unpack", "unpack", [=](int p, std::vector<Op>& out) {
                             if (p >= n) return;
                             pack(rows->common_slices, S, true, out);
                             const auto& sent = flat->sent[static_cast<std::size_t>(p)];
                             std::size_t k = 0;
                             for (std::size_t r = 0; r < flat->slice.size(); ++r) {
                               if (k < sent.size() && sent[k] == r) {
                                 ++k;
                                 continue;
                               }
                               out.push_back(Op::copy(Slice{flat->from[flat->first[r]], flat->slice[r].bytes}, flat->slice[r]));
                             }
                           }});
  s.rounds.push_back(Round{"add rows", "reduce", [=](int p, std::vector<Op>& out) {
                             if (p >= n) return;
                             const auto& sent = flat->sent[static_cast<std::size_t>(p)];
                             std::size_t k = 0;
                             for (std::size_t r = 0; r < flat->slice.size(); ++r) {
                               const bool mine = k < sent.size() && sent[k] == r;
                               if (mine) ++k;
                               for (std::size_t c = flat->first[r] + (mine ? 0 : 1); c < flat->first[r + 1]; ++c) {
                                 if (flat->who[c] != p) out.push_back(Op::reduce(Slice{flat->from[c], flat->slice[r].bytes}, flat->slice[r]));
                               }
                             }
                           }});
  return s;
}

}  // namespace sampled_strategy

namespace sampled_strategy {

Strategy definition() {
  Strategy s;
  s.name = "sampled";
  s.summary =
      "sampling-based transfer: only the rows V_base ∪ V_α ∪ V_β of row-structured layers, over ps, ring or "
      "hierarchical all-reduce, optionally at a lower rate behind slow links (source A and its future work)";
  s.source = "A";
  s.order = 50;
  ParamSpec rates{"rates", "1",
                  "per-rank sampling rate scaling alpha and beta (never V_base): 1 (every rank the same), a list "
                  "r0,r1,... in [0, 1], or auto (lower behind slow links so that every rank's exchange with the "
                  "server over its own path takes as long as the quickest rank's; with ring or hierarchical, 1)",
                  real_domain(0, 1)};
  rates.domain.kind = ParamDomain::Kind::per_rank;
  rates.domain.words = {"1"};
  rates.domain.allows_auto = true;
  // Per-link rates only change anything where each rank has its own path to a server.
  rates.search = [](const ParamContext& c) {
    return c.inner && c.inner->uses_server ? std::vector<std::string>{"1", "auto"} : std::vector<std::string>{};
  };
  s.params = {inner_param("ps", "how the sampled rows travel: ps (each rank its own rows, through a server), ring or "
                                "hierarchical (the rows every rank sends all-reduced densely, each rank's other rows "
                                "all-gathered with their indices)"),
              {"alpha", "0.05", "fraction of rows that are the most frequent words (V_α), sent by every rank",
               real_domain(0, 1, true, true, 0.3)},
              {"beta", "0.01", "fraction of rows drawn at random with a shared seed (V_β), sent by every rank",
               real_domain(0, 1, true, true, 0.3)},
              {"base", "auto", "words of a rank's minibatch (V_base, drawn from a Zipf law); auto: the workload's minibatch size",
               integer_domain(0, kMaxSampledWords, 300, true)},
              {"seed", "1", "seed of the random rows and of the minibatch draws", integer_domain(0, 2147483647)},
              // Generators stay at 512 rows: every row is a transfer per rank to build and prove.
              {"rows", "1000", "rows of the buffer when there is no workload (one row-structured layer)",
               integer_domain(1, kMaxSampledRows, 512)},
              rates};
  s.inners = {{"ring"}, {"hierarchical"}, {"ps"}};  // in the order a search tries them
  s.changes_training = [](const ResultRecord&) { return std::string("sends only the sampled rows"); };
  s.samples_minibatch_rows = true;
  s.test_variants = {{{"inner=ps", "rows=50"}}, {{"inner=ring", "rows=50", "alpha=0.1", "beta=0.1"}}};
  // Source A gives no closed form for sampling.
  s.build = [](const StrategyContext& ctx) {
        const Strategy& inner = inner_strategy(ctx);
        SamplingParams p = sampling_params(ctx);
        const std::string& rates = ctx.params.text("rates");
        std::string rates_text;
        if (rates == "auto") {
          if (inner.name == "ps") {
            p.rates = balanced_rates(ctx, p);
            rates_text = rates_note(p.rates) + " (auto: every rank's exchange over its own path as quick as the quickest rank's)";
          } else {
            rates_text = "rates: 1 for every rank (auto: a ring carries every rank's rows over every link)";
          }
        } else if (rates != "1") {
          p.rates = given_rates(ctx, rates);
          rates_text = rates_note(p.rates);
        }
        auto rows = std::make_shared<const SampledRows>(sample_rows(ctx.elements, ctx.element_bytes, ctx.workload, ctx.N(), p));
        Schedule s = inner.name == "ps" ? build_over_ps(ctx, rows) : build_over_allreduce(ctx, rows, inner.name == "hierarchical");
        char text[240];
        const double per_rank = rows->rows_per_rank.empty() ? 0.0
            : static_cast<double>(std::accumulate(rows->rows_per_rank.begin(), rows->rows_per_rank.end(), 0ULL)) /
                  static_cast<double>(rows->rows_per_rank.size());
        auto percent = [&](std::uint64_t v) {
          return rows->rows_total ? 100.0 * static_cast<double>(v) / static_cast<double>(rows->rows_total) : 0.0;
        };
        if (inner.name == "ps") {
          std::snprintf(text, sizeof text, "rows: %llu of %llu in the union (%.1f %%), %.1f per rank on average",
                        static_cast<unsigned long long>(rows->rows_in_union), static_cast<unsigned long long>(rows->rows_total),
                        percent(rows->rows_in_union), per_rank);
        } else {
          std::snprintf(text, sizeof text,
                        "rows: %llu of %llu all-reduced densely (%.1f %%), %.1f per rank on average, the rest all-gathered",
                        static_cast<unsigned long long>(rows->rows_common), static_cast<unsigned long long>(rows->rows_total),
                        percent(rows->rows_common), per_rank);
        }
        s.notes.push_back(text);
        if (!rates_text.empty()) s.notes.push_back(rates_text);
        return s;
      };
  return s;
}

const Registration registered(definition());

}  // namespace sampled_strategy

}  // namespace gradsync::models::strategies
