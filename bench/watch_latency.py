"""Row 30: `supervisor watch` on the README's demo (examples/demo, the `shell` provider): from the
save of a test file to the watch's verdict line for it, against a plain `supervisor start
--replay only` of the same test in the same invocation, runs interleaved. The watch's latency
holds its quiet period (100 ms: the saves must be quiet before a run starts), the run itself and
the reading of the file changes; the baseline holds the process's own start instead."""
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

from cases import Row, baseline, med
from proc import BenchError

TEST = "tests/smoke.test.toml"


def _copy_demo(ctx):
    project = os.path.join(ctx.tmp, "watch-demo")
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(os.path.join(ctx.root, "examples", "demo"), project,
                    ignore=shutil.ignore_patterns(".bugatti", "__pycache__"))
    return project


class _Watch:
    """A running `supervisor watch`, each line it prints stamped with when it was read."""

    def __init__(self, ctx, project):
        self.log = open(ctx.out("watch"), "w")
        self.proc = subprocess.Popen([ctx.binary, "watch", "--config",
                                      os.path.join(project, "bugatti.config.toml")],
                                     cwd=project, env=ctx.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.write(line)
            self.lines.put((time.perf_counter(), line.rstrip("\n")))
        self.lines.put((time.perf_counter(), None))

    def wait_for(self, prefix, limit=120.0):
        """(when, line) of the next line starting with `prefix`."""
        deadline = time.monotonic() + limit
        while True:
            try:
                when, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise BenchError(f"watch: no line `{prefix}…` within {limit:.0f} s")
            if line is None:
                raise BenchError(f"watch ended (exit {self.proc.wait()}) before `{prefix}…`")
            if line.startswith(prefix):
                return when, line

    def stop(self):
        """SIGINT, as Ctrl+C: the watch must end by it (130)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            rc = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise BenchError("watch did not end on SIGINT within 60 s")
        self.log.close()
        if rc != 130:
            raise BenchError(f"watch ended with {rc} on SIGINT, expected 130")


def watch_latency(ctx):
    name = "31. watch: save of a demo test → verdict (`supervisor watch`, shell provider)"
    project = _copy_demo(ctx)
    test_file = os.path.join(project, TEST)
    watch = _Watch(ctx, project)
    latencies, walls = [], []
    try:
        watch.wait_for("watch: watching")
        argv = [ctx.binary, "start", "--replay", "only", "--config",
                os.path.join(project, "bugatti.config.toml"), TEST]
        # One save first, not counted: the page cache and the dynamic loader, as for `start`.
        for n in range(max(ctx.runs, 3) + 1):
            saved = time.perf_counter()
            with open(test_file, "a") as f:
                f.write(f"# saved {n}\n")
            when, line = watch.wait_for(f"watch: run {n + 1} ")
            if not line.startswith(f"watch: run {n + 1} passed"):
                raise BenchError(f"watch run {n + 1} did not pass: {line}")
            wall = baseline(ctx, argv, project, "watch-baseline").wall
            if n > 0:
                latencies.append(when - saved)
                walls.append(wall)
    except BaseException:
        watch.proc.kill()
        watch.proc.wait()
        raise
    watch.stop()
    ratio = med(latencies) / med(walls)
    return Row(name, f"{med(latencies):.2f} s from save to `passed`",
               f"{med(walls):.2f} s (`supervisor start --replay only {TEST}`)",
               f"{ratio:.2f}×", "≤ 1.5× `start`", ratio <= 1.5,
               "the watch's 100 ms quiet period included")
