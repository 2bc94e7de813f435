"""The inspector: its control routes (in-process) and the page at /_mock/ui in a real headless
Chromium against a live `mockserver serve --clock manual` (screenshots under reports/ui/); its deployments
view lists the user's own activity first."""

import json
import re
import socket
import time

import httpx
import pytest
import yaml
from support import ROOT
from support.browser import expect, screenshot
from support.http import free_port
from support.ids import ADMIN, APP, CONTAINER, ENV, ORG, PROJECT

PROJECTS = f"/organization/{ORG}/project"
FIXTURES = ROOT / "fixtures"
WEBHOOKS = f"/organization/{ORG}/webhook"
BROKEN = "name: broken\nrules:\n  - match: {operation: getNothing}\n    effect: {status: 500}\n"
FLAKY = ("name: flaky-org\ndescription: reading the organization fails\nrules:\n  - name: org-down\n"
         "    match: {operation: getOrganization}\n    effect: {status: 503, message: organization backend down}\n")


def advance(http, seconds):
    assert http.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


# ================================================================ control routes, in-process
def rows(client, **params):
    reply = client.get("/_mock/calls/rows", params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_call_rows_are_newest_first_without_bodies_and_name_the_token(client):
    client.post(PROJECTS, json={"name": "checkout"})
    client.get("/organization")
    found = rows(client)
    assert [r["operation"] for r in found["results"]] == ["getOrganization", "createProject"]
    assert found["results"][0]["token"] == "admin"
    assert found["total"] == found["journal_total"] == 2 and found["last_id"] == found["results"][0]["id"]
    assert "body" not in found["results"][0] and "headers" not in found["results"][0]


def test_call_rows_page_by_call_id(client):
    for _ in range(7):
        client.get("/organization")
    first = rows(client, limit=3)
    assert [r["id"] for r in first["results"]] == [7, 6, 5] and first["newer"] == 0
    second = rows(client, limit=3, before=5)
    assert [r["id"] for r in second["results"]] == [4, 3, 2] and second["newer"] == 3 and second["total"] == 7
    assert [r["id"] for r in rows(client, since=5)["results"]] == [7, 6]


def test_call_rows_filter_by_status_operation_path_and_text(client):
    client.post(PROJECTS, json={"name": "needle-project"})
    client.post(PROJECTS, json={})
    client.get("/nowhere/at-all")
    assert [r["status"] for r in rows(client, status="4xx")["results"]] == [404, 400]
    assert {r["operation"] for r in rows(client, operation="createProject")["results"]} == {"createProject"}
    assert rows(client, path="/organization/*/project")["total"] == 2
    assert [r["status"] for r in rows(client, text="NEEDLE-PROJECT")["results"]] == [201]
    assert rows(client, text="at-all")["total"] == 1


def test_call_rows_refuse_unknown_parameters_and_bad_numbers(client):
    assert client.get("/_mock/calls/rows", params={"colour": "red"}).status_code == 400
    reply = client.get("/_mock/calls/rows", params={"before": "soon"})
    assert reply.status_code == 400 and "before" in reply.json()["message"]


def test_one_call_in_full_with_redacted_authorization(client):
    client.post(PROJECTS, json={"name": "full"})
    ident = rows(client)["results"][0]["id"]
    entry = client.get(f"/_mock/calls/{ident}").json()
    assert entry["body"] == {"name": "full"} and entry["response"]["name"] == "full"
    assert entry["token"] == "admin" and "mock-admin-token" not in json.dumps(entry)
    assert client.get("/_mock/calls/999").status_code == 404


def test_deployment_timeline_has_queue_states_steps_and_outcome(client):
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    advance(client, 2)
    body = client.get("/_mock/deployments").json()
    env = next(g for g in body["results"] if g["id"] == ENV)
    request = [r for r in env["requests"] if r["target_id"] == APP][-1]
    assert request["state"] == "BUILDING" and request["status"] == "ONGOING" and request["in_queue"]
    assert env["queue"] == [request["id"]]
    assert [i["state"] for i in request["intervals"]] == ["DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING", "DEPLOYED"]
    assert [s["status"] for s in request["steps"]][:3] == ["SUCCESS", "ONGOING", "PENDING"]
    assert request["intervals"][-1]["end"] is None and request["call_id"] is not None
    advance(client, 10)
    body = client.get("/_mock/deployments").json()
    env = next(g for g in body["results"] if g["id"] == ENV)
    request = [r for r in env["requests"] if r["target_id"] == APP][-1]
    assert request["state"] == "DEPLOYED" and request["outcome"] == "DEPLOYED" and env["queue"] == []
    assert all(s["status"] == "SUCCESS" for s in request["steps"])
    assert body["clock"]["now"] > request["end_at"]


def test_a_failing_deployment_ends_in_its_error_state(client):
    client.put("/_mock/scenarios/fail-build", content="name: fail-build\nrules:\n"
                                                     "  - match: {operation: deployApplication}\n"
                                                     "    effect: {deployment: {fail_at: BUILD}}\n")
    client.post(f"/application/{APP}/deploy", json={})
    advance(client, 30)
    env = next(g for g in client.get("/_mock/deployments").json()["results"] if g["id"] == ENV)
    request = [r for r in env["requests"] if r["target_id"] == APP][-1]
    assert request["outcome"] == "BUILD_ERROR" and request["intervals"][-1]["kind"] == "error"
    assert request["steps"][-1] == {**request["steps"][-1], "name": "BUILD", "status": "ERROR"}


def test_state_tree_nests_records_with_counts_and_no_secret(client):
    hook = client.post(WEBHOOKS, json={"target_url": "http://127.0.0.1:9/hook", "events": ["DEPLOYMENT_STARTED"],
                                       "enabled": True, "target_secret": "tree-secret-value"}).json()
    tree = client.get("/_mock/state/tree").json()
    org = next(o for o in tree["organizations"] if o["id"] == ORG)
    project = next(p for p in org["projects"] if p["id"] == PROJECT)
    env = next(e for e in project["environments"] if e["id"] == ENV)
    service = next(s for s in env["services"] if s["id"] == APP)
    assert service["record"] == client.get(f"/application/{APP}").json()
    assert service["type"] == "APPLICATION"
    assert org["counts"]["webhooks"] == len(org["webhooks"]) and hook["id"] in {w["id"] for w in org["webhooks"]}
    assert org["counts"]["services"] == sum(len(e["services"]) for p in org["projects"] for e in p["environments"])
    assert "tree-secret-value" not in json.dumps(tree)


def test_posting_a_scenario_activates_it_under_its_own_name(client):
    reply = client.post("/_mock/scenarios", content=FLAKY, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 201 and reply.json()["name"] == "flaky-org"
    assert client.get("/organization").status_code == 503


def test_a_broken_scenario_is_refused_with_its_line(client):
    reply = client.post("/_mock/scenarios", content=BROKEN)
    assert reply.status_code == 400
    assert reply.json()["details"] == [{"location": "line 3",
                                        "message": "rules.0.match.operation: unknown operation 'getNothing'"}]
    assert client.post("/_mock/scenarios", content="name: [unclosed\n").json()["details"][0]["location"] == "line 2"
    assert client.post("/_mock/scenarios", content="").status_code == 400
    assert client.get("/_mock/scenarios").json()["results"] == []


def test_the_page_and_its_files_are_served_from_the_package(client):
    page = client.get("/_mock/ui")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'src="ui/app.js"' in page.text
    assert "http" not in re.sub(r"<!--.*?-->", "", page.text).replace("http-equiv", "")
    assert client.get("/_mock/ui/app.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/_mock/ui/app.css").headers["content-type"].startswith("text/css")
    assert client.get("/_mock/ui/", follow_redirects=False).headers["location"] == "../ui"
    assert client.get("/_mock/ui/secrets.txt").status_code == 404
    assert client.get("/_mock/ui/..%2Fcontrol.py").status_code == 404


# ================================================================ the page in Chromium
@pytest.mark.server
@pytest.mark.browser
def test_calls_appear_live_and_open_with_request_and_response(ui, mock):
    page = ui("calls")
    expect()(page.locator("#calls-empty")).to_be_visible()
    assert mock.post(PROJECTS, json={"name": "inspected"}).status_code == 201
    assert mock.post(f"/application/{APP}/deploy", json={}).status_code == 202
    mock.get("/nowhere/at-all")
    rows_ = page.locator("#call-rows tr")
    expect()(rows_).to_have_count(3)                          # no reload: the page polls
    expect()(rows_.nth(0)).to_contain_text("404")
    expect()(rows_.nth(1)).to_contain_text("deployApplication")
    expect()(rows_.nth(2)).to_contain_text("createProject")
    expect()(rows_.nth(2)).to_contain_text("admin")
    rows_.nth(2).click()
    detail = page.locator("#call-detail")
    expect()(detail).to_contain_text("Call #1")
    expect()(detail).to_contain_text('"name": "inspected"')
    expect()(detail).to_contain_text("201")
    expect()(detail).to_contain_text("Token ...oken")
    assert "mock-admin-token" not in detail.inner_text()
    rows_.nth(1).focus()
    page.keyboard.press("Enter")                              # rows open from the keyboard too
    expect()(detail).to_contain_text("/application/{app_id}/deploy")
    screenshot(page, "calls")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "calls-dark")


@pytest.mark.server
@pytest.mark.browser
def test_calls_filter_by_status_and_text(ui, mock):
    mock.post(PROJECTS, json={"name": "alpha"})
    mock.post(PROJECTS, json={})
    mock.get("/organization")
    page = ui("calls")
    expect()(page.locator("#call-rows tr")).to_have_count(3)
    page.select_option("#f-status", "4xx")
    expect()(page.locator("#call-rows tr")).to_have_count(1)
    expect()(page.locator("#call-rows tr")).to_contain_text("400")
    page.get_by_role("button", name="Clear").click()
    page.fill("#f-text", "alpha")
    page.get_by_role("button", name="Filter").click()
    expect()(page.locator("#call-rows tr")).to_have_count(1)
    expect()(page.locator("#call-rows tr")).to_contain_text("201")
    expect()(page.locator("#calls-range")).to_contain_text("of 1,")


@pytest.mark.server
@pytest.mark.browser
def test_calls_start_again_after_a_reset_elsewhere(ui, mock):
    for _ in range(3):
        mock.get("/organization")
    page = ui("calls")
    expect()(page.locator("#call-rows tr")).to_have_count(3)
    mock.post("/_mock/reset")
    mock.post(PROJECTS, json={"name": "after-reset"})
    expect()(page.locator("#call-rows tr")).to_have_count(1)
    expect()(page.locator("#call-rows tr")).to_contain_text("createProject")


@pytest.mark.server
@pytest.mark.browser
def test_deployment_timeline_follows_the_clock_to_deployed(ui, mock):
    assert mock.post(f"/application/{APP}/deploy", json={}).status_code == 202
    assert mock.post(f"/container/{CONTAINER}/deploy", json={}).status_code == 202
    page = ui("deployments")
    web = page.locator('.lane-label[data-lane="web"] [data-testid=lane-state]')
    worker = page.locator('.lane-label[data-lane="worker"] [data-testid=lane-state]')
    group = page.locator(".group", has=page.locator('.lane-label[data-lane="web"]'))   # the production environment
    expect()(web).to_have_text("DEPLOYMENT_QUEUED")
    expect()(group).to_contain_text("Queue now: web")
    before = page.locator("#clock-now").inner_text()
    page.get_by_role("button", name="+1 s").click()
    expect()(web).to_have_text("BUILDING")
    expect()(page.locator(".track .bar.BUILDING").first).to_be_visible()
    page.get_by_role("button", name="+1 s").click()
    screenshot(page, "deployments")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "deployments-dark")
    page.emulate_media(color_scheme="light")
    page.fill("#advance-seconds", "7")                         # 9 s after the deploys: web took 1 + 7 s
    page.get_by_role("button", name="Advance", exact=True).click()
    expect()(web).to_have_text("DEPLOYED")
    expect()(worker).to_have_text("DEPLOYING")                # queued behind web, then running
    assert page.locator("#clock-now").inner_text() != before
    page.get_by_role("button", name="+10 s").click()
    expect()(worker).to_have_text("DEPLOYED")
    expect()(group).to_contain_text("Queue now: empty")
    group.locator(".history summary").first.click()
    expect()(group.locator(".history").first).to_contain_text("REGISTRY_CREATE_REPOSITORY")


