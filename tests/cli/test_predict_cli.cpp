// gradsync predict and import, end to end: tables, records, and bad input (one clear
// message, exit status 2, nothing half-written).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "json_lines.h"
#include "models/support/error.h"
#include "models/strategies/strategy.h"

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-cli-" + std::to_string(::getpid()));
  // The folder is named by this process's id: one left by an earlier process that had the same
  // id (ids wrap) holds its files, which a test must not find (a sweep's merged output): emptied
  // on this process's first file.
  static const bool fresh = [&] {
    fs::remove_all(dir);
    return true;
  }();
  (void)fresh;
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}


TEST(PredictCli, NoArgumentsPrintsEveryStrategyOnTheSourceAMachine) {
  const auto r = run_cli("predict");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("topology source-a-titanx-4gpu (4 GPUs)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("workload source-a-ffnn-lm"), std::string::npos);
  for (const char* s : {"\nps ", "\nring ", "\nhierarchical ", "\nps_hra "}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("speed-up"), std::string::npos);
}

TEST(PredictCli, RingRecordEqualsTheClosedFormOnTheSlowestLink) {
  const auto r = run_cli("predict --strategy ring --gpus 4 --format json --executor formula", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 1u);
  const json& rec = records[0];
  // S = 104,670,092 params x 4 B; B = 4.46 GB/s (across switches); a = 4 links x 1 us
  // (latency not measured); C = 1 / 100 GB/s.
  const double S = 4.0 * 104'670'092, B = 4.46e9, a = 4e-6, C = 1e-11, N = 4;
  const double expected = 2 * (N - 1) * (a + S / (N * B)) + (N - 1) * (S / N) * C;
  EXPECT_NEAR(rec["time_per_sync_s"].get<double>(), expected, 1e-12);
  EXPECT_EQ(rec["ranks"], 4);
  EXPECT_EQ(rec["executor"], "formula");
  EXPECT_NEAR(rec["algbw_GBps"].get<double>(), S / expected / 1e9, 1e-9);
  EXPECT_NEAR(rec["busbw_GBps"].get<double>(), rec["algbw_GBps"].get<double>() * 1.5, 1e-9);
  // Epoch per source A: (bn / N) · (compute + sync) with compute = 216.07 s / bn.
  const double bn = 12'657, compute = 216.07 / bn;
  EXPECT_NEAR(rec["time_per_epoch_s"].get<double>(), bn / N * (compute + expected), 1e-6);
  EXPECT_NEAR(rec["speedup_vs_1gpu"].get<double>(), 216.07 / (bn / N * (compute + expected)), 1e-9);
}

TEST(PredictCli, PsPaysTheServerEvenOnOneGpu) {
  const auto r = run_cli("predict --strategy ps,ring --gpus 1 --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["server"], "host");
  EXPECT_GT(records[0]["time_per_sync_s"].get<double>(), 0.0);  // parameters go through host memory
  EXPECT_EQ(records[1]["time_per_sync_s"].get<double>(), 0.0);  // all-reduce on one GPU moves nothing
}

TEST(PredictCli, WritesCsvAndJsonFilesAtomically) {
  const std::string dir = fs::path(temp_file("probe", "")).parent_path().string();
  const std::string csv = dir + "/records.csv";
  ASSERT_EQ(run_cli("predict --gpus 1,2,3,4 -o " + csv).status, 0);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("executor,topology,strategy,", 0), 0u);
  int rows = 0;
  for (std::string line; std::getline(in, line);) ++rows;
  EXPECT_EQ(rows, static_cast<int>(4 * gradsync::models::all_strategies().size()));  // every strategy x 4 GPU counts
}

// The CSV carries the time to target beside the step (a workload with convergence facts): the same
// figures as the JSON record's, by column name; a record without facts leaves the cells empty.
TEST(PredictCli, CsvCarriesTheTimeToTarget) {
  const std::string dir = fs::path(temp_file("probe", "")).parent_path().string();
  const auto cells = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line);
    for (std::string c; std::getline(in, c, ',');) out.push_back(c);
    if (!line.empty() && line.back() == ',') out.push_back("");
    return out;
  };
  for (const std::string workload : {"digits-mlp", "gpt2-xl"}) {
    SCOPED_TRACE(workload);
    const std::string csv = dir + "/to-target-" + workload + ".csv";
    ASSERT_EQ(run_cli("predict --workload " + workload + " --strategy ring,model_avg -p T=8 --gpus 4 -o " + csv).status, 0);
    const auto r = run_cli("predict --workload " + workload + " --strategy ring,model_avg -p T=8 --gpus 4 --format json", false);
    ASSERT_EQ(r.status, 0) << r.out;
    const auto records = json_lines(r.out);
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    const auto header = cells(line);
    const auto column = [&](const std::string& name) {
      const auto at = std::find(header.begin(), header.end(), name);
      EXPECT_NE(at, header.end()) << name;
      return static_cast<std::size_t>(at - header.begin());
    };
    for (const auto& rec : records) {
      ASSERT_TRUE(std::getline(in, line));
      const auto row = cells(line);
      ASSERT_EQ(row.size(), header.size()) << line;
      if (!rec.contains("time_to_target")) {
        EXPECT_EQ(workload, "gpt2-xl");
        EXPECT_EQ(row[column("time_to_target_s")], "");
        continue;
      }
      const auto& t = rec["time_to_target"];
      EXPECT_NEAR(std::stod(row[column("samples_to_target")]), t["samples"]["value"].get<double>(), 1e-6 * t["samples"]["value"].get<double>());
      for (const auto& [name, key] : std::vector<std::pair<std::string, std::string>>{{"time_to_target", "time_s"}, {"speedup_to_target", "speedup"}}) {
        const std::string suffix = name == "time_to_target" ? "_s" : "";
        for (const auto& [end, which] : std::vector<std::pair<std::string, std::string>>{{"", "value"}, {"_low", "low"}, {"_high", "high"}}) {
          const double expected = t[key][which].get<double>();
          EXPECT_NEAR(std::stod(row[column(name + end + suffix)]), expected, 1e-6 * expected) << name << end;
        }
      }
    }
  }
}

