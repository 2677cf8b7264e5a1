// Each plot script draws from a small fixture result file, and the figure it writes is
// read back (tests/experiments/svg_figure.py parses the SVG) and checked against what the
// fixture implies: axes, axis labels, titles, one series per configuration in the
// fixture with one marker per point, legend labels. A missing or bad file gets one clear
// message and exit status 2. Skipped when Debian's /usr/bin/python3 cannot import
// matplotlib.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

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

std::string printf_g(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
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

// --to-target: the speed-up to the workload's target, a line per strategy over the GPU counts
// whose records have one (sampled has none past one GPU: the workload gives no cost for it).
TEST(Plots, SpeedupToTargetVsGpus) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/speedup-to-target";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("speedup_vs_gpus.py", fixture("speedup-to-target.jsonl") + " --to-target"), stem));
  std::map<std::string, int> points;
  for (const auto& rec : fixture_records("speedup-to-target.jsonl")) {
    if (rec.contains("time_to_target")) ++points[rec.at("strategy").get<std::string>()];
  }
  ASSERT_EQ(points.size(), 3u);
  ASSERT_EQ(points.at("sampled"), 1);  // one GPU only
  const json fig = read_figure(stem + ".svg");
  const json& ax = fig.at("axes")[0];
  EXPECT_EQ(label(ax, "ylabel"), "speed-up to target over one GPU (time to target)");
  std::vector<int> expected_markers;
  for (const auto& [strategy, n] : points) expected_markers.push_back(n);
  expected_markers.insert(expected_markers.end(), {0, 0});
  EXPECT_EQ(markers(ax.at("lines")), expected_markers);
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
  const std::string stem = out_dir() + "/pvm";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("predicted_vs_measured.py", fixture("validation-small.jsonl")), stem));
  // From the fixture: each prediction is paired with the measurement ("run" record) of the
  // same (strategy, ranks, bytes); one scatter per (strategy, executor) with a marker per
  // pair; the title counts the pairs within 5 % of each other.
  using Key = std::tuple<std::string, int, double>;
  std::map<Key, double> measured;
  std::vector<std::pair<Key, json>> predicted;
  for (const auto& rec : fixture_records("validation-small.jsonl")) {
    const Key k{rec.at("strategy").get<std::string>(), rec.at("ranks").get<int>(), rec.at("bytes").get<double>()};
    if (rec.at("executor") == "run") {
      measured[k] = rec.at("time_per_sync_s").get<double>();
    } else {
      predicted.emplace_back(k, rec);
    }
  }
  std::map<std::string, int> pairs_of;  // "strategy (executor)" -> pairs
  int pairs = 0, inside = 0;
  for (const auto& [k, rec] : predicted) {
    if (!measured.count(k)) continue;
    ++pairs;
    ++pairs_of[std::get<0>(k) + " (" + rec.at("executor").get<std::string>() + ")"];
    inside += std::fabs(rec.at("time_per_sync_s").get<double>() / measured[k] - 1) <= 0.05 ? 1 : 0;
  }
  ASSERT_GT(pairs, 0);
  ASSERT_GT(inside, 0);  // the title's count is not trivially 0 ...
  ASSERT_LT(inside, pairs);  // ... nor all of them

  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 1u);
  const json& ax = fig.at("axes")[0];
  EXPECT_EQ(label(ax, "xlabel"), "measured time per synchronisation (s)");
  EXPECT_EQ(label(ax, "ylabel"), "predicted time per synchronisation (s)");
  EXPECT_EQ(strings(ax.at("texts")), std::vector<std::string>{"Predicted vs measured (" + std::to_string(inside) + " of " +
                                                              std::to_string(pairs) + " within +-5 %)"});
  std::vector<std::string> legend = {"predicted = measured", "+-5 %"};
  std::vector<int> scatter;
  for (const auto& [label, n] : pairs_of) {
    legend.push_back(label);
    scatter.push_back(n);
  }
  ASSERT_EQ(ax.at("legends").size(), 1u);
  EXPECT_EQ(strings(ax.at("legends")[0]), legend);
  EXPECT_EQ(ax.at("lines").size(), 1u);  // predicted = measured
  // The band (fill_between) first, then one scatter per (strategy, executor).
  ASSERT_EQ(ax.at("collections").size(), 1 + pairs_of.size());
  EXPECT_EQ(ax.at("collections")[0].at("kind").get<std::string>(), "PolyCollection");
  std::vector<int> drawn;
  for (std::size_t i = 1; i < ax.at("collections").size(); ++i) {
    EXPECT_EQ(ax.at("collections")[i].at("kind").get<std::string>(), "PathCollection");
    drawn.push_back(ax.at("collections")[i].at("markers").get<int>());
  }
  EXPECT_EQ(drawn, scatter);
}

