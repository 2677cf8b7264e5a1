#include <gtest/gtest.h>

#include "models/support/error.h"
#include "models/workload/workload.h"

using namespace gradsync::models;

TEST(Workload, SourceAPresets) {
  const Workload ffnn = *workload_preset("source-a-ffnn-lm");
  // 49,036 x 1,024 embedding + (4·1,024 x 1,024 + 1,024) hidden + (1,024 + 1) x 49,036 output
  EXPECT_EQ(ffnn.total_params(), 50'212'864 + 4'195'328 + 50'261'900);
  EXPECT_EQ(ffnn.gradient_bytes(), 4.0 * 104'670'092);
  // ceil(40,000 · 1,161,169 / 57,341 / 64)
  EXPECT_EQ(ffnn.minibatches_per_epoch, 12'657);
  // Table 4, 1 GPU with all-reduce (no communication): 216.07 s per epoch.
  EXPECT_NEAR(ffnn.compute_s() * ffnn.minibatches_per_epoch, 216.07, 1e-9);

  const Workload rnn = *workload_preset("source-a-rnn-lm");
  EXPECT_EQ(rnn.total_params(), 102'572'940);
  EXPECT_EQ(rnn.minibatches_per_epoch, ffnn.minibatches_per_epoch);
  // Same effective rate as the FFNN run: compute scales with the FLOPs.
  EXPECT_NEAR(rnn.compute_s() / ffnn.compute_s(), rnn.total_flops() / ffnn.total_flops(), 1e-12);

  const Workload nmt = *workload_preset("source-c-nmt");
  EXPECT_EQ(nmt.minibatches_per_epoch, 1'000'000 / 160);
  EXPECT_GT(nmt.total_params(), 50'000'000);
  for (const auto& l : nmt.layers) {
    if (l.rows) {
      EXPECT_EQ(l.params % *l.rows, 0) << l.name;
    }
  }
}

TEST(Workload, JsonRoundTrip) {
  const Workload ffnn = *workload_preset("source-a-ffnn-lm");
  const Workload back = workload_from_json(JsonView::wrap(workload_to_json(ffnn), "roundtrip"));
  EXPECT_EQ(back.total_params(), ffnn.total_params());
  EXPECT_EQ(back.minibatches_per_epoch, ffnn.minibatches_per_epoch);
  EXPECT_DOUBLE_EQ(back.compute_s(), ffnn.compute_s());
}

TEST(Workload, ComputeFromFlops) {
  const Workload w = workload_from_json(JsonView::parse(
      R"({"name": "w", "dtype_bytes": 2, "layers": [{"name": "a", "params": 10, "flops": 3e12},
          {"name": "b", "params": 6, "flops": 1e12}], "minibatches_per_epoch": 5, "device_TFLOPS": 8})",
      "w.json"));
  EXPECT_DOUBLE_EQ(w.compute_s(), 0.5);
  EXPECT_DOUBLE_EQ(w.gradient_bytes(), 32.0);
}

TEST(Workload, BadInput) {
  auto error_of = [](const std::string& text) {
    try {
      workload_from_json(JsonView::parse(text, "w.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": 1}],
      "minibatches_per_epoch": 1})"),
            "w.json: needs exactly one of \"compute_s_per_minibatch\" (a measured time) and \"device_TFLOPS\" (with "
            "per-layer \"flops\")");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 3, "layers": [{"name": "a", "params": 1}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1})"),
            "w.json: /dtype_bytes: got 3; expected 1, 2, 4 or 8 bytes per value");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "parms": 1}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1})"),
            "w.json: /layers/0/parms: unknown key 'parms' (did you mean 'params'?); valid keys here: name, params, "
            "flops, rows");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": -5}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1})"),
            "w.json: /layers/0/params: got -5; expected an integer of at least 0");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": 1}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": "fast"})"),
            "w.json: /compute_s_per_minibatch: got \"fast\"; expected a number, not a string");
  try {
    load_workload("source-a-fnn-lm");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload \"source-a-fnn-lm\": neither a preset (did you mean 'source-a-ffnn-lm'?) nor an existing file; "
              "presets: source-a-ffnn-lm, source-a-rnn-lm, source-c-nmt");
  }
}
