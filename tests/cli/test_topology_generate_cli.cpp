// gradsync topology generate, end to end: the file it writes loads back as the cluster it
// describes; a bad value exits 2 with one message and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli_runner.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/topology_io.h"

namespace fs = std::filesystem;

TEST(TopologyGenerateCli, WritesAClusterThatLoadsBack) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-generate-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
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

// --form generated writes the parameters only; every command reads that file as the cluster
// it builds, node for node and link for link the same as the graph form.
TEST(TopologyGenerateCli, GeneratedFormBuildsTheSameClusterAsTheGraphForm) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-generated-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
  fs::create_directories(dir);
  const std::vector<std::string> params = {"topology", "generate", "--nodes", "6", "--network", "fat-tree",
                                           "--nodes-per-leaf", "4", "--oversubscription", "2", "--nic-GBps", "25",
                                           "--intra", "nvlink", "--name", "six"};
  std::vector<std::string> graph = params, generated = params;
  graph.insert(graph.end(), {"-o", (dir / "graph.json").string()});
  generated.insert(generated.end(), {"--form", "generated", "-o", (dir / "gen.json").string()});
  ASSERT_EQ(run_cli(graph).status, 0);
  const auto g = run_cli(generated);
  ASSERT_EQ(g.status, 0) << g.out;
  const auto a = gradsync::models::load_topology_file((dir / "graph.json").string()).topology;
  const auto b = gradsync::models::load_topology_file((dir / "gen.json").string()).topology;
  EXPECT_EQ(b.name(), "six");
  ASSERT_EQ(a.node_count(), b.node_count());
  ASSERT_EQ(a.links().size(), b.links().size());
  for (std::size_t i = 0; i < a.links().size(); ++i) {
    EXPECT_EQ(a.node(a.links()[i].a).id, b.node(b.links()[i].a).id);
    EXPECT_EQ(a.node(a.links()[i].b).id, b.node(b.links()[i].b).id);
    EXPECT_DOUBLE_EQ(a.links()[i].bandwidth_Bps, b.links()[i].bandwidth_Bps);
    EXPECT_DOUBLE_EQ(a.links()[i].latency_s, b.links()[i].latency_s);
  }
  EXPECT_LT(fs::file_size(dir / "gen.json"), 512u);
  fs::remove_all(dir);
}

