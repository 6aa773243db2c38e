"""The benchmark driver behind bench/run: runs every case of cases.py in a temp dir, checks that
nothing it started survives, prints one markdown table and writes it, with the machine it ran on,
to BENCHMARKS.md (or target/bench/BENCHMARKS.quick.md for --quick)."""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402
from proc import MARK_VAR, BenchError, reap_leaks  # noqa: E402


def machine(root):
    def read(path, key):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "unknown"

    def git(*args):
        try:
            return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    mem_kib = read("/proc/meminfo", "MemTotal").split()[0]
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "cpu": f"{os.cpu_count()} × {read('/proc/cpuinfo', 'model name')}",
        "memory": f"{int(mem_kib) / 1024 / 1024:.1f} GiB" if mem_kib.isdigit() else "unknown",
        "kernel": f"{platform.system()} {platform.release()}",
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def table(rows):
    lines = ["| measurement | supervisor | baseline | figure | goal | result |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.supervisor} | {r.baseline} | {r.figure} | {r.goal} | {r.result()} |")
    return "\n".join(lines)


def row_notes(numbers_rows):
    """What a row measured beside its figure (row 17's harness watch, row 27's catches), one line
    each, under the full table."""
    return "\n".join(f"- row {n}: {r.note}" for n, r in numbers_rows if r.note and not r.skipped)


def short_table(rows):
    """The current table at a glance: each row's number and name, its figure, its floor (the
    baseline it is measured against), its goal and the result; the full table follows it."""
    lines = ["| row | figure | floor | goal | result |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.figure} | {r.baseline} | {r.goal} | {r.result()} |")
    return "\n".join(lines)


HISTORY = "## History"


def tally(rows):
    """The last line of a run: how many rows ran, passed (met their goal), missed, were skipped."""
    skipped = sum(1 for r in rows if r.skipped)
    passed = sum(1 for r in rows if not r.skipped and r.met is True)
    missed = sum(1 for r in rows if not r.skipped and r.met is False)
    return (f"bench: {len(rows)} rows: {len(rows) - skipped} ran, {passed} passed, {missed} missed, "
            f"{skipped} skipped")


def agent_clis(numbered):
    """The line naming the agent CLI each row drove, as the row found it (`--version`): rows that
    drove the same ones share a clause; the rest drove none (the `shell` provider, or the
    `command` provider's python3 stand-in agent)."""
    used = {}
    for number, row in numbered:
        used.setdefault(tuple(sorted(row.agent_clis)), []).append(str(number))
    label = lambda ns: f"row{'s' if len(ns) > 1 else ''} {', '.join(ns)}"
    clauses = [f"{label(ns)}: {' and '.join(clis)}" for clis, ns in used.items() if clis]
    none = used.get((), [])
    if none:
        clauses.append(f"{label(none)}: none (the `shell` provider, or the `command` "
                       "provider's python3 stand-in agent)")
    return "Agent CLIs: " + "; ".join(clauses) + "."


def notes_after_table(path):
    """What people wrote below the tables of an earlier run (explanations of a miss, older
    figures to compare with): kept under "## History", so a new run replaces the figures and
    nothing else. A file from before that heading keeps what followed its one table."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        return ""
    if HISTORY in lines:
        rest = "\n".join(lines[lines.index(HISTORY) + 1:]).strip("\n")
        return rest + "\n" if rest else ""
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    rest = "\n".join(lines[end:]).strip("\n")
    return rest + "\n" if rest else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--quick", action="store_true", help="one run each, smaller sizes")
    parser.add_argument("--out", help="where to write the table")
    parser.add_argument("--only", help=f"comma-separated case numbers (1-{len(cases.ALL)}) to run")
    args = parser.parse_args()

    runs = 1 if args.quick else int(os.environ.get("BENCH_RUNS", "5"))
    if runs < 1:
        sys.exit("BENCH_RUNS must be at least 1")
    # Only a full run replaces BENCHMARKS.md: a quick or partial one would drop the other rows.
    partial = "quick" if args.quick else ("only" if args.only else None)
    out = args.out or (os.path.join(args.root, "target", "bench", f"BENCHMARKS.{partial}.md")
                       if partial else os.path.join(args.root, "BENCHMARKS.md"))
    selected = cases.ALL
    if args.only:
        try:
            wanted = {int(n) for n in args.only.split(",")}
        except ValueError:
            sys.exit(f"--only {args.only}: expected row numbers separated by commas, e.g. 3,6")
        unknown = sorted(n for n in wanted if not 1 <= n <= len(cases.ALL))
        if unknown:
            sys.exit(f"--only {args.only}: no row {unknown[0]} (the rows are 1-{len(cases.ALL)})")
        selected = [c for i, c in enumerate(cases.ALL, 1) if i in wanted]
    numbers = [cases.ALL.index(c) + 1 for c in selected]

    mark = uuid.uuid4().hex
    env = dict(os.environ, **{MARK_VAR: mark, "NO_COLOR": "1"})
    keep = os.environ.get("BENCH_KEEP") == "1"
    tmp = tempfile.mkdtemp(prefix="bugatti-bench-")
    os.makedirs(os.path.join(tmp, "out"))
    ctx = cases.Context(os.path.abspath(args.binary), args.root, tmp, runs, args.quick, env)
    info = machine(args.root)
    rows, failure = [], None
    began = time.monotonic()
    try:
        for case in selected:
            t = time.monotonic()
            print(f"bench: {case.__name__} …", file=sys.stderr, flush=True)
            ctx.agent_clis = set()
            rows.append(case(ctx))
            rows[-1].agent_clis = ctx.agent_clis
            leaked = reap_leaks(mark)
            if leaked:
                raise BenchError(f"{case.__name__}: processes survived the run:\n  " + "\n  ".join(leaked))
            print(f"bench: {case.__name__} done in {time.monotonic() - t:.1f} s", file=sys.stderr)
    except BenchError as e:
        failure = e
    finally:
        leaked = reap_leaks(mark)
        if not keep:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    if failure:
        print(f"\nbench: FAILED — {failure}", file=sys.stderr)
        if keep:
            print(f"bench: projects and outputs kept in {tmp}", file=sys.stderr)
        sys.exit(1)
    if leaked:
        print("bench: FAILED — processes survived:\n  " + "\n  ".join(leaked), file=sys.stderr)
        sys.exit(1)

    mode = "quick (1 run each, smaller sizes)" if args.quick else f"median of {runs} runs"
    header = (f"Machine: {info['cpu']}, {info['memory']} RAM, {info['kernel']}; "
              f"load average at start {info['load']}, at the end "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine is shared: "
              f"other work on it shows up as noise).  \n"
              f"Run {info['date']} at commit {info['commit']}; {mode}; "
              f"took {time.monotonic() - began:.0f} s.  \n"
              + agent_clis(zip(numbers, rows)))
    text = table(rows)
    beside = row_notes(zip(numbers, rows))
    if beside:
        text += "\n\n" + beside
    print(header + "\n\n" + text)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    notes = notes_after_table(out)
    with open(out, "w") as f:
        f.write("# Benchmarks\n\nWritten by `bench/run` (see docs/testing.md, Benchmarks). "
                "Every figure pairs the supervisor with its baseline in the same invocation, "
                "runs interleaved.\n\n")
        f.write(header + "\n\n" + short_table(rows) + "\n\n## Every figure\n\n" + text + "\n")
        f.write(f"\n{HISTORY}\n\n" + (notes or "(none yet)\n"))
    print(f"\nbench: wrote {out}", file=sys.stderr, flush=True)
    print(tally(rows), flush=True)


if __name__ == "__main__":
    main()
