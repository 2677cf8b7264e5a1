#include "models/schedule/symbolic.h"

#include <algorithm>
#include <deque>
#include <exception>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gradsync::models {
namespace {

using Count = std::uint16_t;
using ContentId = std::uint32_t;
constexpr ContentId kNothing = 0;
constexpr Count kMaxCount = std::numeric_limits<Count>::max();

// ---------------------------------------------------------------------------------------
// Interned multisets over worker ids: a dense count vector sized `workers`, stored once.
// Equal contents share an id, so interval merging and the final comparison are id compares.

struct CountsHash {
  std::size_t operator()(const std::vector<Count>& v) const noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (Count c : v) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};

class ContentPool {
 public:
  explicit ContentPool(int workers) : workers_(static_cast<std::size_t>(workers)) {
    intern(std::vector<Count>(workers_, 0));  // id 0: nothing
  }

  ContentId intern(std::vector<Count> v) {
    auto [it, inserted] = ids_.try_emplace(v, static_cast<ContentId>(contents_.size()));
    if (inserted) contents_.push_back(std::move(v));
    return it->second;
  }

  ContentId unit(int w) {
    std::vector<Count> v(workers_, 0);
    v[static_cast<std::size_t>(w)] = 1;
    return intern(std::move(v));
  }

  ContentId add(ContentId a, ContentId b) {
    if (a == kNothing) return b;
    if (b == kNothing) return a;
    if (a > b) std::swap(a, b);
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | b;
    if (auto it = sums_.find(key); it != sums_.end()) return it->second;
    std::vector<Count> v = contents_[a];
    const std::vector<Count>& w = contents_[b];
    for (std::size_t i = 0; i < v.size(); ++i) {
      const unsigned s = static_cast<unsigned>(v[i]) + w[i];
      v[i] = static_cast<Count>(std::min<unsigned>(s, kMaxCount));  // saturates; never "correct"
    }
    const ContentId id = intern(std::move(v));
    sums_.emplace(key, id);
    return id;
  }

  const std::vector<Count>& counts(ContentId id) const { return contents_[id]; }

  std::string describe(ContentId id) const {
    std::string s = "{";
    bool first = true;
    const auto& v = contents_[id];
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i]) continue;
      if (!first) s += ", ";
      first = false;
      s += std::to_string(i) + ":" + std::to_string(v[i]);
    }
    return s + "}";
  }

 private:
  std::size_t workers_;
  std::deque<std::vector<Count>> contents_;  // deque: references stay valid on growth
  std::unordered_map<std::vector<Count>, ContentId, CountsHash> ids_;
  std::unordered_map<std::uint64_t, ContentId> sums_;
};

// ---------------------------------------------------------------------------------------
// What a byte holds: which workers' contributions (an interned multiset) and from where: the
// byte at position x holds each contributor's byte x + shift of its gradient (mod 2^64; 0: its
// own place, as after an all-reduce). Contributions from different places added together are
// `mixed`: no result expects that. Nothing comes from nowhere (shift 0).

struct Content {
  ContentId id = kNothing;
  std::uint64_t shift = 0;
  bool mixed = false;
  bool operator==(const Content&) const = default;
};

Content held(ContentId id, std::uint64_t shift, bool mixed) {
  if (id == kNothing) return Content{};
  return Content{id, mixed ? 0 : shift, mixed};
}

// `a` with `b` added into it: their multisets summed, from one place or mixed.
Content combined(const Content& a, const Content& b, ContentPool& pool) {
  if (a.id == kNothing) return b;
  if (b.id == kNothing) return a;
  return held(pool.add(a.id, b.id), a.shift, a.mixed || b.mixed || a.shift != b.shift);
}

// ---------------------------------------------------------------------------------------
// One participant's buffer: intervals [start, end) -> content, covering [0, size).

struct Segment {
  std::uint64_t end = 0;
  Content c;
};

struct Piece {
  std::uint64_t rel = 0;  // offset relative to the slice that was read
  std::uint64_t len = 0;
  ContentId id = kNothing;
  // Where the piece's first byte came from, less `rel`: byte `rel + k` of the read slice holds
  // the contributors' byte `origin + rel + k` (the read slice's offset + the content's shift).
  std::uint64_t origin = 0;
  bool mixed = false;
};
using Snapshot = std::vector<Piece>;

class Buffer {
 public:
  using Map = std::map<std::uint64_t, Segment>;

