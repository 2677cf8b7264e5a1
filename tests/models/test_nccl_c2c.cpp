// Grace Hopper (GH200): each GPU joined to its own Grace CPU by NVLink-C2C, the NICs on those
// CPUs' root ports. NCCL sees the C2C link from 2.26 (topo.cc's "c2c" node); from 2.27 a GPU's path
// to the NIC on its own CPU is P2C (paths.cc mergePathType), within NCCL_NET_GDR_LEVEL's default
// (P2C, NCCL_NET_GDR_C2C=1), so GPUDirect RDMA is on there, and LL128 with it (tuning.cc: Hopper
// keeps LL128 up to PXN, which 2.30 orders after P2C). Before 2.26 the GPU is a PCI device of its
// CPU: the NIC is PHB from it and GPUDirect RDMA off at the default level.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/strategies/nccl/system.h"
#include "models/topology/cluster_generator.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

std::vector<std::size_t> grace_hopper_host(const Topology& t) {
  std::vector<std::size_t> out;
  for (int g = 0; g < 4; ++g) out.push_back(t.require("n0-gpu" + std::to_string(g), "test"));
  return out;
}

ResultRecord c2c_predict(const Topology& t, double bytes, const std::vector<std::string>& params) {
  return predict(nccl_request(t, 16, bytes, params));
}

bool c2c_note(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(NcclC2c, PathTypesAreNumberedAsNccl230NumbersThem) {
  EXPECT_EQ(path_name(kPathP2c), "P2C");
  EXPECT_EQ(path_name(kPathPxn), "PXN");
  EXPECT_LT(kPathPxb, kPathP2c);
  EXPECT_LT(kPathP2c, kPathPxn);
  EXPECT_LT(kPathPxn, kPathPhb);
  EXPECT_EQ(path_type_from_name("P2C"), 6);
  EXPECT_EQ(path_type_from_name("PXN"), 7);
}

TEST(NcclC2c, TheNicOnAGpusOwnCpuIsP2cAndGpuDirectRdmaReachesIt) {
  const Topology t = mesh_hosts("GH200", "auto", "true");
  SystemOptions o;
  o.cc = 90;
  const System newest(t, grace_hopper_host(t), o);
  ASSERT_EQ(newest.net_count(), 4);
  for (int r = 0; r < 4; ++r) {
    const int own = newest.local_net(r, 0);
    EXPECT_EQ(newest.path(newest.gpu(r), newest.net(own)).type, kPathP2c) << r;
    EXPECT_TRUE(newest.gdr(r, own)) << r;
    // Another GPU's NIC: through that GPU over NVLink (PXN), GPUDirect RDMA judged at that GPU's P2C.
    const int other = newest.local_net((r + 1) % 4, 0);
    EXPECT_EQ(newest.path(newest.gpu(r), newest.net(other)).type, kPathPxn) << r;
    EXPECT_EQ(newest.gdr_distance(newest.gpu(r), newest.net(other)), kPathP2c) << r;
  }
  o.nccl_version = 22500;
  const System before(t, grace_hopper_host(t), o);
  const int own = before.local_net(0, 0);
  EXPECT_EQ(before.path(before.gpu(0), before.net(own)).type, kPathPhb);
  EXPECT_FALSE(before.gdr(0, own));
}

TEST(NcclC2c, TheReleaseThatSeesNvlinkC2cIsAnOpenFactWhereNoneIsStated) {
  const Topology t = mesh_hosts("GH200", "auto", "true");
  const double mid = 64.0 * 1048576;
  const ResultRecord open = c2c_predict(t, mid, {});
  // The rings leave by the NIC they entered by, back through their first GPU (PXN): search.cc
  // tries a wider path type before crossing NICs, and keeps the first of graphs alike.
  EXPECT_TRUE(c2c_note(open, "PXN to the NICs")) << ::testing::PrintToString(open.notes);
  EXPECT_TRUE(c2c_note(open, "GPUDirect RDMA on (GDR level P2C)"));
  EXPECT_TRUE(c2c_note(open, "2.25 (NVLink-C2C not seen"));
  // A VM's ACS would not divert what already goes through the CPU the NIC sits on.
  EXPECT_FALSE(c2c_note(open, "virtual machine"));
  // LL128 where NCCL keeps it for Hopper (P2C within PXN); PHB before 2.26 turns it off.
  EXPECT_EQ(open.params.at("protocol"), "LL128");
  const ResultRecord old = c2c_predict(t, mid, {"nccl_version=2.25"});
  EXPECT_EQ(old.params.at("protocol"), "Simple");
  EXPECT_TRUE(c2c_note(old, "GPUDirect RDMA off: through host memory")) << ::testing::PrintToString(old.notes);
  EXPECT_FALSE(c2c_note(old, "NVLink-C2C not seen"));
  EXPECT_FALSE(c2c_note(c2c_predict(t, mid, {"nccl_version=2.30"}), "NVLink-C2C not seen"));
}
