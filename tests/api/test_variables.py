"""Environment variables and secrets at project, environment and service level, over HTTP.

Rules (docs/decisions.md, "Variables and secrets"; mockserver/handlers/variables.py): a key is
unique per owner; `mount_path` makes a FILE variable; descriptions are at most 255 characters;
an override or alias sits at a lower scope than what it points to and inside its subtree; a
service sees its own, its environment's and its project's records plus built-ins, an override
hiding what it overrides; a secret's value is never returned nor kept readable in the journal.
"""

import pytest
from support.ids import APP, CONTAINER, DATABASE, ENV, HELM, JOB, ORG, OTHER_ORG, PROJECT, TERRAFORM

LOG_LEVEL = "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c"        # project variable of the fixtures
PAYMENT_API_KEY = "7f9b1d3e-5a7c-4e9f-9b1d-3e5a7c9f1b3d"  # project secret of the fixtures
OTHER_PROJECT = "4a6c8e0b-2d4f-4a6c-9e0b-2d4f6a8c0e4a"    # Globex's project
OTHER_CLUSTER = "9e1c3a5f-7b9d-4e1f-8a3c-5f7b9d1e3a5c"    # Globex's cluster
DEV_CLUSTER = "6b8d0f2a-4c6e-4a8b-9d0f-2a4c6e8b0d1f"
MISSING = "00000000-0000-4000-8000-000000000000"

# owner path -> scope its records get
OWNERS = {
    "project": (f"/project/{PROJECT}", "PROJECT"),
    "environment": (f"/environment/{ENV}", "ENVIRONMENT"),
    "application": (f"/application/{APP}", "APPLICATION"),
    "container": (f"/container/{CONTAINER}", "CONTAINER"),
    "job": (f"/job/{JOB}", "JOB"),
    "helm": (f"/helm/{HELM}", "HELM"),
    "terraform": (f"/terraform/{TERRAFORM}", "TERRAFORM"),
}
SERVICES = ["application", "container", "job", "helm", "terraform"]
FAMILIES = ["environmentVariable", "secret"]
SECRET_FIELDS = {"value", "is_secret"}


# ---------------------------------------------------------------- helpers
def owner(level):
    return OWNERS[level][0]


def create(client, base, family="environmentVariable", key="API_URL", value="https://api.example", **fields):
    reply = client.post(f"{base}/{family}", json={"key": key, "value": value, **fields})
    assert reply.status_code == 201, reply.text
    return reply.json()


def listed(client, base, family="environmentVariable"):
    reply = client.get(f"{base}/{family}")
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def by_key(client, base, key, family="environmentVariable"):
    matches = [record for record in listed(client, base, family) if record["key"] == key]
    assert len(matches) == 1, matches
    return matches[0]


def staging(client):
    environments = client.get(f"/project/{PROJECT}/environment").json()["results"]
    return next(env["id"] for env in environments if env["name"] == "staging")


def new_environment(client, project, name="preview", cluster=DEV_CLUSTER, headers=None):
    reply = client.post(f"/project/{project}/environment", json={"name": name, "mode": "DEVELOPMENT",
                                                                   "cluster_id": cluster}, headers=headers)
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


def override(client, ident, scope, parent, value="debug", family="variable"):
    return client.post(f"/{family}/{ident}/override",
                       json={"value": value, "override_scope": scope, "override_parent_id": parent})


def alias(client, ident, key, scope, parent, family="variable"):
    return client.post(f"/{family}/{ident}/alias", json={"key": key, "alias_scope": scope, "alias_parent_id": parent})


def locations(reply):
    return [detail["location"] for detail in reply.json().get("details", [])]


def globex_token(client):
    reply = client.post("/_mock/tokens", json={"organization": OTHER_ORG, "scopes": ["Admin"]})
    assert reply.status_code == 201, reply.text
    return {"Authorization": f"Token {reply.json()['token']}"}


def status_of_app(client):
    reply = client.get(f"/application/{APP}/status")
    assert reply.status_code == 200
    return reply.json()["service_deployment_status"]


# ---------------------------------------------------------------- create, list, get, edit, delete
@pytest.mark.parametrize("level", OWNERS)
def test_created_variable_is_a_value_with_the_scope_of_its_owner(client, level):
    base, scope = OWNERS[level]
    variable = create(client, base, key="API_URL", value="https://api.example", description="where to call")
    assert variable["key"] == "API_URL"
    assert variable["value"] == "https://api.example"
    assert variable["scope"] == scope
    assert variable["variable_type"] == "VALUE"
    assert variable["is_secret"] is False
    assert "mount_path" not in variable                 # not a FILE variable: left out, never null
    assert variable["description"] == "where to call"
    if level in ("project", "environment"):             # no service to name: left out, never null
        assert not {"service_id", "service_name", "service_type"} & set(variable)


@pytest.mark.parametrize("level", SERVICES)
def test_service_variable_names_its_service(client, level):
    base, scope = OWNERS[level]
    variable = create(client, base)
    assert variable["service_id"] == base.rsplit("/", 1)[1]
    assert variable["service_type"] == scope


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", OWNERS)
def test_created_record_is_listed_and_readable_at_its_owner(client, level, family):
    base = owner(level)
    record = create(client, base, family)
    assert record["id"] in {r["id"] for r in listed(client, base, family)}
    reply = client.get(f"{base}/{family}/{record['id']}")
    assert reply.status_code == 200
    assert reply.json() == record


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", OWNERS)
def test_edit_changes_key_and_description(client, level, family):
    base = owner(level)
    record = create(client, base, family, key="API_URL", value="one")
    reply = client.put(f"{base}/{family}/{record['id']}", json={"key": "API_ENDPOINT", "value": "two",
                                                               "description": "renamed"})
    assert reply.status_code == 200, reply.text
    edited = reply.json()
    assert (edited["id"], edited["key"], edited["description"]) == (record["id"], "API_ENDPOINT", "renamed")
    assert client.get(f"{base}/{family}/{record['id']}").json()["key"] == "API_ENDPOINT"


