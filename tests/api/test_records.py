"""Records as complete as strict generated clients need, and the platform's own payload shapes.

Every reply is also checked against the document by the self-check of the in-process mock, so
a field the document lists as required and a reply leaves out fails any test here.
"""

import pytest
from support.ids import APP, CLUSTER, CONTAINER, DATABASE, ENV, HELM, JOB, ORG, OTHER_ORG, PROJECT, REGISTRY, TERRAFORM

SERVICES = {"application": APP, "container": CONTAINER, "database": DATABASE, "job": JOB, "helm": HELM,
            "terraform": TERRAFORM}
HELM_REPOSITORY = "5d7f9b1d-3f5a-4c7e-9b1d-3f5a7c9e1b3d"
GIT = {"url": "https://git.example.com/acme/tools.git", "branch": "main"}


def created(reply):
    assert reply.status_code == 201, reply.text
    return reply.json()


def advance(client, seconds):
    assert client.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


def application(client, repository, **fields):
    return created(client.post(f"/environment/{ENV}/application",
                               json={"name": fields.pop("name", "api"), "git_repository": repository, **fields}))


# ---------------------------------------------------------------- organization
def test_organization_carries_results_with_the_organizations_the_token_sees(client):
    body = client.get("/organization").json()
    assert body["id"] == ORG
    assert [org["id"] for org in body["results"]] == [ORG]
    assert body["results"][0]["name"] == body["name"] == "Acme"
    assert body["owner"] == body["results"][0]["owner"]


def test_one_organization_by_id(client):
    reply = client.get(f"/organization/{ORG}")
    assert reply.status_code == 200
    assert (reply.json()["id"], reply.json()["plan"]) == (ORG, "BUSINESS")
    assert client.get(f"/organization/{OTHER_ORG}").status_code == 404


# ---------------------------------------------------------------- projects
def test_project_counts_its_environments_and_services(client):
    project = client.get(f"/project/{PROJECT}").json()
    services = sum(len(client.get(f"/environment/{ENV}/{kind}").json()["results"]) for kind in SERVICES)
    assert (project["associated_environments_count"], project["associated_services_count"]) == (2, services)
    created(client.post(f"/project/{PROJECT}/environment", json={"name": "preview"}))
    listed = {p["id"]: p for p in client.get(f"/organization/{ORG}/project").json()["results"]}
    assert listed[PROJECT]["associated_environments_count"] == 3
    application(client, GIT)
    assert client.get(f"/project/{PROJECT}").json()["associated_services_count"] == services + 1


def test_project_list_whole_or_paged_shows_each_project_as_reading_it_does(client):
    emptied = created(client.post(f"/organization/{ORG}/project", json={"name": "emptied"}))
    environment = created(client.post(f"/project/{emptied['id']}/environment", json={"name": "gone"}))
    assert client.delete(f"/environment/{environment['id']}").status_code == 204
    created(client.post(f"/organization/{ORG}/project", json={"name": "never-had-one"}))
    whole = client.get(f"/organization/{ORG}/project").json()["results"]
    paged = client.get(f"/organization/{ORG}/project", params={"page": 1, "page_size": 100}).json()["results"]
    assert whole == paged and len(whole) >= 3
    for project in whole:
        assert project == client.get(f"/project/{project['id']}").json()
    counts = {p["name"]: (p["associated_environments_count"], p["associated_services_count"]) for p in whole}
    assert counts["emptied"] == counts["never-had-one"] == (0, 0)
    assert counts[client.get(f"/project/{PROJECT}").json()["name"]][0] == 2


def test_new_project_has_zero_counts_and_no_null_description(client):
    project = created(client.post(f"/organization/{ORG}/project", json={"name": "empty"}))
    assert (project["associated_environments_count"], project["associated_services_count"]) == (0, 0)
    assert "description" not in project


