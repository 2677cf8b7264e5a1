#!/usr/bin/python3
"""Source B's figures: communication time vs link latency and vs number of workers,
one colour per strategy, one line style per executor (formula dashed, analytic solid,
sim dotted).

Reads the records `gradsync reproduce source-b` writes (DIR/source-b.jsonl or .csv):
result records with a "reproduce" tag holding part (latency | workers), latency_us,
workers and size_bytes. One row of two panels per size. Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/time_vs_latency_workers.py out/reproduce/source-b.jsonl -o docs/figures/source-b.png
"""
import argparse

import _records as R

STYLES = {"formula": "--", "analytic": "-", "sim": ":"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="source-b.jsonl or source-b.csv")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--executor", action="append", choices=sorted(STYLES),
                    help="executors to draw (repeatable; default: all found)")
    args = ap.parse_args()
    records = R.load_records(args.results)
    data = {}  # (size, part) -> {(strategy, executor): {x: t}}
    for i, rec in enumerate(records):
        part = R.field(rec, "reproduce.part")
        if part not in ("latency", "workers"):
            continue
        ex = R.require(rec, "executor", args.results, i)
        if args.executor and ex not in args.executor:
            continue
        size = float(R.require(rec, "reproduce.size_bytes", args.results, i))
        x = float(R.require(rec, "reproduce.latency_us" if part == "latency" else "reproduce.workers", args.results, i))
        t = float(R.require(rec, "time_per_sync_s", args.results, i))
        data.setdefault((size, part), {}).setdefault((rec["strategy"], ex), {})[x] = t
    if not data:
        raise R.PlotError(f"{args.results}: no record tagged reproduce.part = latency or workers; expected the "
                          "records of `gradsync reproduce source-b`")
    sizes = sorted({k[0] for k in data})
    strategies = sorted({s for v in data.values() for s, _ in v})
    colours = {s: f"C{i}" for i, s in enumerate(strategies)}
    plt = R.matplotlib_pyplot(__file__)
    fig, axes = plt.subplots(len(sizes), 2, figsize=(11, 4.2 * len(sizes)), squeeze=False)
    for row, size in enumerate(sizes):
        for col, part in enumerate(("latency", "workers")):
            ax = axes[row][col]
            for (s, ex), pts in sorted(data.get((size, part), {}).items()):
                xs = sorted(pts)
                ax.plot(xs, [pts[x] * 1e3 for x in xs], STYLES.get(ex, "-"), color=colours[s], marker=".",
                        label=f"{s} ({ex})")
            ax.set_xscale("log" if part == "latency" else "log", base=10 if part == "latency" else 2)
            ax.set_yscale("log")
            ax.set_xlabel("latency a between endpoints (us)" if part == "latency" else "workers N")
            ax.set_ylabel("communication time per sync (ms)")
            label = f"{size / 1e6:g} MB" if size >= 1e6 else f"{size / 1e3:g} kB"
            ax.set_title(f"S = {label}: vs {'latency (16 workers)' if part == 'latency' else 'workers (a = 10 us)'}")
            ax.grid(True, which="both", alpha=0.3)
            if part == "workers":
                ax.set_xticks(sorted({x for v in data.get((size, part), {}).values() for x in v}))
                ax.get_xaxis().set_major_formatter(__import__("matplotlib").ticker.ScalarFormatter())
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, -0.02 - 0.02 * len(sizes)))
    fig.suptitle("Source B: PS, ring, hierarchical, PS-HRA (k = 4) on a uniform 10 GB/s network")
    fig.tight_layout()
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
