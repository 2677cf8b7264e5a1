// Importers for real tool outputs (p2pBandwidthLatencyTest, nvbandwidth, nvidia-smi topo)
// -> MatrixForm. Fixtures in tests/fixtures/ are written in the tools' exact formats for a
// 4-GPU machine (gpu0,1 | gpu2,3 behind two PCIe switches) and an 8-GPU machine (0-3 | 4-7).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <unistd.h>

#include "models/support/error.h"
#include "models/topology/importers/import.h"
#include "models/topology/importers/parse_util.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_inference.h"
#include "models/support/units.h"
#include "support/input_error.h"
#include "support/topologies.h"

using namespace gradsync::models;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(GRADSYNC_TEST_FIXTURES) + "/" + name; }

const std::string kP2p4 = fixture("p2p-4gpu-2switch.txt");
const std::string kNvb4 = fixture("nvbandwidth-4gpu-2switch.txt");
const std::string kTopo4 = fixture("topo-4gpu-2switch.txt");
const std::string kP2p8 = fixture("p2p-8gpu-2switch.txt");
const std::string kNvb8 = fixture("nvbandwidth-8gpu-2switch.txt");
const std::string kTopo8 = fixture("topo-8gpu-2switch.txt");

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GB/s of a measured pair (fails the test when the pair is empty).
double GBps(const PairMatrix& m, std::size_t i, std::size_t j) {
  EXPECT_TRUE(m.at(i, j).has_value()) << "pair " << i << " -> " << j;
  return m.at(i, j) ? Bps_to_GBps(*m.at(i, j)) : -1;
}
double us(const PairMatrix& m, std::size_t i, std::size_t j) {
  EXPECT_TRUE(m.at(i, j).has_value()) << "pair " << i << " -> " << j;
  return m.at(i, j) ? s_to_us(*m.at(i, j)) : -1;
}

using test_errors::error_of;
using test_topologies::parent_of;

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

bool any_note_contains(const ImportResult& r, const std::string& part) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

void expect_all_explained(const MatrixForm& form, const std::string& what) {
  const auto inferred = infer_topology(form);
  const std::size_t n = form.size();
  std::size_t expected_pairs = n * (n - 1);
  if (form.host_to_device_Bps) expected_pairs += n;
  if (form.device_to_host_Bps) expected_pairs += n;
  EXPECT_EQ(inferred.report.pairs.size(), expected_pairs) << what;
  EXPECT_EQ(inferred.report.unexplained_count(), 0u) << what << "\n" << inferred.report.text();
  EXPECT_LE(inferred.report.max_abs_error(), 0.02) << what;
}

// Groups the inference must find: gpus in one list share a parent, gpus of different lists do not.
void expect_groups(const MatrixForm& form, const std::vector<std::vector<std::string>>& groups, const std::string& what) {
  const auto inferred = infer_topology(form);
  const Topology& t = inferred.topology;
  for (std::size_t a = 0; a < groups.size(); ++a) {
    for (const auto& g : groups[a]) {
      EXPECT_EQ(parent_of(t, g), parent_of(t, groups[a].front())) << what << ": " << g << " and " << groups[a].front();
    }
    for (std::size_t b = a + 1; b < groups.size(); ++b) {
      EXPECT_NE(parent_of(t, groups[a].front()), parent_of(t, groups[b].front()))
          << what << ": " << groups[a].front() << " and " << groups[b].front();
    }
  }
}

const std::vector<std::vector<std::string>> kGroups4 = {{"gpu0", "gpu1"}, {"gpu2", "gpu3"}};
const std::vector<std::vector<std::string>> kGroups8 = {{"gpu0", "gpu1", "gpu2", "gpu3"}, {"gpu4", "gpu5", "gpu6", "gpu7"}};

// A 2-GPU p2pBandwidthLatencyTest excerpt whose Enabled table rows are given (lines 6 and 7).
std::string p2p_text(const std::string& row0, const std::string& row1, const std::string& header = "   D\\D     0      1 ") {
  return "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"                                       // 1
         "Device: 0, NVIDIA GeForce RTX 2080 Ti, pciBusID: b4, pciDeviceID: 0, pciDomainID:0\n"  // 2
         "Device: 1, NVIDIA GeForce RTX 2080 Ti, pciBusID: b5, pciDeviceID: 0, pciDomainID:0\n"  // 3
         "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"                      // 4
         + header + "\n"                                                                           // 5
         + row0 + "\n" + row1 + "\n";                                                              // 6, 7
}

}  // namespace

// ---------------------------------------------------------------------------------------
// p2pBandwidthLatencyTest

TEST(ImportP2pTest, ReadsEveryMatrixOfTheFourGpuOutput) {
  const auto r = import_tool_files({kP2p4});
  const auto& f = r.form;
  EXPECT_EQ(r.tools_found, std::vector<std::string>{"p2pBandwidthLatencyTest"});
  EXPECT_EQ(f.gpus, (std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3"}));
  EXPECT_EQ(f.name, "p2p-4gpu-2switch");
  EXPECT_EQ(f.source, "p2pBandwidthLatencyTest from " + kP2p4);
  EXPECT_EQ(f.description.rfind("4 x NVIDIA TITAN Xp", 0), 0u) << f.description;

  // Unidirectional P2P=Enabled (P2P Writes): row = sender.
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 12.41);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 1, 0), 12.40);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 2), 9.28);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 2, 0), 9.24);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 3, 2), 12.43);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 3, 1), 9.23);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_FALSE(f.bandwidth_Bps.at(i, i).has_value());
  // The diagonal (local copies) went to device_local.
  ASSERT_TRUE(f.device_local_Bps);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[0]), 424.05);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[3]), 420.08);

  // Bidirectional P2P=Enabled.
  ASSERT_TRUE(f.bidirectional_Bps);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 0, 1), 23.88);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 1, 0), 23.77);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 3, 0), 17.32);
  EXPECT_FALSE(f.bidirectional_Bps->at(2, 2).has_value());

  // P2P=Enabled latency: GPU and CPU tables.
  ASSERT_TRUE(f.latency_s);
  ASSERT_TRUE(f.cpu_latency_s);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 0, 1), 1.82);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 2, 0), 2.67);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 3, 2), 1.80);
  EXPECT_DOUBLE_EQ(us(*f.cpu_latency_s, 0, 1), 2.83);
  EXPECT_DOUBLE_EQ(us(*f.cpu_latency_s, 3, 1), 3.30);

  // Every P2P=Disabled table in other_measurements.
  ASSERT_EQ(f.other_measurements.count("p2p_disabled"), 1u);
  const auto& d = f.other_measurements.at("p2p_disabled");
  ASSERT_TRUE(d.bandwidth_Bps && d.bidirectional_Bps && d.latency_s && d.cpu_latency_s);
  EXPECT_DOUBLE_EQ(GBps(*d.bandwidth_Bps, 0, 1), 10.12);
  EXPECT_DOUBLE_EQ(GBps(*d.bandwidth_Bps, 2, 0), 9.59);
  EXPECT_DOUBLE_EQ(GBps(*d.bidirectional_Bps, 0, 1), 18.59);
  EXPECT_DOUBLE_EQ(GBps(*d.bidirectional_Bps, 2, 0), 17.90);
  EXPECT_DOUBLE_EQ(us(*d.latency_s, 0, 1), 12.52);
  EXPECT_DOUBLE_EQ(us(*d.latency_s, 3, 0), 14.60);
  EXPECT_DOUBLE_EQ(us(*d.cpu_latency_s, 3, 0), 10.36);
  EXPECT_EQ(f.other_measurements.size(), 1u);

  // P2P Connectivity Matrix: all 1.
  ASSERT_TRUE(f.p2p_supported);
  for (const auto& row : *f.p2p_supported) {
    for (bool b : row) EXPECT_TRUE(b);
  }
  EXPECT_FALSE(f.topo_classes);
  EXPECT_FALSE(f.host_to_device_Bps);
  EXPECT_TRUE(any_note_contains(r, "other_measurements.p2p_disabled"));
}

