// The nccl strategy (models/strategies/nccl.cpp): transports decided from peer access,
// topo -m classes and the P2P level; the protocol by size; the analytic and simulated
// schedule against its own closed form where nothing is shared; and the published
// machines' all-reduce tables within the issue's targets at sizes >= 1 MiB.
#include <gtest/gtest.h>

#include <string>

#include "experiments/compare.h"
#include "experiments/inputs.h"
#include "models/topology/placement.h"
#include "models/executors/executor.h"
#include "models/topology/importers/import.h"
#include "models/topology/matrix_inference.h"
#include "models/executors/predict.h"
#include "models/strategies/strategy.h"
#include "models/topology/uniform_topologies.h"

using namespace gradsync;
using namespace gradsync::models;

namespace {

std::string published(const std::string& name) { return std::string(GRADSYNC_PUBLISHED_DATA) + "/" + name; }

struct Machine {
  ImportResult imported;
  Topology topology;
};

Machine machine(const std::string& file) {
  ImportResult imported = import_tool_files({published(file)});
  InferredTopology inferred = infer_topology(imported.form);
  if (!inferred.topology.measured()) inferred.topology.attach_measurements(imported.form);
  return {std::move(imported), std::move(inferred.topology)};
}

ResultRecord run(const Topology& t, const std::string& executor, double bytes, std::vector<std::string> params = {}) {
  PredictRequest q;
  q.topology = &t;
  q.bytes = bytes;
  q.strategy = &find_strategy("nccl");
  q.params = SyncParams::parse(params);
  q.placement = first_gpus(t, static_cast<int>(t.gpus().size()));
  return find_executor(executor).evaluate(q, ExecutorSettings{});
}

std::string notes(const ResultRecord& r) {
  std::string all;
  for (const auto& n : r.notes) all += n + "\n";
  return all;
}

int count(const std::string& text, const std::string& word) {
  int n = 0;
  for (auto i = text.find(word); i != std::string::npos; i = text.find(word, i + 1)) ++n;
  return n;
}

}  // namespace

TEST(NcclModel, TransportFollowsPeerAccessAndTheP2pLevel) {
  const Machine off = machine("rtx4090-8gpu-dualepyc-p2poff.txt");
  const Machine on = machine("rtx4090-8gpu-dualepyc-p2pon.txt");
  // No peer access: every hop through host memory.
  EXPECT_EQ(count(notes(run(off.topology, "analytic", 1 << 20)), " SHM (SYS)"), 8) << notes(run(off.topology, "analytic", 1 << 20));
  // Peer access across SYS: P2P (NCCL's level is SYS unless the CPU is Intel or ARM).
  EXPECT_EQ(count(notes(run(on.topology, "analytic", 1 << 20)), " P2P (SYS)"), 8);
  EXPECT_EQ(count(notes(run(on.topology, "analytic", 1 << 20, {"cpu=intel"})), " SHM (SYS)"), 8);
  EXPECT_EQ(count(notes(run(on.topology, "analytic", 1 << 20, {"p2p_level=PXB"})), " SHM (SYS)"), 8);
  // The GPU model came from nccl-tests' device lines (the p2p test there names none).
  EXPECT_NE(notes(run(off.topology, "analytic", 1 << 20)).find("RTX 4090 is Gen4 x16"), std::string::npos);
  // SHM is faster than P2P nowhere on this machine at large sizes.
  EXPECT_LT(*run(off.topology, "analytic", 1 << 27).busbw_GBps(), *run(on.topology, "analytic", 1 << 27).busbw_GBps());
}

TEST(NcclModel, ProtocolFollowsTheSize) {
  const Machine m = machine("rtx2080ti-2gpu-pix.txt");
  EXPECT_EQ(run(m.topology, "analytic", 8).params.at("protocol"), "LL");
  EXPECT_EQ(run(m.topology, "analytic", 1 << 28).params.at("protocol"), "Simple");
  // Forcing a protocol is honoured, and LL is slower than Simple at large sizes.
  const double ll = run(m.topology, "analytic", 1 << 26, {"protocol=LL"}).time_per_sync_s;
  const double simple = run(m.topology, "analytic", 1 << 26, {"protocol=Simple"}).time_per_sync_s;
  EXPECT_GT(ll, 1.5 * simple);
  // LL128 is never chosen off NVLink, but forcing it is honoured as NCCL_PROTO=LL128 is.
  for (double bytes = 8; bytes <= 1 << 30; bytes *= 4) EXPECT_NE(run(m.topology, "analytic", bytes).params.at("protocol"), "LL128");
  EXPECT_EQ(run(m.topology, "analytic", 1 << 20, {"protocol=LL128"}).params.at("protocol"), "LL128");
}

