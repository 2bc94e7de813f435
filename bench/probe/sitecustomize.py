"""Put first on a server's PYTHONPATH by bench/fleet.py: with FLEET_GC_PROBE=<file> in the environment,
the process times its garbage-collector pauses and writes them to that file (gcpauses.py). Without the
variable it does nothing. Python imports only the first `sitecustomize` on sys.path, so this one then runs
the one it hides (a later entry's sitecustomize.py, such as Debian's in /usr/lib/python3.X), if any.
Works whatever the entry point (`python -m mockserver serve` included): `site` imports it at start-up.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_hidden():
    """Run the sitecustomize.py Python would have imported without this folder; return its path or None."""
    for entry in sys.path:
        folder = os.path.abspath(entry or os.curdir)
        candidate = os.path.join(folder, "sitecustomize.py")
        if folder == HERE or not os.path.isfile(candidate):
            continue
        spec = importlib.util.spec_from_file_location("_fleet_hidden_sitecustomize", candidate)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return candidate
    return None


if os.environ.get("FLEET_GC_PROBE"):
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import gcpauses
    gcpauses.install(os.environ["FLEET_GC_PROBE"])

HIDDEN = _run_hidden()
