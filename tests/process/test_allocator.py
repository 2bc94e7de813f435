"""The allocator of a serving process (process/allocator.py): what `mockserver serve` restarts itself with, what it
runs under then, and how it hands freed memory back."""

import os
import subprocess
import sys

import httpx
import pytest

from mockserver.cli import main
from mockserver.process import allocator

JEMALLOC = allocator.find_jemalloc()
needs_jemalloc = pytest.mark.skipif(JEMALLOC is None, reason="the jemalloc library is not installed "
                                    "(Debian: apt-get install libjemalloc2)")
LIBRARY = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


# ---------------------------------------------------------------- the environment of the restart
def test_auto_preloads_jemalloc_where_installed_and_routes_every_object_through_it():
    wanted = allocator.environment("auto", {"PATH": "/bin"}, jemalloc=LIBRARY)
    assert wanted == {"PATH": "/bin", "PYTHONMALLOC": "malloc", "LD_PRELOAD": LIBRARY}


def test_auto_falls_back_to_the_c_librarys_malloc_without_jemalloc(monkeypatch):
    monkeypatch.setattr(allocator, "find_jemalloc", lambda: None)
    assert allocator.environment("auto", {"PATH": "/bin"}) == {"PATH": "/bin", "PYTHONMALLOC": "malloc"}


def test_a_preload_of_the_users_own_is_kept_after_jemalloc():
    wanted = allocator.environment("jemalloc", {"LD_PRELOAD": "/opt/trace.so"}, jemalloc=LIBRARY)
    assert wanted["LD_PRELOAD"] == f"{LIBRARY} /opt/trace.so"


@pytest.mark.parametrize("wanted, environ", [
    ("jemalloc", {"PYTHONMALLOC": "malloc", "LD_PRELOAD": LIBRARY}),
    ("auto", {"PYTHONMALLOC": "malloc", "LD_PRELOAD": f"/opt/trace.so:{LIBRARY}"}),
    ("malloc", {"PYTHONMALLOC": "malloc"}),
    ("pymalloc", {}),
])
def test_no_restart_when_the_environment_already_says_so(wanted, environ):
    assert allocator.environment(wanted, environ, jemalloc=LIBRARY) is None


def test_pymalloc_undoes_a_pythonmalloc_inherited_from_the_environment():
    assert allocator.environment("pymalloc", {"PYTHONMALLOC": "malloc"}) == {"PYTHONMALLOC": "pymalloc"}


def test_jemalloc_asked_for_but_not_installed_is_a_clear_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(allocator, "find_jemalloc", lambda: None)
    monkeypatch.setattr(os, "execve", lambda *args: pytest.fail("restarted without the library"))
    with pytest.raises(SystemExit) as ended:
        main.use_allocator("jemalloc")
    assert ended.value.code == 2
    assert "apt-get install libjemalloc2" in capsys.readouterr().err


# ---------------------------------------------------------------- served
def _environment_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as handle:
        return dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)


def _mapped(pid, library):
    with open(f"/proc/{pid}/maps") as handle:
        return library in handle.read()


def _allocator_of(server):
    return httpx.get(f"{server.url}/_mock/health").json()["memory"]["allocator"]


@pytest.mark.server
@needs_jemalloc
def test_serve_runs_under_jemalloc_by_default_where_installed(live_server, monkeypatch):
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    server = live_server("--clock", "manual")
    environ = _environment_of(server.process.pid)                 # restarted itself, same pid
    assert environ.get(b"PYTHONMALLOC") == b"malloc" and environ.get(b"LD_PRELOAD") == JEMALLOC.encode()
    assert _mapped(server.process.pid, os.path.basename(JEMALLOC))
    assert _allocator_of(server) == "jemalloc"


@pytest.mark.server
def test_serve_runs_under_the_c_librarys_malloc_when_asked(live_server, monkeypatch):
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    server = live_server("--clock", "manual", "--allocator", "malloc")
    environ = _environment_of(server.process.pid)
    assert environ.get(b"PYTHONMALLOC") == b"malloc" and b"LD_PRELOAD" not in environ
    assert _allocator_of(server) == "malloc"


@pytest.mark.server
def test_serve_keeps_pythons_allocator_when_asked(live_server, monkeypatch):
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    server = live_server("--clock", "manual", "--allocator", "pymalloc")
    assert b"PYTHONMALLOC" not in _environment_of(server.process.pid)
    assert _allocator_of(server) == "pymalloc"


# ---------------------------------------------------------------- handing memory back
RELEASE = """
import sys
from mockserver.process import allocator
def resident():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * 4096
held, pins = [], []
for n in range(50_000):                                          # 100 MB in blocks of a journaled call's size,
    held.append(bytes(2000))                                     # with one kept alive every 100: the freed
    if n % 100 == 0:                                             # memory cannot merge back into the top of
        pins.append(bytes(2000))                                 # the heap, only a hand-back returns it
del held
before = resident()
allocator.releaser()()
print(allocator.in_force(), before, resident())
"""


@pytest.mark.parametrize("name", [pytest.param("jemalloc", marks=needs_jemalloc), "malloc"])
def test_the_releaser_hands_freed_pages_back_to_the_system(name):
    environ = allocator.environment(name, {k: v for k, v in os.environ.items()
                                           if k not in ("PYTHONMALLOC", "LD_PRELOAD")})
    done = subprocess.run([sys.executable, "-c", RELEASE], env=environ, capture_output=True, text=True, timeout=60)
    in_force, before, after = done.stdout.split()
    assert in_force == name
    assert int(before) - int(after) > 50_000_000, (before, after)   # most of the freed 100 MB went back


def test_memory_let_go_is_handed_back_at_the_next_tick_at_most_once_a_second():
    from mockserver.process.collector import TRIM_EVERY, Collector
    now = [100.0]
    collector = Collector(clock=lambda: now[0])
    handed = []
    collector._release = lambda: handed.append(now[0])
    collector.settle = lambda: None                      # the collector's own once-a-second work: not this test's
    now[0] += TRIM_EVERY
    collector.tick()
    assert handed == []                                  # nothing was let go: nothing to hand back
    collector.release()
    collector.tick()
    assert handed == [100.0 + TRIM_EVERY]                # let go: handed back at the next tick
    collector.release()
    now[0] += TRIM_EVERY / 2
    collector.tick()
    assert len(handed) == 1                              # not twice within the interval ...
    now[0] += TRIM_EVERY / 2
    collector.tick()
    assert len(handed) == 2 and TRIM_EVERY <= 1.0        # ... and not later than a second after the last
