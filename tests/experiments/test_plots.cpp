// Each plot script draws from a small fixture result file (PNG and SVG appear); the
// speed-up figures are read back (tests/experiments/svg_figure.py parses the SVG) and
// checked against what the fixture implies: axes, axis labels, title, one line per
// configuration in the fixture with one marker per point, legend labels. A missing or bad
// file gets one clear message and exit status 2. Skipped when Debian's /usr/bin/python3
// cannot import matplotlib.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

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

std::string fixture(const std::string& name) { return std::string(GRADSYNC_EXPERIMENT_FIXTURES) + "/" + name; }

void expect_figure(const std::vector<std::string>& command, const std::string& stem) {
  const auto r = run_command(with(command, {"-o", stem + ".png"}));
  ASSERT_EQ(r.status, 0) << words_text(command) << "\n" << r.out;
  for (const char* ext : {".png", ".svg"}) {
    ASSERT_TRUE(fs::exists(stem + ext)) << stem << ext << "\n" << r.out;
    EXPECT_GT(fs::file_size(stem + ext), 1000u);
  }
}

using json = nlohmann::json;

// The figure drawn into `svg`, as svg_figure.py reads it back (see its docstring).
json read_figure(const std::string& svg) {
  const auto r = run_command({kPython, std::string(GRADSYNC_SOURCE) + "/tests/experiments/svg_figure.py", svg}, false);
  if (r.status != 0) throw std::runtime_error("svg_figure.py " + svg + ": exit status " + std::to_string(r.status));
  return json::parse(r.out);
}

// The records of a JSON-lines fixture.
std::vector<json> fixture_records(const std::string& name) {
  std::vector<json> out;
  std::ifstream in(fixture(name));
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(json::parse(line));
  }
  if (out.empty()) throw std::runtime_error(name + ": no records");
  return out;
}

std::vector<std::string> strings(const json& a) { return a.get<std::vector<std::string>>(); }

// An axis label as drawn; "(none)" where the axes has none.
std::string label(const json& ax, const char* which) {
  const json& v = ax.at(which);
  return v.is_null() ? "(none)" : v.get<std::string>();
}

// Marker symbols drawn by each line (or each collection) of an axes, in drawing order.
std::vector<int> markers(const json& items) {
  std::vector<int> out;
  for (const auto& i : items) out.push_back(i.at("markers").get<int>());
  return out;
}

// Patches every axes has besides bars: its background and its four spines.
constexpr int kFramePatches = 5;
}  // namespace

#define REQUIRE_MATPLOTLIB() \
  if (!have_matplotlib()) GTEST_SKIP() << kPython << " cannot import matplotlib"

TEST(Plots, SpeedupVsGpus) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/speedup";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("speedup_vs_gpus.py", fixture("speedup-records.jsonl")), stem));
  // What the fixture implies: the script plots the analytic records that have a
  // speed-up, one line per strategy with a marker at each of its GPU counts.
  std::map<std::string, std::set<int>> ranks_of;
  std::set<std::string> workloads, topologies;
  int most = 1;
  for (const auto& rec : fixture_records("speedup-records.jsonl")) {
    if (rec.at("executor") != "analytic" || rec.at("speedup_vs_1gpu").is_null()) continue;
    ranks_of[rec.at("strategy").get<std::string>()].insert(rec.at("ranks").get<int>());
    workloads.insert(rec.at("workload").get<std::string>());
    topologies.insert(rec.at("topology").get<std::string>());
    most = std::max(most, rec.at("ranks").get<int>());
  }
  // One workload and one topology: the labels are the strategies' names alone.
  ASSERT_EQ(workloads.size(), 1u);
  ASSERT_EQ(topologies.size(), 1u);
  ASSERT_EQ(ranks_of.size(), 2u);  // ps and ring: a line going missing shows below

  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 1u);
  const json& ax = fig.at("axes")[0];
  EXPECT_EQ(label(ax, "xlabel"), "GPUs");
  EXPECT_EQ(label(ax, "ylabel"), "speed-up over one GPU (epoch time)");
  EXPECT_EQ(strings(ax.at("texts")), std::vector<std::string>{"Speed-up vs GPUs (analytic)"});  // the title
  std::vector<std::string> ticks, legend;
  for (int n = 1; n <= most; ++n) ticks.push_back(std::to_string(n));
  EXPECT_EQ(strings(ax.at("xticks")), ticks);
  // Lines in drawing order: the strategies (sorted), the dashed "linear" reference (no
  // markers), the speed-up-1 rule (no markers, no legend entry).
  std::vector<int> expected_markers;
  for (const auto& [strategy, ranks] : ranks_of) {
    legend.push_back(strategy);
    expected_markers.push_back(static_cast<int>(ranks.size()));
  }
  legend.push_back("linear");
  expected_markers.insert(expected_markers.end(), {0, 0});
  EXPECT_EQ(markers(ax.at("lines")), expected_markers);
  EXPECT_TRUE(ax.at("lines")[ranks_of.size()].at("dashed"));
  ASSERT_EQ(ax.at("legends").size(), 1u);
  EXPECT_EQ(strings(ax.at("legends")[0]), legend);
  EXPECT_EQ(ax.at("patches"), kFramePatches);  // no bars
  EXPECT_EQ(fig.at("legends").size(), 0u);
}

