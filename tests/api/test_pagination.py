"""Pagination (the spec's example): `page` and `page_size` query parameters and a `pagination` member
{page, page_size, total_count, total_pages} next to `results`, under /api/v1 and at the root.
Without either parameter a list is returned whole (no `pagination`)."""

import pytest
from support.ids import APP, DATABASE, ENV, HELM, ORG, PROJECT


def make_projects(client, count):
    for index in range(count):
        reply = client.post(f"/organization/{ORG}/project", json={"name": f"p{index:02d}"})
        assert reply.status_code == 201, reply.text
    return [p["id"] for p in client.get(f"/organization/{ORG}/project").json()["results"]]


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_projects_page_by_page(client, prefix):
    every = make_projects(client, 5)
    total = len(every)
    reply = client.get(f"{prefix}/organization/{ORG}/project", params={"page": 1, "page_size": 2})
    assert reply.status_code == 200
    body = reply.json()
    assert [p["id"] for p in body["results"]] == every[:2]
    assert body["pagination"] == {"page": 1, "page_size": 2, "total_count": total, "total_pages": (total + 1) // 2}
    second = client.get(f"{prefix}/organization/{ORG}/project", params={"page": 2, "page_size": 2}).json()
    assert [p["id"] for p in second["results"]] == every[2:4]
    last = client.get(f"{prefix}/organization/{ORG}/project",
                      params={"page": (total + 1) // 2, "page_size": 2}).json()["results"]
    assert [p["id"] for p in last] == every[((total + 1) // 2 - 1) * 2:]


def test_without_page_parameters_the_list_is_whole(client):
    every = make_projects(client, 22)
    body = client.get(f"/organization/{ORG}/project").json()
    assert len(body["results"]) == len(every) > 20
    assert "pagination" not in body


def test_page_alone_uses_the_default_page_size_of_20(client):
    every = make_projects(client, 22)
    body = client.get(f"/organization/{ORG}/project", params={"page": 2}).json()
    assert body["pagination"] == {"page": 2, "page_size": 20, "total_count": len(every), "total_pages": 2}
    assert [p["id"] for p in body["results"]] == every[20:]


def test_page_past_the_end_is_empty(client):
    body = client.get(f"/organization/{ORG}/project", params={"page": 50, "page_size": 10}).json()
    assert body["results"] == []
    assert body["pagination"]["total_pages"] == 1


@pytest.mark.parametrize("params, location", [({"page": 0}, "query.page"), ({"page_size": 101}, "query.page_size"),
                                              ({"page_size": "many"}, "query.page_size")])
def test_bad_page_parameters_are_400(client, params, location):
    reply = client.get(f"/organization/{ORG}/project", params=params)
    assert reply.status_code == 400
    assert location in reply.json()["message"]


@pytest.mark.parametrize("path", [f"/project/{PROJECT}/environment", f"/environment/{ENV}/application",
                                  f"/environment/{ENV}/job", f"/application/{APP}/environmentVariable",
                                  f"/application/{APP}/secret", f"/environment/{ENV}/environmentVariable",
                                  f"/application/{APP}/deploymentHistory"])
def test_other_growing_lists_page_the_same_way(client, path):
    whole = client.get(path).json()["results"]
    assert whole, path
    body = client.get(f"/api/v1{path}", params={"page": 1, "page_size": 1}).json()
    assert body["results"] == whole[:1]
    assert body["pagination"] == {"page": 1, "page_size": 1, "total_count": len(whole), "total_pages": len(whole)}


# ---------------------------------------------------------------- every list, the same way
def list_operations(spec):
    """Every GET of the document whose reply may carry `pagination`, with its path built from the examples."""
    from support.examples import example_request
    out = []
    for path, item in spec.document["paths"].items():
        raw = item.get("get")
        schema = (raw or {}).get("responses", {}).get("200", {}).get("content", {}).get("application/json", {})
        target = spec.components.get(schema.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1], {})
        if "pagination" in target.get("properties", {}):
            out.append((raw["operationId"], example_request(path, raw, spec.components)[0]))
    return out


def test_every_list_of_the_document_offers_page_and_page_size(spec):
    """Every GET answering `results` is a list with `pagination`, or one of the spec's own paged wrappers
    (backups, Helm's deploymentHistoryV2: `page`, `page_size` and `results`)."""
    paged = {operation_id for operation_id, _ in list_operations(spec)}
    for item in spec.document["paths"].values():
        raw = item.get("get")
        if raw is None:
            continue
        ref = raw["responses"]["200"]["content"]["application/json"]["schema"].get("$ref", "")
        target = spec.components.get(ref.rsplit("/", 1)[-1], {})
        if "results" not in target.get("properties", {}) or raw["operationId"] == "getOrganization":
            continue
        query = {p["name"] for p in raw.get("parameters", []) if p["in"] == "query"}
        assert "page" in query and ("page_size" in query or "pageSize" in query), raw["operationId"]
        assert raw["operationId"] in paged or {"page", "page_size"} <= set(target["required"]), raw["operationId"]


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_every_list_honours_page_and_page_size_at_the_root_and_under_api_v1(client, spec, prefix):
    """Registries, labels groups, webhooks, clusters, custom domains, job commits, database statuses, the
    deployment queue and every other list: one page of `results` and `pagination`, as the spec's example."""
    client.post(f"/application/{APP}/deploy")                 # something in production's deployment queue
    checked = []
    for operation_id, url in list_operations(spec):
        whole = client.get(f"{prefix}{url}")
        assert whole.status_code == 200, (operation_id, whole.text)
        assert "pagination" not in whole.json(), operation_id
        records = whole.json()["results"]
        for number in (1, 2):
            reply = client.get(f"{prefix}{url}", params={"page": number, "page_size": 1})
            assert reply.status_code == 200, (operation_id, reply.text)
            body = reply.json()
            assert body["results"] == records[number - 1:number], operation_id
            assert body["pagination"] == {"page": number, "page_size": 1, "total_count": len(records),
                                          "total_pages": len(records)}, operation_id
        checked.append(operation_id)
    for expected in ("listContainerRegistries", "listLabelsGroups", "listWebhooks", "listClusters",
                     "listHelmCustomDomains", "listJobCommits", "getEnvironmentDatabaseStatus",
                     "getEnvironmentDeploymentQueue", "listAwsCredentials", "getApplicationLogs"):
        assert expected in checked


def test_the_deployment_queue_pages_its_requests(client):
    for app in (APP,):
        assert client.post(f"/application/{app}/deploy").status_code == 202
    assert client.post(f"/database/{DATABASE}/redeploy").status_code == 202
    queue = client.get(f"/environment/{ENV}/deploymentQueue").json()["results"]
    assert len(queue) == 2
    second = client.get(f"/environment/{ENV}/deploymentQueue", params={"page": 2, "page_size": 1}).json()
    assert second["results"] == queue[1:]
    assert second["pagination"] == {"page": 2, "page_size": 1, "total_count": 2, "total_pages": 2}


# ---------------------------------------------------------------- pageSize: "number or null", default 20
def history_v2(client, **params):
    return client.get(f"/helm/{HELM}/deploymentHistoryV2", params=params)


def test_pagesize_number_written_5_0_is_accepted_as_5(client):
    for _ in range(3):
        assert client.post(f"/helm/{HELM}/redeploy").status_code in (202, 409)
        client.post("/_mock/clock/advance", json={"seconds": 60})
    whole = history_v2(client).json()["results"]
    reply = history_v2(client, pageSize="2.0")
    assert reply.status_code == 200, reply.text
    assert reply.json()["page_size"] == 2 and reply.json()["results"] == whole[:2]


def test_empty_pagesize_means_the_default_page_size_20(client):
    reply = history_v2(client, pageSize="")
    assert reply.status_code == 200, reply.text
    assert reply.json()["page_size"] == 20


def test_fractional_pagesize_is_400_that_says_it_is_not_a_whole_number(client):
    reply = history_v2(client, pageSize="2.5")
    assert reply.status_code == 400
    assert reply.json()["message"] == "query.pageSize: 2.5 is not a whole number"