TEST(Plots, BusbwVsSize) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/busbw";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("busbw_vs_size.py", fixture("compare-small.jsonl")), stem));
  // From the fixture (gradsync compare -o of two published machines, a few sizes each): one
  // column per nccl-tests table; on top the measured line and one dashed line per executor,
  // a marker per size; below, each executor's error, the zero line and the band.
  std::vector<std::string> tables;  // topology of each table, in order
  std::map<std::string, int> sizes_of;
  std::set<std::string> executors;
  std::string strategy;
  for (const auto& rec : fixture_records("compare-small.jsonl")) {
    const std::string topology = rec.at("topology");
    if (rec.at("executor") == "measured") {
      if (tables.empty() || tables.back() != topology) tables.push_back(topology);
      ++sizes_of[topology];
    } else {
      executors.insert(rec.at("executor").get<std::string>());
      strategy = rec.at("strategy");
    }
  }
  ASSERT_EQ(tables.size(), 2u);
  ASSERT_EQ(executors, (std::set<std::string>{"analytic", "sim"}));

  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 2 * tables.size());
  std::vector<std::string> legend = {"measured (nccl-tests)"};
  for (const auto& e : executors) legend.push_back(strategy + " (" + e + ")");
  for (std::size_t col = 0; col < tables.size(); ++col) {
    const json& top = fig.at("axes")[col];
    const json& bottom = fig.at("axes")[tables.size() + col];
    const int n = sizes_of[tables[col]];
    EXPECT_EQ(label(top, "ylabel"), "busbw (GB/s)");
    EXPECT_EQ(label(bottom, "ylabel"), "error (%)");
    EXPECT_EQ(label(bottom, "xlabel"), "size (bytes)");
    EXPECT_EQ(strings(top.at("texts")), std::vector<std::string>{tables[col] + ", " +
                                                                 (tables[col].find("2080") != std::string::npos ? "2" : "8") +
                                                                 " GPUs"});
    EXPECT_EQ(markers(top.at("lines")), std::vector<int>(1 + executors.size(), n));
    ASSERT_EQ(top.at("legends").size(), 1u);
    EXPECT_EQ(strings(top.at("legends")[0]), legend);
    // Errors per executor, then the zero line (no markers); the band is a PolyCollection.
    std::vector<int> below(executors.size(), n);
    below.push_back(0);
    EXPECT_EQ(markers(bottom.at("lines")), below);
    ASSERT_EQ(bottom.at("collections").size(), 1u);
    EXPECT_EQ(bottom.at("collections")[0].at("kind").get<std::string>(), "PolyCollection");
  }
}

