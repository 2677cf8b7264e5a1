// gradsync sweep and gradsync reproduce end to end: parallel workers keep the point
// order, --resume keeps what a file holds and completes it, rank parts merge, bad
// experiment files exit 2 with the file and JSON path; reproduce prints the paper
// comparison and writes its files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<json> records_of(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

// The simulator's wall-clock time is the only field that differs between two runs.
std::vector<json> without_wall_time(std::vector<json> records) {
  for (auto& r : records) r.erase("sim_wall_s");
  return records;
}

std::string folder() { return fs::path(temp_file("probe", "")).parent_path().string(); }

// 4 strategies x 2 GPU counts x 2 executors = 16 points, a second or so.
std::string experiment() {
  return temp_file("sweep.json", R"({
    "topology": "source-a-titanx-4gpu", "workload": "source-a-ffnn-lm", "gpus": [2, 4],
    "strategies": [{"name": "ps"}, {"name": "ring"}, {"name": "hierarchical", "k": 2}, {"name": "sampled"}],
    "executors": ["analytic", "sim"], "iterations": 10})");
}

}  // namespace

TEST(SweepCli, ParallelWorkersGiveTheSameRecordsInTheSameOrder) {
  const std::string spec = experiment(), dir = folder();
  const auto one = run_cli("sweep " + spec + " -j 1 -o " + dir + "/one.jsonl");
  ASSERT_EQ(one.status, 0) << one.out;
  const auto two = run_cli("sweep " + spec + " -j 2 -o " + dir + "/two.jsonl");
  ASSERT_EQ(two.status, 0) << two.out;
  EXPECT_NE(two.out.find("computing 16 on 2 worker processes"), std::string::npos) << two.out;
  const auto a = records_of(dir + "/one.jsonl"), b = records_of(dir + "/two.jsonl");
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(without_wall_time(a), without_wall_time(b));
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i]["point_index"], i);
  // The order is predict's: strategy, then GPU count, then executor.
  EXPECT_EQ(b[0]["strategy"], "ps");
  EXPECT_EQ(b[0]["ranks"], 2);
  EXPECT_EQ(b[0]["executor"], "analytic");
  EXPECT_EQ(b[1]["executor"], "sim");
  EXPECT_EQ(b[15]["strategy"], "sampled");
  // Progress goes to stderr, a line every ~10 % when it is not a terminal.
  EXPECT_NE(two.out.find("[16/16] "), std::string::npos) << two.out;
}

TEST(SweepCli, TableWhenNoOutputFile) {
  const auto r = run_cli("sweep " + experiment() + " -j 2", false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("gradsync sweep: topology source-a-titanx-4gpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nhierarchical "), std::string::npos) << r.out;
}

TEST(SweepCli, ResumeKeepsTheFilesPointsAndCompletesIt) {
  const std::string spec = experiment(), dir = folder();
  ASSERT_EQ(run_cli("sweep " + spec + " -o " + dir + "/full.jsonl").status, 0);
  const auto full = records_of(dir + "/full.jsonl");
  // A partial file: the first 5 records, the first one marked so that a recomputation would show.
  std::string partial;
  for (std::size_t i = 0; i < 5; ++i) {
    json r = full[i];
    if (i == 0) r["time_per_sync_s"] = 12345.0;
    partial += r.dump() + "\n";
  }
  std::ofstream(dir + "/partial.jsonl") << partial;
  const auto r = run_cli("sweep " + spec + " -j 2 --resume -o " + dir + "/partial.jsonl");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("5 already in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("computing 11 on 2 worker processes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(5 kept, 11 computed)"), std::string::npos) << r.out;
  auto resumed = records_of(dir + "/partial.jsonl");
  ASSERT_EQ(resumed.size(), full.size());
  EXPECT_EQ(resumed[0]["time_per_sync_s"], 12345.0);  // kept, not recomputed
  resumed[0]["time_per_sync_s"] = full[0]["time_per_sync_s"];
  EXPECT_EQ(without_wall_time(resumed), without_wall_time(full));

  // Nothing left: a second --resume computes nothing and changes nothing.
  const auto again = run_cli("sweep " + spec + " --resume -o " + dir + "/partial.jsonl");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("16 already in"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("computing 0"), std::string::npos) << again.out;
}

// A sweep killed outright (SIGKILL: no clean-up runs) leaves a result file of whole records
// only (it is only ever replaced whole, by a rename), and --resume finishes it without
// redoing the points it holds. 300 simulated iterations make a point take about 50 ms here
// (20 of them outlast the 20 ms poll and the kill many times over) and keep the resumed rest
// short under the sanitizers.
TEST(SweepCli, AKilledSweepLeavesWholeRecordsAndResumes) {
  const std::string spec = temp_file("slow-sweep.json", R"({
    "topology": "dgx1-v100-hybrid-cube-mesh", "workload": "source-a-ffnn-lm", "gpus": [2, 3, 4, 5, 6, 7, 8],
    "strategies": [{"name": "ring"}, {"name": "ps"}, {"name": "model_avg"}], "executors": ["sim"], "iterations": 300})");
  const std::string out = folder() + "/killed.jsonl";
  fs::remove(out);
  gradsync::models::ChildProcess sweep = gradsync::models::start_process({GRADSYNC_BIN, "sweep", spec, "-o", out});
  const pid_t pid = sweep.pid();
  for (int i = 0; i < 600 && !fs::exists(out); ++i) ::usleep(20000);  // the first checkpoint
  ASSERT_EQ(::kill(pid, SIGKILL), 0) << "the sweep ended before it could be killed; make it longer";
  sweep.wait();  // gone
  ASSERT_TRUE(fs::exists(out)) << "no checkpoint within 12 s";
  const std::string partial = read(out);
  const auto kept = records_of(out);  // throws, failing the test, on a cut line
  ASSERT_FALSE(kept.empty());
  ASSERT_LT(kept.size(), 21u) << "the sweep finished before the kill; make it longer";
  EXPECT_EQ(partial.back(), '\n');

  const auto r = run_cli("sweep " + spec + " --resume -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string summary = "(" + std::to_string(kept.size()) + " kept, " + std::to_string(21 - kept.size()) + " computed)";
  EXPECT_NE(r.out.find(summary), std::string::npos) << r.out;
  const auto all = records_of(out);
  ASSERT_EQ(all.size(), 21u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i]["point_index"], i);
  for (const auto& k : kept) EXPECT_EQ(all[k["point_index"].get<std::size_t>()], k);  // kept as they were
}

