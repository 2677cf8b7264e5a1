// GPUDirect RDMA across a CPU's host bridge (models/strategies/nccl: Plan::gdr_through_cpu,
// gdr_cpu_share). NVIDIA's GPUDirect RDMA guide: a path through the CPU "works, but yields worse
// performance" than one through PCIe switches, without a figure; the published runs with NICs on
// CPU root ports (an A100 PCIe pair over one HDR adapter, ALCF Polaris over Slingshot) reached
// 0.6-0.72 of their NICs. NCCL uses such a path only where NCCL_NET_GDR_LEVEL allows it (PHB, SYS),
// and then leaves LL128 off (tuning.cc: typeInter above PXB).
#include <gtest/gtest.h>

#include <algorithm>

#include "models/executors/predict.h"
#include "models/strategies/nccl/plan.h"
#include "models/strategies/nccl/tuning.h"
#include "models/topology/cluster_generator.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

// Two hosts of one A100 PCIe and one 25 GB/s InfiniBand NIC with GPUDirect RDMA, the NIC on a
// PCIe switch beside the GPU or on the CPU's root complex.
Topology pair_of_hosts(const std::string& attach) { return a100_pcie_hosts(2, 1, attach); }

// On AMD CPUs (NCCL charges Intel's host bridge 1.2 times a transfer's bandwidth in its search;
// the published A100 PCIe pair found 24 GB/s through its CPU).
ResultRecord all_reduce(const Topology& t, double bytes, std::vector<std::string> params) {
  params.push_back("cpu=amd");
  return predict(nccl_request(t, 2, bytes, params));
}

