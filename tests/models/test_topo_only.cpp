// nvidia-smi topo -m alone -> a nominal topology (issue 14): the structure from the classes,
// each link at the rate NCCL 2.30.7 documents for it. Expected rates are written out here
// from those documented figures (topo.cc: a PCIe link carries width x per-lane speed / 80,
// the per-lane speeds in 100 Mb/s units being 60, 120, 240 for Gen3, 4, 5; topo.h: an
// NVLink 20.6 GB/s on compute capability 9.x, 12 on 8.6; an inter-socket link 16 GB/s on
// AMD, 10 on Intel, 6 on Arm), never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "models/support/error.h"
#include "models/topology/hardware.h"
#include "models/topology/importers/import.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_inference.h"
#include "models/support/units.h"
#include "support/input_error.h"

using namespace gradsync::models;
using test_errors::error_of;

namespace {

constexpr double kGen3x16_GBps = 16 * 60 / 80.0;   // 12
constexpr double kGen3x8_GBps = 8 * 60 / 80.0;     // 6
constexpr double kGen4x16_GBps = 16 * 120 / 80.0;  // 24
constexpr double kGen5x16_GBps = 16 * 240 / 80.0;  // 48
constexpr double kAmdSocket_GBps = 16;
constexpr double kIntelSocket_GBps = 10;
constexpr double kNvlinkHopper_GBps = 20.6;  // per link, compute capability 9.0
constexpr double kNvlinkAmpere86_GBps = 12;  // per link, compute capability 8.6 (RTX 3090)

std::string data_file(const std::string& name) { return std::string(GRADSYNC_SOURCE) + "/tests/data/topo_only/" + name; }

// An `nvidia-smi topo -m` table for these classes (rows of "X", "PIX", ...), as the tool
// prints it: tab-separated, with the affinity columns the importer ignores.
std::string topo_text(const std::vector<std::vector<std::string>>& classes) {
  std::string text = "$ nvidia-smi topo -m\n";
  for (std::size_t j = 0; j < classes.size(); ++j) text += "\tGPU" + std::to_string(j);
  text += "\tCPU Affinity\tNUMA Affinity\n";
  for (std::size_t i = 0; i < classes.size(); ++i) {
    text += "GPU" + std::to_string(i);
    for (const auto& c : classes[i]) text += "\t" + (c == "X" ? std::string(" X ") : c);
    text += "\t0-11\t0\n";
  }
  return text + "\nLegend:\n\n  X    = Self\n";
}

// gpu0, gpu1 behind one switch; gpu2, gpu3 behind another; the switches under one host bridge.
const std::vector<std::vector<std::string>> kTwoSwitches = {
    {"X", "PIX", "PHB", "PHB"}, {"PIX", "X", "PHB", "PHB"}, {"PHB", "PHB", "X", "PIX"}, {"PHB", "PHB", "PIX", "X"}};
// gpu0, gpu1 on one socket (two host bridges), gpu2, gpu3 on the other.
const std::vector<std::vector<std::string>> kTwoSockets = {
    {"X", "NODE", "SYS", "SYS"}, {"NODE", "X", "SYS", "SYS"}, {"SYS", "SYS", "X", "NODE"}, {"SYS", "SYS", "NODE", "X"}};

ImportResult import_classes(const std::vector<std::vector<std::string>>& classes, const ImportOptions& options = {}) {
  return import_tool_output(topo_text(classes), "box-topo.txt", options);
}

std::set<std::size_t> links_of(const Topology& t, const std::string& a, const std::string& b) {
  std::set<std::size_t> out;
  for (const Hop& h : t.route(*t.find(a), *t.find(b))) out.insert(h.link);
  return out;
}

// The links two routes both cross.
std::vector<std::size_t> shared(const std::set<std::size_t>& x, const std::set<std::size_t>& y) {
  std::vector<std::size_t> out;
  std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
  return out;
}

double pair_GBps(const Topology& t, const std::string& a, const std::string& b) {
  return Bps_to_GBps(t.route_bottleneck_Bps(*t.find(a), *t.find(b)));
}

bool any_contains(const std::vector<std::string>& notes, const std::string& part) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Structure

TEST(TopoOnlyStructure, PixGpusShareTheirSwitchsUplink) {
  const auto imported = import_classes(kTwoSwitches);
  const auto inferred = infer_topology(imported.form);
  const Topology& t = inferred.topology;
  // gpu0 and gpu1 hang from one node; their routes to the other switch's GPUs share a link
  // that neither GPU's own link is: the switch's uplink.
  EXPECT_EQ(links_of(t, "gpu0", "gpu1").size(), 2u);
  const auto a = links_of(t, "gpu0", "gpu2");
  const auto b = links_of(t, "gpu1", "gpu3");
  const auto common = shared(a, b);
  ASSERT_FALSE(common.empty()) << describe_links(t);
  for (std::size_t l : common) {
    const Link& link = t.links()[l];
    EXPECT_NE(t.node(link.a).kind, NodeKind::gpu) << describe_links(t);
    EXPECT_NE(t.node(link.b).kind, NodeKind::gpu) << describe_links(t);
    EXPECT_DOUBLE_EQ(Bps_to_GBps(link.bandwidth_Bps), kGen4x16_GBps);  // no GPU model: Gen4 x16 assumed
  }
  // Pairs under one switch cross no uplink.
  EXPECT_TRUE(shared(links_of(t, "gpu0", "gpu1"), links_of(t, "gpu2", "gpu3")).empty());
  EXPECT_EQ(t.node(*t.find("switch0")).kind, NodeKind::pcie_switch) << describe_links(t);
  EXPECT_EQ(inferred.report.unexplained_count(), 0u) << inferred.report.text();
}

TEST(TopoOnlyStructure, SysPairsCrossTheInterSocketLink) {
  ImportOptions options;
  options.cpu = "intel";
  const auto inferred = infer_topology(import_classes(kTwoSockets, options).form);
  const Topology& t = inferred.topology;
  // Every SYS pair crosses one and the same link, labelled inter-socket, at Intel's rate.
  std::vector<std::size_t> common;
  bool first = true;
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"gpu0", "gpu2"}, {"gpu0", "gpu3"}, {"gpu1", "gpu2"}, {"gpu1", "gpu3"}}) {
    const auto route = links_of(t, a, b);
    if (first) common.assign(route.begin(), route.end());
    common = shared(std::set<std::size_t>(common.begin(), common.end()), route);
    first = false;
    EXPECT_DOUBLE_EQ(pair_GBps(t, a, b), std::min(kGen4x16_GBps, kIntelSocket_GBps)) << a << " " << b;
  }
  std::size_t inter_socket = 0;
  for (std::size_t l : common) {
    if (t.links()[l].label != "inter-socket") continue;
    ++inter_socket;
    EXPECT_DOUBLE_EQ(Bps_to_GBps(t.links()[l].bandwidth_Bps), kIntelSocket_GBps);
  }
  EXPECT_EQ(inter_socket, 1u) << describe_links(t);
  // NODE pairs stay on their socket.
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{{"gpu0", "gpu1"}, {"gpu2", "gpu3"}}) {
    for (std::size_t l : links_of(t, a, b)) EXPECT_NE(t.links()[l].label, "inter-socket") << a << " " << b;
    EXPECT_DOUBLE_EQ(pair_GBps(t, a, b), kGen4x16_GBps);
  }
}

