"""Secrets nowhere in clear: a secret sent in the wrong shape is neither echoed by a 400 nor journaled,
and the state file is private to its owner and authenticated, so that a crafted file runs no code.
"""

import hashlib
import os
import pickle
import stat
import subprocess
import sys

import httpx
import pytest
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, APP, ENV, ORG
from support.live import LiveServer

from mockserver.document.validation import Validator

SECRET = "s3cret-do-not-echo"
GIT = {"url": "https://git.example.com/acme/tf.git", "branch": "main"}
WRONG_SHAPES = [
    ("secret value as a list", f"/application/{APP}/secret", {"key": "K", "value": [SECRET]}),
    ("secret value as an object", f"/environment/{ENV}/secret", {"key": "K", "value": {"nested": [SECRET]}}),
    ("a whole body as a list", f"/application/{APP}/secret", [SECRET, "more"]),
    ("registry config as a list", f"/organization/{ORG}/containerRegistry",
     {"name": "r", "kind": "GENERIC_CR", "url": "https://r.example", "config": [SECRET]}),
    ("registry config as a string", f"/organization/{ORG}/containerRegistry",
     {"name": "r", "kind": "GENERIC_CR", "url": "https://r.example", "config": SECRET}),
    ("registry password as a list", f"/organization/{ORG}/containerRegistry",
     {"name": "r", "kind": "GENERIC_CR", "url": "https://r.example", "config": {"password": [SECRET]}}),
    ("credentials key as a list", f"/organization/{ORG}/aws/credentials",
     {"name": "c", "access_key_id": "AKIA", "secret_access_key": [SECRET]}),
    ("webhook secret as an object", f"/organization/{ORG}/webhook",
     {"target_url": "https://h.example", "events": ["DEPLOYMENT_STARTED"], "enabled": True,
      "target_secret": {"v": SECRET}}),
    ("terraform secret value as a list", f"/environment/{ENV}/terraform",
     {"name": "t", "terraform_files_source": {"git_repository": GIT}, "terraform_variables_source": {
         "tf_var_file_paths": ["env/kept.tfvars"], "tf_vars": [{"key": "k", "value": [SECRET], "secret": True}]}}),
    ("terraform variables holding a bare string", f"/environment/{ENV}/terraform",
     {"name": "t", "terraform_files_source": {"git_repository": GIT},
      "terraform_variables_source": {"tf_vars": [SECRET]}}),
]


@pytest.mark.parametrize("what, path, body", WRONG_SHAPES, ids=[case[0] for case in WRONG_SHAPES])
def test_a_secret_in_the_wrong_shape_is_neither_echoed_nor_journaled(client, what, path, body):
    reply = client.post(path, json=body)
    assert_error(reply, 400)
    assert SECRET not in reply.text
    calls = client.get("/_mock/calls").json()
    assert calls["total"] == 1
    assert SECRET not in str(calls)


PASTED = "hunter2-pasted-by-mistake"          # no known shape of a credential: only its place tells


@pytest.mark.parametrize("body", [{"key": f"K {PASTED}", "value": "v"}, {"key": [PASTED], "value": "v"},
                                  {"key": "K", "value": "v", "description": PASTED * 40},
                                  {"key": "K", "value": 5, "description": PASTED}, {"key": PASTED},
                                  {"key": "K", "value": "v", "description": 7, "note": PASTED}])
def test_a_secret_pasted_into_any_field_of_a_refused_secret_request_is_neither_echoed_nor_journaled(client, body):
    reply = client.post(f"/application/{APP}/secret", json=body)
    assert_error(reply, 400)
    assert PASTED not in reply.text
    calls = client.get("/_mock/calls").json()
    assert calls["total"] == 1 and PASTED not in str(calls)
    assert set(calls["results"][0]["body"]) == set(body)          # its shape kept: which fields were sent