TEST(SweepCli, ResumeCompletesACsvFile) {
  const std::string spec = experiment(), dir = folder();
  ASSERT_EQ(run_cli("sweep " + spec + " -o " + dir + "/full.csv").status, 0);
  const std::string full = read(dir + "/full.csv");
  std::istringstream in(full);
  std::string partial, line;
  for (int i = 0; i < 4 && std::getline(in, line); ++i) partial += line + "\n";  // header + 3 records
  std::ofstream(dir + "/partial.csv") << partial;
  const auto r = run_cli("sweep " + spec + " --resume -o " + dir + "/partial.csv");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("(3 kept, 13 computed)"), std::string::npos) << r.out;
  const std::string resumed = read(dir + "/partial.csv");
  EXPECT_EQ(std::count(resumed.begin(), resumed.end(), '\n'), 17);
  EXPECT_EQ(resumed.substr(0, partial.size()), partial);
}

// A CSV from before the time-to-target columns (its header ends at busbw_GBps) is not resumed into
// rows of another shape: one message that says why, exit 2, the file as it was.
TEST(SweepCli, ResumeRefusesACsvOfTheOlderColumns) {
  const std::string spec = experiment(), dir = folder();
  ASSERT_EQ(run_cli("sweep " + spec + " -o " + dir + "/full.csv").status, 0);
  std::istringstream in(read(dir + "/full.csv"));
  std::string header;
  std::getline(in, header);
  const std::string cut = ",samples_to_target,", tail = ",point_index,point";
  const auto from = header.find(cut), to = header.find(tail);
  ASSERT_NE(from, std::string::npos) << header;
  ASSERT_NE(to, std::string::npos) << header;
  const std::string old = header.substr(0, from) + header.substr(to) + "\n";
  std::ofstream(dir + "/old.csv") << old;
  const auto r = run_cli("sweep " + spec + " --resume -o " + dir + "/old.csv");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("old.csv:1: not a CSV file written by gradsync sweep"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("before the time-to-target columns were added"), std::string::npos) << r.out;
  EXPECT_EQ(read(dir + "/old.csv"), old);
}

TEST(SweepCli, RankPartsUnderMpirunMergeInPointOrder) {
  const std::string spec = experiment(), dir = folder();
  ASSERT_EQ(run_cli("sweep " + spec + " -o " + dir + "/single.jsonl").status, 0);
  // Each rank takes the points with index % size == rank (environment as mpirun sets it).
  for (int rank = 0; rank < 3; ++rank) {
    const auto r = run_command({GRADSYNC_BIN, "sweep", spec, "-o", dir + "/mpi.jsonl"}, true, 0,
                               {"OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_RANK=" + std::to_string(rank)});
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("rank " + std::to_string(rank) + " of 3 takes"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(dir + "/mpi.jsonl.rank" + std::to_string(rank)));
  }
  EXPECT_FALSE(fs::exists(dir + "/mpi.jsonl"));
  EXPECT_EQ(records_of(dir + "/mpi.jsonl.rank1").size(), 5u);  // points 1, 4, 7, 10, 13
  const auto m = run_cli("sweep --merge " + dir + "/mpi.jsonl");
  ASSERT_EQ(m.status, 0) << m.out;
  EXPECT_NE(m.out.find("merged 16 records from 3 rank files"), std::string::npos) << m.out;
  EXPECT_EQ(without_wall_time(records_of(dir + "/mpi.jsonl")), without_wall_time(records_of(dir + "/single.jsonl")));
  for (int rank = 0; rank < 3; ++rank) EXPECT_FALSE(fs::exists(dir + "/mpi.jsonl.rank" + std::to_string(rank)));
}