TEST(Plots, SpeedupVsGpusTellsConfigurationsApartByTheirParameters) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/speedup-by";
  const std::string by = " --by params.inner --by params.server";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("speedup_vs_gpus.py", fixture("speedup-sampling.jsonl") + by), stem));
  // One line per configuration of the one strategy, named by the parameters that tell them
  // apart (a parameter that does not apply, "-", is left out), a marker per GPU count.
  std::map<std::string, std::set<int>> ranks_of;
  std::set<int> all_ranks;
  for (const auto& rec : fixture_records("speedup-sampling.jsonl")) {
    std::string label = rec.at("strategy").get<std::string>();
    for (const char* p : {"inner", "server"}) {
      const std::string v = rec.at("params").at(p).get<std::string>();
      if (v != "-") label += std::string(" ") + p + "=" + v;
    }
    ranks_of[label].insert(rec.at("ranks").get<int>());
    all_ranks.insert(rec.at("ranks").get<int>());
  }
  ASSERT_EQ(ranks_of.size(), 2u);
  ASSERT_TRUE(ranks_of.count("sampled inner=ring"));
  ASSERT_TRUE(ranks_of.count("sampled inner=ps server=host"));
  json ax = read_figure(stem + ".svg").at("axes").at(0);
  ASSERT_EQ(ax.at("legends").size(), 1u);
  auto legend = strings(ax.at("legends")[0]);
  ASSERT_FALSE(legend.empty());
  EXPECT_EQ(legend.back(), "linear");
  legend.pop_back();
  std::vector<std::string> labels;
  std::vector<int> expected_markers;
  for (const auto& [label, ranks] : ranks_of) {
    labels.push_back(label);
    expected_markers.push_back(static_cast<int>(ranks.size()));
  }
  std::sort(legend.begin(), legend.end());
  EXPECT_EQ(legend, labels);
  auto drawn = markers(ax.at("lines"));
  ASSERT_EQ(drawn.size(), ranks_of.size() + 2);  // the configurations, "linear", the speed-up-1 rule
  drawn.resize(ranks_of.size());
  std::sort(drawn.begin(), drawn.end());
  std::sort(expected_markers.begin(), expected_markers.end());
  EXPECT_EQ(drawn, expected_markers);
  // Without --by both configurations are one strategy: one line, the first configuration's
  // point at each GPU count.
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("speedup_vs_gpus.py", fixture("speedup-sampling.jsonl")), stem + "-plain"));
  ax = read_figure(stem + "-plain.svg").at("axes").at(0);
  EXPECT_EQ(strings(ax.at("legends").at(0)), (std::vector<std::string>{"sampled", "linear"}));
  EXPECT_EQ(markers(ax.at("lines")), (std::vector<int>{static_cast<int>(all_ranks.size()), 0, 0}));
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
