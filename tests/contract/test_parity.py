"""`mockserver parity`: a flow against the platform and against a fresh sandbox of the mock, compared.

The platform is a second `mockserver serve` on 127.0.0.1 (its own token, deployments sped up), or that
mock behind a small server that changes some replies on purpose (tests/support/upstream.py). Runs are short:
the pace is raised and the polling interval lowered for a local platform. A platform that refuses the token
means the run could not run (exit 2), never drift.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import httpx
import orjson
import pytest
import yaml
from starlette.testclient import TestClient
from support import ROOT
from support.http import free_port
from support.ids import ORG
from support.upstream import PLATFORM_TOKEN, Drifting, Process, Tiny, platform_folder

from mockserver.calls import har
from mockserver.cli import main
from mockserver.contract import flows, parity

FAST = ("--pace", "1000/1s", "--poll-interval", "0.05")
SECRET = "parity-SECRET-value-5e0c"
BAD_TOKEN = "expired-TOKEN-4b1d09"

UUID = r"[0-9a-f-]{36}"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    """The platform: a mock of its own (its own token), deployments 20 times faster."""
    process = Process("serve", "--fixtures", str(platform_folder(tmp_path_factory.mktemp("platform"))),
                      "--speed", "20")
    yield process
    process.stop()


@pytest.fixture(autouse=True)
def known_secret(monkeypatch):
    """The run's secret is made by secrets.token_urlsafe: known here, to look for it in every output."""
    monkeypatch.setattr(parity.secrets, "token_urlsafe", lambda n=None: SECRET)
    monkeypatch.setenv("MOCKSERVER_UPSTREAM_TOKEN", PLATFORM_TOKEN)


def state(platform):
    return httpx.get(f"{platform.url}/_mock/state/export", timeout=10).text


def calls_of(platform, **filters):
    return httpx.get(f"{platform.url}/_mock/calls", params=filters, timeout=10).json()["results"]


def last_call(platform):
    """The id of the platform's newest journaled call (0 before any)."""
    newest = calls_of(platform, limit=1)
    return newest[-1]["id"] if newest else 0


def run(capsys, tmp_path, *args):
    """`mockserver parity` in this process: (exit status, report, everything printed)."""
    report = tmp_path / "report.json"
    status = main.main(["parity", *FAST, "--json", str(report), "--markdown", str(tmp_path / "report.md"),
                   "--junit", str(tmp_path / "report.xml"), *args])
    printed = capsys.readouterr()
    text = printed.out + printed.err
    return status, orjson.loads(report.read_bytes()) if report.exists() else None, text


def rows(report, result=None):
    return {row["operation"]: row for row in report["operations"] if result is None or row["result"] == result}


def flow_operations(spec):
    return {flows.operation_of(spec, step).operation_id for step in flows.BUILT_IN}


@pytest.mark.server
def test_a_second_mock_as_the_platform_agrees_on_every_operation_of_the_built_in_flow(platform, capsys, tmp_path, spec):
    before = state(platform)
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--allow-writes")
    assert status == 0, printed
    ran = rows(report)
    deletes = {"deleteWebhook", "deleteLabelsGroup", "deleteContainerRegistry", "deleteDatabase",
               "deleteApplicationSecret", "deleteApplicationVariable", "deleteApplication", "deleteEnvironmentVariable",
               "deleteEnvironment", "deleteProjectVariable", "deleteProject"}
    assert {name for name, row in ran.items() if row["result"] != "not run"} == flow_operations(spec) | deletes
    assert {row["result"] for row in ran.values() if row["result"] != "not run"} == {"agree"}
    assert report["progressions"][0]["upstream"][-1] == report["progressions"][0]["mock"][-1] == "DEPLOYED"
    assert report["summary"]["drift"] == 0 and report["cleanup"]["failures"] == [] and report["aborted"] is None
    junit = ET.parse(tmp_path / "report.xml").getroot()
    assert junit.get("failures") == "0" and len(junit.findall("testcase")) == len(spec.operations)
    assert "**0 drift" in (tmp_path / "report.md").read_text()
    assert state(platform) == before                                  # it deleted all it made
    deleted = [call["operation"] for call in calls_of(platform, method="DELETE")[-len(deletes):]]
    assert deleted[0] == "deleteWebhook" and deleted[-1] == "deleteProject"     # newest first
    for text in (printed, *(path.read_text() for path in tmp_path.iterdir())):
        assert PLATFORM_TOKEN not in text and SECRET not in text