TEST(PredictCli, BadInputGivesOneMessageAndStatus2) {
  struct Case {
    std::string args, expected;
  };
  const std::string bad_topology = temp_file("bad.json", R"({"name": "b", "nodes": [{"id": "gpu0", "kind": "gpu"},
    {"id": "sw", "kind": "pcie_switch"}], "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": -2, "latency_us": 1}]})");
  const std::string not_square = temp_file("square.json", R"({"name": "m", "gpus": ["g0", "g1"],
    "bandwidth_GBps": [[null, 5], [5]]})");
  const std::string disconnected = temp_file("disc.json", R"({"name": "d", "nodes": [{"id": "gpu0", "kind": "gpu"},
    {"id": "gpu1", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],
    "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": 2, "latency_us": 1}]})");
  const std::string unknown_key = temp_file("key.json", R"({"name": "d", "nodes": [{"id": "gpu0", "kind": "gpu", "knd": 1}], "links": []})");
  const std::vector<Case> cases = {
      {"predict --strategy rng", "gradsync: error: --strategy rng: unknown strategy (did you mean 'ring'?); valid "
                                 "strategies: " + gradsync::models::join(gradsync::models::strategy_names())},
      {"predict --strategy hierarchical --param kk=2",
       "gradsync: error: --param kk=2: no chosen strategy has a parameter 'kk' (did you mean 'k'?); their parameters: "
       "grouping, host_reduce_GBps, k, reduce_GBps, ring_order, speeds"},
      {"predict --strategy hierarchical --param k=3",
       "gradsync: error: --param k=3 (strategy hierarchical): expected auto or a number of groups that divides N = 4 (1, 2, 4)"},
      {"predict --topology " + bad_topology,
       "gradsync: error: " + bad_topology + ": /links/0/bandwidth_GBps: got -2; expected a number greater than 0"},
      {"predict --topology " + not_square,
       "gradsync: error: " + not_square + ": /bandwidth_GBps/1: got an array of 1; expected an array of 2 values (one per GPU)"},
      {"predict --topology " + disconnected,
       "gradsync: error: " + disconnected + ": the graph is disconnected: gpu1 cannot reach \"gpu0\"; expected every node to be linked"},
      {"predict --topology " + unknown_key,
       "gradsync: error: " + unknown_key + ": /nodes/0/knd: unknown key 'knd' (did you mean 'kind'?); valid keys here: id, kind"},
      {"predict --topology no-such-topo",
       "gradsync: error: --topology no-such-topo: no such file, nor a shipped topology"},
      {"predict --gpus 9", "gradsync: error: --gpus 9: topology \"source-a-titanx-4gpu\" has 4 GPUs; expected between 1 and 4"},
      {"predict --size 12XB", "gradsync: error: --size \"12XB\": expected a size in bytes"},
      {"predict --param reduce_GBps=-1 --strategy ring",
       "gradsync: error: --param reduce_GBps=-1 (strategy ring): expected auto or a number greater than 0"},
      {"predict --strategy nccl --param protocol=foo",
       "gradsync: error: --param protocol=foo (strategy nccl): expected auto, LL, LL128 or Simple"},
      {"predict --strategy nccl --param algorithm=foo",
       "gradsync: error: --param algorithm=foo (strategy nccl): expected auto, Ring or Tree"},
      // An alltoall's messages grow as the ranks squared: at 8,192 GPUs it is refused at once (it
      // had taken minutes and more memory than the machine has).
      {"predict --topology cluster-8192gpu-nvswitch-rail --strategy nccl --param collective=alltoall --size 1GiB",
       "gradsync: error: --param collective=alltoall on 8192 ranks: every rank sends to every other, 67.1 M messages; gradsync "
       "times an alltoall on at most 2048 ranks"},
      {"predict --ranks gpu0,gpu9", "gradsync: error: --ranks: \"gpu9\" is not a node of topology"},
      {"predict --executor magic", "--executor: magic not in {formula,analytic,sim,run}"},
      {"frobnicate", "A subcommand is required"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expected), std::string::npos) << c.args << "\n--- got:\n" << r.out;
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << r.out;
  }
}