@pytest.mark.server
@pytest.mark.browser
def test_scenario_pasted_as_yaml_is_activated_counted_and_deactivated(ui, mock):
    page = ui("scenarios")
    page.fill("#scenario-yaml", BROKEN)
    page.get_by_role("button", name="Activate").click()
    error = page.locator("#scenario-error")
    expect()(error).to_contain_text("Line 3:")
    expect()(error).to_contain_text("unknown operation 'getNothing'")
    expect()(error.locator("li.hit")).to_contain_text("- match: {operation: getNothing}")
    screenshot(page, "scenarios-error")
    page.fill("#scenario-yaml", FLAKY)
    page.get_by_role("button", name="Activate").click()
    card = page.locator('[data-scenario="flaky-org"]')
    expect()(card).to_contain_text("flaky-org/org-down")
    expect()(error).to_be_hidden()
    assert mock.get("/organization").status_code == 503
    expect()(card.locator("[data-testid=fired]")).to_have_text("1")     # hit counts follow live
    screenshot(page, "scenarios")
    card.get_by_role("button", name="Deactivate scenario flaky-org").click()
    expect()(card).to_have_count(0)
    assert mock.get("/organization").status_code == 200


LONG_RULES = ("name: long-rules\nrules:\n" + "".join(
    f"  - name: {'a-rule-whose-name-goes-on-and-on-' * 3}{index}\n"
    f"    match: {{operation: getOrganization, headers: {{x-long-header-name-for-matching: '{'v' * 120}'}}}}\n"
    f"    effect: {{status: 503, message: '{'the organization backend is down for maintenance ' * 4}'}}\n"
    for index in range(3)))


