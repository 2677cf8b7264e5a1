// NICs of several ports (topology generate --ports-per-nic, NodeFacts::ports): NCCL's IB
// transport fuses a NIC's ports into one device from 2.20 on (net_ib.cc NCCL_IB_MERGE_NICS, then
// topo.cc's NIC fusion), up to 2 ports a device until 2.23, 4 until 2.29 and 8 in 2.30; earlier
// releases drive each port as a device of its own. aws-ofi-nccl drives up to 4 EFA adapters beside
// a GPU as one device's rails whatever NCCL's release.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "models/executors/predict.h"
#include "models/strategies/nccl/system.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology_io.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

ResultRecord ported_all_reduce(const Topology& t, std::vector<std::string> params) {
  params.push_back("vm=off");
  return predict(nccl_request(t, 16, 1024.0 * 1048576, params));
}

bool ports_note(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

const OpenFact* ported_fact(const ResultRecord& r, const std::string& name) {
  for (const OpenFact& f : r.open_facts) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

TEST(NcclNicPorts, NcclFusesANicsPortsFromRelease220AtMostItsDevicesPortsEach) {
  EXPECT_EQ(ports_per_device("infiniband", 21900), 1);
  EXPECT_EQ(ports_per_device("roce", 22000), 2);
  EXPECT_EQ(ports_per_device("infiniband", 22300), 2);
  EXPECT_EQ(ports_per_device("infiniband", 22400), 4);
  EXPECT_EQ(ports_per_device("infiniband", 22900), 4);
  EXPECT_EQ(ports_per_device("infiniband", 23000), 8);
  EXPECT_EQ(ports_per_device("", 23000), 8);  // not stated: InfiniBand, NCCL's own transport
  EXPECT_EQ(ports_per_device("efa", 21800), 4);
  EXPECT_EQ(ports_per_device("ethernet", 23000), 1);
  EXPECT_EQ(ports_per_device("slingshot", 23000), 1);
  EXPECT_EQ(ports_per_device("tcpxo", 23000), 1);
}

TEST(NcclNicPorts, FusedPortsPlanAsOneNicOfTheirSumAndEarlierReleasesAsOneNicEach) {
  // 8 NICs of 2 x 100 Gb/s (PCIe never binds: 25 GB/s a NIC on a 48 GB/s link): from 2.20 NCCL
  // sees 8 devices of 25 GB/s, as 8 single-port NICs of 25; with 2.19, 16 devices of 12.5, as 16
  // single-port NICs of 12.5.
  const Topology dual = stated_hosts(8, 2, 12.5, "infiniband"), eight = stated_hosts(8, 1, 25, "infiniband"), sixteen = stated_hosts(16, 1, 12.5, "infiniband");
  for (const char* v : {"2.20", "2.30"}) {
    const std::string version = std::string("nccl_version=") + v;
    const double fused = *ported_all_reduce(dual, {version}).busbw_GBps();
    EXPECT_NEAR(fused, *ported_all_reduce(eight, {version}).busbw_GBps(), 0.01 * fused) << v;
    EXPECT_TRUE(ports_note(ported_all_reduce(dual, {version}), "8 NICs (2 ports each, fused) at 25.0 GB/s")) << v;
  }
  const double alone = *ported_all_reduce(dual, {"nccl_version=2.19"}).busbw_GBps();
  EXPECT_NEAR(alone, *ported_all_reduce(sixteen, {"nccl_version=2.19"}).busbw_GBps(), 0.01 * alone);
  EXPECT_TRUE(ports_note(ported_all_reduce(dual, {"nccl_version=2.19"}), "16 NICs (8 NICs' ports) at 12.5 GB/s"));
  // The network's links carry the ports' sum either way.
  for (const Link& l : dual.links()) {
    if (dual.node(l.a).id == "n0-nic0" && dual.node(l.b).kind == NodeKind::net_switch) {
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, 25e9);
    }
  }
}

TEST(NcclNicPorts, WhereNoReleaseIsStatedTheEarlierOnesDevicesAreAnOpenFact) {
  const Topology dual = stated_hosts(8, 2, 12.5, "infiniband");
  const ResultRecord r = ported_all_reduce(dual, {});
  const OpenFact* version = ported_fact(r, "NCCL version");
  ASSERT_NE(version, nullptr) << ::testing::PrintToString(r.notes);
  const auto other = std::find_if(version->relative_time.begin(), version->relative_time.end(),
                                  [](const auto& v) { return v.first == "2.19"; });
  ASSERT_NE(other, version->relative_time.end());
  const double at_219 = *ported_all_reduce(dual, {"nccl_version=2.19"}).busbw_GBps();
  // The fact's figure applies the closed form's ratio to the walk's busbw: within a few per cent.
  EXPECT_NEAR(*r.busbw_GBps() / other->second, at_219, 0.06 * at_219);
  EXPECT_LT(at_219, 0.8 * *r.busbw_GBps());
  // Stated, or ports that no release drives apart (EFA's rails; single-port NICs): no such value.
  auto has_219 = [](const ResultRecord& x) {
    const OpenFact* f = ported_fact(x, "NCCL version");
    return f && std::any_of(f->relative_time.begin(), f->relative_time.end(), [](const auto& v) { return v.first == "2.19"; });
  };
  EXPECT_FALSE(has_219(ported_all_reduce(dual, {"nccl_version=2.30"})));
  EXPECT_FALSE(has_219(ported_all_reduce(stated_hosts(8, 4, 12.5, "efa"), {})));
  EXPECT_FALSE(has_219(ported_all_reduce(stated_hosts(8, 1, 25, "infiniband"), {})));
}

TEST(NcclNicPorts, EfaAdaptersAsOneDevicesRailsPlanAsOneNicWhateverTheRelease) {
  // AWS p5: 32 EFA adapters of 100 Gb/s, 4 beside each GPU, driven as 8 devices of 4 rails.
  const Topology p5 = stated_hosts(8, 4, 12.5, "efa"), eight = stated_hosts(8, 1, 50, "efa");
  for (const char* v : {"2.18", "2.30"}) {
    const std::string version = std::string("nccl_version=") + v;
    const double rails = *ported_all_reduce(p5, {version}).busbw_GBps();
    EXPECT_NEAR(rails, *ported_all_reduce(eight, {version}).busbw_GBps(), 0.01 * rails) << v;
  }
}

TEST(NcclNicPorts, PortsAreANicsFactWrittenAndReadBack) {
  const Topology dual = stated_hosts(2, 4, 12.5, "infiniband");
  const auto back = load_topology(JsonView::wrap(topology_to_graph_json(dual), "round-trip.json")).topology;
  EXPECT_EQ(back.node(back.require("n1-nic1", "test")).facts.ports, 4);
  EXPECT_EQ(stated_hosts(2, 1, 50, "infiniband").node(0).facts.ports, 0);  // one port: not written
}

TEST(NcclNicPorts, ThePlannersCacheTellsTopologiesApartByTheirPorts) {
  // Two clusters alike in name, nodes, links and rates but for their NICs' ports, one after the
  // other at the same address: the second is planned as itself, not taken from the cache.
  std::optional<Topology> slot;
  slot.emplace(stated_hosts(8, 2, 12.5, "infiniband"));
  EXPECT_TRUE(ports_note(ported_all_reduce(*slot, {"nccl_version=2.19"}), "16 NICs (8 NICs' ports)"));
  slot.reset();
  slot.emplace(stated_hosts(8, 1, 25, "infiniband"));
  const ResultRecord single = ported_all_reduce(*slot, {"nccl_version=2.19"});
  EXPECT_TRUE(ports_note(single, "8 NICs at 25.0 GB/s")) << ::testing::PrintToString(single.notes);
}
