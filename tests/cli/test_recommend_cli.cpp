// gradsync recommend, end to end: the verdicts the source documents make checkable (one GPU
// beats every exact multi-GPU choice for source A's LMs; GPUs on one switch beat GPUs across
// switches), the ranking order, the simulator's confirmation, tool outputs read directly,
// and bad input.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "json_lines.h"

using nlohmann::json;

namespace {

// The analytic records in ranked order (each simulated choice is followed by its sim record).
std::vector<json> ranked(const std::vector<json>& all) {
  std::vector<json> out;
  for (const auto& r : all) {
    if (r["executor"] == "analytic") out.push_back(r);
  }
  return out;
}

}  // namespace

TEST(RecommendCli, OneGpuIsBestForSourceAsFeedForwardLmAmongExactChoices) {
  // Source A, Table 4: every multi-GPU configuration of the FFNN LM was slower than one GPU.
  const auto r = run_cli("recommend --exact-only");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("One GPU is best: every multi-GPU choice is slower than training alone."), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n *1 +1 +gpu0 +one GPU alone "))) << r.out;  // ranked first
  // Why: the ring's synchronisation is bound by a switch uplink at the cross-switch 4.46 GB/s.
  EXPECT_NE(r.out.find("bound by switch0 -> root0 (4.46 GB/s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Simulator: agrees"), std::string::npos) << r.out;
}

TEST(RecommendCli, WithApproximationsAllowedItSaysWhatBeatsOneGpuAndThatItChangesTraining) {
  const auto r = run_cli("recommend");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Among choices that keep the training exact, one GPU is best; only choices that change the training beat it."),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Fastest overall: "), std::string::npos) << r.out;
}

TEST(RecommendCli, RanksByEpochTimeAndPrefersGpusBehindOneSwitch) {
  const auto r = run_cli("recommend --exact-only --all --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto all = json_lines(r.out);
  const auto list = ranked(all);
  ASSERT_GT(list.size(), 10u);
  for (std::size_t i = 1; i < list.size(); ++i) {
    EXPECT_LE(list[i - 1]["time_per_epoch_s"].get<double>(), list[i]["time_per_epoch_s"].get<double>() * (1 + 1e-9)) << i;
  }
  EXPECT_EQ(list.front()["strategy"], "alone");
  // Two GPUs: a ring on gpu0+gpu1 (5.96 GB/s inside switch A) before gpu0+gpu2 (4.46 GB/s across).
  int same_switch = -1, across = -1;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i]["strategy"] != "ring" || list[i]["ranks"] != 2) continue;
    const auto nodes = list[i]["rank_nodes"].get<std::vector<std::string>>();
    if (nodes == std::vector<std::string>{"gpu0", "gpu1"} && same_switch < 0) same_switch = static_cast<int>(i);
    if (nodes == std::vector<std::string>{"gpu0", "gpu2"} && across < 0) across = static_cast<int>(i);
  }
  ASSERT_GE(same_switch, 0);
  ASSERT_GE(across, 0);
  EXPECT_LT(same_switch, across);
  // The best three multi-GPU choices were simulated: each analytic record followed by its sim record.
  int simulated = 0;
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    if (all[i + 1]["executor"] == "sim") {
      ++simulated;
      EXPECT_EQ(all[i]["strategy"], all[i + 1]["strategy"]);
      EXPECT_EQ(all[i]["rank_nodes"], all[i + 1]["rank_nodes"]);
    }
  }
  EXPECT_EQ(simulated, 3);
}

TEST(RecommendCli, ReadsAP2pBandwidthLatencyTestOutputDirectly) {
  const auto r = run_cli("recommend --topology " GRADSYNC_PUBLISHED_DATA "/rtx2080ti-2gpu-pix.txt --size 64MiB --confirm 1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("topology rtx2080ti-2gpu-pix (2 GPUs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Best that keeps the training exact: ring on 2 GPUs."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gradsync validate --topology"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Not searched without a workload: model_avg, bmuf, downpour, asgd"), std::string::npos) << r.out;
}

TEST(RecommendCli, MultiGpuWinsWhereComputeDominates) {
  const auto r = run_cli("recommend --exact-only --topology dgx1-v100-hybrid-cube-mesh --workload source-c-nmt --gpus 1,8 --confirm 1");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Best: ring on 8 GPUs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("One GPU is best"), std::string::npos) << r.out;
}

TEST(RecommendCli, BadInputIsOneMessageAndStatus2) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {"recommend --size 1MiB,4MiB", "--size 1MiB,4MiB: recommend takes one size"},
           {"recommend --param nonsense=1", "nonsense"},
           {"recommend --gpus 9", "--gpus 9: the topology has 4 GPUs"},
           {"recommend --strategy rign", "rign"},
           {"recommend --confirm -1", "--confirm"},
           {"recommend --max-sync-share 0", "--max-sync-share"},
           {"recommend --gpus 1 --size 1MiB", "one GPU synchronises nothing; give 2 or more GPUs, or a workload"},
       }) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
  }
}

