#!/usr/bin/env python3
"""A Claude Code that wedges after its `result` (as the real one was reported to): it answers the
first stream-json user message of its life with an init event and a passing result, then reads no
more input (so end-of-file means nothing to it) and ignores SIGINT, forever; SIGTERM ends it, as
it ends the real one. `--resume <id>` keeps the session id. With WEDGED_CLAUDE_EXIT=1 in its
environment it dies instead (exit 1) right after its result: an agent lost between steps."""
import os
import json
import signal
import sys
import time
import uuid

# `claude auth status` (the supervisor's login check before a run) answers as the real one does.
if sys.argv[1:3] == ["auth", "status"]:
    print(json.dumps({"loggedIn": True, "authMethod": "api_key"}))
    sys.exit(0)
signal.signal(signal.SIGINT, signal.SIG_IGN)
args = sys.argv[1:]
session = args[args.index("--resume") + 1] if "--resume" in args else str(uuid.uuid4())
sys.stdin.readline()
print(json.dumps({"type": "system", "subtype": "init", "session_id": session}), flush=True)
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": "Done.\nRESULT OK", "session_id": session, "num_turns": 1,
                  "duration_ms": 1, "total_cost_usd": 0.01}), flush=True)
if os.environ.get("WEDGED_CLAUDE_EXIT") == "1":
    sys.exit(1)
while True:
    time.sleep(3600)
