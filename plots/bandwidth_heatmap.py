#!/usr/bin/python3
"""Heat map of a matrix-form topology's GPU-to-GPU bandwidth (like source A's Fig. 9).

Reads a matrix-form topology JSON (topologies/*.json in matrix form, gradsync import or
gradsync-run measure output): {"name", "gpus": [...], "bandwidth_GBps": [[...]]} with
null on the diagonal; the row sends to the column. Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/bandwidth_heatmap.py topologies/source-a-titanx-4gpu.json -o docs/figures/source-a-bandwidth.png
"""
import argparse
import math

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("topology", help="matrix-form topology JSON")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--matrix", default="bandwidth_GBps",
                    help="which matrix: bandwidth_GBps (default), bidirectional_GBps or latency_us")
    args = ap.parse_args()
    doc = R.load_json(args.topology)
    if not isinstance(doc, dict) or "gpus" not in doc or args.matrix not in doc:
        raise R.PlotError(f"{args.topology}: not a matrix-form topology with \"gpus\" and \"{args.matrix}\" "
                          "(graph-form topologies have no measured matrix)")
    gpus = doc["gpus"]
    m = doc[args.matrix]
    if m is None:
        raise R.PlotError(f"{args.topology}: /{args.matrix} is null; nothing to draw")
    if not isinstance(m, list) or len(m) != len(gpus) or any(not isinstance(r, list) or len(r) != len(gpus) for r in m):
        raise R.PlotError(f"{args.topology}: /{args.matrix}: expected a {len(gpus)} x {len(gpus)} matrix")
    values = []
    for i, r in enumerate(m):
        row = []
        for j, v in enumerate(r):
            if v is None:
                row.append(math.nan)
            elif isinstance(v, (int, float)):
                row.append(float(v))
            else:
                raise R.PlotError(f"{args.topology}: /{args.matrix}/{i}/{j}: got {v!r}; expected a number or null")
        values.append(row)
    plt = R.matplotlib_pyplot(__file__)
    n = len(gpus)
    fig, ax = plt.subplots(figsize=(1.2 * n + 2.5, 1.0 * n + 1.8))
    im = ax.imshow(values, cmap="viridis")
    unit = "GB/s" if "GBps" in args.matrix else "us"
    fig.colorbar(im, ax=ax, label=f"{args.matrix.replace('_GBps', '').replace('_us', '')} ({unit})")
    finite = [v for r in values for v in r if not math.isnan(v)]
    mid = (min(finite) + max(finite)) / 2 if finite else 0
    for i in range(n):
        for j in range(n):
            v = values[i][j]
            text = "-" if math.isnan(v) else f"{v:.2f}"
            ax.text(j, i, text, ha="center", va="center", color="white" if not math.isnan(v) and v < mid else "black")
    ax.set_xticks(range(n), gpus)
    ax.set_yticks(range(n), gpus)
    ax.set_xlabel("to")
    ax.set_ylabel("from")
    ax.set_title(f"{doc.get('name', args.topology)}: {args.matrix}")
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
