// Both directions of a PCIe peer-to-peer route at once: where no bidirectional figure of the
// GPUs was measured, a ring's prediction (which loads each route both ways) carries the duplex as
// an open fact, its other value 0.90 of each direction's rate alone (the least a published
// host's P2P pair measured); a measured bidirectional matrix closes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "models/executors/predict.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_form.h"
#include "models/topology/matrix_inference.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace test_nccl_planner;

namespace {

// Two GPUs under one PCIe switch, peer access on, 20 GB/s a way measured alone; `bidirectional`:
// the pair's both-ways figure, or none.
Topology duplex_pair(const std::string& bidirectional) {
  std::string json = R"({"name": "pix-pair", "gpus": ["gpu0", "gpu1"], "bandwidth_GBps": [[null, 20], [20, null]],
    "topo_classes": [["X", "PIX"], ["PIX", "X"]], "p2p_supported": [[true, true], [true, true]])";
  if (!bidirectional.empty()) json += R"(, "bidirectional_GBps": [[null, )" + bidirectional + "], [" + bidirectional + ", null]]";
  json += "}";
  return std::move(infer_topology(matrix_form_from_json(JsonView::parse(json, "pix-pair.json"))).topology);
}

const OpenFact* duplex_fact(const ResultRecord& r) {
  const auto it = std::find_if(r.open_facts.begin(), r.open_facts.end(),
                               [](const OpenFact& f) { return f.name == "both directions at once over PCIe peer to peer"; });
  return it == r.open_facts.end() ? nullptr : &*it;
}

}  // namespace

TEST(NcclDuplex, AnUnmeasuredPcieRingCarriesTheDuplexAsAnOpenFact) {
  const Topology t = duplex_pair("");
  const ResultRecord r = predict(nccl_request(t, 2, 1024.0 * 1048576, {}));
  ASSERT_TRUE(r.busbw_GBps());
  const OpenFact* f = duplex_fact(r);
  ASSERT_NE(f, nullptr) << ::testing::PrintToString(r.notes);
  EXPECT_EQ(f->assumed, "full duplex");
  // A 2-GPU ring at 1 GiB is its route's rate: each way at 0.90 of it, the time 1 / 0.90 of the
  // assumed (launches and latencies are under a thousandth of it).
  ASSERT_EQ(f->relative_time.size(), 1u);
  EXPECT_NEAR(f->relative_time.front().second, 1 / 0.90, 0.005);
  // The range reaches that far down, and the prediction itself stays at full duplex.
  ASSERT_TRUE(r.busbw_range_GBps());
  EXPECT_LE(r.busbw_range_GBps()->first, 0.9 * *r.busbw_GBps() * 1.001);
  EXPECT_NEAR(*r.busbw_GBps(), 20.0, 0.5);
}

TEST(NcclDuplex, AMeasuredBidirectionalFigureClosesIt) {
  // Full duplex measured (40 = 2 x 20): no open fact; the prediction as before.
  const Topology full = duplex_pair("40");
  const ResultRecord r = predict(nccl_request(full, 2, 1024.0 * 1048576, {}));
  EXPECT_EQ(duplex_fact(r), nullptr);
  EXPECT_NEAR(*r.busbw_GBps(), 20.0, 0.5);
  // Measured slower both ways at once (36 = 0.9 x 40): the links carry it, no fact either.
  const ResultRecord slow = predict(nccl_request(duplex_pair("36"), 2, 1024.0 * 1048576, {}));
  EXPECT_EQ(duplex_fact(slow), nullptr);
  EXPECT_LT(*slow.busbw_GBps(), 0.95 * *r.busbw_GBps());
}

TEST(NcclDuplex, NoFactWhereNoRingLoadsAPcieRouteBothWays) {
  // The same pair without peer access: SHM through host memory, no peer-to-peer route.
  std::string json = R"({"name": "pix-pair", "gpus": ["gpu0", "gpu1"], "bandwidth_GBps": [[null, 20], [20, null]],
    "topo_classes": [["X", "PIX"], ["PIX", "X"]], "p2p_supported": [[true, false], [false, true]]})";
  const Topology t = std::move(infer_topology(matrix_form_from_json(JsonView::parse(json, "pix-pair.json"))).topology);
  EXPECT_EQ(duplex_fact(predict(nccl_request(t, 2, 1024.0 * 1048576, {}))), nullptr);
}

TEST(NcclDuplex, AChainLoadsItsMiddleGpusLinksBothWays) {
  // Broadcast: NCCL's ring cut into a chain at the root. Two GPUs: one way only, so the fact
  // leaves the time as it is; three under one switch: the middle GPU's link carries the chain in
  // and out at once, each way at 0.90 under the fact's other value.
  auto fact_time = [](int gpus) {
    std::string rows;
    std::string classes, peers;
    for (int i = 0; i < gpus; ++i) {
      std::string r, c, p;
      for (int j = 0; j < gpus; ++j) {
        r += std::string(j ? ", " : "") + (i == j ? "null" : "20");
        c += std::string(j ? ", " : "") + (i == j ? "\"X\"" : "\"PIX\"");
        p += std::string(j ? ", " : "") + "true";
      }
      rows += std::string(i ? ", " : "") + "[" + r + "]";
      classes += std::string(i ? ", " : "") + "[" + c + "]";
      peers += std::string(i ? ", " : "") + "[" + p + "]";
    }
    std::string ids;
    for (int i = 0; i < gpus; ++i) ids += std::string(i ? ", " : "") + "\"gpu" + std::to_string(i) + "\"";
    const std::string json = R"({"name": "pix", "gpus": [)" + ids + R"(], "bandwidth_GBps": [)" + rows + R"(], "topo_classes": [)" + classes +
                             R"(], "p2p_supported": [)" + peers + "]}";
    const Topology t = std::move(infer_topology(matrix_form_from_json(JsonView::parse(json, "pix.json"))).topology);
    const ResultRecord r = predict(nccl_request(t, gpus, 1024.0 * 1048576, {"collective=broadcast"}));
    // A fact that moves nothing is left out of the record: the time as assumed.
    const OpenFact* f = duplex_fact(r);
    if (!f) return 1.0;
    return f->relative_time.size() == 1 ? f->relative_time.front().second : -1.0;
  };
  EXPECT_NEAR(fact_time(2), 1.0, 0.005);
  EXPECT_NEAR(fact_time(3), 1 / 0.90, 0.005);
}
