#!/usr/bin/env python3
"""A harness app for the agent-console tests: GET /health answers ok; GET /checkout?order=N
answers `ordered N` and prints `checkout hit order=N` on stdout (the line wait_for_log waits for).

Usage: console_app.py --port N
"""
import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/checkout":
            order = parse_qs(url.query).get("order", ["0"])[0]
            print(f"checkout hit order={order}", flush=True)
            body = f"ordered {order}\n".encode()
        else:
            body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
print(f"console app listening on {args.port}", flush=True)
server.serve_forever()
