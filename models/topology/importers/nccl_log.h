// What NCCL's own log (NCCL_DEBUG=INFO lines, "host:pid:tid [dev] NCCL INFO ...") says of the
// machine, where a text holds it beside nccl-tests' tables:
//   CPU/0 (1/2/-1)                                   its CPUs: architecture / vendor / model codes
//                                                    (topo.h: x86 1, ARM 3; Intel 1, AMD 2, Zhaoxin 3)
//   GPU/1000 :GPU/81000 (3/24.000000/SYS) ...        its paths between GPUs, by PCI bus id, with
//                                                    their type (NVL, PIX, PXB, PHB, SYS) and bandwidth
//   NVLS multicast support is available on dev 0     NVLink SHARP (an NVSwitch of Hopper or later)
// Newer releases print ids as "GPU/0-1000". Lines of other subsystems are ignored; a line this
// reader takes that is malformed is ignored too (a log is evidence, not an input gradsync asks for).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace gradsync::models {

namespace importers {
struct SourceText;
}

struct NcclLogFacts {
  std::size_t line = 0;     // the first line a fact came from (0-based)
  std::string cpu_vendor;   // "intel", "amd", "arm", "zhaoxin"; "" where not printed
  // The type NCCL gave the path between two GPUs ("SYS", "NVL", ...) and its bandwidth (GB/s), by
  // their PCI bus numbers (GPU/81000 -> 0x81).
  std::map<std::pair<int, int>, std::pair<std::string, double>> gpu_paths;
  std::optional<bool> nvls;  // NVLS multicast available on the GPUs ("is available" / "is not available")

  bool empty() const { return cpu_vendor.empty() && gpu_paths.empty() && !nvls; }
};

// The facts NCCL's INFO lines of a text give (empty when it has none).
NcclLogFacts read_nccl_log(const importers::SourceText& src);

// A PCI bus number from a device's id as nccl-tests prints it ("0000:81:00", "0x81"), -1 if none.
int pci_bus_of(const std::string& bus_id);

}  // namespace gradsync::models
