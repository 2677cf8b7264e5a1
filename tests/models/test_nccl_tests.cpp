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

// A fork of nccl-tests (published sweep of an 8 x A100 SXM4 80 GB pod) prefixes every row with
// "[STAT]:" (the size then unpadded) and adds "[SETTING]" and "[INIT]" lines; its alltoall runs
// are one process of N threads ("nThread 2 nGpus 1"). Excerpts as printed.
TEST(NcclTests, AForksStatRowsAndItsSettingLines) {
  const std::string log =
      "### nccl-tests: all_reduce_perf -b 96 -e 400M -f 2 -g 2 (2 GPUs) - exps/cw/all_reduce_2.txt\n"  // 1
      "\n"
      "```\n"
      "# nThread 1 nGpus 2 minBytes 96 maxBytes 419430400 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"  // 4
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  19938 on sshd-6dd579cbbc-ddzsw device  0 [0x27] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid  19938 on sshd-6dd579cbbc-ddzsw device  1 [0x2a] NVIDIA A100-SXM4-80GB\n"
      "[SETTING]: gpus[0]=0\n"
      "[SETTING]: gpus[1]=1\n"  // 10
      "[INIT]: comms[0] is at 0x5622aea25510\n"
      "[INIT]: comms[1] is at 0x5622aea25518\n"
      "#\n"
      "#                                                              out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"  // 15
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
      "[STAT]:   96            24     float     sum      -1     8.51    0.01    0.01      0     8.32    0.01    0.01      0\n"  // 17
      "[STAT]: 1536           384     float     sum      -1    10.16    0.15    0.15      0     9.13    0.17    0.17      0\n"
      "[STAT]:1572864        393216     float     sum      -1    57.68   27.27   27.27      0    57.44   27.38   27.38      0\n"
      "[STAT]:402653184     100663296     float     sum      -1   2018.6  199.47  199.47      0   2017.8  199.55  199.55      0\n"  // 20
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 52.0199 \n"
      "#\n"
      "```\n"
      "\n"
      "### nccl-tests: alltoall_perf -b 96 -e 4096M -f 2 -g 1 -t 2 (2 GPUs) - exps/cw/alltoall_2.txt\n"  // 26
      "\n"
      "```\n"
      "# nThread 2 nGpus 1 minBytes 96 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n"  // 30
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid 156704 on sshd-6dd579cbbc-ddzsw device  0 [0x27] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid 156704 on sshd-6dd579cbbc-ddzsw device  1 [0x2a] NVIDIA A100-SXM4-80GB\n"
      "[SETTING]: gpus[0]=0\n"
      "[SETTING]: gpus[1]=1\n"  // 35
      "[INIT]: comms[0] is at 0x560d576dbaf0\n"
      "[INIT]: comms[1] is at 0x560d576dbaf8\n"
      "#\n"
      "#                                                              out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"  // 40
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
      "[STAT]:   96            12     float    none      -1    16.39    0.01    0.00      0    16.18    0.01    0.00    N/A\n"  // 42
      "[STAT]:3221225472     402653184     float    none      -1   8883.8  362.59  181.30      0   6901.6  466.74  233.37    N/A\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 55.1947 \n"
      "#\n"
      "```\n";
  const auto runs = read_nccl_tests(log, "sweep.txt");
  ASSERT_EQ(runs.size(), 2u);
  const auto& ar = runs[0];
  EXPECT_EQ(ar.collective, "all_reduce");
  EXPECT_EQ(ar.where, "sweep.txt:4");
  EXPECT_EQ(ar.ranks(), 2);
  EXPECT_EQ(ar.ranks_basis(), "device lines");
  ASSERT_EQ(ar.rows.size(), 4u);
  EXPECT_EQ(ar.rows[0].line, 16u);
  EXPECT_EQ(ar.rows[0].bytes, 96);
  EXPECT_EQ(ar.rows[0].count, 24u);
  EXPECT_EQ(ar.rows[0].redop, "sum");
  EXPECT_EQ(ar.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(ar.rows[0].out_of_place->time_us, 8.51);
  EXPECT_DOUBLE_EQ(ar.rows[0].in_place->time_us, 8.32);
  EXPECT_EQ(ar.rows[2].bytes, 1572864);
  EXPECT_EQ(ar.rows[2].count, 393216u);
  EXPECT_DOUBLE_EQ(ar.rows[2].out_of_place->busbw_GBps, 27.27);
  EXPECT_EQ(ar.rows[3].bytes, 402653184);
  EXPECT_DOUBLE_EQ(ar.rows[3].out_of_place->time_us, 2018.6);
  EXPECT_DOUBLE_EQ(ar.rows[3].in_place->algbw_GBps, 199.55);
  EXPECT_EQ(ar.rows[3].in_place->wrong, 0);
  ASSERT_TRUE(ar.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*ar.avg_busbw_GBps, 52.0199);
  EXPECT_EQ(ar.nccl_version, "");  // the fork's logs do not say

  const auto& a2a = runs[1];
  EXPECT_EQ(a2a.collective, "alltoall");
  EXPECT_EQ(a2a.threads, 2);
  EXPECT_EQ(a2a.gpus_per_thread, 1);
  EXPECT_EQ(a2a.ranks(), 2);
  ASSERT_EQ(a2a.rows.size(), 2u);
  EXPECT_EQ(a2a.rows[1].line, 42u);
  EXPECT_EQ(a2a.rows[1].bytes, 3221225472.0);
  EXPECT_EQ(a2a.rows[1].count, 402653184u);
  EXPECT_EQ(a2a.rows[1].redop, "none");
  EXPECT_DOUBLE_EQ(a2a.rows[1].out_of_place->time_us, 8883.8);
  EXPECT_DOUBLE_EQ(a2a.rows[1].out_of_place->busbw_GBps, 181.30);
  EXPECT_DOUBLE_EQ(a2a.rows[1].in_place->busbw_GBps, 233.37);
  EXPECT_FALSE(a2a.rows[1].in_place->wrong);  // N/A
  // The records give back the printed bandwidths: alltoall's factor (n-1)/n on 2 ranks.
  const auto records = measured_records(a2a, "a100");
  ASSERT_EQ(records.size(), 4u);
  expect_printed(181.30, *records[2].busbw_GBps(), "alltoall busbw");

  // A [STAT] row whose figures are wrong is still an error naming the line and the token.
  const std::string head = log.substr(0, log.find("[STAT]:   96"));
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "[STAT]:   96   24   float   sum   -1   8.5l   0.01   0.01   0   8.32   0.01   0.01   0\n", "s.txt"); }),
            "s.txt:17: \"8.5l\" is not a time in microseconds; expected a number >= 0");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "[STAT]:96.5   24   float   sum   -1   8.51   0.01   0.01   0   8.32   0.01   0.01   0\n", "s.txt"); }),
            "s.txt:17: \"96.5\" is not a size in bytes; expected a whole number of bytes up to 1 PiB");
  // Only the prefix is taken off: a row of other text still ends the table, as before.
  const auto other = read_nccl_tests(head + "[STAT]: done\n# Out of bounds values : 0 OK\n", "s.txt");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_TRUE(other[0].rows.empty());
}

