#!/usr/bin/env python3
"""A scripted agent for the `command` provider (docs/providers.md), driven by directives in each instruction.

It reads JSON lines on stdin (a bootstrap, then one per step) and answers each with free text ending
in a result marker. Each line of a step's instruction is a directive:

    say TEXT          print TEXT as is (e.g. `say RESULT WARN: slow page`; a RESULT line said
                      here replaces the closing `RESULT OK`)
    log TEXT          print `BUGATTI_LOG TEXT`
    evidence KIND P   write a small file at P (relative to BUGATTI_RUN_DIR), print BUGATTI_EVIDENCE
    get URL           HTTP GET; the body is printed and kept for `expect` ($NAME in URL: from
                      the agent's environment; $BUGATTI_CDP_HTTP is the http base of the
                      browser's endpoint, e.g. `get $BUGATTI_CDP_HTTP/json/version`)
    expect TEXT       RESULT ERROR unless TEXT is in the last body
    absent TEXT       RESULT ERROR if TEXT is in the last body
    env NAME          print NAME=value from the agent's environment
    field NAME        log (BUGATTI_LOG) NAME=value of this step's message (`field traceparent`)
    sleep SECS        sleep
    exit CODE         exit the agent process with CODE (a crash mid-step)
    panic             same as `exit 70`, for readability
    noresult          end the reply without a result marker
    within SECS       RESULT ERROR unless the last `mcp` call answered within SECS seconds
    expect_now        RESULT ERROR unless the last body holds a UTC timestamp (…T…Z) within
                      10 minutes of now (a clock that is current)
    below RE LIMIT    RESULT ERROR unless the number RE's group 1 finds in this step's outputs is
                      below LIMIT (no spaces in RE: `\\s`)
    same RE1 RE2      RESULT ERROR unless RE1's and RE2's group 1 in this step's outputs are equal
    age_under RE SECS RESULT ERROR unless the UTC timestamp (…T…Z) RE's group 1 finds is at most
                      SECS seconds old (and not from the future)
    later RE1 RE2     RESULT ERROR unless RE2's timestamp is later than RE1's
    ahead RE MIN MAX  RESULT ERROR unless RE's timestamp is MIN to MAX seconds after now (negative:
                      before now)
    differ RE1 RE2    RESULT ERROR unless RE1's and RE2's group 1 are found and differ
    descending RE     RESULT ERROR unless the UTC timestamps of every RE match (group 1), in
                      reading order, are newest first (never one newer than the one before)
    fact TEXT         a fact the pass rests on: stated as `BUGATTI_FACT TEXT` when the harness asks
                      its facts question about this step (a message with "question": "facts")
    withdraw TEXT     asked that question, answer `RESULT ERROR: TEXT` instead (a pass taken back)
    plan PATH         the directives of the file at PATH ($NAME expanded), in place: what the
                      agent does may change between runs while the instruction stays the same
    mcp TOOL JSON     call TOOL of the agent console (MCP over HTTP at $BUGATTI_MCP_URL with
                      $BUGATTI_MCP_TOKEN); its text is printed and kept for `expect`. In JSON,
                      {session_id} and {next_offset} become the last such number an answer gave
    # anything else   ignored (plain English is fine)

Unless a directive already decided, the reply ends with `RESULT OK`.
"""
import json
import os
import re
import sys
import time
import urllib.request

MCP = {"next_id": 1, "initialized": False, "session_id": "", "next_offset": ""}
# The `fact` directives of the last step, stated when the harness asks its facts question.
FACTS = []
# A `withdraw` directive of the last step: the facts question is answered RESULT ERROR with it.
WITHDRAW = []
# The step message being answered, for `field`.
MESSAGE = {}


