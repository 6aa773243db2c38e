"""A long-lived command for the readiness benchmark. After a short delay (so the probe is already
waiting), it becomes ready and writes the high-resolution wall-clock time at which it did to STAMP:

  ready_app.py log STAMP         prints `READY` (the moment is taken just before the print)
  ready_app.py http STAMP PORT   starts listening on PORT and answers every request with 200
"""
import os
import signal
import socket
import sys
import time

mode, stamp = sys.argv[1], sys.argv[2]
time.sleep(0.3)


def write_stamp(t):
    with open(stamp + ".tmp", "w") as f:
        f.write(repr(t))
    os.replace(stamp + ".tmp", stamp)


if mode == "log":
    t = time.time()
    sys.stdout.write("READY\n")
    sys.stdout.flush()
    write_stamp(t)
    while True:
        signal.pause()
elif mode == "http":
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(sys.argv[3])))
    srv.listen(64)
    write_stamp(time.time())
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
else:
    sys.exit(f"unknown mode {mode!r}")
