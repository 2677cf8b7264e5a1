#include <gtest/gtest.h>

#include <random>

#include "models/support/error.h"
#include "models/workload/pytorch_listing.h"
#include "models/workload/step.h"
#include "models/workload/convergence.h"
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
            "w.json: needs exactly one of \"compute_s_per_minibatch\" (a measured time), \"device_TFLOPS\" (with "
            "per-layer \"flops\") and every layer's measured \"forward_s\" and \"backward_s\"");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 3, "layers": [{"name": "a", "params": 1}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1})"),
            "w.json: /dtype_bytes: got 3; expected 1, 2, 4 or 8 bytes per value");
  EXPECT_EQ(error_of(R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "parms": 1}],
      "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1})"),
            "w.json: /layers/0/parms: unknown key 'parms' (did you mean 'params'?); valid keys here: name, params, "
            "dtype_bytes, flops, forward_flops, backward_flops, forward_s, backward_s, rows");
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
              "presets: source-a-ffnn-lm, source-a-rnn-lm, source-c-nmt, resnet50, bert-large, gpt2-xl, decoder-7b, digits-mlp");
  }
}

// S(B) = S_min (1 + B_noise / B) in samples: E(B) = E_min (1 + B / B_noise). Figures worked by
// hand: with B_noise = 100 and 1,000 samples at B0 = 100 (E_min = 500), E(400) = 500 x 5 = 2,500
// and E(25) = 500 x 1.25 = 625; with B_noise in [50, 200], E(400) lies in [2,000, 3,000]
// (E_min = 1,000 / 3 x 9 = 3,000 at 50; 1,000 / 1.5 x 3 = 2,000 at 200).
TEST(Convergence, SamplesToTargetFollowTheNoiseScale) {
  ConvergenceFacts f;
  f.global_batch = 100;
  f.samples_to_target = Estimate::exactly(1000);
  f.noise_scale = Estimate::exactly(100);
  EXPECT_DOUBLE_EQ(samples_to_target(f, 100).value, 1000);
  EXPECT_DOUBLE_EQ(samples_to_target(f, 400).value, 2500);
  EXPECT_DOUBLE_EQ(samples_to_target(f, 25).value, 625);
  EXPECT_DOUBLE_EQ(statistical_efficiency(f, 25, 400).value, 0.25);
  f.noise_scale = Estimate::between(50, 200);
  const Estimate e = samples_to_target(f, 400);
  EXPECT_DOUBLE_EQ(e.low, 2000);
  EXPECT_DOUBLE_EQ(e.high, 3000);
  EXPECT_DOUBLE_EQ(e.value, 2500);  // at the range's geometric middle, 100
  // Below the measured batch the range turns over: fewer samples where the noise scale is small.
  const Estimate below = samples_to_target(f, 25);
  EXPECT_LT(below.low, below.value);
  EXPECT_LT(below.value, below.high);
  f.samples_to_target = Estimate::between(900, 1100);
  EXPECT_DOUBLE_EQ(samples_to_target(f, 400).low, 1800);
  EXPECT_DOUBLE_EQ(samples_to_target(f, 400).high, 3300);
}