def box_of(locator, tries=10):
    """The element's box. The page renders its lists anew every second, and an element measured just as it is
    replaced has none: measured again, the new one has."""
    for _ in range(tries):
        box = locator.bounding_box()
        if box is not None:
            return box
        time.sleep(0.1)
    raise AssertionError(f"{locator} has no box: it is not shown")


@pytest.mark.server
@pytest.mark.browser
def test_scenario_counts_stay_in_view_at_1280_px_whatever_the_rules_hold(ui, mock, page):
    page.set_viewport_size({"width": 1280, "height": 900})
    assert mock.post("/_mock/scenarios", content=LONG_RULES, headers={"Content-Type": "application/yaml"}
                     ).status_code in (200, 201)
    page = ui("scenarios")
    card = page.locator('[data-scenario="long-rules"]')
    expect()(card.locator("[data-testid=fired]")).to_have_count(3)
    frame = box_of(card.locator(".table-wrap"))
    for cell in card.locator("[data-testid=fired], [data-testid=matched]").all():
        box = box_of(cell)
        assert box["width"] > 0 and box["x"] >= frame["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"]
        assert box["x"] + box["width"] <= 1280
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280       # nothing to scroll sideways
    screenshot(page, "scenarios-1280")


def fixture_services():
    """How many services the default fixtures declare, counted from the files themselves."""
    kinds = ("applications", "containers", "databases", "jobs", "helms", "terraforms")
    documents = [yaml.safe_load(path.read_text()) for path in sorted(FIXTURES.glob("*.yaml"))]
    return sum(len(env.get(kind, [])) for document in documents for org in document.get("organizations", [])
               for project in org.get("projects", []) for env in project.get("environments", []) for kind in kinds)


