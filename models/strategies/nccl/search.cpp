#include "models/strategies/nccl/search.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>

namespace gradsync::models::nccl {

namespace {

// Per-channel bandwidths the search tries, highest first (search.cc), by compute capability
// and whether the channels cross hosts.
const std::vector<double> kIntra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
const std::vector<double> kInter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                    7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kIntraSm90 = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
const std::vector<double> kInterSm90 = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                        15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kIntraSm100 = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
const std::vector<double> kInterSm100 = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                         20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// The search's budgets: steps of the recursion (search.cc NCCL_SEARCH_*).
constexpr long kGlobalTimeout = 1L << 19;
constexpr long kTimeout = 1L << 14;
constexpr long kTimeoutTree = 1L << 14;
constexpr long kTimeoutSameChannels = 1L << 8;
constexpr int kCrossNicParam = 2;  // NCCL_CROSS_NIC default
constexpr int kMaxChannels = 64;

enum Forced { kFree = 0, kPciOrder = 1, kReplay = 2 };

bool is_tree(Pattern p) { return p == Pattern::balanced_tree || p == Pattern::tree || p == Pattern::split_tree; }

// std::round (halves away from zero) without the library call the search made hundreds of
// millions of times: the integer part by truncation, then a step away from zero when the rest is
// a half or more. Both are exact below 2^52; beyond that every double is whole already.
double round_half_away(double x) {
  if (!(std::fabs(x) < 4503599627370496.0)) return std::round(x);
  double t = static_cast<double>(static_cast<long long>(x));
  if (std::fabs(x - t) >= 0.5) t += x > 0 ? 1.0 : -1.0;
  return std::copysign(t, x);
}

// NCCL keeps a link's bandwidth from drifting by rounding it to thousandths each time the search
// takes from it or gives back: a = round((a - b) * 1000) / 1000. The search keeps each amount as
// a whole number of thousandths where the double is the one nearest to that number over 1000
// (`milli`, else kInexact). On such amounts, below 10^12 thousandths, comparing and subtracting the
// integers gives what NCCL's doubles give, since their rounding errors stay far below half a
// thousandth, without a division and a rounding per link and step.
constexpr long long kInexact = std::numeric_limits<long long>::min();

struct Amount {
  double bw;
  long long milli;
};

Amount amount(double bw) {
  const double m = bw * 1000;
  if (!(std::fabs(m) < 1e12)) return {bw, kInexact};
  const auto whole = static_cast<long long>(round_half_away(m));
  return {bw, static_cast<double>(whole) / 1000 == bw ? whole : kInexact};
}

struct Endpoint {
  NodeType type;
  int index;  // rank for GPUs, index among the NICs for NETs, 0 for the NVSwitch; -1: none
};

class Search {
 public:
  Search(System& system, bool inter) : sys_(system), inter_(inter), used_(static_cast<std::size_t>(system.gpu_count()), 0) {
    // Every link's bandwidth in one array (what the search takes and gives back), each node's
    // links from link_base_[node].
    for (const SysNode& n : system.nodes()) {
      link_base_.push_back(static_cast<int>(bw_.size()));
      for (const SysLink& l : n.links) {
        const Amount a = amount(l.bw);
        bw_.push_back(a.bw);
        milli_.push_back(a.milli);
      }
    }
    hops_.resize(system.nodes().size() * system.nodes().size());
  }

  void rec(Graph& g, Graph& save, long& time);
  // How many times the search has replaced the best graph so far.
  long copies() const { return copies_; }

 private:
  int node(Endpoint e) const {
    switch (e.type) {
      case NodeType::gpu: return sys_.gpu(e.index);
      case NodeType::net: return sys_.net(e.index);
      default: return sys_.of_type(e.type)[static_cast<std::size_t>(e.index)];
    }
  }
  int ngpus() const { return sys_.gpu_count(); }

  // A path's links as follow() takes from them: each link's place in bw_, whether it is PCIe
  // (which may cost more, below), and the reverse link that pays an eighth of it (into a GPU
  // older than sm80 from elsewhere than a GPU), -1 for none. Worked out on first use.
  struct Hop {
    int link = 0, reverse = -1;
    bool pci = false;
  };
  struct Hops {
    bool ready = false;
    bool intel = false;  // P2P through an Intel root complex: PCIe links carry 6/5 (64-byte TLPs)
    std::vector<Hop> hops;
  };
  const Hops& hops(int from, int to) {
    Hops& h = hops_[static_cast<std::size_t>(from) * sys_.nodes().size() + static_cast<std::size_t>(to)];
    if (h.ready) return h;
    const SysPath& path = sys_.path(from, to);
    const std::vector<SysNode>& nodes = sys_.nodes();
    const SysNode& start = nodes[static_cast<std::size_t>(from)];
    for (const auto& [n, li] : path.hops) {
      const SysLink& link = nodes[static_cast<std::size_t>(n)].links[static_cast<std::size_t>(li)];
      const SysNode& next = nodes[static_cast<std::size_t>(link.to)];
      Hop hop{link_base_[static_cast<std::size_t>(n)] + li, -1, link.type == LinkType::pci};
      if (next.type == NodeType::gpu && next.cc < 80 && start.type != NodeType::gpu) {
        for (std::size_t r = 0; r < next.links.size(); ++r) {
          if (next.links[r].to == n && next.links[r].type == link.type) hop.reverse = link_base_[static_cast<std::size_t>(link.to)] + static_cast<int>(r);
        }
      }
      if (path.type == kPathPhb && start.type == NodeType::gpu && next.type == NodeType::cpu && next.vendor == "intel") h.intel = true;
      h.hops.push_back(hop);
    }
    h.ready = true;
    return h;
  }

