"""pytest plugin for client teams: a running mock, reset between tests, and journal assertions.

    def test_deploy_waits_for_success(sandbox):
        client = MyPlatformClient(sandbox.url, token=sandbox.token("admin"))
        client.deploy(APP_ID)
        sandbox.advance(60)
        sandbox.assert_called(operation="deployApplication", times=1)

The session starts one mock in-process (uvicorn in a thread, on a free loopback port, manual clock by
default), or as a process of its own (`--mockserver-start local`: `mockserver serve --port 0`), or as its
container through Testcontainers (`--mockserver-start container`, the image `--mockserver-image`), or uses
an existing one given by `--mockserver-url` or the environment variable MOCKSERVER_URL (one that cannot be
reached fails the first test with one line naming the URL and where it was given, and the session stops
there). Each test gets a sandbox of its own (its handle: a `mockserver.client.Client` scoped to it), named
from the xdist worker and the test (and `--mockserver-sandbox-prefix`, e.g. a CI job id), made fresh
from the fixtures before the test and deleted after it: tests running in parallel against
one mock never see each other's calls, clock, scenarios or records. The sandbox keeps each
request and reply body whole up to `--mockserver-journal-body-limit` bytes (1 MiB by default).

Consumer contracts: `mockserver.write_pact(path)` writes the test's calls as a pact (merged into
the file when it exists, so a session's tests write one pact), `write_har(path)` as a HAR log;
`--mockserver-pact FILE` writes every test's calls into one pact without a line of code. Writers of one
file take turns under the lock file FILE.lock, which is deleted when the writing is done. A test whose calls
no other mock could verify (they start from a snapshot private to its sandbox, after a `restore()`, or its
journal gave up calls they relied on) adds nothing to the file and fails in one line that says why.

What the suite never used: at the end of the session the plugin asks the mock which scenario rules loaded in
the tests' sandboxes never fired in any of them (GET /_mock/usage?scope=mock with the sandboxes' prefix; xdist
workers' answers are put together) and lists them in the terminal summary; `--mockserver-unused-rules fail`
also fails the session, `off` does not ask.

A test's own sandbox options: `@pytest.mark.sandbox(rate_limit="5/10s", seed=7, fixtures="...")` (any option of
PUT /_mock/sandboxes/{name}; `keep` is the plugin's), and `make_sandbox(**options)` for more sandboxes in one test,
each named after the test and deleted with it.

When a test fails, what its sandboxes saw is kept: each journal is written whole as JSON to
`--mockserver-journal-dir` (env MOCKSERVER_JOURNAL_DIR, default `mockserver-journals`), named after the test, and
its last calls are shown with the failure. `--mockserver-keep-sandbox on-failure` (or `always`; env
MOCKSERVER_KEEP_SANDBOX; a test's marker `keep=`) leaves the sandbox on the mock for a look in the inspector.
"""

import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from mockserver.client import Client, MockServerError, PactRefused, connect, free_port, start_container, start_local
from mockserver.client.constants import JOURNAL_BODY_LIMIT  # bytes of a body a test's sandbox keeps whole
from mockserver.core.settings import parse_rate, scenario_paths

STARTS = ("inprocess", "local", "container")
UNUSED_RULES = ("warn", "fail", "off")
KEEP = ("never", "on-failure", "always")
SHOWN_CALLS = 20                                # the last calls a failing test's report shows, one line each
FIRED = pytest.StashKey[dict]()                 # scenario rule -> times fired, over the session's sandboxes
HANDLES = pytest.StashKey[list]()               # a test's sandbox handles, in the order made
FAILED = pytest.StashKey[bool]()                # the test failed (its setup or its call)
KEPT = pytest.StashKey[list]()                  # sandboxes kept on the mock this session: (test, name, page)
# what the in-process mock takes from the environment, as `mockserver serve` does (a local or container mock takes
# every MOCKSERVER_* variable: docs/clients/python.md)
IN_PROCESS_ENVIRONMENT = {"MOCKSERVER_SCENARIOS": ("scenarios", scenario_paths),
                          "MOCKSERVER_FIXTURES": ("fixtures", Path), "MOCKSERVER_SEED": ("seed", int),
                          "MOCKSERVER_RATE_LIMIT": ("rate_limit", parse_rate)}


