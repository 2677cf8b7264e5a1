// Analytic cost by distinct rounds (issue 16): a round a strategy declares equal in cost to
// an earlier one (Round::same_as: a ring's steps when its blocks are equal) is not walked
// again, nor are the participants a round declares to do what they did in the round before
// (Round::same_ops_as_previous: a pipeline's fill and drain). The shortcut must give exactly what walking every round gives, so must pricing the
// rounds on several threads, and the symbolic checker must refuse a declaration that does not
// hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "models/executors/analytic.h"
#include "models/support/error.h"
#include "models/executors/predict.h"
#include "models/schedule/symbolic.h"
#include "models/topology/topology_io.h"
#include "support/topologies.h"

using namespace gradsync::models;

namespace {

void expect_identical(const AnalyticResult& fast, const AnalyticResult& every, const std::string& what) {
  EXPECT_EQ(fast.sync_s, every.sync_s) << what;
  EXPECT_EQ(fast.iteration_s, every.iteration_s) << what;
  ASSERT_EQ(fast.phases.size(), every.phases.size()) << what;
  for (std::size_t i = 0; i < fast.phases.size(); ++i) {
    EXPECT_EQ(fast.phases[i].name, every.phases[i].name) << what;
    EXPECT_EQ(fast.phases[i].seconds, every.phases[i].seconds) << what << " " << fast.phases[i].name;
  }
  ASSERT_EQ(fast.bounding_links.size(), every.bounding_links.size()) << what;
  for (std::size_t i = 0; i < fast.bounding_links.size(); ++i) {
    EXPECT_EQ(fast.bounding_links[i].link, every.bounding_links[i].link) << what;
    EXPECT_EQ(fast.bounding_links[i].forward, every.bounding_links[i].forward) << what;
    EXPECT_EQ(fast.bounding_links[i].seconds, every.bounding_links[i].seconds) << what;
  }
  EXPECT_EQ(fast.engine_bound_s, every.engine_bound_s) << what;
}

}  // namespace

TEST(DistinctRounds, EqualToWalkingEveryRoundOnEveryShippedTopology) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(GRADSYNC_TOPOLOGIES)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 5u);
  std::size_t skipped_rounds = 0, repeating_rounds = 0, schedules = 0;
  for (const auto& file : files) {
    const LoadedTopology loaded = load_topology_file(file.string());
    const Topology& t = loaded.topology;
    // Every GPU of the machines; on the large clusters the first 64 (the reference walks
    // every round: N^2 transfers).
    const int n = std::min<int>(64, static_cast<int>(t.gpus().size()));
    for (const Strategy* strategy : all_strategies()) {
      // Blocks that split evenly (rounds declared alike) and unevenly (none declared).
      for (double elements : {1024.0 * n * 16, 1024.0 * n * 16 + 3}) {
        PredictRequest q;
        q.topology = &t;
        q.strategy = strategy;
        q.bytes = 4 * elements;
        q.placement = first_gpus(t, n);
        std::optional<BuiltSchedule> built;
        try {
          built.emplace(build_schedule(q));
        } catch (const InputError&) {
          continue;  // the strategy does not apply here (it says why elsewhere)
        }
        const Schedule& s = built->schedule;
        for (const Round& r : s.rounds) {
          skipped_rounds += r.same_as >= 0;
          repeating_rounds += static_cast<bool>(r.same_ops_as_previous);
        }
        const auto costs = participant_costs(s);
        const std::string what = file.filename().string() + " " + strategy->name + " N=" + std::to_string(n) +
                                 " elements=" + std::to_string(static_cast<long long>(elements));
        const AnalyticResult fast = run_analytic(t, s, costs, 0.01, false, 1);
        expect_identical(fast, run_analytic(t, s, costs, 0.01, true), what);
        // Priced on four threads (each with its own scratch), summed in the same order.
        expect_identical(run_analytic(t, s, costs, 0.01, false, 4), fast, what + " on 4 threads");
        ++schedules;
      }
    }
  }
  std::printf("%zu schedules, %zu rounds taken from an earlier one, %zu with participants repeating the round before\n",
              schedules, skipped_rounds, repeating_rounds);
  EXPECT_GT(skipped_rounds, 100u);  // the shortcuts were taken, not just never declared
  EXPECT_GT(repeating_rounds, 10u);
}

