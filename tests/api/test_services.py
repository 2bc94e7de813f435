"""The six service kinds over HTTP: create, read, list, edit, delete, names, ownership, status,
built-in variables and the per-kind validation rules."""

import uuid

import pytest
from support.ids import APP, CLUSTER, CONTAINER, DATABASE, ENV, HELM, JOB, ORG, OTHER_ORG, PROJECT, REGISTRY, TERRAFORM

GIT = {"url": "https://git.example.com/acme/api.git", "branch": "main"}
PAYLOADS = {
    "application": {"name": "api", "git_repository": GIT},
    "container": {"name": "cache", "registry_id": REGISTRY, "image_name": "library/redis", "tag": "7",
                  "entrypoint": "/usr/local/bin/redis-server"},
    "database": {"name": "users-db", "type": "POSTGRESQL", "version": "16", "mode": "CONTAINER"},
    "job": {"name": "cleanup", "source": {"docker": {"git_repository": GIT}}, "schedule": {"on_start": {}}},
    "helm": {"name": "monitoring", "source": {"helm_repository": {
        "repository_id": "5d7f9b1d-3f5a-4c7e-9b1d-3f5a7c9e1b3d", "chart_name": "prometheus",
        "chart_version": "25.1.0"}}},
    "terraform": {"name": "network", "git_repository": GIT},
}
# one editable field per kind and the value an edit gives it
EDITS = {
    "application": ("cpu", 1000),
    "container": ("tag", "8"),
    "database": ("storage", 30),
    "job": ("max_duration_seconds", 600),
    "helm": ("timeout_sec", 900),
    "terraform": ("engine", "OPEN_TOFU"),
}
FIXTURES = {"application": APP, "container": CONTAINER, "database": DATABASE, "job": JOB, "helm": HELM,
            "terraform": TERRAFORM}
FIXTURE_NAMES = {"application": "web", "container": "worker", "database": "orders-db", "job": "nightly-report",
                 "helm": "ingress", "terraform": "infra"}
KINDS = list(PAYLOADS)
MIGRATE_JOB = "1d3f5a7c-9e1b-4d3f-8a5c-7e9b1d3f5a7c"       # the fixtures' second job (from an image, on start)
REGISTRY_PATH = f"/organization/{ORG}/containerRegistry/{REGISTRY}"


def create(client, kind, env=ENV, **fields):
    reply = client.post(f"/environment/{env}/{kind}", json={**PAYLOADS[kind], **fields})
    assert reply.status_code == 201, reply.text
    return reply.json()


def advance(client, seconds):
    assert client.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


def edit_body(kind, record):
    field, value = EDITS[kind]
    if kind == "database":                     # a database edit takes only the editable fields
        return {"name": record["name"], field: value}
    return {**PAYLOADS[kind], field: value}


def fresh_environment(client, name="sandbox"):
    reply = client.post(f"/project/{PROJECT}/environment",
                        json={"name": name, "mode": "DEVELOPMENT", "cluster_id": CLUSTER})
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


def other_org_headers(client):
    reply = client.post("/_mock/tokens", json={"organization": OTHER_ORG})
    assert reply.status_code == 201, reply.text
    return {"Authorization": f"Token {reply.json()['token']}"}


# ---------------------------------------------------------------- create, read, list
@pytest.mark.parametrize("kind", KINDS)
def test_create_returns_201_with_id_timestamps_and_environment(client, kind):
    reply = client.post(f"/environment/{ENV}/{kind}", json=PAYLOADS[kind])
    assert reply.status_code == 201, reply.text
    record = reply.json()
    uuid.UUID(record["id"])
    assert record["created_at"]
    assert record["environment"]["id"] == ENV
    assert record["name"] == PAYLOADS[kind]["name"]


@pytest.mark.parametrize("kind", KINDS)
def test_created_service_reads_back_identically(client, kind):
    record = create(client, kind)
    reply = client.get(f"/{kind}/{record['id']}")
    assert reply.status_code == 200
    assert reply.json() == record


@pytest.mark.parametrize("kind", KINDS)
def test_environment_list_of_a_kind_holds_only_that_kind(client, kind):
    # a fresh environment holding one service of every kind
    env = fresh_environment(client)
    created = {other: create(client, other, env=env)["id"] for other in KINDS}
    reply = client.get(f"/environment/{env}/{kind}")
    assert reply.status_code == 200
    assert [item["id"] for item in reply.json()["results"]] == [created[kind]]


