// The two shapes NCCL's all-reduce algorithms move data in, as schedule rounds every executor
// runs: channel rings (each channel a ring over every rank with its own part of the buffer,
// all channels stepping together) and pipelined trees (each tree a part of the buffer cut in
// chunks that flow up the tree, reduced on the way, and back down, one tree edge per round
// and chunk). NCCL's ring, tree (double binary across nodes, chains within), NVLS (the NVSwitch
// reducing), NVLS tree and CollNet are built from them in planned.cpp; the participants of a tree
// may include switches that reduce (servers at an NVSwitch or network switch node).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/schedule/schedule.h"
#include "models/strategies/common.h"

namespace gradsync::models::nccl {

using strategies::Region;

// How a pipeline's transfers use the links, and what each round costs besides its bytes.
struct Engine {
  double payload_share = 1;  // the protocol's payload per byte on the wire
  double max_Bps = 0;        // each transfer at most this (link bytes per second), 0: no limit
  double local_max_Bps = 0;  // a tree's transfers within a host (TreeNode::local) at most this; 0: max_Bps
  double step_s = 0;         // latency charged once per round (local work of every participant it involves)
};

// Channel rings over all ranks (each ring an order of the workers 0..N-1), each reducing its
// equal part of `region` (`region.elements` a multiple of rings x N): 2(N-1) rounds, every one
// after the first of each phase declared equal to it.
// `halves`: both (the all-reduce), or one of them alone (N-1 rounds): then the schedule's expected
// result is that half's (each channel's block b reduced on, or gathered from, position b-1 of its ring).
// `vias`, where given: vias[c][j] routes ring c's hop from position j to j + 1 (Op::via).
enum class RingHalves { both, reduce_scatter, all_gather };
void add_channel_rings(Schedule& s, const std::vector<std::vector<int>>& rings, Region region, const Engine& engine,
                       const std::string& prefix, RingHalves halves = RingHalves::both, const std::vector<std::vector<Via>>& vias = {});

// Channel chains (NCCL's broadcast and reduce: each channel's ring cut at the root), each an
// order of the same workers with chain[0] the root, each moving its equal part of `region`
// (`region.elements` a multiple of the chains) in `chunks` chunks (sizes differ by one element
// at most), all chains stepping together: chunks + N - 2 rounds. Down (broadcast): chain[0]'s
// chunks overwrite the others', chunk c leaving position p at round c + p. Up (reduce): each
// adds what the one after it sent and passes the sum on towards chain[0], chunk c leaving
// position p at round c + N - 1 - p. Steady rounds whose chunks are all of one size are declared
// equal to the first such round. The schedule's expected result is the caller's. Where `local`
// says an edge's two participants share a host, its transfers move at Engine::local_max_Bps.
// `vias`, where given: vias[c][j] routes chain c's edge from position j to j + 1 (and back, its
// two nodes the other way round).
void add_channel_chains(Schedule& s, const std::vector<std::vector<int>>& chains, Region region, int chunks, bool up,
                        const Engine& engine, const std::string& phase, const std::function<bool(int, int)>& local = {},
                        const std::vector<std::vector<Via>>& vias = {});

// How long those rounds take, in rounds of a full chunk at Engine::max_Bps, where the edges
// within a host (`local`) move `local_speedup` times faster: a round in which some edge between
// hosts moves a chunk counts 1, one with only local edges 1 / local_speedup.
double chain_chunk_times(const std::vector<std::vector<int>>& chains, int chunks, bool up, double local_speedup,
                         const std::function<bool(int, int)>& local);

// A tree node: a participant in a role. The same participant may hold several nodes of one tree
// (a GPU that is a leaf of its NVSwitch and the head that carries the switch's sum across
// nodes); each node's parent is an index into the tree's nodes (-1: the root).
struct TreeNode {
  int participant = 0;
  int parent = -1;
  // The parent overwrites its part with what this node sends up instead of adding it (the
  // switch's sum already holds the parent's own contribution).
  bool replaces = false;
  // Its edge to the parent stays within a host (NVLink, PCIe): it moves at Engine::local_max_Bps.
  bool local = false;
  // Its edge to the parent goes through these nodes (Op::via), the node's first; up as they
  // stand, down the other way round.
  Via via = kNoVia;
};

struct PipelinedTree {
  std::vector<TreeNode> nodes;
  Region region;
};

// All trees at once, each cut in `chunks` chunks (the last takes the remainder): a node sends
// chunk k up at round k + its height, once its children's have arrived; the root sends it down
// at k + its height, and each node passes it on the round after it arrives. Rounds where every
// node moves a full-size chunk are declared equal to the first such round.
void add_pipelined_trees(Schedule& s, const std::vector<PipelinedTree>& trees, int chunks, const Engine& engine,
                         const std::string& phase);

// The rounds add_pipelined_trees makes for these trees and chunk count.
int pipelined_rounds(const std::vector<PipelinedTree>& trees, int chunks);

// How long those rounds take, in rounds of a full chunk at Engine::max_Bps, where the edges
// within a host (TreeNode::local) move `local_speedup` times faster: a round in which some edge
// between hosts moves a chunk counts 1, one with only local edges 1 / local_speedup.
double pipelined_chunk_times(const std::vector<PipelinedTree>& trees, int chunks, double local_speedup);

}  // namespace gradsync::models::nccl
