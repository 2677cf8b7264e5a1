// The emulated cluster (root only): built and removed exactly, idempotent and safe after a
// crash, refusing what it cannot build; real MPI runs through it; and gradsync validate end
// to end on a small case. These tests share the machine's one testbed: they run one at a
// time (ctest RESOURCE_LOCK) and skip, saying why, when not root.
#include <gtest/gtest.h>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "models/topology/topology_io.h"
#include "support/run_command.h"

namespace fs = std::filesystem;

namespace {

CommandResult cli(const std::string& args) { return run_command(command(GRADSYNC_BIN, args)); }
CommandResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), GRADSYNC_BIN);
  return run_command(args);
}

// Lines of `text` matching `pattern`.
int count_matching(const std::string& text, const std::regex& pattern) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += std::regex_search(line, pattern) ? 1 : 0;
  return n;
}

std::vector<std::string> namespaces() {
  std::vector<std::string> out;
  std::istringstream in(run_command({"ip", "netns", "list"}, false).out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("gst-", 0) == 0) out.push_back(line.substr(0, line.find(' ')));
  }
  return out;
}

int count_namespaces() { return static_cast<int>(namespaces().size()); }

// One other busy process on the machine for as long as it lives: a child that spins on a core.
class BusyProcess {
 public:
  BusyProcess() : pid_(::fork()) {
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // and no longer than the test, even one killed at its timeout
      volatile unsigned long spins = 0;
      for (;;) spins = spins + 1;
    }
  }
  ~BusyProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  BusyProcess(const BusyProcess&) = delete;
  BusyProcess& operator=(const BusyProcess&) = delete;
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_;
};

int count_links() {
  return count_matching(run_command({"ip", "-o", "link", "show"}, false).out,
                        std::regex(": gst(br[0-9]+|mgmt|m[0-9]+[ab]|[0-9]+[ab])[@:]"));
}

// Processes still running inside the testbed's namespaces.
int processes_in_namespaces() {
  int n = 0;
  for (const auto& ns : namespaces()) n += count_matching(run_command({"ip", "netns", "pids", ns}, false).out, std::regex("."));
  return n;
}

// Processes whose command line mentions `text`.
int processes_mentioning(const std::string& text) {
  int n = 0;
  for (const auto& [pid, cmdline] : gradsync::models::process_command_lines()) {
    if (pid != ::getpid() && cmdline.find(text) != std::string::npos) ++n;
  }
  return n;
}

}  // namespace

// Outside the anonymous namespace: gtest derives a class per TEST_F from it.
class Testbed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the testbed needs root (network namespaces, bridges, tc)";
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    cli("testbed down");
  }
  void TearDown() override {
    if (::geteuid() == 0) cli("testbed down");
  }
};

TEST_F(Testbed, UpAndDownExactlyIdempotentAndAfterACrash) {
  auto r = cli("testbed up source-a-titanx-4gpu --scale 0.01");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_namespaces(), 5) << r.out;  // 4 GPUs and host memory
  const int links = count_links();
  EXPECT_GT(links, 10);
  // Every GPU link is shaped to its bandwidth x scale: 5.96 GB/s -> 476.8 Mbit/s.
  const auto tc = run_command({"ip", "netns", "exec", "gst-gpu0", "tc", "qdisc", "show", "dev", "data0"});
  EXPECT_NE(tc.out.find("tbf"), std::string::npos) << tc.out;
  EXPECT_NE(tc.out.find("rate 476"), std::string::npos) << tc.out;
  // ... and what the bucket saved while idle drains at most 2 % faster (476.8 x 1.02 = 486.3).
  EXPECT_NE(tc.out.find("peakrate 486"), std::string::npos) << tc.out;
  // Up again: the same testbed, nothing doubled.
  ASSERT_EQ(cli("testbed up source-a-titanx-4gpu --scale 0.01").status, 0);
  EXPECT_EQ(count_namespaces(), 5);
  EXPECT_EQ(count_links(), links);
  // A crash leaves an extra namespace, a veth and no state file: down still removes all of them.
  run_command({"ip", "netns", "add", "gst-leftover"});
  run_command({"ip", "link", "add", "gst99a", "type", "veth", "peer", "name", "gst99b"});
  fs::remove_all("/run/gradsync-testbed");
  r = cli("testbed down");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_namespaces(), 0);
  EXPECT_EQ(count_links(), 0);
  EXPECT_NE(cli("testbed status").out.find("no testbed is up"), std::string::npos);
}

