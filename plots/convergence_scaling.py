#!/usr/bin/python3
"""Speed-up to the one-worker baseline's target against the number of workers, from
`gradsync reproduce convergence-scaling`: the ceiling model averaging reached at each count
(workers x the baseline's samples over its own; at lr x N, else at half of it), source C's
convergence speed-ups (above 3x on 4 GPUs, 5x on 8, 9x on 16) and the linear speed-up.

Reads DIR/convergence-scaling-comparison.json ("counts": [{workers, learning_rate, speedup_ceiling?}],
"source_c": [{gpus, speedup_above}]). Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/convergence_scaling.py out/convergence/convergence-scaling-comparison.json \\
      -o docs/figures/convergence-scaling.png
"""
import argparse

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("comparison", help="convergence-scaling-comparison.json")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    args = ap.parse_args()
    doc = R.load_json(args.comparison)
    try:
        counts = [(c["workers"], c["learning_rate"], c.get("speedup_ceiling")) for c in doc["counts"]]
        claimed = [(s["gpus"], s["speedup_above"]) for s in doc["source_c"]]
    except (KeyError, TypeError, AttributeError) as e:
        raise R.PlotError(f"{args.comparison}: no /counts with workers and learning_rate, or no /source_c with gpus and "
                          f"speedup_above (missing {e}); expected the file `gradsync reproduce convergence-scaling` writes")
    # A count's speed-up: its first row that reached the target (lr x N, else half of it).
    reached = {}
    for workers, lr, ceiling in counts:
        if ceiling is not None and workers not in reached:
            reached[workers] = (ceiling, lr)
    if not reached:
        raise R.PlotError(f"{args.comparison}: no count reached the target (no speedup_ceiling)")
    xs = [1] + sorted(reached)
    plt = R.matplotlib_pyplot(__file__)
    fig, ax = plt.subplots(figsize=(6.5, 4.6))
    ax.plot(xs, xs, color="grey", linestyle=":", linewidth=1, label="linear")
    ax.plot(xs, [1] + [reached[w][0] for w in xs[1:]], marker="o", linewidth=1.5,
            label="model averaging, T=8 (ceiling: N x baseline's samples / its own)")
    for w in xs[1:]:
        ceiling, lr = reached[w]
        ax.annotate(f"lr {lr:g}", (w, ceiling), textcoords="offset points", xytext=(4, -12), fontsize=7)
    if claimed:
        ax.plot([g for g, _ in claimed], [s for _, s in claimed], marker="^", linestyle="none", color="tab:red",
                label="source C: above this (its model, its cluster)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel("workers (GPUs)")
    ax.set_ylabel("speed-up to the target")
    ax.set_title("convergence speed-up with model averaging")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
