// The sweep machinery as a library: plan points in predict's order, records back from
// JSON unchanged, parallel evaluation equal to sequential, sweep files read back
// (CSV quoting included), least squares.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "experiments/reproduce/common.h"
#include "experiments/sweep.h"
#include "models/support/error.h"
#include "models/topology/topology_io.h"

using namespace gradsync;
using namespace gradsync::experiments;
namespace fs = std::filesystem;

namespace {
Plan small_plan(std::vector<std::string> executors) {
  Experiment e;
  e.topology = "source-a-titanx-4gpu";
  e.workload = "source-a-ffnn-lm";
  e.gpus = {1, 2, 4};
  e.executors = executors;
  e.strategies = choose_strategies({"ps,ring,hierarchical"}, {}, find_executors(executors, "test"));
  return make_plan(e);
}

std::vector<Job> jobs_of(const Plan& plan) {
  std::vector<Job> jobs;
  for (const auto& p : plan_points(plan)) jobs.push_back(Job{point_request(plan, p), p.executor, plan.settings, point_label(p)});
  return jobs;
}

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-exp-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}
}  // namespace

TEST(Sweep, PointsFollowPredictsOrderAndHaveDistinctKeys) {
  const Plan plan = small_plan({"analytic", "formula"});
  const auto points = plan_points(plan);
  ASSERT_EQ(points.size(), plan.points());
  ASSERT_EQ(points.size(), 18u);
  EXPECT_EQ(points[0].choice->strategy->name, "ps");
  EXPECT_EQ(points[0].placement->size(), 1);
  EXPECT_EQ(points[0].executor->name(), "analytic");
  EXPECT_EQ(points[1].executor->name(), "formula");
  EXPECT_EQ(points[2].placement->size(), 2);
  std::set<std::string> keys;
  for (const auto& p : points) keys.insert(point_key(plan, p));
  EXPECT_EQ(keys.size(), points.size());
  EXPECT_EQ(point_key(plan, points[0]),
            "topology=source-a-titanx-4gpu executor=analytic strategy=ps ranks=gpu0 workload=source-a-ffnn-lm");
}

TEST(Sweep, RecordsComeBackFromJsonUnchanged) {
  const Plan plan = small_plan({"analytic", "sim"});
  for (const auto& o : evaluate_all(jobs_of(plan), 1, false)) {
    if (!o.record) continue;  // hierarchical k=auto on 1 GPU may be skipped
    const auto again = record_from_json(models::to_json(*o.record));
    EXPECT_EQ(models::to_json_line(again), models::to_json_line(*o.record));
    EXPECT_EQ(models::to_csv_row(again), models::to_csv_row(*o.record));
  }
}

TEST(Sweep, ParallelEvaluationEqualsSequential) {
  const Plan plan = small_plan({"analytic", "formula", "sim"});
  const auto jobs = jobs_of(plan);
  const auto one = evaluate_all(jobs, 1, false);
  const auto three = evaluate_all(jobs, 3, false);
  ASSERT_EQ(one.size(), three.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i].record.has_value(), three[i].record.has_value()) << jobs[i].label;
    EXPECT_EQ(one[i].error, three[i].error);
    if (!one[i].record) continue;
    auto a = *one[i].record, b = *three[i].record;
    a.sim_wall_s.reset();
    b.sim_wall_s.reset();
    EXPECT_EQ(models::to_json_line(a), models::to_json_line(b)) << jobs[i].label;
  }
}

TEST(Sweep, InputErrorsOfOnePointDoNotStopTheOthers) {
  Experiment e;
  e.topology = "source-a-titanx-4gpu";
  e.sizes_bytes = {1e6};
  e.gpus = {2, 4};
  e.strategies = choose_strategies({"hierarchical"}, models::SyncParams::parse({"k=4"}), find_executors({}, "test"));
  const Plan plan = make_plan(e);
  const auto out = evaluate_all(jobs_of(plan), 2, false);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].record.has_value());
  EXPECT_NE(out[0].error.find("k=4"), std::string::npos) << out[0].error;
  EXPECT_TRUE(out[1].record.has_value());
}

TEST(Sweep, SweepFilesReadBackWithQuotedCsvFields) {
  const Plan plan = small_plan({"analytic"});
  const auto points = plan_points(plan);
  const auto outcomes = evaluate_all(jobs_of(plan), 1, false);
  std::string csv = sweep_csv_header(), jsonl;
  std::size_t written = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!outcomes[i].record) continue;
    csv += sweep_line(*outcomes[i].record, i, point_key(plan, points[i]), "csv") + "\n";
    jsonl += sweep_line(*outcomes[i].record, i, point_key(plan, points[i]), "json") + "\n";
    ++written;
  }
  const std::string csv_path = temp_path("s.csv"), json_path = temp_path("s.jsonl");
  std::ofstream(csv_path) << csv;
  std::ofstream(json_path) << jsonl;
  for (const auto& [path, format] : {std::pair{csv_path, "csv"}, std::pair{json_path, "json"}}) {
    const auto stored = read_sweep_file(path, format);
    ASSERT_EQ(stored.size(), written) << format;
    for (const auto& s : stored) {
      EXPECT_EQ(s.key, point_key(plan, points[s.index])) << format;
      // Renumbering changes only the index.
      const std::string moved = with_index(s, s.index + 100, format);
      std::ofstream(path + ".one") << (format == std::string("csv") ? sweep_csv_header() : "") << moved << "\n";
      const auto back = read_sweep_file(path + ".one", format);
      ASSERT_EQ(back.size(), 1u);
      EXPECT_EQ(back[0].index, s.index + 100);
      EXPECT_EQ(back[0].key, s.key);
    }
  }
  std::ofstream(csv_path) << "executor,topology\nanalytic,x\n";
  EXPECT_THROW(read_sweep_file(csv_path, "csv"), models::InputError);
}

TEST(Sweep, MpiRankFromTheEnvironment) {
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(mpi_rank_from_environment().size, 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  EXPECT_EQ(mpi_rank_from_environment().rank, 3);
  ::setenv("OMPI_COMM_WORLD_RANK", "4", 1);
  EXPECT_THROW(mpi_rank_from_environment(), models::InputError);
  ::setenv("OMPI_COMM_WORLD_RANK", "x", 1);
  EXPECT_THROW(mpi_rank_from_environment(), models::InputError);
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
}

TEST(Reproduce, LeastSquaresLine) {
  const auto f = reproduce::least_squares({1, 2, 3, 4}, {3, 5, 7, 9});
  EXPECT_NEAR(f.slope, 2.0, 1e-12);
  EXPECT_NEAR(f.intercept, 1.0, 1e-12);
}

TEST(Reproduce, PaperPlacementPutsTwoGpusAcrossTheSwitches) {
  const auto loaded = models::load_topology_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json");
  const auto p = reproduce::paper_placement(loaded.topology, 2);
  ASSERT_EQ(p.size(), 2);
  EXPECT_EQ(loaded.topology.node(p.ranks[1]).id, "gpu2");
  EXPECT_EQ(reproduce::paper_placement(loaded.topology, 3).size(), 3);
}
