#include "models/strategies/nccl/pipeline.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <tuple>

namespace gradsync::models::nccl {

namespace {

template <class T>
std::size_t ix(T v) {
  return static_cast<std::size_t>(v);
}

Op engined(Op op, const Engine& e) {
  op.payload_share = e.payload_share;
  op.max_Bps = e.max_Bps;
  return op;
}

Op routed(Op op, const Via& via) {
  op.via = via;
  return op;
}

Via reversed(const Via& v) { return {v[1], v[0]}; }

}  // namespace

void add_channel_rings(Schedule& s, const std::vector<std::vector<int>>& rings, Region region, const Engine& engine,
                       const std::string& prefix, RingHalves halves, const std::vector<std::vector<Via>>& vias) {
  if (rings.empty()) return;
  const int n = static_cast<int>(rings.front().size());
  const int channels = static_cast<int>(rings.size());
  if (n < 2 || region.elements == 0) return;
  if (region.elements % (static_cast<std::uint64_t>(channels) * static_cast<std::uint64_t>(n)) != 0) {
    throw std::logic_error("add_channel_rings: the region is not a whole number of blocks per channel");
  }
  const std::uint64_t block = region.elements / (static_cast<std::uint64_t>(channels) * static_cast<std::uint64_t>(n));
  const std::uint64_t block_bytes = block * static_cast<std::uint64_t>(region.element_bytes);
  // position[c][p]: where participant p stands on ring c.
  auto position = std::make_shared<std::vector<std::vector<int>>>(ix(channels), std::vector<int>(ix(s.participant_count()), -1));
  auto order = std::make_shared<const std::vector<std::vector<int>>>(rings);
  for (int c = 0; c < channels; ++c) {
    for (int j = 0; j < n; ++j) (*position)[ix(c)][ix(rings[ix(c)][ix(j)])] = j;
  }
  auto hop = std::make_shared<const std::vector<std::vector<Via>>>(vias);
  auto via = [hop](int c, int j) { return ix(c) < hop->size() && ix(j) < (*hop)[ix(c)].size() ? (*hop)[ix(c)][ix(j)] : kNoVia; };
  auto slice = [region, block, block_bytes, n](int channel, int b) {
    const std::uint64_t at = (static_cast<std::uint64_t>(channel) * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(b)) * block;
    return Slice{region.base + at * static_cast<std::uint64_t>(region.element_bytes), block_bytes};
  };
  for (int half = 0; half < 2; ++half) {
    const bool gather = half == 1;
    if ((gather && halves == RingHalves::reduce_scatter) || (!gather && halves == RingHalves::all_gather)) continue;
    const int first = static_cast<int>(s.rounds.size());
    for (int step = 0; step < n - 1; ++step) {
      Round round{prefix + (gather ? "all-gather" : "reduce-scatter"), "step latency",
                  [=](int p, std::vector<Op>& out) {
                    if (ix(p) >= (*position)[0].size() || (*position)[0][ix(p)] < 0) return;
                    for (int c = 0; c < channels; ++c) {
                      const std::vector<int>& ring = (*order)[ix(c)];
                      const int j = (*position)[ix(c)][ix(p)];
                      const int next = ring[ix((j + 1) % n)], prev = ring[ix((j + n - 1) % n)];
                      const int sent = gather ? (j + 1 - step + 2 * n) % n : (j - step + 2 * n) % n;
                      const int got = gather ? (j - step + 2 * n) % n : (j - step - 1 + 2 * n) % n;
                      out.push_back(routed(engined(Op::send(next, slice(c, sent)), engine), via(c, j)));
                      out.push_back(routed(engined(gather ? Op::recv(prev, slice(c, got)) : Op::recv_reduce(prev, slice(c, got)), engine),
                                           via(c, (j + n - 1) % n)));
                    }
                    if (engine.step_s > 0) out.push_back(Op::compute(engine.step_s));
                  }};
      if (step > 0) round.same_as = first;
      s.rounds.push_back(std::move(round));
    }
  }
  if (halves == RingHalves::both) return;
  // One half alone: who holds each block (reduce-scatter) or gave it (all-gather).
  for (int c = 0; c < channels; ++c) {
    const Region part{slice(c, 0).offset, block * static_cast<std::uint64_t>(n), region.element_bytes};
    for (ExpectedRegion& e : strategies::ring_half_expected(rings[ix(c)], part, halves == RingHalves::reduce_scatter)) {
      s.expected.push_back(std::move(e));
    }
  }
}

void add_channel_chains(Schedule& s, const std::vector<std::vector<int>>& chains, Region region, int chunks, bool up,
                        const Engine& engine, const std::string& phase, const std::function<bool(int, int)>& local,
                        const std::vector<std::vector<Via>>& vias) {
  if (chains.empty() || region.elements == 0) return;
  const int n = static_cast<int>(chains.front().size());
  const auto channels = static_cast<std::uint64_t>(chains.size());
  if (n < 2) return;
  if (region.elements % channels != 0) throw std::logic_error("add_channel_chains: the region is not a whole number of elements per chain");
  const std::uint64_t part = region.elements / channels;
  chunks = static_cast<int>(std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, chunks)), 1, part));
  // Chunk c of every part: the first `extra` chunks one element longer.
  const std::uint64_t per = part / static_cast<std::uint64_t>(chunks), extra = part % static_cast<std::uint64_t>(chunks);
  auto chunk = [region, part, per, extra](int channel, int c) {
    const auto k = static_cast<std::uint64_t>(c);
    const std::uint64_t at = static_cast<std::uint64_t>(channel) * part + k * per + std::min(k, extra);
    const std::uint64_t elements = per + (k < extra ? 1 : 0);
    return Slice{region.base + at * static_cast<std::uint64_t>(region.element_bytes), elements * static_cast<std::uint64_t>(region.element_bytes)};
  };
  // position[c][p]: where participant p stands on chain c.
  auto position = std::make_shared<std::vector<std::vector<int>>>(ix(channels), std::vector<int>(ix(s.participant_count()), -1));
  auto order = std::make_shared<const std::vector<std::vector<int>>>(chains);
  for (std::size_t c = 0; c < chains.size(); ++c) {
    for (int j = 0; j < n; ++j) (*position)[c][ix(chains[c][ix(j)])] = j;
  }
  const int rounds = chunks + n - 2;
  // Every position moves the chunks r - (n - 2) .. r in a steady round r (down: position p sends
  // chunk r - p and gets r - p + 1; up, from the other end, alike): rounds whose window lies in
  // the longer chunks, or in the shorter, cost alike.
  int first_long = -1, first_short = -1;
  // near[c][j]: chain c's edge between positions j and j + 1 stays within a host.
  auto near = std::make_shared<std::vector<std::vector<bool>>>(ix(channels), std::vector<bool>(ix(n), false));
  if (local && engine.local_max_Bps > 0) {
    for (std::size_t c = 0; c < chains.size(); ++c) {
      for (int j = 0; j + 1 < n; ++j) (*near)[c][ix(j)] = local(chains[c][ix(j)], chains[c][ix(j + 1)]);
    }
  }
  auto edge = std::make_shared<const std::vector<std::vector<Via>>>(vias);
  for (int r = 0; r < rounds; ++r) {
    Round round{phase, "step latency", [=](int q, std::vector<Op>& out) {
                  if (ix(q) >= (*position)[0].size() || (*position)[0][ix(q)] < 0) return;
                  // A transfer over chain c's edge j (positions j, j + 1), at its engine, through
                  // the edge's nodes (the way it goes: up from j + 1 to j).
                  auto moved = [&](Op op, std::size_t c, int j) {
                    op = engined(op, engine);
                    if ((*near)[c][ix(j)]) op.max_Bps = engine.local_max_Bps;
                    if (c < edge->size() && ix(j) < (*edge)[c].size()) op.via = up ? reversed((*edge)[c][ix(j)]) : (*edge)[c][ix(j)];
                    out.push_back(op);
                  };
                  for (std::size_t c = 0; c < order->size(); ++c) {
                    const std::vector<int>& chain = (*order)[c];
                    const int at = (*position)[c][ix(q)];
                    const int channel = static_cast<int>(c);
                    if (up) {
                      const int sent = r - (n - 1 - at);  // to at - 1
                      if (at > 0 && sent >= 0 && sent < chunks) moved(Op::send(chain[ix(at - 1)], chunk(channel, sent)), c, at - 1);
                      const int got = r - (n - 2 - at);  // from at + 1
                      if (at < n - 1 && got >= 0 && got < chunks) moved(Op::recv_reduce(chain[ix(at + 1)], chunk(channel, got)), c, at);
                    } else {
                      const int sent = r - at;  // to at + 1
                      if (at < n - 1 && sent >= 0 && sent < chunks) moved(Op::send(chain[ix(at + 1)], chunk(channel, sent)), c, at);
                      const int got = r - (at - 1);  // from at - 1
                      if (at > 0 && got >= 0 && got < chunks) moved(Op::recv(chain[ix(at - 1)], chunk(channel, got)), c, at - 1);
                    }
                  }
                  if (engine.step_s > 0) out.push_back(Op::compute(engine.step_s));
                }};
    const int lo = r - (n - 2), hi = r;  // the chunks a steady round moves
    if (lo >= 0 && hi < chunks) {
      const bool longer = static_cast<std::uint64_t>(hi) < extra, shorter = static_cast<std::uint64_t>(lo) >= extra;
      int& first = longer ? first_long : first_short;
      if (longer || shorter) {
        if (first < 0) {
          first = static_cast<int>(s.rounds.size());
        } else {
          round.same_as = first;
        }
      }
    }
    s.rounds.push_back(std::move(round));
  }
}

