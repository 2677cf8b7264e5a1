#include "runtime/reference.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>

namespace gradsync::runtime {

// Every product and sum below is rounded to float on its own (no fused multiply-add).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

using models::Op;
using models::OpKind;

// One participant: its buffer, the codec's residual, and which values are exactly as a
// received (or sent) payload decoded them.
struct Participant {
  std::vector<float> values;
  std::vector<float> residual;
  std::vector<char> decoded;
};

// A 1-bit payload: one sign per value and, per group, the two values it decodes to.
struct OneBitPayload {
  std::vector<char> non_negative;
  std::vector<float> positive, negative;  // per group
  std::uint64_t group = 1;
  float value(std::size_t i) const { return non_negative[i] ? positive[i / group] : negative[i / group]; }
};

using Message = std::variant<std::vector<float>, OneBitPayload>;

std::size_t first(const models::Slice& s) { return static_cast<std::size_t>(s.offset / 4); }
std::size_t count(const models::Slice& s) { return static_cast<std::size_t>(s.bytes / 4); }

// Source D's 1-bit quantisation with error feedback of x[0, n) (plus `feedback`, when the
// values are not a forwarded payload), in groups of `group` values.
OneBitPayload one_bit_encode(Participant& who, std::size_t at, std::size_t n, std::uint64_t group, bool feedback) {
  OneBitPayload out;
  out.group = group;
  out.non_negative.resize(n);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = who.values[at + i] + (feedback ? who.residual[at + i] : 0.0f);
  for (std::size_t begin = 0; begin < n; begin += group) {
    const std::size_t end = std::min<std::size_t>(n, begin + group);
    double positive = 0, negative = 0;
    std::size_t positives = 0, negatives = 0;
    for (std::size_t i = begin; i < end; ++i) {
      if (v[i] >= 0.0f) {
        positive += v[i];
        ++positives;
      } else {
        negative += v[i];
        ++negatives;
      }
    }
    out.positive.push_back(positives ? static_cast<float>(positive / static_cast<double>(positives)) : 0.0f);
    out.negative.push_back(negatives ? static_cast<float>(negative / static_cast<double>(negatives)) : 0.0f);
  }
  for (std::size_t i = 0; i < n; ++i) {
    out.non_negative[i] = v[i] >= 0.0f;
    if (feedback) who.residual[at + i] = v[i] - out.value(i);
  }
  return out;
}

void apply_kernel(const Op& op, Participant& who) {
  const models::KernelCall& call = *op.call;
  const std::string& name = call.kernel->name;
  const std::size_t at = first(op.slice), n = count(op.slice);
  if (name == "divide") {
    const float divisor = static_cast<float>(call.params.v[0]);
    for (std::size_t i = 0; i < n; ++i) who.values[at + i] = who.values[at + i] / divisor;
    return;
  }
  if (name == "block_momentum") {
    const float momentum = static_cast<float>(call.params.v[0]), rate = static_cast<float>(call.params.v[1]);
    const bool nesterov = call.params.v[2] != 0;
    const std::size_t previous = first(call.operands[0]), delta = first(call.operands[1]);
    for (std::size_t i = 0; i < n; ++i) {
      const float average = who.values[at + i];
      const float gradient = average - who.values[previous + i];
      const float d = momentum * who.values[delta + i] + rate * gradient;
      const float global = who.values[previous + i] + d;
      who.values[delta + i] = d;
      who.values[at + i] = nesterov ? global + momentum * d : global;
      who.values[previous + i] = who.values[at + i];  // the next block starts from it
    }
    return;
  }
  throw std::logic_error("the reference knows no kernel " + name);
}

void set_decoded(Participant& who, const models::Slice& s, bool decoded) {
  std::fill_n(who.decoded.begin() + static_cast<std::ptrdiff_t>(first(s)), count(s), decoded ? 1 : 0);
}

}  // namespace

