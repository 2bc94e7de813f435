#!/usr/bin/env python3
"""Benchmark of cost at fleet scale: does any request's cost grow with the world, and does memory stay
bounded? The evidence for the fleet-scale targets (docs/performance.md). Compares a baseline commit
("before") with the checkout ("after").

    .venv/bin/python bench/fleet.py                          # both parts, about 8 minutes
    .venv/bin/python bench/fleet.py --only mix --seconds 600 --sandboxes 50   # the 10-minute memory target
    .venv/bin/python bench/fleet.py --only growth --sizes 10,1000,10000

mix     a CI fleet's traffic over HTTP against `mockserver serve` (bench/fleet_load.py): --clients
        keep-alive connections (16) spread their requests over --sandboxes sandboxes (50 and 500;
        `X-Mock-Sandbox: fleet-<k>`, each made by its first request) for --seconds (60): poll an
        application's status, deploy it (409 while one runs), read its deployment history and a job's
        commits, create project variables and secrets and delete them, read the journal, list the
        projects. Per run: req/s; the server's CPU time per request (utime + stime of
        /proc/<pid>/stat over the requests answered), as a whole and per 10-second slice (does it stay
        flat?); latency p50/p99/max as the client sees it; status codes; RSS (VmRSS) every 2 s; the
        largest garbage-collector pause (bench/probe/sitecustomize.py, put first on the server's
        PYTHONPATH, times them with gc.callbacks); the client's own CPU use. After the window,
        `DELETE /_mock/sandboxes`, 5 s, and RSS again. The server runs with
        `--rate-limit 1000000000/3600` and every other setting (journal, memory) at its default.
growth  in-process through the whole ASGI app (bench/fleet_growth.py), one fresh process per
        (version, family, size): p50/p99 of create, read, list page (?page=1&page_size=20) and delete
        with 10, 1,000, 10,000 and 100,000 siblings, for project variables (siblings: the variables of
        one project), projects (of the organization) and applications (services of one environment).

"before" is --baseline (default 34b7c29, the commit before the fleet-scale work) checked out into
a temporary git worktree (removed afterwards) and run with this venv through PYTHONPATH; "after" is
the checkout, uncommitted changes included (or --after REV, checked out the same way). Runs of
the two alternate (before, after, before, ...).
Servers and in-process cells run on CPU 0, the load generator on CPU 1. The machine has 2 cores and
other work may run: CPU time per request, not req/s alone, is the figure to compare.
Results: stdout, bench/results/fleet.md and bench/results/fleet.json (server logs, the load
generator's raw output and the gc probe's files: bench/results/fleet-*.raw, not committed).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "probe"))
import fleet_growth  # its families, for the report's labels; it imports no mockserver here
import fleet_load  # its request mix, for the report
import gcpauses
import run  # RATE, the venv's python, call, stop, rss_mib, cpu_seconds

BENCH, ROOT, RESULTS = run.BENCH, run.ROOT, run.RESULTS
PROBE = BENCH / "probe"
PYTHON = run.PYTHON
DEFAULT_BASELINE = "34b7c29"
SIZES = "10,1000,10000,100000"


@dataclass
class Version:
    name: str          # "before" or "after"
    label: str         # what it is, for the report
    path: Path         # the tree whose mockserver/ it imports
    worktree: bool     # a temporary git worktree, removed at the end


# ------------------------------------------------------------------ versions
def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def checkout(rev, name):
    """A commit in a temporary git worktree (removed with `remove_worktree`)."""
    try:
        sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        sys.exit(f"{rev}: not a commit of this repository")
    tree = Path(tempfile.mkdtemp(prefix=f"fleet-{name}-"))
    tree.rmdir()
    git("worktree", "add", "--detach", str(tree), sha)
    return Version(name, f"{name}: commit {sha[:7]} ({git('log', '-1', '--format=%s', sha)})", tree, True)


def remove_worktree(tree):
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def current():
    changed = [line for line in git("status", "--porcelain", "--", "mockserver").splitlines() if line.strip()]
    head = git("rev-parse", "--short", "HEAD")
    extra = f" + uncommitted changes to {len(changed)} file(s) of mockserver/" if changed else ""
    return Version("after", f"after: the checkout, HEAD {head}{extra}", ROOT, False)


SERVE_ENV = {}    # --serve-env: variables every server of the mix gets (e.g. MOCKSERVER_ALLOCATOR=pymalloc)


def clean_env(**extra):
    """This environment without MOCKSERVER_* variables (the servers run at their defaults), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSERVER_")}
    env.update(extra)
    return env