@pytest.mark.server
def test_a_read_only_run_sends_no_write_and_says_what_it_left_out(platform, capsys, tmp_path):
    last = last_call(platform)
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url)
    assert status == 0, printed
    sent = calls_of(platform, since=last)
    assert sent and {call["method"] for call in sent} == {"GET"}
    assert rows(report)["createProject"]["reason"] == "writes: a read-only run (--allow-writes runs it)"
    assert rows(report)["getProject"]["result"] == "agree"          # existing records, found by listing
    assert rows(report)["getEnvironment"]["calls"] == 1


DRIFTS = {   # operation: (kind, path) of the one difference the drifting platform makes there
    "getProject": ("missing", "$.updated_at"),
    "getEnvironment": ("type", "$.cluster_id"),
    "editProject": ("status", "status"),
    "getContainerRegistry": ("enum", "$.kind"),
    "listProjects": ("header", "x-ratelimit-remaining"),
    "getCluster": ("added", "$.node_pools"),
}


def drifting_rules():
    def without(name):
        return lambda status, headers, body: (status, headers, {k: v for k, v in body.items() if k != name})

    def setting(name, value):
        return lambda status, headers, body: (status, headers, {**body, name: value})
    return [
        ("GET", f"/project/{UUID}", without("updated_at")),
        ("GET", f"/environment/{UUID}", setting("cluster_id", 42)),
        ("PUT", f"/project/{UUID}", lambda status, headers, body: (201, headers, body)),
        ("GET", f"/organization/{UUID}/containerRegistry/{UUID}", setting("kind", "CLOUDZ_CR")),
        ("GET", f"/organization/{UUID}/project",
         lambda status, headers, body: (status, [h for h in headers if h[0].lower() != "x-ratelimit-remaining"], body)),
        ("GET", f"/cluster/{UUID}", setting("node_pools", [])),
    ]


@pytest.mark.server
def test_each_drift_is_reported_on_its_operation_with_its_path_and_an_allow_list_accepts_them(
        platform, capsys, tmp_path):
    drifting = Drifting(platform.url, drifting_rules())
    try:
        status, report, printed = run(capsys, tmp_path, "--upstream", drifting.url, "--allow-writes")
        assert status == 1, printed
        drifted = rows(report, "drift")
        assert {name: [(item["kind"], item["path"]) for item in row["findings"]] for name, row in drifted.items()} \
            == {name: [found] for name, found in DRIFTS.items()}       # each on its operation, nothing else
        assert "getEnvironment: type `$.cluster_id`" in printed
        assert ET.parse(tmp_path / "report.xml").getroot().get("failures") == str(len(DRIFTS))

        allow = tmp_path / "allow.yaml"
        allow.write_text(yaml.safe_dump([{"operation": name, "kind": kind, "path": path, "reason": f"known: {name}"}
                                          for name, (kind, path) in DRIFTS.items()]))
        unrelated = ("--skip", "*Application*", "--skip", "*Database*", "--skip", "*Webhook*", "--skip", "*Labels*")
        status, report, printed = run(capsys, tmp_path, "--upstream", drifting.url, "--allow-writes", "--allow",
                                      str(allow), *unrelated)
        assert status == 0, printed
        assert set(rows(report, "allowed")) == set(DRIFTS) and not rows(report, "drift")
        assert "| getProject | missing `$.updated_at`" in (tmp_path / "report.md").read_text()
        assert all(entry["used"] == 1 for entry in report["allow_list"])
    finally:
        drifting.stop()


