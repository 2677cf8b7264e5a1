#!/usr/bin/python3
"""Test loss against samples seen, one line per training run of `gradsync reproduce convergence`,
a panel per group of runs (the claims they serve), the target test loss dashed.

Reads DIR/convergence-comparison.json ("runs" and "runs_on_other_worker_counts": [{run, what, group}],
"task": {target_test_loss})
and DIR/convergence.jsonl (each run's test points: run, samples, test_loss), both written by
`gradsync reproduce convergence`. Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/convergence_curves.py out/convergence/convergence-comparison.json \\
      out/convergence/convergence.jsonl -o docs/figures/convergence.png
"""
import argparse

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("comparison", help="convergence-comparison.json")
    ap.add_argument("points", help="convergence.jsonl")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    args = ap.parse_args()
    doc = R.load_json(args.comparison)
    try:
        runs = [(r["run"], r["what"], r["group"]) for r in doc["runs"] + doc.get("runs_on_other_worker_counts", [])]
        target = doc["task"]["target_test_loss"]
    except (KeyError, TypeError) as e:
        raise R.PlotError(f"{args.comparison}: no /runs with run, what and group, or no /task/target_test_loss (missing {e}); "
                          "expected the file `gradsync reproduce convergence` writes")
    if not runs:
        raise R.PlotError(f"{args.comparison}: /runs is empty")
    curves = {run: ([], []) for run, _, _ in runs}
    for i, rec in enumerate(R.load_records(args.points)):
        run = R.require(rec, "run", args.points, i)
        if run not in curves:
            raise R.PlotError(f"{args.points}: record {i + 1} is of run \"{run}\", which {args.comparison} does not list")
        curves[run][0].append(R.require(rec, "samples", args.points, i))
        curves[run][1].append(R.require(rec, "test_loss", args.points, i))
    groups = []
    for _, _, group in runs:
        if group not in groups:
            groups.append(group)
    plt = R.matplotlib_pyplot(__file__)
    fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 4.6), squeeze=False)
    for ax, group in zip(axes[0], groups):
        for run, what, g in runs:
            if g != group:
                continue
            xs, ys = curves[run]
            ax.plot(xs, ys, marker=".", markersize=3, linewidth=1.2, label=what)
        ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.set_yscale("log")
        ax.set_xlabel("samples seen")
        ax.set_ylabel("test loss")
        ax.set_title(f"{group} (target {target:g} dashed)")
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