def load_avg():
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------------------ part mix
def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(version, tag):
    """`python -m mockserver serve` of a version on CPU 0 with the gc probe: (process, port, probe file)."""
    port = free_port()
    probe_file = RESULTS / f"fleet-{tag}.gc.raw"
    probe_file.unlink(missing_ok=True)
    env = clean_env(PYTHONPATH=f"{PROBE}{os.pathsep}{version.path}", FLEET_GC_PROBE=str(probe_file), **SERVE_ENV)
    log = open(RESULTS / f"fleet-{tag}.log.raw", "w")
    cmd = ["taskset", "-c", "0", PYTHON, "-m", "mockserver", "serve", "--port", str(port), "--rate-limit", run.RATE]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=version.path, env=env)
    began = time.perf_counter()
    while time.perf_counter() - began < 120:
        if proc.poll() is not None:
            sys.exit(f"server {tag} exited with {proc.returncode} (log: {log.name})")
        try:
            run.call(port, "GET", "/_mock/health", headers={}, timeout=1)
        except OSError:
            time.sleep(0.05)
            continue
        time.sleep(0.3)                               # the one answering must be ours, not a bind failure
        if proc.poll() is not None:
            sys.exit(f"server {tag} exited with {proc.returncode}, port {port} taken? (log: {log.name})")
        problem = import_problem(version, gcpauses.ask(probe_file, proc.pid))
        if problem:
            run.stop(proc)
            sys.exit(f"server {tag}: {problem}")
        return proc, port, probe_file
    run.stop(proc)
    sys.exit(f"server {tag} did not answer within 120 s (log: {log.name})")


def import_problem(version, dump):
    """The probe's dump names the mockserver package the server imported: it must be the version's.
    None when it is, else what is wrong."""
    if dump is None:
        return "the gc probe wrote nothing (bench/probe/sitecustomize.py not imported?)"
    where = dump.get("mockserver") or ""
    if not Path(where).resolve().is_relative_to(version.path.resolve()):
        return f"imported mockserver from {where}, not from {version.path}"
    return None


def log_problems(path):
    text = Path(path).read_text(errors="replace")
    return text.count("Traceback"), [line for line in text.splitlines() if "ERROR" in line or "error" in line][:5]


def mix_run(args, version, sandboxes, rep):
    """One run of the fleet mix against a fresh server of `version`."""
    tag = f"{version.name}-{sandboxes}-{rep}"
    out = {"version": version.name, "sandboxes": sandboxes, "run": rep, "load_before": load_avg()}
    proc, port, probe_file = serve(version, tag)
    try:
        out["rss_start_mib"] = run.rss_mib(proc.pid)
        result_file = RESULTS / f"fleet-{tag}.load.raw"
        cmd = ["taskset", "-c", "1", PYTHON, str(BENCH / "fleet_load.py"), "--port", str(port), "--pid", str(proc.pid),
               "--sandboxes", str(sandboxes), "--seconds", str(args.seconds), "--clients", str(args.clients),
               "--warmup", str(args.warmup), "--gc-file", str(probe_file), "--tag", f"{version.name[0]}{rep}",
               "--max-rss-mib", str(args.max_rss_mib), "--out", str(result_file)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"load generator failed ({tag}):\n{done.stderr[-3000:]}")
        out.update(json.loads(result_file.read_text()))
        out.pop("gc_first", None)
        out.pop("gc_last", None)
        out.update(drop_sandboxes(port, proc.pid, probe_file, args.settle))
        out["log_tracebacks"], out["log_errors"] = log_problems(RESULTS / f"fleet-{tag}.log.raw")
    finally:
        run.stop(proc)
    out["load_after"] = load_avg()
    return out


