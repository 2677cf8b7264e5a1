// EFA adapters listed one by one (an AWS p5 host's 32): aws-ofi-nccl's RDMA protocol groups the
// adapters beside each GPU into one NCCL device and stripes each message over them, a rail each
// (nccl_ofi_topo.cpp's grouping, nccl_ofi_rdma.cpp's rails). Planned so, 32 adapters of 100 Gb/s
// cost what 8 NICs of 4 such ports do (the form the generator's --ports-per-nic gives), for every
// collective (the simulator's test: tests/sim/test_simulator.cpp), and the striped schedules
// still move every byte where it belongs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "models/executors/predict.h"
#include "models/schedule/symbolic.h"
#include "models/strategies/nccl/system.h"
#include "models/topology/cluster_generator.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace gradsync::models::nccl;
using namespace test_nccl_planner;

namespace {

ResultRecord efa_predict(const Topology& t, const std::string& collective, double bytes) {
  return predict(nccl_request(t, 16, bytes, {"collective=" + collective}));
}

bool efa_note(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST(NcclEfaRails, TheAdaptersBesideEachGpuAreOneDeviceOfTheirRails) {
  const ResultRecord r = efa_predict(stated_hosts(32, 1, 12.5, "efa"), "all_reduce", 256.0 * 1048576);
  EXPECT_TRUE(efa_note(r, "8 NICs (32 adapters as their rails, aws-ofi-nccl's) at 50.0 GB/s")) << ::testing::PrintToString(r.notes);
  // NCCL's own IB transport groups nothing: 32 NICs of 12.5 GB/s.
  const ResultRecord ib = efa_predict(stated_hosts(32, 1, 12.5, "infiniband", 1), "all_reduce", 256.0 * 1048576);
  EXPECT_TRUE(efa_note(ib, "32 NICs at 12.5 GB/s")) << ::testing::PrintToString(ib.notes);
}

TEST(NcclEfaRails, ThirtyTwoAdaptersCostWhatEightNicsOfFourPortsDo) {
  const Topology adapters = stated_hosts(32, 1, 12.5, "efa"), ported = stated_hosts(8, 4, 12.5, "efa");
  for (const char* collective : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "sendrecv"}) {
    for (const double bytes : {1048576.0, 256.0 * 1048576}) {
      const double a = *efa_predict(adapters, collective, bytes).busbw_GBps();
      const double p = *efa_predict(ported, collective, bytes).busbw_GBps();
      EXPECT_NEAR(a, p, 0.01 * p) << collective << " " << bytes;
    }
  }
  // Without the rails each transfer would cross one adapter: a quarter of the device.
  const double one_rail = *efa_predict(stated_hosts(8, 1, 12.5, "efa"), "all_reduce", 256.0 * 1048576).busbw_GBps();
  EXPECT_LT(one_rail, 0.5 * *efa_predict(adapters, "all_reduce", 256.0 * 1048576).busbw_GBps());
}

TEST(NcclEfaRails, AdaptersShareOutAmongTheGpusOfTheirSwitch) {
  // Two GPUs and four adapters under each switch: two devices of two rails (aws-ofi-nccl splits
  // a switch's adapters evenly among its GPUs); 16 devices of 25 GB/s as 16 NICs of 2 ports.
  const Topology two = stated_hosts(16, 1, 12.5, "efa", 2);
  const ResultRecord r = efa_predict(two, "all_reduce", 256.0 * 1048576);
  EXPECT_TRUE(efa_note(r, "8 NICs (16 adapters as their rails, aws-ofi-nccl's) at 25.0 GB/s")) << ::testing::PrintToString(r.notes);
  const double ported = *efa_predict(stated_hosts(8, 2, 12.5, "efa", 2), "all_reduce", 256.0 * 1048576).busbw_GBps();
  EXPECT_NEAR(*r.busbw_GBps(), ported, 0.01 * ported);
  // Three adapters for two GPUs: devices of 2 and 1 (the first groups take one more).
  const ResultRecord odd = efa_predict(stated_hosts(12, 1, 12.5, "efa", 2), "all_reduce", 256.0 * 1048576);
  EXPECT_TRUE(efa_note(odd, "8 NICs (12 adapters as their rails, aws-ofi-nccl's) at 12.5 GB/s")) << ::testing::PrintToString(odd.notes);
}

TEST(NcclEfaRails, StripedSchedulesMoveEveryByteWhereItBelongs) {
  const Topology adapters = stated_hosts(32, 1, 12.5, "efa");
  for (const char* collective : {"all_reduce", "all_gather", "reduce", "alltoall", "sendrecv"}) {
    for (const char* algorithm : {"auto", "Ring", "Tree", "NVLSTree"}) {
      if (std::string(algorithm) != "auto" && std::string(collective) != "all_reduce") continue;
      for (const double elements : {7.0, 1048576.0 + 3, 16.0 * 1048576}) {
        PredictRequest q = nccl_request(adapters, 16, 4 * elements, {"collective=" + std::string(collective), "algorithm=" + std::string(algorithm)});
        const BuiltSchedule b = build_schedule(q);
        const SymbolicResult s = check_schedule(b.schedule);
        EXPECT_TRUE(s.ok) << collective << " " << algorithm << " " << elements << ": " << s.message;
      }
    }
  }
}
