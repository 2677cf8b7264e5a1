#!/usr/bin/env bash
# Regenerates every figure of the README: runs `gradsync reproduce all` into
# out/reproduce/ and draws from its result files into docs/figures/ (PNG and SVG).
#
#   bash scripts/plots.sh              # reproduce + figures (build dir: $GRADSYNC_BUILD or build)
#   bash scripts/plots.sh --with-run   # also run gradsync validate on the emulated cluster (root):
#                                      # the predicted-vs-measured figure
#
# Without --with-run the predicted-vs-measured figure is drawn from out/validate/validation.jsonl
# when it exists (skipped otherwise). Plot scripts need Debian's matplotlib: /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
with_run=0
for arg in "$@"; do
  case "$arg" in
    --with-run) with_run=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "plots.sh: unknown argument '$arg'; expected --with-run or --help" >&2; exit 2 ;;
  esac
done
build=${GRADSYNC_BUILD:-build}
bin="$build/bin"
py=/usr/bin/python3
out=out/reproduce
fig=docs/figures
if [ ! -x "$bin/gradsync" ]; then
  echo "plots.sh: $bin/gradsync not found; build first (cmake -S . -B $build && cmake --build $build)" >&2
  exit 2
fi
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
  echo "plots.sh: $py cannot import matplotlib; install python3-matplotlib" >&2
  exit 2
fi
mkdir -p "$out" "$fig"

echo "== gradsync reproduce all -o $out (reports in $out/source-*.txt)"
"$bin/gradsync" reproduce all -o "$out" -j 2 > "$out/reproduce-all.txt" 2> "$out/reproduce-all.log"

echo "== figures"
"$py" plots/epoch_bars_vs_paper.py "$out/source-a-comparison.json" --diagnostic -o "$fig/source-a-table4.png"
"$py" plots/speedup_vs_gpus.py "$out/source-a.jsonl" --filter reproduce.part=dense --filter workload=source-a-ffnn-lm \
  --log --title "Source A FFNN LM, dense gradients: speed-up vs GPUs (analytic)" -o "$fig/source-a-speedup.png"
"$py" plots/bandwidth_heatmap.py topologies/source-a-titanx-4gpu.json -o "$fig/source-a-bandwidth.png"
"$py" plots/time_vs_latency_workers.py "$out/source-b.jsonl" -o "$fig/source-b-latency-workers.png"
"$py" plots/speedup_vs_gpus.py "$out/source-c.jsonl" --filter reproduce.part=scaling \
  --title "Source C NMT: sync SGD speed-up, 2 machines x 4 GPUs (analytic)" -o "$fig/source-c-speedup.png"
"$py" plots/paper_vs_predicted.py "$out/source-c-comparison.json" "$out/source-a-comparison.json" \
  -o "$fig/papers-overlap.png"

echo "== sampling with all-reduce and per-link rates (gradsync sweep)"
"$bin/gradsync" sweep experiments/specs/source-a-sampling.json -j 2 -o out/sampling.jsonl 2> /dev/null
"$bin/gradsync" sweep experiments/specs/cluster-sampling.json -j 2 -o out/cluster-sampling.jsonl 2> /dev/null
"$py" plots/speedup_vs_gpus.py out/sampling.jsonl --by params.inner --by params.server --by params.rates \
  --title "Source A's machine, FFNN LM: sampling with all-reduce (analytic)" -o "$fig/sampling-source-a.png"
"$py" plots/speedup_vs_gpus.py out/cluster-sampling.jsonl --by params.inner --by params.server --by params.rates --log \
  --title "2 nodes x 4 GPUs, 1 GB/s Ethernet, FFNN LM (analytic)" -o "$fig/sampling-cluster.png"

if [ -x "$bin/gradsync-train" ]; then
  echo "== convergence on real training (gradsync reproduce convergence: gradsync-train under mpirun, about a minute)"
  export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
  "$bin/gradsync" reproduce convergence -o out/convergence > out/convergence.txt 2> /dev/null
  "$py" plots/convergence_curves.py out/convergence/convergence-comparison.json out/convergence/convergence.jsonl \
    -o "$fig/convergence.png"
  echo "== convergence speed-up with the workers (gradsync reproduce convergence-scaling: about a minute)"
  "$bin/gradsync" reproduce convergence-scaling -o out/convergence > out/convergence-scaling.txt 2> /dev/null
  "$py" plots/convergence_scaling.py out/convergence/convergence-scaling-comparison.json -o "$fig/convergence-scaling.png"
else
  echo "plots.sh: no $bin/gradsync-train (built where configure finds libtorch): convergence figures skipped"
fi

published=tests/data/published
echo "== gradsync compare on the published machines (nccl-tests vs the nccl strategy)"
mkdir -p out/compare
compared=()
for machine in h100-4gpu-nvlink rtx4090-4gpu-p2p-sys-and-default rtx4090-8gpu-dualepyc-p2poff; do
  "$bin/gradsync" compare "$published/$machine.txt" "$published/$machine.txt" -o "out/compare/$machine.jsonl" \
    > "out/compare/$machine.txt" 2> /dev/null
  compared+=("out/compare/$machine.jsonl")
done
"$py" plots/busbw_vs_size.py "${compared[@]}" -o "$fig/nccl-busbw.png"

validation=out/validate/validation.jsonl
if [ "$with_run" = 1 ]; then
  echo "== gradsync validate (the emulated cluster: measure, predict, simulate, run; needs root)"
  export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
  "$bin/gradsync" validate -o out/validate > out/validate.txt
fi
if [ -f "$validation" ]; then
  "$py" plots/predicted_vs_measured.py "$validation" -o "$fig/predicted-vs-measured.png"
else
  echo "plots.sh: no $validation: predicted-vs-measured figure skipped (run with --with-run, as root)"
fi
echo "figures in $fig/"
