"""The demo shop: a tiny JSON HTTP API over SQLite.

GET  /health                 -> {"status": "ok"}
GET  /products               -> [{"sku", "name", "price_cents"}]
POST /login   {"user"}       -> {"token"}
POST /basket  {"sku"}        -> the basket (needs "Authorization: Bearer <token>")
GET  /basket                 -> {"user", "items": [...]}
"""
import argparse
import json
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--db", required=True)
args = parser.parse_args()

TOKENS = {}


def db():
    return sqlite3.connect(args.db)


class Shop(BaseHTTPRequestHandler):
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def user(self):
        auth = self.headers.get("Authorization", "")
        return TOKENS.get(auth.removeprefix("Bearer "))

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):
        if self.path == "/health":
            return self.reply(200, {"status": "ok"})
        if self.path == "/products":
            rows = db().execute("SELECT sku, name, price_cents FROM products ORDER BY sku").fetchall()
            return self.reply(200, [dict(zip(("sku", "name", "price_cents"), r)) for r in rows])
        if self.path == "/basket":
            user = self.user()
            if not user:
                return self.reply(401, {"error": "log in first"})
            items = [r[0] for r in db().execute("SELECT sku FROM basket WHERE user = ?", (user,))]
            return self.reply(200, {"user": user, "items": items})
        self.reply(404, {"error": f"no route {self.path}"})

    def do_POST(self):
        if self.path == "/login":
            user = self.body().get("user")
            if not user:
                return self.reply(400, {"error": "user missing"})
            token = f"token-{user}"
            TOKENS[token] = user
            return self.reply(200, {"token": token})
        if self.path == "/basket":
            user = self.user()
            if not user:
                return self.reply(401, {"error": "log in first"})
            sku = self.body().get("sku")
            conn = db()
            if not conn.execute("SELECT 1 FROM products WHERE sku = ?", (sku,)).fetchone():
                return self.reply(404, {"error": f"no product {sku}"})
            conn.execute("INSERT INTO basket VALUES (?, ?)", (user, sku))
            conn.commit()
            items = [r[0] for r in conn.execute("SELECT sku FROM basket WHERE user = ?", (user,))]
            return self.reply(200, {"user": user, "items": items})
        self.reply(404, {"error": f"no route {self.path}"})

    def log_message(self, fmt, *a):
        sys.stderr.write("shop: " + (fmt % a) + "\n")


server = ThreadingHTTPServer(("127.0.0.1", args.port), Shop)
print(f"shop listening on 127.0.0.1:{args.port}", flush=True)
server.serve_forever()
