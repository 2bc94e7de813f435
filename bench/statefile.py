"""The state file's costs: the pause a periodic save causes, the save itself, and the restore at start.

    .venv/bin/python bench/statefile.py [--levels 53,1000,100000] [--repeat 5]

A world is filled through the request path (POST project) to each level. Then, with a server whose
`--state-file` is a temporary file: the time `Saver.tick()` holds the event loop (the fork of the
child that writes the file: what requests wait for), the time until the child has written and
renamed the file (the save, off the request path), and `statefile.restore` of that file (start-up;
mockserver/sandboxes/statefile.py).
"""

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sandboxes import ORG, _asgi, load_avg  # noqa: E402  (the same request driver as the sandbox bench)

from mockserver.app import MockServer  # noqa: E402
from mockserver.core.settings import Settings  # noqa: E402
from mockserver.sandboxes.statefile import restore  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--levels", default="53,1000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state.bin")
        server = MockServer(Settings(rate_limit=10**9, rate_window=3600, state_file=path, save_interval=0.001))
        gc.freeze()
        gc.set_threshold(10_000, 50, 1000)
        loop = asyncio.new_event_loop()
        made = 0
        print("| resources | state file | pause of a periodic save (fork) p50 / max | save in the child p50 | "
              "restore at start p50 | load |")
        print("|---:|---:|---:|---:|---:|---|")
        for target in map(int, args.levels.split(",")):
            while sum(server.rt.store.count().values()) < target:
                loop.run_until_complete(_asgi(server, "POST", f"/organization/{ORG}/project", {"name": f"p{made}"}))
                made += 1
            pauses, saves, restores = [], [], []
            for _ in range(args.repeat):
                server.changes += 1
                server.saver.last = -1e9
                began = time.perf_counter()
                server.saver.tick()                       # forks the writer and returns
                pauses.append(time.perf_counter() - began)
                os.waitpid(server.saver.child, 0)         # the save itself, measured to its end
                saves.append(time.perf_counter() - began)
                server.saver.child = None
                fresh = MockServer(Settings(rate_limit=10**9, rate_window=3600))
                began = time.perf_counter()
                restore(fresh, path)
                restores.append(time.perf_counter() - began)
            size = sum(server.rt.store.count().values())
            print(f"| {size:,} | {os.path.getsize(path) / 1024:,.0f} KiB | {statistics.median(pauses) * 1e3:.1f} / "
                  f"{max(pauses) * 1e3:.1f} ms | {statistics.median(saves) * 1e3:.0f} ms | "
                  f"{statistics.median(restores) * 1e3:.0f} ms | {load_avg()} |", flush=True)


if __name__ == "__main__":
    main()
