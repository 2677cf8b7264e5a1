// 1-bit SGD (source D): every gradient value goes on the wire as one bit, plus a pair
// of scales (the means of the positive and the negative values) per column; the
// quantisation error stays behind as a residual added to the next minibatch's gradient
// (error feedback). It wraps another strategy: every transfer of the wrapped schedule
// carries the quantised payload, with a quantise before each send and a dequantise
// after each receive (their cost is counted like a pass over the data).
#include <memory>

#include "models/support/error.h"
#include "models/schedule/kernels.h"
#include "models/strategies/common.h"
#include "models/executors/result.h"
#include "models/support/units.h"

namespace gradsync::models::strategies {

namespace onebit_strategy {

std::uint64_t column_length(const StrategyContext& ctx) {
  if (!ctx.params.is_auto("column")) return static_cast<std::uint64_t>(ctx.params.integer("column"));
  // A column of the largest row-structured matrix (its height: the number of rows).
  std::uint64_t best = 0, best_params = 0;
  if (ctx.workload) {
    for (const auto& l : ctx.workload->layers) {
      if (l.rows && static_cast<std::uint64_t>(l.params) > best_params) {
        best_params = static_cast<std::uint64_t>(l.params);
        best = static_cast<std::uint64_t>(*l.rows);
      }
    }
  }
  return best ? best : 1024;
}

// Seconds to 1-bit quantise (or dequantise) one byte on `node`: the quantize_GBps
// parameter, else the measured rate of that GPU (device_quantize_GBps, slowed as the
// measurement saw it slow down with the run's ranks at work at once), else its reduction rate.
double quantize_s_per_byte_at(const StrategyContext& ctx, std::size_t node) {
  if (!ctx.params.is_auto("quantize_GBps")) return 1.0 / GBps_to_Bps(ctx.params.number("quantize_GBps"));
  const auto& m = ctx.topology.measured();
  if (m && m->device_quantize_Bps && ctx.topology.node(node).kind == NodeKind::gpu) {
    for (std::size_t i = 0; i < m->gpus.size(); ++i) {
      if (m->gpus[i] == ctx.topology.node(node).id) return ctx.colocation_slowdown(true) / (*m->device_quantize_Bps)[i];
    }
  }
  return ctx.reduce_s_per_byte_at(node);
}

Strategy definition() {
  Strategy s;
  s.name = "onebit";
  s.summary = "1-bit SGD: 1 bit per value plus per-column scales, error feedback; wraps ring, ps, hierarchical or ps_hra";
  s.source = "D";
  s.order = 60;
  s.params = {inner_param("ring", "the strategy whose transfers carry the quantised payload: ring, ps, hierarchical, ps_hra"),
              {"bits", "1", "bits per value: 1 (1-bit SGD) or 32 (no quantisation, CNTK's num_quantization_bits)",
               word_domain({"1", "32"})},
              {"feedback", "on",
               "error feedback: on (the quantisation error is added to the next minibatch's gradient, source D) or off "
               "(it is lost: the ablation source D says loses accuracy)",
               word_domain({"on", "off"})},
              {"column", "auto", "values sharing one pair of scales; auto: a column of the workload's largest matrix, else 1024",
               integer_domain(1, 2147483647, 4096, true)},
              {"quantize_GBps", "auto",
               "rate of 1-bit quantisation or dequantisation, in GB/s of values; auto: the measured rate when the topology "
               "has one (device_quantize_GBps), else the reduction rate",
               rate_domain(true)}};
  s.params.back().shown = ParamSpec::Shown::never;
  s.inners = {{"ring"}, {"hierarchical"}, {"ps"}, {"ps_hra", false}};  // in the order a search tries them
  s.changes_training = [](const ResultRecord& r) {
    const auto bits = r.params.find("bits");
    if (bits != r.params.end() && bits->second == "32") return std::string();
    const auto feedback = r.params.find("feedback");
    return feedback != r.params.end() && feedback->second == "off" ? std::string("sends 1-bit gradients (no error feedback)")
                                                                   : std::string("sends 1-bit gradients (error feedback)");
  };
  s.test_variants = {{{"inner=ring"}}, {{"inner=ps"}}, {{"inner=hierarchical", "grouping=order"}},
                     {{"inner=ps_hra", "grouping=order"}}};
  // The source documents give no closed form.
  s.build = [](const StrategyContext& ctx) {
    const Strategy& inner = inner_strategy(ctx);
    const int bits = std::stoi(ctx.params.word("bits"));
    Schedule s = inner.build(ctx);
    s.strategy = "onebit";
    if (bits == 32) return s;
    for (Participant& p : s.participants) p.costs.codec_s_per_byte = quantize_s_per_byte_at(ctx, p.node);
    const std::uint64_t column = column_length(ctx);
    const int eb = s.element_bytes;
    const bool feedback = ctx.params.word("feedback") == "on";
    const auto encoding = std::make_shared<const Encoding>(Encoding{&one_bit_codec(), column, feedback});
    for (Round& round : s.rounds) {
      RoundOps inner_ops = std::move(round.ops);
      round.ops = [inner_ops, eb, encoding](int p, std::vector<Op>& out) {
        const std::size_t first = out.size();
        inner_ops(p, out);
        for (std::size_t i = first; i < out.size(); ++i) {
          if (out[i].is_transfer()) out[i].encode_with(*encoding, eb);
        }
      };
      if (round.compute_phase.empty()) round.compute_phase = "quantise";
    }
    s.notes.push_back("1 bit per value, 2 scales per " + std::to_string(column) + " values, wrapping " + inner.name +
                      (feedback ? "" : "; no error feedback: what quantising loses is lost"));
    return s;
  };
  return s;
}

const Registration registered(definition());

}  // namespace onebit_strategy

}  // namespace gradsync::models::strategies
