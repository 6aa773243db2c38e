#!/usr/bin/env python3
"""A scripted Anthropic Messages API on loopback, for running the real Claude Code CLI offline.

Usage: anthropic_stub.py SCRIPT.json REQUEST_LOG.jsonl
Prints `PORT <n>` on stdout once listening on 127.0.0.1 (port chosen by the kernel).

SCRIPT.json is a list of replies, consumed in order by the *main-loop* requests (those that carry
tools, as Claude Code's agent loop always does). Each reply is one of:
  {"text": "..."}                    a streamed text answer (end_turn); "{tool_result}" in it is
                                     replaced by the text of the last tool_result the client sent
  {"bash": "command"}                a shell tool call (stop_reason tool_use): `Bash` for Claude
                                     Code, `bash` for pi (whichever the request's tools name)
  {"tool": "NAME", "input": {...}}   a call of any tool (an MCP one: mcp__bugatti__exec_command);
                                     an input string "{session_id}" / "{next_offset}" becomes the
                                     last `session ID N` / `Next offset: N` a tool result carried,
                                     "{ref:TEXT}" the ref of the last snapshot line holding TEXT
  "expect": ["text", ...]            (with any reply) each text must be in the last tool_result,
                                     else the reply is `RESULT ERROR: expected ...` instead
  "expect_absent": ["text", ...]     (with any reply) no text may be in the last tool_result,
                                     else the reply is `RESULT ERROR: did not expect ...` instead
  "expect_re": ["regex", ...]        (with any reply) each regex must match the whole last
                                     tool_result (stripped), else `RESULT ERROR: ...` instead
  "delay_ms": N                      (with any reply) answered after N ms
  "skip_if_seen": "text"             (with any main reply) passed over when the request already
                                     holds the text
  "expect_in_request": ["text", ...] (with any reply) each text must be somewhere in the request
  {"hang": true}                     starts streaming, then never sends another event
  {"break": true}                    starts streaming, then drops the connection mid-message (a
                                     non-streaming request gets half a body, then the same)
  {"status": N}                      an HTTP N answer with an Anthropic error body (401
                                     authentication_error, 500 api_error, 529 overloaded_error…)
SCRIPT.json may instead be {"main": [...], "helper": [...]}: a subagent's requests (its first user
message holds "[helper]") read the helper list, the others the main one. That form may also say
  "max_in_flight": N                 a main-loop request beyond N being answered is refused at once
                                     with HTTP 429 (rate_limit_error, as Anthropic's API limits a
                                     burst), consuming no reply; logged with "limited": true
  "retry_after": S                   the 429's `retry-after` header, in seconds
Other requests (side queries without tools) get a short plain answer. When the script runs out,
main-loop requests get a text reply without a result marker.
The harness's facts question is answered as facts_answer.py says: a {"facts": [...]} reply is
consumed by it, any other is left for the next step.
Every request body is appended to REQUEST_LOG.jsonl, one JSON object per line.
Python standard library only.
"""
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import facts_answer

_SCRIPT = json.load(open(sys.argv[1]))
# A list is the main loop's script; a dict has "main" and "helper" (a subagent's) scripts.
SCRIPT = _SCRIPT["main"] if isinstance(_SCRIPT, dict) else _SCRIPT
HELPER_SCRIPT = _SCRIPT.get("helper", []) if isinstance(_SCRIPT, dict) else []
MAX_IN_FLIGHT = _SCRIPT.get("max_in_flight") if isinstance(_SCRIPT, dict) else None
RETRY_AFTER = _SCRIPT.get("retry_after") if isinstance(_SCRIPT, dict) else None
LOG_PATH = sys.argv[2]
# Model latency per main-loop request (the benchmarks' slow model); 0 in tests.
DELAY_SECS = float(os.environ.get("STUB_DELAY_MS", "0")) / 1000
LOCK = threading.Lock()
STATE = {"next": 0, "msg": 0, "helper": 0, "in_flight": 0}
# A subagent's conversation starts with a prompt holding this tag: it reads the helper script.
HELPER_TAG = "[helper]"


def next_reply(body):
    """The next main-loop reply, passing over those whose `skip_if_seen` text the request already
    holds (a helper's finding that came back as a tool result, as a foreground subagent's does)."""
    seen = json.dumps(body)
    with LOCK:
        while STATE["next"] < len(SCRIPT):
            reply = SCRIPT[STATE["next"]]
            STATE["next"] += 1
            if reply.get("skip_if_seen") and reply["skip_if_seen"] in seen:
                continue
            return reply
    return {"text": "stub: script exhausted"}


def is_helper(body):
    """A subagent's request: its first user message carries HELPER_TAG."""
    for message in body.get("messages", []):
        if message.get("role") == "user":
            return HELPER_TAG in json.dumps(message.get("content"))
    return False


def next_helper_reply():
    with LOCK:
        i = STATE["helper"]
        STATE["helper"] += 1
    if i < len(HELPER_SCRIPT):
        return HELPER_SCRIPT[i]
    return {"text": "stub: helper script exhausted"}