// On a cluster NCCL is what runs: a search weighs its own pick beside gradsync's schedules and
// says which algorithm NCCL's cost model chose. Two HGX H100 nodes, 256 MiB: NVLS tree (the
// NVSwitches reduce, eight NICs a node carry the tree) beats every schedule of single transfers.
TEST(RecommendCli, OnAClusterNcclsOwnPickIsWeighedAndExplained) {
  // (GPUDirect RDMA stated: the plan without it, an open fact, would run NCCL's search to its budget.)
  const auto r = run_cli("recommend --topology " GRADSYNC_PUBLISHED_DATA
                         "/multinode/h100-hgx-2node-8x400g-ib.json --size 256MiB --gpus 16 --exact-only --confirm 0 --param gpudirect=on");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Best: nccl (algorithm=NVLSTree) on 16 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("How: NCCL's cost model picks NVLSTree/Simple"), std::string::npos) << r.out;
  // NCCL's channels move less than the NVLinks and NICs carry: no link bounds it long, its own rate
  // does, and the table's column says so.
  EXPECT_NE(r.out.find("of the time by its own transfer rate"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" for 0 % of the time"), std::string::npos) << r.out;
  // On one PCIe machine it is tried only when named.
  const auto single = run_cli("recommend --topology " GRADSYNC_PUBLISHED_DATA "/rtx2080ti-2gpu-pix.txt --size 64MiB --confirm 0");
  ASSERT_EQ(single.status, 0) << single.out;
  EXPECT_EQ(single.out.find("nccl"), std::string::npos) << single.out;
}

// NCCL's own pick is then weighed against each algorithm the same GPUs can run, forced
// (NCCL_ALGO): every one is a ranked choice whose time is what predict gives for it, the
// explanation compares them, and algorithms a fixed or default parameter rules out (NVLS with
// nvls=off, CollNet without collnet=on) are not tried.
// An asynchronous strategy's links were timed on the server's exchanges with every worker at
// once, not on one worker's synchronisation: its explanation gives no share of the latter (it
// read "for 7000 % of the time" for Downpour on the InfiniBand cluster).
TEST(RecommendCli, AnAsynchronousChoiceIsExplainedWithoutAShareOfItsSync) {
  // The NMT model without its convergence facts, which would rank Downpour (no known cost in
  // samples) after the exact choices: ranked by epoch time, Downpour comes second.
  const auto shown = run_cli("workload show source-c-nmt --format json", false);
  ASSERT_EQ(shown.status, 0) << shown.out;
  json w = json::parse(shown.out);
  ASSERT_TRUE(w.contains("convergence"));
  w.erase("convergence");
  const std::string file = temp_file("source-c-nmt-per-step.json", w.dump());
  const auto r = run_cli("recommend --workload " + file + " --topology cluster-2x4gpu-ib-10GBps --gpus 8 --confirm 0");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto next = r.out.find("Next other strategy: downpour");
  ASSERT_NE(next, std::string::npos) << r.out;
  const std::string line = r.out.substr(next, r.out.find('\n', next) - next);
  EXPECT_NE(line.find("its exchanges through the server, every worker's at once, are bound by"), std::string::npos) << line;
  EXPECT_NE(line.find("(the steady state bounded by the "), std::string::npos) << line;
  EXPECT_EQ(line.find("% of the time"), std::string::npos) << line;
}

