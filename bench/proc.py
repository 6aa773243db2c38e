"""Running one measured process: wall time, CPU time (wait4 rusage: the process and the children
it reaped), and its own peak RSS (VmHWM polled from /proc, since wait4's ru_maxrss would be the
largest of it and its children). Also the leak check: every process the bench starts carries a
marker in its environment, and none may survive a case."""
import os
import signal
import subprocess
import threading
import time


class BenchError(Exception):
    """A measurement could not be trusted: a project failed, a file is missing, a process leaked."""


MARK_VAR = "BUGATTI_BENCH_MARK"


class Measured:
    def __init__(self, wall, rc, cpu, peak_rss_kib, output_path, began=None):
        self.wall = wall  # seconds
        # Wall-clock time (epoch seconds) just before the process was started: what the
        # timestamps a run writes are placed against (artifacts.phases).
        self.began = began
        self.rc = rc
        self.cpu = cpu  # seconds, utime + stime, the process and its reaped children
        self.peak_rss_kib = peak_rss_kib  # the process alone; None when not polled
        self.output_path = output_path

    def tail(self, lines=30):
        try:
            with open(self.output_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no output captured)"


def _vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def run(argv, cwd, output_path, env, poll_rss=False, timeout=600.0):
    """Runs argv to its end (killing it after `timeout`) and measures it."""
    with open(output_path, "wb") as out:
        began = time.time()
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        peak = [None]
        done = threading.Event()

        def poll():
            # VmHWM only grows: the last reading before exit is the peak, give or take the
            # final poll interval.
            while not done.is_set():
                v = _vm_hwm_kib(proc.pid)
                if v is not None:
                    peak[0] = v
                done.wait(0.01)

        poller = threading.Thread(target=poll, daemon=True) if poll_rss else None
        if poller:
            poller.start()
        timer = threading.Timer(timeout, lambda: _kill(proc.pid))
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        timer.cancel()
        done.set()
        if poller:
            poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(wall, proc.returncode, usage.ru_utime + usage.ru_stime, peak[0], output_path,
                    began)


def _kill(pid):
    try:
        os.kill(pid, signal.SIGTERM)
        time.sleep(5)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def marked_processes(mark):
    """Pids (other than ours) whose environment carries MARK_VAR=mark."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{pid}: " + f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return f"{pid}: (gone)"


def reap_leaks(mark):
    """Kills whatever survived with our mark and returns its description (empty: nothing leaked)."""
    leaked = [describe(p) for p in marked_processes(mark)]
    for pid in marked_processes(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return leaked