def mcp_post(message):
    request = urllib.request.Request(
        os.environ["BUGATTI_MCP_URL"],
        data=json.dumps(message).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": "Bearer " + os.environ["BUGATTI_MCP_TOKEN"],
            "MCP-Protocol-Version": "2025-06-18",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        body = resp.read().decode()
        if resp.headers.get("Content-Type", "").startswith("text/event-stream"):
            body = "".join(l[5:].strip() for l in body.splitlines() if l.startswith("data:") and l[5:].strip())
        return json.loads(body) if body.strip() else None


def mcp_call(tool, arguments):
    if not MCP["initialized"]:
        mcp_post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "directive-agent", "version": "1"}}})
        mcp_post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        MCP["initialized"] = True
    MCP["next_id"] += 1
    answer = mcp_post({"jsonrpc": "2.0", "id": MCP["next_id"], "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})
    if "error" in answer:
        return f"mcp error: {answer['error']}"
    result = answer["result"]
    text = "".join(c.get("text", "") for c in result.get("content", []))
    for key, pattern in (("session_id", r"session ID (\d+)"), ("next_offset", r"Next offset: (\d+)")):
        found = re.findall(pattern, text)
        if found:
            MCP[key] = found[-1]
    return ("[is_error] " if result.get("isError") else "") + text


def reply(lines, result):
    for line in lines:
        print(line)
    if result is not None:
        print(result)
    sys.stdout.flush()


def current_timestamp_in(body):
    import datetime
    now = datetime.datetime.now(datetime.timezone.utc)
    for found in re.findall(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", body):
        at = datetime.datetime.strptime(found, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        if abs((now - at).total_seconds()) <= 600:
            return True
    return False


def found(pattern, text):
    m = re.search(pattern, text)
    return m.group(1) if m else None


def utc(stamp):
    import datetime
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def judge(word, args, seen):
    """A model's judgement of this step's outputs (`seen`): None when it holds, else why not."""
    import datetime
    try:
        if word == "below":
            value = float(found(args[0], seen))
            return None if value < float(args[1]) else f"{value} is not below {args[1]}"
        if word == "same":
            a, b = found(args[0], seen), found(args[1], seen)
            return None if a is not None and a == b else f"{a} differs from {b}"
        if word == "age_under":
            age = (datetime.datetime.now(datetime.timezone.utc) - utc(found(args[0], seen))).total_seconds()
            return None if -60 <= age <= float(args[1]) else f"{age:.0f} s old, not under {args[1]}"
        if word == "later":
            a, b = utc(found(args[0], seen)), utc(found(args[1], seen))
            return None if b > a else f"{b} is not later than {a}"
        if word == "ahead":
            ahead = (utc(found(args[0], seen)) - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
            low, high = float(args[1]), float(args[2])
            return None if low <= ahead <= high else f"{ahead:.0f} s from now, not {low:.0f} to {high:.0f}"
        if word == "descending":
            stamps = [utc(m) for m in re.findall(args[0], seen)]
            bad = [i for i in range(1, len(stamps)) if stamps[i] > stamps[i - 1]]
            return None if stamps and not bad else f"entry {bad[0] if bad else 0} is out of order"
        if word == "differ":
            a, b = found(args[0], seen), found(args[1], seen)
            return None if a is not None and b is not None and a != b else f"{a} is {b}"
    except (TypeError, ValueError) as err:  # the value is not there: the check fails
        return f"cannot tell: {err}"
    return None


def planned(instruction):
    """The instruction's lines, each `plan PATH` replaced by the lines of that file."""
    lines = []
    for raw in instruction.splitlines():
        word, _, rest = raw.strip().partition(" ")
        if word == "plan":
            with open(os.path.expandvars(rest)) as f:
                lines.extend(f.read().splitlines())
        else:
            lines.append(raw)
    return lines


def run_step(instruction):
    FACTS.clear()
    WITHDRAW.clear()
    out, body, result = [], "", "RESULT OK"
    seen = ""
    took = 0.0
    for raw in planned(instruction):
        word, _, rest = raw.strip().partition(" ")
        if word == "say":
            out.append(rest)
            if rest.startswith("RESULT "):
                result = None  # the script chose its own verdict

        elif word == "log":
            out.append(f"BUGATTI_LOG {rest}")
        elif word == "evidence":
            kind, _, path = rest.partition(" ")
            full = os.path.join(os.environ.get("BUGATTI_RUN_DIR", "."), path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write("evidence\n")
            out.append(f"BUGATTI_EVIDENCE {kind} {path}")
        elif word == "get":
            try:
                cdp = os.environ.get("BUGATTI_CDP_URL", "")
                if cdp.startswith("ws://"):
                    # ws://127.0.0.1:PORT/TOKEN/devtools/browser → http://127.0.0.1:PORT/TOKEN
                    os.environ["BUGATTI_CDP_HTTP"] = "http://" + cdp[5:].removesuffix("/devtools/browser")
                with urllib.request.urlopen(os.path.expandvars(rest), timeout=10) as resp:
                    body = resp.read().decode()
            except Exception as err:  # the agent reports, it does not crash
                body = f"request failed: {err}"
            out.append(body)
        elif word == "expect":
            if rest not in body:
                result = f"RESULT ERROR: expected {rest!r} in {body!r}"
        elif word == "absent":
            if rest in body:
                result = f"RESULT ERROR: did not expect {rest!r} in {body!r}"
        elif word == "within":
            if took > float(rest):
                result = f"RESULT ERROR: the call took {took:.1f} s, more than {rest} s"
        elif word == "expect_now":
            if not current_timestamp_in(body):
                result = f"RESULT ERROR: no current timestamp in {body!r}"
        elif word in ("below", "same", "age_under", "later", "ahead", "differ", "descending"):
            why = judge(word, rest.split(), seen)
            if why is not None:
                result = f"RESULT ERROR: {word}: {why}"
        elif word == "fact":
            FACTS.append(rest)
        elif word == "withdraw":
            WITHDRAW.append(rest)
        elif word == "env":
            out.append(f"{rest}={os.environ.get(rest, '<unset>')}")
        elif word == "field":
            out.append(f"BUGATTI_LOG {rest}={MESSAGE.get(rest, '<unset>')}")
        elif word == "sleep":
            sys.stdout.flush()
            time.sleep(float(rest))
        elif word in ("exit", "panic"):
            reply(out, None)
            sys.exit(int(rest) if word == "exit" else 70)
        elif word == "noresult":
            result = None
        elif word == "mcp":
            tool, _, args = rest.partition(" ")
            for key in ("session_id", "next_offset"):
                args = args.replace("{" + key + "}", MCP[key])
            began = time.monotonic()
            try:
                body = mcp_call(tool, json.loads(args or "{}"))
            except Exception as err:  # the agent reports, it does not crash
                body = f"mcp call failed: {err}"
            took = time.monotonic() - began
            seen += body + "\n"
            out.append(body)
    reply(out, result)


for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "bootstrap":
        reply(["directive agent ready"], "RESULT OK")
    elif message.get("question") == "facts":
        if WITHDRAW:
            reply(["BUGATTI_FACT " + fact for fact in FACTS], "RESULT ERROR: " + WITHDRAW[0])
        else:
            reply(["BUGATTI_FACT " + fact for fact in FACTS], "RESULT OK")
    else:
        MESSAGE = message
        run_step(message.get("instruction", ""))
