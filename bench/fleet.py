"""Row 30: a fleet bound by the model (docs/ci.md, "A rate-limited nightly"). Twelve one-step
tests (six with --quick) through the real Claude Code CLI at `-j 12` (`-j 6`) against the scripted
stub with 0.5 s per model call that refuses (HTTP 429, `retry-after: 1`) a request beyond three
in flight; the baseline is the ideal of three at a time: the same tests at `-j 3` against the
same stub without the limit (it never refuses them). The figure is the ratio of the two walls;
every test must pass (none lost to the limit, none an agent error). Also reported: the requests
the API refused and how long the tests waited for the model (summary.json)."""
import json
import os
import shutil
import subprocess

from cases import CLAUDE_CONFIG, Row, _claude_bin, _model_calls, med, supervise

LIMIT = 3
DELAY_MS = 500


def _project(ctx, tests):
    project = os.path.join(ctx.tmp, "fleet")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CLAUDE_CONFIG)
    for t in range(1, tests + 1):
        with open(os.path.join(project, "tests", f"t{t:02d}.test.toml"), "w") as f:
            f.write(f'name = "Page {t}"\n\n[[steps]]\ninstruction = "Check page {t}."\n')
    return project


def _refused(requests):
    try:
        with open(requests) as f:
            return sum(1 for line in f if json.loads(line).get("limited"))
    except FileNotFoundError:
        return 0


def _summary(project):
    suites = os.path.join(project, ".bugatti", "suites")
    newest = sorted(os.listdir(suites))[-1]
    with open(os.path.join(suites, newest, "summary.json")) as f:
        return json.load(f)


def _run(ctx, project, claude, label, tests, jobs, limit):
    """One `supervisor start -j jobs` through Claude Code and a fresh stub (`limit`: its
    max_in_flight, or None); (measured, refused requests, model calls, summary.json)."""
    stub_py = os.path.join(ctx.root, "tests", "support", "anthropic_stub.py")
    home = os.path.join(ctx.tmp, "fleet-home")
    os.makedirs(home, exist_ok=True)
    side = os.path.join(ctx.tmp, label)
    shutil.rmtree(side, ignore_errors=True)
    os.makedirs(side)
    script = {"main": [{"text": "Checked the page.\nRESULT OK"}] * (tests * 2)}
    if limit is not None:
        script.update(max_in_flight=limit, retry_after=1)
    script_path, requests = os.path.join(side, "script.json"), os.path.join(side, "requests.jsonl")
    with open(script_path, "w") as f:
        json.dump(script, f)
    stub = subprocess.Popen(["python3", stub_py, script_path, requests], stdout=subprocess.PIPE,
                            env=dict(ctx.env, STUB_DELAY_MS=str(DELAY_MS)),
                            start_new_session=True, text=True)
    try:
        port = stub.stdout.readline().strip().removeprefix("PORT ")
        env = dict(ctx.env, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                   ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   CLAUDE_CODE_MAX_RETRIES="1", BUGATTI_CLAUDE_BIN=claude)
        saved, ctx.env = ctx.env, env
        try:
            m = supervise(ctx, project, ["-j", str(jobs), "-q"], expected_runs=tests, label=label)
        finally:
            ctx.env = saved
    finally:
        os.killpg(stub.pid, 9)
        stub.wait()
    return m, _refused(requests), _model_calls(requests), _summary(project)


def rate_limited_fleet(ctx):
    claude = _claude_bin(ctx)
    tests = 6 if ctx.quick else 12
    name = (f"30. a rate-limited fleet: {tests} claude-code tests at `-j {tests}`, the API "
            f"refusing (429) beyond {LIMIT} in flight, {DELAY_MS / 1000:g} s per call")
    goal = f"0 lost or failed; wall ≤ 1.3× the ideal of {LIMIT} at a time"
    if claude is None:
        return Row.skip(name, goal, "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    project = _project(ctx, tests)
    fleet, ideal, refused, waited, waited_tests = [], [], [], [], []
    fleet_cpu, ideal_cpu = [], []
    for _ in range(ctx.runs):
        m, r, _, summary = _run(ctx, project, claude, "fleet-limited", tests, tests, LIMIT)
        totals = summary["totals"]
        if totals["passed"] != tests or any(t.get("agent_fault") for t in summary["tests"]):
            return Row(name, f"{totals['passed']} of {tests} passed", "-", "-", goal, False,
                       f"totals {totals}")
        fleet.append(m.wall)
        fleet_cpu.append(m.cpu)
        refused.append(r)
        waited.append(summary.get("model_wait_ms", 0) / 1000)
        waited_tests.append(summary.get("model_waited_tests", 0))
        m, _, _, _ = _run(ctx, project, claude, "fleet-ideal", tests, LIMIT, None)
        ideal.append(m.wall)
        ideal_cpu.append(m.cpu)
    ratio = med(fleet) / med(ideal)
    # Row notes are not printed: what explains the figure goes in its columns.
    return Row(name, f"{med(fleet):.2f} s at `-j {tests}`, {tests}/{tests} passed; "
                     f"{med(refused):.0f} requests refused (429), waited for the model "
                     f"{med(waited):.1f} s over {med(waited_tests):.0f} tests; CPU "
                     f"{med(fleet_cpu):.1f} s (a CLI starts once the gate lets its test through)",
               f"{med(ideal):.2f} s at `-j {LIMIT}`, no limit (the ideal); CPU "
               f"{med(ideal_cpu):.1f} s", f"{ratio:.2f}×", goal, ratio <= 1.3)
