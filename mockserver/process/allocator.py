"""The memory allocator of a serving process: which one to run under, how the process comes to run under
it, which one is in force, and how freed memory goes back to the system.

- `jemalloc`: the C library jemalloc (Debian's `libjemalloc2`), preloaded, with every Python object
  allocated through it (`PYTHONMALLOC=malloc`). The cheapest per request (docs/performance.md), and it hands freed pages
  back when asked (`arena.<all>.purge`).
- `malloc`: the C library's own allocator (glibc), every Python object through it; freed pages go back by
  `malloc_trim`. Costs more CPU per request than either of the others (many small blocks).
- `pymalloc`: Python's own small-object allocator; cheap per request, but memory it once used stays with
  the process for its own reuse.
- `auto` (the default): jemalloc where the library is installed, else malloc.

Python reads PYTHONMALLOC, and the dynamic loader LD_PRELOAD, only when a process starts: `environment()`
says what the process must be restarted with (cli.use_allocator replaces the process once, same pid).
"""

import ctypes
import ctypes.util
import functools
import glob
import os
import sys

from mockserver.core.errors import StartupError

CHOICES = ("auto", "jemalloc", "malloc", "pymalloc")
JEMALLOC_GLOBS = ("/usr/lib/*-linux-gnu/libjemalloc.so.2", "/usr/lib64/libjemalloc.so.2",
                  "/usr/lib/libjemalloc.so.2", "/usr/local/lib/libjemalloc.so.2")
ALL_ARENAS = 4096               # jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" purges every arena


class Unavailable(StartupError):
    """The allocator asked for is not installed on this machine."""


def find_jemalloc():
    """The path of the jemalloc library on this machine, or None (always None but on Linux, where the
    loader's LD_PRELOAD puts it in place of the C library's allocator)."""
    if not sys.platform.startswith("linux"):
        return None
    for pattern in JEMALLOC_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    name = ctypes.util.find_library("jemalloc")
    return name or None


def environment(wanted, environ, jemalloc=None):
    """The environment a process must start with to run under `wanted`, or None when `environ` already
    says so (so that the restart happens once). Raises Unavailable for jemalloc without its library."""
    library = None
    if wanted in ("auto", "jemalloc"):
        library = jemalloc or find_jemalloc()
        if library is None and wanted == "jemalloc":
            raise Unavailable("--allocator jemalloc: the jemalloc library is not installed "
                              "(Debian and Ubuntu: apt-get install libjemalloc2)")
    changes = {}
    objects = "pymalloc" if wanted == "pymalloc" else "malloc"     # who allocates Python's objects
    if environ.get("PYTHONMALLOC", "pymalloc") != objects:
        changes["PYTHONMALLOC"] = objects
    preloaded = environ.get("LD_PRELOAD", "").replace(":", " ").split()
    if library is not None and library not in preloaded:
        changes["LD_PRELOAD"] = " ".join([library, *preloaded])
    return {**environ, **changes} if changes else None


def _process():
    return ctypes.CDLL(None)


@functools.cache
def in_force():
    """The allocator this process runs under, as it can tell from inside: jemalloc when its control
    function is linked in, else the one PYTHONMALLOC named at start."""
    if getattr(_process(), "mallctl", None) is not None:
        return "jemalloc" if os.environ.get("PYTHONMALLOC") == "malloc" else "pymalloc+jemalloc"
    return "malloc" if os.environ.get("PYTHONMALLOC") == "malloc" else "pymalloc"


def releaser():
    """A function that hands the process's free heap pages back to the system, or None where the C library
    has no way to (musl, macOS). jemalloc: purge every arena; glibc: malloc_trim(0)."""
    process = _process()
    mallctl = getattr(process, "mallctl", None)
    if mallctl is not None:
        name = f"arena.{ALL_ARENAS}.purge".encode()
        return lambda: mallctl(name, None, None, None, 0)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return lambda: trim(0)
