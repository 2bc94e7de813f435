"""Commits made one at a time: a deploy makes the one it pins, a page of the job's commits only its own, and
the same seed gives the same commits on every server (world/commits.py)."""

import re
from datetime import datetime

from starlette.testclient import TestClient
from support.ids import ADMIN, ENV

from mockserver.world import commits
from mockserver.world.commits import Commits, commit_ids, make_commit

GIT = {"url": "https://git.example.com/acme/orders.git", "branch": "main"}
JOB_SOURCE = {"docker": {"git_repository": GIT, "dockerfile_path": "Dockerfile"}}


def created(reply):
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


def new_application(client, git=GIT, name="orders"):
    return created(client.post(f"/environment/{ENV}/application", json={"name": name, "git_repository": git}))


def new_job(client, name="sweeper"):
    return created(client.post(f"/environment/{ENV}/job", json={
        "name": name, "source": JOB_SOURCE, "schedule": {"cronjob": {"scheduled_at": "*/10 * * * *"}}}))


def deployed_commit(client, app, body=None):
    reply = client.post(f"/application/{app}/deploy", json=body or {})
    assert reply.status_code == 202, reply.text
    history = client.get(f"/application/{app}/deploymentHistory").json()["results"]
    return history[0]["details"]["commit"]


def job_commits(client, job, **query):
    reply = client.get(f"/job/{job}/commit", params=query)
    assert reply.status_code == 200, reply.text
    return reply.json()


def identity(commit):
    return commit["git_commit_id"], commit["message"], commit["author_name"]


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def what_a_server_shows(server):
    """The commit a new application's first deploy pins, and page 2 of a new job's commits."""
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        deployed = deployed_commit(client, new_application(client))
        listed = job_commits(client, new_job(client), page=2, page_size=10)["results"]
        return identity(deployed), [identity(commit) for commit in listed]


# ---------------------------------------------------------------- the same seed, the same commits
def test_two_servers_with_one_seed_deploy_and_list_the_same_commits(make_server):
    deployed, listed = what_a_server_shows(make_server(seed=7))
    assert (deployed, listed) == what_a_server_shows(make_server(seed=7))
    assert len(listed) == 10


def test_another_seed_deploys_and_lists_other_commits(make_server):
    deployed, listed = what_a_server_shows(make_server(seed=7))
    other_deployed, other_listed = what_a_server_shows(make_server(seed=8))
    assert other_deployed[0] != deployed[0]
    assert not {commit[0] for commit in listed} & {commit[0] for commit in other_listed}


def test_a_deploy_pins_the_newest_commit_the_listing_shows(client):
    job = new_job(client)
    assert client.post(f"/job/{job}/deploy").status_code == 202
    head = job_commits(client, job, page=1, page_size=1)["results"][0]
    history = client.get(f"/job/{job}/deploymentHistory").json()["results"]
    assert history[0]["details"]["commit"] == head


def test_a_deploy_by_id_prefix_pins_that_listed_commit(client):
    job = new_job(client)
    app = new_application(client)                   # the same repository and branch as the job
    listed = job_commits(client, job, page=5, page_size=20)["results"][7]
    assert deployed_commit(client, app, {"git_commit_id": listed["git_commit_id"][:8]}) == listed


# ---------------------------------------------------------------- pages
def test_page_two_continues_page_one_without_duplicates(client):
    job = new_job(client)
    everything = job_commits(client, job)["results"]
    first, second = (job_commits(client, job, page=n, page_size=30) for n in (1, 2))
    assert first["results"] + second["results"] == everything[:60]
    assert first["pagination"] == {"page": 1, "page_size": 30, "total_count": 100, "total_pages": 4}
    assert len({commit["git_commit_id"] for commit in everything}) == 100
    last = job_commits(client, job, page=4, page_size=30)["results"]
    assert last == everything[90:]


def test_a_page_after_a_start_id_continues_from_that_commit(client):
    job = new_job(client)
    everything = job_commits(client, job)["results"]
    after = job_commits(client, job, startId=everything[24]["git_commit_id"], page=2, page_size=10)
    assert after["results"] == everything[35:45]
    assert after["pagination"]["total_count"] == 75


def test_an_unknown_start_id_or_commit_id_lists_nothing(client):
    job = new_job(client)
    assert job_commits(client, job, startId="f" * 40)["results"] == []
    assert job_commits(client, job, gitCommitId="f" * 40, page=1)["pagination"]["total_count"] == 0


def test_commits_are_newest_first_with_git_ids_and_realistic_fields(client):
    everything = job_commits(client, new_job(client))["results"]
    gaps = [when(newer["created_at"]) - when(older["created_at"]) for newer, older in zip(everything, everything[1:])]
    assert all(commits.SPACING - commits.JITTER <= gap <= commits.SPACING + commits.JITTER for gap in gaps)
    for commit in everything:
        assert re.fullmatch(r"[0-9a-f]{40}", commit["git_commit_id"])
        assert commit["commit_page_url"] == f"https://git.example.com/acme/orders/commit/{commit['git_commit_id']}"
        first = commit["author_name"].split()[0]
        assert commit["author_avatar_url"] == f"https://avatars.example.com/{first.lower()}.png"
        assert commit["message"] and commit["tag"] == ""


# ---------------------------------------------------------------- work made per request
def test_a_deploy_of_a_new_repository_makes_one_commit(client):
    app = new_application(client, {"url": "https://git.example.com/acme/never-seen.git", "branch": "main"})
    make_commit.cache_clear()
    deployed_commit(client, app)
    assert make_commit.cache_info().misses == 1


def test_a_page_of_commits_makes_only_the_commits_of_the_page(client):
    job = new_job(client)
    make_commit.cache_clear()
    assert len(job_commits(client, job, page=3, page_size=5)["results"]) == 5
    assert make_commit.cache_info().misses == 5


# ---------------------------------------------------------------- the generator
def test_a_commit_is_the_same_read_alone_in_a_slice_or_from_the_end():
    log = Commits(3, "https://git.example/a.git", "dev", 1e9, 100)
    assert log[10:13] == [log[10], log[11], log[12]]
    assert log[-1] == log[99] == make_commit(3, "https://git.example/a.git", "dev", 1e9, 99)
    assert [commit["git_commit_id"] for commit in log] == list(commit_ids(3, "https://git.example/a.git", "dev", 100))


def test_a_commit_depends_on_its_branch_and_seed():
    ids = {make_commit(seed, "https://git.example/a.git", branch, 1e9, 0)["git_commit_id"]
           for seed in (1, 2) for branch in ("main", "dev")}
    assert len(ids) == 4


def test_a_position_is_found_by_id_or_by_prefix_only_when_asked():
    log = Commits(1, "https://git.example/a.git", "main", 1e9, 100)
    sha = log[61]["git_commit_id"]
    assert log.position(sha) == 61
    assert log.position(sha[:9]) is None
    assert log.position(sha[:9], prefix=True) == 61
    assert log.position("not-an-id", prefix=True) is None