  // [0, first_bytes) holds `first` in its own place, the rest `rest`.
  Buffer(std::uint64_t size, std::uint64_t first_bytes, ContentId first, ContentId rest) {
    if (first_bytes > 0) segs_.emplace(0, Segment{first_bytes, held(first, 0, false)});
    if (size > first_bytes) segs_.emplace(first_bytes, Segment{size, held(rest, 0, false)});
    if (first == rest && first_bytes > 0 && size > first_bytes) merge_at(first_bytes);
  }

  // The content of `s` (which must lie inside the buffer), as pieces relative to s.offset.
  Snapshot read(Slice s) const {
    Snapshot out;
    if (s.bytes == 0) return out;
    auto it = std::prev(segs_.upper_bound(s.offset));
    for (; it != segs_.end() && it->first < s.end(); ++it) {
      const std::uint64_t a = std::max(it->first, s.offset);
      const std::uint64_t b = std::min(it->second.end, s.end());
      const Content& c = it->second.c;
      out.push_back(Piece{a - s.offset, b - a, c.id, s.offset + c.shift, c.mixed});
    }
    return out;
  }

  // Overwrites `s` with `src` (or adds `src` into it); `src` covers exactly s.bytes. What lands
  // at s.offset + rel came from origin + rel: its shift is origin - s.offset.
  void write(Slice s, const Snapshot& src, bool add, ContentPool& pool) {
    if (s.bytes == 0) return;
    split(s.offset);
    split(s.end());
    auto first = segs_.find(s.offset);
    auto last = segs_.lower_bound(s.end());

    std::vector<std::pair<std::uint64_t, Segment>> out;
    auto emit = [&out](std::uint64_t a, std::uint64_t b, Content c) {
      if (!out.empty() && out.back().second.c == c && out.back().second.end == a) {
        out.back().second.end = b;
      } else {
        out.push_back({a, Segment{b, c}});
      }
    };
    auto landed = [&s](const Piece& p) { return held(p.id, p.origin - s.offset, p.mixed); };
    if (!add) {
      for (const Piece& p : src) emit(s.offset + p.rel, s.offset + p.rel + p.len, landed(p));
    } else {
      auto it = first;
      std::size_t k = 0;
      std::uint64_t pos = s.offset;
      while (pos < s.end()) {
        const std::uint64_t piece_end = s.offset + src[k].rel + src[k].len;
        const std::uint64_t stop = std::min(it->second.end, piece_end);
        emit(pos, stop, combined(it->second.c, landed(src[k]), pool));
        pos = stop;
        if (pos == it->second.end) ++it;
        if (pos == piece_end) ++k;
      }
    }
    segs_.erase(first, last);
    for (auto& [start, seg] : out) segs_.emplace_hint(last, start, seg);
    merge_at(s.offset);
    merge_at(s.end());
  }

  const Map& segments() const { return segs_; }

 private:
  // Ensures a segment starts at `at` (no-op at 0, at the end, or on an existing boundary).
  void split(std::uint64_t at) {
    if (segs_.empty()) return;
    auto it = segs_.upper_bound(at);
    if (it == segs_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Segment tail{it->second.end, it->second.c};
    it->second.end = at;
    segs_.emplace_hint(std::next(it), at, tail);
  }

  // Merges the segments ending and starting at `at` if they hold the same content.
  void merge_at(std::uint64_t at) {
    auto it = segs_.find(at);
    if (it == segs_.end() || it == segs_.begin()) return;
    auto prev = std::prev(it);
    if (!(prev->second.c == it->second.c) || prev->second.end != at) return;
    prev->second.end = it->second.end;
    segs_.erase(it);
  }

  Map segs_;
};

// ---------------------------------------------------------------------------------------
// Text helpers.

std::string slice_str(Slice s) {
  std::ostringstream o;
  if (s.bytes <= std::numeric_limits<std::uint64_t>::max() - s.offset) {
    o << "[" << s.offset << ", " << s.end() << ") (" << s.bytes << " bytes)";
  } else {
    o << "[" << s.offset << ", " << s.offset << " + " << s.bytes << ") (" << s.bytes << " bytes)";
  }
  return o.str();
}

std::string range_str(std::uint64_t a, std::uint64_t b) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + ")";
}