@pytest.mark.parametrize("kind", ["application", "database", "job", "helm", "terraform"])
def test_environment_list_shows_the_fixture_service_next_to_a_new_one(client, kind):
    record = create(client, kind)
    listed = {item["id"] for item in client.get(f"/environment/{ENV}/{kind}").json()["results"]}
    assert listed == {record["id"], FIXTURES[kind]} | ({MIGRATE_JOB} if kind == "job" else set())


@pytest.mark.parametrize("kind", KINDS)
def test_list_of_a_fresh_environment_is_empty(client, kind):
    env = fresh_environment(client)
    reply = client.get(f"/environment/{env}/{kind}")
    assert reply.status_code == 200
    assert reply.json()["results"] == []


# ---------------------------------------------------------------- edit, delete
@pytest.mark.parametrize("kind", KINDS)
def test_edit_changes_the_field_and_updated_at(client, kind):
    record = create(client, kind)
    advance(client, 60)
    field, value = EDITS[kind]
    assert record[field] != value
    reply = client.put(f"/{kind}/{record['id']}", json=edit_body(kind, record))
    assert reply.status_code == 200, reply.text
    edited = reply.json()
    assert edited[field] == value
    assert edited["updated_at"] > record["updated_at"]
    assert edited["created_at"] == record["created_at"]
    assert client.get(f"/{kind}/{record['id']}").json() == edited


@pytest.mark.parametrize("kind", KINDS)
def test_edit_to_the_name_of_another_service_is_a_conflict(client, kind):
    record = create(client, kind)
    other = FIXTURE_NAMES["helm" if kind != "helm" else "job"]
    body = {**edit_body(kind, record), "name": other}
    assert client.put(f"/{kind}/{record['id']}", json=body).status_code == 409
    assert client.get(f"/{kind}/{record['id']}").json()["name"] == record["name"]


@pytest.mark.parametrize("kind", KINDS)
def test_delete_answers_204_then_the_service_and_its_status_are_gone(client, kind):
    env = fresh_environment(client)
    record = create(client, kind, env=env)
    reply = client.delete(f"/{kind}/{record['id']}")
    assert reply.status_code == 204
    assert reply.content == b""
    assert client.get(f"/{kind}/{record['id']}").status_code == 404
    assert client.get(f"/{kind}/{record['id']}/status").status_code == 404
    assert client.get(f"/environment/{env}/{kind}").json()["results"] == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_service_is_not_readable_under_another_kind(client, kind):
    other = "helm" if kind != "helm" else "job"
    assert client.get(f"/{other}/{FIXTURES[kind]}").status_code == 404