TEST(NcclModel, ScheduleMatchesItsClosedFormWhereNothingIsShared) {
  // Four GPUs on one switch: the ring's flows share no link direction, so the analytic
  // walk and SimGrid must give the cost model's time.
  const Topology t = flat_topology(4, 10.0, 1.0);
  for (const double bytes : {64.0 * 1024, 8.0 * 1024 * 1024}) {
    for (const std::string proto : {"LL", "Simple"}) {
      const double formula = run(t, "formula", bytes, {"protocol=" + proto}).time_per_sync_s;
      const double analytic = run(t, "analytic", bytes, {"protocol=" + proto}).time_per_sync_s;
      const double sim = run(t, "sim", bytes, {"protocol=" + proto}).time_per_sync_s;
      EXPECT_NEAR(analytic / formula, 1.0, 1e-9) << proto << " " << bytes;
      EXPECT_NEAR(sim / formula, 1.0, 1e-3) << proto << " " << bytes;
    }
  }
}

TEST(NcclModel, TreeScheduleMatchesItsClosedFormWhereNothingIsShared) {
  // The tree on one node is a chain, pipelined in 16 chunks per hop (48 on 4 GPUs): sizes
  // that split evenly, so that every round moves the same chunk.
  const Topology t = flat_topology(4, 10.0, 1.0);
  for (const double bytes : {48.0 * 4 * 1024, 48.0 * 4 * 65536}) {
    for (const std::string proto : {"LL", "Simple"}) {
      const std::vector<std::string> params = {"algorithm=Tree", "protocol=" + proto};
      const double formula = run(t, "formula", bytes, params).time_per_sync_s;
      const double analytic = run(t, "analytic", bytes, params).time_per_sync_s;
      const double sim = run(t, "sim", bytes, params).time_per_sync_s;
      EXPECT_NEAR(analytic / formula, 1.0, 1e-9) << proto << " " << bytes;
      EXPECT_NEAR(sim / formula, 1.0, 1e-3) << proto << " " << bytes;
      EXPECT_EQ(run(t, "analytic", bytes, params).params.at("algorithm"), "Tree");
    }
  }
  // By hand, Simple at 12 MiB (NCCL's tree: half the bus bandwidth, 0.92 of it, and its size
  // correction, 0.8 at log2(12 MiB / 64) = 17): launch 3 us + base 8.4 us + 2 x 3 hops x
  // 4.0 us, then 2 S / (0.92 x 0.8 x 10 GB/s) stretched by the pipeline's fill (48 + 2) / 48.
  const double S = 48.0 * 4 * 65536;
  const double expected = (3 + 8.4 + 6 * 4.0) * 1e-6 + 2 * S / (0.92 * 0.8 * 10e9) * 50.0 / 48.0;
  EXPECT_NEAR(run(t, "formula", S, {"algorithm=Tree", "protocol=Simple"}).time_per_sync_s, expected, 1e-9);
}

TEST(NcclModel, AlgorithmByNcclsCostModel) {
  // On PCIe the ring always wins NCCL's model (the tree has half the bus bandwidth and the
  // same kind of latency): every published size stays on the ring.
  const Machine m = machine("rtx4090-8gpu-dualepyc-p2pon.txt");
  for (double bytes = 8; bytes <= 1 << 27; bytes *= 2) EXPECT_EQ(run(m.topology, "analytic", bytes).params.at("algorithm"), "Ring");
  // With Simple forced (NCCL_PROTO=Simple), small sizes go to the tree: 8 GPUs' 14 PCIe hop
  // latencies cost 4.0 us each on the tree, 5.7 us on the ring (67.4 vs 91.2 us with launch
  // and base latency), until the ring's full bus bandwidth wins.
  for (const double bytes : {8.0, 64.0 * 1024}) {
    const auto r = run(m.topology, "formula", bytes, {"protocol=Simple"});
    EXPECT_EQ(r.params.at("algorithm"), "Tree") << bytes;
  }
  EXPECT_NEAR(run(m.topology, "formula", 8, {"protocol=Simple"}).time_per_sync_s, (3 + 8.4 + 14 * 4.0) * 1e-6, 1e-8);
  EXPECT_NEAR(run(m.topology, "formula", 8, {"protocol=Simple", "algorithm=Ring"}).time_per_sync_s,
              (3 + 8.4 + 14 * 5.7) * 1e-6, 1e-8);
  for (const double bytes : {1.0 * (1 << 20), 64.0 * (1 << 20)}) {
    EXPECT_EQ(run(m.topology, "formula", bytes, {"protocol=Simple"}).params.at("algorithm"), "Ring") << bytes;
  }
}

