#include "runtime/nccl_tests_format.h"

#include <fmt/format.h>

namespace gradsync::runtime {

namespace {

std::string time_text(double us) {
  if (us >= 10000) return fmt::format("{:7.0f}", us);
  if (us >= 100) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

std::string timing_text(const NcclTestsTimingOut& t) {
  return fmt::format("  {}  {:6.2f}  {:6.2f}  {:>5}", time_text(t.time_us), t.algbw_GBps, t.busbw_GBps,
                     t.wrong ? std::to_string(*t.wrong) : std::string("N/A"));
}

}  // namespace

std::string nccl_tests_header(const NcclTestsRunHeader& h) {
  std::string out = fmt::format("# Collective test starting: {}\n", h.program);
  out += fmt::format(
      "# nThread {} nGpus {} minBytes {:.0f} maxBytes {:.0f} step: {:g}(factor) warmup iters: {} iters: {} agg iters: 1 "
      "validation: {} graph: 0\n#\n# Using devices\n",
      h.threads, h.gpus_per_thread, h.min_bytes, h.max_bytes, h.step_factor, h.warmup, h.iterations, h.validation ? 1 : 0);
  for (const auto& d : h.devices) {
    out += fmt::format("#  Rank {:2d} Group {:2d} Pid {:6d} on {:>10} device {:2d} [{}] {}\n", d.rank, 0, d.pid, d.host,
                       d.device, d.bus_id, d.name);
  }
  out +=
      "#\n"
      "#                                                              out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
  return out;
}

std::string nccl_tests_row(double bytes, std::uint64_t count, const NcclTestsTimingOut& out_of_place,
                           const NcclTestsTimingOut& in_place, const std::string& redop, int root) {
  return fmt::format("{:12.0f}  {:12d}  {:>8}  {:>6}  {:6d}", bytes, count, "float", redop, root) + timing_text(out_of_place) +
         timing_text(in_place) + "\n";
}

std::string nccl_tests_footer(std::uint64_t wrong, double avg_busbw_GBps) {
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:g} \n#\n", wrong, wrong ? "FAILED" : "OK",
                     avg_busbw_GBps);
}

}  // namespace gradsync::runtime
