#!/usr/bin/env python3
"""A fake `claude` executable (BUGATTI_CLAUDE_BIN) that speaks broken stream-json, for the fault tests.

It accepts Claude Code's print-mode arguments and reads one user message per line on stdin. For
each message it writes lines that are not JSON, truncated JSON and invalid UTF-8, then, by
FAKE_CLAUDE_MODE:
    recover    a valid assistant text and `result` event ending in `RESULT OK`
    truncate   a last, truncated JSON line with no newline, then exits 0 (the stream just ends)
    deaf       never reads its input at all (a wedged CLI): sleeps
"""
import json
import os
import sys

# `claude auth status` (the supervisor's login check before a run) answers as the real one does.
if sys.argv[1:3] == ["auth", "status"]:
    print(json.dumps({"loggedIn": True, "authMethod": "api_key"}))
    sys.exit(0)
MODE = os.environ.get("FAKE_CLAUDE_MODE", "recover")
if MODE == "deaf":
    import time
    time.sleep(600)
    sys.exit(0)
out = sys.stdout.buffer


def garbage():
    out.write(b"this is not json\n")
    out.write(b'{"type":"assistant","message":{"content":[{"type":"text","text":"RESULT ERR\n')
    out.write(b"\xff\xfe\x80 invalid utf-8 \xc3\x28\n")
    out.write(b'{"type":"result","subtype":"success","result":"RESULT ERROR: no"\n')
    out.write(b"[1, 2\n")
    out.write(b"\n")
    out.flush()


for line in sys.stdin:
    if not line.strip():
        continue
    garbage()
    if MODE == "truncate":
        out.write(b'{"type":"result","subtype":"succ')
        out.flush()
        sys.exit(0)
    text = "checked through the garbage\nRESULT OK"
    event = {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    out.write((json.dumps(event) + "\n").encode())
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text,
        "session_id": "fake-session",
        "num_turns": 1,
        "duration_ms": 1,
        "total_cost_usd": 0.0,
    }
    out.write((json.dumps(result) + "\n").encode())
    out.flush()