TEST(Convergence, FactsRoundTripAndBadInputIsNamed) {
  const std::string head = R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": 10}],
      "minibatches_per_epoch": 5, "compute_s_per_minibatch": 0.01)";
  const std::string facts = R"("convergence": {"target": "loss 1", "source": "measured", "global_batch": 64,
      "samples_to_target": [900, 1100], "noise_scale": 80,
      "strategies": {"model_avg": {"relative_samples": 1.5, "conditions": "lr x N", "params": {"T": "8"}}}})";
  const Workload w = workload_from_json(JsonView::parse(head + R"(, "samples_per_minibatch": 16, )" + facts + "}", "w.json"));
  ASSERT_TRUE(w.convergence);
  EXPECT_DOUBLE_EQ(w.convergence->samples_to_target.low, 900);
  EXPECT_DOUBLE_EQ(w.convergence->noise_scale.value, 80);
  EXPECT_EQ(w.convergence->strategies.at("model_avg").params.at("T"), "8");
  const Workload back = workload_from_json(JsonView::wrap(workload_to_json(w), "back"));
  EXPECT_EQ(convergence_to_json(*back.convergence).dump(), convergence_to_json(*w.convergence).dump());
  auto error_of = [&](const std::string& text) {
    try {
      workload_from_json(JsonView::parse(text, "w.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(head + ", " + facts + "}"),
            "w.json: /convergence: needs \"samples_per_minibatch\": the global batch is GPUs x that");
  auto with = [&](const std::string& convergence) {
    return head + R"(, "samples_per_minibatch": 16, "convergence": )" + convergence + "}";
  };
  EXPECT_EQ(error_of(with(R"({"target": "t", "source": "s", "global_batch": 64, "samples_to_target": [5, 2], "noise_scale": 1})")),
            "w.json: /convergence/samples_to_target/1: got 2; expected a high end at least the low end, 5");
  EXPECT_EQ(error_of(with(R"({"target": "t", "source": "s", "global_batch": 64, "samples_to_target": 5, "noise_scale": 1,
                             "strategies": {"model_avgg": {"relative_samples": 1, "conditions": "c"}}})")),
            "w.json: /convergence/strategies/model_avgg: \"model_avgg\" is not a strategy (did you mean 'model_avg'?)");
  EXPECT_EQ(error_of(with(R"({"target": "t", "source": "s", "global_batch": 64, "samples_to_target": 5, "noise_scale": 1,
                             "strategies": {"bmuf": {"relative_samples": 0, "conditions": "c"}}})")),
            "w.json: /convergence/strategies/bmuf/relative_samples: got 0; expected samples to target relative to synchronous "
            "SGD's between 1e-06 and 1e+06");
  EXPECT_EQ(error_of(with(R"({"target": "t", "source": "s", "global_batch": 64, "samples_to_target": 5})")),
            "w.json: /convergence is missing the required key 'noise_scale'");
}

// A strategy's multiple at each worker count measured: the count's own where given, the nearest
// one's otherwise (the larger of two as near), relative_samples where no count is given; read,
// written back, and bad counts named.
TEST(Convergence, AStrategysMultipleByWorkerCount) {
  StrategyConvergence c;
  c.relative_samples = Estimate::exactly(1.5);
  int at = -1;
  EXPECT_DOUBLE_EQ(c.at_workers(8, &at)->value, 1.5);
  EXPECT_EQ(at, 0);
  c.by_workers = {{2, Estimate::exactly(0.7)}, {4, Estimate::between(1.0, 1.2)}};
  EXPECT_DOUBLE_EQ(c.at_workers(2, &at)->value, 0.7);
  EXPECT_EQ(at, 2);
  EXPECT_DOUBLE_EQ(c.at_workers(4, &at)->high, 1.2);
  EXPECT_DOUBLE_EQ(c.at_workers(3, &at)->low, 1.0);  // as near to 2 as to 4: the larger
  EXPECT_EQ(at, 4);
  EXPECT_DOUBLE_EQ(c.at_workers(1, &at)->value, 0.7);
  EXPECT_EQ(at, 2);
  EXPECT_DOUBLE_EQ(c.at_workers(64, &at)->low, 1.0);
  EXPECT_EQ(at, 4);
  EXPECT_EQ(multiples_text(c), "x0.7 on 2 workers, x1.1 (1-1.2) on 4");
  // A count whose run never reached the target: nothing at it, or nearest it.
  c.not_reached = {{8, 42240}};
  EXPECT_EQ(c.at_workers(8, &at), nullptr);
  EXPECT_EQ(at, 8);
  EXPECT_EQ(c.at_workers(6, &at), nullptr);  // as near to 4 as to 8: the larger
  EXPECT_EQ(c.at_workers(64, &at), nullptr);
  EXPECT_DOUBLE_EQ(c.at_workers(5, &at)->high, 1.2);
  EXPECT_EQ(at, 4);
  EXPECT_EQ(multiples_text(c), "x0.7 on 2 workers, x1.1 (1-1.2) on 4, not reached in 42240 samples on 8");

  const std::string head = R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": 10}],
      "minibatches_per_epoch": 5, "compute_s_per_minibatch": 0.01, "samples_per_minibatch": 16, "convergence": {"target": "t",
      "source": "s", "global_batch": 64, "samples_to_target": 5, "noise_scale": 1, "strategies": {"bmuf": {"relative_samples": 1,
      "conditions": "c", "by_workers": )";
  const Workload w = workload_from_json(JsonView::parse(head + R"({"2": [0.6, 0.8], "16": 1.3}}}}})", "w.json"));
  const StrategyConvergence& b = w.convergence->strategies.at("bmuf");
  ASSERT_EQ(b.by_workers.size(), 2U);
  EXPECT_DOUBLE_EQ(b.by_workers.at(2).low, 0.6);
  EXPECT_DOUBLE_EQ(b.by_workers.at(16).value, 1.3);
  const Workload back = workload_from_json(JsonView::wrap(workload_to_json(w), "back"));
  EXPECT_EQ(back.convergence->strategies.at("bmuf").by_workers.size(), 2U);
  EXPECT_EQ(convergence_to_json(*back.convergence).dump(), convergence_to_json(*w.convergence).dump());
  auto error_of = [&](const std::string& by_workers) {
    try {
      workload_from_json(JsonView::parse(head + by_workers + "}}}}", "w.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const char* bad : {"0", "02", "-2", "+2", "2.0", "two", "1000001"}) {
    EXPECT_EQ(error_of(std::string(R"({")") + bad + R"(": 1})"),
              std::string("w.json: /convergence/strategies/bmuf/by_workers/") + bad + ": \"" + bad +
                  "\" is not a worker count; expected a whole number from 1 to 1000000");
  }
  EXPECT_EQ(error_of("{}"),
            "w.json: /convergence/strategies/bmuf/by_workers: an empty object; expected at least one worker count and its multiple");
  EXPECT_EQ(error_of("[1]"), "w.json: /convergence/strategies/bmuf/by_workers: got an array of 1; expected an object of worker counts "
                             "and the multiple at each ({\"2\": 0.98, \"4\": [1.0, 1.11]})");
  EXPECT_EQ(error_of(R"({"2": 0})"),
            "w.json: /convergence/strategies/bmuf/by_workers/2: got 0; expected samples to target relative to synchronous SGD's at "
            "that count between 1e-06 and 1e+06");
  // not_reached: read and written back; a count in both maps, or no samples, named.
  const Workload unreached = workload_from_json(JsonView::parse(head + R"({"2": 0.7}, "not_reached": {"8": 42240}}}}})", "w.json"));
  EXPECT_DOUBLE_EQ(unreached.convergence->strategies.at("bmuf").not_reached.at(8), 42240);
  EXPECT_EQ(convergence_to_json(*workload_from_json(JsonView::wrap(workload_to_json(unreached), "back")).convergence).dump(),
            convergence_to_json(*unreached.convergence).dump());
  EXPECT_EQ(error_of(R"({"8": 1.2}, "not_reached": {"8": 100})"),
            "w.json: /convergence/strategies/bmuf/not_reached/8: worker count 8 is in by_workers too; a run either reached the target "
            "or did not");
  EXPECT_EQ(error_of(R"({"2": 1}, "not_reached": {"8": 0})"),
            "w.json: /convergence/strategies/bmuf/not_reached/8: got 0; expected samples trained without reaching the target between 1 "
            "and 1e+18");
  EXPECT_EQ(error_of(R"({"2": 1}, "not_reached": {"x": 5})"),
            "w.json: /convergence/strategies/bmuf/not_reached/x: \"x\" is not a worker count; expected a whole number from 1 to 1000000");
}

// The modern presets, built layer by layer, against their published totals (torchvision,
// Hugging Face's model cards, the Llama 2 paper) — figures the builders do not contain.
TEST(Workload, ModernPresetsHaveTheirPublishedParameterCounts) {
  EXPECT_EQ(workload_preset("resnet50")->total_params(), 25'557'032);  // torchvision resnet50
  EXPECT_EQ(workload_preset("bert-large")->total_params(), 336'226'108);  // BertForPreTraining, bert-large-uncased
  EXPECT_EQ(workload_preset("gpt2-xl")->total_params(), 1'557'611'200);  // gpt2-xl
  EXPECT_EQ(workload_preset("decoder-7b")->total_params(), 6'738'415'616);  // Llama-2-7b
  EXPECT_DOUBLE_EQ(workload_preset("decoder-7b")->gradient_bytes(), 2.0 * 6'738'415'616);
  // torchvision's ResNet-50: 4.09 G multiply-adds per 224 x 224 image, forward.
  const Workload r = *workload_preset("resnet50");
  double forward = 0;
  for (const Layer& l : r.layers) forward += l.forward_flops;
  EXPECT_NEAR(forward / 2.0 / 256 / 1e9, 4.09, 0.005);
  // NVIDIA's measured 2,470 img/s at 256 images per GPU.
  EXPECT_NEAR(r.compute_s(), 256.0 / 2470, 1e-12);
}

TEST(Workload, LayerTimesAddUpToTheComputeAndFollowTheFlops) {
  for (const std::string& name : workload_preset_names()) {
    const Workload w = *workload_preset(name);
    const std::vector<LayerTimes> t = w.layer_times();
    ASSERT_EQ(t.size(), w.layers.size()) << name;
    double total = 0;
    for (const LayerTimes& x : t) total += x.forward_s + x.backward_s;
    EXPECT_NEAR(total, w.compute_s(), 1e-9 * w.compute_s()) << name;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (w.layers[i].forward_flops > 0) {
        EXPECT_NEAR(t[i].backward_s / t[i].forward_s, 2.0, 1e-9) << name << " " << w.layers[i].name;
      }
    }
  }
  // A measured total and no FLOPs: shared by parameters, a third forward.
  const Workload w = workload_from_json(JsonView::parse(
      R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "a", "params": 30}, {"name": "b", "params": 10}],
          "minibatches_per_epoch": 1, "compute_s_per_minibatch": 0.6})",
      "w.json"));
  const std::vector<LayerTimes> t = w.layer_times();
  EXPECT_DOUBLE_EQ(t[0].forward_s, 0.15);
  EXPECT_DOUBLE_EQ(t[0].backward_s, 0.3);
  EXPECT_DOUBLE_EQ(t[1].forward_s, 0.05);
  EXPECT_DOUBLE_EQ(t[1].backward_s, 0.1);
}

// Scaling keeps the layers: parameters and compute in proportion; with a compute factor of its
// own the compute follows that (a measured total, a device rate, measured layer times alike)
// while the bytes follow the size factor.
TEST(Workload, ScaledKeepsTheLayersAndCanSlowTheComputeOnItsOwn) {
  for (const std::string name : {"resnet50", "bert-large"}) {  // a measured total; FLOPs at a device rate
    SCOPED_TRACE(name);
    const Workload full = load_workload(name);
    const Workload small = scaled(full, 0.1);
    ASSERT_EQ(small.layers.size(), full.layers.size());
    EXPECT_NEAR(small.gradient_bytes() / full.gradient_bytes(), 0.1, 0.01);
    EXPECT_NEAR(small.compute_s() / full.compute_s(), 0.1, 1e-9);
    const Workload slow = scaled(full, 0.1, 50);
    EXPECT_EQ(slow.gradient_bytes(), small.gradient_bytes());
    EXPECT_DOUBLE_EQ(slow.total_flops(), small.total_flops());
    EXPECT_NEAR(slow.compute_s() / full.compute_s(), 50, 1e-9);
    const auto a = small.layer_times(), b = slow.layer_times();
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i].backward_s, 500 * a[i].backward_s, 1e-12) << i;
    EXPECT_NE(slow.name, small.name);
  }
  Workload measured;
  measured.name = "m";
  measured.layers = {{"a", 1000, 0, 0, std::nullopt, 0, 0.001, 0.002}, {"b", 10, 0, 0, std::nullopt, 0, 0.003, 0.006}};
  const Workload m = scaled(measured, 0.5, 2);
  EXPECT_EQ(m.layers[0].params, 500);
  EXPECT_EQ(m.layers[1].params, 5);
  EXPECT_DOUBLE_EQ(*m.layers[1].backward_s, 0.012);
  EXPECT_NEAR(m.compute_s(), 2 * measured.compute_s(), 1e-12);
}

TEST(Workload, MeasuredLayersAndTheirDtypesRoundTrip) {
  const Workload w = workload_from_json(JsonView::parse(
      R"({"name": "w", "dtype_bytes": 2, "layers": [
            {"name": "emb", "params": 8, "dtype_bytes": 4, "forward_s": 0.001, "backward_s": 0.002, "rows": 4},
            {"name": "mlp", "params": 6, "forward_flops": 1e9, "backward_flops": 3e9, "forward_s": 0.01, "backward_s": 0.03}],
          "minibatches_per_epoch": 7})",
      "w.json"));
  EXPECT_DOUBLE_EQ(w.compute_s(), 0.043);
  EXPECT_DOUBLE_EQ(w.gradient_bytes(), 8 * 4 + 6 * 2);
  EXPECT_EQ(w.gradient_elements(), 22u);  // 44 bytes as 2-byte elements
  EXPECT_DOUBLE_EQ(w.layers[1].flops(), 4e9);
  const Workload back = workload_from_json(JsonView::wrap(workload_to_json(w), "back.json"));
  ASSERT_EQ(back.layers.size(), 2u);
  EXPECT_EQ(back.layers[0].dtype_bytes, 4);
  EXPECT_EQ(back.layers[1].dtype_bytes, 0);
  EXPECT_EQ(back.layers[0].rows, 4);
  EXPECT_DOUBLE_EQ(*back.layers[1].backward_s, 0.03);
  EXPECT_DOUBLE_EQ(back.layers[1].backward_flops, 3e9);
  EXPECT_DOUBLE_EQ(back.compute_s(), w.compute_s());
}

