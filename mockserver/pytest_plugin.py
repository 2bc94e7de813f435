"""pytest plugin for client teams: a running mock, reset between tests, and journal assertions.

    def test_deploy_waits_for_success(mockserver):
        client = MyPlatformClient(mockserver.url, token=mockserver.tokens["admin"])
        client.deploy(APP_ID)
        mockserver.advance(60)
        mockserver.assert_called(operation="deployApplication", times=1)

The session starts one mock in-process (uvicorn in a thread, on a free loopback port,
manual clock by default), or uses an existing one given by `--mockserver-url` or the
environment variable MOCKSERVER_URL (one that cannot be reached fails the first test with one line naming
the URL and where it was given, and the session stops there). Each test gets a sandbox of its own, named from the
xdist worker and the test (and `--mockserver-sandbox-prefix`, e.g. a CI job id), made fresh
from the fixtures before the test and deleted after it: tests running in parallel against
one mock never see each other's calls, clock, scenarios or records. The sandbox keeps each
request and reply body whole up to `--mockserver-journal-body-limit` bytes (1 MiB by default).

Consumer contracts: `mockserver.write_pact(path)` writes the test's calls as a pact (merged into
the file when it exists, so a session's tests write one pact), `write_har(path)` as a HAR log;
`--mockserver-pact FILE` writes every test's calls into one pact without a line of code. Writers of one
file take turns under the lock file FILE.lock, which is deleted when the writing is done.
"""

import hashlib
import json
import os
import re
import socket
import threading
import time

import httpx
import pytest

try:
    import fcntl  # tests on several workers write one pact file in turn
except ImportError:                             # pragma: no cover (Windows): no lock, one worker at a time
    fcntl = None

JOURNAL_BODY_LIMIT = 1024 * 1024                # bytes of a body a test's sandbox keeps whole (pacts need them)
TOKENS = {"admin": "mock-admin-token", "read": "mock-read-token", "write": "mock-write-token",
          "deploy": "mock-deploy-token"}
# every name a test may know a default token by: the short key, the token's name in the fixtures
# (fixtures/tokens.yaml) and its scope (any case)
NAMES = {"admin": "admin", "read": "read", "reader": "read", "write": "write", "writer": "write",
         "deploy": "deploy", "deployer": "deploy"}


class UnknownToken(KeyError):
    def __str__(self):
        return (f"no token named {self.args[0]!r}: use admin, read, write or deploy (also the fixtures' token "
                f"names admin, reader, writer, deployer, or the scopes Admin, Read, Write, Deploy)")


class Tokens(dict):
    """The default tokens by short key; `tokens["deployer"]` and `tokens["Deploy"]` find the same one, and
    an unknown name is an error that lists the valid ones."""

    def __missing__(self, name):
        key = NAMES.get(str(name).lower())
        if key is None or key not in self:
            raise UnknownToken(name)
        return self[key]