TEST(DistinctRounds, TheCheckerRefusesADeclarationThatDoesNotHold) {
  // A ring of 4 over 7 values: blocks of 2, 2, 2 and 1 value, so its steps differ in bytes
  // participant by participant.
  const LoadedTopology loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  PredictRequest q;
  q.topology = &loaded.topology;
  q.strategy = &find_strategy("ring");
  q.bytes = 4 * 7;
  q.placement = first_gpus(loaded.topology, 4);
  // Its steps are declared as the first turned along the ring.
  Schedule s = build_schedule(q).schedule;
  ASSERT_TRUE(check_schedule(s).ok) << check_schedule(s).message;
  EXPECT_EQ(s.rounds[1].same_as, 0);
  EXPECT_TRUE(s.rounds[1].rotated());
  // Turned by the wrong amount, or not turned at all: refused.
  for (int by : {2, 0}) {
    Schedule wrong_turn = build_schedule(q).schedule;
    wrong_turn.rounds[1].rotated_by = by;
    const SymbolicResult wrong = check_schedule(wrong_turn);
    EXPECT_FALSE(wrong.ok) << by;
    EXPECT_NE(wrong.message.find("declared equal in cost to round 0"), std::string::npos) << wrong.message;
  }
  // Equal blocks (8 values): the ring's steps are declared alike, and the checker agrees.
  q.bytes = 4 * 8;
  const Schedule even = build_schedule(q).schedule;
  EXPECT_EQ(even.rounds[1].same_as, 0);
  EXPECT_EQ(even.rounds[2].same_as, 0);
  EXPECT_FALSE(even.rounds[1].rotated());
  EXPECT_TRUE(check_schedule(even).ok) << check_schedule(even).message;
}

// NCCL's NVLS trees on two HGX hosts, four chunks: in the pipeline's fill and drain most
// participants move what they moved the round before, and the rounds say which. A participant declared so
// that is not is refused by the checker.
TEST(DistinctRounds, TheCheckerRefusesAParticipantDeclaredToRepeatWhatItDidNot) {
  const LoadedTopology loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/cluster-128gpu-nvswitch-rail.json");
  PredictRequest q;
  q.topology = &loaded.topology;
  q.strategy = &find_strategy("nccl");
  q.bytes = 64 << 20;
  q.placement = first_gpus(loaded.topology, 16);
  q.params = SyncParams::parse({"algorithm=NVLSTree"});
  const Schedule s = build_schedule(q).schedule;
  ASSERT_TRUE(check_schedule(s).ok) << check_schedule(s).message;
  std::size_t declared = 0, round = 0;
  for (std::size_t r = 0; r < s.rounds.size(); ++r) {
    if (!s.rounds[r].same_ops_as_previous) continue;
    for (int p = 0; p < s.participant_count(); ++p) declared += s.rounds[r].same_ops_as_previous(p);
    if (round == 0) round = r;
  }
  EXPECT_GT(declared, 0u);
  ASSERT_GT(round, 0u);
  // Their figures taken from the round before (one thread: every round follows the one it
  // repeats) are those of walking every participant of every round.
  const auto costs = participant_costs(s);
  expect_identical(run_analytic(loaded.topology, s, costs, 0.01, false, 1), run_analytic(loaded.topology, s, costs, 0.01, true),
                   "NVLS trees on 2 hosts");
  // Every participant declared to repeat the round before, in a round where some start or stop.
  Schedule wrong = build_schedule(q).schedule;
  wrong.rounds[round].same_ops_as_previous = [](int) { return true; };
  const SymbolicResult refused = check_schedule(wrong);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.message.find("declared to do what it did in the round before"), std::string::npos) << refused.message;
  // The schedule's first round has no round before it to repeat.
  Schedule first = build_schedule(q).schedule;
  first.rounds[0].same_ops_as_previous = [](int) { return true; };
  const SymbolicResult none = check_schedule(first);
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.message.find("there is none"), std::string::npos) << none.message;
}