TEST(ImportP2pTest, DisabledVariantOnRequest) {
  ImportOptions options;
  options.p2p_enabled = false;
  options.name = "titanxp";
  const auto r = import_tool_files({kP2p4}, options);
  const auto& f = r.form;
  EXPECT_EQ(f.name, "titanxp");
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 10.12);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 2, 0), 9.59);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 0, 1), 12.52);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[0]), 419.49);
  ASSERT_EQ(f.other_measurements.count("p2p_enabled"), 1u);
  EXPECT_DOUBLE_EQ(GBps(*f.other_measurements.at("p2p_enabled").bandwidth_Bps, 0, 1), 12.41);
  EXPECT_DOUBLE_EQ(us(*f.other_measurements.at("p2p_enabled").cpu_latency_s, 0, 1), 2.83);
}

TEST(ImportP2pTest, EightGpuOutput) {
  const auto f = import_tool_files({kP2p8}).form;
  ASSERT_EQ(f.size(), 8u);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 2), 11.66);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 2, 0), 11.60);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 7), 8.73);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 7, 6), 11.62);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 4, 3), 16.17);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 4, 2), 2.71);
  EXPECT_DOUBLE_EQ(us(*f.cpu_latency_s, 7, 6), 2.88);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[7]), 747.63);
  EXPECT_DOUBLE_EQ(GBps(*f.other_measurements.at("p2p_disabled").bandwidth_Bps, 5, 7), 9.50);
}

TEST(ImportP2pTest, ToleratesCrLfPromptsFencesAndOtherTools) {
  const std::string plain = read_text(kP2p4);
  std::string wrapped = "# notes from the lab\r\n```bash\r\nuser@box:~/p2pBandwidthLatencyTest$ ./p2pBandwidthLatencyTest\r\n";
  for (char c : plain) {
    if (c == '\n') wrapped += "\r";
    wrapped += c;
  }
  wrapped += "```\r\n\r\n[CUDA Bandwidth Test] - Starting...\r\nRunning on...\r\n";
  // Tabs instead of spaces inside the tables.
  std::string tabbed;
  for (std::size_t i = 0; i < wrapped.size(); ++i) {
    if (wrapped.compare(i, 3, "   ") == 0) {
      tabbed += '\t';
      i += 2;
    } else {
      tabbed += wrapped[i];
    }
  }
  const auto a = import_tool_output(plain, "plain.txt");
  const auto b = import_tool_output(tabbed, "wrapped.txt");
  EXPECT_EQ(b.form.name, "wrapped");
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(a.form.bandwidth_Bps.at(i, j), b.form.bandwidth_Bps.at(i, j));
      EXPECT_EQ(a.form.cpu_latency_s->at(i, j), b.form.cpu_latency_s->at(i, j));
    }
  }
  EXPECT_TRUE(any_note_contains(b, "bandwidthTest output (line"));
}

// ---------------------------------------------------------------------------------------
// nvbandwidth

TEST(ImportNvbandwidth, FourGpuWriteTestKeepsRowAsSender) {
  const auto r = import_tool_files({kNvb4});
  const auto& f = r.form;
  EXPECT_EQ(r.tools_found, std::vector<std::string>{"nvbandwidth"});
  ASSERT_EQ(f.size(), 4u);
  // device_to_device_memcpy_write_ce ("GPU(row) <- GPU(column)" but a copy row -> column).
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 12.66);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 1, 0), 12.58);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 3), 9.43);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 3, 1), 9.39);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 2, 3), 12.66);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 3, 2), 12.58);
  EXPECT_TRUE(any_note_contains(r, "device_to_device_memcpy_read_ce not used"));
  // Bidirectional: the Total table of device_to_device_bidirectional_memcpy_write_ce.
  ASSERT_TRUE(f.bidirectional_Bps);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 0, 1), 24.10);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 3, 0), 17.73);
  // device_to_device_latency_sm, ns -> s.
  ASSERT_TRUE(f.latency_s);
  EXPECT_NEAR(us(*f.latency_s, 0, 1), 1.38164, 1e-9);
  EXPECT_NEAR(us(*f.latency_s, 3, 2), 1.34391, 1e-9);
  EXPECT_FALSE(f.cpu_latency_s);
  // Host <-> device and local copies: one row, one column per GPU.
  ASSERT_TRUE(f.host_to_device_Bps && f.device_to_host_Bps && f.device_local_Bps);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.host_to_device_Bps)[2]), 9.19);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_to_host_Bps)[3]), 9.16);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[1]), 396.49);
  // Other test cases are reported as ignored.
  EXPECT_TRUE(any_note_contains(r, "host_to_device_bidirectional_memcpy_ce"));
  EXPECT_TRUE(any_note_contains(r, "host_device_latency_sm"));
  EXPECT_FALSE(f.p2p_supported);
  EXPECT_TRUE(f.other_measurements.empty());
}

