#!/usr/bin/env python3
"""Regenerates, or checks, every block of command output in README.md and docs/.

A block of output is a fenced code block whose info string starts with `console` and whose
lines that start with `$ ` are commands; what follows each command, up to the next one, is its
output. The script runs each command (from the repository root, as an argument vector: no
shell) and puts its output there. Words after `console` in the info string say how:

  slow      deterministic but long: regenerated, never run by --check (CI)
  measured  depends on this machine or on timing (wall times, real runs): shown as a dated
            example, regenerated only with --all, never compared
  stderr    the output includes standard error (error messages, progress), after stdout
  exit=N    the command is expected to exit with status N (default 0)
  head=N    keep the first N lines of each command's output, then a line "..."
  tail=N    keep the last N lines (with head=: the first and the last lines, "..." between)

Commands may begin with VAR=value assignments (set in the command's environment).
`build/bin/` at the start of a command means the binaries of --bin (default build/bin).

It also checks that every gradsync command shown in README.md and docs/ as inline code or in
a console block names a command and flags that exist (`--help` of that command lists them).

  scripts/docs.py            regenerate every fast and slow block in place
  scripts/docs.py --check    run the fast blocks and fail on any difference (CI), and check flags
  scripts/docs.py --all      regenerate the measured blocks too
  scripts/docs.py --list     list the blocks with their kind

Exit status: 0 when nothing differs, 1 when a block differs (--check) or a command fails, 2 on
bad usage.
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(\s*)(```+)(.*)$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
BINARIES = ("gradsync", "gradsync-run", "gradsync-bench", "gradsync-train")
# Built only where their optional parts were found (gradsync-train: libtorch): their commands'
# flags are checked where the binary exists.
OPTIONAL_BINARIES = ("gradsync-train",)


class Block:
    def __init__(self, path, start, end, info, lines):
        self.path = path  # the markdown file
        self.start = start  # index of the opening fence line
        self.end = end  # index of the closing fence line
        words = info.split()
        self.kind = "measured" if "measured" in words else "slow" if "slow" in words else "fast"
        self.stderr = "stderr" in words
        self.exit = 0
        self.head = None
        self.tail = None
        for w in words:
            if w.startswith("exit="):
                self.exit = int(w[5:])
            if w.startswith("head="):
                self.head = int(w[5:])
            if w.startswith("tail="):
                self.tail = int(w[5:])
        self.lines = lines  # the lines between the fences

    def commands(self):
        return [line[2:] for line in self.lines if line.startswith("$ ")]

    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.start + 1}"


def markdown_files():
    files = [ROOT / "README.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    return [f for f in files if f.exists()]


def blocks_of(path):
    text = path.read_text().split("\n")
    blocks, i = [], 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(2), m.group(3).strip()
        j = i + 1
        while j < len(text) and not text[j].strip().startswith(fence):
            j += 1
        if info.split()[:1] == ["console"]:
            body = text[i + 1:j]
            if any(line.startswith("$ ") for line in body):
                blocks.append(Block(path, i, j, info, body))
        i = j + 1
    return blocks


def argv_of(command, bin_dir):
    words = shlex.split(command)
    env = dict(os.environ)
    env.update({"LC_ALL": "C.UTF-8", "COLUMNS": "200"})
    while words and ASSIGNMENT.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        raise ValueError(f"no command in {command!r}")
    if words[0].startswith("build/bin/"):
        words[0] = str(Path(bin_dir) / words[0][len("build/bin/"):])
    return words, env


def run(block, command, bin_dir, timeout):
    argv, env = argv_of(command, bin_dir)
    began = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise RuntimeError(f"{block.where()}: {argv[0]}: no such program (build first: bash scripts/setup.sh)")
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{block.where()}: `{command}` ran past {timeout} s")
    seconds = time.monotonic() - began
    if done.returncode != block.exit:
        raise RuntimeError(f"{block.where()}: `{command}` exited {done.returncode}, expected {block.exit}\n"
                           f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    out = done.stdout + (done.stderr if block.stderr else "")
    lines = out.rstrip("\n").split("\n") if out.strip() else []
    lines = [line.rstrip() for line in lines]
    head, tail = block.head or 0, block.tail or 0
    if (block.head is not None or block.tail is not None) and len(lines) > head + tail:
        lines = lines[:head] + ["..."] + (lines[-tail:] if tail else [])
    return lines, seconds


def regenerate(block, bin_dir, timeout):
    body, total = [], 0.0
    for command in block.commands():
        lines, seconds = run(block, command, bin_dir, timeout)
        total += seconds
        body.append("$ " + command)
        body += lines
    return body, total


def flags_in(words):
    """The subcommand path and flags of one gradsync command line (words after the binary)."""
    path, flags = [], []
    for w in words:
        if w.startswith("--"):
            flags.append(w.split("=", 1)[0])
        elif w.startswith("-") and len(w) == 2 and not w[1].isdigit():
            flags.append(w)
        elif not flags and re.fullmatch(r"[a-z][a-z0-9-]*", w) and len(path) < 2:
            path.append(w)
    return path, flags


def shown_commands(files):
    """Every gradsync command line shown in the docs: inline code and console-block commands."""
    shown = []
    for path in files:
        text = path.read_text()
        # Commands of blocks that expect a failure may show a bad flag on purpose.
        failing = set()
        for b in blocks_of(path):
            if b.exit != 0:
                failing.update(range(b.start + 1, b.end + 1))
        for n, line in enumerate(text.split("\n"), 1):
            candidates = [] if line.startswith("$ ") else re.findall(r"`([^`]+)`", line)
            if line.startswith("$ ") and n - 1 not in failing:
                candidates.append(line[2:])
            pieces = []
            for c in candidates:
                pieces += re.split(r"&&|\|\||;|\|", c.replace("\\", " "))
            for c in pieces:
                try:
                    words = shlex.split(c)
                except ValueError:
                    continue
                while words and ASSIGNMENT.match(words[0]):
                    words.pop(0)
                if words[:1] == ["mpirun"]:  # mpirun -np N build/bin/gradsync-run ...
                    k = next((i for i, w in enumerate(words) if os.path.basename(w) in BINARIES), None)
                    words = words[k:] if k is not None else []
                if not words or os.path.basename(words[0]) not in BINARIES:
                    continue
                if not (words[0].startswith("build/bin/") or words[0] in BINARIES):
                    continue
                shown.append((path, n, os.path.basename(words[0]), words[1:]))
    return shown


def check_flags(bin_dir, files):
    """Problems: commands or flags shown in the docs that the binaries do not have."""
    helps, problems = {}, []

    def help_of(binary, path):
        key = (binary, tuple(path))
        if key not in helps:
            done = subprocess.run([str(Path(bin_dir) / binary), *path, "--help"], cwd=ROOT, capture_output=True, text=True,
                                  timeout=60)
            helps[key] = done.stdout if done.returncode == 0 else None
        return helps[key]

    for path, line, binary, words in shown_commands(files):
        if binary in OPTIONAL_BINARIES and not (Path(bin_dir) / binary).exists():
            continue
        sub, flags = flags_in(words)
        # The longest subcommand path whose --help works (a positional may follow the verbs).
        text = None
        while text is None:
            text = help_of(binary, sub)
            if text is None:
                if not sub:
                    problems.append(f"{path.relative_to(ROOT)}:{line}: `{binary}` has no --help")
                    break
                sub = sub[:-1]
        if text is None:
            continue
        for flag in flags:
            if flag in ("--help", "-h"):
                continue
            if not re.search(r"(^|[\s,\[])" + re.escape(flag) + r"\b", text):
                problems.append(f"{path.relative_to(ROOT)}:{line}: {binary} {' '.join(sub)} has no flag {flag}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     epilog="See the top of scripts/docs.py for the block syntax.")
    parser.add_argument("--check", action="store_true", help="run the fast blocks, fail on a difference; check flags")
    parser.add_argument("--all", action="store_true", help="regenerate the measured blocks too")
    parser.add_argument("--list", action="store_true", help="list the blocks and their kinds")
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin"), help="folder of the binaries (default build/bin)")
    parser.add_argument("--only", help="only blocks in files whose path contains this")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds a command may take (default 1200: the clusters' calibrate in docs/fidelity.md takes about 10 minutes on two cores)")
    args = parser.parse_args()

    files = [f for f in markdown_files() if not args.only or args.only in str(f.relative_to(ROOT))]
    if args.list:
        for f in files:
            for b in blocks_of(f):
                print(f"{b.where():40} {b.kind:8} {' ; '.join(b.commands())}")
        return 0

    failed = 0
    for f in files:
        text = f.read_text().split("\n")
        changed = False
        # Blocks run in the order of the page (a later one may read what an earlier one wrote);
        # replacements are made last block first, so that earlier line numbers stay valid.
        replacements = []
        for b in blocks_of(f):
            if b.kind == "measured" and not args.all:
                continue
            if args.check and b.kind != "fast":
                continue
            try:
                body, seconds = regenerate(b, args.bin, args.timeout)
            except (RuntimeError, ValueError) as e:
                print(f"docs: {e}", file=sys.stderr)
                failed += 1
                continue
            if body != b.lines:
                if args.check:
                    print(f"docs: {b.where()}: the output of `{b.commands()[0]}` is not what the binary prints now "
                          f"(regenerate: /usr/bin/python3 scripts/docs.py):", file=sys.stderr)
                    sys.stderr.writelines(difflib.unified_diff([l + "\n" for l in b.lines], [l + "\n" for l in body],
                                                               "in the docs", "printed now", n=1))
                    failed += 1
                else:
                    replacements.append((b, body))
                    print(f"docs: {b.where()}: regenerated ({seconds:.1f} s)", file=sys.stderr)
            elif not args.check:
                print(f"docs: {b.where()}: unchanged ({seconds:.1f} s)", file=sys.stderr)
        for b, body in reversed(replacements):
            text[b.start + 1:b.end] = body
            changed = True
        if changed:
            tmp = f.with_name(f.name + ".tmp")
            tmp.write_text("\n".join(text))
            tmp.replace(f)
    if args.check:
        problems = check_flags(args.bin, files)
        for p in problems:
            print(f"docs: {p}", file=sys.stderr)
        failed += len(problems)
        if not failed:
            print("docs: every fast block matches the binaries, every command and flag shown exists", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