bool says(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(NcclGdrPath, ANicOnTheCpuIsReachedAcrossTheHostBridgeOnlyWhereTheGdrLevelAllows) {
  const Topology on_switch = pair_of_hosts("switch"), on_cpu = pair_of_hosts("cpu");
  const std::vector<std::size_t> gpus = {on_cpu.require("n0-gpu0", "test"), on_cpu.require("n1-gpu0", "test")};
  PlanOptions o;
  o.cpu_vendor = "intel";
  // NCCL's default GDR level stops short of the host bridge: through host memory, no GDR.
  const Plan by_default = make_plan(on_cpu, gpus, 1 << 30, o);
  EXPECT_FALSE(by_default.host.gdr);
  EXPECT_FALSE(by_default.gdr_through_cpu);
  o.gdr_level = kPathSys;  // NCCL_NET_GDR_LEVEL=SYS
  const Plan across = make_plan(on_cpu, gpus, 1 << 30, o);
  EXPECT_TRUE(across.host.gdr);
  EXPECT_TRUE(across.gdr_through_cpu);
  EXPECT_FALSE(make_plan(on_switch, gpus, 1 << 30, o).gdr_through_cpu);
  // LL128 is off where the NIC is farther than PXB (tuning.cc), on the switch it runs.
  bool ll128_on_cpu = false, ll128_on_switch = false;
  for (double bytes = 65536; bytes <= 64.0 * 1048576; bytes *= 2) {
    ll128_on_cpu = ll128_on_cpu || make_plan(on_cpu, gpus, bytes, o).protocol() == kLL128;
    ll128_on_switch = ll128_on_switch || make_plan(on_switch, gpus, bytes, o).protocol() == kLL128;
  }
  EXPECT_FALSE(ll128_on_cpu);
  EXPECT_TRUE(ll128_on_switch);
}

TEST(NcclGdrPath, GpuDirectAcrossTheHostBridgeMovesItsShareOfTheNic) {
  const Topology on_switch = pair_of_hosts("switch"), on_cpu = pair_of_hosts("cpu");
  const double big = 1024.0 * 1048576;
  auto busbw = [&](const Topology& t, const std::string& share) {
    return *all_reduce(t, big, {"gdr_level=SYS", "gdr_cpu_share=" + share}).busbw_GBps();
  };
  // Two ranks, one ring: busbw is what one NIC moves each way, at most its 25 GB/s (NCCL's 24).
  const double full = busbw(on_cpu, "1");
  EXPECT_NEAR(full, busbw(on_switch, "1"), 0.02 * full);
  EXPECT_GT(full, 20.0);
  for (const double share : {0.4, 0.6, 0.8}) {
    EXPECT_NEAR(busbw(on_cpu, format_fixed(share, 1)), 25.0 * share, 0.03 * 25.0 * share) << share;
  }
  EXPECT_NEAR(busbw(on_switch, "0.4"), full, 1e-9);  // no host bridge in the way: no share taken
  // The plan says why, and the range spans the share's plausible values (the slowest published
  // cluster's to none lost), named as an open fact where the share is the default.
  const ResultRecord r = all_reduce(on_cpu, big, {"gdr_level=SYS"});
  EXPECT_TRUE(says(r, "across the CPU's host bridge")) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(says(r, "gdr_cpu_share")) << ::testing::PrintToString(r.notes);
  const auto fact = std::find_if(r.open_facts.begin(), r.open_facts.end(),
                                 [](const OpenFact& f) { return f.name.find("through the host bridge") != std::string::npos; });
  ASSERT_NE(fact, r.open_facts.end());
  const auto range = r.busbw_range_GBps();
  ASSERT_TRUE(range.has_value());
  EXPECT_GE(range->second, full);
  const ResultRecord given = all_reduce(on_cpu, big, {"gdr_level=SYS", "gdr_cpu_share=0.8"});
  EXPECT_TRUE(std::none_of(given.open_facts.begin(), given.open_facts.end(),
                           [](const OpenFact& f) { return f.name.find("through the host bridge") != std::string::npos; }));
}

TEST(NcclGdrPath, WithoutGpuDirectTheBytesCrossTheGpusPcieToHostMemoryAtShmsShare) {
  // No GPUDirect RDMA: the connection's buffers sit in host memory, so the GPU that sends (and the
  // one that receives) a channel between hosts moves its bytes over its PCIe link at SHM's share of
  // the PCIe rate, the channels through it sharing it. Two hosts of one A100 PCIe (Gen4 x16: NCCL's
  // 24 GB/s): both channels cross through each host's one GPU, so busbw is 24 x shm_efficiency
  // where that is below the 12 GB/s NCCL's search finds through the CPU to the NIC.
  const Topology staged = a100_pcie_hosts(2, 1, "switch", false), direct = a100_pcie_hosts(2, 1, "switch", true);
  const double big = 1024.0 * 1048576;
  auto busbw = [&](const Topology& t, const std::string& share) {
    return *all_reduce(t, big, {"shm_efficiency=" + share}).busbw_GBps();
  };
  for (const double share : {0.2, 0.3, 0.4}) {
    EXPECT_NEAR(busbw(staged, format_fixed(share, 1)), 24.0 * share, 0.02 * 24.0 * share) << share;
  }
  EXPECT_NEAR(busbw(staged, "0.7"), 12.0, 0.02 * 12.0);  // NCCL's search binds first
  EXPECT_NEAR(busbw(direct, "0.2"), busbw(direct, "0.7"), 1e-9);  // GPUDirect: the NIC reads the GPU's memory
  EXPECT_GT(busbw(direct, "0.3"), busbw(staged, "0.3"));
  const ResultRecord r = all_reduce(staged, big, {"shm_efficiency=0.3"});
  EXPECT_TRUE(says(r, "no GPUDirect RDMA: a channel's bytes go through host memory")) << ::testing::PrintToString(r.notes);
}

TEST(NcclGdrPath, AVirtualMachineWithoutAtsIsAnOpenFactThatSendsGpuDirectThroughTheRootComplex) {
  // NCCL's troubleshooting guide: in a VM whose PCIe ATS is off, PCIe ACS sends peer-to-peer DMA
  // through the CPU's root complex, GPUDirect RDMA's too. Where nothing says whether the hosts are
  // such VMs it is an open fact: the plan with the NIC beside the GPU, planned again as if the
  // NIC were across the host bridge (gdr_cpu_share), the range over both.
  const Topology on_switch = pair_of_hosts("switch"), on_cpu = pair_of_hosts("cpu");
  const double big = 1024.0 * 1048576;
  auto fact = [](const ResultRecord& r) {
    return std::find_if(r.open_facts.begin(), r.open_facts.end(), [](const OpenFact& f) { return f.name == "virtual machine"; });
  };
  const ResultRecord open = all_reduce(on_switch, big, {"gdr_cpu_share=0.6"});
  const auto vm = fact(open);
  ASSERT_NE(vm, open.open_facts.end()) << ::testing::PrintToString(open.notes);
  EXPECT_EQ(vm->assumed, "no");
  ASSERT_EQ(vm->relative_time.size(), 1u);
  // Its other value is the plan of a NIC across the host bridge: the same ring at 0.6 of the NIC
  // (a pair's one ring, one NIC each way), from an independent path (the NIC on the CPU's root port).
  const double across = *all_reduce(on_cpu, big, {"gdr_level=SYS", "gdr_cpu_share=0.6"}).busbw_GBps();
  const double stated = *all_reduce(on_switch, big, {"gdr_cpu_share=0.6", "vm=on"}).busbw_GBps();
  EXPECT_NEAR(stated, across, 0.02 * across);
  EXPECT_NEAR(stated, 25.0 * 0.6, 0.03 * 25.0 * 0.6);
  EXPECT_NEAR(*open.busbw_GBps() / vm->relative_time.front().second, stated, 0.03 * stated);
  const auto range = open.busbw_range_GBps();
  ASSERT_TRUE(range.has_value());
  EXPECT_LE(range->first, stated * 1.001);
  EXPECT_TRUE(says(all_reduce(on_switch, big, {"vm=on"}), "through the CPU's root complex (a VM without PCIe ATS)"));
  // Stated either way, it is no longer open; where GPUDirect RDMA already crosses the host bridge
  // (or is off) a VM changes nothing and is not said.
  const ResultRecord bare = all_reduce(on_switch, big, {"vm=off"});
  EXPECT_EQ(fact(bare), bare.open_facts.end());
  const ResultRecord bridged = all_reduce(on_cpu, big, {"gdr_level=SYS"});
  EXPECT_EQ(fact(bridged), bridged.open_facts.end());
  const ResultRecord no_gdr = all_reduce(a100_pcie_hosts(2, 1, "switch", false), big, {});
  EXPECT_EQ(fact(no_gdr), no_gdr.open_facts.end()) << ::testing::PrintToString(no_gdr.notes);
  // With GPUDirect RDMA open too, the two are one question: the range takes the worse, not both.
  EXPECT_EQ(vm->group, "how the NICs reach GPU memory");
}

TEST(NcclGdrPath, TheHostsStateWhetherTheyAreVirtualMachinesAsTheUserWould) {
  // topology generate --vm (a fact on the hosts' root complexes): true plans as -p vm=on, false as
  // -p vm=off, and neither leaves the fact open; the user's -p overrides the hosts'.
  const double big = 1024.0 * 1048576;
  auto hosts = [](const std::string& vm) { return a100_pcie_hosts(2, 1, "switch", true, vm); };
  auto open = [](const ResultRecord& r) {
    return std::any_of(r.open_facts.begin(), r.open_facts.end(), [](const OpenFact& f) { return f.name == "virtual machine"; });
  };
  const Topology unstated = hosts("auto"), vm = hosts("true"), bare = hosts("false");
  const ResultRecord in_vm = all_reduce(vm, big, {"gdr_cpu_share=0.6"});
  const ResultRecord on_metal = all_reduce(bare, big, {"gdr_cpu_share=0.6"});
  EXPECT_FALSE(open(in_vm));
  EXPECT_FALSE(open(on_metal));
  EXPECT_TRUE(open(all_reduce(unstated, big, {"gdr_cpu_share=0.6"})));
  EXPECT_DOUBLE_EQ(*in_vm.busbw_GBps(), *all_reduce(unstated, big, {"gdr_cpu_share=0.6", "vm=on"}).busbw_GBps());
  EXPECT_DOUBLE_EQ(*on_metal.busbw_GBps(), *all_reduce(unstated, big, {"gdr_cpu_share=0.6", "vm=off"}).busbw_GBps());
  EXPECT_LT(*in_vm.busbw_GBps(), 0.9 * *on_metal.busbw_GBps());
  EXPECT_TRUE(says(in_vm, "through the CPU's root complex (a VM without PCIe ATS)")) << ::testing::PrintToString(in_vm.notes);
  EXPECT_DOUBLE_EQ(*all_reduce(vm, big, {"gdr_cpu_share=0.6", "vm=off"}).busbw_GBps(), *on_metal.busbw_GBps());
}
