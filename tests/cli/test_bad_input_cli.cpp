// Bad input at the binaries (issue 7, "Hardening"): a table of command lines for gradsync and
// gradsync-run (bad flags, bad files) that must each end with exit status 2, one message on
// stderr holding the exact pieces named in the row (the flag or file, the JSON path or line,
// the value, what was expected), no crash, and no output file left behind when -o (or
// --trace) was given. gradsync-run runs without mpirun, as a single rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace fs = std::filesystem;

namespace {

struct Row {
  std::string name;
  std::string binary;  // GRADSYNC_BIN or GRADSYNC_RUN
  std::string args;
  std::vector<std::string> expected;  // exact substrings of stderr
  std::vector<std::string> no_files;  // files that must not exist afterwards
};

// Runs a command and returns its exit status and stderr alone. Bad input must never hang:
// a command still running after a minute is killed (status 137, which fails the row).
CommandResult run_stderr(const std::string& binary, const std::string& args) {
  gradsync::models::ProcessOptions o;
  o.capture_stdout = false;
  o.stderr_mode = gradsync::models::ProcessOptions::Stderr::capture;
  o.timeout_s = 60;
  const auto r = gradsync::models::run_process(command(binary, args), o);
  return CommandResult{r.status, r.err};
}

// The lines of a message, without CLI11's "Run with --help for more information." hint.
std::vector<std::string> message_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line != "Run with --help for more information.") lines.push_back(line);
  }
  return lines;
}

std::string fixture_text(const std::string& name) {
  std::ifstream in(std::string(GRADSYNC_TEST_FIXTURES) + "/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `text` with `from` replaced by `to` on line `line` (1-based).
std::string on_line(const std::string& text, std::size_t line, const std::string& from, const std::string& to) {
  std::istringstream in(text);
  std::string out, l;
  for (std::size_t i = 1; std::getline(in, l); ++i) {
    if (i == line) {
      const auto at = l.find(from);
      EXPECT_NE(at, std::string::npos) << "line " << line << " has no " << from;
      if (at != std::string::npos) l.replace(at, from.size(), to);
    }
    out += l + "\n";
  }
  return out;
}

void check_rows(const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name + ": " + row.args);
    const auto r = run_stderr(row.binary, row.args);
    EXPECT_EQ(r.status, 2) << r.out;
    const auto lines = message_lines(r.out);
    EXPECT_EQ(lines.size(), 1u) << "expected one message, got:\n" << r.out;
    for (const auto& part : row.expected) {
      EXPECT_NE(r.out.find(part), std::string::npos) << "missing: " << part << "\n--- got:\n" << r.out;
    }
    for (const char* crash : {"terminate called", "internal error", "MPI_ABORT", "Segmentation", "Aborted"}) {
      EXPECT_EQ(r.out.find(crash), std::string::npos) << r.out;
    }
    for (const auto& file : row.no_files) {
      EXPECT_FALSE(fs::exists(file)) << file << " was left behind";
      // Nor the temporary file an atomic write would have renamed.
      const fs::path p(file);
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(p.parent_path(), ec)) {
        EXPECT_NE(entry.path().filename().string().rfind("." + p.filename().string() + ".tmp", 0), 0u)
            << entry.path() << " was left behind";
      }
    }
  }
}

class BadInputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    dir_ = fs::path(temp_file("bi-probe", "")).parent_path().string();
    out_ = dir_ + "/bi-out";
    fs::remove_all(out_);
    fs::create_directories(out_);
    std::ofstream(out_ + "/plain") << "a file, not a folder\n";
  }
  void TearDown() override { fs::remove_all(out_); }
  std::string write(const std::string& name, const std::string& text) { return temp_file("bi-" + name, text); }

  std::string dir_, out_;
  const std::string gradsync_ = GRADSYNC_BIN;
  const std::string run_ = GRADSYNC_RUN;
};

const char* kGraph =
    R"({"name": "t", "nodes": [{"id": "gpu0", "kind": "gpu"}, {"id": "gpu1", "kind": "gpu"}, {"id": "sw", "kind": "pcie_switch"}],
  "links": [{"a": "gpu0", "b": "sw", "bandwidth_GBps": BW, "latency_us": 1}, {"a": "gpu1", "b": "sw", "bandwidth_GBps": 5, "latency_us": 1}]})";

