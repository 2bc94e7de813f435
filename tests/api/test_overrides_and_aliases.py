"""What follows an override or an alias when its target is renamed or edited (tests/api/test_variables.py
holds the rules of variables and secrets themselves):

- Renaming a variable or secret renames its overrides (and the overrides of those): the rename is a 409
  naming the key and the place when one would land on a key its place already holds, and nothing changes.
- An alias carries its target's value: an edit of an alias (variable or secret) changes its key and
  description and leaves the value it sends aside. Aliases of aliases follow too.
"""

from support.http import assert_error
from support.ids import APP, ENV, PROJECT

LOG_LEVEL = "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c"        # project variable of the fixtures (value info)


PAYMENT_API_KEY = "7f9b1d3e-5a7c-4e9f-9b1d-3e5a7c9f1b3d"  # project secret of the fixtures


def ok(reply, status=200):
    assert reply.status_code == status, reply.text
    return reply.json() if reply.content else None


def listed(client, base, family="environmentVariable"):
    return ok(client.get(f"{base}/{family}"))["results"]


def keyed(client, base, key, family="environmentVariable"):
    return [record for record in listed(client, base, family) if record["key"] == key]


def override(client, ident, scope, parent, value="debug", family="variable"):
    return ok(client.post(f"/{family}/{ident}/override",
                          json={"value": value, "override_scope": scope, "override_parent_id": parent}), 201)


def alias(client, ident, key, scope, parent, family="variable"):
    return ok(client.post(f"/{family}/{ident}/alias",
                          json={"key": key, "alias_scope": scope, "alias_parent_id": parent}), 201)


def feature_flags(client):
    """The environment's own FEATURE_FLAGS variable (fixtures)."""
    return next(r for r in keyed(client, f"/environment/{ENV}", "FEATURE_FLAGS") if r["variable_type"] == "VALUE")


# ---------------------------------------------------------------- a rename through overrides
def test_renaming_a_variable_onto_a_key_its_override_place_holds_is_409_and_changes_nothing(client):
    made = override(client, LOG_LEVEL, "ENVIRONMENT", ENV)
    before = listed(client, f"/environment/{ENV}")
    reply = client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}",
                       json={"key": "FEATURE_FLAGS", "value": "info"})
    assert_error(reply, 409)
    body = reply.json()
    assert body["error"] == "Conflict"
    assert "FEATURE_FLAGS" in body["message"] and f"environment {ENV}" in body["message"]
    assert [d["location"] for d in body["details"]] == ["body.key"]
    assert ok(client.get(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}"))["key"] == "LOG_LEVEL"
    assert listed(client, f"/environment/{ENV}") == before
    assert len(keyed(client, f"/environment/{ENV}", "FEATURE_FLAGS")) == 1
    assert ok(client.get(f"/environment/{ENV}/environmentVariable/{made['id']}"))["key"] == "LOG_LEVEL"


def test_renaming_a_secret_onto_a_key_its_override_place_holds_is_409(client):
    ok(client.post(f"/environment/{ENV}/secret", json={"key": "API_TOKEN", "value": "env-token"}), 201)
    made = override(client, PAYMENT_API_KEY, "ENVIRONMENT", ENV, value="staging-key", family="secret")
    reply = client.put(f"/project/{PROJECT}/secret/{PAYMENT_API_KEY}", json={"key": "API_TOKEN", "value": "x"})
    assert_error(reply, 409)
    assert "API_TOKEN" in reply.json()["message"] and ENV in reply.json()["message"]
    assert ok(client.get(f"/project/{PROJECT}/secret/{PAYMENT_API_KEY}"))["key"] == "PAYMENT_API_KEY"
    assert ok(client.get(f"/environment/{ENV}/secret/{made['id']}"))["key"] == "PAYMENT_API_KEY"
    assert len(keyed(client, f"/environment/{ENV}", "API_TOKEN", "secret")) == 1


def test_renaming_an_environment_variable_onto_a_key_of_the_application_overriding_it_is_409(client):
    flags = feature_flags(client)
    made = ok(client.post(f"/application/{APP}/environmentVariable/{flags['id']}/override", json={"value": "x"}), 201)
    reply = client.put(f"/environment/{ENV}/environmentVariable/{flags['id']}", json={"key": "PORT", "value": "y"})
    assert_error(reply, 409)
    assert "PORT" in reply.json()["message"] and f"application {APP}" in reply.json()["message"]
    assert len(keyed(client, f"/application/{APP}", "PORT")) == 1
    assert ok(client.get(f"/application/{APP}/environmentVariable/{made['id']}"))["key"] == "FEATURE_FLAGS"
    assert ok(client.get(f"/environment/{ENV}/environmentVariable/{flags['id']}"))["value"] != "y"


def test_a_rename_checks_and_renames_the_overrides_of_its_overrides(client):
    at_env = override(client, LOG_LEVEL, "ENVIRONMENT", ENV)
    at_app = ok(client.post(f"/application/{APP}/environmentVariable/{at_env['id']}/override",
                            json={"value": "trace"}), 201)
    # the application, below the environment's override, owns PORT: that rename would collide there
    reply = client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "PORT", "value": "info"})
    assert_error(reply, 409)
    assert f"application {APP}" in reply.json()["message"]
    assert ok(client.get(f"/environment/{ENV}/environmentVariable/{at_env['id']}"))["key"] == "LOG_LEVEL"
    # a free key: the whole chain follows
    ok(client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "VERBOSITY", "value": "info"}))
    env_record = ok(client.get(f"/environment/{ENV}/environmentVariable/{at_env['id']}"))
    app_record = ok(client.get(f"/application/{APP}/environmentVariable/{at_app['id']}"))
    assert env_record["key"] == app_record["key"] == "VERBOSITY"
    assert env_record["overridden_variable"]["key"] == app_record["overridden_variable"]["key"] == "VERBOSITY"
    assert [r["value"] for r in keyed(client, f"/application/{APP}", "VERBOSITY")] == ["trace"]


