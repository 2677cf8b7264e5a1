// gradsync-run's nccl-tests output (runtime/nccl_tests_format.h), read back by gradsync's own
// nccl-tests reader — written against real nccl-tests logs (shared/data/published) — and by
// `gradsync compare` against the nccl strategy's prediction for the published 8 x RTX 4090 box.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/importers/nccl_tests.h"
#include "runtime/nccl_tests_format.h"
#include "support/run_command.h"

using namespace gradsync;

namespace {

runtime::NcclTestsTimingOut timing_of(double bytes, double us, int ranks, std::optional<std::uint64_t> wrong) {
  runtime::NcclTestsTimingOut t;
  t.time_us = us;
  t.algbw_GBps = bytes / (us * 1e-6) / 1e9;
  t.busbw_GBps = t.algbw_GBps * 2.0 * (ranks - 1) / ranks;
  t.wrong = wrong;
  return t;
}

// An 8-rank log, sizes 64 KiB .. 128 MiB, times as the published box measured them (rounded).
std::string eight_rank_log(bool validation) {
  runtime::NcclTestsRunHeader h;
  h.min_bytes = 65536;
  h.max_bytes = 134217728;
  h.validation = validation;
  for (int r = 0; r < 8; ++r) {
    char bus[8];
    std::snprintf(bus, sizeof bus, "0x%02x", 16 * r + 1);
    h.devices.push_back({r, 4000 + r, "box", r, bus, "NVIDIA GeForce RTX 4090"});
  }
  std::string text = "### nccl-tests all_reduce_perf\n" + runtime::nccl_tests_header(h);
  const double times_us[] = {47.58, 72.03, 119.7, 166.6, 216.1, 321.5, 478.7, 798.6, 1472.8, 2870.3, 5705.0, 11382};
  double bytes = 65536;
  for (const double us : times_us) {
    const auto wrong = validation ? std::optional<std::uint64_t>(0) : std::nullopt;
    text += runtime::nccl_tests_row(bytes, static_cast<std::uint64_t>(bytes / 4), timing_of(bytes, us, 8, wrong),
                                    timing_of(bytes, us * 1.01, 8, wrong));
    bytes *= 2;
  }
  return text + runtime::nccl_tests_footer(0, 9.5);
}

}  // namespace

TEST(NcclTestsFormat, ColumnsAsNcclTestsPrintsThem) {
  // The published box's 128 MiB row, as nccl-tests printed it (column for column).
  const std::string row = runtime::nccl_tests_row(134217728, 33554432, {11382, 11.79, 20.64, 0}, {11380, 11.79, 20.64, 0});
  EXPECT_EQ(row, "   134217728      33554432     float     sum      -1    11382   11.79   20.64      0    11380   11.79   "
                 "20.64      0\n");
  EXPECT_EQ(runtime::nccl_tests_row(8, 2, {38.82, 0, 0, 0}, {119.66, 0, 0, std::nullopt}),
            "           8             2     float     sum      -1    38.82    0.00    0.00      0    119.7    0.00    "
            "0.00    N/A\n");
}

TEST(NcclTestsFormat, ReadBackByTheNcclTestsReader) {
  const auto runs = models::read_nccl_tests(eight_rank_log(true), "gradsync-run.log");
  ASSERT_EQ(runs.size(), 1u);
  const auto& run = runs[0];
  EXPECT_EQ(run.collective, "all_reduce");
  EXPECT_EQ(run.ranks(), 8);
  ASSERT_EQ(run.devices.size(), 8u);
  EXPECT_EQ(run.devices[3].device, 3);
  EXPECT_EQ(run.devices[3].bus_id, "0x31");
  EXPECT_EQ(run.devices[3].host, "box");
  EXPECT_EQ(run.devices[3].name, "NVIDIA GeForce RTX 4090");
  ASSERT_EQ(run.rows.size(), 12u);
  EXPECT_EQ(run.rows.front().bytes, 65536);
  EXPECT_EQ(run.rows.back().bytes, 134217728);
  EXPECT_EQ(run.rows.back().count, 33554432u);
  ASSERT_TRUE(run.rows[2].out_of_place && run.rows[2].in_place);
  EXPECT_DOUBLE_EQ(run.rows[2].out_of_place->time_us, 119.7);
  EXPECT_NEAR(run.rows[2].in_place->time_us, 119.7 * 1.01, 0.05);  // printed with one decimal
  EXPECT_NEAR(run.rows.back().out_of_place->busbw_GBps, 134217728 / 11382e-6 / 1e9 * 1.75, 0.005);
  EXPECT_EQ(run.rows.back().out_of_place->wrong, 0.0);
  ASSERT_TRUE(run.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_GBps, 9.5);
  // Without validation #wrong reads as unknown.
  const auto unchecked = models::read_nccl_tests(eight_rank_log(false), "unchecked.log");
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_FALSE(unchecked[0].rows[0].out_of_place->wrong.has_value());
}

TEST(NcclTestsFormat, CompareReadsItAgainstTheMachinesTopology) {
  const std::string log = (std::filesystem::temp_directory_path() / "gradsync-run-nccl.log").string();
  {
    std::ofstream out(log);
    out << eight_rank_log(true);
  }
  const std::string box = std::string(GRADSYNC_SHARED_DATA) + "/published/rtx4090-8gpu-dualepyc-p2pon.txt";
  const auto r = run_command({GRADSYNC_BIN, "compare", box, log, "-x", "analytic"}, false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("all_reduce_perf, 8 ranks, 12 sizes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sizes >= 1 MiB: median |error|"), std::string::npos) << r.out;
  // The measured column: busbw recomputed from the printed time.
  EXPECT_NE(r.out.find("134.2 MB           20.64"), std::string::npos) << r.out;
  std::filesystem::remove(log);
}
