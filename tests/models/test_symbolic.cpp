// Tests of the symbolic executor (models/schedule/symbolic.h) on hand-built schedules.
#include "models/schedule/kernels.h"
#include "models/schedule/symbolic.h"
#include "support/symbolic_schedules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gradsync::models {
namespace {

using namespace test_symbolic;

// ---------------------------------------------------------------------------------------
// Correct schedules.

TEST(SymbolicRing, TwoRanksAllReduce) {
  const auto r = check_schedule(ring(2, 10));
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 4u);
  EXPECT_EQ(r.bytes_on_wire, 2u * 1u * 40u);
}

TEST(SymbolicRing, NRanksAllElementCounts) {
  for (int N : {1, 2, 3, 5}) {
    for (std::uint64_t e : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, static_cast<std::uint64_t>(N + 1),
                            std::uint64_t{1048579}}) {
      SCOPED_TRACE("N=" + std::to_string(N) + " elements=" + std::to_string(e));
      const auto r = check_schedule(ring(N, e));
      EXPECT_TRUE(r.ok) << r.message;
      // 2(N-1) sends per rank, all matched; every byte of the gradient crosses 2(N-1) times.
      EXPECT_EQ(r.messages, static_cast<std::uint64_t>(2 * N * (N - 1)));
      EXPECT_EQ(r.bytes_on_wire, static_cast<std::uint64_t>(2 * (N - 1)) * e * kEb);
    }
  }
}

TEST(SymbolicRing, WireBytesCountCompressedSize) {
  // Every send claims a wire size of a quarter of its slice (8-bit quantisation).
  auto s = ring(4, 64, [](std::size_t, int, std::vector<Op>& ops) {
    for (auto& op : ops) {
      if (op.kind == OpKind::send) op.wire_bytes = op.slice.bytes / 4;
    }
  });
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 24u);
  EXPECT_EQ(r.bytes_on_wire, 2u * 3u * 64u);  // 2(N-1) * 256 bytes / 4
}

TEST(SymbolicRing, EncodedPayloadsKernelsAndComputeChangeNoContributions) {
  auto s = ring(3, 30, [](std::size_t, int, std::vector<Op>& ops) {
    const Slice sent = ops[0].slice;
    static const Encoding one_bit{&one_bit_codec(), 4};
    static const KernelCall divide = divide_call(3);
    ops[0].encode_with(one_bit, kEb);  // the send and its receive
    ops[1].encode_with(one_bit, kEb);
    ops.push_back(Op::run(divide, sent));
    ops.push_back(Op::compute(1e-3));
  });
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  // 10 values of 4 bytes a block: 2 bytes of bits and 3 groups of two 4-byte scales.
  EXPECT_EQ(r.bytes_on_wire, 2u * 3u * 2u * (2u + 3u * 8u));
}

TEST(SymbolicRing, AKernelOperandOutsideTheBufferIsReported) {
  auto s = ring(2, 8, [](std::size_t, int, std::vector<Op>& ops) {
    const Slice target = ops[0].slice;
    static KernelCall update;
    update = block_momentum_call(target, Slice{1u << 20, target.bytes}, 0.5, 1, false);
    ops.push_back(Op::run(update, target));
  });
  const auto r = check_schedule(s);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("block_momentum on"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("is outside the buffer"), std::string::npos) << r.message;
}

TEST(SymbolicPs, RoundTripThroughServer) {
  for (int N : {1, 2, 4, 7}) {
    const auto r = check_schedule(ps_round_trip(N, 1000));
    EXPECT_TRUE(r.ok) << r.message;
    EXPECT_EQ(r.messages, static_cast<std::uint64_t>(2 * N));
    EXPECT_EQ(r.bytes_on_wire, static_cast<std::uint64_t>(2 * N) * 4000u);
  }
}

TEST(SymbolicLocal, CopyAndReduceReadTheStartOfTheRound) {
  // Two workers, scratch = one gradient. Round 0: swap gradients (recv overwrites the
  // gradient) AND copy the gradient to scratch: the copy must see the OLD gradient.
  // Round 1: reduce scratch into the gradient -> {0:1, 1:1} on both.
  Schedule s;
  s.workers = 2;
  s.participants = workers_only(2);
  s.gradient_bytes = 40;
  s.scratch_bytes = 40;
  const Slice g{0, 40}, scratch{40, 40};
  s.rounds.push_back(Round{"exchange", "", [=](int p, std::vector<Op>& out) {
                             out.push_back(Op::send(1 - p, g));
                             out.push_back(Op::recv(1 - p, g));
                             out.push_back(Op::copy(g, scratch));
                           }});
  s.rounds.push_back(Round{"combine", "", [=](int, std::vector<Op>& out) { out.push_back(Op::reduce(scratch, g)); }});
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 2u);
}