// Old nccl-tests (2021, SuperBench's fixtures of an 8 x A100 SXM4 VM): device lines without
// "Group", an "error" column, all_gather without redop or root, and an alltoall table whose
// header has a redop column but whose rows leave that cell blank.
TEST(NcclTests, OldTablesWithBlankRedopCells) {
  const std::string alltoall =
      "### nccl-tests: alltoall_perf, 8 GPUs\n"  // 1
      "# nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
      "#\n"
      "# Using devices\n"
      "#   Rank  0 Pid 167261 on localhost device  0 [0x00] A100-SXM4-40GB\n"  // 5
      "#   Rank  1 Pid 167261 on localhost device  1 [0x00] A100-SXM4-40GB\n"
      "#   Rank  2 Pid 167261 on localhost device  2 [0x00] A100-SXM4-40GB\n"
      "#   Rank  3 Pid 167261 on localhost device  3 [0x00] A100-SXM4-40GB\n"
      "#   Rank  4 Pid 167261 on localhost device  4 [0x00] A100-SXM4-40GB\n"
      "#   Rank  5 Pid 167261 on localhost device  5 [0x00] A100-SXM4-40GB\n"  // 10
      "#   Rank  6 Pid 167261 on localhost device  6 [0x00] A100-SXM4-40GB\n"
      "#   Rank  7 Pid 167261 on localhost device  7 [0x00] A100-SXM4-40GB\n"
      "#\n"
      "#                                                     out-of-place                       in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"  // 15
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "           0             0   float             1.63    0.00    0.00    N/A     1.38    0.00    0.00    N/A\n"  // 17
      "          32             1   float            89.00    0.00    0.00    N/A    85.13    0.00    0.00    N/A\n"
      "  8589934592     268435456   float            33508  256.36  224.31    N/A    33234  258.47  226.16    N/A\n"
      "# Out of bounds values : 0 OK\n"  // 20
      "# Avg bus bandwidth    : 58.6481\n";
  auto runs = read_nccl_tests(alltoall, "a100.txt");
  ASSERT_EQ(runs.size(), 1u);
  const auto& r = runs[0];
  EXPECT_EQ(r.collective, "alltoall");
  ASSERT_EQ(r.devices.size(), 8u);  // "Rank  0 Pid ..." without Group
  EXPECT_EQ(r.ranks_basis(), "device lines");
  EXPECT_EQ(r.ranks(), 8);
  EXPECT_EQ(r.devices[7].host, "localhost");
  EXPECT_EQ(r.devices[7].device, 7);
  EXPECT_EQ(r.devices[7].bus_id, "0x00");
  EXPECT_EQ(r.devices[7].name, "A100-SXM4-40GB");
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].bytes, 0);
  EXPECT_EQ(r.rows[0].type, "float");
  EXPECT_EQ(r.rows[0].redop, "");
  EXPECT_FALSE(r.rows[0].root);
  EXPECT_DOUBLE_EQ(r.rows[0].out_of_place->time_us, 1.63);
  EXPECT_DOUBLE_EQ(r.rows[0].in_place->time_us, 1.38);
  EXPECT_FALSE(r.rows[0].out_of_place->wrong);
  EXPECT_EQ(r.rows[2].bytes, 8589934592.0);
  EXPECT_EQ(r.rows[2].count, 268435456u);
  EXPECT_DOUBLE_EQ(r.rows[2].out_of_place->time_us, 33508);
  EXPECT_DOUBLE_EQ(r.rows[2].out_of_place->algbw_GBps, 256.36);
  EXPECT_DOUBLE_EQ(r.rows[2].out_of_place->busbw_GBps, 224.31);
  EXPECT_DOUBLE_EQ(r.rows[2].in_place->busbw_GBps, 226.16);
  expect_printed(224.31, *measured_records(r, "a100")[4].busbw_GBps(), "alltoall busbw, 7/8 of algbw");

  // all_gather of the same year: neither redop nor root; broadcast: root only.
  const std::string all_gather =
      "### nccl-tests: all_gather_perf, 8 GPUs\n"
      "# nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
      "#\n"
      "#                                             out-of-place                       in-place\n"
      "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "          64             2   float    34.36    0.00    0.00    N/A    33.83    0.00    0.00    N/A\n"
      "  8589934592     268435456   float    40960  209.72  183.51  0e+00    40948  209.78  183.56  0e+00\n"
      "### nccl-tests: broadcast_perf, 8 GPUs\n"
      "# nThread 1 nGpus 8 minBytes 1 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 validation: 0\n"
      "#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "          16             4   float       0    34.47    0.00    0.00    N/A    34.85    0.00    0.00    N/A\n";
  runs = read_nccl_tests(all_gather, "a100.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[0].ranks(), 8);  // busbw / algbw = 7/8
  ASSERT_EQ(runs[0].rows.size(), 2u);
  EXPECT_EQ(runs[0].rows[1].redop, "");
  EXPECT_FALSE(runs[0].rows[1].root);
  EXPECT_DOUBLE_EQ(runs[0].rows[1].out_of_place->time_us, 40960);
  EXPECT_EQ(runs[0].rows[1].in_place->wrong, 0);
  EXPECT_EQ(runs[1].collective, "broadcast");
  ASSERT_EQ(runs[1].rows.size(), 1u);
  EXPECT_EQ(runs[1].rows[0].root, 0);
  EXPECT_DOUBLE_EQ(runs[1].rows[0].in_place->time_us, 34.85);

  // A blank redop cell (or root, or both) reads only where the figures then line up.
  const std::string head = alltoall.substr(0, alltoall.find("           0             0   float"));
  const std::string both =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  runs = read_nccl_tests(both + "  8  2  float  5.00  0.00  0.00  0  5.00  0.00  0.00  0\n"  // no redop, no root
                             + "  8  2  float  -1  5.00  0.00  0.00  0  5.00  0.00  0.00  0\n"  // no redop
                             + "  8  2  float  sum  5.00  0.00  0.00  0  5.00  0.00  0.00  0\n",  // no root
                         "b.txt");
  ASSERT_EQ(runs[0].rows.size(), 3u);
  EXPECT_EQ(runs[0].rows[0].redop, "");
  EXPECT_FALSE(runs[0].rows[0].root);
  EXPECT_EQ(runs[0].rows[1].redop, "");
  EXPECT_EQ(runs[0].rows[1].root, -1);
  EXPECT_EQ(runs[0].rows[2].redop, "sum");
  EXPECT_FALSE(runs[0].rows[2].root);
  for (const auto& row : runs[0].rows) EXPECT_DOUBLE_EQ(row.out_of_place->time_us, 5) << row.line;

  // Strict otherwise: a short row whose figures do not line up names the line and the token.
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  32  1  float  89.00  0.0x  0.00  N/A  85.13  0.00  0.00  N/A\n", "a.txt"); }),
            "a.txt:17: an nccl-tests row of 11 fields; the table's header has 12 columns, and without its redop cell "
            "\"0.0x\" is not a bandwidth in GB/s; expected a number >= 0");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  32  1  89.00  0.00  0.00  N/A  85.13  0.00  0.00  N/A  7\n", "a.txt"); }),
            "a.txt:17: an nccl-tests row of 11 fields; the table's header has 12 columns, and without its redop cell "
            "\"89.00\" is not a data type; expected a name such as float");
  EXPECT_EQ(error_of([&] { read_nccl_tests(head + "  32  1  float  89.00  0.00  0.00  85.13  0.00  0.00  N/A\n", "a.txt"); }),
            "a.txt:17: an nccl-tests row of 10 fields; the table's header has 12 columns");
  EXPECT_EQ(error_of([&] { read_nccl_tests(both + "  8  2  float  5.00  0.00  0.00  0  5.00  0.00  0.00\n", "b.txt"); }),
            "b.txt:3: an nccl-tests row of 10 fields; the table's header has 13 columns");
  EXPECT_EQ(error_of([&] { read_nccl_tests(both + "  8  2  5.00  0.00  0.00  0  5.00  0.00  0.00  0  1\n", "b.txt"); }),
            "b.txt:3: an nccl-tests row of 11 fields; the table's header has 13 columns, and without its redop and root "
            "cells \"5.00\" is not a data type; expected a name such as float");
}