std::string graph_with_bandwidth(const std::string& bw) {
  std::string g = kGraph;
  g.replace(g.find("BW"), 2, bw);
  return g;
}

TEST_F(BadInputCli, GradsyncFlagsAndFiles) {
  const std::string zero_bw = write("zero-bw.json", graph_with_bandwidth("0"));
  const std::string overflow = write("overflow.json", graph_with_bandwidth("1e400"));
  const std::string dup_key = write("dup-key.json", "{\"name\": \"t\", \"name\": \"u\", \"gpus\": [\"g0\"], \"bandwidth_GBps\": [[null]]}");
  const std::string workload = write("workload.json", R"({"name": "w", "dtype_bytes": 4, "layers": [{"name": "l", "parms": 10}],
      "minibatches_per_epoch": 10, "compute_s_per_minibatch": 0.01})");
  const std::string exp_k3 = write("exp-k3.json", R"({"strategies": [{"name": "hierarchical", "k": 3}], "gpus": [4], "executors": ["sim"]})");
  const std::string exp_gpus = write("exp-gpus.json", R"({"strategies": [{"name": "ring"}], "gpus": [2, 9]})");
  const std::string exp_topo = write("exp-topo.json", R"({"topology": "source-a-titanx-4gpux"})");
  const std::string exp_iter = write("exp-iter.json", R"({"iterations": 10000000000})");
  const std::string exp_frac = write("exp-frac.json", R"({"sizes_bytes": [1024, 1.5], "strategies": [{"name": "ring"}]})");
  const std::string junk = write("junk.txt", "hello\nworld\n");
  const std::string p2p_huge = write("p2p-huge.txt", on_line(fixture_text("p2p-4gpu-2switch.txt"), 36, "12.41", "1e300"));
  const std::string topo_only = std::string(GRADSYNC_TEST_FIXTURES) + "/topo-4gpu-2switch.txt";
  // A line tens of thousands of characters long overflowed the stack in the readers' std::regex
  // (found by extending each line of a published file): a CUDA sample's device line, NCCL's own
  // log, nccl-tests' heading, a PyTorch listing.
  const std::string long_p2p = write("long-p2p.txt", on_line(fixture_text("p2p-4gpu-2switch.txt"), 2, "Device: 0", "Device: 0" + std::string(100000, ' ')));
  const std::string long_log = write("long-log.txt", "host:1:2 [0] NCCL INFO " + std::string(40000, 'x') + "\n");
  const std::string long_listing = write("long-listing.txt", "fc.weight torch.Size([" + std::string(50000, ' ') + "10, 10])\n");
  const std::string g = gradsync_;
  const std::string o = out_;
  const std::vector<Row> rows = {
      // Flags.
      {"unknown flag", g, "predict --topolgy x",
       {"gradsync: error: gradsync predict: unknown flag --topolgy (did you mean '--topology'?); see gradsync predict --help"}, {}},
      {"unknown flag of a nested verb", g, "testbed up --scal 2 x",
       {"gradsync: error: gradsync testbed up: unknown flag --scal (did you mean '--scale'?)"}, {}},
      {"unknown strategy", g, "predict --strategy rng -o " + o + "/a.jsonl",
       {"gradsync: error: --strategy rng: unknown strategy (did you mean 'ring'?); valid strategies: ps, ring,"}, {o + "/a.jsonl"}},
      {"a strategy twice", g, "predict --strategy ring,ring", {"gradsync: error: --strategy ring: listed twice; expected each strategy once"}, {}},
      {"size beyond 1 PiB", g, "predict --strategy ring --size 1e30 -o " + o + "/b.jsonl",
       {"gradsync: error: --size \"1e30\": expected a size of at most 1 PiB (1125899906842624 bytes)"}, {o + "/b.jsonl"}},
      {"fractional bytes", g, "predict --strategy ring --size 1.5", {"gradsync: error: --size \"1.5\": 1.500 bytes; expected a whole number of bytes"}, {}},
      {"negative size", g, "predict --strategy ring --size -4", {"gradsync: error: --size \"-4\": expected a size in bytes"}, {}},
      {"a GPU count twice", g, "predict --gpus 2,2", {"gradsync: error: --gpus \"2,2\": 2 GPUs is listed twice; expected each count once"}, {}},
      {"a GPU range beyond reason", g, "predict --gpus 1-2000000000",
       {"gradsync: error: --gpus \"1-2000000000\": the range \"1-2000000000\" goes outside 1..65536"}, {}},
      {"a GPU count beyond an int", g, "predict --gpus 99999999999",
       {"gradsync: error: --gpus \"99999999999\": \"99999999999\" is not a GPU count; expected counts like 4, 1,2,4 or 1-4"}, {}},
      {"more GPUs than the topology has", g, "predict --gpus 9",
       {"gradsync: error: --gpus 9: topology \"source-a-titanx-4gpu\" has 4 GPUs; expected between 1 and 4"}, {}},
      {"parameter server on no such rank", g, "predict --strategy ps --param server=rank99999999999999999999 -o " + o + "/c.jsonl",
       {"gradsync: error: --param server=rank99999999999999999999 (strategy ps): expected auto or rank0 to rank3, host or the id of a GPU or host memory"},
       {o + "/c.jsonl"}},
      {"parameter below its minimum", g, "predict --strategy hierarchical --param k=0 -o " + o + "/d.jsonl",
       {"gradsync: error: --param k=0 (strategy hierarchical): expected auto or an integer of at least 1"}, {o + "/d.jsonl"}},
      {"a minibatch of words sampling would draw for ever (found by fuzzing)", g,
       "predict --size 64MiB --strategy sampled --param base=49000002 -o " + o + "/b.jsonl",
       {"gradsync: error: --param base=49000002 (strategy sampled): expected auto or an integer of at most 1000000"}, {o + "/b.jsonl"}},
      {"a vocabulary sampling cannot hold", g, "predict --size 1024GiB --strategy sampled --param rows=2000000000",
       {"gradsync: error: --param rows=2000000000 (strategy sampled): expected an integer of at most 10000000"}, {}},
      {"a period the simulator cannot run", g, "simulate --strategy downpour --gpus 2 --param step=1000000000 -o " + o + "/p.jsonl",
       {"gradsync: error: --param step=1000000000 (strategy downpour): expected auto or an integer of at most 1000000"}, {o + "/p.jsonl"}},
      {"a reduction rate near zero", g, "simulate --strategy ring --gpus 2 --param reduce_GBps=1e-300",
       {"gradsync: error: --param reduce_GBps=1e-300 (strategy ring): expected auto or a rate in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"}, {}},
      {"parameter without a value", g, "predict --param k", {"gradsync: error: --param \"k\": expected key=value (e.g. k=2)"}, {}},
      {"parameter NaN", g, "predict --strategy ring --param reduce_GBps=nan",
       {"gradsync: error: --param reduce_GBps=nan (strategy ring): expected auto or a number"}, {}},
      {"output folder under a file", g, "predict --strategy ring -o " + o + "/plain/sub/x.jsonl",
       {"gradsync: error: -o " + o + "/plain/sub/x.jsonl: cannot make the folder " + o + "/plain/sub: " + o + "/plain is a file"}, {}},
      {"output format unknown", g, "predict --strategy ring -o " + o + "/e.txt",
       {"gradsync: error: -o " + o + "/e.txt: cannot tell the format from the extension"}, {o + "/e.txt"}},
      {"output is a folder", g, "predict --strategy ring --format json -o " + o, {"gradsync: error: -o " + o + ": is a folder; expected a file name"}, {}},
      {"trace kept back when -o fails", g, "simulate --strategy ring --gpus 2 --trace " + o + "/t.json -o " + o + "/plain/x.jsonl",
       {"gradsync: error: -o " + o + "/plain/x.jsonl: cannot make the folder " + o + "/plain: " + o + "/plain is a file"}, {o + "/t.json"}},
      {"zero iterations", g, "simulate --iterations 0", {"--iterations: got \"0\"; expected a whole number between 1 and 1000000"}, {}},
      {"fractional iterations", g, "simulate --iterations 1.5", {"--iterations: got \"1.5\"; expected a whole number between 1 and 1000000"}, {}},
      {"NaN jitter", g, "simulate --jitter nan", {"--jitter: got \"nan\"; expected a number between 0 and 10"}, {}},
      {"zero latency factor", g, "simulate --latency-factor 0", {"--latency-factor: got \"0\"; expected a number between 1e-06 and 1e+06"}, {}},
      {"negative seed", g, "simulate --seed -1", {"--seed: got \"-1\"; expected a whole number between 0 and 9223372036854775807"}, {}},
      {"a speed beyond reason", g, "simulate --strategy ring --speeds 1,1e9,1,1",
       {"gradsync: error: --speeds \"1,1e9,1,1\": \"1e9\" is out of range; expected relative speeds between 0.001 and 1000"}, {}},
      {"zero processes", g, "testbed mpirun -n 0", {"--np: got \"0\"; expected a whole number between 1 and 65536"}, {}},
      {"zero testbed scale", g, "validate --scale 0", {"--scale: got \"0\"; expected a number above 0 and at most 1e+06"}, {}},
      {"validate strategy parameter it does not have", g, "validate --strategies ring,hierarchical:kk=2",
       {"gradsync: error: --strategies hierarchical:kk=2: hierarchical has no parameter \"kk\" (did you mean 'k'?)"}, {}},
      {"validate server off rank 0", g, "validate --strategies ps:server=host",
       {"gradsync: error: --strategies ps:server=host: the real run puts a synchronous server on rank 0's process; expected "
        "server=rank0 or no server"}, {}},
      {"validate item without a value", g, "validate --strategies ring:ring_order", {"\"ring_order\" is not key=value"}, {}},
      {"recommend with two sizes", g, "recommend --size 1MiB,2MiB",
       {"gradsync: error: --size 1MiB,2MiB: recommend takes one size (rank choices for one gradient)"}, {}},
      {"unknown choice", g, "import --p2p maybe " + topo_only, {"--p2p: maybe not in {enabled,disabled}"}, {}},
      {"no jobs", g, "sweep " + exp_iter + " -j 0", {"--jobs: Value 0 not in range 1 to 256"}, {}},
      // Files.
      {"topology with a zero bandwidth", g, "predict --topology " + zero_bw + " -o " + o + "/f.jsonl",
       {"gradsync: error: " + zero_bw + ": /links/0/bandwidth_GBps: got 0; expected a number greater than 0"}, {o + "/f.jsonl"}},
      {"topology with a number beyond a double", g, "predict --topology " + overflow,
       {"gradsync: error: " + overflow + ":2:", "the number 1e400 is too large for a double"}, {}},
      {"topology with a key twice", g, "predict --topology " + dup_key,
       {"gradsync: error: " + dup_key + ": /name: the key 'name' is given twice in one object; expected each key once"}, {}},
      {"workload with a misspelt key", g, "predict --workload " + workload,
       {"gradsync: error: " + workload + ": /layers/0/parms: unknown key 'parms' (did you mean 'params'?)"}, {}},
      {"experiment parameter that does not fit", g, "simulate " + exp_k3 + " -o " + o + "/g.jsonl",
       {"gradsync: error: " + exp_k3 + ": /strategies/0/k: --param k=3 (strategy hierarchical): expected auto or a number of groups that divides N = 4 (1, 2, 4)"}, {o + "/g.jsonl"}},
      {"experiment with too many GPUs", g, "sweep " + exp_gpus + " -o " + o + "/h.jsonl",
       {"gradsync: error: " + exp_gpus + ": /gpus/1: got 9; expected a GPU count between 1 and 4 (topology \"source-a-titanx-4gpu\" has 4 GPUs)"},
       {o + "/h.jsonl"}},
      {"experiment on no such topology", g, "simulate " + exp_topo,
       {"gradsync: error: " + exp_topo + ": /topology: got \"source-a-titanx-4gpux\"; expected a topology file or a shipped topology (did you "
        "mean 'source-a-titanx-4gpu'?)"}, {}},
      {"experiment with iterations beyond an int", g, "sweep " + exp_iter,
       {"gradsync: error: " + exp_iter + ": /iterations: got 10000000000; expected an integer between 1 and 1000000"}, {}},
      {"experiment with a fractional size", g, "sweep " + exp_frac + " -o " + o + "/i.csv",
       {"gradsync: error: " + exp_frac + ": /sizes_bytes/1: got 1.5; expected an integer between 0 and 1125899906842624"}, {o + "/i.csv"}},
      {"a topology JSON to import", g, "import " + std::string(GRADSYNC_TOPOLOGIES) + "/source-a-titanx-4gpu.json -o " + o + "/t.json",
       {"is already a topology JSON, which import does not rewrite; expected --graph"}, {o + "/t.json"}},
      {"no tool output", g, "import " + junk + " -o " + o + "/j.json",
       {"gradsync: error: " + junk + ": no supported tool output found; expected the text output of p2pBandwidthLatencyTest"}, {o + "/j.json"}},
      {"tool output with a bandwidth beyond reason", g, "import " + p2p_huge + " -o " + o + "/k.json",
       {"gradsync: error: " + p2p_huge + ":36: \"1e300\" is out of range; expected a bandwidth in GB/s between 1e-06 (1 kB/s) and 1e+06 (1 PB/s)"},
       {o + "/k.json"}},
      {"a line longer than any tool prints", g, "import " + long_p2p + " -o " + o + "/q.json",
       {"gradsync: error: " + long_p2p + ":2: a line of 100", " characters; expected printed text (a tool's output, a log, a listing), whose lines are at most 8192"},
       {o + "/q.json"}},
      {"NCCL's log with a line longer than any it prints", g, "compare " + topo_only + " " + long_log,
       {"gradsync: error: " + long_log + ":1: a line of 40023 characters; expected printed text (a tool's output, a log, a listing), whose lines are at most 8192"}, {}},
      {"a PyTorch listing with a line longer than any it prints", g, "workload from-pytorch " + long_listing + " --compute-s 0.1 -o " + o + "/r.json",
       {"gradsync: error: " + long_listing + ":1: a line of 50030 characters"}, {o + "/r.json"}},
      {"nominal figures for an unknown CPU", g, "import " + topo_only + " --cpu ibm -o " + o + "/l.json",
       {"gradsync: error: --cpu \"ibm\": not a CPU maker gradsync knows; expected amd, intel or arm"}, {o + "/l.json"}},
      {"nominal figures for an unknown GPU", g, "import " + topo_only + " --gpu-model Foo -o " + o + "/m.json",
       {"gradsync: error: --gpu-model \"Foo\": not a GPU model gradsync knows"}, {o + "/m.json"}},
      {"a PCIe width out of its domain", g, "import " + topo_only + " --pcie-width 0 -o " + o + "/n.json",
       {"gradsync: error: --pcie-width 0: not a PCIe link width; expected 1, 2, 4, 8, 16 or 32"}, {o + "/n.json"}},
  };
  check_rows(rows);
}