def drop_sandboxes(port, pid, probe_file, settle):
    """DELETE /_mock/sandboxes, `settle` seconds, then RSS; the collector's pauses meanwhile."""
    first = gcpauses.ask(probe_file, pid)
    began = time.perf_counter()
    status = run.call(port, "DELETE", "/_mock/sandboxes", headers={}, timeout=600)[0]
    took = time.perf_counter() - began
    time.sleep(settle)
    out = {"delete_status": status, "delete_ms": round(took * 1e3, 1), "rss_after_delete_mib": run.rss_mib(pid)}
    last = gcpauses.ask(probe_file, pid)
    if first and last:
        out["gc_delete"] = gcpauses.window(first, last)
    return out


def mix(args, versions, rows):
    """The mix runs, appended to `rows` as they end (a failure keeps those already made)."""
    for rep in range(args.runs):
        for sandboxes in args.sandboxes:
            for version in versions:
                print(f"  mix: {version.name}, {sandboxes} sandboxes, run {rep + 1}/{args.runs} "
                      f"({args.seconds} s, load average {load_avg()}) ...", flush=True)
                row = mix_run(args, version, sandboxes, rep)
                rows.append(row)
                print(f"    {row['rps']:,.0f} req/s, server CPU {row['cpu_us_per_request']:.1f} us/request "
                      f"(server busy {row['server_busy']:.0%}, client {row['client_busy']:.0%} of a core), "
                      f"p50 {row['latency']['p50_ms']:.2f} ms p99 {row['latency']['p99_ms']:.2f} ms, "
                      f"RSS {row['rss_start_mib']} -> {row['rss'][-1][1]} -> {row['rss_after_delete_mib']} MiB "
                      f"after DELETE, largest gc pause {max_pause(row)}, 5xx {row['server_errors']}, "
                      f"unexpected {row['unexpected']}", flush=True)


def max_pause(row):
    gc = row.get("gc")
    if not gc:
        return "n/a"
    if not sum(gc["count"]):
        return "none (no collection)"
    gen = max(range(3), key=lambda g: gc["max_ms"][g] or 0)
    bound = "<" if gc["max_is_bound"][gen] else ""
    return f"{bound}{gc['max_ms'][gen]} ms (gen {gen})"


# ------------------------------------------------------------------ part growth
def growth_cell(args, version, family, size):
    """One (version, family, size) in a fresh process on CPU 0."""
    calls = args.calls if size < 100_000 else args.calls_large
    cmd = ["taskset", "-c", "0", PYTHON, str(BENCH / "fleet_growth.py"), "--family", family, "--size", str(size),
           "--calls", str(calls)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=version.path,
                          env=clean_env(PYTHONPATH=str(version.path)))
    line = next((x for x in done.stdout.splitlines() if x.startswith("GROWTH ")), None)
    if line is None:
        sys.exit(f"growth cell {version.name} {family} {size} failed:\n{done.stderr[-3000:]}")
    out = json.loads(line[7:])
    if not Path(out["mockserver"]).resolve().is_relative_to(version.path.resolve()):
        sys.exit(f"growth cell {version.name} imported mockserver from {out['mockserver']}")
    out["version"] = version.name
    out["load"] = load_avg()
    return out


def growth(args, versions, cells):
    """The growth cells, appended to `cells` as they end."""
    for size in args.sizes:
        for family in fleet_growth.FAMILIES:
            for rep in range(args.runs):
                for version in versions:
                    cell = growth_cell(args, version, family, size)
                    cell["run"] = rep
                    cells.append(cell)
                    ops = cell["ops"]
                    print(f"  growth: {version.name:6} {family:12} {cell['siblings']:>7,} siblings: " +
                          ", ".join(f"{op} {v['p50_ms']:.3f}/{v['p99_ms']:.3f}" for op, v in ops.items()) +
                          f" ms (p50/p99, {cell['calls']} calls; filled in {cell['fill_s']:.1f} s)", flush=True)


