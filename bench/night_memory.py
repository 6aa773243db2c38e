"""Row 29: memory over a night (docs/ci.md). 3000 trivial tests (600 with --quick) at `-j 16`,
`shell` provider: the supervisor's RSS and open files when the 300th test starts and when the
3000th does (a tenth of the way and the end). What a finished run leaves in the supervisor is
what the suite's files need; anything more grows with the night.

Open files are told apart by what holds them: the supervisor's own (its standard streams, the
runtime's, the suite's log and ledger) must be the same number at both marks; the files in run
folders must be those of the 16 running tests at most (a finished run's file left open would
make its folder a 17th); the pipes and pidfds of the processes the running tests start come and
go with each step, and stay under a few a test."""
import os
import shutil
import signal
import subprocess
import threading
import time

from cases import SHELL_CONFIG, Row, step_test, write_project
from proc import BenchError
import artifacts


def _status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise BenchError(f"no {field} in /proc/{pid}/status")


JOBS = 16
# Pipes, pidfds and /dev/null of the processes one running test starts, at most (a step's
# command and its streams; the harness of these tests starts nothing).
PLUMBING_PER_TEST = 4


def _open_files(pid, runs):
    """(the supervisor's own fds, run folders with an open file, children's pipes and pidfds)."""
    own, folders, plumbing = 0, set(), 0
    prefix = os.path.realpath(runs) + os.sep
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if int(fd) <= 2:
            own += 1
        elif target.startswith(prefix):
            folders.add(target[len(prefix):].split(os.sep)[0])
        elif target.startswith(("pipe:", "anon_inode:[pidfd]")) or target == "/dev/null":
            plumbing += 1
        else:
            own += 1
    return own, len(folders), plumbing


def _settled_open_files(pid, runs, readings=5):
    """`_open_files` read a few times 5 ms apart: the supervisor's own as most readings found it
    (a file it rewrites, the ledger, is closed for an instant; a workspace removed holds a
    directory open for one), the run folders and pipes at their most."""
    seen = []
    for _ in range(readings):
        seen.append(_open_files(pid, runs))
        time.sleep(0.005)
    own = max(set(s[0] for s in seen), key=[s[0] for s in seen].count)
    return own, max(s[1] for s in seen), max(s[2] for s in seen)


def _night(ctx, project, tests, marks):
    """Runs the night once; {mark: (rss KiB, open files)} read as the mark-th run directory
    appears (open files as `_open_files` tells them apart)."""
    runs = os.path.join(project, ".bugatti", "runs")
    shutil.rmtree(os.path.join(project, ".bugatti"), ignore_errors=True)
    argv = [ctx.binary, "start", "--config", os.path.join(project, "bugatti.config.toml"),
            "-q", "-j", str(JOBS)]
    with open(ctx.out("night-memory"), "wb") as out:
        proc = subprocess.Popen(argv, cwd=project, env=ctx.env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        seen = {}
        timer = threading.Timer(1800, lambda: os.kill(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            while proc.poll() is None:
                try:
                    started = len(os.listdir(runs))
                    for mark in marks:
                        if started >= mark and mark not in seen:
                            seen[mark] = (_status(proc.pid, "VmRSS"),
                                          _settled_open_files(proc.pid, runs))
                except (OSError, BenchError):
                    pass  # not started yet, or just ended
                time.sleep(0.02)
        finally:
            timer.cancel()
    if proc.returncode != 0:
        raise BenchError(f"the night exited {proc.returncode}, expected 0")
    artifacts.assert_outcomes(project, tests)
    missing = [m for m in marks if m not in seen]
    if missing:
        raise BenchError(f"the night ended before its run {missing[0]} was seen")
    return seen


def night_memory(ctx):
    tests = 600 if ctx.quick else 3000
    early = tests // 10
    name = f"29. memory over a night: {tests} trivial tests, `-j 16`"
    project = write_project(ctx, "night-memory", SHELL_CONFIG,
                            {f"t{i:05d}": step_test(f"T{i}", "true") for i in range(tests)})
    nights = [_night(ctx, project, tests, (early, tests)) for _ in range(1 if ctx.quick else 3)]
    ratios = sorted(n[tests][0] / n[early][0] for n in nights)
    ratio = ratios[len(ratios) // 2]
    night = next(n for n in nights if n[tests][0] / n[early][0] == ratio)
    (rss_early, fds_early), (rss_end, fds_end) = night[early], night[tests]
    flat = all(n[m][1][0] == n[early][1][0] and n[m][1][1] <= JOBS
               and n[m][1][2] <= PLUMBING_PER_TEST * JOBS
               for n in nights for m in (early, tests))

    def files(fds):
        own, folders, plumbing = fds
        return (f"open files: {own} own, in {folders} run folders, "
                f"{plumbing} pipes and pidfds")
    return Row(name, f"RSS {rss_end / 1024:.1f} MiB, {files(fds_end)} at test {tests}",
               f"RSS {rss_early / 1024:.1f} MiB, {files(fds_early)} at test {early}",
               f"{ratio:.2f}× RSS (nights {ratios[0]:.2f}–{ratios[-1]:.2f}×)",
               "≤ 1.2× RSS, open files flat", ratio <= 1.2 and flat)
