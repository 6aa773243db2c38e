"""Weakened re-recordings as mutations of the corpus (row 27; docs/replay.md, "A recording never
weakens in silence"). Each app is checked by the scripted `command` agent
(tests/support/directive_agent.py) whose actions come from a plan file, so that they change while
the instruction stays the same:

1. the careful plan passes and is recorded (every output read, a fact on each);
2. an output the hurried plan still reads drifts, and the agent passes in a hurry, reading less:
   that re-recording would drop an action and its fact, so it must be kept pending (else the
   corpus fails: the weaker one went in force);
3. what only the careful plan read breaks. A weak recording in force would replay this as a
   pass; the agent (careful again, as a model that looks) fails it. A replayed pass here is a
   false pass."""
import os
import shutil

import artifacts
from cases import directive_config, write_project
from proc import BenchError, run

# name: (healthy files, the drift the hurried plan still sees, the break it does not, careful
# plan, hurried plan). Plans are directive lines; `{root}` is the app's folder.
APPS = {
    "two-files": (
        {"data.txt": "item: mug\n", "stock.txt": "mugs: 3\n"},
        {"data.txt": "item: mug (blue)\n"},
        {"stock.txt": "mugs: 0\n"},
        ["mcp exec_command {{\"cmd\": \"cat {root}/data.txt\", \"yield_time_ms\": 10000}}",
         "mcp exec_command {{\"cmd\": \"cat {root}/stock.txt\", \"yield_time_ms\": 10000}}",
         "expect mugs: 3", "fact 1 contains \"item: mug\"", "fact 2 contains \"mugs: 3\""],
        ["mcp exec_command {{\"cmd\": \"cat {root}/data.txt\", \"yield_time_ms\": 10000}}",
         "fact 1 contains \"item\""],
    ),
    "endpoints": (
        {"app.sh": "case $1 in health) echo 'status ok';; orders) echo 'orders: 2 open';; esac\n"},
        {"app.sh": "case $1 in health) echo 'status ok (v2)';; orders) echo 'orders: 2 open';; esac\n"},
        {"app.sh": "case $1 in health) echo 'status ok (v2)';; orders) echo 'orders: error';; esac\n"},
        ["mcp exec_command {{\"cmd\": \"sh {root}/app.sh health\", \"yield_time_ms\": 10000}}",
         "mcp exec_command {{\"cmd\": \"sh {root}/app.sh orders\", \"yield_time_ms\": 10000}}",
         "expect orders: 2 open", "fact 1 contains \"status ok\"", "fact 2 contains \"orders: 2 open\""],
        ["mcp exec_command {{\"cmd\": \"sh {root}/app.sh health\", \"yield_time_ms\": 10000}}",
         "fact 1 contains \"status ok\""],
    ),
}


def _project(ctx):
    return write_project(ctx, "mutations-weakened", directive_config(ctx), {
        name: (f"name = \"{name}\"\n\n[[steps]]\ninstruction = '''\nCheck the {name} app.\n"
               f"plan ${{BUGATTI_PROJECT_ROOT}}/plans/{name}.txt\n'''\n")
        for name in APPS})


def _write(project, name, files, plan):
    root = os.path.join(project, "apps", name)
    os.makedirs(root, exist_ok=True)
    for rel, text in files.items():
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(project, "plans"), exist_ok=True)
    with open(os.path.join(project, "plans", f"{name}.txt"), "w") as f:
        f.write("\n".join(line.format(root=root) for line in plan) + "\n")


def _suite(ctx, project, label):
    """One `supervisor start`; each test's first step from its run.json."""
    shutil.rmtree(os.path.join(project, ".bugatti", "runs"), ignore_errors=True)
    argv = [ctx.binary, "start", "-q", "-j", "8", "--config", os.path.join(project, "bugatti.config.toml")]
    m = run(argv, project, ctx.out(label), ctx.env)
    if m.rc not in (0, 1):
        raise BenchError(f"{' '.join(argv)} exited {m.rc}; its output ends:\n{m.tail()}")
    steps = {}
    for d in artifacts.run_dirs(project):
        record = artifacts.run_json(d)
        steps[os.path.basename(record["test_file"]).removesuffix(".test.toml")] = record["steps"][0]
    return steps


def weakened(ctx, tally):
    """Each app recorded, weakened and broken; its broken step counted as a mutation of `tally`.
    How many weakened re-recordings were kept pending."""
    project = _project(ctx)
    for name, (healthy, _, _, careful, _) in APPS.items():
        _write(project, name, healthy, careful)
    steps = _suite(ctx, project, "mutations-weakened-recorded")
    for name in APPS:
        s = steps.get(name) or {}
        if s.get("status") != "ok" or not s.get("recorded"):
            raise BenchError(f"weakened re-recordings: {name} was not recorded: {s}")
    for name, (_, drift, _, _, hurried) in APPS.items():
        _write(project, name, drift, hurried)
    steps = _suite(ctx, project, "mutations-weakened-hurried")
    pending = 0
    for name in APPS:
        s = steps.get(name) or {}
        if s.get("status") != "ok":
            raise BenchError(f"weakened re-recordings: the hurried pass of {name} failed: {s}")
        if s.get("recorded") or not s.get("replay_pending"):
            raise BenchError(f"weakened re-recordings: the hurried pass of {name} went in force: {s}")
        pending += 1
    for name, (_, _, broken, careful, _) in APPS.items():
        _write(project, name, broken, careful)
    steps = _suite(ctx, project, "mutations-weakened-broken")
    for name in APPS:
        tally.mutated(f"{name}: a weakened re-recording, then what it dropped broke", steps.get(name) or {})
    return pending
