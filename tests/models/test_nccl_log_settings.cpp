// The NCCL settings a published log states, as the nccl-tests reader finds them and the planner
// applies them: a comment block that gives the runs' environment ("# Environment / command:
// ..."), and NCCL 2.4's NCCL_TREE_THRESHOLD.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "models/executors/predict.h"
#include "models/strategies/strategy.h"
#include "models/topology/importers/nccl_tests.h"
#include "support/nccl_planner.h"

using namespace gradsync::models;
using namespace test_nccl_planner;

namespace {

const std::string kTable =
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
    "#        (B)    (elements)                      (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "   536870912     134217728   float     sum   115842    4.63    8.69  5e-07   115590    4.64    8.69  5e-07\n"
    "  1073741824     268435456   float     sum   228178    4.71    8.82  5e-07   224997    4.77    8.95  5e-07\n";

bool has_note(const ResultRecord& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

// A comment labelled "Environment ..." gives the NCCL_* settings of the runs after it, its
// continuation lines too, up to a comment with a label of its own ("Notes:"), a heading, a table
// or any other line; a run's own heading keeps its settings, and a later block replaces the first,
// also where it follows a table's last row at once.
TEST(NcclLogSettings, AnEnvironmentCommentSetsTheRunsAfterIt) {
  const std::string text =
      "# Machine: two hosts\n"
      "# Environment / command: FI_PROVIDER=efa NCCL_TREE_THRESHOLD=0 (forces ring for all\n"
      "# sizes); NCCL_PROTO=Simple, all_reduce_perf -b 8 -e 1G -f 2 -g 1\n"
      "# Notes: NCCL_ALGO=Tree is what the text around it discusses, not a setting\n"
      "\n"
      "### nccl-tests all_reduce_perf\n" +
      kTable +
      "\n### nccl-tests all_reduce_perf, NCCL_PROTO=LL\n" + kTable +
      "# Environment printed by NCCL: NCCL_IB_HCA=mlx5_2,\n"  // right after the table's last row
      "### nccl-tests all_reduce_perf, NCCL_ALGO=Ring\n" + kTable;
  const auto runs = read_nccl_tests(text, "env.txt");
  ASSERT_EQ(runs.size(), 3u);
  const std::map<std::string, std::string> first{{"NCCL_TREE_THRESHOLD", "0"}, {"NCCL_PROTO", "Simple"}};
  EXPECT_EQ(runs[0].environment, first);
  const std::map<std::string, std::string> second{{"NCCL_TREE_THRESHOLD", "0"}, {"NCCL_PROTO", "LL"}};
  EXPECT_EQ(runs[1].environment, second);
  const std::map<std::string, std::string> third{{"NCCL_IB_HCA", "mlx5_2"}, {"NCCL_ALGO", "Ring"}};
  EXPECT_EQ(runs[2].environment, third);

  // Without such a comment a run has only its own settings; "Environment" as a word of prose is
  // no label.
  const auto plain = read_nccl_tests("# The environment: see below NCCL_ALGO=Tree\n### nccl-tests all_reduce_perf\n" + kTable, "plain.txt");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_TRUE(plain[0].environment.empty());
}

// NCCL 2.4 ran an all-reduce of fewer bytes than NCCL_TREE_THRESHOLD on trees and the rest on
// rings (0: rings at every size); 2.5 replaced the rule by its cost model and ignores the variable.
TEST(NcclLogSettings, TreeThresholdIsNccl24sRuleBetweenItsAlgorithms) {
  const Strategy& nccl = find_strategy("nccl");
  const std::map<std::string, std::string> env{{"NCCL_TREE_THRESHOLD", "0"}};
  EXPECT_EQ(nccl.params_from_environment(env).at("tree_threshold"), "0");
  EXPECT_EQ(nccl.params_from_environment({{"NCCL_TREE_THRESHOLD", "four"}}).count("tree_threshold"), 0u);

  const Topology two = hgx(2);
  const double bytes = 64.0 * 1024 * 1024;
  const ResultRecord free = predict(nccl_request(two, 16, bytes, {"cpu=intel", "nvls=off"}));
  ASSERT_TRUE(has_note(free, "Tree/")) << ::testing::PrintToString(free.notes);  // NCCL's cost model's pick
  const ResultRecord rings = predict(nccl_request(two, 16, bytes, {"cpu=intel", "nvls=off", "tree_threshold=0"}));
  EXPECT_TRUE(has_note(rings, "Ring/")) << ::testing::PrintToString(rings.notes);
  EXPECT_TRUE(has_note(rings, "(NCCL_TREE_THRESHOLD=0, NCCL 2.4's)")) << ::testing::PrintToString(rings.notes);
  EXPECT_EQ(nccl.decided_by(rings).rfind("NCCL runs ", 0), 0u) << nccl.decided_by(rings);
  const ResultRecord trees = predict(nccl_request(two, 16, 1 << 20, {"cpu=intel", "nvls=off", "tree_threshold=4194304"}));
  EXPECT_TRUE(has_note(trees, "Tree/")) << ::testing::PrintToString(trees.notes);
  // At the threshold itself, rings.
  EXPECT_TRUE(has_note(predict(nccl_request(two, 16, 4194304, {"cpu=intel", "nvls=off", "tree_threshold=4194304"})), "Ring/"));
  // NCCL 2.5 and later ignore it; a user's NCCL_ALGO overrides it.
  const ResultRecord later = predict(nccl_request(two, 16, bytes, {"cpu=intel", "nvls=off", "tree_threshold=0", "nccl_version=2.5"}));
  EXPECT_FALSE(has_note(later, "NCCL_TREE_THRESHOLD")) << ::testing::PrintToString(later.notes);
  const ResultRecord algo = predict(nccl_request(two, 16, bytes, {"cpu=intel", "nvls=off", "tree_threshold=0", "algorithm=Tree"}));
  EXPECT_TRUE(has_note(algo, "Tree/")) << ::testing::PrintToString(algo.notes);
  // Only the all-reduce had trees in 2.4.
  const ResultRecord gather = predict(nccl_request(two, 16, bytes, {"cpu=intel", "tree_threshold=1000000000", "collective=all_gather"}));
  EXPECT_TRUE(has_note(gather, "Ring/")) << ::testing::PrintToString(gather.notes);
}

// A comment labelled "NCCL" names the release of the runs after it that print none of their own
// ("# NCCL: 2.4.8+cuda10.0", "# NCCL: 2.8 (module ...)"); one that names none gives none, and a
// version the run prints itself wins.
TEST(NcclLogSettings, AnNcclCommentNamesTheRunsRelease) {
  const std::string text = "# NCCL: 2.4.8+cuda10.0\n### nccl-tests all_reduce_perf\n" + kTable +
                           "\n# NCCL: 2.8 (module nccl/2.8; the overview lists 2.8.4-1)\n### nccl-tests all_reduce_perf\n" + kTable +
                           "\n# NCCL: not shown in the log\n### nccl-tests all_reduce_perf\n" + kTable;
  const auto runs = read_nccl_tests(text, "versions.txt");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].nccl_version, "2.4.8");
  EXPECT_EQ(runs[1].nccl_version, "2.8");
  EXPECT_EQ(runs[2].nccl_version, "");
  const auto printed = read_nccl_tests("# NCCL: NCCL 2.21.5 (NCCL_HOME .../nccl_2.21.5-1)\nNCCL version 2.16.5+cuda11.8\n"
                                       "### nccl-tests all_reduce_perf\n" + kTable,
                                       "printed.txt");
  ASSERT_EQ(printed.size(), 1u);
  EXPECT_EQ(printed[0].nccl_version, "2.16.5");
}
