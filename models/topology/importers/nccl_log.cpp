#include "models/topology/importers/nccl_log.h"

#include <cstdlib>
#include <regex>

#include "models/topology/importers/parse_util.h"

namespace gradsync::models {
namespace {

// "host:pid:tid [dev] NCCL INFO <message>": the message.
const std::regex kInfo(R"(^\S+:\d+:\d+ \[\d+\] NCCL INFO (.*)$)");
// CPU/0 (1/2/-1), CPU/0-0 (1/1/85): architecture, vendor, model.
const std::regex kCpu(R"(^CPU/(?:[0-9a-fA-F]+-)?[0-9a-fA-F]+ \((-?\d+)/(-?\d+)/(-?\d+)\)\s*$)");
// GPU/1000 :GPU/1000 (0/5000.000000/LOC) GPU/81000 (3/24.000000/SYS) CPU/0 (1/24.000000/PHB)
const std::regex kPathsOf(R"(^GPU/(?:[0-9a-fA-F]+-)?([0-9a-fA-F]+) :(.*)$)");
const std::regex kPath(R"(GPU/(?:[0-9a-fA-F]+-)?([0-9a-fA-F]+) \((\d+)/([0-9.]+)/([A-Z]+)\))");
const std::regex kNvls(R"(^NVLS multicast support is (not )?available on dev \d+)");

// NCCL's busId as it prints it ("81000": domain, bus, device and function, the last 12 bits the
// device and function): the bus number.
int bus_of_topology_id(const std::string& hex) {
  if (hex.empty() || hex.size() > 12) return -1;
  const long long id = std::strtoll(hex.c_str(), nullptr, 16);
  return static_cast<int>((id >> 12) & 0xff);
}

}  // namespace

int pci_bus_of(const std::string& bus_id) {
  // "0000:81:00" (domain:bus:device) or "0x81" (the bus alone, older nccl-tests).
  static const std::regex full(R"(^(?:[0-9a-fA-F]{4,8}:)?([0-9a-fA-F]{2}):[0-9a-fA-F]{2}(?:\.[0-9a-fA-F])?$)");
  static const std::regex bus(R"(^0x([0-9a-fA-F]{1,2})$)");
  std::smatch m;
  if (std::regex_match(bus_id, m, full) || std::regex_match(bus_id, m, bus)) return static_cast<int>(std::strtol(m[1].str().c_str(), nullptr, 16));
  return -1;
}

NcclLogFacts read_nccl_log(const importers::SourceText& src) {
  NcclLogFacts facts;
  bool any = false;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::string& line = src.lines[i];
    if (line.find(" NCCL INFO ") == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_match(line, m, kInfo)) continue;
    const std::string message = m[1].str();
    bool used = false;
    std::smatch f;
    if (facts.cpu_vendor.empty() && std::regex_match(message, f, kCpu)) {
      const int arch = std::atoi(f[1].str().c_str()), vendor = std::atoi(f[2].str().c_str());
      if (arch == 3) facts.cpu_vendor = "arm";
      else if (arch == 1 && vendor == 1) facts.cpu_vendor = "intel";
      else if (arch == 1 && vendor == 2) facts.cpu_vendor = "amd";
      else if (arch == 1 && vendor == 3) facts.cpu_vendor = "zhaoxin";
      used = !facts.cpu_vendor.empty();
    } else if (std::regex_match(message, f, kPathsOf)) {
      const int from = bus_of_topology_id(f[1].str());
      const std::string rest = f[2].str();
      for (auto it = std::sregex_iterator(rest.begin(), rest.end(), kPath); it != std::sregex_iterator(); ++it) {
        const int to = bus_of_topology_id((*it)[1].str());
        if (from < 0 || to < 0 || from == to) continue;
        facts.gpu_paths[{from, to}] = {(*it)[4].str(), std::strtod((*it)[3].str().c_str(), nullptr)};
        used = true;
      }
    } else if (std::regex_search(message, f, kNvls)) {
      const bool available = !f[1].matched;
      facts.nvls = facts.nvls ? (*facts.nvls && available) : available;
      used = true;
    }
    if (used && !any) {
      facts.line = i;
      any = true;
    }
  }
  return facts;
}

}  // namespace gradsync::models