TEST(SweepCli, MergeRefusesWhenARankFileIsMissing) {
  const std::string spec = experiment(), dir = folder();
  for (int rank : {0, 1}) {
    ASSERT_EQ(run_command({GRADSYNC_BIN, "sweep", spec, "-o", dir + "/gap.csv"}, false, 0,
                          {"OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_RANK=" + std::to_string(rank)})
                  .status,
              0);
  }
  const auto m = run_cli("sweep --merge " + dir + "/gap.csv");
  EXPECT_EQ(m.status, 2) << m.out;
  EXPECT_NE(m.out.find("gap.csv.rank2 missing"), std::string::npos) << m.out;
  EXPECT_TRUE(fs::exists(dir + "/gap.csv.rank0"));  // nothing deleted
  // The highest rank's file missing leaves no gap in the names: the points tell.
  ASSERT_EQ(run_command({GRADSYNC_BIN, "sweep", spec, "-o", dir + "/top.jsonl"}, false, 0,
                        {"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0"})
                .status,
            0);
  const auto top = run_cli("sweep --merge " + dir + "/top.jsonl");
  EXPECT_EQ(top.status, 2) << top.out;
  EXPECT_NE(top.out.find("points 1, 2, 5, 6, 9, 10, 13, 14 are in none of the 1 rank files found"), std::string::npos) << top.out;
  EXPECT_TRUE(fs::exists(dir + "/top.jsonl.rank0"));
  const auto none = run_cli("sweep --merge " + dir + "/nothing.jsonl");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("no rank files"), std::string::npos) << none.out;
}

TEST(SweepCli, BadExperimentFilesExit2WithTheFileAndJsonPath) {
  const std::string unknown = temp_file("bad-key.json", R"({"topology": "source-a-titanx-4gpu",
      "strategies": [{"name": "ring"}, {"name": "hierarchical", "kk": 2}]})");
  auto r = run_cli("sweep " + unknown);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(unknown + ": /strategies/1/kk: unknown key 'kk'"), std::string::npos) << r.out;

  const std::string bad_value = temp_file("bad-value.json", R"({"gpus": [2, 0]})");
  r = run_cli("sweep " + bad_value);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(bad_value + ": /gpus/1: got 0; expected an integer of at least 1"), std::string::npos) << r.out;

  const std::string syntax = temp_file("syntax.json", "{\"gpus\": [2,\n");
  r = run_cli("sweep " + syntax);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(syntax), std::string::npos) << r.out;

  r = run_cli("sweep " + experiment() + " --resume");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--resume: expected -o FILE"), std::string::npos) << r.out;

  // A result file that a sweep did not write cannot be resumed.
  const std::string foreign = temp_file("foreign.jsonl", "{\"executor\": \"analytic\"}\n");
  r = run_cli("sweep " + experiment() + " --resume -o " + foreign);
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(foreign + ":1: a record without \"point\""), std::string::npos) << r.out;
}