@pytest.mark.parametrize("level", OWNERS)
def test_edit_changes_a_variable_value(client, level):
    base = owner(level)
    variable = create(client, base, value="one")
    client.put(f"{base}/environmentVariable/{variable['id']}", json={"key": variable["key"], "value": "two"})
    assert client.get(f"{base}/environmentVariable/{variable['id']}").json()["value"] == "two"


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", OWNERS)
def test_delete_removes_the_record(client, level, family):
    base = owner(level)
    record = create(client, base, family)
    reply = client.delete(f"{base}/{family}/{record['id']}")
    assert reply.status_code == 204
    assert client.get(f"{base}/{family}/{record['id']}").status_code == 404
    assert record["id"] not in {r["id"] for r in listed(client, base, family)}


@pytest.mark.parametrize("family", FAMILIES)
def test_unknown_record_is_404(client, family):
    assert client.get(f"/project/{PROJECT}/{family}/{MISSING}").status_code == 404
    assert client.put(f"/project/{PROJECT}/{family}/{MISSING}", json={"key": "K", "value": "v"}).status_code == 404
    assert client.delete(f"/project/{PROJECT}/{family}/{MISSING}").status_code == 404


# ---------------------------------------------------------------- field rules
@pytest.mark.parametrize("level", ["project", "environment", "application"])
def test_mount_path_makes_a_file_variable(client, level):
    variable = create(client, owner(level), key="APP_CONFIG", value="{}", mount_path="/etc/app/config.json")
    assert variable["variable_type"] == "FILE"
    assert variable["mount_path"] == "/etc/app/config.json"


def test_editing_a_file_variable_keeps_it_a_file(client):
    base = owner("application")
    variable = create(client, base, key="APP_CONFIG", value="{}", mount_path="/etc/app/config.json")
    edited = client.put(f"{base}/environmentVariable/{variable['id']}",
                        json={"key": "APP_CONFIG", "value": '{"debug": true}'}).json()
    assert (edited["variable_type"], edited["mount_path"]) == ("FILE", "/etc/app/config.json")


def test_fixture_file_variable_of_the_application_is_a_file(client):
    variable = by_key(client, owner("application"), "NGINX_CONF")
    assert (variable["variable_type"], variable["mount_path"]) == ("FILE", "/etc/nginx/conf.d/app.conf")


@pytest.mark.parametrize("family", FAMILIES)
def test_description_longer_than_255_is_400_naming_body_description(client, family):
    reply = client.post(f"/project/{PROJECT}/{family}", json={"key": "K", "value": "v", "description": "x" * 256})
    assert reply.status_code == 400
    assert "body.description" in locations(reply)
    assert "body.description" in reply.json()["message"]


@pytest.mark.parametrize("family", FAMILIES)
def test_description_of_255_characters_is_accepted(client, family):
    record = create(client, owner("project"), family, description="x" * 255)
    assert record["description"] == "x" * 255


@pytest.mark.parametrize("family", FAMILIES)
def test_description_longer_than_255_is_400_on_edit(client, family):
    base = owner("environment")
    record = create(client, base, family)
    reply = client.put(f"{base}/{family}/{record['id']}", json={"key": "K", "value": "v", "description": "x" * 256})
    assert reply.status_code == 400
    assert "body.description" in locations(reply)


@pytest.mark.parametrize("key", ["1LEADING_DIGIT", "HAS SPACE", "DASH$SIGN", ""])
@pytest.mark.parametrize("family", FAMILIES)
def test_key_that_breaks_the_pattern_is_400(client, family, key):
    reply = client.post(f"/environment/{ENV}/{family}", json={"key": key, "value": "v"})
    assert reply.status_code == 400
    assert "body.key" in locations(reply)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", OWNERS)
def test_key_taken_at_the_same_owner_is_409(client, level, family):
    base = owner(level)
    create(client, base, family, key="API_URL")
    reply = client.post(f"{base}/{family}", json={"key": "API_URL", "value": "again"})
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"
    assert sum(r["key"] == "API_URL" and r["scope"] == OWNERS[level][1] for r in listed(client, base, family)) == 1


def test_fixture_key_taken_at_the_project_is_409(client):
    reply = client.post(f"/project/{PROJECT}/environmentVariable", json={"key": "LOG_LEVEL", "value": "debug"})
    assert reply.status_code == 409


def test_keys_are_case_sensitive(client):
    variable = create(client, owner("project"), key="log_level", value="debug")
    assert variable["key"] == "log_level"


@pytest.mark.parametrize("family", FAMILIES)
def test_same_key_at_a_different_owner_is_fine(client, family):
    create(client, owner("environment"), family, key="SHARED_KEY")
    create(client, owner("application"), family, key="SHARED_KEY")
    create(client, owner("container"), family, key="SHARED_KEY")
    create(client, f"/environment/{staging(client)}", family, key="SHARED_KEY")


def test_project_key_can_be_reused_at_the_environment(client):
    variable = create(client, owner("environment"), key="LOG_LEVEL", value="warn")
    assert variable["scope"] == "ENVIRONMENT"


def test_renaming_onto_a_taken_key_is_409(client):
    base = owner("application")
    variable = create(client, base, key="API_URL")
    reply = client.put(f"{base}/environmentVariable/{variable['id']}", json={"key": "PORT", "value": "1"})
    assert reply.status_code == 409
    assert client.get(f"{base}/environmentVariable/{variable['id']}").json()["key"] == "API_URL"


# ---------------------------------------------------------------- secrets stay private
@pytest.mark.parametrize("level", OWNERS)
def test_secret_responses_never_carry_value_or_is_secret(client, level):
    base, scope = OWNERS[level]
    reply = client.post(f"{base}/secret", json={"key": "DB_PASSWORD", "value": "hunter2-create"})
    assert reply.status_code == 201
    secret = reply.json()
    assert secret["key"] == "DB_PASSWORD" and secret["scope"] == scope
    assert not SECRET_FIELDS & set(secret)
    assert "hunter2" not in reply.text
    got = client.get(f"{base}/secret/{secret['id']}")
    assert not SECRET_FIELDS & set(got.json()) and "hunter2" not in got.text
    edited = client.put(f"{base}/secret/{secret['id']}", json={"key": "DB_PASSWORD", "value": "hunter2-edit"})
    assert edited.status_code == 200
    assert not SECRET_FIELDS & set(edited.json()) and "hunter2" not in edited.text
    listing = client.get(f"{base}/secret")
    assert all(not SECRET_FIELDS & set(record) for record in listing.json()["results"])
    assert "hunter2" not in listing.text


