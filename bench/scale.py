#!/usr/bin/env python3
"""Scale-out benchmark: the mixed load through the sandbox router (HAProxy) in front of 1 and 2 replicas,
against one replica reached directly, and the memory a sandbox costs.

    python bench/scale.py                      # about 2 minutes
    python bench/scale.py --runs 5 --seconds 5

Setups (2 CPUs here): `direct` replica on CPU 0, wrk on CPU 1; `router-1` replica on CPU 0, HAProxy and
wrk on CPU 1; `router-2` replicas on CPU 0 and CPU 1, HAProxy and wrk unpinned (no core is left for
them). The mixed load: requests a, b, c, d of bench/run.py in turn, each in the next of 20 sandboxes
(`/sandbox/bench-N`), wrk -t1 -c16. Besides req/s, the CPU time each process used per 1,000 requests
(from /proc/<pid>/stat) gives the router's own cost independently of how the machine shares its cores.
Results: a table on stdout, bench/results/scale.md and bench/results/scale.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "deploy"))
import haproxy_cfg  # noqa: E402
import run  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
# name -> (CPU list of each replica, CPU list of HAProxy or None for direct access, CPU list of wrk)
SETUPS = {
    "direct": (["0"], None, "1"),
    "router-1": (["0"], "1", "1"),
    "router-2": (["0", "1"], "0,1", "0,1"),
}


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK       # utime + stime


def wait_until(check, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}")


def start_replicas(cpus, port, log):
    """Replicas mock-0.. on CPU lists `cpus`, listening on port+1, port+2, ..."""
    procs = []
    for n, cpu in enumerate(cpus):
        cmd = ["taskset", "-c", cpu, run.MOCK, "serve", "--port", str(port + 1 + n), "--replica-name", f"mock-{n}",
               "--rate-limit", run.RATE]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=log, cwd=run.ROOT))
    for n in range(len(cpus)):
        wait_until(lambda: run.call(port + 1 + n, "GET", "/_mock/health", headers={}, timeout=1)[0] == 200,
                   f"replica mock-{n} on port {port + 1 + n}")
    return procs


def start_router(cpu, replicas, port, log):
    config = run.RESULTS / f"scale-haproxy-{port}.cfg.raw"
    config.write_text(haproxy_cfg.render([(f"mock-{n}", f"127.0.0.1:{port + 1 + n}") for n in range(replicas)],
                                         f"127.0.0.1:{port}", hop_prefix=f"bench-{port}"))
    proc = subprocess.Popen(["taskset", "-c", cpu, "haproxy", "-db", "-f", str(config)], stdout=log, stderr=log)

    def all_up():
        status, body = run.call(port, "GET", "/_router/replicas", headers={}, timeout=1)
        return status == 200 and all(r["up"] for r in json.loads(body)["replicas"])
    wait_until(all_up, "the router to see every replica up")
    return proc


def wrk(port, cpus, spec, tag, secs):
    cmd = ["taskset", "-c", cpus, "wrk", "-t1", "-c16", f"-d{secs}s", "--timeout=10s", "-s",
           str(BENCH / "requests.lua"), f"http://127.0.0.1:{port}", "--", "mixed", spec, tag, "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result = json.loads(next(line[7:] for line in out.splitlines() if line.startswith("RESULT ")))
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


class Setup:
    """The processes of one setup, all started before the first run (idle ones cost nothing), so that the
    runs of every setup can alternate and the machine's noise spreads over all of them."""

    def __init__(self, name, port, log):
        self.name, (replica_cpus, router_cpu, self.wrk_cpus) = name, SETUPS[name]
        self.replicas = start_replicas(replica_cpus, port, log)
        self.router = start_router(router_cpu, len(replica_cpus), port, log) if router_cpu else None
        self.target = port if self.router else port + 1
        self.runs = []

    def processes(self):
        return self.replicas + ([self.router] if self.router else [])

    def once(self, spec, tag, secs):
        before = {p.pid: cpu_seconds(p.pid) for p in self.processes()}
        result = wrk(self.target, self.wrk_cpus, spec, tag, secs)
        used = {pid: cpu_seconds(pid) - seconds for pid, seconds in before.items()}
        result["replica_cpu_ms_per_1k"] = sum(used[p.pid] for p in self.replicas) / result["requests"] * 1e6
        result["router_cpu_ms_per_1k"] = used[self.router.pid] / result["requests"] * 1e6 if self.router else 0.0
        result["errors"] = run.errors_of(result, 401)
        return result

    def placement(self, sandboxes):
        """Sandboxes per replica (X-Mock-Replica of each sandbox's reply)."""
        spread = {}
        for n in range(sandboxes):
            conn = run.http.client.HTTPConnection("127.0.0.1", self.target, timeout=10)
            conn.request("GET", f"/sandbox/bench-{n}/_mock/health")
            replica = conn.getresponse().getheader("X-Mock-Replica")
            conn.close()
            spread[replica] = spread.get(replica, 0) + 1
        return spread

    def row(self, sandboxes):
        runs = self.runs
        rps = [r["rps"] for r in runs]
        return {"setup": self.name, "rps": statistics.median(rps), "rps_min": min(rps), "rps_max": max(rps),
                "p50_ms": statistics.median(r["p50_us"] for r in runs) / 1000,
                "p99_ms": statistics.median(r["p99_us"] for r in runs) / 1000,
                "replica_cpu_ms_per_1k": statistics.median(r["replica_cpu_ms_per_1k"] for r in runs),
                "router_cpu_ms_per_1k": statistics.median(r["router_cpu_ms_per_1k"] for r in runs),
                "errors": sum(r["errors"] for r in runs), "requests": sum(r["requests"] for r in runs),
                "sandboxes_per_replica": self.placement(sandboxes) if self.router else {}, "runs": runs}


