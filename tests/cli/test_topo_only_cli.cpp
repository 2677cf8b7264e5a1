// nvidia-smi topo -m alone, end to end (issue 14): gradsync import writes a nominal topology
// and says so; predict and compare read the same file directly, their headers naming it
// nominal; peer access comes from nvidia-smi topo -p2p when given.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "json_lines.h"

using nlohmann::json;

namespace {

std::string topo_only(const std::string& name) { return std::string(GRADSYNC_SOURCE) + "/tests/data/topo_only/" + name; }

}  // namespace

TEST(TopoOnlyCli, ImportWritesANominalTopologyAndSaysSo) {
  const std::string out = temp_file("box-nominal.json", "");
  const auto r = run_cli({"import", topo_only("rtx4090-8gpu-dualepyc-p2pon-topo.txt"), "--cpu", "intel", "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("every figure is NOMINAL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nominal pair figures reproduced"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inter-socket"), std::string::npos) << r.out;
  const json doc = json::parse(read_file(out));
  EXPECT_EQ(doc["name"], "rtx4090-8gpu-dualepyc-p2pon-topo-nominal");
  EXPECT_NE(doc["description"].get<std::string>().find("nominal"), std::string::npos);
  // 8 x RTX 4090 (Gen4 x16: 16 x 120 / 80 = 24 GB/s), Intel's inter-socket link 10 GB/s.
  EXPECT_DOUBLE_EQ(doc["nominal"]["pcie_GBps"].get<double>(), 24.0);
  EXPECT_DOUBLE_EQ(doc["nominal"]["inter_socket_GBps"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(doc["bandwidth_GBps"][0][1].get<double>(), 10.0);  // SYS: min(24, 10)

  // The written file reads back as a topology.
  const auto p = run_cli({"predict", "--topology", out, "--size", "64MiB", "--strategy", "ring"});
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("topology rtx4090-8gpu-dualepyc-p2pon-topo-nominal (8 GPUs)"), std::string::npos) << p.out;

  // --graph: the graph form's description says nominal too.
  const auto g = run_cli({"import", topo_only("rtx4090-8gpu-dualepyc-p2pon-topo.txt"), "--graph"}, false);
  ASSERT_EQ(g.status, 0) << g.out;
  EXPECT_NE(json::parse(g.out)["description"].get<std::string>().find("nominal"), std::string::npos);
}

TEST(TopoOnlyCli, PredictAndCompareReadATopoOnlyFile) {
  const std::string file = topo_only("rtx2080ti-2gpu-pix-topo.txt");
  const auto p = run_cli({"predict", "-t", file, "--size", "64MiB", "--strategy", "nccl"});
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("topology rtx2080ti-2gpu-pix-topo-nominal (2 GPUs)"), std::string::npos) << p.out;

  // Without nvidia-smi topo -p2p peer access is unknown and NCCL's rules allow P2P on PIX;
  // with it (NS), the hops go through host memory (SHM).
  const auto c = run_cli({"compare", file, file, "-x", "analytic"}, false);
  ASSERT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("on rtx2080ti-2gpu-pix-topo-nominal, strategy nccl"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("gpu0->gpu1 P2P (PIX)"), std::string::npos) << c.out;
  const std::string with_p2p = topo_only("rtx2080ti-2gpu-pix-topo-p2p.txt");
  const auto s = run_cli({"compare", with_p2p, with_p2p, "-x", "analytic"}, false);
  ASSERT_EQ(s.status, 0) << s.out;
  EXPECT_NE(s.out.find("gpu0->gpu1 SHM (PIX)"), std::string::npos) << s.out;
}
