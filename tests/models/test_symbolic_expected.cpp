// Tests of the symbolic executor (models/schedule/symbolic.h): the result each worker must hold
// (ExpectedRegion) checked on hand-built schedules, the right bytes in the right places.
#include "models/schedule/symbolic.h"
#include "support/collectives.h"
#include "support/symbolic_schedules.h"

#include <gtest/gtest.h>

#include <functional>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsync::models {
namespace {

using namespace test_symbolic;

// ---------------------------------------------------------------------------------------
// Expected regions.

TEST(SymbolicExpected, PartialAllReduceWithOwnOnlyRest) {
  // A 5-rank ring over the first 100 of 160 elements; the rest stays each worker's own.
  auto s = ring(5, 100, {}, 160);
  s.expected = {ExpectedRegion{Slice{400, 240}, false, true, {}}, ExpectedRegion{Slice{0, 400}, true, false, {}}};
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;

  s.expected.clear();  // default: the whole gradient all-reduced -> the tail is wrong
  expect_fails_with(check_schedule(s), {"worker 0 bytes [400, 640): expected every worker once, found {0:1}"});
}

Schedule sampled_rows(int N) {
  // Workers 0 and 2 sampled row [0, 16): they push it to server N, which sends the sum to all.
  Schedule s;
  s.workers = N;
  s.participants = workers_only(N);
  s.participants.push_back(Participant{Role::server, 0, {}});
  s.gradient_bytes = 64;
  const Slice row{0, 16};
  s.rounds.push_back(Round{"push", "", [=](int p, std::vector<Op>& out) {
                             if (p == 0 || p == 2) out.push_back(Op::send(N, row));
                             if (p == N) {
                               out.push_back(Op::recv_reduce(0, row));
                               out.push_back(Op::recv_reduce(2, row));
                             }
                           }});
  s.rounds.push_back(Round{"pull", "", [=](int p, std::vector<Op>& out) {
                             if (p < N) out.push_back(Op::recv(N, row));
                             else
                               for (int w = 0; w < N; ++w) out.push_back(Op::send(w, row));
                           }});
  return s;
}

TEST(SymbolicExpected, ContributorsRegion) {
  auto s = sampled_rows(4);
  s.expected = {ExpectedRegion{Slice{0, 16}, false, false, {2, 0}}, ExpectedRegion{Slice{16, 48}, false, true, {}}};
  const auto r = check_schedule(s);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.messages, 6u);
  EXPECT_EQ(r.bytes_on_wire, 6u * 16u);

  s.expected[0].contributors = {0, 1};
  expect_fails_with(check_schedule(s), {"worker 0 bytes [0, 16): expected contributors {0:1, 1:1} once each, found {0:1, 2:1}",
                                        "expected region #0"});
}

