"""Bounded YAML: scenario and fixture documents past a bound (aliases that expand without end,
nesting, size) are refused with a 400 (or one line of `mockserver check`) naming the bound, before
any of them is built; documents within the bounds load as before.
"""

import subprocess
import sys

import httpx
import pytest
from support import ROOT
from support.http import assert_error

BOUND = "100000 nodes"


def alias_bomb(levels=9, width=10):
    """About 500 bytes: each anchor lists the previous one `width` times (10**8 strings at 9 levels)."""
    lines = ["name: bomb", "rules: [{effect: {status: 500}}]", 'l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def check(*args):
    return subprocess.run([sys.executable, "-m", "mockserver", "check", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


# ---------------------------------------------------------------- scenarios through the control API
def test_an_alias_bomb_sent_as_a_scenario_is_refused_naming_the_bound(client):
    assert len(alias_bomb().encode()) < 600
    reply = client.put("/_mock/scenarios/bomb", content=alias_bomb())
    body = assert_error(reply, 400)
    assert BOUND in body["message"] and ":8:" in body["message"]          # the line of the alias past the bound
    assert client.get("/_mock/scenarios").json()["results"] == []         # nothing half-loaded
    posted = assert_error(client.post("/_mock/scenarios", content=alias_bomb()), 400)
    assert BOUND in posted["message"] and posted["details"][0]["location"] == "line 8"


@pytest.mark.server
def test_an_alias_bomb_on_a_live_server_is_refused_at_once_and_the_server_goes_on(live_server):
    mock = live_server("--clock", "manual")
    ten_levels = alias_bomb(levels=10)                       # 10**9 strings if expanded
    reply = httpx.put(f"{mock.url}/_mock/scenarios/bomb", content=ten_levels, timeout=5)
    assert reply.status_code == 400 and BOUND in reply.json()["message"]
    listing = httpx.get(f"{mock.url}/_mock/scenarios", timeout=5)
    assert listing.status_code == 200 and len(listing.content) < 100


@pytest.mark.parametrize("name, document, problem", [
    ("loop", "name: loop\nrules: &r [{effect: {status: 500}}, *r]\n", "an alias is inside the node it names"),
    ("deep", "name: deep\nrules: " + "[" * 100000 + "]" * 100000 + "\n", "deeper than 64 levels (the bound)"),
    ("big", "name: big\ndescription: '" + "x" * (1024 * 1024) + "'\nrules: [{effect: {status: 500}}]\n",
     "larger than 1 MiB (the bound"),
])
def test_recursive_deep_and_large_scenarios_are_refused_naming_the_bound(client, name, document, problem):
    body = assert_error(client.put(f"/_mock/scenarios/{name}", content=document), 400)
    assert problem in body["message"]
    assert client.get("/_mock/scenarios").json()["results"] == []


def test_a_scenario_body_past_the_bound_is_not_read_whole(client):
    reply = client.put("/_mock/scenarios/huge", content=b"x" * (20 * 1024 * 1024))
    assert "1 MiB" in assert_error(reply, 400)["message"]


def test_a_control_json_body_past_max_body_is_a_413(make_server):
    from starlette.testclient import TestClient
    with TestClient(make_server(max_body=1024), base_url="http://mock") as http_client:
        reply = http_client.put("/_mock/sandboxes/big", content=b'{"seed": 1, "x": "' + b"a" * 4000 + b'"}')
        assert "1024 bytes" in assert_error(reply, 413)["message"]


def test_anchors_within_the_bounds_still_work(client):
    document = """name: shared-effect
rules:
  - match: {operation: getApplicationStatus}
    effect: &fail {status: 503, message: backend down}
  - match: {operation: getDatabaseStatus}
    effect: *fail
"""
    reply = client.put("/_mock/scenarios/shared-effect", content=document)
    assert reply.status_code == 200, reply.text
    assert [rule["effect"]["status"] for rule in reply.json()["rules"]] == [503, 503]


# ---------------------------------------------------------------- files
def test_check_refuses_a_scenario_file_and_a_fixture_file_holding_an_alias_bomb(tmp_path):
    scenario = tmp_path / "bomb.yaml"
    scenario.write_text(alias_bomb())
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "orgs.yaml").write_text(alias_bomb().replace("name: bomb\nrules: [{effect: {status: 500}}]\n", ""))
    result = check("--scenario", str(scenario), "--fixtures", str(fixtures))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(str(scenario) in line and BOUND in line for line in lines), result.stderr
    assert any("orgs.yaml" in line and BOUND in line for line in lines), result.stderr


def test_a_sandbox_made_from_a_fixtures_folder_past_the_bounds_is_a_400(client, tmp_path):
    bomb = tmp_path / "bomb"
    bomb.mkdir()
    (bomb / "orgs.yaml").write_text(alias_bomb().replace("name: bomb\n", ""))
    body = assert_error(client.put("/_mock/sandboxes/bombed", json={"fixtures": str(bomb)}), 400)
    assert BOUND in body["message"]
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "orgs.yaml").write_text("organizations: " + "[" * 200000 + "]" * 200000)   # would overflow the C stack
    assert "deeper than 64 levels" in assert_error(client.put("/_mock/sandboxes/deep", json={"fixtures": str(deep)}),
                                                   400)["message"]
    assert client.get("/_mock/health").status_code == 200
