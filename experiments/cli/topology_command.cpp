// gradsync topology generate: a multi-node cluster from a few parameters, written in the
// graph form (models/topology/cluster_generator.h says what each parameter builds).
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "models/topology/cluster_generator.h"
#include "models/support/format.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "models/support/units.h"

namespace gradsync::experiments::cli {

namespace {

struct GenerateOptions {
  models::ClusterSpec spec;
  std::string intra = "nvswitch", network = "rail", output;
};

int run_generate(GenerateOptions o) {
  o.spec.intra = models::intra_fabric_from(o.intra);
  o.spec.network = models::cluster_network_from(o.network);
  const models::Topology t = models::generate_cluster(o.spec);
  const bool to_stdout = o.output.empty() || o.output == "-";
  if (!to_stdout) check_output_path(o.output, "--output");
  // One node or link per line: diffable, and a few MB for 8,192 GPUs.
  const models::ordered_json doc = models::topology_to_graph_json(t);
  std::string text = "{\n";
  bool first_key = true;
  for (const auto& [key, value] : doc.items()) {
    text += std::string(first_key ? "" : ",\n") + "  " + models::ordered_json(key).dump() + ": ";
    first_key = false;
    if (value.is_array()) {
      text += "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) text += "    " + value[i].dump() + (i + 1 < value.size() ? ",\n" : "\n");
      text += "  ]";
    } else {
      text += value.dump();
    }
  }
  text += "\n}\n";
  models::write_file_atomically(to_stdout ? "-" : o.output, text);
  std::ostream& report = to_stdout ? std::cerr : std::cout;
  std::size_t switches = 0;
  for (const auto& n : t.nodes()) switches += models::forwards_traffic(n.kind) ? 1 : 0;
  report << "generated " << t.name() << ": " << t.gpus().size() << " GPUs, " << t.node_count() << " nodes (" << switches
         << " switches, NICs and root complexes), " << t.links().size() << " links\n"
         << t.description() << "\n";
  if (!to_stdout) report << "wrote " << o.output << " (" << models::format_bytes(static_cast<double>(text.size())) << ")\n";
  return 0;
}

}  // namespace

Action add_topology(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  auto* cmd = app.add_subcommand("topology", "Make topologies: `gradsync topology generate` builds a multi-node cluster");
  cmd->require_subcommand(1);
  auto* gen = cmd->add_subcommand("generate", "A multi-node GPU cluster from a few parameters, written as a graph-form topology JSON");
  gen->footer(
      "Inside a node, GPUs sit under PCIe switches under a root complex with host memory; NIC k sits on PCIe switch\n"
      "k x switches / NICs. --intra nvlink adds an NVLink between every pair of GPUs of a node, nvswitch a link from\n"
      "every GPU to the node's NVSwitch (default figures: H100 SXM, 18 NVLink4 links x 25 GB/s per direction).\n"
      "--network single puts every NIC on one switch; fat-tree puts --nodes-per-leaf nodes' NICs on each leaf and\n"
      "joins the leaves through one core whose links carry a leaf's NIC bandwidth / --oversubscription (the spine\n"
      "layer drawn as one switch: routes are single paths); rail puts NIC k of every node on rail k's leaves.\n"
      "Examples (the shipped ones):\n"
      "  gradsync topology generate --nodes 16 --gpus-per-node 8 -o topologies/cluster-128gpu-nvswitch-rail.json\n"
      "  gradsync topology generate --nodes 128 --network fat-tree --oversubscription 2 -o topologies/cluster-1024gpu-fat-tree-2to1.json\n"
      "  gradsync topology generate --nodes 1024 -o topologies/cluster-8192gpu-nvswitch-rail.json");
  gen->add_option("--nodes", o->spec.nodes, "machines in the cluster")->default_val(2);
  gen->add_option("--gpus-per-node", o->spec.gpus_per_node, "GPUs in each machine")->default_val(8);
  gen->add_option("--intra", o->intra, "the fabric between a node's GPUs: pcie | nvlink | nvswitch")->default_val("nvswitch");
  gen->add_option("--nvlink-GBps", o->spec.nvlink_GBps,
                  "per direction: each GPU pair's NVLink (nvlink) or each GPU's links to the NVSwitch (nvswitch); "
                  "default 450 (nvswitch) or 450 / (GPUs - 1) rounded down to whole 25 GB/s links (nvlink)");
  gen->add_option("--gpus-per-pcie-switch", o->spec.gpus_per_pcie_switch, "GPUs under each PCIe switch (with the NICs spread over the switches: a switch holding two NICs gives its GPUs two equal routes, of which the model takes one)")->default_val(1);
  gen->add_option("--pcie-GBps", o->spec.pcie_GBps, "each PCIe link, per direction (NCCL: Gen4 x16 24, Gen5 x16 48)")->default_val(48);
  gen->add_option("--nics-per-node", o->spec.nics_per_node, "network adapters per machine")->default_val(8);
  gen->add_option("--nic-GBps", o->spec.nic_GBps, "each NIC, per direction (400 Gb/s = 50)")->default_val(50);
  gen->add_option("--network", o->network, "how the NICs are joined: single | fat-tree | rail")->default_val("rail");
  gen->add_option("--oversubscription", o->spec.oversubscription, "fat-tree / rail: a leaf's NIC bandwidth over its uplink's (>= 1)")
      ->default_val(1);
  gen->add_option("--nodes-per-leaf", o->spec.nodes_per_leaf, "fat-tree / rail: machines per leaf switch")->default_val(32);
  gen->add_option("--pcie-latency-us", o->spec.pcie_latency_us, "latency of each PCIe link")->default_val(1);
  gen->add_option("--nvlink-latency-us", o->spec.nvlink_latency_us, "latency of each NVLink / NVSwitch link")->default_val(0.5);
  gen->add_option("--network-latency-us", o->spec.network_latency_us, "latency of each network link")->default_val(1);
  gen->add_option("--name", o->spec.name, "topology name (default from the parameters, e.g. 16x8gpu-nvswitch-rail)");
  gen->add_option("--output,-o", o->output, "write the topology JSON here (default: stdout)");
  return [o] { return run_generate(*o); };
}

}  // namespace gradsync::experiments::cli