@pytest.mark.server
@pytest.mark.browser
def test_state_tree_shows_records_as_the_api_returns_them(ui, mock):
    created = mock.post(PROJECTS, json={"name": "tree-project"}).json()
    page = ui("state")
    expect()(page.locator("#state-tree")).to_contain_text("tree-project")
    page.locator("#state-tree").get_by_role("button", name="service web · application").click()
    detail = page.locator("#state-detail")
    expect()(detail).to_contain_text(APP)
    expect()(detail).to_contain_text('"build_mode"')
    page.locator("#state-tree").get_by_role("button", name="project tree-project").click()
    expect()(detail).to_contain_text(created["id"])
    expect()(page.locator("#state-counts")).to_contain_text(f"services: {fixture_services()}")
    screenshot(page, "state")


@pytest.mark.server
@pytest.mark.browser
def test_webhook_deliveries_show_attempts_next_retry_and_signature(ui, mock):
    closed = free_port()                                      # nothing listens there: every attempt fails
    hook = mock.post(WEBHOOKS, json={"target_url": f"http://127.0.0.1:{closed}/hook", "events": ["DEPLOYMENT_STARTED"],
                                     "enabled": True, "target_secret": "page-secret-value"})
    assert hook.status_code == 201
    mock.post(f"/application/{APP}/deploy", json={})
    advance(mock, 1)
    page = ui("webhooks")
    row = page.locator("#delivery-rows tr[data-delivery]").first
    expect()(row).to_contain_text("DEPLOYMENT_STARTED")
    expect()(row).to_contain_text("RETRYING")
    expect()(row).to_contain_text("ConnectionRefusedError")
    next_retry = row.locator("td").nth(7)
    expect()(next_retry).not_to_have_text("–")
    row.click()
    expanded = page.locator("tr.expanded")
    expect()(expanded).to_contain_text("X-Mock-Signature: sha256=")
    page.get_by_role("button", name="+1 s").click()
    expect()(row.locator("td").nth(5)).to_have_text("2")      # the retry happened on the mock's clock
    assert "page-secret-value" not in page.content()
    screenshot(page, "webhooks")
    row.locator("[data-call]").click()                         # the call that caused it, in the Calls view
    expect()(page.locator("#call-detail")).to_contain_text("deployApplication")


