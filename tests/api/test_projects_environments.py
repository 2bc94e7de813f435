"""The organization, projects, environments and deployment rules over HTTP."""

import pytest
from support.ids import APP, CLUSTER, DATABASE, ENV, ORG, OTHER_ORG, PROJECT

PROJECTS = f"/organization/{ORG}/project"
ENVIRONMENTS = f"/project/{PROJECT}/environment"
DEV_CLUSTER = "6b8d0f2a-4c6e-4a8b-9d0f-2a4c6e8b0d1f"
OTHER_CLUSTER = "9e1c3a5f-7b9d-4e1f-8a3c-5f7b9d1e3a5c"


def create_project(client, name="checkout", **fields):
    reply = client.post(PROJECTS, json={"name": name, **fields})
    assert reply.status_code == 201, reply.text
    return reply.json()


def create_environment(client, project=PROJECT, **fields):
    reply = client.post(f"/project/{project}/environment", json=fields)
    assert reply.status_code == 201, reply.text
    return reply.json()


def advance(client, seconds):
    assert client.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


# ---------------------------------------------------------------- organization
def test_organization_is_the_callers_with_its_plan(client):
    reply = client.get("/organization")
    assert reply.status_code == 200
    organization = reply.json()
    assert organization["id"] == ORG
    assert organization["name"] == "Acme"
    assert organization["plan"] == "BUSINESS"      # a plan every published client accepts
    assert {"created_at", "updated_at"} <= set(organization)


def test_default_organization_plans_are_ones_every_published_client_accepts(client):
    """The platform's older published client reads `plan` as FREE, PROFESSIONAL or BUSINESS only."""
    minted = client.post("/_mock/tokens", json={"organization": OTHER_ORG, "scopes": ["Read"]})
    assert minted.status_code == 201, minted.text
    globex = client.get("/organization", headers={"Authorization": f"Token {minted.json()['token']}"}).json()
    for organization in (client.get("/organization").json(), globex):
        assert organization["plan"] in {"FREE", "PROFESSIONAL", "BUSINESS"}, organization
        assert all(item["plan"] in {"FREE", "PROFESSIONAL", "BUSINESS"} for item in organization["results"])


# ---------------------------------------------------------------- projects
def test_list_projects_shows_the_fixture_projects(client):
    reply = client.get(PROJECTS)
    assert reply.status_code == 200
    names = {project["name"] for project in reply.json()["results"]}
    assert names == {"storefront", "internal-tools", "examples", "examples-delete", "examples-delete-variable",
                     "examples-delete-secret", "examples-deletions"}   # the last five: fixtures/targets.yaml


def test_create_project_returns_the_record_with_a_new_id(client):
    project = create_project(client, "checkout", description="Checkout service")
    assert project["name"] == "checkout"
    assert project["description"] == "Checkout service"
    assert project["organization"] == {"id": ORG}
    assert project["created_at"] == project["updated_at"]


def test_created_project_can_be_read_and_is_listed(client):
    project = create_project(client)
    assert client.get(f"/project/{project['id']}").json() == project
    assert project["id"] in {p["id"] for p in client.get(PROJECTS).json()["results"]}


def test_duplicate_project_name_is_409(client):
    reply = client.post(PROJECTS, json={"name": "storefront"})
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"
    assert [p["name"] for p in client.get(PROJECTS).json()["results"]].count("storefront") == 1


def test_edit_project_changes_name_and_description(client):
    project = create_project(client)
    advance(client, 10)
    reply = client.put(f"/project/{project['id']}", json={"name": "checkout-v2", "description": "new"})
    assert reply.status_code == 200
    edited = reply.json()
    assert (edited["name"], edited["description"]) == ("checkout-v2", "new")
    assert edited["created_at"] == project["created_at"]
    assert edited["updated_at"] > project["updated_at"]
    assert client.get(f"/project/{project['id']}").json()["name"] == "checkout-v2"


def test_edit_project_keeping_its_own_name_is_allowed(client):
    assert client.put(f"/project/{PROJECT}", json={"name": "storefront", "description": "same"}).status_code == 200


def test_edit_project_to_a_taken_name_is_409(client):
    project = create_project(client)
    assert client.put(f"/project/{project['id']}", json={"name": "storefront"}).status_code == 409
    assert client.get(f"/project/{project['id']}").json()["name"] == "checkout"


def test_delete_project_then_it_is_404(client):
    project = create_project(client)
    reply = client.delete(f"/project/{project['id']}")
    assert reply.status_code == 204
    assert reply.content == b""
    assert client.get(f"/project/{project['id']}").status_code == 404
    assert client.delete(f"/project/{project['id']}").status_code == 404