TEST(Plots, TimeVsLatencyAndWorkers) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/source-b";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("time_vs_latency_workers.py", fixture("source-b-small.jsonl")), stem));
  // From the fixture: a row of two panels (vs latency, vs workers) per size; in each, one
  // line per (strategy, executor) with a marker per x value, dashed unless analytic.
  // The titles name what stays fixed: the workers of the latency sweep, the latency of
  // the workers sweep.
  using Series = std::map<std::pair<std::string, std::string>, std::set<double>>;  // (strategy, executor) -> x
  std::map<double, std::map<std::string, Series>> data;  // size -> part -> series
  std::map<std::string, std::set<double>> fixed;  // part -> what stays fixed
  for (const auto& rec : fixture_records("source-b-small.jsonl")) {
    const json& tag = rec.at("reproduce");
    const std::string part = tag.at("part").get<std::string>();
    const double x = tag.at(part == "latency" ? "latency_us" : "workers").get<double>();
    const auto key = std::make_pair(rec.at("strategy").get<std::string>(), rec.at("executor").get<std::string>());
    data[tag.at("size_bytes").get<double>()][part][key].insert(x);
    fixed[part].insert(tag.at(part == "latency" ? "workers" : "latency_us").get<double>());
  }
  ASSERT_FALSE(data.empty());
  ASSERT_EQ(fixed["latency"].size(), 1u);
  ASSERT_EQ(fixed["workers"].size(), 1u);
  const std::string latency_title = "latency (" + printf_g("%g", *fixed["latency"].begin()) + " workers)";
  const std::string workers_title = "workers (a = " + printf_g("%g", *fixed["workers"].begin()) + " us)";

  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 2 * data.size());
  std::size_t a = 0;
  for (const auto& [size, parts] : data) {
    const std::string size_text = size >= 1e6 ? printf_g("%g", size / 1e6) + " MB" : printf_g("%g", size / 1e3) + " kB";
    for (const std::string part : {"latency", "workers"}) {
      SCOPED_TRACE("size " + size_text + ", " + part);
      const json& ax = fig.at("axes")[a++];
      ASSERT_TRUE(parts.count(part));
      const Series& series = parts.at(part);
      EXPECT_EQ(label(ax, "xlabel"), part == "latency" ? "latency a between endpoints (us)" : "workers N");
      EXPECT_EQ(label(ax, "ylabel"), "communication time per sync (ms)");
      EXPECT_EQ(strings(ax.at("texts")),
                std::vector<std::string>{"S = " + size_text + ": vs " +
                                         (part == "latency" ? latency_title : workers_title)});
      ASSERT_EQ(ax.at("lines").size(), series.size());
      std::size_t i = 0;
      for (const auto& [key, xs] : series) {
        EXPECT_EQ(ax.at("lines")[i].at("markers"), static_cast<int>(xs.size())) << key.first << " (" << key.second << ")";
        EXPECT_EQ(ax.at("lines")[i].at("dashed"), key.second != "analytic") << key.first << " (" << key.second << ")";
        ++i;
      }
      if (part == "workers") {  // ticks at the worker counts
        std::set<double> workers;
        for (const auto& [key, xs] : series) workers.insert(xs.begin(), xs.end());
        std::vector<std::string> ticks;
        for (double w : workers) ticks.push_back(printf_g("%g", w));
        EXPECT_EQ(strings(ax.at("xticks")), ticks);
      }
    }
  }
  // One legend for the figure: every (strategy, executor) of the first panel.
  std::vector<std::string> legend;
  for (const auto& [key, xs] : data.begin()->second.at("latency")) legend.push_back(key.first + " (" + key.second + ")");
  ASSERT_EQ(fig.at("legends").size(), 1u);
  EXPECT_EQ(strings(fig.at("legends")[0]), legend);
  EXPECT_EQ(strings(fig.at("texts")),
            std::vector<std::string>{"Source B: PS, ring, hierarchical, PS-HRA (k = 4) on a uniform 10 GB/s network"});
}

TEST(Plots, BandwidthHeatmap) {
  REQUIRE_MATPLOTLIB();
  const std::string topology = std::string(GRADSYNC_SOURCE) + "/topologies/source-a-titanx-4gpu.json";
  const std::string stem = out_dir() + "/heatmap";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("bandwidth_heatmap.py", topology), stem));
  // From the topology file: a cell per matrix entry labelled with its value (2 decimals,
  // "-" for the empty diagonal), the GPUs on both axes, and a colour bar.
  std::ifstream in(topology);
  const json doc = json::parse(in);
  const auto gpus = strings(doc.at("gpus"));
  std::vector<std::string> texts;
  for (const auto& row : doc.at("bandwidth_GBps")) {
    for (const auto& v : row) texts.push_back(v.is_null() ? "-" : printf_g("%.2f", v.get<double>()));
  }
  ASSERT_EQ(texts.size(), gpus.size() * gpus.size());
  texts.push_back(doc.at("name").get<std::string>() + ": bandwidth_GBps");  // the title, drawn last

  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 2u);  // the map and its colour bar
  const json& ax = fig.at("axes")[0];
  EXPECT_EQ(label(ax, "xlabel"), "to");
  EXPECT_EQ(label(ax, "ylabel"), "from");
  EXPECT_EQ(strings(ax.at("xticks")), gpus);
  EXPECT_EQ(strings(ax.at("yticks")), gpus);
  EXPECT_EQ(strings(ax.at("texts")), texts);
  EXPECT_EQ(ax.at("images"), 1);
  EXPECT_EQ(label(fig.at("axes")[1], "ylabel"), "bandwidth (GB/s)");
}

