"""Organization-level resources over HTTP: clusters (status, lock and its owner, upgrade), container
registries (and the registry block of a container after its registry is edited), Terraform variables file
discovery, labels groups, AWS credentials and webhooks."""

import copy

import pytest
import yaml
from starlette.testclient import TestClient
from support.ids import ADMIN, CLUSTER, CONTAINER, ENV, ORG, OTHER_ORG, REGISTRY

from mockserver.document.ids import IDS
from mockserver.world.fixtures import read_fixtures

DEV_CLUSTER = "6b8d0f2a-4c6e-4a8b-9d0f-2a4c6e8b0d1f"        # Acme, Kubernetes 1.30
GLOBEX_CLUSTER = "9e1c3a5f-7b9d-4e1f-8a3c-5f7b9d1e3a5c"     # belongs to the other organization
LABELS_GROUP = "1b3d5f7a-9c1e-4a3b-8d5f-7a9c1e3b5d7f"       # fixture "cost-center"
CREDENTIALS = "3c5e7a9b-1d3f-4b5c-8e7a-9b1d3f5c7e9a"        # fixture "ci-deployer"
UNKNOWN = "00000000-0000-4000-8000-000000000000"

REGISTRIES = f"/organization/{ORG}/containerRegistry"
LABELS = f"/organization/{ORG}/labelsGroups"
AWS = f"/organization/{ORG}/aws/credentials"
WEBHOOKS = f"/organization/{ORG}/webhook"
TFVARS = f"/organization/{ORG}/listTfVarsFilesFromGitRepo"
DAY = 86400

def advance(client, seconds):
    assert client.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


def now(client):
    return client.get("/_mock/clock").json()["now"]


def cluster_status(client, cluster=CLUSTER):
    reply = client.get(f"/cluster/{cluster}/status")
    assert reply.status_code == 200, reply.text
    return reply.json()


def lock(client, cluster=CLUSTER, **body):
    reply = client.post(f"/cluster/{cluster}/lock", json={"reason": "Black Friday freeze", **body})
    assert reply.status_code == 200, reply.text
    return reply.json()