// NCCL_DEBUG=INFO lines (8 x H100 HGX, nccl-tests 2.18.3 on NCCL 2.29.2): NCCL prints them while
// nccl-tests prints a row, so a row comes in three pieces, the first two with an INFO line glued
// to them ("-1" then the host "38dcf168f605"). Every INFO line is skipped, the row read whole.
TEST(NcclTests, InfoLinesCutARowInPieces) {
  const std::string info = "38dcf168f605:1343:1343 [0] NCCL INFO AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}\n";
  const std::string log =
      "### nccl-tests all_reduce_perf, 2 GPUs, NCCL_DEBUG=INFO (results/scaling_attributed/g2_auto.log)\n"  // 1
      "# nccl-tests version 2.18.3 nccl-headers=22902 nccl-library=22902\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 2 minBytes 268435456 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 50 agg iters: 1 "
      "validation: 1 graph: 0 unalign: 0\n"  // 4
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid   1343 on 38dcf168f605 device  0 [0000:41:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   1343 on 38dcf168f605 device  1 [0000:44:00] NVIDIA H100 80GB HBM3\n"
      "38dcf168f605:1343:1343 [0] NCCL INFO cudaDriverVersion 13010\n"
      "38dcf168f605:1343:1343 [0] NCCL INFO NCCL version 2.29.2+cuda13.1\n"  // 10
      "#\n"
      "#                                                              out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"
      "38dcf168f605:1343:1343 [1] NCCL INFO Symmetric VA size=80GB\n"  // 15
      + info + info +
      "   268435456      67108864     float     sum      -1" + info +  // 18
      info + info +
      "    893.63  300.39  300.39       0" + info +  // 21
      info +
      "    896.61  299.39  299.39       0\n"  // 23
      "   536870912     134217728     float     sum      -1" + info +  // 24
      "   1710.60  313.85  313.85       0" + info +
      "   1709.84  313.99  313.99       0\n"  // 26
      "38dcf168f605:1343:1343 [0] NCCL INFO comm 0x55895a6f4cc0 rank 0 nranks 2 cudaDev 0 busId 41000 - Destroy COMPLETE\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 328.358 \n";
  const auto runs = read_nccl_tests(log, "g2.log");
  ASSERT_EQ(runs.size(), 1u);
  const auto& r = runs[0];
  EXPECT_EQ(r.collective, "all_reduce");
  EXPECT_EQ(r.ranks(), 2);
  EXPECT_EQ(r.version, "2.18.3 nccl-headers=22902 nccl-library=22902");
  EXPECT_EQ(r.nccl_version, "2.29.2");
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].line, 17u);
  EXPECT_EQ(r.rows[0].last_line, 22u);
  EXPECT_EQ(r.rows[0].bytes, 268435456);
  EXPECT_EQ(r.rows[0].count, 67108864u);
  EXPECT_EQ(r.rows[0].redop, "sum");
  EXPECT_EQ(r.rows[0].root, -1);  // "-1" before the host "38dcf168f605", not "-138"
  EXPECT_DOUBLE_EQ(r.rows[0].out_of_place->time_us, 893.63);
  EXPECT_DOUBLE_EQ(r.rows[0].out_of_place->busbw_GBps, 300.39);
  EXPECT_EQ(r.rows[0].out_of_place->wrong, 0);
  EXPECT_DOUBLE_EQ(r.rows[0].in_place->time_us, 896.61);
  EXPECT_DOUBLE_EQ(r.rows[0].in_place->algbw_GBps, 299.39);
  EXPECT_EQ(r.rows[1].line, 23u);
  EXPECT_EQ(r.rows[1].last_line, 25u);
  EXPECT_EQ(r.rows[1].bytes, 536870912);
  EXPECT_DOUBLE_EQ(r.rows[1].out_of_place->time_us, 1710.60);
  EXPECT_DOUBLE_EQ(r.rows[1].in_place->busbw_GBps, 313.99);
  ASSERT_TRUE(r.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*r.avg_busbw_GBps, 328.358);
  const auto records = measured_records(r, "h100");
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[1].notes.back(), "nccl-tests g2.log:18");
  expect_printed(300.39, *records[0].busbw_GBps(), "busbw of the cut row");

  // A row cut by INFO lines that never goes on: the row's own line, and what was expected.
  const std::string cut = log.substr(0, log.find("    893.63"));
  EXPECT_EQ(error_of([&] { read_nccl_tests(cut + "# Out of bounds values : 0 OK\n", "g2.log"); }),
            "g2.log:18: an nccl-tests row of 5 fields cut by NCCL's log lines does not go on: line 21 ends the table; "
            "expected the rest of its 13 columns after the NCCL lines");
  EXPECT_EQ(error_of([&] { read_nccl_tests(cut, "g2.log"); }),
            "g2.log:18: an nccl-tests row of 5 fields cut by NCCL's log lines does not go on: the file ends at line 20; "
            "expected the rest of its 13 columns after the NCCL lines");
  // Its pieces are read as strictly as a whole row.
  EXPECT_EQ(error_of([&] { read_nccl_tests(cut + "    893.63  300.39  3OO.39       0" + info + "    896.61  299.39  299.39  0\n", "g2.log"); }),
            "g2.log:18: \"3OO.39\" is not a bandwidth in GB/s; expected a number >= 0");
}