TEST(PredictCli, FailedRunLeavesNoOutputFile) {
  const std::string dir = fs::path(temp_file("probe2", "")).parent_path().string();
  const std::string out = dir + "/never.jsonl";
  const auto r = run_cli("predict --strategy hierarchical --param k=3 -o " + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(fs::exists(out));
}

// Missing folders of an output path are made when the file is written, and only then: a run
// that fails first makes none.
TEST(PredictCli, OutputFoldersAreMadeWhenTheFileIsWritten) {
  const fs::path dir = fs::path(temp_file("probe3", "")).parent_path() / ("made-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto failed = run_cli("predict --strategy hierarchical --param k=3 -o " + (dir / "a/b.jsonl").string());
  EXPECT_EQ(failed.status, 2);
  EXPECT_FALSE(fs::exists(dir));
  const auto r = run_cli("predict --strategy ring -o " + (dir / "a/b.jsonl").string());
  EXPECT_EQ(r.status, 0) << r.out;
  std::ifstream in(dir / "a/b.jsonl");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(json_lines(text.str()).size(), 1u);
  fs::remove_all(dir);
}

TEST(PredictCli, HelpOnEveryVerb) {
  for (const char* args : {"--help", "predict --help", "import --help"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << r.out;
  }
  EXPECT_NE(run_cli("predict --help").out.find("Examples"), std::string::npos);
}

TEST(PredictCli, EveryShippedTopologyPredicts) {
  for (const char* t : {"source-a-titanx-4gpu", "dgx1-v100-hybrid-cube-mesh", "pcie-8gpu-2switch",
                        "cluster-2x4gpu-ib-10GBps", "cluster-2x4gpu-eth-1GBps"}) {
    const auto r = run_cli(std::string("predict --format json --topology ") + t, false);
    ASSERT_EQ(r.status, 0) << t << r.out;
    EXPECT_EQ(json_lines(r.out).size(), gradsync::models::all_strategies().size()) << t;  // every strategy
  }
  // Source C: the same 8 GPUs synchronise ten times faster over InfiniBand than over Ethernet.
  const auto ib = json_lines(run_cli("predict --format json --strategy ring --topology cluster-2x4gpu-ib-10GBps", false).out);
  const auto eth = json_lines(run_cli("predict --format json --strategy ring --topology cluster-2x4gpu-eth-1GBps", false).out);
  ASSERT_EQ(ib.size(), 1u);
  ASSERT_EQ(eth.size(), 1u);
  EXPECT_GT(eth[0]["time_per_sync_s"].get<double>(), 5 * ib[0]["time_per_sync_s"].get<double>());
}

TEST(ImportCli, PublishedRtx2080TiPairIs572) {
  const std::string published = std::string(GRADSYNC_PUBLISHED_DATA) + "/rtx2080ti-2gpu-pix.txt";
  ASSERT_TRUE(fs::exists(published)) << published;
  const std::string dir = fs::path(temp_file("probe3", "")).parent_path().string();
  const std::string out = dir + "/rtx.json";
  const auto r = run_cli("import " + published + " -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2 of 2 pairs explained"), std::string::npos) << r.out;
  std::ifstream in(out);
  const json doc = json::parse(in);
  EXPECT_DOUBLE_EQ(doc["bandwidth_GBps"][0][1].get<double>(), 5.72);
  EXPECT_DOUBLE_EQ(doc["bandwidth_GBps"][1][0].get<double>(), 5.72);
  EXPECT_EQ(doc["topo_classes"][0][1], "PIX");
  // The written topology is accepted by predict. The pair has no peer access: 5.72 GB/s is the
  // driver's copy staged through host memory, so the links are the 2080 Ti's PCIe (12 GB/s) and
  // a ring's copies between the two GPUs still go at 5.72 in every executor; its bidirectional
  // 6.10 GB/s says nothing of the links (they stay full duplex; import notes it).
  EXPECT_NE(r.out.find("staged through host memory: the links allow it"), std::string::npos) << r.out;
  const auto f = run_cli("predict --topology " + out + " --size 64MiB --strategy ring --format json --executor formula", false);
  ASSERT_EQ(f.status, 0) << f.out;
  const double formula_algbw = json::parse(f.out)["algbw_GBps"].get<double>();
  EXPECT_NEAR(formula_algbw, 5.72, 0.15);  // latency and the reduction take a little
  for (const char* executor : {"analytic", "sim"}) {
    const auto a = run_cli("predict --topology " + out + " --size 64MiB --strategy ring --format json -x " + executor, false);
    ASSERT_EQ(a.status, 0) << a.out;
    EXPECT_NEAR(json::parse(a.out)["algbw_GBps"].get<double>(), formula_algbw, 0.05) << executor;
    if (std::string(executor) == "analytic") {
      EXPECT_GT(json::parse(a.out)["staged_bound_s"].get<double>(), 0.0) << a.out;
    }
  }
  // NCCL's SHM does not stage: its broadcast moves 0.7 of the PCIe rate (8.4 GB/s), above the
  // staged copy's, in both executors (the simulator honours a transfer's own rate on a route
  // with latency).
  for (const char* executor : {"analytic", "sim"}) {
    const auto b = run_cli("predict --topology " + out + " --size 64MiB --strategy nccl -p collective=broadcast --format json -x " + executor, false);
    ASSERT_EQ(b.status, 0) << b.out;
    EXPECT_NEAR(json::parse(b.out)["algbw_GBps"].get<double>(), 8.4, 0.1) << executor;
  }
}

TEST(ImportCli, FixturesImportAndExplainEveryPair) {
  for (const char* machine : {"4gpu-2switch", "8gpu-2switch"}) {
    const std::string f = GRADSYNC_TEST_FIXTURES;
    const auto r = run_cli("import " + f + "/p2p-" + machine + ".txt " + f + "/topo-" + machine + ".txt --graph", false);
    ASSERT_EQ(r.status, 0) << machine << r.out;
    const json graph = json::parse(r.out);
    EXPECT_FALSE(graph["links"].empty());
    const auto written = std::filesystem::temp_directory_path() / ("gradsync-import-" + std::string(machine) + ".json");
    const auto report = run_cli("import " + f + "/nvbandwidth-" + machine + ".txt -o " + written.string());
    EXPECT_EQ(report.out.find("NOT EXPLAINED"), std::string::npos) << report.out;
    std::filesystem::remove(written);
  }
}

TEST(ImportCli, BadInputs) {
  const std::string f = GRADSYNC_TEST_FIXTURES;
  auto r = run_cli("import " + f + "/topo-4gpu-2switch.txt --pcie gen7");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--pcie \"gen7\": not a PCIe generation gradsync knows; expected gen3, gen4, gen5 or gen6"),
            std::string::npos) << r.out;
  const std::string junk = temp_file("junk.txt", "hello\nworld\n");
  r = run_cli("import " + junk);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(junk), std::string::npos) << r.out;
  r = run_cli("import /no/such/file.txt");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("/no/such/file.txt"), std::string::npos) << r.out;
}

