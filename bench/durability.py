"""What the change log costs an acknowledged write: `mockserver serve` over HTTP, once per mode, in one run.

    .venv/bin/python bench/durability.py [--writes 2000] [--clients 1,8] [--rounds 3] [--baseline REV]

With `--baseline REV`, that commit (checked out into a temporary git worktree, run with this venv) is measured
in the same run, mode by mode, alternating with the checkout: the figures of both, side by side.

Modes: no state file; `--state-file` with `--durability off` (only the periodic save, as before the change
log); `write` (each change handed to the kernel before its reply); `fsync` (on disk, by group commit). Each
client sends POST environment variable (a write the log must keep) on its own keep-alive connection; the
figures are the p50 and p99 of a write's latency and the writes per second of all clients together, the
median of the rounds. The folder of the state file is a temporary one (tmpfs or disk: said in the output).
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
ADMIN = {"Authorization": "Token mock-admin-token"}
MODES = {"no state file": None, "off": "off", "write": "write", "fsync": "fsync"}


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(folder, mode, tree=ROOT):
    port = free_port()
    args = [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--log-level", "warning",
            "--rate-limit", "1000000000/3600"]
    if mode is not None:
        args += ["--state-file", os.path.join(folder, f"state-{mode}-{tree.name}.bin"), "--durability", mode]
    process = subprocess.Popen(args, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(tree)})
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/_mock/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"the mock did not start in mode {mode}")


def client(url, count, tag, latencies):
    with httpx.Client(base_url=f"{url}/api/v1", headers=ADMIN) as http:
        for index in range(count):
            started = time.perf_counter()
            reply = http.post(f"/project/{PROJECT}/environmentVariable", json={"key": f"K_{tag}_{index}", "value": "v"})
            latencies.append(time.perf_counter() - started)
            assert reply.status_code == 201, reply.text


def one_round(url, writes, clients):
    latencies = []
    threads = [threading.Thread(target=client, args=(url, writes // clients, f"{time.time_ns()}_{n}", latencies))
               for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)], len(latencies) / seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", help="a commit measured in the same run, alternating with the checkout")
    args = parser.parse_args()
    trees = [("checkout", ROOT)]
    if args.baseline:
        trees.insert(0, (f"{args.baseline}", worktree(args.baseline)))
    try:
        measure(args, trees)
    finally:
        for _, tree in trees[:-1]:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def worktree(rev):
    tree = Path(tempfile.mkdtemp(prefix="bench-durability-"))
    tree.rmdir()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True,
                   capture_output=True)
    return tree


def measure(args, trees):
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_STATE_DIR")) as folder:
        kind = subprocess.run(["stat", "-f", "-c", "%T", folder], capture_output=True, text=True).stdout.strip()
        print(f"state folder {folder} ({kind}); load {os.getloadavg()[0]:.1f}; {args.writes} writes a round")
        print("| mode | clients | tree | p50 ms | p99 ms | writes/s |\n|---|---:|---|---:|---:|---:|")
        for clients in [int(n) for n in args.clients.split(",")]:
            for name, mode in MODES.items():
                for label, tree in trees:
                    process, url = serve(folder, mode, tree)
                    try:
                        one_round(url, min(200, args.writes), clients)          # warm-up
                        runs = [one_round(url, args.writes, clients) for _ in range(args.rounds)]
                    finally:
                        process.terminate()
                        process.wait(timeout=30)
                    p50, p99, rate = (statistics.median(run[i] for run in runs) for i in range(3))
                    print(f"| {name} | {clients} | {label} | {p50 * 1000:.2f} | {p99 * 1000:.2f} | {rate:,.0f} |",
                          flush=True)


if __name__ == "__main__":
    main()