# ---------------------------------------------------------------- names
@pytest.mark.parametrize("kind", KINDS)
def test_duplicate_name_in_the_same_environment_is_a_conflict(client, kind):
    create(client, kind)
    reply = client.post(f"/environment/{ENV}/{kind}", json=PAYLOADS[kind])
    assert reply.status_code == 409
    assert reply.json()["status"] == 409
    assert PAYLOADS[kind]["name"] in reply.json()["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_name_of_a_service_of_another_kind_is_taken_too(client, kind):
    taken = FIXTURE_NAMES["application" if kind != "application" else "database"]
    reply = client.post(f"/environment/{ENV}/{kind}", json={**PAYLOADS[kind], "name": taken})
    assert reply.status_code == 409


@pytest.mark.parametrize("kind", KINDS)
def test_same_name_is_free_in_another_environment(client, kind):
    env = fresh_environment(client)
    record = create(client, kind, env=env, name=FIXTURE_NAMES[kind])
    assert record["environment"]["id"] == env


# ---------------------------------------------------------------- ownership
@pytest.mark.parametrize("kind", KINDS)
def test_create_in_an_unknown_environment_is_404(client, kind):
    reply = client.post(f"/environment/{uuid.uuid4()}/{kind}", json=PAYLOADS[kind])
    assert reply.status_code == 404
    assert reply.json()["status"] == 404


@pytest.mark.parametrize("kind", KINDS)
def test_create_in_another_organizations_environment_is_404(client, kind):
    env = fresh_environment(client)
    reply = client.post(f"/environment/{env}/{kind}", json=PAYLOADS[kind], headers=other_org_headers(client))
    assert reply.status_code == 404
    assert client.get(f"/environment/{env}/{kind}").json()["results"] == []


@pytest.mark.parametrize("kind", KINDS)
def test_another_organization_cannot_see_the_service(client, kind):
    record = create(client, kind)
    headers = other_org_headers(client)
    assert client.get(f"/{kind}/{record['id']}", headers=headers).status_code == 404
    assert client.get(f"/{kind}/{record['id']}/status", headers=headers).status_code == 404
    assert client.delete(f"/{kind}/{record['id']}", headers=headers).status_code == 404
    assert client.get(f"/{kind}/{record['id']}").status_code == 200


# ---------------------------------------------------------------- status
@pytest.mark.parametrize("kind", KINDS)
def test_a_new_service_is_ready_and_never_deployed(client, kind):
    record = create(client, kind)
    reply = client.get(f"/{kind}/{record['id']}/status")
    assert reply.status_code == 200
    status = reply.json()
    assert status["id"] == record["id"]
    assert status["state"] == "READY"
    assert status["service_deployment_status"] == "NEVER_DEPLOYED"
    # never deployed: no date, request or execution to show; left out, never null
    assert not {"last_deployment_date", "deployment_request_id", "execution_id"} & set(status)


@pytest.mark.parametrize("kind", ["application", "container", "database", "helm"])
def test_deployed_fixture_services_are_deployed_and_up_to_date(client, kind):
    status = client.get(f"/{kind}/{FIXTURES[kind]}/status").json()
    assert status["id"] == FIXTURES[kind]
    assert status["state"] == "DEPLOYED"
    assert status["service_deployment_status"] == "UP_TO_DATE"
    assert status["last_deployment_date"] is not None


@pytest.mark.parametrize("kind", ["job", "terraform"])
def test_undeployed_fixture_services_are_never_deployed(client, kind):
    status = client.get(f"/{kind}/{FIXTURES[kind]}/status").json()
    assert (status["state"], status["service_deployment_status"]) == ("READY", "NEVER_DEPLOYED")


# ---------------------------------------------------------------- built-in variables
def test_new_application_sees_its_built_ins_and_inherited_variables(client):
    app = create(client, "application")
    reply = client.get(f"/application/{app['id']}/environmentVariable")
    assert reply.status_code == 200
    variables = reply.json()["results"]
    scopes = {item["key"]: item["scope"] for item in variables}
    assert scopes["LOG_LEVEL"] == "PROJECT"
    assert scopes["FEATURE_FLAGS"] == "ENVIRONMENT"
    own_built_ins = [item for item in variables if item["scope"] == "BUILT_IN" and item["key"].startswith(
        f"PLATFORM_APPLICATION_{app['id'][:8].upper()}")]
    assert own_built_ins
    assert all(item["variable_type"] == "BUILT_IN" for item in own_built_ins)


def test_service_variable_list_does_not_show_another_services_own_variables(client):
    app = create(client, "application")
    keys = {item["key"] for item in client.get(f"/application/{app['id']}/environmentVariable").json()["results"]}
    assert "PORT" not in keys                     # the fixture app's own variable
    assert "PORT" in {item["key"] for item in client.get(f"/application/{APP}/environmentVariable").json()["results"]}


def test_application_built_ins_cannot_be_deleted(client):
    app = create(client, "application")
    variables = client.get(f"/application/{app['id']}/environmentVariable").json()["results"]
    built_in = next(item for item in variables if item["scope"] == "BUILT_IN" and item["service_id"] == app["id"])
    reply = client.delete(f"/application/{app['id']}/environmentVariable/{built_in['id']}")
    assert reply.status_code == 409
    assert "managed by the platform" in reply.json()["message"]


def database_built_ins(client, database_id):
    variables = client.get(f"/environment/{ENV}/environmentVariable").json()["results"]
    secrets = client.get(f"/environment/{ENV}/secret").json()["results"]
    return ([item for item in variables if item.get("service_id") == database_id],
            [item for item in secrets if item.get("service_id") == database_id])


def test_database_adds_built_in_variables_to_its_environment(client):
    database = create(client, "database")
    variables, _ = database_built_ins(client, database["id"])
    assert variables
    for item in variables:
        assert (item["scope"], item["variable_type"]) == ("BUILT_IN", "BUILT_IN")
        assert (item["service_type"], item["service_name"]) == ("DATABASE", "users-db")
    values = {item["value"] for item in variables}
    assert database["host"] in values
    assert str(database["port"]) in values


def test_database_adds_a_built_in_password_secret_without_value(client):
    database = create(client, "database")
    _, secrets = database_built_ins(client, database["id"])
    assert len(secrets) == 1
    secret = secrets[0]
    assert secret["key"].endswith("_PASSWORD")
    assert (secret["scope"], secret["variable_type"]) == ("BUILT_IN", "BUILT_IN")
    assert "value" not in secret
    single = client.get(f"/environment/{ENV}/secret/{secret['id']}")
    assert single.status_code == 200
    assert "value" not in single.json()


def test_database_password_secret_is_inherited_by_services_without_value(client):
    database = create(client, "database")
    secrets = client.get(f"/application/{APP}/secret").json()["results"]
    inherited = [item for item in secrets if item.get("service_id") == database["id"]]
    assert len(inherited) == 1
    assert all("value" not in item for item in secrets)


def test_deleting_a_database_removes_its_built_ins(client):
    database = create(client, "database")
    assert client.delete(f"/database/{database['id']}").status_code == 204
    assert database_built_ins(client, database["id"]) == ([], [])


# ---------------------------------------------------------------- database rules
def test_database_version_must_belong_to_its_type(client):
    reply = client.post(f"/environment/{ENV}/database", json={**PAYLOADS["database"], "version": "7.0"})
    assert reply.status_code == 400
    message = reply.json()["message"]
    assert "version" in message
    assert "7.0" in message


def test_database_version_of_another_type_is_refused(client):
    reply = client.post(f"/environment/{ENV}/database",
                        json={**PAYLOADS["database"], "type": "MYSQL", "version": "16"})
    assert reply.status_code == 400
    message = reply.json()["message"]
    assert "body.version" in message
    assert "16" in message


@pytest.mark.parametrize("db_type, version", [("POSTGRESQL", "17"), ("MYSQL", "8.4"), ("MONGODB", "7.0"),
                                              ("REDIS", "7")])
def test_each_database_type_accepts_its_versions(client, db_type, version):
    database = create(client, "database", name=f"db-{db_type.lower()}", type=db_type, version=version)
    assert (database["type"], database["version"]) == (db_type, version)


@pytest.mark.parametrize("field, value", [("type", "ORACLE"), ("mode", "SERVERLESS"), ("accessibility", "OPEN")])
def test_database_enums_are_enforced(client, field, value):
    reply = client.post(f"/environment/{ENV}/database", json={**PAYLOADS["database"], field: value})
    assert reply.status_code == 400
    assert f"body.{field}" in reply.json()["message"]
    assert value in reply.json()["message"]


def test_unknown_database_type_message_lists_the_allowed_types(client):
    reply = client.post(f"/environment/{ENV}/database", json={**PAYLOADS["database"], "type": "ORACLE"})
    message = reply.json()["message"]
    assert all(name in message for name in ("POSTGRESQL", "MYSQL", "MONGODB", "REDIS"))


def test_database_defaults_to_private_with_the_port_of_its_type(client):
    database = create(client, "database", type="MYSQL", version="8.0")
    assert database["accessibility"] == "PRIVATE"
    assert database["port"] == 3306


# ---------------------------------------------------------------- container and job rules
def test_container_without_entrypoint_leaves_it_out(client):
    body = {k: v for k, v in PAYLOADS["container"].items() if k != "entrypoint"}
    reply = client.post(f"/environment/{ENV}/container", json=body)
    assert reply.status_code == 201
    assert "entrypoint" not in reply.json()


def test_fixture_container_reads_back(client):
    record = client.get(f"/container/{CONTAINER}").json()
    assert record["image_name"] == "acme/worker"
    assert "entrypoint" not in record
    assert record["registry"] == {"id": REGISTRY, "name": "acme-hub", "kind": "PUBLICHUB_CR",
                                  "url": "https://registry.publichub.example"}


def test_container_with_unknown_registry_is_404(client):
    env = fresh_environment(client)
    missing = str(uuid.uuid4())
    reply = client.post(f"/environment/{env}/container", json={**PAYLOADS["container"], "registry_id": missing})
    assert reply.status_code == 404
    assert missing in reply.json()["message"]
    assert client.get(f"/environment/{env}/container").json()["results"] == []


def test_container_needs_an_image_name_and_tag(client):
    body = {k: v for k, v in PAYLOADS["container"].items() if k != "tag"}
    reply = client.post(f"/environment/{ENV}/container", json=body)
    assert reply.status_code == 400
    assert "tag" in reply.json()["message"]


def registry_count(client):
    return client.get(REGISTRY_PATH).json()["associated_services_count"]


def test_creating_a_container_raises_its_registry_service_count(client):
    before = registry_count(client)
    create(client, "container")
    assert registry_count(client) == before + 1


def test_deleting_a_container_lowers_its_registry_service_count(client):
    container = create(client, "container")
    before = registry_count(client)
    assert client.delete(f"/container/{container['id']}").status_code == 204
    assert registry_count(client) == before - 1


def test_job_from_an_image_counts_on_its_registry(client):
    before = registry_count(client)
    reply = client.post(f"/environment/{ENV}/job", json={
        "name": "image-job", "source": {"image": {"registry_id": REGISTRY, "image_name": "acme/cleanup", "tag": "1.0"}},
        "schedule": {"cronjob": {"scheduled_at": "0 * * * *"}}})
    assert reply.status_code == 201, reply.text
    assert reply.json()["source"]["image"]["registry_id"] == REGISTRY
    assert registry_count(client) == before + 1


def test_job_needs_a_git_repository_or_an_image(client):
    reply = client.post(f"/environment/{ENV}/job", json={"name": "nothing-to-run", "source": {},
                                                          "schedule": {"on_start": {}}})
    assert reply.status_code == 400
    assert "body.source" in reply.json()["message"]
    names = {item["name"] for item in client.get(f"/environment/{ENV}/job").json()["results"]}
    assert "nothing-to-run" not in names


def test_job_image_with_unknown_registry_is_404(client):
    reply = client.post(f"/environment/{ENV}/job", json={
        "name": "image-job",
        "source": {"image": {"registry_id": str(uuid.uuid4()), "image_name": "acme/x", "tag": "1"}},
        "schedule": {"on_start": {}}})
    assert reply.status_code == 404


def test_job_with_a_schedule_is_a_cron_job(client):
    job = create(client, "job", schedule={"cronjob": {"scheduled_at": "*/5 * * * *"}})
    assert create(client, "job", name="on-start")["job_type"] == "LIFECYCLE"
    assert job["job_type"] == "CRON"
    assert job["schedule"]["cronjob"]["scheduled_at"] == "*/5 * * * *"


@pytest.mark.parametrize("kind", ["application", "job", "terraform"])
def test_git_repository_url_must_be_https(client, kind):
    repository = {"url": "git@git.example.com:acme/api.git"}
    body = ({**PAYLOADS[kind], "source": {"docker": {"git_repository": repository}}} if kind == "job"
            else {**PAYLOADS[kind], "git_repository": repository})
    reply = client.post(f"/environment/{ENV}/{kind}", json=body)
    assert reply.status_code == 400
    assert "git_repository" in reply.json()["message"]


@pytest.mark.parametrize("kind", KINDS)
def test_create_without_a_name_is_400_naming_the_field(client, kind):
    body = {k: v for k, v in PAYLOADS[kind].items() if k != "name"}
    reply = client.post(f"/environment/{ENV}/{kind}", json=body)
    assert reply.status_code == 400
    assert "name" in reply.json()["message"]


def test_a_helm_source_that_sends_both_forms_keeps_what_the_document_allows(client):
    """The document lets a body carry both `repository` and `repository_id`, and a values file both `raw` and
    `git`: schema-valid, so never a 400; the record keeps repository_id and both files."""
    chart = {"repository": "8c0e2a4c-6e8a-4c0e-9a2c-4e6a8c0e2a4c",
             "repository_id": "2a4c6e8a-0c2e-4a4c-8e6a-0c2e4a6c8e0a",
             "chart_name": "redis", "chart_version": "19.6.1"}
    git = {"git_repository": {"url": "https://codehost1.example/acme/values.git", "branch": "main"},
           "paths": ["v.yaml"]}
    raw = {"values": [{"name": "a.yaml", "content": "x: 1"}]}
    reply = client.post(f"/environment/{ENV}/helm", json={"name": "both", "source": {"helm_repository": chart},
                                                           "values_override": {"file": {"raw": raw, "git": git}}})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert record["source"]["helm_repository"]["repository_id"] == chart["repository_id"]
    assert record["values_override"]["file"]["raw"] == raw
    assert record["values_override"]["file"]["git"]["paths"] == ["v.yaml"]
    assert client.get(f"/helm/{record['id']}").json()["values_override"] == record["values_override"]
