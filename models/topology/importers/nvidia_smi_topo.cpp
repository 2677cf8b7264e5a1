// nvidia-smi topo -m (and nvidia-smi topo -p2p <r|w|n|a|p>):
//
//   	GPU0	GPU1	NIC0	CPU Affinity	NUMA Affinity	GPU NUMA ID
//   GPU0	 X 	PIX	PHB	0-11,24-35	0		N/A
//   GPU1	PIX	 X 	PHB	0-11,24-35	0		N/A
//   NIC0	PHB	PHB	 X
//
//   Legend: ...
//
//   	GPU0	GPU1
//    GPU0	X	NS
//    GPU1	NS	X
//
// The first kind gives the connection class of every GPU pair, the second whether a peer
// capability (p: P2P in general, r: reads, w: writes, n: NVLink, a: atomics) is supported.
#include <algorithm>
#include <cctype>
#include <regex>

#include "models/support/error.h"
#include "models/topology/importers/parse_util.h"

namespace gradsync::models::importers {
namespace {

const std::regex kP2pCommand(R"(nvidia-smi\s+topo\s+(?:-p2p|--p2pstatus)\s+([rwnapRWNAP])\b)");
const std::regex kMatrixCommand(R"(nvidia-smi\s+topo\s+(?:-m|--matrix)\b)");
const std::regex kLegendEntry(R"(^\s*(NIC\d+)\s*:\s*(\S+)\s*$)");

bool is_p2p_status(const std::string& cell) {
  return cell == "OK" || cell == "NS" || cell == "CNS" || cell == "GNS" || cell == "TNS" || cell == "U";
}

// The command that printed the table at `pos`, when the prompt line is in the text: "m", "p", "r", ... or "".
std::string command_before(const SourceText& src, std::size_t pos) {
  std::size_t seen = 0;
  for (std::size_t k = pos; k-- > 0 && seen < 3;) {
    if (is_blank(src.lines[k])) continue;
    ++seen;
    std::smatch m;
    if (std::regex_search(src.lines[k], m, kP2pCommand)) {
      std::string c = m[1].str();
      c[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(c[0])));
      return c;
    }
    if (std::regex_search(src.lines[k], kMatrixCommand)) return "m";
  }
  return "";
}

}  // namespace