TEST(RecommendCli, NcclsAlgorithmsAreWeighedAgainstItsOwnPick) {
  const std::string topology = GRADSYNC_PUBLISHED_DATA "/multinode/h100-hgx-2node-8x400g-ib.json";
  // GPUDirect RDMA stated: left open, each process would also plan without it, and that plan's
  // search runs to NCCL's step budget (most of this test's time under the sanitizers).
  const std::string cluster = "recommend --topology " + topology + " --gpus 16 --strategy nccl --confirm 0 --param gpudirect=on";
  const auto table = run_cli(cluster + " --size 256MiB");
  ASSERT_EQ(table.status, 0) << table.out;
  // NCCL's pick is the fastest here; the forced ones follow, each compared in the explanation.
  EXPECT_TRUE(std::regex_search(table.out, std::regex("\n1 +16 .* nccl algorithm=NVLSTree .*\n2 +16 .* nccl algorithm=Ring .*\n"
                                                      "3 +16 .* nccl algorithm=Tree ")))
      << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex("Against its other settings on these GPUs \\(each forced\\): algorithm=Ring [0-9.]+ ms "
                                                      "\\([0-9]+ % slower, busbw [0-9.]+ GB/s\\), algorithm=Tree ")))
      << table.out;
  // At 4 MiB NCCL's cost model picks its NVLS tree, which the schedule puts behind the ring (its
  // stages overlap less at mid sizes than NCCL's model has them): the forced ring is best.
  const auto small = run_cli(cluster + " --size 4MiB");
  ASSERT_EQ(small.status, 0) << small.out;
  EXPECT_NE(small.out.find("How: NCCL runs Ring/LL128 by NCCL 2.30.7's planner (NCCL_ALGO=Ring)"), std::string::npos) << small.out;
  EXPECT_NE(small.out.find("Forced (--param algorithm=Ring): faster here than nccl's own pick on these GPUs, algorithm=NVLSTree, at "),
            std::string::npos)
      << small.out;
  // CollNet tried once enabled, NVLS not once disabled; a forced algorithm's time is what
  // predict gives for it on those GPUs with those settings.
  const std::string settings = " --size 256MiB --format json --param nvls=off --param collnet=on";
  const auto records = ranked(json_lines(run_cli(cluster + settings, false).out));
  std::map<std::string, double> seconds;
  for (const auto& r : records) seconds[r["params"]["algorithm"].get<std::string>()] = r["time_per_sync_s"].get<double>();
  std::vector<std::string> algorithms;
  for (const auto& [a, t] : seconds) algorithms.push_back(a);
  EXPECT_EQ(algorithms, (std::vector<std::string>{"CollnetChain", "CollnetDirect", "Ring", "Tree"}));
  const auto ring = json_lines(run_cli("predict --topology " + topology + " --gpus 16 --strategy nccl" + settings + " --param algorithm=Ring", false).out);
  ASSERT_EQ(ring.size(), 1u);
  EXPECT_DOUBLE_EQ(ring[0]["time_per_sync_s"].get<double>(), seconds["Ring"]);
}

