"""Replies a scenario rule scripts (world/scripted.py): a 2xx the document allows is served as written; one the
platform could not send is refused when the scenario loads, naming the field and its line; a patch of the
handler's reply; templates from the request."""

import textwrap

import pytest
from support.http import assert_error
from support.ids import APP, ORG, PROJECT

PROJECTS = f"/organization/{ORG}/project"


def load(client, text, name="shaped"):
    return client.put(f"/_mock/scenarios/{name}", content=textwrap.dedent(text),
                      headers={"Content-Type": "application/yaml"})


def loaded(client, text):
    reply = load(client, text)
    assert reply.status_code == 200, reply.text
    return reply


def refused(client, text):
    body = assert_error(load(client, text), 400)
    assert client.get("/_mock/scenarios").json()["results"] == []          # nothing half-loaded
    return body["message"]


def test_an_empty_list_the_document_allows_is_served_as_written(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: listProjects}
            effect:
              status: 200
              body: {results: [], pagination: {page: 1, page_size: 10, total_count: 0, total_pages: 0}}
        """)
    reply = client.get(PROJECTS)
    assert reply.status_code == 200 and reply.json() == {
        "results": [], "pagination": {"page": 1, "page_size": 10, "total_count": 0, "total_pages": 0}}
    assert reply.headers["x-mock-rule"] == "shaped/rule-1"
    call = client.get("/_mock/calls", params={"limit": 1}).json()["results"][0]
    assert call["status"] == 200 and call["response"]["results"] == [] and call["scenario_rule"] == "shaped/rule-1"


def test_a_scripted_create_changes_nothing(client):
    before = client.get(PROJECTS, params={"page_size": 100}).json()["pagination"]["total_count"]
    loaded(client, f"""
        name: shaped
        rules:
          - match: {{operation: createProject}}
            effect:
              body:
                id: 11111111-2222-4333-8444-555555555555
                created_at: "2026-01-01T00:00:00Z"
                updated_at: "2026-01-01T00:00:00Z"
                name: scripted
                organization: {{id: {ORG}}}
                associated_environments_count: 0
                associated_services_count: 0
        """)
    reply = client.post(PROJECTS, json={"name": "real"})
    assert reply.status_code == 201 and reply.json()["name"] == "scripted"    # the operation's own success status
    client.delete("/_mock/scenarios/shaped")
    assert client.get(PROJECTS, params={"page_size": 100}).json()["pagination"]["total_count"] == before


def test_a_body_the_document_does_not_allow_is_refused_at_load_with_the_field_and_its_line(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: listProjects}
            effect:
              status: 200
              body:
                results:
                  - {id: 11111111-2222-4333-8444-555555555555, created_at: "2026-01-01T00:00:00Z", name: 5,
                     updated_at: "2026-01-01T00:00:00Z", organization: {id: 8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10},
                     associated_environments_count: 0, associated_services_count: 0}
                pagination: {page: 1, page_size: 10, total_count: 1, total_pages: 1}
        """)
    assert "listProjects 200: body.results[0].name: 5 is not of type 'string'" in message
    assert ":9:" in message or "line 9" in message, message                 # the line of `- {id: ..., name: 5}`


def test_a_field_the_document_does_not_describe_is_refused_with_the_nearest(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            effect:
              patch: {descripton: typo}
        """)
    assert "getProject 200: body.descripton: the document describes no such field (did you mean description?)" \
        in message


def test_a_success_status_the_operation_does_not_list_is_refused_naming_the_operation(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: createProject}
            effect: {status: 200, body: {}}
        """)
    assert "the document lists no 200 for createProject (it answers 201)" in message


def test_a_2xx_without_a_body_where_the_document_has_one_is_refused(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            effect: {status: 200}
        """)
    assert "getProject's 200 has a body in the document" in message


def test_a_204_without_a_body_is_served(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: deleteProject}
            effect: {status: 204}
        """)
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    client.delete("/_mock/scenarios/shaped")
    assert client.get(f"/project/{PROJECT}").status_code == 200               # the handler did not run