std::vector<std::vector<float>> reference_run(const models::Schedule& s, const InputFn& input) {
  const int P = s.participant_count();
  const std::size_t words = static_cast<std::size_t>(std::max<std::uint64_t>(4, s.buffer_bytes()) / 4);
  std::vector<Participant> all(static_cast<std::size_t>(P));
  for (int p = 0; p < P; ++p) {
    auto& who = all[static_cast<std::size_t>(p)];
    who.values.assign(words, 0.0f);
    who.residual.assign(words, 0.0f);
    who.decoded.assign(words, 0);
    if (p < s.workers) {
      for (std::uint64_t i = 0; i < s.gradient_bytes / 4; ++i) who.values[i] = input(p, i);
      for (const auto& start : s.state_starts) {
        std::copy_n(who.values.begin() + static_cast<long>(first(start.from)), count(start.state),
                    who.values.begin() + static_cast<long>(first(start.state)));
      }
    }
  }
  std::vector<std::vector<Op>> ops(static_cast<std::size_t>(P));
  for (const auto& round : s.rounds) {
    for (int p = 0; p < P; ++p) {
      ops[static_cast<std::size_t>(p)].clear();
      round.ops(p, ops[static_cast<std::size_t>(p)]);
    }
    // 1. Senders encode (a slice sent to several peers once), keeping what receivers decode.
    std::map<std::pair<int, std::size_t>, Message> sent;
    for (int p = 0; p < P; ++p) {
      auto& who = all[static_cast<std::size_t>(p)];
      const auto& mine = ops[static_cast<std::size_t>(p)];
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const Op& op = mine[i];
        if (op.kind != OpKind::send || !op.encoding) continue;
        if (op.encoding->codec->name != "1bit") throw std::logic_error("the reference knows no codec " + op.encoding->codec->name);
        std::size_t earlier = i;
        for (std::size_t j = 0; j < i && earlier == i; ++j) {
          if (mine[j].kind == OpKind::send && mine[j].slice == op.slice && sent.count({p, j})) earlier = j;
        }
        if (earlier != i) {
          sent[{p, i}] = sent.at({p, earlier});
          continue;
        }
        const std::size_t at = first(op.slice), n = count(op.slice);
        const bool forwarded = std::all_of(who.decoded.begin() + static_cast<std::ptrdiff_t>(at),
                                           who.decoded.begin() + static_cast<std::ptrdiff_t>(at + n), [](char d) { return d; });
        OneBitPayload payload = one_bit_encode(who, at, n, op.encoding->group, op.encoding->error_feedback && !(forwarded && n > 0));
        for (std::size_t k = 0; k < n; ++k) who.values[at + k] = payload.value(k);
        set_decoded(who, op.slice, true);
        sent[{p, i}] = std::move(payload);
      }
    }
    // 2. Every send leaves, in op order per pair (plain ones as the buffer is now).
    std::map<std::pair<int, int>, std::deque<Message>> channel;
    for (int p = 0; p < P; ++p) {
      const auto& mine = ops[static_cast<std::size_t>(p)];
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const Op& op = mine[i];
        if (op.kind != OpKind::send) continue;
        if (op.encoding) {
          channel[{p, op.peer}].push_back(sent.at({p, i}));
        } else {
          const auto& v = all[static_cast<std::size_t>(p)].values;
          const auto begin = v.begin() + static_cast<std::ptrdiff_t>(first(op.slice));
          channel[{p, op.peer}].push_back(std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(count(op.slice))));
        }
      }
    }
    // 3. Receives take their messages in op order; plain ones land during the transfer.
    std::vector<std::vector<Message>> received(static_cast<std::size_t>(P));
    for (int p = 0; p < P; ++p) {
      for (const Op& op : ops[static_cast<std::size_t>(p)]) {
        if (op.kind != OpKind::recv && op.kind != OpKind::recv_reduce) continue;
        auto& queue = channel.at({op.peer, p});
        received[static_cast<std::size_t>(p)].push_back(std::move(queue.front()));
        queue.pop_front();
        if (op.kind == OpKind::recv && !op.encoding) {
          const auto& m = std::get<std::vector<float>>(received[static_cast<std::size_t>(p)].back());
          std::copy(m.begin(), m.end(), all[static_cast<std::size_t>(p)].values.begin() + static_cast<std::ptrdiff_t>(first(op.slice)));
        }
      }
    }
    // 4. Each participant's local work, in op order.
    for (int p = 0; p < P; ++p) {
      auto& who = all[static_cast<std::size_t>(p)];
      std::size_t next = 0;
      for (const Op& op : ops[static_cast<std::size_t>(p)]) {
        const std::size_t at = first(op.slice), n = count(op.slice);
        switch (op.kind) {
          case OpKind::recv:
          case OpKind::recv_reduce: {
            const Message& m = received[static_cast<std::size_t>(p)][next++];
            const bool add = op.kind == OpKind::recv_reduce;
            if (const auto* payload = std::get_if<OneBitPayload>(&m)) {
              for (std::size_t k = 0; k < n; ++k) who.values[at + k] = add ? who.values[at + k] + payload->value(k) : payload->value(k);
              set_decoded(who, op.slice, !add);
            } else {
              if (add) {
                const auto& v = std::get<std::vector<float>>(m);
                for (std::size_t k = 0; k < n; ++k) who.values[at + k] = who.values[at + k] + v[k];
              }
              set_decoded(who, op.slice, false);
            }
            break;
          }
          case OpKind::copy:
            std::memmove(&who.values[at], &who.values[first(op.source)], n * sizeof(float));
            set_decoded(who, op.slice, false);
            break;
          case OpKind::reduce:
            for (std::size_t k = 0; k < n; ++k) who.values[at + k] = who.values[at + k] + who.values[first(op.source) + k];
            set_decoded(who, op.slice, false);
            break;
          case OpKind::kernel:
            apply_kernel(op, who);
            set_decoded(who, op.slice, false);
            for (int k = 0; k < op.call->kernel->operands; ++k) set_decoded(who, op.call->operands[static_cast<std::size_t>(k)], false);
            break;
          case OpKind::send:
          case OpKind::compute: break;
        }
      }
    }
  }
  std::vector<std::vector<float>> out;
  for (auto& who : all) {
    who.values.resize(static_cast<std::size_t>(s.gradient_bytes / 4));
    out.push_back(std::move(who.values));
  }
  return out;
}

}  // namespace gradsync::runtime
