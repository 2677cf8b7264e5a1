// gradsync calibrate (experiments/calibrate.h): the grid, the fit and leave-one-machine-out
// on tables whose truth is known — nccl-tests tables made from the nccl strategy's own
// predictions at chosen constants, different per machine — so the search must land on each
// machine's constants, and each held-out machine on the other's.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "experiments/calibrate.h"
#include "models/executors/executor.h"
#include "models/topology/importers/import.h"
#include "models/topology/matrix_inference.h"
#include "models/topology/placement.h"
#include "models/strategies/strategy.h"

using namespace gradsync;
using namespace gradsync::models;

namespace {

std::string published_machine_file(const std::string& name) { return std::string(GRADSYNC_PUBLISHED_DATA) + "/" + name; }

Topology imported_machine(const std::string& file) {
  ImportResult r = import_tool_files({published_machine_file(file)});
  InferredTopology inferred = infer_topology(r.form);
  if (!inferred.topology.measured()) inferred.topology.attach_measurements(r.form);
  return std::move(inferred.topology);
}

// An all_reduce_perf table of `t`'s GPUs (one thread driving all, -g N) whose times are
// the analytic executor's at `truth`, from 16 KiB to 64 MiB.
NcclTestsRun table_at(const Topology& t, const std::vector<std::string>& truth) {
  NcclTestsRun run;
  run.collective = "all_reduce";
  run.where = "synthetic";
  run.nccl_version = "2.30.7";  // stated, as a log's header does: the release is no open fact
  const int n = static_cast<int>(t.gpus().size());
  run.gpus_per_thread = n;
  std::vector<std::string> params = truth;
  params.push_back("gpus_per_thread=" + std::to_string(n));
  for (double bytes = 16 * 1024; bytes <= 64.0 * 1024 * 1024; bytes *= 2) {
    PredictRequest q;
    q.topology = &t;
    q.bytes = bytes;
    q.strategy = &find_strategy("nccl");
    q.params = SyncParams::parse(params);
    q.placement = first_gpus(t, n);
    const ResultRecord r = find_executor("analytic").evaluate(q, ExecutorSettings{});
    NcclTestsRow row;
    row.bytes = bytes;
    row.count = static_cast<std::uint64_t>(bytes / 4);
    row.type = "float";
    row.redop = "sum";
    NcclTestsTiming timing;
    timing.time_us = r.time_per_sync_s * 1e6;
    timing.wrong = 0;
    row.out_of_place = timing;
    run.rows.push_back(row);
  }
  return run;
}

experiments::CalibrateOptions grid_options() {
  const Strategy& s = find_strategy("nccl");
  experiments::CalibrateOptions o;
  o.grid = {experiments::parse_grid_axis("shm_efficiency=0.6,0.66,0.7", s),
            experiments::parse_grid_axis("ll_channel_GBps=2.4:3:0.3", s),
            experiments::parse_grid_axis("launch_us=2,3,4", s)};
  return o;
}

}  // namespace