def fill_journal(url, count):
    """`count` calls over one pipelined connection (far quicker than one request after another)."""
    host, port = url.removeprefix("http://").split(":")
    paths = ["/organization", "/nowhere/at-all", f"/project/{PROJECT}"]
    requests = b"".join(f"GET {paths[i % 3]} HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n\r\n"
                        .encode() for i in range(count))
    with socket.create_connection((host, int(port)), timeout=60) as connection:
        connection.sendall(requests)
        received = b""
        while received.count(b"HTTP/1.1 ") < count:
            chunk = connection.recv(1 << 20)
            assert chunk, "the server closed the connection early"
            received += chunk


@pytest.mark.server
@pytest.mark.browser
def test_page_loads_within_a_second_with_10000_calls(ui, mock, live_manual):
    fill_journal(live_manual.url, 10000)
    assert mock.get("/_mock/calls/rows", params={"limit": 0}).json()["journal_total"] == 10000
    page = ui("calls")
    expect()(page.locator("#calls-range")).to_contain_text("Calls 1–100 of 10,000")
    loaded = page.evaluate("performance.getEntriesByName('inspector:calls')[0].startTime")
    print(f"first 100 of 10,000 calls shown {loaded:.0f} ms after navigation")
    assert loaded <= 1000
    assert page.locator("#call-rows tr").count() == 100     # a page of rows, not 10,000
    page.get_by_role("button", name="Older →").click()
    expect()(page.locator("#calls-range")).to_contain_text("Calls 101–200 of 10,000")
    expect()(page.locator("#call-rows tr").first).to_contain_text("9900")
    page.get_by_role("button", name="Newest").click()
    expect()(page.locator("#call-rows tr").first).to_contain_text("10000")
    screenshot(page, "calls-10000")