def throughput(args):
    spec = f"{args.sandboxes}:{run.ORG}:{run.PROJECT}:{run.APP}"
    setups = []
    with open(run.RESULTS / "scale.log.raw", "w") as log:
        try:
            for n, name in enumerate(SETUPS):
                setups.append(Setup(name, args.port + 10 * n, log))
            for setup in setups:
                for n in range(args.sandboxes):   # create the sandboxes first: creation is not the load
                    status, _ = run.call(setup.target, "GET", f"/sandbox/bench-{n}/organization/{run.ORG}/project")
                    assert status == 200, status
                setup.once(spec, f"{setup.name}_warm", 1)
            for rep in range(args.runs):          # round robin over the setups
                for setup in setups:
                    setup.runs.append(setup.once(spec, f"{setup.name}_{rep}", args.seconds))
            rows = [setup.row(args.sandboxes) for setup in setups]
        finally:
            for setup in setups:
                for proc in setup.processes():
                    run.stop(proc)
    for row in rows:
        print(f"  {row['setup']:9} {row['rps']:8.0f} req/s ({row['rps_min']:.0f}-{row['rps_max']:.0f})  replica CPU "
              f"{row['replica_cpu_ms_per_1k']:.0f} ms/1k req, router CPU {row['router_cpu_ms_per_1k']:.0f} ms/1k req, "
              f"errors {row['errors']} {row['sandboxes_per_replica'] or ''}", flush=True)
    return rows