# ------------------------------------------------------------------ report
def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def ratio(after, before):
    return f"{after / before:.2f}" if after is not None and before else "-"


def mix_summary(rows):
    """Per (sandboxes, version): medians over the runs (max for maxima), statuses summed."""
    out = {}
    for row in rows:
        out.setdefault((row["sandboxes"], row["version"]), []).append(row)
    summary = {}
    for key, runs in out.items():
        gc_max = [max(r["gc"]["max_ms"][g] or 0 for r in runs if r.get("gc")) if any(r.get("gc") for r in runs)
                  else None for g in range(3)]
        summary[key] = {
            "runs": len(runs), "rps": med(r["rps"] for r in runs), "cpu_us": med(r["cpu_us_per_request"] for r in runs),
            "requests": med(r["requests"] for r in runs),
            "server_busy": med(r["server_busy"] for r in runs), "client_busy": med(r["client_busy"] for r in runs),
            "client_us": med(r["client_cpu_us_per_request"] for r in runs),
            "p50": med(r["latency"]["p50_ms"] for r in runs), "p99": med(r["latency"]["p99_ms"] for r in runs),
            "max": max(r["latency"]["max_ms"] for r in runs),
            "rss_start": med(r["rss_start_mib"] for r in runs), "rss_created": med(r["rss_created_mib"] for r in runs),
            "rss_end": med(r["rss"][-1][1] for r in runs), "rss_peak": max(max(x[1] for x in r["rss"]) for r in runs),
            "rss_deleted": med(r["rss_after_delete_mib"] for r in runs),
            "delete_ms": med(r["delete_ms"] for r in runs),
            "gc_max": gc_max,
            "gc_bound": [all(r["gc"]["max_is_bound"][g] for r in runs if r.get("gc")) for g in range(3)],
            "gc_count": [med(r["gc"]["count"][g] for r in runs if r.get("gc")) for g in range(3)],
            "gc_delete": delete_pauses(runs),
            "server_errors": sum(r["server_errors"] for r in runs), "unexpected": sum(r["unexpected"] for r in runs),
            "socket_errors": sum(r["socket_errors"] for r in runs),
            "tracebacks": sum(r["log_tracebacks"] for r in runs),
            "stopped_early": [r["stopped_early"] for r in runs if r["stopped_early"]],
            "slices": slices_median(runs), "by_request": requests_summed(runs)}
    return summary


def delete_pauses(runs):
    """The collections while DELETE /_mock/sandboxes ran and in the seconds after it: "none" or the largest."""
    windows = [r["gc_delete"] for r in runs if r.get("gc_delete")]
    if not windows:
        return "n/a"
    if not any(sum(w["count"]) for w in windows):
        return "no collection"
    worst = max((w["max_ms"][g] or 0, w["max_is_bound"][g], g) for w in windows for g in range(3) if w["count"][g])
    return f"{'<' if worst[1] else ''}{fmt(worst[0], 2)} ms (gen {worst[2]})"


def slices_median(runs):
    """The slices of the runs, slice by slice: median req/s, CPU per request, p99 and RSS."""
    count = min(len(r["slices"]) for r in runs)
    out = []
    for i in range(count):
        parts = [r["slices"][i] for r in runs]
        out.append({"t_start": parts[0]["t_start"], "t_end": parts[0]["t_end"], "rps": med(p["rps"] for p in parts),
                    "cpu_us": med(p["cpu_us_per_request"] for p in parts), "p99": med(p["p99_ms"] for p in parts),
                    "rss": med(p["rss_mib"] for p in parts)})
    return out


