#!/usr/bin/env python3
"""A stand-in for Claude Code that costs money: it answers each stream-json user message, after
PRICED_CLAUDE_SECS seconds (default 0.3), with an init event and a passing result whose
cumulative `total_cost_usd` grows by PRICED_CLAUDE_COST dollars (default 0.10) per message, as
the real CLI reports its spend. Ends at end of input. For the suite budget's tests: what a test
costs is known exactly, so the overshoot of `[supervisor] max_cost_usd` can be measured."""
import json
import os
import sys
import time
import uuid

args = sys.argv[1:]
session = args[args.index("--resume") + 1] if "--resume" in args else str(uuid.uuid4())
secs = float(os.environ.get("PRICED_CLAUDE_SECS", "0.3"))
cost = float(os.environ.get("PRICED_CLAUDE_COST", "0.10"))
total = 0.0
for line in sys.stdin:
    if not line.strip():
        continue
    time.sleep(secs)
    total += cost
    print(json.dumps({"type": "system", "subtype": "init", "session_id": session}), flush=True)
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                      "result": "Done.\nRESULT OK", "session_id": session, "num_turns": 1,
                      "duration_ms": int(secs * 1000), "total_cost_usd": total}), flush=True)
