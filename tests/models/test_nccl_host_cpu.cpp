// The hosts' CPU as NCCL plans with it: stated by the topology (--cpu, "vendor" on the root
// complexes) or the user (-p cpu=...), else carried by the GPU module itself (GH200: NVIDIA's
// Grace, an ARM CPU), else an open fact (AMD's latencies and P2P rules against the others').
#include <gtest/gtest.h>

#include <algorithm>

#include "models/executors/predict.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/hardware.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace test_nccl_planner;

namespace {

ResultRecord cpu_all_reduce(const Topology& t, const std::vector<std::string>& params = {}) {
  return predict(nccl_request(t, 16, 256.0 * 1048576, params));
}

bool cpu_is_open(const ResultRecord& r) {
  return std::any_of(r.open_facts.begin(), r.open_facts.end(), [](const OpenFact& f) { return f.name == "CPU vendor"; });
}

bool cpu_note(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(NcclHostCpu, AGraceHopperModuleCarriesItsArmCpu) {
  ASSERT_NE(hardware::find_gpu_model("GH200"), nullptr);
  EXPECT_STREQ(hardware::find_gpu_model("GH200")->cpu_vendor, "arm");
  EXPECT_EQ(hardware::find_gpu_model("H100")->cpu_vendor, nullptr);
  const ResultRecord gh = cpu_all_reduce(mesh_hosts("GH200"));
  EXPECT_FALSE(cpu_is_open(gh)) << ::testing::PrintToString(gh.notes);
  EXPECT_TRUE(cpu_note(gh, "4 CPUs (arm)")) << ::testing::PrintToString(gh.notes);  // a Grace each
  // As stated: the same plan as the topology saying ARM.
  EXPECT_DOUBLE_EQ(*gh.busbw_GBps(), *cpu_all_reduce(mesh_hosts("GH200", "arm")).busbw_GBps());
  // An H100 module says nothing of its host: the CPU stays open, and the user's word wins.
  EXPECT_TRUE(cpu_is_open(cpu_all_reduce(mesh_hosts("H100"))));
  EXPECT_TRUE(cpu_note(cpu_all_reduce(mesh_hosts("GH200"), {"cpu=amd"}), "4 CPUs (amd)"));
}
