"""Hostile YAML: how long `mockserver serve` takes to answer scenario documents built to cost it.

    .venv/bin/python bench/yaml_bomb.py                  # this checkout
    .venv/bin/python bench/yaml_bomb.py --levels 7       # fewer levels (for an older checkout, which expands them)

Each document is PUT to /_mock/scenarios/{name} of a fresh `mockserver serve` (the checkout's `.venv`);
the table gives the median of 5 round trips in milliseconds and the status answered, then the same for
a small valid scenario (the cost of an ordinary PUT, for scale) and the size of GET /_mock/scenarios
afterwards. The documents: alias bombs of N levels (each anchor lists the previous one ten times: about
500 bytes for 10**(N-1) strings), a recursive alias, and 100,000 nested lists.
"""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
VALID = "name: ok\nrules:\n  - match: {operation: getApplicationStatus}\n    effect: {status: 503}\n"


def bomb(levels, width=10):
    lines = ["name: bomb", "rules: [{effect: {status: 500}}]", 'l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def documents(levels):
    out = {f"alias bomb, {n} levels ({len(bomb(n))} bytes)": bomb(n) for n in range(levels - 2, levels + 1)}
    out["recursive alias"] = "name: loop\nrules: &r [{effect: {status: 500}}, *r]\n"
    out["100,000 nested lists"] = "name: deep\nrules: " + "[" * 100000 + "]" * 100000 + "\n"
    out["a valid scenario (for scale)"] = VALID
    return out


def measure(url, text, runs=5):
    times, status = [], None
    for _ in range(runs):
        started = time.perf_counter()
        reply = httpx.put(f"{url}/_mock/scenarios/{'ok' if text == VALID else 'probe'}", content=text, timeout=600)
        times.append((time.perf_counter() - started) * 1000)
        status = reply.status_code
    return statistics.median(times), status


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", type=int, default=10, help="levels of the largest alias bomb (default 10)")
    parser.add_argument("--port", type=int, default=18470)
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen([str(PYTHON), "-m", "mockserver", "serve", "--port", str(args.port), "--clock",
                               "manual"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while True:
            try:
                httpx.get(f"{url}/_mock/health", timeout=1)
                break
            except httpx.HTTPError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        rows = [(name, *measure(url, text)) for name, text in documents(args.levels).items()]
        listing = len(httpx.get(f"{url}/_mock/scenarios", timeout=600).content)
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = ["| document | median ms | status |", "|---|---:|---:|"]
    lines += [f"| {name} | {ms:.2f} | {status} |" for name, ms, status in rows]
    lines.append(f"\nGET /_mock/scenarios afterwards: {listing} bytes")
    print("\n".join(lines))
    (ROOT / "bench" / "results").mkdir(exist_ok=True)
    (ROOT / "bench" / "results" / "yaml_bomb.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