// --gpu-memory: GPT-2 XL (1.56 G fp32 parameters, 24.9 GB replicated with Adam) on 16 GB GPUs:
// only the sharded strategies fit; each choice's memory is the ZeRO paper's for its stage.
TEST(RecommendCli, WhatDoesNotFitInTheGpusMemoryIsNoChoice) {
  const auto r = run_cli("recommend -t dgx1-v100-hybrid-cube-mesh -w gpt2-xl --gpus 1,4,8 --exact-only --confirm 0 "
                         "--gpu-memory 16GB -f json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = ranked(json_lines(r.out));
  ASSERT_FALSE(records.empty()) << r.out;
  bool sharded = false;
  for (const auto& rec : records) {
    ASSERT_TRUE(rec.contains("memory_per_gpu")) << rec.dump();
    const double psi = rec["bytes"].get<double>() / 4, n = rec["ranks"].get<double>();
    const double total = rec["memory_per_gpu"]["total_bytes"].get<double>();
    EXPECT_LE(total, 16e9) << rec.dump();
    const std::string strategy = rec["strategy"];
    EXPECT_NE(strategy, "alone");  // one GPU needs all 24.9 GB
    const double expected = strategy == "zero1" ? 8 * psi + 8 * psi / n
                            : strategy == "zero2" ? 4 * psi + 12 * psi / n
                            : strategy == "fsdp"  ? 16 * psi / n
                                                  : 16 * psi;
    EXPECT_NEAR(total, expected, 1e-6 * expected) << rec.dump();
    sharded = sharded || strategy == "zero1" || strategy == "zero2" || strategy == "fsdp";
  }
  EXPECT_TRUE(sharded);
  // The table says what was left out and why.
  const auto t = run_cli("recommend -t dgx1-v100-hybrid-cube-mesh -w gpt2-xl --gpus 1,8 --exact-only --confirm 0 --gpu-memory 16GB");
  ASSERT_EQ(t.status, 0) << t.out;
  EXPECT_TRUE(std::regex_search(t.out, std::regex("Left out [0-9]+ choices needing more than 16.00 GB per GPU"))) << t.out;
  EXPECT_EQ(t.out.find("one GPU alone"), std::string::npos) << t.out;
  // Without it the sharded strategies are not searched (they save memory, never time), and it says so.
  const auto plain = run_cli("recommend --exact-only --confirm 0");
  ASSERT_EQ(plain.status, 0) << plain.out;
  EXPECT_NE(plain.out.find("Not searched without --gpu-memory: zero1, zero2, fsdp"), std::string::npos) << plain.out;
  // On a cluster, where NCCL's planner models it, the sharded strategies are also weighed over NCCL's collectives.
  const auto cluster = run_cli("recommend -t cluster-2x4gpu-ib-10GBps -w gpt2-xl --gpus 8 --exact-only --confirm 0 --gpu-memory 16GB -f json");
  ASSERT_EQ(cluster.status, 0) << cluster.out;
  bool over_nccl = false;
  for (const auto& rec : ranked(json_lines(cluster.out))) {
    const std::string strategy = rec["strategy"];
    if ((strategy == "zero2" || strategy == "fsdp") && rec["params"].value("inner", "") == "nccl") over_nccl = true;
  }
  EXPECT_TRUE(over_nccl) << cluster.out;
  // Nothing fits, or no workload to weigh: one message, status 2.
  auto bad = run_cli("recommend -w gpt2-xl --gpu-memory 1GB --confirm 0");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--gpu-memory 1GB: no choice fits; the one needing the least memory per GPU, fsdp"), std::string::npos)
      << bad.out;
  bad = run_cli("recommend --size 64MiB --gpu-memory 16GB");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--gpu-memory: needs a workload"), std::string::npos) << bad.out;
  bad = run_cli("recommend --gpu-memory lots");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--gpu-memory"), std::string::npos) << bad.out;
}

// With convergence facts recommend ranks by time to target, puts choices whose change to the
// training has no measured cost after the rest, and adds no GPUs past the noise scale: at 16
// samples a GPU and a noise scale of 24, 2 GPUs (32) are searched as the fewest, 3 and 4 not.
TEST(RecommendCli, WithConvergenceFactsItRanksByTimeToTargetAndStopsAtTheNoiseScale) {
  const std::string w = temp_file("converging-small.json", R"({"name": "conv", "dtype_bytes": 4,
    "layers": [{"name": "a", "params": 1000}], "minibatches_per_epoch": 100, "compute_s_per_minibatch": 0.01,
    "samples_per_minibatch": 16, "convergence": {"target": "loss 1", "source": "by hand", "global_batch": 16,
    "samples_to_target": 1600, "noise_scale": [12, 24]}})");
  const auto r = run_cli("recommend --workload " + w + " --topology source-a-titanx-4gpu --confirm 0 --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto all = ranked(json_lines(r.out));
  ASSERT_FALSE(all.empty());
  bool unknown_seen = false;
  double last = 0;
  for (const auto& c : all) {
    EXPECT_LE(c.at("ranks").get<int>(), 2) << c.dump();
    if (!c.contains("time_to_target")) {
      unknown_seen = true;
      EXPECT_TRUE(c.contains("no_time_to_target")) << c.dump();
      continue;
    }
    EXPECT_FALSE(unknown_seen) << "a choice with a time to target ranked after one without: " << c.dump();
    const double t = c.at("time_to_target").at("time_s").at("value").get<double>();
    EXPECT_GE(t, last * (1 - 1e-12)) << c.dump();
    last = t;
  }
  EXPECT_TRUE(unknown_seen);
  const auto table = run_cli("recommend --workload " + w + " --topology source-a-titanx-4gpu --confirm 0");
  ASSERT_EQ(table.status, 0) << table.out;
  for (const char* text : {"Ranked by time to loss 1", "Not searched: 3, 4 GPUs", "speed-up to target"}) {
    EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;
  }
}

// Without --gpus, a machine's every GPU count is searched; a cluster's (more than 16 GPUs) powers
// of two and the whole of it, said on standard error, since each count is a search of its own.
TEST(RecommendCli, OnAClusterItSearchesThePowersOfTwoUnlessToldOtherwise) {
  const std::string cluster = GRADSYNC_PUBLISHED_DATA "/multinode/h100-hgx-4node-8x400g-ib.json";
  auto counts_of = [](const std::string& out) {
    std::set<int> counts;
    for (const json& r : json_lines(out)) {
      if (r["ranks"].get<int>() > 1) counts.insert(r["ranks"].get<int>());  // (one GPU is a choice with a workload only)
    }
    return counts;
  };
  const auto r = run_cli("recommend --topology " + cluster + " --size 64MiB --strategy ring --confirm 0 --all --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(counts_of(r.out), (std::set<int>{2, 4, 8, 16, 32}));
  const auto said = run_cli("recommend --topology " + cluster + " --size 64MiB --strategy ring --confirm 0");
  EXPECT_NE(said.out.find("32 GPUs: searching 1, 2, 4, 8, 16, 32 of them (--gpus 1-32 searches every count)"), std::string::npos) << said.out;
  const auto every = run_cli("recommend --topology " + cluster + " --size 64MiB --strategy ring --confirm 0 --all --format json --gpus 1-12", false);
  ASSERT_EQ(every.status, 0) << every.out;
  EXPECT_EQ(counts_of(every.out).size(), 11u);  // 2 to 12
}

// The candidates are weighed without nccl's open facts (each costs plans of its own); the best
// ones the table shows are predicted again with them, so that recommend says how sure it is as
// predict does: the same range in its records, a column of the synchronisation's range, and the
// fact that moves it most. On the 4 x RTX 4090 box at NCCL's default P2P level, whether peer
// access and which NCCL release are open: the range spans SHM to P2P.
TEST(RecommendCli, ItsBestChoicesStateTheRangeOverWhatTheInputsLeaveOpen) {
  const std::string topology = GRADSYNC_PUBLISHED_DATA "/rtx4090-4gpu-p2p-sys-and-default.txt";
  const std::string command = "recommend --topology " + topology + " --strategy nccl --gpus 4 --size 64MiB --confirm 0";
  const auto table = run_cli(command);
  ASSERT_EQ(table.status, 0) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex("sync/step +sync range +sim sync +bound by"))) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex("\n1 +4 .* nccl algorithm=Ring +[0-9.]+ ms +[0-9.]+ ms - [0-9.]+ ms "))) << table.out;
  EXPECT_TRUE(std::regex_search(table.out, std::regex("How sure: busbw [0-9.]+ GB/s, [0-9.]+-[0-9.]+ GB/s over what the inputs leave open "
                                                      "\\([0-9]+ facts; most: ")))
      << table.out;
  // Its records carry the range predict gives for the same choice.
  const auto records = ranked(json_lines(run_cli(command + " --format json", false).out));
  ASSERT_FALSE(records.empty());
  const json& best = records.front();
  ASSERT_TRUE(best.contains("busbw_range_GBps")) << best.dump();
  ASSERT_TRUE(best.contains("open_facts")) << best.dump();
  const auto alone = json_lines(run_cli("predict --topology " + topology + " --strategy nccl --gpus 4 --size 64MiB --param algorithm=" +
                                            best["params"]["algorithm"].get<std::string>() + " --format json",
                                        false)
                                    .out);
  ASSERT_EQ(alone.size(), 1u);
  ASSERT_TRUE(alone.front().contains("busbw_range_GBps"));
  for (int k : {0, 1}) {
    EXPECT_NEAR(best["busbw_range_GBps"][k].get<double>(), alone.front()["busbw_range_GBps"][k].get<double>(),
                1e-9 * alone.front()["busbw_range_GBps"][k].get<double>());
  }
  EXPECT_EQ(best["open_facts"].size(), alone.front()["open_facts"].size());
  EXPECT_LT(best["busbw_range_GBps"][0].get<double>(), best["busbw_GBps"].get<double>());
  EXPECT_GT(best["busbw_range_GBps"][1].get<double>(), best["busbw_GBps"].get<double>());
  // Where one GPU is best (a 7B model's gradients over SHM), the fastest exact multi-GPU choice
  // says how sure it is: whether two GPUs could beat one turns on what the inputs leave open.
  const auto alone_best = run_cli("recommend --topology " + topology + " --strategy nccl --workload decoder-7b --gpus 1,2 --confirm 0");
  ASSERT_EQ(alone_best.status, 0) << alone_best.out;
  EXPECT_TRUE(std::regex_search(alone_best.out, std::regex("One GPU is best: .*\nThe fastest exact multi-GPU choice, nccl .*\n"
                                                           "There .*\nHow sure: busbw [0-9.]+ GB/s, [0-9.]+-[0-9.]+ GB/s ")))
      << alone_best.out;
}
