// nccl-tests output read as measurements: the published machines' logs, the format's
// variants (newer headers, timestamps, old "error" columns, MPI ranks on several hosts,
// trace replay), records of the measured executor checked against the log's own printed
// algbw and busbw, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/topology/importers/import.h"
#include "models/topology/importers/nccl_tests.h"
#include "support/input_error.h"

using namespace gradsync::models;
using test_errors::error_of;

namespace {

std::string published(const std::string& name) { return std::string(GRADSYNC_PUBLISHED_DATA) + "/" + name; }

// A printed figure (two decimals, or fewer digits when wide) and ours agree to its rounding.
void expect_printed(double printed, double ours, const std::string& what) {
  const double tolerance = 0.005 + 0.005 * std::abs(printed);
  EXPECT_NEAR(ours, printed, tolerance) << what;
}

}  // namespace

TEST(NcclTests, ThePublishedFourNinetyLog) {
  const auto runs = read_nccl_tests_files({published("rtx4090-8gpu-dualepyc-p2poff.txt")});
  ASSERT_EQ(runs.size(), 1u);
  const auto& r = runs[0];
  EXPECT_EQ(r.collective, "all_reduce");
  EXPECT_EQ(r.command, "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8");
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.gpus_per_thread, 8);
  ASSERT_EQ(r.devices.size(), 8u);
  EXPECT_EQ(r.ranks(), 8);
  EXPECT_EQ(r.devices[7].device, 7);
  EXPECT_EQ(r.devices[7].bus_id, "0xe1");
  EXPECT_EQ(r.devices[7].name, "NVIDIA GeForce RTX 4090");
  ASSERT_EQ(r.rows.size(), 25u);
  EXPECT_EQ(r.rows.front().bytes, 8);
  EXPECT_EQ(r.rows.front().count, 2u);
  EXPECT_EQ(r.rows.front().type, "float");
  EXPECT_EQ(r.rows.front().redop, "sum");
  EXPECT_EQ(r.rows.front().root, -1);
  EXPECT_DOUBLE_EQ(r.rows.front().out_of_place->time_us, 38.83);
  EXPECT_DOUBLE_EQ(r.rows.front().in_place->time_us, 40.43);
  EXPECT_EQ(r.rows.back().bytes, 134217728);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place->time_us, 16253);
  EXPECT_DOUBLE_EQ(r.rows.back().out_of_place->busbw_GBps, 14.45);
  EXPECT_DOUBLE_EQ(r.rows.back().in_place->busbw_GBps, 14.47);
  EXPECT_EQ(r.rows.back().in_place->wrong, 0);
  EXPECT_EQ(r.out_of_bounds, 0u);
  ASSERT_TRUE(r.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*r.avg_busbw_GBps, 4.85265);
}

TEST(NcclTests, EveryCollectiveOfTheTwoGpuLog) {
  const auto runs = read_nccl_tests_files({published("rtx2080ti-2gpu-pix.txt")});
  std::vector<std::string> names;
  for (const auto& r : runs) names.push_back(r.collective + "/" + std::to_string(r.ranks()));
  EXPECT_EQ(names, (std::vector<std::string>{"all_reduce/2", "all_gather/2", "broadcast/2", "reduce/2", "reduce/1",
                                              "alltoall/2"}));
  for (const auto& r : runs) EXPECT_EQ(r.rows.size(), 28u) << r.where;
  // alltoall prints N/A for the in-place #wrong; broadcast has root 0.
  EXPECT_FALSE(runs[5].rows.back().in_place->wrong);
  EXPECT_EQ(runs[5].rows.back().out_of_place->wrong, 0);
  EXPECT_EQ(runs[2].rows.front().root, 0);
}