class MockServerClient:
    """A handle on a running mock: its URL, tokens, and its control API."""

    def __init__(self, url, control_token=None, sandbox=None):
        self.root = url.rstrip("/")
        self.sandbox = sandbox
        self.url = f"{self.root}/sandbox/{sandbox}" if sandbox else self.root
        self.tokens = Tokens(TOKENS)
        self.control_token = control_token
        headers = {"Authorization": f"Bearer {control_token}"} if control_token else {}
        self.http = httpx.Client(base_url=self.url, timeout=30, headers=headers)
        self.private_snapshots = {}            # name given -> name stored, for this sandbox only

    def in_sandbox(self, name, **options):
        """A handle on sandbox `name`, made fresh (from the fixtures, or with options) on the same mock."""
        reply = self.http.put(f"{self.root}/_mock/sandboxes/{name}", json=options)
        if reply.status_code >= 400:
            raise AssertionError(f"could not create sandbox {name}: {reply.status_code} {reply.text}")
        return MockServerClient(self.root, self.control_token, name)

    def delete_sandbox(self):
        """Delete this handle's sandbox and the private snapshots saved from it."""
        for stored in self.private_snapshots.values():
            self.http.delete(f"{self.root}/_mock/snapshots/{stored}")
        self.private_snapshots.clear()
        if self.sandbox:
            self.http.delete(f"{self.root}/_mock/sandboxes/{self.sandbox}")

    def headers(self, token="admin"):
        """`Authorization` for a default token: admin/read/write/deploy, reader/writer/deployer or a scope."""
        return {"Authorization": f"Token {self.tokens[token]}"}

    def _control(self, method, path, **kwargs):
        response = self.http.request(method, f"/_mock{path}", **kwargs)
        if response.status_code >= 400:
            raise AssertionError(f"control API {method} {path} answered {response.status_code}: {response.text}")
        return response.json() if response.content else None

    # state and time
    def snapshot(self, name, journal=False, replace=True, shared=False):
        """Save this sandbox's world under `name`, to `restore(name)` here later. Snapshots live in the
        server, shared by all sandboxes: by default the name is made private to this sandbox (tests
        running in parallel may use the same name) and the snapshot is deleted with the sandbox.
        `shared=True` saves it under the plain name, for other sandboxes to start from
        (`in_sandbox(other, snapshot=name)`), and leaves it in the server."""
        stored = name
        if self.sandbox and not shared:
            digest = hashlib.sha1(f"{self.sandbox}|{name}".encode()).hexdigest()[:12]
            stored = f"{name[:48]}.{digest}"
            self.private_snapshots[name] = stored
        return self._control("POST", "/snapshots", json={"name": stored, "journal": journal, "replace": replace,
                                                         "private": stored != name})

    def restore(self, name):
        return self._control("POST", f"/snapshots/{self.private_snapshots.get(name, name)}/restore")

    def reset(self, scenarios=False):
        return self._control("POST", "/reset", json={"scenarios": scenarios})

    def advance(self, seconds):
        return self._control("POST", "/clock/advance", json={"seconds": seconds})

    def clock(self):
        return self._control("GET", "/clock")

    # scenarios
    def scenario(self, name, document):
        """Activate a scenario from YAML text or a dict (its `name` must be `name`)."""
        if isinstance(document, dict):
            import json
            document = json.dumps({"name": name, **document})
        return self._control("PUT", f"/scenarios/{name}", content=document.encode())

    def scenarios(self):
        """The scenarios active in this sandbox, as the control API describes them."""
        return self._control("GET", "/scenarios")["results"]

    def remove_scenario(self, name):
        self._control("DELETE", f"/scenarios/{name}")

    # journal
    def calls(self, **filters):
        return self._control("GET", "/calls", params={k: v for k, v in filters.items() if v is not None})["results"]

    def verify(self, times=None, at_least=None, at_most=None, **filters):
        body = {k: v for k, v in filters.items() if v is not None}
        for key, value in (("count", times), ("at_least", at_least), ("at_most", at_most)):
            if value is not None:
                body[key] = value
        return self._control("POST", "/calls/verify", json=body)

    def assert_called(self, times=None, at_least=None, at_most=None, **filters):
        result = self.verify(times, at_least, at_most, **filters)
        if not result["ok"]:
            raise AssertionError(result["message"])
        return result

    def assert_not_called(self, **filters):
        return self.assert_called(times=0, **filters)

    # consumer contracts
    def export(self, format, **params):
        """The sandbox's calls (filtered as `calls`) as a pact or a HAR document (a dict)."""
        query = {"format": format, **{k: str(v) for k, v in params.items() if v is not None}}
        return self._control("GET", "/calls/export", params=query)

    def write_pact(self, path, consumer="consumer", provider="idp-platform", spec=4, merge=True, **filters):
        """Write the sandbox's calls as a pact file; with `merge`, into the pact already at `path` (same
        consumer and provider: its interactions are kept, the new ones added). Returns the document written."""
        document = self.export("pact", consumer=consumer, provider=provider, spec=spec, **filters)
        return _write_json(path, document, merge_pacts if merge else None)

    def write_har(self, path, **filters):
        """Write the sandbox's calls as a HAR 1.2 log."""
        return _write_json(path, self.export("har", **filters), None)

    # webhooks and tokens
    def deliveries(self, **filters):
        return self._control("GET", "/webhooks/deliveries", params=filters)["results"]

    def mint_token(self, scopes=("Admin",), ttl_seconds=None, kind="token", organization=None, name=None):
        body = {"scopes": list(scopes), "kind": kind}
        for key, value in (("ttl_seconds", ttl_seconds), ("organization", organization), ("name", name)):
            if value is not None:
                body[key] = value
        return self._control("POST", "/tokens", json=body)["token"]

    def close(self):
        self.http.close()


