#!/usr/bin/python3
"""Communication per training step, hidden behind the backward pass and exposed, as stacked
bars: one bar per strategy and GPU count, from the records of an overlapped step.

Reads result files written by gradsync predict/simulate --overlap (JSON lines: the "overlap"
object): the buckets' synchronisations added up (overlap.bucket_sync_s), of which
overlap.exposed_s was not hidden. Records without overlap (strategies that synchronise every T
steps, asynchronous ones, or runs without --overlap) are left out. Run with /usr/bin/python3.

Example:
  build/bin/gradsync predict -t cluster-2x4gpu-eth-1GBps -w resnet50 --overlap -g 2,4,8 \\
      --strategy ring,ps,hierarchical -f json -o out/overlap.jsonl
  /usr/bin/python3 plots/exposed_comm_bars.py out/overlap.jsonl -o docs/figures/overlap-exposed.png
"""
import argparse

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="result files (.jsonl) of an overlapped step")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--executor", default="analytic", help="executor whose records are drawn (default: analytic)")
    ap.add_argument("--filter", action="append", metavar="KEY=VALUE",
                    help="keep records whose field equals the value (repeatable)")
    ap.add_argument("--title", default=None, help="figure title")
    args = ap.parse_args()
    filters = R.parse_filters(args.filter) + [("executor", args.executor)]
    bars = {}
    for path in args.results:
        for i, rec in enumerate(R.load_records(path)):
            if not R.matches(rec, filters) or R.field(rec, "overlap.exposed_s") is None:
                continue
            strategy = R.require(rec, "strategy", path, i)
            n = int(R.require(rec, "ranks", path, i))
            total = float(R.require(rec, "overlap.bucket_sync_s", path, i))
            exposed = float(R.require(rec, "overlap.exposed_s", path, i))
            compute = R.field(rec, "compute_s_per_minibatch")
            bars.setdefault((strategy, n), (max(0.0, total - exposed), exposed, compute))
    if not bars:
        raise R.PlotError(f"no record of {', '.join(args.results)} matches executor={args.executor}"
                          + "".join(f", {k}={v}" for k, v in R.parse_filters(args.filter))
                          + " with overlap figures (records of predict or simulate --overlap)")
    keys = sorted(bars)
    labels = [f"{s}\n{n} GPU{'s' if n != 1 else ''}" for s, n in keys]
    hidden = [bars[k][0] * 1e3 for k in keys]
    exposed = [bars[k][1] * 1e3 for k in keys]
    plt = R.matplotlib_pyplot(__file__)
    fig, ax = plt.subplots(figsize=(max(4.8, 0.9 * len(keys) + 1.5), 4.4))
    xs = list(range(len(keys)))
    ax.bar(xs, hidden, color="#4c9f70", label="hidden behind the backward pass")
    ax.bar(xs, exposed, bottom=hidden, color="#d1495b", label="exposed")
    computes = {bars[k][2] for k in keys if bars[k][2] is not None}
    if len(computes) == 1:
        ax.axhline(computes.pop() * 1e3, color="black", linestyle=":", linewidth=0.8, label="compute per step")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("communication per step (ms)")
    ax.set_title(args.title or f"Communication hidden and exposed ({args.executor})")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