  // amount(bw), remembered: a search takes and gives back the same few bandwidths millions of times.
  Amount amount_of(double bw) {
    for (const Amount& a : amounts_) {
      if (a.bw == bw) return a;
    }
    const Amount a = amount(bw);
    amounts_[next_amount_] = a;
    next_amount_ = (next_amount_ + 1) % amounts_.size();
    return a;
  }

  // A link's bandwidth left, as NCCL's double holds it.
  double left(std::size_t link) const { return milli_[link] != kInexact ? static_cast<double>(milli_[link]) / 1000 : bw_[link]; }
  bool fits(std::size_t link, const Amount& x) const {
    if (milli_[link] != kInexact && x.milli != kInexact) return milli_[link] >= x.milli;
    return !(left(link) < x.bw);
  }
  // link = round((link - x) * 1000) / 1000, held as thousandths.
  void take(std::size_t link, const Amount& x) {
    if (milli_[link] != kInexact && x.milli != kInexact) {
      milli_[link] -= x.milli;
      return;
    }
    const double r = round_half_away((left(link) - x.bw) * 1000);
    if (std::fabs(r) < 1e12) {
      milli_[link] = static_cast<long long>(r);
    } else {
      bw_[link] = r / 1000;
      milli_[link] = kInexact;
    }
  }

  // Takes `bw` from each of the first `steps` links of the path (negative: gives it back); the
  // number of links that had enough.
  int follow(const Hops& path, int steps, double bw) {
    const Amount all = amount_of(bw);
    const Amount pci = path.intel ? amount_of(bw * 6 / 5) : all;
    for (int step = 0; step < steps; ++step) {
      const Hop& hop = path.hops[static_cast<std::size_t>(step)];
      const Amount& fw = hop.pci ? pci : all;
      const auto link = static_cast<std::size_t>(hop.link);
      if (hop.reverse < 0) {
        if (!fits(link, fw)) return step;
        take(link, fw);
        continue;
      }
      const Amount rev = amount(fw.bw / 8);
      const auto back = static_cast<std::size_t>(hop.reverse);
      if (!fits(link, fw) || !fits(back, rev)) return step;
      take(link, fw);
      take(back, rev);
    }
    return steps;
  }

  // ncclTopoFollowPath: the destination's node when every link of the path could carry the
  // channel (and the path is within the graph's types), else -1 (nothing taken).
  int try_path(Graph& g, Endpoint a, Endpoint b, double mult) {
    const int to = node(b);
    if (a.index < 0) return to;
    const int from = node(a);
    const SysPath& path = sys_.path(from, to);
    const SysPath& reverse = sys_.path(to, from);
    const bool intra = (a.type == NodeType::gpu || a.type == NodeType::nvs) && (b.type == NodeType::gpu || b.type == NodeType::nvs);
    double bw = intra ? g.bw_intra : g.bw_inter;
    const int type = intra ? g.type_intra : g.type_inter;
    if (path.type >= kPathDis) return -1;
    if (mult == 1 && path.type > type) return -1;
    if (mult == 1 && is_tree(g.pattern) && reverse.type > type) return -1;
    bw *= mult;
    const Hops& links = hops(from, to);
    const int step = follow(links, path.count(), bw);
    if (step < path.count()) {
      follow(links, step, -bw);
      return -1;
    }
    g.n_hops += static_cast<int>(mult * path.count());
    return to;
  }

  std::vector<int>& channel(Graph& g, int c) {
    while (static_cast<int>(g.intra.size()) <= c) g.intra.emplace_back(static_cast<std::size_t>(ngpus()), -1);
    while (static_cast<int>(g.inter.size()) <= c) g.inter.push_back({-1, -1});
    return g.intra[static_cast<std::size_t>(c)];
  }

  void compare(const Graph& g, const Graph& ref, bool& copy) const {
    if (g.n_channels < g.min_channels) return;
    if (g.pattern == Pattern::nvls) {
      if (g.n_channels > ref.n_channels && g.n_channels <= ngpus()) copy = true;
      if (g.n_channels * g.bw_inter > ref.n_channels * ref.bw_inter) copy = true;
      return;
    }
    if (g.n_channels * g.bw_intra > ref.n_channels * ref.bw_intra) {
      copy = true;
      return;
    }
    if (g.n_channels * g.bw_intra < ref.n_channels * ref.bw_intra) return;
    if (g.pattern == ref.pattern && g.cross_nic == ref.cross_nic && g.n_hops < ref.n_hops) copy = true;
  }

