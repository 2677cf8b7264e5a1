#!/usr/bin/python3
"""Source A's Table 4 as bars: paper vs predicted epoch time per GPU count, for the
parameter-server baseline and ring all-reduce.

Reads DIR/source-a-comparison.json written by `gradsync reproduce source-a`: its
"table4" object has "rows" [{gpus, paper_ps_s, model_ps_s, paper_ring_s, model_ring_s,
fitted}], the prediction from the 1-GPU fit; with --diagnostic also the bars of
"column_fit" (each column's bytes fitted to its own multi-GPU rows). Run with /usr/bin/python3.

Example:
  /usr/bin/python3 plots/epoch_bars_vs_paper.py out/reproduce/source-a-comparison.json -o docs/figures/source-a-table4.png
"""
import argparse

import _records as R


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("comparison", help="source-a-comparison.json")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--diagnostic", action="store_true", help="also draw the per-column fit (a diagnostic)")
    args = ap.parse_args()
    doc = R.load_json(args.comparison)
    try:
        rows = doc["table4"]["rows"]
        cols = [(r["gpus"], r["paper_ps_s"], r["model_ps_s"], r["paper_ring_s"], r["model_ring_s"]) for r in rows]
    except (KeyError, TypeError) as e:
        raise R.PlotError(f"{args.comparison}: no /table4/rows with gpus, paper_ps_s, model_ps_s, paper_ring_s, "
                          f"model_ring_s (missing {e}); expected the file `gradsync reproduce source-a` writes")
    diag = {}
    if args.diagnostic:
        try:
            diag = {r["gpus"]: (r["model_ps_s"], r["model_ring_s"]) for r in doc["table4"]["column_fit"]["rows"]}
        except (KeyError, TypeError):
            raise R.PlotError(f"{args.comparison}: no /table4/column_fit/rows for --diagnostic")
    plt = R.matplotlib_pyplot(__file__)
    fig, ax = plt.subplots(figsize=(8, 4.4))
    series = [("PS paper", 1, "tab:blue", None), ("PS model (1-GPU fit)", 2, "tab:blue", "//"),
              ("ring paper", 3, "tab:orange", None), ("ring model (1-GPU fit)", 4, "tab:orange", "//")]
    if diag:
        series += [("PS model (column fit)", "dps", "tab:blue", ".."), ("ring model (column fit)", "dring", "tab:orange", "..")]
    width = 0.8 / len(series)
    for k, (label, idx, colour, hatch) in enumerate(series):
        xs = [c[0] + (k - (len(series) - 1) / 2) * width for c in cols]
        if idx == "dps":
            ys = [diag[c[0]][0] for c in cols]
        elif idx == "dring":
            ys = [diag[c[0]][1] for c in cols]
        else:
            ys = [c[idx] for c in cols]
        ax.bar(xs, ys, width, label=label, color=colour if hatch is None else "white", edgecolor=colour, hatch=hatch)
    ax.set_xticks([c[0] for c in cols])
    ax.set_xlabel("GPUs (2 GPUs: gpu0, gpu2)")
    ax.set_ylabel("seconds per epoch")
    mae = doc["table4"].get("mae_pct")
    ax.set_title("Source A, Table 4 (FFNN LM): paper vs model"
                 + (f" - mean abs. error of the predicted rows {mae:.0f} %" if isinstance(mae, (int, float)) else ""))
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
