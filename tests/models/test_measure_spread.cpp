// The measurement's spread (issue 15): matrix forms carry how much the repeated probes of a
// pair disagreed, and the inference reads a shortfall within that spread as noise, not as
// links that share both directions.
#include <gtest/gtest.h>

#include <string>

#include "models/error.h"
#include "models/json_input.h"
#include "models/matrix_form.h"
#include "models/matrix_inference.h"

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