// The NCCL library's version: nccl-tests >= 2.13 prints its code (nccl-library=22703); NCCL
// itself prints "NCCL version 2.16.5+cuda11.8" (alone, or as an INFO line) inside the run or
// just before it.
TEST(NcclTests, TheLibraryVersionOfEachRun) {
  EXPECT_EQ(nccl_version_of_code(22703), "2.27.3");
  EXPECT_EQ(nccl_version_of_code(21605), "2.16.5");
  EXPECT_EQ(nccl_version_of_code(22907), "2.29.7");
  EXPECT_EQ(nccl_version_of_code(2804), "2.8.4");  // before 2.9: X * 1000 + Y * 100 + Z
  EXPECT_EQ(nccl_version_of_code(2408), "2.4.8");
  EXPECT_FALSE(nccl_version_of_code(0));
  EXPECT_FALSE(nccl_version_of_code(5000));
  EXPECT_FALSE(nccl_version_of_code(99999999));

  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    50.00   20.97   20.97      0    49.00   21.40   21.40      0\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 21.1 \n";
  const std::string log =
      // The rtx4090-48g log: nccl-tests 2.17.6 built on 2.25.1 headers, run on NCCL 2.27.3.
      "# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22703\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n"
      "NCCL version 2.27.3+cuda12.9\n" +
      table +
      // An A100 PCIe log: NCCL's own line alone, inside the run, after the device lines.
      "./build/all_reduce_perf -b 1M -e 1M -g 2\n"
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n"
      "#  Rank  0 Group  0 Pid 2040420 on       n013 device  0 [0000:01:00] NVIDIA A100-PCIE-40GB\n"
      "#  Rank  1 Group  0 Pid 2040421 on       n013 device  1 [0000:81:00] NVIDIA A100-PCIE-40GB\n"
      "NCCL version 2.16.5+cuda11.8\n" +
      table +
      // An INFO line just before the run.
      "gcn155:1539476:1539476 [3] NCCL INFO NCCL version 2.22.3+cuda12.6\n"
      "./build/all_reduce_perf -b 1M -e 1M -g 2\n"
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n" +
      table +
      // Nothing said: none (not the previous run's).
      "./build/all_reduce_perf -b 1M -e 1M -g 2\n"
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n" +
      table +
      // An INFO line after a run's table belongs to the next run, if any.
      "host1:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
      "# nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576\n" +
      table;
  const auto runs = read_nccl_tests(log, "v.log");
  ASSERT_EQ(runs.size(), 5u);
  EXPECT_EQ(runs[0].nccl_version, "2.27.3");  // the code, not the headers' 2.25.1
  EXPECT_EQ(runs[1].nccl_version, "2.16.5");
  EXPECT_EQ(runs[2].nccl_version, "2.22.3");
  EXPECT_EQ(runs[3].nccl_version, "");
  EXPECT_EQ(runs[4].nccl_version, "2.18.1");
  for (const auto& r : runs) {
    EXPECT_EQ(r.rows.size(), 1u) << r.where;
    EXPECT_EQ(r.ranks(), 2) << r.where;
  }
  // describe() keeps its text (the docs show it); the version is a field of its own.
  EXPECT_EQ(runs[0].describe(), "all_reduce_perf, 2 ranks (from busbw / algbw), 1 sizes (1.0 MB - 1.0 MB), v.log:3");
}