TEST(NcclTests, RecordsGiveBackTheLogsOwnBandwidths) {
  // The oracle is nccl-tests itself: its printed algbw and busbw, against what our records
  // compute from size and time with the collective's bus factor.
  int checked = 0;
  for (const auto* file : {"rtx2080ti-2gpu-pix.txt", "rtx4090-8gpu-dualepyc-p2poff.txt", "rtx4090-8gpu-dualepyc-p2pon.txt"}) {
    for (const auto& run : read_nccl_tests_files({published(file)})) {
      const auto records = measured_records(run, "box");
      std::size_t k = 0;
      for (const auto& row : run.rows) {
        for (const auto* timing : {&row.out_of_place, &row.in_place}) {
          ASSERT_TRUE(*timing);
          ASSERT_LT(k, records.size());
          const ResultRecord& rec = records[k++];
          EXPECT_EQ(rec.executor, "measured");
          EXPECT_EQ(rec.strategy, "nccl");
          EXPECT_EQ(rec.params.at("collective"), run.collective);
          EXPECT_EQ(rec.ranks, run.ranks());
          EXPECT_EQ(rec.bytes, row.bytes);
          if (row.bytes == 0 || (*timing)->time_us < 1) continue;  // nothing printed to compare with
          const std::string what = run.where + " row " + std::to_string(row.line + 1);
          expect_printed((*timing)->algbw_GBps, *rec.algbw_GBps(), what + " algbw");
          expect_printed((*timing)->busbw_GBps, *rec.busbw_GBps(), what + " busbw");
          ++checked;
        }
      }
      EXPECT_EQ(k, records.size());
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(NcclTests, NewerAndOlderFormatsAndMpiRanks) {
  // nccl-tests 2.13+: version and "Collective test starting" lines, a timestamp column; MPI
  // ranks on two hosts.
  const std::string newer =
      "# nccl-tests version 2.13.11 nccl-headers=22301 nccl-library=22301\n"
      "# Collective test starting: reduce_scatter_perf\n"
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0 unalign: 0\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   4242 on      nodeA device  0 [0000:18:00] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid   4243 on      nodeB device  0 [0000:18:00] NVIDIA A100-SXM4-80GB\n"
      "#\n"
      "#                                                              out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong  timestamp\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)   "
      "      %Y-%m-%d %H:%M:%S\n"
      "     1048576        131072     float     sum      -1    50.00   20.97   10.49      0    49.00   21.40   10.70"
      "      0  2026-01-02 03:04:05\n"
      "     2097152        262144     float     sum      -1    1.2e+02   17.48    8.74      0    99.50   21.08   10.54"
      "      0  2026-01-02 03:04:06\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 10.1 \n"
      "#\n"
      "# Collective test concluded: reduce_scatter_perf\n";
  auto runs = read_nccl_tests(newer, "newer.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "reduce_scatter");
  EXPECT_EQ(runs[0].version, "2.13.11 nccl-headers=22301 nccl-library=22301");
  EXPECT_EQ(runs[0].ranks(), 2);
  ASSERT_EQ(runs[0].rows.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].rows[1].out_of_place->time_us, 120);
  const auto records = measured_records(runs[0], "two-nodes");
  EXPECT_EQ(records[0].rank_nodes, (std::vector<std::string>{"nodeA/gpu0", "nodeB/gpu0"}));
  EXPECT_DOUBLE_EQ(records[0].busbw_factor, 0.5);

  // Old nccl-tests: no root column, "error" instead of #wrong; the command after mpirun.
  const std::string older =
      "$ mpirun -np 4 ./build/all_gather_perf -b 8M -e 8M -g 1\n"
      "# nThread 1 nGpus 1 minBytes 8388608 maxBytes 8388608 step: 1048576(bytes) warmup iters: 5 iters: 20 validation: 1\n"
      "#\n"
      "#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     8388608        524288   float    none    400.0   20.97   15.73  0e+00    390.0   21.51   16.13  0e+00\n"
      "# Out of bounds values : 0 OK\n";
  runs = read_nccl_tests(older, "older.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[0].ranks(), 4);  // no device lines: mpirun -np 4 (and busbw / algbw = 3/4 agrees)
  EXPECT_EQ(runs[0].ranks_basis(), "the command line (4 processes)");
  EXPECT_FALSE(runs[0].rows[0].root);
  EXPECT_EQ(runs[0].rows[0].in_place->wrong, 0);
  EXPECT_DOUBLE_EQ(runs[0].rows[0].in_place->time_us, 390);

  // Trace replay: the out-of-place group left blank.
  const std::string replay =
      "./build/broadcast_perf -g 2\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "           8             2     float    none       0                                       5.00    0.00    0.00      0\n";
  runs = read_nccl_tests(replay, "replay.txt");
  ASSERT_EQ(runs[0].rows.size(), 1u);
  EXPECT_FALSE(runs[0].rows[0].out_of_place);
  EXPECT_DOUBLE_EQ(runs[0].rows[0].in_place->time_us, 5);
  EXPECT_EQ(measured_records(runs[0], "x").size(), 1u);
}

TEST(NcclTests, AnImportKeepsTheRunsBesideTheTopology) {
  const auto imported = import_tool_files({published("rtx4090-8gpu-dualepyc-p2pon.txt")});
  ASSERT_EQ(imported.nccl_tests.size(), 1u);
  EXPECT_EQ(imported.nccl_tests[0].collective, "all_reduce");
  bool noted = false;
  for (const auto& n : imported.notes) noted = noted || n.find("nccl-tests all_reduce_perf, 8 ranks, 25 sizes") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(NcclTests, BadRowsNameTheFileLineAndToken) {
  const std::string head =
      "./build/all_reduce_perf -g 2\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  8  2  float  sum  -1  5.x  0.00  0.00  0  5.00  0.00  0.00  0\n", "b.txt"); }),
            "b.txt:4: \"5.x\" is not a time in microseconds; expected a number >= 0");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  8  2  float  sum  -1  5.0  0.00  0.00\n", "b.txt"); }),
            "b.txt:4: an nccl-tests row of 8 fields; the table's header has 13 columns");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  8.5  2  float  sum  -1  5.0  0.00  0.00  0  5.0  0.00  0.00  0\n", "b.txt"); }),
            "b.txt:4: \"8.5\" is not a size in bytes; expected a whole number of bytes up to 1 PiB");
  // Found by the nccl_tests_log fuzzer: a root or count past what an int (or uint64) holds.
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  8  2  float  sum  -5e115  5.0  0.00  0.00  0  5.0  0.00  0.00  0\n", "b.txt"); }),
            "b.txt:4: \"-5e115\" is not a root rank; expected a whole number from -1 to 1048576");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  8  1e30  float  sum  -1  5.0  0.00  0.00  0  5.0  0.00  0.00  0\n", "b.txt"); }),
            "b.txt:4: \"1e30\" is not an element count; expected a whole number up to 2^50");
  EXPECT_EQ(error_of([] { read_nccl_tests("# nThread 1 nGpus 1\n#  Rank 99999999999 Group  0 Pid  1 on h device  0 [0x01] GPU\n", "b.txt"); }),
            "b.txt:2: a device line of rank 99999999999, device 0; expected numbers below 10^7");
  EXPECT_EQ(error_of([] { read_nccl_tests("# nThread 1 nGpus 1\n# Out of bounds values : 99999999999999999999 OK\n", "b.txt"); }),
            "b.txt:2: out of bounds values 99999999999999999999; expected a count up to 10^15");
  // A #wrong past what a count holds is kept as printed, but not as a count of elements (UB before).
  const auto wrong = read_nccl_tests(head + "  8  2  float  sum  -1  5.0  0.00  0.00  7.7e89  5.0  0.00  0.00  0\n", "b.txt");
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_FALSE(measured_records(wrong[0], "t").front().wrong_elements.has_value());
  EXPECT_EQ(measured_records(wrong[0], "t").back().wrong_elements, 0u);
  EXPECT_EQ(error_of([] { read_nccl_tests("# nThread 0 nGpus 2 minBytes 8\n", "b.txt"); }),
            "b.txt:1: nThread 0; expected a count of 1 or more, as nccl-tests prints it");
  EXPECT_EQ(error_of([] { read_nccl_tests("# nThread 1 nGpus 2\n#  Rank  0 Group  0 Pid  1 on h\xff device  0 [0x01] GPU\n", "b.txt"); }),
            "b.txt:2: byte 0xFF at column 32 is not UTF-8 text; expected the printed output of nccl-tests (ASCII or UTF-8)");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head.substr(head.find("#       size")), "b.txt"); }),
            "b.txt:1: an nccl-tests table without its \"# nThread ... nGpus ...\" line; expected the whole output of the "
            "*_perf program, which says how many ranks ran");
  EXPECT_EQ(error_of([] { read_nccl_tests_files({"/nonexistent/nccl.txt"}); }), "/nonexistent/nccl.txt: no such file");
}

