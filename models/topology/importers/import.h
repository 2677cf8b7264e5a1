// Importers for the text output of real measurement tools -> MatrixForm.
//
// Supported tools (one text may hold several, e.g. a pasted log with shell prompts, code
// fences and other tools' output in between, which is ignored):
//   - CUDA samples p2pBandwidthLatencyTest: every bandwidth and latency matrix, both the
//     P2P=Enabled and P2P=Disabled variants, and the P2P Connectivity Matrix;
//   - NVIDIA nvbandwidth: device-to-device (uni- and bidirectional) bandwidth, device-to-device
//     latency, host<->device bandwidth and local copies;
//   - nvidia-smi topo -m (connection classes) and nvidia-smi topo -p2p <r|w|p> (peer support);
//   - nccl-tests *_perf output: not link measurements but measured collectives, returned in
//     ImportResult::nccl_tests (models/topology/importers/nccl_tests.h).
//
// The tools found are merged: they must agree on the GPU count; bandwidth comes from
// p2pBandwidthLatencyTest when present, else from nvbandwidth, and whatever the main tool
// lacks (host figures, latency, ...) is filled from the other. Figures not used for the
// main matrices are kept in MatrixForm::other_measurements. Every decision is listed in
// ImportResult::notes. Bad input throws InputError naming the file, the line, the bad token
// and what was expected.
//
// nvidia-smi topo -m alone (no bandwidth measured) gives a nominal form (MatrixForm::nominal):
// each pair's figure is what the links its class crosses are documented to carry, at NCCL's
// rates (models/topology/hardware.h): a GPU's PCIe link from its generation and width (the options,
// else the GPU model's, else Gen4 x16), an NVLink by the GPU's compute capability, the link
// between CPU sockets by the CPU's maker. Its name, description, source and notes say so.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/support/error.h"  // InputError, thrown for bad input
#include "models/topology/importers/nccl_tests.h"
#include "models/topology/matrix_form.h"

namespace gradsync::models {

struct ImportOptions {
  std::string name;          // topology name; default: derived from the file name
  bool p2p_enabled = true;   // p2pBandwidthLatencyTest: use the P2P=Enabled matrices as the main ones (else Disabled)
  // The GPUs' model, as hardware::gpu_model_of reads it ("RTX 4090", "NVIDIA A100-SXM4-80GB");
  // default: the device names in the files. Names the GPUs in the description.
  std::string gpu_model;
  // For nominal forms (nvidia-smi topo -m alone); ignored, with a note, when bandwidth was measured.
  std::string pcie;      // "gen3" .. "gen6"; default: the GPU model's generation
  std::optional<int> pcie_width;  // lanes (1, 2, 4, 8, 16, 32); default: the GPU model's width
  std::string cpu;       // "amd", "intel", "arm": the inter-socket link; default: AMD's (NCCL's default)
};

// Throws InputError when an option is out of its domain (a PCIe generation, width, CPU maker
// or GPU model gradsync does not know), naming the option, the value and what is expected.
void check_import_options(const ImportOptions& options);

// A device of nvidia-smi topo -m's other columns (a NIC): its name (the NIC legend's, "mlx5_0",
// else the column's, "NIC0") and its class to each GPU (PIX, PXB, PHB, NODE, SYS).
struct ImportedDevice {
  std::string name;
  std::vector<std::string> classes;
  std::vector<std::string> peer_classes;  // to each device of the same table ("X" itself); empty when its row is not printed
};

struct ImportResult {
  MatrixForm form;
  std::vector<ImportedDevice> devices;  // nvidia-smi topo -m's NIC columns (topology generate --node)
  std::vector<std::string> tools_found;  // e.g. {"nvidia-smi topo -m", "p2pBandwidthLatencyTest"}
  std::vector<std::string> notes;        // what was used, what was ignored, assumptions
  std::vector<NcclTestsRun> nccl_tests;  // nccl-tests runs found beside the tools (measured collectives)
};

// Detects every supported tool output inside `text` and merges them. `source_name` names
// the text in messages and gives the default topology name (its file stem).
ImportResult import_tool_output(const std::string& text, const std::string& source_name, const ImportOptions& options = {});

// Reads several files (e.g. topo.txt and p2p.txt of one machine) and merges what they hold.
// A missing file is an InputError "<path>: no such file".
ImportResult import_tool_files(const std::vector<std::string>& paths, const ImportOptions& options = {});

// The tools import_tool_output recognises, for help texts.
const std::vector<std::string>& supported_tools();

}  // namespace gradsync::models