TEST_F(Testbed, RefusesWhatItCannotBuild) {
  auto r = cli("testbed up dgx1-v100-hybrid-cube-mesh");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("has cycles"), std::string::npos) << r.out;
  r = cli("testbed up source-a-titanx-4gpu --scale 0");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--scale 0"), std::string::npos) << r.out;
  EXPECT_EQ(count_namespaces(), 0);
}

TEST_F(Testbed, RealRunsThroughTheShapedLinks) {
  ASSERT_EQ(cli("testbed up source-a-titanx-4gpu --scale 0.01").status, 0);
  const std::string mpirun = cli("testbed mpirun -n 4").out;
  ASSERT_NE(mpirun.find("plm_rsh_agent"), std::string::npos) << mpirun;
  const auto r = run_command(words(mpirun.substr(0, mpirun.find('\n')) + " " + GRADSYNC_RUN +
                                   " --strategy ring -b 1MiB -n 2 -w 1 --check"));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  // 1 MiB around a ring of 4 at <= 44.6 MB/s (the cross-switch links x 0.01) takes at least
  // 6 x 256 KiB / 44.6 MB/s = 35 ms: the links really are shaped.
  // The result row: size, count, type, redop, time (us), algbw, busbw, #wrong.
  std::istringstream lines(r.out);
  std::string line;
  double time_us = -1;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string size, count, type, redop;
    double t = 0;
    if (fields >> size >> count >> type >> redop >> t && size == "1048576") time_us = t;
  }
  ASSERT_GT(time_us, 0) << "no 1 MiB result row in:\n" << r.out;
  EXPECT_GT(time_us, 35000) << r.out;
}

// measure reads a link at the rate it carries, not faster by what its token bucket lets
// through at once after a pause (a 9 KB frame): a lone 32 KiB probe read the 11.9 MB/s
// gpu0-gpu1 link at 16.0-16.3 MB/s; a run's back-to-back rounds get no such head start.
TEST_F(Testbed, MeasureReadsALinkAtItsShapedRate) {
  ASSERT_EQ(cli("testbed up source-a-titanx-4gpu --scale 0.002").status, 0);
  const std::string mpirun = cli("testbed mpirun -n 2").out;
  const fs::path out = fs::temp_directory_path() / ("gradsync-measure-" + std::to_string(::getpid()) + ".json");
  // A measurement must hold with one other busy process on the machine (issue 50): one spins
  // beside it throughout. Beside the suite's oversubscribed MPI tests (16 busy-polling ranks on 2
  // cores) a measure read this link at 0.51 of its rate, every try, and said so ("a busy machine:
  // figures less sure"): that is more than one busy process, so this test runs alone (RUN_SERIAL,
  // tests/CMakeLists.txt) but for its own. A measurement that says the machine was busy is taken
  // again, and so is one that reads the link off its rate: this 2-core machine is at times busier
  // than one process for a while (right after a fresh clone's build, and while a folder of builds
  // was being removed, measure read the link at 0.50-0.69 of its rate in 3 of 4 runs; 10 of 10
  // within the bounds on the quiet machine), so up to five measurements, two seconds apart; the
  // last is judged whatever it says, and every one's readings are shown.
  const BusyProcess busy;
  ASSERT_TRUE(busy.running());
  const double shaped_GBps = 5.96 * 0.002;  // source A's GPU link x the scale
  // Not faster than the link is shaped to (the head start read it at 1.35x), nor slower than it
  // carries: with 3 KB frames on two busy cores (tbf timing each frame, we think) the link carries
  // 0.8-0.9 of its rate (a 2-rank ring of 2 MiB, `gradsync-run --strategy ring -b 2MiB -n 3`
  // beside measure: 0.81 of it; measure read 0.84-0.89, quiet).
  constexpr double kFastest = 1.15, kSlowest = 0.75;
  CommandResult r;
  std::vector<double> shares;  // each measurement's two directions, over the shaped rate
  std::string tries;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    r = run_command(words(mpirun.substr(0, mpirun.find('\n')) + " " + GRADSYNC_RUN + " measure --size 32KiB -n 3 -o " +
                          out.string()));
    ASSERT_EQ(r.status, 0) << r.out;
    std::ifstream in(out);
    const auto measured = nlohmann::json::parse(in);
    shares.clear();
    for (const auto& [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
      shares.push_back(measured.at("bandwidth_GBps").at(a).at(b).get<double>() / shaped_GBps);
    }
    const bool busy_said = r.out.find("(a busy machine") != std::string::npos;
    tries += "try " + std::to_string(attempt + 1) + ": " + std::to_string(shares[0]) + ", " + std::to_string(shares[1]) +
             (busy_said ? " (said busy)" : "") + "\n";
    const bool within = std::all_of(shares.begin(), shares.end(), [&](double v) { return v < kFastest && v > kSlowest; });
    if (!busy_said && within) break;
  }
  fs::remove(out);
  for (std::size_t k = 0; k < shares.size(); ++k) {
    EXPECT_LT(shares[k], kFastest) << (k == 0 ? "rank0 -> rank1" : "rank1 -> rank0") << "\n" << tries << r.out;
    EXPECT_GT(shares[k], kSlowest) << (k == 0 ? "rank0 -> rank1" : "rank1 -> rank0") << "\n" << tries << r.out;
  }
}

