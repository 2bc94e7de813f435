"""`--exit-with-parent` (process/parent.py): the mock stops when the process that started it ends, however it
ends; a process killed with SIGKILL runs no clean-up of its own."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from support import ROOT

from mockserver.process import parent


def test_the_watch_stops_once_the_parent_changes_and_not_before():
    ppid = [100]
    stopped = threading.Event()
    thread = parent.watch(interval=0.01, getppid=lambda: ppid[0], stop=stopped.set)
    assert not stopped.wait(0.1)                       # the same parent: nothing happens
    ppid[0] = 1                                        # reparented: the parent has gone
    assert stopped.wait(2)
    thread.join(2)
    assert not thread.is_alive()


def gone(pid, seconds=10.0):
    """Whether the process `pid` ends (or is a zombie nobody waits for) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.server
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.parametrize("how", ["start_local", "pytest --mockserver-start local"])
def test_a_harness_process_killed_with_sigkill_leaves_no_mock(tmp_path, how):
    pidfile = tmp_path / "mock.pid"
    if how == "start_local":
        script = textwrap.dedent(f"""
            import time
            from mockserver.client import start_local
            mock = start_local()
            open({str(pidfile)!r}, "w").write(str(mock._owner.process.pid))
            time.sleep(600)
        """)
        argv = [sys.executable, "-c", script]
    else:                                                 # the plugin's local mock: the runner's child process
        (tmp_path / "test_hold.py").write_text(textwrap.dedent(f"""
            import os, time

            def test_hold(sandbox):
                me = str(os.getpid())
                children = [pid for pid in os.listdir("/proc") if pid.isdigit() and
                            open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1] == me]
                open({str(pidfile)!r}, "w").write(children[0])
                time.sleep(600)
        """))
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--mockserver-start", "local",
                str(tmp_path / "test_hold.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MOCKSERVER_URL", None)
    runner = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            assert runner.poll() is None, "the harness process ended before it started its mock"
            time.sleep(0.1)
        mock = int(pidfile.read_text())
        assert not gone(mock, 0.5), "the mock should be running while its harness runs"
        runner.send_signal(signal.SIGKILL)
        runner.wait(10)
        assert gone(mock), f"the mock (pid {mock}) outlived the harness process killed with SIGKILL"
    finally:
        if runner.poll() is None:
            runner.kill()