TEST(TopoOnlyStructure, ManySocketsJoinThroughInterSocketLinks) {
  // Every pair SYS, as on the published dual-EPYC machine (one NUMA node per GPU): each GPU
  // keeps its own PCIe link, and each hop between two crosses inter-socket links only at
  // AMD's rate (the default).
  std::vector<std::vector<std::string>> classes(4, std::vector<std::string>(4, "SYS"));
  for (std::size_t i = 0; i < 4; ++i) classes[i][i] = "X";
  ImportOptions options;
  options.pcie = "gen3";  // 12 GB/s: below the inter-socket link, so the GPU's own link decides
  const auto inferred = infer_topology(import_classes(classes, options).form);
  const Topology& t = inferred.topology;
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      if (i == j) continue;
      const std::string a = "gpu" + std::to_string(i), b = "gpu" + std::to_string(j);
      EXPECT_DOUBLE_EQ(pair_GBps(t, a, b), kGen3x16_GBps);
      std::size_t crossings = 0;
      for (std::size_t l : links_of(t, a, b)) {
        if (t.links()[l].label == "inter-socket") {
          ++crossings;
          EXPECT_DOUBLE_EQ(Bps_to_GBps(t.links()[l].bandwidth_Bps), kAmdSocket_GBps);
        }
      }
      EXPECT_GE(crossings, 1u) << a << " " << b << "\n" << describe_links(t);
    }
  }
}