def test_the_journal_still_shows_what_is_not_secret(client):
    client.post(f"/environment/{ENV}/terraform", json=WRONG_SHAPES[8][2])
    call = client.get("/_mock/calls").json()["results"][0]
    source = call["body"]["terraform_variables_source"]
    assert source["tf_var_file_paths"] == ["env/kept.tfvars"]
    assert source["tf_vars"][0] == {"key": "k", "value": "**redacted**", "secret": True}


def test_a_field_the_document_marks_write_only_is_never_quoted():
    validator = Validator({"type": "object", "properties": {
        "name": {"type": "string"}, "auth": {"type": "object", "properties": {
            "token": {"type": "string", "writeOnly": True}}}}})
    assert "token" in validator.secret_fields and "auth" in validator.secret_containers
    for value in ({"auth": {"token": [SECRET]}}, {"auth": [SECRET]}, {"auth": {"token": 1, "x": SECRET}}):
        errors = validator.errors(value, "body")
        assert errors and SECRET not in str(errors)
    assert "7 is not of type 'string'" in str(validator.errors({"name": 7}, "body"))     # the rest is quoted


def test_other_values_are_still_quoted_to_help_the_client(client):
    reply = client.post(f"/environment/{ENV}/database", json={"name": "db", "type": "NOSQL-ISH", "version": "1",
                                                               "mode": "MANAGED"})
    assert "'NOSQL-ISH'" in assert_error(reply, 400)["message"]


# ---------------------------------------------------------------- the state file
def serve(path, *extra):
    return LiveServer("--clock", "manual", "--state-file", str(path), "--save-interval", "3600", *extra)


def saved_state(tmp_path):
    """A state file (and its key) written by a mock that held a secret."""
    path = tmp_path / "state.bin"
    mock = serve(path)
    try:
        made = httpx.post(f"{mock.url}/application/{APP}/secret", json={"key": "K", "value": "kept-secret"},
                          headers=ADMIN)
        assert made.status_code == 201
    finally:
        mock.stop()
    return path


def start(path):
    return subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", "1", "--state-file", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.server
def test_the_state_file_and_its_key_are_readable_by_their_owner_only(tmp_path):
    path = saved_state(tmp_path)
    key = tmp_path / "state.bin.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(bytes.fromhex(key.read_text().strip())) == 32
    again = serve(path)                                       # and it loads back
    again.stop()


@pytest.mark.server
def test_a_crafted_state_file_with_a_keyless_checksum_is_refused_and_runs_nothing(tmp_path):
    """What an attacker who can write the file, but not read the key, would write: a pickle that runs a
    command when loaded, with the header and checksum the format had before it was authenticated."""
    path = saved_state(tmp_path)
    marker = tmp_path / "code-ran"
    data = path.read_bytes()
    head_end = 21 + 4 + 16
    payload = pickle.dumps(_RunsCode(str(marker)))
    crafted = (data[:head_end] + hashlib.sha256(payload).digest() + len(payload).to_bytes(8, "big") + payload)
    path.write_bytes(crafted)
    result = start(path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "corrupt or altered" in lines[0] and str(path) in lines[0], result.stderr
    assert not marker.exists()
    assert path.read_bytes() == crafted                       # left as it was


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.server
def test_a_state_file_whose_key_is_missing_or_exposed_is_refused_in_one_line(tmp_path):
    path = saved_state(tmp_path)
    key = tmp_path / "state.bin.key"
    key.chmod(0o644)
    exposed = start(path)
    assert exposed.returncode == 2 and "may be read by other users" in exposed.stderr
    assert len(exposed.stderr.strip().splitlines()) == 1
    key.unlink()
    missing = start(path)
    assert missing.returncode == 2 and "key file" in missing.stderr and "missing" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.server
def test_a_state_file_signed_with_another_key_is_refused(tmp_path):
    path = saved_state(tmp_path)
    (tmp_path / "state.bin.key").write_text(os.urandom(32).hex() + "\n")
    result = start(path)
    assert result.returncode == 2 and "corrupt or altered" in result.stderr