// A ring of ranks two apart on the two-switch box (ranks 0-3 behind one switch, 4-7 behind the
// other, uplinks as fast as the ranks' links): the four flows that cross the uplinks share them
// two a direction, the four within a switch share nothing. Each flow is read on its own: a
// sender's time used to be taken after its own incoming flow was done, so every flow of the ring
// read as its slowest (all eight at 0.5 of the pairs' rate) and the switches went unseen.
TEST_F(Testbed, ShiftProbesReadEachFlowNotItsRingsSlowest) {
  ASSERT_EQ(cli("testbed up pcie-8gpu-2switch --scale 0.002").status, 0);
  const std::string mpirun = cli("testbed mpirun -n 8").out;
  const fs::path out = fs::temp_directory_path() / ("gradsync-shift-" + std::to_string(::getpid()) + ".json");
  const CommandResult r =
      run_command(words(mpirun.substr(0, mpirun.find('\n')) + " " + GRADSYNC_RUN + " measure --size 256KiB -n 3 -o " + out.string()));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(out);
  const auto measured = nlohmann::json::parse(in);
  fs::remove(out);
  const auto& pairs = measured.at("bandwidth_GBps");
  const auto& probes = measured.at("concurrent_probes");
  ASSERT_GE(probes.size(), 2u) << r.out;
  // Each flow's share of its pair's rate: those that cross at about a half, those within a switch
  // faster (quiet, 0.94-1.02 against 0.46-0.52). Their medians are compared: with eight ranks on two
  // cores one flow within a switch now and then reads at half its rate (0.53 in two runs of
  // 2026-11-30, one under the sanitizers), while the fault this guards against read all eight at
  // half, medians included.
  const auto& two_apart = probes.at(1);  // shift 2
  std::vector<double> within, across;
  for (std::size_t k = 0; k < two_apart.at("flows").size(); ++k) {
    const auto from = std::stoi(two_apart.at("flows").at(k).at(0).get<std::string>().substr(4));  // "rankN"
    const auto to = std::stoi(two_apart.at("flows").at(k).at(1).get<std::string>().substr(4));
    const double share = two_apart.at("bandwidth_GBps").at(k).get<double>() / pairs.at(from).at(to).get<double>();
    if (from / 4 == to / 4) {
      within.push_back(share);
    } else {
      EXPECT_LT(share, 0.65) << "rank" << from << " -> rank" << to << " crosses the uplinks\n" << r.out;
      across.push_back(share);
    }
  }
  ASSERT_EQ(within.size(), 4u) << r.out;
  ASSERT_EQ(across.size(), 4u) << r.out;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  EXPECT_GT(median(within), 1.2 * median(across)) << "flows within a switch against those that cross\n" << r.out;
}

