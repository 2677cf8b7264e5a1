// gradsync topology generate: a multi-node cluster from a few parameters, written in the
// graph form (models/topology/cluster_generator.h says what each parameter builds).
#include <iostream>
#include <map>
#include <memory>
#include <type_traits>
#include <variant>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "models/topology/cluster_generator.h"
#include "models/topology/node_cluster.h"
#include "models/support/error.h"
#include "models/support/format.h"
#include "models/support/json_input.h"
#include "models/topology/topology_io.h"
#include "models/support/units.h"

namespace gradsync::experiments::cli {

namespace {

struct GenerateOptions {
  models::ClusterSpec spec;
  std::map<std::string, std::string> words;  // word parameters as given (intra, network)
  std::string output, form = "graph";
  std::vector<std::string> node_files;  // --node: one node's nvidia-smi topo -m
  std::vector<std::string> nics;        // --nics: the node's NICs that form the network
};

// The parameters a node's nvidia-smi topo -m gives (topology generate --node).
const std::vector<std::string>& node_inside_keys() {
  static const std::vector<std::string> keys = {"gpus_per_node", "intra", "nvlink_GBps", "gpus_per_pcie_switch", "nics_per_node",
                                                "ports_per_nic"};
  return keys;
}

int run_generate(GenerateOptions o) {
  for (const models::ClusterParam& p : models::cluster_params()) {
    if (const auto* intra = std::get_if<models::IntraFabric models::ClusterSpec::*>(&p.field)) {
      o.spec.*(*intra) = models::intra_fabric_from(o.words.at(p.key));
    } else if (const auto* network = std::get_if<models::ClusterNetwork models::ClusterSpec::*>(&p.field)) {
      o.spec.*(*network) = models::cluster_network_from(o.words.at(p.key));
    } else if (const auto* text = std::get_if<std::string models::ClusterSpec::*>(&p.field)) {
      o.spec.*(*text) = o.words.at(p.key);
    }
  }
  if (!o.node_files.empty() && o.form == "generated") {
    throw models::InputError("--form generated with --node: the generated form holds parameters only, not a node's "
                             "nvidia-smi topo -m; expected --form graph");
  }
  std::vector<std::string> notes;
  const models::Topology t = [&] {
    if (o.node_files.empty()) return models::generate_cluster(o.spec);
    models::NodeCluster built = models::cluster_from_node(o.node_files, o.spec, o.nics);
    notes = std::move(built.notes);
    return std::move(built.topology);
  }();
  const bool to_stdout = o.output.empty() || o.output == "-";
  if (!to_stdout) check_output_path(o.output, "--output");
  if (o.form == "generated") {
    const std::string text = models::pretty_json(models::cluster_spec_to_json(o.spec)) + "\n";
    models::write_file_atomically(to_stdout ? "-" : o.output, text);
    if (!to_stdout) std::cout << "wrote " << o.output << ": " << t.name() << ", " << t.gpus().size() << " GPUs, built from its parameters when named\n";
    return 0;
  }
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
  for (const std::string& note : notes) report << "  " << note << "\n";
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
      "k x switches / NICs (--nic-attach cpu: on the root complex). --intra nvlink adds an NVLink between every pair\n"
      "of GPUs of a node, nvswitch a link from every GPU to the node's NVSwitch (default figures: H100 SXM, 18\n"
      "NVLink4 links x 25 GB/s per direction).\n"
      "--network single puts every NIC on one switch; fat-tree puts --nodes-per-leaf nodes' NICs on each leaf and\n"
      "joins the leaves through one core whose links carry a leaf's NIC bandwidth / --oversubscription (the spine\n"
      "layer drawn as one switch: routes are single paths); rail puts NIC k of every node on rail k's leaves.\n"
      "The facts NCCL plans with are written on the nodes: --gpu (each GPU's model), --cpu and --vm (on the root\n"
      "complexes), --nic-link-layer, --gpudirect, --nic-sharp and --adaptive-routing (on the NICs), --nvlink-sharp (on\n"
      "the NVSwitches); auto leaves a fact unstated, and the predictions that depend on it give the range over its\n"
      "values.\n"
      "--form generated writes the parameters instead of the graph: {\"name\", \"generate\": {\"nodes\": 16, ...}}, which\n"
      "every command reads as the cluster they build (the shipped clusters are such files).\n"
      "--node FILE builds each node as one machine's nvidia-smi topo -m shows it (NCCL's documented rates), its NICs\n"
      "where the NIC columns put them (those PIX or PXB to a GPU form the network, one rail each; --nics names them instead).\n"
      "Examples:\n"
      "  gradsync topology generate --nodes 16 --gpus-per-node 8 -o c128.json\n"
      "  gradsync topology generate --node topo.txt --nodes 4 --nic-GBps 50 --network rail -o c32.json\n"
      "  gradsync topology generate --nodes 128 --network fat-tree --oversubscription 2 --form generated \\\n"
      "      --name cluster-1024gpu-fat-tree-2to1 -o topologies/cluster-1024gpu-fat-tree-2to1.json");
  const models::ClusterSpec defaults;
  for (const models::ClusterParam& p : models::cluster_params()) {
    CLI::Option* opt = std::visit(
        [&](auto member) -> CLI::Option* {
          using T = std::decay_t<decltype(o->spec.*member)>;
          if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double>) {
            return gen->add_option(models::cluster_flag(p), o->spec.*member, p.help);
          } else {
            o->words[p.key] = models::cluster_param_text(defaults, p);
            return gen->add_option(models::cluster_flag(p), o->words[p.key], p.help);  // checked as it is read
          }
        },
        p.field);
    if (p.show_default) opt->default_str(models::cluster_param_text(defaults, p));
  }
  auto* node = gen->add_option("--node", o->node_files,
                                "one node's nvidia-smi topo -m output (with its NIC columns), repeated --nodes times: it gives "
                                "the node's GPUs, NVLinks, PCIe tree and where each NIC sits; the other flags give the network");
  node->type_name("FILE");
  for (const std::string& key : node_inside_keys()) {
    for (const models::ClusterParam& p : models::cluster_params()) {
      if (p.key == key) node->excludes(gen->get_option(models::cluster_flag(p)));
    }
  }
  gen->add_option("--nics", o->nics,
                  "with --node: the NICs that form the network, by their names in topo -m's NIC Legend (e.g. "
                  "mlx5_0,mlx5_1); default: those PIX or PXB to a GPU")
      ->delimiter(',')
      ->type_name("NAMES")
      ->needs(node);
  gen->add_option("--name", o->spec.name, "topology name (default from the parameters, e.g. 16x8gpu-nvswitch-rail)");
  gen->add_option("--form", o->form, "graph (every node and link written out) or generated (the parameters only)")
      ->check(CLI::IsMember({"graph", "generated"}))
      ->default_str("graph");
  gen->add_option("--output,-o", o->output, "write the topology JSON here (default: stdout)");
  return [o] { return run_generate(*o); };
}

}  // namespace gradsync::experiments::cli