# ---------------------------------------------------------------- services
@pytest.mark.parametrize("kind", SERVICES)
def test_every_service_record_has_its_type_and_icon(client, kind):
    record = client.get(f"/{kind}/{SERVICES[kind]}").json()
    assert record["service_type"] == kind.upper()
    assert record["icon_uri"].startswith("https://") and record["icon_uri"].endswith(f"/{kind}.svg")
    listed = client.get(f"/environment/{ENV}/{kind}").json()["results"]
    assert all(item["service_type"] == kind.upper() for item in listed)


@pytest.mark.parametrize("host, provider", [("codehost1.example", "CODEHOST1"), ("codehost2.example", "CODEHOST2"),
                                            ("www.codehost1.example", "CODEHOST1"), ("git.example.com", None)])
def test_git_provider_is_inferred_from_the_host(client, host, provider):
    record = application(client, {"url": f"https://{host}/acme/api.git"})
    assert record["git_repository"].get("provider") == provider
    assert ("provider" in record["git_repository"]) == (provider is not None)


def test_git_provider_sent_by_the_client_is_kept(client):
    record = application(client, {"url": "https://git.example.com/acme/api.git", "provider": "CODEHOST2"})
    assert record["git_repository"]["provider"] == "CODEHOST2"


def test_unknown_git_provider_is_400(client):
    reply = client.post(f"/environment/{ENV}/application",
                        json={"name": "api", "git_repository": {**GIT, "provider": "GENERIC"}})
    assert reply.status_code == 400
    assert "body.git_repository.provider" in reply.json()["message"]


def test_deployed_commit_id_appears_only_once_deployed(client):
    record = application(client, GIT)
    assert "deployed_commit_id" not in record["git_repository"]
    assert client.post(f"/application/{record['id']}/deploy").status_code == 202
    advance(client, 30)
    deployed = client.get(f"/application/{record['id']}").json()["git_repository"]
    assert len(deployed["deployed_commit_id"]) == 40


def test_port_without_external_port_leaves_it_out(client):
    record = application(client, GIT, ports=[{"internal_port": 8080}, {"internal_port": 9090, "external_port": 443,
                                                                       "publicly_accessible": True}])
    assert "external_port" not in record["ports"][0]
    assert record["ports"][1]["external_port"] == 443
    assert "description" not in record


# ---------------------------------------------------------------- deployment requests and clusters
def test_deployment_request_record_counts_requests_and_is_part_of_the_last_deployment(client):
    first = client.post(f"/container/{CONTAINER}/restart")
    assert first.status_code == 202, first.text
    count = first.json()["deployment_requests_count"]
    assert first.json()["is_part_last_deployment"] is True
    advance(client, 10)
    second = client.post(f"/container/{CONTAINER}/stop").json()
    assert second["deployment_requests_count"] == count + 1
    assert second["id"] != first.json()["id"]


def test_cluster_upgrade_says_why_the_cluster_is_in_its_state(client):
    reply = client.post(f"/cluster/{CLUSTER}/upgrade")
    assert reply.status_code == 202
    assert "upgrade from 1.31 to 1.32" in reply.json()["reason"]
    advance(client, 30)
    status = client.get(f"/cluster/{CLUSTER}/status").json()
    assert status["status"] == "DEPLOYED"
    assert "completed" in status["reason"]