std::string op_str(const Op& op) {
  switch (op.kind) {
    case OpKind::send: return "send " + slice_str(op.slice) + " to " + std::to_string(op.peer);
    case OpKind::recv: return "recv from " + std::to_string(op.peer) + " into " + slice_str(op.slice);
    case OpKind::recv_reduce: return "recv_reduce from " + std::to_string(op.peer) + " into " + slice_str(op.slice);
    case OpKind::copy: return "copy " + slice_str(op.source) + " to " + slice_str(op.slice);
    case OpKind::reduce: return "reduce " + slice_str(op.source) + " into " + slice_str(op.slice);
    case OpKind::compute: return "compute";
    case OpKind::kernel: {
      const Kernel* k = op.call ? op.call->kernel : nullptr;
      std::string text = (k ? k->name : std::string("kernel")) + " on " + slice_str(op.slice);
      for (int i = 0; k && i < k->operands && i < 2; ++i) text += " with " + slice_str(op.call->operands[static_cast<std::size_t>(i)]);
      return text;
    }
  }
  return "op";
}

bool inside(Slice s, std::uint64_t size) { return s.offset <= size && s.bytes <= size - s.offset; }

bool is_write(OpKind k) {
  return k == OpKind::recv || k == OpKind::recv_reduce || k == OpKind::copy || k == OpKind::reduce;
}
bool overwrites(OpKind k) { return k == OpKind::recv || k == OpKind::copy; }

// ---------------------------------------------------------------------------------------

struct Failure {
  std::string message;
};

struct Message {
  std::size_t round = 0;
  std::uint64_t seq = 0;  // global send order, to name the earliest unreceived send
  Slice slice;
  Snapshot content;
};

struct Channel {
  std::deque<Message> queue;
  std::size_t matched_round = std::numeric_limits<std::size_t>::max();
  std::uint64_t matched_in_round = 0;
};

struct Write {
  int participant = 0;
  Slice slice;
  Snapshot content;
  bool add = false;
};

class Checker {
 public:
  Checker(const Schedule& s, SymbolicResult& r)
      : s_(s), r_(r), P_(s.participant_count()), size_(s.buffer_bytes()), pool_(std::max(s.workers, 0)) {}

