"""The measurements. Each generates its temp project(s), runs the supervisor and its baseline
in turn (interleaved, so both see the same noise), checks that every run passed, and returns one
table row: what was measured on each side, the figure, the goal and whether it was met."""
import json
import os
import shutil
import statistics
import subprocess
import time

import artifacts
from proc import BenchError, run

MIB = 1024 * 1024


class Context:
    def __init__(self, binary, root, tmp, runs, quick, env):
        self.binary = binary
        self.root = root  # the repository
        self.tmp = tmp
        self.runs = runs
        self.quick = quick
        self.env = env  # carries the leak marker
        self.counter = 0
        # The agent CLIs the running row found, "Claude Code 2.1.332 (path)" each: bench.py
        # empties it before a row and names them after the table, so a figure says what it drove.
        self.agent_clis = set()
        self._cli_versions = {}

    def agent_cli(self, product, path):
        """Notes that the running row drives `product` at `path` (None: not found) and returns the
        path; the version is the binary's own `--version`, asked once per path."""
        if path is None:
            self.agent_clis.add(f"{product} not installed")
            return None
        if path not in self._cli_versions:
            try:
                done = subprocess.run([path, "--version"], capture_output=True, text=True,
                                      timeout=60, env=self.env)
                said = (done.stdout.strip() or done.stderr.strip()).splitlines()
                self._cli_versions[path] = said[0] if said else f"no version (exit {done.returncode})"
            except (OSError, subprocess.TimeoutExpired) as e:
                self._cli_versions[path] = f"no version ({e})"
        shown = os.path.relpath(path, self.root) if path.startswith(self.root + os.sep) else path
        # Claude Code says "2.1.332 (Claude Code)": the product is named once, in front.
        version = self._cli_versions[path].removesuffix(f" ({product})")
        self.agent_clis.add(f"{product} {version} (`{shown}`)")
        return path

    def out(self, label):
        self.counter += 1
        return os.path.join(self.tmp, "out", f"{self.counter:04d}-{label}.log")


class Row:
    def __init__(self, name, supervisor, baseline, figure, goal, met, note=""):
        self.name, self.supervisor, self.baseline = name, supervisor, baseline
        self.figure, self.goal, self.met, self.note = figure, goal, met, note
        self.skipped = False

    @classmethod
    def skip(cls, name, goal, why):
        """A row whose measurement could not be made here (a tool is missing): it says so in its
        result column and never counts as met — a figure nobody measured is no pass."""
        row = cls(name, "-", "-", "-", goal, None, why)
        row.skipped = True
        return row

    def result(self):
        """The result column: `skipped (why)`, `pass`, `**miss**`, or `—` (a figure with no goal)."""
        if self.skipped:
            return f"skipped ({self.note})" if self.note else "skipped"
        return "—" if self.met is None else ("pass" if self.met else "**miss**")


def write_project(ctx, name, config, tests, files=None):
    """A project under the temp dir: bugatti.config.toml, tests/<name>.test.toml, other files."""
    project = os.path.join(ctx.tmp, name)
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(config)
    for test, text in tests.items():
        with open(os.path.join(project, "tests", f"{test}.test.toml"), "w") as f:
            f.write(text)
    for rel, text in (files or {}).items():
        with open(os.path.join(project, rel), "w") as f:
            f.write(text)
    return project


def step_test(name, command):
    return f'name = "{name}"\n\n[[steps]]\ninstruction = "Run `{command}`"\n'


SHELL_CONFIG = """[provider]
name = "shell"

[supervisor]
tests = ["tests/*.test.toml"]
keep_workspace = "never"
"""

# The rows that drive Claude Code against the scripted stub (replay, learning, the browser, the
# replayed night): its shell tool allowed, every test under tests/.
CLAUDE_CONFIG = """[provider]
name = "claude-code"
agent_args = ["--allowedTools", "Bash"]
step_timeout_secs = 120

[supervisor]
tests = ["tests/*.test.toml"]
keep_workspace = "never"
"""


def directive_config(ctx):
    """A project's config driving the scripted `command` agent (tests/support/directive_agent.py),
    which runs what its step's plan file says: the mutation corpus's judge."""
    agent = os.path.join(ctx.root, "tests", "support", "directive_agent.py")
    return f"""[provider]
name = "command"
cmd = "python3 {agent}"
step_timeout_secs = 60

[supervisor]
tests = ["tests/*.test.toml"]
keep_workspace = "never"
"""


def settle_file_system(ctx):
    """Lets the file system forget the files deleted before a timed run: written back (`sync`),
    a freed inode counts as recently deleted for 5 s more (35 s while its block is dirty), and
    on a file system without a journal each file created meanwhile skips such inodes one by one
    (see `set_aside`). Called before the rows whose supervisor creates files against a
    floor that creates none or few (1, 25, 26), so that a run pays for the files it deletes
    itself, not for those deleted before it by the bench or the row before. Not in a quick
    run: its figures only show that every row runs to its end."""
    if ctx.quick:
        return
    os.sync()
    time.sleep(6)


def copy_of_record(ctx, project, name):
    """The record `project`'s last run left, copied into the bench's folder as `<name>-written`
    for a floor that copies it again with `cp -r`: (its path, how many files it holds, the path
    the floor copies it to, `<name>-copy`)."""
    written = os.path.join(ctx.tmp, f"{name}-written")
    shutil.rmtree(written, ignore_errors=True)
    shutil.copytree(os.path.join(project, ".bugatti"), written, symlinks=True)
    files = sum(len(fs) for _, _, fs in os.walk(written))
    return written, files, os.path.join(ctx.tmp, f"{name}-copy")


def set_aside(ctx, path):
    """Moves `path` (a previous run's record, a floor's copy of one), if it exists, into the
    bench's folder (removed with it when the bench ends), instead of deleting it before the next
    timed run; deletes it only where it cannot be moved there. Deleting thousands of files a
    moment before a run charges that run for them: on a file system without a journal (ext4
    here) every file the run then creates skips, one by one, the inodes freed in the last
    seconds (`recently_deleted` in the kernel's profile), a cost of the bench's cleaning up, not
    of the run; the shell baselines create no files and never pay it. What the run deletes
    itself (its workspace, a record it rewrites) it still pays for."""
    if not os.path.exists(path):
        return
    ctx.counter += 1
    aside = os.path.join(ctx.tmp, "records-set-aside", str(ctx.counter))
    os.makedirs(os.path.dirname(aside), exist_ok=True)
    try:
        os.rename(path, aside)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)


def supervise(ctx, project, extra=(), expected_runs=1, poll_rss=False, label="supervisor"):
    """One `supervisor start` on `project`, which must pass; its previous artifacts are set
    aside first (`set_aside`)."""
    set_aside(ctx, os.path.join(project, ".bugatti"))
    argv = [ctx.binary, "start", "--config", os.path.join(project, "bugatti.config.toml"), *extra]
    m = run(argv, project, ctx.out(label), ctx.env, poll_rss=poll_rss)
    if m.rc != 0:
        raise BenchError(f"{' '.join(argv)} exited {m.rc}, expected 0; its output ends:\n{m.tail()}")
    artifacts.assert_outcomes(project, expected_runs)
    return m


def baseline(ctx, argv, cwd, label="baseline", poll_rss=False):
    m = run(argv, cwd, ctx.out(label), ctx.env, poll_rss=poll_rss)
    if m.rc != 0:
        raise BenchError(f"baseline {' '.join(argv)} exited {m.rc}; its output ends:\n{m.tail()}")
    return m