def test_fixture_secrets_never_show_their_value(client):
    reply = client.get(f"/application/{APP}/secret")
    assert "PAYMENT_API_KEY" in reply.text
    assert "sk-live-not-returned" not in reply.text
    assert all(not SECRET_FIELDS & set(record) for record in reply.json()["results"])


def test_secret_values_are_not_readable_in_the_call_journal(client):
    secret = create(client, owner("environment"), "secret", key="TOKEN", value="journal-secret-create")
    client.put(f"/environment/{ENV}/secret/{secret['id']}", json={"key": "TOKEN", "value": "journal-secret-edit"})
    assert override(client, PAYMENT_API_KEY, "ENVIRONMENT", ENV, "journal-secret-override", "secret").status_code == 201
    reply = client.post(f"/container/{CONTAINER}/secret/{PAYMENT_API_KEY}/override",
                        json={"value": "journal-secret-service"})
    assert reply.status_code == 201
    journal = client.get("/_mock/calls")
    assert journal.status_code == 200
    assert journal.json()["total"] >= 4
    assert "journal-secret" not in journal.text


def test_variable_values_are_kept_in_the_call_journal(client):
    create(client, owner("environment"), key="PLAIN", value="journal-plain-value")
    assert "journal-plain-value" in client.get("/_mock/calls").text


def test_rejected_secret_value_is_not_echoed_in_the_error_nor_the_journal(client):
    value = "leak" + "s" * 65536
    reply = client.post(f"/project/{PROJECT}/secret", json={"key": "BIG", "value": value})
    assert reply.status_code == 400
    assert "body.value" in locations(reply)
    assert "leaksss" not in reply.text
    assert "leaksss" not in client.get("/_mock/calls").text


# ---------------------------------------------------------------- what each level sees
def test_service_list_shows_inherited_own_and_built_in_variables_with_their_scope(client):
    scopes = {record["key"]: record["scope"] for record in listed(client, owner("application"))}
    assert scopes["LOG_LEVEL"] == "PROJECT"
    assert scopes["FEATURE_FLAGS"] == "ENVIRONMENT"
    assert scopes["PORT"] == "APPLICATION"
    assert "BUILT_IN" in scopes.values()


def test_service_list_includes_its_own_built_in_host(client):
    records = listed(client, owner("application"))
    own_built_ins = [r for r in records if r["variable_type"] == "BUILT_IN" and r["service_id"] == APP]
    assert own_built_ins, records
    assert all(r["scope"] == "BUILT_IN" for r in own_built_ins)


@pytest.mark.parametrize("level", SERVICES)
def test_new_project_and_environment_variables_reach_every_service(client, level):
    create(client, owner("project"), key="FROM_PROJECT")
    create(client, owner("environment"), key="FROM_ENVIRONMENT")
    create(client, owner(level), key="OWN")
    scopes = {record["key"]: record["scope"] for record in listed(client, owner(level))}
    assert scopes["FROM_PROJECT"] == "PROJECT"
    assert scopes["FROM_ENVIRONMENT"] == "ENVIRONMENT"
    assert scopes["OWN"] == OWNERS[level][1]


def test_service_does_not_see_another_services_variables(client):
    create(client, owner("container"), key="WORKER_ONLY")
    assert "WORKER_ONLY" not in {record["key"] for record in listed(client, owner("application"))}


def test_environment_list_shows_project_variables_but_not_service_ones(client):
    keys = {record["key"]: record["scope"] for record in listed(client, owner("environment"))}
    assert keys["LOG_LEVEL"] == "PROJECT"
    assert keys["FEATURE_FLAGS"] == "ENVIRONMENT"
    assert "PORT" not in keys


def test_project_list_shows_only_project_variables(client):
    records = listed(client, owner("project"))
    assert {record["key"] for record in records} == {"LOG_LEVEL"}


def test_another_environment_does_not_see_this_environments_variables(client):
    keys = {record["key"] for record in listed(client, f"/environment/{staging(client)}")}
    assert "LOG_LEVEL" in keys
    assert "FEATURE_FLAGS" not in keys


def test_service_secret_list_shows_inherited_secrets(client):
    create(client, owner("environment"), "secret", key="ENV_SECRET")
    create(client, owner("job"), "secret", key="JOB_SECRET")
    scopes = {record["key"]: record["scope"] for record in listed(client, owner("job"), "secret")}
    assert scopes["PAYMENT_API_KEY"] == "PROJECT"
    assert scopes["ENV_SECRET"] == "ENVIRONMENT"
    assert scopes["JOB_SECRET"] == "JOB"


def test_inherited_variable_can_be_read_through_the_service(client):
    reply = client.get(f"/application/{APP}/environmentVariable/{LOG_LEVEL}")
    assert reply.status_code == 200
    assert reply.json()["key"] == "LOG_LEVEL"


# ---------------------------------------------------------------- overrides
def test_override_at_an_environment_creates_an_override_record(client):
    reply = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug")
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert record["variable_type"] == "OVERRIDE"
    assert record["key"] == "LOG_LEVEL"
    assert record["value"] == "debug"
    assert record["scope"] == "ENVIRONMENT"
    reference = record["overridden_variable"]
    assert reference["id"] == LOG_LEVEL
    assert (reference["key"], reference["value"], reference["scope"], reference["variable_type"]) == \
        ("LOG_LEVEL", "info", "PROJECT", "VALUE")


def test_override_replaces_the_original_in_the_environment_and_its_services(client):
    record = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    for base in (owner("environment"), owner("application"), owner("container")):
        matches = [r for r in listed(client, base) if r["key"] == "LOG_LEVEL"]
        assert [r["id"] for r in matches] == [record["id"]], base
        assert matches[0]["value"] == "debug"


def test_override_does_not_reach_the_project_or_other_environments(client):
    override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug")
    assert by_key(client, owner("project"), "LOG_LEVEL")["id"] == LOG_LEVEL
    assert by_key(client, f"/environment/{staging(client)}", "LOG_LEVEL")["id"] == LOG_LEVEL