TEST(PredictCli, EveryStrategyOnEveryTopologyThroughBothExecutors) {
  // Every registered strategy; those without a closed form are refused by the formula executor.
  // One run per topology and executor for those that answer (`--strategy` takes a list), one per
  // refusal: each refusal must be the whole answer of its run.
  std::string every, closed;
  std::vector<std::string> without_closed_form;
  for (const gradsync::models::Strategy* strategy : gradsync::models::all_strategies()) {
    every += (every.empty() ? "" : ",") + strategy->name;
    if (strategy->closed_form) {
      closed += (closed.empty() ? "" : ",") + strategy->name;
    } else {
      without_closed_form.push_back(strategy->name);
    }
  }
  ASSERT_FALSE(closed.empty());
  ASSERT_FALSE(without_closed_form.empty());
  for (const char* t : {"source-a-titanx-4gpu", "dgx1-v100-hybrid-cube-mesh", "pcie-8gpu-2switch",
                        "cluster-2x4gpu-ib-10GBps", "cluster-2x4gpu-eth-1GBps"}) {
    for (const auto& [executor, list] : {std::pair<std::string, std::string>{"analytic", every}, {"formula", closed}}) {
      const auto r = run_cli("predict --format json --executor " + executor + " --topology " + t + " --strategy " + list, false);
      ASSERT_EQ(r.status, 0) << t << " " << executor << r.out;
      std::vector<std::string> seen;
      for (const auto& rec : json_lines(r.out)) {
        const std::string s = rec["strategy"].get<std::string>();
        seen.push_back(s);
        EXPECT_EQ(rec["executor"], executor) << t << " " << s;
        EXPECT_GT(rec["time_per_sync_s"].get<double>(), 0) << t << " " << executor << " " << s;
        EXPECT_GT(rec["time_per_epoch_s"].get<double>(), 0) << t << " " << executor << " " << s;
      }
      std::string joined;
      for (const auto& s : seen) joined += (joined.empty() ? "" : ",") + s;
      EXPECT_EQ(joined, list) << t << " " << executor << ": one record per strategy, in the order asked";
    }
    for (const std::string& s : without_closed_form) {
      const auto f = run_cli("predict --format json --executor formula --topology " + std::string(t) + " --strategy " + s);
      EXPECT_EQ(f.status, 2) << t << " " << s << f.out;
      EXPECT_NE(f.out.find("the source documents give no closed form for strategy " + s), std::string::npos) << f.out;
    }
  }
}