TEST(Plots, EpochBarsVsPaper) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/bars";
  // From the fixture: a group of bars per row of table4 (GPU count): paper and model for
  // PS and ring, and with --diagnostic the two column-fit models too.
  std::ifstream in(fixture("source-a-comparison-small.json"));
  const json doc = json::parse(in);
  const json& rows = doc.at("table4").at("rows");
  ASSERT_FALSE(rows.empty());
  ASSERT_EQ(doc.at("table4").at("column_fit").at("rows").size(), rows.size());
  std::vector<std::string> gpus;
  std::string two_gpus;  // the x label names the two GPUs of the 2-GPU row
  for (const auto& r : rows) {
    gpus.push_back(std::to_string(r.at("gpus").get<int>()));
    if (r.at("gpus") == 2) two_gpus = r.at("ranks").get<std::string>();
  }
  ASSERT_NE(two_gpus.find(','), std::string::npos);
  two_gpus.replace(two_gpus.find(','), 1, ", ");
  const std::string title = "Source A, Table 4 (FFNN LM): paper vs model - mean abs. error of the predicted rows " +
                            printf_g("%.0f", doc.at("table4").at("mae_pct").get<double>()) + " %";
  const std::vector<std::string> paper_and_model = {"PS paper", "PS model (1-GPU fit)", "ring paper",
                                                    "ring model (1-GPU fit)"};
  for (const bool diagnostic : {false, true}) {
    SCOPED_TRACE(diagnostic ? "--diagnostic" : "plain");
    const std::string name = stem + (diagnostic ? "-diagnostic" : "");
    const std::string args = (diagnostic ? "--diagnostic " : "") + fixture("source-a-comparison-small.json");
    ASSERT_NO_FATAL_FAILURE(expect_figure(script("epoch_bars_vs_paper.py", args), name));
    std::vector<std::string> legend = paper_and_model;
    if (diagnostic) legend.insert(legend.end(), {"PS model (column fit)", "ring model (column fit)"});
    const json fig = read_figure(name + ".svg");
    ASSERT_EQ(fig.at("axes").size(), 1u);
    const json& ax = fig.at("axes")[0];
    EXPECT_EQ(label(ax, "xlabel"), "GPUs (2 GPUs: " + two_gpus + ")");
    EXPECT_EQ(label(ax, "ylabel"), "seconds per epoch");
    EXPECT_EQ(strings(ax.at("xticks")), gpus);
    EXPECT_EQ(strings(ax.at("texts")), std::vector<std::string>{title});
    ASSERT_EQ(ax.at("legends").size(), 1u);
    EXPECT_EQ(strings(ax.at("legends")[0]), legend);
    // One bar per series and row.
    EXPECT_EQ(ax.at("patches"), static_cast<int>(legend.size() * rows.size()) + kFramePatches);
  }
}

