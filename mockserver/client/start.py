"""Starting a mock, three ways: connect to a running one, start a local process, start its container."""

import os
import re
import subprocess
import sys
import time

from mockserver.client.control import Client

START_LINE = re.compile(r"^mockserver \S+ on (https?://\S+?):? ")


def connect(url=None, *, control_token=None, timeout=20.0, warn=None):
    """A client of the mock at `url` (default: the environment variable MOCKSERVER_URL), once its health answers."""
    url = url or os.environ.get("MOCKSERVER_URL")
    if not url:
        raise ValueError("connect needs the mock's URL (or the environment variable MOCKSERVER_URL)")
    client = Client(url, control_token=control_token)
    try:
        client.wait_ready(timeout, warn=warn)
    except BaseException:
        client.close()
        raise
    return client


def start_local(*args, command=None, clock="manual", env=None, timeout=30.0, warn=None, log=None):
    """`mockserver serve --port 0` as a process of its own: the port is read from the line it prints at start,
    readiness from /_mock/health. `args` are more options of serve; `command` the mockserver executable
    (default: MOCKSERVER_COMMAND, else this Python's `-m mockserver`). `log` names a file for the server's output
    (default: discarded). The client's `stop()` stops the process; so does the end of this one, however it ends."""
    command = command or os.environ.get("MOCKSERVER_COMMAND")
    argv = [command] if command else [sys.executable, "-m", "mockserver"]
    # --exit-with-parent: a test process killed with SIGKILL runs no clean-up; the mock then stops by itself
    argv += ["serve", "--port", "0", "--exit-with-parent", *(["--clock", clock] if clock else []), *args]
    output = open(log, "w") if log else None        # kept open for the process's life
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output or subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env={**os.environ, **(env or {})}, text=True)
    owner = _Process(process, output)
    try:
        url = owner.read_url(timeout)
        client = Client(url, owner=owner)
        client.wait_ready(timeout, alive=lambda: process.poll() is None, warn=warn)
    except BaseException:
        owner.stop()
        raise
    return client


def start_container(image=None, *, network=None, port=None, clock="manual", env=None, timeout=60.0, warn=None):
    """The mock's container image (default: MOCKSERVER_IMAGE, else idp-mockserver:local, built from the project's
    Dockerfile) started through Testcontainers (PyPI `testcontainers`). By default its port 8080 is mapped to a
    free one; `network="host"` runs it on the host's network instead (engines without a bridge), the server told
    its port with PORT and HOST. Ryuk (Testcontainers' reaper, an image of its own) is turned off: `stop()` removes
    the container."""
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.core.container import DockerContainer

    container = DockerContainer(image or os.environ.get("MOCKSERVER_IMAGE", "idp-mockserver:local"))
    container.with_envs(MOCKSERVER_CLOCK=clock, **(env or {}))
    if network == "host":
        port = port or free_port()
        container.with_envs(PORT=str(port), HOST="127.0.0.1").with_kwargs(network_mode="host")
    else:
        container.with_exposed_ports(8080)
    container.start()
    owner = _Container(container)
    try:
        url = (f"http://127.0.0.1:{port}" if network == "host" else
               f"http://{container.get_container_host_ip()}:{container.get_exposed_port(8080)}")
        client = Client(url, owner=owner)
        client.wait_ready(timeout, warn=warn)
    except BaseException:
        owner.stop()
        raise
    return client


def free_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Process:
    """A mock started as a process: its start line read, its output drained, stopped with SIGTERM then kill."""

    def __init__(self, process, output):
        self.process, self.output, self.lines = process, output, []

    def read_url(self, timeout):
        import threading

        found, deadline = None, time.monotonic() + timeout
        while found is None and time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                if self.process.poll() is not None:
                    raise RuntimeError(f"mockserver serve exited ({self.process.returncode}): "
                                       + " ".join(self.lines[-5:]).strip())
                continue
            self.lines.append(line)
            match = START_LINE.match(line)
            found = match and match[1]
        if found is None:
            raise TimeoutError(f"mockserver serve printed no start line within {timeout} s")
        threading.Thread(target=self._drain, daemon=True).start()
        return found

    def _drain(self):
        for line in self.process.stderr:
            if self.output:
                self.output.write(line)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.output:
            self.output.close()


class _Container:
    def __init__(self, container):
        self.container = container

    def stop(self):
        self.container.stop()