class _InProcess:
    """The mock served by uvicorn in a daemon thread, with `serve`'s protocol (its limits, its direct path, and the
    connection that network faults cut: process/connections.py)."""

    def __init__(self, clock="manual", environ=None):
        import uvicorn

        from mockserver.app import MockServer
        from mockserver.core.settings import Settings
        from mockserver.process.connections import Limits, protocol

        self.app = MockServer(Settings(clock=clock, **in_process_settings(os.environ if environ is None else environ)))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning",
                                                   access_log=False, lifespan="on", ws="none",
                                                   http=protocol(Limits(), self.app)))
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


def in_process_settings(environ):
    """The Settings the in-process mock takes from the environment (IN_PROCESS_ENVIRONMENT); a value that does not
    read is a UsageError naming the variable."""
    out = {}
    for name, (field, read) in IN_PROCESS_ENVIRONMENT.items():
        if environ.get(name):
            try:
                out[field] = read(environ[name])
            except ValueError as error:
                raise pytest.UsageError(f"mockserver: {name}={environ[name]!r}: {error}") from None
    return out


def pytest_configure(config):
    config.addinivalue_line("markers", "sandbox(**options): the options of this test's sandbox (any option of "
                                       "PUT /_mock/sandboxes/{name}: rate_limit, seed, fixtures, scenarios, clock ...; "
                                       "keep: never, on-failure or always)")


def pytest_addoption(parser):
    group = parser.getgroup("mockserver")
    group.addoption("--mockserver-url", default=os.environ.get("MOCKSERVER_URL"),
                    help="use a running mock at this URL instead of starting one (env MOCKSERVER_URL)")
    group.addoption("--mockserver-start", default=os.environ.get("MOCKSERVER_START", "inprocess"), choices=STARTS,
                    help="how the session starts its mock when no URL is given: inprocess (uvicorn in a thread, the "
                         "default), local (mockserver serve --port 0 as a process; env MOCKSERVER_COMMAND names "
                         "the executable) or container (Testcontainers; env MOCKSERVER_START)")
    group.addoption("--mockserver-image", default=os.environ.get("MOCKSERVER_IMAGE", "idp-mockserver:local"),
                    help="image of --mockserver-start container (env MOCKSERVER_IMAGE; default idp-mockserver:local)")
    group.addoption("--mockserver-network", default=os.environ.get("MOCKSERVER_NETWORK"),
                    help="host: the container runs on the host's network (engines without a bridge); default: "
                         "its port mapped (env MOCKSERVER_NETWORK)")
    group.addoption("--mockserver-clock", default="manual", choices=("manual", "real"),
                    help="clock of the mock the session starts (default manual)")
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
    group.addoption("--mockserver-journal-dir", default=os.environ.get("MOCKSERVER_JOURNAL_DIR", "mockserver-journals"),
                    help="where a failing test's sandbox journals are written, one JSON file each, named after the "
                         "test (env MOCKSERVER_JOURNAL_DIR; default mockserver-journals, made when a test fails)")
    group.addoption("--mockserver-keep-sandbox", default=os.environ.get("MOCKSERVER_KEEP_SANDBOX", "never"),
                    choices=KEEP, help="leave a test's sandboxes on the mock after it: never (the default), "
                                       "on-failure or always (env MOCKSERVER_KEEP_SANDBOX)")
    group.addoption("--mockserver-unused-rules", default=os.environ.get("MOCKSERVER_UNUSED_RULES", "warn"),
                    choices=UNUSED_RULES, help="scenario rules no test made fire, at the end of the session: warn "
                                               "(list them in the summary; the default), fail (and fail the session), "
                                               "off (env MOCKSERVER_UNUSED_RULES)")


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
    option = request.config.getoption
    url, control_token = option("--mockserver-url"), option("--mockserver-control-token")
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
        client = connect(url, control_token=control_token)
    else:
        client = _started(option("--mockserver-start"), option("--mockserver-clock"), option("--mockserver-image"),
                          option("--mockserver-network"))
    yield client
    try:
        if option("--mockserver-unused-rules") != "off":
            _note_fired(request.config, client.usage(scope="mock", prefix=sandbox_head(
                option("--mockserver-sandbox-prefix"), os.environ.get("PYTEST_XDIST_WORKER", "main")) + "-"))
    except (MockServerError, httpx.HTTPError):     # a mock gone, or one older than GET /_mock/usage: no report
        pass
    finally:
        client.stop()


