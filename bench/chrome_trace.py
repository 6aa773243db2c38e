"""Row 24: `supervisor report --chrome-trace` of the 100-shard merge (docs/reports.md): the suite's
timeline as Chrome trace events, written in under 2 s."""

import json
import os
import shutil

from cases import Row, _fake_suite, med, ms, MIB
from proc import BenchError, run


def chrome_trace(ctx):
    shards, tests, steps = (10, 20, 5) if ctx.quick else (100, 20, 5)
    project = os.path.join(ctx.tmp, "chrome-trace")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(project)
    dirs = [_fake_suite(project, tests, steps, shard=(k, shards)) for k in range(1, shards + 1)]
    # Beside the shards in the artifact dir: a suite folder elsewhere reads only the runs under it.
    merged = os.path.join(project, ".bugatti", "suites", "merged-trace")
    m = run([ctx.binary, "merge", *dirs, "--out", merged], project, ctx.out("trace-merge"), ctx.env)
    if m.rc != 1:  # every 10th test fails: exit 1
        raise BenchError(f"merge exited {m.rc}\n{m.tail()}")
    walls, load, size, events = [], [], 0, 0
    for k in range(max(ctx.runs, 3)):
        trace = os.path.join(project, f"trace-{k}.json")
        t = run([ctx.binary, "report", "--chrome-trace", trace, merged], project, ctx.out("trace"), ctx.env)
        if t.rc != 1:
            raise BenchError(f"report --chrome-trace exited {t.rc}\n{t.tail()}")
        walls.append(t.wall)
        size = os.path.getsize(trace)
        with open(trace) as f:
            events = sum(1 for e in json.load(f)["traceEvents"] if e.get("ph") == "X")
        b = run([ctx.binary, "report", merged], project, ctx.out("trace-load"), ctx.env)
        if b.rc != 1:
            raise BenchError(f"report exited {b.rc}\n{b.tail()}")
        load.append(b.wall)
    total = shards * tests
    ok = med(walls) < 2.0 and events >= total * steps
    return Row(f"24. `report --chrome-trace` of the {shards}-shard merge ({total} tests × {steps} steps)",
               f"{ms(med(walls))}, {events} complete events, {size / MIB:.2f} MiB",
               f"{ms(med(load))} (`supervisor report`: the same suite, no trace)",
               f"{ms(med(walls) - med(load))} to build and write the trace", "< 2 s", ok)
