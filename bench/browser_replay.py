"""Row 23: browser steps replay (docs/replay.md, "Browser steps"). A test of a shop page through
the real Claude Code CLI, the real Playwright MCP and the session's Chromium, the model played by
the scripted stub at 1 s per call (0.2 s with --quick): first run by the agent (recorded), second
run with an empty script (replayed through the supervisor's own Playwright MCP client), in
interleaved pairs (each later agent run `--replay record`: the agent again, the recording renewed).
The browser's start counts on both sides; the note says where the replayed run's time went."""
import json
import os
import shutil
import socket

from cases import CLAUDE_CONFIG, Row, _claude_bin, _stub_run, med, pair_ratios

PRODUCTS = ["Apple", "Pear", "Plum", "Cherry", "Peach", "Mango", "Lemon", "Lime", "Fig"]

# Every product has a button of its own name, so each click's element is one role/name path; the
# basket line changes with each click, so every step's snapshot differs from the one before. The
# empty icon keeps Chromium from asking for /favicon.ico (a 404 in the console of every page).
SHOP_PAGE = """<!doctype html>
<html><head><title>Shop</title><link rel="icon" href="data:,"></head>
<body><main>
<h1>Shop</h1>
<ul>
{items}
</ul>
<p id="basket">Basket: 0 items</p>
</main>
<script>
let count = 0;
function add(name) {{
  count += 1;
  document.getElementById("basket").textContent =
    "Basket: " + count + (count === 1 ? " item" : " items") + " (last: " + name + ")";
}}
</script>
</body></html>
"""


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _playwright_mcp(ctx):
    """Playwright MCP as .ci/run installs it, or $BUGATTI_PLAYWRIGHT_MCP_BIN, or on PATH."""
    for path in (os.environ.get("BUGATTI_PLAYWRIGHT_MCP_BIN"),
                 os.path.join(ctx.root, ".ci", "node", "node_modules", ".bin", "playwright-mcp"),
                 shutil.which("playwright-mcp")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(steps, port):
    """The agent's turns: step 1 opens the shop and reads it; each later step adds one product by
    the ref of its button in the last snapshot, then reads the basket."""
    tool = lambda name: f"mcp__browser__browser_{name}"
    script = [{"tool": tool("navigate"), "input": {"url": f"http://127.0.0.1:{port}/"}},
              {"tool": tool("snapshot"), "input": {}},
              {"text": "The shop lists its products.\nRESULT OK", "expect": ["Add Apple"]}]
    for i in range(2, steps + 1):
        product, n = PRODUCTS[i - 2], i - 1
        script += [{"tool": tool("click"),
                    "input": {"target": f"{{ref:Add {product}}}", "element": f"Add {product} button"}},
                   {"tool": tool("snapshot"), "input": {}},
                   {"text": f"The basket holds {n}.\nRESULT OK",
                    "expect": [f"Basket: {n} item"]}]
    return script


def _runs(project):
    """run.json and events of each run the last invocation left, oldest first (run ids sort by
    time)."""
    runs = os.path.join(project, ".bugatti", "runs")
    out = []
    for r in sorted(os.listdir(runs)):
        with open(os.path.join(runs, r, "run.json")) as f:
            run = json.load(f)
        with open(os.path.join(runs, r, "events.jsonl")) as f:
            events = [json.loads(line) for line in f if line.strip()]
        out.append((run, events))
    return out


def _replayed_steps(project):
    """replayed_steps of the runs the last invocation left."""
    return sum(run.get("replayed_steps", 0) for run, _ in _runs(project))


def phases(events):
    """Where one run's time went, from its events (ms since the run began): `setup` (browser and
    harness up, to the first step), `first` (the first step: its replayed actions and the
    capture, to the next step's start), `actions` (the first step's replayed actions alone),
    `rest` (every later step, capture included), `watch` (after the last step's capture, the
    wait for the harness watch to end: replayed passes are held until then, docs/replay.md),
    `teardown` (the last step's end to run_finished)."""
    at = lambda kind, **match: [e for e in events if e.get("type") == kind
                                and all(e.get(k) == v for k, v in match.items())]
    started, finished = at("step_started"), at("step_finished")
    end = at("run_finished")
    if not started or not finished or not end:
        return None
    first_end = at("step_finished", step_id=started[0]["step_id"])
    # A held pass's step_finished is written when the watch ends: a step's work ends with its
    # capture (its evidence) or the next step's start.
    work = [e["elapsed_ms"] for e in events if e.get("type") in ("step_started", "evidence")]
    work_end = max(work) if work else finished[-1]["elapsed_ms"]
    first_until = started[1]["elapsed_ms"] if len(started) > 1 else work_end
    return {
        "setup": started[0]["elapsed_ms"],
        "first": first_until - started[0]["elapsed_ms"],
        "actions": first_end[0].get("duration_ms", 0) if first_end else 0,
        "rest": work_end - first_until,
        "watch": max(finished[-1]["elapsed_ms"] - work_end, 0),
        "teardown": end[-1]["elapsed_ms"] - finished[-1]["elapsed_ms"],
        "run": end[-1]["elapsed_ms"],
    }


def median_phases(all_phases):
    """Each phase's median over runs (ms)."""
    all_phases = [p for p in all_phases if p]
    if not all_phases:
        return None
    return {k: med([p[k] for p in all_phases]) for k in all_phases[0]}


def browser_replay(ctx):
    steps = 3 if ctx.quick else 10
    latency = "0.2" if ctx.quick else "1"
    name = f"23. browser replay: {steps}-step browser test, model latency {latency} s/call"
    goal = "≥ 20× faster, 0 model calls"
    claude, chromium, mcp = _claude_bin(ctx), _chromium(), _playwright_mcp(ctx)
    if claude is None:
        return Row.skip(name, goal, "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    if chromium is None:
        return Row.skip(name, goal, "no Chromium installed")
    if mcp is None:
        return Row.skip(name, goal, "Playwright MCP not installed: .ci/run installs it into .ci/node")
    port = _free_port()
    project = os.path.join(ctx.tmp, "browser-replay")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    os.makedirs(os.path.join(project, "site"))
    with open(os.path.join(project, "site", "index.html"), "w") as f:
        f.write(SHOP_PAGE.format(items="\n".join(
            f'<li>{p} <button onclick="add(\'{p}\')">Add {p}</button></li>' for p in PRODUCTS)))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CLAUDE_CONFIG + f"""
[ports]
WEB_PORT = {port}

[commands.web]
kind = "long_lived"
cmd = "python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site"
readiness_url = "http://127.0.0.1:${{WEB_PORT}}/"

[browser]
""")
    instructions = ["Open the shop at http://127.0.0.1:${WEB_PORT}/ and check it lists Apple."] + [
        f"Add {PRODUCTS[i - 2]} to the basket and check the basket holds {i - 1}."
        for i in range(2, steps + 1)]
    with open(os.path.join(project, "tests", "shop.test.toml"), "w") as f:
        f.write('name = "Shop"\n\n' + "".join(
            f'[[steps]]\ninstruction = "{text}"\n\n' for text in instructions))
    # Playwright MCP found on PATH, as a user who installed it has it (else the supervisor would
    # fetch it with npx, which needs the network).
    env = {"PATH": f"{os.path.dirname(mcp)}:{os.environ.get('PATH', '')}"}
    # Interleaved pairs: the agent takes every step and records it (`--replay record`, the first
    # time as any first run), then the same test replays that recording with an empty script.
    agent, replayed, agent_calls, replay_calls, replayed_steps, spent = [], [], [], [], [], []
    pairs = ctx.runs if ctx.quick else max(ctx.runs, 5)
    for i in range(pairs):
        wall, calls = _stub_run(ctx, project, claude, "browser-replay-first", _script(steps, port),
                                env, args=["-q"] if i == 0 else ["-q", "--replay", "record"])
        agent.append(wall)
        agent_calls.append(calls)
        wall, calls = _stub_run(ctx, project, claude, "browser-replay-second", [], env)
        replayed.append(wall)
        replay_calls.append(calls)
        replayed_steps.append(_replayed_steps(project))
        spent.append(phases(_runs(project)[-1][1]))
    ratio, spread = pair_ratios(agent, replayed)
    ok = ratio >= 20 and max(replay_calls) == 0 and min(replayed_steps) == steps
    p = median_phases(spent)
    where = "" if p is None else (
        f"; the replayed run's {p['run']:.0f} ms (medians): setup {p['setup']:.0f} ms (browser and "
        f"harness up), step 1 {p['first']:.0f} ms ({p['actions']:.0f} ms its actions with the wait "
        f"for Playwright MCP's client, then the capture), steps 2–{steps} "
        f"{p['rest']:.0f} ms, then the end of the harness watch (min(first look, 2 s) from the "
        f"harness's readiness, alongside all of that) {p['watch']:.0f} ms, teardown "
        f"{p['teardown']:.0f} ms; the process's start and the "
        f"suite's end {med(replayed) * 1000 - p['run']:.0f} ms")
    return Row(name, f"{med(replayed):.2f} s replayed ({max(replay_calls)} model calls, "
                     f"{min(replayed_steps)} of {steps} steps replayed)",
               f"{med(agent):.2f} s by the agent ({med(agent_calls):.0f} model calls)",
               f"{ratio:.1f}× {spread}", goal, ok,
               f"{pairs} interleaved pair{'s' if pairs != 1 else ''}, browser start included on both sides (`{chromium}`)"
               + where)