def test_override_at_the_same_scope_is_400(client):
    reply = override(client, LOG_LEVEL, "PROJECT", PROJECT)
    assert reply.status_code == 400
    assert "lower scope" in reply.json()["message"]
    assert "body.override_scope" in locations(reply)


def test_override_at_a_higher_scope_is_400(client):
    variable = by_key(client, owner("environment"), "FEATURE_FLAGS")
    reply = override(client, variable["id"], "PROJECT", PROJECT)
    assert reply.status_code == 400
    assert "lower scope" in reply.json()["message"]


def test_override_of_a_service_variable_at_its_environment_is_400(client):
    port = by_key(client, owner("application"), "PORT")
    reply = override(client, port["id"], "ENVIRONMENT", ENV)
    assert reply.status_code == 400
    assert "lower scope" in reply.json()["message"]


def test_override_in_an_environment_of_another_project_is_404_the_place_does_not_see_it(client):
    projects = client.get(f"/organization/{ORG}/project").json()["results"]
    tools = next(project["id"] for project in projects if project["name"] == "internal-tools")
    environment = new_environment(client, tools)
    reply = override(client, LOG_LEVEL, "ENVIRONMENT", environment)
    assert reply.status_code == 404
    assert f"variable {LOG_LEVEL} (LOG_LEVEL) not found at environment {environment}" in reply.json()["message"]
    assert "body.override_parent_id" in locations(reply)
    assert "LOG_LEVEL" not in {r["key"] for r in listed(client, f"/environment/{environment}")}


def test_service_override_of_a_variable_of_another_environment_is_404_as_reading_it_there(client):
    other = create(client, f"/environment/{staging(client)}", key="STAGING_ONLY")
    assert client.get(f"/application/{APP}/environmentVariable/{other['id']}").status_code == 404
    reply = client.post(f"/application/{APP}/environmentVariable/{other['id']}/override", json={"value": "x"})
    assert reply.status_code == 404
    assert "not found at application" in reply.json()["message"]
    assert "STAGING_ONLY" not in {record["key"] for record in listed(client, owner("application"))}


def test_override_with_an_unknown_parent_is_404(client):
    assert override(client, LOG_LEVEL, "ENVIRONMENT", MISSING).status_code == 404


def test_override_of_an_unknown_variable_is_404(client):
    assert override(client, MISSING, "ENVIRONMENT", ENV).status_code == 404


def test_overriding_twice_at_the_same_parent_is_409(client):
    assert override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").status_code == 201
    reply = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "trace")
    assert reply.status_code == 409
    assert [r["value"] for r in listed(client, owner("environment")) if r["key"] == "LOG_LEVEL"] == ["debug"]


def test_override_at_a_service_scope_through_the_variable_path(client):
    reply = override(client, LOG_LEVEL, "APPLICATION", APP, "warn")
    assert reply.status_code == 201
    assert (reply.json()["scope"], reply.json()["service_id"]) == ("APPLICATION", APP)
    assert by_key(client, owner("application"), "LOG_LEVEL")["value"] == "warn"
    assert by_key(client, owner("container"), "LOG_LEVEL")["value"] == "info"


def test_container_override_path_overrides_for_that_container_only(client):
    reply = client.post(f"/container/{CONTAINER}/environmentVariable/{LOG_LEVEL}/override", json={"value": "debug"})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["scope"], record["key"]) == ("OVERRIDE", "CONTAINER", "LOG_LEVEL")
    assert record["overridden_variable"]["id"] == LOG_LEVEL
    assert by_key(client, owner("container"), "LOG_LEVEL")["id"] == record["id"]
    assert by_key(client, owner("application"), "LOG_LEVEL")["id"] == LOG_LEVEL


def test_service_and_environment_overrides_stack(client):
    env_override = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    reply = client.post(f"/application/{APP}/environmentVariable/{env_override['id']}/override",
                        json={"value": "trace"})
    assert reply.status_code == 201
    assert by_key(client, owner("application"), "LOG_LEVEL")["value"] == "trace"
    assert by_key(client, owner("container"), "LOG_LEVEL")["value"] == "debug"


def test_service_override_of_its_own_variable_conflicts_with_what_it_holds_409(client):
    port = by_key(client, owner("application"), "PORT")
    reply = client.post(f"/application/{APP}/environmentVariable/{port['id']}/override", json={"value": "9090"})
    assert reply.status_code == 409
    assert "belongs to application" in reply.json()["message"] and "edit the variable" in reply.json()["message"]
    assert by_key(client, owner("application"), "PORT")["value"] == "8080"


def test_override_of_a_variable_at_its_own_place_through_the_variable_path_keeps_the_level_rule_400(client):
    port = by_key(client, owner("application"), "PORT")
    reply = override(client, port["id"], "APPLICATION", APP, "9090")
    assert reply.status_code == 400
    assert "an override must be at a lower scope" in reply.json()["message"]
    assert locations(reply) == ["body.override_scope"]


def test_secret_override_through_the_application_path_has_a_reference_without_value(client):
    reply = client.post(f"/application/{APP}/secret/{PAYMENT_API_KEY}/override", json={"value": "sk-test-override"})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["scope"], record["key"]) == ("OVERRIDE", "APPLICATION", "PAYMENT_API_KEY")
    assert not SECRET_FIELDS & set(record)
    reference = record["overridden_secret"]
    assert (reference["id"], reference["key"], reference["scope"]) == (PAYMENT_API_KEY, "PAYMENT_API_KEY", "PROJECT")
    assert "value" not in reference
    assert "sk-test-override" not in reply.text and "sk-live" not in reply.text
    assert by_key(client, owner("application"), "PAYMENT_API_KEY", "secret")["id"] == record["id"]


def test_secret_override_at_environment_scope(client):
    reply = override(client, PAYMENT_API_KEY, "ENVIRONMENT", ENV, "sk-env-override", "secret")
    assert reply.status_code == 201
    assert reply.json()["overridden_secret"]["id"] == PAYMENT_API_KEY
    assert "sk-env-override" not in reply.text
    assert by_key(client, owner("environment"), "PAYMENT_API_KEY", "secret")["variable_type"] == "OVERRIDE"


