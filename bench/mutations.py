"""The mutation corpus (docs/replay.md, "The facts a pass rests on"): small apps, each checked by a
one-step test whose agent judges as a model would. The scripted `command` agent
(tests/support/directive_agent.py) runs the app through the console, judges its outputs with the
checks written in the step (a latency under a second, an owner that is the user just created, a
snapshot under three hours old…) and, asked which facts its pass rested on, states them.

Learning: run 1 records every check; run 2 gives every value another healthy value (the changed
tokens soft-drift to the agent once and are learned); runs 3-5 give yet other healthy values and
should replay. Then each mutation breaks one app the way a real regression would (a value out of
its range, a broken tie or relation, a stale time, a hidden or non-UTF-8 file, a worker that
dies after it was ready, a changed value inside every kind of token); the agent would fail every
one, so a replayed pass of a mutated step is a false pass (goal: 0).

Two more apps are checked through the real Claude Code CLI (.ci/node) and the scripted Messages
stub (tests/support/anthropic_stub.py), because their checks go through tools the `command`
agent does not have: a shop page in the session's Chromium, looked at with Playwright MCP's
tools (a `[browser]` step), and a settings folder looked at with Claude Code's own `Read`,
`Grep` and `Glob`. Their agent judges with `expect` / `expect_absent` on what each tool
answered, as a model shown those answers would."""
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import time

import artifacts
from browser_replay import _chromium, _free_port, _playwright_mcp
from cases import CLAUDE_CONFIG, Row, _claude_bin, directive_config, write_project
from proc import BenchError, run
from weakened import weakened

UUID_TAIL = "-3d4e-4f50-8a61-7b8c9d0e1f23"


def uuid(n):
    return f"{n:08x}{UUID_TAIL}"


def stamp(offset):
    """A shell expression printing now + `offset` (a `date -d` offset) in UTC, to the second."""
    return f"$(date -u -d '{offset}' +%Y-%m-%dT%H:%M:%SZ)"


class Check:
    """One app and its one-step test: `calls` are the console commands the agent runs, `judge`
    and `facts` the directive lines of its judgement, `healthy(rng)` the app's files for a working
    variant, `mutations` (label, files) pairs that break it."""

    def __init__(self, name, sentence, calls, judge, facts, healthy, mutations):
        self.name, self.sentence, self.calls = name, sentence, calls
        self.judge, self.facts = judge, facts
        self.healthy, self.mutations = healthy, mutations

    def test_text(self):
        lines = [self.sentence]
        for cmd in self.calls:
            call = json.dumps({"cmd": cmd, "yield_time_ms": 10000})
            lines.append(f"mcp exec_command {call}")
        lines += self.judge + [f"fact {f}" for f in self.facts]
        body = "\n".join(lines)
        return f"name = \"{self.name}\"\n\n[[steps]]\ninstruction = '''\n{body}\n'''\n"


def app(script):
    return {"app.sh": script}


def pick(r, phase, lo, hi):
    """A healthy value in [lo, hi]: the two ends first (what learning sees), then any between."""
    return lo if phase == 0 else hi if phase == 1 else r.randint(lo, hi)


