#!/usr/bin/python3
"""A paper's speed-ups against the predicted ones, per GPU count: one panel per comparison
file; each prediction in its own colour, with the backward pass overlapped as a solid line
and without overlap as a dashed one; the paper's figures as large black open markers.

Reads the "paper_speedups" object of DIR/<source>-comparison.json written by
`gradsync reproduce source-a` or `source-c`:
  {"title": ...,
   "paper": [{"name": ..., "points": [{"gpus", "speedup"}]}],
   "predicted": [{"name": ..., "points": [{"gpus", "overlap", "no_overlap"}]}]}
Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/paper_vs_predicted.py out/reproduce/source-c-comparison.json \\
      out/reproduce/source-a-comparison.json -o docs/figures/papers-overlap.png
"""
import argparse
import textwrap

import _records as R


def panel_of(path):
    doc = R.load_json(path)
    try:
        block = doc["paper_speedups"]
        title = str(block["title"])
        paper = [(str(s["name"]), sorted((int(p["gpus"]), float(p["speedup"])) for p in s["points"]))
                 for s in block["paper"]]
        predicted = [(str(s["name"]), sorted((int(p["gpus"]), float(p["overlap"]), float(p["no_overlap"]))
                                             for p in s["points"]))
                     for s in block["predicted"]]
    except (KeyError, TypeError, ValueError) as e:
        raise R.PlotError(f"{path}: no /paper_speedups with a title, paper series (gpus, speedup) and predicted "
                          f"series (gpus, overlap, no_overlap); missing or bad {e}; expected a comparison file that "
                          f"`gradsync reproduce source-a` or `source-c` writes")
    if not paper or not predicted or not all(points for _, points in paper + predicted):
        raise R.PlotError(f"{path}: /paper_speedups needs at least one paper and one predicted series, each with points")
    return title, paper, predicted


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("comparison", nargs="+", help="<source>-comparison.json files, one panel each")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    args = ap.parse_args()
    panels = [panel_of(path) for path in args.comparison]
    plt = R.matplotlib_pyplot(__file__)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.8), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = ["s", "D", "^", "v", "P", "X"]
    for ax, (title, paper, predicted) in zip(axes[0], panels):
        gpus = sorted({p[0] for _, points in paper + predicted for p in points})
        for k, (name, points) in enumerate(predicted):
            colour = colours[k % len(colours)]
            xs = [p[0] for p in points]
            ax.plot(xs, [p[1] for p in points], "-o", color=colour, label=f"{name}, overlap")
            ax.plot(xs, [p[2] for p in points], "--", color=colour, alpha=0.7, label=f"{name}, no overlap")
        for k, (name, points) in enumerate(paper):
            ax.plot([p[0] for p in points], [p[1] for p in points], markers[k % len(markers)], markersize=12,
                    markerfacecolor="none", markeredgewidth=2, color="black", label=f"paper: {name}")
        ax.set_xticks(gpus)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("speed-up over one GPU (epoch time)")
        ax.set_title(textwrap.fill(title, 70), fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
