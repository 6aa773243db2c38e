#!/usr/bin/env python3
"""A scripted OpenAI Responses API on loopback, for running the real Codex CLI offline.

Usage: responses_stub.py SCRIPT.json REQUEST_LOG.jsonl
Prints `PORT <n>` on stdout once listening on 127.0.0.1 (port chosen by the kernel).

SCRIPT.json is a list of replies, one consumed per `POST /v1/responses` request, in order:
  {"text": "..."}        a message (the turn ends); "{tool_result}" in it is replaced by the output
                         of the last exec_command call the client sent back ("Output:" onwards)
  {"shell": "command"}   an `exec_command` function call (the client runs it and asks again), with
                         `login: false`: no login shell, so the machine's profile (pyenv's rehash
                         lock, say) cannot slow a test down; with "yield_time_ms": N, Codex
                         waits N ms for the command's output (not its default 10 s) before it
                         answers the model that the command still runs
  {"tool_search": "query"}
                         a client-executed `tool_search_call` (Codex 0.169 defers MCP tools: the
                         model must search before it can call one; Codex answers with a
                         `tool_search_output` naming the namespace, `mcp__bugatti`, and its tools)
                         With "retry_until": "TEXT", the search is made again (up to 20 times,
                         half a second apart) while its output lacks TEXT: Codex starts MCP
                         servers beside the model's first turn, and a slow one (Playwright MCP on
                         a loaded machine) lists its tools only after a first search came back
                         empty
  {"tool": "NAME", "namespace": "mcp__bugatti", "input": {...}}
                         a `function_call` of NAME in that namespace (an MCP tool after a search);
                         an input string "{session_id}" / "{next_offset}" becomes the last
                         `session ID N` / `Next offset: N` a tool output carried, "{url}" the last
                         http://127.0.0.1:PORT/... the user's messages held (the step instruction)
  "expect": ["text", ...]
                         (with any reply) each text must be in the last tool output the client sent
                         back (a function_call_output's text, or a tool_search_output's tools as
                         JSON), else the reply is the text `RESULT ERROR: expected ...` instead
  {"hang": true}         sends `response.created`, then nothing more, ever (an API gone silent)
  {"status": 500}        an HTTP error with a JSON error body
Any reply may carry "tokens": [input, output] or [input, output, cached input] for its usage
(default [100, 20], nothing cached).
When the script runs out, a text reply without a result marker.
The harness's facts question is answered as facts_answer.py says: a {"facts": [...]} reply is
consumed by it, any other is left for the next step.
Each request is appended to REQUEST_LOG.jsonl as {"path", "headers", "body"}, one object a line.
Python standard library only.
"""
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import facts_answer

SCRIPT = json.load(open(sys.argv[1]))
LOG_PATH = sys.argv[2]
LOCK = threading.Lock()
STATE = {"next": 0, "id": 0, "search": None}


def last_user_text(body):
    """The text of the last input item when it is a user message ('' after a tool output)."""
    items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
    if not items or items[-1].get("role") != "user":
        return ""
    content = items[-1].get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def reply_for(body):
    """The next reply, or the last tool search again while its output lacks `retry_until`."""
    if facts_answer.is_question(last_user_text(body)):
        return facts_answer.reply(SCRIPT, STATE, LOCK)
    with LOCK:
        pending = STATE["search"]
    if pending:
        reply, tries = pending
        outputs = tool_outputs(body)
        if tries > 0 and reply["retry_until"] not in (outputs[-1] if outputs else ""):
            with LOCK:
                STATE["search"] = (reply, tries - 1)
            time.sleep(0.5)
            return reply
        with LOCK:
            STATE["search"] = None
    reply = next_reply()
    if "tool_search" in reply and reply.get("retry_until"):
        with LOCK:
            STATE["search"] = (reply, 20)
    return reply


def next_reply():
    with LOCK:
        i = STATE["next"]
        STATE["next"] += 1
    if i < len(SCRIPT):
        return SCRIPT[i]
    return {"text": "stub: script exhausted"}


def exec_arguments(reply):
    """An `exec_command` call's arguments for a {"shell": ...} reply."""
    arguments = {"cmd": reply["shell"], "login": False}
    if "yield_time_ms" in reply:
        arguments["yield_time_ms"] = reply["yield_time_ms"]
    return arguments


def fresh_id(prefix):
    with LOCK:
        STATE["id"] += 1
        return "%s_stub_%d" % (prefix, STATE["id"])


def last_tool_output(body):
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out = item.get("output")
            if isinstance(out, list):
                out = "".join(p.get("text", "") for p in out if isinstance(p, dict))
            out = str(out or "")
            marker = "Output:\n"
            return out.split(marker, 1)[1].strip() if marker in out else out.strip()
    return ""