TEST(NcclModel, NvlinkLabelsGiveNvClassesAndChannels) {
  // topologies/ label NVLink pairs "nvlink x1" / "nvlink x2": NCCL's NV1 / NV2, two rings per
  // NVLink (doubled), LL128 allowed on a ring that is NVLink end to end.
  const auto dgx = experiments::load_topology_arg("dgx1-v100-hybrid-cube-mesh");
  const ResultRecord r = run(dgx.topology, "analytic", 1 << 20);
  EXPECT_EQ(count(notes(r), " P2P (NV2)"), 8) << notes(r);
  EXPECT_EQ(r.params.at("channels"), "4");
  EXPECT_EQ(r.params.at("protocol"), "LL128");
}

TEST(NcclModel, StagedCopiesDoNotMakeLinksHalfDuplex) {
  // The 2080 Ti pair has no peer access: its bidirectional 6.1 GB/s is the driver's
  // staging, not the links', so no link loses either direction.
  const Machine m = machine("rtx2080ti-2gpu-pix.txt");
  for (const Link& l : m.topology.links()) {
    EXPECT_TRUE(l.full_duplex);
    EXPECT_EQ(l.duplex_share, 1.0);
  }
}

TEST(NcclModel, PublishedMachinesWithinTheIssueTargetsAtLargeSizes) {
  for (const std::string file : {"rtx2080ti-2gpu-pix.txt", "rtx4090-8gpu-dualepyc-p2poff.txt",
                                 "rtx4090-8gpu-dualepyc-p2pon.txt"}) {
    const Machine m = machine(file);
    experiments::CompareOptions options;
    options.executors = {"analytic"};
    const auto runs = experiments::compare_runs(m.topology, m.imported.nccl_tests, options);
    const auto& first = runs.front();  // the all-reduce table comes first in each file
    ASSERT_TRUE(first.skipped.empty()) << file;
    const auto large = experiments::summarize(first, "analytic", experiments::kLargeFrom, 1e18);
    ASSERT_TRUE(large) << file;
    EXPECT_LE(large->median_abs, 0.10) << file;
    EXPECT_LE(large->max_abs, 0.25) << file;
  }
}

TEST(NcclModel, SourceAMachineP2pOrShmAcrossItsSwitches) {
  // Source A's 4 x TITAN X: 5.96 GB/s within a PCIe switch, 4.46 GB/s across (the CPU side),
  // host<->device taken as 4.46 GB/s. Worked out by hand from NCCL's constants: launch 3 us,
  // Simple's base latency 8.4 us and 5.7 us per PCIe hop, 2(N-1) steps of S/N.
  const auto loaded = experiments::load_topology_arg("source-a-titanx-4gpu");
  const Topology& t = loaded.topology;
  const double S = 100e6;
  auto time = [&](std::vector<std::string> ranks, std::vector<std::string> params, std::string* notes_out) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = S;
    q.strategy = &find_strategy("nccl");
    q.params = SyncParams::parse(params);
    q.placement = named_gpus(t, ranks, "test");
    const ResultRecord r = find_executor("analytic").evaluate(q, ExecutorSettings{});
    if (notes_out) *notes_out = notes(r);
    EXPECT_EQ(r.params.at("protocol"), "Simple");
    return r.time_per_sync_s;
  };
  // 2 GPUs across the switches, P2P through the CPU: S over the pair's 4.46 GB/s.
  std::string n2;
  const double two = time({"gpu0", "gpu2"}, {"p2p_level=SYS"}, &n2);
  EXPECT_NEAR(two, (3 + 8.4 + 2 * 5.7) * 1e-6 + S / 4.46e9, 1e-9) << n2;
  EXPECT_EQ(count(n2, " P2P (SYS)"), 2) << n2;
  // 4 GPUs, SHM across (P2P stops at PXB): the two cross hops run at 0.66 x 4.46 GB/s shared
  // by the two GPUs behind each switch; 1.5 S over that.
  std::string n4;
  const double four = time({"gpu0", "gpu1", "gpu2", "gpu3"}, {"p2p_level=PXB"}, &n4);
  EXPECT_NEAR(four, (3 + 8.4 + 6 * 5.7) * 1e-6 + 1.5 * S / (0.66 * 4.46e9 / 2), 1e-9) << n4;
  EXPECT_EQ(count(n4, " SHM (SYS)"), 2) << n4;
  EXPECT_EQ(count(n4, " P2P (PIX)"), 2) << n4;
}
