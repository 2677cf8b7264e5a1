// Documented hardware facts gradsync uses where a machine's own measurements are missing,
// with NCCL 2.30.7's (NVIDIA/nccl 5067397c) figures for them (src/graph/topo.h, topo.cc):
// GPU models' PCIe generation and width, compute capability and memory bandwidth (vendors'
// specification sheets), the GB/s NCCL credits a PCIe link, an NVLink and an inter-socket link.
#pragma once

#include <string>
#include <vector>

namespace gradsync::models::hardware {

struct GpuModel {
  const char* name;        // as it appears in device names ("NVIDIA GeForce RTX 4090")
  int pcie_gen;
  int lanes;
  int compute_capability;  // x10 (8.9 -> 89)
  // The NVLinks of the module, by its form factor as the device name tells it: an SXM module's
  // links (A100-SXM4: 12, H100 80GB HBM3: 18), 0 for a PCIe card (whose NVLink, if any, is a
  // bridge to one peer), -1 where the name does not say ("A100", "NVIDIA H100").
  int nvlinks = 0;
  // The memory's bandwidth, GB/s (spec sheets; where the name leaves the module open, the first SXM
  // module's: "A100" and "A100-SXM4" the 40 GB one's 1,555, "H100" the SXM's 3,350).
  double memory_GBps = 0;
  // The CPU the module carries, where it carries one (GH200: NVIDIA's Grace, an ARM CPU, joined to
  // the GPU by NVLink-C2C): a host of such GPUs has that CPU. nullptr: the module says nothing.
  const char* cpu_vendor = nullptr;
  // That CPU's NVLink-C2C to the GPU, GB/s per direction (GH200: 900 GB/s both ways, NVIDIA's
  // GH200 data sheet); 0: none.
  double c2c_GBps = 0;
};

// The model named in `description` (the longest name found), or nullptr. Device names carry
// the form factor where nvidia-smi prints it ("A100-SXM4-40GB", "A100-PCIE-40GB", "H100 PCIe").
const GpuModel* gpu_model_of(const std::string& description);
// The model of exactly this name ("H100"), or nullptr; every name, for messages and choices.
const GpuModel* find_gpu_model(const std::string& name);
std::vector<std::string> gpu_model_names();

// NVLink generations by compute capability (x10), per the vendor's specification sheets: each
// link's rate per direction (NVLink 2, 3 and 4: 25 GB/s; NVLink 5: 50 GB/s) and the links of an
// SXM GPU (V100: 6, A100: 12, H100 and H200: 18, B200: 18).
double nvlink_physical_GBps_per_link(int compute_capability);
int nvlinks_per_gpu(int compute_capability);

// topo.cc: GB/s of a PCIe link, width x (GT/s per lane in 100 Mb/s units) / 80
// (Gen3 x16 = 12, Gen4 x16 = 24, Gen5 x16 = 48). gen is clamped to 1..6.
double pcie_GBps(int gen, int lanes);
// The most a PCIe link carries one way, by the PCI-SIG specification: its lanes at the
// generation's transfer rate after line encoding (8b/10b to Gen2, 128b/130b Gen3-5, Gen6's FLITs:
// Gen3 x16 15.75 GB/s, Gen4 31.5, Gen5 63, Gen6 121). No measured copy over PCIe exceeds it.
double pcie_raw_GBps(int gen, int lanes);

// topo.h: GB/s of one NVLink by compute capability (x10): 18 (6.x), 20 (7.x, 8.0),
// 12 (8.6), 20.6 (9.x), 40.1 (10.x and later).
double nvlink_GBps_per_link(int compute_capability);

// topo.h: GB/s of the link between two CPU sockets: AMD_BW 16 (Infinity Fabric),
// SKL_QPI_BW 10 (Intel UPI), ARM_BW 6; unknown CPU: AMD's.
double inter_socket_GBps(const std::string& cpu);

}  // namespace gradsync::models::hardware