def med(values):
    return statistics.median(values)


def pair_ratios(measured, floor):
    """The median of the ratios taken pair by pair (runs interleaved: each pair saw the same
    machine), and their spread as text, `(pairs 1.1–1.4×)`."""
    ratios = sorted(a / b for a, b in zip(measured, floor))
    return med(ratios), f"(pairs {ratios[0]:.2f}–{ratios[-1]:.2f}×)"


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


def where_it_went(splits):
    """The medians of runs' `artifacts.phases`, as text: where a supervised run's wall went."""
    before, session, after = (med([s[i] for s in splits]) for i in range(3))
    return (f"(the median of each part) {ms(before)} from the start to `run_started` (the process "
            f"and its runtime, the config and tests read, the suite's folders), {ms(session)} the "
            f"session (`run_started` to `run_finished`: the workspace, the steps, their "
            f"teardown), {ms(after)} from `run_finished` to the exit (run.json, report.md, the "
            f"suite's summary, JUnit, HTML and history, the runtime's shutdown)")


def distance(measured, floor, goal):
    """How far the median `measured` is above `goal` × the median `floor`, as text."""
    left = measured - goal * floor
    return (f"{ms(left)} above the goal ({goal}× the floor is {ms(goal * floor)})" if left > 0
            else f"within the goal by {ms(-left)}")


# 1 ------------------------------------------------------------------------------------------------
def overhead(ctx):
    """One trivial test against its faithful floor: `sh -c true` plus copying the files a run must
    write (docs/artifacts.md: the run's and the suite's records), taken from the warm-up run
    itself, so the floor creates the same names and sizes in the same tree. What is left above
    the floor is the supervisor's own work: its start, the session and the reporter."""
    project = write_project(ctx, "overhead", SHELL_CONFIG, {"trivial": step_test("Trivial", "true")})
    supervise(ctx, project, ["-j", "1"])  # warm-up: page cache, dynamic loader
    written, files, copy = copy_of_record(ctx, project, "overhead")
    settle_file_system(ctx)
    floor = ["sh", "-c", f"true && cp -r '{written}' '{copy}'"]
    sup, base, splits, cpu, base_cpu = [], [], [], [], []
    for _ in range(max(ctx.runs, 5)):
        m = supervise(ctx, project, ["-j", "1"])
        sup.append(m.wall)
        cpu.append(m.cpu)
        splits.append(artifacts.phases(project, m))
        # Set aside outside the timing, as the supervisor's own previous records are
        # (`supervise`, `set_aside`): the floor creates files too.
        set_aside(ctx, copy)
        b = baseline(ctx, floor, project, "overhead-floor")
        base.append(b.wall)
        base_cpu.append(b.cpu)
    ratio, spread = pair_ratios(sup, base)
    note = (f"where the {ms(med(sup))} went: {where_it_went(splits)}; CPU {ms(med(cpu))} "
            f"(the supervisor and its `sh`) against the floor's {ms(med(base_cpu))}; "
            f"{distance(med(sup), med(base), 1.5)}")
    return Row("1. overhead: 1 test, 1 `true` step, no commands", ms(med(sup)),
               f"{ms(med(base))} (`sh -c true` + `cp -r` of the {files} files the run wrote)",
               f"{ratio:.1f}× {spread}", "≤ 1.5× the floor", ratio <= 1.5, note)


# 2 ------------------------------------------------------------------------------------------------
def demo(ctx):
    project = os.path.join(ctx.tmp, "demo")
    shutil.rmtree(project, ignore_errors=True)
    source = os.path.join(ctx.root, "examples", "demo")
    shutil.copytree(source, project, ignore=shutil.ignore_patterns(".bugatti", "__pycache__"))
    harness = os.path.join(ctx.root, "bench", "demo_harness.sh")
    sup, base = [], []
    for _ in range(ctx.runs):
        sup.append(supervise(ctx, project, ["-j", "1"], expected_runs=2).wall)
        base.append(baseline(ctx, ["sh", harness, project], project, "demo-harness").wall)
    ratio = med(sup) / med(base)
    return Row("2. demo project (2 tests, 6 steps, migrate + server), `-j 1`",
               f"{med(sup):.2f} s", f"{med(base):.2f} s (bash + curl/sleep 0.1 harness)",
               f"{ratio:.2f}×", "(no goal)", None)


# 3 ------------------------------------------------------------------------------------------------
def readiness(ctx):
    app = os.path.join(ctx.root, "bench", "ready_app.py")
    results = {}
    for mode in ("log", "http"):
        stamps = os.path.join(ctx.tmp, f"ready-{mode}-stamps")
        os.makedirs(stamps, exist_ok=True)
        ready_stamp, step_stamp = os.path.join(stamps, "ready"), os.path.join(stamps, "step")
        if mode == "log":
            cmd, probe = f"python3 -u {app} log {ready_stamp}", '{ log = "^READY$" }'
        else:
            cmd = f"python3 -u {app} http {ready_stamp} ${{APP_PORT}}"
            probe = '{ http = "http://127.0.0.1:${APP_PORT}/" }'
        config = SHELL_CONFIG + f"""
[ports]
APP_PORT = "auto"

[commands.app]
kind = "long_lived"
cmd = "{cmd}"
readiness = {probe}
stop_timeout_secs = 1
"""
        project = write_project(ctx, f"ready-{mode}", config,
                                {"first": step_test("First step", f"date +%s.%N > {step_stamp}")})
        sent, ran = [], []
        for _ in range(ctx.runs):
            for stamp in (ready_stamp, step_stamp):
                if os.path.exists(stamp):
                    os.remove(stamp)
            supervise(ctx, project, ["-j", "1"], label=f"ready-{mode}")
            run_dir = artifacts.only_run(project)
            evs = artifacts.events(run_dir)
            try:
                with open(ready_stamp) as f:
                    ready_at = float(f.read())
                with open(step_stamp) as f:
                    step_ran_at = float(f.read())
            except (OSError, ValueError) as e:
                raise BenchError(f"readiness stamps missing in {stamps}: {e}") from e
            started = artifacts.event_time(evs, run_dir, "step_started", step_id=1)
            sent.append(started - ready_at)
            ran.append(step_ran_at - ready_at)
        results[mode] = (med(sent), med(ran))
    log_sent, log_ran = results["log"]
    http_sent, http_ran = results["http"]
    return Row("3. readiness latency: ready → first step sent (step's `sh` ran)",
               f"log probe {ms(log_sent)} ({ms(log_ran)})",
               f"http probe (every 10 ms for 1 s, then 50 ms) {ms(http_sent)} ({ms(http_ran)})",
               f"log {ms(log_sent)}", "log < 5 ms", log_sent < 0.005)


# 4 ------------------------------------------------------------------------------------------------
def parallel(ctx):
    tests, jobs, secs = (16, 8, 1) if ctx.quick else (32, 16, 2)
    project = write_project(ctx, "parallel", SHELL_CONFIG,
                            {f"t{i:03d}": step_test(f"Sleeper {i}", f"sleep {secs}")
                             for i in range(tests)})
    ideal = tests / jobs * secs
    walls = [supervise(ctx, project, ["-j", str(jobs)], expected_runs=tests).wall
             for _ in range(ctx.runs)]
    eff = ideal / med(walls)
    return Row(f"4. parallel: {tests} tests × `sleep {secs}`, `-j {jobs}`", f"{med(walls):.2f} s",
               f"{ideal:.2f} s (ideal)", f"efficiency {eff:.3f}", "≥ 0.95", eff >= 0.95)


