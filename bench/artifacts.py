"""Reading what a supervisor run wrote: the run directories, their events.jsonl and run.json, and
the events' wall-clock timestamps at full (nanosecond) precision."""
import calendar
import json
import os
import time

from proc import BenchError


def parse_timestamp(text):
    """RFC 3339 UTC (`2026-11-22T00:25:45.235149370Z`) to seconds since the epoch, as a float."""
    if not text.endswith("Z"):
        raise BenchError(f"timestamp {text!r} is not in UTC")
    whole, _, frac = text[:-1].partition(".")
    seconds = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return seconds + (float("0." + frac) if frac else 0.0)


def run_dirs(project):
    runs = os.path.join(project, ".bugatti", "runs")
    if not os.path.isdir(runs):
        raise BenchError(f"{runs} does not exist: the supervisor wrote no run")
    return sorted(os.path.join(runs, d) for d in os.listdir(runs))


def only_run(project):
    dirs = run_dirs(project)
    if len(dirs) != 1:
        raise BenchError(f"expected one run under {project}/.bugatti/runs, found {len(dirs)}")
    return dirs[0]


def events(run_dir):
    path = os.path.join(run_dir, "events.jsonl")
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"cannot read {path}: {e}") from e


def run_json(run_dir):
    path = os.path.join(run_dir, "run.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BenchError(f"cannot read {path}: {e}") from e


def event_time(evs, run_dir, kind, last=False, **match):
    """The timestamp of the first (or last) event of `kind` whose fields include `match`."""
    hits = [e for e in evs if e.get("type") == kind
            and all(e.get(k) == v for k, v in match.items())]
    if not hits:
        raise BenchError(f"{run_dir}/events.jsonl has no {kind} event matching {match}")
    return parse_timestamp(hits[-1 if last else 0]["at"])


def assert_outcomes(project, expected_runs):
    """Every run passed, and there are as many as expected."""
    dirs = run_dirs(project)
    if len(dirs) != expected_runs:
        raise BenchError(f"{project}: expected {expected_runs} runs, found {len(dirs)}")
    for d in dirs:
        outcome = run_json(d).get("outcome")
        if outcome != "passed":
            raise BenchError(f"{d}/run.json: outcome {outcome!r}, expected 'passed'")
    return dirs


def phases(project, measured):
    """Where one supervised run's wall time went, from its own record: (before, session, after)
    in seconds. `before` runs from the process's start to the run's `run_started` event (the
    process and its runtime starting, the config and tests read, the suite's folders made);
    `session` from `run_started` to `run_finished` (the workspace, the steps, their teardown);
    `after` from `run_finished` to the process's exit (run.json's last rewrite, report.md, the
    suite's summary, JUnit, HTML and history, the runtime's shutdown)."""
    run_dir = only_run(project)
    evs = events(run_dir)
    started = event_time(evs, run_dir, "run_started")
    finished = event_time(evs, run_dir, "run_finished", last=True)
    end = measured.began + measured.wall
    return started - measured.began, finished - started, end - finished