def _write_json(path, document, merge):
    """Write a document, merged with the one at `path` under a lock when `merge` is given. The lock is the file
    `path`.lock, held by one writer at a time (tests on several xdist workers write one pact in turn) and
    deleted by its holder when it is done, so that nothing is left beside the pact."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    lock = _lock(path + ".lock")
    try:
        if merge is not None and os.path.exists(path):
            with open(path) as handle:
                document = merge(json.load(handle), document)
        try:
            with open(path + ".tmp", "w") as handle:
                json.dump(document, handle, indent=2)
            os.replace(path + ".tmp", path)
        except BaseException:
            _remove(path + ".tmp")
            raise
    finally:
        _unlock(path + ".lock", lock)
    return document


def _lock(where):
    """The lock file `where` opened and locked (exclusive flock): the open descriptor, None without fcntl.
    A holder deletes the file before it lets go, so a writer that waited on a file deleted meanwhile (its
    path now names no file, or another one) has locked nothing the others see: it opens the path again."""
    if fcntl is None:                           # pragma: no cover (Windows): no lock, no lock file
        return None
    while True:
        descriptor = os.open(where, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            try:
                named, held = os.stat(where), os.fstat(descriptor)
                if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
                    return descriptor
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)


def _unlock(where, descriptor):
    if descriptor is None:                      # pragma: no cover (Windows)
        return
    try:
        _remove(where)                          # while still held: whoever locks it next sees it is gone
    finally:
        os.close(descriptor)                    # lets the lock go


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def merge_pacts(old, new):
    """One pact of two of the same consumer and provider: the old interactions, then the new ones that differ
    (one whose description is taken but differs gets a numbered description)."""
    if (old.get("consumer"), old.get("provider")) != (new["consumer"], new["provider"]):
        raise AssertionError(f"{new['consumer']['name']} -> {new['provider']['name']}: the file holds a pact of "
                             f"{old.get('consumer')} -> {old.get('provider')}")
    def same(item):                             # a V4 interaction's key says it; a V3 one is compared whole
        return item.get("key") or json.dumps({k: v for k, v in item.items() if k != "description"}, sort_keys=True)

    interactions = list(old.get("interactions", []))
    held = {same(item) for item in interactions}
    names = {item["description"] for item in interactions}
    for item in new["interactions"]:
        if same(item) in held:
            continue
        held.add(same(item))
        base, count = item["description"], 1
        while item["description"] in names:
            count += 1
            item = {**item, "description": f"{base} #{count}"}
        names.add(item["description"])
        interactions.append(item)
    notes = dict(new["metadata"].get("idp-mockserver", {}))
    before = old.get("metadata", {}).get("idp-mockserver", {})
    for key in ("cut", "left_out"):
        notes[key] = before.get(key, []) + notes.get(key, [])
    notes["interactions"] = len(interactions)
    notes["calls"] = before.get("calls", 0) + notes.get("calls", 0)
    return {**new, "interactions": interactions, "metadata": {**new["metadata"], "idp-mockserver": notes}}


class _InProcess:
    """The mock served by uvicorn in a daemon thread."""

    def __init__(self, clock="manual", fixtures=None, scenarios=()):
        import uvicorn

        from mockserver.app import MockServer
        from mockserver.core.settings import Settings

        settings = Settings(clock=clock, scenarios=list(scenarios))
        if fixtures:
            settings.fixtures = fixtures
        self.app = MockServer(settings)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning",
                                                   access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.time() + 20
        while not self.server.started:
            if time.time() > deadline or not self.thread.is_alive():
                raise RuntimeError("the mock server did not start")
            time.sleep(0.02)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pytest_addoption(parser):
    group = parser.getgroup("mockserver")
    group.addoption("--mockserver-url", default=os.environ.get("MOCKSERVER_URL"),
                    help="use a running mock at this URL instead of starting one (env MOCKSERVER_URL)")
    group.addoption("--mockserver-clock", default="manual", choices=("manual", "real"),
                    help="clock of the in-process mock (default manual)")
    group.addoption("--mockserver-control-token", default=os.environ.get("MOCKSERVER_CONTROL_TOKEN"),
                    help="control token of a shared mock (env MOCKSERVER_CONTROL_TOKEN)")
    group.addoption("--mockserver-journal-body-limit", type=int, default=JOURNAL_BODY_LIMIT,
                    help="bytes of a request or reply body each test's sandbox keeps whole (default 1 MiB; "
                         "at most 16 MiB): larger ones are journaled cut, and a pact matches them by type")
    group.addoption("--mockserver-pact", default=os.environ.get("MOCKSERVER_PACT"),
                    help="write every test's calls into this pact file (env MOCKSERVER_PACT)")
    group.addoption("--mockserver-pact-consumer", default="consumer", help="the pact's consumer name")
    group.addoption("--mockserver-pact-provider", default="idp-platform", help="the pact's provider name")
    group.addoption("--mockserver-sandbox-prefix", default=os.environ.get("MOCKSERVER_SANDBOX_PREFIX", ""),
                    help="prefix of the tests' sandbox names, e.g. a CI job id (env MOCKSERVER_SANDBOX_PREFIX)")


def unreachable(url, timeout=10):
    """Why the mock at `url` cannot be used (it cannot be reached: nothing listens, a wrong host or scheme),
    in a few words; None when it answers (whatever it answers: the control API says the rest)."""
    try:
        httpx.get(f"{url.rstrip('/')}/_mock/health", timeout=timeout)
    except (httpx.TransportError, httpx.InvalidURL) as error:
        return str(error) or type(error).__name__
    return None


def _where_the_url_came_from(config, url):
    given = any(str(arg).startswith("--mockserver-url") for arg in config.invocation_params.args)
    if not given and url == os.environ.get("MOCKSERVER_URL"):
        return "the environment variable MOCKSERVER_URL (the default of --mockserver-url)"
    return "--mockserver-url"


@pytest.fixture(scope="session")
def mockserver_session(request):
    url = request.config.getoption("--mockserver-url")
    local = None
    if url:
        problem = unreachable(url)
        if problem is not None:
            # one line instead of every test's connection traceback, and the session stops after this test
            message = (f"mockserver: cannot reach the mock at {url}, given by "
                       f"{_where_the_url_came_from(request.config, url)}: {problem}. Start it there "
                       f"(mockserver serve), or give no --mockserver-url and no MOCKSERVER_URL to start one "
                       f"in-process")
            request.session.shouldstop = message
            pytest.fail(message, pytrace=False)
    else:
        local = _InProcess(clock=request.config.getoption("--mockserver-clock"))
        url = local.url
    client = MockServerClient(url, request.config.getoption("--mockserver-control-token"))
    yield client
    client.close()
    if local is not None:
        local.stop()


def sandbox_name(prefix, worker, nodeid):
    """A valid sandbox name (A-Z a-z 0-9 _ . -, at most 64) that is unique per prefix, worker and test."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid.rsplit("::", 1)[-1]).strip("-")
    digest = hashlib.sha1(f"{prefix}|{worker}|{nodeid}".encode()).hexdigest()[:10]
    head = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{prefix}{worker}")
    return f"{head}-{readable}"[:64 - 11] + "-" + digest


@pytest.fixture
def mockserver(mockserver_session, request):
    """The mock, seen through a fresh sandbox of this test's own (deleted after the test)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    prefix = request.config.getoption("--mockserver-sandbox-prefix")
    client = mockserver_session.in_sandbox(sandbox_name(prefix, worker, request.node.nodeid),
                                           journal_body_limit=request.config.getoption("--mockserver-journal-body-limit"))
    yield client
    pact_file = request.config.getoption("--mockserver-pact")
    if pact_file:
        client.write_pact(pact_file, request.config.getoption("--mockserver-pact-consumer"),
                          request.config.getoption("--mockserver-pact-provider"))
    client.delete_sandbox()
    client.close()