TEST(SymbolicLocal, SendSnapshotsBeforeReceiveOverwrites) {
  // Swapping through the same slice in one round gives each worker the OTHER's gradient.
  Schedule s;
  s.workers = 2;
  s.participants = workers_only(2);
  s.gradient_bytes = 40;
  s.rounds.push_back(Round{"swap", "", [](int p, std::vector<Op>& out) {
                             out.push_back(Op::send(1 - p, Slice{0, 40}));
                             out.push_back(Op::recv(1 - p, Slice{0, 40}));
                           }});
  s.expected = {ExpectedRegion{Slice{0, 40}, false, true, {}}};
  const auto r = check_schedule(s);
  expect_fails_with(r, {"worker 0 bytes [0, 40): expected only its own contribution {0:1}, found {1:1}"});
}

TEST(SymbolicLocal, ReducingOwnGradientTwiceIsCaught) {
  Schedule s;
  s.workers = 3;
  s.participants = workers_only(3);
  s.gradient_bytes = 400;
  s.scratch_bytes = 100;
  s.rounds.push_back(Round{"stage", "", [](int p, std::vector<Op>& out) {
                             if (p == 2) out.push_back(Op::copy(Slice{300, 100}, Slice{400, 100}));
                           }});
  s.rounds.push_back(Round{"fold", "", [](int p, std::vector<Op>& out) {
                             if (p == 2) out.push_back(Op::reduce(Slice{400, 100}, Slice{300, 100}));
                           }});
  s.expected = {ExpectedRegion{Slice{0, 400}, false, true, {}}};
  expect_fails_with(check_schedule(s), {"worker 2 bytes [300, 400): expected only its own contribution {2:1}, found {2:2}"});
}

