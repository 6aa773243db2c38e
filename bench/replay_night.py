"""Rows 25 and 26: what replay costs where it repeats (docs/replay.md). Both record one test
through the real Claude Code CLI and the scripted stub (no model latency: only the recording is
wanted), then replay it with `--replay only` (the model is never asked) against a shell baseline
in the same invocation.

Row 25, the replayed night: the recording copied to N tests (300; 32 with --quick) of 5 steps,
run at `-j 16`, wall and CPU (user + system, the supervisor and every process it reaped), against
its faithful floor: the same commands, each in its own `bash -c` as the agent ran it, N scripts
run 16 at a time. Also counted: the opens of `/proc` files
per test, from a second, smaller replayed night under `strace -f` (when strace is installed).

Row 26, replay's own limit: one replayed 10-step test against its faithful floor, the same 10
commands each in its own `bash -c`; beside it, what each further replayed step costs (the 10-step test against the same test
of one step)."""
import os
import shutil
import subprocess

import artifacts
from cases import (CLAUDE_CONFIG, Row, _claude_bin, _stub_run, baseline, copy_of_record, distance,
                   med, ms, pair_ratios, set_aside, settle_file_system, supervise, where_it_went)
from proc import BenchError, run

STEPS_NIGHT = 5
STEPS_LIMIT = 10

CONFIG = CLAUDE_CONFIG


def _command(test, step):
    return f"echo test {test} step {step}"


def _as_the_agent_ran_it(command):
    """The faithful floor of one replayed shell action: its own `bash -c`, as the agent's tool
    ran it and as replay runs it again (docs/replay.md), not a line of one shared script."""
    return f"bash -c '{command}'\n"


def _test_text(steps):
    return 'name = "Night"\n\n' + "".join(
        f'[[steps]]\ninstruction = "Check part {i}."\n\n' for i in range(1, steps + 1))


def _recorded_project(ctx, name, steps):
    """A project of one test, `t0001`, run once by the agent (recorded): (project, recording)."""
    project = os.path.join(ctx.tmp, name)
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(project, "tests", "t0001.test.toml"), "w") as f:
        f.write(_test_text(steps))
    script = []
    for i in range(1, steps + 1):
        script += [{"bash": _command(1, i)}, {"text": "RESULT OK"}]
    _stub_run(ctx, project, _claude_bin(ctx), f"{name}-record", script, delay_ms=0)
    recording = os.path.join(project, "bugatti.replay", "tests", "t0001.replay.json")
    if not os.path.exists(recording):
        raise BenchError(f"{name}: the agent's run left no recording at {recording}")
    return project, recording


def _copies(project, recording, tests, steps):
    """Tests t0002 … t<tests>, each the same test with the same recording (its own file)."""
    text = open(recording).read()
    for t in range(2, tests + 1):
        name = f"t{t:04d}"
        with open(os.path.join(project, "tests", f"{name}.test.toml"), "w") as f:
            f.write(_test_text(steps))
        with open(os.path.join(project, "bugatti.replay", "tests", f"{name}.replay.json"), "w") as f:
            f.write(text.replace("t0001", name))


def _scripts(ctx, label, tests, steps):
    """The floor: the same commands, each in its own `bash -c`, one script per test, in a folder
    of their own."""
    folder = os.path.join(ctx.tmp, label)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for t in range(1, tests + 1):
        with open(os.path.join(folder, f"t{t:04d}.sh"), "w") as f:
            f.write("".join(_as_the_agent_ran_it(_command(1, i)) for i in range(1, steps + 1)))
    return folder


