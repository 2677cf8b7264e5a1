#!/usr/bin/python3
"""Predicted vs measured time per synchronisation, with the +-5 % band.

Input format (a "validation result file"): result records, JSON lines or CSV, as gradsync
writes them. Records whose executor is "run" (gradsync-run -o) are the measurements;
every record of another executor (formula, analytic, sim: gradsync predict/simulate/sweep
-o) is a prediction. A prediction is paired with the measurement of the same
(strategy, ranks, bytes); both must have time_per_sync_s. Several files may be given
(e.g. the run's records and the predictions' records); they are read as one.
Run with /usr/bin/python3.

Example:
  mpirun -np 4 build/bin/gradsync-run --strategy ring -b 1MiB -e 64MiB -f 4 -o run.jsonl
  build/bin/gradsync predict --topology measured.json --gpus 4 --strategy ring --size 1MiB,4MiB,16MiB,64MiB -o pred.jsonl
  /usr/bin/python3 plots/predicted_vs_measured.py run.jsonl pred.jsonl -o docs/figures/predicted_vs_measured.png
"""
import argparse

import _records as R


def key(rec, path, i):
    return (R.require(rec, "strategy", path, i), int(R.require(rec, "ranks", path, i)),
            round(float(R.require(rec, "bytes", path, i))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="validation result files (.jsonl or .csv)")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--band", type=float, default=5.0, help="half-width of the agreement band in percent (default 5)")
    ap.add_argument("--title", default=None)
    args = ap.parse_args()
    measured, predicted = {}, []
    for path in args.results:
        for i, rec in enumerate(R.load_records(path)):
            t = float(R.require(rec, "time_per_sync_s", path, i))
            k = key(rec, path, i)
            if R.require(rec, "executor", path, i) == "run":
                measured[k] = t
            else:
                predicted.append((k, rec["executor"], t))
    if not measured:
        raise R.PlotError(f"{', '.join(args.results)}: no record with executor \"run\"; expected measurements "
                          "(gradsync-run -o) next to the predictions")
    pairs = [(measured[k], t, ex, k) for k, ex, t in predicted if k in measured and measured[k] > 0]
    if not pairs:
        raise R.PlotError("no prediction has the (strategy, ranks, bytes) of a measurement; "
                          f"measured: {sorted(measured)[:4]} ...")
    plt = R.matplotlib_pyplot(__file__)
    fig, ax = plt.subplots(figsize=(5.6, 5.2))
    lo = min(min(p[0], p[1]) for p in pairs) * 0.7
    hi = max(max(p[0], p[1]) for p in pairs) * 1.4
    xs = [lo, hi]
    ax.plot(xs, xs, color="black", linewidth=0.8, label="predicted = measured")
    b = args.band / 100
    ax.fill_between(xs, [x * (1 - b) for x in xs], [x * (1 + b) for x in xs], color="tab:green", alpha=0.2,
                    label=f"+-{args.band:g} %")
    inside = sum(1 for p in pairs if abs(p[1] / p[0] - 1) <= b)
    markers = {"formula": "^", "analytic": "o", "sim": "x"}
    strategies = sorted({p[3][0] for p in pairs})
    for si, strategy in enumerate(strategies):
        for ex in sorted({p[2] for p in pairs}):
            sel = [p for p in pairs if p[2] == ex and p[3][0] == strategy]
            if not sel:
                continue
            ax.scatter([p[0] for p in sel], [p[1] for p in sel], label=f"{strategy} ({ex})", s=30,
                       marker=markers.get(ex, "s"), color=f"C{si}", facecolors="none" if ex == "analytic" else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured time per synchronisation (s)")
    ax.set_ylabel("predicted time per synchronisation (s)")
    ax.set_title(args.title or f"Predicted vs measured ({inside} of {len(pairs)} within +-{args.band:g} %)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