# ---------------------------------------------------------------- an alias's value on edit
def test_editing_a_variable_alias_with_another_value_keeps_its_targets_value(client):
    """The document lets every edit send a value: schema-valid, so not refused; an alias's value stays its
    target's, and the key, which is its own, changes."""
    made = alias(client, LOG_LEVEL, "LL", "ENVIRONMENT", ENV)
    record = ok(client.put(f"/environment/{ENV}/environmentVariable/{made['id']}",
                           json={"key": "LL2", "value": "changed"}))
    assert record["value"] == record["aliased_variable"]["value"] == "info" and record["key"] == "LL2"
    record = ok(client.get(f"/environment/{ENV}/environmentVariable/{made['id']}"))
    assert record["value"] == "info" and record["key"] == "LL2"


def test_editing_a_variable_alias_with_its_targets_value_renames_it_and_it_still_follows(client):
    made = alias(client, LOG_LEVEL, "LL", "ENVIRONMENT", ENV)
    record = ok(client.put(f"/environment/{ENV}/environmentVariable/{made['id']}",
                           json={"key": "LOG", "value": "info", "description": "short"}))
    assert (record["key"], record["value"], record["description"]) == ("LOG", "info", "short")
    ok(client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "warn"}))
    record = ok(client.get(f"/environment/{ENV}/environmentVariable/{made['id']}"))
    assert record["value"] == record["aliased_variable"]["value"] == "warn"


def test_an_alias_of_an_alias_follows_the_edits_of_the_first_target(client):
    first = alias(client, LOG_LEVEL, "LL", "ENVIRONMENT", ENV)
    second = ok(client.post(f"/application/{APP}/environmentVariable/{first['id']}/alias", json={"key": "L"}), 201)
    ok(client.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "warn"}))
    record = ok(client.get(f"/application/{APP}/environmentVariable/{second['id']}"))
    assert record["value"] == record["aliased_variable"]["value"] == "warn"


def test_a_secret_alias_keeps_its_targets_value_whatever_an_edit_sends(client, server):
    made = alias(client, PAYMENT_API_KEY, "PAY", "ENVIRONMENT", ENV, family="secret")
    record = ok(client.put(f"/environment/{ENV}/secret/{made['id']}", json={"key": "PAY_KEY", "value": "guess"}))
    assert record["key"] == "PAY_KEY" and "value" not in record
    secrets = server.rt.store.secrets.rows
    assert secrets[made["id"]].private["value"] == secrets[PAYMENT_API_KEY].private["value"]
    ok(client.put(f"/project/{PROJECT}/secret/{PAYMENT_API_KEY}", json={"key": "PAYMENT_API_KEY", "value": "rotated"}))
    assert secrets[made["id"]].private["value"] == "rotated"
