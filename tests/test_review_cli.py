"""Review of the command line against the README's promises: a start that cannot work stops with one line
and exit 2 (non-finite numbers, option errors, a header size nothing fits in, a fixtures path that is a file,
record outputs that cannot be written), `check` names a token of an organization the fixtures lack, a
recording whose outputs fail at the stop exits 1 in one line each, and `parity` against a platform that
refuses the token could not run (exit 2) instead of reporting drift.

Everything this file starts listens on 127.0.0.1, on a free port; 18699 stands for a port nothing is
asked to serve (the commands are refused before they bind it).
"""

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import httpx
import orjson
import pytest
import yaml
from conftest import ADMIN, ORG, ROOT, free_port, wait_for

from mockserver.app import MockServer
from mockserver.cli import main
from mockserver.core.settings import ParitySettings

FIXTURES = ROOT / "fixtures"
FAST = ("--pace", "1000/1s", "--poll-interval", "0.05")
BAD_TOKEN = "expired-TOKEN-4b1d09"


def run(*args, env=None, timeout=60):
    environ = {**os.environ, **(env or {})}
    environ.pop("MOCKSERVER_URL", None)
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=environ)


def one_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "usage:" not in stderr and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture
def served(monkeypatch):
    """main() in this process with `serve` replaced: the settings a start would use (never a listening mock)."""
    started = []

    def serve(settings):
        started.append(settings)
        return 0
    monkeypatch.setattr(main, "serve", serve)
    monkeypatch.setattr(main, "use_allocator", lambda wanted: None)
    return started


def refused(capsys, argv, env=(), monkeypatch=None):
    for name, value in env:
        monkeypatch.setenv(name, value)
    status = main.main(argv)
    return status, capsys.readouterr().err


# ---------------------------------------------------------------- 1. nan and inf are not numbers an option takes
@pytest.mark.parametrize("argv", [
    ["serve", "--speed", "nan"], ["serve", "--speed", "inf"], ["serve", "--speed", "Infinity"],
    ["serve", "--speed", "NaN"],
    ["serve", "--header-timeout", "inf"], ["serve", "--body-timeout", "nan"], ["serve", "--sandbox-ttl", "inf"],
    ["serve", "--sleep-after", "nan"], ["serve", "--save-interval", "nan"], ["serve", "--shutdown-timeout", "inf"],
    ["record", "--upstream", "http://127.0.0.1:18699", "--upstream-timeout", "nan"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--poll-interval", "nan"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--poll-timeout", "inf"],
    ["parity", "--upstream", "http://127.0.0.1:18699", "--max-wait", "nan"],
])
def test_non_finite_numbers_are_refused_in_one_line_like_0(argv, served, capsys, monkeypatch):
    monkeypatch.setattr("mockserver.contract.parity.run", lambda config, build_mock: 0)
    status, err = refused(capsys, [*argv, "--port", "18699"] if argv[0] != "parity" else [*argv, "--token", "t"])
    assert status == 2 and not served, err
    line = one_line(err)
    assert line.startswith(f"mockserver: {argv[-2]}: must be a finite number") and argv[-1] in line