def create(client, path, body):
    reply = client.post(path, json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


def assert_bad_request(reply, *names):
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert (body["status"], body["error"]) == (400, "Bad Request")
    for name in names:
        assert name in body["message"], body["message"]


# ================================================================ clusters
def test_list_clusters_shows_the_acme_clusters_and_no_globex_cluster(client):
    reply = client.get(f"/organization/{ORG}/cluster")
    assert reply.status_code == 200
    clusters = {c["id"]: c for c in reply.json()["results"]}
    # the last two: fixtures/targets.yaml (what the upgrade and unlock examples act on)
    assert set(clusters) == {CLUSTER, DEV_CLUSTER, IDS["cluster_upgrade"], IDS["cluster_locked"]}
    assert GLOBEX_CLUSTER not in clusters
    assert (clusters[CLUSTER]["name"], clusters[CLUSTER]["version"]) == ("acme-prod-eu", "1.31")
    assert (clusters[DEV_CLUSTER]["name"], clusters[DEV_CLUSTER]["version"]) == ("acme-dev-us", "1.30")


def test_get_cluster_returns_the_record(client):
    reply = client.get(f"/cluster/{CLUSTER}")
    assert reply.status_code == 200
    cluster = reply.json()
    assert cluster["id"] == CLUSTER
    assert (cluster["name"], cluster["region"], cluster["cloud_provider"]) == ("acme-prod-eu", "eu-west-3", "CLOUDA")
    assert cluster["is_default"] is True


def test_cluster_status_is_deployed_and_offers_the_next_kubernetes_version(client):
    status = cluster_status(client)
    assert status["cluster_id"] == CLUSTER
    assert status["status"] == "DEPLOYED"
    assert status["is_deployed"] is True
    assert status["next_k8s_available_version"] == "1.32"
    assert "cluster_lock" not in status                 # no lock: left out, never null
    assert cluster_status(client, DEV_CLUSTER)["next_k8s_available_version"] == "1.31"


def test_cluster_status_without_a_lock_matches_the_document(make_server):
    server = make_server()
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        assert "cluster_lock" not in cluster_status(client)
    found = list(server.pipeline.violations)
    server.pipeline.violations.clear()
    assert found == []


def test_lock_returns_the_lock_with_owner_and_time(client):
    at = now(client)
    cluster_lock = lock(client, ttl_in_days=2)
    assert cluster_lock["reason"] == "Black Friday freeze"
    assert cluster_lock["ttl_in_days"] == 2
    assert cluster_lock["cluster_id"] == CLUSTER
    assert cluster_lock["locked_at"] == at
    assert isinstance(cluster_lock["owner_name"], str) and cluster_lock["owner_name"]


def test_status_shows_the_cluster_lock(client):
    cluster_lock = lock(client, ttl_in_days=2)
    assert cluster_status(client)["cluster_lock"] == cluster_lock


def test_lock_without_reason_is_400(client):
    assert_bad_request(client.post(f"/cluster/{CLUSTER}/lock", json={"ttl_in_days": 2}), "body.reason")
    assert "cluster_lock" not in cluster_status(client)


@pytest.mark.parametrize("ttl", [0, -1, 1.5])
def test_lock_ttl_must_be_a_positive_whole_number_of_days(client, ttl):
    reply = client.post(f"/cluster/{CLUSTER}/lock", json={"reason": "freeze", "ttl_in_days": ttl})
    assert_bad_request(reply, "body.ttl_in_days")
    assert "cluster_lock" not in cluster_status(client)


def test_lock_ttl_in_days_is_a_number_so_a_whole_one_written_5_0_is_accepted(client):
    reply = client.post(f"/cluster/{CLUSTER}/lock", json={"reason": "freeze", "ttl_in_days": 5.0})
    assert reply.status_code == 200, reply.text
    assert '"ttl_in_days":5,' in reply.text                   # returned as the whole number it is
    assert cluster_status(client)["cluster_lock"]["ttl_in_days"] == 5


def test_fractional_ttl_in_days_is_400_saying_it_is_not_a_whole_number(client):
    reply = client.post(f"/cluster/{CLUSTER}/lock", json={"reason": "freeze", "ttl_in_days": 2.5})
    assert reply.status_code == 400
    assert reply.json()["message"] == "body.ttl_in_days: 2.5 is not a whole number"


def test_lock_without_ttl_leaves_ttl_in_days_out(client):
    assert "ttl_in_days" not in lock(client)


def test_upgrade_of_a_locked_cluster_is_409(client):
    lock(client, ttl_in_days=2)
    reply = client.post(f"/cluster/{CLUSTER}/upgrade")
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"
    assert cluster_status(client)["status"] == "DEPLOYED"


def test_unlock_removes_the_lock_and_a_second_unlock_is_404(client):
    lock(client, ttl_in_days=2)
    reply = client.delete(f"/cluster/{CLUSTER}/lock")
    assert reply.status_code == 204
    assert reply.content == b""
    assert "cluster_lock" not in cluster_status(client)
    assert client.delete(f"/cluster/{CLUSTER}/lock").status_code == 404


def test_unlocked_cluster_can_be_upgraded(client):
    lock(client, ttl_in_days=2)
    client.delete(f"/cluster/{CLUSTER}/lock")
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202


def test_lock_holds_until_its_ttl_and_then_expires_by_itself(client):
    lock(client, ttl_in_days=2)
    advance(client, 2 * DAY - 1)
    assert "cluster_lock" in cluster_status(client)
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 409
    advance(client, 2)
    assert "cluster_lock" not in cluster_status(client)
    assert client.delete(f"/cluster/{CLUSTER}/lock").status_code == 404
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202


def test_expired_lock_is_gone_after_ttl_days_plus_one_second(client):
    lock(client, ttl_in_days=3)
    advance(client, 3 * DAY + 1)
    assert "cluster_lock" not in cluster_status(client)


def test_lock_without_ttl_does_not_expire(client):
    cluster_lock = lock(client)
    advance(client, 400 * DAY)
    assert cluster_status(client)["cluster_lock"] == cluster_lock


def test_upgrade_is_accepted_and_queued(client):
    reply = client.post(f"/cluster/{CLUSTER}/upgrade")
    assert reply.status_code == 202
    status = reply.json()
    assert status["cluster_id"] == CLUSTER
    assert status["status"] == "DEPLOYMENT_QUEUED"
    assert cluster_status(client)["status"] == "DEPLOYMENT_QUEUED"


def test_second_upgrade_while_one_runs_is_409(client):
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202
    reply = client.post(f"/cluster/{CLUSTER}/upgrade")
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"


def test_upgrade_ends_deployed_on_the_next_kubernetes_version(client):
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202
    advance(client, 20)
    status = cluster_status(client)
    assert status["status"] == "DEPLOYED"
    assert status["is_deployed"] is True
    assert status["next_k8s_available_version"] == "1.33"
    assert status["last_deployment_date"] is not None
    assert client.get(f"/cluster/{CLUSTER}").json()["version"] == "1.32"


def test_upgrade_of_one_cluster_leaves_the_other_alone(client):
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202
    advance(client, 20)
    assert client.get(f"/cluster/{DEV_CLUSTER}").json()["version"] == "1.30"
    assert cluster_status(client, DEV_CLUSTER)["next_k8s_available_version"] == "1.31"


def test_cluster_record_status_follows_the_running_upgrade(client):
    assert client.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202
    assert client.get(f"/cluster/{CLUSTER}").json()["status"] == cluster_status(client)["status"]


# ================================================================ container registries
REGISTRY_BODIES = {
    "CLOUDA_CR": {"url": "https://123456789012.dkr.registry.clouda.example",
                  "config": {"region": "eu-west-3", "access_key_id": "AKIAREGISTRY0001",
                             "secret_access_key": "clouda-secret-0001"}},
    "CLOUDB_CR": {"url": "https://registry.cloudb.example",
                  "config": {"region": "fr-par", "cloudb_access_key": "SCWKEY0001",
                             "cloudb_secret_key": "cloudb-secret-0001", "cloudb_project_id": "proj-1"}},
    "CLOUDC_ARTIFACT_REGISTRY": {"url": "https://europe-west1-docker.pkg.cloudc.example",
                                 "config": {"region": "europe-west1",
                                            "json_credentials": '{"private_key": "cloudc-secret-0001"}'}},
    "PUBLIC_CLOUDA_CR": {"url": "https://public.registry.clouda.example"},
    "GENERIC_CR": {"url": "https://registry.internal.example",
                   "config": {"username": "deployer", "password": "generic-secret-0001"}},
    "CODEHOST1_ENTERPRISE_CR": {"url": "https://containers.codehost1.acme.example",
                                "config": {"username": "bot", "password": "ghe-secret-0001"}},
    "CLOUDE_CR": {"url": "https://acme.registry.cloude.example",
                  "config": {"cloude_tenant_id": "tenant-1", "cloude_subscription_id": "sub-1"}},
}
SECRET_VALUES = ["clouda-secret-0001", "cloudb-secret-0001", "cloudc-secret-0001", "generic-secret-0001",
                 "ghe-secret-0001", "hub-password-not-returned", "generic-password-not-returned"]
FIXED_ADDRESSES = {
    "PUBLICHUB_CR": "https://registry.publichub.example",
    "CODEHOST1_CR": "https://registry.codehost1.example",
    "CODEHOST2_CR": "https://registry.codehost2.example",
}


def registry_body(kind, name=None, **overrides):
    """A valid create body for the kind (a fresh copy: tests may change it)."""
    return {"name": name or f"reg-{kind.lower()}", "kind": kind, **copy.deepcopy(REGISTRY_BODIES.get(kind, {})),
            **overrides}


@pytest.mark.parametrize("kind", list(REGISTRY_BODIES))
def test_create_registry_of_each_kind_is_201(client, kind):
    body = registry_body(kind, description="images")
    registry = create(client, REGISTRIES, body)
    assert (registry["name"], registry["kind"], registry["url"]) == (body["name"], kind, body["url"])
    assert registry["description"] == "images"
    assert registry["associated_services_count"] == 0
    assert client.get(f"{REGISTRIES}/{registry['id']}").json() == registry


REQUIRED_CONFIG = {"CLOUDA_CR": ["region", "access_key_id", "secret_access_key"],
                   "CLOUDB_CR": ["region", "cloudb_access_key", "cloudb_secret_key"],
                   "CLOUDC_ARTIFACT_REGISTRY": ["region", "json_credentials"]}


@pytest.mark.parametrize(("kind", "field"), [(k, f) for k, fields in REQUIRED_CONFIG.items() for f in fields])
def test_missing_required_config_field_is_400_naming_it(client, kind, field):
    body = registry_body(kind)
    body["config"] = {k: v for k, v in body["config"].items() if k != field}
    assert_bad_request(client.post(REGISTRIES, json=body), f"body.config.{field}")


@pytest.mark.parametrize("kind", ["CLOUDB_CR", "CLOUDC_ARTIFACT_REGISTRY"])
def test_missing_required_config_field_is_400(client, kind):
    body = registry_body(kind)
    body["config"].pop("region")
    assert_bad_request(client.post(REGISTRIES, json=body))
    assert body["name"] not in {r["name"] for r in client.get(REGISTRIES).json()["results"]}


def test_clouda_registry_without_config_is_400(client):
    body = registry_body("CLOUDA_CR")
    del body["config"]
    assert_bad_request(client.post(REGISTRIES, json=body), "body.config")


def test_cloudd_registry_is_400_no_longer_supported(client):
    reply = client.post(REGISTRIES, json={"name": "legacy", "kind": "CLOUDD_CR", "url": "https://d.example"})
    assert_bad_request(reply, "no longer supported")


def test_editing_a_registry_to_cloudd_is_400_no_longer_supported(client):
    registry = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    reply = client.put(f"{REGISTRIES}/{registry['id']}",
                       json={"name": "legacy", "kind": "CLOUDD_CR", "url": "https://d.example"})
    assert_bad_request(reply, "no longer supported")
    assert client.get(f"{REGISTRIES}/{registry['id']}").json()["kind"] == "GENERIC_CR"


@pytest.mark.parametrize("kind, address", list(FIXED_ADDRESSES.items()))
def test_fixed_address_kinds_default_to_their_address(client, kind, address):
    registry = create(client, REGISTRIES, {"name": f"reg-{kind.lower()}", "kind": kind})
    assert registry["url"] == address


@pytest.mark.parametrize("kind, address", list(FIXED_ADDRESSES.items()))
def test_fixed_address_kinds_accept_their_own_address(client, kind, address):
    registry = create(client, REGISTRIES, {"name": f"reg-{kind.lower()}", "kind": kind, "url": address})
    assert registry["url"] == address


@pytest.mark.parametrize("kind", list(FIXED_ADDRESSES))
def test_fixed_address_kinds_refuse_another_url(client, kind):
    reply = client.post(REGISTRIES, json={"name": "elsewhere", "kind": kind, "url": "https://mirror.acme.example"})
    assert_bad_request(reply)
    assert "elsewhere" not in {r["name"] for r in client.get(REGISTRIES).json()["results"]}


def test_fixed_address_refusal_names_the_url(client):
    reply = client.post(REGISTRIES, json={"name": "elsewhere", "kind": "PUBLICHUB_CR",
                                          "url": "https://mirror.acme.example"})
    assert_bad_request(reply, "body.url")


@pytest.mark.parametrize("kind", ["CLOUDA_CR", "GENERIC_CR", "PUBLIC_CLOUDA_CR", "CODEHOST1_ENTERPRISE_CR",
                                  "CLOUDE_CR"])
def test_other_kinds_refuse_an_http_url(client, kind):
    reply = client.post(REGISTRIES, json=registry_body(kind, url="http://registry.acme.example"))
    assert_bad_request(reply, "body.url")


def test_generic_registry_without_url_is_400_naming_the_url(client):
    assert_bad_request(client.post(REGISTRIES, json={"name": "no-url", "kind": "GENERIC_CR"}), "body.url")


def test_unknown_registry_kind_is_400_listing_the_kinds(client):
    reply = client.post(REGISTRIES, json={"name": "x", "kind": "FLOPPY_CR", "url": "https://x.example"})
    assert_bad_request(reply, "body.kind", "GENERIC_CR", "CLOUDA_CR")


def test_registry_responses_return_non_secret_config(client):
    clouda = create(client, REGISTRIES, registry_body("CLOUDA_CR"))
    generic = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    assert clouda["config"] == {"region": "eu-west-3", "access_key_id": "AKIAREGISTRY0001"}
    assert generic["config"] == {"username": "deployer"}
    fixture = client.get(f"{REGISTRIES}/{REGISTRY}").json()
    assert fixture["config"] == {"username": "acme-bot"}


def test_registry_secret_config_never_appears_in_responses_or_the_journal(client):
    replies = [client.post(REGISTRIES, json=registry_body(kind))
               for kind in ("CLOUDA_CR", "CLOUDB_CR", "CLOUDC_ARTIFACT_REGISTRY", "GENERIC_CR",
                            "CODEHOST1_ENTERPRISE_CR")]
    assert [r.status_code for r in replies] == [201] * 5
    generic = replies[3].json()["id"]
    replies.append(client.put(f"{REGISTRIES}/{generic}", json=registry_body(
        "GENERIC_CR", config={"username": "deployer2", "password": "generic-secret-0001"})))
    assert replies[-1].status_code == 200
    replies += [client.get(f"{REGISTRIES}/{r.json()['id']}") for r in replies[:5]]
    replies.append(client.get(REGISTRIES))
    replies.append(client.get("/_mock/calls"))
    assert all(r.status_code == 200 for r in replies[5:])
    for reply in replies:
        for secret in SECRET_VALUES:
            assert secret not in reply.text, f"{secret} leaked by {reply.request.method} {reply.request.url.path}"
    for registry in client.get(REGISTRIES).json()["results"]:
        assert not {"secret_access_key", "cloudb_secret_key", "json_credentials", "password"} & set(registry["config"])


def test_secret_config_value_of_the_wrong_type_is_not_echoed(client):
    body = registry_body("GENERIC_CR", config={"username": "u", "password": 987654321})
    reply = client.post(REGISTRIES, json=body)
    assert_bad_request(reply, "body.config.password")
    assert "987654321" not in reply.text
    assert "987654321" not in client.get("/_mock/calls").text


def test_list_registries_has_the_fixtures_and_created_ones(client):
    created = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    reply = client.get(REGISTRIES)
    assert reply.status_code == 200
    names = {r["name"] for r in reply.json()["results"]}
    assert {"acme-hub", "acme-private", created["name"]} <= names


def test_fixture_registry_is_used_by_the_worker_container_and_the_migrate_job(client):
    registry = client.get(f"{REGISTRIES}/{REGISTRY}").json()
    assert (registry["name"], registry["kind"]) == ("acme-hub", "PUBLICHUB_CR")
    assert registry["url"] == FIXED_ADDRESSES["PUBLICHUB_CR"]
    # the worker container, the migrate job, and the nine containers of fixtures/targets.yaml
    assert registry["associated_services_count"] == 11


def test_edit_registry_changes_it(client):
    registry = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    advance(client, 10)
    reply = client.put(f"{REGISTRIES}/{registry['id']}", json=registry_body(
        "GENERIC_CR", name="renamed", url="https://registry2.internal.example", config={"username": "ops"}))
    assert reply.status_code == 200
    edited = reply.json()
    assert (edited["name"], edited["url"], edited["config"]) == ("renamed", "https://registry2.internal.example",
                                                                 {"username": "ops"})
    assert edited["updated_at"] > registry["updated_at"]
    assert client.get(f"{REGISTRIES}/{registry['id']}").json() == edited


def test_delete_registry_then_it_is_gone(client):
    registry = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    reply = client.delete(f"{REGISTRIES}/{registry['id']}")
    assert reply.status_code == 204
    assert client.get(f"{REGISTRIES}/{registry['id']}").status_code == 404
    assert client.delete(f"{REGISTRIES}/{registry['id']}").status_code == 404


def test_duplicate_registry_name_is_409(client):
    reply = client.post(REGISTRIES, json=registry_body("GENERIC_CR", name="acme-private"))
    assert reply.status_code == 409
    assert [r["name"] for r in client.get(REGISTRIES).json()["results"]].count("acme-private") == 1


def test_renaming_a_registry_to_a_taken_name_is_409(client):
    registry = create(client, REGISTRIES, registry_body("GENERIC_CR"))
    reply = client.put(f"{REGISTRIES}/{registry['id']}", json=registry_body("GENERIC_CR", name="acme-hub"))
    assert reply.status_code == 409
    assert client.get(f"{REGISTRIES}/{registry['id']}").json()["name"] == registry["name"]


def test_deleting_the_registry_used_by_the_fixture_container_is_409(client):
    reply = client.delete(f"{REGISTRIES}/{REGISTRY}")
    assert reply.status_code == 409
    assert reply.json()["error"] == "Conflict"
    assert client.get(f"{REGISTRIES}/{REGISTRY}").status_code == 200


def test_unknown_registry_is_404(client):
    assert client.get(f"{REGISTRIES}/{UNKNOWN}").status_code == 404


# ================================================================ Terraform variables files
TF_REPOSITORY = {"url": "https://git.example.com/acme/infra.git", "branch": "main"}


def test_list_tfvars_files_auto_discovers_files(client):
    reply = client.post(TFVARS, json={"git_repository": TF_REPOSITORY, "mode": {"type": "AutoDiscover"}})
    assert reply.status_code == 200
    files = reply.json()["results"]
    assert files
    for item in files:
        assert set(item) == {"source", "variables"}
        assert isinstance(item["source"], str) and item["source"].endswith(".tfvars")
        assert isinstance(item["variables"], dict)
        assert all(isinstance(value, str) for value in item["variables"].values())


def test_list_tfvars_files_is_deterministic_for_a_repository(client, make_server):
    body = {"git_repository": TF_REPOSITORY, "mode": {"type": "AutoDiscover"}}
    first = client.post(TFVARS, json=body).json()
    assert client.post(TFVARS, json=body).json() == first
    with TestClient(make_server(), base_url="http://mock", headers=ADMIN) as other:
        assert other.post(TFVARS, json=body).json() == first


def test_list_tfvars_files_sources_are_under_the_root_path(client):
    reply = client.post(TFVARS, json={"git_repository": {**TF_REPOSITORY, "root_path": "/terraform"},
                                      "mode": {"type": "AutoDiscover"}})
    assert reply.status_code == 200
    assert all(item["source"].startswith("terraform/") for item in reply.json()["results"])


@pytest.mark.parametrize("mode", [{"type": "Explicit"}, {}, "AutoDiscover"])
def test_list_tfvars_files_mode_must_be_auto_discover(client, mode):
    reply = client.post(TFVARS, json={"git_repository": TF_REPOSITORY, "mode": mode})
    assert_bad_request(reply, "body.mode")


def test_list_tfvars_files_needs_a_repository(client):
    assert_bad_request(client.post(TFVARS, json={"mode": {"type": "AutoDiscover"}}), "body.git_repository")


# ================================================================ labels groups
def test_list_labels_groups_has_the_fixture_cost_center(client):
    reply = client.get(LABELS)
    assert reply.status_code == 200
    groups = {g["name"]: g for g in reply.json()["results"]}
    assert groups["cost-center"]["id"] == LABELS_GROUP
    assert {"key": "team", "value": "checkout", "propagate_to_cloud_provider": True} in groups["cost-center"]["labels"]


def test_create_labels_group_returns_it_and_it_can_be_read(client):
    group = create(client, LABELS, {"name": "ownership", "labels": [{"key": "owner", "value": "payments"}]})
    assert group["name"] == "ownership"
    assert group["labels"] == [{"key": "owner", "value": "payments", "propagate_to_cloud_provider": False}]
    assert group["associated_items_count"] == 0
    assert client.get(f"{LABELS}/{group['id']}").json() == group
    assert group["id"] in {g["id"] for g in client.get(LABELS).json()["results"]}


def test_edit_labels_group_replaces_name_and_labels(client):
    group = create(client, LABELS, {"name": "ownership", "labels": [{"key": "owner", "value": "payments"}]})
    reply = client.put(f"{LABELS}/{group['id']}", json={"name": "owners", "labels": [
        {"key": "owner", "value": "search", "propagate_to_cloud_provider": True}]})
    assert reply.status_code == 200
    assert reply.json()["name"] == "owners"
    assert client.get(f"{LABELS}/{group['id']}").json()["labels"] == [
        {"key": "owner", "value": "search", "propagate_to_cloud_provider": True}]


def test_delete_labels_group_then_it_is_gone(client):
    assert client.delete(f"{LABELS}/{LABELS_GROUP}").status_code == 204
    assert client.get(f"{LABELS}/{LABELS_GROUP}").status_code == 404
    assert "cost-center" not in {g["name"] for g in client.get(LABELS).json()["results"]}


@pytest.mark.parametrize("label, missing", [({"value": "payments"}, "key"), ({"key": "owner"}, "value")])
def test_labels_need_key_and_value(client, label, missing):
    reply = client.post(LABELS, json={"name": "ownership", "labels": [label]})
    assert_bad_request(reply, f"body.labels[0].{missing}")
    assert "ownership" not in {g["name"] for g in client.get(LABELS).json()["results"]}


def test_duplicate_labels_group_name_is_409(client):
    reply = client.post(LABELS, json={"name": "cost-center", "labels": []})
    assert reply.status_code == 409
    assert [g["name"] for g in client.get(LABELS).json()["results"]].count("cost-center") == 1


def test_renaming_labels_group_to_a_taken_name_is_409(client):
    reply = client.put(f"{LABELS}/{LABELS_GROUP}", json={"name": "compliance", "labels": []})
    assert reply.status_code == 409
    assert client.get(f"{LABELS}/{LABELS_GROUP}").json()["name"] == "cost-center"


# ================================================================ AWS credentials
def test_list_aws_credentials_has_the_fixture(client):
    reply = client.get(AWS)
    assert reply.status_code == 200
    credentials = {c["id"]: c for c in reply.json()["results"]}
    assert credentials[CREDENTIALS]["name"] == "ci-deployer"
    assert credentials[CREDENTIALS]["access_key_id"] == "AKIAMOCKEXAMPLE00001"
    assert credentials[CREDENTIALS]["object_type"] == "AWS"


def test_edit_aws_credentials_renames_them(client):
    role = "arn:clouda:iam::123456789012:role/release"
    reply = client.put(f"{AWS}/{CREDENTIALS}", json={"name": "release-deployer", "role_arn": role})
    assert reply.status_code == 200
    edited = reply.json()
    assert (edited["id"], edited["name"], edited["role_arn"]) == (CREDENTIALS, "release-deployer", role)
    assert edited["access_key_id"] == "AKIAMOCKEXAMPLE00001"
    assert client.get(f"{AWS}/{CREDENTIALS}").json()["name"] == "release-deployer"


def test_aws_credentials_edit_changes_only_the_editable_name_and_role_arn(client):
    role = "arn:clouda:iam::123456789012:role/release"
    reply = client.put(f"{AWS}/{CREDENTIALS}", json={"name": "release-deployer", "role_arn": role,
                                                     "access_key_id": "AKIAOTHERKEY0000009",
                                                     "secret_access_key": "replacement-secret"})
    assert reply.status_code == 200, reply.text
    for record in (reply.json(), client.get(f"{AWS}/{CREDENTIALS}").json()):
        assert (record["name"], record["role_arn"]) == ("release-deployer", role)
        assert record["access_key_id"] == "AKIAMOCKEXAMPLE00001"
    export = client.get("/_mock/state/export", params={"secrets": "include"}).text
    assert "example-secret-not-returned" in export and "replacement-secret" not in export


def test_aws_credentials_without_a_key_or_role_leave_them_out(client):
    created = create(client, AWS, {"name": "keyless"})
    assert not {"access_key_id", "role_arn"} & set(created)
    assert not {"access_key_id", "role_arn"} & set(client.get(f"{AWS}/{created['id']}").json())


def test_edit_aws_credentials_without_role_arn_is_400(client):
    assert_bad_request(client.put(f"{AWS}/{CREDENTIALS}", json={"name": "release-deployer"}), "body.role_arn")
    assert client.get(f"{AWS}/{CREDENTIALS}").json()["name"] == "ci-deployer"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_unknown_aws_credentials_are_404(client, method):
    body = {"name": "x", "role_arn": "arn:clouda:iam::1:role/x"} if method == "PUT" else None
    assert client.request(method, f"{AWS}/{UNKNOWN}", json=body).status_code == 404


def test_create_and_delete_aws_credentials(client):
    created = create(client, AWS, {"name": "nightly", "access_key_id": "AKIANIGHTLY0001",
                                   "secret_access_key": "aws-secret-0001",
                                   "role_arn": "arn:clouda:iam::123456789012:role/nightly"})
    assert (created["name"], created["access_key_id"], created["object_type"]) == ("nightly", "AKIANIGHTLY0001", "AWS")
    assert client.get(f"{AWS}/{created['id']}").json() == created
    assert client.delete(f"{AWS}/{created['id']}").status_code == 204
    assert client.get(f"{AWS}/{created['id']}").status_code == 404
    assert created["id"] not in {c["id"] for c in client.get(AWS).json()["results"]}


def test_aws_secret_access_key_is_never_returned(client):
    created = client.post(AWS, json={"name": "nightly", "access_key_id": "AKIANIGHTLY0001",
                                     "secret_access_key": "aws-secret-0001"})
    assert created.status_code == 201
    ident = created.json()["id"]
    api_replies = [created, client.get(f"{AWS}/{ident}"), client.get(AWS), client.get(f"{AWS}/{CREDENTIALS}"),
                   client.put(f"{AWS}/{ident}", json={"name": "n2", "role_arn": "arn:clouda:iam::1:role/n"})]
    assert [r.status_code for r in api_replies[1:]] == [200] * 4
    for reply in api_replies:
        assert "secret_access_key" not in reply.text
    journal = client.get("/_mock/calls").text
    for reply in [*api_replies, journal]:
        text = getattr(reply, "text", reply)
        assert "aws-secret-0001" not in text
        assert "example-secret-not-returned" not in text


# ================================================================ webhooks
def webhook_body(**fields):
    return {"target_url": "https://hooks.acme.example/deployments",
            "events": ["DEPLOYMENT_STARTED", "DEPLOYMENT_FAILED"], "enabled": True, **fields}


def test_create_webhook_returns_a_standard_webhook(client):
    webhook = create(client, WEBHOOKS, webhook_body())
    assert webhook["kind"] == "STANDARD"
    assert webhook["target_url"] == "https://hooks.acme.example/deployments"
    assert webhook["events"] == ["DEPLOYMENT_STARTED", "DEPLOYMENT_FAILED"]
    assert webhook["enabled"] is True
    assert webhook["target_secret_set"] is False


def test_webhook_target_secret_is_set_but_never_returned(client):
    webhook = create(client, WEBHOOKS, webhook_body(target_secret="whsec-very-private-42"))
    assert webhook["target_secret_set"] is True
    replies = [client.get(f"{WEBHOOKS}/{webhook['id']}"), client.get(WEBHOOKS),
               client.put(f"{WEBHOOKS}/{webhook['id']}", json=webhook_body(enabled=False)),
               client.get("/_mock/calls")]
    assert [r.status_code for r in replies] == [200] * 4
    assert replies[0].json()["target_secret_set"] is True
    for reply in replies:
        assert "whsec-very-private-42" not in reply.text
    assert "target_secret" not in replies[0].json()


def test_webhook_accepts_plain_http_targets(client):
    assert create(client, WEBHOOKS, webhook_body(target_url="http://hooks.acme.example/x"))["target_url"] == \
        "http://hooks.acme.example/x"


@pytest.mark.parametrize("events", [[], ["DEPLOYMENT_EXPLODED"], ["DEPLOYMENT_STARTED", "deployment_started"]])
def test_webhook_events_must_be_non_empty_and_known(client, events):
    before = client.get(WEBHOOKS).json()["results"]
    assert_bad_request(client.post(WEBHOOKS, json=webhook_body(events=events)), "body.events")
    assert client.get(WEBHOOKS).json()["results"] == before


@pytest.mark.parametrize("target_url", ["ftp://hooks.acme.example", "hooks.acme.example/x", ""])
def test_webhook_target_url_must_be_http_or_https(client, target_url):
    assert_bad_request(client.post(WEBHOOKS, json=webhook_body(target_url=target_url)), "body.target_url")


def test_webhooks_are_listed_and_read(client):
    fixtures = client.get(WEBHOOKS).json()["results"]           # disabled ones, from fixtures/targets.yaml
    assert {w["id"] for w in fixtures} == {IDS["webhook"], IDS["webhook_delete"]}
    assert not any(w["enabled"] for w in fixtures)
    webhook = create(client, WEBHOOKS, webhook_body())
    assert client.get(WEBHOOKS).json()["results"] == fixtures + [webhook]
    reply = client.get(f"{WEBHOOKS}/{webhook['id']}")
    assert reply.status_code == 200
    assert reply.json() == webhook


def test_edit_webhook_disables_it(client):
    webhook = create(client, WEBHOOKS, webhook_body())
    reply = client.put(f"{WEBHOOKS}/{webhook['id']}", json=webhook_body(enabled=False,
                                                                        events=["DEPLOYMENT_SUCCEEDED"]))
    assert reply.status_code == 200
    assert (reply.json()["enabled"], reply.json()["events"]) == (False, ["DEPLOYMENT_SUCCEEDED"])
    assert client.get(f"{WEBHOOKS}/{webhook['id']}").json()["enabled"] is False


def test_delete_webhook_then_it_is_404(client):
    webhook = create(client, WEBHOOKS, webhook_body())
    assert client.delete(f"{WEBHOOKS}/{webhook['id']}").status_code == 204
    assert client.get(f"{WEBHOOKS}/{webhook['id']}").status_code == 404
    assert client.delete(f"{WEBHOOKS}/{webhook['id']}").status_code == 404
    assert webhook["id"] not in {w["id"] for w in client.get(WEBHOOKS).json()["results"]}


# ================================================================ other organization
OTHER = f"/organization/{OTHER_ORG}"


@pytest.mark.parametrize("method, path, body", [
    ("GET", f"{OTHER}/cluster", None),
    ("GET", f"/cluster/{GLOBEX_CLUSTER}", None),
    ("GET", f"/cluster/{GLOBEX_CLUSTER}/status", None),
    ("POST", f"/cluster/{GLOBEX_CLUSTER}/lock", {"reason": "mine now"}),
    ("DELETE", f"/cluster/{GLOBEX_CLUSTER}/lock", None),
    ("POST", f"/cluster/{GLOBEX_CLUSTER}/upgrade", None),
    ("GET", f"{OTHER}/containerRegistry", None),
    ("POST", f"{OTHER}/containerRegistry", {"name": "x", "kind": "CODEHOST2_CR"}),
    ("GET", f"{OTHER}/containerRegistry/{REGISTRY}", None),
    ("PUT", f"{OTHER}/containerRegistry/{REGISTRY}", {"name": "x", "kind": "PUBLICHUB_CR"}),
    ("DELETE", f"{OTHER}/containerRegistry/{REGISTRY}", None),
    ("POST", f"{OTHER}/listTfVarsFilesFromGitRepo", {"git_repository": TF_REPOSITORY,
                                                     "mode": {"type": "AutoDiscover"}}),
    ("GET", f"{OTHER}/labelsGroups", None),
    ("POST", f"{OTHER}/labelsGroups", {"name": "x", "labels": []}),
    ("GET", f"{OTHER}/labelsGroups/{LABELS_GROUP}", None),
    ("PUT", f"{OTHER}/labelsGroups/{LABELS_GROUP}", {"name": "x", "labels": []}),
    ("DELETE", f"{OTHER}/labelsGroups/{LABELS_GROUP}", None),
    ("GET", f"{OTHER}/aws/credentials", None),
    ("POST", f"{OTHER}/aws/credentials", {"name": "x"}),
    ("GET", f"{OTHER}/aws/credentials/{CREDENTIALS}", None),
    ("PUT", f"{OTHER}/aws/credentials/{CREDENTIALS}", {"name": "x", "role_arn": "arn:clouda:iam::1:role/x"}),
    ("DELETE", f"{OTHER}/aws/credentials/{CREDENTIALS}", None),
    ("GET", f"{OTHER}/webhook", None),
    ("POST", f"{OTHER}/webhook", {"target_url": "https://h.example", "events": ["DEPLOYMENT_STARTED"]}),
])
def test_another_organizations_ids_are_404(client, method, path, body):
    reply = client.request(method, path, json=body)
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"] == "Not Found"


def test_acme_webhook_under_another_organization_is_404_and_untouched(client):
    webhook = create(client, WEBHOOKS, webhook_body())
    path = f"{OTHER}/webhook/{webhook['id']}"
    assert client.get(path).status_code == 404
    assert client.put(path, json=webhook_body(enabled=False)).status_code == 404
    assert client.delete(path).status_code == 404
    assert client.get(f"{WEBHOOKS}/{webhook['id']}").json() == webhook


def test_requests_for_another_organization_change_nothing(client):
    client.delete(f"{OTHER}/containerRegistry/{REGISTRY}")
    client.delete(f"{OTHER}/labelsGroups/{LABELS_GROUP}")
    client.put(f"{OTHER}/aws/credentials/{CREDENTIALS}", json={"name": "x", "role_arn": "arn:clouda:iam::1:role/x"})
    assert client.get(f"{REGISTRIES}/{REGISTRY}").status_code == 200
    assert client.get(f"{LABELS}/{LABELS_GROUP}").status_code == 200
    assert client.get(f"{AWS}/{CREDENTIALS}").json()["name"] == "ci-deployer"


# ---------------------------------------------------------------- a container's registry block as the registry is now
RENAMED = {"name": "renamed-hub", "kind": "GENERIC_CR", "url": "https://x.example",
           "config": {"username": "u", "password": "p"}}


def ok(reply, status=200):
    assert reply.status_code == status, reply.text
    return reply.json() if reply.content else None


def test_a_container_shows_its_registry_as_edited(client):
    ok(client.put(f"/organization/{ORG}/containerRegistry/{REGISTRY}", json=RENAMED))
    wanted = {"id": REGISTRY, "name": "renamed-hub", "kind": "GENERIC_CR", "url": "https://x.example"}
    container = ok(client.get(f"/container/{CONTAINER}"))
    assert container["registry"] == wanted and container["registry_id"] == REGISTRY
    listed_ = {c["id"]: c for c in ok(client.get(f"/environment/{ENV}/container"))["results"]}
    assert listed_[CONTAINER]["registry"] == wanted
    edited = ok(client.put(f"/container/{CONTAINER}", json={"name": "worker", "registry_id": REGISTRY,
                                                                 "image_name": "acme/worker", "tag": "2.0.0"}))
    assert edited["registry"] == wanted
    keys = list(container)
    assert keys.index("registry") == keys.index("registry_id") + 1


def test_a_container_of_an_edited_registry_exports_and_reloads_with_it(client, make_server, spec, tmp_path):
    ok(client.put(f"/organization/{ORG}/containerRegistry/{REGISTRY}", json=RENAMED))
    first = client.get("/_mock/state/export", params={"secrets": "include"})
    assert first.status_code == 200, first.text
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "state.yaml").write_text(first.text)
    read_fixtures(folder, spec)                                        # what `mockserver check` runs
    document = yaml.safe_load(first.text)
    exported = next(c for org in document["organizations"] for p in org.get("projects", [])
                    for e in p.get("environments", []) for c in e.get("containers", []) if c["id"] == CONTAINER)
    assert exported["registry_id"] == REGISTRY and "registry" not in exported
    with TestClient(make_server(fixtures=folder), base_url="http://mock", headers=ADMIN) as again:
        assert ok(again.get(f"/container/{CONTAINER}"))["registry"]["name"] == "renamed-hub"
        assert again.get("/_mock/state/export", params={"secrets": "include"}).text == first.text


# ---------------------------------------------------------------- the owner a cluster lock names
def test_a_cluster_lock_names_the_same_owner_for_the_same_token(client):
    from support.ids import CLUSTER, WRITE
    owners = []
    for headers in (ADMIN, ADMIN, WRITE):
        locked = client.post(f"/cluster/{CLUSTER}/lock", json={"reason": "maintenance"}, headers=headers)
        assert locked.status_code in (200, 201), locked.text
        owners.append(locked.json()["owner_name"])
        assert client.delete(f"/cluster/{CLUSTER}/lock").status_code in (200, 204)
    assert owners[0] == owners[1] and owners[0]