TEST(Workload, BadLayerCosts) {
  auto error_of = [](const std::string& layers, const std::string& tail = R"(, "compute_s_per_minibatch": 1)") {
    try {
      workload_from_json(JsonView::parse(R"({"name": "w", "dtype_bytes": 4, "minibatches_per_epoch": 1, "layers": )" + layers + tail + "}",
                                         "w.json"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "flops": 3, "forward_flops": 1}])"),
            "w.json: /layers/0: give \"flops\" (forward + backward) or \"forward_flops\" and \"backward_flops\", not both");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "forward_flops": 1}])"), "w.json: /layers/0 is missing the required key 'backward_flops'");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "forward_s": 1}])", ""),
            "w.json: /layers/0: a measured layer needs both \"forward_s\" and \"backward_s\" (seconds per minibatch)");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "forward_s": 1, "backward_s": 2}, {"name": "b", "params": 1}])", ""),
            "w.json: /layers: gives \"forward_s\" and \"backward_s\" for 1 of 2 layers: measured times go on every layer or none");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "forward_s": 1, "backward_s": 2}])"),
            "w.json: needs exactly one of \"compute_s_per_minibatch\" (a measured time), \"device_TFLOPS\" (with per-layer "
            "\"flops\") and every layer's measured \"forward_s\" and \"backward_s\"");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "dtype_bytes": 3}])"), "w.json: /layers/0/dtype_bytes: got 3; expected 1, 2, 4 or 8 bytes per value");
  EXPECT_EQ(error_of(R"([{"name": "a", "params": 1, "backward_s": -1, "forward_s": 1}])", ""),
            "w.json: /layers/0/backward_s: got -1; expected seconds between 0 and 1e+06");
}

