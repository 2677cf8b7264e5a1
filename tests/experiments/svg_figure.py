#!/usr/bin/python3
"""Reads a figure back from the SVG a plot script wrote and prints what it draws as one
JSON object, for tests/experiments/test_plots.cpp to check against its fixture.

matplotlib's SVG backend writes each artist as a group <g id="KIND_N">: axes_N,
matplotlib.axis_N (its xtick_N / ytick_N groups and the axis label), line2d_N, patch_N,
text_N (the string itself kept as an XML comment, "<!-- GPUs -->"), legend_N,
PathCollection_N (scatter), PolyCollection_N (fill_between), and <image> elements.

Output:
  {"axes": [{"xlabel", "ylabel": the axis label or null,
             "xticks", "yticks": tick label strings in order,
             "texts": direct texts of the axes in drawing order (ax.text(...) then the title),
             "lines": [{"markers": marker symbols drawn, "dashed": has a dash pattern}],
             "patches": patch groups (bars, plus the background and the four spines),
             "collections": [{"kind": "PathCollection", "markers": marker symbols drawn}],
             "images": <image> elements,
             "legends": [[labels in order]]}],
   "texts": direct texts of the figure (suptitle), "legends": [[labels]] of the figure}
Run with /usr/bin/python3: svg_figure.py FIGURE.svg
"""
import html
import json
import re
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def kind(e):
    """'line2d' for <g id="line2d_12">; '' for elements without such an id."""
    m = re.fullmatch(r"(.+)_\d+", e.get("id", "")) if isinstance(e.tag, str) else None
    return m.group(1) if m else ""


def text_of(g):
    """The string of a text_N group: its comment (matplotlib writes "<!-- %s -->" and
    escapes &, <, >)."""
    for c in g:
        if c.tag is ET.Comment:
            s = c.text
            if s.startswith(" ") and s.endswith(" "):
                s = s[1:-1]
            return html.unescape(s)
    return None


def children(e, k):
    return [c for c in e if kind(c) == k]


def legend(g):
    return [text_of(t) for t in children(g, "text")]


def axis(g):
    """(which: 'x' or 'y', label, tick labels) of a matplotlib.axis_N group."""
    ticks, which = [], None
    for tick in g:
        k = kind(tick)
        if k in ("xtick", "ytick"):
            which = k[0]
            labels = [text_of(t) for t in children(tick, "text")]
            ticks.extend(labels)
    texts = [text_of(t) for t in children(g, "text")]
    return which, (texts[0] if texts else None), ticks


def markers(g):
    return len(g.findall(f".//{SVG}use"))


def dashed(line):
    return any("stroke-dasharray" in (p.get("style") or "") for p in line.findall(f"{SVG}path"))


def axes(g):
    out = {"xlabel": None, "ylabel": None, "xticks": [], "yticks": [], "texts": [], "lines": [], "patches": 0,
           "collections": [], "images": 0, "legends": []}
    for c in g:
        if not isinstance(c.tag, str):
            continue
        k = kind(c)
        if k == "matplotlib.axis":
            which, label, ticks = axis(c)
            if which:
                out[which + "label"] = label
                out[which + "ticks"] = ticks
            elif label is not None:  # an axis without ticks (a colorbar's short side)
                out["xlabel" if out["xlabel"] is None else "ylabel"] = label
        elif k == "line2d":
            out["lines"].append({"markers": markers(c), "dashed": dashed(c)})
        elif k == "patch":
            out["patches"] += 1
        elif k == "text":
            out["texts"].append(text_of(c))
        elif k == "legend":
            out["legends"].append(legend(c))
        elif k.endswith("Collection"):
            out["collections"].append({"kind": k, "markers": markers(c)})
        else:  # images sit in a clipping group or directly in the axes
            out["images"] += int(c.tag == SVG + "image") + len(c.findall(f".//{SVG}image"))
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: svg_figure.py FIGURE.svg\n")
        sys.exit(2)
    root = ET.parse(sys.argv[1], parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))).getroot()
    figures = [g for g in root if kind(g) == "figure"]
    if len(figures) != 1:
        sys.stderr.write(f"{sys.argv[1]}: expected one figure_N group, found {len(figures)}\n")
        sys.exit(2)
    fig = figures[0]
    print(json.dumps({"axes": [axes(a) for a in children(fig, "axes")],
                      "texts": [text_of(t) for t in children(fig, "text")],
                      "legends": [legend(g) for g in children(fig, "legend")]}, indent=1))


if __name__ == "__main__":
    main()
