// The measurement's spread (issue 15): matrix forms carry how much the repeated probes of a
// pair disagreed, and the inference reads a shortfall within that spread as noise, not as
// links that share both directions.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "models/support/error.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_form.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/placement.h"
#include "models/executors/predict.h"
#include "models/strategies/strategy.h"

using namespace gradsync::models;

namespace {

// Two GPUs, 10 GB/s each way alone, 17 GB/s both ways at once (85 % of 20): what the
// bidirectional probe's spread says decides whether that is interference or noise.
MatrixForm two_gpus(std::optional<double> bidirectional_spread) {
  MatrixForm f;
  f.name = "pair";
  f.gpus = {"gpu0", "gpu1"};
  f.bandwidth_Bps = PairMatrix(2);
  f.bandwidth_Bps.at(0, 1) = 10e9;
  f.bandwidth_Bps.at(1, 0) = 10e9;
  f.bidirectional_Bps = PairMatrix(2);
  f.bidirectional_Bps->at(0, 1) = 17e9;
  f.bidirectional_Bps->at(1, 0) = 17e9;
  if (bidirectional_spread) {
    f.bidirectional_spread = PairMatrix(2);
    f.bidirectional_spread->at(0, 1) = *bidirectional_spread;
    f.bidirectional_spread->at(1, 0) = *bidirectional_spread;
  }
  return f;
}

double least_duplex_share(const Topology& t) {
  double least = 1;
  for (const Link& l : t.links()) least = std::min(least, l.full_duplex ? l.duplex_share : 0.5);
  return least;
}

}  // namespace

TEST(MeasureSpread, AShortfallWithinTheSpreadIsNoise) {
  // Steady probes (1 %): both directions at once keep 85 %: the links interfere.
  EXPECT_NEAR(least_duplex_share(infer_topology(two_gpus(0.01)).topology), 0.85, 1e-9);
  // No spread measured: the same.
  EXPECT_NEAR(least_duplex_share(infer_topology(two_gpus(std::nullopt)).topology), 0.85, 1e-9);
  // Probes that disagreed by 20 %: a 15 % shortfall says nothing; the links stay full duplex.
  EXPECT_EQ(least_duplex_share(infer_topology(two_gpus(0.20)).topology), 1.0);
}

TEST(MeasureSpread, RoundTripsThroughJsonAndRefusesBadValues) {
  MatrixForm f = two_gpus(0.125);
  f.bandwidth_spread = PairMatrix(2);
  f.bandwidth_spread->at(0, 1) = 0.03;
  const std::string text = matrix_form_to_json(f).dump();
  const MatrixForm back = matrix_form_from_json(JsonView::parse(text, "m.json"));
  ASSERT_TRUE(back.bidirectional_spread && back.bandwidth_spread);
  EXPECT_DOUBLE_EQ(*back.bidirectional_spread->at(1, 0), 0.125);
  EXPECT_DOUBLE_EQ(*back.bandwidth_spread->at(0, 1), 0.03);
  EXPECT_FALSE(back.bandwidth_spread->at(1, 0).has_value());
  std::string bad = text;
  bad.replace(bad.find("0.125"), 5, "-0.50");
  try {
    matrix_form_from_json(JsonView::parse(bad, "m.json"));
    FAIL() << "a negative spread was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a relative spread"), std::string::npos) << e.what();
  }
}

namespace {

// Two GPUs measured as host ranks on one core would be: each copies at 9 GB/s alone, 4.5
// GB/s a rank with both at work; 1-bit coding 0.8 GB/s alone, 0.5 at once.
MatrixForm shared_core() {
  MatrixForm f = two_gpus(0.01);
  f.device_local_Bps = std::vector<double>{9e9, 9e9};
  f.device_quantize_Bps = std::vector<double>{0.8e9, 0.8e9};
  f.ranks_at_once = MatrixForm::AtOnce{{9e9, 4.5e9}, {0.8e9, 0.5e9}};
  return f;
}

std::string resolved_reduce(const Topology& t, const std::string& strategy) {
  PredictRequest q;
  q.topology = &t;
  q.bytes = 1 << 20;
  q.strategy = &find_strategy(strategy);
  q.placement = first_gpus(t, 2);
  return build_schedule(q).resolved.at("reduce_GBps");
}

}  // namespace