def memory(args):
    """RSS of one replica: started, after one request in each of 100 sandboxes, after the client flow in each,
    after 10,000 more calls in one sandbox (the journal keeps the last 10,000 calls of each sandbox)."""
    port = args.port + 1
    out = {}
    with open(run.RESULTS / "scale-memory.log.raw", "w") as log:
        (proc,) = start_replicas(["0"], args.port, log)
        try:
            run.call(port, "GET", f"/organization/{run.ORG}/project")
            out["start"] = run.rss_mib(proc.pid)
            for n in range(100):
                assert run.call(port, "GET", f"/sandbox/mem-{n}/organization/{run.ORG}/project")[0] == 200
            out["100 sandboxes, one request each"] = run.rss_mib(proc.pid)
            for n in range(100):
                box = f"/sandbox/mem-{n}"
                project = json.loads(run.call(port, "POST", f"{box}/organization/{run.ORG}/project", {"name": "p"})[1])
                env = json.loads(run.call(port, "POST", f"{box}/project/{project['id']}/environment", {"name": "e"})[1])
                app = json.loads(run.call(port, "POST", f"{box}/environment/{env['id']}/application", {
                    "name": "a", "git_repository": {"url": "https://git.example.com/a.git", "branch": "main"}})[1])
                assert run.call(port, "POST", f"{box}/application/{app['id']}/deploy", {})[0] == 202
            out["100 sandboxes after the client flow"] = run.rss_mib(proc.pid)
            run.wrk(port, "get", f"/sandbox/mem-0/application/{run.APP}/status", stop_after=10_000, secs=300)
            out["then 10,000 more calls in one sandbox (its journal full)"] = run.rss_mib(proc.pid)
        finally:
            run.stop(proc)
    out["mib_per_sandbox"] = round((out["100 sandboxes after the client flow"] - out["start"]) / 100, 2)
    out["kib_per_journaled_call"] = round((out["then 10,000 more calls in one sandbox (its journal full)"]
                                           - out["100 sandboxes after the client flow"]) * 1024 / 10_000, 1)
    print(f"  memory: {out}", flush=True)
    return out


def markdown(report):
    direct = next(r for r in report["setups"] if r["setup"] == "direct")
    lines = [f"Scale-out benchmark of {report['date']} on {report['cpus']} CPUs (load average "
             f"{report['load_before']:.1f} before). Mixed load (a, b, c, d in turn over {report['sandboxes']} "
             f"sandboxes), wrk -t1 -c16, {report['runs']} runs of {report['seconds']} s, median and min-max.", "",
             "| setup | req/s | spread | vs direct | p50 ms | p99 ms | replica CPU ms / 1k req | router CPU ms / 1k req |"
             " errors | sandboxes per replica |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in report["setups"]:
        lines.append(f"| {r['setup']} | {r['rps']:.0f} | {r['rps_min']:.0f}-{r['rps_max']:.0f} | "
                     f"{r['rps'] / direct['rps']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                     f"{r['replica_cpu_ms_per_1k']:.0f} | {r['router_cpu_ms_per_1k']:.0f} | {r['errors']} | "
                     f"{r['sandboxes_per_replica'] or '-'} |")
    if report.get("memory"):
        lines += ["", "Resident memory of one replica (MiB): " +
                  ", ".join(f"{k}: {v}" for k, v in report["memory"].items())]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--sandboxes", type=int, default=20)
    parser.add_argument("--port", type=int, default=18180,
                        help="first port: setup n uses port+10n (router) and the next ports (replicas)")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    for tool in ("wrk", "haproxy", "taskset"):
        if not run.shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is missing: sudo apt-get install -y {'util-linux' if tool == 'taskset' else tool}")
    run.RESULTS.mkdir(exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), "runs": args.runs,
              "seconds": args.seconds, "sandboxes": args.sandboxes, "load_before": os.getloadavg()[0]}
    report["setups"] = throughput(args)
    if not args.no_memory:
        report["memory"] = memory(args)
    report["load_after"] = os.getloadavg()[0]
    text = markdown(report)
    (run.RESULTS / "scale.md").write_text(text)
    (run.RESULTS / "scale.json").write_text(json.dumps(report, indent=1) + "\n")
    print("\n" + text + "\nwritten: bench/results/scale.md, bench/results/scale.json")


if __name__ == "__main__":
    main()