// Multi-node logs as published: device lines on several hosts, or none (cut) with the ranks
// in the launcher's command, or neither (the table's busbw / algbw); a collective named only
// by a heading; commands over several lines; the command's NCCL_* settings.
TEST(NcclTests, MultiNodeLogsReadWithTheirRanksAndHosts) {
  auto runs = read_nccl_tests_files({published("multinode/h100-hgx-2node-16gpu-8x400g-ib-a.txt")});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "all_reduce");
  EXPECT_EQ(runs[0].ranks(), 16);
  EXPECT_EQ(runs[0].hosts(), 2);
  EXPECT_EQ(runs[0].processes, 16);  // mpirun --np 16 -H bm-h100-01:8,bm-h100-02:8 \ ... over eight lines
  EXPECT_EQ(runs[0].hosts_named, 2);
  EXPECT_EQ(runs[0].environment.at("NCCL_NET_GDR_LEVEL"), "1");
  EXPECT_EQ(runs[0].environment.at("NCCL_P2P_LEVEL"), "NVL");

  runs = read_nccl_tests_files({published("multinode/h100-hgx-2node-16gpu-8x400g-ib-b.txt")});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].collective, "all_reduce");  // from the heading: the run has no command
  EXPECT_EQ(runs[0].command, "");
  EXPECT_EQ(runs[0].ranks(), 16);
  EXPECT_EQ(runs[0].hosts(), 2);
  EXPECT_TRUE(runs[0].environment.empty());
  EXPECT_EQ(runs[1].environment.at("NCCL_ALGO"), "Ring");
  EXPECT_EQ(runs[1].environment.at("NCCL_MIN_CTAS"), "24");
  EXPECT_EQ(runs[1].processes_per_host, 8);

  runs = read_nccl_tests_files({published("multinode/h100-hgx-4node-32gpu-8x400g-ib-b.txt")});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].devices.empty());
  EXPECT_EQ(runs[0].ranks(), 32);  // mpirun -np 32 -N 8
  EXPECT_EQ(runs[0].ranks_basis(), "the command line (32 processes)");
  EXPECT_EQ(runs[0].hosts(), 4);

  runs = read_nccl_tests_files({published("multinode/h100-hgx-8node-64gpu-8x400g-ib-b.txt")});
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.collective, "all_reduce") << r.where;
    EXPECT_EQ(r.ranks(), 64) << r.where;
  }
  EXPECT_EQ(runs[0].ranks_basis(), "busbw / algbw");  // no device lines, no command
  EXPECT_FALSE(runs[0].hosts());                      // unknown: the topology says
  EXPECT_EQ(runs[1].hosts(), 8);                      // -np 64 -N 8
  EXPECT_EQ(runs[1].environment.at("NCCL_IB_QPS_PER_CONNECTION"), "2");
}

// The rank count from busbw / algbw is the collective's: all-reduce 2(n-1)/n, all-gather (n-1)/n;
// broadcast's factor is 1 whatever n, so it says nothing.
TEST(NcclTests, RanksFromTheBusFactor) {
  const std::string head =
      "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#       size   count  type  redop  root   time  algbw  busbw #wrong   time  algbw  busbw #wrong\n";
  auto runs = read_nccl_tests("## all_gather_perf on 3 nodes\n" + head +
                                  "  1048576  262144  float  none  -1  100.0  10.49  9.83  0  100.0  10.49  9.83  0\n",
                              "ag.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[0].ranks(), 16);  // 15/16 = 0.9375
  runs = read_nccl_tests("## broadcast_perf\n" + head +
                             "  1048576  262144  float  none  0  100.0  10.49  10.49  0  100.0  10.49  10.49  0\n",
                         "b.txt");
  EXPECT_EQ(runs[0].ranks(), 1);
  EXPECT_EQ(runs[0].ranks_basis(), "one process");
}