  // ncclTopoSearchNextGpuSort: the GPUs to try after `gpu`, best first.
  struct Score {
    int g, start, intra_hops, intra_bw, inter_hops, inter_pci_bw, inter_bw;
  };
  static bool before(const Score& a, const Score& b) {
    if (a.inter_bw != b.inter_bw) return a.inter_bw > b.inter_bw;
    if (a.inter_pci_bw != b.inter_pci_bw) return a.inter_pci_bw > b.inter_pci_bw;
    if (a.inter_hops != b.inter_hops) return a.inter_hops < b.inter_hops;
    if (a.intra_bw != b.intra_bw) return a.intra_bw > b.intra_bw;
    if (a.intra_hops != b.intra_hops) return a.intra_hops < b.intra_hops;
    return a.start < b.start;
  }

  void next_gpus(Graph& g, int rank, int sort_net, std::vector<int>& next) {
    const std::uint64_t flag = 1ULL << g.n_channels;
    const int n = ngpus();
    const int from = sys_.gpu(rank);
    const int net = sort_net && inter_ ? sys_.net(g.inter[static_cast<std::size_t>(g.n_channels)][0]) : -1;
    // Sorted as they come (an insertion sort: stable, and the lists are short); the buffer is
    // reused, as this runs at every step of the search.
    std::vector<Score>& scores = scores_;
    scores.clear();
    for (int i = 1; i < n; ++i) {
      const int other = (rank + i) % n;
      const SysPath& p = sys_.path(from, sys_.gpu(other));
      if (p.count() == 0 || (used_[static_cast<std::size_t>(other)] & flag)) continue;
      Score s{other, i, p.count(), static_cast<int>(p.bw), 0, 0, 0};
      if (net >= 0) {
        const SysPath& q = sys_.path(net, sys_.gpu(other));
        s.inter_hops = q.count();
        s.inter_bw = static_cast<int>(q.bw);
        const int node = sys_.gpu(other);
        const std::vector<SysLink>& links = sys_.nodes()[static_cast<std::size_t>(node)].links;
        for (std::size_t l = 0; l < links.size(); ++l) {
          if (links[l].type == LinkType::pci) s.inter_pci_bw = static_cast<int>(left(static_cast<std::size_t>(link_base_[static_cast<std::size_t>(node)]) + l));
        }
      }
      std::size_t k = scores.size();
      scores.push_back(s);
      for (; k > 0 && before(s, scores[k - 1]); --k) scores[k] = scores[k - 1];
      scores[k] = s;
    }
    next.clear();
    if (sys_.has_nvswitch()) {
      // NVSwitches prefer a limited set of peers: the neighbours only, those found, in that order.
      const int prev = (rank - 1 + n) % n, after = (rank + 1) % n;
      int first[2] = {after, -1};
      if (g.pattern == Pattern::ring) first[1] = prev;
      else if (g.pattern == Pattern::split_tree || g.pattern == Pattern::balanced_tree) first[0] = prev, first[1] = after;
      if (first[0] == first[1]) first[1] = -1;
      for (int f : first) {
        if (f < 0) continue;
        for (const Score& sc : scores) {
          if (sc.g == f) {
            next.push_back(f);
            break;
          }
        }
      }
      return;
    }
    bool same_intra = true;
    for (const Score& sc : scores) same_intra = same_intra && sc.intra_bw == scores.front().intra_bw && sc.intra_hops == scores.front().intra_hops;
    next.reserve(scores.size());
    if (sort_net == -1 && same_intra) {
      for (auto it = scores.rbegin(); it != scores.rend(); ++it) next.push_back(it->g);
    } else {
      for (const Score& sc : scores) next.push_back(sc.g);
    }
  }

  // The NICs a channel may use (ncclTopoSelectNets): the rank's own first, then by path type. The
  // host's paths do not change during a search, so each answer is kept.
  // The GPUs NIC `net` (index) reaches best (System::local), kept like select_nets'.
  const std::vector<int>& local_gpus(int net) const {
    auto [it, added] = local_cache_.try_emplace(net);
    if (added) it->second = sys_.local(sys_.net(net), NodeType::gpu);
    return it->second;
  }

  const std::vector<int>& select_nets(int type_inter, int rank) const {
    auto [it, added] = nets_cache_.try_emplace({type_inter, rank});
    if (added) it->second = compute_nets(type_inter, rank);
    return it->second;
  }