TEST(MeasureColocation, RatesAtOnceRoundTripAndRefuseBadValues) {
  const std::string text = matrix_form_to_json(shared_core()).dump();
  const MatrixForm back = matrix_form_from_json(JsonView::parse(text, "m.json"));
  ASSERT_TRUE(back.ranks_at_once);
  EXPECT_EQ(back.ranks_at_once->copy_Bps, (std::vector<double>{9e9, 4.5e9}));
  EXPECT_EQ(back.ranks_at_once->quantize_Bps, (std::vector<double>{0.8e9, 0.5e9}));
  // More entries than GPUs, and quantize rates that do not pair with the copy rates.
  for (const auto& [from, to, expected] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"\"copy_GBps\":[9.0,4.5]", "\"copy_GBps\":[9.0,4.5,3.0]", "1 to 2 rates"},
           {"\"quantize_GBps\":[0.8,0.5]", "\"quantize_GBps\":[0.8]", "rates, as many as copy_GBps"}}) {
    std::string bad = text;
    ASSERT_NE(bad.find(from), std::string::npos) << text;
    bad.replace(bad.find(from), from.size(), to);
    try {
      matrix_form_from_json(JsonView::parse(bad, "m.json"));
      FAIL() << "accepted " << to;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ranks_at_once"), std::string::npos) << e.what();
    }
  }
}

TEST(MeasureColocation, ARunOfRanksSharingCoresGetsTheRateMeasuredAtOnce) {
  // Reductions at 2/3 of the copy rate: 6 GB/s alone; with the two ranks' 4.5 GB/s at once, 3.
  MatrixForm alone = shared_core();
  alone.ranks_at_once.reset();
  const auto t_alone = infer_topology(alone).topology;
  const auto t_shared = infer_topology(shared_core()).topology;
  EXPECT_EQ(resolved_reduce(t_alone, "ring"), "6");
  EXPECT_EQ(resolved_reduce(t_shared, "ring"), "3");
  // 1-bit SGD's coding slows by 0.8 / 0.5: the same bytes take longer with the rates at once.
  PredictRequest q;
  q.bytes = 1 << 22;
  q.strategy = &find_strategy("onebit");
  q.topology = &t_alone;
  q.placement = first_gpus(t_alone, 2);
  const double alone_s = predict(q).time_per_sync_s;
  q.topology = &t_shared;
  q.placement = first_gpus(t_shared, 2);
  EXPECT_GT(predict(q).time_per_sync_s, alone_s * 1.2);
}

TEST(MeasureSpread, FlowsABusyHostSlowedDoNotOverruleThePairs) {
  // Measured on the emulated source-A machine (two switches: rank0 rank1 | rank2 rank3)
  // with one of the two cores kept busy: the pairs alone are steady (spread <= 1 %), but in
  // the shift probes the busy host slowed rank2->rank3 to 64 % of its rate alone, which
  // reads as a shared uplink and suggested the groups {rank1 rank2} {rank0 rank3}. A tree
  // with those groups leaves four pairs 25 % off; the pairs win.
  const auto text = [] {
    std::ifstream in(std::string(GRADSYNC_SOURCE) + "/tests/data/measured/source-a-busy-core.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  ASSERT_FALSE(text.empty());
  const auto inferred = infer_topology(matrix_form_from_json(JsonView::parse(text, "source-a-busy-core.json")));
  EXPECT_EQ(inferred.report.unexplained_count(), 0u) << inferred.report.text();
  const auto& t = inferred.topology;
  const auto hops = [&](const char* a, const char* b) { return t.route(*t.find(a), *t.find(b)).size(); };
  EXPECT_LT(hops("rank0", "rank1"), hops("rank0", "rank2")) << inferred.report.text();
  EXPECT_LT(hops("rank2", "rank3"), hops("rank1", "rank2")) << inferred.report.text();
  const auto& notes = inferred.report.notes;
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("the pairs measured alone win") != std::string::npos;
  })) << inferred.report.text();
}

TEST(MeasureSpread, ALowerDuplexRatioLowersTheShareWithoutACliff) {
  // 74 % and 76 % of both directions alone: shares close to each other, neither half duplex
  // (a busy host's bidirectional probes land anywhere in that range from run to run).
  MatrixForm f = two_gpus(0.01);
  for (double ratio : {0.74, 0.76}) {
    f.bidirectional_Bps->at(0, 1) = f.bidirectional_Bps->at(1, 0) = ratio * 20e9;
    EXPECT_NEAR(least_duplex_share(infer_topology(f).topology), ratio, 1e-9) << ratio;
  }
  // About what one direction gets alone: half duplex.
  f.bidirectional_Bps->at(0, 1) = f.bidirectional_Bps->at(1, 0) = 10.5e9;
  EXPECT_EQ(least_duplex_share(infer_topology(f).topology), 0.5);
}
