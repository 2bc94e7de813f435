"""A fault campaign, start to end: the baseline run, the plan, the runs (in parallel, within a budget, with
progress), and the reports.

    mockserver campaign [options] -- COMMAND [ARGS...]
    mockserver campaign merge SHARD.json ... [--json FILE] [--junit FILE] [--html FILE]

Exit status: 0 when every outcome is survived or expected, 1 when any is unexpected, 2 when the campaign could not
be made (its options, its expectations file, a baseline that failed: its output's tail is shown), 130 when it was
interrupted (the reports hold what it had).
"""

import json
import shlex
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from mockserver.campaign import plan as planning
from mockserver.campaign import report
from mockserver.campaign.expectations import load as load_expectations
from mockserver.campaign.runs import Options, Runner, Stopped
from mockserver.core.version import __version__


@dataclass
class Settings:
    """What `mockserver campaign` was asked (cli/main.py reads them from its options)."""
    command: list
    jobs: int = 2
    at: object = (1,)
    client_timeout: float | None = None
    max_runs: int | None = None
    max_seconds: float | None = None
    run_timeout: float | None = None
    shard: tuple = (1, 1)
    expect: str | None = None
    json: str | None = None
    junit: str | None = None
    html: str | None = None
    faults: tuple | None = None          # globs of fault names (--fault)
    operations: tuple | None = None      # globs of operationIds (--operation)
    serve_args: tuple = ()
    clock: str = "manual"
    workdir: str | None = None
    quiet: bool = False
    extra: dict = field(default_factory=dict)


def say(settings, *lines):
    if not settings.quiet:
        print(*lines, sep="\n", file=sys.stderr, flush=True)


def run(settings, spec):
    """The campaign; its exit status."""
    expectations = load_expectations(settings.expect, list(spec.operations)) if settings.expect else []
    runner = Runner(Options(settings.command, timeout=settings.run_timeout or 600.0,
                            client_timeout=settings.client_timeout, serve_args=settings.serve_args,
                            clock=settings.clock, workdir=settings.workdir))
    say(settings, f"campaign: the baseline: {shlex.join(settings.command)}")
    baseline = runner.run(None)
    if baseline.problem or baseline.timed_out or baseline.exit_code != 0:
        why = baseline.problem or ("it did not end within --run-timeout" if baseline.timed_out
                                   else f"it exited {baseline.exit_code}")
        say(settings, f"campaign: the baseline failed ({why}), so no fault can be judged; its output's end:",
            *(f"  | {line}" for line in baseline.tail))
        return 2
    if not baseline.calls:
        say(settings, "campaign: the baseline made no call to the mock: does the command read MOCKSERVER_URL?")
        return 2
    if settings.run_timeout is None:                  # a run may take a few times the baseline, then it is stuck
        runner.options.timeout = max(60.0, 5 * baseline.seconds + 30)
    planned = planning.make(baseline.calls, spec, settings.at, settings.client_timeout, settings.faults,
                            settings.operations)
    mine = planning.shard(planned.faults, *settings.shard)
    say(settings, *plan_lines(planned, mine, settings, spec, baseline))
    results, interrupted = execute(settings, runner, mine, expectations)
    meta = {"version": __version__, "command": settings.command, "plan_key": report.plan_key(settings.command,
                                                                                              planned.faults),
            "shard": "/".join(map(str, settings.shard)), "planned": len(planned.faults),
            "skipped": [{"what": what, "why": why} for what, why in planned.skipped],
            "never_called": planning.never_called(spec, planned), "called": planned.called,
            "baseline": {"seconds": round(baseline.seconds, 3), "calls": len(baseline.calls)},
            "interrupted": interrupted, "unused_expectations": unused(expectations, results)}
    return finish(settings, spec, meta, results, interrupted)


def finish(settings, spec, meta, results, interrupted=False):
    """Write the reports; the exit status."""
    document = report.document(meta, results, lambda found: report.coverage(spec, meta["called"], found))
    write(settings, document, results)
    say(settings, "", *report.table(results), "", summary_line(document))
    for line in meta.get("unused_expectations", []):
        say(settings, f"campaign: an expectation accepted nothing: {line}")
    if interrupted:
        return 130
    return 1 if document["summary"]["unexpected"] else 0


def write(settings, document, results):
    if settings.json:
        _write(settings.json, json.dumps(document, indent=1))
    if settings.junit:
        _write(settings.junit, report.junit(results))
    if settings.html:
        _write(settings.html, report.page(document))


