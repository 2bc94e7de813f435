"""The inspector's calls as they were sent: a reply cut by a network fault is marked cut (not a green 200), a call
forwarded to the upstream carries its drift (and the rows filter on it), calls at one instant of a manual clock are
told apart by their place in it, a long rule name stays in view at 1280 px; a pure recording proxy shows no clock
or reset controls; the scenarios view lists what the sandbox never used. Routes in-process, the page in Chromium."""

import json

import httpx
import pytest
from support.browser import expect, screenshot
from support.ids import ADMIN
from support.upstream import Upstream

LONG = "a-rule-whose-name-goes-on-and-on-" * 3 + "end"
CUT = {"name": "cut-org", "rules": [{"name": LONG, "match": {"operation": "getOrganization"},
                                     "effect": {"truncate": {"fraction": 0.5}}},
                                    {"name": "never-used", "match": {"operation": "deleteProject"},
                                     "effect": {"status": 500}}]}


def drifting(request):
    """The platform's organization reply with a field the document does not know and without its own."""
    return 200, [("Content-Type", "application/json")], json.dumps({"surprise": True}).encode()


def get_quietly(http, path):
    """A call whose reply may be cut on purpose: what the client read, or None."""
    try:
        return http.get(path).status_code
    except httpx.HTTPError:
        return None


# ================================================================ routes, in-process
@pytest.mark.server
def test_a_cut_reply_is_a_row_with_its_fault(mock):
    assert mock.put("/_mock/scenarios/cut-org", json=CUT).status_code == 200
    get_quietly(mock, "/organization")
    [row] = mock.get("/_mock/calls/rows").json()["results"]
    assert row["status"] == 200 and row["fault"] == "truncate" and row["drift"] is None
    assert row["scenario_rule"] == f"cut-org/{LONG}"


def test_forwarded_rows_carry_their_drift_and_filter_on_it(make_server):
    upstream = Upstream(drifting)
    try:
        from starlette.testclient import TestClient
        with TestClient(make_server(upstream=upstream.url), base_url="http://mock", headers=ADMIN) as api:
            assert api.get("/organization").status_code == 200
            [row] = api.get("/_mock/calls/rows").json()["results"]
            assert row["drift"] >= 1 and row["fault"] is None
            assert api.get("/_mock/calls/rows", params={"drift": "true"}).json()["total"] == 1
            assert api.get("/_mock/health").json()["forwards"] == "all"
            refused = api.get("/_mock/calls/rows", params={"drift": "maybe"})
            assert refused.status_code == 400 and refused.json()["message"].startswith("query.drift: 'maybe'")
    finally:
        upstream.stop()


def test_health_says_whether_every_api_path_is_forwarded(make_server):
    from starlette.testclient import TestClient
    with TestClient(make_server(), base_url="http://mock") as api:
        assert "forwards" not in api.get("/_mock/health").json()
        assert api.get("/_mock/calls/rows", params={"drift": "true"}).json()["total"] == 0
    with TestClient(make_server(upstream="http://127.0.0.1:9", only=["/organization"]), base_url="http://mock") as api:
        assert api.get("/_mock/health").json()["forwards"] == "some"


# ================================================================ the page in Chromium
@pytest.mark.server
@pytest.mark.browser
def test_cut_replies_are_marked_their_instant_numbered_and_the_rule_in_view_at_1280_px(ui, page, mock, live_manual):
    page.set_viewport_size({"width": 1280, "height": 900})
    assert mock.put("/_mock/scenarios/cut-org", json=CUT).status_code == 200
    for _ in range(3):
        get_quietly(mock, "/organization")
    page = ui()
    rows = page.locator("#call-rows tr")
    expect()(rows).to_have_count(3)
    for index in range(3):
        row = rows.nth(index)
        expect()(row.locator("[data-testid=fault]")).to_have_text("cut")
        assert "ok" not in row.locator("[data-status]").get_attribute("class")           # no green 200
        expect()(row.locator("[data-testid=seq]")).to_have_text(f" ·{3 - index}")      # newest first, one instant
    frame = page.locator("#view-calls .table-wrap").bounding_box()
    for cell in page.locator("#call-rows .rule").all():
        box = cell.bounding_box()
        assert box["width"] > 0 and box["x"] + box["width"] <= frame["x"] + frame["width"], (box, frame)
        assert box["x"] + box["width"] <= 1280
    assert page.evaluate("document.querySelector('#view-calls .table-wrap').scrollWidth") <= frame["width"] + 1
    assert page.locator("#clock-controls").is_visible() and page.locator("#proxy-mode").is_hidden()
    screenshot(page, "calls-cut-1280")
    page.goto(f"{live_manual.url}/_mock/ui#scenarios")
    usage = page.locator("[data-testid=usage]")
    expect()(usage.locator("[data-testid=never-fired]")).to_have_text(["cut-org/never-used"])
    expect()(usage.locator("[data-testid=rules-usage]")).to_have_text("1 of 2 rule(s) fired; never fired:")
    expect()(usage.locator("[data-testid=operations-usage]")).to_contain_text("operation(s) never called")
    screenshot(page, "scenarios-usage")


@pytest.mark.server
@pytest.mark.browser
def test_a_pure_recording_proxy_shows_no_clock_controls_and_filters_its_drift(ui, live_server):
    upstream = Upstream(drifting)
    try:
        proxy = live_server("--upstream", upstream.url, "--clock", "manual")
        assert httpx.get(f"{proxy.url}/organization", headers=ADMIN, timeout=10).status_code == 200
        page = ui(base=proxy.url)
        rows = page.locator("#call-rows tr")
        expect()(rows).to_have_count(1)
        expect()(rows.nth(0).locator("[data-testid=drift]")).to_contain_text("drift")
        expect()(page.locator("#proxy-mode")).to_be_visible()
        expect()(page.locator("#clock-controls")).to_be_hidden()
        expect()(page.get_by_role("button", name="Reset state")).to_be_hidden()
        page.select_option("#f-drift", "true")
        expect()(rows).to_have_count(1)
        expect()(page.locator("#calls-range")).to_contain_text("of 1,")
        screenshot(page, "calls-recording-proxy")
    finally:
        upstream.stop()
