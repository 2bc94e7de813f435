"""Sub-resources of services over HTTP: deployment history, application logs, database backups,
job commits, Helm custom domains, and one long client flow against a live server."""

import uuid
from datetime import datetime

import httpx
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, CLUSTER, DATABASE, ENV, HELM, JOB, ORG, REGISTRY

LOG_FIELDS = {"id", "created_at", "message", "pod_name", "version"}
COMMIT_FIELDS = {"created_at", "git_commit_id", "tag", "message", "author_name", "author_avatar_url",
                 "commit_page_url"}
GIT = {"url": "https://git.example.com/acme/api.git", "branch": "main"}


def advance(client, seconds):
    assert client.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def create(client, kind, body):
    reply = client.post(f"/environment/{ENV}/{kind}", json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


# ---------------------------------------------------------------- deployment history
def test_application_history_lists_its_fixture_deployment(client):
    reply = client.get(f"/application/{APP}/deploymentHistory")
    assert reply.status_code == 200
    history = reply.json()["results"]
    assert len(history) == 1
    item = history[0]
    status = client.get(f"/application/{APP}/status").json()
    assert item["identifier"]["service_id"] == APP
    assert item["identifier"]["service_type"] == "APPLICATION"
    assert item["identifier"]["deployment_request_id"] == status["deployment_request_id"]
    assert item["status"] == "DEPLOYED"
    assert item["trigger_action"] == "DEPLOY"
    assert item["status_details"]["status"] == "SUCCESS"


def test_application_history_names_the_deployed_commit(client):
    item = client.get(f"/application/{APP}/deploymentHistory").json()["results"][0]
    application = client.get(f"/application/{APP}").json()
    assert item["details"]["commit"]["git_commit_id"] == application["git_repository"]["deployed_commit_id"]


def test_history_of_a_new_service_is_empty(client):
    app = create(client, "application", {"name": "api", "git_repository": GIT})
    reply = client.get(f"/application/{app['id']}/deploymentHistory")
    assert reply.status_code == 200
    assert reply.json()["results"] == []


def deploy_helm_times(client, count):
    for _ in range(count):
        assert client.post(f"/helm/{HELM}/deploy").status_code == 202
        advance(client, 60)


def test_helm_history_v2_defaults_to_page_1_of_20(client):
    reply = client.get(f"/helm/{HELM}/deploymentHistoryV2")
    assert reply.status_code == 200
    page = reply.json()
    assert (page["page"], page["page_size"]) == (1, 20)
    assert [item["identifier"]["service_id"] for item in page["results"]] == [HELM]
    assert page["results"][0]["status"] == "DEPLOYED"


def test_helm_history_v2_is_newest_first(client):
    deploy_helm_times(client, 3)
    results = client.get(f"/helm/{HELM}/deploymentHistoryV2").json()["results"]
    assert len(results) == 4
    created = [when(item["auditing_data"]["created_at"]) for item in results]
    assert created == sorted(created, reverse=True)
    assert all(item["status"] == "DEPLOYED" for item in results)


def test_helm_history_v2_pages_with_page_size_and_page(client):
    deploy_helm_times(client, 3)
    everything = client.get(f"/helm/{HELM}/deploymentHistoryV2").json()["results"]
    first = client.get(f"/helm/{HELM}/deploymentHistoryV2", params={"pageSize": 3}).json()
    second = client.get(f"/helm/{HELM}/deploymentHistoryV2", params={"pageSize": 3, "page": 2}).json()
    beyond = client.get(f"/helm/{HELM}/deploymentHistoryV2", params={"pageSize": 3, "page": 3}).json()
    assert (first["page"], first["page_size"], first["results"]) == (1, 3, everything[:3])
    assert (second["page"], second["page_size"], second["results"]) == (2, 3, everything[3:])
    assert beyond["results"] == []


def test_helm_history_v2_refuses_a_page_size_of_zero(client):
    reply = client.get(f"/helm/{HELM}/deploymentHistoryV2", params={"pageSize": 0})
    assert reply.status_code == 400
    assert "pageSize" in reply.json()["message"]


# ---------------------------------------------------------------- logs
def test_log_tail_returns_exactly_that_many_lines_of_the_documented_shape(client):
    reply = client.get(f"/application/{APP}/log", params={"tail": 5})
    assert reply.status_code == 200
    lines = reply.json()["results"]
    assert len(lines) == 5
    for line in lines:
        assert set(line) == LOG_FIELDS
        uuid.UUID(line["id"])


def test_log_lines_are_newest_last(client):
    lines = client.get(f"/application/{APP}/log").json()["results"]
    stamps = [when(line["created_at"]) for line in lines]
    assert len(stamps) > 5
    assert stamps == sorted(stamps)


def test_log_tail_is_the_end_of_the_full_log(client):
    everything = client.get(f"/application/{APP}/log", params={"tail": 10000}).json()["results"]
    tail = client.get(f"/application/{APP}/log", params={"tail": 5}).json()["results"]
    assert tail == everything[-5:]


def test_log_without_tail_returns_at_most_1000_lines(client):
    default = client.get(f"/application/{APP}/log").json()["results"]
    everything = client.get(f"/application/{APP}/log", params={"tail": 10000}).json()["results"]
    assert 0 < len(default) <= 1000
    assert default == everything[-1000:]


def test_log_tail_must_be_positive(client):
    reply = client.get(f"/application/{APP}/log", params={"tail": 0})
    assert reply.status_code == 400
    assert "tail" in reply.json()["message"]


def test_log_of_a_never_deployed_application_is_empty(client):
    app = create(client, "application", {"name": "api", "git_repository": GIT})
    reply = client.get(f"/application/{app['id']}/log")
    assert reply.status_code == 200
    assert reply.json()["results"] == []


def test_log_of_a_new_deployment_carries_its_commit_as_version(client):
    reply = client.post(f"/application/{APP}/deploy", json={"git_commit_id": "0badc0ffee0123456789"})
    assert reply.status_code == 202
    advance(client, 300)
    last = client.get(f"/application/{APP}/log", params={"tail": 1}).json()["results"][0]
    assert last["version"] == "0badc0ffee01"


# ---------------------------------------------------------------- database backups
def backups(client, **params):
    reply = client.get(f"/database/{DATABASE}/backup", params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_backups_are_a_page_of_the_12_fixture_backups_newest_first(client):
    page = backups(client)
    assert (page["page"], page["page_size"]) == (1, 20)
    results = page["results"]
    assert len(results) == 12
    created = [when(item["created_at"]) for item in results]
    assert created == sorted(created, reverse=True)
    assert len(set(created)) == 12
    for item in results:
        assert {"id", "created_at", "name", "status"} <= set(item)
        assert item["status"]["id"] == DATABASE


def test_backups_page_size_and_page_select_a_slice(client):
    everything = backups(client)["results"]
    page = backups(client, page_size=5, page=2)
    assert (page["page"], page["page_size"]) == (2, 5)
    assert page["results"] == everything[5:10]
    assert backups(client, page_size=5, page=3)["results"] == everything[10:]


def test_backups_after_a_start_id_are_the_older_ones(client):
    everything = backups(client)["results"]
    after = backups(client, startId=everything[3]["id"])["results"]
    assert after == everything[4:]


def test_backups_after_an_unknown_start_id_are_empty(client):
    assert backups(client, startId=str(uuid.uuid4()))["results"] == []


def test_a_new_database_has_no_backups(client):
    database = create(client, "database", {"name": "users-db", "type": "REDIS", "version": "7", "mode": "CONTAINER"})
    reply = client.get(f"/database/{database['id']}/backup")
    assert reply.status_code == 200
    assert reply.json()["results"] == []


def test_backups_of_an_unknown_database_are_404(client):
    assert client.get(f"/database/{uuid.uuid4()}/backup").status_code == 404


# ---------------------------------------------------------------- job commits
def commits(client, **params):
    reply = client.get(f"/job/{JOB}/commit", params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def test_job_commits_are_the_last_100_newest_first(client):
    results = commits(client)
    assert len(results) == 100
    created = [when(item["created_at"]) for item in results]
    assert created == sorted(created, reverse=True)
    assert len({item["git_commit_id"] for item in results}) == 100


def test_job_commits_have_the_commit_shape(client):
    for item in commits(client):
        assert set(item) == COMMIT_FIELDS
        assert len(item["git_commit_id"]) == 40
        int(item["git_commit_id"], 16)
        assert item["author_name"] and item["message"]
        assert item["commit_page_url"].endswith(f"/commit/{item['git_commit_id']}")


def test_job_commit_page_url_is_the_repository_page_of_the_commit(client):
    item = commits(client)[0]
    assert item["commit_page_url"] == f"https://codehost1.example/acme/reports/commit/{item['git_commit_id']}"


def test_job_commits_filtered_by_git_commit_id_are_just_that_one(client):
    wanted = commits(client)[42]
    assert commits(client, gitCommitId=wanted["git_commit_id"]) == [wanted]


def test_job_commits_filtered_by_an_unknown_commit_are_empty(client):
    assert commits(client, gitCommitId="0" * 40) == []


def test_job_commits_after_a_start_id_are_the_older_ones(client):
    everything = commits(client)
    assert commits(client, startId=everything[9]["git_commit_id"]) == everything[10:]


def test_job_from_an_image_has_no_commits(client):
    job = create(client, "job", {"name": "image-job", "schedule": {"on_start": {}},
                                 "source": {"image": {"registry_id": REGISTRY, "image_name": "acme/cleanup",
                                                      "tag": "1.0"}}})
    reply = client.get(f"/job/{job['id']}/commit")
    assert reply.status_code == 200
    assert reply.json()["results"] == []


def commits_of_server(server):
    with TestClient(server, base_url="http://mock", headers=ADMIN) as fresh:
        reply = fresh.get(f"/job/{JOB}/commit")
        assert reply.status_code == 200
        return [(c["git_commit_id"], c["message"], c["author_name"]) for c in reply.json()["results"]]


def test_same_seed_gives_the_same_commits_on_two_servers(make_server):
    assert commits_of_server(make_server()) == commits_of_server(make_server())


def test_another_seed_gives_other_commits(make_server):
    first, second = commits_of_server(make_server()), commits_of_server(make_server(seed=2))
    assert len(second) == 100
    assert not {c[0] for c in first} & {c[0] for c in second}


# ---------------------------------------------------------------- Helm custom domains
DOMAINS = f"/helm/{HELM}/customDomain"


def test_helm_lists_its_two_fixture_domains(client):
    reply = client.get(DOMAINS)
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert {item["domain"] for item in results} == {"shop.acme.example", "www.acme.example"}
    assert all(item["status"] == "VALIDATION_PENDING" for item in results)


def test_create_custom_domain_is_pending_validation(client):
    reply = client.post(DOMAINS, json={"domain": "api.acme.example", "use_cdn": True})
    assert reply.status_code == 201, reply.text
    domain = reply.json()
    assert domain["domain"] == "api.acme.example"
    assert domain["status"] == "VALIDATION_PENDING"
    assert domain["validation_domain"]
    assert domain["use_cdn"] is True
    assert domain["id"] in {item["id"] for item in client.get(DOMAINS).json()["results"]}


def test_created_custom_domain_reads_back(client):
    domain = client.post(DOMAINS, json={"domain": "api.acme.example"}).json()
    reply = client.get(f"{DOMAINS}/{domain['id']}")
    assert reply.status_code == 200
    assert reply.json() == domain


@pytest.mark.parametrize("domain", ["shop.acme.example", "SHOP.Acme.Example"])
def test_duplicate_custom_domain_is_a_conflict(client, domain):
    reply = client.post(DOMAINS, json={"domain": domain})
    assert reply.status_code == 409
    assert len(client.get(DOMAINS).json()["results"]) == 2


def test_deleted_custom_domain_is_gone(client):
    domain = client.post(DOMAINS, json={"domain": "api.acme.example"}).json()
    reply = client.delete(f"{DOMAINS}/{domain['id']}")
    assert reply.status_code == 204
    assert client.get(f"{DOMAINS}/{domain['id']}").status_code == 404
    assert client.delete(f"{DOMAINS}/{domain['id']}").status_code == 404
    assert len(client.get(DOMAINS).json()["results"]) == 2


@pytest.mark.parametrize("domain", ["not a domain", "no-dot", "-bad.example.com", "shop.acme.example."])
def test_custom_domain_with_bad_syntax_is_400(client, domain):
    reply = client.post(DOMAINS, json={"domain": domain})
    assert reply.status_code == 400
    assert "body.domain" in reply.json()["message"]


def test_custom_domains_of_a_non_helm_service_are_404(client):
    assert client.get(f"/helm/{APP}/customDomain").status_code == 404
    assert client.post(f"/helm/{APP}/customDomain", json={"domain": "x.acme.example"}).status_code == 404


# ---------------------------------------------------------------- a whole client flow on a live server
SECRET_VALUES = ("s3cr3t-app-token-7781", "s3cr3t-db-password-4410", "s3cr3t-override-9902",
                 "s3cr3t-registry-pw-3321", "s3cr3t-webhook-5544")


class Recorder:
    """An httpx client that keeps the raw text of every reply."""

    def __init__(self, url):
        self.http = httpx.Client(base_url=url, headers=ADMIN, timeout=10)
        self.texts = []

    def call(self, method, path, expected, **kwargs):
        reply = self.http.request(method, path, **kwargs)
        self.texts.append(reply.text)
        assert reply.status_code == expected, f"{method} {path}: {reply.status_code} {reply.text}"
        return reply.json() if reply.content else None

    def created_and_read(self, path, body, read_path):
        created = self.call("POST", path, 201, json=body)
        read = self.call("GET", read_path.format(**created), 200)
        assert read == created
        return created


@pytest.mark.server
def test_a_client_builds_a_whole_stack_on_a_live_server(live_server):
    server = live_server("--clock", "manual")
    api = Recorder(server.url)
    token, db_password, override, registry_password, webhook_secret = SECRET_VALUES

    project = api.created_and_read(f"/organization/{ORG}/project", {"name": "flow", "description": "E2E"},
                                   "/project/{id}")
    env = api.created_and_read(f"/project/{project['id']}/environment",
                               {"name": "flow-dev", "mode": "DEVELOPMENT", "cluster_id": CLUSTER},
                               "/environment/{id}")
    assert env["project"]["id"] == project["id"]
    shared = api.created_and_read(f"/project/{project['id']}/environmentVariable",
                                  {"key": "SHARED", "value": "from-project"},
                                  f"/project/{project['id']}/environmentVariable/{{id}}")
    project_secret = api.created_and_read(f"/project/{project['id']}/secret",
                                          {"key": "DB_PASSWORD", "value": db_password},
                                          f"/project/{project['id']}/secret/{{id}}")

    app = api.created_and_read(f"/environment/{env['id']}/application",
                               {"name": "api", "git_repository": GIT,
                                "ports": [{"internal_port": 8080, "publicly_accessible": True}]},
                               "/application/{id}")
    assert app["environment"]["id"] == env["id"]
    app_var = api.created_and_read(f"/application/{app['id']}/environmentVariable",
                                   {"key": "MODE", "value": "live"},
                                   f"/application/{app['id']}/environmentVariable/{{id}}")
    assert app_var["scope"] == "APPLICATION"
    app_secret = api.created_and_read(f"/application/{app['id']}/secret", {"key": "API_TOKEN", "value": token},
                                      f"/application/{app['id']}/secret/{{id}}")
    assert app_secret["scope"] == "APPLICATION"
    overridden = api.call("POST", f"/variable/{shared['id']}/override", 201,
                          json={"value": "from-app", "override_scope": "APPLICATION", "override_parent_id": app["id"]})
    assert overridden["overridden_variable"]["id"] == shared["id"]
    alias = api.call("POST", f"/variable/{shared['id']}/alias", 201,
                     json={"key": "SHARED_ALIAS", "alias_scope": "APPLICATION", "alias_parent_id": app["id"]})
    assert alias["aliased_variable"]["key"] == "SHARED"
    secret_override = api.call("POST", f"/secret/{project_secret['id']}/override", 201,
                               json={"value": override, "override_scope": "APPLICATION",
                                     "override_parent_id": app["id"]})
    assert secret_override["overridden_secret"]["id"] == project_secret["id"]

    seen = {item["key"]: item for item in
            api.call("GET", f"/application/{app['id']}/environmentVariable", 200)["results"]}
    assert seen["SHARED"]["value"] == "from-app" and seen["SHARED"]["variable_type"] == "OVERRIDE"
    assert seen["SHARED_ALIAS"]["value"] == "from-project"
    assert seen["MODE"]["scope"] == "APPLICATION"
    assert any(item["scope"] == "BUILT_IN" for item in seen.values())
    app_secrets = api.call("GET", f"/application/{app['id']}/secret", 200)["results"]
    assert {"API_TOKEN", "DB_PASSWORD"} <= {item["key"] for item in app_secrets}

    database = api.created_and_read(f"/environment/{env['id']}/database",
                                    {"name": "flow-db", "type": "POSTGRESQL", "version": "17", "mode": "MANAGED"},
                                    "/database/{id}")
    env_secrets = api.call("GET", f"/environment/{env['id']}/secret", 200)["results"]
    assert any(item.get("service_id") == database["id"] for item in env_secrets)

    registry = api.created_and_read(f"/organization/{ORG}/containerRegistry",
                                    {"name": "flow-registry", "kind": "GENERIC_CR",
                                     "url": "https://registry.flow.example",
                                     "config": {"username": "bot", "password": registry_password}},
                                    f"/organization/{ORG}/containerRegistry/{{id}}")
    assert registry["config"]["username"] == "bot"
    assert "password" not in registry["config"]

    webhook = api.created_and_read(f"/organization/{ORG}/webhook",
                                   {"target_url": "https://hooks.flow.example/deployments",
                                    "events": ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"], "enabled": True,
                                    "target_secret": webhook_secret},
                                   f"/organization/{ORG}/webhook/{{id}}")
    assert webhook["target_secret_set"] is True

    # the lists a client reads afterwards
    api.call("GET", f"/environment/{env['id']}/application", 200)
    api.call("GET", f"/project/{project['id']}/secret", 200)
    api.call("GET", f"/organization/{ORG}/containerRegistry", 200)
    api.call("GET", f"/organization/{ORG}/webhook", 200)
    journal = httpx.get(f"{server.url}/_mock/calls", timeout=10)
    assert journal.status_code == 200
    assert journal.json()["total"] >= len(api.texts)

    for secret in SECRET_VALUES:
        leaks = [text[:200] for text in api.texts if secret in text]
        assert leaks == [], f"secret {secret} came back in {leaks}"
        assert secret not in journal.text, f"secret {secret} is readable in the call journal"
