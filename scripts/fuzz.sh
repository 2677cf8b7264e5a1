#!/usr/bin/env bash
# Fuzzing campaign (issue 7): builds the libFuzzer targets (clang + ASan + UBSan) in
# build-fuzz/ when needed, runs each target for a set time, one after the other, and prints
# a markdown table of inputs run, rate, corpus size and problems found (also written to
# build-fuzz/fuzz/summary.md). See --help.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: scripts/fuzz.sh [-h|--help] [--list] [--smoke] [SECONDS_PER_TARGET] [TARGET[=SECONDS] ...]

Runs gradsync's libFuzzer targets (fuzz/<target>_fuzzer.cpp, entry functions in
fuzz/entries.cpp) one at a time, each for SECONDS_PER_TARGET seconds (default 60), or
the SECONDS given with the target (TARGET=SECONDS), and prints a markdown table: per
target the seconds it ran, inputs run, inputs per second, corpus size, the crashes, leaks,
hangs and out-of-memory inputs found, and whether it reached the goal of 10^6 inputs.
The table is also written to $BUILD/fuzz/summary.md (with the command that made it),
ready to paste into the README.

A target stops at the first problem it finds (libFuzzer's default); fix it, save the
input (minimised: <bin> -minimize_crash=1 -runs=10000 <crash file>) under
fuzz/regressions/<target>/<what-it-is> (tests/fuzz/test_fuzz_regressions.cpp replays
every file there and under fuzz/seeds/<target>/; a name starting with "bad-" says the
input must be rejected with an InputError), rerun.

Targets (default: all):
  topology_json        topology JSON, graph or matrix form (load_topology)
  matrix_form_json     matrix-form JSON and switch-tree inference
  workload_json        workload JSON
  experiment_json      experiment JSON (load_experiment, make_plan)
  tool_output          p2pBandwidthLatencyTest / nvbandwidth / nvidia-smi topo text (import)
  gpu_counts           --gpus values ("1-4")
  byte_size            --size values ("64MiB")
  strategy_params      --param key=value text, schedule built and symbolically checked
  schedule             schedules from valid random parameters, symbolic checker as oracle
  nccl_tests_log       nccl-tests logs as text (read_nccl_tests); figures checked against the line
  nccl_log             NCCL's own INFO log (read_nccl_log): CPU vendor, GPU paths, NVLS from lines saying them
  nccl_tests_generated nccl-tests logs generated with known figures, read back exactly
  topology_generate    topology generate options: GPUs, NICs, links as the options say
  compare_inputs       calibrate grid axis + nccl-tests log, compared and calibrated
  sweep_file           sweep result files (--resume / --merge), JSON lines or CSV
  layer_listing        PyTorch parameter listings (gradsync workload from-listing)
  digits_csv           the training data's CSV (gradsync-train --data): pixels, digits, CSV round trip
  text                 the language model's text (gradsync-train --corpus): words, text round trip, n-gram rows

--smoke: what the test suite (scripts/test) runs on every submission: builds the fuzzers,
replays every seed and regression input of each target (a crash or an abort fails), then
fuzzes each for FUZZ_SMOKE_SECONDS (default 3) from a scratch copy of its seeds with a fixed
random seed; exits 1 on any problem (the input and log are kept under $BUILD/fuzz/smoke/).

Each run: -max_total_time=SECONDS -timeout=10 (an input running longer is a hang)
-rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1, seeds from fuzz/seeds/<target>/
(read only), new inputs into the working corpus $BUILD/fuzz/corpus/<target>/ (kept between
runs, not committed), problem inputs into $BUILD/fuzz/artifacts/<target>/, the full log in
$BUILD/fuzz/logs/<target>.log. The timeout is wall-clock time: a fuzzer paused (kill -STOP, a
suspended shell job) for more than 10 s reports the input it was on as a hang when it resumes.

Build: configures $BUILD (default build-fuzz; set FUZZ_BUILD_DIR to change) with
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGRADSYNC_FUZZ=ON -DGRADSYNC_WITH_CUDA=OFF -DGRADSYNC_BUILD_TESTS=OFF
when it has not been configured, then builds the `fuzzers` target (incremental).
FUZZ_JOBS sets the build parallelism (default 2). FUZZ_OPT_LEVEL=0..3, when fuzz.sh configures
$BUILD, compiles it at -O<level> instead of RelWithDebInfo's -O2: scripts/test builds its smoke
run's folder (build-fuzz-smoke) at -O1, which builds in about 5.4 minutes on two cores where -O2
takes about 8.8, and replays and fuzzes for seconds only; a campaign wants -O2's speed.

To see what a target does with an input: <bin> <file> replays it;
GRADSYNC_FUZZ_SHOW_REJECTIONS=1 prints why inputs are rejected, GRADSYNC_FUZZ_SHOW_CASES=1
the cases the schedule target builds.

Exit status: 0 when no target found a problem, 1 when one did, 2 on bad arguments or a
failed build.

Examples:
  scripts/fuzz.sh                       # every target, 60 s each
  scripts/fuzz.sh 600 tool_output       # one target for 10 minutes
  scripts/fuzz.sh 5 gpu_counts byte_size
  scripts/fuzz.sh 60 experiment_json=600 schedule=600   # all targets, two of them longer
EOF
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
ALL_TARGETS=(topology_json matrix_form_json workload_json experiment_json tool_output gpu_counts byte_size strategy_params schedule nccl_tests_log nccl_log nccl_tests_generated topology_generate compare_inputs sweep_file layer_listing digits_csv text)

SECONDS_PER_TARGET=60
TARGETS=()
SMOKE=0
declare -A TARGET_SECONDS=()  # TARGET=SECONDS
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --list) printf '%s\n' "${ALL_TARGETS[@]}"; exit 0 ;;
    --smoke) SMOKE=1 ;;
    -*) echo "fuzz.sh: unknown option '$arg'; see --help" >&2; exit 2 ;;
    *)
      if [[ "$arg" =~ ^[0-9]+$ ]]; then
        if [ ${#TARGETS[@]} -gt 0 ]; then echo "fuzz.sh: the seconds ($arg) go before the targets; see --help" >&2; exit 2; fi
        if [ "$arg" -lt 1 ]; then echo "fuzz.sh: SECONDS_PER_TARGET must be at least 1, got $arg" >&2; exit 2; fi
        SECONDS_PER_TARGET="$arg"
      else
        name="${arg%%=*}"
        if [ "$name" != "$arg" ]; then
          secs="${arg#*=}"
          if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
            echo "fuzz.sh: '$arg': expected TARGET=SECONDS with SECONDS a whole number >= 1" >&2
            exit 2
          fi
          TARGET_SECONDS[$name]="$secs"
        fi
        known=0
        for t in "${ALL_TARGETS[@]}"; do [ "$t" = "$name" ] && known=1; done
        if [ $known = 0 ]; then
          echo "fuzz.sh: unknown target '$name'; targets: ${ALL_TARGETS[*]}" >&2
          exit 2
        fi
        TARGETS+=("$name")
      fi
      ;;
  esac
done
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL_TARGETS[@]}")

# --- build -------------------------------------------------------------------
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (Debian: apt-get install clang)" >&2; exit 2; }
  opt_args=()
  if [ -n "${FUZZ_OPT_LEVEL:-}" ]; then
    case "$FUZZ_OPT_LEVEL" in
      0 | 1 | 2 | 3) opt_args=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O$FUZZ_OPT_LEVEL -g -DNDEBUG") ;;
      *) echo "fuzz.sh: FUZZ_OPT_LEVEL=$FUZZ_OPT_LEVEL: expected 0, 1, 2 or 3" >&2; exit 2 ;;
    esac
  fi
  echo "fuzz.sh: configuring $BUILD${FUZZ_OPT_LEVEL:+ at -O$FUZZ_OPT_LEVEL}"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -DGRADSYNC_FUZZ=ON -DGRADSYNC_WITH_CUDA=OFF -DGRADSYNC_BUILD_TESTS=OFF \
    "${opt_args[@]}" >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log" >&2; echo "fuzz.sh: configuring $BUILD failed" >&2; exit 2; }
  rm -f "$BUILD.configure.log"