def checks():
    root = "${BUGATTI_PROJECT_ROOT}/apps"
    sh = lambda name, file="app.sh": f"sh {root}/{name}/{file}"
    return [
        Check("latency", "Check the health endpoint answers 200 within a second.",
              [sh("latency")],
              ["expect status 200", "below latency\\s(\\d+)ms 1000"],
              ['1 contains "status 200"', "1 /latency (\\d+)ms/ number in [0, 999]"],
              lambda r, p: app(f"echo 'GET /health status 200 latency {pick(r, p, 12, 80)}ms'"),
              [("4.5 s latency", app("echo 'GET /health status 200 latency 4500ms'")),
               ("1.05 s latency, inside the learned 2x range", app("echo 'GET /health status 200 latency 1050ms'")),
               ("status 500", app("echo 'GET /health status 500 latency 20ms'")),
               ("status 503", app("echo 'GET /health status 503 latency 31ms'")),
               ("latency 99999ms", app("echo 'GET /health status 200 latency 99999ms'"))]),
        Check("owner", "Create a user, then check the new order's owner is that user.",
              [sh("owner", "user.sh"), sh("owner", "order.sh")],
              ["same user=(\\S+) owner=(\\S+)"],
              ["2 /owner=(\\S+)/ same as 1 /user=(\\S+)/"],
              lambda r, p: (lambda u: {"user.sh": f"echo 'created user={u}'",
                                    "order.sh": f"echo 'order 7 owner={u}'"})(uuid(r.randint(1, 1 << 30))),
              [(f"a foreign owner {i}", {"user.sh": f"echo 'created user={uuid(100 + i)}'",
                                         "order.sh": f"echo 'order 7 owner={uuid(200 + i)}'"})
               for i in range(3)]
              + [("an owner one digit off", {"user.sh": f"echo 'created user={uuid(300)}'",
                                              "order.sh": f"echo 'order 7 owner={uuid(301)}'"}),
                 ("the nil owner", {"user.sh": f"echo 'created user={uuid(400)}'",
                                    "order.sh": f"echo 'order 7 owner={uuid(0)}'"})]),
        Check("checksum", "Copy the file and check the copy's checksum is the source's.",
              [sh("checksum")],
              ["same source\\s(\\S+) copy\\s(\\S+)"],
              ["1 /copy (\\S+)/ same as 1 /source (\\S+)/"],
              lambda r, p: (lambda c: app(f"echo 'source {c}'; echo 'copy {c}'"))(f"0x{r.getrandbits(32):08x}"),
              [("a corrupt copy", app("echo 'source 0xaaaa0001'; echo 'copy 0xaaaa0002'")),
               ("a truncated copy", app("echo 'source 0xbbbb0001'; echo 'copy 0x00000000'")),
               ("the source changed", app("echo 'source 0xcccc0009'; echo 'copy 0xcccc0001'")),
               ("swapped halves", app("echo 'source 0xdddd0001'; echo 'copy 0x0001dddd'")),
               ("the copy of another file", app("echo 'source 0xeeee0001'; echo 'copy 0xffff0001'"))]),
        Check("snapshot", "Check the last snapshot is under 3 hours old.",
              [sh("snapshot")],
              ["age_under snapshot\\s(\\S+) 10800"],
              ["1 /snapshot (\\S+)/ age under 3h"],
              lambda r, p: app(f"echo \"snapshot {stamp(f'-{pick(r, p, 5, 150)} minutes')}\""),
              [("six hours old", app(f"echo \"snapshot {stamp('-6 hours')}\"")),
               ("three and a half hours old", app(f"echo \"snapshot {stamp('-210 minutes')}\"")),
               ("from 1999", app("echo 'snapshot 1999-03-01T10:00:00Z'")),
               ("a day old", app(f"echo \"snapshot {stamp('-1 day')}\"")),
               ("tomorrow's", app(f"echo \"snapshot {stamp('+1 day')}\""))]),
        Check("token", "Issue a token and check it expires after it is issued, and it is issued now.",
              [sh("token")],
              ["later issued\\s(\\S+) expires\\s(\\S+)", "age_under issued\\s(\\S+) 600"],
              ["1 /issued (\\S+)/ time within 10m of now"],
              lambda r, p: app(f"now=$(date -u +%s)\necho \"issued $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                            f"echo \"expires $(date -u -d @$((now + {pick(r, p, 300, 3600)})) +%Y-%m-%dT%H:%M:%SZ)\""),
              [("expires when issued", app("now=$(date -u +%s)\nt=$(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\n"
                                           "echo \"issued $t\"\necho \"expires $t\"")),
               ("expired before issued", app("now=$(date -u +%s)\necho \"issued $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                             "echo \"expires $(date -u -d @$((now - 300)) +%Y-%m-%dT%H:%M:%SZ)\"")),
               ("issued in 1999", app("echo 'issued 1999-01-01T00:00:00Z'\necho 'expires 1999-01-01T01:00:00Z'")),
               ("issued an hour ago", app("now=$(date -u +%s)\necho \"issued $(date -u -d @$((now - 3600)) +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                          "echo \"expires $(date -u -d @$((now + 600)) +%Y-%m-%dT%H:%M:%SZ)\"")),
               ("expires in 1999", app("now=$(date -u +%s)\necho \"issued $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                       "echo 'expires 1999-01-01T00:00:00Z'"))]),
        Check("config", "Read the deployed config and check it runs in production, without debug, on 1 to 16 workers.",
              [f"cat {root}/config/app.conf"],
              ["expect mode=production", "expect debug=false", "below workers=(\\d+) 17"],
              ['1 contains "mode=production\\n"', '1 contains "debug=false"', "1 /workers=(\\d+)/ number in [1, 16]"],
              # A bare integer is not a value replay learns: the healthy config is constant.
              lambda r, p: {"app.conf": "mode=production\ndebug=false\nworkers=4\n"},
              [("staging mode", {"app.conf": "mode=staging\ndebug=false\nworkers=4\n"}),
               ("debug on", {"app.conf": "mode=production\ndebug=true\nworkers=4\n"}),
               ("64 workers", {"app.conf": "mode=production\ndebug=false\nworkers=64\n"}),
               ("17 workers, inside the learned 2x range", {"app.conf": "mode=production\ndebug=false\nworkers=17\n"}),
               ("a shortened mode", {"app.conf": "mode=prod\ndebug=false\nworkers=4\n"})]),
        Check("secrets", "Check no file under data/ holds a private key.",
              [f"cd {root}/secrets && grep -rl 'BEGIN PRIVATE KEY' . || echo none-found"],
              ["expect none-found"],
              ['1 contains "none-found"', "1 absent /\\.\\//"],
              lambda r, p: {"notes.txt": "release notes\n"},
              [("a hidden key file", {"notes.txt": "release notes\n", ".id.pem": "-----BEGIN PRIVATE KEY-----\n"}),
               ("a key in a non-UTF-8 file", {"notes.txt": "release notes\n",
                                              "blob.bin": b"\xff\xfe-----BEGIN PRIVATE KEY-----\n"}),
               ("a key in a subfolder", {"notes.txt": "release notes\n", "sub/key.txt": "-----BEGIN PRIVATE KEY-----\n"}),
               ("a key in the notes", {"notes.txt": "-----BEGIN PRIVATE KEY-----\n"}),
               ("a key in a file named like a comma glob", {"notes.txt": "ok\n", "a,b.cfg": "-----BEGIN PRIVATE KEY-----\n"})]),
        Check("version", "Check the app reports a 2.4 patch release.",
              [sh("version")],
              ["expect version 2.4."],
              ["1 matches /version 2\\.4\\.\\d+\\b/"],
              lambda r, p: app("echo 'version 2.4.3'"),
              [("2.3.9", app("echo 'version 2.3.9'")), ("3.0.0", app("echo 'version 3.0.0'")),
               ("2.40.1", app("echo 'version 2.40.1'")), ("1.4.2", app("echo 'version 1.4.2'")),
               ("2.5.0", app("echo 'version 2.5.0'"))]),
        Check("basket", "Add two items and check the basket says 2 items, total 19.98.",
              [sh("basket")],
              ["expect basket: 2 items, total 19.98"],
              ['1 contains "basket: 2 items, total 19.98"'],
              lambda r, p: app(f"echo 'request {uuid(r.getrandbits(31))}: basket: 2 items, total 19.98'"),
              [("1 item", app("echo 'request 0000abcd: basket: 1 items, total 9.99'")),
               ("3 items", app("echo 'request 0000abcd: basket: 3 items, total 29.97'")),
               ("a wrong total", app("echo 'request 0000abcd: basket: 2 items, total 19.99'")),
               ("an empty basket", app("echo 'request 0000abcd: basket: 0 items, total 0.00'")),
               ("20 items", app("echo 'request 0000abcd: basket: 20 items, total 199.80'"))]),
        Check("backup", "Check the backup is dated 2026-12-31.",
              [sh("backup")],
              ["expect backup 2026-12-31T"],
              ['1 contains "backup 2026-12-31T"'],
              # The date the instruction names is never masked, even inside the timestamp: only
              # the duration varies.
              lambda r, p: app(f"echo 'backup 2026-12-31T09:00:00.04Z done in {pick(r, p, 20, 90)}ms'"),
              [("the day before", app("echo 'backup 2026-12-30T09:00:00.04Z done'")),
               ("a year later", app("echo 'backup 2027-12-31T09:00:00.04Z done'")),
               ("a month earlier", app("echo 'backup 2026-11-30T09:00:00.04Z done'")),
               ("1999", app("echo 'backup 1999-12-31T09:00:00.04Z done'")),
               ("today", app(f"echo \"backup {stamp('now')} done\""))]),
        Check("worker", "Start the worker and check it is still up after it said ready.",
              [f"sh {root}/worker/app.sh > /dev/null 2>&1 & sleep 0.3; cat {root}/worker/state; "
               f"sleep 1; kill -0 $(cat {root}/worker/pid) 2>/dev/null && echo worker-alive || echo worker-dead; "
               f"kill $(cat {root}/worker/pid) 2>/dev/null; true"],
              ["expect worker-alive"],
              ['1 contains "worker-alive"', "1 absent /worker-dead/"],
              lambda r, p: app("echo $$ > $(dirname $0)/pid; echo ready > $(dirname $0)/state; exec sleep 30"),
              [("dies half a second after ready", app("echo $$ > $(dirname $0)/pid; echo ready-1 > $(dirname $0)/state; sleep 0.5; exit 1")),
               ("dies at once", app("echo $$ > $(dirname $0)/pid; echo ready-1 > $(dirname $0)/state; exit 3")),
               ("crashes after ready", app("echo $$ > $(dirname $0)/pid; echo ready-1 > $(dirname $0)/state; sleep 0.2; kill -9 $$")),
               ("never ready, dies", app("echo $$ > $(dirname $0)/pid; echo starting > $(dirname $0)/state; exit 1")),
               ("exits cleanly early", app("echo $$ > $(dirname $0)/pid; echo ready-2 > $(dirname $0)/state; sleep 0.8; exit 0"))]),
        Check("orders", "List the orders and check the newest is listed first and none failed.",
              [sh("orders")],
              ["later second\\s(\\S+) first\\s(\\S+)", "expect failed=0"],
              ["1 absent /failed=[1-9]/", '1 contains "failed=0"'],
              lambda r, p: app(f"now=$(date -u +%s)\necho \"first $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                            f"echo \"second $(date -u -d @$((now - {pick(r, p, 60, 600)})) +%Y-%m-%dT%H:%M:%SZ)\"\necho failed=0"),
              [("the oldest first", app("now=$(date -u +%s)\necho \"first $(date -u -d @$((now - 300)) +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                        "echo \"second $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\necho failed=0")),
               ("one failed", app("now=$(date -u +%s)\necho \"first $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                  "echo \"second $(date -u -d @$((now - 300)) +%Y-%m-%dT%H:%M:%SZ)\"\necho failed=1")),
               ("both at once", app("now=$(date -u +%s)\nt=$(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\n"
                                    "echo \"first $t\"\necho \"second $t\"\necho failed=0")),
               ("twelve failed", app("now=$(date -u +%s)\necho \"first $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\n"
                                     "echo \"second $(date -u -d @$((now - 300)) +%Y-%m-%dT%H:%M:%SZ)\"\necho failed=12")),
               ("the first from 1999", app("now=$(date -u +%s)\necho 'first 1999-01-01T00:00:00Z'\n"
                                           "echo \"second $(date -u -d @$now +%Y-%m-%dT%H:%M:%SZ)\"\necho failed=0"))]),
    ] + checks_held_outside(sh)


def at(offset):
    """A shell expression printing now + `offset` seconds (an integer, or `$x` arithmetic) in UTC."""
    return f"$(date -u -d @$(( $(date -u +%s) + {offset} )) +%Y-%m-%dT%H:%M:%SZ)"


def history(spacing, order=None):
    """A job history of 40 entries, newest first, `spacing` seconds apart; `order` lists which
    entry's time each line shows (a mutation swaps two)."""
    order = order or list(range(40))
    lines = [f"now=$(date -u +%s)"]
    for line, i in enumerate(order):
        lines.append(f"echo \"job {line} finished $(date -u -d @$((now - {i * spacing})) +%Y-%m-%dT%H:%M:%SZ)\"")
    return app("\n".join(lines))


def swapped(a, b):
    order = list(range(40))
    order[a], order[b] = order[b], order[a]
    return order


def shipping(placed, shipped):
    """An order placed `placed` seconds ago and shipped `shipped` seconds ago, by two commands."""
    return {"placed.sh": f"echo \"order 7 placed {at(-placed)}\"",
            "shipped.sh": f"echo \"order 7 shipped {at(-shipped)}\""}


def healthy_shipping(r, phase):
    """Placed 60 to 600 s ago and shipped after it: the two ends first, then any between."""
    if phase < 2:
        return shipping(*[(600, 500), (60, 10)][phase])
    placed = r.randint(60, 600)
    return shipping(placed, r.randint(10, min(500, placed - 10)))


def checks_held_outside(sh):
    """The classes an outside corpus found replayed as passes: an entry that expires now instead
    of in five minutes, a rate-limit reset already past, a session id that must rotate, a long
    history out of order deep down (a worker that dies or logs FATAL after ready is
    tests/run/replay_trust.rs's, a Grep line twice the Claude Code files app's)."""
    return [
        Check("ttl", "Put an entry in the cache and check it expires five minutes after it is written.",
              [sh("ttl")],
              ["ahead expires\\s(\\S+) 285 315"],
              ["1 /expires (\\S+)/ time between +4m30s and +5m30s of now"],
              lambda r, p: app(f"echo \"cached key 7 expires {at(300)}\""),
              [("expires at once", app(f"echo \"cached key 7 expires {at(0)}\"")),
               ("expires in four minutes", app(f"echo \"cached key 7 expires {at(240)}\"")),
               ("expired a minute ago", app(f"echo \"cached key 7 expires {at(-60)}\"")),
               ("expires in ten minutes", app(f"echo \"cached key 7 expires {at(600)}\"")),
               ("expires in an hour", app(f"echo \"cached key 7 expires {at(3600)}\""))]),
        Check("ratelimit", "Hit the rate limit and check the limit resets within the next minute.",
              [sh("ratelimit")],
              ["expect 429", "ahead reset\\s(\\S+) 1 60"],
              ['1 contains "429"', "1 /reset (\\S+)/ time in the future"],
              lambda r, p: app(f"echo \"status 429 reset {at(pick(r, p, 10, 50))}\""),
              [("reset a minute ago", app(f"echo \"status 429 reset {at(-60)}\"")),
               ("reset now", app(f"echo \"status 429 reset {at(-1)}\"")),
               ("reset in an hour", app(f"echo \"status 429 reset {at(3600)}\"")),
               ("reset in 1999", app("echo 'status 429 reset 1999-01-01T00:00:00Z'")),
               ("reset in two minutes", app(f"echo \"status 429 reset {at(120)}\""))]),
        Check("elevate", "Log in, elevate to admin, and check the session id rotated.",
              [sh("elevate", "login.sh"), sh("elevate", "sudo.sh")],
              ["differ login\\ssession=(\\S+) admin\\ssession=(\\S+)"],
              ["2 /session=(\\S+)/ differs from 1 /session=(\\S+)/"],
              lambda r, p: (lambda a, b: {"login.sh": f"echo 'login session={a}'",
                                          "sudo.sh": f"echo 'admin session={b}'"})(
                  uuid(r.getrandbits(30)), uuid((1 << 30) + r.getrandbits(30))),
              [(f"the session kept on elevation {i}",
                {"login.sh": f"echo 'login session={uuid(500 + i)}'",
                 "sudo.sh": f"echo 'admin session={uuid(500 + i)}'"}) for i in range(5)]),
        # Two timestamps of two outputs, each learned over a wide range: only their order to
        # each other tells a shipping recorded before the order was placed.
        Check("shipping", "Place an order, ship it, and check it shipped after it was placed.",
              [sh("shipping", "placed.sh"), sh("shipping", "shipped.sh")],
              ["later placed\\s(\\S+) shipped\\s(\\S+)"],
              ['1 contains "order 7 placed"', '2 contains "order 7 shipped"'],
              healthy_shipping,
              [("shipped 20 s before it was placed", shipping(70, 90)),
               ("shipped 100 s before it was placed", shipping(300, 400)),
               ("shipped a second before it was placed", shipping(61, 62)),
               ("shipped long before it was placed", shipping(100, 450)),
               ("shipped first, both mid-range", shipping(200, 480))]),
        # A fact about the console answer's status lines (its exit code, its wall time) was
        # refused as not holding, so such a step was never recorded.
        Check("wall", "Run the status command and check it exits 0 within a second.",
              [sh("wall")],
              ["expect Process exited with code 0", "within 1"],
              ['1 contains "Process exited with code 0"',
               "1 /Wall time: ([0-9.]+) seconds/ number in [0, 1]"],
              lambda r, p: app(f"sleep 0.0{pick(r, p, 1, 5)}; echo 'status ok'"),
              [("answers in 1.05 s, under the wall-time ceiling", app("sleep 1.05; echo 'status ok'")),
               ("answers in 1.3 s", app("sleep 1.3; echo 'status ok'")),
               ("exits 1", app("echo 'status ok'; exit 1")),
               ("exits 2 after a second", app("sleep 1; echo 'status ok'; exit 2")),
               ("answers in 3 s", app("sleep 3; echo 'status ok'"))]),
        Check("jobs", "List the job history and check it is newest first, all 40 entries.",
              [sh("jobs")],
              ["descending finished\\s(\\S+)", "expect job 39 finished"],
              ['1 contains "job 39 finished"'],
              lambda r, p: history(pick(r, p, 60, 600)),
              [("entries 37 and 38 out of order", history(300, swapped(37, 38))),
               ("the last two out of order", history(300, swapped(38, 39))),
               ("oldest first", history(300, list(range(39, -1, -1)))),
               ("entries 10 and 11 out of order", history(300, swapped(10, 11))),
               ("the oldest entry listed first", history(300, [39] + list(range(39))))]),
    ]


def write_files(project, check, files):
    """The app's files for one variant: its folder emptied and written anew."""
    where = os.path.join(project, "apps", check.name)
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    for rel, content in files.items():
        path = os.path.join(where, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())


def project_for(ctx, chosen):
    return write_project(ctx, "mutations", directive_config(ctx),
                         {c.name: c.test_text() for c in chosen})


def suite(ctx, project, label, env=None):
    """One `supervisor start` of every test; each test's first step from its run.json."""
    shutil.rmtree(os.path.join(project, ".bugatti", "runs"), ignore_errors=True)
    argv = [ctx.binary, "start", "-q", "-j", "8", "--config", os.path.join(project, "bugatti.config.toml")]
    m = run(argv, project, ctx.out(label), env or ctx.env)
    if m.rc not in (0, 1):
        raise BenchError(f"{' '.join(argv)} exited {m.rc}; its output ends:\n{m.tail()}")
    steps = {}
    for d in artifacts.run_dirs(project):
        record = artifacts.run_json(d)
        name = os.path.basename(record["test_file"]).removesuffix(".test.toml")
        steps[name] = record["steps"][0]
    return steps


# Through Claude Code -------------------------------------------------------------------------------
class ClaudeApp:
    """One app checked by a one-step test through Claude Code: its project's `config` text, the
    step's `instruction`, the agent's turns `script(project)` (the stub's replies, the facts
    last), `healthy(rng, phase)` the files of its `folder` for a working variant, `mutations`
    (label, files) pairs that break it."""

    def __init__(self, name, config, instruction, script, folder, healthy, mutations):
        self.name, self.config, self.instruction, self.script = name, config, instruction, script
        self.folder, self.healthy, self.mutations = folder, healthy, mutations


# The empty icon keeps Chromium from asking for /favicon.ico (a failed request, a console error).
SHOP = """<!doctype html>
<html><head><title>Fruit shop</title><link rel="icon" href="data:,"></head>
<body><main>
<h1>Fruit shop</h1>
<p>Rendered in {rendered}ms</p>
<ul>
{items}
</ul>
<p id="basket">Basket: empty</p>
</main>
<script>
function add() {{
{add}
}}
</script>
</body></html>
"""


def shop(rendered=12, basket="Basket: 1 item, total 1.25", before="", apple=True):
    """The shop page: `Add Apple` puts one apple (1.25) in the basket; `before` runs first in the
    click (a console error, a request), `basket` is what the basket then says."""
    items = ['<li>Pear 0.80 <button>Add Pear</button></li>']
    if apple:
        items.insert(0, '<li>Apple 1.25 <button onclick="add()">Add Apple</button></li>')
    add = f"{before}\ndocument.getElementById('basket').textContent = {json.dumps(basket)};"
    return {"index.html": SHOP.format(rendered=rendered, items="\n".join(items), add=add)}


def browser_app(port):
    browser = lambda tool: f"mcp__browser__browser_{tool}"
    config = CLAUDE_CONFIG + f"""
[ports]
WEB_PORT = {port}

[commands.web]
kind = "long_lived"
cmd = "python3 -m http.server ${{WEB_PORT}} --bind 127.0.0.1 --directory site"
readiness_url = "http://127.0.0.1:${{WEB_PORT}}/"

[browser]
"""
    # The agent reads the page from each answer, as a model does: the shop and its Apple button
    # after the navigation, no console error after the click (Playwright MCP lists the click's
    # new console entries with its answer), the basket in the snapshot.
    script = lambda project: [
        {"tool": browser("navigate"), "input": {"url": f"http://127.0.0.1:{port}/"}},
        {"tool": browser("snapshot"), "input": {}},
        {"tool": browser("click"), "input": {"element": "Add Apple button", "target": "{ref:Add Apple}"},
         "expect": ["Fruit shop", "Add Apple"]},
        {"tool": browser("snapshot"), "input": {}, "expect_absent": ["[ERROR]", "Console: 1", "Console: 2"]},
        {"text": "The basket holds one apple, 1.25.\nRESULT OK",
         "expect": ["Basket: 1 item, total 1.25"], "expect_absent": ["[ERROR]"]},
        {"facts": ['4 contains "Basket: 1 item, total 1.25"']},
    ]
    return ClaudeApp(
        "browser", config,
        "Open the shop at http://127.0.0.1:${WEB_PORT}/, add an apple and check the basket holds one apple at 1.25.",
        script, "site",
        lambda r, p: shop(rendered=pick(r, p, 5, 60)),
        # The first is the quick mode's sample.
        [("a console error on the click", shop(before="console.error('basket sync failed');")),
         ("the basket counts two", shop(basket="Basket: 2 items, total 2.50")),
         ("a failed request on the click", shop(before="fetch('api/basket').catch(() => {});")),
         ("no Add Apple button", shop(apple=False)),
         ("a wrong total", shop(basket="Basket: 1 item, total 1.52"))])


def settings(took=35, port=8080, drop=(), extra=None):
    """The settings folder: app.cfg (a header generated now, then the values), db.cfg, a readme."""
    header = f"# generated {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} in {took}ms\n"
    files = {"app.cfg": f"{header}name = shop\nport = {port}\nworkers = 4\n",
             "db.cfg": "host = localhost\nuser = shop\n",
             "README.txt": "The shop's settings: one .cfg file per service.\n"}
    for name in drop:
        files.pop(name)
    files.update(extra or {})
    return files


def files_app():
    config = CLAUDE_CONFIG.replace('["--allowedTools", "Bash"]', '["--allowedTools", "Bash,Read,Grep,Glob"]')
    # The Glob answer must list app.cfg and db.cfg and nothing else (Claude Code lists the
    # paths, one a line).
    only_two = r"(?:\S*conf/(?:app|db)\.cfg\n?){2}"
    script = lambda project: [
        {"tool": "Read", "input": {"file_path": os.path.join(project, "conf", "app.cfg")}},
        {"tool": "Grep", "input": {"pattern": "password", "path": "conf", "output_mode": "files_with_matches"},
         "expect": ["port = 8080"]},
        {"tool": "Glob", "input": {"pattern": "*.cfg", "path": os.path.join(project, "conf")},
         "expect": ["No files found"]},
        {"text": "Port 8080, no password in any file, the two .cfg files.\nRESULT OK",
         "expect": ["conf/app.cfg", "conf/db.cfg"], "expect_re": [only_two]},
        # Facts are read on a Grep's entries, not on its "No files found" sentence.
        {"facts": ['1 contains "port = 8080"', '2 absent /conf/',
                   '3 contains "conf/app.cfg"', '3 contains "conf/db.cfg"']},
    ]
    return ClaudeApp(
        "files", config,
        "Check the settings under conf/: app.cfg sets port 8080, no file under conf/ holds a password, "
        "and the .cfg files are app.cfg and db.cfg only.",
        script, "conf",
        lambda r, p: settings(took=pick(r, p, 20, 90)),
        # The first is the quick mode's sample.
        [("a hidden file with a password", settings(extra={".env": "password = hunter2\n"})),
         ("port 9090 in app.cfg", settings(port=9090)),
         ("a password in a Latin-1 file", settings(extra={"legacy.ini": b"caf\xe9 = 1\npassword = s3cret\n"})),
         ("a new .cfg file", settings(extra={"cache.cfg": "size = 64\n"})),
         ("db.cfg removed", settings(drop=("db.cfg",)))])


def claude_apps(ctx):
    """The apps checked through Claude Code, or why none can run here."""
    claude, chromium, mcp = _claude_bin(ctx), _chromium(), _playwright_mcp(ctx)
    if claude is None:
        return [], None, "the browser and files apps (Claude Code CLI not installed: .ci/run installs it)"
    apps, env, why = [files_app()], {"BUGATTI_CLAUDE_BIN": claude}, None
    if chromium is None or mcp is None:
        why = "the browser app (" + ("no Chromium" if chromium is None else "Playwright MCP not installed") + ")"
    else:
        apps.insert(0, browser_app(_free_port()))
        # Playwright MCP found on PATH, as a user who installed it has it.
        env["PATH"] = f"{os.path.dirname(mcp)}:{os.environ.get('PATH', '')}"
    return apps, env, why


def claude_project(ctx, a):
    project = os.path.join(ctx.tmp, f"mutations-{a.name}")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(a.config)
    with open(os.path.join(project, "tests", f"{a.name}.test.toml"), "w") as f:
        f.write(f'name = "{a.name}"\n\n[[steps]]\ninstruction = "{a.instruction}"\n')
    return project


def write_folder(project, folder, files):
    where = os.path.join(project, folder)
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    for rel, content in files.items():
        with open(os.path.join(where, rel), "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())


def claude_suite(ctx, project, a, label, env):
    """One `supervisor start` of the app's test through Claude Code and a fresh stub holding its
    script (no model latency: the corpus counts verdicts, not seconds); the step's record."""
    side = os.path.join(ctx.tmp, "mutation-stubs", label)
    shutil.rmtree(side, ignore_errors=True)
    os.makedirs(side)
    script_path = os.path.join(side, "script.json")
    with open(script_path, "w") as f:
        json.dump(a.script(project), f)
    stub = subprocess.Popen(
        ["python3", os.path.join(ctx.root, "tests", "support", "anthropic_stub.py"), script_path,
         os.path.join(side, "requests.jsonl")],
        stdout=subprocess.PIPE, env=dict(ctx.env, STUB_DELAY_MS="0"), start_new_session=True, text=True)
    try:
        port = stub.stdout.readline().strip().removeprefix("PORT ")
        home = os.path.join(ctx.tmp, f"mutation-home-{a.name}")
        os.makedirs(home, exist_ok=True)
        run_env = dict(ctx.env, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                       ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                       CLAUDE_CODE_MAX_RETRIES="1", **env)
        return suite(ctx, project, label, run_env).get(a.name) or {}
    finally:
        os.killpg(stub.pid, 9)
        stub.wait()


def claude_app_corpus(ctx, a, env, phases, per_check):
    """One Claude Code app learned, then mutated: its own Tally."""
    tally, rng = Tally(), random.Random(f"20261127-{a.name}")
    project = claude_project(ctx, a)
    for phase in range(phases):
        write_folder(project, a.folder, a.healthy(rng, phase))
        s = claude_suite(ctx, project, a, f"mutations-{a.name}-healthy-{phase}", env)
        if s.get("status") != "ok" and s.get("mode") == "agent":
            # The agent's own browser can miss a page on a loaded machine (a navigation that
            # never landed): once more, so that the row counts replay's verdicts.
            s = claude_suite(ctx, project, a, f"mutations-{a.name}-healthy-{phase}-again", env)
        tally.healthy(a.name, phase, s)
    for k in range(per_check):
        label, files = a.mutations[k]
        write_folder(project, a.folder, files)
        tally.mutated(f"{a.name}: {label}", claude_suite(ctx, project, a, f"mutations-{a.name}-{k}", env))
    return tally


def claude_corpus(ctx, tally):
    """The Claude Code apps, side by side (each its own project, stub, script and HOME: one
    stub's script is one conversation), each learned and mutated; added to `tally` as corpus()
    counts. The apps run, and why any could not."""
    apps, env, why = claude_apps(ctx)
    # A run through Claude Code takes seconds, and with Chromium and Playwright MCP ten: the
    # quick mode (CI) records, learns and replays the files app once and tries one mutation of
    # it (the browser's console-error drift is tests/real's); the full run does every app.
    phases, per_check = (3, 1) if ctx.quick else (5, 5)
    if ctx.quick:
        apps = [a for a in apps if a.name == "files"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(len(apps), 1)) as pool:
        parts = list(pool.map(lambda a: claude_app_corpus(ctx, a, env, phases, per_check), apps))
    for part in parts:
        tally.merge(part)
    return [a.name for a in apps], why


class Tally:
    """The corpus's counts over every app."""

    def __init__(self):
        self.learned_agent_steps, self.replayed, self.unmutated, self.apps = 0, 0, 0, set()
        self.mutations, self.false_passes, self.caught, self.invalid, self.by_fact = 0, [], 0, [], 0

    def merge(self, other):
        self.learned_agent_steps += other.learned_agent_steps
        self.replayed += other.replayed
        self.unmutated += other.unmutated
        self.apps |= other.apps
        self.mutations += other.mutations
        self.false_passes += other.false_passes
        self.caught += other.caught
        self.invalid += other.invalid
        self.by_fact += other.by_fact

    def healthy(self, name, phase, s):
        if s is None or s.get("status") != "ok":
            raise BenchError(f"mutation corpus: the healthy {name} app did not pass (phase {phase}): {s}")
        self.apps.add(name)
        if phase >= 1:
            self.learned_agent_steps += s.get("mode") == "agent"
        if phase >= 2:
            self.unmutated += 1
            self.replayed += s.get("mode") == "replayed"

    def mutated(self, label, s):
        self.mutations += 1
        if s.get("mode") == "replayed" and s.get("status") in ("ok", "warn"):
            self.false_passes.append(label)
        elif s.get("status") in ("ok", "warn"):
            self.invalid.append(label)  # the agent passed it: not a regression it would catch
        else:
            self.caught += 1
            self.by_fact += "no longer holds" in (s.get("replay_note") or "")


def corpus(ctx, only=None):
    """Learning on healthy variants, then every mutation; the row's figures. `only`: "command" or
    "claude" runs just those apps (for trying one group out)."""
    rng = random.Random(20261127)
    chosen = checks()
    per_check = 2 if ctx.quick else 5
    if ctx.quick:
        chosen = chosen[:6]
    tally = Tally()
    if only != "claude":
        project = project_for(ctx, chosen)
        for phase in range(5):
            for c in chosen:
                write_files(project, c, c.healthy(rng, phase))
            steps = suite(ctx, project, f"mutations-healthy-{phase}")
            for c in chosen:
                tally.healthy(c.name, phase, steps.get(c.name))
        for k in range(per_check):
            for c in chosen:
                write_files(project, c, c.mutations[k][1])
            steps = suite(ctx, project, f"mutations-{k}")
            for c in chosen:
                tally.mutated(f"{c.name}: {c.mutations[k][0]}", steps.get(c.name) or {})
    # Weakened re-recordings (bench/weakened.py): a hurried pass kept pending, then what it
    # dropped breaks.
    weakened_pending = 0 if only == "claude" else weakened(ctx, tally)
    claude_run, claude_missing = ([], None) if only == "command" else claude_corpus(ctx, tally)
    return {
        "weakened": weakened_pending,
        "apps": len(tally.apps),
        "through_claude": claude_run,
        "claude_missing": claude_missing,
        "mutations": tally.mutations,
        "false_passes": tally.false_passes,
        "caught": tally.caught,
        "caught_by_a_fact": tally.by_fact,
        "invalid": tally.invalid,
        "replayed_share": tally.replayed / tally.unmutated if tally.unmutated else 0.0,
        "learning_calls_per_step": tally.learned_agent_steps / max(len(tally.apps), 1),
    }


def mutation_corpus(ctx):
    """The row: replayed passes of mutated steps (goal 0), the share of healthy steps replayed
    after learning (goal >= 95 %), and the agent's steps spent learning per check (goal <= 1)."""
    r = corpus(ctx)
    name = (f"27. mutation corpus: {r['mutations']} mutations of {r['apps']} apps, "
            "each a regression the agent fails")
    ok = (not r["false_passes"] and not r["invalid"] and r["replayed_share"] >= 0.95
          and r["learning_calls_per_step"] <= 1.0)
    note = f"{r['caught_by_a_fact']} of {r['caught']} caught by a stated fact, the rest by the comparison"
    if r["weakened"]:
        note += f"; {r['weakened']} weakened re-recordings kept pending, none replayed once what they dropped broke"
    if r["through_claude"]:
        note += f"; through Claude Code: {', '.join(r['through_claude'])}"
    if r["claude_missing"]:
        note += f"; not run here: {r['claude_missing']}"
    if r["false_passes"]:
        note += "; false passes: " + "; ".join(r["false_passes"])
    if r["invalid"]:
        note += "; mutations the agent passed (corpus defects): " + "; ".join(r["invalid"])
    return Row(name,
               f"{len(r['false_passes'])} replayed passes of mutated steps",
               f"healthy steps replayed after learning {r['replayed_share']:.0%}",
               f"agent steps to learn: {r['learning_calls_per_step']:.2f} per check",
               "0 false passes, >= 95 % replayed, <= 1 agent step per check", ok, note)
