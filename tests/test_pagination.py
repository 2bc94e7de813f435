"""Pagination (the spec's example): `page` and `page_size` query parameters and a `pagination` member
{page, page_size, total_count, total_pages} next to `results`, under /api/v1 and at the root.
Without either parameter a list is returned whole (no `pagination`)."""

import pytest

from conftest import APP, ENV, ORG, PROJECT


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
