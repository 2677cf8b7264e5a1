// nccl-tests' printed output (all_reduce_perf and friends), written by gradsync-run when it
// times NCCL's own collective, so that `gradsync compare` — and anyone used to nccl-tests —
// reads it as they read nccl-tests. Lines, column widths and number formats are nccl-tests
// 2.x's (src/common.cu; the published 8 x RTX 4090 log is printed so): the "Collective test
// starting" line of later versions names the program; time with 2 decimals below 100 us, 1
// below 10,000 us, none above; bandwidths with 2; "N/A" for #wrong without validation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradsync::runtime {

struct NcclTestsDeviceLine {
  int rank = 0;
  long pid = 0;
  std::string host;
  int device = 0;
  std::string bus_id;  // "0x01" (nccl-tests prints the PCI bus id so)
  std::string name;    // "NVIDIA H100 80GB HBM3"
};

struct NcclTestsTimingOut {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::optional<std::uint64_t> wrong;  // none: validation off ("N/A")
};

struct NcclTestsRunHeader {
  std::string program = "all_reduce_perf";
  int threads = 1, gpus_per_thread = 1;
  double min_bytes = 0, max_bytes = 0, step_factor = 2;
  int warmup = 5, iterations = 20;
  bool validation = false;
  std::vector<NcclTestsDeviceLine> devices;  // rank order
};

// "# Collective test starting: <program>", "# nThread ...", the device lines and the two column header lines.
std::string nccl_tests_header(const NcclTestsRunHeader& h);
// One size: out-of-place then in-place (type float; redop sum or none, root -1 or the root rank, as the collective's *_perf prints them).
std::string nccl_tests_row(double bytes, std::uint64_t count, const NcclTestsTimingOut& out_of_place,
                           const NcclTestsTimingOut& in_place, const std::string& redop = "sum", int root = -1);
// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X".
std::string nccl_tests_footer(std::uint64_t wrong, double avg_busbw_GBps);

}  // namespace gradsync::runtime
