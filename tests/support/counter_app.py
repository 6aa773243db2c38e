#!/usr/bin/env python3
"""A tiny stateful HTTP app for end-to-end tests: a counter kept in a file of the session workspace.

    counter_app.py --port PORT --state FILE [--crash-once MARKER] [--ignore-term]

GET /health -> ok; POST /inc -> the new count; GET /count -> the count.
--crash-once MARKER: if MARKER does not exist, create it and exit 1 before serving (a first start
that crashes, for restart policies). --ignore-term: ignore SIGTERM (a stubborn server).
"""
import argparse
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--state", required=True)
parser.add_argument("--crash-once")
parser.add_argument("--ignore-term", action="store_true")
args = parser.parse_args()

if args.crash_once and not os.path.exists(args.crash_once):
    open(args.crash_once, "w").close()
    print("crashing on first start", flush=True)
    sys.exit(1)
if args.ignore_term:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


LOCK = threading.Lock()


def count():
    try:
        return int(open(args.state).read())
    except (FileNotFoundError, ValueError):
        return 0


class App(BaseHTTPRequestHandler):
    def reply(self, text):
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply("ok" if self.path == "/health" else f"count={count()}")

    def do_POST(self):
        with LOCK:  # parallel sessions may share one server
            new = count() + 1
            with open(args.state, "w") as f:
                f.write(str(new))
        self.reply(f"count={new}")

    def log_message(self, *a):
        pass


print(f"counter listening on {args.port}", flush=True)
ThreadingHTTPServer(("127.0.0.1", args.port), App).serve_forever()
