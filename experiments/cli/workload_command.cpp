// gradsync workload: the models a training step is predicted for — the presets, one model's
// layers, and a model from the parameter listing PyTorch prints.
#include <iostream>
#include <memory>

#include "experiments/cli/commands.h"
#include "experiments/table.h"
#include "models/support/error.h"
#include "models/support/json_input.h"
#include "models/topology/importers/parse_util.h"
#include "models/workload/pytorch_listing.h"
#include "models/workload/workload.h"

namespace gradsync::experiments::cli {

namespace {

std::string flops_text(double flops) {
  if (flops <= 0) return "-";
  return flops >= 1e12 ? format_fixed(flops / 1e12, 2) + " TFLOP" : format_fixed(flops / 1e9, 2) + " GFLOP";
}

int run_list() {
  Table t({"preset", ">params", ">gradient", ">layers", ">compute/minibatch", "what"});
  for (const std::string& name : models::workload_preset_names()) {
    const models::Workload w = *models::workload_preset(name);
    std::string what = w.description;
    for (const char* end : {". ", ": ", " (", ", "}) what = what.substr(0, what.find(end));
    t.add_row({name, format_fixed(static_cast<double>(w.total_params()) / 1e6, 1) + " M", format_bytes(w.gradient_bytes()),
               std::to_string(w.layers.size()), format_seconds(w.compute_s()), what});
  }
  std::cout << t.render() << "`gradsync workload show NAME` lists a model's layers; --workload NAME uses it.\n";
  return 0;
}

int run_show(const std::string& which, const std::string& format) {
  const models::Workload w = models::load_workload(which);
  if (format == "json") {
    std::cout << models::pretty_json(models::workload_to_json(w)) << "\n";
    return 0;
  }
  std::cout << w.name << ": " << format_fixed(static_cast<double>(w.total_params()) / 1e6, 1) << " M params, "
            << format_bytes(w.gradient_bytes()) << " of gradients, " << w.layers.size() << " layers, "
            << format_seconds(w.compute_s()) << " of compute per minibatch, " << w.minibatches_per_epoch
            << (w.minibatches_per_epoch == 1 ? " minibatch" : " minibatches") << " an epoch\n";
  if (!w.description.empty()) std::cout << w.description << "\n";
  std::cout << "\nlayers in forward order; the backward pass produces their gradients from the last up\n";
  Table t({">#", "layer", ">params", ">gradient", ">forward FLOPs", ">forward", ">backward", ">ready after"});
  const std::vector<models::LayerTimes> times = w.layer_times();
  // When each gradient is complete: the backward pass runs from the last layer to the first.
  std::vector<double> ready(w.layers.size());
  double elapsed = 0;
  for (std::size_t i = w.layers.size(); i-- > 0;) ready[i] = (elapsed += times[i].backward_s);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const models::Layer& l = w.layers[i];
    t.add_row({std::to_string(i), l.name, std::to_string(l.params), format_bytes(w.layer_gradient_bytes(l)), flops_text(l.forward_flops),
               format_seconds(times[i].forward_s), format_seconds(times[i].backward_s), format_seconds(ready[i])});
  }
  std::cout << t.render();
  std::cout << "ready after: the backward time from its start to the layer's gradient (the layers after it first)\n";
  if (w.convergence) {
    const models::ConvergenceFacts& f = *w.convergence;
    std::cout << "\nconvergence (" << f.source << "):\n  target: " << f.target << "; "
              << models::estimate_text(f.samples_to_target) << " samples at a global batch of " << models::number_text(f.global_batch, 6)
              << "; noise scale " << models::estimate_text(f.noise_scale) << " samples\n";
    for (const auto& [name, c] : f.strategies) {
      std::cout << "  " << name << ": synchronous SGD's samples " << models::multiples_text(c) << " (" << c.conditions << ")\n";
    }
  }
  return 0;
}

struct FromOptions {
  std::string file;
  std::string output;
  models::ListingOptions listing;
};

int run_from_pytorch(const FromOptions& o) {
  const std::string text = models::importers::read_text_file(o.file);
  if (o.listing.compute_s.has_value() == o.listing.device_TFLOPS.has_value()) {
    throw models::InputError("workload from-pytorch: give the compute one way: --compute-s (a measured minibatch) or "
                             "--device-tflops with --tokens (FLOPs by the dense rule)");
  }
  const models::Workload w = models::workload_from_listing(text, o.file, o.listing);
  // Through the JSON reader, so the file written is one every command accepts.
  const models::ordered_json doc = models::workload_to_json(w);
  (void)models::workload_from_json(models::JsonView::wrap(doc, o.file));
  const std::string out = models::pretty_json(doc) + "\n";
  const bool to_stdout = o.output.empty() || o.output == "-";
  models::write_file_atomically(to_stdout ? "-" : o.output, out);
  std::ostream& report = to_stdout ? std::cerr : std::cout;
  report << "read " << w.layers.size() << " layers, " << format_fixed(static_cast<double>(w.total_params()) / 1e6, 1) << " M params ("
         << format_bytes(w.gradient_bytes()) << " of gradients), " << format_seconds(w.compute_s()) << " of compute per minibatch\n";
  if (!to_stdout) report << "wrote " << o.output << "\n";
  return 0;
}

}  // namespace