double chain_chunk_times(const std::vector<std::vector<int>>& chains, int chunks, bool up, double local_speedup,
                         const std::function<bool(int, int)>& local) {
  if (chains.empty() || chains.front().size() < 2) return 0;
  const int n = static_cast<int>(chains.front().size());
  chunks = std::max(1, chunks);
  // Edge j moves chunk r - j in round r down the chain, r - (n - 2 - j) up it: a round is slow
  // while some edge between hosts is at work.
  std::vector<bool> slow(ix(chunks + n - 2), false);
  for (const std::vector<int>& chain : chains) {
    for (int j = 0; j + 1 < n; ++j) {
      if (local && local(chain[ix(j)], chain[ix(j + 1)])) continue;
      const int first = up ? n - 2 - j : j;
      for (int r = first; r < first + chunks; ++r) slow[ix(r)] = true;
    }
  }
  double times = 0;
  for (bool s : slow) times += s ? 1.0 : 1.0 / std::max(1.0, local_speedup);
  return times;
}

namespace {

struct Shape {
  std::vector<int> height, depth;
  int root = -1;
  int top = 0;     // the root's height
  int deepest = 0; // the largest depth
};

Shape shape_of(const PipelinedTree& t) {
  Shape sh;
  const std::size_t n = t.nodes.size();
  // Each node's children, in node order, as one array (first[v] .. first[v + 1]): a tree of
  // the 8,192-GPU cluster has 9,216 nodes, and a list each was most of the time spent here.
  std::vector<int> first(n + 1, 0), children(n);
  for (std::size_t v = 0; v < n; ++v) {
    const int parent = t.nodes[v].parent;
    if (parent < 0) {
      if (sh.root >= 0) throw std::logic_error("pipelined tree with two roots");
      sh.root = static_cast<int>(v);
    } else {
      if (t.nodes[ix(parent)].participant == t.nodes[v].participant) throw std::logic_error("pipelined tree edge within a participant");
      ++first[ix(parent) + 1];
    }
  }
  if (sh.root < 0) throw std::logic_error("pipelined tree without a root");
  for (std::size_t v = 0; v < n; ++v) first[v + 1] += first[v];
  {
    std::vector<int> next(first.begin(), first.end() - 1);
    for (std::size_t v = 0; v < n; ++v) {
      const int parent = t.nodes[v].parent;
      if (parent >= 0) children[ix(next[ix(parent)]++)] = static_cast<int>(v);
    }
  }
  // Depths from the root (breadth first), heights from the deepest nodes up.
  sh.depth.assign(n, -1);
  sh.height.assign(n, 0);
  std::vector<int> order;
  order.reserve(n);
  order.push_back(sh.root);
  sh.depth[ix(sh.root)] = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int v = order[i];
    for (int k = first[ix(v)]; k < first[ix(v) + 1]; ++k) {
      const int c = children[ix(k)];
      sh.depth[ix(c)] = sh.depth[ix(v)] + 1;
      order.push_back(c);
    }
  }
  if (order.size() != n) throw std::logic_error("pipelined tree with nodes off the root's tree");
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int v = *it;
    sh.deepest = std::max(sh.deepest, sh.depth[ix(v)]);
    const int parent = t.nodes[ix(v)].parent;
    if (parent >= 0) sh.height[ix(parent)] = std::max(sh.height[ix(parent)], sh.height[ix(v)] + 1);
  }
  sh.top = sh.height[ix(sh.root)];
  return sh;
}

