#include "models/topology/hardware.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace gradsync::models::hardware {

namespace {
constexpr std::array<GpuModel, 23> kGpuModels = {{
    {"TITAN X", 3, 16, 61},     {"TITAN Xp", 3, 16, 61},     {"TITAN V", 3, 16, 70},  {"TITAN RTX", 3, 16, 75},
    {"RTX 2080 Ti", 3, 16, 75}, {"RTX 3090", 4, 16, 86},     {"RTX 4090", 4, 16, 89}, {"RTX 5090", 5, 16, 120},
    {"RTX A6000", 4, 16, 86},   {"RTX 6000 Ada", 4, 16, 89}, {"A100", 4, 16, 80},     {"A800", 4, 16, 80},
    {"A40", 4, 16, 86},         {"A10", 4, 16, 86},          {"L40S", 4, 16, 89},     {"L40", 4, 16, 89},
    {"L4", 4, 16, 89},          {"H100", 5, 16, 90},         {"H800", 5, 16, 90},     {"H200", 5, 16, 90},
    {"B200", 6, 16, 100},       {"V100", 3, 16, 70},         {"T4", 3, 16, 75},
}};
}  // namespace

const GpuModel* gpu_model_of(const std::string& description) {
  const GpuModel* best = nullptr;
  for (const GpuModel& m : kGpuModels) {
    if (description.find(m.name) == std::string::npos) continue;
    if (!best || std::strlen(m.name) > std::strlen(best->name)) best = &m;
  }
  return best;
}

const GpuModel* find_gpu_model(const std::string& name) {
  for (const GpuModel& m : kGpuModels) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::vector<std::string> gpu_model_names() {
  std::vector<std::string> names;
  for (const GpuModel& m : kGpuModels) names.push_back(m.name);
  return names;
}

double nvlink_physical_GBps_per_link(int cc) { return cc >= 100 ? 50.0 : 25.0; }

int nvlinks_per_gpu(int cc) {
  if (cc >= 90) return 18;
  if (cc >= 80) return 12;
  return 6;
}

double pcie_GBps(int gen, int lanes) {
  static constexpr std::array<double, 7> kSpeed = {0, 15, 30, 60, 120, 240, 480};
  return lanes * kSpeed[static_cast<std::size_t>(std::clamp(gen, 1, 6))] / 80.0;
}

double nvlink_GBps_per_link(int cc) {
  if (cc >= 100) return 40.1;
  if (cc >= 90) return 20.6;
  if (cc == 86) return 12.0;
  if (cc >= 70) return 20.0;
  if (cc >= 60) return 18.0;
  return 20.0;
}

double inter_socket_GBps(const std::string& cpu) {
  if (cpu == "intel") return 10.0;
  if (cpu == "arm") return 6.0;
  return 16.0;
}

}  // namespace gradsync::models::hardware
