"""What a YAML document expands to is bounded in bytes, not only in nodes: one long string named by many
aliases stands for gigabytes that every reply, export or save writing the document as JSON would write.
Scenario documents expand to at most 1 MiB of values and keys, a fixtures folder's files to 64 MiB
together; a scenario is echoed as JSON of at most 4 MiB, and only when JSON can hold it.
"""

import pytest
from support.http import assert_error

from mockserver.core import yamlbound
from mockserver.world.fixtures import FixtureError, read_fixtures

MiB = 1024 * 1024


def string_bomb(string_bytes, aliases, separator=", "):
    """A scenario: one string of `string_bytes` and `aliases` aliases of it listed in a rule's body match, on
    line 6 (6 levels deep)."""
    return ("name: bomb\nrules:\n  - match:\n      body:\n        s: &s " + "x" * string_bytes + "\n"
            "        copies: [" + separator.join(["*s"] * aliases) + "]\n    effect: {status: 500}\n")


# ---------------------------------------------------------------- the documents of the report
def test_the_966_kb_document_that_killed_the_mock_is_refused_before_it_is_built():
    document = string_bomb(650 * 1024, 100_000, separator=",")          # 65 GB expanded
    assert 960_000 < len(document) < yamlbound.SCENARIO_BYTES and document.count("*s") <= yamlbound.MAX_ALIAS_NODES
    with pytest.raises(yamlbound.BoundError) as refused:
        yamlbound.load(document)
    assert "expands to more than 1 MiB of values and keys" in refused.value.problem
    assert refused.value.line == 6                                        # the line of the alias past the bound


def test_the_112_kb_document_that_gave_a_307_mb_reply_is_a_400_naming_the_bound(client):
    document = string_bomb(12_280, 25_000)                               # 307 MB expanded
    assert 110_000 < len(document) < 115_000
    body = assert_error(client.put("/_mock/scenarios/bomb", content=document), 400)
    assert "expands to more than 1 MiB of values and keys" in body["message"] and ":6:" in body["message"]
    assert client.get("/_mock/scenarios").json()["results"] == []


def test_an_expansion_past_the_bound_through_the_control_api_is_a_400_and_nothing_is_echoed(client):
    reply = client.put("/_mock/scenarios/bomb", content=string_bomb(30_000, 1000))     # 30 MB expanded
    assert "expands to more than 1 MiB" in assert_error(reply, 400)["message"]
    assert len(reply.content) < 1000


def test_a_scenario_within_the_expansion_bound_is_echoed_within_a_bounded_reply(client):
    reply = client.put("/_mock/scenarios/bomb", content=string_bomb(900, 1000))      # 0.9 MB expanded
    assert reply.status_code == 200, reply.text
    for shown in (client.get("/_mock/scenarios/bomb"), client.get("/_mock/scenarios")):
        assert shown.status_code == 200 and len(shown.content) < 1.1 * MiB


def test_escapes_that_json_writes_six_times_longer_are_bounded_by_the_echo_bound(client):
    document = ('name: escaped\nrules:\n  - match:\n      body:\n        s: &s "' + "\\x01" * 65536 + '"\n'
                "        copies: [" + ", ".join(["*s"] * 14) + "]\n    effect: {status: 500}\n")
    assert len(yamlbound.load(document)["rules"][0]["match"]["body"]["copies"]) == 14   # within 1 MiB expanded
    body = assert_error(client.put("/_mock/scenarios/escaped", content=document), 400)
    assert "more than 4 MiB (the bound of what the replies that show a scenario echo)" in body["message"]


def test_a_document_without_aliases_never_crosses_the_expansion_bound():
    document = "name: big\ndescription: '" + "x" * (MiB - 100) + "'\nrules: [{effect: {status: 500}}]\n"
    assert len(document) <= yamlbound.SCENARIO_BYTES
    assert len(yamlbound.load(document)["description"]) == MiB - 100


def test_keys_repeated_by_an_alias_count_too():
    keys = ", ".join(f"k{i:05}_{'y' * 100}: 1" for i in range(1000))      # about 110 KB of keys
    document = f"base: &b {{{keys}}}\ncopies: [" + ", ".join(["*b"] * 10) + "]\n"
    with pytest.raises(yamlbound.BoundError, match="expands to more than 1 MiB"):
        yamlbound.load(document)


# ---------------------------------------------------------------- values JSON cannot hold
@pytest.mark.parametrize("value, problem", [
    ("1" + "0" * 30, "rules.0.match.body.x: an integer past 64 bits"),
    ("0b" + "1" * 20000, "rules.0.match.body.x: an integer past 64 bits"),
    ("!!binary aGVsbG8=", "rules.0.match.body.x: a value of type bytes"),
    ("{1: one}", "rules.0.match.body.x: a key that is not a string (int: quote it)"),
    ("1" * 5000, "not valid YAML: a value that cannot be read"),
    ("2001-13-01", "not valid YAML: a value that cannot be read (month must be in 1..12)"),
])
def test_a_scenario_whose_values_json_cannot_hold_is_a_400_not_a_500(client, value, problem):
    document = f"name: odd\nrules: [{{match: {{body: {{x: {value}}}}}, effect: {{status: 500}}}}]\n"
    body = assert_error(client.put("/_mock/scenarios/odd", content=document), 400)
    assert problem in body["message"]
    assert client.get("/_mock/scenarios").status_code == 200


# ---------------------------------------------------------------- fixtures: the folder's files together
def test_a_fixture_file_expanding_past_64_mib_is_refused(tmp_path, spec):
    (tmp_path / "orgs.yaml").write_text("big: &s " + "x" * MiB + "\ncopies: [" + ", ".join(["*s"] * 70) + "]\n")
    with pytest.raises(FixtureError) as refused:
        read_fixtures(tmp_path, spec)
    assert "orgs.yaml:2: it expands to more than 64 MiB of values and keys (the bound of a fixtures folder's " \
           "files together" in str(refused.value)


def test_the_files_of_a_fixtures_folder_share_one_expansion_bound(tmp_path, spec):
    for name in ("a.yaml", "b.yaml"):            # 40 MiB each: each file alone is within 64 MiB
        (tmp_path / name).write_text("big: &s " + "x" * MiB + "\ncopies: [" + ", ".join(["*s"] * 39) + "]\n")
    with pytest.raises(FixtureError) as refused:
        read_fixtures(tmp_path, spec)
    assert "b.yaml:2: it expands to more than 64 MiB" in str(refused.value)
    assert "a.yaml:2" not in str(refused.value)


def test_the_nodes_aliases_add_are_bounded_for_the_folder_together(tmp_path, spec):
    for name in ("a.yaml", "b.yaml"):            # 60,000 nodes added by aliases each
        (tmp_path / name).write_text("one: &o [x]\ncopies: [" + ", ".join(["*o"] * 30_000) + "]\n")
    with pytest.raises(FixtureError) as refused:
        read_fixtures(tmp_path, spec)
    assert "b.yaml:2: its aliases expand it by more than 100000 nodes" in str(refused.value)