elif ! grep -q '^GRADSYNC_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  echo "fuzz.sh: $BUILD exists but was not configured with -DGRADSYNC_FUZZ=ON; use another FUZZ_BUILD_DIR" >&2
  exit 2
fi
echo "fuzz.sh: building the fuzzers in $BUILD"
if ! cmake --build "$BUILD" -j "${FUZZ_JOBS:-2}" --target fuzzers >"$BUILD/fuzz-build.log" 2>&1; then
  tail -40 "$BUILD/fuzz-build.log" >&2
  echo "fuzz.sh: build failed (full log: $BUILD/fuzz-build.log)" >&2
  exit 2
fi

OUT="$BUILD/fuzz"
# What a libFuzzer log says: "stat::<name>: <value>" lines from -print_final_stats=1.
stat_of() { sed -n "s/^stat::$2:[[:space:]]*\([0-9]*\).*/\1/p" "$1" | tail -1; }

# --- smoke: seeds and regressions replayed, then a few seconds each ---------------
if [ $SMOKE = 1 ]; then
  smoke="$OUT/smoke"
  rm -rf "$smoke"
  mkdir -p "$smoke"
  failed=()
  for t in "${TARGETS[@]}"; do
    bin="$OUT/bin/${t}_fuzzer"
    [ -x "$bin" ] || { echo "fuzz.sh: $bin was not built" >&2; exit 2; }
    inputs=()
    for dir in "$ROOT/fuzz/seeds/$t" "$ROOT/fuzz/regressions/$t"; do
      [ -d "$dir" ] && while IFS= read -r -d '' f; do inputs+=("$f"); done < <(find "$dir" -maxdepth 1 -type f -print0 | sort -z)
    done
    mkdir -p "$smoke/$t/corpus" "$smoke/$t/artifacts"
    cp "$ROOT/fuzz/seeds/$t"/* "$smoke/$t/corpus/"
    start=$(date +%s)
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    if ! "$bin" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$smoke/$t/artifacts/" "${inputs[@]}" >"$smoke/$t/replay.log" 2>&1; then
      failed+=("$t (replaying its seeds and regressions: $smoke/$t/replay.log)")
      continue
    fi
    if ! "$bin" -seed=1 -max_total_time="${FUZZ_SMOKE_SECONDS:-3}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$smoke/$t/artifacts/" "$smoke/$t/corpus" >"$smoke/$t/fuzz.log" 2>&1; then
      failed+=("$t (fuzzing: $smoke/$t/fuzz.log, input in $smoke/$t/artifacts/)")
      continue
    fi
    printf 'fuzz.sh: %-21s %3d inputs replayed, %7s fuzzed in %2d s\n' "$t" "${#inputs[@]}" \
      "$(stat_of "$smoke/$t/fuzz.log" number_of_executed_units)" $(( $(date +%s) - start ))
  done
  if [ ${#failed[@]} -gt 0 ]; then
    printf 'fuzz.sh: smoke run FAILED: %s\n' "${failed[@]}" >&2
    exit 1
  fi
  echo "fuzz.sh: smoke run passed: ${#TARGETS[@]} targets"
  exit 0
fi

# --- run -----------------------------------------------------------------------
mkdir -p "$OUT/corpus" "$OUT/artifacts" "$OUT/logs"
count_new() {  # files matching prefix* in dir, newer than the stamp
  find "$1" -maxdepth 1 -type f -name "$2*" -newer "$3" 2>/dev/null | wc -l
}

GOAL=1000000
ROWS=()
NOTES=()
problems=0
for t in "${TARGETS[@]}"; do
  bin="$OUT/bin/${t}_fuzzer"
  seeds="$ROOT/fuzz/seeds/$t"
  corpus="$OUT/corpus/$t"
  artifacts="$OUT/artifacts/$t"
  log="$OUT/logs/$t.log"
  mkdir -p "$corpus" "$artifacts"
  [ -x "$bin" ] || { echo "fuzz.sh: $bin was not built" >&2; exit 2; }
  [ -d "$seeds" ] || { echo "fuzz.sh: no seed folder $seeds" >&2; exit 2; }
  stamp="$artifacts/.run-start"
  touch "$stamp"
  sleep 1  # artifacts of this run are strictly newer than the stamp
  secs="${TARGET_SECONDS[$t]:-$SECONDS_PER_TARGET}"
  echo "fuzz.sh: $t for ${secs} s (log: $log)"
  start=$(date +%s)
  # ASan: leaks are reported at exit and per input by libFuzzer (-detect_leaks=1).
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1
  status=$?
  elapsed=$(( $(date +%s) - start ))
  runs=$(stat_of "$log" number_of_executed_units)
  rate=$(stat_of "$log" average_exec_per_sec)
  [ -z "$runs" ] && runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  runs=${runs:-0}
  rate=${rate:-$(( elapsed > 0 ? runs / elapsed : runs ))}
  corpus_size=$(find "$corpus" -maxdepth 1 -type f | wc -l)
  crashes=$(( $(count_new "$artifacts" crash- "$stamp") + $(count_new "$artifacts" deadly-signal "$stamp") ))
  leaks=$(count_new "$artifacts" leak- "$stamp")
  hangs=$(count_new "$artifacts" timeout- "$stamp")
  ooms=$(count_new "$artifacts" oom- "$stamp")
  found=$(( crashes + leaks + hangs + ooms ))
  if [ $found -eq 0 ] && [ $status -ne 0 ]; then
    crashes=1  # libFuzzer failed without writing an input (e.g. a crash while reading the corpus)
    found=1
  fi
  if [ $found -gt 0 ]; then
    problems=$((problems + 1))
    verdict="PROBLEM"
    NOTES+=("- $t: $(grep -m1 -o 'SUMMARY: [^ ]* *[^ ]*\|gradsync fuzz [a-z_]*: .\{0,100\}\|ERROR: libFuzzer: [a-z-]*' "$log" | head -1); inputs in $artifacts/, log $log")
  elif [ "$runs" -ge $GOAL ]; then
    verdict="ok"
  else
    verdict="ok, < 10^6 inputs"
  fi
  ROWS+=("$(printf '| %-16s | %7s | %12s | %9s | %7s | %7s | %5s | %5s | %4s | %-17s |' \
    "$t" "$elapsed" "$runs" "$rate" "$corpus_size" "$crashes" "$leaks" "$hangs" "$ooms" "$verdict")")
done

# --- summary -------------------------------------------------------------------
summary="$OUT/summary.md"
{
  compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  echo "Fuzzing campaign, $(date -u '+%Y-%m-%d %H:%M UTC'), $("${compiler:-clang++}" --version 2>/dev/null | head -1)."
  echo "libFuzzer + ASan + UBSan + leak detection, one target at a time on $(nproc) cores;"
  echo "command: \`scripts/fuzz.sh $*\` (goal: >= 10^6 inputs per target without a crash, leak or hang)."
  echo
  printf '| %-16s | %7s | %12s | %9s | %7s | %7s | %5s | %5s | %4s | %-17s |\n' \
    target seconds "inputs run" "inputs/s" corpus crashes leaks hangs ooms result
  printf '|%s|%s:|%s:|%s:|%s:|%s:|%s:|%s:|%s:|%s|\n' \
    ------------------ -------- ------------- ---------- -------- -------- ------ ------ ----- -------------------
  for row in "${ROWS[@]}"; do echo "$row"; done
  if [ ${#NOTES[@]} -gt 0 ]; then
    echo
    printf '%s\n' "${NOTES[@]}"
  fi
} >"$summary"
echo
cat "$summary"
echo
echo "table written to $summary"
echo "corpora: $OUT/corpus/<target>/   problem inputs: $OUT/artifacts/<target>/   logs: $OUT/logs/<target>.log"
echo "replay one input: $OUT/bin/<target>_fuzzer <file>"
[ $problems -eq 0 ] || { echo "fuzz.sh: $problems target(s) found problems"; exit 1; }
exit 0