@pytest.mark.server
def test_a_429_is_waited_out_for_its_retry_after_and_sent_again(platform, capsys, tmp_path):
    scenario = {"name": "exhausted", "rules": [{"match": {"operation": "listClusters", "first": 1},
                                                "effect": {"exhaust_rate_limit": True}}]}
    sandbox = f"limited-{time.monotonic_ns()}"
    made = httpx.put(f"{platform.url}/_mock/sandboxes/{sandbox}",
                     json={"rate_limit": "1000/2s", "scenarios": [scenario]})
    assert made.status_code in (200, 201), made.text
    started = time.monotonic()
    status, report, printed = run(capsys, tmp_path, "--upstream", f"{platform.url}/sandbox/{sandbox}")
    assert status == 0, printed
    assert [wait["why"] for wait in report["waits"]] == ["429"] and 0 < report["waits"][0]["seconds"] <= 2
    assert time.monotonic() - started >= report["waits"][0]["seconds"]
    listed = httpx.get(f"{platform.url}/sandbox/{sandbox}/_mock/calls", params={"operation": "listClusters"}).json()
    assert [call["status"] for call in listed["results"]] == [429, 200]
    assert rows(report)["listClusters"]["result"] == "agree"


def test_the_pace_stays_under_the_platforms_limit_and_waits_out_an_empty_window():
    slept, now = [], [1000.0]
    pacer = parity.Pacer(900, 3600.0, 60, sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)),
                         clock=lambda: now[0])
    assert pacer.interval == 4.0 and 3600 / pacer.interval < 1000        # the default: 900 an hour
    pacer.before()
    pacer.before()
    assert slept == [4.0]
    reset = time.time() + 30
    pacer.after(parity.Reply(200, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(reset))}, None, 0))
    pacer.before()
    assert 28 <= slept[-1] <= 31 and pacer.waits[-1][1] == "X-RateLimit-Remaining: 0"
    assert parity.retry_after({"retry-after": "7"}) == 7
    assert parity.retry_after({"x-ratelimit-reset": "12"}) == 12
    with pytest.raises(parity.Stop, match="more than --max-wait"):
        pacer.after(parity.Reply(429, {"retry-after": "3600"}, None, 0))


@pytest.mark.server
def test_a_run_stopped_by_sigterm_after_its_writes_leaves_nothing_on_the_platform(platform, tmp_path):
    before = state(platform)
    last = last_call(platform)
    report = tmp_path / "report.json"
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "parity", "--upstream", platform.url,
                                "--allow-writes", "--pace", "25/1s", "--poll-interval", "0.05", "--json", str(report)],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "MOCKSERVER_UPSTREAM_TOKEN": PLATFORM_TOKEN})
    deadline = time.monotonic() + 60
    while not calls_of(platform, operation="createApplicationSecret", since=last):
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 2, out + err
    assert "interrupted by SIGTERM" in out.decode()
    assert state(platform) == before                                   # all it made is gone again
    made = [call for call in calls_of(platform, since=last) if call["method"] == "POST" and call["status"] == 201]
    assert len(made) >= 6 and orjson.loads(report.read_bytes())["aborted"] == "interrupted by SIGTERM"
    assert PLATFORM_TOKEN not in (out + err).decode()


@pytest.mark.server
def test_a_run_stopped_by_sigint_after_its_writes_cleans_up_in_reverse_order(platform, capsys, tmp_path, monkeypatch):
    before = state(platform)
    last = last_call(platform)
    compared = parity.Parity.compared

    def then_interrupt(self, index, step, operation, name, requests, replies):
        compared(self, index, step, operation, name, requests, replies)
        if name == "createDatabase":                      # Ctrl-C once the database is made
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
    monkeypatch.setattr(parity.Parity, "compared", then_interrupt)
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--allow-writes")
    assert status == 2 and "interrupted by SIGINT" in printed
    assert state(platform) == before
    sent = calls_of(platform, since=last)
    made = [call["operation"] for call in sent if call["method"] == "POST" and call["status"] == 201]
    deleted = [call["operation"] for call in sent if call["method"] == "DELETE"]
    assert made[-1] == "createDatabase" and "createContainerRegistry" not in made
    assert deleted == ["deleteDatabase", "deleteApplicationSecret", "deleteApplicationVariable", "deleteApplication",
                       "deleteEnvironmentVariable", "deleteEnvironment", "deleteProjectVariable", "deleteProject"]


