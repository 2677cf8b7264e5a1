// Sampling-based transfer (source A): only the rows V_base ∪ V_α ∪ V_β of the
// row-structured layers are synchronised (models/sampling.h), through a parameter
// server (each rank sends its own rows, the server sends back every row anyone sent)
// or a ring (ranks first all-gather their row indices, then all-reduce the union of
// rows packed into one buffer). Rows are packed into scratch space before sending and
// unpacked after, as a real implementation must.
#include <memory>
#include <numeric>

#include "models/error.h"
#include "models/sampling.h"
#include "models/strategies/common.h"
#include "models/strategies/registry.h"

namespace gradsync::models::strategies {

namespace {

SamplingParams sampling_params(const StrategyContext& ctx) {
  SamplingParams p;
  p.alpha = ctx.params.number("alpha", 0, true);
  p.beta = ctx.params.number("beta", 0, true);
  if (p.alpha > 1 || p.beta > 1) throw InputError("--param alpha, beta: expected fractions of the rows between 0 and 1");
  p.base = ctx.params.is_auto("base") ? ctx.samples_per_minibatch() : ctx.params.integer("base", 0);
  p.seed = static_cast<std::uint64_t>(ctx.params.integer("seed", 0));
  p.rows = ctx.params.integer("rows", 1);
  return p;
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
  const int server = add_server(s, ctx.server_node());
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
  s.expected = rows->expected_for_server_exchange;
  s.notes.push_back("server on " + ctx.topology.node(ctx.server_node()).id);
  return s;
}

Schedule build_over_ring(const StrategyContext& ctx, std::shared_ptr<const SampledRows> rows) {
  Schedule s = start_schedule("sampled", ctx);
  const int n = s.workers;
  const std::uint64_t S = s.gradient_bytes;
  const std::uint64_t union_bytes = total_bytes(rows->union_slices);
  const std::vector<int> order = ring_of_ranks(ctx);

  // 1. Every rank learns every rank's row indices (4 bytes each): a ring all-gather of
  //    lists of different lengths, in scratch after the packed rows.
  auto index_at = std::make_shared<std::vector<std::uint64_t>>();
  auto index_bytes = std::make_shared<std::vector<std::uint64_t>>();
  std::uint64_t at = S + union_bytes;
  for (int r = 0; r < n; ++r) {
    index_at->push_back(at);
    index_bytes->push_back(4 * rows->rows_per_rank[static_cast<std::size_t>(r)]);
    at += index_bytes->back();
  }
  s.scratch_bytes = at - S;
  auto ring = std::make_shared<const std::vector<int>>(order);
  auto position = std::make_shared<std::vector<int>>(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) (*position)[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])] = j;
  for (int i = 0; i + 1 < n; ++i) {
    s.rounds.push_back(Round{"index all-gather", "", [=](int p, std::vector<Op>& out) {
                               if (p >= n) return;
                               const int j = (*position)[static_cast<std::size_t>(p)];
                               const int next = (*ring)[static_cast<std::size_t>((j + 1) % n)];
                               const int prev = (*ring)[static_cast<std::size_t>((j + n - 1) % n)];
                               const auto mine = static_cast<std::size_t>((*ring)[static_cast<std::size_t>((j - i + n) % n)]);
                               const auto theirs = static_cast<std::size_t>((*ring)[static_cast<std::size_t>((j - i - 1 + 2 * n) % n)]);
                               out.push_back(Op::send(next, Slice{(*index_at)[mine], (*index_bytes)[mine]}));
                               out.push_back(Op::recv(prev, Slice{(*index_at)[theirs], (*index_bytes)[theirs]}));
                             }});
  }
  // 2. Pack the union of rows, all-reduce it densely, unpack.
  s.rounds.push_back(Round{"pack", "pack", [rows, S, n](int p, std::vector<Op>& out) {
                             if (p < n) pack(rows->union_slices, S, false, out);
                           }});
  add_ring_allreduce(s, {order}, Region{S, union_bytes / static_cast<std::uint64_t>(ctx.element_bytes), ctx.element_bytes});
  s.rounds.push_back(Round{"unpack", "unpack", [rows, S, n](int p, std::vector<Op>& out) {
                             if (p < n) pack(rows->union_slices, S, true, out);
                           }});
  s.expected = rows->expected_for_union_exchange;
  return s;
}

}  // namespace

const Strategy& sampled() {
  static const Strategy s{
      "sampled",
      "sampling-based transfer: only the rows V_base ∪ V_α ∪ V_β of row-structured layers, over ps or ring (source A)",
      "A",
      {{"inner", "ps", "how the sampled rows travel: ps (each rank its own rows, through a server) or ring (all-reduce "
                       "of the union of rows, after an all-gather of row indices)"},
       {"alpha", "0.05", "fraction of rows that are the most frequent words (V_α), sent by every rank"},
       {"beta", "0.01", "fraction of rows drawn at random with a shared seed (V_β), sent by every rank"},
       {"base", "auto", "words of a rank's minibatch (V_base, drawn from a Zipf law); auto: the workload's minibatch size"},
       {"seed", "1", "seed of the random rows and of the minibatch draws"},
       {"rows", "1000", "rows of the buffer when there is no workload (one row-structured layer)"},
       server_param(),
       ring_order_param()},
      true,
      nullptr,  // source A gives no closed form for sampling
      [](const StrategyContext& ctx) {
        const Strategy& inner = inner_strategy(ctx, "sampled", {"ps", "ring"});
        auto rows = std::make_shared<const SampledRows>(
            sample_rows(ctx.elements, ctx.element_bytes, ctx.workload, ctx.N(), sampling_params(ctx)));
        Schedule s = inner.name == "ps" ? build_over_ps(ctx, rows) : build_over_ring(ctx, rows);
        char text[200];
        std::snprintf(text, sizeof text, "rows: %llu of %llu in the union (%.1f %%), %.1f per rank on average",
                      static_cast<unsigned long long>(rows->rows_in_union), static_cast<unsigned long long>(rows->rows_total),
                      rows->rows_total ? 100.0 * static_cast<double>(rows->rows_in_union) / static_cast<double>(rows->rows_total) : 0.0,
                      rows->rows_per_rank.empty() ? 0.0
                          : static_cast<double>(std::accumulate(rows->rows_per_rank.begin(), rows->rows_per_rank.end(), 0ULL)) /
                                static_cast<double>(rows->rows_per_rank.size()));
        s.notes.push_back(text);
        return s;
      },
  };
  return s;
}

}  // namespace gradsync::models::strategies