# 5 ------------------------------------------------------------------------------------------------
def teardown(ctx):
    commands = []
    for i in range(10):
        # `armed` comes after the trap, and readiness waits for it: teardown cannot beat the trap.
        body = "trap '' TERM; echo armed; exec sleep 1000" if i % 2 else "echo armed; exec sleep 1000"
        commands.append(f"""
[commands.c{i}]
kind = "long_lived"
cmd = "{body}"
readiness = {{ log = "^armed$" }}
stop_timeout_secs = 1
""")
    project = write_project(ctx, "teardown", SHELL_CONFIG + "".join(commands),
                            {"step": step_test("One step", "true")})
    spans = []
    for _ in range(ctx.runs):
        supervise(ctx, project, ["-j", "1"], label="teardown")
        run_dir = artifacts.only_run(project)
        evs = artifacts.events(run_dir)
        states = sorted(c.get("teardown") for c in artifacts.run_json(run_dir).get("commands", []))
        if states != ["clean"] * 5 + ["killed"] * 5:
            raise BenchError(f"{run_dir}/run.json: teardown states {states}, expected 5 clean, 5 killed")
        last_step_end = artifacts.event_time(evs, run_dir, "step_finished", last=True)
        spans.append(artifacts.event_time(evs, run_dir, "run_finished") - last_step_end)
    ratio = med(spans) / 1.0
    return Row("5. teardown: 10 commands, 5 ignore SIGTERM, grace 1 s", f"{med(spans):.3f} s",
               "1.000 s (one grace period)", f"{ratio:.2f}×", "≤ 1.2×", ratio <= 1.2)


# 6 ------------------------------------------------------------------------------------------------
def log_throughput(ctx):
    size = 128 * MIB if ctx.quick else 1024 * MIB
    produce = f"head -c {size} /dev/zero"
    # The row measures capturing every byte: the log limit (default 256 MiB, then a rolling tail)
    # is set past the flood so that all of it lands in flood.log and is counted there.
    config = SHELL_CONFIG.replace("[supervisor]\n", f"[supervisor]\nmax_log_bytes = {size + MIB}\n") + f"""
[commands.flood]
kind = "short_lived"
cmd = "{produce}"
timeout_secs = 600
"""
    project = write_project(ctx, "logs", config, {"step": step_test("One step", "true")})
    target = os.path.join(project, "redirected.log")
    sup, base, piped, rss = [], [], [], []
    for _ in range(ctx.runs):
        m = supervise(ctx, project, ["-j", "1"], poll_rss=True, label="logs")
        run_dir = artifacts.only_run(project)
        evs = artifacts.events(run_dir)
        log = os.path.join(run_dir, "logs", "flood.log")
        if os.path.getsize(log) != size:
            raise BenchError(f"{log} holds {os.path.getsize(log)} bytes, expected {size}")
        began = artifacts.event_time(evs, run_dir, "setup_status", command="flood", state="started")
        ended = artifacts.event_time(evs, run_dir, "setup_status", command="flood", state="exited")
        sup.append(size / MIB / (ended - began))
        rss.append(m.peak_rss_kib or 0)
        shutil.rmtree(os.path.join(project, ".bugatti"))
        b = baseline(ctx, ["sh", "-c", f"{produce} > {target}"], project, "redirect")
        if os.path.getsize(target) != size:
            raise BenchError(f"{target} holds {os.path.getsize(target)} bytes, expected {size}")
        os.remove(target)
        base.append(size / MIB / b.wall)
        # Context, not the goal's baseline: the same bytes through a pipe, as the supervisor gets them.
        p = baseline(ctx, ["sh", "-c", f"{produce} | cat > {target}"], project, "pipe")
        os.remove(target)
        piped.append(size / MIB / p.wall)
    ratio = med(sup) / med(base)
    peak = max(rss) / 1024
    return Row(f"6. log capture: {size // MIB} MiB of harness output",
               f"{med(sup):.0f} MiB/s, peak RSS {peak:.1f} MiB",
               f"{med(base):.0f} MiB/s (`sh` redirect); piped through `cat`: {med(piped):.0f} MiB/s",
               f"{ratio:.2f}×, RSS {peak:.1f} MiB", "≥ 0.7×, RSS < 64 MiB",
               ratio >= 0.7 and peak < 64)


# 7 ------------------------------------------------------------------------------------------------
def idle(ctx):
    secs = 3 if ctx.quick else 10
    busy = write_project(ctx, "idle", SHELL_CONFIG, {"wait": step_test("Idle", f"sleep {secs}")})
    zero = write_project(ctx, "idle-zero", SHELL_CONFIG, {"wait": step_test("Idle", "sleep 0")})
    long_cpu, short_cpu = [], []
    for _ in range(ctx.runs):
        long_cpu.append(supervise(ctx, busy, ["-j", "1"], label="idle").cpu)
        short_cpu.append(supervise(ctx, zero, ["-j", "1"], label="idle-zero").cpu)
    per10 = (med(long_cpu) - med(short_cpu)) * 10 / secs
    return Row(f"7. idle CPU during a {secs} s step (minus a 0 s step)",
               f"{ms(med(long_cpu))} CPU", f"{ms(med(short_cpu))} CPU (0 s step)",
               f"{ms(per10)} per 10 s" + (" (below the noise)" if per10 < 0 else ""),
               "< 10 ms per 10 s", per10 < 0.010)


# 8 ------------------------------------------------------------------------------------------------
def memory(ctx):
    sessions, secs = (20, 1) if ctx.quick else (100, 3)
    many = write_project(ctx, "memory", SHELL_CONFIG,
                         {f"t{i:03d}": step_test(f"Sleeper {i}", f"sleep {secs}")
                          for i in range(sessions)})
    one = write_project(ctx, "memory-one", SHELL_CONFIG,
                        {"t000": step_test("Sleeper", f"sleep {secs}")})
    peaks, singles = [], []
    for _ in range(ctx.runs):
        m = supervise(ctx, many, ["-j", str(sessions)], expected_runs=sessions, poll_rss=True,
                      label="memory")
        peaks.append(m.peak_rss_kib)
        singles.append(supervise(ctx, one, ["-j", "1"], poll_rss=True, label="memory-one").peak_rss_kib)
    if None in peaks or None in singles:
        raise BenchError("could not read the supervisor's VmHWM from /proc")
    total, single = med(peaks) / 1024, med(singles) / 1024
    per = (total - single) / (sessions - 1)
    return Row(f"8. memory: {sessions} concurrent sessions (`-j {sessions}`)",
               f"peak RSS {total:.1f} MiB", f"{single:.1f} MiB (1 session)",
               f"{per * 1024:.0f} KiB per session", "< 1 MiB per session", per < 1.0)


# 9 ------------------------------------------------------------------------------------------------
INSTANT_AGENT = """import json, sys
for line in sys.stdin:
    json.loads(line)
    sys.stdout.write("RESULT OK\\n")
    sys.stdout.flush()
"""

# Drives the same agent over the same JSON-lines protocol with nothing else around it: what a step
# costs the agent itself (its read, parse and answer) and the pipes.
DIRECT_DRIVER = """import json, subprocess, sys
steps = int(sys.argv[1])
agent = subprocess.Popen([sys.executable, "agent.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for i in range(steps + 1):
    kind = "bootstrap" if i == 0 else "step"
    agent.stdin.write((json.dumps({"type": kind, "step_id": i, "instruction": "check it"}) + "\\n").encode())
    agent.stdin.flush()
    if agent.stdout.readline() != b"RESULT OK\\n":
        sys.exit("bad reply")
agent.stdin.close()
sys.exit(agent.wait())
"""