TEST(ImportNvbandwidth, EightGpuReadTestIsTransposed) {
  const auto r = import_tool_files({kNvb8});
  const auto& f = r.form;
  ASSERT_EQ(f.size(), 8u);
  // device_to_device_memcpy_read_ce: entry [row][column] is a copy column -> row.
  // File row 0: "N/A 11.76 ... 8.84"; row 1 column 0: 11.72; row 4 column 0: 8.80.
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 1, 0), 11.76);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 11.72);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 4, 0), 8.84);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 4), 8.80);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 7, 3), 8.79);  // file row 3, column 7
  EXPECT_TRUE(any_note_contains(r, "transposed"));
  // Bidirectional from the read test's Total table, kept as printed.
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 0, 1), 22.56);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 4, 3), 16.36);
  EXPECT_NEAR(us(*f.latency_s, 7, 1), 2.04294, 1e-9);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.host_to_device_Bps)[1]), 8.64);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_to_host_Bps)[4]), 8.69);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[5]), 754.50);
}

TEST(ImportNvbandwidth, WaivedWriteTestFallsBackToRead) {
  const std::string text =
      "nvbandwidth Version: v0.8\n"
      "Built from Git version: v0.8\n"
      "\n"
      "Waiving device_to_device_memcpy_write_ce.\n"
      "Running device_to_device_memcpy_read_ce.\n"
      "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A     26.34\n"
      " 1     25.10       N/A\n"
      "\n"
      "SUM device_to_device_memcpy_read_ce 51.44\n";
  const auto r = import_tool_output(text, "nvb.txt");
  EXPECT_DOUBLE_EQ(GBps(r.form.bandwidth_Bps, 1, 0), 26.34);
  EXPECT_DOUBLE_EQ(GBps(r.form.bandwidth_Bps, 0, 1), 25.10);
  EXPECT_TRUE(any_note_contains(r, "waived by the tool (no result): device_to_device_memcpy_write_ce"));
}

// All-to-one and one-to-all on the 4-GPU two-switch machine, as nvbandwidth v0.8 prints them
// (testcases_ce.cpp: one row, each GPU's aggregate; all_to_one_write and one_to_all_read move the
// data into the GPU, one_to_all_write and all_to_one_read out of it).
const std::string kNvbAllToOne = R"(nvbandwidth Version: v0.8
Built from Git version: v0.8

Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1         2         3
 0       N/A     12.60      9.40      9.40
 1     12.60       N/A      9.40      9.40
 2      9.40      9.40       N/A     12.60
 3      9.40      9.40     12.60       N/A

SUM device_to_device_memcpy_write_ce 125.60

Running all_to_one_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1         2         3
 0     12.48     12.51     12.45     12.54

SUM all_to_one_write_ce 49.98

Running all_to_one_read_ce.
memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
           0         1         2         3
 0     12.30     12.33     12.27     12.36

SUM all_to_one_read_ce 49.26

Running one_to_all_write_ce.
memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
           0         1         2         3
 0     12.42     12.39     12.45     12.40

SUM one_to_all_write_ce 49.66

Running one_to_all_read_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1         2         3
 0     12.21     12.24     12.18     12.27

SUM one_to_all_read_ce 48.90

)";

TEST(ImportNvbandwidth, AllToOneAndOneToAllBecomeConcurrentProbes) {
  const auto r = import_tool_output(kNvbAllToOne, "nvb.txt");
  const auto& f = r.form;
  // One probe per GPU and direction: 4 into a GPU (all_to_one_write_ce), 4 out of one (one_to_all_write_ce).
  ASSERT_EQ(f.concurrent_probes.size(), 8u);
  const ConcurrentProbe& into2 = f.concurrent_probes[2];
  ASSERT_EQ(into2.flows.size(), 3u);
  EXPECT_EQ(into2.flows[0], (std::pair<std::string, std::string>{"gpu0", "gpu2"}));
  EXPECT_EQ(into2.flows[2], (std::pair<std::string, std::string>{"gpu3", "gpu2"}));
  // Only the aggregate is printed (12.45 GB/s into gpu2): each of the 3 flows a third of it.
  for (double bw : into2.bandwidth_Bps) EXPECT_DOUBLE_EQ(Bps_to_GBps(bw), 12.45 / 3);
  EXPECT_TRUE(into2.spread.empty());
  const ConcurrentProbe& out1 = f.concurrent_probes[5];
  EXPECT_EQ(out1.flows[0], (std::pair<std::string, std::string>{"gpu1", "gpu0"}));
  EXPECT_EQ(out1.flows[2], (std::pair<std::string, std::string>{"gpu1", "gpu3"}));
  EXPECT_DOUBLE_EQ(Bps_to_GBps(out1.bandwidth_Bps[1]), 12.39 / 3);
  EXPECT_TRUE(any_note_contains(r, "nvbandwidth: concurrent_probes from all_to_one_write_ce (every other GPU's copy into each "
                                   "GPU at once; only their aggregate is printed, so each flow's rate is the aggregate / the "
                                   "number of flows)"));
  EXPECT_TRUE(any_note_contains(r, "concurrent_probes from one_to_all_write_ce (every other GPU's copy out of each GPU"));
  EXPECT_TRUE(any_note_contains(r, "one_to_all_read_ce not used (all_to_one_write_ce preferred)"));
  EXPECT_TRUE(any_note_contains(r, "all_to_one_read_ce not used (one_to_all_write_ce preferred)"));
  EXPECT_FALSE(any_note_contains(r, "ignored test cases"));
  // The tree the pairs give shares each GPU's link among the flows as measured: every probe agrees.
  const auto inferred = infer_topology(f);
  EXPECT_EQ(inferred.report.unexplained_count(), 0u) << inferred.report.text();
  ASSERT_EQ(inferred.report.probes.size(), 8u);
  for (const auto& p : inferred.report.probes) EXPECT_TRUE(p.agrees) << inferred.report.text();
  EXPECT_NE(inferred.report.text().find("3 flows into gpu2"), std::string::npos) << inferred.report.text();
  EXPECT_NE(inferred.report.text().find("3 flows out of gpu1"), std::string::npos) << inferred.report.text();
  // Written to the matrix form and read back.
  const auto back = matrix_form_from_json(JsonView::parse(matrix_form_to_json(f).dump(), "back.json"));
  ASSERT_EQ(back.concurrent_probes.size(), 8u);
  EXPECT_NEAR(Bps_to_GBps(back.concurrent_probes[2].bandwidth_Bps[0]), 4.15, 1e-9);
}