TEST(TopoOnlyStructure, NvlinkPairsGetTheirLinksAtTheModelsRate) {
  const std::vector<std::vector<std::string>> classes = {
      {"X", "NV4", "PHB"}, {"NV4", "X", "PHB"}, {"PHB", "PHB", "X"}};
  ImportOptions options;
  options.gpu_model = "H100";
  const auto imported = import_classes(classes, options);
  const auto inferred = infer_topology(imported.form);
  const Topology& t = inferred.topology;
  const auto route = links_of(t, "gpu0", "gpu1");
  ASSERT_EQ(route.size(), 1u) << describe_links(t);
  const Link& nv = t.links()[*route.begin()];
  EXPECT_EQ(nv.label, "nvlink x4");
  EXPECT_NEAR(Bps_to_GBps(nv.bandwidth_Bps), 4 * kNvlinkHopper_GBps, 1e-9);
  EXPECT_NEAR(Bps_to_GBps(*imported.form.bandwidth_Bps.at(0, 1)), 4 * kNvlinkHopper_GBps, 1e-9);
  // Their PCIe side: H100 is Gen5 x16.
  EXPECT_DOUBLE_EQ(pair_GBps(t, "gpu0", "gpu2"), kGen5x16_GBps);
  EXPECT_DOUBLE_EQ(pair_GBps(t, "gpu1", "gpu2"), kGen5x16_GBps);

  options.gpu_model = "RTX 3090";  // compute capability 8.6
  const auto ampere = infer_topology(import_classes(classes, options).form);
  EXPECT_NEAR(pair_GBps(ampere.topology, "gpu0", "gpu1"), 4 * kNvlinkAmpere86_GBps, 1e-9);
}

// ---------------------------------------------------------------------------------------
// Rates: flags, else the GPU model, else Gen4 x16 (said so)

TEST(TopoOnlyRates, FollowTheFlagsTheGpuModelOrTheDefault) {
  const auto pix = std::vector<std::vector<std::string>>{{"X", "PIX"}, {"PIX", "X"}};
  auto rate = [&](const ImportOptions& o) { return Bps_to_GBps(*import_classes(pix, o).form.bandwidth_Bps.at(0, 1)); };
  ImportOptions o;
  EXPECT_DOUBLE_EQ(rate(o), kGen4x16_GBps);
  EXPECT_TRUE(any_contains(import_classes(pix, o).notes, "Gen4 x16 24 GB/s assumed (GPU model unknown"));
  o.gpu_model = "H100";
  EXPECT_DOUBLE_EQ(rate(o), kGen5x16_GBps);
  o.gpu_model = "NVIDIA GeForce RTX 2080 Ti";
  EXPECT_DOUBLE_EQ(rate(o), kGen3x16_GBps);
  o.pcie = "gen4";  // the flag wins over the model's generation; the width stays the model's
  EXPECT_DOUBLE_EQ(rate(o), kGen4x16_GBps);
  o.pcie = "gen3";
  o.pcie_width = 8;
  EXPECT_DOUBLE_EQ(rate(o), kGen3x8_GBps);
  const auto notes = import_classes(pix, o).notes;
  EXPECT_TRUE(any_contains(notes, "PCIe Gen3 x8 6 GB/s (generation: --pcie, width: --pcie-width)"));
}