TEST_F(Testbed, ValidateEndToEnd) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-validate-" + std::to_string(::getpid()));
  // Items with parameters, as `gradsync recommend` prints them.
  // 256 KiB probes: at 1 MiB the measurement of the 4 endpoints took 18 of the test's 20 s.
  const auto r = cli("validate --topology source-a-titanx-4gpu --gpus 2 --strategies ring,sampled:inner=ring:rows=64 "
                          "--sizes 1MiB -n 2 --measure-size 256KiB -o " + dir.string());
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("sim: median |error|"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sampled:inner=ring:rows=64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest at 2 GPUs, 1.0 MB: measured "), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "measured.json"));
  EXPECT_TRUE(fs::exists(dir / "validation.jsonl"));
  EXPECT_EQ(count_namespaces(), 0);  // validate removes the testbed it built
  fs::remove_all(dir);
}

// The training step on the emulated cluster: the preset scaled down (the same layers), its compute
// slowed like the links (compute : communication stays the machine's), DDP's bucket sizes scaled
// with the bytes so the buckets hold the layers they hold at full size; every bucket checked.
TEST_F(Testbed, ValidateTrainingStepsWithOverlap) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-validate-steps-" + std::to_string(::getpid()));
  const auto r = cli("validate --topology source-a-titanx-4gpu --scale 0.01 --gpus 2 --strategies ring --workloads resnet50 "
                     "--workload-scale 0.005 --overlap -n 1 --measure-size 64KiB -o " + dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("scaled by 0.005 (the same layers), its compute 100x slower like the links, its buckets synchronised "
                       "beside the backward pass (buckets of 131.1 kB, the first 5.2 kB: DDP's scaled alike); the real "
                       "step's compute as sleep"),
            std::string::npos)
      << r.out;
  // Full size, DDP's defaults: the bucket count the scaled run must have too.
  const auto full = cli("predict -w resnet50 --overlap --strategy ring -g 2 -f json");
  ASSERT_EQ(full.status, 0) << full.out;
  const int buckets = nlohmann::json::parse(full.out.substr(0, full.out.find('\n'))).at("overlap").at("buckets").get<int>();
  ASSERT_GT(buckets, 2);
  std::ifstream in(dir / "validation.jsonl");
  int runs = 0;
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    EXPECT_EQ(rec.at("overlap").at("buckets").get<int>(), buckets) << line;
    // 103.6 ms of compute x 0.005 x 100.
    EXPECT_NEAR(rec.at("compute_s_per_minibatch").get<double>(), 0.1036 * 0.5, rec.at("executor") == "run" ? 0.02 : 1e-3) << line;
    if (rec.at("executor") == "run") {
      ++runs;
      EXPECT_EQ(rec.at("wrong_elements"), 0) << line;
    }
  }
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(count_namespaces(), 0);
  fs::remove_all(dir);
}

// A validate killed outright (SIGKILL: no handler, no destructor runs) while its ranks run
// inside the namespaces still leaves nothing behind: its guardian process removes the
// namespaces, links and bridges and ends the ranks.
TEST_F(Testbed, KilledValidateLeavesNothingBehind) {
  const fs::path dir = fs::temp_directory_path() / ("gradsync-validate-kill-" + std::to_string(::getpid()));
  gradsync::models::ChildProcess validate = gradsync::models::start_process(
      command(GRADSYNC_BIN, "validate --topology source-a-titanx-4gpu --gpus 4 --strategies ring --sizes 64MiB -n 50 "
                            "--measure-size 4MiB -o " + dir.string()));
  // Wait until ranks run in the namespaces (the measurement starts right after `up`).
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    ::usleep(100000);
    running = processes_in_namespaces() > 0 && count_namespaces() > 0;
  }
  ASSERT_TRUE(running) << "validate never started ranks in the testbed";
  validate.kill(SIGKILL);
  validate.wait();
  // Everything that ran for it names its output folder: mpirun, the ranks.
  const std::string leftovers = dir.string() + "/";
  int left = -1;
  for (int i = 0; i < 300 && left != 0; ++i) {
    ::usleep(100000);
    left = count_namespaces() + count_links() + processes_mentioning(leftovers);
  }
  EXPECT_EQ(count_namespaces(), 0);
  EXPECT_EQ(count_links(), 0);
  EXPECT_EQ(processes_mentioning(leftovers), 0) << "mpirun or ranks of the killed validate still run";
  fs::remove_all(dir);
}