TEST(SymbolicLocal, RandomLocalOpsMatchAPerByteReference) {
  // One worker, 40-byte gradient + 24 bytes scratch, random copies and reductions. A per-byte
  // reference keeps, for every byte, the original bytes it holds (a multiset of positions);
  // the expected regions are its runs of bytes alike (as many, from as far, or from different
  // places), each expected to hold its own byte once (or nothing, where it holds none), so the
  // first run holding anything else must be reported exactly: twice, from elsewhere, or from
  // different places added together (this exercises interval splitting, adding, moving and
  // neighbour merging).
  std::uint64_t seed = 12345;
  auto next = [&seed](std::uint64_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (seed >> 33) % n;
  };
  constexpr std::uint64_t G = 40, B = 64;
  int bad_runs = 0, moved_runs = 0, mixed_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::vector<std::vector<std::uint64_t>> ref(B);
    for (std::uint64_t i = 0; i < G; ++i) ref[i] = {i};
    auto plan = std::make_shared<std::vector<std::vector<Op>>>();
    const int rounds = 1 + static_cast<int>(next(6));
    for (int r = 0; r < rounds; ++r) {
      std::vector<Op> ops;
      std::vector<int> written(B, 0);  // 1: accumulated, 2: overwritten
      const auto before = ref;
      const int n = 1 + static_cast<int>(next(3));
      for (int k = 0; k < n; ++k) {
        const std::uint64_t bytes = next(20);
        const Slice from{next(B - bytes + 1), bytes}, to{next(B - bytes + 1), bytes};
        const bool add = next(2) == 1;
        bool clash = false;
        for (std::uint64_t i = to.offset; i < to.end(); ++i) clash |= written[i] == 2 || (written[i] && !add);
        if (clash) continue;
        for (std::uint64_t i = 0; i < bytes; ++i) {
          written[to.offset + i] = add ? std::max(written[to.offset + i], 1) : 2;
          auto& held = ref[to.offset + i];
          if (!add) held.clear();
          held.insert(held.end(), before[from.offset + i].begin(), before[from.offset + i].end());
        }
        ops.push_back(add ? Op::reduce(from, to) : Op::copy(from, to));
      }
      plan->push_back(std::move(ops));
    }
    Schedule s;
    s.workers = 1;
    s.participants = workers_only(1);
    s.gradient_bytes = G;
    s.scratch_bytes = B - G;
    for (std::size_t r = 0; r < plan->size(); ++r) {
      s.rounds.push_back(Round{"local", "", [plan, r](int, std::vector<Op>& out) {
                                 out.insert(out.end(), (*plan)[r].begin(), (*plan)[r].end());
                               }});
    }
    // A byte as the checker sees it: how many, and how far away (or from different places).
    struct Held {
      std::size_t count = 0;
      bool mixed = false;
      std::int64_t shift = 0;
      bool operator==(const Held&) const = default;
    };
    auto seen = [&ref](std::uint64_t x) {
      Held h{ref[x].size()};
      for (std::size_t i = 0; i < ref[x].size(); ++i) {
        const auto d = static_cast<std::int64_t>(ref[x][i]) - static_cast<std::int64_t>(x);
        if (i == 0) h.shift = d;
        else if (d != h.shift) h.mixed = true;
      }
      if (h.mixed || h.count == 0) h.shift = 0;
      return h;
    };
    std::string first_bad;
    for (std::uint64_t a = 0; a < G;) {
      std::uint64_t b = a;
      const Held h = seen(a);
      while (b < G && seen(b) == h) ++b;
      s.expected.push_back(h.count == 0 ? ExpectedRegion{Slice{a, b - a}, false, false, {}}
                                        : ExpectedRegion{Slice{a, b - a}, false, true, {}});
      if (h.count > 0 && (h.count != 1 || h.mixed || h.shift != 0) && first_bad.empty()) {
        std::string found = "{0:" + std::to_string(h.count) + "}";
        if (h.mixed) {
          found += " from different places added together";
          ++mixed_runs;
        } else if (h.shift != 0) {
          found += " from " + std::to_string(h.shift < 0 ? -h.shift : h.shift) + " bytes " + (h.shift < 0 ? "before" : "after") + " its place";
          ++moved_runs;
        }
        first_bad = "worker 0 bytes [" + std::to_string(a) + ", " + std::to_string(b) +
                    "): expected only its own contribution {0:1}, found " + found;
        ++bad_runs;
      }
      a = b;
    }
    const auto res = check_schedule(s);
    if (first_bad.empty()) {
      EXPECT_TRUE(res.ok) << res.message;
    } else {
      expect_fails_with(res, {first_bad});
    }
  }
  // The trials reach every kind of wrong result.
  EXPECT_GT(bad_runs, 50);
  EXPECT_GT(moved_runs, 10);
  EXPECT_GT(mixed_runs, 10);
}

// ---------------------------------------------------------------------------------------
// Failure modes.

TEST(SymbolicFailure, MissingSend) {
  auto s = ring(5, 50, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 3 && p == 1) ops.erase(ops.begin());  // drop 1's send to 2
  });
  const auto r = check_schedule(s);
  expect_fails_with(r, {"round 3 (reduce-scatter): participant 2 receives from 1 but 1 sent nothing to 2 in this round"});
}

TEST(SymbolicFailure, SecondReceiveWithOnlyOneSend) {
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 1 && p == 2) ops.push_back(Op::recv(1, Slice{100, 4}));  // block 2, not written otherwise
  });
  expect_fails_with(check_schedule(s), {"round 1 (reduce-scatter): participant 2 receives from 1", "beyond the 1 message(s)"});
}

TEST(SymbolicFailure, SizeMismatch) {
  // N=3, 30 elements: 10-element (40-byte) blocks. In round 1, rank 0 sends 4 bytes short.
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 1 && p == 0) ops[0].slice.bytes -= 4;
  });
  const auto r = check_schedule(s);
  expect_fails_with(r, {"round 1 (reduce-scatter)", "participant 1 receives into", "(40 bytes) from 0", "is 36 bytes"});
}

TEST(SymbolicFailure, UnreceivedSendSynchronous) {
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 3 && p == 2) ops.push_back(Op::send(0, Slice{0, 4}));
  });
  expect_fails_with(check_schedule(s),
                    {"round 3 (all-gather): participant 2 sent [0, 4) (4 bytes) to 0 but 0 did not receive it in this round"});
}

TEST(SymbolicFailure, UnreceivedSendAsynchronous) {
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 1 && p == 2) ops.push_back(Op::send(1, Slice{0, 4}));  // the ring never uses 2 -> 1
  });
  s.asynchronous = true;
  expect_fails_with(check_schedule(s),
                    {"round 1 (reduce-scatter): participant 2 sent [0, 4) (4 bytes) to 1 but 1 never received it"});
}