def last_user_text(body):
    """The text of the last user message ('' when it carries tool results)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                return ""
            return "".join(b.get("text", "") for b in content if isinstance(b, dict))
        return ""
    return ""


def last_tool_result(body):
    for message in reversed(body.get("messages", [])):
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        return "".join(b.get("text", "") for b in inner if isinstance(b, dict))
                    return str(inner or "")
    return ""


def tool_results(body):
    """Every tool_result text the client sent, oldest first."""
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        texts.append("".join(b.get("text", "") for b in inner if isinstance(b, dict)))
                    else:
                        texts.append(str(inner or ""))
    return texts


def fill(value, body):
    """Replaces {session_id} / {next_offset} in a scripted tool input by the last ones seen."""
    if isinstance(value, dict):
        return {k: fill(v, body) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, body) for v in value]
    if isinstance(value, str):
        ref = re.fullmatch(r"\{ref:(.+)\}", value)
        if ref:
            # A Playwright MCP snapshot line: `- button "Buy" [ref=e3]` (`f1e3` once a second
            # client, the supervisor's replay, has attached to the browser).
            pattern = re.escape(ref.group(1)) + r"[^\n]*?\[ref=((?:f\d+)?e\d+)\]"
            found = [m for t in tool_results(body) for m in re.findall(pattern, t)]
            return found[-1] if found else value
        for key, pattern in (("session_id", r"session ID (\d+)"), ("next_offset", r"Next offset: (\d+)")):
            found = [m for t in tool_results(body) for m in re.findall(pattern, t)]
            if value == "{" + key + "}" and found:
                return int(found[-1])
    return value


def checked(reply, body):
    """The reply, or a RESULT ERROR text when a text it expects is not in the last tool result
    (or one it must not see is)."""
    seen = last_tool_result(body)
    for text in reply.get("expect", []):
        if text not in seen:
            return {"text": f"RESULT ERROR: expected {text!r} in the tool result {seen!r}"}
    for text in reply.get("expect_absent", []):
        if text in seen:
            return {"text": f"RESULT ERROR: did not expect {text!r} in the tool result {seen!r}"}
    for text in reply.get("expect_in_request", []):
        if text not in json.dumps(body):
            return {"text": f"RESULT ERROR: expected {text!r} in the request"}
    for pattern in reply.get("expect_re", []):
        if not re.fullmatch(pattern, seen.strip()):
            return {"text": f"RESULT ERROR: the tool result {seen!r} is not /{pattern}/"}
    return reply


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        messages = self.path.startswith("/v1/messages") and not self.path.startswith("/v1/messages/count_tokens")
        # Claude Code's shell tool is `Bash`, pi's is `bash`: either marks the agent loop.
        shell_tools = [t.get("name") for t in body.get("tools") or [] if t.get("name") in ("Bash", "bash")]
        main_loop = messages and bool(shell_tools)
        with LOCK:
            limited = main_loop and MAX_IN_FLIGHT is not None and STATE["in_flight"] >= MAX_IN_FLIGHT
            if main_loop and not limited:
                STATE["in_flight"] += 1
            with open(LOG_PATH, "a") as log:
                log.write(json.dumps({"path": self.path, "body": body, "limited": limited,
                                      "at": time.time()}) + "\n")
        if limited:
            self.error_reply(429)
            return
        if not messages:
            self.json_reply({"input_tokens": 10})
            return
        try:
            self.answer(body, main_loop, shell_tools)
        finally:
            if main_loop:
                with LOCK:
                    STATE["in_flight"] -= 1

    def answer(self, body, main_loop, shell_tools):
        if main_loop and facts_answer.is_question(last_user_text(body)):
            reply = facts_answer.reply(SCRIPT, STATE, LOCK)
        else:
            reply = next_helper_reply() if main_loop and is_helper(body) else (
                next_reply(body) if main_loop else {"text": "ok"})
        if "status" in reply:
            self.error_reply(int(reply["status"]))
            return
        if main_loop and DELAY_SECS:
            time.sleep(DELAY_SECS)
        if reply.get("delay_ms"):
            time.sleep(reply["delay_ms"] / 1000)
        model = body.get("model", "claude-sonnet-4-5")
        if not body.get("stream"):
            if reply.get("break"):
                # Claude Code falls back to a non-streaming request after a broken stream: break
                # that one too, mid-body.
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b'{"id": "msg_broken", "type": "mess')
                self.wfile.flush()
                self.connection.shutdown(2)
                self.close_connection = True
                return
            self.json_reply(self.message(model, [{"type": "text", "text": reply.get("text", "ok")}], "end_turn"))
            return
        self.stream(model, reply, body, shell_tools[0] if shell_tools else "Bash")

    def error_reply(self, status):
        kind = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error",
                529: "overloaded_error"}.get(status, "api_error")
        data = json.dumps({"type": "error", "error": {"type": kind,
                                                      "message": "scripted %d" % status}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429 and RETRY_AFTER is not None:
            self.send_header("retry-after", str(RETRY_AFTER))
        self.end_headers()
        self.wfile.write(data)

    def json_reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def message(self, model, content, stop):
        with LOCK:
            STATE["msg"] += 1
            n = STATE["msg"]
        return {
            "id": f"msg_stub_{n}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 1000, "output_tokens": 200},
        }

    def event(self, name, data):
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def stream(self, model, reply, body, shell_tool="Bash"):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        start = self.message(model, [], None)
        start["usage"] = {"input_tokens": 1000, "output_tokens": 1}
        self.event("message_start", {"type": "message_start", "message": start})
        reply = checked(reply, body)
        if "bash" in reply or "tool" in reply:
            name = reply.get("tool", shell_tool)
            block = {"type": "tool_use", "id": f"toolu_stub_{start['id']}", "name": name, "input": {}}
            self.event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
            if "bash" in reply:
                partial = json.dumps({"command": reply["bash"], "description": "scripted command"})
            else:
                partial = json.dumps(fill(reply.get("input", {}), body))
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta", "partial_json": partial}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
            stop = "tool_use"
        else:
            text = reply.get("text", "")
            text = text.replace("{tool_result}", last_tool_result(body).strip())
            self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}})
            half = len(text) // 2
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": text[:half]}})
            if reply.get("hang"):
                # Keep the connection open and silent until the client goes away.
                while True:
                    time.sleep(3600)
            if reply.get("break"):
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": text[half:]}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
            stop = "end_turn"
        self.event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 200}})
        self.event("message_stop", {"type": "message_stop"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