def test_override_keeps_the_key_of_what_it_overrides_when_edited(client):
    record = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    reply = client.put(f"/environment/{ENV}/environmentVariable/{record['id']}", json={"key": "OTHER", "value": "warn"})
    assert reply.status_code == 200
    assert (reply.json()["key"], reply.json()["value"]) == ("LOG_LEVEL", "warn")


def test_override_onto_a_key_the_parent_already_has_is_409(client):
    create(client, owner("environment"), key="LOG_LEVEL", value="warn")
    assert override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").status_code == 409


def test_new_variable_with_the_key_of_an_override_at_that_owner_is_409(client):
    assert override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").status_code == 201
    reply = client.post(f"/environment/{ENV}/environmentVariable", json={"key": "LOG_LEVEL", "value": "warn"})
    assert reply.status_code == 409
    assert [r["key"] for r in listed(client, owner("environment"))].count("LOG_LEVEL") == 1


# ---------------------------------------------------------------- aliases
def test_alias_at_a_service_creates_an_alias_record(client):
    reply = alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "APPLICATION", APP)
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["key"], record["scope"]) == ("ALIAS", "APP_LOG_LEVEL", "APPLICATION")
    assert record["value"] == "info"
    reference = record["aliased_variable"]
    assert (reference["id"], reference["key"], reference["value"], reference["scope"]) == \
        (LOG_LEVEL, "LOG_LEVEL", "info", "PROJECT")


def test_alias_is_listed_next_to_the_original(client):
    alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "APPLICATION", APP)
    keys = {record["key"] for record in listed(client, owner("application"))}
    assert {"LOG_LEVEL", "APP_LOG_LEVEL"} <= keys
    assert "APP_LOG_LEVEL" not in {record["key"] for record in listed(client, owner("container"))}


def test_alias_key_taken_at_its_parent_is_409(client):
    reply = alias(client, LOG_LEVEL, "PORT", "APPLICATION", APP)
    assert reply.status_code == 409


def test_alias_at_the_same_scope_is_accepted(client):
    reply = alias(client, LOG_LEVEL, "LOG_LEVEL_ALIAS", "PROJECT", PROJECT)
    assert reply.status_code == 201, reply.text
    assert (reply.json()["scope"], reply.json()["variable_type"]) == ("PROJECT", "ALIAS")
    flags = by_key(client, owner("environment"), "FEATURE_FLAGS")
    reply = alias(client, flags["id"], "FLAGS", "ENVIRONMENT", ENV)
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("application"), "FLAGS")["value"] == flags["value"]


def test_alias_of_an_application_variable_at_that_application(client):
    port = by_key(client, owner("application"), "PORT")
    reply = client.post(f"/variable/{port['id']}/alias",
                        json={"key": "PORT_ALIAS", "alias_scope": "APPLICATION", "alias_parent_id": APP})
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("application"), "PORT_ALIAS")["value"] == "8080"


def test_alias_at_a_higher_scope_is_400_naming_the_rule(client):
    flags = by_key(client, owner("environment"), "FEATURE_FLAGS")
    reply = alias(client, flags["id"], "FLAGS", "PROJECT", PROJECT)
    assert reply.status_code == 400
    assert "body.alias_scope" in locations(reply)
    assert "same scope" in reply.json()["message"] and "higher" in reply.json()["message"]


def test_alias_of_a_database_built_in_at_application_scope(client):
    variables = listed(client, owner("environment"))
    host = next(r for r in variables if r["variable_type"] == "BUILT_IN" and r["service_id"] == DATABASE
                and r["key"].endswith("_HOST"))
    reply = alias(client, host["id"], "DATABASE_HOST", "APPLICATION", APP)
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["value"]) == ("ALIAS", host["value"])
    assert record["aliased_variable"]["variable_type"] == "BUILT_IN"
    assert by_key(client, owner("application"), "DATABASE_HOST")["id"] == record["id"]


def test_built_in_scope_with_an_id_that_names_no_built_in_is_404(client):
    reply = alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "BUILT_IN", APP)
    assert reply.status_code == 404
    assert f"built-in variable or secret {APP} not found" in reply.json()["message"]
    assert locations(reply) == ["body.alias_parent_id"]
    assert "APP_LOG_LEVEL" not in {record["key"] for record in listed(client, owner("application"))}


def test_alias_of_a_secret_has_a_reference_without_value(client):
    reply = alias(client, PAYMENT_API_KEY, "PAYMENTS_KEY", "ENVIRONMENT", ENV, "secret")
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert record["variable_type"] == "ALIAS"
    assert record["aliased_secret"]["id"] == PAYMENT_API_KEY
    assert not SECRET_FIELDS & set(record) and "value" not in record["aliased_secret"]
    assert "sk-live-not-returned" not in reply.text


# ---------------------------------------------------------------- the spec's scope values and parent ids
def production_built_in(client, family="environmentVariable"):
    """A built-in of the fixtures' production environment: the web application's internal host, or the orders
    database's password secret."""
    service = APP if family == "environmentVariable" else DATABASE
    return next(r for r in listed(client, owner("environment"), family)
                if r["variable_type"] == "BUILT_IN" and r["service_id"] == service)


def test_override_scope_built_in_is_a_spec_scope_value_refused_by_the_level_rule(client):
    host = production_built_in(client)
    reply = override(client, LOG_LEVEL, "BUILT_IN", host["id"])
    assert reply.status_code == 400
    message = reply.json()["message"]
    assert "is not one of" not in message                   # the document accepts the value
    assert "an override must be at a lower scope" in message and "BUILT_IN is not lower" in message
    assert locations(reply) == ["body.override_scope"]


def test_alias_scope_built_in_of_a_project_variable_is_refused_by_the_level_rule(client):
    reply = alias(client, LOG_LEVEL, "PLATFORM_LOG_LEVEL", "BUILT_IN", production_built_in(client)["id"])
    assert reply.status_code == 400
    assert "an alias must be at the same scope" in reply.json()["message"]
    assert locations(reply) == ["body.alias_scope"]


