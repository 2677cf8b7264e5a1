// gradsync workload (issue 29): the presets, a model's layers, and a model from the parameter
// listing PyTorch prints, end to end — and the files it writes read back in predict.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "json_lines.h"

using nlohmann::json;

namespace {

std::string listing(const std::string& name) { return std::string(GRADSYNC_SOURCE) + "/tests/data/workloads/" + name; }

}  // namespace

TEST(WorkloadCli, ListNamesEveryPreset) {
  const auto r = run_cli(std::vector<std::string>{"workload", "list"});
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* name : {"source-a-ffnn-lm", "source-a-rnn-lm", "source-c-nmt", "resnet50", "bert-large", "gpt2-xl", "decoder-7b"}) {
    EXPECT_NE(r.out.find(std::string("\n") + name + " "), std::string::npos) << name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("25.6 M"), std::string::npos) << r.out;  // resnet50
}

TEST(WorkloadCli, ShowListsTheLayersAndWhenTheirGradientsAreReady) {
  const auto r = run_cli({"workload", "show", "resnet50"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("resnet50: 25.6 M params, 102.2 MB of gradients, 18 layers, 103.64 ms of compute per minibatch"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("layer4.2"), std::string::npos) << r.out;
  // The first layer's gradient is the last ready: after the whole backward pass (two thirds of 103.64 ms).
  EXPECT_NE(r.out.find("conv1        9536"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("69.10 ms\n"), std::string::npos) << r.out;

  // --format json is a workload file every command reads.
  const auto j = run_cli({"workload", "show", "gpt2-xl", "--format", "json"}, false);
  ASSERT_EQ(j.status, 0) << j.out;
  const std::string file = temp_file("gpt2-xl.json", j.out);
  EXPECT_EQ(json::parse(j.out)["layers"].size(), 100u);
  const auto q = run_cli({"predict", "-w", file, "--strategy", "ring", "-g", "2"});
  ASSERT_EQ(q.status, 0) << q.out;
  EXPECT_NE(q.out.find("workload gpt2-xl (1557.6 M params, 6.23 GB per sync, 561.07 ms compute per minibatch"), std::string::npos) << q.out;
}

TEST(WorkloadCli, FromPytorchWritesAWorkloadThatPredictReads) {
  const std::string out = temp_file("tiny.json", "");
  std::filesystem::remove(out);
  const auto r = run_cli({"workload", "from-pytorch", listing("tiny-gpt-params.txt"), "--tokens", "8192", "--device-tflops", "150", "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("read 9 layers, 46.5 M params (92.9 MB of gradients)"), std::string::npos) << r.out;
  const json doc = json::parse(read_file(out));
  EXPECT_EQ(doc["name"], "tiny-gpt-params");
  EXPECT_EQ(doc["dtype_bytes"], 2);
  EXPECT_EQ(doc["layers"][3]["name"], "transformer.h.0.attn.c_attn");
  // 768 x 2304 weights + 2304 biases, 2 FLOPs each per token forward, 8,192 tokens.
  EXPECT_DOUBLE_EQ(doc["layers"][3]["forward_flops"].get<double>(), 2.0 * (768 * 2304 + 2304) * 8192);
  const auto p = run_cli({"predict", "-w", out, "--strategy", "ring", "-g", "2"});
  ASSERT_EQ(p.status, 0) << p.out;
  EXPECT_NE(p.out.find("workload tiny-gpt-params (46.5 M params, 92.9 MB per sync"), std::string::npos) << p.out;
}

TEST(WorkloadCli, ABadListingIsOneMessageAndNoFile) {
  const std::string bad = temp_file("bad-params.txt", "a.weight torch.Size([3, 4])\nb.weight torch.Size([3 4])\n");
  const std::string out = temp_file("never.json", "");
  std::filesystem::remove(out);
  const auto r = run_cli({"workload", "from-pytorch", bad, "--compute-s", "0.1", "-o", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("gradsync: error: " + bad + ":2: a dimension \"3 4\" that is not a whole number"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));

  const auto none = run_cli({"workload", "from-pytorch", listing("tiny-gpt-params.txt"), "-o", out});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.out.find("give the compute one way: --compute-s"), std::string::npos) << none.out;
  EXPECT_FALSE(std::filesystem::exists(out));

  const auto rate = run_cli({"workload", "from-pytorch", listing("tiny-gpt-params.txt"), "--device-tflops", "100"});
  EXPECT_EQ(rate.status, 2);
  EXPECT_NE(rate.out.find("--device-tflops requires --tokens"), std::string::npos) << rate.out;

  const auto missing = run_cli({"workload", "show", "resnet-50"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("(did you mean 'resnet50'?)"), std::string::npos) << missing.out;
}

TEST(OverlapCli, PredictShowsTheExposedCommunicationBesideTheUnoverlappedIteration) {
  const auto r = run_cli({"predict", "-w", "resnet50", "--overlap", "--strategy", "ring,model_avg", "-g", "4"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("exposed  no overlap"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap: the gradient in buckets of 26.2 MB (the first 1.0 MB)"), std::string::npos) << r.out;

  const auto j = run_cli({"predict", "-w", "resnet50", "--overlap", "--bucket-cap", "50MiB", "--strategy", "ring,model_avg", "-g", "4",
                          "-f", "json"},
                         false);
  ASSERT_EQ(j.status, 0) << j.out;
  const auto records = json_lines(j.out);
  ASSERT_EQ(records.size(), 2u);
  const json& ring = records[0];
  ASSERT_TRUE(ring.contains("overlap")) << j.out;
  EXPECT_EQ(ring["overlap"]["bucket_cap_bytes"].get<double>(), 50.0 * 1024 * 1024);
  // Overlap hides communication: the iteration is the compute and what stays exposed.
  const double compute = ring["compute_s_per_minibatch"].get<double>();
  EXPECT_NEAR(ring["time_per_iteration_s"].get<double>(), compute + ring["overlap"]["exposed_s"].get<double>(), 1e-12);
  EXPECT_LT(ring["time_per_iteration_s"].get<double>(), ring["overlap"]["iteration_without_overlap_s"].get<double>());
  // Model averaging averages the models after the optimizer step: not overlapped, said in its notes.
  EXPECT_FALSE(records[1].contains("overlap"));
  EXPECT_NE(records[1]["notes"].dump().find("not overlapped: it averages the models after the optimizer step"), std::string::npos)
      << records[1].dump();
}

TEST(OverlapCli, OverlapNeedsAWorkloadAndItsFlagsNeedOverlap) {
  const auto size = run_cli({"predict", "--size", "64MiB", "--overlap", "--strategy", "ring"});
  EXPECT_EQ(size.status, 2);
  EXPECT_NE(size.out.find("--overlap needs a workload (its layers and their compute), not --size"), std::string::npos) << size.out;
  const auto cap = run_cli({"predict", "-w", "resnet50", "--bucket-cap", "10MiB", "--strategy", "ring"});
  EXPECT_EQ(cap.status, 2);
  EXPECT_NE(cap.out.find("--bucket-cap requires --overlap"), std::string::npos) << cap.out;
  const auto bad = run_cli({"predict", "-w", "resnet50", "--overlap", "--bucket-cap", "lots", "--strategy", "ring"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("--bucket-cap"), std::string::npos) << bad.out;
}

// recommend --overlap ranks by the overlapped step and picks the bucket size for the best:
// on the source-A machine ResNet-50's ring is a little faster with 5 MiB buckets than with
// DDP's 25 MiB (its first buckets start earlier behind the short backward pass).
TEST(OverlapCli, RecommendPicksTheBucketSize) {
  const auto r = run_cli({"recommend", "-t", "source-a-titanx-4gpu", "-w", "resnet50", "--overlap", "--exact-only", "--confirm", "1",
                          "--strategy", "ring,ps", "-g", "4"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Best: ring (buckets=5MiB) on 4 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Overlap: 9 buckets of 5 MiB synchronised beside the 69.10 ms backward pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("against 104.50 ms with 25 MiB"), std::string::npos) << r.out;
}

// An experiment file's "overlap" reaches every point of a sweep.
TEST(OverlapCli, ExperimentFilesCarryOverlap) {
  const std::string spec = temp_file("overlap-spec.json", R"({"topology": "source-a-titanx-4gpu", "workload": "resnet50", "gpus": [2, 4],
      "strategies": [{"name": "ring"}], "executors": ["analytic"], "overlap": {"bucket_cap_bytes": 10485760}})");
  const std::string out = temp_file("overlap-sweep.jsonl", "");
  std::filesystem::remove(out);
  const auto r = run_cli({"sweep", spec, "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  const auto records = json_lines(read_file(out));
  ASSERT_EQ(records.size(), 2u);
  for (const json& rec : records) {
    ASSERT_TRUE(rec.contains("overlap")) << rec.dump();
    EXPECT_EQ(rec["overlap"]["bucket_cap_bytes"].get<double>(), 10485760.0);
  }
  const std::string bad = temp_file("overlap-bad.json", R"({"topology": "source-a-titanx-4gpu", "sizes_bytes": [1048576],
      "strategies": [{"name": "ring"}], "overlap": true})");
  const auto b = run_cli({"sweep", bad, "-o", out});
  EXPECT_EQ(b.status, 2);
  EXPECT_NE(b.out.find(bad + ": /overlap: needs a workload (its layers and their compute), not sizes_bytes"), std::string::npos) << b.out;
  const std::string typo = temp_file("overlap-typo.json", R"({"topology": "source-a-titanx-4gpu", "workload": "resnet50",
      "strategies": [{"name": "ring"}], "overlap": {"bucket_cap": 5}})");
  const auto t = run_cli({"sweep", typo, "-o", out});
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.out.find("/overlap/bucket_cap: unknown key 'bucket_cap'; valid keys here: bucket_cap_bytes, first_bucket_bytes, slowdown"), std::string::npos) << t.out;
}

// A workload's convergence facts are shown with where they come from.
TEST(WorkloadCli, ShowGivesTheConvergenceFactsAndTheirSource) {
  const auto r = run_cli("workload show digits-mlp");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"convergence (measured by gradsync reproduce convergence", "target: test loss 0.5",
                           "noise scale 302 (243-376) samples",
                           "model_avg: synchronous SGD's samples x1 (0.947-1.06) on 2 workers, x1.05 (1-1.11) on 4, x1.33 (1.28-1.38) on 8 (T=8",
                           "bmuf: synchronous SGD's samples x0.729 (0.684-0.778) on 2 workers, x1.05 (1-1.11) on 4, not reached in 14080 samples on 8"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
  const auto none = run_cli("workload show gpt2-xl");
  ASSERT_EQ(none.status, 0) << none.out;
  EXPECT_EQ(none.out.find("convergence ("), std::string::npos) << none.out;
}
