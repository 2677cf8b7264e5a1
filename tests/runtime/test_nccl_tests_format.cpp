// gradsync-run's nccl-tests output (runtime/nccl_tests_format.h): line for line as nccl-tests
// printed the published 8 x RTX 4090 box's all_reduce_perf run, read back by gradsync's own
// nccl-tests reader (written against real logs), and compared by `gradsync compare` with
// the nccl strategy's prediction for a shipped 8-GPU topology and for the published box.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "models/topology/importers/nccl_tests.h"
#include "runtime/nccl_tests_format.h"
#include "support/run_command.h"

using namespace gradsync;

namespace {

const std::string kPublishedBox = std::string(GRADSYNC_PUBLISHED_DATA) + "/rtx4090-8gpu-dualepyc-p2pon.txt";

// Lines of kPublishedBox, as nccl-tests printed them (trailing spaces included).
const char* const kPublishedLines[] = {
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0",
    "#  Rank  1 Group  0 Pid  33895 on <REDACTED> device  1 [0x25] NVIDIA GeForce RTX 4090",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    "           8             2     float     sum      -1    38.82    0.00    0.00      0    38.16    0.00    0.00      0",
    "      262144         65536     float     sum      -1    119.7    2.19    3.83      0    118.6    2.21    3.87      0",
    "    16777216       4194304     float     sum      -1   1472.8   11.39   19.94      0   1472.1   11.40   19.94      0",
    "   134217728      33554432     float     sum      -1    11382   11.79   20.64      0    11380   11.79   20.64      0",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 6.11168 ",
};

runtime::NcclTestsTimingOut timing(double time_us, double algbw, double busbw, std::optional<std::uint64_t> wrong) {
  return {time_us, algbw, busbw, wrong};
}

// nccl-tests' figures for a size timed at `us` on `ranks` ranks (all-reduce).
runtime::NcclTestsTimingOut timing_of(double bytes, double us, int ranks, std::optional<std::uint64_t> wrong) {
  const double algbw = bytes / (us * 1e-6) / 1e9;
  return timing(us, algbw, algbw * 2.0 * (ranks - 1) / ranks, wrong);
}

// The published box's run header: 8 ranks (one process each here), its bus ids.
runtime::NcclTestsRunHeader eight_rank_header(double min_bytes, double max_bytes, bool validation) {
  runtime::NcclTestsRunHeader h;
  h.min_bytes = min_bytes;
  h.max_bytes = max_bytes;
  h.validation = validation;
  const char* bus[] = {"0x01", "0x25", "0x41", "0x61", "0x81", "0xa1", "0xc1", "0xe1"};
  for (int r = 0; r < 8; ++r) h.devices.push_back({r, 33895 + r, "box", r, bus[r], "NVIDIA GeForce RTX 4090"});
  return h;
}

// A whole 8-rank log, sizes 64 KiB .. 128 MiB, out-of-place times as the published box
// measured them, in-place 1 % slower.
const double kTimesUs[] = {47.58, 72.03, 119.7, 166.6, 216.1, 321.5, 478.7, 798.6, 1472.8, 2870.3, 5705.0, 11382};

std::string eight_rank_log(bool validation) {
  std::string text = runtime::nccl_tests_header(eight_rank_header(65536, 134217728, validation));
  double bytes = 65536;
  for (const double us : kTimesUs) {
    const auto wrong = validation ? std::optional<std::uint64_t>(0) : std::nullopt;
    text += runtime::nccl_tests_row(bytes, static_cast<std::uint64_t>(bytes / 4), timing_of(bytes, us, 8, wrong),
                                    timing_of(bytes, us * 1.01, 8, wrong));
    bytes *= 2;
  }
  return text + runtime::nccl_tests_footer(0, 9.5);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(NcclTestsFormat, TheExpectedLinesAreThePublishedLogs) {
  // Ties the literal lines below to the real log (tests/data/published).
  std::ifstream in(kPublishedBox);
  ASSERT_TRUE(in) << kPublishedBox;
  std::stringstream s;
  s << in.rdbuf();
  const auto lines = lines_of(s.str());
  for (const char* line : kPublishedLines) EXPECT_TRUE(has_line(lines, line)) << "not in " << kPublishedBox << ": " << line;
}

TEST(NcclTestsFormat, HeaderLinesAsNcclTestsPrintsThem) {
  runtime::NcclTestsRunHeader h = eight_rank_header(8, 134217728, true);
  for (auto& d : h.devices) {
    d.pid = 33895;  // the published run was one process driving 8 GPUs
    d.host = "<REDACTED>";
  }
  h.gpus_per_thread = 8;
  const auto lines = lines_of(runtime::nccl_tests_header(h));
  ASSERT_GE(lines.size(), 15u);
  EXPECT_EQ(lines[0], "# Collective test starting: all_reduce_perf");
  EXPECT_EQ(lines[1], kPublishedLines[0]);
  EXPECT_EQ(lines[2], "#");
  EXPECT_EQ(lines[3], "# Using devices");
  EXPECT_EQ(lines[5], kPublishedLines[1]);
  EXPECT_EQ(lines[12], "#");
  EXPECT_EQ(lines[13], kPublishedLines[2]);
  EXPECT_EQ(lines[14], kPublishedLines[3]);
  EXPECT_EQ(lines[15], kPublishedLines[4]);
  EXPECT_EQ(lines.size(), 16u);
  // Unvalidated runs say so; a factor other than 2 and a host name wider than 10 characters.
  h.validation = false;
  h.step_factor = 4;
  h.devices = {{0, 1234567, "a-long-host-name", 3, "0x8a", "NVIDIA H100 80GB HBM3"}};
  const auto other = lines_of(runtime::nccl_tests_header(h));
  EXPECT_NE(other[1].find(" step: 4(factor) "), std::string::npos) << other[1];
  EXPECT_NE(other[1].find(" validation: 0 graph: 0"), std::string::npos) << other[1];
  EXPECT_EQ(other[4], "#  Rank  0 Group  0 Pid 1234567 on a-long-host-name device  3 [0x8a] NVIDIA H100 80GB HBM3");
}

TEST(NcclTestsFormat, RowsAndFooterAsNcclTestsPrintsThem) {
  EXPECT_EQ(runtime::nccl_tests_row(8, 2, timing(38.82, 0, 0, 0), timing(38.16, 0, 0, 0)), std::string(kPublishedLines[5]) + "\n");
  EXPECT_EQ(runtime::nccl_tests_row(262144, 65536, timing(119.74, 2.19, 3.83, 0), timing(118.6, 2.2123, 3.8715, 0)),
            std::string(kPublishedLines[6]) + "\n");
  EXPECT_EQ(runtime::nccl_tests_row(16777216, 4194304, timing(1472.8, 11.39, 19.94, 0), timing(1472.1, 11.40, 19.94, 0)),
            std::string(kPublishedLines[7]) + "\n");
  EXPECT_EQ(runtime::nccl_tests_row(134217728, 33554432, timing(11382.3, 11.79, 20.64, 0), timing(11380, 11.79, 20.64, 0)),
            std::string(kPublishedLines[8]) + "\n");
  // The time's precision steps at 100 us and 10,000 us; #wrong without validation.
  EXPECT_EQ(runtime::nccl_tests_row(1024, 256, timing(99.994, 0.01, 0.02, std::nullopt), timing(9999.94, 0, 0, 7)),
            "        1024           256     float     sum      -1    99.99    0.01    0.02    N/A   9999.9    0.00    0.00      7\n");
  EXPECT_EQ(runtime::nccl_tests_footer(0, 6.111684), std::string(kPublishedLines[9]) + "\n" + kPublishedLines[10] + "\n#\n");
  EXPECT_EQ(runtime::nccl_tests_footer(3, 1), "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 1 \n#\n");
}

TEST(NcclTestsFormat, ReadBackByTheNcclTestsReader) {
  const std::string log = "# gradsync-run: ncclAllReduce of NCCL 2.27.3 (float sum) on 8 ranks\n" + eight_rank_log(true) +
                          "# wrote 24 records to out.jsonl\n";
  const auto runs = models::read_nccl_tests(log, "gradsync-run.log");
  ASSERT_EQ(runs.size(), 1u);
  const auto& run = runs[0];
  EXPECT_EQ(run.collective, "all_reduce");  // from the "Collective test starting" line
  EXPECT_EQ(run.threads, 1);
  EXPECT_EQ(run.gpus_per_thread, 1);
  EXPECT_EQ(run.ranks(), 8);
  ASSERT_EQ(run.devices.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(run.devices[static_cast<std::size_t>(r)].rank, r);
    EXPECT_EQ(run.devices[static_cast<std::size_t>(r)].device, r);
  }
  EXPECT_EQ(run.devices[3].bus_id, "0x61");
  EXPECT_EQ(run.devices[3].host, "box");
  EXPECT_EQ(run.devices[3].name, "NVIDIA GeForce RTX 4090");
  ASSERT_EQ(run.rows.size(), 12u);
  double bytes = 65536;
  for (std::size_t i = 0; i < run.rows.size(); ++i, bytes *= 2) {
    const auto& row = run.rows[i];
    EXPECT_EQ(row.bytes, bytes);
    EXPECT_EQ(row.count, static_cast<std::uint64_t>(bytes / 4));
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.redop, "sum");
    EXPECT_EQ(row.root, -1);
    ASSERT_TRUE(row.out_of_place && row.in_place);
    // Times as printed: 2, 1 or 0 decimals.
    const double us = kTimesUs[i];
    const double step = (us < 100 ? 0.01 : us < 10000 ? 0.1 : 1) * 0.51;  // half the last printed digit
    EXPECT_NEAR(row.out_of_place->time_us, us, step);
    EXPECT_NEAR(row.in_place->time_us, us * 1.01, step);
    // busbw = algbw x 2 (n - 1) / n, both as printed (2 decimals).
    EXPECT_NEAR(row.out_of_place->algbw_GBps, bytes / (us * 1e-6) / 1e9, 0.005);
    EXPECT_NEAR(row.out_of_place->busbw_GBps, bytes / (us * 1e-6) / 1e9 * 1.75, 0.005);
    EXPECT_NEAR(row.in_place->busbw_GBps, bytes / (us * 1.01e-6) / 1e9 * 1.75, 0.005);
    EXPECT_EQ(row.out_of_place->wrong, 0.0);
    EXPECT_EQ(row.in_place->wrong, 0.0);
  }
  EXPECT_DOUBLE_EQ(run.rows[2].out_of_place->time_us, 119.7);
  EXPECT_EQ(run.out_of_bounds, 0u);
  ASSERT_TRUE(run.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_GBps, 9.5);
  // Without validation #wrong reads as unknown.
  const auto unchecked = models::read_nccl_tests(eight_rank_log(false), "unchecked.log");
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_FALSE(unchecked[0].rows[0].out_of_place->wrong.has_value());
  EXPECT_FALSE(unchecked[0].rows[0].in_place->wrong.has_value());
}

TEST(NcclTestsFormat, CompareReadsItAgainstAShippedTopology) {
  const std::string log = write_temp("gradsync-run-nccl.log", eight_rank_log(true));
  const std::string records = log + ".jsonl";
  const auto r = run_command({GRADSYNC_BIN, "compare", std::string(GRADSYNC_TOPOLOGIES) + "/pcie-8gpu-2switch.json", log, "-x",
                              "analytic", "-o", records},
                             false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("all_reduce_perf, 8 ranks, 12 sizes (65.5 kB - 134.2 MB)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on pcie-8gpu-2switch, strategy nccl on 8 GPUs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sizes >= 1 MiB: median |error|"), std::string::npos) << r.out;
  // The measured column: the printed busbw of the 128 MiB row.
  EXPECT_NE(r.out.find("134.2 MB           20.64"), std::string::npos) << r.out;
  // The measured records are the log's rows: out-of-place times, ranks on gpu0..gpu7.
  std::ifstream in(records);
  int measured = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"executor\":\"measured\"") == std::string::npos) continue;
    EXPECT_NE(line.find("\"rank_nodes\":[\"gpu0\",\"gpu1\",\"gpu2\",\"gpu3\",\"gpu4\",\"gpu5\",\"gpu6\",\"gpu7\"]"),
              std::string::npos) << line;
    ++measured;
  }
  EXPECT_EQ(measured, 12);
  std::filesystem::remove(log);
  std::filesystem::remove(records);
}

TEST(NcclTestsFormat, CompareReadsItAgainstThePublishedBox) {
  ASSERT_TRUE(std::filesystem::exists(kPublishedBox)) << kPublishedBox;
  const std::string log = write_temp("gradsync-run-nccl-box.log", eight_rank_log(true));
  const auto r = run_command({GRADSYNC_BIN, "compare", kPublishedBox, log, "-x", "analytic"}, false);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("all_reduce_perf, 8 ranks, 12 sizes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sizes >= 1 MiB: median |error|"), std::string::npos) << r.out;
  std::filesystem::remove(log);
}