def step_overhead(ctx):
    many = 20
    config = '[provider]\nname = "command"\ncmd = "python3 agent.py"\n\n[supervisor]\n' \
             'tests = ["tests/*.test.toml"]\nkeep_workspace = "never"\n'
    steps = lambda n: "".join(f'[[steps]]\ninstruction = "Check item {i}."\n\n' for i in range(n))
    files = {"agent.py": INSTANT_AGENT, "driver.py": DIRECT_DRIVER}
    long = write_project(ctx, "steps-many", config, {"steps": steps(many)}, files)
    short = write_project(ctx, "steps-one", config, {"steps": steps(1)}, files)
    sup_many, sup_one, direct_many, direct_one = [], [], [], []
    supervise(ctx, long, ["-j", "1"])  # warm-up
    for _ in range(max(ctx.runs, 5)):
        sup_many.append(supervise(ctx, long, ["-j", "1"], label="steps-many").wall)
        sup_one.append(supervise(ctx, short, ["-j", "1"], label="steps-one").wall)
        direct_many.append(baseline(ctx, ["python3", "driver.py", str(many)], long, "driver-many").wall)
        direct_one.append(baseline(ctx, ["python3", "driver.py", "1"], long, "driver-one").wall)
    per_sup = (med(sup_many) - med(sup_one)) / (many - 1)
    per_direct = (med(direct_many) - med(direct_one)) / (many - 1)
    beyond = per_sup - per_direct
    return Row(f"9. per-step overhead, instant `command` agent, {many} steps",
               f"{ms(per_sup)} per step ({med(sup_many):.2f} s for {many}, {med(sup_one):.2f} s for 1)",
               f"{ms(per_direct)} per step (the agent driven directly)",
               f"{ms(beyond)} per step beyond the agent's own", "≤ 5 ms", beyond <= 0.005)


# 10 -----------------------------------------------------------------------------------------------
def check_many_env(ctx):
    """`supervisor check` on a config with 10 000 `[env]` entries (half of them referring to
    another) against the same config with 10: loading must stay linear in the config's size."""
    def config(n):
        lines = ['[provider]', 'name = "shell"', '', '[env]']
        for i in range(n):
            lines.append(f'V{i} = "value {i}"' if i % 2 == 0 else f'V{i} = "${{V{i - 1}}}/more"')
        return "\n".join(lines) + "\n"
    big = write_project(ctx, "env-big", config(10_000), {"a": step_test("A", "true")})
    small = write_project(ctx, "env-small", config(10), {"a": step_test("A", "true")})
    times_big, times_small = [], []
    for _ in range(max(ctx.runs, 3)):
        for project, times in ((big, times_big), (small, times_small)):
            argv = [ctx.binary, "check", "-q", "--config", os.path.join(project, "bugatti.config.toml")]
            times.append(baseline(ctx, argv, project, "check").wall)
    ratio = med(times_big) / med(times_small)
    return Row("10. `check` with 10 000 `[env]` entries", ms(med(times_big)),
               f"{ms(med(times_small))} (10 entries)", f"{ratio:.1f}×", "< 1 s",
               med(times_big) < 1.0)


def _fake_suite(root, tests, steps, shard=None):
    """A finished suite as `.bugatti/` holds it: summary.json and, per root test, run.json, a
    transcript and a harness log. Every 10th test fails at its last step. `shard` = (k, n): the
    k-th shard of a CI run of n (its own suite and run ids, its own tests)."""
    import json
    art = os.path.join(root, ".bugatti")
    k = shard[0] if shard else 0
    suite_id = f"01900000-0000-7000-8{k:03d}-000000000000"
    suite_dir = os.path.join(art, "suites", suite_id)
    os.makedirs(suite_dir)
    t0 = "2026-01-01T00:00:00Z"
    summary_tests = []
    totals = dict(total=0, passed=0, warned=0, failed=0, error=0, interrupted=0, flaky=0, not_run=0)
    for t in range(k * tests, k * tests + tests):
        run_id = f"01900000-0000-7000-8{k:03d}-{t:012d}"
        run_dir = os.path.join(art, "runs", run_id)
        os.makedirs(os.path.join(run_dir, "transcripts"))
        os.makedirs(os.path.join(run_dir, "logs"))
        failed = t % 10 == 9
        test_file = f"tests/t{t:03d}.test.toml"
        step_list, transcript = [], []
        for i in range(1, steps + 1):
            bad = failed and i == steps
            status = "error" if bad else "ok"
            msg = "expected 3 products, saw 2 <ul> items" if bad else None
            instr = f"Open the page for item {i} and check that the price & stock are shown."
            step_list.append(dict(step_id=i, source_file=test_file, source_index=i, include_chain=[],
                                  instruction=instr, status=status, message=msg, duration_ms=1200 + i,
                                  started_at=t0, logs=[f"checked item {i}"], evidence=[]))
            transcript.append(f"### step {i}\n" + "I opened the page and looked at it.\n" * 8
                              + ("RESULT ERROR: " + msg if bad else "RESULT OK") + "\n")
        with open(os.path.join(run_dir, "transcripts", "agent.log"), "w") as f:
            f.write("".join(transcript))
        with open(os.path.join(run_dir, "logs", "server.log"), "w") as f:
            f.write("".join(f"GET /item/{i} 200 1.2ms\n" for i in range(200)))
        outcome = "failed" if failed else "passed"
        record = dict(schema_version=1, run_id=run_id, session_id=run_id, suite_id=suite_id,
                      test_file=test_file, test_name=f"T{t}", project_root=root, provider="claude-code",
                      run_dir=run_dir, attempt=1, started_at=t0, finished_at=t0, duration_ms=12000,
                      outcome=outcome, error=None, skipped_commands=[], steps=step_list,
                      commands=[dict(name="server", kind="long_lived", status="ready", exit_code=None,
                                     restarts=[], log="logs/server.log", teardown="clean")],
                      checkpoints=[], effective_config=[])
        with open(os.path.join(run_dir, "run.json"), "w") as f:
            json.dump(record, f)
        report = os.path.join(run_dir, "report.md")
        message = f"step {steps}: expected 3 products" if failed else None
        summary_tests.append(dict(test_file=test_file, test_name=f"T{t}", run_id=run_id, outcome=outcome,
                                  attempts=1, flaky=False, duration_ms=12000, message=message, report=report,
                                  history=[dict(run_id=run_id, attempt=1, outcome=outcome, duration_ms=12000,
                                                message=message, report=report)]))
        totals["total"] += 1
        totals[outcome] += 1
    summary = dict(schema_version=1, suite_id=suite_id, started_at=t0, finished_at=t0, duration_ms=2400000,
                   strict_warnings=False, tests=summary_tests, not_run=[], totals=totals)
    if shard:
        summary["shard"] = dict(shard=f"{shard[0]}/{shard[1]}", by="count", digest="fake", paths=[], tags=[])
    with open(os.path.join(suite_dir, "summary.json"), "w") as f:
        json.dump(summary, f)
    return suite_dir


