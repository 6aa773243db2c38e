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
one, so a replayed pass of a mutated step is a false pass (goal: 0)."""
import json
import os
import random
import shutil

import artifacts
from cases import Row
from proc import BenchError, run

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
    agent = os.path.join(ctx.root, "tests", "support", "directive_agent.py")
    project = os.path.join(ctx.tmp, "mutations")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "tests"))
    with open(os.path.join(project, "bugatti.config.toml"), "w") as f:
        f.write(f"""[provider]
name = "command"
cmd = "python3 {agent}"
step_timeout_secs = 60

[supervisor]
tests = ["tests/*.test.toml"]
keep_workspace = "never"
""")
    for c in chosen:
        with open(os.path.join(project, "tests", f"{c.name}.test.toml"), "w") as f:
            f.write(c.test_text())
    return project


def suite(ctx, project, label):
    """One `supervisor start` of every test; each test's first step from its run.json."""
    shutil.rmtree(os.path.join(project, ".bugatti", "runs"), ignore_errors=True)
    argv = [ctx.binary, "start", "-q", "-j", "8", "--config", os.path.join(project, "bugatti.config.toml")]
    m = run(argv, project, ctx.out(label), ctx.env)
    if m.rc not in (0, 1):
        raise BenchError(f"{' '.join(argv)} exited {m.rc}; its output ends:\n{m.tail()}")
    steps = {}
    for d in artifacts.run_dirs(project):
        record = artifacts.run_json(d)
        name = os.path.basename(record["test_file"]).removesuffix(".test.toml")
        steps[name] = record["steps"][0]
    return steps


def corpus(ctx):
    """Learning on healthy variants, then every mutation; the row's figures."""
    rng = random.Random(20261127)
    chosen = checks()
    per_check = 2 if ctx.quick else 5
    if ctx.quick:
        chosen = chosen[:6]
    project = project_for(ctx, chosen)
    learned_agent_steps, replayed, unmutated = 0, 0, 0
    for phase in range(5):
        for c in chosen:
            write_files(project, c, c.healthy(rng, phase))
        steps = suite(ctx, project, f"mutations-healthy-{phase}")
        for c in chosen:
            s = steps.get(c.name)
            if s is None or s.get("status") != "ok":
                raise BenchError(f"mutation corpus: the healthy {c.name} app did not pass (phase {phase}): {s}")
            if phase >= 1:
                learned_agent_steps += s.get("mode") == "agent"
            if phase >= 2:
                unmutated += 1
                replayed += s.get("mode") == "replayed"
    false_passes, caught, invalid, by_fact = [], 0, [], 0
    for k in range(per_check):
        for c in chosen:
            write_files(project, c, c.mutations[k][1])
        steps = suite(ctx, project, f"mutations-{k}")
        for c in chosen:
            s = steps.get(c.name) or {}
            label = f"{c.name}: {c.mutations[k][0]}"
            if s.get("mode") == "replayed" and s.get("status") in ("ok", "warn"):
                false_passes.append(label)
            elif s.get("status") in ("ok", "warn"):
                invalid.append(label)  # the agent passed it: not a regression it would catch
            else:
                caught += 1
                by_fact += "no longer holds" in (s.get("replay_note") or "")
    return {
        "mutations": per_check * len(chosen),
        "false_passes": false_passes,
        "caught": caught,
        "caught_by_a_fact": by_fact,
        "invalid": invalid,
        "replayed_share": replayed / unmutated if unmutated else 0.0,
        "learning_calls_per_step": learned_agent_steps / len(chosen),
    }


def mutation_corpus(ctx):
    """The row: replayed passes of mutated steps (goal 0), the share of healthy steps replayed
    after learning (goal >= 95 %), and the agent's steps spent learning per check (goal <= 1)."""
    r = corpus(ctx)
    checks_run = r["mutations"] // (2 if ctx.quick else 5)
    name = (f"27. mutation corpus: {r['mutations']} mutations of {checks_run} apps, "
            "each a regression the agent fails")
    ok = (not r["false_passes"] and not r["invalid"] and r["replayed_share"] >= 0.95
          and r["learning_calls_per_step"] <= 1.0)
    note = f"{r['caught_by_a_fact']} of {r['caught']} caught by a stated fact, the rest by the comparison"
    if r["false_passes"]:
        note += "; false passes: " + "; ".join(r["false_passes"])
    if r["invalid"]:
        note += "; mutations the agent passed (corpus defects): " + "; ".join(r["invalid"])
    return Row(name,
               f"{len(r['false_passes'])} replayed passes of mutated steps",
               f"healthy steps replayed after learning {r['replayed_share']:.0%}",
               f"agent steps to learn: {r['learning_calls_per_step']:.2f} per check",
               "0 false passes, >= 95 % replayed, <= 1 agent step per check", ok, note)
