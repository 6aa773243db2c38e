"""Row 32: one cost cap for a whole CI run (docs/ci.md, "One cost cap for the whole run"). Four
shards of one CI run start at once, each `supervisor start --shard k/4 -j 2 --cost-ledger FILE` on
its own copy of a 40-test project (10 tests a shard), all sharing one ledger file and the CI run's
id, under `[supervisor] max_cost_usd`. The agent is a stand-in for Claude Code that reports an
exact cost per step (tests/support/priced_claude.py, $0.10 and 0.3 s a step), so what was spent is
known to the cent. The bound is the contract's: the cap plus the steps in flight when it was
reached, at most one per running agent (4 shards × `-j 2` = 8). The figure is the largest total of
the runs (the worst night, not the median), and every test that did not start must say why."""
import json
import os
import shutil
import subprocess
import time

from cases import Row
from proc import BenchError

SHARDS = 4
JOBS = 2
TESTS = 40
PER_STEP = 0.10
CAP = 1.00


def _project(ctx, k):
    project = os.path.join(ctx.tmp, f"ledger-shard-{k}")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    # The stand-in is no MCP client, so it is given no console.
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write('[provider]\nname = "claude-code"\nconsole = false\n\n'
                f"[supervisor]\nmax_cost_usd = {CAP}\n")
    for t in range(TESTS):
        with open(os.path.join(project, "tests", f"t{t:02d}.test.toml"), "w") as f:
            f.write(f'name = "Page {t}"\n\n[[steps]]\ninstruction = "Check page {t}."\n')
    return project


def _summary(project):
    suites = os.path.join(project, ".bugatti", "suites")
    newest = sorted(os.listdir(suites))[-1]
    with open(os.path.join(suites, newest, "summary.json")) as f:
        return json.load(f)


def _ci_run(ctx, projects, ledger, run_id):
    """The four shards at once; (total spent, tests run, tests not run with the cap's reason,
    tests not run at all, wall seconds)."""
    fake = os.path.abspath(os.path.join(ctx.root, "tests", "support", "priced_claude.py"))
    env = dict(ctx.env, BUGATTI_CLAUDE_BIN=fake, PRICED_CLAUDE_COST=str(PER_STEP),
               BUGATTI_CI_RUN_ID=run_id)
    started = time.monotonic()
    shards = []
    for k, project in enumerate(projects, start=1):
        shutil.rmtree(os.path.join(project, ".bugatti"), ignore_errors=True)
        path = ctx.out(f"ledger-shard-{k}")
        out = open(path, "w")
        argv = [ctx.binary, "start", "-q", "-j", str(JOBS), "--shard", f"{k}/{SHARDS}",
                "--cost-ledger", ledger]
        shards.append((subprocess.Popen(argv, cwd=project, env=env, stdout=out,
                                        stderr=subprocess.STDOUT), out, path))
    codes, paths = [], []
    for child, out, path in shards:
        codes.append(child.wait())
        out.close()
        paths.append(path)
    wall = time.monotonic() - started
    for k, (code, path) in enumerate(zip(codes, paths), start=1):
        if code not in (0, 1):
            with open(path, errors="replace") as f:
                tail = "".join(f.readlines()[-20:])
            raise BenchError(f"shard {k}/{SHARDS} exited {code}; its output ends:\n{tail}")
    spent, ran, capped, unrun = 0.0, 0, 0, 0
    for project in projects:
        summary = _summary(project)
        spent += summary.get("cost_usd") or 0.0
        ran += len(summary["tests"])
        not_run = len(summary.get("not_run", []))
        unrun += not_run
        if not_run and "cost cap reached" in (summary.get("not_run_reason") or ""):
            capped += not_run
    return spent, ran, capped, unrun, wall


def _steps(dollars):
    n = round(dollars / PER_STEP)
    return f"{n} step" + ("" if n == 1 else "s")


def shared_cost_cap(ctx):
    name = (f"32. one cost cap for a CI run: {SHARDS} shards × `-j {JOBS}` sharing `--cost-ledger`, "
            f"{TESTS} tests at ${PER_STEP:.2f} a step, cap ${CAP:.2f}")
    in_flight = SHARDS * JOBS
    bound = CAP + in_flight * PER_STEP
    goal = f"total ≤ cap + the steps in flight (≤ {in_flight}, one per running agent): ≤ ${bound:.2f}"
    projects = [_project(ctx, k) for k in range(1, SHARDS + 1)]
    ledger = os.path.join(ctx.tmp, "cost-ledger.jsonl")
    if os.path.exists(ledger):
        os.remove(ledger)
    totals, runs, walls = [], [], []
    for n in range(ctx.runs):
        spent, ran, capped, unrun, wall = _ci_run(ctx, projects, ledger, f"bench-night-{n}")
        if unrun != capped:
            return Row(name, f"{unrun} tests not run, {capped} of them for the cost cap", "-", "-",
                       goal, False, "a test that did not start must say the cap stopped it")
        totals.append(spent)
        runs.append(ran)
        walls.append(wall)
    worst = max(totals)
    over = max(0.0, worst - CAP)
    return Row(name,
               f"spent ${worst:.2f} at most over {ctx.runs} runs (${min(totals):.2f}–${worst:.2f}); "
               f"{min(runs)}–{max(runs)} of {TESTS} tests ran, the rest not run (\"cost cap reached\"); {_steps(over)} past the cap",
               f"cap ${CAP:.2f} + {in_flight} steps in flight × ${PER_STEP:.2f} = ${bound:.2f}",
               f"${worst:.2f} of ${bound:.2f}", goal, worst <= bound + 1e-9)