TEST(TopoOnlyRates, GpuModelFromTheNcclTestsDeviceLines) {
  // The published 2 x RTX 2080 Ti, topo -m and nccl-tests only: Gen3 x16 from its device lines.
  const auto r = import_tool_files({data_file("rtx2080ti-2gpu-pix-topo.txt")});
  ASSERT_TRUE(r.form.nominal.has_value());
  EXPECT_DOUBLE_EQ(Bps_to_GBps(*r.form.bandwidth_Bps.at(0, 1)), kGen3x16_GBps);
  EXPECT_DOUBLE_EQ(Bps_to_GBps(r.form.nominal->pcie_Bps), kGen3x16_GBps);
  EXPECT_TRUE(any_contains(r.notes, "RTX 2080 Ti's, GPU model from nccl-tests' device lines")) << r.notes.front();
  // The models read the GPU from the description: the nominal marking must not hide it.
  const hardware::GpuModel* gpu = hardware::gpu_model_of(r.form.description);
  ASSERT_NE(gpu, nullptr) << r.form.description;
  EXPECT_EQ(std::string(gpu->name), "RTX 2080 Ti");
  // No peer-access table: unknown, not "not supported".
  EXPECT_FALSE(r.form.p2p_supported.has_value());
  EXPECT_TRUE(any_contains(r.notes, "peer access unknown"));
}

TEST(TopoOnlyRates, PeerAccessFromTopoP2p) {
  const auto r = import_tool_files({data_file("rtx2080ti-2gpu-pix-topo-p2p.txt")});
  ASSERT_TRUE(r.form.nominal.has_value());
  ASSERT_TRUE(r.form.p2p_supported.has_value());
  EXPECT_FALSE((*r.form.p2p_supported)[0][1]);  // NS
}

TEST(TopoOnlyRates, MeasuredImportsStayMeasured) {
  const std::string fixtures = GRADSYNC_TEST_FIXTURES;
  ImportOptions o;
  o.pcie = "gen5";
  o.cpu = "arm";
  const auto r = import_tool_files({fixtures + "/topo-4gpu-2switch.txt", fixtures + "/p2p-4gpu-2switch.txt"}, o);
  EXPECT_FALSE(r.form.nominal.has_value());
  EXPECT_EQ(r.form.name.find("nominal"), std::string::npos) << r.form.name;
  EXPECT_TRUE(any_contains(r.notes, "--pcie, --cpu not used: the links come from measurements"));
}

// ---------------------------------------------------------------------------------------
// Every output says the figures are nominal

TEST(TopoOnlyMarking, NameDescriptionSourceNotesReportAndJson) {
  const auto r = import_classes(kTwoSwitches);
  EXPECT_EQ(r.form.name, "box-topo-nominal");
  EXPECT_NE(r.form.description.find("nominal"), std::string::npos) << r.form.description;
  EXPECT_NE(r.form.source.find("nominal"), std::string::npos) << r.form.source;
  EXPECT_TRUE(any_contains(r.notes, "every figure is NOMINAL"));

  const auto inferred = infer_topology(r.form);
  EXPECT_TRUE(inferred.report.nominal);
  EXPECT_NE(inferred.report.text().find("nominal pair figures"), std::string::npos) << inferred.report.text();
  EXPECT_NE(inferred.topology.name().find("nominal"), std::string::npos);
  EXPECT_NE(inferred.topology.description().find("nominal"), std::string::npos);

  // The written matrix form carries the rates and reads back into the same topology.
  const auto json = matrix_form_to_json(r.form);
  ASSERT_TRUE(json.contains("nominal")) << json.dump();
  EXPECT_DOUBLE_EQ(json["nominal"]["pcie_GBps"].get<double>(), kGen4x16_GBps);
  EXPECT_NE(json["nominal"]["basis"].get<std::string>().find("not measured"), std::string::npos);
  const MatrixForm back = matrix_form_from_json(JsonView::parse(json.dump(), "box.json"));
  ASSERT_TRUE(back.nominal.has_value());
  const auto again = infer_topology(back);
  EXPECT_EQ(describe_links(again.topology), describe_links(inferred.topology));
  EXPECT_TRUE(again.report.nominal);
}