@pytest.mark.parametrize("path", [
    f"/environment/{ENV}", f"/environment/{ENV}/deploymentRule", f"/application/{APP}", f"/database/{DATABASE}",
    f"/project/{PROJECT}/environment",
])
def test_delete_project_removes_its_environments_and_services(client, path):
    assert client.get(path).status_code == 200
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    assert client.get(path).status_code == 404


def test_deleted_project_name_can_be_reused(client):
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    assert client.post(PROJECTS, json={"name": "storefront"}).status_code == 201


def test_unknown_project_is_404(client):
    missing = "00000000-0000-4000-8000-000000000000"
    assert client.get(f"/project/{missing}").status_code == 404
    assert client.put(f"/project/{missing}", json={"name": "x"}).status_code == 404


# ---------------------------------------------------------------- environments
def test_list_environments_of_a_project(client):
    reply = client.get(ENVIRONMENTS)
    assert reply.status_code == 200
    assert {env["name"] for env in reply.json()["results"]} == {"production", "staging"}


def test_create_environment_with_cluster_id(client):
    env = create_environment(client, name="qa", mode="STAGING", cluster_id=DEV_CLUSTER)
    assert env["cluster_id"] == DEV_CLUSTER
    assert env["mode"] == "STAGING"
    assert env["project"] == {"id": PROJECT}
    assert env["organization"] == {"id": ORG}
    assert client.get(f"/environment/{env['id']}").json() == env
    assert env["id"] in {e["id"] for e in client.get(ENVIRONMENTS).json()["results"]}


def test_create_environment_accepts_cluster_as_synonym(client):
    env = create_environment(client, name="qa", cluster=DEV_CLUSTER)
    assert env["cluster_id"] == DEV_CLUSTER


def test_create_environment_without_cluster_uses_the_default_cluster(client):
    env = create_environment(client, name="qa")
    assert env["cluster_id"] == CLUSTER


def test_create_environment_with_same_cluster_in_both_fields(client):
    env = create_environment(client, name="qa", cluster=DEV_CLUSTER, cluster_id=DEV_CLUSTER)
    assert env["cluster_id"] == DEV_CLUSTER


@pytest.mark.parametrize("field", ["cluster_id", "cluster"])
def test_create_environment_on_a_cluster_of_another_org_is_404(client, field):
    reply = client.post(ENVIRONMENTS, json={"name": "qa", field: OTHER_CLUSTER})
    assert reply.status_code == 404
    assert "qa" not in {e["name"] for e in client.get(ENVIRONMENTS).json()["results"]}


def test_create_environment_with_conflicting_cluster_fields_is_400(client):
    reply = client.post(ENVIRONMENTS, json={"name": "qa", "cluster": DEV_CLUSTER, "cluster_id": CLUSTER})
    assert reply.status_code == 400
    assert "cluster" in reply.json()["message"]


def test_environment_cloud_provider_comes_from_its_cluster(client):
    cluster = client.get(f"/cluster/{DEV_CLUSTER}").json()
    env = create_environment(client, name="qa", cluster_id=DEV_CLUSTER)
    assert env["cloud_provider"] == {"provider": cluster["cloud_provider"], "cluster": cluster["name"]}
    assert env["cloud_provider"] == {"provider": "CLOUDA", "cluster": "acme-dev-us"}


def test_environment_names_are_unique_case_insensitively(client):
    create_environment(client, name="Prod-EU")
    reply = client.post(ENVIRONMENTS, json={"name": "prod-eu"})
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"


def test_environment_name_clashes_with_fixture_in_another_case(client):
    assert client.post(ENVIRONMENTS, json={"name": "PRODUCTION"}).status_code == 409


def test_same_environment_name_in_another_project_is_allowed(client):
    project = create_project(client)
    env = create_environment(client, project=project["id"], name="production")
    assert env["project"] == {"id": project["id"]}


def test_environment_mode_defaults_to_development(client):
    assert create_environment(client, name="qa")["mode"] == "DEVELOPMENT"


@pytest.mark.parametrize("mode", ["PREVIEW", "BOGUS"])
def test_create_environment_with_a_mode_not_accepted_is_400(client, mode):
    reply = client.post(ENVIRONMENTS, json={"name": "qa", "mode": mode})
    assert reply.status_code == 400
    assert "body.mode" in reply.json()["message"]


def test_edit_environment_changes_mode_and_name(client):
    env = create_environment(client, name="qa")
    advance(client, 5)
    reply = client.put(f"/environment/{env['id']}", json={"name": "qa-2", "mode": "PRODUCTION"})
    assert reply.status_code == 200
    edited = reply.json()
    assert (edited["name"], edited["mode"]) == ("qa-2", "PRODUCTION")
    assert edited["cluster_id"] == env["cluster_id"]
    assert edited["updated_at"] > env["updated_at"]
    assert client.get(f"/environment/{env['id']}").json()["mode"] == "PRODUCTION"


