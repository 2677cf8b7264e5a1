#!/usr/bin/python3
"""Measured vs predicted bus bandwidth by message size: what `gradsync compare` wrote.

Input: the records of `gradsync compare ... -o FILE` (JSON lines or CSV). Records whose
executor is "measured" are a nccl-tests table's rows (their notes name the table's file and
line); each record of another executor that follows one (analytic, sim, formula) is the
prediction for that row. One column of panels per table: busbw against size on top (measured
solid, one dashed line per executor, the analytic prediction's stated range shaded where the
records carry one), the error (predicted / measured - 1) below with the
+-10 % band. Run with /usr/bin/python3.

Example:
  build/bin/gradsync compare tests/data/published/rtx2080ti-2gpu-pix.txt \\
      tests/data/published/rtx2080ti-2gpu-pix.txt -o out/compare-2080ti.jsonl
  /usr/bin/python3 plots/busbw_vs_size.py out/compare-2080ti.jsonl -o docs/figures/nccl-busbw.png
"""
import argparse

import _records as R


def source_of(rec):
    """The file of the nccl-tests table a measured record comes from (its "nccl-tests FILE:LINE" note)."""
    for note in rec.get("notes") or []:
        if isinstance(note, str) and note.startswith("nccl-tests "):
            return note[len("nccl-tests "):].rsplit(":", 1)[0]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="records written by gradsync compare -o (.jsonl or .csv)")
    ap.add_argument("-o", "--output", required=True, help="figure file; .png and .svg are both written")
    ap.add_argument("--band", type=float, default=10.0, help="half-width of the error band in percent (default 10)")
    ap.add_argument("--title", default=None, help="figure title (default: none)")
    args = ap.parse_args()

    tables = {}  # table index -> {"ident", "ranks", "strategy", "measured": [(bytes, busbw)], executor: [...]}
    order = []
    for path in args.results:
        current = None
        for i, rec in enumerate(R.load_records(path)):
            executor = R.require(rec, "executor", path, i)
            size = float(R.require(rec, "bytes", path, i))
            if executor != "measured" and (current is None or current[1] != size):
                continue  # not a prediction of a measured row
            busbw = float(R.require(rec, "busbw_GBps", path, i))
            if executor == "measured":
                # A table's rows come in growing sizes; a new file, machine or a smaller size starts the next.
                ident = (R.require(rec, "topology", path, i), source_of(rec) or path)
                last = tables[order[-1]] if order else None
                if not last or last["ident"] != ident or size <= last["measured"][-1][0]:
                    key = len(order)
                    tables[key] = {"ident": ident, "measured": [], "ranks": int(R.require(rec, "ranks", path, i)),
                                   "strategy": None}
                    order.append(key)
                key = order[-1]
                current = (key, size, busbw)
                tables[key]["measured"].append((size, busbw))
            elif current[2] > 0:
                key = current[0]
                tables[key].setdefault(executor, []).append((size, busbw, busbw / current[2] - 1))
                tables[key]["strategy"] = rec.get("strategy")
                tables[key]["collective"] = (rec.get("params") or {}).get("collective")
                span = rec.get("busbw_range_GBps")
                if executor == "analytic" and isinstance(span, list) and len(span) == 2:
                    tables[key].setdefault("range", []).append((size, float(span[0]), float(span[1])))
    executors = sorted({e for t in tables.values() for e in t if e not in ("ident", "measured", "ranks", "strategy", "collective", "range")})
    if not tables:
        raise R.PlotError(f"{', '.join(args.results)}: no record with executor \"measured\"; expected the records "
                          "of gradsync compare -o")
    if not executors:
        raise R.PlotError(f"{', '.join(args.results)}: no prediction follows a measured record; expected the "
                          "records of gradsync compare -o")

    plt = R.matplotlib_pyplot(__file__)
    n = len(order)
    fig, axes = plt.subplots(2, n, figsize=(4.6 * n, 6.4), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [2, 1]})
    styles = {"analytic": ("C0", "o"), "sim": ("C1", "x"), "formula": ("C2", "^")}
    band = args.band / 100
    for col, key in enumerate(order):
        t = tables[key]
        top, bottom = axes[0][col], axes[1][col]
        m = sorted(t["measured"])
        if t.get("range"):
            r = sorted(t["range"])
            top.fill_between([p[0] for p in r], [p[1] for p in r], [p[2] for p in r], color="C0", alpha=0.12,
                             label="its stated range")
        top.plot([p[0] for p in m], [p[1] for p in m], color="black", marker=".", label="measured (nccl-tests)")
        for e in executors:
            pts = sorted(t.get(e, []))
            if not pts:
                continue
            color, marker = styles.get(e, ("C3", "s"))
            label = f"{t['strategy']} ({e})"
            top.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, linestyle="--",
                     markersize=4, label=label)
            bottom.plot([p[0] for p in pts], [100 * p[2] for p in pts], color=color, marker=marker, linestyle="--",
                        markersize=4, label=label)
        lo, hi = m[0][0], m[-1][0]
        bottom.fill_between([lo, hi], [-args.band, -args.band], [args.band, args.band], color="tab:green",
                            alpha=0.2, label=f"+-{args.band:g} %")
        bottom.axhline(0, color="black", linewidth=0.8)
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.grid(True, which="both", alpha=0.3)
        what = f"{t['collective'].replace('_', '-')}, " if t.get("collective") else ""
        top.set_title(f"{t['ident'][0]}, {what}{t['ranks']} GPUs", fontsize=9)
        top.set_ylabel("busbw (GB/s)")
        bottom.set_ylabel("error (%)")
        bottom.set_xlabel("size (bytes)")
        top.legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    R.save(fig, args.output)


if __name__ == "__main__":
    R.run(__file__, main)