// One end of a tree edge, as a participant sees it in a round.
struct Entry {
  int tree = 0;
  int down = 0;   // 0: the up phase, 1: the down phase
  int node = 0;   // the edge's child node
  bool sends = false;
  int peer = 0;
  int offset = 0;  // the chunk moved at round r is r - offset
  bool replaces = false;
  bool local = false;
  Via via = kNoVia;  // as the transfer goes (sender's side first)
};

}  // namespace

int pipelined_rounds(const std::vector<PipelinedTree>& trees, int chunks) {
  int span = 0;
  for (const PipelinedTree& t : trees) {
    const Shape sh = shape_of(t);
    span = std::max(span, sh.top + sh.deepest);
  }
  return trees.empty() ? 0 : chunks + span - 1;
}

double pipelined_chunk_times(const std::vector<PipelinedTree>& trees, int chunks, double local_speedup) {
  if (trees.empty() || chunks < 1) return 0;
  // The rounds in which an edge between hosts is busy: [offset, offset + chunks) for each such
  // edge's offset, up (its child's height) and down (the root's height + its parent's depth).
  std::vector<int> offsets;
  int span = 0;
  for (const PipelinedTree& t : trees) {
    const Shape sh = shape_of(t);
    span = std::max(span, sh.top + sh.deepest);
    for (std::size_t v = 0; v < t.nodes.size(); ++v) {
      if (t.nodes[v].parent < 0 || t.nodes[v].local) continue;
      offsets.push_back(sh.height[v]);
      offsets.push_back(sh.top + sh.depth[ix(t.nodes[v].parent)]);
    }
  }
  const int rounds = chunks + span - 1;
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  int covered = 0, reached = 0;  // rounds [0, reached) counted
  for (int o : offsets) {
    const int from = std::max(o, reached), to = std::min(o + chunks, rounds);
    if (to > from) covered += to - from;
    reached = std::max(reached, to);
  }
  return covered + (rounds - covered) / std::max(1.0, local_speedup);
}