TEST(PredictCli, RingOrderMattersOnTheSourceAMachine) {
  const auto good = json::parse(run_cli("predict --format json --strategy ring --ring-order 0,1,2,3", false).out);
  const auto bad = json::parse(run_cli("predict --format json --strategy ring --ring-order 0,2,1,3", false).out);
  const auto chosen = json::parse(run_cli("predict --format json --strategy ring", false).out);
  EXPECT_GT(bad["time_per_sync_s"].get<double>(), 1.8 * good["time_per_sync_s"].get<double>());
  EXPECT_DOUBLE_EQ(chosen["time_per_sync_s"].get<double>(), good["time_per_sync_s"].get<double>());
  EXPECT_NE(chosen["notes"].dump().find("ring order: gpu0 gpu1"), std::string::npos) << chosen.dump();
  const auto r = run_cli("predict --strategy ring --ring-order 0,1,1,3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("position 1 appears twice"), std::string::npos) << r.out;
}

TEST(PredictCli, SizesTakeTheSameGrammarAsGradsyncRun) {
  // nccl-tests' K, M, G (powers of 2), as gradsync-run's -b and -e take them.
  const auto m = json_lines(run_cli("predict --strategy ring --size 1M --format json", false).out);
  const auto mib = json_lines(run_cli("predict --strategy ring --size 1MiB --format json", false).out);
  ASSERT_EQ(m.size(), 1u);
  ASSERT_EQ(mib.size(), 1u);
  EXPECT_EQ(m[0]["bytes"], 1048576.0);
  EXPECT_EQ(m[0]["time_per_sync_s"], mib[0]["time_per_sync_s"]);
  EXPECT_EQ(json_lines(run_cli("predict --strategy ring --size 2K --format json", false).out)[0]["bytes"], 2048.0);
}

// A workload with convergence facts: time to its target beside the time per step. The figures are
// worked by hand from S(B) = S_min (1 + B_noise / B) in samples, E(B) = E(B0) (1 + B / B_noise) /
// (1 + B0 / B_noise): with 6,400 samples at B0 = 64 and B_noise = 64, four GPUs of 16 (B = 64)
// need 6,400 samples (100 steps); one GPU of 16 needs 6,400 x 1.25 / 2 = 4,000 (250 steps of 1 ms).
namespace {
const char* kConvergingWorkload = R"({"name": "conv", "dtype_bytes": 4, "layers": [{"name": "a", "params": 1000000}],
  "minibatches_per_epoch": 100, "compute_s_per_minibatch": 0.001, "samples_per_minibatch": 16,
  "convergence": {"target": "loss 1", "source": "by hand", "global_batch": 64, "samples_to_target": 6400,
    "noise_scale": 64, "strategies": {"model_avg": {"relative_samples": 1.5, "conditions": "lr x N",
                                                    "params": {"T": "8"}}}}})";
}  // namespace