TEST(ImportNvbandwidth, ReadVariantsOfAllToOneAndOneToAllRunTheOtherWay) {
  // Without the write tests: all_to_one_read_ce moves data out of each GPU (its peers read from
  // it), one_to_all_read_ce into it.
  std::string text = kNvbAllToOne;
  for (const char* drop : {"Running all_to_one_write_ce.", "Running one_to_all_write_ce."}) {
    const auto at = text.find(drop);
    ASSERT_NE(at, std::string::npos);
    const auto end = text.find("Running ", at + 8);
    text.erase(at, end - at);
  }
  const auto r = import_tool_output(text, "nvb.txt");
  const auto& f = r.form;
  ASSERT_EQ(f.concurrent_probes.size(), 8u);
  // Into each GPU first: one_to_all_read_ce (12.21 GB/s into gpu0) ...
  EXPECT_EQ(f.concurrent_probes[0].flows[1], (std::pair<std::string, std::string>{"gpu2", "gpu0"}));
  EXPECT_DOUBLE_EQ(Bps_to_GBps(f.concurrent_probes[0].bandwidth_Bps[0]), 12.21 / 3);
  // ... then out of each: all_to_one_read_ce (12.36 GB/s out of gpu3).
  EXPECT_EQ(f.concurrent_probes[7].flows[0], (std::pair<std::string, std::string>{"gpu3", "gpu0"}));
  EXPECT_DOUBLE_EQ(Bps_to_GBps(f.concurrent_probes[7].bandwidth_Bps[2]), 12.36 / 3);
  EXPECT_TRUE(any_note_contains(r, "concurrent_probes from one_to_all_read_ce (every other GPU's copy into each GPU"));
  EXPECT_TRUE(any_note_contains(r, "concurrent_probes from all_to_one_read_ce (every other GPU's copy out of each GPU"));
}

TEST(ImportNvbandwidth, AllToOneWithoutTwoPeersGivesNoProbe) {
  // Two GPUs: one flow each way is a pair, not flows at once.
  const std::string text =
      "Running device_to_device_memcpy_write_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A     26.30\n"
      " 1     26.12       N/A\n"
      "\n"
      "Running all_to_one_write_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0     26.01       N/A\n";
  const auto r = import_tool_output(text, "nvb.txt");
  EXPECT_TRUE(r.form.concurrent_probes.empty());
  EXPECT_TRUE(any_note_contains(r, "nvbandwidth: all_to_one_write_ce gives no probe for gpu0, gpu1 (N/A, or fewer than two "
                                   "peers with peer access)"));
}

TEST(ImportNvbandwidth, BidirectionalTableOfVersionsBeforeV06IsSummedPerPair) {
  // Before v0.6 the bidirectional test printed one table: each entry the measured copy's rate
  // (one direction) while the copy the other way ran.
  const std::string text = R"(nvbandwidth Version: v0.5
Built from Git version: v0.5

Running device_to_device_memcpy_write_ce.
memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)
           0         1
 0       N/A     26.30
 1     26.12       N/A

SUM device_to_device_memcpy_write_ce 52.42

Running device_to_device_bidirectional_memcpy_write_ce.
memcpy CE GPU(row) <-> GPU(column) bandwidth (GB/s)
           0         1
 0       N/A     20.14
 1     19.96       N/A

SUM device_to_device_bidirectional_memcpy_write_ce 40.10

)";
  const auto r = import_tool_output(text, "nvb-v0.5.txt");
  ASSERT_TRUE(r.form.bidirectional_Bps);
  EXPECT_NEAR(GBps(*r.form.bidirectional_Bps, 0, 1), 20.14 + 19.96, 1e-9);
  EXPECT_NEAR(GBps(*r.form.bidirectional_Bps, 1, 0), 20.14 + 19.96, 1e-9);
  EXPECT_TRUE(any_note_contains(r, "bidirectional_GBps from device_to_device_bidirectional_memcpy_write_ce (one table, as "
                                   "nvbandwidth printed before v0.6"));
  // 40.1 of 52.4 GB/s both ways: each direction keeps 76 % while the other runs.
  const auto inferred = infer_topology(r.form);
  EXPECT_NE(inferred.report.text().find("keep 76 % of their bandwidth"), std::string::npos) << inferred.report.text();
}

// ---------------------------------------------------------------------------------------
// nvidia-smi topo, and tools merged

TEST(ImportSmiTopo, TopoAndP2pTogetherGiveClassesAndBandwidths) {
  const auto r = import_tool_files({kTopo4, kP2p4});
  const auto& f = r.form;
  EXPECT_EQ(r.tools_found, (std::vector<std::string>{"nvidia-smi topo -m", "p2pBandwidthLatencyTest"}));
  EXPECT_EQ(f.name, "4gpu-2switch");
  EXPECT_EQ(f.source, "nvidia-smi topo -m from " + kTopo4 + " + p2pBandwidthLatencyTest from " + kP2p4);
  ASSERT_TRUE(f.topo_classes);
  const auto& c = *f.topo_classes;
  EXPECT_EQ(c[0][0], "X");
  EXPECT_EQ(c[0][1], "PIX");
  EXPECT_EQ(c[2][3], "PIX");
  EXPECT_EQ(c[0][2], "PHB");
  EXPECT_EQ(c[3][1], "PHB");
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 12.41);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 2), 9.28);
  expect_all_explained(f, "topo + p2p 4gpu");
  expect_groups(f, kGroups4, "topo + p2p 4gpu");
}

