// gradsync topology generate, end to end: the file it writes loads back as the cluster it
// describes; a bad value exits 2 with one message and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.h"
#include "models/topology/topology_io.h"

namespace fs = std::filesystem;

TEST(TopologyGenerateCli, WritesAClusterThatLoadsBack) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-generate-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "c.json").string();
  const auto r = run_cli({"topology", "generate", "--nodes", "16", "--gpus-per-node", "8", "--network", "fat-tree",
                          "--oversubscription", "2", "--nodes-per-leaf", "4", "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("128 GPUs"), std::string::npos) << r.out;
  const auto loaded = gradsync::models::load_topology_file(out);
  EXPECT_EQ(loaded.topology.gpus().size(), 128u);
  EXPECT_EQ(loaded.topology.name(), "16x8gpu-nvswitch-fat-tree-2to1");
  // Predictions run on it.
  const auto p = run_cli({"predict", "--topology", out, "--strategy", "ring", "--gpus", "128"});
  EXPECT_EQ(p.status, 0) << p.out;

  const std::string bad = (dir / "bad.json").string();
  const auto b = run_cli({"topology", "generate", "--nodes", "4", "--oversubscription", "0.5", "-o", bad});
  EXPECT_EQ(b.status, 2) << b.out;
  EXPECT_NE(b.out.find("--oversubscription 0.5: expected a ratio of at least 1"), std::string::npos) << b.out;
  EXPECT_FALSE(fs::exists(bad));
  const auto w = run_cli({"topology", "generate", "--network", "torus"});
  EXPECT_EQ(w.status, 2);
  EXPECT_NE(w.out.find("--network torus: expected single, fat-tree or rail"), std::string::npos) << w.out;
  fs::remove_all(dir);
}