def test_edit_environment_with_only_mode_keeps_the_name(client):
    reply = client.put(f"/environment/{ENV}", json={"mode": "STAGING"})
    assert reply.status_code == 200
    assert reply.json()["name"] == "production"
    assert reply.json()["mode"] == "STAGING"


def test_edit_environment_mode_preview_is_400(client):
    reply = client.put(f"/environment/{ENV}", json={"mode": "PREVIEW"})
    assert reply.status_code == 400
    assert "body.mode" in reply.json()["message"]
    assert client.get(f"/environment/{ENV}").json()["mode"] == "PRODUCTION"


def test_edit_environment_to_a_taken_name_is_409(client):
    reply = client.put(f"/environment/{ENV}", json={"name": "Staging"})
    assert reply.status_code == 409
    assert client.get(f"/environment/{ENV}").json()["name"] == "production"


def test_delete_environment_then_it_is_404(client):
    env = create_environment(client, name="qa")
    reply = client.delete(f"/environment/{env['id']}")
    assert reply.status_code == 204
    assert client.get(f"/environment/{env['id']}").status_code == 404
    assert client.get(f"/environment/{env['id']}/deploymentRule").status_code == 404
    assert env["id"] not in {e["id"] for e in client.get(ENVIRONMENTS).json()["results"]}


def test_delete_environment_removes_its_services(client):
    assert client.delete(f"/environment/{ENV}").status_code == 204
    assert client.get(f"/application/{APP}").status_code == 404
    assert client.get(f"/database/{DATABASE}").status_code == 404


def test_environment_of_unknown_project_is_404(client):
    reply = client.post("/project/00000000-0000-4000-8000-000000000000/environment", json={"name": "qa"})
    assert reply.status_code == 404


# ---------------------------------------------------------------- deployment rules
def test_fixture_deployment_rule_is_readable(client):
    reply = client.get(f"/environment/{ENV}/deploymentRule")
    assert reply.status_code == 200
    rule = reply.json()
    assert rule["environment"] == {"id": ENV}
    assert rule["timezone"] == "Europe/Paris"
    assert rule["weekdays"] == ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY"]


def test_new_environment_has_a_deployment_rule(client):
    env = create_environment(client, name="qa")
    reply = client.get(f"/environment/{env['id']}/deploymentRule")
    assert reply.status_code == 200
    assert reply.json()["environment"] == {"id": env["id"]}


def test_deployment_rule_put_then_get_round_trip(client):
    change = {"auto_stop": True, "auto_deploy": False, "timezone": "UTC", "start_time": "09:30",
              "stop_time": "18:00", "weekdays": ["MONDAY", "WEDNESDAY"]}
    reply = client.put(f"/environment/{ENV}/deploymentRule", json=change)
    assert reply.status_code == 200
    for key, value in change.items():
        assert reply.json()[key] == value
    stored = client.get(f"/environment/{ENV}/deploymentRule").json()
    assert {key: stored[key] for key in change} == change


def test_deployment_rule_partial_put_keeps_other_fields(client):
    before = client.get(f"/environment/{ENV}/deploymentRule").json()
    after = client.put(f"/environment/{ENV}/deploymentRule", json={"auto_stop": True}).json()
    assert after["auto_stop"] is True
    assert after["timezone"] == before["timezone"]
    assert after["weekdays"] == before["weekdays"]


@pytest.mark.parametrize("change, location", [
    ({"start_time": "25:00"}, "body.start_time"),
    ({"weekdays": ["FUNDAY"]}, "body.weekdays[0]"),
    ({"auto_stop": "yes"}, "body.auto_stop"),
])
def test_deployment_rule_rejects_invalid_values(client, change, location):
    reply = client.put(f"/environment/{ENV}/deploymentRule", json=change)
    assert reply.status_code == 400
    assert location in reply.json()["message"]


def test_renaming_a_project_frees_its_old_name_and_takes_the_new_one(client):
    projects = f"/organization/{ORG}/project"
    first = client.post(projects, json={"name": "alpha"}).json()
    assert client.put(f"/project/{first['id']}", json={"name": "beta"}).status_code == 200
    assert client.post(projects, json={"name": "alpha"}).status_code == 201
    assert client.post(projects, json={"name": "beta"}).status_code == 409


def test_deleting_an_environment_frees_its_name(client):
    envs = f"/project/{PROJECT}/environment"
    created = client.post(envs, json={"name": "Preview-1"}).json()
    assert client.delete(f"/environment/{created['id']}").status_code == 204
    assert client.post(envs, json={"name": "preview-1"}).status_code == 201