# 11 -----------------------------------------------------------------------------------------------
def html_report(ctx):
    tests, steps = (40, 10) if ctx.quick else (200, 10)
    project = os.path.join(ctx.tmp, "html-report")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(project)
    suite_dir = _fake_suite(project, tests, steps)
    render, load, size = [], [], 0
    for k in range(max(ctx.runs, 5)):
        out = os.path.join(project, "merged", str(k))
        m = run([ctx.binary, "merge", suite_dir, "--out", out], project, ctx.out("html-merge"), ctx.env)
        if m.rc != 1:  # every 10th test fails: exit 1
            raise BenchError(f"merge exited {m.rc}\n{m.tail()}")
        render.append(m.wall)
        size = os.path.getsize(os.path.join(out, "report.html"))
        b = run([ctx.binary, "report", suite_dir.rsplit("/", 1)[1]], project, ctx.out("html-load"), ctx.env)
        if b.rc != 1:
            raise BenchError(f"report exited {b.rc}\n{b.tail()}")
        load.append(b.wall)
    extra = med(render) - med(load)
    ok = extra <= 0.2 and size < 5 * MIB
    return Row(f"11. report.html for {tests} tests × {steps} steps (`supervisor merge` of one suite)",
               f"{ms(med(render))} (load + summary/JUnit + report.html), {size / MIB:.2f} MiB",
               f"{ms(med(load))} (`supervisor report`: the same suite loaded, nothing rendered)",
               f"{ms(extra)} to render and write, {size / MIB:.2f} MiB", "< 200 ms, < 5 MiB", ok)



# 12-15: the agent console (docs/console.md) ---------------------------------------------------------------
def _console_project(ctx, name, instruction, commands=""):
    agent = os.path.abspath(os.path.join(ctx.root, "bench", "console_agent.py"))
    config = f"""[provider]
name = "command"
cmd = "python3 {agent}"
step_timeout_secs = 600

[supervisor]
tests = ["tests/*.test.toml"]
keep_workspace = "never"

# These rows measure the console: every run must reach the agent, not replay its first one.
[replay]
mode = "off"
{commands}"""
    test = f'name = "{name}"\n\n[[steps]]\ninstruction = "{instruction}"\n'
    return write_project(ctx, name, config, {"console": test})


def _bench_log(project):
    """The `BUGATTI_LOG bench {json}` the console agent wrote."""
    run_dir = artifacts.only_run(project)
    for e in artifacts.events(run_dir):
        if e.get("type") == "agent_log" and e.get("message", "").startswith("bench "):
            return json.loads(e["message"][len("bench "):])
    raise BenchError(f"{run_dir}: the console agent logged no measurement")


def console_latency(ctx):
    n = 10 if ctx.quick else 30
    project = _console_project(ctx, "console-latency", f"latency {n}")
    console, bare = [], []
    for _ in range(ctx.runs):
        supervise(ctx, project, ["-j", "1"], label="console-latency")
        got = _bench_log(project)
        console.append(got["console_s"])
        bare.append(got["bare_s"])
    extra = med(console) - med(bare)
    return Row(f"12. console completion: program exit → exec_command result (median of {n})",
               ms(med(console)), f"{ms(med(bare))} (bare PTY read to end-of-file)",
               f"+{ms(extra)}", "within 5 ms of a bare PTY read", extra <= 0.005,
               "includes the MCP HTTP round trip")


def console_wait_for_log(ctx):
    n = 5 if ctx.quick else 20
    app = os.path.abspath(os.path.join(ctx.root, "bench", "tick_app.py"))
    commands = f"""
[ports]
TICK_PORT = "auto"

[commands.ticks]
kind = "long_lived"
cmd = "python3 {app} ${{TICK_PORT}}"
readiness_url = "http://127.0.0.1:${{TICK_PORT}}/health"
"""
    project = _console_project(ctx, "console-waitlog", f"waitlog {n} ${{TICK_PORT}}", commands)
    waits, calls = [], []
    for _ in range(ctx.runs):
        supervise(ctx, project, ["-j", "1"], label="console-waitlog")
        got = _bench_log(project)
        waits.append(got["wait_s"])
        calls.append(got["call_s"])
    return Row(f"13. wait_for_log: line written → call returns (median of {n})",
               ms(med(waits)), f"{ms(med(calls))} (a list_logs round trip)",
               ms(med(waits)), "< 5 ms", med(waits) < 0.005)


def console_idle(ctx):
    secs = 3 if ctx.quick else 10
    project = _console_project(ctx, "console-idle", f"idle {secs}")
    none, sixteen = [], []
    for _ in range(ctx.runs):
        supervise(ctx, project, ["-j", "1"], label="console-idle")
        got = _bench_log(project)
        none.append(got["none_ns"] / 1e9 / secs)
        sixteen.append(got["sixteen_ns"] / 1e9 / secs)
    extra = med(sixteen) - med(none)
    us = lambda seconds: f"{seconds * 1e6:.0f} µs"
    return Row(f"14. console idle CPU: 16 open console sessions, {secs} s",
               f"{us(med(sixteen))} CPU per s", f"{us(med(none))} CPU per s (no session)",
               f"{us(med(sixteen))} per s ({'+' if extra >= 0 else '−'}{us(abs(extra))})",
               "< 1 ms per s", med(sixteen) < 0.001,
               "the supervisor's own threads (schedstat), measured by the agent")


# The same bytes through a bare PTY, read here to end-of-file: what a PTY allows on this machine.
BARE_PTY_READ = """import os, pty, subprocess, sys, time
m, s = pty.openpty()
p = subprocess.Popen(["head", "-c", sys.argv[1], "/dev/zero"], stdin=s, stdout=s, stderr=s,
                     start_new_session=True)
os.close(s)
n = 0
while True:
    try:
        b = os.read(m, 65536)
    except OSError:
        break
    if not b:
        break
    n += len(b)
sys.exit(0 if p.wait() == 0 and n == int(sys.argv[1]) else 1)
"""


def console_flood(ctx):
    size = 128 * MIB if ctx.quick else 1024 * MIB
    big = _console_project(ctx, "console-flood", f"flood {size}")
    with open(os.path.join(big, "ptyread.py"), "w") as f:
        f.write(BARE_PTY_READ)
    small = _console_project(ctx, "console-flood-small", f"flood {MIB}")
    rates, bare, peaks, smalls = [], [], [], []
    for _ in range(ctx.runs):
        m = supervise(ctx, big, ["-j", "1"], poll_rss=True, label="console-flood")
        got = _bench_log(big)
        if got["tokens_seen"] * 4 < size:
            raise BenchError(f"the console reported {got['tokens_seen']} tokens for {size} bytes")
        rates.append(size / MIB / got["seconds"])
        peaks.append((m.peak_rss_kib or 0) / 1024)
        b = baseline(ctx, ["python3", "ptyread.py", str(size)], big, "bare-pty")
        bare.append(size / MIB / b.wall)
        s = supervise(ctx, small, ["-j", "1"], poll_rss=True, label="console-flood-small")
        smalls.append((s.peak_rss_kib or 0) / 1024)
    peak = max(peaks)
    return Row(f"15. {size // MIB} MiB through a console session (PTY)",
               f"peak RSS {peak:.1f} MiB, {med(rates):.0f} MiB/s",
               f"peak RSS {med(smalls):.1f} MiB (1 MiB through it); bare PTY read {med(bare):.0f} MiB/s",
               f"RSS {peak:.1f} MiB, {med(rates) / med(bare):.2f}× a bare PTY", "RSS < 64 MiB",
               peak < 64)