TEST(Calibrate, GridAxesFromRangesAndLists) {
  const Strategy& s = find_strategy("nccl");
  const auto range = experiments::parse_grid_axis("ll_channel_GBps=2.4:3:0.3", s);
  EXPECT_EQ(range.param, "ll_channel_GBps");
  ASSERT_EQ(range.values.size(), 3u);
  EXPECT_DOUBLE_EQ(range.values[0], 2.4);
  EXPECT_DOUBLE_EQ(range.values[1], 2.7);
  EXPECT_DOUBLE_EQ(range.values[2], 3.0);  // hi is included despite 0.3's rounding
  const auto list = experiments::parse_grid_axis("launch_us=5,0,2.5", s);
  EXPECT_EQ(list.values, (std::vector<double>{5, 0, 2.5}));
  auto message = [&](const std::string& item) {
    try {
      experiments::parse_grid_axis(item, s);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("k=1:3:1").find("strategy nccl has no parameter k"), std::string::npos);
  EXPECT_NE(message("launch_us=3:1:1").find("lo <= hi and a step > 0"), std::string::npos);
  EXPECT_NE(message("launch_us=0:1:0").find("lo <= hi and a step > 0"), std::string::npos);
  EXPECT_NE(message("launch_us=1:x:1").find("\"x\" is not a number"), std::string::npos);
  EXPECT_NE(message("launch_us=0:100000:1").find("at most 1000"), std::string::npos);
  EXPECT_NE(message("shm_efficiency=0.5,1.5").find("shm_efficiency=1.5"), std::string::npos);  // outside (0, 1]
  EXPECT_NE(message("launch_us").find("expected name=lo:hi:step"), std::string::npos);
}

TEST(Calibrate, FindsEachMachinesConstantsAndLeavesEachOut) {
  // Two machines of the 4090 box without P2P, where every constant shows in the bands: SHM
  // at every hop, LL up to 256 KiB, launches of 8 GPUs from one thread. (On the 2080 Ti, LL
  // carries nothing of 64 KiB or more; with P2P on, nothing goes through SHM.)
  const Topology a = imported_machine("rtx4090-8gpu-dualepyc-p2poff.txt");
  const Topology b = imported_machine("rtx4090-8gpu-dualepyc-p2poff.txt");
  const std::vector<std::string> truth_a = {"shm_efficiency=0.66", "ll_channel_GBps=3", "launch_us=3"};
  const std::vector<std::string> truth_b = {"shm_efficiency=0.7", "ll_channel_GBps=2.4", "launch_us=4"};
  const auto options = grid_options();
  std::vector<experiments::CalibrationMachine> machines = {{"a", &a, {table_at(a, truth_a)}},
                                                           {"b", &b, {table_at(b, truth_b)}}};

  // One machine at a time: its own constants, with no error left.
  for (std::size_t m = 0; m < 2; ++m) {
    const auto c = experiments::calibrate({machines[m]}, options);
    EXPECT_EQ(c.items(options, c.best), m == 0 ? truth_a : truth_b);
    EXPECT_NEAR(c.figures(c.best, {true}).objective(), 0.0, 1e-9);
    EXPECT_TRUE(c.best_without.empty());
  }

  // Both: each held-out machine gets the other one's constants, and errs by as much as
  // they differ; the pooled fit cannot be exact for both.
  const auto c = experiments::calibrate(machines, options);
  EXPECT_EQ(c.points.size(), 27u);
  EXPECT_EQ(c.tables, 2);
  ASSERT_EQ(c.best_without.size(), 2u);
  EXPECT_EQ(c.items(options, c.best_without[0]), truth_b);
  EXPECT_EQ(c.items(options, c.best_without[1]), truth_a);
  EXPECT_GT(c.figures(c.best, {true, true}).objective(), 0.01);
  const auto held_a = experiments::pool({&c.errors[c.best_without[0]][0]});
  ASSERT_TRUE(held_a.large && held_a.small);
  EXPECT_GT(held_a.small->max_abs, 0.01);  // LL at 2.4 GB/s a channel instead of 3
  // Sizes: 16 and 32 KiB are below every band; 64 KiB..512 KiB small, 1..64 MiB large.
  EXPECT_EQ(held_a.small->sizes, 4);
  EXPECT_EQ(held_a.large->sizes, 7);
  // The defaults (0.66, 2.8, 3) are neither machine's.
  EXPECT_GT(experiments::pool({&c.default_errors[0]}).objective(), 0.01);
}

TEST(Calibrate, AHeldOutMachinesRangesTakeTheOtherMachinesErrorBands) {
  // The error bands are fitted across machines too: held out, a machine's ranges are restated with
  // the bands of the others' held-out errors. Restated with no band, a range is as stated; with a
  // band that spans everything, every range holds; with a band of nothing, only exact predictions.
  const Topology a = imported_machine("rtx4090-8gpu-dualepyc-p2poff.txt");
  const std::vector<std::string> truth_a = {"shm_efficiency=0.66", "ll_channel_GBps=3", "launch_us=3"};
  const std::vector<std::string> truth_b = {"shm_efficiency=0.6", "ll_channel_GBps=2.4", "launch_us=4"};
  const auto options = grid_options();
  const auto c = experiments::calibrate({{"a", &a, {table_at(a, truth_a)}}, {"b", &a, {table_at(a, truth_b)}}}, options);
  ASSERT_EQ(c.best_without.size(), 2u);
  const experiments::MachineErrors& held = c.errors[c.best_without[0]][0];
  ASSERT_FALSE(held.banded.empty());
  std::set<std::string> names;
  for (const auto& p : held.banded) names.insert(p.band);
  EXPECT_TRUE(names.count("one host, collectives, 1 - 16 MiB")) << *names.begin();

  const auto as_stated = experiments::with_bands(held, {});
  EXPECT_EQ(as_stated.large_held, held.large_held);
  EXPECT_EQ(as_stated.large_width, held.large_width);
  EXPECT_EQ(as_stated.small_held, held.small_held);

  experiments::ErrorBands everything, nothing;
  for (const auto& name : names) {
    everything[name] = {-0.99, 99, 1};
    nothing[name] = {0, 0, 1};
  }
  const auto wide = experiments::with_bands(held, everything);
  EXPECT_EQ(std::count(wide.large_held.begin(), wide.large_held.end(), true), static_cast<long>(wide.large_held.size()));
  const auto narrow = experiments::with_bands(held, nothing);
  ASSERT_EQ(narrow.large_held.size(), held.large.size());
  ASSERT_EQ(narrow.small_held.size(), held.small.size());
  // Fitted on b (SHM's share 0.6): a constant calibrate tries is still a fitted constant, not a
  // fact the user stated, so SHM's share stays open at its grid value (this box runs SHM at every
  // hop) and, with the launch cost, widens the range besides the band. Restated with a band of
  // nothing, a range is what those facts alone span: it holds exactly where the measurement lies
  // in their span.
  int missed = 0, shm_open = 0;
  std::size_t large_i = 0, small_i = 0;  // banded: every prediction in turn, large or small
  for (const experiments::BandedPoint& p : held.banded) {
    const bool holds = p.large ? narrow.large_held.at(large_i++) : narrow.small_held.at(small_i++);
    ResultRecord others = p.predicted;
    std::erase_if(others.open_facts, [](const OpenFact& f) { return f.name == "the model's own error"; });
    shm_open += std::any_of(others.open_facts.begin(), others.open_facts.end(),
                            [](const OpenFact& f) { return f.name == "SHM's share of the PCIe rate"; });
    const auto span = others.busbw_range_GBps();
    ASSERT_TRUE(span);
    const double measured = *p.measured.busbw_GBps();
    EXPECT_EQ(holds, measured >= span->first * 0.995 && measured <= span->second * 1.005) << p.predicted.bytes;
    missed += holds ? 0 : 1;
  }
  EXPECT_EQ(large_i, held.large.size());
  EXPECT_EQ(small_i, held.small.size());
  EXPECT_GE(shm_open, 4);  // from 1 MiB up, where SHM's rate, not LL's channels, sets the time
  EXPECT_GT(missed, 0);  // LL at 2.4 GB/s a channel instead of 3 misses at 64-512 KiB
  for (std::size_t i = 0; i < held.large.size(); ++i) EXPECT_LT(narrow.large_width[i], wide.large_width[i]);

  // Held out, each machine's restated ranges are its points', one for one.
  const auto restated = c.held_out_with_others_bands();
  ASSERT_EQ(restated.size(), 2u);
  EXPECT_EQ(restated[0].large_held.size(), held.large_held.size());
  EXPECT_EQ(restated[0].large, held.large);
}

TEST(Calibrate, RefusesWhatItCannotFit) {
  const Topology a = imported_machine("rtx2080ti-2gpu-pix.txt");
  auto options = grid_options();
  NcclTestsRun gather = table_at(a, {});
  gather.collective = "all_gather";
  options.all_reduce_only = true;
  EXPECT_THROW(experiments::calibrate({{"a", &a, {gather}}}, options), InputError);  // no all-reduce table where only those count
  options.all_reduce_only = false;
  NcclTestsRun nameless = table_at(a, {});
  nameless.collective.clear();
  EXPECT_THROW(experiments::calibrate({{"a", &a, {nameless}}}, options), InputError);  // no table that names its collective
  options.params = {"launch_us=3"};
  EXPECT_THROW(experiments::calibrate({{"a", &a, {table_at(a, {})}}}, options), InputError);  // fixed and fitted
  options.params.clear();
  options.grid.push_back(options.grid.front());
  EXPECT_THROW(experiments::calibrate({{"a", &a, {table_at(a, {})}}}, options), InputError);  // an axis twice
}