@pytest.mark.server
def test_a_run_that_fails_midway_still_cleans_up(platform, capsys, tmp_path, monkeypatch):
    before = state(platform)
    compare = parity.compare

    def failing(spec, operation, upstream, mock):
        if operation is not None and operation.operation_id == "createDatabase":
            raise RuntimeError("a fault of the run itself")
        return compare(spec, operation, upstream, mock)
    monkeypatch.setattr(parity, "compare", failing)
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--allow-writes")
    assert status == 2 and "the run failed: RuntimeError: a fault of the run itself" in printed
    assert state(platform) == before
    assert rows(report)["createLabelsGroup"]["reason"] == "not reached: the run stopped"


@pytest.mark.server
def test_a_recorded_flow_is_replayed_with_its_created_ids_mapped(platform, capsys, tmp_path, make_server):
    with TestClient(make_server(), base_url="http://mock", headers={"Authorization": "Token mock-admin-token"}) as mock:
        project = mock.post(f"/organization/{ORG}/project", json={"name": "replayed"}).json()["id"]
        mock.get(f"/project/{project}")
        env = mock.post(f"/project/{project}/environment", json={
            "name": "replayed-env", "mode": "STAGING",
            "cluster_id": "c1a5e7d9-3b2f-4e6a-8d1c-9f7b5a3e1d42"}).json()["id"]
        mock.get(f"/environment/{env}")
        mock.delete(f"/environment/{env}")
        recorded = list(mock.app.rt.journal.entries)
    flow = tmp_path / "flow.har"
    flow.write_bytes(orjson.dumps(har.document(recorded, "http://recorded.example")))
    before = state(platform)
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--allow-writes", "--flow", str(flow))
    assert status == 0, printed
    assert [(call["operation"], call["upstream"]["status"]) for call in report["calls"]] == [
        ("createProject", 201), ("getProject", 200), ("createEnvironment", 201), ("getEnvironment", 200),
        ("deleteEnvironment", 204), ("deleteProject", 204)]                # the project: deleted by the cleanup
    assert state(platform) == before

    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--flow", str(flow))
    assert status == 0 and rows(report)["getProject"]["reason"].startswith(f"needs the id {project}")


def test_usage_and_connection_errors_exit_2_in_one_line_without_the_token(capsys, tmp_path, monkeypatch):
    unreachable = f"http://127.0.0.1:{free_port()}"
    status, report, printed = run(capsys, tmp_path, "--upstream", unreachable)
    assert status == 2 and "the upstream cannot be reached" in printed and PLATFORM_TOKEN not in printed
    allow = tmp_path / "allow.yaml"
    allow.write_text("- {operation: getProject, kind: added}\n")
    status, _, printed = run(capsys, tmp_path, "--upstream", unreachable, "--allow", str(allow))
    assert status == 2 and "needs its reason" in printed
    monkeypatch.delenv("MOCKSERVER_UPSTREAM_TOKEN")
    status, _, printed = run(capsys, tmp_path, "--upstream", unreachable)
    assert status == 2 and "parity needs --token" in printed


STOREFRONT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
ELSEWHERE = "5e7a9c1e-3b5d-4f7a-9c1e-3b5d7f9a1c3e"


def har_of(make_server, tmp_path, name, *paths):
    """A HAR file of GETs made on a mock of the default fixtures."""
    with TestClient(make_server(), base_url="http://mock", headers={"Authorization": "Token mock-admin-token"}) as mock:
        for path in paths:
            assert mock.get(path).status_code == 200
        recorded = list(mock.app.rt.journal.entries)
    flow = tmp_path / name
    flow.write_bytes(orjson.dumps(har.document(recorded, "http://recorded.example")))
    return flow