def _note_fired(config, report):
    """Add a usage report's rules to the session's (a rule fired when it fired in any sandbox, on any worker)."""
    fired = config.stash.setdefault(FIRED, {})
    for rule in report["rules"]["results"]:
        fired[rule["rule"]] = fired.get(rule["rule"], 0) + rule["fired"]


def unused_rules(config):
    return sorted(name for name, times in config.stash.get(FIRED, {}).items() if not times)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker is done: the rules its sandboxes loaded and fired join the controller's."""
    node.config.stash.setdefault(KEPT, []).extend(getattr(node, "workeroutput", {}).get("mockserver_kept", []))
    fired = getattr(node, "workeroutput", {}).get("mockserver_fired")
    if fired is not None:
        _note_fired(node.config, {"rules": {"results": [{"rule": k, "fired": v} for k, v in fired.items()]}})


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workeroutput"):          # an xdist worker: the controller says it, once
        config.workeroutput["mockserver_fired"] = config.stash.get(FIRED, {})
        config.workeroutput["mockserver_kept"] = config.stash.get(KEPT, [])
    elif unused_rules(config) and config.getoption("--mockserver-unused-rules") == "fail" and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    kept = config.stash.get(KEPT, [])
    if kept:
        terminalreporter.write_sep("-", f"mockserver: {len(kept)} sandbox(es) kept on the mock")
        for test, name, page in kept:
            terminalreporter.write_line(f"{test}: {name} ({page})")
        if not config.getoption("--mockserver-url"):
            terminalreporter.write_line("mockserver: the session started that mock and stopped it at its end: keep "
                                        "sandboxes for a look on a mock that outlives the run (--mockserver-url)")
    unused = [] if hasattr(config, "workeroutput") else unused_rules(config)
    if not unused:
        return
    failing = config.getoption("--mockserver-unused-rules") == "fail"
    terminalreporter.write_sep("-", f"mockserver: {len(unused)} scenario rule(s) never fired", red=failing,
                               yellow=not failing)
    for name in unused:
        terminalreporter.write_line(f"{name}: loaded, never fired in any test's sandbox")
    if failing:
        terminalreporter.write_line("mockserver: the session fails (--mockserver-unused-rules fail)")


def _started(start, clock, image, network):
    """The session's own mock, started as asked: a Client whose stop() stops it."""
    if start == "local":
        return start_local(clock=clock)
    if start == "container":
        return start_container(image, network=network, clock=clock)
    local = _InProcess(clock=clock)
    return Client(local.url, owner=local)


def sandbox_head(prefix, worker):
    """What the names of a worker's sandboxes start with (before a '-')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{prefix}{worker}")[:52]


def sandbox_name(prefix, worker, nodeid):
    """A valid sandbox name (A-Z a-z 0-9 _ . -, at most 64) that is unique per prefix, worker and test."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", nodeid.rsplit("::", 1)[-1]).strip("-")
    digest = hashlib.sha1(f"{prefix}|{worker}|{nodeid}".encode()).hexdigest()[:10]
    return f"{sandbox_head(prefix, worker)}-{readable}"[:64 - 11] + "-" + digest