# 16 -----------------------------------------------------------------------------------------------
def many_steps(ctx):
    """One root test of 4000 `true` steps (1000 with --quick), `shell` provider, against one of a
    tenth as many: the wall time per step of the whole run, start to exit, on each side. Anything
    redone whole per event (run.json rewritten in full) makes the long run's steps dearer; the
    wall time counts it even when the reporter, not the steps, falls behind."""
    steps = 1000 if ctx.quick else 4000
    few = steps // 10
    test = lambda n: 'name = "Many"\n\n' + "".join('[[steps]]\ninstruction = "`true`"\n\n' for _ in range(n))
    long = write_project(ctx, "many-steps", SHELL_CONFIG, {"many": test(steps)})
    short = write_project(ctx, "few-steps", SHELL_CONFIG, {"few": test(few)})
    per_long, per_short = [], []
    for _ in range(1 if ctx.quick else max(ctx.runs // 2, 1)):
        per_long.append(supervise(ctx, long, ["-j", "1", "-q"], label="many-steps").wall / steps)
        per_short.append(supervise(ctx, short, ["-j", "1", "-q"], label="few-steps").wall / few)
    ratio = med(per_long) / med(per_short)
    return Row(f"16. {steps}-step `shell` test: wall time per step, start to exit",
               f"{ms(med(per_long))} per step ({med(per_long) * steps:.1f} s in all)",
               f"{ms(med(per_short))} per step ({few}-step test, same steps)",
               f"{ratio:.2f}×", "≤ 2×", ratio <= 2.0)




# 17 -----------------------------------------------------------------------------------------------
def _claude_bin(ctx):
    path = os.environ.get("BUGATTI_CLAUDE_BIN") or os.path.join(ctx.root, ".ci", "node", "node_modules", ".bin", "claude")
    return ctx.agent_cli("Claude Code", path if os.access(path, os.X_OK) else None)


def _model_calls(requests_path):
    """Main-loop requests the stub answered (those offering the Bash tool), as the stub logged them."""
    try:
        lines = open(requests_path).read().splitlines()
    except FileNotFoundError:
        return 0
    calls = 0
    for line in lines:
        entry = json.loads(line)
        tools = (entry.get("body") or {}).get("tools") or []
        if entry.get("path", "").startswith("/v1/messages") and any(t.get("name") == "Bash" for t in tools):
            calls += 1
    return calls


def replay(ctx):
    """Replay (docs/replay.md): a test of the demo shop through the real Claude Code CLI against the scripted
    stub with 1 s of model latency per call (0.2 s with --quick). First run (the agent, recorded)
    vs second run (replayed); a third run after one step's output changed asks the model for that
    step only. Model calls are counted from the stub's own request log."""
    claude = _claude_bin(ctx)
    steps = 3 if ctx.quick else 10
    name = f"17. replay: {steps}-step claude-code test, model latency {'0.2' if ctx.quick else '1'} s/call"
    if claude is None:
        return Row.skip(name, "second run ≥ 10× faster",
                        "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    project = os.path.join(ctx.tmp, "replay")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    shutil.copytree(os.path.join(ctx.root, "examples", "demo", "app"), os.path.join(project, "app"))
    changed = steps // 2 + 1
    with open(os.path.join(project, "note.txt"), "w") as f:
        f.write("note one\n")
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CLAUDE_CONFIG + """
[ports]
APP_PORT = "auto"

[commands.migrate]
kind = "short_lived"
cmd = "python3 app/migrate.py ${BUGATTI_WORKDIR}/shop.db"

[commands.server]
kind = "long_lived"
cmd = "python3 -u app/server.py --port ${APP_PORT} --db ${BUGATTI_WORKDIR}/shop.db"
depends_on = ["migrate"]
readiness_url = "http://127.0.0.1:${APP_PORT}/health"
""")
    command = lambda i: "cat note.txt" if i == changed else f"curl -s http://127.0.0.1:$APP_PORT/products; echo; echo step {i}"
    with open(os.path.join(project, "tests", "shop.test.toml"), "w") as f:
        f.write('name = "Shop"\n\n' + "".join(
            f'[[steps]]\ninstruction = "Check the shop, part {i}."\n\n' for i in range(1, steps + 1)))
    def one_run(label, script):
        return _stub_run(ctx, project, claude, f"replay-{label}", script)

    agent_script = []
    for i in range(1, steps + 1):
        agent_script += [{"bash": command(i)}, {"text": "RESULT OK"}]
    first, first_calls = one_run("first", agent_script)
    second, second_calls = one_run("second", [])
    with open(os.path.join(project, "note.txt"), "w") as f:
        f.write("note two\n")
    watch = _harness_watch(project)
    third, third_calls = one_run("third", [{"bash": command(changed)}, {"text": "RESULT OK"}])
    ratio = first / second
    return Row(name, f"{second:.2f} s replayed ({second_calls} model calls)",
               f"{first:.2f} s by the agent ({first_calls} model calls)", f"{ratio:.1f}×",
               "≥ 10× faster, 0 model calls", ratio >= 10 and second_calls == 0,
               f"harness watch: {watch:.2f} s of the replayed run, {second - watch:.2f} s without it; "
               f"third run, step {changed}'s output changed: {third:.2f} s, {third_calls} model calls (that step only)")


def _harness_watch(project):
    """How long the newest run's replay watched the harness (docs/replay.md, "What replay
    watches"): the first replayed step passes only once the watch is over, so the gap between
    its end and the next step's start is longer than the others' by that much."""
    newest = max(artifacts.run_dirs(project), key=lambda d: os.path.getmtime(os.path.join(d, "run.json")))
    steps = artifacts.run_json(newest).get("steps", [])
    gaps = []
    for a, b in zip(steps, steps[1:]):
        if not (a.get("started_at") and b.get("started_at")):
            return 0.0
        gaps.append(artifacts.parse_timestamp(b["started_at"]) - artifacts.parse_timestamp(a["started_at"])
                    - (a.get("duration_ms") or 0) / 1000)
    if len(gaps) < 2:
        return 0.0
    return max(gaps[0] - med(gaps[1:]), 0.0)


def _stub_run(ctx, project, claude, label, script, extra_env=None, delay_ms=None, args=("-q",)):
    """One `supervisor start -q` (or with `args`) on `project` through Claude Code and a fresh
    scripted stub holding `script`, with `extra_env` over the bench's environment; (wall seconds,
    model calls). The stub's model latency is 1 s per call (0.2 s with --quick) unless `delay_ms`
    says otherwise."""
    import subprocess
    stub_py = os.path.join(ctx.root, "tests", "support", "anthropic_stub.py")
    home = os.path.join(ctx.tmp, "replay-home")
    os.makedirs(home, exist_ok=True)
    side = os.path.join(ctx.tmp, label)
    shutil.rmtree(side, ignore_errors=True)
    os.makedirs(side)
    script_path, requests = os.path.join(side, "script.json"), os.path.join(side, "requests.jsonl")
    with open(script_path, "w") as f:
        json.dump(script, f)
    if delay_ms is None:
        delay_ms = 200 if ctx.quick else 1000
    stub_env = dict(ctx.env, STUB_DELAY_MS=str(delay_ms))
    stub = subprocess.Popen(["python3", stub_py, script_path, requests], stdout=subprocess.PIPE,
                            env=stub_env, start_new_session=True, text=True)
    try:
        port = stub.stdout.readline().strip().removeprefix("PORT ")
        env = dict(ctx.env, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                   ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   CLAUDE_CODE_MAX_RETRIES="1", BUGATTI_CLAUDE_BIN=claude, **(extra_env or {}))
        saved, ctx.env = ctx.env, env
        try:
            m = supervise(ctx, project, list(args), label=label)
        finally:
            ctx.env = saved
    finally:
        os.killpg(stub.pid, 9)
        stub.wait()
    return m.wall, _model_calls(requests)


def _agent_steps(project):
    """The agent_steps of the (only) run.json the last invocation left."""
    runs = os.path.join(project, ".bugatti", "runs")
    total = 0
    for run in os.listdir(runs):
        with open(os.path.join(runs, run, "run.json")) as f:
            total += json.load(f).get("agent_steps", 0)
    return total


# 22 -----------------------------------------------------------------------------------------------
def replay_learning(ctx):
    """Learned masks (docs/replay.md): a 10-step Claude Code test whose every output carries a
    request id and a duration that change each run. Run 1: the agent does every step (recorded);
    run 2: each step soft-drifts (only those tokens differ) and goes to the agent once, which
    passes it, so those token positions are learned; run 3: every step replays, no model call."""
    claude = _claude_bin(ctx)
    steps = 3 if ctx.quick else 10
    name = f"22. replay learns a request id and a duration: {steps}-step claude-code test, 3 runs"
    if claude is None:
        return Row.skip(name, f"steps by the agent {steps}, ≤ {steps}, 0",
                        "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    project = os.path.join(ctx.tmp, "replay-learning")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CLAUDE_CONFIG)
    with open(os.path.join(project, "tests", "api.test.toml"), "w") as f:
        f.write('name = "API"\n\n' + "".join(
            f'[[steps]]\ninstruction = "Call the API, part {i}, and check it answers ok."\n\n'
            for i in range(1, steps + 1)))
    command = lambda i: (f'echo "request $(cat /proc/sys/kernel/random/uuid) took '
                         f'$(( RANDOM % 900 + 10 ))ms"; echo "part {i}: ok"')
    script = []
    for i in range(1, steps + 1):
        # The facts the pass rests on (docs/replay.md): an agent that stated none would get
        # exact comparison only, and nothing would be learned.
        script += [{"bash": command(i)}, {"text": "RESULT OK"},
                   {"facts": [f'1 contains "part {i}: ok"']}]
    runs = []
    for label, s in (("first", script), ("second", script), ("third", [])):
        wall, calls = _stub_run(ctx, project, claude, f"learning-{label}", s)
        runs.append((wall, calls, _agent_steps(project)))
    agent = [r[2] for r in runs]
    calls = [r[1] for r in runs]
    ok = agent[0] == steps and agent[1] <= steps and agent[2] == 0 and calls[2] == 0
    return Row(name, f"steps by the agent {agent[0]}, {agent[1]}, {agent[2]}",
               f"model calls {calls[0]}, {calls[1]}, {calls[2]}",
               f"{runs[0][0]:.2f} s, {runs[1][0]:.2f} s, {runs[2][0]:.2f} s",
               f"steps by the agent {steps}, ≤ {steps}, 0", ok,
               "run 2: soft drifts learned; run 3: all replayed")


# 18-19: past one machine (docs/ci.md) ------------------------------------------------------------------
def merge_shards(ctx):
    """`supervisor merge` of a CI run's shards (suites as `.bugatti/` holds them, every 10th test
    failing) against the merge of one of them."""
    shards, tests, steps = (10, 20, 5) if ctx.quick else (100, 20, 5)
    project = os.path.join(ctx.tmp, "merge-shards")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(project)
    dirs = [_fake_suite(project, tests, steps, shard=(k, shards)) for k in range(1, shards + 1)]
    whole, one, size = [], [], 0
    for n in range(max(ctx.runs, 3)):
        out = os.path.join(project, "merged", str(n))
        m = run([ctx.binary, "merge", *dirs, "--out", out], project, ctx.out("merge-all"), ctx.env)
        if m.rc != 1:
            raise BenchError(f"merge exited {m.rc}\n{m.tail()}")
        whole.append(m.wall)
        size = os.path.getsize(os.path.join(out, "report.html"))
        b = run([ctx.binary, "merge", dirs[0], "--out", out + "-one"], project, ctx.out("merge-one"), ctx.env)
        if b.rc != 1:
            raise BenchError(f"merge of one exited {b.rc}\n{b.tail()}")
        one.append(b.wall)
    ok = med(whole) < 2.0 and size < 5 * MIB
    return Row(f"18. `merge` of {shards} shards × {tests} tests × {steps} steps",
               f"{ms(med(whole))}, report.html {size / MIB:.2f} MiB", f"{ms(med(one))} (one shard)",
               f"{med(whole) / med(one):.1f}× one shard's merge", "< 2 s, < 5 MiB", ok)


def shard_balance(ctx):
    """How even 8 shards of a skewed 200-test suite are, split by recorded duration vs by count:
    the longest shard over the mean shard, from `supervisor check --shard k/8` on recorded
    durations (nothing runs)."""
    import random
    tests, shards = 200, 8
    rng = random.Random(17)
    # Skewed as agent suites are: most tests short, a few minutes long.
    durations = {f"tests/t{i:03d}.test.toml": int(rng.lognormvariate(10, 1.2)) for i in range(tests)}
    project = write_project(ctx, "shard-balance", SHELL_CONFIG,
                            {f"t{i:03d}": step_test(f"T{i}", "true") for i in range(tests)})
    history = os.path.join(project, "history.jsonl")
    entry = dict(suite_id="bench", started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:00:00Z",
                 duration_ms=0, selection=dict(paths=[], tags=[]),
                 tests=[dict(test_file=t, outcome="passed", passed=True, flaky=False, attempts=1, duration_ms=d)
                        for t, d in durations.items()])
    with open(history, "w") as f:
        f.write(json.dumps(entry) + "\n")

    def ratio(by):
        loads, took = [], []
        for k in range(1, shards + 1):
            out = ctx.out(f"balance-{by}")
            m = run([ctx.binary, "check", "-q", "--config", os.path.join(project, "bugatti.config.toml"),
                     "--shard", f"{k}/{shards}", "--shard-by", by, "--history", history], project, out, ctx.env)
            if m.rc != 0:
                raise BenchError(f"check exited {m.rc}\n{m.tail()}")
            took.append(m.wall)
            with open(out) as f:
                names = [line[3:].split(" ")[0] for line in f if line.startswith("== ")]
            loads.append(sum(durations[n] for n in names))
        if sum(len(x) for x in [loads]) != shards:
            raise BenchError("a shard is missing")
        return max(loads) / (sum(loads) / shards), med(took)

    by_duration, t_duration = ratio("duration")
    by_count, t_count = ratio("count")
    return Row(f"19. balance of {shards} shards of a skewed {tests}-test suite (longest shard / mean)",
               f"{by_duration:.3f} by duration ({ms(t_duration)} per `check`)",
               f"{by_count:.3f} by count ({ms(t_count)} per `check`)", f"{by_duration:.3f}", "≤ 1.15 by duration",
               by_duration <= 1.15)


def shard_wall(ctx):
    """docs/ci.md with real runs: one slow test and six quick ones in two shards, one test at a time
    (`-j 1`): the longest shard's wall time split by recorded duration vs by count."""
    slow, quick = (0.6, 0.1) if ctx.quick else (3.0, 0.5)
    tests = {"slow": step_test("Slow", f"sleep {slow}")}
    tests.update({f"q{i}": step_test(f"Quick {i}", f"sleep {quick}") for i in range(1, 7)})
    project = write_project(ctx, "shard-wall", SHELL_CONFIG, tests)
    history = os.path.join(ctx.tmp, "shard-wall-history.jsonl")
    if os.path.exists(history):
        os.remove(history)
    supervise(ctx, project, ["-j", "1", "--history", history], expected_runs=7, label="shard-history")

    def longest(by):
        walls = []
        for k in (1, 2):
            shutil.rmtree(os.path.join(project, ".bugatti"), ignore_errors=True)
            argv = [ctx.binary, "start", "-q", "-j", "1", "--config", os.path.join(project, "bugatti.config.toml"),
                    "--shard", f"{k}/2", "--shard-by", by, "--history", history + ".copy"]
            shutil.copy(history, history + ".copy")
            m = run(argv, project, ctx.out(f"shard-{by}"), ctx.env)
            if m.rc != 0:
                raise BenchError(f"shard {k}/2 by {by} exited {m.rc}\n{m.tail()}")
            walls.append(m.wall)
        return max(walls), walls

    by_duration, d = longest("duration")
    by_count, c = longest("count")
    return Row(f"20. shards of one {slow:g} s test and six {quick:g} s tests, 2 shards, `-j 1`",
               f"{by_duration:.2f} s longest shard by duration ({d[0]:.2f} / {d[1]:.2f})",
               f"{by_count:.2f} s by count ({c[0]:.2f} / {c[1]:.2f})",
               f"{by_count / by_duration:.2f}× shorter", "longest shard ≈ the slow test", by_duration < by_count)


BROWSER_PAGE = "<!doctype html><title>Shop</title><h1>Shop</h1><p>3 items</p>"

# Step 1 leaves one page open, the app's (the first tab, about:blank, is closed).
OPEN_ONE_PAGE = """import json, os, urllib.request as u
# BUGATTI_CDP_URL is the browser's WebSocket behind the session's token; the same path up to
# /devtools is its http endpoint (/json/list, /json/new, /json/close).
c = os.environ["BUGATTI_CDP_URL"].replace("ws://", "http://", 1).split("/devtools/")[0]
old = [t["id"] for t in json.load(u.urlopen(c + "/json/list")) if t["type"] == "page"]
u.urlopen(u.Request(c + "/json/new?http://127.0.0.1:" + os.environ["WEB_PORT"] + "/", method="PUT")).read()
for i in old:
    u.urlopen(c + "/json/close/" + i).read()
"""

# The browser's processes (they carry the session's id), their RSS summed, in KiB.
BROWSER_RSS = """import os
total = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\\0")
        if b"chrom" in cmd and ("BUGATTI_SESSION_ID=" + os.environ["BUGATTI_SESSION_ID"]).encode() in env:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    except OSError:
        pass
open(os.path.join(os.environ["BUGATTI_PROJECT_ROOT"], "rss.txt"), "w").write(str(total))
"""


def browser(ctx):
    """docs/browser.md: what the session's browser costs, from the runs' own events: start → ready (the
    browser starts first, so its `ready` event's elapsed time), the per-step capture with one
    page open (time between steps with `[browser]` minus without), and the browser's RSS."""
    try:
        import subprocess
        chromium = subprocess.run(["sh", "-c", "command -v chromium || command -v chromium-browser || command -v google-chrome"],
                                  capture_output=True, text=True).stdout.strip()
    except OSError:
        chromium = ""
    name = "21. browser: start → ready, per-step capture (one page), RSS"
    if not chromium:
        return Row.skip(name, "capture < 150 ms per step", "no Chromium installed")
    steps = 5 if ctx.quick else 20
    config = SHELL_CONFIG + """
[ports]
WEB_PORT = "auto"

[commands.web]
kind = "long_lived"
cmd = "python3 -m http.server ${WEB_PORT} --bind 127.0.0.1 --directory site"
readiness_url = "http://127.0.0.1:${WEB_PORT}/"
"""
    def test(open_cmd, rss_cmd):
        return 'name = "Page"\n\n' + f'[[steps]]\ninstruction = "Open: `{open_cmd}`"\n\n' + \
            f'[[steps]]\ninstruction = "RSS: `{rss_cmd}`"\n\n' + \
            "".join(f'[[steps]]\ninstruction = "Step {i}: `true`"\n\n' for i in range(steps))
    scripts = {"site/index.html": BROWSER_PAGE, "open_page.py": OPEN_ONE_PAGE, "rss.py": BROWSER_RSS}
    plain = write_project(ctx, "browser-plain", config, {"page": test("true", "true")})
    with_browser = write_project(ctx, "browser", config + "\n[browser]\n",
                                 {"page": test("python3 $BUGATTI_PROJECT_ROOT/open_page.py",
                                               "python3 $BUGATTI_PROJECT_ROOT/rss.py")})
    for project in (plain, with_browser):
        os.makedirs(os.path.join(project, "site"), exist_ok=True)
        for rel, text in scripts.items():
            with open(os.path.join(project, rel), "w") as f:
                f.write(text)

    def gaps(project):
        run_dir = artifacts.only_run(project)
        finished = [artifacts.parse_timestamp(e["at"]) for e in artifacts.events(run_dir)
                    if e.get("type") == "step_finished"]
        # The steps after the two set-up ones: each a `true` and, with a browser, its capture.
        tail = finished[2:]
        return [b - a for a, b in zip(tail, tail[1:])]

    def ready_ms(project):
        for e in artifacts.events(artifacts.only_run(project)):
            if e.get("type") == "setup_status" and e.get("command") == "browser" and e.get("state") == "ready":
                return e["elapsed_ms"]
        raise BenchError("no `browser ready` event")

    ready, with_gap, without_gap, rss = [], [], [], []
    for _ in range(ctx.runs):
        supervise(ctx, with_browser, label="browser")
        ready.append(ready_ms(with_browser))
        with_gap.append(med(gaps(with_browser)))
        with open(os.path.join(with_browser, "rss.txt")) as f:
            rss.append(int(f.read().strip() or 0))
        supervise(ctx, plain, label="browser-plain")
        without_gap.append(med(gaps(plain)))
    capture = med(with_gap) - med(without_gap)
    return Row(name, f"ready in {med(ready):.0f} ms; {ms(med(with_gap))} per step",
               f"{ms(med(without_gap))} per step without a browser",
               f"capture {ms(capture)} per step; browser RSS {med(rss) / 1024:.0f} MiB",
               "capture < 150 ms per step", capture < 0.150,
               f"{steps} steps, one page open (`{chromium}`)")


# Row 23 lives in a module of its own (it uses Row and _stub_run from here).
from browser_replay import browser_replay  # noqa: E402
from chrome_trace import chrome_trace  # noqa: E402
from replay_night import replay_limit, replay_night  # noqa: E402
from mutations import mutation_corpus  # noqa: E402
from playwright_suite import playwright_suite  # noqa: E402
from night_memory import night_memory  # noqa: E402
from fleet import rate_limited_fleet  # noqa: E402
from watch_latency import watch_latency  # noqa: E402
from cost_ledger import shared_cost_cap  # noqa: E402

ALL = [overhead, demo, readiness, parallel, teardown, log_throughput, idle, memory, step_overhead,
       check_many_env, html_report, console_latency, console_wait_for_log, console_idle,
       console_flood, many_steps, replay, merge_shards, shard_balance, shard_wall,
       browser, replay_learning, browser_replay, chrome_trace, replay_night, replay_limit,
       mutation_corpus, playwright_suite, night_memory, rate_limited_fleet,
       watch_latency, shared_cost_cap]