TEST(SymbolicFailure, PeerOutOfRangeOrSelf) {
  auto bad_peer = [](int peer) {
    return ring(5, 50, [peer](std::size_t round, int p, std::vector<Op>& ops) {
      if (round == 2 && p == 1) ops[0].peer = peer;
    });
  };
  expect_fails_with(check_schedule(bad_peer(7)), {"round 2 (reduce-scatter): participant 1", "peer 7 is out of range", "0..4"});
  expect_fails_with(check_schedule(bad_peer(-1)), {"round 2", "participant 1", "peer -1 is out of range"});
  expect_fails_with(check_schedule(bad_peer(1)), {"round 2", "participant 1", "send", "peer is itself"});
}

TEST(SymbolicFailure, SliceOutOfBounds) {
  // 30 elements = 120 bytes; rank 2 receives into [116, 126) in round 0.
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 0 && p == 2) ops[1].slice = Slice{116, 10};
  });
  expect_fails_with(check_schedule(s), {"round 0", "participant 2", "[116, 126) (10 bytes)", "exceeds the buffer of 120 bytes"});

  auto huge = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 0 && p == 0) ops[0].slice = Slice{~0ull - 1, 8};  // offset + bytes overflows
  });
  expect_fails_with(check_schedule(huge), {"round 0", "participant 0", "exceeds the buffer of 120 bytes"});

  auto source = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 1 && p == 1) ops.push_back(Op::copy(Slice{100, 40}, Slice{0, 40}));
  });
  expect_fails_with(check_schedule(source), {"round 1", "participant 1", "source [100, 140) (40 bytes) exceeds the buffer of 120 bytes"});

  auto sizes = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 1 && p == 1) ops.push_back(Op::reduce(Slice{0, 8}, Slice{100, 4}));
  });
  expect_fails_with(check_schedule(sizes), {"round 1", "participant 1", "source is 8 bytes but destination is 4 bytes"});
}

TEST(SymbolicFailure, OverlappingWrites) {
  // Rank 0 in round 0 receive-reduces block 2 = [80, 120); a copy into [100, 104) overlaps it.
  auto s = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 0 && p == 0) ops.push_back(Op::copy(Slice{0, 4}, Slice{100, 4}));
  });
  expect_fails_with(check_schedule(s), {"round 0 (reduce-scatter): participant 0 writes overlapping bytes",
                                        "recv_reduce from 2 into [80, 120) (40 bytes)", "copy [0, 4) (4 bytes) to [100, 104)"});

  // Two overwriting receives into the same bytes.
  auto two = ps_round_trip(3, 10);
  two.rounds[1].ops = [](int p, std::vector<Op>& out) {
    if (p < 3) {
      out.push_back(Op::recv(3, Slice{0, 40}));
      if (p == 1) out.push_back(Op::recv(3, Slice{36, 4}));
    } else {
      for (int w = 0; w < 3; ++w) out.push_back(Op::send(w, Slice{0, 40}));
      out.push_back(Op::send(1, Slice{36, 4}));
    }
  };
  expect_fails_with(check_schedule(two), {"round 1 (pull): participant 1 writes overlapping bytes", "recv from 3 into [0, 40)",
                                          "recv from 3 into [36, 40)"});

  // Accumulating writes may overlap (the server in ps_round_trip); zero-byte writes never overlap.
  auto zero = ring(3, 30, [](std::size_t round, int p, std::vector<Op>& ops) {
    if (round == 0 && p == 0) ops.push_back(Op::copy(Slice{0, 0}, Slice{100, 0}));
  });
  EXPECT_TRUE(check_schedule(zero).ok);
}

TEST(SymbolicFailure, GeneratorThrows) {
  auto s = ring(4, 40, [](std::size_t round, int p, std::vector<Op>&) {
    if (round == 4 && p == 2) throw std::runtime_error("boom: no block 9");
  });
  expect_fails_with(check_schedule(s), {"round 4 (all-gather): generating the ops of participant 2 threw: boom: no block 9"});
}

TEST(SymbolicFailure, RingReducingOneBlockTwice) {
  // N=3, 12 elements (16-byte blocks): repeating the first reduce-scatter round adds every
  // block's first contribution twice.
  auto s = ring(3, 12);
  const Round first = s.rounds[0];
  s.rounds.insert(s.rounds.begin() + 1, first);
  const auto r = check_schedule(s);
  expect_fails_with(r, {"worker 0 bytes [0, 16): expected every worker once, found {0:2, 1:1, 2:1}"});
}

