#!/usr/bin/env python3
"""Captures the stream-json output of a real Claude Code CLI against the scripted Messages API
(anthropic_stub.py), one file per situation the supervisor must read right, into
tests/fixtures/claude-code/<version>/ (docs/providers.md, "Versions").

Usage: capture_claude_streams.py CLAUDE_BIN OUT_DIR

Each situation is a script for the stub, the user messages sent (each after the previous one's
last `result`, or after a pause), and when to stop reading. The temp directory the CLI ran in is
written as <tmp> so that a capture does not change with the machine. Python standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SITUATIONS = {
    # A step whose agent hands the check to a subagent (in the background from 2.1.198): an
    # interim `result` while the task lives, then a later turn and `result` once it reports.
    "background_subagent": {
        "script": {
            "main": [
                {"tool": "Agent", "input": {"description": "check the endpoint",
                                            "prompt": "[helper] Check what GET /api answers.",
                                            "subagent_type": "general-purpose"}},
                {"text": "A helper is checking the endpoint; I will wait for its report.",
                 "skip_if_seen": "answered 500"},
                {"text": "The helper reports the endpoint answered 500.\n"
                         "RESULT ERROR: the endpoint answers 500",
                 "expect_in_request": ["answered 500"]},
                {"text": "The second step's own answer.\nRESULT OK"},
            ],
            "helper": [{"bash": "sleep 2; echo 500"}, {"text": "The endpoint answered {tool_result}."}],
        },
        "messages": ["Check the endpoint.", "Say the second step's answer."],
        "results": 2,
    },
    # The API refusing the key: each retry is an `api_retry` line with `error_status` 401.
    "retry_401": {"script": [{"status": 401}] * 40, "messages": ["Check the page."], "retries": 2},
    "retry_429": {"script": [{"status": 429}, {"status": 429}, {"text": "Checked.\nRESULT OK"}],
                  "messages": ["Check the page."], "results": 1},
    "retry_529": {"script": [{"status": 529}] * 40, "messages": ["Check the page."], "retries": 2},
    # An MCP server entry the CLI rejects (a `url` with no `type`): init's `mcp_server_errors`.
    "rejected_mcp_server": {
        "script": [{"text": "Checked.\nRESULT OK"}],
        "messages": ["Check the page."],
        "results": 1,
        "args": ["--mcp-config", json.dumps({"mcpServers": {"broken": {"url": "http://127.0.0.1:9/mcp"}}})],
    },
    # A `cd` in one user message, a command in the next: where the CLI runs it.
    "cd_across_messages": {
        "script": [{"bash": "cd sub"}, {"text": "In sub.\nRESULT OK"},
                   {"bash": "pwd; rm -f victim.txt"}, {"text": "{tool_result}\nRESULT OK"}],
        "messages": ["Go into sub.", "Remove victim.txt."],
        "results": 2,
        "files": ["victim.txt", "sub/victim.txt"],
    },
}


def capture(claude, name, situation, out_dir):
    tmp = tempfile.mkdtemp(prefix="cc-capture-")
    try:
        work = os.path.join(tmp, "work")
        home = os.path.join(tmp, "home")
        os.makedirs(os.path.join(work, "sub"))
        os.makedirs(home)
        for f in situation.get("files", []):
            open(os.path.join(work, f), "w").write("x\n")
        script = os.path.join(tmp, "script.json")
        json.dump(situation["script"], open(script, "w"))
        stub = subprocess.Popen([sys.executable, os.path.join(HERE, "anthropic_stub.py"), script,
                                 os.path.join(tmp, "requests.jsonl")], stdout=subprocess.PIPE,
                                text=True, start_new_session=True)
        port = stub.stdout.readline().split()[1]
        env = dict(os.environ, HOME=home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}",
                   ANTHROPIC_API_KEY="dummy", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   # As the supervisor runs it (src/providers/claude_code.rs).
                   CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS="1")
        env.pop("CLAUDE_CODE_MAX_RETRIES", None)
        cli = subprocess.Popen([claude, "-p", "--input-format", "stream-json", "--output-format",
                                "stream-json", "--verbose", "--allowedTools", "Bash"]
                               + situation.get("args", []),
                               cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        messages = list(situation["messages"])
        lines = []

        def send():
            if messages:
                line = {"type": "user", "message": {"role": "user", "content": messages.pop(0)}}
                cli.stdin.write(json.dumps(line) + "\n")
                cli.stdin.flush()

        timer = threading.Timer(120, cli.kill)
        timer.start()
        send()
        ends = retries = 0
        states = False
        for line in cli.stdout:
            lines.append(line)
            event = json.loads(line) if line.startswith("{") else {}
            subtype = event.get("subtype")
            states = states or subtype == "session_state_changed"
            # A reply ends at `idle` where the CLI reports its state, else at a result while no
            # subagent lives.
            if states:
                ended = subtype == "session_state_changed" and event.get("state") == "idle"
            else:
                ended = event.get("type") == "result" and not _live(lines)
            if ended:
                ends += 1
                if ends < situation.get("results", 0):
                    send()
            if event.get("type") == "system" and subtype == "api_retry":
                retries += 1
            if ends >= situation.get("results", 10**6) or retries >= situation.get("retries", 10**6):
                break
        timer.cancel()
        # A background task's last lines may follow the last result.
        time.sleep(0.5)
        cli.kill()
        stub.kill()
        cli.wait()
        stub.wait()
        text = "".join(lines).replace(tmp, "<tmp>")
        with open(os.path.join(out_dir, name + ".jsonl"), "w") as f:
            f.write(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _live(lines):
    """A subagent still listed by the last background_tasks_changed."""
    for line in reversed(lines):
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("subtype") == "background_tasks_changed":
            return any(t.get("task_type") != "local_bash" for t in event.get("tasks", []))
    return False


def main():
    claude, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for name, situation in SITUATIONS.items():
        capture(claude, name, situation, out_dir)
        print(name, flush=True)


if __name__ == "__main__":
    main()