@pytest.mark.parametrize("variable", ["MOCKSERVER_SPEED", "MOCKSERVER_HEADER_TIMEOUT", "MOCKSERVER_SANDBOX_TTL"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_from_the_environment_are_refused(variable, value, served, capsys, monkeypatch):
    status, err = refused(capsys, ["serve", "--port", "18699"], [(variable, value)], monkeypatch)
    assert status == 2 and not served
    assert one_line(err).startswith(f"mockserver: {variable}='{value}': must be a finite number")


def test_finite_numbers_still_start(served, capsys):
    assert main.main(["serve", "--port", "18699", "--speed", "0.5", "--header-timeout", "1e3"]) == 0
    assert served[0].speed == 0.5 and served[0].header_timeout == 1000.0


# ---------------------------------------------------------------- 2. option errors are one line, every command
@pytest.mark.parametrize("args, prog, needle", [
    (["serve", "--speed", "0"], "mockserver serve", "--speed: must be greater than 0, not 0"),
    (["serve", "--port", "http"], "mockserver serve", "--port: must be a whole number"),
    (["serve", "--bogus"], "mockserver serve", "unrecognized arguments: --bogus"),
    (["serve", "--port"], "mockserver serve", "--port: expected one argument"),
    (["check", "--seed", "x"], "mockserver check", "--seed: must be a whole number"),
    (["check", "a", "b"], "mockserver check", "unrecognized arguments: b"),
    (["export"], "mockserver export", "the following arguments are required: --url"),
    (["record", "--upstream", "ftp://x"], "mockserver record", "--upstream: must be an http:// or https:// URL"),
    (["parity", "--pace", "lots"], "mockserver parity", "--pace: rate limit must look like N/WINDOW"),
    (["parity", "--allow-writes=yes"], "mockserver parity", "--allow-writes: ignored explicit argument"),
    (["serv"], "mockserver", "command: invalid choice: 'serv'"),
    ([], "mockserver", "the following arguments are required: command"),
])
def test_option_errors_are_one_line_naming_the_help_and_exit_2(args, prog, needle):
    result = run(*args, timeout=30)
    assert result.returncode == 2, result.stderr
    line = one_line(result.stderr)
    assert line.startswith("mockserver: ") and needle in line and line.endswith(f"({prog} --help)"), line
    assert result.stdout == ""


def test_help_and_version_are_unchanged():
    result = run("serve", "--help", timeout=30)
    assert result.returncode == 0 and "usage: mockserver serve" in result.stdout and "--speed" in result.stdout
    result = run("--version", timeout=30)
    assert result.returncode == 0 and result.stdout.startswith("mockserver ")


# ---------------------------------------------------------------- 3. a header size a request fits in
@pytest.mark.parametrize("args, env, shown", [
    (["--max-header-size", "1"], (), "--max-header-size: must be at least 1024 bytes"),
    (["--max-header-size", "1023"], (), "--max-header-size: must be at least 1024 bytes"),
    ([], (("MOCKSERVER_MAX_HEADER_SIZE", "100"),), "MOCKSERVER_MAX_HEADER_SIZE='100': must be at least 1024 bytes"),
])
def test_a_header_size_no_request_fits_in_is_refused(args, env, shown, served, capsys, monkeypatch):
    status, err = refused(capsys, ["serve", "--port", "18699", *args], env, monkeypatch)
    assert status == 2 and not served
    assert one_line(err).startswith(f"mockserver: {shown}")


def test_the_smallest_header_size_answers_an_ordinary_request(tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port),
                                "--max-header-size", "1k"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(f"http://127.0.0.1:{port}/_mock/health")
        reply = httpx.get(f"http://127.0.0.1:{port}/organization", headers={**ADMIN, "User-Agent": "curl/8.5.0",
                                                                           "Accept": "application/json"}, timeout=10)
        assert reply.status_code == 200 and reply.json()["id"] == ORG
        big = httpx.get(f"http://127.0.0.1:{port}/organization", headers={**ADMIN, "X-Pad": "p" * 1100}, timeout=10)
        assert big.status_code == 431
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


# ---------------------------------------------------------------- 4. check: a file, and a token of no organization
def test_check_of_a_file_says_it_is_not_a_folder():
    for args in (["check", "README.md"], ["check", "--fixtures", "README.md"]):
        result = run(*args, timeout=60)
        assert result.returncode == 1, result.stderr
        assert "README.md: not a folder" in result.stderr and "not found" not in result.stderr
        assert "Traceback" not in result.stderr


def test_serve_and_parity_on_a_fixtures_file_say_it_is_not_a_folder(capsys):
    result = run("serve", "--port", "18699", "--fixtures", "README.md", timeout=30)
    assert result.returncode == 2
    assert "README.md: not a folder" in one_line(result.stderr)
    from mockserver.contract import parity
    status = parity.run(ParitySettings(upstream="http://127.0.0.1:18699", token="t", fixtures=ROOT / "README.md"),
                        MockServer)
    assert status == 2 and "README.md: not a folder" in capsys.readouterr().err


def test_check_reports_a_token_whose_organization_the_fixtures_lack(tmp_path):
    shutil.copy(FIXTURES / "organizations.yaml", tmp_path / "organizations.yaml")
    ghost = "00000000-0000-4000-8000-00000000dead"
    tokens = yaml.safe_load((FIXTURES / "tokens.yaml").read_text())
    tokens["tokens"].append({"name": "ghost", "value": "ghost-token", "organization": ghost, "scopes": ["Admin"]})
    (tmp_path / "tokens.yaml").write_text(yaml.safe_dump(tokens))
    result = run("check", str(tmp_path), timeout=60)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if ghost in line]
    assert len(lines) == 1 and "tokens[ghost]" in lines[0] and "404" in lines[0]
    assert "1 problem(s)" in result.stderr
    assert run("check", timeout=60).returncode == 0          # the default fixtures' tokens all have theirs


# ---------------------------------------------------------------- 5. record: outputs checked at start and at stop
class Tiny:
    """A tiny HTTP server on 127.0.0.1:port answering every request with (status, JSON body)."""

    def __init__(self, port, status, body):
        self.requests = []
        tiny = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                tiny.requests.append((self.command, self.path, self.headers.get("Authorization")))
                payload = json.dumps(body).encode()
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = answer

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_record_outputs_that_cannot_be_written_stop_the_start_in_one_line_each(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for har, out in (("/proc/nope/s.har", "/proc/nope2"), (str(a_file / "s.har"), str(a_file / "out"))):
        result = run("record", "--upstream", "http://127.0.0.1:18699", "--port", str(free_port()), "--har", har,
                     "--fixtures-out", out, timeout=30)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2 and "Traceback" not in result.stderr, result.stderr
        assert lines[0].startswith(f"mockserver: --har {har}: ")
        assert lines[1].startswith(f"mockserver: --fixtures-out {out}: ")
    result = run("record", "--upstream", "http://127.0.0.1:18699", "--port", str(free_port()), "--har", str(tmp_path),
                 timeout=30)
    assert result.returncode == 2 and "it is a folder" in one_line(result.stderr)


def test_a_recording_whose_outputs_fail_at_the_stop_says_so_in_one_line_each_and_exits_1(tmp_path):
    upstream = Tiny(free_port(), 200, {"id": ORG, "name": "Acme", "results": []})
    har, out = tmp_path / "har" / "s.har", tmp_path / "fixtures"
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "record", "--upstream", upstream.url,
                                "--port", str(port), "--har", str(har), "--fixtures-out", str(out)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for(f"http://127.0.0.1:{port}/_mock/health")
        assert httpx.get(f"http://127.0.0.1:{port}/organization", headers=ADMIN, timeout=10).status_code == 200
        assert upstream.requests
        (tmp_path / "har").write_text("now a file")        # both outputs can no longer be written
        out.write_text("now a file")
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        upstream.stop()
    assert process.returncode == 1, err
    assert "Traceback" not in err
    failures = [line for line in err.splitlines() if "cannot write" in line]
    assert len(failures) == 2, err
    assert str(har) in failures[0] and "lost" in failures[0]
    assert str(out / "recorded.yaml") in failures[1] and "lost" in failures[1]


# ---------------------------------------------------------------- 6. parity: a refused token is not drift
@pytest.mark.parametrize("status, message", [
    (401, "the token has expired"),
    (403, "the token's scopes do not allow this operation"),
])
def test_parity_against_a_platform_that_refuses_the_token_could_not_run(status, message, capsys, tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("MOCKSERVER_UPSTREAM_TOKEN", BAD_TOKEN)
    upstream = Tiny(free_port(), status, {"status": status, "error": "Unauthorized" if status == 401 else "Forbidden",
                                   "message": f"{message} ({BAD_TOKEN})"})
    report = tmp_path / "report.json"
    try:
        code = main.main(["parity", "--upstream", upstream.url, *FAST, "--json", str(report)])
    finally:
        upstream.stop()
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert code == 2, text
    assert len(upstream.requests) == 1 and upstream.requests[0][2] == f"Token {BAD_TOKEN}"
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert lines[0].startswith("parity: could not run: the platform refused the token: ")
    assert f"{status} to getOrganization" in lines[0] and message in lines[0]
    assert "drift" not in text and "the platform answers" not in text
    assert BAD_TOKEN not in text
    data = orjson.loads(report.read_bytes())
    assert data["exit_status"] == 2 and data["summary"]["drift"] == 0 and BAD_TOKEN not in report.read_text()