def _write(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def summary_line(document):
    counts = document["summary"]["outcomes"]
    cover = document["coverage"]
    shown = ", ".join(f"{counts[name]} {name}" for name in report.MARKS if name in counts)
    coverage = (f"; failure replies survived: {cover['survived']} of {cover['documented']} documented"
                if cover["documented"] else "")
    return f"campaign: {document['summary']['runs']} runs: {shown}; {document['summary']['unexpected']} unexpected" \
           + coverage


def plan_lines(planned, mine, settings, spec, baseline):
    lines = [f"campaign: the baseline passed in {baseline.seconds:.1f} s with {len(baseline.calls)} calls in "
             f"{len(planned.sequences)} sandbox(es); {len(planned.called)} operations called"]
    for sandbox, operations in sorted(planned.sequences.items()):
        lines.append(f"  {sandbox}: {' -> '.join(operations[:12])}{' ...' if len(operations) > 12 else ''}")
    lines.append(f"campaign: the plan: {len(planned.faults)} fault(s)"
                 + (f", this shard ({'/'.join(map(str, settings.shard))}) runs {len(mine)}"
                    if settings.shard != (1, 1) else ""))
    for fault in mine:
        lines.append(f"  {fault.key}")
    if planned.skipped:
        lines.append(f"campaign: left out ({len(planned.skipped)}):")
        lines += [f"  {what}: {why}" for what, why in planned.skipped]
    lines.append(f"campaign: {len(planning.never_called(spec, planned))} operations of the document were never "
                 "called by the suite: no fault is run at them")
    return lines


def unused(expectations, results):
    used = {result.accepted_by for result in results if result.accepted_by}
    return [f"line {entry.line}: {entry.operation} {entry.fault} ({entry.because})" for entry in expectations
            if entry.because not in used]


# ---------------------------------------------------------------- the runs
def execute(settings, runner, faults, expectations):
    """Run the faults, `jobs` at a time, within the budget; (results, interrupted)."""
    results = {fault.key: report.Result(fault) for fault in faults}
    progress = Progress(settings, len(faults))
    started = time.monotonic()
    queue = list(faults)
    interrupted = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: (interrupted.set(), runner.stop()))
    try:
        with ThreadPoolExecutor(max(1, settings.jobs)) as pool:
            running = {}
            while queue or running:
                while queue and len(running) < settings.jobs and not interrupted.is_set() and within(
                        settings, started, progress.done + len(running)):
                    fault = queue.pop(0)
                    running[pool.submit(runner.run, fault)] = fault
                if not running:
                    break
                done, _ = wait(running, timeout=1.0, return_when=FIRST_COMPLETED)
                for future in done:
                    fault = running.pop(future)
                    try:
                        results[fault.key] = report.judge(fault, future.result(), expectations)
                    except Stopped:
                        results[fault.key].note = "interrupted"
                    progress.one(results[fault.key])
            for fault in queue:
                results[fault.key].note = "interrupted" if interrupted.is_set() else "past the budget"
    finally:
        signal.signal(signal.SIGINT, previous)
        progress.end()
    return list(results.values()), interrupted.is_set()


def within(settings, started, begun):
    if settings.max_runs is not None and begun >= settings.max_runs:
        return False
    return settings.max_seconds is None or time.monotonic() - started < settings.max_seconds


class Progress:
    """Runs done, what they came to and an estimate of the time left: redrawn in place on a terminal, else a line
    per run."""

    def __init__(self, settings, total):
        self.settings, self.total, self.done = settings, total, 0
        self.started = time.monotonic()
        self.counts: dict = {}
        self.terminal = sys.stderr.isatty() and not settings.quiet

    def one(self, result):
        self.done += 1
        self.counts[result.outcome] = self.counts.get(result.outcome, 0) + 1
        spent = time.monotonic() - self.started
        left = spent / self.done * (self.total - self.done)
        counts = ", ".join(f"{n} {name}" for name, n in sorted(self.counts.items()))
        line = f"[{self.done}/{self.total}] {counts}; about {_duration(left)} left"
        if self.terminal:
            print(f"\r\033[K{line}", end="", file=sys.stderr, flush=True)
        elif not self.settings.quiet:
            mark = "" if result.expected else " (unexpected)"
            print(f"{line}: {result.fault.key}: {result.outcome}{mark}", file=sys.stderr, flush=True)

    def end(self):
        if self.terminal:
            print(file=sys.stderr, flush=True)


def _duration(seconds):
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"