// --- the parameter listing PyTorch prints ---------------------------------------------------

ListingOptions measured() {
  ListingOptions o;
  o.compute_s = 1.0;
  return o;
}

ListingOptions dense(std::int64_t tokens, double TFLOPS) {
  ListingOptions o;
  o.tokens = tokens;
  o.device_TFLOPS = TFLOPS;
  return o;
}

std::string listing_error(const std::string& text, const ListingOptions& o = measured()) {
  try {
    workload_from_listing(text, "params.txt", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PytorchListing, ModulesBecomeLayersInTheListingsOrder) {
  const std::string text =
      "# printed by a script\n"
      "wte.weight torch.Size([100, 8]) torch.bfloat16 True\n"
      "\n"
      "h.0.attn.weight (8, 24) torch.bfloat16\n"
      "h.0.attn.bias torch.Size([24])\n"
      "h.0.mlp.weight: [8, 32], dtype=torch.float32, requires_grad=True\n"
      "h.0.frozen.weight torch.Size([8, 8]) torch.bfloat16 False\n"
      "h.0.attn.scale torch.Size([])\n";
  const Workload w = workload_from_listing(text, "dir/my-model.txt", dense(10, 1.0));
  EXPECT_EQ(w.name, "my-model");
  ASSERT_EQ(w.layers.size(), 4u);
  EXPECT_EQ(w.layers[0].name, "wte");
  EXPECT_EQ(w.layers[0].params, 800);
  EXPECT_EQ(w.layers[0].rows, 100);  // an embedding: a lookup, no FLOPs
  EXPECT_DOUBLE_EQ(w.layers[0].flops(), 0);
  EXPECT_EQ(w.layers[1].name, "h.0.attn");
  EXPECT_EQ(w.layers[1].params, 8 * 24 + 24);
  EXPECT_DOUBLE_EQ(w.layers[1].forward_flops, 2.0 * (8 * 24 + 24) * 10);
  EXPECT_DOUBLE_EQ(w.layers[1].backward_flops, 4.0 * (8 * 24 + 24) * 10);
  EXPECT_EQ(w.layers[2].name, "h.0.mlp");
  EXPECT_EQ(w.layers[2].dtype_bytes, 4);  // fp32 in a bf16 model
  EXPECT_EQ(w.layers[3].name, "h.0.attn#2");  // listed again after another module
  EXPECT_EQ(w.layers[3].params, 1);           // a scalar
  EXPECT_EQ(w.dtype_bytes, 2);                // most parameters print bf16
  EXPECT_DOUBLE_EQ(w.gradient_bytes(), 2.0 * (800 + 216 + 1) + 4.0 * 256);  // the frozen one has no gradient
}

// Found by the layer_listing fuzzer: a parameter with a dimension of 0 made a layer of 0
// parameters (with 199 embedding rows). It has no gradient, so it is left out like a frozen one.
TEST(PytorchListing, AnEmptyParameterIsLeftOut) {
  const Workload w = workload_from_listing(
      "wte.weight torch.Size([100, 8])\nempty.weight torch.Size([199, 0])\nh.0.weight torch.Size([8, 8])\n", "m.txt", dense(10, 1.0));
  ASSERT_EQ(w.layers.size(), 2u);
  EXPECT_EQ(w.layers[0].name, "wte");
  EXPECT_EQ(w.layers[1].name, "h.0");
  EXPECT_THROW(workload_from_listing("empty.weight torch.Size([199, 0])\n", "m.txt", dense(10, 1.0)), InputError);
}

TEST(PytorchListing, AMalformedLineIsNamedWithItsNumber) {
  EXPECT_EQ(listing_error("a.weight torch.Size([3, 4])\nb.weight torch.Size([3, x])\n"),
            "params.txt:2: a dimension \"x\" that is not a whole number; expected NAME SHAPE as PyTorch prints named_parameters(), "
            "e.g. `encoder.layer.0.attention.self.query.weight torch.Size([1024, 1024])`; got `b.weight torch.Size([3, x])`");
  EXPECT_NE(listing_error("a.weight\n").find("params.txt:1: no shape after the name"), std::string::npos);
  EXPECT_NE(listing_error("a.weight 3 4\n").find("params.txt:1: no shape"), std::string::npos);
  EXPECT_NE(listing_error("a.weight (3, 4) torch.int64\n").find("params.txt:1: a dtype torch.int64 that is not a floating-point type"),
            std::string::npos);
  EXPECT_NE(listing_error("a.weight (3, 4) grad\n").find("params.txt:1: \"grad\" beside the shape"), std::string::npos);
  EXPECT_EQ(listing_error("# nothing\n\n"),
            "params.txt: no trainable parameters listed; expected a line per parameter, e.g. `encoder.layer.0.attention.self.query.weight "
            "torch.Size([1024, 1024])`");
  EXPECT_NE(listing_error("conv.weight torch.Size([64, 3, 7, 7])\n", dense(4, 1.0))
                .find("params.txt:1: conv.weight is a convolution's weight (4 dimensions)"),
            std::string::npos);
  EXPECT_NE(listing_error("huge.weight (1000000000, 1000000000)\n").find("params.txt:1: huge.weight holds"), std::string::npos);
}

// --- the training step with buckets beside the backward pass ---------------------------------

namespace {

// Three layers of 4 MB (fp32), each 1 s forward and 2 s backward, measured.
Workload three_layers() {
  return workload_from_json(JsonView::parse(
      R"({"name": "w", "dtype_bytes": 4, "minibatches_per_epoch": 1, "layers": [
            {"name": "a", "params": 1000000, "forward_s": 1, "backward_s": 2},
            {"name": "b", "params": 1000000, "forward_s": 1, "backward_s": 2},
            {"name": "c", "params": 1000000, "forward_s": 1, "backward_s": 2}]})",
      "w.json"));
}

