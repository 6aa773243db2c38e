#!/bin/sh
# The tool users would otherwise write: a hand-written harness for examples/demo. For each root test
# (smoke, then basket, like `supervisor start -j 1`): a fresh workspace, the migration, the server on
# a free port, poll its health with curl + sleep, run the test's steps, kill the server.
# Usage: demo_harness.sh DEMO_DIR      (exit 0 when every step passed)
set -eu
demo="$1"
SHOPCTL="python3 $demo/app/shopctl.py"
server=""
# A failed step must not leave the server behind.
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true' EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_server() {
    ws="$(mktemp -d)"
    APP_PORT="$(free_port)"
    export APP_PORT
    (cd "$demo" && python3 app/migrate.py "$ws/shop.db") >"$ws/migrate.log" 2>&1
    (cd "$demo" && exec python3 -u app/server.py --port "$APP_PORT" --db "$ws/shop.db") >"$ws/server.log" 2>&1 &
    server=$!
    tries=0
    until curl -fsS "http://127.0.0.1:$APP_PORT/health" >/dev/null 2>&1; do
        tries=$((tries + 1))
        [ "$tries" -lt 300 ] || { echo "server never became ready" >&2; kill "$server"; exit 3; }
        sleep 0.1
    done
    cd "$ws"
}

stop_server() {
    cd "$demo"
    kill "$server"
    wait "$server" || true
    server=""
    rm -rf "$ws"
}

# smoke.test.toml
start_server
$SHOPCTL get /health --expect ok
$SHOPCTL get /products --expect Teapot --expect Cup --expect Kettle
stop_server

# basket.test.toml (with its includes)
start_server
cp "$demo/tests/basket/order.json" "$ws/order.json"
$SHOPCTL login alice
$SHOPCTL post /basket "$(cat "$ws/order.json")" --expect tea
echo "BUGATTI_LOG basket updated for alice"
$SHOPCTL get /basket --expect '"items": ["tea"]'
$SHOPCTL get /products --expect Teapot
stop_server
echo "RESULT OK"
