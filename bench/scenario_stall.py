#!/usr/bin/env python3
"""Does one tenant's large scenario document hold the other tenants' requests?

    .venv/bin/python bench/scenario_stall.py --rules 1000
    .venv/bin/python bench/scenario_stall.py --rules 12000 --tree /path/to/another/checkout

Starts `mockserver serve` (from --tree, default this checkout) on a free port, then reads
`GET /sandbox/other/organization` in a loop on one connection while another client sends
`PUT /sandbox/big/_mock/scenarios/many` with a document of --rules one-line rules. Prints how long
the PUT took, its status, and the longest and median read of the other sandbox meanwhile. A read that
waits past --timeout seconds is counted as that long (the loop goes on).
"""
import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TOKEN = {"Authorization": "Token mock-admin-token"}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def document(rules):
    rule = "  - {match: {operation: getApplicationStatus, nth: %d}, effect: {status: 500}}\n"
    return "name: many\nrules:\n" + "".join(rule % (n + 1) for n in range(rules))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", type=int, default=1000)
    parser.add_argument("--tree", default=str(ROOT), help="the checkout whose mockserver to run (PYTHONPATH)")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port)], cwd=args.tree,
                              env={**os.environ, "PYTHONPATH": args.tree}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                httpx.get(f"{url}/_mock/health")
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        reads, done = [], threading.Event()

        def poll():
            with httpx.Client(base_url=url, headers=TOKEN, timeout=args.timeout) as client:
                client.get("/sandbox/other/organization")          # the sandbox made before the measure
                while not done.is_set():
                    began = time.perf_counter()
                    try:
                        client.get("/sandbox/other/organization")
                    except httpx.TimeoutException:
                        pass
                    reads.append(time.perf_counter() - began)
        reader = threading.Thread(target=poll)
        reader.start()
        time.sleep(0.5)
        began = time.perf_counter()
        reply = httpx.put(f"{url}/sandbox/big/_mock/scenarios/many", content=document(args.rules), headers=TOKEN,
                          timeout=120)
        took = time.perf_counter() - began
        time.sleep(0.3)
        done.set()
        reader.join()
        reads.sort()
        print(f"rules {args.rules}: PUT {reply.status_code} in {took:.2f} s; other sandbox: {len(reads)} reads, "
              f"longest {reads[-1] * 1000:.0f} ms, median {reads[len(reads) // 2] * 1000:.1f} ms")
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