OverlapSettings caps(double first, double cap, double slowdown = 0) {
  OverlapSettings o;
  o.first_bucket_bytes = first;
  o.bucket_cap_bytes = cap;
  o.slowdown = slowdown;
  return o;
}

}  // namespace

TEST(Step, BucketsFillInBackwardOrderUntilTheirCap) {
  const Workload w = workload_from_json(JsonView::parse(
      R"({"name": "w", "dtype_bytes": 1, "minibatches_per_epoch": 1, "compute_s_per_minibatch": 1, "layers": [
            {"name": "l0", "params": 10}, {"name": "l1", "params": 10}, {"name": "l2", "params": 30},
            {"name": "l3", "params": 5}, {"name": "l4", "params": 5}]})",
      "w.json"));
  const std::vector<Bucket> b = buckets_of(w, caps(8, 20));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].layers, (std::vector<std::size_t>{4, 3}));  // 10 bytes: past the first bucket's 8
  EXPECT_EQ(b[1].layers, (std::vector<std::size_t>{2}));     // 30 alone
  EXPECT_EQ(b[2].layers, (std::vector<std::size_t>{1, 0}));  // 20: full
  ASSERT_EQ(b[2].gradient.layers.size(), 2u);
  EXPECT_EQ(b[2].gradient.layers[0].name, "l0");  // forward order within the bucket
  EXPECT_DOUBLE_EQ(b[2].gradient.gradient_bytes(), 20);

  // A layer of another dtype starts a new bucket, whose elements are its dtype's.
  Workload mixed = w;
  mixed.layers[1].dtype_bytes = 2;
  const std::vector<Bucket> m = buckets_of(mixed, caps(1000, 1000));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[1].layers, (std::vector<std::size_t>{1}));
  EXPECT_EQ(m[1].gradient.dtype_bytes, 2);
  EXPECT_EQ(m[1].gradient.gradient_elements(), 10u);
}