Action add_workload(CLI::App& app) {
  auto cmd = app.add_subcommand("workload", "The models a training step is predicted for: presets, their layers, a model from PyTorch");
  cmd->require_subcommand(1);
  auto* list = cmd->add_subcommand("list", "The workload presets, each with its size and compute");
  auto* show = cmd->add_subcommand("show", "A workload's layers: parameters, FLOPs, forward and backward time, when each gradient is ready");
  auto which = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("table");
  show->add_option("workload", *which, "a preset or a workload JSON file")->required();
  show->add_option("-f,--format", *format, "table, or json (the workload file, to edit)")->check(CLI::IsMember({"table", "json"}));
  auto* from = cmd->add_subcommand("from-pytorch", "A workload from the parameter listing PyTorch prints (named_parameters())");
  auto o = std::make_shared<FromOptions>();
  from->add_option("file", o->file, "the listing: a line per parameter, `NAME SHAPE` (SHAPE as torch.Size([a, b]), (a, b) or [a, b])")
      ->required();
  from->add_option("-o,--output", o->output, "write the workload JSON here, atomically (default: stdout)");
  from->add_option("--name", o->listing.name, "the workload's name (default: the file's name)");
  auto* tokens = from->add_option("--tokens", o->listing.tokens, "tokens (or samples) per minibatch each weight is applied to: FLOPs by the dense rule")
      ->check(integer_in(1, std::int64_t{1} << 40));
  from->add_option("--device-tflops", o->listing.device_TFLOPS, "the GPU's effective rate, with --tokens")
      ->check(number_in(1e-6, 1e6))
      ->needs(tokens);
  from->add_option("--compute-s", o->listing.compute_s, "a measured forward + backward time per minibatch, in seconds")
      ->check(number_in(0, 1e6));
  from->add_option("--dtype-bytes", o->listing.dtype_bytes, "bytes per gradient element (default: the listing's dtype, else 4)")
      ->check(CLI::IsMember({1, 2, 4, 8}));
  from->add_option("--minibatches-per-epoch", o->listing.minibatches_per_epoch, "minibatches in an epoch (default: 1)")
      ->check(integer_in(1, std::int64_t{1} << 50));
  from->footer(
      "Print the listing in Python with\n"
      "  for name, p in model.named_parameters(): print(name, p.shape, p.dtype, p.requires_grad)\n"
      "(the dtype and requires_grad are optional; frozen parameters have no gradient and are left out). The\n"
      "parameters of a module form a layer, in the listing's order. FLOPs: with --tokens, 2 per weight and token\n"
      "forward and twice that backward (embeddings none); convolutions need a measured --compute-s instead.\n"
      "Examples:\n"
      "  gradsync workload from-pytorch params.txt --tokens 8192 --device-tflops 150 -o model.json\n"
      "  gradsync workload from-pytorch params.txt --compute-s 0.25 -o model.json");
  cmd->footer("Examples:\n  gradsync workload list\n  gradsync workload show resnet50\n  gradsync workload show gpt2-xl --format json > my-model.json");
  return [cmd, list, show, from, which, format, o] {
    if (list->parsed()) return run_list();
    if (show->parsed()) return run_show(*which, *format);
    if (from->parsed()) return run_from_pytorch(*o);
    (void)cmd;
    return 2;
  };
}

}  // namespace gradsync::experiments::cli