def _proc_opens_per_test(ctx, project, tests):
    """Opens of files under /proc by the supervisor and everything it started, per test, counted
    by `strace -f` on one more replayed night of the project's `tests` tests; None without
    strace."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    trace = os.path.join(ctx.tmp, "night-strace.txt")
    argv = [strace, "-f", "-qq", "-e", "trace=openat,open", "-e", "signal=none", "-o", trace,
            ctx.binary, "start", "--config", os.path.join(project, "bugatti.config.toml"),
            "-q", "-j", "16", "--replay", "only"]
    shutil.rmtree(os.path.join(project, ".bugatti"), ignore_errors=True)
    m = run(argv, project, ctx.out("night-strace"), ctx.env)
    if m.rc != 0:
        raise BenchError(f"the replayed night under strace exited {m.rc}:\n{m.tail()}")
    with open(trace, errors="replace") as f:
        opens = sum(1 for line in f if '"/proc/' in line)
    return opens / tests


def replay_night(ctx):
    tests = 32 if ctx.quick else 300
    name = f"25. replayed night: {tests} tests × {STEPS_NIGHT} steps, `-j 16`, `--replay only`"
    goal = "≤ 5 s wall (300 tests), CPU ≤ 1.5× the floor"
    if _claude_bin(ctx) is None:
        return Row.skip(name, goal, "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    project, recording = _recorded_project(ctx, "night", STEPS_NIGHT)
    _copies(project, recording, tests, STEPS_NIGHT)
    folder = _scripts(ctx, "night-scripts", tests, STEPS_NIGHT)
    shell = ["sh", "-c", "ls *.sh | xargs -P 16 -n 1 sh > /dev/null"]
    sup, base = [], []
    for _ in range(1 if ctx.quick else max(ctx.runs, 5)):
        # Each night after a quiet file system: a night deletes hundreds of files itself (its
        # workspaces, run.json's first version), which the next would otherwise pay for again.
        settle_file_system(ctx)
        sup.append(supervise(ctx, project, ["-q", "-j", "16", "--replay", "only"],
                             expected_runs=tests, label="night"))
        base.append(baseline(ctx, shell, folder, "night-scripts"))
    wall, cpu = med([m.wall for m in sup]), med([m.cpu for m in sup])
    base_wall, base_cpu = med([m.wall for m in base]), med([m.cpu for m in base])
    wall_ratio, wall_spread = pair_ratios([m.wall for m in sup], [m.wall for m in base])
    cpu_ratio, cpu_spread = pair_ratios([m.cpu for m in sup], [m.cpu for m in base])
    opens = _proc_opens_per_test(ctx, project, tests)
    counted = "not counted (no strace)" if opens is None else f"{opens:.1f} `/proc` opens per test"
    # The wall goal is set for 300 tests; --quick scales it down with the night.
    scale = tests / 300
    met = wall <= 5.0 * scale and cpu_ratio <= 1.5
    # The CPU goal as a budget per test: what the supervisor may spend on each beyond its
    # commands' own `bash`, against what it spent.
    spent = (cpu - base_cpu) / tests
    budget = 0.5 * base_cpu / tests
    note = (f"CPU beyond the commands' own: {ms(spent)} per test (its session, its record: the "
            f"run's folders and files, the replay's comparisons); the goal leaves {ms(budget)} "
            f"per test")
    return Row(name, f"{wall:.2f} s wall, {cpu:.2f} s CPU; {counted}",
               f"{base_wall:.2f} s wall, {base_cpu:.2f} s CPU (the same commands, each its own "
               f"`bash -c`, {tests} scripts, 16 at a time)",
               f"{wall_ratio:.1f}× wall {wall_spread}, {cpu_ratio:.2f}× CPU {cpu_spread}", goal, met,
               note)


def replay_limit(ctx):
    name = f"26. replay's limit: a replayed {STEPS_LIMIT}-step test vs the same commands, each its own `bash -c`"
    goal = "≤ 1.3× the floor"
    if _claude_bin(ctx) is None:
        return Row.skip(name, goal, "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    project, _ = _recorded_project(ctx, "limit", STEPS_LIMIT)
    # Beside it, the same test of one step: what each further replayed step costs.
    one, _ = _recorded_project(ctx, "limit-one", 1)
    script = os.path.join(ctx.tmp, "limit.sh")
    with open(script, "w") as f:
        f.write("".join(_as_the_agent_ran_it(_command(1, i)) for i in range(1, STEPS_LIMIT + 1)))
    sup, sup_one, base, splits, recorded = [], [], [], [], []
    replay_only = ["-q", "-j", "1", "--replay", "only"]
    supervise(ctx, project, replay_only, label="limit")  # warm-up
    # Beside the floor, for scale: the same commands and then the record a run must leave
    # (docs/artifacts.md), copied with `cp -r` from the warm-up run, as row 1's floor copies it.
    written, files, copy = copy_of_record(ctx, project, "limit")
    with_record = ["sh", "-c", f"sh '{script}' && cp -r '{written}' '{copy}'"]
    settle_file_system(ctx)
    for _ in range(max(ctx.runs, 5)):
        m = supervise(ctx, project, replay_only, label="limit")
        sup.append(m.wall)
        splits.append(artifacts.phases(project, m))
        sup_one.append(supervise(ctx, one, replay_only, label="limit-one").wall)
        base.append(baseline(ctx, ["sh", script], project, "limit-script").wall)
        set_aside(ctx, copy)
        recorded.append(baseline(ctx, with_record, project, "limit-script-record").wall)
    ratio, spread = pair_ratios(sup, base)
    per_step = (med(sup) - med(sup_one)) / (STEPS_LIMIT - 1)
    per_bash = med(base) / STEPS_LIMIT
    note = (f"where the {ms(med(sup))} went: {where_it_went(splits)}; each further step "
            f"{ms(per_step)} against its `bash -c`'s {ms(per_bash)}; {distance(med(sup), med(base), 1.3)}; "
            f"the same commands followed by `cp -r` of the {files} files of the run's record "
            f"(no supervisor at all) take {ms(med(recorded))}, "
            f"{med(recorded) / med(base):.2f}× the floor")
    return Row(name, f"{ms(med(sup))} replayed (0 model calls); {ms(per_step)} per further step "
               f"({ms(med(sup_one))} for 1 step)",
               f"{ms(med(base))} (the {STEPS_LIMIT} commands, each its own `bash -c`)",
               f"{ratio:.1f}× {spread}", goal, ratio <= 1.3, note)