// What the shipped folder holds: small hand-written or measured files, and clusters in the
// generated form (nothing `topology generate` makes is committed whole).
TEST(TopologyGenerateCli, ShippedClustersAreGeneratedFromTheirParameters) {
  int generated = 0;
  for (const auto& entry : fs::directory_iterator(GRADSYNC_TOPOLOGIES)) {
    SCOPED_TRACE(entry.path().string());
    if (entry.is_directory()) {
      EXPECT_EQ(entry.path().filename(), "nodes");  // one node's tool outputs, for topology generate --node
      continue;
    }
    EXPECT_LT(fs::file_size(entry.path()), 64u * 1024) << "a topology file this large is generated: ship its parameters";
    const auto doc = gradsync::models::JsonView::load_file(entry.path().string());
    if (!gradsync::models::is_generated_form(doc)) continue;
    ++generated;
    const auto t = gradsync::models::load_topology_file(entry.path().string()).topology;
    EXPECT_EQ(t.name(), entry.path().stem().string());
  }
  EXPECT_EQ(generated, 3);
  const auto r = run_cli({"predict", "--topology", "cluster-8192gpu-nvswitch-rail", "--strategy", "ring", "--gpus", "8192",
                          "--size", "1GiB"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("cluster-8192gpu-nvswitch-rail (8192 GPUs)"), std::string::npos) << r.out;
}

// --node: a cluster from one node's nvidia-smi topo -m. On the HGX H100 node example, two nodes
// on one switch make the same cluster, for NCCL, as the parameters of that board do: 16 GPUs,
// an NVSwitch a node, each GPU's NIC on its PCIe switch (GPUDirect's PIX), one rail per NIC;
// the management NIC is left out, and NCCL's prediction matches the generated cluster's.
TEST(TopologyGenerateCli, ANodesTopoMatrixAndANodeCountGiveACluster) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-node-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
  fs::create_directories(dir);
  const std::string node = std::string(GRADSYNC_TOPOLOGIES) + "/nodes/hgx-h100-8gpu-8nic-topo-m.txt";
  const std::string out = (dir / "c16.json").string();
  const auto r = run_cli({"topology", "generate", "--node", node, "--nodes", "2", "--network", "single", "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("16 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("left out, as a management or storage NIC farther than PXB from every GPU: mlx5_8 (NODE)"),
            std::string::npos)
      << r.out;
  const auto t = gradsync::models::load_topology_file(out).topology;
  using gradsync::models::NodeKind;
  EXPECT_EQ(t.gpus().size(), 16u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nic).size(), 16u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nvswitch).size(), 2u);
  EXPECT_EQ(t.nodes_of_kind(NodeKind::cpu_socket).size(), 4u);
  // Each NIC shares a PCIe switch with its GPU: GPU, switch, NIC.
  const auto route = t.route(t.require("n1-gpu5", "test"), t.require("n1-mlx5_5", "test"));
  ASSERT_EQ(route.size(), 2u);
  EXPECT_EQ(t.node(t.links()[route[0].link].a).kind == NodeKind::pcie_switch ||
                t.node(t.links()[route[0].link].b).kind == NodeKind::pcie_switch,
            true);
  for (const auto& v : t.nodes()) {
    if (v.kind == NodeKind::gpu) {
      EXPECT_EQ(v.facts.gpu_model, "H100") << v.id;
    }
  }

  // NCCL on it plans as on the generated board with the same NICs.
  const std::string generated = (dir / "g16.json").string();
  ASSERT_EQ(run_cli({"topology", "generate", "--nodes", "2", "--network", "single", "-o", generated}).status, 0);
  const auto busbw = [](const std::string& text) {
    const auto line = text.substr(text.find("\nnccl "));
    std::istringstream in(line.substr(0, line.find('\n', 1)));
    std::vector<std::string> cells{std::istream_iterator<std::string>(in), {}};
    return std::stod(cells.back());
  };
  // (GPUDirect RDMA stated: the plan without it, an open fact, would run NCCL's search to its budget.)
  const auto a = run_cli({"predict", "--topology", out, "--strategy", "nccl", "--gpus", "16", "--size", "1GiB", "-x", "formula",
                          "--param", "gpudirect=on"});
  const auto b = run_cli({"predict", "--topology", generated, "--strategy", "nccl", "--gpus", "16", "--size", "1GiB", "-x", "formula",
                          "--param", "gpudirect=on"});
  ASSERT_EQ(a.status, 0) << a.out;
  ASSERT_EQ(b.status, 0) << b.out;
  EXPECT_NEAR(busbw(a.out), busbw(b.out), 0.02 * busbw(b.out)) << a.out << b.out;
  EXPECT_NE(a.out.find("NVLSTree"), std::string::npos) << a.out;

  // What the node gives, the flags may not; a table without NICs cannot be a cluster's node.
  const auto both = run_cli({"topology", "generate", "--node", node, "--gpus-per-node", "4"});
  EXPECT_EQ(both.status, 2) << both.out;
  const auto no_nic = run_cli({"topology", "generate", "--node",
                               std::string(GRADSYNC_TEST_FIXTURES) + "/topo-4gpu-2switch.txt", "-o",
                               (dir / "none.json").string()});
  EXPECT_EQ(no_nic.status, 2) << no_nic.out;
  EXPECT_NE(no_nic.out.find("no NIC column"), std::string::npos) << no_nic.out;
  EXPECT_FALSE(fs::exists(dir / "none.json"));
  // A NIC column's cell must be a PCIe class: the message names the file, the line and the cell.
  std::ifstream in(node);
  std::string text((std::istreambuf_iterator<char>(in)), {}), bad_node = (dir / "bad-topo.txt").string();
  text.replace(text.find("\tPIX") + 1, 3, "PIY");
  std::ofstream(bad_node) << text;
  const auto bad = run_cli({"topology", "generate", "--node", bad_node});
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad-topo.txt:8: \"PIY\" is not a PCIe class of GPU0 / NIC0"), std::string::npos) << bad.out;
  // The text parameters reach the cluster (--gpu was once read and dropped).
  const auto b200 = run_cli({"topology", "generate", "--nodes", "2", "--gpu", "B200", "-o", (dir / "b200.json").string()});
  EXPECT_NE(b200.out.find("2 nodes x 8 B200 GPUs"), std::string::npos) << b200.out;
  fs::remove_all(dir);
}