@pytest.mark.parametrize("family", FAMILIES)
def test_alias_scope_built_in_of_a_built_in_lives_where_built_ins_live(client, family):
    target = production_built_in(client, family)
    reply = alias(client, target["id"], "WEB_BUILT_IN", "BUILT_IN", target["id"],
                  "variable" if family == "environmentVariable" else "secret")
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["scope"]) == ("ALIAS", "ENVIRONMENT")
    assert by_key(client, owner("environment"), "WEB_BUILT_IN", family)["id"] == record["id"]
    assert by_key(client, owner("container"), "WEB_BUILT_IN", family)["id"] == record["id"]


def test_alias_parent_id_naming_the_aliased_variable_puts_the_alias_at_its_place(client):
    reply = alias(client, LOG_LEVEL, "LOG_VERBOSITY", "PROJECT", LOG_LEVEL)
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["scope"], record["value"]) == ("ALIAS", "PROJECT", "info")
    assert by_key(client, owner("project"), "LOG_VERBOSITY")["id"] == record["id"]


def test_alias_parent_id_naming_a_service_variable_puts_the_alias_at_that_service(client):
    port = by_key(client, owner("application"), "PORT")
    reply = alias(client, port["id"], "HTTP_PORT", "APPLICATION", port["id"])
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("application"), "HTTP_PORT")["value"] == "8080"


def test_alias_parent_id_naming_the_aliased_variable_with_another_scope_is_400_saying_what_was_expected(client):
    reply = alias(client, LOG_LEVEL, "LOG_VERBOSITY", "ENVIRONMENT", LOG_LEVEL)
    assert reply.status_code == 400
    message = reply.json()["message"]
    assert "body.alias_parent_id names the variable itself" in message and "alias_scope must then be PROJECT" in message
    assert locations(reply) == ["body.alias_scope"]


def test_override_parent_id_naming_the_overridden_variable_is_its_own_place_refused_by_the_level_rule(client):
    reply = override(client, LOG_LEVEL, "PROJECT", LOG_LEVEL)
    assert reply.status_code == 400
    assert "an override must be at a lower scope" in reply.json()["message"]


@pytest.mark.parametrize("scope, parent", [("ENVIRONMENT", APP), ("PROJECT", ENV), ("APPLICATION", CONTAINER),
                                           ("CONTAINER", MISSING)])
def test_parent_id_that_names_no_record_of_the_scope_is_404_naming_what_was_looked_for(client, scope, parent):
    for reply in (override(client, LOG_LEVEL, scope, parent), alias(client, LOG_LEVEL, "ANOTHER", scope, parent)):
        assert reply.status_code == 404, reply.text
        noun = {"ENVIRONMENT": "environment", "PROJECT": "project"}.get(scope, scope.lower())
        assert reply.json()["message"] == f"{noun} {parent} not found"


def test_secret_reference_holds_description_null_when_none(client):
    record = alias(client, PAYMENT_API_KEY, "PAYMENTS_KEY", "ENVIRONMENT", ENV, "secret").json()
    assert "description" in record["aliased_secret"] and record["aliased_secret"]["description"] is None
    described = create(client, owner("project"), "secret", key="WEBHOOK_KEY", description="Signs webhooks")
    record = alias(client, described["id"], "HOOK_KEY", "ENVIRONMENT", ENV, "secret").json()
    assert record["aliased_secret"]["description"] == "Signs webhooks"


def test_reference_to_a_file_variable_carries_its_mount_path_and_to_another_leaves_it_out(client):
    nginx = by_key(client, owner("application"), "NGINX_CONF")
    record = client.post(f"/application/{APP}/environmentVariable/{nginx['id']}/alias", json={"key": "NGINX"}).json()
    assert record["aliased_variable"]["mount_path"] == "/etc/nginx/conf.d/app.conf"
    record = alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "APPLICATION", APP).json()
    assert "mount_path" not in record and "mount_path" not in record["aliased_variable"]


# ---------------------------------------------------------------- dependents follow the original
def test_editing_the_original_updates_its_alias_value(client):
    record = alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "APPLICATION", APP).json()
    client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "error"})
    updated = client.get(f"/application/{APP}/environmentVariable/{record['id']}").json()
    assert updated["value"] == "error"
    assert updated["aliased_variable"]["value"] == "error"


def test_editing_the_original_updates_the_override_reference_not_its_value(client):
    record = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "error"})
    updated = client.get(f"/environment/{ENV}/environmentVariable/{record['id']}").json()
    assert updated["value"] == "debug"
    assert updated["overridden_variable"]["value"] == "error"


def test_renaming_the_original_renames_its_overrides(client):
    record = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOGGING", "value": "info"})
    assert client.get(f"/environment/{ENV}/environmentVariable/{record['id']}").json()["key"] == "LOGGING"
    keys = {r["key"]: r["value"] for r in listed(client, owner("application"))}
    assert keys.get("LOGGING") == "debug" and "LOG_LEVEL" not in keys


def test_deleting_the_original_removes_its_overrides_and_aliases(client):
    overridden = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    aliased = alias(client, LOG_LEVEL, "APP_LOG_LEVEL", "APPLICATION", APP).json()
    assert client.delete(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}").status_code == 204
    assert client.get(f"/environment/{ENV}/environmentVariable/{overridden['id']}").status_code == 404
    assert client.get(f"/application/{APP}/environmentVariable/{aliased['id']}").status_code == 404
    keys = {record["key"] for record in listed(client, owner("application"))}
    assert not {"LOG_LEVEL", "APP_LOG_LEVEL"} & keys


def test_deleting_an_override_brings_back_the_original(client):
    record = override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").json()
    assert client.delete(f"/environment/{ENV}/environmentVariable/{record['id']}").status_code == 204
    assert by_key(client, owner("application"), "LOG_LEVEL")["id"] == LOG_LEVEL


def test_database_built_in_cannot_be_edited_or_deleted(client):
    host = next(r for r in listed(client, owner("environment")) if r["variable_type"] == "BUILT_IN")
    item = f"/environment/{ENV}/environmentVariable/{host['id']}"
    assert client.put(item, json={"key": host["key"], "value": "elsewhere"}).status_code == 409
    assert client.delete(item).status_code == 409
    assert client.get(item).json()["value"] == host["value"]