TEST(PredictCli, TimeToTargetFollowsTheNoiseScaleAndEachStrategysOwnSamples) {
  const std::string w = temp_file("converging.json", kConvergingWorkload);
  const auto r = run_cli("predict --workload " + w + " --gpus 4 --strategy ring,model_avg,sampled -p T=8 --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 3U);
  const json& ring = records[0];
  const json& t = ring.at("time_to_target");
  EXPECT_DOUBLE_EQ(t.at("samples").at("value").get<double>(), 6400);
  EXPECT_DOUBLE_EQ(t.at("steps").at("value").get<double>(), 100);
  EXPECT_DOUBLE_EQ(t.at("time_s").at("value").get<double>(), 100 * ring.at("time_per_iteration_s").get<double>());
  EXPECT_DOUBLE_EQ(t.at("one_gpu_time_s").at("value").get<double>(), 0.25);
  EXPECT_NEAR(t.at("speedup").at("value").get<double>(), 0.25 / t.at("time_s").at("value").get<double>(), 1e-12);
  // The per-step speed-up times what a sample is worth at 64 against 16: 1.25 / 2.
  EXPECT_NEAR(t.at("speedup").at("value").get<double>(), ring.at("speedup_vs_1gpu").get<double>() * 0.625, 1e-12);
  const json& ma = records[1];
  EXPECT_DOUBLE_EQ(ma.at("time_to_target").at("samples").at("value").get<double>(), 9600);
  EXPECT_DOUBLE_EQ(ma.at("time_to_target").at("relative_samples").at("value").get<double>(), 1.5);
  for (const auto& note : ma.at("notes")) EXPECT_EQ(note.get<std::string>().find("time to target"), std::string::npos) << note;
  // Sampling changes the training and the facts give no cost for it: no time, and why.
  EXPECT_FALSE(records[2].contains("time_to_target"));
  EXPECT_NE(records[2].at("no_time_to_target").get<std::string>().find("give no samples to target for sampled"), std::string::npos);
  // Measured at T=8, asked at T=16: a note says the multiple may not hold.
  const auto other = run_cli("predict --workload " + w + " --gpus 4 --strategy model_avg -p T=16 --format json", false);
  ASSERT_EQ(other.status, 0) << other.out;
  EXPECT_NE(other.out.find("model_avg's samples were measured at T=8, this is T=16"), std::string::npos) << other.out;
  // Measured by worker count: each count takes its own multiple, a count not measured the nearest
  // one's, with a note (2 -> 0.75: 6400 x (1 + 32/64) / 2 = 4800 samples, x 0.75 = 3600).
  std::string by_workers = kConvergingWorkload;
  const std::string plain = R"("params": {"T": "8"}})";
  by_workers.replace(by_workers.find(plain), plain.size(), R"("params": {"T": "8"}, "by_workers": {"2": 0.75, "4": 1.25}})");
  const std::string wb = temp_file("converging-by-workers.json", by_workers);
  const auto counts = run_cli("predict -t cluster-2x4gpu-ib-10GBps --workload " + wb + " --gpus 2,3,4,8 --strategy model_avg -p T=8 --format json", false);
  ASSERT_EQ(counts.status, 0) << counts.out;
  const auto per_count = json_lines(counts.out);
  ASSERT_EQ(per_count.size(), 4U);
  const double expected[] = {0.75, 1.25, 1.25, 1.25};
  for (std::size_t i = 0; i < 4; ++i) {
    const json& rec = per_count[i];
    EXPECT_DOUBLE_EQ(rec.at("time_to_target").at("relative_samples").at("value").get<double>(), expected[i]) << rec.dump();
    const bool measured_here = rec.at("ranks").get<int>() == 2 || rec.at("ranks").get<int>() == 4;
    EXPECT_EQ(rec.dump().find("the nearest count the facts give") == std::string::npos, measured_here) << rec.dump();
  }
  EXPECT_DOUBLE_EQ(per_count[0].at("time_to_target").at("samples").at("value").get<double>(), 3600);
  // A count whose run did not reach the target: no time there or nearest it (6 is as near to 4 as
  // to 8: the larger), and why; 4 keeps its multiple.
  std::string unreached = by_workers;
  const std::string counted = R"("by_workers": {"2": 0.75, "4": 1.25}})";
  unreached.replace(unreached.find(counted), counted.size(), R"("by_workers": {"2": 0.75, "4": 1.25}, "not_reached": {"8": 40000}})");
  const std::string wu = temp_file("converging-not-reached.json", unreached);
  const auto beyond = run_cli("predict -t cluster-2x4gpu-ib-10GBps --workload " + wu + " --gpus 4,6,8 --strategy model_avg -p T=8 --format json", false);
  ASSERT_EQ(beyond.status, 0) << beyond.out;
  const auto beyond_records = json_lines(beyond.out);
  ASSERT_EQ(beyond_records.size(), 3U);
  EXPECT_DOUBLE_EQ(beyond_records[0].at("time_to_target").at("relative_samples").at("value").get<double>(), 1.25);
  EXPECT_FALSE(beyond_records[1].contains("time_to_target"));
  EXPECT_NE(beyond_records[1].at("no_time_to_target").get<std::string>().find(
                "model_avg's run on 8 workers (the nearest count the facts give) did not reach loss 1 in 40000 samples"),
            std::string::npos)
      << beyond_records[1].dump();
  EXPECT_NE(beyond_records[2].at("no_time_to_target").get<std::string>().find("model_avg's run on 8 workers did not reach"), std::string::npos)
      << beyond_records[2].dump();
  // The table: the two columns, "?" where unknown, and what they mean.
  const auto table = run_cli("predict --workload " + w + " --gpus 4 --strategy ring,sampled");
  ASSERT_EQ(table.status, 0) << table.out;
  for (const char* text : {"to target", "speed-up to target", "no time to target: it sends only the sampled rows",
                           "to target: time to loss 1", "B_noise = 64 samples"}) {
    EXPECT_NE(table.out.find(text), std::string::npos) << text << "\n" << table.out;
  }
}