class _Sandboxes:
    """The sandboxes of one test: made with its marker's options (or a factory's), deleted at its end unless kept,
    their journals kept when it fails."""

    def __init__(self, session, request):
        self.session, self.request = session, request
        marker = request.node.get_closest_marker("sandbox")
        self.options = dict(marker.kwargs) if marker else {}
        if marker and marker.args:
            raise pytest.UsageError("mockserver: @pytest.mark.sandbox takes options by name: "
                                    "@pytest.mark.sandbox(rate_limit='5/10s')")
        self.keep = self.options.pop("keep", request.config.getoption("--mockserver-keep-sandbox"))
        if self.keep not in KEEP:
            raise pytest.UsageError(f"mockserver: keep={self.keep!r}: one of {', '.join(KEEP)}")
        self.handles = request.node.stash.setdefault(HANDLES, [])

    def make(self, options):
        config, node = self.request.config, self.request.node
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        nodeid = node.nodeid if not self.handles else f"{node.nodeid}#{len(self.handles) + 1}"
        options = {"journal_body_limit": config.getoption("--mockserver-journal-body-limit"), **options}
        handle = self.session.in_sandbox(sandbox_name(config.getoption("--mockserver-sandbox-prefix"), worker,
                                                      nodeid), **options)
        self.handles.append(handle)
        return handle

    def finish(self, handle):
        """After the test: its pact written (when asked), the sandbox deleted unless kept. A pact refused: the
        one line that says why."""
        config, node = self.request.config, self.request.node
        pact_file, refused = config.getoption("--mockserver-pact"), None
        failed = node.stash.get(FAILED, False)
        kept = self.keep == "always" or (self.keep == "on-failure" and failed)
        try:
            if pact_file:
                handle.write_pact(pact_file, config.getoption("--mockserver-pact-consumer"),
                                  config.getoption("--mockserver-pact-provider"))
        except PactRefused as error:
            refused = str(error)
        finally:
            if kept:
                config.stash.setdefault(KEPT, []).append((node.nodeid, handle.sandbox, inspector_page(handle)))
            else:
                handle.delete_sandbox()
            handle.close()
        return refused


def inspector_page(handle):
    return f"{handle.root}/_mock/ui?sandbox={handle.sandbox}"


@pytest.fixture
def sandbox(mockserver_session, request):
    """The mock, seen through a fresh sandbox of this test's own (deleted after the test): the name of this
    concept in every client (Node's useSandbox, Go's mocktest.Sandbox). Its options: the test's
    `@pytest.mark.sandbox(...)`."""
    boxes = _Sandboxes(mockserver_session, request)
    client = boxes.make(boxes.options)
    yield client
    refused = boxes.finish(client)
    if refused:
        pytest.fail(refused, pytrace=False)


@pytest.fixture
def make_sandbox(mockserver_session, request):
    """More sandboxes in one test: `make_sandbox(rate_limit="5/10s")` makes one with those options (the marker's
    are not applied), named after the test; each is deleted (or kept, as the test's) when the test ends."""
    boxes = _Sandboxes(mockserver_session, request)
    made = []

    def make(**options):
        keep = options.pop("keep", None)
        if keep is not None:
            raise TypeError("make_sandbox: keep is the test's: @pytest.mark.sandbox(keep=...) or "
                            "--mockserver-keep-sandbox")
        made.append(boxes.make(options))
        return made[-1]

    yield make
    refused = [problem for handle in made if (problem := boxes.finish(handle))]
    if refused:
        pytest.fail(refused[0], pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that failed (in its setup or its call) keeps what its sandboxes saw: each journal written to the
    journal folder, and its last calls shown with the failure."""
    outcome = yield
    report = outcome.get_result()
    if report.when not in ("setup", "call") or not report.failed:
        return
    item.stash[FAILED] = True
    for index, handle in enumerate(item.stash.get(HANDLES, [])):
        report.sections.append((f"mockserver: sandbox {handle.sandbox}",
                                keep_journal(handle, item, index, item.config)))


def keep_journal(handle, item, index, config):
    """Write a sandbox's journal whole to the journal folder (one JSON array of calls); the text shown with the
    failure: where it went, the last calls, and whether the sandbox is kept."""
    try:
        calls = handle.calls()
    except (MockServerError, httpx.HTTPError) as error:
        return f"its journal could not be read: {error}"
    folder = Path(config.getoption("--mockserver-journal-dir"))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", item.nodeid).strip("-")[:180] + (f".{index + 1}" if index else "")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(calls, indent=1))
    lines = [f"journal: {path} ({len(calls)} call(s))"]
    lines += [f"#{c['id']} {c['method']} {c['path']} -> {c['status']}"
              + (f" ({c['operation']})" if c.get("operation") else "") for c in calls[-SHOWN_CALLS:]]
    keep = _marker_keep(item) or config.getoption("--mockserver-keep-sandbox")
    if keep in ("on-failure", "always"):
        lines.append(f"kept: {handle.url} (inspector: {inspector_page(handle)})")
    return "\n".join(lines)


def _marker_keep(item):
    marker = item.get_closest_marker("sandbox")
    return marker.kwargs.get("keep") if marker else None


@pytest.fixture
def mockserver(sandbox):
    """The test's sandbox under the name the fixture had: deprecated, kept for a release (use `sandbox`)."""
    return sandbox