bool consume_nvidia_smi_topo(ParsedText& parsed, std::size_t& pos) {
  const SourceText& src = parsed.src;
  if (!looks_like_header(src.lines[pos], TableLabels::gpu)) return false;

  // Header: GPU0..GPUn-1, then other devices (NIC0, mlx5_0, ...), then "CPU Affinity" etc.
  const auto header = tokens(src.lines[pos]);
  std::size_t gpus = 0;
  while (gpus < header.size() && header[gpus] == "GPU" + std::to_string(gpus)) ++gpus;
  std::vector<std::string> other_devices;
  for (std::size_t k = gpus; k < header.size(); ++k) {
    const auto& t = header[k];
    if (t == "CPU" || t == "NUMA" || t == "Affinity" || t == "GPU" || t == "ID") break;
    other_devices.push_back(t);
  }
  const bool has_affinity = std::find(header.begin(), header.end(), "Affinity") != header.end();

  const std::string command = command_before(src, pos);
  TableSpec spec;
  spec.labels = TableLabels::gpu;
  spec.trailing_cells = true;
  spec.min_row_cells = gpus + other_devices.size();
  spec.title = command.empty() || command == "m" ? std::string(kTopoTool) : std::string(kTopoP2pTool) + " " + command;
  const std::size_t header_line = pos;
  Table t = read_table(src, pos, spec);
  const std::size_t n = t.columns;

  // Which of the two tables is it: the command when shown, else the header and the cells.
  bool p2p = !command.empty() && command != "m";
  if (command.empty() && !has_affinity && n > 1) p2p = is_p2p_status(t.cells[0][1]);
  if (p2p && spec.title == kTopoTool) spec.title = std::string(kTopoP2pTool);

  std::vector<std::vector<std::string>> cells(n, std::vector<std::string>(n));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const std::string& c = t.cells[i][j];
      const std::string pair = "GPU" + std::to_string(i) + " / GPU" + std::to_string(j);
      if (i == j) {
        if (c != "X") src.fail(t.row_lines[i], quote_token(c) + " on the diagonal (" + pair + ") of " + spec.title + "; expected \"X\"");
      } else if (p2p) {
        if (!is_p2p_status(c)) {
          src.fail(t.row_lines[i], quote_token(c) + " is not an " + spec.title + " status (" + pair +
                                       "); expected one of OK, NS, CNS, GNS, TNS, U");
        }
      } else if (c == "X" || !is_known_topo_class(c)) {
        src.fail(t.row_lines[i], quote_token(c) + " is not an nvidia-smi topo -m class (" + pair +
                                     "); expected one of PIX, PXB, PHB, NODE, SYS, SOC, NV<n>");
      }
      cells[i][j] = c;
    }
  }

  if (p2p) {
    for (const auto& other : parsed.topo_p2p) {
      if (other.capability == command) {
        src.fail(header_line, "a second " + spec.title + " table (the first is at line " + std::to_string(other.line + 1) +
                                  "); expected one per capability");
      }
    }
    SmiP2pOutput out;
    out.line = header_line;
    out.gpu_count = n;
    out.capability = command;
    out.status = std::move(cells);
    parsed.topo_p2p.push_back(std::move(out));
    parsed.found(spec.title);
    return true;
  }

  if (parsed.topo) {
    src.fail(header_line, "a second nvidia-smi topo -m table (the first is at line " + std::to_string(parsed.topo->line + 1) +
                              "); expected one per file");
  }
  SmiTopoOutput out;
  out.line = header_line;
  out.gpu_count = n;
  out.classes = std::move(cells);
  // The other devices' columns of the GPU rows: where each NIC sits beside the GPUs.
  out.device_classes.assign(other_devices.size(), std::vector<std::string>(n));
  for (std::size_t d = 0; d < other_devices.size(); ++d) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& c = t.cells[i][n + d];
      if (!is_known_topo_class(c) || c.rfind("NV", 0) == 0) {
        src.fail(t.row_lines[i], quote_token(c) + " is not a PCIe class of GPU" + std::to_string(i) + " / " + other_devices[d] +
                                     " in nvidia-smi topo -m; expected one of PIX, PXB, PHB, NODE, SYS");
      }
      out.device_classes[d][i] = c;
    }
  }
  // The devices' rows follow the GPUs' (NIC0  SYS ... X ...): their classes to each other.
  if (!other_devices.empty()) {
    std::vector<std::vector<std::string>> pairs;
    for (std::size_t d = 0; d < other_devices.size() && pos + d < src.size(); ++d) {
      const auto row = tokens(src.lines[pos + d]);
      if (row.size() < 1 + n + other_devices.size() || row[0] != other_devices[d]) break;
      std::vector<std::string> classes(row.begin() + 1 + static_cast<std::ptrdiff_t>(n),
                                       row.begin() + 1 + static_cast<std::ptrdiff_t>(n + other_devices.size()));
      for (std::size_t e = 0; e < classes.size(); ++e) {
        if (e == d ? classes[e] != "X" : !is_known_topo_class(classes[e])) {
          src.fail(pos + d, quote_token(classes[e]) + " is not a class of " + other_devices[d] + " / " + other_devices[e] +
                                " in nvidia-smi topo -m; expected " + (e == d ? "\"X\"" : "one of PIX, PXB, PHB, NODE, SYS"));
        }
      }
      pairs.push_back(std::move(classes));
    }
    if (pairs.size() == other_devices.size()) {
      out.device_pair_classes = std::move(pairs);
      pos += other_devices.size();
    }
  }
  // "NIC Legend:" names them (NIC0: mlx5_0), a few lines below the table.
  for (std::size_t k = pos; k < src.size() && k < pos + 4 * other_devices.size() + 40; ++k) {
    std::smatch m;
    if (!std::regex_match(src.lines[k], m, kLegendEntry)) continue;
    for (std::string& d : other_devices) {
      if (d == m[1].str()) d = m[2].str();
    }
  }
  out.other_devices = other_devices;
  if (!other_devices.empty()) {
    out.notes.push_back("nvidia-smi topo -m: " + join(other_devices) +
                        " kept for clusters built from this node (gradsync topology generate --node), not used for one machine");
  }
  if (has_affinity) out.notes.push_back("nvidia-smi topo -m: CPU / NUMA affinity columns were ignored");
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      if (out.classes[i][j] != out.classes[j][i]) {
        out.notes.push_back("nvidia-smi topo -m: GPU" + std::to_string(i) + " / GPU" + std::to_string(j) + " is " +
                            out.classes[i][j] + " one way and " + out.classes[j][i] + " the other");
      }
    }
  }
  parsed.topo = std::move(out);
  parsed.found(kTopoTool);
  return true;
}

}  // namespace gradsync::models::importers
