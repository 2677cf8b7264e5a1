#include "models/topology/hardware.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace gradsync::models::hardware {

namespace {
// Vendors' specification sheets: PCIe generation and width, compute capability,
// NVLinks of the module (SXM: V100 6, A100 12, A800 8, H100 / H200 / B200 18,
// H800 8; PCIe cards 0; -1 where the name alone leaves the form factor open),
// memory bandwidth in GB/s.
constexpr std::array<GpuModel, 41> kGpuModels = {{
    {"TITAN X", 3, 16, 61, 0, 480},
    {"TITAN Xp", 3, 16, 61, 0, 548},
    {"TITAN V", 3, 16, 70, 0, 653},
    {"TITAN RTX", 3, 16, 75, 0, 672},
    {"RTX 2080 Ti", 3, 16, 75, 0, 616},
    {"RTX 3090", 4, 16, 86, 0, 936},
    {"RTX 4090", 4, 16, 89, 0, 1008},
    {"RTX 5090", 5, 16, 120, 0, 1792},
    {"RTX A6000", 4, 16, 86, 0, 768},
    {"RTX 6000 Ada", 4, 16, 89, 0, 960},
    {"RTX 5880 Ada", 4, 16, 89, 0, 960},
    {"RTX PRO 6000", 5, 16, 120, 0, 1792},
    {"A100", 4, 16, 80, -1, 1555},
    {"A100-SXM4", 4, 16, 80, 12, 1555},
    {"A100-SXM4-80GB", 4, 16, 80, 12, 2039},
    {"A100-PCIE", 4, 16, 80, 0, 1555},
    {"A100 80GB PCIe", 4, 16, 80, 0, 1935},
    {"A800", 4, 16, 80, -1, 1555},
    {"A800-SXM4", 4, 16, 80, 8, 2039},
    {"A40", 4, 16, 86, 0, 696},
    {"A10", 4, 16, 86, 0, 600},
    {"L40S", 4, 16, 89, 0, 864},
    {"L40", 4, 16, 89, 0, 864},
    {"L4", 4, 16, 89, 0, 300},
    {"H100", 5, 16, 90, -1, 3350},
    {"H100 80GB HBM3", 5, 16, 90, 18, 3350},
    {"H100 SXM", 5, 16, 90, 18, 3350},
    {"H100 PCIe", 5, 16, 90, 0, 2000},
    {"H100 NVL", 5, 16, 90, 0, 3900},
    {"H800", 5, 16, 90, 8, 3350},
    {"H800 PCIe", 5, 16, 90, 0, 2000},
    {"H200", 5, 16, 90, 18, 4800},
    {"H200 NVL", 5, 16, 90, 0, 4800},
    {"GH200", 5, 16, 90, 18, 4000, "arm", 450},
    {"B200", 6, 16, 100, 18, 8000},
    {"V100", 3, 16, 70, -1, 900},
    {"V100-SXM2", 3, 16, 70, 6, 900},
    {"V100-PCIE", 3, 16, 70, 0, 900},
    {"V100S-PCIE", 3, 16, 70, 0, 1134},
    {"V100-SXM3", 3, 16, 70, 6, 981},
    {"T4", 3, 16, 75, 0, 320},
}};
} // namespace

const GpuModel *gpu_model_of(const std::string &description) {
  const GpuModel *best = nullptr;
  for (const GpuModel &m : kGpuModels) {
    if (description.find(m.name) == std::string::npos)
      continue;
    if (!best || std::strlen(m.name) > std::strlen(best->name))
      best = &m;
  }
  return best;
}

const GpuModel *find_gpu_model(const std::string &name) {
  for (const GpuModel &m : kGpuModels) {
    if (name == m.name)
      return &m;
  }
  return nullptr;
}

std::vector<std::string> gpu_model_names() {
  std::vector<std::string> names;
  for (const GpuModel &m : kGpuModels)
    names.push_back(m.name);
  return names;
}

double nvlink_physical_GBps_per_link(int cc) { return cc >= 100 ? 50.0 : 25.0; }

int nvlinks_per_gpu(int cc) {
  if (cc >= 90)
    return 18;
  if (cc >= 80)
    return 12;
  return 6;
}

double pcie_GBps(int gen, int lanes) {
  static constexpr std::array<double, 7> kSpeed = {0,   15,  30, 60,
                                                   120, 240, 480};
  return lanes * kSpeed[static_cast<std::size_t>(std::clamp(gen, 1, 6))] / 80.0;
}

double pcie_raw_GBps(int gen, int lanes) {
  static constexpr std::array<double, 7> kPerLane = {0,     0.25,  0.5,  0.985,
                                                     1.969, 3.938, 7.563};
  return lanes * kPerLane[static_cast<std::size_t>(std::clamp(gen, 1, 6))];
}

double nvlink_GBps_per_link(int cc) {
  if (cc >= 100)
    return 40.1;
  if (cc >= 90)
    return 20.6;
  if (cc == 86)
    return 12.0;
  if (cc >= 70)
    return 20.0;
  if (cc >= 60)
    return 18.0;
  return 20.0;
}

double inter_socket_GBps(const std::string &cpu) {
  if (cpu == "intel")
    return 10.0;
  if (cpu == "arm")
    return 6.0;
  return 16.0;
}

} // namespace gradsync::models::hardware
