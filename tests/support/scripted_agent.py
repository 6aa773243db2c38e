#!/usr/bin/env python3
"""A scripted agent for the `command` provider: speaks the JSON-lines protocol of docs/providers.md.

Every line received is appended to $BUGATTI_WORKDIR/received.jsonl (the session workspace, the
agent's scratch space; the agent itself runs in the project root).
The bootstrap is answered with "ready" and RESULT OK (or with what $SCRIPTED_BOOTSTRAP_REPLY says).
A step's instruction is a JSON list of actions, executed in order:
  {"say": "text"}          write text to stdout (no newline added) and flush
  {"pause": 0.05}          sleep that many seconds (the previous write is its own chunk)
  {"raw": "ff fe 0a"}      write these bytes (hex) to stdout
  {"bulk": N}              write N bytes of filler lines (no markers) to stdout
  {"stderr": "text"}       write text to stderr
  {"exit": 3}              exit at once with that code
  {"escape": 300}          start `sleep N` in a new session (escapes the process group)
  {"stop": true}           stop itself with SIGSTOP (as `kill -STOP $$` would), until continued
Python standard library only.
"""
import json
import os
import signal
import subprocess
import sys
import time

out = sys.stdout.buffer


def say(data):
    out.write(data)
    out.flush()


def bulk(n):
    line = b"x" * 1023 + b"\n"
    block = line * 64
    while n >= len(block):
        out.write(block)
        n -= len(block)
    out.write(b"y" * n)
    out.flush()


def main():
    for raw in sys.stdin:
        with open(os.path.join(os.environ["BUGATTI_WORKDIR"], "received.jsonl"), "a") as log:
            log.write(raw if raw.endswith("\n") else raw + "\n")
        message = json.loads(raw)
        if message["type"] == "bootstrap":
            reply = os.environ.get("SCRIPTED_BOOTSTRAP_REPLY", "ready\nRESULT OK\n")
            say(reply.encode())
            continue
        for action in json.loads(message["instruction"]):
            if "say" in action:
                say(action["say"].encode())
            elif "pause" in action:
                time.sleep(action["pause"])
            elif "raw" in action:
                say(bytes.fromhex(action["raw"]))
            elif "bulk" in action:
                bulk(action["bulk"])
            elif "stderr" in action:
                sys.stderr.write(action["stderr"])
                sys.stderr.flush()
            elif "stop" in action:
                os.kill(os.getpid(), signal.SIGSTOP)
            elif "exit" in action:
                sys.exit(action["exit"])
            elif "escape" in action:
                subprocess.Popen(["sleep", str(action["escape"])], start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
