#!/usr/bin/env python3
"""A fake `codex` (BUGATTI_CODEX_BIN) for each known failure mode of Codex 0.169, as its
`codex exec --json` output shows it (see docs/providers.md, "When the agent, not the app, fails").

`codex login status` answers as the real CLI does ("Not logged in", exit 1, when logged out).
`codex exec --json … [resume <thread>] <prompt>` answers one turn by FAKE_CODEX_MODE:
    ok                  a passing turn (RESULT OK)
    not_logged_in       logged out: `login status` says so; a turn fails with 401 Unauthorized
    turn_failed         retry notices, then turn.failed (500 after Codex's own retries)
    stall               thread.started and turn.started, then silence
    linger              a passing turn, then it stays 30 s before exiting
    descendant          a passing turn, then it exits leaving a child that holds its stdout
    old_version         `--version` says 0.30.0, from before the thread and turn events of
                        `codex exec --json` (refused before anything starts: cli_version)
`codex --version` answers as the real CLI does (`codex-cli 0.169.0`).
"""
import json
import os
import subprocess
import sys
import time
import uuid

MODE = os.environ.get("FAKE_CODEX_MODE", "ok")
args = sys.argv[1:]

if args == ["--version"]:
    print("codex-cli " + ("0.30.0" if MODE == "old_version" else "0.169.0"))
    sys.exit(0)

if args[:2] == ["login", "status"]:
    if MODE == "not_logged_in":
        print("Not logged in")
        sys.exit(1)
    print("Logged in using an API key - ***")
    sys.exit(0)


def emit(event):
    print(json.dumps(event), flush=True)


thread = args[args.index("resume") + 1] if "resume" in args else str(uuid.uuid4())
emit({"type": "thread.started", "thread_id": thread})
emit({"type": "turn.started"})


def passing():
    emit({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message",
                                             "text": "Done.\nRESULT OK"}})
    emit({"type": "turn.completed", "usage": {"input_tokens": 20, "cached_input_tokens": 0,
                                              "output_tokens": 10}})


if MODE == "ok":
    passing()
elif MODE == "not_logged_in":
    emit({"type": "error", "message": "unexpected status 401 Unauthorized: Missing bearer or "
                                      "basic authentication in header"})
    emit({"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized: "
                                                      "Missing bearer authentication"}})
    sys.exit(1)
elif MODE == "turn_failed":
    for i in range(1, 3):
        emit({"type": "error", "message": f"Reconnecting... {i}/5 (unexpected status 500 "
                                          "Internal Server Error)"})
        time.sleep(0.1)
    emit({"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: "
                                                      "500 Internal Server Error"}})
    sys.exit(1)
elif MODE == "stall":
    while True:
        time.sleep(3600)
elif MODE == "linger":
    passing()
    time.sleep(30)
elif MODE == "descendant":
    # The child inherits stdout: the pipe stays open after this process exits.
    subprocess.Popen(["sleep", "60"])
    passing()
