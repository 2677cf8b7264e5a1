// Each plot script draws from a small fixture result file (PNG and SVG appear), and a
// missing or bad file gets one clear message and exit status 2. Skipped when Debian's
// /usr/bin/python3 cannot import matplotlib.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/run_command.h"

namespace fs = std::filesystem;

namespace {
const std::string kPython = "/usr/bin/python3";

std::string words_text(const std::vector<std::string>& argv) {
  std::string t;
  for (const auto& a : argv) t += (t.empty() ? "" : " ") + a;
  return t;
}

bool have_matplotlib() {
  static const bool ok = run_command({kPython, "-c", "import matplotlib"}, false).status == 0;
  return ok;
}

std::string out_dir() {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-plots-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir.string();
}

// The command line of a plot script: python, the script, then the words of `args`.
std::vector<std::string> script(const std::string& name, const std::string& args = "") {
  std::vector<std::string> argv = {kPython, std::string(GRADSYNC_SOURCE) + "/plots/" + name};
  for (auto& w : words(args)) argv.push_back(std::move(w));
  return argv;
}

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& more) {
  argv.insert(argv.end(), more.begin(), more.end());
  return argv;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
std::string fixture(const std::string& name) { return std::string(GRADSYNC_EXPERIMENT_FIXTURES) + "/" + name; }

void expect_figure(const std::vector<std::string>& command, const std::string& stem) {
  const auto r = run_command(with(command, {"-o", stem + ".png"}));
  ASSERT_EQ(r.status, 0) << words_text(command) << "\n" << r.out;
  for (const char* ext : {".png", ".svg"}) {
    ASSERT_TRUE(fs::exists(stem + ext)) << stem << ext << "\n" << r.out;
    EXPECT_GT(fs::file_size(stem + ext), 1000u);
  }
}
}  // namespace

#define REQUIRE_MATPLOTLIB() \
  if (!have_matplotlib()) GTEST_SKIP() << kPython << " cannot import matplotlib"

TEST(Plots, SpeedupVsGpus) {
  REQUIRE_MATPLOTLIB();
  expect_figure(script("speedup_vs_gpus.py", fixture("speedup-records.jsonl")), out_dir() + "/speedup");
}

TEST(Plots, SpeedupVsGpusTellsConfigurationsApartByTheirParameters) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/speedup-by";
  expect_figure(script("speedup_vs_gpus.py", fixture("speedup-sampling.jsonl") + " --by params.inner --by params.server"), stem);
  const std::string svg = file_text(stem + ".svg");
  // One line per configuration of the one strategy, named by the parameters that tell them apart.
  EXPECT_NE(svg.find("sampled inner=ring"), std::string::npos);
  EXPECT_NE(svg.find("sampled inner=ps server=host"), std::string::npos);
  // Without --by both configurations are one strategy: one line, the first configuration's points.
  expect_figure(script("speedup_vs_gpus.py", fixture("speedup-sampling.jsonl")), stem + "-plain");
  const std::string plain = file_text(stem + "-plain.svg");
  EXPECT_EQ(plain.find("inner=ring"), std::string::npos);
}

TEST(Plots, PredictedVsMeasured) {
  REQUIRE_MATPLOTLIB();
  expect_figure(script("predicted_vs_measured.py", fixture("validation-small.jsonl")), out_dir() + "/pvm");
}

TEST(Plots, TimeVsLatencyAndWorkers) {
  REQUIRE_MATPLOTLIB();
  expect_figure(script("time_vs_latency_workers.py", fixture("source-b-small.jsonl")), out_dir() + "/source-b");
}

TEST(Plots, BandwidthHeatmap) {
  REQUIRE_MATPLOTLIB();
  expect_figure(script("bandwidth_heatmap.py", std::string(GRADSYNC_SOURCE) + "/topologies/source-a-titanx-4gpu.json"),
                out_dir() + "/heatmap");
}

TEST(Plots, EpochBarsVsPaper) {
  REQUIRE_MATPLOTLIB();
  expect_figure(script("epoch_bars_vs_paper.py", "--diagnostic " + fixture("source-a-comparison-small.json")),
                out_dir() + "/bars");
}

TEST(Plots, MissingOrBadFilesGetOneClearMessage) {
  REQUIRE_MATPLOTLIB();
  const std::string dir = out_dir();
  auto r = run_command(script("speedup_vs_gpus.py", dir + "/none.jsonl -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_EQ(r.out, "speedup_vs_gpus.py: error: " + dir + "/none.jsonl: no such file; expected a result file written by "
                   "gradsync (.jsonl or .csv)\n");
  r = run_command(script("time_vs_latency_workers.py", fixture("speedup-records.jsonl") + " -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no record tagged reproduce.part"), std::string::npos) << r.out;
  r = run_command(script("bandwidth_heatmap.py", fixture("speedup-records.jsonl") + " -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_command(script("epoch_bars_vs_paper.py", fixture("speedup-records.jsonl") + " -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  r = run_command(script("predicted_vs_measured.py", fixture("speedup-records.jsonl") + " -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no record with executor \"run\""), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/x.png"));
  for (const char* s : {"speedup_vs_gpus.py", "predicted_vs_measured.py", "time_vs_latency_workers.py",
                        "bandwidth_heatmap.py", "epoch_bars_vs_paper.py"}) {
    r = run_command(script(s, "--help"));
    EXPECT_EQ(r.status, 0) << s << r.out;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << s;
  }
}