def test_a_patch_changes_the_handlers_reply_after_the_change_is_made(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: createProject}
            effect: {patch: {description: "from the rule", associated_services_count: 7}}
        """)
    reply = client.post(PROJECTS, json={"name": "patched", "description": "sent"})
    assert reply.status_code == 201
    made = reply.json()
    assert made["description"] == "from the rule" and made["associated_services_count"] == 7
    assert made["name"] == "patched"                                           # the rest is the handler's
    stored = client.get(f"/project/{made['id']}").json()
    assert stored["description"] == "sent"                                    # the change stands as made


def test_a_patch_that_removes_a_required_field_or_runs_before_the_handler_is_refused(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            effect: {patch: {id: null}}
        """)
    assert "getProject 200: body.id: the document requires it: a patch cannot remove it (null)" in message
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            phase: after_validation
            effect: {patch: {name: x}}
        """)
    assert "a patch changes the handler's reply" in message


def test_templates_fill_the_reply_from_the_request(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: createProject}
            effect:
              body:
                id: "{{uuid}}"
                created_at: "{{now}}"
                updated_at: "{{now}}"
                name: "{{body.name}}"
                associated_environments_count: 0
                associated_services_count: 0
                description: "made for {{body.name}} in {{path.org_id}}"
                organization: {id: "{{path.org_id}}"}
        """)
    reply = client.post(PROJECTS, json={"name": "templated"})
    assert reply.status_code == 201, reply.text
    made = reply.json()
    assert made["name"] == "templated" and made["organization"] == {"id": ORG}
    assert made["description"] == f"made for templated in {ORG}"
    assert len(made["id"]) == 36 and made["created_at"].endswith("Z")


def test_a_template_alone_keeps_the_type_of_its_value_and_an_absent_one_is_null():
    from mockserver.world.scripted import merge, render
    values = {"path": {"id": "p"}, "query": {"page": "2"}, "body": {"n": 3, "tags": ["a"], "on": True},
              "request_id": "r", "now": "2026-01-01T00:00:00Z", "uuid": lambda: "u"}
    assert render({"n": "{{body.n}}", "tags": "{{body.tags}}", "on": "{{ body.on }}", "gone": "{{body.x}}",
                   "text": "n={{body.n}} gone={{body.x}} page {{query.page}}", "id": "{{uuid}}"}, values) == {
        "n": 3, "tags": ["a"], "on": True, "gone": None, "text": "n=3 gone= page 2", "id": "u"}
    assert merge({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": None, "e": 4}, "f": [1]}) == \
        {"a": 1, "b": {"d": 3, "e": 4}, "f": [1]}


def test_a_template_that_names_no_source_or_no_path_parameter_is_refused(client):
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            effect: {patch: {description: "{{clock}}"}}
        """)
    assert "{{clock}} is not a template" in message
    message = refused(client, """
        name: shaped
        rules:
          - match: {operation: getProject}
            effect: {patch: {description: "{{path.project_id}}"}}
        """)
    assert "{{path.project_id}}: getProject has no path parameter project_id (did you mean {{path.projectId}}?" \
        in message


def test_a_templated_value_that_breaks_the_document_is_a_500_naming_the_field(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: getApplicationStatus}
            effect: {patch: {state: "{{request_id}}"}}
        """)
    body = assert_error(client.get(f"/application/{APP}/status"), 500)
    assert "scenario rule shaped/rule-1" in body["message"] and "body.state" in body["message"]


@pytest.mark.parametrize("effect, words", [
    ("{status: 200, body: {}, patch: {}}", "body and patch together"),
    ("{drop: true, body: {}}", "drop and body together"),
    ("{status: 200, message: hi, body: {results: [], pagination: {page: 1, page_size: 1, total_count: 0, "
     "total_pages: 0}}}", "message is the text of an error body"),
])
def test_contradictions_of_a_scripted_reply_are_refused(client, effect, words):
    message = refused(client, f"""
        name: shaped
        rules:
          - match: {{operation: listProjects}}
            effect: {effect}
        """)
    assert words in message


def test_a_scripted_error_body_and_a_429_with_its_headers(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: listProjects}
            effect:
              status: 429
              body: {status: 429, error: Too Many Requests, message: "slow down, from the rule"}
        """)
    reply = client.get(PROJECTS)
    assert reply.status_code == 429 and reply.json()["message"] == "slow down, from the rule"
    assert reply.headers["retry-after"] == "1" and reply.headers["x-ratelimit-remaining"] == "0"


def test_a_rule_before_authentication_answers_without_a_token(client):
    loaded(client, """
        name: shaped
        rules:
          - match: {operation: deleteProject}
            phase: before_auth
            effect: {status: 204}
        """)
    assert client.delete(f"/project/{PROJECT}", headers={"Authorization": ""}).status_code == 204
    client.delete("/_mock/scenarios/shaped")
    assert client.get(f"/project/{PROJECT}").status_code == 200