TEST(ImportSmiTopo, EightGpuTopoWithNicAndP2pStatusPlusNvbandwidth) {
  const auto r = import_tool_files({kTopo8, kNvb8});
  const auto& f = r.form;
  EXPECT_TRUE(contains(r.tools_found, "nvidia-smi topo -m"));
  EXPECT_TRUE(contains(r.tools_found, "nvidia-smi topo -p2p p"));
  EXPECT_TRUE(contains(r.tools_found, "nvbandwidth"));
  ASSERT_TRUE(f.topo_classes);
  ASSERT_EQ(f.topo_classes->size(), 8u);  // the NIC row is not a GPU
  EXPECT_EQ((*f.topo_classes)[0][3], "PIX");
  EXPECT_EQ((*f.topo_classes)[0][4], "NODE");
  EXPECT_EQ((*f.topo_classes)[7][3], "NODE");
  EXPECT_EQ((*f.topo_classes)[6][5], "PIX");
  EXPECT_EQ((*f.topo_classes)[5][5], "X");
  // p2p_supported from "nvidia-smi topo -p2p p" (all OK).
  ASSERT_TRUE(f.p2p_supported);
  for (const auto& row : *f.p2p_supported) {
    for (bool b : row) EXPECT_TRUE(b);
  }
  // The NIC column, named by the NIC legend, kept for clusters built from this node.
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].name, "mlx5_0");
  EXPECT_EQ(r.devices[0].classes, (std::vector<std::string>{"PIX", "PIX", "PIX", "PIX", "NODE", "NODE", "NODE", "NODE"}));
  EXPECT_EQ(r.devices[0].peer_classes, (std::vector<std::string>{"X"}));
  EXPECT_TRUE(any_note_contains(r, "mlx5_0 kept for clusters"));
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 1, 0), 11.76);
}

// nvidia-smi underlines its header with terminal escape codes (ESC[4m ... ESC[0m), which a
// capture of the terminal keeps (8 x H100 HGX, published; here its first four GPUs and two NICs).
// Every reader ignores such sequences wherever they are in a line.
TEST(ImportSmiTopo, TerminalEscapeCodesAroundTheHeaderAreIgnored) {
  const std::string topo =
      "### nvidia-smi topo -m\n"                                                                                       // 1
      "\t\x1b[4mGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"                  // 2
      "GPU0\t X \tNV18\tNV18\tNV18\tPXB\tNODE\t0-31,64-95\t0\t\tN/A\n"                                                  // 3
      "GPU1\tNV18\t X \tNV18\tNV18\tPXB\tNODE\t0-31,64-95\t0\t\tN/A\n"                                                  // 4
      "GPU2\tNV18\tNV18\t X \tNV18\tNODE\tPXB\t0-31,64-95\t0\t\tN/A\n"                                                  // 5
      "GPU3\tNV18\tNV18\tNV18\t X \tNODE\tPXB\t0-31,64-95\t0\t\tN/A\n"                                                  // 6
      "NIC0\tPXB\tPXB\tNODE\tNODE\t X \tNODE\t\t\t\t\n"                                                                  // 7
      "NIC1\tNODE\tNODE\tPXB\tPXB\tNODE\t X \t\t\t\t\n"                                                                  // 8
      "\n"
      "Legend:\n"
      "\n"
      "  X    = Self\n"
      "\n"
      "NIC Legend:\n"
      "\n"
      "  NIC0: ibp33s0\n"
      "  NIC1: ibp71s0\n";
  const auto r = import_tool_output(topo, "h100.txt");
  EXPECT_EQ(r.tools_found, (std::vector<std::string>{"nvidia-smi topo -m"}));
  ASSERT_TRUE(r.form.topo_classes);
  ASSERT_EQ(r.form.size(), 4u);
  EXPECT_EQ((*r.form.topo_classes)[0][1], "NV18");
  EXPECT_EQ((*r.form.topo_classes)[3][3], "X");
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].name, "ibp33s0");
  EXPECT_EQ(r.devices[1].name, "ibp71s0");
  EXPECT_EQ(r.devices[0].classes, (std::vector<std::string>{"PXB", "PXB", "NODE", "NODE"}));
  EXPECT_EQ(r.devices[1].peer_classes, (std::vector<std::string>{"NODE", "X"}));

  // The same without the codes gives the same form.
  std::string plain = topo;
  for (const std::string code : {"\x1b[4m", "\x1b[0m"}) plain.erase(plain.find(code), code.size());
  EXPECT_EQ(matrix_form_to_json(import_tool_output(plain, "h100.txt").form), matrix_form_to_json(r.form));

  // Codes anywhere in a line, in the other tools' outputs too: colours, bold, "tput sgr0".
  const auto p2p = import_tool_output(p2p_text("     0 538.62   \x1b[1;31m5.72\x1b[0m ", "     1   5.72 532.54 \x1b(B\x1b[m",
                                               "   D\\D  \x1b[4m   0      1 \x1b[24m"),
                                      "p2p.txt");
  EXPECT_DOUBLE_EQ(GBps(p2p.form.bandwidth_Bps, 0, 1), 5.72);
  EXPECT_DOUBLE_EQ(GBps(p2p.form.bandwidth_Bps, 1, 0), 5.72);
  const std::string nvb =
      "\x1b[1mRunning device_to_device_memcpy_write_ce.\x1b[0m\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "\x1b[4m           0         1\x1b[0m\n"
      " 0       N/A     12.61\n"
      " 1     12.58       N/A\n";
  EXPECT_DOUBLE_EQ(GBps(import_tool_output(nvb, "nvb.txt").form.bandwidth_Bps, 0, 1), 12.61);  // write CE: row = sender

  // What is not a whole escape sequence stays, and the table is still rejected where it is bad.
  std::string bad = topo;
  bad.replace(bad.find("\x1b[4m"), 4, "\x1b[4");  // cut: "ESC[4GPU0" reads as ESC[4G (a cursor move) + "PU0"
  EXPECT_EQ(error_of([&] { import_tool_output(bad, "h100.txt"); }),
            "h100.txt:4: row label \"GPU1\" is out of order of the table \"nvidia-smi topo -m\"; expected the row GPU0");
  std::string stray = topo;
  stray.replace(stray.find("NV18"), 4, "NV18\x1b");
  const auto e = error_of([&] { import_tool_output(stray, "h100.txt"); });
  EXPECT_EQ(e.rfind("h100.txt:3: \"NV18\x1b\" is not an nvidia-smi topo -m class (GPU0 / GPU1)", 0), 0u) << e;
}

TEST(ImportMerged, AllThreeToolsOfOneMachine) {
  const auto r = import_tool_files({kTopo4, kP2p4, kNvb4});
  const auto& f = r.form;
  EXPECT_EQ(r.tools_found.size(), 3u);
  // p2pBandwidthLatencyTest gives the main matrices; nvbandwidth what the p2p test lacks.
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 12.41);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 0, 1), 1.82);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.host_to_device_Bps)[2]), 9.19);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[0]), 424.05);
  ASSERT_EQ(f.other_measurements.count("nvbandwidth"), 1u);
  const auto& nv = f.other_measurements.at("nvbandwidth");
  EXPECT_DOUBLE_EQ(GBps(*nv.bandwidth_Bps, 0, 1), 12.66);
  EXPECT_DOUBLE_EQ(GBps(*nv.bidirectional_Bps, 0, 1), 24.10);
  EXPECT_EQ(f.other_measurements.count("p2p_disabled"), 1u);
  EXPECT_EQ((*f.topo_classes)[1][2], "PHB");
  EXPECT_TRUE(any_note_contains(r, "host_to_device_GBps comes from nvbandwidth"));
  // The result is a valid matrix-form document.
  const MatrixForm back = matrix_form_from_json(JsonView::wrap(matrix_form_to_json(f), "roundtrip"));
  EXPECT_EQ(back.bandwidth_Bps.at(2, 3), f.bandwidth_Bps.at(2, 3));
  EXPECT_EQ(back.topo_classes, f.topo_classes);
}

