"""A small client for the demo shop, used by the tests' shell steps.

shopctl.py get PATH [--token T] [--expect TEXT]...
shopctl.py post PATH JSON [--token T] [--expect TEXT]...
shopctl.py login USER          (prints the token and saves it to ./token for later steps)

Exits non-zero (with the response) when the request fails or an --expect text is missing.
Reads APP_PORT from the environment.
"""
import json
import os
import sys
import urllib.error
import urllib.request


def main(argv):
    port = os.environ["APP_PORT"]
    method, path, *rest = argv
    expects, token, payload = [], None, None
    if os.path.exists("token"):
        token = open("token").read().strip()
    if method == "login":
        payload, path, method = json.dumps({"user": path}), "/login", "post"
    elif method == "post":
        payload, rest = rest[0], rest[1:]
    while rest:
        flag, value, rest = rest[0], rest[1], rest[2:]
        if flag == "--expect":
            expects.append(value)
        elif flag == "--token":
            token = value
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method.upper())
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if payload is not None:
        req.data = payload.encode()
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read().decode()
    except urllib.error.HTTPError as err:
        print(f"{method.upper()} {path} -> {err.code}: {err.read().decode()}")
        return 1
    print(body)
    if argv[0] == "login":
        with open("token", "w") as f:
            f.write(json.loads(body)["token"])
    missing = [e for e in expects if e not in body]
    if missing:
        print(f"expected to see {missing} in the response")
        return 1
    return 0


sys.exit(main(sys.argv[1:]))
