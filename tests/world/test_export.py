"""Export as fixtures: `GET /_mock/state/export` and `mockserver export`.

An export loads back with `--fixtures` and exports again to the same bytes; ids survive;
secrets are placeholders unless asked for in clear; `mockserver export` makes the folder it writes to.
"""

import subprocess
import sys

import httpx
import pytest
import yaml
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error, free_port
from support.ids import ADMIN, CLUSTER, ORG

from mockserver.world.fixtures import read_fixtures

SECRETS = {
    "project secret": "proj-secret-value-1",
    "environment secret": "env-secret-value-2",
    "application secret": "app-secret-value-3",
    "secret override": "override-secret-value-4",
    "registry password": "registry-password-value-5",
    "webhook secret": "webhook-secret-value-6",
    "credentials key": "credentials-key-value-7",
    "terraform variable": "tf-secret-value-8",
}
GIT = {"url": "https://git.example.com/acme/export.git", "branch": "main"}


def ok(reply, status=201):
    assert reply.status_code == status, reply.text
    return reply.json() if reply.content else None


def export(client, **params):
    reply = client.get("/_mock/state/export", params=params)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/yaml")
    return reply.text


def reload(make_server, spec, text, tmp_path, name="state"):
    """A fresh mock whose only fixtures are `text`; the document is checked as `--fixtures` checks it."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "state.yaml").write_text(text)
    read_fixtures(folder, spec)
    return make_server(fixtures=folder)


def build_world(client):
    """A project built through the API: every service kind, variables and secrets at each level,
    overrides (one of a database's built-in), an alias, a registry with a password, a webhook with a
    secret, credentials, a deployed application and a minted token. Returns the ids by name."""
    s = SECRETS
    ids = {}
    ids["registry"] = ok(client.post(f"/organization/{ORG}/containerRegistry", json={
        "name": "export-reg", "kind": "GENERIC_CR", "url": "https://registry.export.example",
        "config": {"username": "bot", "password": s["registry password"]}}))["id"]
    ids["credentials"] = ok(client.post(f"/organization/{ORG}/aws/credentials", json={
        "name": "export-creds", "access_key_id": "AKIAEXPORT", "secret_access_key": s["credentials key"]}))["id"]
    ids["webhook"] = ok(client.post(f"/organization/{ORG}/webhook", json={
        "target_url": "http://127.0.0.1:9/hook", "events": ["DEPLOYMENT_SUCCEEDED"], "enabled": False,
        "target_secret": s["webhook secret"]}))["id"]
    ids["project"] = project = ok(client.post(f"/organization/{ORG}/project", json={"name": "export-me"}))["id"]
    ids["project var"] = ok(client.post(f"/project/{project}/environmentVariable",
                                        json={"key": "REGION", "value": "eu", "description": "where"}))["id"]
    ids["project secret"] = ok(client.post(f"/project/{project}/secret",
                                           json={"key": "API_KEY", "value": s["project secret"]}))["id"]
    ids["environment"] = env = ok(client.post(f"/project/{project}/environment", json={
        "name": "qa", "mode": "STAGING", "cluster_id": CLUSTER}))["id"]
    ok(client.put(f"/environment/{env}/deploymentRule", json={"auto_stop": True, "timezone": "Europe/Berlin"}), 200)
    ids["env var"] = ok(client.post(f"/environment/{env}/environmentVariable", json={
        "key": "CONFIG", "value": '{\n  "debug": true\n}', "mount_path": "/etc/app.json"}))["id"]
    ids["environment secret"] = ok(client.post(f"/environment/{env}/secret",
                                               json={"key": "DB_PASSWORD", "value": s["environment secret"]}))["id"]
    ids["override"] = ok(client.post(f"/variable/{ids['project var']}/override", json={
        "value": "us", "override_scope": "ENVIRONMENT", "override_parent_id": env}))["id"]
    ids["late var"] = ok(client.post(f"/environment/{env}/environmentVariable",      # created after the override
                                     json={"key": "LATE", "value": "1"}))["id"]
    payloads = {
        "application": {"name": "api", "git_repository": GIT, "ports": [
            {"internal_port": 8000, "external_port": 443, "publicly_accessible": True}]},
        "container": {"name": "cache", "registry_id": ids["registry"], "image_name": "library/redis", "tag": "7"},
        "database": {"name": "users-db", "type": "MYSQL", "version": "8.4", "mode": "MANAGED"},
        "job": {"name": "migrate", "schedule": {"on_start": {"arguments": ["migrate", "up"]}},
                "source": {"image": {"registry_id": ids["registry"], "image_name": "acme/migrate", "tag": "1"}}},
        "helm": {"name": "monitoring", "source": {"git_repository": {**GIT, "root_path": "/charts/prometheus"}},
                 "values_override": {"set": [["replicas", "2"]], "file": {"raw": {"values": [
                     {"name": "odd.yaml", "content": "replicas: 2   \n\tnot: yaml\n"}]}}}},
        "terraform": {"name": "network", "git_repository": {**GIT, "root_path": "/tf"}, "engine": "OPEN_TOFU",
                      "terraform_variables_source": {"tf_vars": [
                          {"key": "db_password", "value": s["terraform variable"], "secret": True},
                          {"key": "region", "value": "eu-west-3"}]}},
    }
    for kind, body in payloads.items():
        ids[kind] = ok(client.post(f"/environment/{env}/{kind}", json=body))["id"]
        if kind != "database":
            ids[f"{kind} var"] = ok(client.post(f"/{kind}/{ids[kind]}/environmentVariable",
                                                json={"key": f"{kind.upper()}_MODE", "value": kind}))["id"]
    app = ids["application"]
    ids["application secret"] = ok(client.post(f"/application/{app}/secret",
                                               json={"key": "TOKEN", "value": s["application secret"]}))["id"]
    ids["secret override"] = ok(client.post(f"/application/{app}/secret/{ids['environment secret']}/override",
                                            json={"value": s["secret override"]}))["id"]
    ids["alias"] = ok(client.post(f"/secret/{ids['project secret']}/alias", json={
        "key": "API_KEY_ALIAS", "alias_scope": "APPLICATION", "alias_parent_id": app}))["id"]
    env_vars = ok(client.get(f"/environment/{env}/environmentVariable"), 200)["results"]
    db_port = next(v for v in env_vars if v["variable_type"] == "BUILT_IN" and v["key"].endswith("_PORT"))
    ids["built-in override"] = ok(client.post(f"/application/{app}/environmentVariable/{db_port['id']}/override",
                                              json={"value": "3307"}))["id"]
    ids["domain"] = ok(client.post(f"/helm/{ids['helm']}/customDomain",
                                   json={"domain": "metrics.export.example"}))["id"]
    ok(client.post(f"/application/{app}/deploy"), 202)
    ok(client.post("/_mock/clock/advance", json={"seconds": 60}), 200)
    assert ok(client.get(f"/application/{app}/status"), 200)["state"] == "DEPLOYED"
    ids["token"] = ok(client.post("/_mock/tokens", json={"scopes": ["Read"], "name": "ci-reader"}))["token"]
    return ids


# ---------------------------------------------------------------- round trips
def test_export_of_the_default_fixtures_loads_back_and_exports_identically(client, make_server, spec, tmp_path):
    first = export(client)
    assert first.startswith("# Fixtures exported")
    document = yaml.safe_load(first)
    assert [org["name"] for org in document["organizations"]] == ["Acme", "Globex"]
    assert [t["value"] for t in document["tokens"]][:1] == ["mock-admin-token"]
    production, staging = document["organizations"][0]["projects"][0]["environments"]
    assert production["deployment_rule"]["timezone"] == "Europe/Paris" and "deployment_rule" not in staging
    reloaded = reload(make_server, spec, first, tmp_path)
    with TestClient(reloaded, base_url="http://mock", headers=ADMIN) as again:
        assert export(again) == first
        assert again.get("/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/status").json()["state"] == "DEPLOYED"


def test_a_world_built_through_the_api_round_trips_with_its_ids(client, make_server, spec, tmp_path):
    ids = build_world(client)
    first = export(client)
    reloaded = reload(make_server, spec, first, tmp_path)
    with TestClient(reloaded, base_url="http://mock", headers=ADMIN) as again:
        assert export(again) == first
        env, app = ids["environment"], ids["application"]
        assert again.get(f"/project/{ids['project']}").json()["name"] == "export-me"
        assert again.get(f"/environment/{env}").json()["mode"] == "STAGING"
        assert again.get(f"/environment/{env}/deploymentRule").json()["timezone"] == "Europe/Berlin"
        for kind in ("application", "container", "database", "job", "helm", "terraform"):
            assert again.get(f"/{kind}/{ids[kind]}").status_code == 200, kind
        assert again.get(f"/job/{ids['job']}").json()["source"]["image"]["image_name"] == "acme/migrate"
        assert again.get(f"/application/{app}/status").json()["state"] == "DEPLOYED"
        registry = again.get(f"/organization/{ORG}/containerRegistry/{ids['registry']}").json()
        assert registry["associated_services_count"] == 2
        assert again.get(f"/organization/{ORG}/webhook/{ids['webhook']}").json()["target_secret_set"] is True
        assert again.get(f"/organization/{ORG}/aws/credentials/{ids['credentials']}").status_code == 200
        assert again.get(f"/helm/{ids['helm']}/customDomain/{ids['domain']}").status_code == 200
        seen = {v["id"]: v for v in again.get(f"/application/{app}/environmentVariable").json()["results"]}
        assert seen[ids["built-in override"]]["variable_type"] == "OVERRIDE"
        assert seen[ids["built-in override"]]["value"] == "3307"
        assert seen[ids["application var"]]["value"] == "application"
        assert seen[ids["override"]]["value"] == "us"                      # hides the project's REGION
        assert ids["project var"] not in seen
        assert seen[ids["env var"]]["mount_path"] == "/etc/app.json"
        secrets = {v["id"]: v for v in again.get(f"/application/{app}/secret").json()["results"]}
        assert secrets[ids["alias"]]["variable_type"] == "ALIAS"
        assert secrets[ids["alias"]]["aliased_secret"]["id"] == ids["project secret"]
        assert secrets[ids["secret override"]]["overridden_secret"]["id"] == ids["environment secret"]
        reader = {"Authorization": f"Token {ids['token']}"}
        assert again.get(f"/project/{ids['project']}", headers=reader).status_code == 200


def test_overrides_and_aliases_export_with_what_they_point_to(client):
    ids = build_world(client)
    document = yaml.safe_load(export(client))
    project = next(p for p in document["organizations"][0]["projects"] if p["id"] == ids["project"])
    env = project["environments"][0]
    app = env["applications"][0]
    by_id = {item["id"]: item for owner in (env, app) for table in ("variables", "secrets")
             for item in owner.get(table, [])}
    assert by_id[ids["override"]]["override_of"] == ids["project var"]
    assert by_id[ids["alias"]]["alias_of"] == ids["project secret"] and "value" not in by_id[ids["alias"]]
    assert by_id[ids["built-in override"]]["override_of"].endswith("_PORT")
    assert all(item["key"].startswith("PLATFORM_") is False for item in app["variables"]
               if "override_of" not in item)                          # built-ins are the platform's
    assert app["deployed"] is True and "deployed" not in env["containers"][0]


def test_a_cluster_exports_its_version_and_no_upgrade_under_way(client):
    def exported():
        clusters = yaml.safe_load(export(client))["organizations"][0]["clusters"]
        return next((c["version"], c["status"]) for c in clusters if c["id"] == CLUSTER)
    ok(client.post(f"/cluster/{CLUSTER}/upgrade"), 202)
    assert ok(client.get(f"/cluster/{CLUSTER}/status"), 200)["status"] != "DEPLOYED"
    assert exported() == ("1.31", "DEPLOYED")
    ok(client.post("/_mock/clock/advance", json={"seconds": 60}), 200)
    assert exported() == ("1.32", "DEPLOYED")


def test_an_override_of_nothing_is_reported_by_check(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "state.yaml").write_text(yaml.safe_dump({"organizations": [{
        "id": ORG, "name": "Acme", "clusters": [{"id": CLUSTER, "name": "c"}],
        "projects": [{"name": "p", "environments": [{"name": "e", "variables": [
            {"key": "GHOST", "value": "x", "override_of": "NO_SUCH_BUILT_IN"}]}]}]}]}))
    result = run("check", "--fixtures", str(folder))
    assert result.returncode == 1
    assert "'NO_SUCH_BUILT_IN' is neither the id of a record nor the key of a built-in" in result.stderr


# ---------------------------------------------------------------- secrets
def test_secrets_never_appear_in_clear_by_default(client):
    build_world(client)
    text = export(client)
    for name, value in SECRETS.items():
        assert value not in text, name
    for builtin in ("sk-live-not-returned", "hub-password-not-returned", "example-secret-not-returned"):
        assert builtin not in text
    assert "<fill in: secret API_KEY of project export-me>" in text
    assert "<fill in: password of container registry export-reg>" in text
    assert "<fill in: target_secret of webhook http://127.0.0.1:9/hook>" in text
    assert "<fill in: secret Terraform variable db_password of terraform network>" in text


def test_secrets_appear_with_the_flag_and_round_trip(client, make_server, spec, tmp_path):
    build_world(client)
    text = export(client, secrets="include")
    assert "in clear" in text.splitlines()[2]
    for name, value in SECRETS.items():
        assert value in text, name
    reloaded = reload(make_server, spec, text, tmp_path)
    with TestClient(reloaded, base_url="http://mock", headers=ADMIN) as again:
        assert export(again, secrets="include") == text
        assert "<fill in" not in text


def test_a_placeholder_export_loads_and_keeps_its_placeholders(client, make_server, spec, tmp_path):
    build_world(client)
    text = export(client)
    reloaded = reload(make_server, spec, text, tmp_path)
    with TestClient(reloaded, base_url="http://mock", headers=ADMIN) as again:
        assert export(again, secrets="include") == text.replace(
            "Secrets are placeholders: replace every '<fill in: ...>' value before use.",
            "WARNING: this export holds secrets in clear. Do not commit it.")


def test_an_export_with_secrets_passes_check_and_serves_them_again(client, tmp_path):
    ids = build_world(client)
    edited = client.put(f"/terraform/{ids['terraform']}", json={
        "name": "network", "git_repository": {**GIT, "root_path": "/tf"},
        "terraform_variables_source": {"tf_vars": [{"key": "db_password", "value": "tf-secret-edited-9",
                                                    "secret": True}]}})
    assert edited.status_code == 200, edited.text
    assert "tf-secret-edited-9" not in edited.text
    folder = tmp_path / "with-secrets"
    folder.mkdir()
    text = export(client, secrets="include")
    (folder / "state.yaml").write_text(text)
    assert "tf-secret-edited-9" in text and SECRETS["terraform variable"] not in text
    checked = run("check", "--fixtures", str(folder))
    assert checked.returncode == 0, checked.stderr
    assert "mockserver check: ok" in checked.stdout


@pytest.mark.parametrize("query", ["secrets=clear", "secret=include", "secrets="])
def test_a_bad_query_is_400(client, query):
    assert_error(client.get(f"/_mock/state/export?{query}"), 400)


def test_deleted_records_are_not_exported(client):
    ids = build_world(client)
    ok(client.delete(f"/container/{ids['container']}"), 204)
    ok(client.delete(f"/project/{ids['project']}/environmentVariable/{ids['project var']}"), 204)
    text = export(client)
    for gone in ("container", "project var", "override"):
        assert ids[gone] not in text, gone


def test_a_sandbox_exports_its_own_world(client):
    blue = {"X-Mock-Sandbox": "export-blue"}
    created = ok(client.post(f"/organization/{ORG}/project", json={"name": "only-in-blue"}, headers=blue))
    assert created["id"] not in export(client)
    reply = client.get("/_mock/state/export", headers=blue)
    assert reply.status_code == 200 and created["id"] in reply.text
    assert created["id"] in client.get("/sandbox/export-blue/_mock/state/export").text


# ---------------------------------------------------------------- the command
def run(*args):
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.server
def test_cli_export_writes_a_file_that_check_accepts(live_manual, tmp_path):
    httpx.post(f"{live_manual.url}/_mock/reset")
    created = httpx.post(f"{live_manual.url}/organization/{ORG}/project", json={"name": "from-cli"},
                         headers=ADMIN).json()
    folder = tmp_path / "exported"
    folder.mkdir()
    result = run("export", "--url", live_manual.url, "-o", str(folder / "state.yaml"))
    assert result.returncode == 0, result.stderr
    text = (folder / "state.yaml").read_text()
    assert created["id"] in text and "<fill in:" in text
    checked = run("check", "--fixtures", str(folder))
    assert checked.returncode == 0, checked.stderr
    to_stdout = run("export", "--url", live_manual.url, "--include-secrets")
    assert to_stdout.returncode == 0 and "sk-live-not-returned" in to_stdout.stdout


@pytest.mark.server
def test_cli_export_of_a_sandbox_behind_a_control_token(live_server):
    mock = live_server("--clock", "manual", "--control-token", "ctl-secret")
    created = httpx.post(f"{mock.url}/sandbox/green/organization/{ORG}/project", json={"name": "green-only"},
                         headers=ADMIN).json()
    refused = run("export", "--url", mock.url, "--sandbox", "green")
    assert refused.returncode == 2 and "401" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    result = run("export", "--url", mock.url, "--sandbox", "green", "--control-token", "ctl-secret")
    assert result.returncode == 0, result.stderr
    assert created["id"] in result.stdout
    default = run("export", "--url", mock.url, "--control-token", "ctl-secret")
    assert default.returncode == 0 and created["id"] not in default.stdout


def test_cli_export_reports_an_unreachable_server_in_one_line():
    result = run("export", "--url", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "cannot reach" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.server
def test_cli_export_reports_an_error_reply(live_manual):
    result = run("export", "--url", f"{live_manual.url}/nothing-here")
    assert result.returncode == 2
    assert "404" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.server
def test_export_makes_the_folder_it_writes_to(live_server, tmp_path):
    server = live_server("--clock", "manual")
    target = tmp_path / "my-fixtures" / "nested" / "state.yaml"
    result = run("export", "--url", server.url, "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert target.is_file() and "organizations:" in target.read_text()
    assert run("check", str(target.parent)).returncode == 0