@pytest.mark.server
@pytest.mark.browser
def test_control_token_is_asked_for_kept_and_sent(page, live_server):
    server = live_server("--clock", "manual", "--control-token", "control-s3cret")
    httpx.get(f"{server.url}/organization", headers=ADMIN)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sent = []
    page.on("request", lambda request: sent.append(request.headers.get("authorization"))
            if "/_mock/calls" in request.url else None)
    page.goto(f"{server.url}/_mock/ui#calls")                 # the page itself needs no token
    dialog = page.get_by_role("dialog", name="Control token required")
    expect()(dialog).to_be_visible()
    page.get_by_role("textbox", name="Control token").fill("wrong")
    page.get_by_role("button", name="Use token").click()
    expect()(page.locator("#token-error")).to_be_visible()   # refused again: asked again, saying so
    page.get_by_role("textbox", name="Control token").fill("control-s3cret")
    page.get_by_role("button", name="Use token").click()
    expect()(page.locator("#call-rows tr")).to_have_count(1)
    assert page.evaluate("sessionStorage.getItem('mock.controlToken')") == "control-s3cret"
    assert "Bearer control-s3cret" in sent
    assert errors == []


@pytest.mark.server
@pytest.mark.browser
def test_sandbox_picker_lists_sandboxes_and_opens_the_one_picked(ui, page, live_manual, mock):
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as http:
        http.delete("/_mock/sandboxes")
        http.get("/sandbox/team-a/organization", headers={"X-Request-Id": "seen-in-team-a"})
        page_ = ui("calls")
        expect()(page_.locator("#sandbox-box")).to_be_visible()
        expect()(page_.locator("#calls-empty")).to_be_visible()          # default has no calls
        page.get_by_label("Sandbox").select_option("team-a")
        page.wait_for_url(f"{live_manual.url}/sandbox/team-a/_mock/ui#calls")
        expect()(page.locator("#sandbox")).to_have_value("team-a")
        expect()(page.locator("#call-rows tr")).to_have_count(1)         # team-a's one call
        expect()(page.locator("#call-rows")).to_contain_text("getOrganization")
        http.delete("/_mock/sandboxes")


# ---------------------------------------------------------------- the deployments: the user's own activity first
@pytest.mark.server
def test_deployments_list_the_users_own_lanes_before_the_fixtures(live_server):
    server = live_server("--clock", "manual")
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=10) as http:
        before = http.get("/_mock/deployments").json()["results"]
        production = next(g for g in before if any(lane["id"] == APP for lane in g["lanes"]))
        assert before[0]["id"] != production["id"]               # the fixtures' lanes come first by name
        assert production["lanes"][0]["id"] != CONTAINER
        assert http.post(f"/container/{CONTAINER}/deploy", json={}).status_code == 202
        after = http.get("/_mock/deployments").json()["results"]
        assert after[0]["id"] == production["id"]
        assert after[0]["lanes"][0]["id"] == CONTAINER
        assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
        latest = http.get("/_mock/deployments").json()["results"][0]
        assert [lane["id"] for lane in latest["lanes"][:2]] == [APP, CONTAINER]     # the most recent first
        assert len(after) == len(before)                          # the fixtures' lanes are still all there
