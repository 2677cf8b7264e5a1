// gradsync simulate end to end: every strategy on every shipped topology, experiment
// files, timelines, and bad input (one message, exit status 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "json_lines.h"
#include "models/strategies/strategy.h"

namespace fs = std::filesystem;
using nlohmann::json;


TEST(SimulateCli, EveryStrategyOnEveryShippedTopology) {
  for (const char* t : {"source-a-titanx-4gpu", "dgx1-v100-hybrid-cube-mesh", "pcie-8gpu-2switch",
                        "cluster-2x4gpu-ib-10GBps", "cluster-2x4gpu-eth-1GBps"}) {
    const auto r = run_cli(std::string("simulate --format json --topology ") + t, false);
    ASSERT_EQ(r.status, 0) << t << r.out;
    const auto records = json_lines(r.out);
    EXPECT_EQ(records.size(), gradsync::models::all_strategies().size()) << t;  // every strategy
    for (const auto& rec : records) {
      EXPECT_EQ(rec["executor"], "sim");
      EXPECT_GT(rec["time_per_sync_s"].get<double>(), 0) << t << " " << rec["strategy"];
      EXPECT_GT(rec["time_per_iteration_s"].get<double>(), 0) << t << " " << rec["strategy"];
      if (rec["asynchronous"].get<bool>()) {
        ASSERT_TRUE(rec.contains("updates_per_s")) << rec.dump();
        EXPECT_GT(rec["updates_per_s"].get<double>(), 0) << rec.dump();
      }
    }
  }
}

// -x adds executors beside the simulator (comma-separated or repeated), rows in registry order.
TEST(SimulateCli, ExecutorsAreAddedBesideTheSimulator) {
  const auto r = run_cli("simulate --strategy ring --gpus 2 --size 1MiB -x analytic,formula --format json", false);
  ASSERT_EQ(r.status, 0) << r.out;
  std::vector<std::string> executors;
  for (const auto& j : json_lines(r.out)) executors.push_back(j.at("executor").get<std::string>());
  EXPECT_EQ(executors, (std::vector<std::string>{"formula", "analytic", "sim"}));
}

TEST(SimulateCli, FewerStepsThanThePeriodAreReported) {
  const auto r = run_cli("simulate --format json --strategy model_avg --iterations 8", false);
  ASSERT_EQ(r.status, 0) << r.out;
  const json rec = json::parse(r.out);
  EXPECT_NE(rec["notes"].dump().find("8 steps simulated, fewer than the 625 between synchronisations"), std::string::npos)
      << rec.dump();
}

TEST(SimulateCli, ExperimentFileAndTimeline) {
  const std::string spec = std::string(GRADSYNC_SOURCE) + "/experiments/specs/source-a-simulate.json";
  const std::string trace = fs::temp_directory_path() / ("gradsync-trace-" + std::to_string(::getpid()) + ".json");
  const auto r = run_cli("simulate " + spec + " --format json --trace " + trace, false);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = json_lines(r.out);
  ASSERT_EQ(records.size(), 12u);  // 6 strategies x (analytic, sim)
  // Where the analytic model and CM02 agree: ring and PS on this machine.
  for (std::size_t i = 0; i + 1 < records.size(); i += 2) {
    ASSERT_EQ(records[i]["strategy"], records[i + 1]["strategy"]);
    if (records[i]["strategy"] == "ring" || records[i]["strategy"] == "ps") {
      EXPECT_NEAR(records[i]["time_per_sync_s"].get<double>(), records[i + 1]["time_per_sync_s"].get<double>(), 1e-8);
    }
  }
  std::ifstream in(trace);
  const json doc = json::parse(in);
  EXPECT_GT(doc["traceEvents"].size(), 20u);
  fs::remove(trace);
}

TEST(SimulateCli, BadInput) {
  const std::string dir = fs::temp_directory_path() / ("gradsync-sim-cli-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases = {
      {"simulate --network-model LV07", "--network-model: LV07 not in {CM02,LV08}"},
      {"simulate --strategy ring --speeds 1,1,1", "\"speeds\" has 3 values but a run has 4 ranks"},
      {"simulate --strategy ring --speeds 1,x,1,1", "--speeds \"1,x,1,1\": \"x\" is not a positive speed"},
      {"simulate " + write("typo.json", R"({"topolgy": "source-a-titanx-4gpu"})"),
       dir + "/typo.json: /topolgy: unknown key 'topolgy' (did you mean 'topology'?)"},
      {"simulate " + write("strat.json", R"({"strategies": [{"name": "ring", "kk": 2}]})"),
       dir + "/strat.json: /strategies/0/kk: unknown key 'kk'"},
      {"simulate " + write("name.json", R"({"strategies": [{"name": "rng"}]})"),
       dir + "/name.json: /strategies/0/name: --strategy rng: unknown strategy (did you mean 'ring'?)"},
      {"simulate " + write("exec.json", R"({"executors": ["simulator"]})"),
       dir + "/exec.json: /executors/0: got \"simulator\"; expected one of formula, analytic, sim"},
      {"simulate " + write("bad.json", "{\"gpus\": [4,]}"), dir + "/bad.json:1:13: not valid JSON"},
      {"simulate " + write("both.json", R"({"gpus": [4]})") + " --gpus 2", "an experiment file says what to run"},
      {"simulate --strategy ring --trace " + write("plain.txt", "a file") + "/t.json",
       dir + "/plain.txt/t.json: cannot make the folder " + dir + "/plain.txt: " + dir + "/plain.txt is a file"},
  };
  for (const auto& c : cases) {
    const auto r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expected), std::string::npos) << c.args << "\n--- got:\n" << r.out;
  }
  fs::remove_all(dir);
}