TEST_F(BadInputCli, GradsyncRunFlags) {
  const std::string zero_bw = write("run-zero-bw.json", graph_with_bandwidth("0"));
  const std::string r = run_;
  const std::string o = out_;
  const std::string quick = " -n 1 -w 0";
  const std::vector<Row> rows = {
      {"factor not a number", r, "-b 1K -e 4K -f abc -o " + o + "/r1.jsonl" + quick,
       {"gradsync-run: error: -f \"abc\": expected a size multiplication factor like 2"}, {o + "/r1.jsonl"}},
      {"factor with trailing junk", r, "-b 1K -e 4K -f 2x" + quick, {"gradsync-run: error: -f \"2x\": expected a size multiplication factor like 2"}, {}},
      {"factor not above 1", r, "-b 1K -e 4K -f 1" + quick, {"gradsync-run: error: -f 1: expected a factor above 1"}, {}},
      {"last size below the first", r, "-b 4K -e 1K" + quick,
       {"gradsync-run: error: -e 1K: the last size (1024 B) is below the first (-b 4K = 4096 B); expected -e at least -b"}, {}},
      {"size beyond 1 PiB", r, "-b 1e30" + quick, {"gradsync-run: error: -b \"1e30\": expected a size of at most 1 PiB (1125899906842624 bytes)"}, {}},
      // One size grammar for both binaries: whole bytes only here too.
      {"fractional bytes", r, "-b 1.5" + quick, {"gradsync-run: error: -b \"1.5\": 1.500 bytes; expected a whole number of bytes"}, {}},
      {"size with an unknown unit", r, "-b 1x" + quick, {"gradsync-run: error: -b \"1x\": expected a size in bytes, optionally with a unit: B, K or KiB"}, {}},
      {"NaN size", r, "-b nan" + quick, {"gradsync-run: error: -b \"nan\": expected a size in bytes"}, {}},
      {"fractional iterations", r, "-b 1K -n 1.5", {"--iters: got \"1.5\"; expected a whole number between 0 and 1000000"}, {}},
      {"negative warm-up", r, "-b 1K -w -1", {"--warmup_iters: got \"-1\"; expected a whole number between 0 and 1000000"}, {}},
      {"NaN timeout", r, "-b 1K --timeout nan" + quick, {"--timeout: got \"nan\"; expected a number between 0 and 1e+07"}, {}},
      {"infinite compute", r, "-b 1K --compute-ms inf" + quick, {"--compute-ms: got \"inf\"; expected a number between 0 and 1e+07"}, {}},
      {"zero workers", r, "-b 1K --workers 0" + quick, {"--workers: got \"0\"; expected a whole number between 1 and 65536"}, {}},
      {"more workers than processes", r, "-b 1K --workers 2" + quick,
       {"gradsync-run: error: --workers 2: only 1 processes; expected at most as many workers as processes"}, {}},
      {"unknown flag", r, "-b 1K --chek", {"gradsync-run: error: gradsync-run: unknown flag --chek (did you mean '--check'?); see gradsync-run --help"}, {}},
      {"unknown flag of measure", r, "measure --sise 1K -o " + o + "/m1.json",
       {"gradsync-run: error: gradsync-run measure: unknown flag --sise (did you mean '--size'?)"}, {o + "/m1.json"}},
      {"unknown backend", r, "-b 1K --backend foo", {"--backend: got \"foo\"; expected mpi_host, mpi_cuda or nccl"}, {}},
      {"unknown strategy", r, "-b 1K --strategy rng" + quick, {"gradsync-run: error: --strategy rng: unknown strategy (did you mean 'ring'?)"}, {}},
      {"unknown parameter", r, "-b 1K --param kk=1" + quick,
       {"gradsync-run: error: --param kk=1: strategy ring has no parameter 'kk'; its parameters: ring_order,"}, {}},
      {"topology with a zero bandwidth", r, "-b 1K --topology " + zero_bw + quick,
       {"gradsync-run: error: " + zero_bw + ": /links/0/bandwidth_GBps: got 0; expected a number greater than 0"}, {}},
      {"rank on no such GPU", r, "-b 1K --topology source-a-titanx-4gpu --ranks gpu9" + quick,
       {"gradsync-run: error: --ranks: \"gpu9\" is not a node of topology \"source-a-titanx-4gpu\" (did you mean 'gpu0'?)"}, {}},
      {"output folder under a file", r, "-b 1K -o " + o + "/plain/x.jsonl" + quick,
       {"gradsync-run: error: -o " + o + "/plain/x.jsonl: cannot make the folder " + o + "/plain: " + o + "/plain is a file"}, {}},
      {"trace is a folder", r, "-b 1K --trace " + o + " -o " + o + "/r2.jsonl" + quick,
       {"gradsync-run: error: --trace " + o + ": is a folder; expected a file name"}, {o + "/r2.jsonl"}},
      {"measure output folder under a file", r, "measure -o " + o + "/plain/m.json --size 1K -n 1",
       {"gradsync-run: error: -o " + o + "/plain/m.json: cannot make the folder " + o + "/plain: " + o + "/plain is a file"}, {}},
      {"measure probe size unknown", r, "measure -o " + o + "/m2.json --size 1x",
       {"gradsync-run: error: --size \"1x\": expected a size in bytes, optionally with a unit: B, K or KiB"}, {o + "/m2.json"}},
  };
  check_rows(rows);
}

}  // namespace
