// gradsync import: real tool outputs (p2pBandwidthLatencyTest, nvbandwidth,
// nvidia-smi topo -m) -> a matrix-form topology JSON, with the inferred switch tree and
// how well it reproduces every measured pair.
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "experiments/cli/commands.h"
#include "experiments/cli/output.h"
#include "models/support/error.h"
#include "models/topology/importers/import.h"
#include "models/support/json_input.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/topology_io.h"

namespace gradsync::experiments::cli {

namespace {

struct ImportOptions {
  std::vector<std::string> files;
  std::string output;
  std::string name;
  std::string p2p = "enabled";
  std::string measured;  // nccl-tests rows as records of the measured executor
  bool graph = false;
  // Nominal figures for nvidia-smi topo -m alone (models::ImportOptions checks their values).
  std::string gpu_model, pcie, cpu;
  std::optional<int> pcie_width;
};

// A matrix-form topology JSON (e.g. from gradsync-run measure): show what gradsync infers from it.
int show_matrix_form(const std::string& path, const ImportOptions& o) {
  if (!o.graph && !o.output.empty() && o.output != "-") {
    throw models::InputError("-o " + o.output + ": " + path + " is already a topology JSON, which import does not rewrite; "
                             "expected --graph to write the graph form gradsync infers from it");
  }
  if (!o.measured.empty()) {
    throw models::InputError("--measured " + o.measured + ": " + path + " is a topology JSON, not a tool output with "
                             "nccl-tests runs; expected the nccl-tests log");
  }
  const auto loaded = models::load_topology_file(path);
  if (o.graph) models::write_file_atomically(o.output.empty() ? "-" : o.output, models::pretty_json(models::topology_to_graph_json(loaded.topology)));
  std::ostream& report = (o.graph && (o.output.empty() || o.output == "-")) ? std::cerr : std::cout;
  report << "inferred topology of " << path << ":\n" << models::describe_links(loaded.topology) << "\n";
  if (loaded.inference) report << loaded.inference->text();
  return 0;
}

int run_import(const ImportOptions& o) {
  if (o.files.size() == 1) {
    std::ifstream in(o.files[0]);
    char first = 0;
    while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
    }
    if (first == '{') return show_matrix_form(o.files[0], o);
  }
  models::ImportOptions options;
  options.name = o.name;
  options.p2p_enabled = o.p2p == "enabled";
  options.gpu_model = o.gpu_model;
  options.pcie = o.pcie;
  options.pcie_width = o.pcie_width;
  options.cpu = o.cpu;
  if (!o.measured.empty()) check_output_path(o.measured, "--measured");
  const models::ImportResult imported = models::import_tool_files(o.files, options);
  const models::InferredTopology inferred = models::infer_topology(imported.form);

  const models::ordered_json doc =
      o.graph ? models::topology_to_graph_json(inferred.topology) : models::matrix_form_to_json(imported.form);
  const std::string text = models::pretty_json(doc);
  const bool to_stdout = o.output.empty() || o.output == "-";
  models::write_file_atomically(to_stdout ? "-" : o.output, text);

  // The report goes to stderr when the JSON went to stdout, so that `> file` stays clean.
  std::ostream& report = to_stdout ? std::cerr : std::cout;
  report << "imported " << imported.form.gpus.size() << " GPUs from " << models::join(imported.tools_found, " + ") << "\n";
  for (const auto& n : imported.notes) report << "note: " << n << "\n";
  report << "\ninferred topology:\n" << models::describe_links(inferred.topology) << "\n" << inferred.report.text();
  if (!to_stdout) report << "wrote " << (o.graph ? "graph" : "matrix") << "-form topology to " << o.output << "\n";
  if (!o.measured.empty()) {
    std::vector<models::ResultRecord> records;
    for (const auto& run : imported.nccl_tests) {
      auto rows = models::measured_records(run, imported.form.name);
      records.insert(records.end(), rows.begin(), rows.end());
    }
    if (records.empty()) throw models::InputError(models::join(o.files) + ": no nccl-tests output; --measured writes its rows");
    models::write_file_atomically(o.measured, records_text(records, choose_format("", o.measured)));
    report << "wrote " << records.size() << " measured records (" << imported.nccl_tests.size() << " nccl-tests runs) to "
           << o.measured << "\n";
  }
  return 0;
}

}  // namespace

Action add_import(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand(
      "import", "Turn measurement tool outputs into a topology JSON: " + models::join(models::supported_tools(), ", "));
  cmd->footer(
      "Give one or more files holding the tools' printed output (several tools may share a file). The topology is\n"
      "written in matrix form (the measured figures, which gradsync turns into a switch tree when it loads them),\n"
      "or with --graph as the inferred graph. The report lists each measured pair against the inferred tree.\n"
      "Examples:\n"
      "  gradsync import p2p.txt topo.txt -o topologies/mybox.json\n"
      "  gradsync import nvbandwidth.txt --graph > mybox-graph.json\n"
      "nccl-tests output (*_perf) in the files is read too: not for the links, but as measured collective times\n"
      "(--measured FILE writes them as result records; gradsync compare checks predictions against them).\n"
      "  gradsync import tests/data/published/rtx4090-8gpu-dualepyc-p2pon.txt -o box.json --measured box-nccl.jsonl\n"
      "nvidia-smi topo -m alone gives a NOMINAL topology: the classes' structure (PIX: one PCIe switch, PXB: switches\n"
      "under a switch, PHB: one host bridge, NODE: one CPU, SYS: across CPU sockets, NV#: # NVLinks) with NCCL's\n"
      "documented rates: each GPU's PCIe link from --pcie/--pcie-width, else its model's (--gpu-model, else the\n"
      "nccl-tests device lines), else Gen4 x16; the inter-socket link by --cpu (default AMD's). Its name ends in\n"
      "-nominal and the report says which figures were assumed.\n"
      "  gradsync import topo.txt --gpu-model \"RTX 4090\" --cpu intel -o mybox-nominal.json");
  cmd->add_option("files", o->files, "tool output files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--output,-o", o->output, "write the topology JSON here (default: stdout)");
  cmd->add_option("--name", o->name, "topology name (default: the part the files' names share, e.g. 4gpu-2switch; else the first file's name)");
  cmd->add_option("--p2p", o->p2p, "p2pBandwidthLatencyTest: use the P2P=enabled or P2P=disabled matrices")
      ->check(CLI::IsMember({"enabled", "disabled"}))
      ->default_val("enabled");
  cmd->add_option("--gpu-model", o->gpu_model,
                  "the GPUs' model (\"RTX 4090\", \"A100\", ...; default: the device names in the files): its PCIe "
                  "generation and width and NVLink rate set nominal figures, and models read it");
  cmd->add_option("--pcie", o->pcie, "nominal figures: the GPUs' PCIe generation, gen3|gen4|gen5|gen6 (default: the GPU model's)");
  cmd->add_option("--pcie-width", o->pcie_width, "nominal figures: lanes of each GPU's PCIe link (default: the GPU model's)");
  cmd->add_option("--cpu", o->cpu, "nominal figures: amd|intel|arm, whose inter-socket link SYS pairs cross (default: AMD's)");
  cmd->add_flag("--graph", o->graph, "write the inferred graph form instead of the matrix form");
  cmd->add_option("--measured", o->measured,
                  "write the nccl-tests rows found in the files as records of the measured executor (.jsonl or .csv)");
  return [o] { return run_import(*o); };
}

}  // namespace gradsync::experiments::cli