  std::vector<int> compute_nets(int type_inter, int rank) const {
    std::vector<int> nets;
    auto add = [&](int n) {
      if (n >= 0 && std::find(nets.begin(), nets.end(), n) == nets.end()) nets.push_back(n);
    };
    for (int g = 0; g < ngpus(); ++g) {
      if (rank != -1 && rank != g) continue;
      const int first = sys_.local_net(g, 0);
      for (int c = 0; c < kMaxChannels; ++c) {
        const int n = sys_.local_net(g, c);
        if (c > 0 && n == first) break;
        add(n);
      }
    }
    for (int t = 0; t <= type_inter; ++t) {
      for (int g = 0; g < ngpus(); ++g) {
        if (rank != -1 && rank != g) continue;
        for (int n = 0; n < sys_.net_count() && n < kMaxChannels; ++n) {
          if (sys_.path(sys_.gpu(g), sys_.net(n)).type == t) add(n);
        }
      }
    }
    return nets;
  }

  bool check_net(const Graph& g, int start_net, int n, int step) const {
    if (is_tree(g.pattern) && g.pattern == Pattern::tree && n != start_net) return false;
    if (g.pattern == Pattern::ring && g.cross_nic == 2) {
      if ((g.n_channels & 1) && n != g.inter[static_cast<std::size_t>(g.n_channels - 1)][0]) return false;
    } else if (g.cross_nic == 0) {
      if (n != start_net) return false;  // each NIC its own device and port
    }
    if (g.pattern == Pattern::balanced_tree && step != 0 && n != g.inter[static_cast<std::size_t>(g.n_channels)][1]) return false;
    return true;
  }

  void search_params(const Graph& g, int& back_to_net, int& back_to_first) const {
    if (inter_) {
      back_to_net = g.pattern == Pattern::ring ? ngpus() - 1 : g.pattern == Pattern::split_tree ? 1 : 0;
      back_to_first = -1;
    } else {
      back_to_net = -1;
      back_to_first = g.pattern == Pattern::ring ? ngpus() - 1 : -1;
    }
  }

  void try_gpu(Graph& g, Graph& save, int step, int back_to_net, int back_to_first, int forced, long& time, Endpoint from, int rank) {
    const std::uint64_t flag = 1ULL << g.n_channels;
    const int gpu = try_path(g, from, {NodeType::gpu, rank}, 1);
    if (gpu < 0) return;
    used_[static_cast<std::size_t>(rank)] ^= flag;
    rec_gpu(g, save, rank, step, back_to_net, back_to_first, forced, time);
    used_[static_cast<std::size_t>(rank)] ^= flag;
    try_path(g, from, {NodeType::gpu, rank}, -1);
  }

  void try_nvls(Graph& g, Graph& save, int head, long& time) {
    const int n = ngpus();
    int d0 = 0;
    bool ok = true;
    for (; d0 < n && ok; ++d0) ok = try_path(g, {NodeType::nvs, 0}, {NodeType::gpu, d0}, d0 == head ? 2 : 1) >= 0;
    if (!ok) --d0;
    if (ok) {
      int d1 = 0;
      for (; d1 < n && ok; ++d1) ok = try_path(g, {NodeType::gpu, d1}, {NodeType::nvs, 0}, d1 == head ? 2 : 1) >= 0;
      if (!ok) --d1;
      if (ok) rec_gpu(g, save, -1, n, -1, -1, kFree, time);
      while (d1 > 0) {
        --d1;
        try_path(g, {NodeType::gpu, d1}, {NodeType::nvs, 0}, d1 == head ? -2 : -1);
      }
    }
    while (d0 > 0) {
      --d0;
      try_path(g, {NodeType::nvs, 0}, {NodeType::gpu, d0}, d0 == head ? -2 : -1);
    }
  }

  void try_collnet(Graph& g, Graph& save, int head, long& time) {
    const int n = ngpus();
    const double mul = 1.0 / std::max(1, n - 1);
    int fwd = 0;
    bool ok = true;
    for (; fwd < n && ok; ++fwd) ok = try_path(g, {NodeType::gpu, head}, {NodeType::gpu, fwd}, mul) >= 0;
    if (!ok) --fwd;
    if (ok) {
      int bwd = 0;
      for (; bwd < n && ok; ++bwd) ok = try_path(g, {NodeType::gpu, bwd}, {NodeType::gpu, head}, mul) >= 0;
      if (!ok) --bwd;
      if (ok) {
        std::vector<int>& order = channel(g, g.n_channels);
        int step = 1;
        for (int i = 0; i < n; ++i) {
          if (i != head) order[static_cast<std::size_t>(step++)] = i;
        }
        rec_gpu(g, save, -1, n, -1, -1, kFree, time);
      }
      while (bwd > 0) {
        --bwd;
        try_path(g, {NodeType::gpu, bwd}, {NodeType::gpu, head}, -mul);
      }
    }
    while (fwd > 0) {
      --fwd;
      try_path(g, {NodeType::gpu, head}, {NodeType::gpu, fwd}, -mul);
    }
  }

  int replay_gpu(const Graph& g, int step) const { return g.intra[static_cast<std::size_t>(g.n_channels - 1)][static_cast<std::size_t>(step + 1)]; }

