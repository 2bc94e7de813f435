"""What a suite never used (GET /_mock/usage): of one sandbox, the scenario rules that never fired and the
operations never called; with scope=mock, of every sandbox whose name starts with a prefix, the sandboxes already
deleted, replaced or reset counted too; bad queries a 400 in the error body; and the Python client's methods."""

import pytest
from support.ids import ADMIN

from mockserver.client import Client

FLAKY = {"name": "flaky", "rules": [
    {"name": "orgs-fail", "match": {"operation": "getOrganization"}, "effect": {"status": 503}},
    {"name": "never-used", "match": {"operation": "deleteProject"}, "effect": {"status": 500}}]}


def test_a_sandbox_names_the_rules_that_never_fired_and_the_operations_never_called(client):
    assert client.put("/_mock/sandboxes/t1", json={"scenarios": [FLAKY]}).status_code == 201
    assert client.get("/sandbox/t1/organization").status_code == 503
    report = client.get("/sandbox/t1/_mock/usage").json()
    assert report["scope"] == "sandbox" and report["sandbox"] == "t1" and report["sandboxes"] == 1
    assert report["rules"]["never_fired"] == ["flaky/never-used"]
    assert report["rules"]["total"] == 2 and report["rules"]["fired"] == 1
    fired = {rule["rule"]: (rule["matched"], rule["fired"]) for rule in report["rules"]["results"]}
    assert fired == {"flaky/orgs-fail": (1, 1), "flaky/never-used": (0, 0)}
    operations = report["operations"]
    assert operations["calls"] == {"getOrganization": 1} and operations["called"] == 1
    assert "getOrganization" not in operations["never_called"] and "deleteProject" in operations["never_called"]
    assert len(operations["never_called"]) == operations["total"] - 1
    untouched = client.get("/_mock/usage").json()             # the default sandbox saw nothing of it
    assert untouched["sandbox"] == "default" and untouched["rules"]["total"] == 0
    assert untouched["operations"]["called"] == 0


def test_the_whole_mock_counts_the_sandboxes_gone_and_only_those_of_the_prefix(client):
    for name in ("job1-a", "job1-b", "job2-a"):
        assert client.put(f"/_mock/sandboxes/{name}", json={"scenarios": [FLAKY]}).status_code == 201
    assert client.get("/sandbox/job1-a/organization").status_code == 503
    assert client.delete("/_mock/sandboxes/job1-a").status_code == 204           # gone, still counted
    report = client.get("/_mock/usage", params={"scope": "mock", "prefix": "job1-"}).json()
    assert report["scope"] == "mock" and report["prefix"] == "job1-" and report["sandboxes"] == 2
    assert report["rules"]["never_fired"] == ["flaky/never-used"]
    assert report["operations"]["calls"] == {"getOrganization": 1} and report["forgotten_sandboxes"] == 0
    other = client.get("/_mock/usage", params={"scope": "mock", "prefix": "job2-"}).json()
    assert other["sandboxes"] == 1 and other["rules"]["never_fired"] == ["flaky/orgs-fail", "flaky/never-used"]
    # a reset rewinds a sandbox's counters: what fired before it still counts for the mock
    assert client.get("/sandbox/job2-a/organization").status_code == 503
    assert client.post("/sandbox/job2-a/_mock/reset", json={}).status_code == 200
    assert client.get("/sandbox/job2-a/_mock/usage").json()["rules"]["fired"] == 0
    again = client.get("/_mock/usage", params={"scope": "mock", "prefix": "job2-"}).json()
    assert again["sandboxes"] == 2 and again["rules"]["never_fired"] == ["flaky/never-used"]
    everything = client.get("/_mock/usage", params={"scope": "mock"}).json()
    assert everything["prefix"] == "" and everything["sandboxes"] >= 5      # default, job1-b, job2-a and two gone


@pytest.mark.parametrize("query, said", [
    ({"scope": "everything"}, "query.scope: 'everything' is not one of sandbox, mock"),
    ({"prefix": "job1-"}, "query.prefix: names the sandboxes of scope=mock"),
    ({"scope": "mock", "sandbox": "x"}, "unknown query parameter(s) sandbox; use scope, prefix"),
])
def test_a_query_the_report_cannot_answer_is_a_400_in_the_error_body(client, query, said):
    reply = client.get("/_mock/usage", params=query)
    assert reply.status_code == 400
    body = reply.json()
    assert body["status"] == 400 and body["error"] == "Bad Request" and said in body["message"]


def test_the_client_reports_and_asserts_the_rules_that_never_fired(server):
    mock = Client.in_process(server)
    try:
        box = mock.in_sandbox("suite-one")
        box.scenario("flaky", FLAKY)
        box.http.get(f"{box.url}/organization", headers=ADMIN)
        assert box.usage()["rules"]["never_fired"] == ["flaky/never-used"]
        with pytest.raises(AssertionError, match=r"^mockserver: 1 scenario rule\(s\) never fired: flaky/never-used$"):
            box.assert_rules_fired()
        box.delete_sandbox()
        assert mock.usage(scope="mock", prefix="suite-")["rules"]["never_fired"] == ["flaky/never-used"]
        assert mock.assert_rules_fired()["rules"]["total"] == 0              # the default sandbox has none
    finally:
        mock.stop()


def test_a_scenario_given_twice_is_active_once_and_two_names_for_one_are_refused(server):
    mock = Client.in_process(server)
    try:
        mock.scenario("flaky", FLAKY)
        mock.scenario("flaky", {"rules": FLAKY["rules"][:1]})         # the same name again replaces it
        assert [(s["name"], len(s["rules"])) for s in mock.scenarios()] == [("flaky", 1)]
        with pytest.raises(ValueError) as refused:
            mock.scenario("other", FLAKY)
        assert str(refused.value) == ("scenario 'other': the document names itself 'flaky'; give one name "
                                      "(or leave the document's out)")
        assert [s["name"] for s in mock.scenarios()] == ["flaky"]
    finally:
        mock.stop()


def test_a_sleeping_sandbox_is_counted_and_left_asleep(server, client):
    assert client.put("/_mock/sandboxes/nap", json={"scenarios": [FLAKY]}).status_code == 201
    assert client.get("/sandbox/nap/organization").status_code == 503
    box = server.sandboxes.live["nap"]
    assert box.sleep()                                  # what an idle sandbox does after --sleep-after
    report = client.get("/_mock/usage", params={"scope": "mock", "prefix": "nap"}).json()
    assert report["rules"]["never_fired"] == ["flaky/never-used"] and report["operations"]["called"] == 1
    assert box.asleep