TEST(ImportMerged, NvbandwidthProbesBesideTheP2pTestLeaveOutPairsWithoutPeerAccess) {
  // nvbandwidth measured no copy between gpu0 and gpu3 (no peer access: N/A), so its
  // all-to-one into gpu0 ran two copies, not three; p2pBandwidthLatencyTest gives the pairs.
  std::string text = kNvbAllToOne;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{" 0       N/A     12.60      9.40      9.40",
                                                                     " 0       N/A     12.60      9.40       N/A"},
                                 {" 3      9.40      9.40     12.60       N/A", " 3       N/A      9.40     12.60       N/A"}}) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  }
  const fs::path dir = fs::temp_directory_path() / ("gradsync-import-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
  fs::create_directories(dir);
  std::ofstream(dir / "nvb.txt") << text;
  const auto r = import_tool_files({kP2p4, (dir / "nvb.txt").string()});
  fs::remove_all(dir);
  ASSERT_EQ(r.form.concurrent_probes.size(), 8u);
  const ConcurrentProbe& into0 = r.form.concurrent_probes[0];
  ASSERT_EQ(into0.flows.size(), 2u);
  EXPECT_EQ(into0.flows[1], (std::pair<std::string, std::string>{"gpu2", "gpu0"}));
  EXPECT_DOUBLE_EQ(Bps_to_GBps(into0.bandwidth_Bps[0]), 12.48 / 2);
  EXPECT_EQ(r.form.concurrent_probes[1].flows.size(), 3u);
  EXPECT_TRUE(any_note_contains(r, "concurrent_probes come from nvbandwidth, compared with p2pBandwidthLatencyTest's pairs "
                                   "measured alone"));
}

TEST(ImportMerged, InferenceExplainsEveryFixtureImportAndFindsTheSwitches) {
  const std::vector<std::pair<std::vector<std::string>, int>> cases = {
      {{kP2p4}, 4},         {{kNvb4}, 4},         {{kTopo4, kP2p4}, 4}, {{kTopo4, kNvb4}, 4}, {{kTopo4, kP2p4, kNvb4}, 4},
      {{kP2p8}, 8},         {{kNvb8}, 8},         {{kTopo8, kP2p8}, 8}, {{kTopo8, kNvb8}, 8}, {{kTopo8, kP2p8, kNvb8}, 8},
  };
  for (const auto& [files, gpus] : cases) {
    std::string what;
    for (const auto& f : files) what += std::filesystem::path(f).filename().string() + " ";
    const auto r = import_tool_files(files);
    ASSERT_EQ(r.form.size(), static_cast<std::size_t>(gpus)) << what;
    expect_all_explained(r.form, what);
    expect_groups(r.form, gpus == 4 ? kGroups4 : kGroups8, what);
  }
  // The P2P=Disabled variant has the same two-switch shape.
  ImportOptions disabled;
  disabled.p2p_enabled = false;
  expect_all_explained(import_tool_files({kP2p8}, disabled).form, "p2p-8gpu disabled");
}

// ---------------------------------------------------------------------------------------
// The published RTX 2080 Ti output (tests/data/published)

TEST(ImportPublished, Rtx2080Ti2GpuPix) {
  const std::string dir = std::string(GRADSYNC_PUBLISHED_DATA);
  const std::string path = dir + "/rtx2080ti-2gpu-pix.txt";
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const auto r = import_tool_files({path});
  const auto& f = r.form;
  EXPECT_TRUE(contains(r.tools_found, "nvidia-smi topo -m"));
  EXPECT_TRUE(contains(r.tools_found, "p2pBandwidthLatencyTest"));
  EXPECT_EQ(f.name, "rtx2080ti-2gpu-pix");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 0, 1), 5.72);
  EXPECT_DOUBLE_EQ(GBps(f.bandwidth_Bps, 1, 0), 5.72);
  const auto& d = f.other_measurements.at("p2p_disabled");
  EXPECT_DOUBLE_EQ(GBps(*d.bandwidth_Bps, 0, 1), 5.71);
  EXPECT_DOUBLE_EQ(GBps(*d.bandwidth_Bps, 1, 0), 5.70);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 0, 1), 6.10);
  EXPECT_DOUBLE_EQ(GBps(*f.bidirectional_Bps, 1, 0), 6.10);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 0, 1), 14.99);
  EXPECT_DOUBLE_EQ(us(*f.latency_s, 1, 0), 13.63);
  EXPECT_DOUBLE_EQ(us(*f.cpu_latency_s, 0, 1), 10.34);
  EXPECT_DOUBLE_EQ(us(*d.latency_s, 1, 0), 13.95);
  ASSERT_TRUE(f.topo_classes);
  EXPECT_EQ((*f.topo_classes)[0][1], "PIX");
  EXPECT_EQ((*f.topo_classes)[1][0], "PIX");
  ASSERT_TRUE(f.p2p_supported);
  EXPECT_FALSE((*f.p2p_supported)[0][1]);
  EXPECT_FALSE((*f.p2p_supported)[1][0]);
  ASSERT_TRUE(f.device_local_Bps);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[0]), 538.62);
  EXPECT_DOUBLE_EQ(Bps_to_GBps((*f.device_local_Bps)[1]), 532.54);
  EXPECT_TRUE(any_note_contains(r, "nccl-tests"));
  EXPECT_TRUE(any_note_contains(r, "no peer access between gpu0-gpu1"));
  expect_all_explained(f, "published rtx2080ti");
}