def test_service_built_in_cannot_be_edited_or_deleted(client):
    own = next(r for r in listed(client, owner("application"))
               if r["variable_type"] == "BUILT_IN" and r["service_id"] == APP)
    item = f"/application/{APP}/environmentVariable/{own['id']}"
    assert client.put(item, json={"key": own["key"], "value": "elsewhere"}).status_code == 409
    assert client.delete(item).status_code == 409
    assert client.get(item).json() == own


def test_database_built_in_password_secret_cannot_be_deleted(client):
    password = next(r for r in listed(client, owner("environment"), "secret") if r["variable_type"] == "BUILT_IN")
    assert client.delete(f"/environment/{ENV}/secret/{password['id']}").status_code == 409


# ---------------------------------------------------------------- deployment status
def test_fixture_application_starts_up_to_date(client):
    assert status_of_app(client) == "UP_TO_DATE"


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", ["application", "environment", "project"])
def test_new_variable_seen_by_the_application_makes_it_out_of_date(client, level, family):
    create(client, owner(level), family, key="NEW_SETTING")
    assert status_of_app(client) == "OUT_OF_DATE"


def test_deleting_a_variable_of_the_application_makes_it_out_of_date(client):
    port = by_key(client, owner("application"), "PORT")
    assert client.delete(f"/application/{APP}/environmentVariable/{port['id']}").status_code == 204
    assert status_of_app(client) == "OUT_OF_DATE"


def test_override_at_its_environment_makes_the_application_out_of_date(client):
    assert override(client, LOG_LEVEL, "ENVIRONMENT", ENV, "debug").status_code == 201
    assert status_of_app(client) == "OUT_OF_DATE"


def test_variable_of_another_service_leaves_the_application_up_to_date(client):
    create(client, owner("container"), key="WORKER_ONLY")
    create(client, f"/environment/{staging(client)}", key="STAGING_ONLY")
    assert status_of_app(client) == "UP_TO_DATE"


def test_editing_an_inherited_variable_makes_the_application_out_of_date(client):
    client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "warn"})
    assert status_of_app(client) == "OUT_OF_DATE"


# ---------------------------------------------------------------- ownership and tenancy
def test_variable_read_through_another_services_path_is_404(client):
    port = by_key(client, owner("application"), "PORT")
    assert client.get(f"/container/{CONTAINER}/environmentVariable/{port['id']}").status_code == 404
    assert client.get(f"/job/{JOB}/environmentVariable/{port['id']}").status_code == 404


def test_environment_variable_read_through_another_environment_is_404(client):
    flags = by_key(client, owner("environment"), "FEATURE_FLAGS")
    assert client.get(f"/environment/{staging(client)}/environmentVariable/{flags['id']}").status_code == 404


def test_service_variable_read_through_its_environment_is_404(client):
    port = by_key(client, owner("application"), "PORT")
    assert client.get(f"/environment/{ENV}/environmentVariable/{port['id']}").status_code == 404


def test_variable_id_read_as_a_secret_is_404(client):
    assert client.get(f"/project/{PROJECT}/secret/{LOG_LEVEL}").status_code == 404
    assert client.get(f"/project/{PROJECT}/environmentVariable/{PAYMENT_API_KEY}").status_code == 404


def test_inherited_variable_cannot_be_deleted_through_a_service(client):
    assert client.delete(f"/application/{APP}/environmentVariable/{LOG_LEVEL}").status_code == 404
    assert by_key(client, owner("project"), "LOG_LEVEL")["id"] == LOG_LEVEL


@pytest.mark.parametrize("family", FAMILIES)
def test_another_organizations_project_is_404(client, family):
    assert client.get(f"/project/{OTHER_PROJECT}/{family}").status_code == 404
    assert client.post(f"/project/{OTHER_PROJECT}/{family}", json={"key": "K", "value": "v"}).status_code == 404


def test_another_organizations_variable_is_404_everywhere(client):
    globex = globex_token(client)
    reply = client.post(f"/project/{OTHER_PROJECT}/environmentVariable", json={"key": "GLOBEX", "value": "g"},
                        headers=globex)
    assert reply.status_code == 201
    ident = reply.json()["id"]
    assert client.get(f"/project/{OTHER_PROJECT}/environmentVariable/{ident}", headers=globex).status_code == 200
    assert client.get(f"/project/{OTHER_PROJECT}/environmentVariable/{ident}").status_code == 404
    assert client.get(f"/project/{PROJECT}/environmentVariable/{ident}").status_code == 404
    assert override(client, ident, "ENVIRONMENT", ENV).status_code == 404
    assert alias(client, ident, "GLOBEX_ALIAS", "APPLICATION", APP).status_code == 404


def test_override_into_another_organizations_environment_is_404(client):
    globex = globex_token(client)
    environment = new_environment(client, OTHER_PROJECT, cluster=OTHER_CLUSTER, headers=globex)
    assert override(client, LOG_LEVEL, "ENVIRONMENT", environment).status_code == 404
    assert client.get(f"/environment/{environment}/environmentVariable").status_code == 404


# ---------------------------------------------------------------- built-ins are seen by the whole environment
SERVICE_IDS = {"application": APP, "container": CONTAINER, "job": JOB, "helm": HELM, "terraform": TERRAFORM}


def built_in(client, service_id, suffix="_HOST_INTERNAL", family="environmentVariable"):
    found = [r for r in listed(client, owner("environment"), family)
             if r["variable_type"] == "BUILT_IN" and r["service_id"] == service_id and r["key"].endswith(suffix)]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("level", SERVICES)
def test_every_service_lists_the_built_ins_of_every_service_of_its_environment(client, level):
    records = listed(client, owner(level))
    owners = {r["service_id"] for r in records if r["variable_type"] == "BUILT_IN"}
    every = {item["id"] for kind in ("application", "container", "database", "job", "helm", "terraform")
             for item in client.get(f"/environment/{ENV}/{kind}").json()["results"]}
    assert {APP, CONTAINER, DATABASE, JOB, HELM, TERRAFORM} < every
    assert owners == every
    assert all(r["scope"] == "BUILT_IN" for r in records if r["variable_type"] == "BUILT_IN")