// The papers' speed-ups against the predicted ones (reproduce's "paper_speedups", copied from
// source-a and source-c comparison files): a panel per file; per predicted series a solid line
// with a marker per GPU count and a dashed one without markers; per paper series its markers only.
TEST(Plots, PaperVsPredictedSpeedups) {
  REQUIRE_MATPLOTLIB();
  const std::vector<std::string> files = {"paper-speedups-c.json", "paper-speedups-a.json"};
  const std::string stem = out_dir() + "/papers";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("paper_vs_predicted.py", fixture(files[0]) + " " + fixture(files[1])), stem));
  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i]);
    std::ifstream in(fixture(files[i]));
    const json block = json::parse(in).at("paper_speedups");
    const json& ax = fig.at("axes")[i];
    std::vector<std::string> legend;
    std::vector<int> expected_markers;
    std::vector<bool> dashed;
    std::set<int> gpus;
    for (const auto& s : block.at("predicted")) {
      const std::string name = s.at("name");
      legend.insert(legend.end(), {name + ", overlap", name + ", no overlap"});
      expected_markers.insert(expected_markers.end(), {static_cast<int>(s.at("points").size()), 0});
      dashed.insert(dashed.end(), {false, true});
      for (const auto& p : s.at("points")) gpus.insert(p.at("gpus").get<int>());
    }
    for (const auto& s : block.at("paper")) {
      legend.push_back("paper: " + s.at("name").get<std::string>());
      expected_markers.push_back(static_cast<int>(s.at("points").size()));
      dashed.push_back(false);
    }
    ASSERT_EQ(ax.at("legends").size(), 1u);
    EXPECT_EQ(strings(ax.at("legends")[0]), legend);
    EXPECT_EQ(markers(ax.at("lines")), expected_markers);
    for (std::size_t k = 0; k < dashed.size() && k < ax.at("lines").size(); ++k) {
      EXPECT_EQ(ax.at("lines")[k].at("dashed").get<bool>(), dashed[k]) << k;
    }
    std::vector<std::string> ticks;
    for (int g : gpus) ticks.push_back(std::to_string(g));
    EXPECT_EQ(strings(ax.at("xticks")), ticks);
    EXPECT_EQ(label(ax, "xlabel"), "GPUs");
  }
  // A comparison file without the block, or not JSON: one message, exit status 2, nothing written.
  const std::string bad = out_dir() + "/no-speedups";
  auto r = run_command(script("paper_vs_predicted.py", fixture("source-a-comparison-small.json") + " -o " + bad + ".png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no /paper_speedups"), std::string::npos) << r.out;
  r = run_command(script("paper_vs_predicted.py", fixture("overlap-records.jsonl") + " -o " + bad + ".png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("not JSON"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(bad + ".png"));
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
  r = run_command(script("busbw_vs_size.py", fixture("speedup-records.jsonl") + " -o " + dir + "/y.png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no record with executor \"measured\""), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/y.png"));
  for (const char* s : {"speedup_vs_gpus.py", "predicted_vs_measured.py", "time_vs_latency_workers.py",
                        "bandwidth_heatmap.py", "epoch_bars_vs_paper.py", "busbw_vs_size.py", "exposed_comm_bars.py",
                        "paper_vs_predicted.py"}) {
    r = run_command(script(s, "--help"));
    EXPECT_EQ(r.status, 0) << s << r.out;
    EXPECT_NE(r.out.find("usage:"), std::string::npos) << s;
  }
}

// Records of an overlapped step (predict --overlap -f json: ring and ps at 2 and 4 GPUs, and
// model averaging, which is not overlapped): a line per strategy with overlap and a dashed one
// without, both with a marker per GPU count; two stacked bars (hidden, exposed) per
// overlapped record.
TEST(Plots, OverlapSpeedupsAndExposedCommunication) {
  REQUIRE_MATPLOTLIB();
  std::map<std::string, std::set<int>> ranks_of;
  std::set<std::pair<std::string, int>> by_key;
  std::set<std::string> plain;
  for (const auto& rec : fixture_records("overlap-records.jsonl")) {
    if (!rec.contains("overlap")) {
      plain.insert(rec.at("strategy").get<std::string>());
      continue;
    }
    ranks_of[rec.at("strategy")].insert(rec.at("ranks").get<int>());
    by_key.insert({rec.at("strategy"), rec.at("ranks").get<int>()});
  }
  ASSERT_EQ(ranks_of.size(), 2u);
  ASSERT_EQ(plain, (std::set<std::string>{"model_avg"}));

  const std::string speed = out_dir() + "/overlap-speedup";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("speedup_vs_gpus.py", fixture("overlap-records.jsonl")), speed));
  const json speed_figure = read_figure(speed + ".svg");
  const json& ax = speed_figure.at("axes")[0];
  // Lines sorted by strategy, each overlapped one followed by its "no overlap" line; model_avg
  // (no overlap figures) a plain line.
  std::set<std::string> strategies = plain;
  for (const auto& [strategy, ranks] : ranks_of) strategies.insert(strategy);
  std::vector<std::string> all;
  for (const auto& strategy : strategies) {
    if (plain.count(strategy)) {
      all.push_back(strategy);
    } else {
      all.insert(all.end(), {strategy + ", overlap", strategy + ", no overlap"});
    }
  }
  all.push_back("linear");
  ASSERT_EQ(ax.at("legends").size(), 1u);
  EXPECT_EQ(strings(ax.at("legends")[0]), all);
  // The "no overlap" lines are dashed, the overlapped ones solid.
  const auto& lines = ax.at("lines");
  ASSERT_EQ(lines.size(), all.size() + 1);  // and the speed-up-1 rule
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    const std::string name = all[i];
    EXPECT_EQ(lines[i].at("dashed").get<bool>(), name.find("no overlap") != std::string::npos) << name;
  }

  const std::string bars = out_dir() + "/overlap-bars";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("exposed_comm_bars.py", fixture("overlap-records.jsonl")), bars));
  const json bars_figure = read_figure(bars + ".svg");
  const json& bx = bars_figure.at("axes")[0];
  EXPECT_EQ(label(bx, "ylabel"), "communication per step (ms)");
  EXPECT_EQ(bx.at("patches"), static_cast<int>(2 * by_key.size()) + kFramePatches);  // two stacked bars per record
  EXPECT_EQ(strings(bx.at("legends")[0]),
            (std::vector<std::string>{"compute per step", "hidden behind the backward pass", "exposed"}));
  std::vector<std::string> ticks;
  for (const auto& key : by_key) ticks.push_back(key.first);  // svg_figure.py reads a label's first line ("ps\n2 GPUs")
  EXPECT_EQ(strings(bx.at("xticks")), ticks);

  // Records without overlap figures: one clear message.
  const std::string dir = out_dir();
  const auto r = run_command(script("exposed_comm_bars.py", fixture("speedup-records.jsonl") + " -o " + dir + "/x.png"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("with overlap figures (records of predict or simulate --overlap)"), std::string::npos) << r.out;
}

