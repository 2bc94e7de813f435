"""The control clients' generated files (python -m mockserver.client.generate): current, written from the owners of
the facts they hold, and typing the replies as the server sends them. A fact changed at its owner, or a schema
changed in the control document, makes them stale, and the check says so.

The Go and Node clients have tests of their own on the same files (clients/go/mockclient/generated_test.go,
clients/node/test/generated.test.js); this one checks all of them, the Python ones included."""

import hashlib

import pytest
import yaml
from mypy import api as mypy

from mockserver.client import Tokens, generate
from mockserver.client.constants import DEFAULT_TOKENS, JOURNAL_BODY_LIMIT, SERVER_JOURNAL_BODY_LIMIT, VERSION
from mockserver.client.control import is_sandbox_name, private_snapshot_name
from mockserver.core.errors import ApiError
from mockserver.core.settings import Settings
from mockserver.core.version import __version__
from mockserver.document.spec import CONTROL_DOCUMENT
from mockserver.sandboxes.sandbox import check_name

DOCUMENT = yaml.safe_load(CONTROL_DOCUMENT.read_text())


def test_every_generated_file_is_current():
    assert [str(path.relative_to(generate.ROOT)) for path in generate.stale()] == []


def test_a_fact_changed_at_its_owner_makes_the_files_that_hold_it_stale(monkeypatch):
    monkeypatch.setattr(generate, "__version__", "9.9.0")
    stale = {path.name for path in generate.stale()}
    assert {"control.yaml", "constants.py", "constants_gen.go", "constants.js", "package.json",
            "package-lock.json"} <= stale
    assert "types.py" not in stale                      # no schema changed: the Python types stay as they are


def test_a_schema_changed_in_the_document_makes_the_types_stale():
    text = CONTROL_DOCUMENT.read_text().replace("    Clock:\n      type: object\n",
                                                "    Clock:\n      type: object\n      description: planted\n", 1)
    stale = {path.name for path in generate.stale(document_text=text)}
    assert {"control.yaml", "types.py", "types_gen.go", "constants_gen.go", "constants.js"} <= stale
    assert "constants.py" not in stale                  # no fact changed: the Python constants stay


def test_the_check_exits_1_naming_the_stale_files(monkeypatch, capsys):
    assert generate.main(["--check"]) == 0
    monkeypatch.setattr(generate, "__version__", "9.9.0")
    assert generate.main(["--check"]) == 1
    said = capsys.readouterr().err
    assert "mockserver/client/constants.py is stale: run python -m mockserver.client.generate" in said


def test_the_documents_constants_are_their_owners_facts():
    constants = DOCUMENT["x-constants"]
    assert {key: constants[key] for key in generate.facts()} == generate.facts()
    assert constants["version"] == __version__ == VERSION
    server_default = constants["journal_body_limit"]["server_default"]
    assert server_default == Settings().journal_body_limit == SERVER_JOURNAL_BODY_LIMIT
    assert JOURNAL_BODY_LIMIT == constants["harness_journal_body_limit"] == 1024 * 1024


def test_the_documents_name_patterns_and_body_limits_are_the_constants():
    """The name rule and the journal body limits the document's requests state, written by hand, are x-constants'."""
    constants = DOCUMENT["x-constants"]
    patterns = set()

    def walk(node):
        if isinstance(node, dict):
            if "pattern" in node and isinstance(node["pattern"], str) and "{1,64}" in node["pattern"]:
                patterns.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(DOCUMENT["paths"])
    assert patterns == {constants["sandbox_name"]["pattern"]}
    body = DOCUMENT["paths"]["/_mock/sandboxes/{name}"]["put"]["requestBody"]["content"]["application/json"]
    limit = body["schema"]["properties"]["journal_body_limit"]
    assert (limit["minimum"], limit["maximum"]) == (constants["journal_body_limit"]["minimum"],
                                                    constants["journal_body_limit"]["maximum"])
    assert f"{constants['journal_body_limit']['server_default'] // 1024} KiB" in limit["description"]


@pytest.mark.parametrize("name", ["ok", "a" * 64, "a" * 65, "", ".", "..", "...", "x\n", "with space",
                                  "under_score.dot-dash", "é"])
def test_the_clients_sandbox_name_rule_is_the_servers(name):
    try:
        check_name(name)
        taken = True
    except ApiError:
        taken = False
    assert is_sandbox_name(name) is taken


def test_the_private_snapshot_name_is_the_same_in_every_client():
    """The vectors the Go and Node clients' tests check too."""
    assert private_snapshot_name("x", "n" * 60) == "n" * 48 + ".8daa9a0857cf"
    digest = hashlib.sha1(b"sandbox-1|before").hexdigest()[:12]
    assert private_snapshot_name("sandbox-1", "before") == f"before.{digest}"


def test_the_default_tokens_are_the_fixtures():
    fixtures = Tokens.of_fixtures()
    for token in DOCUMENT["x-constants"]["default_tokens"]:
        assert fixtures[token["name"]] == fixtures[token["scope"]] == token["value"] == DEFAULT_TOKENS[token["key"]]
    assert len(DEFAULT_TOKENS) == 4


USAGE = '''
from mockserver.client.types import Call, Health, Sandbox


def read(call: Call, health: Health, sandbox: Sandbox) -> None:
    rule: str | None = call["scenario_rule"]
    print(rule, call["body"], call["response"], call["token"], call["received_at"], call["request_id"])
    print(health["memory"]["rss_bytes"], sandbox["clock"]["offset_seconds"], sandbox.get("expires"))
    print(call["scenario_rulee"])  # type: ignore[typeddict-item]
    size: str = health["sandboxes"]  # type: ignore[assignment]
'''


def test_a_field_the_server_sends_is_typed_and_a_misspelled_one_is_an_error(tmp_path):
    """mypy --strict over a test's use of the replies: the fields are there with their types, and each line
    marked as an error is one (an unused ignore is itself an error under --warn-unused-ignores)."""
    usage = tmp_path / "usage.py"
    usage.write_text(USAGE)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")                      # not the project's: this file alone
    out, err, status = mypy.run([str(usage), "--strict", "--warn-unused-ignores", "--follow-imports=silent",
                                 "--no-incremental", "--config-file", str(tmp_path / "mypy.ini")])
    assert status == 0, out + err