TEST(Step, EachBucketStartsWhenReadyAndTheStreamIsFree) {
  const Workload w = three_layers();
  const std::vector<Bucket> b = buckets_of(w, caps(1 << 20, 4e6));
  ASSERT_EQ(b.size(), 3u);  // a layer each
  // Fast synchronisations (1.5 s): each done before the next gradient; only the last is exposed.
  StepTime st = overlapped_step(w, b, {1.5, 1.5, 1.5}, caps(1 << 20, 4e6));
  EXPECT_DOUBLE_EQ(st.forward_s, 3);
  EXPECT_DOUBLE_EQ(st.backward_s, 6);
  EXPECT_DOUBLE_EQ(st.buckets[0].ready_s, 2);
  EXPECT_DOUBLE_EQ(st.buckets[1].start_s, 4);
  EXPECT_DOUBLE_EQ(st.buckets[2].end_s, 7.5);
  EXPECT_DOUBLE_EQ(st.iteration_s, 10.5);
  EXPECT_DOUBLE_EQ(st.exposed_s, 1.5);
  EXPECT_DOUBLE_EQ(st.sync_s, 4.5);
  // Slow ones (3 s) queue behind each other: 2-5, 5-8, 8-11.
  st = overlapped_step(w, b, {3, 3, 3}, caps(1 << 20, 4e6));
  EXPECT_DOUBLE_EQ(st.buckets[1].start_s, 5);
  EXPECT_DOUBLE_EQ(st.buckets[2].start_s, 8);
  EXPECT_DOUBLE_EQ(st.iteration_s, 14);
  EXPECT_DOUBLE_EQ(st.exposed_s, 5);
}