// --nics names the NICs that form the network instead of the PIX-or-PXB rule: one of the GPUs'
// NICs and the socket's (NODE) one, each a rail, the NODE one reached through the host bridge
// and socket. A name the NIC Legend lacks, or one given twice, is refused and writes nothing.
TEST(TopologyGenerateCli, NicsNamedByTheUserFormTheNetwork) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-nics-" + std::to_string(::getpid()));
  fs::remove_all(dir);  // named by the process id: not a dead process's of the same id
  fs::create_directories(dir);
  const std::string node = std::string(GRADSYNC_TOPOLOGIES) + "/nodes/hgx-h100-8gpu-8nic-topo-m.txt";
  const std::string out = (dir / "c16.json").string();
  const auto r = run_cli({"topology", "generate", "--node", node, "--nodes", "2", "--network", "single", "--nics", "mlx5_8,mlx5_0", "-o", out});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the network's NICs, one per rail: mlx5_0 (PIX), mlx5_8 (NODE) (named by --nics)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("left out, not named by --nics: mlx5_1 (PIX), "), std::string::npos) << r.out;
  const auto t = gradsync::models::load_topology_file(out).topology;
  using gradsync::models::NodeKind;
  EXPECT_EQ(t.nodes_of_kind(NodeKind::nic).size(), 4u);
  EXPECT_EQ(t.route(t.require("n1-gpu0", "test"), t.require("n1-mlx5_0", "test")).size(), 2u);  // its PCIe switch
  const auto far = t.route(t.require("n1-gpu0", "test"), t.require("n1-mlx5_8", "test"));
  EXPECT_GT(far.size(), 2u);
  bool through_socket = false;
  for (const auto& h : far) {
    for (std::size_t end : {t.links()[h.link].a, t.links()[h.link].b}) through_socket = through_socket || t.node(end).kind == NodeKind::cpu_socket;
  }
  EXPECT_TRUE(through_socket);
  const auto predicted = run_cli({"predict", "--topology", out, "--strategy", "nccl", "--size", "1GiB", "-x", "formula", "--param", "gpudirect=on"});
  EXPECT_EQ(predicted.status, 0) << predicted.out;

  for (const std::vector<std::string>& bad : {std::vector<std::string>{"mlx5_9"}, {"mlx5_0,mlx5_0"}}) {
    const std::string file = (dir / "bad.json").string();
    const auto refused = run_cli({"topology", "generate", "--node", node, "--nics", bad[0], "-o", file});
    EXPECT_EQ(refused.status, 2) << refused.out;
    EXPECT_FALSE(fs::exists(file));
  }
  const auto unknown = run_cli({"topology", "generate", "--node", node, "--nics", "mlx5_9"});
  EXPECT_NE(unknown.out.find("has no NIC named 'mlx5_9'"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("its NICs (nvidia-smi topo -m's NIC Legend): mlx5_0, mlx5_1"), std::string::npos) << unknown.out;
  EXPECT_EQ(run_cli({"topology", "generate", "--nodes", "2", "--nics", "mlx5_0"}).status, 2);  // needs --node
  fs::remove_all(dir);
}