void add_pipelined_trees(Schedule& s, const std::vector<PipelinedTree>& trees, int chunks, const Engine& engine,
                         const std::string& phase) {
  if (trees.empty() || chunks < 1) return;
  auto entries = std::make_shared<std::vector<std::vector<Entry>>>(ix(s.participant_count()));
  int span = 0;
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const PipelinedTree& tree = trees[t];
    if (tree.region.elements < static_cast<std::uint64_t>(chunks)) throw std::logic_error("pipelined tree: fewer elements than chunks");
    const Shape sh = shape_of(tree);
    span = std::max(span, sh.top + sh.deepest);
    for (std::size_t v = 0; v < tree.nodes.size(); ++v) {
      const int parent = tree.nodes[v].parent;
      if (parent < 0) continue;
      const int child_p = tree.nodes[v].participant, parent_p = tree.nodes[ix(parent)].participant;
      const int up = sh.height[v];                           // chunk k goes up at k + the child's height
      const int down = sh.top + sh.depth[ix(parent)];         // and down at k + the root's height + the parent's depth
      const bool replaces = tree.nodes[v].replaces, local = tree.nodes[v].local;
      const Via via = tree.nodes[v].via, back = reversed(via);
      (*entries)[ix(child_p)].push_back({static_cast<int>(t), 0, static_cast<int>(v), true, parent_p, up, false, local, via});
      (*entries)[ix(parent_p)].push_back({static_cast<int>(t), 0, static_cast<int>(v), false, child_p, up, replaces, local, via});
      (*entries)[ix(parent_p)].push_back({static_cast<int>(t), 1, static_cast<int>(v), true, child_p, down, false, local, back});
      (*entries)[ix(child_p)].push_back({static_cast<int>(t), 1, static_cast<int>(v), false, parent_p, down, false, local, back});
    }
  }
  // Both ends of every edge list it in the same order: sends and receives between two
  // participants match in FIFO order.
  for (auto& list : *entries) {
    std::sort(list.begin(), list.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.tree, a.down, a.node) < std::tie(b.tree, b.down, b.node);
    });
  }
  struct Part {
    std::uint64_t base = 0, chunk = 0, last = 0;  // bytes
  };
  auto parts = std::make_shared<std::vector<Part>>();
  for (const PipelinedTree& tree : trees) {
    const std::uint64_t eb = static_cast<std::uint64_t>(tree.region.element_bytes);
    const std::uint64_t per = tree.region.elements / static_cast<std::uint64_t>(chunks);
    parts->push_back({tree.region.base, per * eb, (tree.region.elements - per * static_cast<std::uint64_t>(chunks - 1)) * eb});
  }
  // Each participant's entries' offsets: its ops change from one round to the next only where
  // an entry starts (r = offset), reaches its last chunk (offset + chunks - 1) or ends.
  auto offsets = std::make_shared<std::vector<std::vector<int>>>(entries->size());
  for (std::size_t p = 0; p < entries->size(); ++p) {
    std::vector<int>& o = (*offsets)[p];
    for (const Entry& e : (*entries)[p]) o.push_back(e.offset);
    std::sort(o.begin(), o.end());
    o.erase(std::unique(o.begin(), o.end()), o.end());
  }
  const int rounds = chunks + span - 1;
  const int steady_first = span - 1, steady_last = chunks - 2;
  for (int r = 0; r < rounds; ++r) {
    Round round{phase, "step latency", [=](int p, std::vector<Op>& out) {
                  if (ix(p) >= entries->size() || (*entries)[ix(p)].empty()) return;
                  for (const Entry& e : (*entries)[ix(p)]) {
                    const int k = r - e.offset;
                    if (k < 0 || k >= chunks) continue;
                    const Part& part = (*parts)[ix(e.tree)];
                    const Slice slice{part.base + static_cast<std::uint64_t>(k) * part.chunk, k == chunks - 1 ? part.last : part.chunk};
                    Op op = e.sends ? Op::send(e.peer, slice)
                            : (e.down || e.replaces) ? Op::recv(e.peer, slice)
                                                     : Op::recv_reduce(e.peer, slice);
                    op = routed(engined(op, engine), e.via);
                    if (e.local && engine.local_max_Bps > 0) op.max_Bps = engine.local_max_Bps;
                    out.push_back(op);
                  }
                  if (engine.step_s > 0) out.push_back(Op::compute(engine.step_s));
                }};
    if (r > steady_first && r <= steady_last) {
      round.same_as = static_cast<int>(s.rounds.size()) - (r - steady_first);
    } else if (r > 0) {
      round.same_ops_as_previous = [=](int p) {
        if (ix(p) >= offsets->size()) return true;  // no ops in either round
        const std::vector<int>& o = (*offsets)[ix(p)];
        auto at = [&o](int x) { return std::binary_search(o.begin(), o.end(), x); };
        return !at(r) && !at(r - chunks + 1) && !at(r - chunks);
      };
    }
    s.rounds.push_back(std::move(round));
  }
}

}  // namespace gradsync::models::nccl
