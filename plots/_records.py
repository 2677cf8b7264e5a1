"""Shared helpers of the plot scripts: reading result files with one clear message on
a missing or bad file, picking records, and saving a figure as PNG and SVG.

Result files are what gradsync writes: JSON lines (one record per line, *.jsonl) or CSV
with a header (*.csv); see models/executors/result.h for the fields. Records written by
`gradsync reproduce` carry a "reproduce" object (CSV: a "reproduce" column of
key=value;... pairs), whose keys are addressed as reproduce.<key> in --filter.
"""
import csv
import json
import os
import sys


class PlotError(Exception):
    pass


def fail(script, message):
    """One clear message on stderr, exit status 2."""
    sys.stderr.write(f"{os.path.basename(script)}: error: {message}\n")
    sys.exit(2)


def run(script, main):
    """Runs a plot script's main(); a PlotError becomes one clear message and exit status 2."""
    try:
        main()
    except PlotError as e:
        fail(script, str(e))


def _number(text):
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _csv_records(path, handle):
    reader = csv.DictReader(handle)
    if not reader.fieldnames:
        raise PlotError(f"{path}: empty CSV file; expected a header line and records")
    out = []
    for line, row in enumerate(reader, start=2):
        if None in row:
            raise PlotError(f"{path}:{line}: more fields than the header has")
        rec = {k: _number(v) if v is not None else None for k, v in row.items()}
        for key in ("executor", "topology", "strategy", "workload", "point"):
            if key in row:
                rec[key] = row[key]
        if isinstance(rec.get("reproduce"), str):
            tag = {}
            for item in rec["reproduce"].split(";"):
                if "=" in item:
                    k, v = item.split("=", 1)
                    tag[k] = _number(v)
            rec["reproduce"] = tag
        if isinstance(rec.get("params"), str):
            rec["params"] = dict(p.split("=", 1) for p in rec["params"].split(";") if "=" in p)
        out.append(rec)
    return out


def load_records(path):
    """Records of a JSON-lines or CSV result file."""
    if not os.path.isfile(path):
        raise PlotError(f"{path}: no such file; expected a result file written by gradsync (.jsonl or .csv)")
    try:
        with open(path, encoding="utf-8") as handle:
            if path.endswith(".csv"):
                records = _csv_records(path, handle)
            else:
                records = []
                for line, text in enumerate(handle, start=1):
                    text = text.strip()
                    if not text:
                        continue
                    try:
                        rec = json.loads(text)
                    except json.JSONDecodeError as e:
                        raise PlotError(f"{path}:{line}: not a JSON record ({e.msg}); expected one JSON object per line")
                    if not isinstance(rec, dict):
                        raise PlotError(f"{path}:{line}: got {type(rec).__name__}; expected a JSON object per line")
                    records.append(rec)
    except UnicodeDecodeError:
        raise PlotError(f"{path}: not a text file; expected JSON lines or CSV")
    if not records:
        raise PlotError(f"{path}: no records")
    return records


def load_json(path):
    if not os.path.isfile(path):
        raise PlotError(f"{path}: no such file")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}:{e.lineno}: not JSON ({e.msg})")
    except UnicodeDecodeError:
        raise PlotError(f"{path}: not a text file; expected JSON")


def field(rec, name):
    """A record's field; "a.b" looks inside objects (e.g. reproduce.part)."""
    value = rec
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def require(rec, name, path, index):
    value = field(rec, name)
    if value is None:
        raise PlotError(f"{path}: record {index + 1} has no \"{name}\"; expected result records with it")
    return value


def parse_filters(items):
    filters = []
    for item in items or []:
        if "=" not in item:
            raise PlotError(f"--filter {item}: expected key=value, e.g. executor=analytic or reproduce.part=dense")
        k, v = item.split("=", 1)
        filters.append((k, v))
    return filters


def matches(rec, filters):
    for key, want in filters:
        value = field(rec, key)
        if value is None:
            return False
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if str(value) != want:
            return False
    return True


def save(fig, output):
    """Writes OUTPUT's stem as .png and .svg, says so on stdout; returns both paths."""
    stem, ext = os.path.splitext(output)
    if ext.lower() not in (".png", ".svg", ""):
        raise PlotError(f"-o {output}: expected a .png or .svg name (both are written)")
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise PlotError(f"-o {output}: the folder {folder} does not exist")
    paths = [stem + ".png", stem + ".svg"]
    fig.savefig(paths[0], dpi=130, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight")
    print("wrote " + ", ".join(paths))
    return paths


def matplotlib_pyplot(script):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        fail(script, "matplotlib is not importable by this Python; run the script with /usr/bin/python3 "
                     "(Debian's python3-matplotlib)")
