// gradsync validate --here on this machine's host ranks, end to end: measured with
// gradsync-run measure under a local mpirun (its probe spread shown), predicted, simulated,
// run for real with every element checked at 2 and 4 ranks, MPI_Allreduce as the reference
// row, the table and the records written; and bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace fs = std::filesystem;

namespace {

std::string validate_here_dir() {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-validate-here-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir.string();
}

}  // namespace

TEST(ValidateHere, HostRanksAtTwoAndFourRanks) {
  const std::string dir = validate_here_dir();
  const auto r = run_command({GRADSYNC_BIN, "validate", "--here", "--backend", "mpi_host", "--gpus", "2,4", "--strategies",
                              "ring,ps", "--sizes", "1MiB", "-n", "2", "-o", dir});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("gradsync validate: this machine (4 ranks, backend mpi_host)"), std::string::npos) << r.out;
  // One row per strategy and rank count, each checked with no wrong element.
  for (const char* row : {"ring +2 +1\\.0 MB .* 0\n", "ps +2 +1\\.0 MB .* 0\n", "ring +4 +1\\.0 MB .* 0\n",
                          "ps +4 +1\\.0 MB .* 0\n"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(row))) << row << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("sim: median |error|"), std::string::npos) << r.out;
  // The platform's own collective as the reference row, at each rank count.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("MPI_Allreduce \\(reference\\) +2 +1\\.0 MB"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("MPI_Allreduce \\(reference\\) +4 +1\\.0 MB"))) << r.out;
  EXPECT_NE(r.out.find("measurement: the repeated probes of a pair disagreed by"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/measured.json"));
  // Records: per point, each predicting executor and the real run, which names where it ran.
  std::ifstream in(dir + "/validation.jsonl");
  int runs = 0, predictions = 0, references = 0;
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    if (rec.at("executor") == "run") {
      ++runs;
      if (rec.at("strategy") == "MPI_Allreduce") {
        ++references;
      } else {
        EXPECT_EQ(rec.at("wrong_elements"), 0) << line;
      }
      const std::string notes = rec.at("notes").dump();
      EXPECT_NE(notes.find("measured on this machine"), std::string::npos) << notes;
      EXPECT_NE(notes.find("backend mpi_host"), std::string::npos) << notes;
    } else {
      ++predictions;
    }
  }
  EXPECT_EQ(runs, 6);  // 4 strategy runs, and MPI_Allreduce at 2 and 4 ranks
  EXPECT_EQ(references, 2);
  EXPECT_EQ(predictions, 12);  // formula, analytic, sim of each strategy run
  fs::remove_all(dir);
}

TEST(ValidateHere, BadInputGivesOneMessageAndStatus2) {
  const std::string dir = validate_here_dir();
  auto r = run_command({GRADSYNC_BIN, "validate", "--backend", "nccl", "-o", dir});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("validate --backend nccl: only with --here"), std::string::npos) << r.out;
  r = run_command({GRADSYNC_BIN, "validate", "--here", "--gpus", "1", "-o", dir});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("expected counts of 2 ranks or more"), std::string::npos) << r.out;
  r = run_command({GRADSYNC_BIN, "validate", "--here", "--backend", "gpu", "-o", dir});
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_command({GRADSYNC_BIN, "validate", "--here", "--hostfile", "/nonexistent/hosts", "-o", dir});
  EXPECT_EQ(r.status, 2) << r.out;
  fs::remove_all(dir);
}

// validate --workloads --overlap: the training step predicted (formula, analytic, sim: each
// with the buckets beside the backward pass) and run for real (gradsync-run --workload
// --overlap, every bucket checked), the steps' times compared.
TEST(ValidateHere, TrainingStepsWithOverlap) {
  const std::string dir = validate_here_dir() + "-steps";
  const auto r = run_command({GRADSYNC_BIN, "validate", "--here", "--backend", "mpi_host", "--gpus", "2", "--strategies", "ring,ps",
                              "--workloads", "resnet50", "--workload-scale", "0.02", "--overlap", "--bucket-cap", "12.5MiB",
                              "--compute-work", "sleep", "-n", "2", "-o", dir});
  ASSERT_EQ(r.status, 0) << r.out;
  // The bucket sizes are the full-size model's, scaled with it; --here keeps the compute's pace.
  EXPECT_NE(r.out.find("times: the training step (iteration) of each workload scaled by 0.02 (the same layers), its buckets "
                       "synchronised beside the backward pass (buckets of 262.1 kB, the first 21.0 kB: DDP's scaled alike); "
                       "the real step's compute as sleep"),
            std::string::npos)
      << r.out;
  for (const char* row : {"ring +2  resnet50-x0\\.02 .* 0\n", "ps +2  resnet50-x0\\.02 .* 0\n"}) {
    EXPECT_TRUE(std::regex_search(r.out, std::regex(row))) << row << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("analytic: median |error|"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 2 training steps"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(reference)"), std::string::npos) << r.out;  // no size: no MPI_Allreduce row
  std::ifstream in(dir + "/validation.jsonl");
  int overlapped = 0, runs = 0;
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    EXPECT_EQ(rec.at("workload"), "resnet50-x0.02") << line;
    overlapped += rec.contains("overlap") ? 1 : 0;
    if (rec.at("executor") == "run") {
      ++runs;
      EXPECT_EQ(rec.at("wrong_elements"), 0) << line;
    }
  }
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(overlapped, 8);  // formula, analytic, sim and the run, for ring and ps
  fs::remove_all(dir);
}