TEST(ReproduceCli, SourceAPrintsTheComparisonAndWritesItsFiles) {
  const std::string dir = folder() + "/reproduce";
  const auto r = run_cli("reproduce source-a --quick -j 2 -o " + dir, false);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"1. Fit: two numbers from the two 1-GPU rows of Table 4",
                           "compute per minibatch c = 216.07 s / bn = 17.07 ms",
                           "check: the model's 1-GPU PS epoch with this S = 317.22 s (paper 317.22 s)",
                           "2. Table 4", "1280.40", "903.58", "mean absolute error over the 6 predicted values",
                           "3. Why the multi-GPU rows miss", "RNN LM on 4 GPUs", "gpu0,gpu2", "6. Vocabulary",
                           "7. Table 4's ring column with NCCL's transports", "P2P across", "SHM across"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  for (const char* f : {"source-a.jsonl", "source-a.csv", "source-a-comparison.json", "source-a.txt"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  const json cmp = json::parse(read(dir + "/source-a-comparison.json"));
  ASSERT_EQ(cmp["table4"]["rows"].size(), 4u);
  EXPECT_NEAR(cmp["table4"]["rows"][0]["model_ps_s"].get<double>(), 317.22, 0.01);
  EXPECT_NEAR(cmp["table4"]["rows"][0]["model_ring_s"].get<double>(), 216.07, 0.01);
  // NCCL's ring on the dense gradient: one row per GPU count, both transports across the switches.
  ASSERT_EQ(cmp["table4_nccl"]["rows"].size(), 4u);
  EXPECT_EQ(cmp["table4_nccl"]["paper_over_model_sync_p2p_across"].size(), 3u);
  EXPECT_TRUE(cmp["table4_nccl"]["rows"][3].contains("model_ring_s_p2p_level_PXB"));
  // With the backward pass overlapped: the same rows, never slower than without (NCCL, P2P across).
  EXPECT_NE(r.out.find("8. Table 4's all-reduce column with the backward pass overlapped"), std::string::npos) << r.out;
  const json& overlapped = cmp["table4_overlap"]["rows"];
  ASSERT_EQ(overlapped.size(), 4u);
  for (std::size_t i = 1; i < 4; ++i) {
    const double with = overlapped[i]["NCCL, P2P across"]["epoch_s"].get<double>();
    const double without = cmp["table4_nccl"]["rows"][i]["model_ring_s_p2p_level_SYS"].get<double>();
    EXPECT_LE(with, without * (1 + 1e-12)) << i;
    EXPECT_GT(with, 0.9 * without) << i;  // the FFNN's last bucket is ready only at the end of the backward pass
  }
  // The plot's data: the paper's speed-ups over one GPU and three predicted series over 1-4 GPUs.
  const json& speedups = cmp["paper_speedups"];
  ASSERT_EQ(speedups["paper"].size(), 1u);
  EXPECT_NEAR(speedups["paper"][0]["points"][1]["speedup"].get<double>(), 216.07 / 1245.4, 1e-9);
  ASSERT_EQ(speedups["predicted"].size(), 3u);
  for (const auto& series : speedups["predicted"]) {
    ASSERT_EQ(series["points"].size(), 4u);
    for (const auto& p : series["points"]) EXPECT_GE(p["overlap"].get<double>(), p["no_overlap"].get<double>() * (1 - 1e-12));
  }
  const auto records = records_of(dir + "/source-a.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_TRUE(records[0].contains("reproduce"));
  EXPECT_EQ(read(dir + "/source-a.txt").substr(0, 40), r.out.substr(0, 40));
}

TEST(ReproduceCli, SourcesBAndCQuick) {
  const std::string dir = folder() + "/reproduce-bc";
  auto r = run_cli("reproduce source-b --quick -o " + dir, false);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"Communication time vs latency", "Communication time vs workers", "d t / d a",
                           "PS-HRA has the lowest time", "the ring grows most with latency", "Where PS-HRA is lowest"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  r = run_cli("reproduce source-c --quick -o " + dir, false);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"InfiniBand 10 GB/s", "4.00x", "2.56x", "Calibration", "sync period T",
                           "5. The backward pass overlapped", "per step whatever the network"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  const json c = json::parse(read(dir + "/source-c-comparison.json"));
  // Overlapped sync SGD: ring and nccl on both networks, never slower than without overlap.
  ASSERT_EQ(c["overlap"]["rows"].size(), 4u);
  for (const auto& row : c["overlap"]["rows"]) {
    EXPECT_GE(row["speedup"].get<double>(), row["speedup_without_overlap"].get<double>()) << row.dump();
    EXPECT_LE(row["exposed_s"].get<double>(), row["sync_s"].get<double>()) << row.dump();
  }
  // The paper's rows as exposed time: e = c (N/s - 1).
  EXPECT_NEAR(c["overlap"]["paper_exposed_eth_s"].get<double>() / c["overlap"]["paper_exposed_ib_s"].get<double>(),
              (8 / 2.56 - 1) / (8 / 4.0 - 1), 1e-9);
  // Model averaging and BMUF average the models after the step: asking for overlap changes nothing.
  ASSERT_EQ(c["overlap"]["periodic"].size(), 12u);
  for (const auto& row : c["overlap"]["periodic"]) {
    EXPECT_DOUBLE_EQ(row["speedup"].get<double>(), row["speedup_overlap_asked"].get<double>()) << row.dump();
  }
  ASSERT_EQ(c["paper_speedups"]["paper"].size(), 2u);
  ASSERT_EQ(c["paper_speedups"]["predicted"].size(), 4u);
  for (const char* f : {"source-b.jsonl", "source-b.csv", "source-c.jsonl", "source-c-comparison.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  r = run_cli("reproduce source-d");
  EXPECT_EQ(r.status, 2) << r.out;
}