TEST(SymbolicExpected, InvalidRegions) {
  auto s = sampled_rows(3);
  // Two regions each, one summed over listed contributors and one own-only, wrong in one way each.
  struct Case {
    ExpectedRegion first, second;
    const char* message;
  };
  const Case cases[] = {
      {ExpectedRegion{Slice{0, 16}, false, false, {0, 2}}, ExpectedRegion{Slice{20, 44}, false, true, {}},
       "bytes [16, 20) of the gradient uncovered"},
      {ExpectedRegion{Slice{0, 16}, false, false, {0, 2}}, ExpectedRegion{Slice{12, 52}, false, true, {}},
       "expected region #1 [12, 64) (52 bytes) overlaps expected region #0 [0, 16)"},
      {ExpectedRegion{Slice{0, 16}, false, false, {0, 2}}, ExpectedRegion{Slice{16, 40}, false, true, {}},
       "bytes [56, 64) of the gradient uncovered"},
      {ExpectedRegion{Slice{0, 16}, false, false, {0, 2}}, ExpectedRegion{Slice{16, 60}, false, true, {}},
       "expected region #1 [16, 76) (60 bytes) lies outside the gradient [0, 64)"},
      {ExpectedRegion{Slice{0, 16}, false, false, {0, 3}}, ExpectedRegion{Slice{16, 48}, false, true, {}},
       "contributor 3 is not a worker"},
      {ExpectedRegion{Slice{0, 16}, false, false, {2, 2}}, ExpectedRegion{Slice{16, 48}, false, true, {}},
       "contributor 2 is listed twice"},
      {ExpectedRegion{Slice{0, 16}, true, false, {0, 2}}, ExpectedRegion{Slice{16, 48}, false, true, {}},
       "sets all_workers and also lists contributors"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    s.expected = {c.first, c.second};
    expect_fails_with(check_schedule(s), {c.message});
  }
}

// The result kinds of the collectives other than all-reduce: a shard on its owner only, each
// block from its owner, the root's copy everywhere, the sum at the root only, the all-to-all's
// blocks transposed.
TEST(SymbolicExpected, ResultKindsOfTheCollectives) {
  namespace c = test_collectives;
  for (int n : {2, 3, 5}) {
    for (std::uint64_t elements : {std::uint64_t{1}, std::uint64_t{103}}) {
      SCOPED_TRACE("N=" + std::to_string(n) + " elements=" + std::to_string(elements));
      for (const Schedule& s : {c::reduce_scatter(n, elements), c::all_gather(n, elements), c::broadcast(n, elements, n - 1),
                                c::reduce(n, elements, 1 % n), c::alltoall(n, elements)}) {
        const auto r = check_schedule(s);
        EXPECT_TRUE(r.ok) << s.strategy << ": " << r.message;
      }
    }
  }
  // A reduce-scatter holds each shard on one worker only: asked of every worker, or of another
  // owner, it fails; so does an all-gather asked for sums.
  auto rs = c::reduce_scatter(4, 100);
  rs.expected[0].holders = {0};
  expect_fails_with(check_schedule(rs), {"worker 0 bytes [0, 100): expected every worker once, found"});
  rs.expected[0].holders.clear();
  expect_fails_with(check_schedule(rs), {"expected every worker once"});
  auto ag = c::all_gather(3, 30);
  ag.expected[1] = ExpectedRegion{ag.expected[1].slice, true, false, {}};
  expect_fails_with(check_schedule(ag), {"expected every worker once, found {0:1}"});
  // The reduce's sum is at the root only; the broadcast's copy is the root's alone.
  auto red = c::reduce(3, 10, 0);
  red.expected[0].holders.clear();
  expect_fails_with(check_schedule(red), {"worker 1 bytes [0, 40): expected every worker once, found {1:1}"});
  auto bc = c::broadcast(3, 10, 2);
  bc.expected[0].contributors = {0};
  expect_fails_with(check_schedule(bc), {"worker 0 bytes [0, 40): expected contributors {0:1} once each, found {2:1}"});
  // Holders are workers, listed once, and own_only regions have none (every worker keeps its own).
  red = c::reduce(3, 10, 0);
  red.expected[0].holders = {3};
  expect_fails_with(check_schedule(red), {"holder 3 is not a worker (workers 0..2)"});
  red.expected[0].holders = {1, 1};
  expect_fails_with(check_schedule(red), {"holder 1 is listed twice"});
  red.expected[0] = ExpectedRegion{red.expected[0].slice, false, true, {}};
  red.expected[0].holders = {0};
  expect_fails_with(check_schedule(red), {"sets own_only and also lists holders"});
}

// Where a contribution lands matters, not only whose it is: an all-gather in which worker 1
// puts its own first block where its second belongs holds the right worker's bytes in the wrong
// place (a checker that tracked only whose bytes a region holds proved it).
TEST(SymbolicExpected, AContributionInTheWrongPlaceIsCaught) {
  Schedule s;
  s.workers = 2;
  s.participants = workers_only(2);
  s.gradient_bytes = 80;
  s.expected = {ExpectedRegion{Slice{0, 40}, false, false, {0}}, ExpectedRegion{Slice{40, 40}, false, false, {1}}};
  auto gather = [&s](Slice sent_by_1) {
    s.rounds = {Round{"all-gather", "", [sent_by_1](int p, std::vector<Op>& out) {
      if (p == 0) {
        out.push_back(Op::send(1, Slice{0, 40}));
        out.push_back(Op::recv(1, Slice{40, 40}));
      } else {
        out.push_back(Op::send(0, sent_by_1));
        out.push_back(Op::recv(0, Slice{0, 40}));
      }
    }}};
    return check_schedule(s);
  };
  EXPECT_TRUE(gather(Slice{40, 40}).ok);
  expect_fails_with(gather(Slice{0, 40}),
                    {"worker 0 bytes [40, 80): expected contributors {1:1} once each, found {1:1} from 40 bytes before its place"});
}

// An all-to-all's region: worker r's block s holds worker s's block r. Each worker keeps its own
// block and swaps the others pairwise; sending the wrong block, or the right one to the wrong
// place, is caught; a region that is not one block per worker is refused.
TEST(SymbolicExpected, AllToAllBlocksAreTransposed) {
  constexpr int N = 3;
  constexpr std::uint64_t block = 12;
  auto alltoall = [](int wrong_block) {
    Schedule s;
    s.workers = N;
    s.participants = workers_only(N);
    s.gradient_bytes = N * block;
    s.scratch_bytes = N * block;
    // Everything goes through scratch (the receive buffer), then back over the gradient.
    s.rounds.push_back(Round{"alltoall", "", [wrong_block](int p, std::vector<Op>& out) {
      for (int q = 0; q < N; ++q) {
        const std::uint64_t sent = static_cast<std::uint64_t>(p == 0 && q == 1 ? wrong_block : q) * block;
        if (q == p) {
          out.push_back(Op::copy(Slice{sent, block}, Slice{N * block + static_cast<std::uint64_t>(p) * block, block}));
        } else {
          out.push_back(Op::send(q, Slice{sent, block}));
          out.push_back(Op::recv(q, Slice{N * block + static_cast<std::uint64_t>(q) * block, block}));
        }
      }
    }});
    s.rounds.push_back(Round{"unpack", "", [](int, std::vector<Op>& out) { out.push_back(Op::copy(Slice{N * block, N * block}, Slice{0, N * block})); }});
    ExpectedRegion e{Slice{0, N * block}, false, false, {}};
    e.transposed_blocks = N;
    s.expected = {e};
    return s;
  };
  const auto right = check_schedule(alltoall(1));
  EXPECT_TRUE(right.ok) << right.message;
  expect_fails_with(check_schedule(alltoall(2)),
                    {"worker 1 bytes [0, 12): expected worker 0's bytes [12, 24) (12 bytes) (an all-to-all), found {0:1} from 24 bytes "
                     "after its place"});
  Schedule s = alltoall(1);
  s.expected.front().transposed_blocks = 2;
  expect_fails_with(check_schedule(s), {"transposed_blocks = 2; expected one block per worker (3)"});
  s.expected.front().transposed_blocks = N;
  s.expected.front().holders = {0};
  expect_fails_with(check_schedule(s), {"is an all-to-all's (transposed_blocks) and also sets"});
}

TEST(SymbolicExpected, SendReceiveHoldsThePreviousWorkersBytes) {
  constexpr int N = 3;
  constexpr std::uint64_t bytes = 16;
  // Each worker sends its buffer to `to(p)` and takes what arrives (through scratch) as its result.
  auto sendrecv = [](std::function<int(int)> to) {
    Schedule s;
    s.workers = N;
    s.participants = workers_only(N);
    s.gradient_bytes = bytes;
    s.scratch_bytes = bytes;
    s.rounds.push_back(Round{"sendrecv", "", [to](int p, std::vector<Op>& out) {
      out.push_back(Op::send(to(p), Slice{0, bytes}));
      for (int q = 0; q < N; ++q) {
        if (to(q) == p) out.push_back(Op::recv(q, Slice{bytes, bytes}));
      }
    }});
    s.rounds.push_back(Round{"unpack", "", [](int, std::vector<Op>& out) { out.push_back(Op::copy(Slice{bytes, bytes}, Slice{0, bytes})); }});
    ExpectedRegion e{Slice{0, bytes}, false, false, {}};
    e.from_previous = 1;
    s.expected = {e};
    return s;
  };
  const auto right = check_schedule(sendrecv([](int p) { return (p + 1) % N; }));
  EXPECT_TRUE(right.ok) << right.message;
  // Sent backwards: worker 0 holds worker 1's bytes, not worker 2's.
  expect_fails_with(check_schedule(sendrecv([](int p) { return (p + N - 1) % N; })),
                    {"worker 0 bytes [0, 16): expected worker 2's bytes (a send-receive from 1 before), found {1:1}"});
  Schedule s = sendrecv([](int p) { return (p + 1) % N; });
  s.expected.front().from_previous = N;
  expect_fails_with(check_schedule(s), {"from_previous = 3; expected 1 .. 2"});
  s.expected.front().from_previous = 1;
  s.expected.front().contributors = {0};
  expect_fails_with(check_schedule(s), {"is a send-receive's (from_previous) and also sets"});
}

}  // namespace
}  // namespace gradsync::models