  void run() {
    check_structure();
    prepare_expected();
    buffers_.reserve(static_cast<std::size_t>(P_));
    for (int p = 0; p < P_; ++p) {
      if (p < s_.workers) {
        buffers_.emplace_back(size_, s_.gradient_bytes, pool_.unit(p), kNothing);
      } else {
        buffers_.emplace_back(size_, 0, kNothing, kNothing);
      }
    }
    ops_.resize(static_cast<std::size_t>(P_));
    check_same_as();
    check_same_ops_as_previous();
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) run_round(r);
    if (pending_ > 0) fail_unreceived(std::numeric_limits<std::size_t>::max());
    check_final();
  }

 private:
  [[noreturn]] void fail(const std::string& m) { throw Failure{m}; }

  std::string label(std::size_t r) const {
    const std::string& ph = s_.rounds[r].phase;
    return "round " + std::to_string(r) + (ph.empty() ? "" : " (" + ph + ")");
  }

  std::uint64_t key(int from, int to) const {
    return static_cast<std::uint64_t>(from) * static_cast<std::uint64_t>(P_) + static_cast<std::uint64_t>(to);
  }

  // Whether op a moves what op b does, as time sees it: kind, sizes, encoding and kernel as b,
  // peer and engine as c (the participant's own op where b is another's).
  static bool same_cost(const Op& a, const Op& b, const Op& c) {
    return a.kind == b.kind && a.peer == c.peer && a.slice.bytes == b.slice.bytes && a.source.bytes == b.source.bytes &&
           a.wire() == b.wire() && a.seconds == b.seconds && a.payload_share == c.payload_share && a.max_Bps == c.max_Bps && a.via == c.via &&
           (a.encoding == nullptr) == (b.encoding == nullptr) &&
           (a.encoding == nullptr || (a.encoding->codec == b.encoding->codec && a.encoding->group == b.encoding->group)) &&
           (a.call == nullptr) == (b.call == nullptr) && (a.call == nullptr || a.call->kernel == b.call->kernel);
  }

  // A participant declared to do in a round what it did in the round before
  // (Round::same_ops_as_previous) must have the same ops there, op by op.
  void check_same_ops_as_previous() {
    std::vector<Op> mine, before;
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const Round& round = s_.rounds[r];
      if (!round.same_ops_as_previous) continue;
      for (int p = 0; p < P_; ++p) {
        if (!round.same_ops_as_previous(p)) continue;
        const std::string who = label(r) + ", participant " + std::to_string(p) + " declared to do what it did in the round before";
        if (r == 0) fail(who + ": there is none");
        mine.clear();
        before.clear();
        round.ops(p, mine);
        s_.rounds[r - 1].ops(p, before);
        if (mine.size() != before.size()) fail(who + ": " + std::to_string(mine.size()) + " ops against " + std::to_string(before.size()));
        for (std::size_t i = 0; i < mine.size(); ++i) {
          if (!same_cost(mine[i], before[i], before[i])) fail(who + ": " + op_str(mine[i]) + " where that round has " + op_str(before[i]));
        }
      }
    }
  }

  // A round declared equal in cost to an earlier one (Round::same_as) must give every
  // participant the same transfers and local work as that round, op by op.
  void check_same_as() {
    std::vector<Op> mine, theirs;
    for (std::size_t r = 0; r < s_.rounds.size(); ++r) {
      const int like = s_.rounds[r].same_as;
      if (like < 0) continue;
      if (static_cast<std::size_t>(like) >= r) {
        fail(label(r) + ": declared equal in cost to round " + std::to_string(like) + "; expected an earlier round");
      }
      // Rotated: each participant's sizes come from the one rotated_by further along its cycle.
      const Round& round = s_.rounds[r];
      std::vector<int> source(static_cast<std::size_t>(P_));
      for (int p = 0; p < P_; ++p) source[static_cast<std::size_t>(p)] = p;
      if (round.rotated()) {
        for (const auto& cycle : *round.rotated_along) {
          const std::size_t len = cycle.size();
          for (std::size_t j = 0; j < len; ++j) {
            const auto shift = static_cast<std::size_t>(((round.rotated_by % static_cast<int>(len)) + static_cast<int>(len)) % static_cast<int>(len));
            source[static_cast<std::size_t>(cycle[j])] = cycle[(j + shift) % len];
          }
        }
      }
      std::vector<Op> own;
      for (int p = 0; p < P_; ++p) {
        mine.clear();
        theirs.clear();
        own.clear();
        round.ops(p, mine);
        s_.rounds[static_cast<std::size_t>(like)].ops(source[static_cast<std::size_t>(p)], theirs);
        s_.rounds[static_cast<std::size_t>(like)].ops(p, own);
        const std::string who = label(r) + ", declared equal in cost to " + label(static_cast<std::size_t>(like)) +
                                (round.rotated() ? " turned by " + std::to_string(round.rotated_by) : std::string()) +
                                ", participant " + std::to_string(p);
        if (mine.size() != theirs.size() || mine.size() != own.size()) {
          fail(who + ": " + std::to_string(mine.size()) + " ops against " + std::to_string(theirs.size()));
        }
        for (std::size_t i = 0; i < mine.size(); ++i) {
          const Op& a = mine[i];
          const Op& b = theirs[i];  // kinds, sizes, encodings
          const Op& c = own[i];     // peers and engines
          if (!same_cost(a, b, c)) fail(who + ": " + op_str(a) + " where that round has " + op_str(b));
        }
      }
    }
  }

  void check_structure() {
    if (s_.workers < 0) fail("schedule: workers = " + std::to_string(s_.workers) + "; expected at least 0");
    if (s_.workers > P_) {
      fail("schedule: workers = " + std::to_string(s_.workers) + " but only " + std::to_string(P_) +
           " participants are listed");
    }
    for (int p = 0; p < P_; ++p) {
      const bool worker = s_.participants[static_cast<std::size_t>(p)].role == Role::worker;
      if (worker != (p < s_.workers)) {
        fail("schedule: participant " + std::to_string(p) + " has role " + (worker ? "worker" : "server") +
             " but workers = " + std::to_string(s_.workers) + " (workers come first, then servers)");
      }
    }
    if (s_.gradient_bytes > size_) fail("schedule: buffer size overflows");
  }

  struct Region {
    Slice slice;
    std::size_t index = 0;  // in schedule.expected
    enum class Kind { all, own, set, transposed, shifted } kind = Kind::all;
    ContentId set_id = kNothing;  // Kind::all / Kind::set
    std::string set_text;
    std::vector<bool> held_by;  // per worker; empty: every worker holds the region
    std::uint64_t block = 0;    // Kind::transposed: bytes per block
    int from_previous = 0;      // Kind::shifted: worker r holds worker r - this one's bytes
  };

  std::string region_name(const Region& g) const {
    return s_.expected.empty() ? "the default region " + slice_str(g.slice)
                               : "expected region #" + std::to_string(g.index) + " " + slice_str(g.slice);
  }

  void prepare_expected() {
    std::vector<ExpectedRegion> given = s_.expected;
    if (given.empty()) given.push_back(ExpectedRegion{Slice{0, s_.gradient_bytes}, true, false, {}});
    const std::size_t W = static_cast<std::size_t>(s_.workers);
    for (std::size_t i = 0; i < given.size(); ++i) {
      const ExpectedRegion& e = given[i];
      Region g;
      g.slice = e.slice;
      g.index = i;
      if (!inside(e.slice, s_.gradient_bytes)) {
        fail(region_name(g) + " lies outside the gradient [0, " + std::to_string(s_.gradient_bytes) + ")");
      }
      if (e.transposed_blocks != 0) {
        if (e.own_only || e.all_workers || !e.contributors.empty() || !e.holders.empty()) {
          fail(region_name(g) + " is an all-to-all's (transposed_blocks) and also sets own_only, all_workers, contributors "
                                "or holders");
        }
        const auto blocks = static_cast<std::uint64_t>(e.transposed_blocks);
        const auto unit = static_cast<std::uint64_t>(std::max(1, s_.element_bytes));
        if (e.transposed_blocks != s_.workers || e.slice.bytes % (blocks * unit) != 0) {
          fail(region_name(g) + ": transposed_blocks = " + std::to_string(e.transposed_blocks) + "; expected one block per worker (" +
               std::to_string(s_.workers) + "), each a whole number of " + std::to_string(unit) + "-byte elements");
        }
        g.kind = Region::Kind::transposed;
        g.block = e.slice.bytes / blocks;
        g.set_text = "an all-to-all's blocks";
      } else if (e.from_previous != 0) {
        if (e.own_only || e.all_workers || !e.contributors.empty() || !e.holders.empty()) {
          fail(region_name(g) + " is a send-receive's (from_previous) and also sets own_only, all_workers, contributors or "
                                "holders");
        }
        if (e.from_previous < 0 || e.from_previous >= s_.workers) {
          fail(region_name(g) + ": from_previous = " + std::to_string(e.from_previous) + "; expected 1 .. " +
               std::to_string(s_.workers - 1) + " (fewer than the workers)");
        }
        g.kind = Region::Kind::shifted;
        g.from_previous = e.from_previous;
        g.set_text = "a send-receive's bytes";
      } else if (e.own_only) {
        if (!e.contributors.empty()) fail(region_name(g) + " sets own_only and also lists contributors");
        g.kind = Region::Kind::own;
      } else if (e.all_workers) {
        if (!e.contributors.empty()) {
          fail(region_name(g) + " sets all_workers and also lists contributors; clear all_workers for an explicit set");
        }
        g.kind = Region::Kind::all;
        g.set_id = pool_.intern(std::vector<Count>(W, 1));
        g.set_text = "every worker once";
      } else {
        g.kind = Region::Kind::set;
        std::vector<Count> v(W, 0);
        std::string ids;
        for (int c : e.contributors) {
          if (c < 0 || c >= s_.workers) {
            fail(region_name(g) + ": contributor " + std::to_string(c) + " is not a worker (workers 0.." +
                 std::to_string(s_.workers - 1) + ")");
          }
          if (v[static_cast<std::size_t>(c)]) fail(region_name(g) + ": contributor " + std::to_string(c) + " is listed twice");
          v[static_cast<std::size_t>(c)] = 1;
        }
        g.set_id = pool_.intern(std::move(v));
        g.set_text = pool_.describe(g.set_id);
      }
      if (!e.holders.empty()) {
        if (e.own_only) fail(region_name(g) + " sets own_only and also lists holders (every worker keeps its own)");
        g.held_by.assign(W, false);
        for (int h : e.holders) {
          if (h < 0 || h >= s_.workers) {
            fail(region_name(g) + ": holder " + std::to_string(h) + " is not a worker (workers 0.." +
                 std::to_string(s_.workers - 1) + ")");
          }
          if (g.held_by[static_cast<std::size_t>(h)]) fail(region_name(g) + ": holder " + std::to_string(h) + " is listed twice");
          g.held_by[static_cast<std::size_t>(h)] = true;
        }
      }
      if (g.slice.bytes > 0) regions_.push_back(std::move(g));
    }
    std::stable_sort(regions_.begin(), regions_.end(),
                     [](const Region& a, const Region& b) { return a.slice.offset < b.slice.offset; });
    std::uint64_t pos = 0;
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      const Region& g = regions_[i];
      if (g.slice.offset > pos) {
        fail("expected regions leave bytes " + range_str(pos, g.slice.offset) + " of the gradient uncovered");
      }
      if (g.slice.offset < pos) {
        fail(region_name(g) + " overlaps " + region_name(regions_[i - 1]));
      }
      pos = g.slice.end();
    }
    if (pos < s_.gradient_bytes) {
      fail("expected regions leave bytes " + range_str(pos, s_.gradient_bytes) + " of the gradient uncovered");
    }
  }

  void validate(std::size_t r, int p, const std::vector<Op>& ops) {
    const std::string who = label(r) + ": participant " + std::to_string(p);
    for (const Op& op : ops) {
      if (op.is_transfer()) {
        if (op.peer < 0 || op.peer >= P_) {
          fail(who + ": " + op_str(op) + ": peer " + std::to_string(op.peer) + " is out of range (participants 0.." +
               std::to_string(P_ - 1) + ")");
        }
        if (op.peer == p) fail(who + ": " + op_str(op) + ": peer is itself");
      }
      if (op.kind == OpKind::compute) continue;
      if (!inside(op.slice, size_)) {
        fail(who + ": " + op_str(op) + ": slice " + slice_str(op.slice) + " exceeds the buffer of " +
             std::to_string(size_) + " bytes");
      }
      if (op.kind == OpKind::copy || op.kind == OpKind::reduce) {
        if (!inside(op.source, size_)) {
          fail(who + ": " + op_str(op) + ": source " + slice_str(op.source) + " exceeds the buffer of " +
               std::to_string(size_) + " bytes");
        }
        if (op.source.bytes != op.slice.bytes) {
          fail(who + ": " + op_str(op) + ": source is " + std::to_string(op.source.bytes) + " bytes but destination is " +
               std::to_string(op.slice.bytes) + " bytes");
        }
      }
      // Kernels update values in place and leave contributions as they are; their operand
      // slices must still lie in the buffer and match the target in size.
      if (op.kind == OpKind::kernel) {
        if (!op.call || !op.call->kernel) fail(who + ": a kernel op names no kernel");
        if (op.call->kernel->operands > 2) fail(who + ": " + op_str(op) + ": more operands than an op carries");
        for (int i = 0; i < op.call->kernel->operands; ++i) {
          const Slice& extra = op.call->operands[static_cast<std::size_t>(i)];
          if (!inside(extra, size_) || extra.bytes != op.slice.bytes) {
            fail(who + ": " + op_str(op) + ": " + slice_str(extra) + " is outside the buffer or of another size than " +
                 slice_str(op.slice));
          }
        }
      }
      // An encoded payload is read where a plain one is: the codec must give its size.
      if (op.encoding && (!op.encoding->codec || !op.encoding->codec->wire_bytes)) fail(who + ": " + op_str(op) + ": its codec has no wire size");
    }
    // Overlapping writes: sort by offset; a write conflicts with an earlier one (by offset)
    // iff that one's end passes its offset and at least one of the two overwrites.
    writes_idx_.clear();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (is_write(ops[i].kind) && ops[i].slice.bytes > 0) writes_idx_.push_back(i);
    }
    if (writes_idx_.size() < 2) return;
    std::stable_sort(writes_idx_.begin(), writes_idx_.end(),
                     [&ops](std::size_t a, std::size_t b) { return ops[a].slice.offset < ops[b].slice.offset; });
    std::size_t any = writes_idx_[0];  // earlier write reaching furthest
    std::size_t over = overwrites(ops[any].kind) ? any : ops.size();  // earlier overwrite reaching furthest
    for (std::size_t j = 1; j < writes_idx_.size(); ++j) {
      const Op& w = ops[writes_idx_[j]];
      std::size_t clash = ops.size();
      if (overwrites(w.kind) && ops[any].slice.end() > w.slice.offset) clash = any;
      else if (over < ops.size() && ops[over].slice.end() > w.slice.offset) clash = over;
      if (clash < ops.size()) {
        fail(who + " writes overlapping bytes twice in one round: " + op_str(ops[clash]) + " and " + op_str(w));
      }
      if (w.slice.end() > ops[any].slice.end()) any = writes_idx_[j];
      if (overwrites(w.kind) && (over == ops.size() || w.slice.end() > ops[over].slice.end())) over = writes_idx_[j];
    }
  }

  void run_round(std::size_t r) {
    const Round& round = s_.rounds[r];
    if (!round.ops) fail(label(r) + ": has no ops generator");
    for (int p = 0; p < P_; ++p) {
      auto& ops = ops_[static_cast<std::size_t>(p)];
      ops.clear();
      try {
        round.ops(p, ops);
      } catch (const std::exception& e) {
        fail(label(r) + ": generating the ops of participant " + std::to_string(p) + " threw: " + e.what());
      } catch (...) {
        fail(label(r) + ": generating the ops of participant " + std::to_string(p) + " threw a non-standard exception");
      }
      validate(r, p, ops);
    }
    // 1. Sends snapshot the state at the start of the round.
    for (int p = 0; p < P_; ++p) {
      for (const Op& op : ops_[static_cast<std::size_t>(p)]) {
        if (op.kind != OpKind::send) continue;
        channels_[key(p, op.peer)].queue.push_back(
            Message{r, seq_++, op.slice, buffers_[static_cast<std::size_t>(p)].read(op.slice)});
        ++pending_;
        r_.bytes_on_wire += op.wire();
      }
    }
    // 2. Local reads, also against the start-of-round state.
    writes_.clear();
    for (int p = 0; p < P_; ++p) {
      for (const Op& op : ops_[static_cast<std::size_t>(p)]) {
        if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
        writes_.push_back(Write{p, op.slice, buffers_[static_cast<std::size_t>(p)].read(op.source), op.kind == OpKind::reduce});
      }
    }
    // 3. Receives match the oldest message of their channel.
    for (int p = 0; p < P_; ++p) {
      for (const Op& op : ops_[static_cast<std::size_t>(p)]) {
        if (op.kind != OpKind::recv && op.kind != OpKind::recv_reduce) continue;
        const std::string me = std::to_string(p), peer = std::to_string(op.peer);
        auto found = channels_.find(key(op.peer, p));
        Channel* ch = found == channels_.end() ? nullptr : &found->second;
        const bool have = ch && !ch->queue.empty() && (s_.asynchronous || ch->queue.front().round == r);
        if (!have) {
          std::string m = label(r) + ": participant " + me + " receives from " + peer + " but ";
          if (s_.asynchronous) {
            m += peer + " has no unreceived message to " + me + " (sent in this or an earlier round)";
          } else {
            m += peer + " sent nothing to " + me + " in this round";
            if (ch && ch->matched_round == r) {
              m += " beyond the " + std::to_string(ch->matched_in_round) + " message(s) already received";
            }
          }
          fail(m + " (" + op_str(op) + ")");
        }
        Message& msg = ch->queue.front();
        if (msg.slice.bytes != op.slice.bytes) {
          fail(label(r) + ": participant " + me + " receives into " + slice_str(op.slice) + " from " + peer + ", but the matching message from " + peer + " (sent in round " +
               std::to_string(msg.round) + " from " + slice_str(msg.slice) + ") is " + std::to_string(msg.slice.bytes) +
               " bytes");
        }
        writes_.push_back(Write{p, op.slice, std::move(msg.content), op.kind == OpKind::recv_reduce});
        ch->queue.pop_front();
        --pending_;
        if (ch->matched_round != r) {
          ch->matched_round = r;
          ch->matched_in_round = 0;
        }
        ++ch->matched_in_round;
        ++r_.messages;
      }
    }
    // 4. Writes apply (one participant's writes never overlap unless they all accumulate).
    for (const Write& w : writes_) {
      buffers_[static_cast<std::size_t>(w.participant)].write(w.slice, w.content, w.add, pool_);
    }
    if (!s_.asynchronous && pending_ > 0) fail_unreceived(r);
  }

  // Reports the earliest unreceived send (`r` = the round that just ended, or max at the end).
  void fail_unreceived(std::size_t r) {
    const Message* first = nullptr;
    std::uint64_t k = 0;
    for (const auto& [ck, ch] : channels_) {
      if (!ch.queue.empty() && (!first || ch.queue.front().seq < first->seq)) {
        first = &ch.queue.front();
        k = ck;
      }
    }
    const std::string from = std::to_string(k / static_cast<std::uint64_t>(P_));
    const std::string to = std::to_string(k % static_cast<std::uint64_t>(P_));
    std::string m = label(first->round) + ": participant " + from + " sent " + slice_str(first->slice) + " to " + to +
                    " but " + to;
    if (r == first->round) {
      m += " did not receive it in this round";
    } else {
      m += " never received it (" + std::to_string(pending_) + " message(s) left unreceived at the end)";
    }
    fail(m);
  }

  // A content in words: its multiset, and where it came from unless from its own place.
  std::string describe(const Content& c) const {
    std::string text = pool_.describe(c.id);
    if (c.mixed) return text + " from different places added together";
    const auto shift = static_cast<std::int64_t>(c.shift);
    if (shift != 0) text += " from " + std::to_string(shift < 0 ? -shift : shift) + " bytes " + (shift < 0 ? "before" : "after") + " its place";
    return text;
  }

  void check_final() {
    for (int w = 0; w < s_.workers; ++w) {
      const Buffer::Map& segs = buffers_[static_cast<std::size_t>(w)].segments();
      for (const Region& g : regions_) {
        if (!g.held_by.empty() && !g.held_by[static_cast<std::size_t>(w)]) continue;  // unspecified on this worker
        // The part of the region checked at once, with what it must hold: the whole region, or
        // one all-to-all block s (worker s's block w, `shift` bytes away).
        const int parts = g.kind == Region::Kind::transposed ? s_.workers : 1;
        for (int k = 0; k < parts; ++k) {
          Slice part = g.slice;
          Content want = held(g.kind == Region::Kind::own ? pool_.unit(w) : g.set_id, 0, false);
          std::string expect = g.kind == Region::Kind::own ? "only its own contribution " + pool_.describe(want.id)
                               : g.kind == Region::Kind::all ? g.set_text
                                                             : "contributors " + g.set_text + " once each";
          if (g.kind == Region::Kind::shifted) {
            const int from = (w - g.from_previous + s_.workers) % s_.workers;
            want = held(pool_.unit(from), 0, false);
            expect = "worker " + std::to_string(from) + "'s bytes (a send-receive from " + std::to_string(g.from_previous) + " before)";
          }
          if (g.kind == Region::Kind::transposed) {
            part = Slice{g.slice.offset + static_cast<std::uint64_t>(k) * g.block, g.block};
            const std::uint64_t from = g.slice.offset + static_cast<std::uint64_t>(w) * g.block;
            want = held(pool_.unit(k), from - part.offset, false);
            expect = "worker " + std::to_string(k) + "'s bytes " + slice_str(Slice{from, g.block}) + " (an all-to-all)";
          }
          if (part.bytes == 0) continue;
          auto it = std::prev(segs.upper_bound(part.offset));
          for (; it != segs.end() && it->first < part.end(); ++it) {
            if (it->second.c == want) continue;
            const std::uint64_t a = std::max(it->first, part.offset);
            const std::uint64_t b = std::min(it->second.end, part.end());
            fail("worker " + std::to_string(w) + " bytes " + range_str(a, b) + ": expected " + expect + ", found " + describe(it->second.c) +
                 (s_.expected.empty() ? "" : " (" + region_name(g) + ")"));
          }
        }
      }
    }
  }

  const Schedule& s_;
  SymbolicResult& r_;
  int P_;
  std::uint64_t size_;
  ContentPool pool_;
  std::vector<Region> regions_;
  std::vector<Buffer> buffers_;
  std::vector<std::vector<Op>> ops_;
  std::vector<std::size_t> writes_idx_;
  std::vector<Write> writes_;
  std::unordered_map<std::uint64_t, Channel> channels_;
  std::uint64_t pending_ = 0;
  std::uint64_t seq_ = 0;
};

}  // namespace

SymbolicResult check_schedule(const Schedule& schedule) {
  SymbolicResult result;
  try {
    Checker(schedule, result).run();
  } catch (const Failure& f) {
    result.ok = false;
    result.message = f.message;
  }
  return result;
}

}  // namespace gradsync::models
