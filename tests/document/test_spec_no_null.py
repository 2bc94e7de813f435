"""No `null` where the spec gives a type without "or null": each field the spec types so, read over HTTP
from `mockserver serve` in the state where it has nothing to show, is left out, never `null`.

tests/document/test_nulls.py walks every reply of the document generically; these name the fields one by one.
"""

import httpx
import pytest
from support.ids import ADMIN, APP, CLUSTER, ENV, HELM, JOB, ORG, REGISTRY

pytestmark = pytest.mark.server

TERRAFORM_NEVER_DEPLOYED = "e9f1a3b5-7c9e-4b1d-8f3a-5b7d9f1b3d8a"


@pytest.fixture
def http(live_manual):
    assert httpx.post(f"{live_manual.url}/_mock/reset").status_code in (200, 204)
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as client:
        yield client


def ok(reply):
    assert 200 <= reply.status_code < 300, reply.text
    return reply.json()


@pytest.mark.parametrize("path", [f"/job/{JOB}/status", f"/terraform/{TERRAFORM_NEVER_DEPLOYED}/status"])
def test_never_deployed_service_status_leaves_out_last_deployment_date_deployment_request_id_execution_id(
        http, path):
    status = ok(http.get(path))
    assert status["service_deployment_status"] == "NEVER_DEPLOYED"
    assert not {"last_deployment_date", "deployment_request_id", "execution_id"} & set(status), status
    assert None not in status.values()


def test_cluster_status_leaves_out_last_execution_id_cluster_lock_last_deployment_date_when_there_are_none(http):
    """acme-prod-eu is not locked and was never deployed through the API."""
    status = ok(http.get(f"/cluster/{CLUSTER}/status"))
    assert not {"last_execution_id", "cluster_lock", "last_deployment_date"} & set(status), status
    assert None not in status.values()
    ok(http.post(f"/cluster/{CLUSTER}/lock", json={"reason": "freeze"}))
    locked = ok(http.get(f"/cluster/{CLUSTER}/status"))
    assert locked["cluster_lock"]["reason"] == "freeze" and "ttl_in_days" not in locked["cluster_lock"]


def test_cluster_status_leaves_out_next_k8s_available_version_at_the_newest_version(http):
    assert ok(http.get(f"/cluster/{CLUSTER}/status"))["next_k8s_available_version"] == "1.32"
    for version in ("1.32", "1.33", "1.34"):                 # upgrade to the newest version the mock knows
        ok(http.post(f"/cluster/{CLUSTER}/upgrade"))
        ok(http.post("/_mock/clock/advance", json={"seconds": 3600}))
        assert ok(http.get(f"/cluster/{CLUSTER}"))["version"] == version
    status = ok(http.get(f"/cluster/{CLUSTER}/status"))
    assert "next_k8s_available_version" not in status and None not in status.values(), status


def test_container_registry_leaves_out_cluster_object_when_tied_to_none(http):
    registry = ok(http.get(f"/organization/{ORG}/containerRegistry/{REGISTRY}"))
    assert "cluster" not in registry and None not in registry.values()


def test_deployment_queue_stage_service_details_job_type_only_for_jobs(http):
    assert http.post(f"/application/{APP}/deploy").status_code == 202
    assert http.post(f"/job/{JOB}/deploy").status_code == 202
    queue = ok(http.get(f"/environment/{ENV}/deploymentQueue"))["results"]
    services = [s for item in queue for stage in item["stages"] for s in stage["services"]]
    kinds = {s["identifier"]["service_type"]: s for s in services}
    assert {"APPLICATION", "JOB"} <= set(kinds)
    assert "details" not in kinds["APPLICATION"]
    assert kinds["JOB"]["details"]["job_type"] in ("CRON", "LIFECYCLE")


def test_helm_history_item_details_commit_left_out_for_a_chart_from_a_helm_repository(http):
    """The fixtures' `ingress` chart comes from a Helm repository: its deployments have no commit."""
    history = ok(http.get(f"/helm/{HELM}/deploymentHistoryV2"))["results"]
    assert history
    for item in history:
        assert "commit" not in item.get("details", {}), item
        assert None not in item.values()


def test_mount_path_left_out_of_a_variable_that_is_not_a_file_and_of_a_reference_to_one(http):
    variables = ok(http.get(f"/application/{APP}/environmentVariable"))["results"]
    port = next(v for v in variables if v["key"] == "PORT")
    conf = next(v for v in variables if v["key"] == "NGINX_CONF")
    assert "mount_path" not in port and conf["mount_path"] == "/etc/nginx/conf.d/app.conf"
    alias = ok(http.post(f"/application/{APP}/environmentVariable/{port['id']}/alias", json={"key": "HTTP_PORT"}))
    assert "mount_path" not in alias and "mount_path" not in alias["aliased_variable"]