// ---------------------------------------------------------------------------------------
// Errors

TEST(ImportErrors, GpuCountMismatchNamesBothTools) {
  const auto e = error_of([] { import_tool_files({kTopo4, kP2p8}); });
  EXPECT_NE(e.find("nvidia-smi topo -m"), std::string::npos) << e;
  EXPECT_NE(e.find("p2pBandwidthLatencyTest"), std::string::npos) << e;
  EXPECT_NE(e.find("shows 4"), std::string::npos) << e;
  EXPECT_NE(e.find("shows 8"), std::string::npos) << e;
  EXPECT_NE(e.find(kTopo4 + ":"), std::string::npos) << e;
  EXPECT_NE(e.find(kP2p8 + ":"), std::string::npos) << e;
}

// nvidia-smi topo -m alone gives a nominal topology (tests/models/test_topo_only.cpp); peer
// status alone gives nothing to build one from.
TEST(ImportErrors, TopoP2pOnlyAsksForABandwidthMeasurement) {
  EXPECT_EQ(error_of([] { import_tool_output("$ nvidia-smi topo -p2p r\n\tGPU0\tGPU1\nGPU0\tX\tOK\nGPU1\tOK\tX\n", "p2p-status.txt"); }),
            "p2p-status.txt: holds \"nvidia-smi topo -p2p\" results but no bandwidth measurement nor nvidia-smi topo -m "
            "classes; expected also the output of p2pBandwidthLatencyTest or nvbandwidth (import them together: gradsync "
            "import topo.txt p2p.txt)");
}

TEST(ImportErrors, UnknownFormatListsTheSupportedTools) {
  const auto e = error_of([] { import_tool_output("hello\nthis is not a tool output\n", "notes.txt"); });
  EXPECT_EQ(e.rfind("notes.txt: no supported tool output found", 0), 0u) << e;
  EXPECT_NE(e.find("p2pBandwidthLatencyTest"), std::string::npos) << e;
  EXPECT_NE(e.find("nvbandwidth"), std::string::npos) << e;
  EXPECT_NE(e.find("nvidia-smi topo -m"), std::string::npos) << e;
}

TEST(ImportErrors, MissingFile) {
  EXPECT_EQ(error_of([] { import_tool_files({kP2p4, "/nonexistent/p2p.txt"}); }), "/nonexistent/p2p.txt: no such file");
}

TEST(ImportErrors, MalformedP2pTables) {
  // Sanity: the well-formed excerpt imports.
  EXPECT_DOUBLE_EQ(GBps(import_tool_output(p2p_text("     0 538.62   5.72 ", "     1   5.72 532.54 "), "p2p.txt")
                            .form.bandwidth_Bps,
                        0, 1),
                   5.72);
  // Not a number.
  EXPECT_EQ(error_of([] { import_tool_output(p2p_text("     0 538.62   5.72 ", "     1   5.7x 532.54 "), "p2p.txt"); }),
            "p2p.txt:7: \"5.7x\" is not a number; expected a bandwidth in GB/s");
  // Wrong number of values in a row.
  auto e = error_of([] { import_tool_output(p2p_text("     0 538.62   5.72   1.00", "     1   5.72 532.54 "), "p2p.txt"); });
  EXPECT_EQ(e.rfind("p2p.txt:6: ", 0), 0u) << e;
  EXPECT_NE(e.find("has 3 values; expected 2"), std::string::npos) << e;
  // Row labels out of order.
  e = error_of([] { import_tool_output(p2p_text("     1 538.62   5.72 ", "     0   5.72 532.54 "), "p2p.txt"); });
  EXPECT_EQ(e.rfind("p2p.txt:6: row label \"1\" is out of order", 0), 0u) << e;
  // Cut short by the next table.
  e = error_of([] {
    import_tool_output(p2p_text("     0 538.62   5.72 ", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)"), "p2p.txt");
  });
  EXPECT_EQ(e.rfind("p2p.txt:7: ", 0), 0u) << e;
  EXPECT_NE(e.find("after 1 of 2 rows"), std::string::npos) << e;
  EXPECT_NE(e.find("\"Bidirectional P2P=Enabled"), std::string::npos) << e;
  // Cut short by the end of the text.
  e = error_of([] {
    import_tool_output(
        "Device: 0, X, pciBusID: 1, pciDeviceID: 0, pciDomainID:0\nDevice: 1, X, pciBusID: 2, pciDeviceID: 0, "
        "pciDomainID:0\nP2P=Enabled Latency (P2P Writes) Matrix (us)\n   GPU     0      1\n     0   1.32  14.99\n",
        "lat.txt");
  });
  EXPECT_EQ(e.rfind("lat.txt:5: the file ends after 1 of 2 rows", 0), 0u) << e;
  // A header with more columns than the Device lines list GPUs.
  e = error_of([] {
    import_tool_output(p2p_text("     0 538.62   5.72 ", "     1   5.72 532.54 ", "   D\\D     0      1      2"), "p2p.txt");
  });
  EXPECT_EQ(e.rfind("p2p.txt:5: ", 0), 0u) << e;
  EXPECT_NE(e.find("lists 3 columns; expected 2"), std::string::npos) << e;
}

TEST(ImportErrors, MalformedNvbandwidthAndTopoTables) {
  const std::string nvb =
      "Running device_to_device_memcpy_write_ce.\n"          // 1
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"  // 2
      "           0         1\n"                             // 3
      " 0       N/A     12.6O\n"                             // 4
      " 1     12.58       N/A\n";                            // 5
  EXPECT_EQ(error_of([&] { import_tool_output(nvb, "nvb.txt"); }),
            "nvb.txt:4: \"12.6O\" is not a number; expected a bandwidth in GB/s");

  const std::string missing_pair =
      "Running device_to_device_memcpy_write_ce.\n"
      "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
      "           0         1\n"
      " 0       N/A     12.61\n"
      " 1       N/A       N/A\n";
  const auto e = error_of([&] { import_tool_output(missing_pair, "nvb.txt"); });
  EXPECT_EQ(e.rfind("nvb.txt:5: \"N/A\" in row 1, column 0", 0), 0u) << e;

  const std::string topo =
      "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"  // 1
      "GPU0\t X \tPIXX\t0-11\t0\t\tN/A\n"                         // 2
      "GPU1\tPIX\t X \t0-11\t0\t\tN/A\n";                         // 3
  const auto t = error_of([&] { import_tool_output(topo, "topo.txt"); });
  EXPECT_EQ(t.rfind("topo.txt:2: \"PIXX\" is not an nvidia-smi topo -m class", 0), 0u) << t;
  EXPECT_NE(t.find("expected one of PIX, PXB, PHB, NODE, SYS"), std::string::npos) << t;
}

TEST(ImportErrors, AllToOneRowCutShortNamesItsLine) {
  // One figure per GPU, as many as the GPU-to-GPU table before it has columns.
  std::string text = kNvbAllToOne;
  const std::string row = " 0     12.48     12.51     12.45     12.54";
  const auto at = text.find(row);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, row.size(), " 0     12.48     12.51     12.45");
  EXPECT_EQ(error_of([&] { import_tool_output(text, "nvb.txt"); }),
            "nvb.txt:17: row 0 of the table \"memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\" has 3 values; expected 4 "
            "(one per column)");
}

