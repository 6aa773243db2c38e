"""A long-lived command for the wait_for_log benchmark: on GET /tick it prints `tick <time>`, the
high-resolution wall-clock time taken just before the print; GET /health answers 200.

  tick_app.py PORT
"""
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/tick":
            print(f"tick {time.time()!r}", flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
