// Fuzz entry functions (issue 7, "Hardening"): one per fuzz target, each feeding raw bytes
// to a real public loader of gradsync. They are the single definition used both by the
// libFuzzer executables (fuzz/<target>_fuzzer.cpp, built with GRADSYNC_FUZZ=ON) and by the
// regression test (tests/fuzz/test_fuzz_regressions.cpp, normal build), which replays every
// committed seed and every saved crash input through them.
//
// Contract of every entry:
//   - the input is accepted            -> returns Outcome::accepted (after checking the
//                                          result's invariants, see entries.cpp);
//   - the loader throws InputError      -> returns Outcome::rejected (the documented
//                                          bad-input path: one clear message, exit 2);
//   - anything else (another exception, a violated invariant, a schedule the symbolic
//     checker refutes)                  -> prints "gradsync fuzz <target>: <what>" to stderr
//                                          and calls std::abort(), so libFuzzer records a
//                                          crash and a test replaying the input dies.
// Crashes, leaks and hangs inside the loaders are caught by the sanitizers / libFuzzer.
// GRADSYNC_FUZZ_SHOW_REJECTIONS=1 prints the InputError message of every rejected input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradsync::fuzz {

enum class Outcome { accepted, rejected };

const char* to_string(Outcome outcome);

using Entry = Outcome (*)(const std::uint8_t* data, std::size_t size);

struct Target {
  std::string name;  // fuzz/<name>_fuzzer.cpp, fuzz/seeds/<name>/, fuzz/regressions/<name>/
  Entry entry;
  std::string what;  // one line for --help texts and reports
  // Does every input reach the loader's accept / reject decision? False for targets that
  // turn any bytes into valid parameters (schedule): they never reject.
  bool can_reject = true;
};

// Every fuzz target, in a fixed order.
const std::vector<Target>& targets();

// Topology JSON through the public loader (load_topology: graph form, or matrix form with
// inference). Accepted topologies are routed between GPU pairs and must survive a round
// trip through their graph-form JSON.
Outcome fuzz_topology_json(const std::uint8_t* data, std::size_t size);
// The matrix-form reader (matrix_form_from_json), then inference of the switch tree. An
// accepted form must read back identically from matrix_form_to_json.
Outcome fuzz_matrix_form_json(const std::uint8_t* data, std::size_t size);
// Workload JSON (workload_from_json); accepted workloads must round-trip through workload_to_json.
Outcome fuzz_workload_json(const std::uint8_t* data, std::size_t size);
// Experiment JSON (experiments::load_experiment), its strategies' parameters, and the plan
// when it names a shipped topology and a preset workload or sizes.
Outcome fuzz_experiment_json(const std::uint8_t* data, std::size_t size);
// Tool outputs (import_tool_output: p2pBandwidthLatencyTest, nvbandwidth, nvidia-smi topo
// -m / -p2p, detected inside the text), then inference; the imported matrix form must be
// written and read back (what `gradsync import` followed by `--topology` does).
Outcome fuzz_tool_output(const std::uint8_t* data, std::size_t size);
// The --gpus parser (experiments::parse_gpu_counts: "4", "1,2,4", "1-4").
Outcome fuzz_gpu_counts(const std::uint8_t* data, std::size_t size);
// The size grammar of both front ends (models::parse_bytes: "64MiB", "1M", "1e6", "2GB").
Outcome fuzz_byte_size(const std::uint8_t* data, std::size_t size);
// Free-text --param values: first line a strategy name, then one key=value per line,
// built on a fixed 12-GPU tree (6 ranks); an accepted schedule must pass the symbolic checker.
Outcome fuzz_strategy_params(const std::uint8_t* data, std::size_t size);
// Schedule building from VALID parameters derived from the bytes (every strategy, 1-16
// ranks, tiny and odd sizes, every strategy parameter in range, shipped and uniform
// topologies); the symbolic checker is the oracle. Never rejects: an InputError here means
// a valid combination was refused, which is a failure. GRADSYNC_FUZZ_SHOW_CASES=1 prints
// each case (strategy, topology, ranks, size, parameters) to stderr.
Outcome fuzz_schedule(const std::uint8_t* data, std::size_t size);

// fuzz/entries_inputs.cpp (issue 31):
// nccl-tests output as text (models::read_nccl_tests): each figure is the line's own, one record per timing
Outcome fuzz_nccl_tests_log(const std::uint8_t* data, std::size_t size);
// NCCL's own INFO log (models::read_nccl_log): CPU vendor, GPU paths and NVLS, each from a line that says it
Outcome fuzz_nccl_log(const std::uint8_t* data, std::size_t size);
// nccl-tests logs generated with known figures in every layout the reader accepts: read back exactly, records give back algbw / busbw
Outcome fuzz_nccl_tests_generated(const std::uint8_t* data, std::size_t size);
// topology generate options (the generated form): the GPUs, NICs and links the options say, or an error naming the JSON path
Outcome fuzz_topology_generate(const std::uint8_t* data, std::size_t size);
// compare / calibrate inputs: a grid axis, then nccl-tests output, compared and calibrated on pcie-8gpu-2switch
Outcome fuzz_compare_inputs(const std::uint8_t* data, std::size_t size);
// sweep result files (experiments::read_sweep_file, JSON lines or CSV) as --resume and --merge read them
Outcome fuzz_sweep_file(const std::uint8_t* data, std::size_t size);
// PyTorch parameter listings (models::workload_from_listing), round trip through workload JSON
Outcome fuzz_layer_listing(const std::uint8_t* data, std::size_t size);
// the training data's CSV (training::parse_digits_csv): pixels 0..1 in sixteenths, digits 0..9, the same through CSV again
Outcome fuzz_digits_csv(const std::uint8_t* data, std::size_t size);
// the language model's text (training::parse_text, make_ngrams): words of a-z and inner
// apostrophes or "</s>", the same words through text again, rows of in-vocabulary ids
Outcome fuzz_text(const std::uint8_t* data, std::size_t size);

}  // namespace gradsync::fuzz
