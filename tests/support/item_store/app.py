#!/usr/bin/env python3
"""An item store shaped like the Flask example users start from, on the standard library only:

    app.py --port PORT

GET /health -> {"status": "ok"}; GET /api/items -> 3 items; GET /api/items/<id> -> one item or a
404 with {"error": ...}; GET / -> an HTML page titled "Item Store" listing the items.
"""
import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ITEMS = [
    {"id": 1, "name": "Widget", "price": 9.99},
    {"id": 2, "name": "Gadget", "price": 24.5},
    {"id": 3, "name": "Doohickey", "price": 4.25},
]


class App(BaseHTTPRequestHandler):
    def send(self, status, body, kind="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            return self.send(200, json.dumps({"status": "ok"}))
        if self.path == "/api/items":
            return self.send(200, json.dumps(ITEMS))
        if self.path.startswith("/api/items/"):
            wanted = self.path.rsplit("/", 1)[1]
            for item in ITEMS:
                if str(item["id"]) == wanted:
                    return self.send(200, json.dumps(item))
            return self.send(404, json.dumps({"error": f"item {wanted} not found"}))
        if self.path == "/":
            rows = "".join(f"<li>{i['name']} ${i['price']:.2f}</li>" for i in ITEMS)
            page = f"<html><head><title>Item Store</title></head><body><h1>Item Store</h1><ul>{rows}</ul></body></html>"
            return self.send(200, page, "text/html")
        return self.send(404, json.dumps({"error": "not found"}))

    def log_message(self, fmt, *args):
        print(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}", flush=True)


parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
print(f" * Running on http://127.0.0.1:{args.port}", flush=True)
ThreadingHTTPServer(("127.0.0.1", args.port), App).serve_forever()