// Terminal escape sequences (a captured terminal's colours and underlines) are not part of the
// text: an nccl-tests log with them reads as without them.
TEST(NcclTests, TerminalEscapeSequencesAreIgnored) {
  const std::string log =
      "\x1b[1m./build/all_gather_perf -b 8 -e 8 -g 2\x1b[0m\n"
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8\n"
      "\x1b[4m#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\x1b[0m\n"
      "           8             1     float    none      -1    \x1b[32m12.50\x1b[0m    0.00    0.00      0    12.25    0.00    0.00      0\n"
      "\x1b[1;32m# Avg bus bandwidth    : 0.0001\x1b[m\n";
  const auto runs = read_nccl_tests(log, "color.log");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[0].command, "./build/all_gather_perf -b 8 -e 8 -g 2");
  ASSERT_EQ(runs[0].rows.size(), 1u);
  EXPECT_DOUBLE_EQ(runs[0].rows[0].out_of_place->time_us, 12.5);
  EXPECT_DOUBLE_EQ(runs[0].rows[0].in_place->time_us, 12.25);
  ASSERT_TRUE(runs[0].avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*runs[0].avg_busbw_GBps, 0.0001);
  // An escape byte that starts no sequence stays, and the figure it sits in is an error.
  EXPECT_EQ(error_of([] {
              read_nccl_tests("# nThread 1 nGpus 2\n"
                              "#       size   count  type  redop  root   time  algbw  busbw #wrong   time  algbw  busbw #wrong\n"
                              "  8  1  float  none  -1  12.5\x1b  0.00  0.00  0  12.25  0.00  0.00  0\n",
                              "e.log");
            }),
            "e.log:3: \"12.5\x1b\" is not a time in microseconds; expected a number >= 0");
}