TEST(TopoOnlyMarking, AGivenNameIsKept) {
  ImportOptions o;
  o.name = "mybox";
  EXPECT_EQ(import_classes(kTwoSwitches, o).form.name, "mybox");
}

// ---------------------------------------------------------------------------------------
// Bad input: one clear InputError

TEST(TopoOnlyErrors, FlagValuesOutOfTheirDomain) {
  auto with = [](auto set) {
    ImportOptions o;
    set(o);
    return error_of([&] { import_classes(kTwoSwitches, o); });
  };
  EXPECT_EQ(with([](ImportOptions& o) { o.pcie = "gen7"; }),
            "--pcie \"gen7\": not a PCIe generation gradsync knows; expected gen3, gen4, gen5 or gen6 (the generation of "
            "the GPUs' PCIe links)");
  EXPECT_NE(with([](ImportOptions& o) { o.pcie = "4"; }).find("--pcie \"4\": not a PCIe generation"), std::string::npos);
  EXPECT_NE(with([](ImportOptions& o) { o.pcie = "gen2"; }).find("expected gen3, gen4, gen5 or gen6"), std::string::npos);
  EXPECT_EQ(with([](ImportOptions& o) { o.pcie_width = 3; }),
            "--pcie-width 3: not a PCIe link width; expected 1, 2, 4, 8, 16 or 32 (lanes of each GPU's link)");
  EXPECT_NE(with([](ImportOptions& o) { o.pcie_width = 0; }).find("--pcie-width 0: not a PCIe link width"), std::string::npos);
  EXPECT_NE(with([](ImportOptions& o) { o.cpu = "ibm"; }).find("--cpu \"ibm\": not a CPU maker gradsync knows; expected amd, "
                                                                "intel or arm"),
            std::string::npos);
  EXPECT_NE(with([](ImportOptions& o) { o.gpu_model = "Voodoo 5"; }).find("--gpu-model \"Voodoo 5\": not a GPU model gradsync "
                                                                           "knows"),
            std::string::npos);
  // Checked whatever the files hold.
  const std::string fixtures = GRADSYNC_TEST_FIXTURES;
  ImportOptions o;
  o.cpu = "AMD";
  EXPECT_NE(error_of([&] { import_tool_files({fixtures + "/p2p-4gpu-2switch.txt"}, o); }).find("--cpu \"AMD\""),
            std::string::npos);
}

TEST(TopoOnlyErrors, NoGpusInTheTable) {
  // A table of NICs only is no nvidia-smi topo -m of GPUs: nothing to build.
  const auto e = error_of([] { import_tool_output("\tNIC0\tNIC1\nNIC0\t X \tPIX\nNIC1\tPIX\t X \n", "nics.txt"); });
  EXPECT_EQ(e.rfind("nics.txt: no supported tool output found", 0), 0u) << e;
}

TEST(TopoOnlyStructure, OneGpu) {
  const auto r = import_classes({{"X"}});
  const auto inferred = infer_topology(r.form);
  EXPECT_EQ(inferred.topology.gpus().size(), 1u);
  EXPECT_TRUE(inferred.report.pairs.empty());
}