TEST(SymbolicFailure, StructuralProblems) {
  auto s = ps_round_trip(2, 10);
  s.participants[2].role = Role::worker;
  expect_fails_with(check_schedule(s), {"participant 2 has role worker but workers = 2"});
  s.workers = 4;
  expect_fails_with(check_schedule(s), {"workers = 4 but only 3 participants"});
}

// ---------------------------------------------------------------------------------------
// Asynchronous schedules.

Schedule delayed_ps(int N, bool asynchronous) {
  // Every message is received one round after it was sent.
  Schedule s;
  s.workers = N;
  s.participants = workers_only(N);
  s.participants.push_back(Participant{Role::server, 0, {}});
  s.gradient_bytes = 400;
  s.asynchronous = asynchronous;
  const Slice all{0, 400};
  s.rounds.push_back(Round{"push", "", [=](int p, std::vector<Op>& out) {
                             if (p < N) out.push_back(Op::send(N, all));
                           }});
  s.rounds.push_back(Round{"server-recv", "", [=](int p, std::vector<Op>& out) {
                             if (p == N)
                               for (int w = 0; w < N; ++w) out.push_back(Op::recv_reduce(w, all));
                           }});
  s.rounds.push_back(Round{"pull", "", [=](int p, std::vector<Op>& out) {
                             if (p == N)
                               for (int w = 0; w < N; ++w) out.push_back(Op::send(w, all));
                           }});
  s.rounds.push_back(Round{"worker-recv", "", [=](int p, std::vector<Op>& out) {
                             if (p < N) out.push_back(Op::recv(N, all));
                           }});
  return s;
}

TEST(SymbolicAsync, ReceiveOneRoundAfterSend) {
  const auto r = check_schedule(delayed_ps(3, true));
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 6u);
  EXPECT_EQ(r.bytes_on_wire, 2400u);

  expect_fails_with(check_schedule(delayed_ps(3, false)),
                    {"round 0 (push): participant 0 sent [0, 400) (400 bytes) to 3 but 3 did not receive it in this round"});
}

TEST(SymbolicAsync, ChannelsAreFifo) {
  // Worker 0 sends [0, 8) then [8, 24) to worker 1; worker 1 receives in the other order.
  Schedule s;
  s.workers = 2;
  s.participants = workers_only(2);
  s.gradient_bytes = 24;
  s.asynchronous = true;
  s.expected = {ExpectedRegion{Slice{0, 24}, false, false, {0, 1}}};
  s.rounds.push_back(Round{"push", "", [](int p, std::vector<Op>& out) {
                             if (p == 0) {
                               out.push_back(Op::send(1, Slice{0, 8}));
                               out.push_back(Op::send(1, Slice{8, 16}));
                             }
                           }});
  s.rounds.push_back(Round{"take", "", [](int p, std::vector<Op>& out) {
                             if (p == 1) {
                               out.push_back(Op::recv_reduce(0, Slice{8, 16}));
                               out.push_back(Op::recv_reduce(0, Slice{0, 8}));
                             }
                           }});
  expect_fails_with(check_schedule(s), {"round 1 (take): participant 1 receives into [8, 24) (16 bytes) from 0",
                                        "(sent in round 0 from [0, 8) (8 bytes)) is 8 bytes"});
  s.rounds[1].ops = [](int p, std::vector<Op>& out) {
    if (p == 1) {
      out.push_back(Op::recv_reduce(0, Slice{0, 8}));
      out.push_back(Op::recv_reduce(0, Slice{8, 16}));
    }
  };
  // Worker 1 now holds {0,1}; worker 0 still only its own.
  expect_fails_with(check_schedule(s), {"worker 0 bytes [0, 24): expected contributors {0:1, 1:1} once each, found {0:1}"});
}

// ---------------------------------------------------------------------------------------
// Large schedules (their speed is gradsync-bench's: `gradsync-bench models`).

TEST(SymbolicLarge, NineRanksOneMebiElementsPlusThree) {
  const auto s = ring(9, (1u << 20) + 3);
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 9u * 16u);
}

TEST(SymbolicLarge, SixtyFourRanks) {
  const auto s = ring(64, 4096 + 5);
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 64u * 126u);
}

}  // namespace
}  // namespace gradsync::models