@pytest.mark.server
def test_ids_of_records_both_hold_are_found_by_listing_or_given_in_a_mapping_file(platform, capsys, tmp_path,
                                                                                  make_server):
    moved = tmp_path / "moved"                  # the mock's storefront project has another id than the platform's
    moved.mkdir()
    for name in ("organizations.yaml", "targets.yaml", "tokens.yaml"):
        (moved / name).write_text((ROOT / "fixtures" / name).read_text().replace(STOREFRONT, ELSEWHERE))
    direct = har_of(make_server, tmp_path, "direct.har", f"/project/{STOREFRONT}")
    listed = har_of(make_server, tmp_path, "listed.har", f"/organization/{ORG}/project", f"/project/{STOREFRONT}")
    common = ("--upstream", platform.url, "--fixtures", str(moved))

    status, report, _ = run(capsys, tmp_path, *common, "--flow", str(direct))
    assert status == 1 and rows(report)["getProject"]["findings"][0]["message"] == \
        "the platform answers 200, the mock 404"
    status, report, printed = run(capsys, tmp_path, *common, "--flow", str(listed))
    assert status == 0, printed                                   # paired by name when the list was read
    mapping = tmp_path / "ids.yaml"
    mapping.write_text(f"{STOREFRONT}: {ELSEWHERE}\n")
    status, report, printed = run(capsys, tmp_path, *common, "--flow", str(direct), "--map", str(mapping))
    assert status == 0 and rows(report)["getProject"]["result"] == "agree", printed


@pytest.mark.server
def test_a_running_mock_compares_in_a_sandbox_of_its_own_that_goes_away(platform, capsys, tmp_path):
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--mock", platform.url,
                                  "--mock-token", PLATFORM_TOKEN)
    assert status == 0, printed
    assert report["mock"] == platform.url and report["summary"]["agree"] >= 15
    sandboxes = httpx.get(f"{platform.url}/_mock/sandboxes").json()
    assert not [box for box in sandboxes["results"] if box["name"].startswith("parity-")]


# ---------------------------------------------------------------- a refused token is not drift
@pytest.mark.server
@pytest.mark.parametrize("status, message", [
    (401, "the token has expired"),
    (403, "the token's scopes do not allow this operation"),
])
def test_parity_against_a_platform_that_refuses_the_token_could_not_run(status, message, capsys, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("MOCKSERVER_UPSTREAM_TOKEN", BAD_TOKEN)
    upstream = Tiny(free_port(), status, {"status": status, "error": "Unauthorized" if status == 401 else "Forbidden",
                                   "message": f"{message} ({BAD_TOKEN})"})
    report = tmp_path / "report.json"
    try:
        code = main.main(["parity", "--upstream", upstream.url, *FAST, "--json", str(report)])
    finally:
        upstream.stop()
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert code == 2, text
    assert len(upstream.requests) == 1 and upstream.requests[0][2] == f"Token {BAD_TOKEN}"
    lines = printed.out.strip().splitlines()                   # the result: one line; the progress is on stderr
    assert len(lines) == 1, text
    assert printed.err.splitlines()[1] == "parity: [1/21] getOrganization GET /organization"
    assert lines[0].startswith("parity: could not run: the platform refused the token: ")
    assert f"{status} to getOrganization" in lines[0] and message in lines[0]
    assert "drift" not in text and "the platform answers" not in text
    assert BAD_TOKEN not in text
    data = orjson.loads(report.read_bytes())
    assert data["exit_status"] == 2 and data["summary"]["drift"] == 0 and BAD_TOKEN not in report.read_text()


# ---------------------------------------------------------------- like with like, one vocabulary, progress
def record_a_client_session(platform, out):
    """What a client reads of its organization, through `mockserver record --fixtures-out`: never a status."""
    recorder = Process("record", "--upstream", platform.url, "--fixtures-out", str(out))
    try:
        with httpx.Client(base_url=recorder.url, headers={"Authorization": f"Token {PLATFORM_TOKEN}"},
                          timeout=10) as api:
            project = api.get(f"/organization/{ORG}/project").json()["results"][0]["id"]
            env = api.get(f"/project/{project}/environment").json()["results"][0]["id"]
            app = api.get(f"/environment/{env}/application").json()["results"][0]["id"]
            for path in ("/organization", f"/organization/{ORG}/cluster", f"/application/{app}",
                         f"/organization/{ORG}/containerRegistry", f"/organization/{ORG}/labelsGroups",
                         f"/organization/{ORG}/webhook"):
                assert api.get(path).status_code == 200, path
    finally:
        recorder.stop()
    assert (out / "recorded.yaml").exists(), recorder.output


@pytest.mark.server
def test_parity_against_the_platform_its_fixtures_were_recorded_from_reports_no_drift(platform, capsys, tmp_path):
    record_a_client_session(platform, tmp_path / "recorded")
    recorded = str(tmp_path / "recorded")
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--fixtures", recorded)
    assert status == 0 and report["summary"]["drift"] == 0, printed
    ran = rows(report)
    assert {ran[name]["result"] for name in ("getApplication", "getApplicationStatus", "getEnvironmentStatus",
                                             "listApplications", "listApplicationVariables")} == {"agree"}
    assert any("only the platform lists" in note for note in ran["listApplicationVariables"]["unlike"])


def test_recording_and_parity_speak_one_vocabulary():
    from mockserver.contract import drift, report
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
              "required": ["a", "b"], "additionalProperties": False}
    recorded = {(item["kind"], item["path"]): item["message"] for item in drift.against_schema({"a": "x", "c": 1},
                                                                                                 schema)}
    compared = {(item["kind"], item["path"]): item["message"] for item in drift.against_reply({"a": "x", "c": 1},
                                                                                                {"a": 1, "b": 2})}
    assert set(recorded) == set(compared) == {("added", "$.c"), ("missing", "$.b"), ("type", "$.a")}
    assert recorded[("added", "$.c")] == "the platform sends a field the document does not have"
    assert compared[("added", "$.c")] == "the platform sends a field the mock does not have"
    assert recorded[("missing", "$.b")] == "the platform does not send a field the document requires"
    assert compared[("missing", "$.b")] == "the platform does not send a field the mock sends"
    assert recorded[("type", "$.a")] == "changed type: the document has integer, the platform sends string"
    assert compared[("type", "$.a")] == "changed type: the mock has number, the platform sends string"
    assert set(report.KINDS) == set(drift.KINDS) >= {"added", "missing", "type", "enum", "status", "header"}