TEST(Step, CommunicationSlowsComputeByTheStatedShare) {
  const Workload w = three_layers();
  const OverlapSettings o = caps(1 << 20, 4e6, 1.0);  // compute at half speed while a bucket synchronises
  const StepTime st = overlapped_step(w, buckets_of(w, o), {1.5, 1.5, 1.5}, o);
  // c done at 2, its bucket 2-3.5; b: 0.75 s of work by 3.5 at half speed, 1.25 more: done at 4.75,
  // its bucket 4.75-6.25; a: 0.75 by 6.25, done at 7.5, its bucket 7.5-9.
  EXPECT_DOUBLE_EQ(st.buckets[1].ready_s, 4.75);
  EXPECT_DOUBLE_EQ(st.backward_s, 7.5);
  EXPECT_DOUBLE_EQ(st.iteration_s, 12);
  EXPECT_DOUBLE_EQ(st.exposed_s, 3);
}

// Random workloads and synchronisation times: the buckets partition the layers in backward
// order, each full but the last; each synchronisation starts when its bucket is ready and the
// one before is done (without slowdown), and the step is at least the compute and at least the
// forward pass plus every synchronisation.
TEST(Step, RandomStepsKeepTheTimelinesRules) {
  std::mt19937_64 rng(29);
  std::uniform_int_distribution<int> layers_of(1, 40);
  std::uniform_int_distribution<std::int64_t> params_of(0, 3'000'000);
  std::uniform_real_distribution<double> seconds(0, 0.01);
  for (int trial = 0; trial < 300; ++trial) {
    Workload w;
    w.name = "random";
    w.dtype_bytes = 4;
    const int n = layers_of(rng);
    for (int i = 0; i < n; ++i) {
      Layer l;
      l.name = "l" + std::to_string(i);
      l.params = params_of(rng);
      l.forward_s = seconds(rng);
      l.backward_s = seconds(rng);
      if (rng() % 5 == 0) l.dtype_bytes = 2;
      w.layers.push_back(l);
    }
    const OverlapSettings o = caps(1 << 20, std::uniform_real_distribution<double>(1e5, 3e7)(rng));
    const std::vector<Bucket> b = buckets_of(w, o);
    std::vector<std::size_t> order;
    for (std::size_t k = 0; k < b.size(); ++k) {
      for (std::size_t i : b[k].layers) order.push_back(i);
      const double cap = k == 0 ? o.first_bucket_bytes : o.bucket_cap_bytes;
      const bool dtype_ends_it = k + 1 < b.size() && w.layer_dtype_bytes(w.layers[b[k + 1].layers.front()]) !=
                                                         w.layer_dtype_bytes(w.layers[b[k].layers.back()]);
      if (k + 1 < b.size() && !dtype_ends_it) {
        EXPECT_GE(b[k].gradient.gradient_bytes(), cap) << trial;
      }
      double bytes = 0;
      for (std::size_t i : b[k].layers) bytes += w.layer_gradient_bytes(w.layers[i]);
      EXPECT_DOUBLE_EQ(b[k].gradient.gradient_bytes(), bytes) << trial;
    }
    ASSERT_EQ(order.size(), w.layers.size()) << trial;
    for (std::size_t j = 0; j < order.size(); ++j) EXPECT_EQ(order[j], w.layers.size() - 1 - j) << trial;

    std::vector<double> sync;
    for (std::size_t k = 0; k < b.size(); ++k) sync.push_back(seconds(rng));
    const StepTime st = overlapped_step(w, b, sync, o);
    double backward = 0, total_sync = 0;
    for (const Layer& l : w.layers) backward += *l.backward_s;
    for (double s : sync) total_sync += s;
    EXPECT_NEAR(st.backward_s, backward, 1e-12) << trial;
    double previous_end = 0;
    for (std::size_t k = 0; k < b.size(); ++k) {
      EXPECT_NEAR(st.buckets[k].start_s, std::max(st.buckets[k].ready_s, previous_end), 1e-12) << trial;
      EXPECT_NEAR(st.buckets[k].end_s, st.buckets[k].start_s + sync[k], 1e-12) << trial;
      previous_end = st.buckets[k].end_s;
    }
    EXPECT_NEAR(st.buckets.back().ready_s, backward, 1e-12) << trial;  // the first layer's bucket is ready last
    EXPECT_GE(st.iteration_s + 1e-12, w.compute_s()) << trial;
    EXPECT_GE(st.iteration_s + 1e-12, st.forward_s + total_sync) << trial;
    EXPECT_NEAR(st.iteration_s, st.forward_s + std::max(backward, previous_end), 1e-12) << trial;
  }
}