  void rec_gpu(Graph& g, Graph& save, int rank, int step, int back_to_net, int back_to_first, int forced, long& time) {
    if (time <= 0) return;
    --time;
    const int n = ngpus();
    if (step == n) {
      bool copy = false;
      ++g.n_channels;
      compare(g, save, copy);
      if (copy) {
        ++copies_;
        save = g;
        save.intra.resize(static_cast<std::size_t>(save.n_channels));
        save.inter.resize(static_cast<std::size_t>(save.n_channels));
        if (g.n_channels == g.max_channels) time = -1;
      }
      if (g.n_channels < g.max_channels) rec(g, save, time);
      --g.n_channels;
      return;
    }
    channel(g, g.n_channels)[static_cast<std::size_t>(step)] = rank;
    if (step == back_to_net) {
      if (!inter_) return;
      const int start_net = g.inter[static_cast<std::size_t>(g.n_channels)][0];
      for (int net : select_nets(g.type_inter, rank)) {
        if (!check_net(g, start_net, net, step)) continue;
        int next_back = -1;
        const double saved = g.bw_inter;
        if (g.pattern == Pattern::balanced_tree) {
          if (step == 0) next_back = 1;
          g.bw_inter /= 2;
        }
        const int reached = try_path(g, {NodeType::gpu, rank}, {NodeType::net, net}, 1);
        g.bw_inter = saved;
        if (reached >= 0) {
          g.inter[static_cast<std::size_t>(g.n_channels)][1] = net;
          rec_gpu(g, save, rank, step, next_back, back_to_first, forced, time);
          if (g.pattern == Pattern::balanced_tree) g.bw_inter /= 2;
          try_path(g, {NodeType::gpu, rank}, {NodeType::net, net}, -1);
          g.bw_inter = saved;
        }
      }
    } else if (g.pattern == Pattern::nvls) {
      try_nvls(g, save, rank, time);
    } else if (g.pattern == Pattern::collnet_direct) {
      try_collnet(g, save, rank, time);
    } else if (step < n - 1) {
      if (forced == kPciOrder || forced == kReplay) {
        const int other = forced == kPciOrder ? step + 1 : replay_gpu(g, step);
        try_gpu(g, save, step + 1, back_to_net, back_to_first, forced, time, {NodeType::gpu, rank}, other);
      } else {
        const std::size_t at = static_cast<std::size_t>(g.n_channels) * static_cast<std::size_t>(n) + static_cast<std::size_t>(step);
        if (next_.size() <= at) next_.resize(at + 1);
        std::vector<int>& next = next_[at];
        next_gpus(g, rank, back_to_net == -1 ? 0 : back_to_net == step + 1 ? 1 : -1, next);
        for (int other : next) try_gpu(g, save, step + 1, back_to_net, back_to_first, forced, time, {NodeType::gpu, rank}, other);
      }
    } else if (step == back_to_first) {
      const int first = g.intra[static_cast<std::size_t>(g.n_channels)][0];
      if (try_path(g, {NodeType::gpu, rank}, {NodeType::gpu, first}, 1) >= 0) {
        rec_gpu(g, save, first, step + 1, back_to_net, -1, forced, time);
        try_path(g, {NodeType::gpu, rank}, {NodeType::gpu, first}, -1);
      }
    } else {
      rec_gpu(g, save, rank, n, -1, -1, forced, time);
    }
  }

  void rec_net(Graph& g, Graph& save, int back_to_net, int back_to_first, long& time) {
    const double bw = static_cast<int>(g.bw_inter);  // NCCL keeps it in an int here
    const std::vector<int> nets = select_nets(g.type_inter, -1);
    const int count = static_cast<int>(nets.size());
    bool found = false;
    for (int i = 0; i < count; ++i) {
      if ((g.pattern == Pattern::nvls || g.pattern == Pattern::collnet_direct) && found) break;
      const int n = nets[static_cast<std::size_t>((g.n_channels + i) % count)];
      SysNode& net = sys_.nodes()[static_cast<std::size_t>(sys_.net(n))];
      if (g.collnet && !net.coll) continue;
      if (net.net_bw < bw) continue;
      if (g.pattern == Pattern::ring && g.cross_nic == 2 && (g.n_channels & 1) &&
          n != g.inter[static_cast<std::size_t>(g.n_channels - 1)][1]) {
        continue;
      }
      channel(g, g.n_channels);
      g.inter[static_cast<std::size_t>(g.n_channels)][0] = n;
      g.latency_inter = 0;  // the IB and socket plugins report none
      net.net_bw -= bw;
      if (g.pattern == Pattern::nvls || g.pattern == Pattern::collnet_direct) {
        if (g.n_channels < count) {
          const int local = net.local_gpu >= 0 ? sys_.nodes()[static_cast<std::size_t>(net.local_gpu)].rank : -1;
          bool duplicate = false;
          for (int c = 0; c < g.n_channels; ++c) duplicate = duplicate || g.intra[static_cast<std::size_t>(c)][0] == local;
          if (local >= 0 && !duplicate) {
            try_gpu(g, save, 0, back_to_net, back_to_first, kFree, time, {NodeType::net, n}, local);
            found = true;
          }
        }
      } else if (g.n_channels > 0 && g.same_channels == 1) {
        try_gpu(g, save, 0, back_to_net, back_to_first, kReplay, time, {NodeType::net, n}, replay_gpu(g, -1));
      } else {
        if (g.n_channels == 0 && !sys_.has_nvswitch()) {
          long t = 1L << 10;
          try_gpu(g, save, 0, back_to_net, back_to_first, kPciOrder, t, {NodeType::net, n}, 0);
          if (t == -1) time = -1;
        }
        const int local = net.local_gpu >= 0 ? sys_.nodes()[static_cast<std::size_t>(net.local_gpu)].rank : -1;
        if (local >= 0) try_gpu(g, save, 0, back_to_net, back_to_first, kFree, time, {NodeType::net, n}, local);
        for (int other : local_gpus(n)) {
          if (other != local) try_gpu(g, save, 0, back_to_net, back_to_first, kFree, time, {NodeType::net, n}, other);
        }
      }
      net.net_bw += bw;
    }
  }