TEST(ImportErrors, SameToolTwiceIsAnError) {
  const auto e = error_of([] { import_tool_files({kP2p4, kP2p4}); });
  EXPECT_NE(e.find("a second p2pBandwidthLatencyTest output"), std::string::npos) << e;
}

// NCCL's own log (NCCL_DEBUG=INFO) beside an nccl-tests table: the CPU maker and the path types
// between the GPUs it prints, in both id forms (GPU/1000 of 2.16, GPU/0-1000 of later releases).
TEST(ImportNcclLog, TheMachineNcclsLogPrints) {
  const std::string info = "n013:445534:445553 [0] NCCL INFO ";
  const std::string log =
      info + "=== System : maxBw 24.0 totalBw 24.0 ===\n" + info + "CPU/0 (1/2/-1)\n" + info + "+ SYS[5000.0] - CPU/1\n" + info +
      "+ PCI[24.0] - GPU/1000 (0)\n" + info + "GPU/1000 :GPU/1000 (0/5000.000000/LOC) GPU/81000 (3/24.000000/SYS) CPU/0 (1/24.000000/PHB)\n" +
      info + "GPU/0-81000 :GPU/0-1000 (3/24.000000/SYS) GPU/0-81000 (0/5000.000000/LOC)\n" + info +
      "NVLS multicast support is not available on dev 0\n";
  const auto facts = read_nccl_log(importers::split_lines(log, "log.txt"));
  EXPECT_EQ(facts.cpu_vendor, "amd");
  ASSERT_EQ(facts.gpu_paths.size(), 2u);
  EXPECT_EQ(facts.gpu_paths.at({0x01, 0x81}).first, "SYS");
  EXPECT_DOUBLE_EQ(facts.gpu_paths.at({0x81, 0x01}).second, 24.0);
  ASSERT_TRUE(facts.nvls);
  EXPECT_FALSE(*facts.nvls);
  EXPECT_EQ(facts.line, 1u);
  EXPECT_EQ(pci_bus_of("0000:81:00"), 0x81);
  EXPECT_EQ(pci_bus_of("0x27"), 0x27);
  EXPECT_EQ(pci_bus_of("[0x27]"), -1);
  // Lines of other kinds, and malformed ones, say nothing.
  EXPECT_TRUE(read_nccl_log(importers::split_lines(info + "CPU/0 (x/2/-1)\n" + info + "GPU/zz :GPU/1000 (3/24/SYS)\nCPU/0 (1/2/-1)\n", "l"))
                  .empty());

  // Two A100 PCIe whose nccl-tests log carries NCCL's dump: a machine of two sockets (SYS), AMD.
  const auto imported = import_tool_files({std::string(GRADSYNC_PUBLISHED_DATA) + "/a100pcie-2gpu-sys-p2p.txt"});
  ASSERT_TRUE(imported.form.topo_classes);
  EXPECT_EQ((*imported.form.topo_classes)[0][1], "SYS");
  const std::string notes = [&] {
    std::string all;
    for (const auto& n : imported.notes) all += n + "\n";
    return all;
  }();
  EXPECT_NE(notes.find("taken as the paths NCCL's own log prints between them"), std::string::npos) << notes;
  EXPECT_NE(notes.find("CPU maker from NCCL's log: amd"), std::string::npos) << notes;
  ASSERT_TRUE(imported.form.nominal);
  EXPECT_DOUBLE_EQ(imported.form.nominal->inter_socket_Bps, 16e9);  // NCCL's AMD_BW
}

// NCCL's log says whether NVLS multicast is available on each GPU: the NVSwitch's NVLink SHARP,
// carried through the matrix form's JSON to the inferred switch; one GPU without it is none.
TEST(ImportNcclLog, NvlsFromTheLogIsTheNvswitchsSharp) {
  const auto imported = import_tool_files({std::string(GRADSYNC_PUBLISHED_DATA) + "/h100sxm-8gpu-hgx-subsets.txt"});
  ASSERT_TRUE(imported.form.nvlink_sharp);
  EXPECT_TRUE(*imported.form.nvlink_sharp);
  const MatrixForm back = matrix_form_from_json(JsonView::parse(matrix_form_to_json(imported.form).dump(), "back.json"));
  ASSERT_TRUE(back.nvlink_sharp);
  EXPECT_TRUE(*back.nvlink_sharp);
  const auto inferred = infer_topology(back);
  int switches = 0;
  for (std::size_t k = 0; k < inferred.topology.node_count(); ++k) {
    const Node& n = inferred.topology.node(k);
    if (n.kind != NodeKind::nvswitch) continue;
    ++switches;
    ASSERT_TRUE(n.facts.sharp);
    EXPECT_TRUE(*n.facts.sharp);
  }
  EXPECT_EQ(switches, 1);

  // The same topo -m with one GPU's log line saying "not available": no NVLink SHARP.
  std::ifstream in(std::string(GRADSYNC_PUBLISHED_DATA) + "/h100sxm-8gpu-hgx-subsets.txt");
  std::ostringstream text;
  text << in.rdbuf() << "38dcf168f605:1343:1351 [2] NCCL INFO NVLS multicast support is not available on dev 2\n";
  const auto without = import_tool_output(text.str(), "hgx.txt");
  ASSERT_TRUE(without.form.nvlink_sharp);
  EXPECT_FALSE(*without.form.nvlink_sharp);
  // A topo -m alone says nothing of it.
  EXPECT_FALSE(import_tool_files({kTopo4}).form.nvlink_sharp);
}
