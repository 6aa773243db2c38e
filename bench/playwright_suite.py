"""Row 28: a replayed browser suite against Playwright Test running the same actions. One shop
test (open the page, read its title, add Apple, read the basket, reload) is recorded once through
the real Claude Code CLI, Playwright MCP and the session's Chromium (the model played by the
scripted stub), then copied to 20 tests and run with `--replay only -j 4`; beside it, the same 20
tests written once as Playwright Test specs (bench/playwright/shop.spec.js, each action followed
by an ARIA snapshot as Playwright MCP takes one) run by `playwright test` at 4 workers with the
same Chromium. One web server serves both. Full runs only: --quick leaves it out."""
import os
import shutil
import subprocess
import sys

from browser_replay import (SHOP_PAGE, PRODUCTS, _chromium, _free_port, _playwright_mcp, _runs,
                            median_phases, phases)
from cases import CLAUDE_CONFIG, Row, _claude_bin, _stub_run, baseline, med, pair_ratios, supervise
from proc import BenchError

TESTS = 20
WORKERS = 4


def _playwright_test(ctx):
    """@playwright/test's CLI as .ci/run installs it into .ci/playwright, or None."""
    cli = os.path.join(ctx.root, ".ci", "playwright", "node_modules", "@playwright", "test", "cli.js")
    return cli if os.path.exists(cli) and shutil.which("node") else None


def _script(url):
    """The agent's calls: open the shop and read it (its title), add Apple by its button's ref,
    read the basket, reload. Playwright MCP answers a navigation with its snapshot in a file, so
    the page is read with `browser_snapshot` before a ref is taken from it."""
    tool = lambda name: f"mcp__browser__browser_{name}"
    return [{"tool": tool("navigate"), "input": {"url": url}},
            {"tool": tool("snapshot"), "input": {}},
            {"tool": tool("click"), "input": {"target": "{ref:Add Apple}", "element": "Add Apple button"}},
            {"tool": tool("snapshot"), "input": {}},
            {"tool": tool("navigate"), "input": {"url": url}},
            {"text": "The shop is titled Shop, Apple went into the basket, and a reload emptied it.\n"
                     "RESULT OK"}]


def _test_text(url):
    return ('name = "Shop"\n\n[[steps]]\ninstruction = "Open the shop at ' + url +
            ', check its title, add Apple and check the basket holds 1, then reload it."\n')


def _server(ctx, site):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", site], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ctx.env, start_new_session=True)
    import socket
    import time
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/"
        time.sleep(0.05)
    os.killpg(proc.pid, 9)
    proc.wait()
    raise BenchError("the shop's web server did not come up")


def playwright_suite(ctx):
    name = f"28. browser suite: {TESTS} replayed browser tests, `-j {WORKERS}`, vs Playwright Test"
    goal = "≤ 1.0× Playwright Test"
    if ctx.quick:
        return Row.skip(name, goal, "full runs only")
    claude, chromium, mcp, pw = _claude_bin(ctx), _chromium(), _playwright_mcp(ctx), _playwright_test(ctx)
    if claude is None:
        return Row.skip(name, goal, "Claude Code CLI not installed: .ci/run installs it into .ci/node")
    if chromium is None:
        return Row.skip(name, goal, "no Chromium installed")
    if mcp is None:
        return Row.skip(name, goal, "Playwright MCP not installed: .ci/run installs it into .ci/node")
    if pw is None:
        return Row.skip(name, goal, "@playwright/test or node not installed: .ci/run installs it into .ci/playwright")
    project = os.path.join(ctx.tmp, "browser-suite")
    shutil.rmtree(project, ignore_errors=True)
    site = os.path.join(project, "site")
    os.makedirs(os.path.join(project, "tests"))
    os.makedirs(site)
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write(SHOP_PAGE.format(items="\n".join(
            f'<li>{p} <button onclick="add(\'{p}\')">Add {p}</button></li>' for p in PRODUCTS)))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(CLAUDE_CONFIG + "\n[browser]\n")
    specs = os.path.join(ctx.tmp, "browser-suite-specs")
    shutil.rmtree(specs, ignore_errors=True)
    shutil.copytree(os.path.join(ctx.root, "bench", "playwright"), specs)
    os.symlink(os.path.join(ctx.root, ".ci", "playwright", "node_modules"),
               os.path.join(specs, "node_modules"))
    server, url = _server(ctx, site)
    try:
        with open(os.path.join(project, "tests", "t0001.test.toml"), "w") as f:
            f.write(_test_text(url))
        env = {"PATH": f"{os.path.dirname(mcp)}:{os.environ.get('PATH', '')}"}
        _stub_run(ctx, project, claude, "browser-suite-record", _script(url), env, delay_ms=0)
        recording = os.path.join(project, "bugatti.replay", "tests", "t0001.replay.json")
        if not os.path.exists(recording):
            raise BenchError(f"{name}: the agent's run left no recording at {recording}")
        text = open(recording).read()
        for t in range(2, TESTS + 1):
            test = f"t{t:04d}"
            with open(os.path.join(project, "tests", f"{test}.test.toml"), "w") as f:
                f.write(_test_text(url))
            with open(os.path.join(project, "bugatti.replay", "tests", f"{test}.replay.json"), "w") as f:
                f.write(text.replace("t0001", test))
        pw_env = dict(ctx.env, BENCH_SHOP_URL=url, BENCH_TESTS=str(TESTS), BENCH_CHROMIUM=chromium,
                      BENCH_PW_OUT=os.path.join(ctx.tmp, "browser-suite-pw-out"))
        pw_argv = ["node", pw, "test", "--config", os.path.join(specs, "playwright.config.js")]
        sup, base = [], []
        replay_env = dict(ctx.env, **env)
        for _ in range(max(ctx.runs, 5)):
            saved, ctx.env = ctx.env, replay_env
            try:
                sup.append(supervise(ctx, project, ["-q", "-j", str(WORKERS), "--replay", "only"],
                                     expected_runs=TESTS, label="browser-suite").wall)
            finally:
                ctx.env = saved
            saved, ctx.env = ctx.env, pw_env
            try:
                base.append(baseline(ctx, pw_argv, specs, "browser-suite-playwright").wall)
            finally:
                ctx.env = saved
    finally:
        os.killpg(server.pid, 9)
        server.wait()
    ratio, spread = pair_ratios(sup, base)
    p = median_phases([phases(events) for _, events in _runs(project)])
    where = "" if p is None else (
        f"; a replayed test of the last pair (medians of its {TESTS}): {p['run']:.0f} ms, of which "
        f"setup {p['setup']:.0f} ms (the browser and Playwright MCP's client up), the step "
        f"{p['first']:.0f} ms ({p['actions']:.0f} ms its actions with the wait for the client, the "
        f"rest the capture), teardown "
        f"{p['teardown']:.0f} ms")
    return Row(name, f"{med(sup):.2f} s (`--replay only -j {WORKERS}`, 0 model calls)",
               f"{med(base):.2f} s (`playwright test`, {WORKERS} workers, same actions)",
               f"{ratio:.2f}× {spread}", goal, ratio <= 1.0,
               f"{len(sup)} interleaved pairs, `{chromium}` on both sides" + where)
