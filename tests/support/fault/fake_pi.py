#!/usr/bin/env python3
"""A fake `pi` (BUGATTI_PI_BIN) for each known failure mode of pi (0.73 and 1.x), as its
`pi --print --mode json` output shows it (see docs/providers.md, "When the agent, not the app,
fails"). One process per step; it answers the prompt (its last argument) by FAKE_PI_MODE:
    ok                  a passing reply, ended by agent_end (as 0.73 does)
    will_retry_then_ok  pi 1.x: a 529 attempt ended by agent_end{willRetry: true}, its own retry,
                        then a passing reply, agent_end and agent_settled
    settled_no_exit     pi 1.x: a passing reply, agent_end, agent_settled, then it never exits
    exit0_on_error      a 401 error message, agent_end (no retry), exit 0
    old_version         `--version` says 0.60.2, older than the pi the supervisor reads
                        (refused before anything starts: cli_version)
    newer_version       `--version` says 1.7.0, newer than the newest pi tested (a warning)
    old_node            every run dies as pi 1.6.0 dies under Node 20.20.2 (its first import
                        fails), `--version` included: stderr as captured, exit 1
`pi --version` answers as the real CLI does (`1.5.2`).
"""
import json
import os
import sys
import time
import uuid

MODE = os.environ.get("FAKE_PI_MODE", "ok")

if MODE == "old_node":
    sys.stderr.write("""file:///usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js:2
import { createRequire, enableCompileCache } from "node:module";
                        ^^^^^^^^^^^^^^^^^^
SyntaxError: The requested module 'node:module' does not provide an export named 'enableCompileCache'
    at ModuleJob._instantiate (node:internal/modules/esm/module_job:213:21)
    at async ModuleJob.run (node:internal/modules/esm/module_job:320:5)
    at async ModuleLoader.import (node:internal/modules/esm/loader:606:24)
    at async asyncRunEntryPointWithESMLoader (node:internal/modules/run_main:117:5)

Node.js v20.20.2
""")
    sys.exit(1)

if sys.argv[1:] == ["--version"]:
    print({"old_version": "0.60.2", "newer_version": "1.7.0"}.get(MODE, "1.5.2"))
    sys.exit(0)


def emit(event):
    print(json.dumps(event), flush=True)


def message(text=None, error=None):
    m = {"role": "assistant", "content": [], "stopReason": "stop",
         "usage": {"input": 10, "output": 5, "cost": {"total": 0.0001}}}
    if text:
        m["content"].append({"type": "text", "text": text})
    if error:
        m["stopReason"] = "error"
        m["errorMessage"] = error
    emit({"type": "message_end", "message": m})


emit({"type": "session", "id": str(uuid.uuid4())})
emit({"type": "agent_start"})
if MODE == "ok":
    message("Done.\nRESULT OK")
    emit({"type": "agent_end", "messages": []})
elif MODE == "will_retry_then_ok":
    message(error='529 {"type":"error","error":{"type":"overloaded_error"}}')
    emit({"type": "agent_end", "messages": [], "willRetry": True})
    emit({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 100,
          "errorMessage": "529 overloaded_error"})
    time.sleep(0.1)
    emit({"type": "agent_start"})
    message("Done after pi's retry.\nRESULT OK")
    emit({"type": "agent_end", "messages": [], "willRetry": False})
    emit({"type": "agent_settled"})
elif MODE == "settled_no_exit":
    message("Done.\nRESULT OK")
    emit({"type": "agent_end", "messages": [], "willRetry": False})
    emit({"type": "agent_settled"})
    while True:
        time.sleep(3600)
elif MODE == "exit0_on_error":
    message(error='401 {"type":"error","error":{"type":"authentication_error",'
                  '"message":"invalid x-api-key"}}')
    emit({"type": "agent_end", "messages": []})
sys.exit(0)
