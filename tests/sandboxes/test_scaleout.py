"""Scale-out: the sandbox router (HAProxy) and 2 replicas started by deploy/local.sh, on 127.0.0.1.

The client flow runs in 20 sandboxes at once through the router; then one replica is stopped (its
sandboxes get the router's JSON error, the other's keep working) and started again on its state
file (its sandboxes come back). Needs Debian's haproxy (.ci/scale-deps installs it in CI).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from support import ROOT
from support.ids import ADMIN, ORG

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy", os.X_OK) else None)
MOCKSERVER = ROOT / ".venv" / "bin" / "mockserver"
if not MOCKSERVER.exists():
    MOCKSERVER = Path(shutil.which("mockserver") or MOCKSERVER)
SANDBOXES = [f"team-{n:02d}" for n in range(20)]
DEPLOY_SECONDS = 30

pytestmark = [
    pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (CI installs it with .ci/scale-deps;"
                                               " here: sudo apt-get install haproxy)"),
    pytest.mark.timeout(240),
]


def free_ports(count):
    """A first port such that it and the next count-1 ports are free on 127.0.0.1."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + count > 65535:
            continue
        try:
            for port in range(first, first + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise RuntimeError("no run of free ports")


def until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class Cluster:
    """deploy/local.sh 2 -- --clock manual [SERVE_OPTIONS], with the pids and ports it prints."""

    def __init__(self, tmp, *serve_options):
        self.port = free_ports(3)
        self.url = f"http://127.0.0.1:{self.port}"
        self.state_dir = tmp / "state"
        self.log = open(tmp / "local.log", "w+")
        env = {**os.environ, "PORT": str(self.port), "STATE_DIR": str(self.state_dir), "MOCKSERVER": str(MOCKSERVER),
               "HAPROXY": HAPROXY, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([str(ROOT / "deploy" / "local.sh"), "2", "--", "--clock", "manual",
                                         *serve_options],
                                        cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.restarted = []
        self.replicas = {}                        # name -> {"pid", "port"}
        until(self.started, 60, f"deploy/local.sh to start the router and 2 replicas:\n{self.output()}")

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def started(self):
        if self.process.poll() is not None:
            raise AssertionError(f"deploy/local.sh exited with {self.process.returncode}:\n{self.output()}")
        for line in self.output().splitlines():
            if line.startswith("local.sh: replica "):   # local.sh: replica mock-0 on 127.0.0.1:P (pid N, ...
                words = line.split()
                self.replicas[words[2]] = {"port": int(words[4].rsplit(":", 1)[1]), "pid": int(words[6].rstrip(","))}
        if len(self.replicas) < 2:
            return False
        return all(replica["up"] for replica in self.router_replicas())

    def router_replicas(self):
        reply = httpx.get(f"{self.url}/_router/replicas", timeout=5)
        assert reply.status_code == 200, reply.text
        return reply.json()["replicas"]

    def stop_replica(self, name):
        pid = self.replicas[name]["pid"]
        os.kill(pid, signal.SIGTERM)              # the replica saves its state file on SIGTERM
        until(lambda: not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text(),
              30, f"replica {name} to stop")

    def restart_replica(self, name):
        replica = self.replicas[name]
        process = subprocess.Popen(
            [str(MOCKSERVER), "serve", "--host", "127.0.0.1", "--port", str(replica["port"]), "--replica-name", name,
             "--state-file", str(self.state_dir / f"{name}.bin"), "--clock", "manual", "--exit-with-parent"],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        self.restarted.append(process)

    def stop(self):
        for process in self.restarted:
            process.terminate()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # local.sh stops everything it started
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for process in self.restarted:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("scaleout"))
    try:
        yield cluster
    finally:
        cluster.stop()
    for name, replica in cluster.replicas.items():
        assert not Path(f"/proc/{replica['pid']}").exists(), f"replica {name} still running after local.sh ended"


class Sandbox:
    """A client of one sandbox through the router: half the sandboxes use the URL prefix, half the header."""

    def __init__(self, url, name, by_header):
        self.name = name
        base, headers = (url, {"X-Mock-Sandbox": name}) if by_header else (f"{url}/sandbox/{name}", {})
        self.http = httpx.Client(base_url=base, headers={**ADMIN, **headers}, timeout=30)
        self.calls = []                           # (method, path, status) of every API call made
        self.replicas = set()                     # X-Mock-Replica of every reply

    def call(self, method, path, expected, body=None):
        reply = self.http.request(method, path, json=body)
        assert reply.status_code == expected, f"{self.name}: {method} {path}: {reply.status_code} {reply.text}"
        self.replicas.add(reply.headers.get("x-mock-replica"))
        if not path.startswith("/_mock"):
            self.calls.append((method, path, reply.status_code))
        return reply.json()

    def flow(self):
        """Create project, environment, application; deploy; advance this sandbox's clock; status DEPLOYED.
        Every write is read back at once."""
        project = self.call("POST", f"/organization/{ORG}/project", 201,
                            {"name": f"p-{self.name}"})
        assert self.call("GET", f"/project/{project['id']}", 200)["name"] == f"p-{self.name}"
        env = self.call("POST", f"/project/{project['id']}/environment", 201,
                        {"name": f"e-{self.name}"})
        assert self.call("GET", f"/environment/{env['id']}", 200)["name"] == f"e-{self.name}"
        app = self.call("POST", f"/environment/{env['id']}/application", 201,
                        {"name": f"a-{self.name}",
                         "git_repository": {"url": f"https://git.example.com/acme/{self.name}.git", "branch": "main"}})
        assert self.call("GET", f"/application/{app['id']}", 200)["name"] == f"a-{self.name}"
        self.call("POST", f"/application/{app['id']}/deploy", 202, {})
        self.call("POST", "/_mock/clock/advance", 200, {"seconds": DEPLOY_SECONDS})
        status = self.call("GET", f"/application/{app['id']}/status", 200)
        assert status["state"] == "DEPLOYED", status
        self.project, self.app = project["id"], app["id"]

    def journal(self):
        reply = self.http.get("/_mock/calls")
        assert reply.status_code == 200, reply.text
        return sorted(reply.json()["results"], key=lambda entry: entry["id"])


@pytest.fixture(scope="module")
def flows(cluster):
    sandboxes = [Sandbox(cluster.url, name, by_header=n % 2 == 1) for n, name in enumerate(SANDBOXES)]
    with ThreadPoolExecutor(len(sandboxes)) as pool:
        list(pool.map(Sandbox.flow, sandboxes))   # re-raises the first failure
    return {sandbox.name: sandbox for sandbox in sandboxes}


@pytest.mark.server
def test_the_flow_runs_in_20_sandboxes_at_once_and_each_journal_holds_exactly_its_calls(flows):
    for sandbox in flows.values():
        journal = sandbox.journal()
        prefix = f"/sandbox/{sandbox.name}"     # whether the journal keeps the prefix or not
        paths = [e["path"][len(prefix):] if e["path"].startswith(prefix + "/") else e["path"] for e in journal]
        assert [(e["method"], path, e["status"]) for e, path in zip(journal, paths)] == sandbox.calls, sandbox.name
        created = [e for e, path in zip(journal, paths)
                   if e["method"] == "POST" and path == f"/organization/{ORG}/project"]
        assert [e["body"]["name"] for e in created] == [f"p-{sandbox.name}"]


@pytest.mark.server
def test_every_sandbox_stays_on_one_replica_and_they_spread_over_both(flows):
    placement = {}
    for sandbox in flows.values():
        assert len(sandbox.replicas) == 1 and None not in sandbox.replicas, (sandbox.name, sandbox.replicas)
        placement[sandbox.name] = next(iter(sandbox.replicas))
    assert set(placement.values()) == {"mock-0", "mock-1"}, placement


@pytest.mark.server
def test_each_replica_lists_its_own_sandboxes_under_its_name(cluster, flows):
    placement = {name: next(iter(sandbox.replicas)) for name, sandbox in flows.items()}
    for replica in ("mock-0", "mock-1"):
        reply = httpx.get(f"{cluster.url}/_replicas/{replica}/_mock/sandboxes", timeout=10)
        assert reply.status_code == 200, reply.text
        assert reply.headers["x-mock-replica"] == replica
        listed = reply.json()
        assert listed["replica"] == replica
        names = {entry["name"] for entry in listed["results"]}
        assert names & set(SANDBOXES) == {name for name, where in placement.items() if where == replica}
    for name, replica in placement.items():       # /_mock/sandboxes/{name} goes where {name} lives
        reply = httpx.get(f"{cluster.url}/_mock/sandboxes/{name}", timeout=10)
        assert reply.status_code == 200, reply.text
        assert (reply.json()["name"], reply.headers["x-mock-replica"]) == (name, replica)
    # the same list from every replica in one call: deploy/fanout.py
    fanned = subprocess.run([sys.executable, str(ROOT / "deploy" / "fanout.py"), cluster.url, "GET",
                             "/_mock/sandboxes"],
                            capture_output=True, text=True, timeout=60)
    assert fanned.returncode == 0, fanned.stderr
    results = json.loads(fanned.stdout)["results"]
    assert [(r["replica"], r["up"], r["status"], r["body"]["replica"]) for r in results] == [
        ("mock-0", True, 200, "mock-0"), ("mock-1", True, 200, "mock-1")]
    listed = {entry["name"]: r["replica"] for r in results for entry in r["body"]["results"]}
    assert {name: listed[name] for name in SANDBOXES} == placement


@pytest.mark.server
def test_a_stopped_replica_answers_the_router_error_and_comes_back_from_its_state_file(cluster, flows):
    placement = {name: next(iter(sandbox.replicas)) for name, sandbox in flows.items()}
    down = [flows[name] for name, where in placement.items() if where == "mock-0"]
    up = [flows[name] for name, where in placement.items() if where == "mock-1"]
    cluster.stop_replica("mock-0")

    for sandbox in down:
        reply = sandbox.http.get(f"/project/{sandbox.project}")
        assert reply.status_code == 503, reply.text
        assert reply.headers["content-type"] == "application/json"
        body = reply.json()
        assert body["status"] == 503 and body["error"] == "Service Unavailable"
        assert body["message"] == f"replica mock-0 serving sandbox {sandbox.name} is down"
    for sandbox in up:                            # the other replica's sandboxes keep working, reads and writes
        assert sandbox.call("GET", f"/project/{sandbox.project}", 200)["name"] == f"p-{sandbox.name}"
        sandbox.call("POST", f"/project/{sandbox.project}/environmentVariable",
                     201, {"key": "AFTER_STOP", "value": "1"})
    until(lambda: [r["up"] for r in cluster.router_replicas()] == [False, True], 10, "the router to see mock-0 down")
    direct = httpx.get(f"{cluster.url}/_replicas/mock-0/_mock/health", timeout=10)
    assert (direct.status_code, direct.json()["message"]) == (503, "replica mock-0 is down")
    fanned = subprocess.run([sys.executable, str(ROOT / "deploy" / "fanout.py"), cluster.url, "GET", "/_mock/health"],
                            capture_output=True, text=True, timeout=60)
    assert fanned.returncode == 1
    assert [(r["replica"], r["up"], r["status"]) for r in json.loads(fanned.stdout)["results"]] == [
        ("mock-0", False, 503), ("mock-1", True, 200)]

    cluster.restart_replica("mock-0")
    until(lambda: all(r["up"] for r in cluster.router_replicas()), 60, "the router to see mock-0 up again")
    for sandbox in down:
        assert sandbox.call("GET", f"/project/{sandbox.project}", 200)["name"] == f"p-{sandbox.name}"
        status = sandbox.call("GET", f"/application/{sandbox.app}/status", 200)
        assert status["state"] == "DEPLOYED"
        assert sandbox.replicas == {"mock-0"}
    for sandbox in up:
        assert sandbox.replicas == {"mock-1"}


def test_the_rendered_router_configuration_is_valid_for_haproxy(tmp_path):
    config = tmp_path / "haproxy.cfg"
    rendered = subprocess.run([sys.executable, str(ROOT / "deploy" / "haproxy_cfg.py"), "--bind", "127.0.0.1:1",
                               "mock-0=127.0.0.1:2", "mock-1=127.0.0.1:3"], capture_output=True, text=True, check=True)
    config.write_text(rendered.stdout)
    check = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "use-server mock-1 if" in rendered.stdout and "option httpchk GET /_mock/health" in rendered.stdout
    # a malformed replica argument is refused with a message, not rendered
    bad = subprocess.run([sys.executable, str(ROOT / "deploy" / "haproxy_cfg.py"), "mock-0"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "expected NAME=HOST:PORT" in bad.stderr


@pytest.mark.server
def test_requests_without_a_sandbox_go_where_default_lives(cluster):
    default = httpx.get(f"{cluster.url}/sandbox/default/_mock/health", timeout=10).headers["x-mock-replica"]
    for path in ("/_mock/health", "/_mock/clock", "/openapi.json"):
        assert httpx.get(f"{cluster.url}{path}", timeout=10).headers["x-mock-replica"] == default, path


@pytest.mark.server
def test_router_only_routes_answer_without_replicas_in_json(cluster):
    listing = cluster.router_replicas()
    assert [r["name"] for r in listing] == ["mock-0", "mock-1"]
    assert [r["path"] for r in listing] == ["/_replicas/mock-0", "/_replicas/mock-1"]
    assert json.loads(httpx.get(f"{cluster.url}/_replicas/mock-1/_mock/health", timeout=5).text)["status"] == "ok"


@pytest.mark.server
def test_with_a_control_token_the_router_passes_it_and_fanout_sends_it(tmp_path):
    cluster = Cluster(tmp_path, "--control-token", "s3cret-token")
    try:
        bearer = {"Authorization": "Bearer s3cret-token"}
        assert httpx.get(f"{cluster.url}/_replicas/mock-1/_mock/sandboxes", timeout=10).status_code == 401
        assert httpx.get(f"{cluster.url}/_replicas/mock-1/_mock/sandboxes", headers=bearer,
                         timeout=10).status_code == 200
        assert httpx.get(f"{cluster.url}/sandbox/team-x/_mock/clock", timeout=10).status_code == 401
        made = httpx.put(f"{cluster.url}/_mock/sandboxes/team-x", headers=bearer, timeout=10)
        assert made.status_code == 201, made.text
        assert httpx.get(f"{cluster.url}/sandbox/team-x/_mock/clock", headers=bearer, timeout=10).status_code == 200
        fanout = [sys.executable, str(ROOT / "deploy" / "fanout.py"), cluster.url, "GET", "/_mock/sandboxes"]
        refused = subprocess.run(fanout, capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1
        assert [r["status"] for r in json.loads(refused.stdout)["results"]] == [401, 401]
        allowed = subprocess.run([*fanout, "--token", "s3cret-token"], capture_output=True, text=True, timeout=60)
        assert allowed.returncode == 0, allowed.stdout
        assert "s3cret-token" not in allowed.stdout
    finally:
        cluster.stop()