@pytest.mark.server
def test_a_paced_run_shows_its_pace_its_steps_and_its_waits_while_it_runs(platform, capsys, tmp_path, make_server):
    flow = har_of(make_server, tmp_path, "three.har", "/organization", f"/organization/{ORG}/cluster",
                  f"/organization/{ORG}/project")
    status, report, printed = run(capsys, tmp_path, "--upstream", platform.url, "--flow", str(flow), "--pace", "1/2s")
    assert status == 0, printed
    lines = printed.splitlines()
    assert ("parity: 3 of 3 step(s) to run (read-only); the platform gets at most 1 request(s) per 2 s (--pace): one "
            "every 2 s: 3 step(s) take at least 6 s") in lines
    assert lines.index("parity: [1/3] getOrganization GET /organization") < lines.index(
        f"parity: [3/3] listProjects GET /organization/{ORG}/project")
    waits = [line for line in lines if re.fullmatch(r"parity:   waiting [12]\.\d s for the pace \(1 per 2 s\)", line)]
    assert len(waits) == 2, printed


def _bare_run():
    run = parity.Parity.__new__(parity.Parity)
    run.unwinding, run.critical, run.pending_signal, run.signals = False, 0, None, []
    return run


def test_a_signal_is_noted_and_obeyed_at_the_next_safe_point_never_inside_a_request():
    run = _bare_run()
    run.on_signal(signal.SIGTERM, None)                    # in the middle of a request: nothing is raised there
    assert run.pending_signal == "SIGTERM"
    with pytest.raises(parity.Stop, match="interrupted by SIGTERM"):
        run.checkpoint()                                   # the next step, request or wait stops the run
    with pytest.raises(parity.Stop, match="interrupted by SIGTERM"):
        run.nap(30)
    with pytest.raises(parity.Stop, match="interrupted by SIGTERM"):
        with run.write_guard():
            run.checkpoint()                               # a write under way is answered first
            run.nap(0.01)
    run.unwinding = True                                   # the cleanup: noted, not obeyed
    run.on_signal(signal.SIGINT, None)
    run.nap(0.01)
    run.checkpoint()
    assert run.signals == ["SIGINT"]


def test_a_wait_ends_soon_after_a_signal_comes_during_it():
    run = _bare_run()
    timer = threading.Timer(0.2, run.on_signal, (signal.SIGTERM, None))
    timer.start()
    started = time.monotonic()
    with pytest.raises(parity.Stop, match="interrupted by SIGTERM"):
        run.nap(30)
    assert time.monotonic() - started < 10                  # not the whole wait