// Paths are arguments, never shell text: a topology file and an output folder whose names
// hold spaces, quotes and `$(...)` work, and nothing in them is executed.
TEST_F(Testbed, PathsWithSpacesAndShellCharactersAreJustPaths) {
  const fs::path base = fs::temp_directory_path() / ("gradsync odd " + std::to_string(::getpid()));
  const fs::path witness = base / "executed";
  const fs::path folder = base / ("it's a $(touch " + witness.string() + ") `touch " + witness.string() + "` dir");
  fs::create_directories(folder);
  const fs::path topology = folder / "my box; echo.json";
  fs::copy_file(std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json", topology);
  auto r = cli({"testbed", "up", topology.string(), "--scale", "0.01"});
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_namespaces(), 5) << r.out;
  ASSERT_EQ(cli("testbed down").status, 0);
  const fs::path out = folder / "out $(id)";
  r = cli({"validate", "--topology", topology.string(), "--gpus", "2", "--strategies", "ring", "--sizes", "64KiB", "-n",
                "1", "--measure-size", "256KiB", "-o", out.string()});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "measured.json")) << r.out;
  EXPECT_TRUE(fs::exists(out / "validation.jsonl")) << r.out;
  EXPECT_FALSE(fs::exists(witness)) << "a path was run as a command";
  EXPECT_EQ(count_namespaces(), 0);
  fs::remove_all(base);
}

// --to-target: real training (gradsync-train) on the emulated cluster to digits-mlp's test loss,
// its training time to the target against the prediction: the convergence facts' samples at the
// run's global batch, each step the analytic iteration on the measured topology with the run's own
// compute per step. Each GPU count's runs are predicted on what that many ranks measured.
TEST_F(Testbed, ValidateToTargetTrainsForRealToTheTarget) {
  if (!fs::exists(fs::path(GRADSYNC_BIN).parent_path() / "gradsync-train")) GTEST_SKIP() << "gradsync-train not built (libtorch)";
  const fs::path dir = fs::temp_directory_path() / ("gradsync-validate-target-" + std::to_string(::getpid()));
  const auto bad = cli("validate --to-target --target-workload resnet50 --gpus 2 -o " + dir.string());
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("target is gradsync-train's \"test loss X\""), std::string::npos) << bad.out;
  EXPECT_EQ(count_namespaces(), 0);  // refused before any testbed was built
  const auto r = cli("validate --to-target --topology source-a-titanx-4gpu --gpus 2,3 --strategies ring,model_avg:T=8 "
                     "--measure-size 64KiB -o " + dir.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("time to target: median |error|"), std::string::npos) << r.out;
  std::ifstream in(dir / "validation-to-target.jsonl");
  int records = 0;
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    ++records;
    const auto& t = rec.at("time_to_target");
    // The prediction's own arithmetic: steps x the iteration, at the run's global batch of N x 16.
    const int ranks = rec.at("ranks").get<int>();
    EXPECT_EQ(t.at("global_batch").get<double>(), 16 * ranks) << line;
    // On the topology its own ranks measured (measured-2ranks.json, measured-3ranks.json).
    EXPECT_EQ(rec.at("topology").get<std::string>(), "measured-" + std::to_string(ranks) + "ranks") << line;
    EXPECT_NEAR(t.at("time_s").at("value").get<double>(),
                t.at("steps").at("value").get<double>() * rec.at("time_per_iteration_s").get<double>(), 1e-9) << line;
    const auto notes = rec.at("notes").dump();
    EXPECT_NE(notes.find("validate --to-target: measured "), std::string::npos) << line;
  }
  EXPECT_EQ(records, 4);
  // measured.json holds every emulated GPU (source A's 4); 2 and 3 ranks measured on their own.
  EXPECT_EQ(gradsync::models::load_topology_file((dir / "measured.json").string()).topology.gpus().size(), 4u);
  for (std::size_t n : {2u, 3u}) {
    const fs::path f = dir / ("measured-" + std::to_string(n) + "ranks.json");
    ASSERT_TRUE(fs::exists(f)) << r.out;
    EXPECT_EQ(gradsync::models::load_topology_file(f.string()).topology.gpus().size(), n);
  }
  EXPECT_EQ(count_namespaces(), 0);
  fs::remove_all(dir);
}