def output_text(item):
    """The whole text of one tool output item the client sent back."""
    if item.get("type") == "tool_search_output":
        return json.dumps(item.get("tools"))
    out = item.get("output")
    if isinstance(out, dict):
        out = out.get("content", out)
    if isinstance(out, list):
        out = "\n".join(p.get("text", "") for p in out if isinstance(p, dict))
    return str(out or "")


TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")


def tool_outputs(body):
    """Every tool output text the client sent, oldest first."""
    return [output_text(item) for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") in TOOL_OUTPUTS]


def user_texts(body):
    texts = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content") or []:
                if isinstance(part, dict):
                    texts.append(part.get("text", ""))
    return texts


def fill(value, body):
    """Replaces {session_id} / {next_offset} / {url} / {ref:TEXT} in a scripted tool input (see
    above; {ref:TEXT} is the ref of the last Playwright MCP snapshot line holding TEXT)."""
    if isinstance(value, dict):
        return {k: fill(v, body) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, body) for v in value]
    if isinstance(value, str):
        ref = re.fullmatch(r"\{ref:(.+)\}", value)
        if ref:
            # A Playwright MCP snapshot line: `- button "Buy" [ref=e3]`.
            pattern = re.escape(ref.group(1)) + r"[^\n]*?\[ref=(e\d+)\]"
            found = [m for t in tool_outputs(body) for m in re.findall(pattern, t)]
            return found[-1] if found else value
        for key, pattern in (("session_id", r"session ID (\d+)"), ("next_offset", r"Next offset: (\d+)")):
            found = [m for t in tool_outputs(body) for m in re.findall(pattern, t)]
            if value == "{" + key + "}" and found:
                return int(found[-1])
        if "{url}" in value:
            urls = [m for t in user_texts(body) for m in re.findall(r"http://127\.0\.0\.1:\d+[^\s\"'`]*", t)]
            if urls:
                return value.replace("{url}", urls[-1])
    return value


def checked(reply, body):
    """The reply, or a RESULT ERROR text when a text it expects is not in the last tool output."""
    outputs = tool_outputs(body)
    seen = outputs[-1] if outputs else ""
    for text in reply.get("expect", []):
        if text not in seen:
            return {"text": "RESULT ERROR: expected %r in the last tool output %r" % (text, seen)}
    return reply


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        # /v1/models and the like: an empty list is enough.
        self.send_json(200, {"object": "list", "data": []})

    def event(self, obj):
        data = "event: %s\ndata: %s\n\n" % (obj["type"], json.dumps(obj))
        self.wfile.write(data.encode())
        self.wfile.flush()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        headers = {k.lower(): v for k, v in self.headers.items()
                   if k.lower() in ("session_id", "conversation_id", "authorization", "x-client-request-id")}
        with LOCK:
            with open(LOG_PATH, "a") as log:
                log.write(json.dumps({"path": self.path, "headers": headers, "body": body}) + "\n")
        if not self.path.startswith("/v1/responses"):
            self.send_json(404, {"error": {"message": "stub: no such path"}})
            return
        reply = checked(reply_for(body), body)
        if "status" in reply:
            self.send_json(reply["status"], {"error": {"message": "scripted error %d" % reply["status"],
                                                       "type": "server_error"}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        response_id = fresh_id("resp")
        self.event({"type": "response.created", "response": {"id": response_id}})
        if reply.get("hang"):
            while True:
                time.sleep(3600)
        if "shell" in reply:
            item = {"type": "function_call", "id": fresh_id("fc"), "call_id": fresh_id("call"),
                    "name": "exec_command", "arguments": json.dumps(exec_arguments(reply))}
        elif "tool_search" in reply:
            item = {"type": "tool_search_call", "id": fresh_id("ts"), "call_id": fresh_id("call"),
                    "status": "completed", "execution": "client",
                    "arguments": {"query": reply["tool_search"], "limit": 8}}
        elif "tool" in reply:
            item = {"type": "function_call", "id": fresh_id("fc"), "call_id": fresh_id("call"),
                    "name": reply["tool"], "arguments": json.dumps(fill(reply.get("input", {}), body))}
            if reply.get("namespace"):
                item["namespace"] = reply["namespace"]
        else:
            text = reply.get("text", "").replace("{tool_result}", last_tool_output(body))
            item = {"type": "message", "id": fresh_id("msg"), "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        self.event({"type": "response.output_item.added", "output_index": 0, "item": item})
        self.event({"type": "response.output_item.done", "output_index": 0, "item": item})
        tokens = reply.get("tokens", [100, 20])
        tokens_in, tokens_out = tokens[0], tokens[1]
        tokens_cached = tokens[2] if len(tokens) > 2 else 0
        self.event({"type": "response.completed", "response": {
            "id": response_id,
            "usage": {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": tokens_cached},
                      "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": tokens_in + tokens_out}}})
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