def requests_summed(runs):
    out = {}
    for r in runs:
        for name, figures in r["by_request"].items():
            slot = out.setdefault(name, {"n": 0, "statuses": {}, "p50": [], "p99": []})
            slot["n"] += figures["n"]
            slot["p50"].append(figures.get("p50_ms"))
            slot["p99"].append(figures.get("p99_ms"))
            for status, n in figures["statuses"].items():
                slot["statuses"][status] = slot["statuses"].get(status, 0) + n
    return {name: {"n": s["n"], "statuses": s["statuses"], "p50": med(s["p50"]), "p99": med(s["p99"])}
            for name, s in out.items()}


def gc_text(s):
    """Largest pause per generation: "-" without collections, "<x" when all were under 1 ms."""
    if s["gc_max"][0] is None:
        return "n/a"
    return " / ".join("-" if not s["gc_count"][g] else f"{'<' if s['gc_bound'][g] else ''}{fmt(s['gc_max'][g], 2)}"
                      for g in range(3))


def mix_markdown(report):
    args, rows = report["args"], report["mix"]
    summary = mix_summary(rows)
    versions = [v for v in ("before", "after") if any(r["version"] == v for r in rows)]
    weights = sum(fleet_load.OPS.values())
    lines = ["## mix: a CI fleet's traffic over HTTP", "",
             f"`mockserver serve --rate-limit {run.RATE}`, every other setting at its default (no MOCKSERVER_* "
             "variables" + "".join(f"; {pair}" for pair in args.get("serve_env", [])) + "), pinned to CPU 0; the load generator (bench/fleet_load.py: one Python process, "
             f"{args['clients']} keep-alive connections, HTTP/1.1 written by hand on uvloop) on CPU 1. Each run: "
             f"the sandboxes `fleet-0`.. made by one request each, {args['warmup']} s of warm-up, then "
             f"{args['seconds']} s timed; {args['runs']} run(s) per row, before and after alternating. Every request "
             "picks a sandbox at random (X-Mock-Sandbox). The mix, in shares of the requests: " +
             ", ".join(f"{name} {w / weights:.0%}" for name, w in fleet_load.OPS.items()) +
             " (status, deploy, history: application `web`; commits: job `nightly-report`; variable and "
             "secret: a create with a new key, or the delete of an earlier one of the same sandbox; journal: "
             "`GET /_mock/calls?limit=20`; projects: the organization's list).", "",
             "**Server CPU µs/request** (user + system time of the server process over the requests it answered, "
             "background work included) is the figure to compare: the machine has 2 cores and other work may run "
             "on them, which moves req/s and latency far more than CPU per request. \"busy\": the server's CPU "
             "time over the wall time (near 100 %: the server, not the client, was the limit); client: the load "
             "generator's CPU time over the wall time, and per request. requests: answered in the timed window (RSS "
             "grows with the calls each sandbox's journal keeps: compare RSS at equal requests, or after the "
             "journals reach their bound).", "",
             "| sandboxes | version | requests | req/s | server CPU µs/req | after/before | server busy "
             "| client CPU (µs/req) "
             "| p50 ms | p99 ms | max ms | RSS MiB: start / sandboxes made / end / peak / 5 s after DELETE "
             "| DELETE ms | largest gc pause ms (gen 0 / 1 / 2) | collections (0 / 1 / 2) | 5xx | unexpected "
             "| socket errors |",
             "| ---: | --- |" + " ---: |" * 9 + " --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for sandboxes in args["sandboxes"]:
        for version in versions:
            s = summary.get((sandboxes, version))
            if s is None:
                continue
            base = summary.get((sandboxes, "before"))
            lines.append(
                f"| {sandboxes} | {version} | {fmt(s['requests'], 0)} | {fmt(s['rps'], 0)} | {fmt(s['cpu_us'])} | "
                f"{ratio(s['cpu_us'], base['cpu_us']) if base and version == 'after' else ''} | "
                f"{s['server_busy']:.0%} | {s['client_busy']:.0%} ({fmt(s['client_us'])}) | {fmt(s['p50'], 2)} | "
                f"{fmt(s['p99'], 2)} | {fmt(s['max'], 1)} | {fmt(s['rss_start'])} / {fmt(s['rss_created'])} / "
                f"{fmt(s['rss_end'])} / {fmt(s['rss_peak'])} / {fmt(s['rss_deleted'])} | {fmt(s['delete_ms'], 0)} | "
                f"{gc_text(s)} | {' / '.join(fmt(c, 0) for c in s['gc_count'])} | {s['server_errors']} | "
                f"{s['unexpected']} | {s['socket_errors']} |")
    notes = [f"{sandboxes} sandboxes, {version}: stopped early: {'; '.join(s['stopped_early'])}"
             for (sandboxes, version), s in summary.items() if s["stopped_early"]]
    notes += [f"{sandboxes} sandboxes, {version}: {s['tracebacks']} traceback(s) in the server log"
              for (sandboxes, version), s in summary.items() if s["tracebacks"]]
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    lines += ["", "Largest pauses: of the timed window; \"<x\" when every pause of that generation was under 1 ms "
              "(x: the upper bound of the histogram bucket of the largest). The largest pause while DELETE "
              "/_mock/sandboxes ran and in the 5 s after it: " +
              "; ".join(f"{sb} sandboxes {v}: {s['gc_delete']}" for (sb, v), s in summary.items()) + "."]
    for sandboxes in args["sandboxes"]:
        lines += slices_markdown(summary, sandboxes, versions)
        lines += requests_markdown(summary, sandboxes, versions)
    return lines


def slices_markdown(summary, sandboxes, versions):
    """Slice by slice: does CPU per request stay flat, does RSS level off?"""
    have = [v for v in versions if (sandboxes, v) in summary]
    if not have:
        return []
    head = "| slice (s) | " + " | ".join(f"{v} req/s | {v} CPU µs/req | {v} p99 ms | {v} RSS MiB" for v in have) + " |"
    lines = ["", f"### {sandboxes} sandboxes: by slice of the timed window (medians over the runs)", "", head,
             "| --- |" + " ---: |" * (4 * len(have))]
    count = max(len(summary[sandboxes, v]["slices"]) for v in have)
    for i in range(count):
        cells, label = [], None
        for v in have:
            parts = summary[sandboxes, v]["slices"]
            if i < len(parts):
                p = parts[i]
                label = label or f"{p['t_start']:.0f}-{p['t_end']:.0f}"
                cells.append(f"{fmt(p['rps'], 0)} | {fmt(p['cpu_us'])} | {fmt(p['p99'], 2)} | {fmt(p['rss'])}")
            else:
                cells.append("| | |")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def requests_markdown(summary, sandboxes, versions):
    have = [v for v in versions if (sandboxes, v) in summary]
    names = sorted({name for v in have for name in summary[sandboxes, v]["by_request"]})
    lines = ["", f"### {sandboxes} sandboxes: by request (all runs; latency medians over the runs)", "",
             "| request | " + " | ".join(f"{v}: n | {v}: p50 / p99 ms | {v}: statuses" for v in have) + " |",
             "| --- |" + " ---: | ---: | --- |" * len(have)]
    for name in names:
        cells = []
        for v in have:
            r = summary[sandboxes, v]["by_request"].get(name)
            if r is None:
                cells.append("| | ")
                continue
            statuses = ", ".join(f"{k}: {n:,}" for k, n in sorted(r["statuses"].items()))
            cells.append(f"{r['n']:,} | {fmt(r['p50'], 2)} / {fmt(r['p99'], 2)} | {statuses}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def growth_markdown(report):
    cells = report["growth"]
    versions = [v for v in ("before", "after") if any(c["version"] == v for c in cells)]
    grouped = {}
    for c in cells:
        grouped.setdefault((c["family"], c["size"], c["version"]), []).append(c)
    lines = ["", "## growth: cost of a request against the number of its siblings (in-process)", "",
             "Through the whole ASGI app without network (bench/fleet_growth.py), one fresh process per version, "
             "family and size, on CPU 0, manual clock, gc set as `mockserver serve` sets it. The siblings: one "
             "record created through the API, the rest copies of it added straight to the store "
             "(`Table.add(Entry(...))`, in both versions; an application's copies with a copy of its built-in "
             "variable), then a full collection. Then rounds of create (POST), read of a random sibling (GET), "
             "list page 1 (`?page=1&page_size=20`), delete of a random sibling (DELETE), after 20 untimed "
             "rounds; each call timed around the ASGI call (wall clock, time.perf_counter; \"p99 CPU\": the "
             "thread's CPU time, which a preemption by another process on this shared machine does not "
             "inflate: a wall p99 near 4 ms with a small CPU p99 is such a preemption); after each round, "
             "untimed, the clock moves 60 s (an application's delete is a deployment request: on a stopped "
             "clock they pile up in the environment's queue and each delete costs more than the one before). "
             "\"siblings\": records under "
             "the parent (fixture records included); \"listed\": the list's total_count (applications: the "
             "services that are applications).", "",
             "| family | siblings (listed) | request | " +
             " | ".join(f"{v} p50 ms | {v} p99 ms | {v} p99 CPU ms" for v in versions) +
             (" | after/before p50 |" if len(versions) == 2 else " |") + " calls | largest gc pause ms |",
             "| --- | ---: | --- |" + " ---: | ---: | ---: |" * len(versions) +
             (" ---: |" if len(versions) == 2 else "") + " ---: | ---: |"]
    for family in fleet_growth.FAMILIES:
        for size in report["args"]["sizes"]:
            runs = {v: grouped.get((family, size, v), []) for v in versions}
            if not all(runs.values()):
                continue
            first = runs[versions[-1]][0]
            for op in first["ops"]:
                p50 = {v: med(c["ops"][op]["p50_ms"] for c in runs[v]) for v in versions}
                p99 = {v: med(c["ops"][op]["p99_ms"] for c in runs[v]) for v in versions}
                cpu99 = {v: med(c["ops"][op].get("cpu_p99_ms") for c in runs[v]) for v in versions}
                cells = " | ".join(f"{fmt(p50[v], 3)} | {fmt(p99[v], 3)} | {fmt(cpu99[v], 3)}" for v in versions)
                rat = f" | {ratio(p50['after'], p50['before'])}" if len(versions) == 2 else ""
                lines.append(f"| {family} | {first['siblings']:,} ({first['listed_total']:,}) | {op} | {cells}{rat} | "
                             f"{sum(c['ops'][op]['n'] for c in runs[versions[0]])} | {cell_pauses(runs, versions)} |")
    lines += ["", "Families: " + "; ".join(f"{name}: {f.label}" for name, f in fleet_growth.FAMILIES.items()) + "."]
    return lines


def cell_pauses(runs, versions):
    """The largest collector pause of a growth cell's timed rounds, per version ("none": no collection)."""
    out = []
    for v in versions:
        gcs = [c["gc"] for c in runs[v]]
        if not any(sum(g["count"]) for g in gcs):
            out.append(f"{v} none")
            continue
        worst = max((g["max_ms"][gen] or 0, g["max_is_bound"][gen]) for g in gcs for gen in range(3) if g["count"][gen])
        out.append(f"{v} {'<' if worst[1] else ''}{fmt(worst[0], 2)}")
    return ", ".join(out)


def markdown(report):
    lines = [f"# Fleet-scale benchmark (bench/fleet.py), {report['date']}", "",
             f"`{report['command']}` on {report['cpus']} CPUs, load average {report['load_before']} before and "
             f"{report['load_after']} after. "
             + " ".join(f"{label}." for label in report.get("versions", {}).values()), ""]
    if report.get("error"):
        lines += [f"**Incomplete**: the run stopped on an error: `{report['error'].splitlines()[0]}`", ""]
    if report.get("mix"):
        lines += mix_markdown(report)
    if report.get("growth"):
        lines += growth_markdown(report)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ main
def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="mix,growth", help="parts, comma-separated: mix, growth")
    parser.add_argument("--sandboxes", default="50,500", help="sandbox counts of the mix (default 50,500)")
    parser.add_argument("--seconds", type=int, default=60, help="timed seconds per mix run (default 60)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent keep-alive connections (default 16)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of the mix before the timed window")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after DELETE /_mock/sandboxes before RSS")
    parser.add_argument("--runs", type=int, default=1, help="runs per version and setting (default 1)")
    parser.add_argument("--sizes", default=SIZES, help=f"sibling counts of the growth part (default {SIZES})")
    parser.add_argument("--calls", type=int, default=300, help="timed rounds per growth cell (default 300)")
    parser.add_argument("--calls-large", type=int, default=300,
                        help="timed rounds per growth cell at 100,000 siblings or more (default 300)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE,
                        help=f"commit to compare with (default {DEFAULT_BASELINE})")
    parser.add_argument("--no-baseline", action="store_true", help="measure the checkout only")
    parser.add_argument("--after", help="measure this commit (in a temporary worktree) as \"after\" instead of "
                                        "the checkout (e.g. while the checkout is being edited)")
    parser.add_argument("--max-rss-mib", type=float, default=None,
                        help="end a mix window early when the server's RSS passes this (default: 8192 or 60%% of "
                             "the available memory, whichever is less)")
    parser.add_argument("--serve-env", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable for every server of the mix (repeatable), e.g. MOCKSERVER_ALLOCATOR=pymalloc")
    parser.add_argument("--out", default="fleet", help="name of the result files in bench/results/ (default fleet)")
    args = parser.parse_args()
    args.only = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(args.only) - {"mix", "growth"}
    if unknown:
        parser.error(f"unknown part(s) {', '.join(sorted(unknown))}: use mix, growth")
    args.sandboxes = [int(x) for x in args.sandboxes.split(",")]
    SERVE_ENV.update(pair.split("=", 1) for pair in args.serve_env)
    args.sizes = [int(x) for x in args.sizes.split(",")]
    if args.max_rss_mib is None:
        args.max_rss_mib = min(8192.0, available_mib() * 0.6)
    return args


def available_mib():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 8192.0


def main():
    args = parse()
    if not shutil.which("taskset"):
        sys.exit("taskset is missing (util-linux)")
    if not Path(PYTHON).exists():
        sys.exit("the project's venv is missing: make .venv/.installed")
    RESULTS.mkdir(exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "load_before": load_avg(),
              "command": " ".join(["bench/fleet.py", *sys.argv[1:]]), "args": dict(vars(args))}
    versions = []
    failed = None
    try:
        if not args.no_baseline:
            versions.append(checkout(args.baseline, "before"))
        versions.append(checkout(args.after, "after") if args.after else current())
        report["versions"] = {v.name: v.label for v in versions}
        for label in report["versions"].values():
            print(label, flush=True)
        print("The figure to compare is the server's CPU time per request (the machine has 2 cores; other work "
              "moves req/s and latency).", flush=True)
        for part, measure in (("mix", mix), ("growth", growth)):
            if part in args.only:
                measure(args, versions, report.setdefault(part, []))
    except SystemExit as error:                  # what was measured before the failure is still written
        failed = report["error"] = str(error.code)
    finally:
        for version in versions:
            if version.worktree:
                remove_worktree(version.path)
    report["load_after"] = load_avg()
    if report.get("mix") or report.get("growth"):
        text = markdown(report)
        (RESULTS / f"{args.out}.md").write_text(text)
        (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1) + "\n")
        print("\n" + text + f"\nwritten: bench/results/{args.out}.md, bench/results/{args.out}.json")
    if failed:
        sys.exit(f"incomplete: {failed}")


if __name__ == "__main__":
    main()