# ---------------------------------------------------------------- jobs: the platform's payloads
JOB_SOURCES = {
    "image": {"image": {"image_name": "acme/cleanup", "tag": "1.0", "registry_id": REGISTRY}},
    "docker": {"docker": {"git_repository": {"url": "https://codehost2.example/acme/jobs.git", "branch": "main",
                                             "root_path": "/cleanup"}, "dockerfile_path": "Dockerfile.job"}},
}
SCHEDULES = {
    "on_start": {"on_start": {"arguments": ["migrate"], "entrypoint": "/bin/tool"}},
    "on_stop": {"on_stop": {"arguments": ["drain"]}},
    "on_delete": {"on_delete": {}},
    "cronjob": {"cronjob": {"scheduled_at": "*/10 * * * *", "arguments": ["--all"], "entrypoint": "/bin/sweep"}},
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("source", JOB_SOURCES)
def test_job_of_each_source_and_schedule_kind(client, source, schedule):
    record = created(client.post(f"/environment/{ENV}/job", json={
        "name": f"{source}-{schedule}".replace("_", "-"), "source": JOB_SOURCES[source],
        "schedule": SCHEDULES[schedule], "cpu": 250, "memory": 256}))
    assert record["job_type"] == ("CRON" if schedule == "cronjob" else "LIFECYCLE")
    assert list(record["schedule"]) == [schedule]
    assert record["schedule"][schedule].get("arguments", []) == SCHEDULES[schedule][schedule].get("arguments", [])
    if source == "image":
        assert record["source"] == JOB_SOURCES["image"]
    else:
        docker = record["source"]["docker"]
        assert docker["dockerfile_path"] == "Dockerfile.job"
        assert docker["git_repository"]["provider"] == "CODEHOST2"
        assert "deployed_commit_id" not in docker["git_repository"]
    assert client.get(f"/job/{record['id']}").json() == record


def test_job_from_git_deploys_its_branch_head(client):
    record = created(client.post(f"/environment/{ENV}/job", json={
        "name": "sweeper", "source": JOB_SOURCES["docker"], "schedule": SCHEDULES["cronjob"]}))
    assert client.post(f"/job/{record['id']}/deploy").status_code == 202
    advance(client, 30)
    deployed = client.get(f"/job/{record['id']}").json()["source"]["docker"]["git_repository"]
    head = client.get(f"/job/{record['id']}/commit").json()["results"][0]["git_commit_id"]
    assert deployed["deployed_commit_id"] == head


def test_job_with_both_sources_is_400(client):
    reply = client.post(f"/environment/{ENV}/job", json={
        "name": "both", "source": {**JOB_SOURCES["image"], **JOB_SOURCES["docker"]}, "schedule": SCHEDULES["on_start"]})
    assert reply.status_code == 400
    assert "body.source" in reply.json()["message"]


def test_job_both_cron_and_lifecycle_is_400(client):
    reply = client.post(f"/environment/{ENV}/job", json={
        "name": "both", "source": JOB_SOURCES["image"], "schedule": {**SCHEDULES["cronjob"], **SCHEDULES["on_start"]}})
    assert reply.status_code == 400
    assert "body.schedule" in reply.json()["message"]


def test_job_with_an_empty_schedule_is_400(client):
    reply = client.post(f"/environment/{ENV}/job", json={"name": "idle", "source": JOB_SOURCES["image"],
                                                          "schedule": {}})
    assert reply.status_code == 400


# ---------------------------------------------------------------- Helm: the platform's payloads
HELM_SOURCES = {
    "git_repository": {"git_repository": {"url": "https://codehost1.example/acme/charts.git", "branch": "main",
                                          "root_path": "/charts/api"}},
    "helm_repository": {"helm_repository": {"repository_id": HELM_REPOSITORY, "chart_name": "redis",
                                            "chart_version": "19.6.1"}},
}
VALUES_OVERRIDE = {"set": [["replicaCount", "3"]], "set_string": [["image.tag", "1.2"]],
                   "set_json": [["resources", "{\"limits\":{\"cpu\":\"1\"}}"]],
                   "file": {"raw": {"values": [{"name": "override.yaml", "content": "replicaCount: 3\n"}]}}}


@pytest.mark.parametrize("source", HELM_SOURCES)
def test_helm_of_each_source_kind(client, source):
    record = created(client.post(f"/environment/{ENV}/helm", json={
        "name": f"chart-{source}".replace("_", "-"), "source": HELM_SOURCES[source], "arguments": ["--wait"],
        "allow_cluster_wide_resources": True, "values_override": VALUES_OVERRIDE, "timeout_sec": 900}))
    assert list(record["source"]) == [source]
    assert record["values_override"] == VALUES_OVERRIDE
    assert (record["arguments"], record["allow_cluster_wide_resources"]) == (["--wait"], True)
    if source == "helm_repository":
        assert record["source"]["helm_repository"] == HELM_SOURCES[source]["helm_repository"]
    else:
        assert record["source"]["git_repository"]["provider"] == "CODEHOST1"
    assert client.post(f"/helm/{record['id']}/deploy").status_code == 202


def test_helm_repository_under_the_platforms_other_name(client):
    chart = {"repository": HELM_REPOSITORY, "chart_name": "redis", "chart_version": "19.6.1"}
    record = created(client.post(f"/environment/{ENV}/helm", json={"name": "cache",
                                                                   "source": {"helm_repository": chart}}))
    assert record["source"]["helm_repository"]["repository_id"] == HELM_REPOSITORY
    assert record["values_override"] == {"set": [], "set_string": [], "set_json": []}


def test_helm_without_a_repository_id_or_with_both_sources_is_400(client):
    chart = {"chart_name": "redis", "chart_version": "19.6.1"}
    reply = client.post(f"/environment/{ENV}/helm", json={"name": "x", "source": {"helm_repository": chart}})
    assert reply.status_code == 400
    assert "repository_id" in reply.json()["message"]
    both = {**HELM_SOURCES["git_repository"], **HELM_SOURCES["helm_repository"]}
    assert client.post(f"/environment/{ENV}/helm", json={"name": "x", "source": both}).status_code == 400


def test_helm_set_pairs_must_be_pairs(client):
    reply = client.post(f"/environment/{ENV}/helm", json={"name": "x", "source": HELM_SOURCES["helm_repository"],
                                                           "values_override": {"set": [["only-a-key"]]}})
    assert reply.status_code == 400
    assert "body.values_override.set" in reply.json()["message"]


def test_fixture_helm_and_jobs_use_the_platform_shapes(client):
    helm = client.get(f"/helm/{HELM}").json()
    assert helm["source"]["helm_repository"]["chart_name"] == "ingress-nginx"
    assert helm["values_override"]["set"] == [["controller.replicaCount", "2"]]
    job = client.get(f"/job/{JOB}").json()
    assert job["source"]["docker"]["git_repository"]["provider"] == "CODEHOST1"
    assert job["schedule"]["cronjob"]["scheduled_at"] == "0 3 * * *"


# ---------------------------------------------------------------- Terraform: the platform's payload
TERRAFORM_BODY = {
    "name": "network", "description": "VPC and subnets",
    "terraform_files_source": {"git_repository": {"url": "https://codehost2.example/acme/infra.git",
                                                  "branch": "main", "root_path": "/network"}},
    "terraform_variables_source": {"tf_var_file_paths": ["env/prod.tfvars"],
                                   "tf_vars": [{"key": "region", "value": "eu-west-3", "secret": False},
                                               {"key": "db_password", "value": "tf-secret-value", "secret": True}]},
    "backend": {"kubernetes": {}}, "engine": "OPEN_TOFU",
    "provider_version": {"read_from_terraform_block": False, "explicit_version": "1.8.2"},
    "timeout_sec": 3600, "job_resources": {"cpu_milli": 1000, "ram_mib": 1024, "gpu": 0, "storage_gib": 2},
    "use_cluster_credentials": True, "action_extra_arguments": {"apply": ["-lock=false"]},
}


def test_terraform_with_the_platforms_payload(client):
    reply = client.post(f"/environment/{ENV}/terraform", json=TERRAFORM_BODY)
    record = created(reply)
    assert "tf-secret-value" not in reply.text
    assert record["terraform_files_source"]["git_repository"]["provider"] == "CODEHOST2"
    assert record["terraform_variables_source"] == {
        "tf_var_file_paths": ["env/prod.tfvars"],
        "tf_vars": [{"key": "region", "value": "eu-west-3", "secret": False}, {"key": "db_password", "secret": True}]}
    assert (record["engine"], record["provider_version"]["explicit_version"]) == ("OPEN_TOFU", "1.8.2")
    assert record["job_resources"]["storage_gib"] == 2
    assert record["action_extra_arguments"] == {"apply": ["-lock=false"]}
    # the earlier flat fields mirror the nested ones
    assert record["git_repository"] == record["terraform_files_source"]["git_repository"]
    assert (record["engine_version"], record["tfvars_files"]) == ("1.8.2", ["env/prod.tfvars"])
    assert "tf-secret-value" not in client.get("/_mock/calls").text


def test_terraform_with_the_flat_payload_gets_the_nested_record_too(client):
    record = created(client.post(f"/environment/{ENV}/terraform", json={
        "name": "dns", "git_repository": GIT, "engine_version": "1.9.0", "tfvars_files": ["dns.tfvars"]}))
    assert record["terraform_files_source"]["git_repository"]["url"] == GIT["url"]
    assert record["provider_version"] == {"read_from_terraform_block": False, "explicit_version": "1.9.0"}
    assert record["terraform_variables_source"]["tf_var_file_paths"] == ["dns.tfvars"]
    assert record["backend"] == {"kubernetes": {}}
    edited = client.put(f"/terraform/{record['id']}", json={"name": "dns", "git_repository": {
        "url": "https://codehost1.example/acme/dns.git"}})
    assert edited.status_code == 200, edited.text
    assert edited.json()["terraform_files_source"]["git_repository"]["provider"] == "CODEHOST1"
    assert edited.json()["git_repository"]["url"] == "https://codehost1.example/acme/dns.git"


def test_terraform_engine_is_the_platforms_enum(client):
    reply = client.post(f"/environment/{ENV}/terraform", json={**TERRAFORM_BODY, "engine": "OPENTOFU"})
    assert reply.status_code == 400
    assert "body.engine" in reply.json()["message"]


def test_job_from_an_image_deploys_like_a_container_without_a_build(client):
    record = created(client.post(f"/environment/{ENV}/job", json={
        "name": "image-runner", "source": JOB_SOURCES["image"], "schedule": SCHEDULES["on_start"]}))
    assert client.post(f"/job/{record['id']}/deploy").status_code == 202
    advance(client, 30)
    steps = [step["step_name"] for step in client.get(f"/job/{record['id']}/status").json()["steps"]["details"]]
    assert steps[0] == "MIRROR_IMAGE" and "BUILD" not in steps and "GIT_CLONE" not in steps


@pytest.mark.parametrize("url", ["https://[", "https://", "https://codehost1"])
def test_git_url_without_a_known_host_has_no_provider(client, url):
    record = application(client, {"url": url})
    assert "provider" not in record["git_repository"]


def test_unknown_nested_fields_are_ignored_not_echoed(client):
    helm = created(client.post(f"/environment/{ENV}/helm", json={
        "name": "echo", "source": {"helm_repository": {**HELM_SOURCES["helm_repository"]["helm_repository"],
                                                       "extra": 1}},
        "values_override": {"file": {"raw": {"values": [{"name": "a.yaml", "content": "x: 1", "extra": 10**30}]}}}}))
    assert helm["values_override"]["file"] == {"raw": {"values": [{"name": "a.yaml", "content": "x: 1"}]}}
    assert "extra" not in helm["source"]["helm_repository"]
    terraform = created(client.post(f"/environment/{ENV}/terraform", json={
        **TERRAFORM_BODY, "name": "echo-tf", "backend": {"kubernetes": {"extra": 10**30}},
        "job_resources": {"cpu_milli": 250, "extra": 1}, "provider_version": {"explicit_version": "1.7.0", "x": 2}}))
    assert terraform["backend"] == {"kubernetes": {}}
    assert terraform["job_resources"] == {"cpu_milli": 250, "ram_mib": 512, "gpu": 0, "storage_gib": 1}
    assert terraform["provider_version"] == {"read_from_terraform_block": False, "explicit_version": "1.7.0"}
    assert client.get(f"/environment/{ENV}/terraform").status_code == 200


def test_empty_engine_version_falls_back_to_the_default(client):
    record = created(client.post(f"/environment/{ENV}/terraform", json={"name": "v", "git_repository": GIT,
                                                                        "engine_version": ""}))
    assert record["provider_version"]["explicit_version"] == record["engine_version"] == "1.9.8"


def test_huge_page_number_is_400_not_an_error(client):
    reply = client.get(f"/environment/{ENV}/helm", params={"page": 10**25})
    assert reply.status_code == 400
    assert "query.page" in reply.json()["message"]