// NCCL's pipelined trees across hosts, where a round priced after its neighbour keeps that
// round's loads and shares and recounts only the flows that changed: whether the walk goes
// forward or backward (threads from both ends of their stretch of rounds), its figures are
// those of walking every round afresh. Edges that start or stop move the loads under flows
// that did not change, so a kept share that missed them would show here.
TEST(DistinctRounds, RoundsPricedFromTheirNeighboursEqualWalkingEveryRound) {
  std::size_t compared = 0;
  // Rails (every host's NIC k on leaf k) and a fat tree whose leaves are oversubscribed 2:1
  // (hosts share uplinks).
  for (const char* file : {"cluster-128gpu-nvswitch-rail", "cluster-1024gpu-fat-tree-2to1"}) {
    const LoadedTopology loaded = load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/" + file + ".json");
    for (const char* algorithm : {"Tree", "NVLSTree"}) {
      for (int gpus : {32, 128}) {
        PredictRequest q;
        q.topology = &loaded.topology;
        q.strategy = &find_strategy("nccl");
        q.bytes = 256 << 20;
        q.placement = first_gpus(loaded.topology, gpus);
        q.params = SyncParams::parse({std::string("algorithm=") + algorithm});
        std::optional<BuiltSchedule> built;
        try {
          built.emplace(build_schedule(q));
        } catch (const InputError&) {
          continue;  // no NVLink SHARP on the fat tree's hosts
        }
        const Schedule& s = built->schedule;
        const auto costs = participant_costs(s);
        const AnalyticResult every = run_analytic(loaded.topology, s, costs, 0.01, true);
        const std::string what = std::string(file) + " " + algorithm + " on " + std::to_string(gpus) + " GPUs";
        for (int threads : {1, 2, 3}) {
          expect_identical(run_analytic(loaded.topology, s, costs, 0.01, false, threads), every, what + " on " + std::to_string(threads) + " threads");
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 24u);
}

// A flow that repeats the round before keeps its share only while no link on its route
// changes load. Here 0 -> 1 (3 MB) repeats through three rounds; in the middle one 2 -> 1
// (1 MB) joins it on the switch's link to GPU 1 and halves its share, and in the last it
// has the link to itself again.
TEST(DistinctRounds, ARepeatedFlowGetsLessWhenAnotherJoinsItsLink) {
  const Topology t = test_topologies::star(3, 10, 4);
  const std::vector<std::size_t> gpus = t.gpus();
  Schedule s;
  s.strategy = "test";
  s.workers = 3;
  for (std::size_t g : gpus) s.participants.push_back(Participant{Role::worker, g, {}});
  s.gradient_bytes = 4'000'000;
  constexpr std::uint64_t kA = 3'000'000, kB = 1'000'000;
  for (int r = 0; r < 3; ++r) {
    Round round{"exchange", "", [r](int p, std::vector<Op>& out) {
                  if (p == 0) out.push_back(Op::send(1, Slice{0, kA}));
                  if (p == 1) out.push_back(Op::recv(0, Slice{0, kA}));
                  if (p == 1 && r == 1) out.push_back(Op::recv(2, Slice{kA, kB}));
                  if (p == 2 && r == 1) out.push_back(Op::send(1, Slice{kA, kB}));
                }};
    if (r > 0) round.same_ops_as_previous = [](int p) { return p == 0; };
    s.rounds.push_back(std::move(round));
  }
  const auto costs = participant_costs(s);
  const double latency = t.latency_s(gpus[0], gpus[1]);
  const double expected = 2 * (latency + kA / 10e9) + latency + kA / 5e9;
  const AnalyticResult every = run_analytic(t, s, costs, 0, true);
  EXPECT_DOUBLE_EQ(every.sync_s, expected);
  for (int threads : {1, 2}) expect_identical(run_analytic(t, s, costs, 0, false, threads), every, std::to_string(threads) + " threads");
}