// Published multi-node logs cut down to their table (the column header re-added, no "# nThread"
// line): a run of its own where a heading or a command named the *_perf program, its ranks
// from the command or from busbw / algbw. Without either, still the error it was.
TEST(NcclTests, AHeadingNamesTheSettingsItsRunRanWith) {
  // "### nccl-tests all_reduce_perf, NCCL_P2P_LEVEL=SYS": the heading's NCCL_* settings are the run's,
  // as a command's would be; a heading without them sets none.
  const std::string table =
      "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    38.82    0.00    0.00      0    38.16    0.00    0.00      0\n";
  const auto runs = read_nccl_tests("### nccl-tests all_reduce_perf, NCCL_P2P_LEVEL=SYS, 8 of the host's 9 GPUs\n" + table +
                                        "### nccl-tests all_reduce_perf, NCCL's default P2P level\n" + table,
                                    "levels.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].environment.at("NCCL_P2P_LEVEL"), "SYS");
  EXPECT_EQ(runs[0].environment.size(), 1u);
  EXPECT_TRUE(runs[1].environment.empty());
}

TEST(NcclTests, ATableAloneIsARunWhereItsProgramIsNamed) {
  const std::string v100 =
      "# Environment / command: FI_PROVIDER=efa FI_EFA_TX_MIN_CREDITS=64 NCCL_TREE_THRESHOLD=0 (forces ring for all\n"
      "# sizes in NCCL 2.4); all_reduce_perf -b 8 -e 1G -f 2 -g 1 -c 1 -n 100\n"
      "\n"
      "### nccl-tests all_reduce_perf\n"  // 4
      "#                                                 out-of-place                    in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"  // 6
      "#        (B)    (elements)                      (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "           8             2   float     sum    145.4    0.00    0.00  2e-07    152.8    0.00    0.00  1e-07\n"
      "   536870912     134217728   float     sum   115842    4.63    8.69  5e-07   115590    4.64    8.69  5e-07\n"
      "  1073741824     268435456   float     sum   228178    4.71    8.82  5e-07   224997    4.77    8.95  5e-07\n";
  auto runs = read_nccl_tests(v100, "v100.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].collective, "all_reduce");
  EXPECT_EQ(runs[0].where, "v100.txt:6");
  EXPECT_EQ(runs[0].ranks(), 16);  // busbw / algbw = 8.95 / 4.77 = 2 x 15/16
  EXPECT_EQ(runs[0].ranks_basis(), "busbw / algbw");
  ASSERT_EQ(runs[0].rows.size(), 3u);
  EXPECT_DOUBLE_EQ(runs[0].rows[2].in_place->time_us, 224997);
  EXPECT_DOUBLE_EQ(*runs[0].rows[2].in_place->wrong, 5e-07);

  // Two such tables, each under its heading.
  runs = read_nccl_tests(v100 + "\n### nccl-tests all_gather_perf\n" +
                             v100.substr(v100.find("#       size")).replace(v100.substr(v100.find("#       size")).find("8.95"), 4, "4.47"),
                         "v100.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].collective, "all_gather");
  EXPECT_EQ(runs[1].ranks(), 16);  // 4.47 / 4.77 = 15/16
  EXPECT_EQ(runs[1].rows.size(), 3u);

  // A command says the ranks: its processes, and the program's -g and -t.
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     1048576        262144     float    none       0    50.00   20.97   20.97      0    49.00   21.40   21.40      0\n";
  runs = read_nccl_tests("$ ./build/broadcast_perf -b 1M -e 1M -g 4\n" + table, "b.txt");
  EXPECT_EQ(runs[0].gpus_per_thread, 4);
  EXPECT_EQ(runs[0].ranks(), 4);
  runs = read_nccl_tests("mpirun -np 2 ./build/broadcast_perf -b 1M -e 1M -t 2 -g2\n" + table, "b.txt");
  EXPECT_EQ(runs[0].threads, 2);
  EXPECT_EQ(runs[0].gpus_per_thread, 2);
  EXPECT_EQ(runs[0].ranks(), 8);

  // Nothing says how many ranks ran a broadcast (its busbw is its algbw whatever the ranks).
  EXPECT_EQ(error_of([&] { read_nccl_tests("## broadcast_perf\n" + table, "b.txt"); }),
            "b.txt:2: an nccl-tests table without its \"# nThread ... nGpus ...\" line, and neither a launcher's command "
            "(mpirun -np ...) nor the table's busbw / algbw says how many ranks ran; expected the whole output of the "
            "*_perf program");
  // A section heading that names no program is another part of the text: the program named in
  // prose above it is not its run's (a published all_gather log under such a heading once read
  // as the all_reduce its file's notes name); the output it names is.
  runs = read_nccl_tests("# ... launched as aprun -n 32 -N 4 all_reduce_perf -b 4 -e 1073741824 -f 2 -g 1\n"
                         "### a100-polaris-8node-32gpu-2x200g-slingshot: all_gather_log\n"
                         "# nThread 1 nGpus 1 minBytes 4 maxBytes 1073741824\n" + table +
                         "### nccl-tests all_reduce_perf\n"
                         "# nThread 1 nGpus 1 minBytes 4 maxBytes 1073741824\n" + table,
                         "p.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[1].collective, "all_reduce");

  // A second table in one run, with no program named between them, is still an error.
  EXPECT_EQ(error_of([&] { read_nccl_tests("# nThread 1 nGpus 2\n" + table + "#\n" + table, "b.txt"); }),
            "b.txt:5: a second nccl-tests table in the run that starts at line 1; expected one table per run");
}

// One machine's file whose NCCL log is reproduced once, after the tables (as the 4 x H100 mesh's
// INFO section): every run took that NCCL; where the file prints two versions, a run that prints
// none is left unsaid.
TEST(NcclTests, AFilesOneNcclVersionIsEveryRunsThatPrintsNone) {
  const std::string table =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1    50.00   20.97   31.46      0    49.00   21.40   32.10      0\n";
  const std::string info = "gcn155:1539476:1539476 [3] NCCL INFO NCCL version 2.22.3+cuda12.6\n";
  auto runs = read_nccl_tests("# nThread 1 nGpus 4\n" + table + "#\n# nThread 1 nGpus 4\n" + table + "### NCCL's log\n" + info, "m.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].nccl_version, "2.22.3");
  EXPECT_EQ(runs[1].nccl_version, "2.22.3");
  runs = read_nccl_tests("# nThread 1 nGpus 4\n" + table + "#\n" + info + "# nThread 1 nGpus 4\n" + table + "#\n" +
                             "x:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9\n# nThread 1 nGpus 4\n" + table,
                         "m.txt");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].nccl_version, "");
  EXPECT_EQ(runs[1].nccl_version, "2.22.3");
  EXPECT_EQ(runs[2].nccl_version, "2.27.3");
}

TEST(NcclTests, AHeadingNamesItsCollectiveByItsSavedOutput) {
  // ALCF's runs were saved as all_gather_output.dat, all_reduce_output.dat...: a section heading
  // that names one collective's output (and no program) names the run's collective; one that
  // names two, or none, names none.
  const std::string table =
      "# nThread 1 nGpus 1 minBytes 4 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  81063 on x3207c0s13b1n0 device  0 [0x07] NVIDIA A100-SXM4-40GB\n"
      "#  Rank  1 Group  0 Pid  79012 on x3207c0s19b0n0 device  0 [0x07] NVIDIA A100-SXM4-40GB\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "           8             2     float     sum      -1    38.82    0.00    0.00      0    38.16    0.00    0.00      0\n";
  const auto runs = read_nccl_tests("### polaris: all_gather_log\n" + table + "### polaris: all_reduce_output.dat.4\n" + table +
                                        "### polaris: alltoall_log and sendrecv_log\n" + table + "### polaris: notes_log\n" + table,
                                    "polaris.txt");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].collective, "all_gather");
  EXPECT_EQ(runs[1].collective, "all_reduce");
  EXPECT_EQ(runs[2].collective, "");
  EXPECT_EQ(runs[3].collective, "");
  EXPECT_EQ(runs[0].devices.size(), 2u);
  EXPECT_NE(runs[0].devices[0].host, runs[0].devices[1].host);
}
