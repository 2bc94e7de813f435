"""What a Python test pays for a fresh sandbox of its own: the Python client's `in_sandbox` (PUT) and, at the
test's end, `delete_sandbox`, against `mockserver serve` started by `start_local`, as the pytest plugin does.

    .venv/bin/python bench/sandbox_python.py [--runs 100]

Prints the median, and the fastest, 90th percentile and slowest of the runs (the same figures as the Node and
Go harnesses' benchmarks: clients/node/bench/sandbox.js, clients/go/bench).
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mockserver.client import start_local


def fresh_sandbox(mock, index):
    box = mock.in_sandbox(f"bench-{os.getpid()}-{index}")
    box.delete_sandbox()
    box.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    mock = start_local()
    try:
        for index in range(5):                                   # warm up: connections, the first sandboxes
            fresh_sandbox(mock, -1 - index)
        durations = []
        for index in range(args.runs):
            started = time.perf_counter()
            fresh_sandbox(mock, index)
            durations.append(time.perf_counter() - started)
    finally:
        mock.stop()
    durations.sort()
    middle = len(durations) // 2
    median = durations[middle] if len(durations) % 2 else (durations[middle - 1] + durations[middle]) / 2
    print(f"python: fresh sandbox per test, {args.runs} runs against {mock.url} (load {os.getloadavg()[0]:.1f}):\n"
          f"  median {median * 1000:.2f} ms   min {durations[0] * 1000:.2f} ms   "
          f"p90 {durations[int(len(durations) * 0.9)] * 1000:.2f} ms   max {durations[-1] * 1000:.2f} ms")


if __name__ == "__main__":
    main()
