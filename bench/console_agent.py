"""A `command` agent for the agent-console benchmarks (docs/console.md): it speaks MCP over HTTP to
$BUGATTI_MCP_URL with $BUGATTI_MCP_TOKEN and measures, printing one `BUGATTI_LOG bench {json}` per
step. The step's instruction names the measurement:

  latency N       N × (a console exec_command of `date +%s.%N` | the same under a bare PTY read
                  here): seconds from the time the program printed (just before it exits) to the
                  tool result / end-of-file
  waitlog N PORT  N × wait_for_log for a line the tick app (tick_app.py on PORT) prints on
                  GET /tick: seconds from the time in the line to the call's return; and the
                  round trip of a list_logs call (the floor of any tool result)
  idle SECS       the supervisor's CPU (ns, all its threads, /proc schedstat) over SECS with no
                  console session, then with 16 open (`sleep 600` under a PTY)
  flood BYTES     `head -c BYTES /dev/zero` through a PTY console session, polled to its end:
                  seconds and bytes seen
Python standard library only.
"""
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
import urllib.request

NEXT = [0]


def post(message):
    request = urllib.request.Request(
        os.environ["BUGATTI_MCP_URL"], data=json.dumps(message).encode(), method="POST",
        headers={"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream",
                 "Authorization": "Bearer " + os.environ["BUGATTI_MCP_TOKEN"]})
    with urllib.request.urlopen(request, timeout=120) as resp:
        body = resp.read().decode()
        return json.loads(body) if body.strip() else None


def call(tool, arguments):
    NEXT[0] += 1
    answer = post({"jsonrpc": "2.0", "id": NEXT[0], "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})
    result = answer["result"]
    text = "".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError"):
        raise RuntimeError(f"{tool}: {text}")
    return text


def output_of(text):
    return text.split("Output:\n", 1)[1]


def session_of(text):
    found = re.search(r"Process running with session ID (\d+)", text)
    return int(found.group(1)) if found else None


def bare_pty(argv):
    """Runs argv under a fresh PTY and reads it to end-of-file: the output and when EOF came."""
    master, slave = pty.openpty()
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last slave closed
            break
        if not chunk:
            break
        out += chunk
    ended = time.time()
    os.close(master)
    child.wait()
    return out.decode(), ended


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def latency(n):
    console, bare = [], []
    for _ in range(n):
        text = call("exec_command", {"cmd": "date +%s.%N", "yield_time_ms": 10000})
        got = time.time()
        if "Process exited with code 0" not in text:
            raise RuntimeError(text)
        console.append(got - float(output_of(text).strip()))
        out, ended = bare_pty(["date", "+%s.%N"])
        bare.append(ended - float(out.strip()))
    return {"console_s": median(console), "bare_s": median(bare)}


def waitlog(n, port):
    waits, floors = [], []
    for _ in range(n):
        answer = {}

        def wait():
            answer["text"] = call("wait_for_log", {"name": "ticks", "pattern": "^tick ", "timeout_ms": 20000})
            answer["at"] = time.time()

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.3)  # the call is waiting by then
        urllib.request.urlopen(f"http://127.0.0.1:{port}/tick", timeout=10).read()
        waiter.join()
        line = re.search(r"^tick (\S+)$", answer["text"], re.M)
        if not line:
            raise RuntimeError(answer["text"])
        waits.append(answer["at"] - float(line.group(1)))
        t = time.time()
        call("list_logs", {})
        floors.append(time.time() - t)
    return {"wait_s": median(waits), "call_s": median(floors)}


def cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def idle(secs):
    supervisor = os.getppid()
    time.sleep(1)  # the step's start is written out by then
    before = cpu_ns(supervisor)
    time.sleep(secs)
    none = cpu_ns(supervisor) - before
    for _ in range(16):
        text = call("exec_command", {"cmd": "sleep 600", "yield_time_ms": 250})
        if session_of(text) is None:
            raise RuntimeError(text)
    time.sleep(1)
    before = cpu_ns(supervisor)
    time.sleep(secs)
    sixteen = cpu_ns(supervisor) - before
    # Left open: the session's teardown must end them.
    return {"none_ns": none, "sixteen_ns": sixteen, "secs": secs}


def flood(size):
    t = time.time()
    text = call("exec_command", {"cmd": f"head -c {size} /dev/zero", "yield_time_ms": 30000,
                                 "max_output_tokens": 1000})
    seen = int(re.search(r"Original token count: (\d+)", text).group(1))
    sid = session_of(text)
    while sid is not None:
        text = call("write_stdin", {"session_id": sid, "chars": "", "yield_time_ms": 30000,
                                    "max_output_tokens": 1000})
        seen += int(re.search(r"Original token count: (\d+)", text).group(1))
        if "Process exited with code 0" in text:
            sid = None
    return {"seconds": time.time() - t, "tokens_seen": seen}


def run_step(instruction):
    words = instruction.split()
    mode, args = words[0], [int(w) for w in words[1:]]
    result = {"latency": latency, "waitlog": waitlog, "idle": idle, "flood": flood}[mode](*args)
    print("BUGATTI_LOG bench " + json.dumps(result))
    print("RESULT OK", flush=True)


post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "bootstrap":
        print("RESULT OK", flush=True)
    else:
        try:
            run_step(message.get("instruction", ""))
        except Exception as err:  # the step reports, the agent stays up
            print(f"RESULT ERROR: {err}", flush=True)
