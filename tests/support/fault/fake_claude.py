#!/usr/bin/env python3
"""A fake `claude` (BUGATTI_CLAUDE_BIN) for each known failure mode of Claude Code 2.1, as its
stream-json output shows it (see docs/providers.md, "When the agent, not the app, fails").

`claude auth status` answers as the real CLI does (JSON, exit 1 when logged out). Otherwise it
reads one stream-json user message per line and answers each by FAKE_CLAUDE_MODE:
    ok                  a passing result (RESULT OK)
    not_logged_in       logged out: `auth status` says so; a turn gets the CLI's own
                        "Not logged in · Please run /login" result (is_error under success)
    revoked             `auth status` says logged in; every turn: 401 after an api_retry notice
    http_401            every turn: is_error result with api_error_status 401
    credit              every turn: is_error result "Credit balance is too low" (HTTP 400)
    rate_429_then_ok    the first turn fails with 429 (after an api_retry notice), later ones pass
    overloaded_529      every turn: api_retry notices then is_error 529 (until the deadline)
    api_error_success   every turn: API Error 500 reported as subtype success, is_error true,
                        terminal_reason api_error
    stop_mid_turn       an init and half an assistant message, then silence (never a result)
    linger              a passing result, then it reads no more and ignores SIGINT (a process
                        that lingers after `result`)
    crash               dies mid-turn (exit 139) with a stack trace on stderr
    prose_401           a passing turn whose text (the model's prose) talks of 401 and /login:
                        never an agent fault
    sonnet              as ok, its init naming the model claude-sonnet-4-5-20250929 (a model
                        with a built-in price)
    old_version         `--version` says 0.2.9, older than the stream-json print mode the
                        supervisor reads (refused before anything starts: cli_version)
`--version` answers as the real CLI does (`2.1.197 (Claude Code)`).
Every request it answers is counted in FAKE_CLAUDE_COUNT (a file), when set: how many turns the
suite asked of the agent.
"""
import json
import os
import signal
import sys
import time
import uuid

MODE = os.environ.get("FAKE_CLAUDE_MODE", "ok")
args = sys.argv[1:]

if args == ["--version"]:
    print("0.2.9 (Claude Code)" if MODE == "old_version" else "2.1.197 (Claude Code)")
    sys.exit(0)

if args[:2] == ["auth", "status"]:
    logged_in = MODE != "not_logged_in"
    print(json.dumps({"loggedIn": logged_in,
                      "authMethod": "api_key" if logged_in else "none",
                      "apiProvider": "firstParty"}, indent=2))
    sys.exit(0 if logged_in else 1)

session = args[args.index("--resume") + 1] if "--resume" in args else str(uuid.uuid4())


def emit(event):
    event.setdefault("session_id", session)
    print(json.dumps(event), flush=True)


def count():
    path = os.environ.get("FAKE_CLAUDE_COUNT")
    if path:
        with open(path, "a") as f:
            f.write("turn\n")


def result(text, is_error=False, status=None, terminal="completed"):
    emit({"type": "result", "subtype": "success", "is_error": is_error,
          "api_error_status": status, "result": text, "num_turns": 1, "duration_ms": 5,
          "total_cost_usd": 0.001, "usage": {"input_tokens": 10, "output_tokens": 5},
          "terminal_reason": terminal})


def assistant(text, model="claude-fake"):
    emit({"type": "assistant", "message": {"id": "msg_" + uuid.uuid4().hex[:8], "model": model,
          "content": [{"type": "text", "text": text}]}})


def retry_notice(status, error):
    emit({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1,
          "retry_delay_ms": 100, "error_status": status, "error": error})


turns = 0
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        if json.loads(line).get("type") != "user":
            continue
    except ValueError:
        continue
    turns += 1
    count()
    init = {"type": "system", "subtype": "init", "apiKeySource": "ANTHROPIC_API_KEY"}
    if MODE == "sonnet":
        init["model"] = "claude-sonnet-4-5-20250929"
    emit(init)
    if MODE in ("ok", "sonnet"):
        assistant("All good.\nRESULT OK")
        result("All good.\nRESULT OK")
    elif MODE == "not_logged_in":
        result("Not logged in · Please run /login", is_error=True)
    elif MODE == "revoked":
        retry_notice(401, "authentication_failed")
        assistant("Invalid API key · Please run /login", model="<synthetic>")
        result("Invalid API key · Please run /login", is_error=True, status=401,
               terminal="api_error")
    elif MODE == "http_401":
        result("API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}",
               is_error=True, status=401, terminal="api_error")
    elif MODE == "credit":
        result("Credit balance is too low", is_error=True, status=400, terminal="api_error")
    elif MODE == "rate_429_then_ok":
        if turns == 1:
            retry_notice(429, "rate_limit")
            result("API Error: 429 rate_limit_error", is_error=True, status=429,
                   terminal="api_error")
        else:
            assistant("Done on the second try.\nRESULT OK")
            result("Done on the second try.\nRESULT OK")
    elif MODE == "overloaded_529":
        retry_notice(529, "overloaded")
        time.sleep(0.2)
        retry_notice(529, "overloaded")
        result("API Error: 529 {\"type\":\"overloaded_error\"}", is_error=True, status=529,
               terminal="api_error")
    elif MODE == "api_error_success":
        assistant("API Error: 500 Internal server error", model="<synthetic>")
        result("API Error: 500 Internal server error", is_error=True, status=500,
               terminal="api_error")
    elif MODE == "stop_mid_turn":
        emit({"type": "assistant", "message": {"id": "msg_half", "content": [
            {"type": "text", "text": "Let me check"}]}})
        while True:
            time.sleep(3600)
    elif MODE == "linger":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        assistant("Done.\nRESULT OK")
        result("Done.\nRESULT OK")
        while True:
            time.sleep(3600)
    elif MODE == "crash":
        sys.stderr.write("Segmentation fault in the fake CLI\n    at main (fake.js:1)\n")
        sys.stderr.flush()
        os._exit(139)
    elif MODE == "prose_401":
        text = ("The server answered 401 Unauthorized; please run /login was on the page.\n"
                "RESULT ERROR: the login page shows 401")
        assistant(text)
        result(text)