@pytest.mark.parametrize("level", SERVICES)
def test_every_service_kind_overrides_the_applications_host_built_in(client, level):
    host = built_in(client, APP)
    reply = client.post(f"{owner(level)}/environmentVariable/{host['id']}/override", json={"value": "web.local"})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["key"], record["scope"]) == ("OVERRIDE", host["key"], OWNERS[level][1])
    assert record["overridden_variable"]["variable_type"] == "BUILT_IN"
    assert by_key(client, owner(level), host["key"])["value"] == "web.local"
    others = [other for other in SERVICES if other != level]
    assert by_key(client, owner(others[0]), host["key"])["id"] == host["id"]


def test_application_overrides_its_own_host_built_in(client):
    host = built_in(client, APP)
    reply = client.post(f"/application/{APP}/environmentVariable/{host['id']}/override", json={"value": "web.local"})
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("application"), host["key"])["value"] == "web.local"
    again = client.post(f"/application/{APP}/environmentVariable/{host['id']}/override", json={"value": "x"})
    assert again.status_code == 409
    assert "already overridden" in again.json()["message"]


@pytest.mark.parametrize("level", SERVICES)
def test_every_service_kind_overrides_and_aliases_the_database_password_secret(client, level):
    password = built_in(client, DATABASE, "_PASSWORD", "secret")
    reply = client.post(f"{owner(level)}/secret/{password['id']}/override", json={"value": "local-password"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["overridden_secret"]["id"] == password["id"]
    reply = client.post(f"{owner(level)}/secret/{password['id']}/alias", json={"key": "DB_PASSWORD"})
    assert reply.status_code == 201, reply.text
    assert (reply.json()["variable_type"], reply.json()["scope"]) == ("ALIAS", OWNERS[level][1])
    assert "local-password" not in reply.text and not SECRET_FIELDS & set(reply.json())
    assert by_key(client, owner(level), "DB_PASSWORD", "secret")["aliased_secret"]["id"] == password["id"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("level", SERVICES)
def test_service_alias_route_of_each_kind(client, level, family):
    target = LOG_LEVEL if family == "environmentVariable" else PAYMENT_API_KEY
    reply = client.post(f"{owner(level)}/{family}/{target}/alias", json={"key": "ALIASED", "description": "mine"})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert (record["variable_type"], record["key"], record["scope"]) == ("ALIAS", "ALIASED", OWNERS[level][1])
    assert record["service_id"] == SERVICE_IDS[level]
    assert "ALIASED" in {r["key"] for r in listed(client, owner(level), family)}
    assert client.post(f"{owner(level)}/{family}/{target}/alias", json={"key": "ALIASED"}).status_code == 409


@pytest.mark.parametrize("family", FAMILIES)
def test_service_aliases_its_own_variable(client, family):
    own = create(client, owner("container"), family, key="QUEUE", value="orders")
    reply = client.post(f"/container/{CONTAINER}/{family}/{own['id']}/alias", json={"key": "QUEUE_NAME"})
    assert reply.status_code == 201, reply.text


@pytest.mark.parametrize("family", FAMILIES)
def test_service_cannot_alias_or_override_another_services_variable_404(client, family):
    own = create(client, owner("application"), family, key="APP_ONLY")
    for verb, body in (("alias", {"key": "STOLEN"}), ("override", {"value": "x"})):
        reply = client.post(f"/container/{CONTAINER}/{family}/{own['id']}/{verb}", json=body)
        assert reply.status_code == 404, (verb, reply.text)
        assert f"not found at container {CONTAINER}" in reply.json()["message"]
        assert locations(reply) == ["path"]


def test_built_in_cannot_be_overridden_where_it_is_not_seen_404(client):
    host = built_in(client, APP)
    reply = override(client, host["id"], "PROJECT", PROJECT)        # lower than BUILT_IN, but does not see it
    assert reply.status_code == 404
    assert f"not found at project {PROJECT}" in reply.json()["message"]
    reply = override(client, host["id"], "ENVIRONMENT", staging(client))
    assert reply.status_code == 404
    assert "body.override_parent_id" in locations(reply)


def test_built_in_is_overridden_and_aliased_at_its_environment(client):
    host = built_in(client, CONTAINER)
    reply = override(client, host["id"], "ENVIRONMENT", ENV, "worker.local")
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("job"), host["key"])["value"] == "worker.local"
    reply = alias(client, host["id"], "WORKER_HOST", "ENVIRONMENT", ENV)
    assert reply.status_code == 201, reply.text
    assert by_key(client, owner("helm"), "WORKER_HOST")["value"] == host["value"]


def test_deleting_a_service_deletes_its_built_ins_and_what_points_at_them(client):
    host = built_in(client, CONTAINER)
    overridden = client.post(f"/application/{APP}/environmentVariable/{host['id']}/override", json={"value": "x"})
    aliased = client.post(f"/job/{JOB}/environmentVariable/{host['id']}/alias", json={"key": "WORKER_HOST"})
    assert overridden.status_code == aliased.status_code == 201
    assert client.delete(f"/container/{CONTAINER}").status_code == 204
    assert host["key"] not in {r["key"] for r in listed(client, owner("application"))}
    assert "WORKER_HOST" not in {r["key"] for r in listed(client, owner("job"))}
    assert client.get(f"/application/{APP}/environmentVariable/{overridden.json()['id']}").status_code == 404


@pytest.mark.parametrize("family", FAMILIES)
def test_deleting_a_target_deletes_service_level_aliases_and_overrides(client, family):
    target = create(client, owner("environment"), family, key="SHARED")
    made = [client.post(f"{owner(level)}/{family}/{target['id']}/{verb}", json=body)
            for level in ("helm", "terraform")
            for verb, body in (("alias", {"key": "SHARED_ALIAS"}), ("override", {"value": "x"}))]
    assert all(reply.status_code == 201 for reply in made), [r.text for r in made]
    assert client.delete(f"/environment/{ENV}/{family}/{target['id']}").status_code == 204
    for level in ("helm", "terraform"):
        assert not {"SHARED", "SHARED_ALIAS"} & {r["key"] for r in listed(client, owner(level), family)}