// reproduce convergence's runs: a panel per group (in the order the runs list them), a line per run
// with a marker per test point, the target dashed; a point of a run the comparison does not list
// is refused with its line.
TEST(Plots, ConvergenceCurvesAPanelPerGroup) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/convergence";
  const std::string args = fixture("convergence-comparison-small.json") + " " + fixture("convergence-small.jsonl");
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("convergence_curves.py", args), stem));
  std::ifstream in(fixture("convergence-comparison-small.json"));
  const json doc = json::parse(in);
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> legends;
  std::map<std::string, std::vector<int>> points;
  std::map<std::string, int> per_run;
  for (const auto& rec : fixture_records("convergence-small.jsonl")) ++per_run[rec.at("run").get<std::string>()];
  for (const auto& r : doc.at("runs")) {
    const std::string g = r.at("group");
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    legends[g].push_back(r.at("what"));
    points[g].push_back(per_run[r.at("run").get<std::string>()]);
  }
  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    SCOPED_TRACE(groups[i]);
    const json& ax = fig.at("axes")[i];
    EXPECT_EQ(label(ax, "xlabel"), "samples seen");
    EXPECT_EQ(label(ax, "ylabel"), "test loss");
    EXPECT_EQ(strings(ax.at("texts")), std::vector<std::string>{groups[i] + " (target 0.5 dashed)"});
    ASSERT_EQ(ax.at("legends").size(), 1u);
    EXPECT_EQ(strings(ax.at("legends")[0]), legends[groups[i]]);
    std::vector<int> expected = points[groups[i]];
    expected.push_back(0);  // the target's line
    EXPECT_EQ(markers(ax.at("lines")), expected);
    EXPECT_TRUE(ax.at("lines").back().at("dashed").get<bool>());
  }
  const std::string bad = out_dir() + "/convergence-bad";
  const auto r = run_command(script("convergence_curves.py", fixture("convergence-comparison-small.json") + " " +
                                                                 fixture("overlap-records.jsonl") + " -o " + bad + ".png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("overlap-records.jsonl: record 1 has no \"run\""), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(bad + ".png"));
}

// reproduce convergence-scaling's speed-ups: the linear line (no markers), model averaging's
// ceiling at 1 and each count that reached the target (its first rate: the 16 workers' lr x N row
// has none), source C's three figures; a file without /counts is refused.
TEST(Plots, ConvergenceScalingAgainstSourceC) {
  REQUIRE_MATPLOTLIB();
  const std::string stem = out_dir() + "/convergence-scaling";
  ASSERT_NO_FATAL_FAILURE(expect_figure(script("convergence_scaling.py", fixture("convergence-scaling-comparison.json")), stem));
  std::ifstream in(fixture("convergence-scaling-comparison.json"));
  const json doc = json::parse(in);
  std::set<int> reached;
  for (const auto& c : doc.at("counts")) {
    if (c.contains("speedup_ceiling")) reached.insert(c.at("workers").get<int>());
  }
  const json fig = read_figure(stem + ".svg");
  ASSERT_EQ(fig.at("axes").size(), 1u);
  const json& ax = fig.at("axes")[0];
  EXPECT_EQ(label(ax, "xlabel"), "workers (GPUs)");
  EXPECT_EQ(label(ax, "ylabel"), "speed-up to the target");
  ASSERT_EQ(ax.at("legends").size(), 1u);
  EXPECT_EQ(strings(ax.at("legends")[0]).size(), 3u);
  EXPECT_EQ(markers(ax.at("lines")), (std::vector<int>{0, static_cast<int>(reached.size()) + 1,
                                                       static_cast<int>(doc.at("source_c").size())}));
  const std::string bad = out_dir() + "/convergence-scaling-bad";
  const auto r = run_command(script("convergence_scaling.py", fixture("convergence-comparison-small.json") + " -o " + bad + ".png"));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("no /counts with workers and learning_rate"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(bad + ".png"));
}