  System& sys_;
  bool inter_;
  mutable std::map<std::pair<int, int>, std::vector<int>> nets_cache_;
  mutable std::map<int, std::vector<int>> local_cache_;
  std::vector<Score> scores_;  // next_gpus' buffer
  std::vector<std::vector<int>> next_;  // rec_gpu's candidates, per channel and step (none nests in another)
  std::vector<std::uint64_t> used_;  // per rank: the channels that use its GPU
  std::vector<double> bw_;  // every link's bandwidth left (SysLink::bw as the search goes), where milli_ is kInexact
  std::vector<long long> milli_;  // the same in thousandths (Amount::milli)
  // amount_of's last four, replaced in turn; each starts as amount(-1), which is {-1, -1000}.
  std::array<Amount, 4> amounts_{{{-1, -1000}, {-1, -1000}, {-1, -1000}, {-1, -1000}}};
  std::size_t next_amount_ = 0;
  std::vector<int> link_base_;  // per node: its first link's place in bw_
  std::vector<Hops> hops_;  // per (from, to) node pair
  long copies_ = 0;
};

void Search::rec(Graph& g, Graph& save, long& time) {
  int back_to_net = -1, back_to_first = -1;
  search_params(g, back_to_net, back_to_first);
  if (inter_) {
    rec_net(g, save, back_to_net, back_to_first, time);
    return;
  }
  if (g.pattern == Pattern::nvls) {
    try_gpu(g, save, 0, back_to_net, back_to_first, kFree, time, {NodeType::gpu, -1}, g.n_channels);
    return;
  }
  if (g.n_channels == 0) {
    try_gpu(g, save, 0, back_to_net, back_to_first, kPciOrder, time, {NodeType::gpu, -1}, 0);
  } else {
    try_gpu(g, save, 0, back_to_net, back_to_first, kReplay, time, {NodeType::gpu, -1}, replay_gpu(g, -1));
  }
  if (g.same_channels == 0 || g.n_channels == 0) {
    for (int r = 0; r < ngpus(); ++r) try_gpu(g, save, 0, back_to_net, back_to_first, kFree, time, {NodeType::gpu, -1}, r);
  }
}

// ncclTopoDupChannels: fast channels are doubled at half the bandwidth each.
void dup_channels(Graph& g, int cc_min) {
  if (g.n_channels == 0 || g.pattern == Pattern::nvls) return;
  if (g.bw_intra < 25.0) return;
  if (cc_min > 80 && g.bw_intra < 50.0 && g.n_channels > 4) return;
  const int dup = std::min(g.n_channels * 2, g.max_channels);
  const int factor = (dup + g.n_channels - 1) / g.n_channels;
  for (int c = g.n_channels; c < dup; ++c) {
    g.intra.push_back(g.intra[static_cast<std::size_t>(c - g.n_channels)]);
    g.inter.push_back(g.inter[static_cast<std::size_t>(c - g.n_channels)]);
  }
  g.bw_intra /= factor;
  g.bw_inter /= factor;
  g.n_channels = dup;
}

int min_path_type(const System& s, NodeType to) {
  int best = kPathSys;
  for (int a = 0; a < s.gpu_count(); ++a) {
    for (int b : s.of_type(to)) {
      if (to == NodeType::gpu && b == s.gpu(a)) continue;
      best = std::min(best, s.path(s.gpu(a), b).type);
    }
  }
  return best;
}

int max_path_type(const System& s, NodeType to) {
  int worst = kPathLoc;
  for (int a = 0; a < s.gpu_count(); ++a) {
    for (int b : s.of_type(to)) {
      if (to == NodeType::gpu && b == s.gpu(a)) continue;
      worst = std::max(worst, s.path(s.gpu(a), b).type);
    }
  }
  return worst;
}

}  // namespace

namespace {

// Which of a host's paths a search's path type limits admit: the distinct types of the paths
// between GPUs and NVSwitches (intra) and between GPUs and NICs (inter); two limits with no
// path type between them admit the same paths.
class PathClasses {
 public:
  PathClasses(const System& s, bool inter) {
    std::vector<int> ends = s.of_type(NodeType::gpu);
    const std::vector<int> gpus = ends;
    for (int n : s.of_type(NodeType::nvs)) ends.push_back(n);
    for (int a : ends) {
      for (int b : ends) {
        if (a != b) intra_.push_back(s.path(a, b).type);
      }
    }
    if (inter) {
      for (int g : gpus) {
        for (int n : s.of_type(NodeType::net)) {
          inter_.push_back(s.path(g, n).type);
          inter_.push_back(s.path(n, g).type);
        }
      }
    }
    for (std::vector<int>* v : {&intra_, &inter_}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  }
  // The number of the host's path types at or below a limit.
  long long intra(int limit) const { return std::upper_bound(intra_.begin(), intra_.end(), limit) - intra_.begin(); }
  long long inter(int limit) const { return std::upper_bound(inter_.begin(), inter_.end(), limit) - inter_.begin(); }

 private:
  std::vector<int> intra_, inter_;
};

}  // namespace

Graph compute_graph(System& system, Pattern pattern, int min_channels, int max_channels, bool inter, bool collnet, bool rerun_failed) {
  Graph graph;
  graph.pattern = pattern;
  graph.collnet = collnet;
  graph.min_channels = min_channels;
  graph.max_channels = max_channels;
  const int cc = system.min_compute_capability();
  const int ngpus = system.gpu_count();
  const int cross_nic = system.net_count() > 1 && (pattern == Pattern::ring || pattern == Pattern::balanced_tree || pattern == Pattern::split_tree)
                            ? kCrossNicParam
                            : 0;
  graph.cross_nic = cross_nic == 1 ? 1 : 0;
  int min_intra = kPathLoc, min_inter = kPathPix, max_intra = kPathSys, max_inter = kPathSys;
  if (ngpus > 1) {
    min_intra = min_path_type(system, NodeType::gpu);
    max_intra = max_path_type(system, NodeType::gpu);
  }
  if (inter) {
    min_inter = min_path_type(system, NodeType::net);
    max_inter = max_path_type(system, NodeType::net);
    max_intra = max_inter;
  }
  if (cc < 90) max_inter = kPathSys;
  graph.type_intra = min_intra;
  graph.type_inter = min_inter;
  const int try_same = pattern == Pattern::nvls ? 0 : 1;
  graph.same_channels = try_same;
  const bool amd = system.cpu_vendor() == "amd";

  if (pattern == Pattern::nvls && (!system.has_nvswitch() || cc < 90)) return graph;
  if (pattern == Pattern::nvls) graph.max_channels = std::min(32, ngpus);
  if (pattern == Pattern::collnet_direct) graph.max_channels = std::min(8, ngpus);
  if (ngpus == 1 && pattern != Pattern::ring) graph.pattern = Pattern::tree;
  if (!inter && graph.pattern == Pattern::nvls) graph.min_channels = graph.max_channels;

  Graph tmp = graph;
  const std::vector<double>& speeds = inter ? (cc >= 100 ? kInterSm100 : cc >= 90 ? kInterSm90 : kInter)
                                            : (cc >= 100 ? kIntraSm100 : cc >= 90 ? kIntraSm90 : kIntra);
  const int nspeeds = static_cast<int>(speeds.size());
  double max_bw = system.max_bw(inter);
  double total_bw = system.total_bw();
  if (ngpus == 1 && !inter) max_bw = total_bw = 5000.0;
  if (ngpus > 1 && graph.pattern != Pattern::ring) total_bw *= ngpus * 1.0 / (ngpus - 1);
  int speed = 0;
  while ((speeds[static_cast<std::size_t>(speed)] > max_bw || speeds[static_cast<std::size_t>(speed)] * graph.min_channels > total_bw) &&
         speed < nspeeds - 1) {
    ++speed;
  }
  tmp.bw_intra = tmp.bw_inter = speeds[static_cast<std::size_t>(speed)];
  long global = kGlobalTimeout;
  int pass = 1;
  long time = 0;
  Search search(system, inter);
  // A pass that found nothing leaves the best graph as it was and spends its budget down to a
  // value that only its arguments decide; a later pass whose arguments admit the same paths (a
  // path type limit raised past no path of the host) and which starts from the same best graph
  // runs the same recursion, so it is not run again (an NVSwitch host with GPUDirect RDMA off
  // tries each of eight intra-host limits, at each speed, before it finds a tree).
  const PathClasses classes(system, inter);
  std::map<std::array<long long, 11>, long> failed;
  for (int guard = 0; guard < 10000; ++guard) {
    // search:
    time = tmp.same_channels ? kTimeoutSameChannels : tmp.pattern == Pattern::tree ? kTimeoutTree : kTimeout;
    tmp.n_channels = 0;
    tmp.intra.clear();
    tmp.inter.clear();
    global -= time;
    const std::array<long long, 11> pass_key = {static_cast<long long>(tmp.pattern), tmp.same_channels, classes.intra(tmp.type_intra),
                                                classes.inter(tmp.type_inter), std::llround(tmp.bw_intra * 1e6),
                                                std::llround(tmp.bw_inter * 1e6), tmp.cross_nic, tmp.min_channels, tmp.max_channels, time,
                                                search.copies()};
    if (const auto seen = failed.find(pass_key); seen != failed.end() && !rerun_failed) {
      time = seen->second;
    } else {
      const long copies = search.copies();
      search.rec(tmp, graph, time);
      if (search.copies() == copies) failed.emplace(pass_key, time);
    }
    bool done = time == -1 || graph.n_channels * graph.bw_inter >= total_bw;
    if (!done && pass == 1) {
      if (tmp.same_channels == 1 && !(amd && tmp.type_intra == kPathSys)) {
        tmp.same_channels = 0;
        continue;
      }
      tmp.same_channels = try_same;
      if (time != -1) global += time;
      else global = kGlobalTimeout;
      if (global < 0 && graph.n_channels) {
        done = true;
      } else {
        if (cc >= 90 && tmp.pattern == Pattern::balanced_tree) {
          tmp.pattern = Pattern::tree;
          continue;
        }
        tmp.pattern = graph.pattern;
        const int max_type = inter ? tmp.type_inter : max_intra;
        if (tmp.type_intra < max_type && (graph.n_channels == 0 || tmp.type_intra < graph.type_intra)) {
          tmp.type_intra += 1;
          if (tmp.type_intra < kPathDis) continue;
        }
        tmp.type_intra = min_intra;
        if (inter && tmp.type_inter < max_inter &&
            (graph.n_channels == 0 || tmp.type_inter < graph.type_inter || tmp.type_inter < kPathPxn)) {
          tmp.type_inter += 1;
          if (tmp.type_inter < kPathDis) continue;
        }
        tmp.type_inter = min_inter;
        if (cross_nic == 2 && tmp.cross_nic == 0 && (graph.pattern == Pattern::ring || graph.pattern == Pattern::balanced_tree)) {
          tmp.cross_nic = 2;
          continue;
        }
        tmp.cross_nic = cross_nic == 1 ? 1 : 0;
        if (speed < nspeeds - 1 &&
            (graph.n_channels == 0 || speeds[static_cast<std::size_t>(speed + 1)] / graph.bw_inter > .49)) {
          tmp.bw_inter = tmp.bw_intra = speeds[static_cast<std::size_t>(++speed)];
          continue;
        }
        speed = 0;
        while (speeds[static_cast<std::size_t>(speed)] > max_bw && speed < nspeeds - 1) ++speed;
        tmp.bw_intra = tmp.bw_inter = speeds[static_cast<std::size_t>(speed)];
      }
    }
    // done:
    if (pass == 1) {
      time = -1;
      dup_channels(graph, cc);
      tmp = graph;
      speed = 0;
      while (speeds[static_cast<std::size_t>(speed)] > graph.bw_inter && speed < nspeeds - 1) ++speed;
      tmp.bw_intra = tmp.bw_inter = speeds[static_cast<std::size_t>(speed)];
      tmp.min_channels = graph.n_channels;
      pass = 2;
    }
    if (pass == 2) {
      if (time != 0 && speed > 0) {
        if (graph.pattern == Pattern::ring) {
          tmp.bw_intra = tmp.bw_inter = speeds[static_cast<std::size_t>(--speed)];
          continue;
        }
        if (graph.pattern == Pattern::nvls && tmp.bw_inter == graph.bw_inter && tmp.bw_inter < tmp.bw_intra * 2) {
          tmp.min_channels = tmp.max_channels = graph.n_channels;
          tmp.bw_inter = speeds[static_cast<std::size_t>(--speed)];
          continue;
        }
        if (tmp.bw_intra == graph.bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
          tmp.bw_intra = speeds[static_cast<std::size_t>(--speed)];
          continue;
        }
      }
      break;
    }
  }
  if (graph.n_channels == 0 && !graph.collnet && graph.pattern != Pattern::nvls) {
    // No path found: the simple order, at a token bandwidth (search.cc's fallback).
    graph.intra = {std::vector<int>(static_cast<std::size_t>(ngpus))};
    for (int i = 0; i < ngpus; ++i) graph.intra[0][static_cast<std::size_t>(i)] = i;
    graph.bw_intra = 0.1;
    graph.type_intra = kPathSys;
    graph.inter = {{system.net_count() > 0 ? 0 : -1, system.net_count() > 0 ? 0 : -1}};
    graph.bw_inter = inter && system.net_count() > 0 ? 0.1 : 0;
    graph.type_inter = inter && system.net_count() > 0 ? kPathSys : kPathDis;
    graph.n_channels = 1;
  }
  return graph;
}

}  // namespace gradsync::models::nccl
