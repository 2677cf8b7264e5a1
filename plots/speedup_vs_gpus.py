#!/usr/bin/python3
"""Speed-up over one GPU vs number of GPUs, one line per strategy, from result records.

Reads result files written by gradsync (predict/simulate/sweep -o, reproduce): JSON lines
or CSV with the fields strategy, ranks, executor and speedup_vs_1gpu (records without a
workload have no speed-up and are left out). Run with /usr/bin/python3.

Lines are told apart by strategy (and workload, topology); --by adds fields, e.g. the
parameters that distinguish configurations of one strategy (--by params.inner).

Records of the overlapped step (predict/simulate --overlap) draw two lines per configuration:
the speed-up with overlap, and dashed in the same colour the speed-up without it (compute, then
one synchronisation of the whole gradient: overlap.iteration_without_overlap_s).

With --to-target, the speed-up to the workload's target (records of a workload with convergence
facts: time_to_target.speedup), its range shaded; records without one (a strategy whose cost in
samples the workload does not give) are left out.

Examples:
  /usr/bin/python3 plots/speedup_vs_gpus.py out/digits.jsonl --to-target -o docs/figures/speedup-to-target.png
  /usr/bin/python3 plots/speedup_vs_gpus.py out/reproduce/source-a.jsonl \\
      --filter reproduce.part=dense --filter workload=source-a-ffnn-lm -o docs/figures/speedup.png
  /usr/bin/python3 plots/speedup_vs_gpus.py out/sampling.jsonl --by params.inner --by params.server \\
      --by params.rates -o docs/figures/sampling.png
  /usr/bin/python3 plots/speedup_vs_gpus.py out/overlap.jsonl -o docs/figures/overlap-speedup.png
"""
import argparse
import sys

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="result files (.jsonl or .csv)")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--executor", default="analytic", help="executor whose records are plotted (default: analytic)")
    ap.add_argument("--filter", action="append", metavar="KEY=VALUE",
                    help="keep records whose field equals the value (repeatable; reproduce.part=dense looks inside)")
    ap.add_argument("--title", default=None, help="figure title")
    ap.add_argument("--log", action="store_true", help="logarithmic speed-up axis")
    ap.add_argument("--to-target", action="store_true",
                    help="plot the speed-up to the workload's target (time_to_target.speedup) with its range")
    ap.add_argument("--by", action="append", default=[], metavar="FIELD",
                    help="also tell lines apart by this field (repeatable), e.g. params.inner; shown as name=value")
    args = ap.parse_args()
    filters = R.parse_filters(args.filter) + [("executor", args.executor)]
    lines = {}
    bands = {}  # --to-target: each point's range
    for path in args.results:
        records = R.load_records(path)
        for i, rec in enumerate(records):
            if not R.matches(rec, filters):
                continue
            if R.field(rec, "speedup_vs_1gpu") is None:
                continue
            if args.to_target and R.field(rec, "time_to_target.speedup.value") is None:
                continue
            strategy = R.require(rec, "strategy", path, i)
            by = tuple(f"{f.split('.')[-1]}={R.field(rec, f)}" for f in args.by if R.field(rec, f) not in (None, "", "-"))
            key = (strategy, R.field(rec, "workload") or "", R.field(rec, "topology") or "", by)
            n = int(R.require(rec, "ranks", path, i))
            speedup = float(rec["speedup_vs_1gpu"])
            without = R.field(rec, "overlap.iteration_without_overlap_s")
            if args.to_target:
                band = (float(R.field(rec, "time_to_target.speedup.low")), float(R.field(rec, "time_to_target.speedup.high")))
                bands.setdefault(key + ("",), {}).setdefault(n, band)
                lines.setdefault(key + ("",), {}).setdefault(n, float(R.field(rec, "time_to_target.speedup.value")))
            elif without:
                lines.setdefault(key + ("overlap",), {}).setdefault(n, speedup)
                iteration = float(R.require(rec, "time_per_iteration_s", path, i))
                lines.setdefault(key + ("no overlap",), {}).setdefault(n, speedup * iteration / float(without))
            else:
                lines.setdefault(key + ("",), {}).setdefault(n, speedup)
    if not lines:
        raise R.PlotError(f"no record of {', '.join(args.results)} matches executor={args.executor}"
                          + "".join(f", {k}={v}" for k, v in R.parse_filters(args.filter))
                          + (" with a speed-up to target (records need a workload with convergence facts)" if args.to_target
                             else " with a speed-up (records need a workload)"))
    # Labels name the workload and the topology only where several are drawn.
    several_workloads = len({k[1] for k in lines}) > 1
    several_topologies = len({k[2] for k in lines}) > 1
    plt = R.matplotlib_pyplot(__file__)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    top = 1
    colours = {}
    for key in sorted(lines, key=lambda k: (k[:4], k[4] == "no overlap")):
        pts = sorted(lines[key].items())
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        top = max(top, max(xs))
        extra = [k for k, show in ((key[1], several_workloads), (key[2], several_topologies)) if show and k]
        shown = " ".join((key[0],) + key[3]) + (f" ({', '.join(extra)})" if extra else "") + (f", {key[4]}" if key[4] else "")
        if key[4] == "no overlap" and key[:4] in colours:
            ax.plot(xs, ys, marker="o", linestyle="--", color=colours[key[:4]], label=shown)
        else:
            (line,) = ax.plot(xs, ys, marker="o", label=shown)
            colours[key[:4]] = line.get_color()
            if key in bands:
                ax.fill_between(xs, [bands[key][x][0] for x in xs], [bands[key][x][1] for x in xs],
                                color=line.get_color(), alpha=0.15, linewidth=0)
    ax.plot(list(range(1, top + 1)), list(range(1, top + 1)), color="grey", linestyle="--", linewidth=0.8,
            label="linear")
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("speed-up to target over one GPU (time to target)" if args.to_target
                  else "speed-up over one GPU (epoch time)")
    ax.set_xticks(range(1, top + 1))
    import matplotlib.ticker as ticker
    if args.log:
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%gx"))
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(args.title or (f"Speed-up to target vs GPUs ({args.executor})" if args.to_target
                                else f"Speed-up vs GPUs ({args.executor})"))
    ax.legend(fontsize=8)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
